"""Batching rules of the reductions (refimpl/lax/reductions.py): the axes are
renumbered around the batch axis wherever it is (the conformance property,
tests/test_conformance_vmap.py, draws few of these combinations), the
batched programs' structure (`make_jaxpr`), the generic `reduce` with
unbatched operands among batched ones and with batched initial values
(refused, as in JAX), per-example gradients and nested vmaps."""

import itertools

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


_MEMBER_AXES = [(), (0,), (1,), (0, 1)]


def _reducers():
  ints = np.array([[[3, -1, 4], [1, -5, 9]], [[2, 6, -5], [3, 5, -8]]], np.int32)
  floats = ints.astype(F32) / 2
  return [(lax.reduce_sum, floats), (lax.reduce_prod, floats), (lax.reduce_max, floats),
          (lax.reduce_min, floats), (lax.reduce_and, ints), (lax.reduce_or, ints),
          (lax.reduce_xor, ints)]


@pytest.mark.parametrize("reducer, batch", _reducers(), ids=lambda x: getattr(x, "__name__", ""))
@pytest.mark.parametrize("axes", _MEMBER_AXES)
@pytest.mark.parametrize("bdim", [0, 1, 2])
def test_reductions_renumber_axes_around_the_batch_axis(reducer, batch, axes, bdim):
  # members of shape (2, 3)... batched along `bdim` of the (2, 2, 3) batch
  x = np.moveaxis(batch, 0, bdim)
  out_dim = bdim - sum(a < bdim for a in (a + (a >= bdim) for a in axes))
  f = jax.vmap(lambda m: reducer(m, axes), in_axes=bdim, out_axes=out_dim)
  expected = np.moveaxis(loop_over_batch(lambda m: reducer(m, axes), (bdim,), x), 0, out_dim)
  np.testing.assert_array_equal(f(x), expected)
  eqn, = _eqns(jax.make_jaxpr(f)(x))   # the batch axis stays where the rule says
  assert eqn.params["axes"] == tuple(a + (a >= bdim) for a in axes)


@pytest.mark.parametrize("argfn", [lax.argmax, lax.argmin])
@pytest.mark.parametrize("axis, bdim, batch_axes, out_dim",
                         [(0, 0, (1,), 0), (0, 1, (0,), 0), (1, 0, (2,), 0),
                          (1, 2, (1,), 1), (0, 2, (0,), 1)])
def test_argmax_argmin_keep_their_index_dtype(argfn, axis, bdim, batch_axes, out_dim):
  member = np.array([[1., np.nan, 3.], [4., 4., -1.]], F32)
  x = np.stack([member, -member, member[::-1]], bdim)
  fn = lambda m: argfn(m, axis, np.int16)
  f = jax.vmap(fn, in_axes=bdim, out_axes=out_dim)
  out = f(x)
  assert out.dtype == np.int16
  np.testing.assert_array_equal(out, np.moveaxis(loop_over_batch(fn, (bdim,), x), 0, out_dim))
  eqn, = _eqns(jax.make_jaxpr(f)(x))
  assert eqn.params == {"axes": batch_axes, "index_dtype": np.dtype(np.int16)}


@pytest.mark.parametrize("cumulative", [lax.cumsum, lax.cumprod, lax.cummax, lax.cummin,
                                        lax.cumlogsumexp])
@pytest.mark.parametrize("axis, bdim, reverse", list(itertools.product([0, 1], [0, 1, 2],
                                                                       [False, True])))
def test_cumulative_reductions_shift_the_axis_and_keep_the_batch_axis(cumulative, axis,
                                                                      bdim, reverse):
  member = np.array([[0.5, -1., 2.], [1.5, 3., -0.5]], F32)
  x = np.stack([member, member * 2, member[::-1]], bdim)
  fn = lambda m: cumulative(m, axis, reverse)
  f = jax.vmap(fn, in_axes=bdim, out_axes=bdim)
  np.testing.assert_allclose(f(x), np.moveaxis(loop_over_batch(fn, (bdim,), x), 0, bdim),
                             rtol=1e-6)
  eqn, = _eqns(jax.make_jaxpr(f)(x))
  assert eqn.params == {"axis": axis + (axis >= bdim), "reverse": reverse}


# --- the generic reduce ------------------------------------------------------------------

