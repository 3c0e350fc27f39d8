"""Batching rules of the shape primitives (refimpl/lax/shapes.py) and of
`name`, `add_any` and `stop_gradient`: the paths the conformance property
(tests/test_conformance_vmap.py) reaches rarely (a batched padding value,
unbatched operands among batched ones, batch axes in every position), the
batched programs' structure (`make_jaxpr`), and vmap with grad."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import lax
from refimpl.ad_checkpoint import checkpoint_name
from conformance import strategies as S
from conformance.batching import loop_over_batch

F32 = np.float32


def _primitives(jaxpr):
  return [eqn.primitive.name for eqn in jaxpr.jaxpr.eqns]


def _batch(x, axis, size=3):
  """A batch of `size` distinct copies of `x` stacked along `axis`."""
  return np.stack([x + i * 100 for i in range(size)], axis).astype(x.dtype)


# --- rev --------------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, 2])
def test_rev_renumbers_dimensions_around_the_batch_axis(axis):
  member = np.arange(6, dtype=F32).reshape(2, 3)
  x = _batch(member, axis)
  f = jax.vmap(lambda m: lax.rev(m, (0, 1)), in_axes=axis, out_axes=axis)
  np.testing.assert_array_equal(f(x), _batch(member[::-1, ::-1], axis))
  assert _primitives(jax.make_jaxpr(f)(x)) == ["rev"]


# --- pad --------------------------------------------------------------------------------

_CONFIG = ((1, -1, 1), (-1, 2, 0))


def _pad(x, value):
  return lax.pad(x, value, _CONFIG)


def test_pad_of_batched_operand_pads_around_the_batch_axis():
  x = _batch(np.arange(6, dtype=F32).reshape(2, 3), 1)
  value = F32(-1)
  f = jax.vmap(_pad, in_axes=(1, None), out_axes=1)
  np.testing.assert_array_equal(f(x, value), np.stack(
      [np.asarray(_pad(x[:, i], value)) for i in range(3)], 1))
  jaxpr = jax.make_jaxpr(f)(x, value)
  assert _primitives(jaxpr) == ["pad"]
  assert jaxpr.jaxpr.eqns[0].params["padding_config"] == (_CONFIG[0], (0, 0, 0), _CONFIG[1])


@pytest.mark.parametrize("operand_axis", [None, 0, 2])
def test_pad_with_a_batched_padding_value_matches_loop(operand_axis):
  member = np.arange(6, dtype=F32).reshape(2, 3)
  x = member if operand_axis is None else _batch(member, operand_axis)
  values = np.array([-1, -2, -3], F32)
  f = jax.vmap(_pad, in_axes=(operand_axis, 0))
  np.testing.assert_array_equal(f(x, values), loop_over_batch(_pad, (operand_axis, 0), x, values))
  assert "select_n" in _primitives(jax.make_jaxpr(f)(x, values))


def test_grad_of_pad_per_example_and_of_the_batched_padding_value():
  xs = np.arange(6, dtype=F32).reshape(3, 2)
  values = np.array([1, 2, 3], F32)
  # interior and edge padding: 3 padding elements per member, each weighted by its position
  loss = lambda x, v: jnp.sum(lax.pad(x, v, [(1, 1, 1)]) * jnp.arange(5.0))
  gx, gv = jax.vmap(jax.grad(loss, argnums=(0, 1)))(xs, values)
  np.testing.assert_array_equal(gx, np.tile([1.0, 3.0], (3, 1)))
  np.testing.assert_array_equal(gv, [6.0, 6.0, 6.0])
  gv_sum = jax.grad(lambda v: jnp.sum(jax.vmap(loss)(xs, v)))(values)
  np.testing.assert_array_equal(gv_sum, gv)


# --- concatenate ------------------------------------------------------------------------

@given(st.data())
def test_concatenate_with_mixed_operands_matches_loop(data):
  ndim = data.draw(st.integers(1, 3))
  dimension = data.draw(st.integers(0, ndim - 1))
  base = data.draw(S.shapes(min_dims=ndim, max_dims=ndim, max_side=3))
  n = data.draw(st.integers(1, 3))
  size = data.draw(st.integers(1, 3))
  args, axes = [], []
  for i in range(n):
    shape = list(base)
    shape[dimension] = data.draw(st.integers(0, 3))
    axis = data.draw(st.none() | st.integers(0, ndim)) if i else data.draw(st.integers(0, ndim))
    full = shape if axis is None else shape[:axis] + [size] + shape[axis:]
    args.append(np.arange(np.prod(full), dtype=F32).reshape(full) + 100 * i)
    axes.append(axis)
  f = lambda *xs: lax.concatenate(xs, dimension)
  np.testing.assert_array_equal(jax.vmap(f, tuple(axes))(*args), loop_over_batch(
      lambda *xs: np.concatenate(xs, dimension), axes, *args))


def test_concatenate_moves_batch_axes_first_and_broadcasts_unbatched_operands():
  x, y = np.ones((2, 3), F32), np.zeros(2, F32)
  f = jax.vmap(lambda x, y: lax.concatenate([x, y], 0), in_axes=(1, None))
  np.testing.assert_array_equal(f(x, y), np.tile([1, 1, 0, 0], (3, 1)))
  jaxpr = jax.make_jaxpr(f)(x, y)
  assert _primitives(jaxpr) == ["transpose", "broadcast_in_dim", "concatenate"]
  assert jaxpr.jaxpr.eqns[-1].params["dimension"] == 1


# --- split ------------------------------------------------------------------------------

@pytest.mark.parametrize("batch_axis, split_axis", [(0, 0), (1, 0), (0, 1), (2, 1)])
def test_split_keeps_the_batch_axis_of_every_piece(batch_axis, split_axis):
  member = np.arange(20, dtype=F32).reshape(4, 5)
  x = _batch(member, batch_axis)
  sizes = (1, 3) if split_axis == 0 else (2, 0, 3)
  f = jax.vmap(lambda m: lax.split(m, sizes, split_axis), in_axes=batch_axis,
               out_axes=batch_axis)
  outs = f(x)
  expected = loop_over_batch(lambda m: np.split(m, np.cumsum(sizes)[:-1], split_axis),
                             [batch_axis], x)
  assert len(outs) == len(sizes)
  for out, e in zip(outs, expected):
    np.testing.assert_array_equal(out, np.moveaxis(e, 0, batch_axis))
  assert _primitives(jax.make_jaxpr(f)(x)) == ["split"]


def test_grad_of_split_per_example():
  xs = np.arange(12, dtype=F32).reshape(3, 4)
  loss = lambda x: jnp.sum(lax.split(x, (1, 3))[1] ** 2)
  np.testing.assert_array_equal(jax.vmap(jax.grad(loss))(xs), np.concatenate(
      [np.zeros((3, 1), F32), 2 * xs[:, 1:]], 1))


# --- tile -------------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, 2])
def test_tile_does_not_repeat_the_batch_axis(axis):
  member = np.arange(6, dtype=F32).reshape(2, 3)
  x = _batch(member, axis)
  f = jax.vmap(lambda m: lax.tile(m, (2, 3)), in_axes=axis, out_axes=axis)
  np.testing.assert_array_equal(f(x), _batch(np.tile(member, (2, 3)), axis))
  assert _primitives(jax.make_jaxpr(f)(x)) == ["tile"]


# --- optimization_barrier, name, add_any, stop_gradient ------------------------------------

def test_optimization_barrier_passes_batch_dims_through():
  x = np.arange(6, dtype=F32).reshape(2, 3)
  y = np.arange(3, dtype=np.int32)
  f = jax.vmap(lambda x, y: lax.optimization_barrier((x, y)), in_axes=(1, None),
               out_axes=(1, None))
  out_x, out_y = f(x, y)
  np.testing.assert_array_equal(out_x, x)
  np.testing.assert_array_equal(out_y, y)   # unbatched: out_axes None is allowed
  assert _primitives(jax.make_jaxpr(f)(x, y)) == ["optimization_barrier"]


def test_checkpoint_name_is_vectorized():
  x = np.arange(6, dtype=F32).reshape(2, 3)
  f = jax.vmap(lambda m: checkpoint_name(m * 2, "double"), in_axes=1, out_axes=1)
  np.testing.assert_array_equal(f(x), 2 * x)
  jaxpr = jax.make_jaxpr(f)(x)
  assert _primitives(jaxpr) == ["mul", "name"]
  assert jaxpr.jaxpr.eqns[1].params == {"name": "double"}


def test_stop_gradient_and_add_any_under_vmap():
  xs = np.array([1.0, 2.0, 3.0], F32)
  np.testing.assert_array_equal(jax.vmap(lax.stop_gradient)(xs), xs)
  # x used twice: its gradient accumulates with add_any, under vmap
  loss = lambda x: jnp.sin(x) * lax.stop_gradient(x) + x * x
  expected = np.cos(xs) * xs + 2 * xs
  np.testing.assert_allclose(jax.vmap(jax.grad(loss))(xs), expected, rtol=1e-6)
  assert "add_any" in _primitives(jax.make_jaxpr(jax.vmap(jax.grad(loss)))(xs))


def test_nested_vmap_of_shape_ops_with_different_in_axes():
  x = np.arange(24, dtype=F32).reshape(2, 3, 4)
  y = np.arange(6, dtype=F32).reshape(3, 2)
  inner = lambda a, b: lax.concatenate([lax.rev(a, (0,)), lax.pad(b, F32(0), [(1, 0, 0)])], 0)
  f = jax.vmap(jax.vmap(inner, in_axes=(0, None)), in_axes=(1, 0))
  expected = np.stack([np.stack([np.asarray(inner(x[j, i], y[i])) for j in range(2)])
                       for i in range(3)])
  np.testing.assert_array_equal(f(x, y), expected)
