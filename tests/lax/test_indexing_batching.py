"""Batching rules of the indexing primitives (refimpl/lax/indexing.py):
every combination of batched and unbatched operand / indices / updates,
batch axes in several positions, each index mode with out-of-bounds
indices (each member must behave as it does unbatched), the batched
programs' structure (`make_jaxpr`: one gather or scatter, batch dimensions
in its dimension numbers, unbatched operands not broadcast where the
primitive allows), per-example gradients and nested vmaps."""

import itertools

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import lax

F32, I32 = np.float32, np.int32
GDN, SDN, Mode = lax.GatherDimensionNumbers, lax.ScatterDimensionNumbers, lax.GatherScatterMode
B = 4  # batch size


def _eqns(fn, *args):
  return jax.make_jaxpr(fn)(*args).jaxpr.eqns


def _primitives(fn, *args):
  return [eqn.primitive.name for eqn in _eqns(fn, *args)]


def _only(fn, *args, name):
  """The one equation of primitive `name` in fn's jaxpr."""
  found = [eqn for eqn in _eqns(fn, *args) if eqn.primitive.name == name]
  assert len(found) == 1, [eqn.primitive.name for eqn in _eqns(fn, *args)]
  return found[0]


def _member(a, axis, i):
  return a if axis is None else np.take(a, i, axis)


def _check_matches_loop(fn, in_axes, *args):
  """vmap(fn, in_axes) equals fn on each member, stacked along axis 0."""
  size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
  expected = np.stack([np.asarray(fn(*[_member(a, ax, i) for a, ax in zip(args, in_axes)]))
                       for i in range(size)])
  actual = jax.vmap(fn, in_axes=in_axes)(*args)
  assert actual.dtype == expected.dtype
  np.testing.assert_array_equal(np.asarray(actual), expected)


def _batch(member, axis):
  """B distinct arrays shaped like `member`, stacked along `axis` (None: `member`)."""
  if axis is None:
    return member
  return np.stack([member + k * 100 for k in range(B)], axis).astype(member.dtype)


def _in_axes_combinations(*choices):
  """Every combination of the per-argument axis choices with something batched."""
  return [axes for axes in itertools.product(*choices) if any(a is not None for a in axes)]


# --- slice ------------------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("strides", [None, (2, 1)])
def test_slice_takes_the_batch_axis_whole_where_it_is(axis, strides):
  member = np.arange(20, dtype=F32).reshape(5, 4)
  fn = lambda x: lax.slice(x, (1, 1), (5, 3), strides)
  _check_matches_loop(fn, (axis,), _batch(member, axis))
  x = _batch(member, axis)
  batched = jax.vmap(fn, in_axes=axis, out_axes=axis)
  assert _primitives(batched, x) == ["slice"]  # no transpose: the batch axis stays put
  np.testing.assert_array_equal(batched(x), np.moveaxis(jax.vmap(fn, in_axes=axis)(x), 0, axis))


# --- dynamic_slice ----------------------------------------------------------------------------

# Per-member starts, out of bounds on both sides (clamped, never wrapped by the primitive).
STARTS_0 = np.array([-7, 0, 3, 9], I32)
STARTS_1 = np.array([2, -1, 5, 1], I32)


def _dynamic_slice(x, i, j):
  return lax.dynamic_slice_p.bind(x, i, j, slice_sizes=(2, 3))


@pytest.mark.parametrize("in_axes", _in_axes_combinations([None, 0, 2], [None, 0], [None, 0]))
def test_dynamic_slice_matches_loop(in_axes):
  x_axis, i_axis, j_axis = in_axes
  x = _batch(np.arange(20, dtype=F32).reshape(5, 4), x_axis)
  i = STARTS_0 if i_axis is not None else np.array(4, I32)
  j = STARTS_1 if j_axis is not None else np.array(-2, I32)
  _check_matches_loop(_dynamic_slice, in_axes, x, i, j)


def test_dynamic_slice_of_batched_operand_is_a_gather_reading_the_batch_axis_whole():
  xs = np.ones((B, 5, 4), F32)
  jaxpr = jax.make_jaxpr(jax.vmap(_dynamic_slice, in_axes=(0, None, None)))(
      xs, np.array(1, I32), np.array(2, I32)).jaxpr
  gather, = [e for e in jaxpr.eqns if e.primitive.name == "gather"]
  assert gather.invars[0] is jaxpr.invars[0]  # the batch axis is already first: no transpose
  assert gather.params["slice_sizes"] == (B, 2, 3)
  assert gather.params["dimension_numbers"] == GDN(
      offset_dims=(0, 1, 2), collapsed_slice_dims=(), start_index_map=(1, 2))
  assert gather.params["mode"] == Mode.PROMISE_IN_BOUNDS