def _sum_and_max(x, y, dimensions=(0,)):
  """A reduction of two operands (not a monoid lax knows: it stays `reduce`)."""
  return lax.reduce((x, y), (F32(0), F32(-np.inf)),
                    lambda a, b: (lax.add(a[0], b[0]), lax.max(a[1], b[1])), dimensions)


@pytest.mark.parametrize("in_axes", [(0, None), (None, 1), (1, 0), (2, 2)])
def test_reduce_moves_batch_axes_first_and_broadcasts_unbatched_operands(in_axes):
  member = np.array([[1., -2., 3.], [4., 0.5, -6.]], F32)
  x, y = (member if ax is None else np.stack([member * (i + 1) for i in range(3)], ax)
          for ax, member in zip(in_axes, (member, -member)))
  f = jax.vmap(lambda x, y: _sum_and_max(x, y, (1,)), in_axes=in_axes)
  for out, expected in zip(f(x, y), loop_over_batch(lambda x, y: _sum_and_max(x, y, (1,)),
                                                    in_axes, x, y)):
    np.testing.assert_array_equal(out, expected)
  closed = jax.make_jaxpr(f)(x, y)
  expected_ops = ["broadcast_in_dim" if ax is None else "transpose" for ax in in_axes
                  if ax != 0]
  assert _primitives(closed) == expected_ops + ["reduce"]
  assert _eqns(closed)[-1].params["dimensions"] == (2,)


def test_reduce_with_batched_initial_values_is_not_implemented():
  # as JAX: the initial values must be shared by the whole batch
  x = np.ones((3, 2), F32)
  f = jax.vmap(lambda x, init: lax.reduce(x, init, lambda a, b: lax.add(a, b) * 1, (0,)))
  with pytest.raises(NotImplementedError, match="initial values"):
    f(x, np.zeros(3, F32))


def test_monoid_reduce_with_a_batched_initial_value_is_not_a_monoid():
  # a batched init is not a concrete identity: it stays the generic reduce
  x = np.ones((3, 2), F32)
  with pytest.raises(NotImplementedError, match="initial values"):
    jax.vmap(lambda x, init: lax.reduce(x, init, lax.add, (0,)))(x, np.zeros(3, F32))


# --- with autodiff and nested vmaps -------------------------------------------------------

def test_per_example_gradients_of_reductions():
  x = np.array([[1., 3., 2.], [-1., 0.5, 4.], [2., 2., -3.]], F32)

  def loss(m):
    return lax.reduce_max(m, (0,)) + lax.reduce_sum(lax.cumprod(m, 0), (0,))

  per_example = jax.vmap(jax.grad(loss), in_axes=1, out_axes=1)(x)
  np.testing.assert_allclose(per_example, loop_over_batch(jax.grad(loss), (1,), x).T, rtol=1e-6)
  # the gradient of the batched sum is the same
  np.testing.assert_allclose(jax.grad(lambda x: jnp.sum(jax.vmap(loss, 1)(x)))(x),
                             per_example, rtol=1e-6)


def test_per_example_gradients_of_the_generic_reduce():
  x = np.array([[1., 3., 2.], [-1., 0.5, 4.]], F32)

  def product(m):
    return lax.reduce(m, F32(1), lambda a, b: lax.mul(a, b) * 1, (0,))

  per_example = jax.vmap(jax.grad(product))(x)
  np.testing.assert_allclose(per_example, loop_over_batch(jax.grad(product), (0,), x), rtol=1e-6)
  np.testing.assert_allclose(per_example, [[6., 2., 3.], [2., -4., -0.5]], rtol=1e-6)


def test_nested_vmap_with_different_in_axes():
  x = np.arange(24, dtype=F32).reshape(2, 3, 4)
  fn = lambda m: (lax.cumsum(m, 0, reverse=True), lax.reduce_max(m, (0,)),
                  lax.argmin(m, 0, np.int32))
  f = jax.vmap(jax.vmap(fn, in_axes=1), in_axes=2)   # members x[:, j, i] for i, j
  outs = f(x)
  for out, index in zip(outs, range(3)):
    expected = np.stack([np.stack([fn(x[:, j, i])[index] for j in range(3)])
                         for i in range(4)])
    np.testing.assert_array_equal(out, expected)
