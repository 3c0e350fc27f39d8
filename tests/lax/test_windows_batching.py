"""Batching rules of refimpl/lax/windows.py: the batch axis gets a window of
one element (stride 1, no padding or dilation), in place for the monoid
reductions and first for the others, as JAX's rules do."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
from refimpl import lax
from refimpl.lax import elementwise, windows
from conformance import strategies as S
from conformance.batching import loop_over_batch

WINDOW = dict(window_dimensions=(2, 2), window_strides=(1, 2), padding=((1, 0), (0, 1)))


def _eqns(jaxpr):
  return [e.primitive.name for e in jaxpr.jaxpr.eqns]


@pytest.mark.parametrize("prim", [windows.reduce_window_sum, windows.reduce_window_max,
                                  windows.reduce_window_min])
@given(x=S.arrays(np.float32, (3, 4, 5), allow_nan=False), axis=st.integers(-3, 2))
def test_monoid_keeps_batch_axis_in_place(prim, x, axis):
  f = lambda v: prim(v, **WINDOW)
  x = np.moveaxis(x, 0, axis)
  jaxpr = jax.make_jaxpr(jax.vmap(f, in_axes=axis, out_axes=axis))(x)
  assert _eqns(jaxpr) == [prim.__name__]   # the function is named as its primitive
  params = jaxpr.jaxpr.eqns[0].params
  assert params["window_dimensions"][axis % 3] == 1 and params["padding"][axis % 3] == (0, 0)
  np.testing.assert_allclose(jax.vmap(f, in_axes=axis, out_axes=0)(x),
                             loop_over_batch(f, (axis,), x))


def test_generic_reduce_window_batches_operands_first_and_keeps_init():
  x = np.arange(24.0, dtype=np.float32).reshape(4, 3, 2)
  f = lambda v: lax.reduce_window(v, np.float32(1), lax.mul, (2, 1), (1, 1), "VALID")
  jaxpr = jax.make_jaxpr(jax.vmap(f, in_axes=2))(x)
  assert _eqns(jaxpr) == ["transpose", "reduce_window"]
  assert jaxpr.jaxpr.eqns[1].params["window_dimensions"] == (1, 2, 1)
  np.testing.assert_allclose(jax.vmap(f, in_axes=2)(x), loop_over_batch(f, (2,), x))


def test_generic_reduce_window_two_operands_one_unbatched():
  a = np.arange(12.0, dtype=np.float32).reshape(3, 4)
  b = np.arange(4.0, dtype=np.float32) + 1

  def f(a, b):
    return lax.reduce_window((a, b), (np.float32(0), np.float32(1)),
                             lambda acc, x: (acc[0] * x[1] + x[0], acc[1] * x[1]),
                             (2,), (1,), "SAME")
  out = jax.vmap(f, in_axes=(0, None))(a, b)
  expected = [loop_over_batch(lambda a: f(a, b)[i], (0,), a) for i in range(2)]
  for o, e in zip(out, expected):
    np.testing.assert_allclose(o, e)


def test_batched_init_value_raises_as_in_jax():
  f = lambda x, init: lax.reduce_window(x, init, lax.mul, (2,), (1,), "VALID")
  with pytest.raises(NotImplementedError, match="initial values"):
    jax.vmap(f)(np.ones((2, 3), np.float32), np.ones(2, np.float32))


@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (None, 1)])
def test_select_and_scatter_add_batching_paths(in_axes):
  rng = np.random.default_rng(0)
  source = rng.standard_normal((3, 2, 2)).astype(np.float32)
  operand = rng.permutation(48).reshape(3, 4, 4).astype(np.float32)
  source = source if in_axes[0] == 0 else source[0]
  operand = np.moveaxis(operand, 0, 1) if in_axes[1] == 1 else (
      operand if in_axes[1] == 0 else operand[0])

  def f(s, o):
    return windows.select_and_scatter_add(s, o, elementwise.ge_p, (2, 2), (2, 2),
                                          ((0, 0), (0, 0)))
  jaxpr = jax.make_jaxpr(jax.vmap(f, in_axes=in_axes))(source, operand)
  assert _eqns(jaxpr)[-1] == "select_and_scatter_add"
  np.testing.assert_allclose(jax.vmap(f, in_axes=in_axes)(source, operand),
                             loop_over_batch(f, in_axes, source, operand))


@pytest.mark.parametrize("in_axes", [(0, 0), (1, None), (None, 0)])
def test_select_and_gather_add_batching_paths(in_axes):
  rng = np.random.default_rng(1)
  tangents = rng.standard_normal((3, 4, 5)).astype(np.float32)
  operand = rng.permutation(60).reshape(3, 4, 5).astype(np.float32)
  tangents = np.moveaxis(tangents, 0, 1) if in_axes[0] == 1 else tangents
  tangents = tangents[0] if in_axes[0] is None else tangents
  operand = operand[0] if in_axes[1] is None else operand

  def f(t, o):
    return windows.select_and_gather_add(t, o, elementwise.le_p, (2, 3), (1, 2),
                                         ((1, 0), (0, 1)), (2, 1), (1, 2))
  np.testing.assert_allclose(jax.vmap(f, in_axes=in_axes)(tangents, operand),
                             loop_over_batch(f, in_axes, tangents, operand))


def test_select_and_scatter_generic_batched():
  rng = np.random.default_rng(2)
  operand = rng.permutation(32).reshape(2, 4, 4).astype(np.float32)
  source = rng.standard_normal((2, 2, 2)).astype(np.float32)

  def f(o, s):
    return windows.select_and_scatter(o, lax.ge, (2, 2), (2, 2), ((0, 0), (0, 0)), s,
                                      np.float32(0), lax.add)
  np.testing.assert_allclose(jax.vmap(f)(operand, source), loop_over_batch(
      f, (0, 0), operand, source))


def test_per_example_gradient_of_max_pooling():
  # vmap of grad: select_and_gather_add / select_and_scatter_add batched
  x = np.random.default_rng(3).permutation(2 * 16).reshape(2, 4, 4).astype(np.float32)
  loss = lambda v: windows.reduce_window_max(v, (2, 2), (2, 2), ((0, 0), (0, 0))).sum()
  per_example = jax.vmap(jax.grad(loss))(x)
  np.testing.assert_allclose(per_example, loop_over_batch(jax.grad(loss), (0,), x))
  np.testing.assert_allclose(jax.grad(lambda x: jax.vmap(loss)(x).sum())(x), per_example)


def test_nested_vmap_of_reduce_window_sum_different_axes():
  x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
  f = lambda v: windows.reduce_window_sum(v, (2, 2), (1, 1), ((0, 0), (1, 1)))
  nested = jax.vmap(jax.vmap(f, in_axes=1), in_axes=3)(x)
  expected = np.stack([np.stack([f(x[:, j, :, i]) for j in range(3)]) for i in range(5)])
  np.testing.assert_allclose(nested, expected)