def test_dynamic_slice_of_batched_starts_gathers_from_the_unbatched_operand():
  x = np.arange(20, dtype=F32).reshape(5, 4)
  fn = jax.vmap(_dynamic_slice, in_axes=(None, 0, None))
  jaxpr = jax.make_jaxpr(fn)(x, STARTS_0, np.array(1, I32)).jaxpr
  gather, = [e for e in jaxpr.eqns if e.primitive.name == "gather"]
  assert gather.invars[0] is jaxpr.invars[0]  # the operand itself, not broadcast
  assert gather.params["dimension_numbers"] == GDN(offset_dims=(1, 2), collapsed_slice_dims=(),
                                                   start_index_map=(0, 1))
  # batched starts may repeat: the gather's indices are neither unique nor sorted
  assert not gather.params["unique_indices"] and not gather.params["indices_are_sorted"]


def test_dynamic_slice_with_both_batched_pairs_the_batch_dimensions():
  eqn = _only(jax.vmap(_dynamic_slice, in_axes=(1, 0, None)), np.ones((5, B, 4), F32),
              STARTS_0, np.array(1, I32), name="gather")
  dnums = eqn.params["dimension_numbers"]
  assert (dnums.operand_batching_dims, dnums.start_indices_batching_dims) == ((0,), (0,))
  assert eqn.params["slice_sizes"] == (1, 2, 3)


def test_dynamic_index_via_jnp_with_an_empty_batch():
  out = jax.vmap(lambda x, i: x[i])(np.zeros((0, 5), F32), np.zeros((0,), I32))
  assert out.shape == (0,)


# --- dynamic_update_slice ---------------------------------------------------------------------

def _dynamic_update_slice(x, update, i, j):
  return lax.dynamic_update_slice_p.bind(x, update, i, j)


@pytest.mark.parametrize("in_axes", _in_axes_combinations(
    [None, 0, 1], [None, 0, 2], [None, 0], [None, 0]))
def test_dynamic_update_slice_matches_loop(in_axes):
  x_axis, u_axis, i_axis, j_axis = in_axes
  x = _batch(np.arange(20, dtype=F32).reshape(5, 4), x_axis)
  update = _batch(-np.arange(6, dtype=F32).reshape(2, 3) - 1, u_axis)
  i = STARTS_0 if i_axis is not None else np.array(9, I32)
  j = STARTS_1 if j_axis is not None else np.array(-3, I32)
  _check_matches_loop(_dynamic_update_slice, in_axes, x, update, i, j)


def test_dynamic_update_slice_is_one_clipping_scatter():
  x = np.zeros((5, 4), F32)
  updates = np.ones((B, 2, 3), F32)
  fn = jax.vmap(_dynamic_update_slice, in_axes=(None, 0, 0, None))
  eqn = _only(fn, x, updates, STARTS_0, np.array(1, I32), name="scatter")
  assert eqn.params["mode"] == Mode.CLIP  # clamped so that the update fits, as unbatched
  dnums = eqn.params["dimension_numbers"]
  assert dnums == SDN(update_window_dims=(1, 2), inserted_window_dims=(),
                      scatter_dims_to_operand_dims=(1, 2), operand_batching_dims=(0,),
                      scatter_indices_batching_dims=(0,))
  # An unbatched operand must become a batch to be written into.
  assert "broadcast_in_dim" in _primitives(fn, x, updates, STARTS_0, np.array(1, I32))


def test_dynamic_update_slice_with_unbatched_starts_writes_the_batch_axis_whole():
  eqn = _only(jax.vmap(_dynamic_update_slice, in_axes=(0, 0, None, None)),
              np.zeros((B, 5, 4), F32), np.ones((B, 2, 3), F32), np.array(1, I32),
              np.array(2, I32), name="scatter")
  assert eqn.params["dimension_numbers"] == SDN(
      update_window_dims=(0, 1, 2), inserted_window_dims=(), scatter_dims_to_operand_dims=(1, 2))


# --- gather -----------------------------------------------------------------------------------

# Windows of 1 x 3 (the row collapsed) at (row, column) index pairs, out of bounds too.
GATHER_DNUMS = GDN(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0, 1))
GATHER_INDICES = np.array([[0, 0], [4, 1], [5, 0], [-1, 2], [2, 3], [1, 1]], I32)


def _gather(mode, fill_value=None):
  return lambda x, indices: lax.gather(x, indices, GATHER_DNUMS, (1, 3), mode=mode,
                                       fill_value=fill_value, unique_indices=True,
                                       indices_are_sorted=True)


