"""Batching rules of the sorting primitives (refimpl/lax/sorting.py): sort
with some operands batched and some not (the unbatched ones broadcast, as
in JAX) or batched along different axes, the sorted dimension renumbered
around the batch axis, top_k and approx_top_k wherever the batch axis is
(approx_top_k of rank-1 members too), the batched programs' structure
(`make_jaxpr`), per-example gradients and nested vmaps."""

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import lax
from conformance.batching import loop_over_batch

F32 = np.float32


def _eqns(closed):
  return closed.jaxpr.eqns


def _primitives(closed):
  return [eqn.primitive.name for eqn in _eqns(closed)]


def _batch(member, axis):
  """Three different members (permutations of `member`) stacked along `axis`."""
  rng = np.random.default_rng(0)
  return np.stack([member] + [rng.permutation(member.ravel()).reshape(member.shape)
                              for _ in range(2)], axis)


_KEYS = np.array([[3., -0., np.nan, 1.], [0., 2., 2., -1.], [5., 1., 1., 0.]], F32)
_VALUES = np.arange(12, dtype=np.int32).reshape(3, 4)


@pytest.mark.parametrize("dimension", [0, 1])
@pytest.mark.parametrize("bdim", [0, 1, 2])
def test_sort_renumbers_the_dimension_around_the_batch_axis(dimension, bdim):
  x = _batch(_KEYS, bdim)
  fn = lambda m: lax.sort(m, dimension)
  f = jax.vmap(fn, in_axes=bdim, out_axes=bdim)
  np.testing.assert_array_equal(f(x), np.moveaxis(loop_over_batch(fn, (bdim,), x), 0, bdim))
  eqn, = _eqns(jax.make_jaxpr(f)(x))
  assert eqn.params["dimension"] == dimension + (bdim <= dimension)


@pytest.mark.parametrize("in_axes", [(0, None), (None, 1), (2, 0), (1, 1)])
@pytest.mark.parametrize("num_keys", [1, 2])
def test_sort_of_operands_batched_differently_matches_loop(in_axes, num_keys):
  keys, values = (m if ax is None else _batch(m, ax)
                  for m, ax in zip((_KEYS, _VALUES), in_axes))
  fn = lambda k, v: lax.sort((k, v), dimension=1, num_keys=num_keys)
  out = jax.vmap(fn, in_axes=in_axes)(keys, values)
  for actual, expected in zip(out, loop_over_batch(fn, in_axes, keys, values)):
    np.testing.assert_array_equal(actual, expected)


def test_sort_broadcasts_unbatched_operands_to_the_first_batch_axis():
  keys, values = _batch(_KEYS, 1), _VALUES
  f = jax.vmap(lambda k, v: lax.sort_key_val(k, v, 0), in_axes=(1, None), out_axes=1)
  closed = jax.make_jaxpr(f)(keys, values)
  assert _primitives(closed) == ["broadcast_in_dim", "sort"]
  assert _eqns(closed)[0].params["broadcast_dimensions"] == (0, 2)
  assert _eqns(closed)[1].params["dimension"] == 0
  # the second operand batched along another axis moves to the first's
  closed = jax.make_jaxpr(jax.vmap(lambda k, v: lax.sort_key_val(k, v, 0), in_axes=(1, 0),
                                   out_axes=1))(keys, _batch(_VALUES, 0))
  assert _primitives(closed) == ["transpose", "sort"]


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("bdim", [0, 1, 2])
def test_top_k_renumbers_the_axis_around_the_batch_axis(axis, bdim):
  x = _batch(np.nan_to_num(_KEYS, nan=7.), bdim)
  fn = lambda m: lax.top_k(m, 2, axis=axis)
  f = jax.vmap(fn, in_axes=bdim, out_axes=bdim)
  for actual, expected in zip(f(x), loop_over_batch(fn, (bdim,), x)):
    np.testing.assert_array_equal(actual, np.moveaxis(expected, 0, bdim))
  eqn, = _eqns(jax.make_jaxpr(f)(x))   # no transposes, even with the batch axis last
  assert eqn.params == {"k": 2, "axis": axis + (bdim <= axis)}