def _index_batch(axis):
  """B sets of 6 index pairs (shuffled and shifted), batched along `axis`."""
  rng = np.random.default_rng(0)
  members = [GATHER_INDICES[rng.permutation(6)] + np.array([k - 1, 1 - k], I32)
             for k in range(B)]
  return np.stack(members, axis) if axis is not None else GATHER_INDICES


GATHERS = [_gather(Mode.CLIP), _gather(Mode.PROMISE_IN_BOUNDS), _gather(Mode.FILL_OR_DROP),
           _gather(Mode.FILL_OR_DROP, fill_value=-5)]


@pytest.mark.parametrize("in_axes", _in_axes_combinations([None, 0, 2], [None, 0, 1, 2]))
@pytest.mark.parametrize("gather", GATHERS)
def test_gather_matches_loop(gather, in_axes):
  x_axis, indices_axis = in_axes
  x = _batch(np.arange(20, dtype=F32).reshape(5, 4), x_axis)
  _check_matches_loop(gather, in_axes, x, _index_batch(indices_axis))


def test_gather_batch_dims_and_hints():
  x, xs = np.ones((5, 4), F32), np.ones((B, 5, 4), F32)
  indices, index_batch = GATHER_INDICES, _index_batch(0)
  gather = _gather(Mode.FILL_OR_DROP, fill_value=-5)
  operand_only = _only(jax.vmap(gather, (0, None)), xs, indices, name="gather").params
  assert operand_only["dimension_numbers"] == GDN(offset_dims=(0, 2), collapsed_slice_dims=(1,),
                                                  start_index_map=(1, 2))
  assert operand_only["slice_sizes"] == (B, 1, 3)
  indices_only = _only(jax.vmap(gather, (None, 0)), x, index_batch, name="gather").params
  assert indices_only["dimension_numbers"] == GDN(offset_dims=(2,), collapsed_slice_dims=(0,),
                                                  start_index_map=(0, 1))
  both = _only(jax.vmap(gather, (0, 0)), xs, index_batch, name="gather").params
  assert both["dimension_numbers"] == GDN(offset_dims=(2,), collapsed_slice_dims=(1,),
                                          start_index_map=(1, 2), operand_batching_dims=(0,),
                                          start_indices_batching_dims=(0,))
  assert both["slice_sizes"] == (1, 1, 3)
  for params in (operand_only, indices_only, both):
    assert (params["mode"], params["fill_value"]) == (Mode.FILL_OR_DROP, -5)
  # Members' indices may coincide: only the indices-only gather loses the hints.
  assert operand_only["unique_indices"] and operand_only["indices_are_sorted"]
  assert both["unique_indices"] and both["indices_are_sorted"]
  assert not indices_only["unique_indices"] and not indices_only["indices_are_sorted"]


def test_gather_with_operand_batching_dims_under_vmap():
  # Member gathers: row r of x (3, 5) reads the window at indices[r] along dim 1.
  dnums = GDN(offset_dims=(1,), collapsed_slice_dims=(), start_index_map=(1,),
              operand_batching_dims=(0,), start_indices_batching_dims=(0,))
  fn = lambda x, indices: lax.gather(x, indices, dnums, (1, 2), mode=Mode.CLIP)
  member_x = np.arange(15, dtype=F32).reshape(3, 5)
  member_indices = np.array([[4], [-2], [1]], I32)
  for in_axes in _in_axes_combinations([None, 0, 2], [None, 0, 1]):
    _check_matches_loop(fn, in_axes, _batch(member_x, in_axes[0]),
                        _batch(member_indices, in_axes[1]) % 7 - 1)


def test_nested_vmap_of_gather_with_different_in_axes():
  x = np.arange(3 * 5 * 4, dtype=F32).reshape(3, 5, 4)
  indices = np.stack([_index_batch(1) + k for k in range(3)], 2)  # (6, B, 3, 2)
  gather = _gather(Mode.CLIP)
  # inner vmap: x shared, indices along 1; outer: x along 0, indices along 2
  nested = jax.vmap(jax.vmap(gather, in_axes=(None, 1)), in_axes=(0, 2))
  expected = np.stack([np.stack([gather(x[o], indices[:, i, o]) for i in range(B)])
                       for o in range(3)])
  np.testing.assert_array_equal(nested(x, indices), expected)
  assert _primitives(nested, x, indices).count("gather") == 1


# --- scatter ----------------------------------------------------------------------------------

# Windows of 1 x 2 at (row, column) index pairs: repeated, and out of bounds too.
SCATTER_DNUMS = SDN(update_window_dims=(1,), inserted_window_dims=(0,),
                    scatter_dims_to_operand_dims=(0, 1))
SCATTER_INDICES = np.array([[0, 0], [4, 2], [4, 2], [5, 0], [-1, 1], [2, 3], [1, 1]], I32)
SCATTERS = ["scatter", "scatter_add", "scatter_sub", "scatter_mul", "scatter_min",
            "scatter_max"]


def _scatter(op, mode):
  return lambda x, indices, updates: getattr(lax, op)(x, indices, updates, SCATTER_DNUMS,
                                                      mode=mode)


def _scatter_index_batch(axis):
  rng = np.random.default_rng(1)
  members = [SCATTER_INDICES[rng.permutation(7)] + np.array([1 - k, k - 1], I32)
             for k in range(B)]
  return np.stack(members, axis) if axis is not None else SCATTER_INDICES


@pytest.mark.parametrize("in_axes", _in_axes_combinations([None, 0, 2], [None, 0, 1],
                                                          [None, 0, 2]))
@pytest.mark.parametrize("mode", [Mode.CLIP, Mode.FILL_OR_DROP, Mode.PROMISE_IN_BOUNDS])
def test_scatters_match_loop(mode, in_axes):
  x_axis, indices_axis, updates_axis = in_axes
  x = _batch(np.arange(20, dtype=F32).reshape(5, 4) % 7, x_axis)
  indices = _scatter_index_batch(indices_axis)
  updates = _batch(np.arange(14, dtype=F32).reshape(7, 2) % 5 - 2, updates_axis)
  for op in SCATTERS:
    _check_matches_loop(_scatter(op, mode), in_axes, x, indices, updates)


def test_scatter_batch_dims_and_hints():
  x, xs = np.zeros((5, 4), F32), np.zeros((B, 5, 4), F32)
  updates, update_batch = np.ones((7, 2), F32), np.ones((B, 7, 2), F32)
  scatter = lambda x, i, u: lax.scatter_add(x, i, u, SCATTER_DNUMS, mode=Mode.CLIP,
                                            unique_indices=True, indices_are_sorted=True)
  # Indices unbatched: the batch axis is one more window dimension.
  eqn = _only(jax.vmap(scatter, (0, None, 0)), xs, SCATTER_INDICES, update_batch,
              name="scatter-add")
  assert eqn.params["dimension_numbers"] == SDN(
      update_window_dims=(0, 2), inserted_window_dims=(1,), scatter_dims_to_operand_dims=(1, 2))
  # Indices batched: paired batching dimensions.
  eqn = _only(jax.vmap(scatter, (None, 0, None)), x, _scatter_index_batch(0), updates,
              name="scatter-add")
  assert eqn.params["dimension_numbers"] == SDN(
      update_window_dims=(2,), inserted_window_dims=(1,), scatter_dims_to_operand_dims=(1, 2),
      operand_batching_dims=(0,), scatter_indices_batching_dims=(0,))
  # Each member writes its own operand: the hints and the mode still hold.
  assert eqn.params["unique_indices"] and eqn.params["indices_are_sorted"]
  assert eqn.params["mode"] == Mode.CLIP


def test_scatter_of_batched_updates_only_broadcasts_the_operand():
  x = np.zeros((5, 4), F32)
  update_batch = np.ones((B, 7, 2), F32)
  jaxpr = jax.make_jaxpr(jax.vmap(_scatter("scatter_add", Mode.FILL_OR_DROP), (None, None, 0)))(
      x, SCATTER_INDICES, update_batch).jaxpr
  assert [e.primitive.name for e in jaxpr.eqns] == ["broadcast_in_dim", "scatter-add"]
  assert jaxpr.eqns[1].invars[1] is jaxpr.invars[1]  # the indices stay unbatched