@pytest.mark.parametrize("reduction_dimension, bdim, expected_dimension",
                         [(-1, 0, 2), (-1, 2, 1), (0, 0, 1), (0, 1, 0), (-2, 1, 0)])
@pytest.mark.parametrize("approx", [lax.approx_max_k, lax.approx_min_k])
def test_approx_top_k_maps_the_reduction_dimension(approx, reduction_dimension, bdim,
                                                   expected_dimension):
  x = _batch(np.nan_to_num(_KEYS, nan=7.), bdim)
  fn = lambda m: approx(m, 2, reduction_dimension)
  f = jax.vmap(fn, in_axes=bdim, out_axes=bdim)
  for actual, expected in zip(f(x), loop_over_batch(fn, (bdim,), x)):
    np.testing.assert_array_equal(actual, np.moveaxis(expected, 0, bdim))
  eqn, = _eqns(jax.make_jaxpr(f)(x))
  assert eqn.params["reduction_dimension"] == expected_dimension


@pytest.mark.parametrize("aggregate_to_topk", [False, True])
def test_approx_top_k_of_long_rank_1_members_keeps_their_output_size(aggregate_to_topk):
  # Members of rank 1 have XLA's 1024-wide tile, their rank-2 batch a
  # 128-wide one: without aggregation a member keeps all 1000 candidates,
  # where a rank-2 operand would keep 256.
  x = np.random.default_rng(1).permutation(3000).reshape(3, 1000).astype(F32)
  fn = lambda m: lax.approx_max_k(m, 2, aggregate_to_topk=aggregate_to_topk)
  values, indices = jax.vmap(fn)(x)
  expected_values, expected_indices = loop_over_batch(fn, (0,), x)
  assert values.shape == (3, 1000 if not aggregate_to_topk else 2)
  np.testing.assert_array_equal(values, expected_values)
  np.testing.assert_array_equal(indices, expected_indices)
  assert lax.approx_max_k(x, 2, aggregate_to_topk=False)[0].shape == (3, 256)


def test_approx_top_k_of_short_rank_1_members_is_jaxs_batched_call():
  x = np.arange(300, dtype=F32).reshape(3, 100)
  eqn, = _eqns(jax.make_jaxpr(jax.vmap(lambda m: lax.approx_min_k(
      m, 3, aggregate_to_topk=False)))(x))
  assert eqn.params["k"] == 3 and not eqn.params["aggregate_to_topk"]


# --- with autodiff and nested vmaps -------------------------------------------------------

def test_per_example_gradients_of_sort_and_top_k():
  x = _batch(np.array([[0.5, -2., 3.], [1., 4., -1.]], F32), 0)
  weights = np.array([1., 2., 3.], F32)

  def loss(m):
    return jnp.sum(lax.sort(m, 1) * weights) + jnp.sum(lax.top_k(m, 2, axis=0)[0])

  per_example = jax.vmap(jax.grad(loss))(x)
  np.testing.assert_array_equal(per_example, loop_over_batch(jax.grad(loss), (0,), x))
  np.testing.assert_array_equal(jax.grad(lambda x: jnp.sum(jax.vmap(loss)(x)))(x),
                                per_example)


def test_nested_vmap_with_different_in_axes():
  x = np.random.default_rng(2).permutation(24).reshape(2, 3, 4).astype(F32)
  fn = lambda m: (lax.sort(m), *lax.top_k(m, 1), *lax.approx_min_k(m, 1))
  outs = jax.vmap(jax.vmap(fn, in_axes=0), in_axes=2)(x)   # members x[j, :, i]
  for index, out in enumerate(outs):
    expected = np.stack([np.stack([fn(x[j, :, i])[index] for j in range(2)])
                         for i in range(4)])
    np.testing.assert_array_equal(out, expected)