def test_scatter_apply_under_vmap():
  dnums = SDN(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
  fn = lambda x, i: lax.scatter_apply(x, i, lambda v: v * 2 + 1, dnums, update_shape=(3,))
  member_indices = np.array([[0], [5], [0]], I32)  # a repeated index applies twice
  index_batch = np.stack([member_indices + k * 2 - 1 for k in range(B)])  # out of bounds too
  for in_axes in _in_axes_combinations([None, 0], [None, 0]):
    _check_matches_loop(fn, in_axes, _batch(np.arange(6, dtype=F32), in_axes[0]),
                        index_batch if in_axes[1] == 0 else member_indices)


# --- jnp indexing -----------------------------------------------------------------------------

def test_indexing_with_a_batched_index_is_one_gather_of_the_shared_array():
  x = jnp.arange(5.0)
  for index in (np.array([0, 4, -1, 7], I32), np.array([[0, 1], [4, -5], [2, 2], [9, 0]], I32)):
    fn = jax.vmap(lambda i: x[i])
    jaxpr = jax.make_jaxpr(fn)(index).jaxpr
    gathers = [e for e in jaxpr.eqns if e.primitive.name == "gather"]
    assert len(gathers) == 1
    assert not any(e.primitive.name == "broadcast_in_dim" and e.invars[0] is jaxpr.constvars[0]
                   for e in jaxpr.eqns)
    np.testing.assert_array_equal(fn(index), np.stack([x[i] for i in index]))


@pytest.mark.parametrize("x_axis", [None, 0, 1])
@pytest.mark.parametrize("method", ["set", "add", "mul", "min", "max"])
def test_index_update_with_batched_indices_and_updates(method, x_axis):
  member = np.arange(12, dtype=F32).reshape(3, 4)
  x = _batch(member, x_axis)
  index = np.array([[0, 3], [5, -1], [2, 2], [-4, 1]], I32)  # out of bounds too
  y = np.arange(B * 2 * 3, dtype=F32).reshape(B, 2, 3) - 7
  fn = lambda x, i, y: getattr(jnp.asarray(x).at[:, i], method)(y.T)
  _check_matches_loop(fn, (x_axis, 0, 0), x, index, y)
  scalar_index = np.array([0, 3, -1, 4], I32)
  fn = lambda x, i, y: getattr(jnp.asarray(x).at[i], method)(y[0, 0])
  _check_matches_loop(fn, (x_axis, 0, 0), x, scalar_index, y)


# --- derivatives ------------------------------------------------------------------------------

def test_per_example_gradients_through_gather():
  def loss(x, i):
    return jnp.sum(jnp.sin(x[i]) * jnp.array([1.0, 2.0, 3.0]))
  xs = np.linspace(-1, 1, B * 5).reshape(B, 5).astype(F32)
  index = np.array([[0, 4, 4], [1, -1, 9], [2, 2, 2], [3, 0, 1]], I32)
  grads = jax.vmap(jax.grad(loss))(xs, index)
  np.testing.assert_allclose(grads, np.stack([jax.grad(loss)(x, i) for x, i in zip(xs, index)]),
                             rtol=1e-6)
  # x shared by the batch: each member's gradient with respect to it
  shared = jax.vmap(jax.grad(loss), in_axes=(None, 0))(xs[0], index)
  np.testing.assert_allclose(shared, np.stack([jax.grad(loss)(xs[0], i) for i in index]),
                             rtol=1e-6)


def test_per_example_gradients_through_scatter_add():
  x = np.linspace(0, 1, 5).astype(F32)
  def loss(updates, i):
    return jnp.sum(jnp.sin(jnp.asarray(x).at[i].add(updates)) ** 2)
  updates = np.linspace(-1, 1, B * 3).reshape(B, 3).astype(F32)
  index = np.array([[0, 4, 4], [1, -1, 9], [2, 2, 2], [3, 0, 1]], I32)
  grads = jax.vmap(jax.grad(loss))(updates, index)
  np.testing.assert_allclose(
      grads, np.stack([jax.grad(loss)(u, i) for u, i in zip(updates, index)]), rtol=1e-6)
  assert grads[1, 2] == 0  # out of bounds: dropped, so no gradient


def test_grad_of_vmapped_indexing_accumulates_over_the_batch():
  index = np.array([0, 3, 3, -1], I32)
  x = np.arange(5, dtype=F32)
  grad = jax.grad(lambda x: jnp.sum(jax.vmap(lambda i: x[i])(index) ** 2))(x)
  expected = np.zeros(5, F32)
  np.add.at(expected, index, 2 * x[index])
  np.testing.assert_array_equal(grad, expected)


def test_vmap_of_grad_of_dynamic_update_slice():
  def loss(x, update, i):
    return jnp.sum(lax.dynamic_update_slice(x, update, (i,)) * jnp.arange(5.0))
  x, updates = np.ones(5, F32), np.ones((B, 2), F32)
  starts = np.array([-3, 0, 4, 9], I32)
  grads = jax.vmap(jax.grad(loss, argnums=(0, 1)), in_axes=(None, 0, 0))(x, updates, starts)
  for k, (g_x, g_u) in enumerate(zip(*grads)):
    e_x, e_u = jax.grad(loss, argnums=(0, 1))(x, updates[k], starts[k])
    np.testing.assert_array_equal(g_x, e_x)
    np.testing.assert_array_equal(g_u, e_u)
