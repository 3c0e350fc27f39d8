"""Derivative rules of the shape primitives (refimpl/lax/shapes.py): exact
examples, edge cases (negative and interior padding, size-1 broadcasting,
integer operands, unused outputs of split) and the primitives that
differentiated programs contain. The numerical checks of every rule are the
AD_CASES of conformance/families/shapes.py and tiling.py."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import dtypes, lax
from refimpl.interpreters import ad
from conformance import strategies as S


def _vjp(fn, *primals):
  """The pullback of `fn` at `primals` (a function of the output cotangent)."""
  return jax.vjp(fn, *primals)[1]


def _primitives(jaxpr):
  return [eqn.primitive.name for eqn in jaxpr.jaxpr.eqns]


# --- broadcast_in_dim -------------------------------------------------------------------

def test_broadcast_in_dim_transpose_sums_new_and_stretched_dimensions():
  x = np.arange(3.0, dtype=np.float32).reshape(3, 1)
  ct = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
  pullback = _vjp(lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (1, 2)), x)
  np.testing.assert_array_equal(pullback(ct)[0], ct.sum(axis=(0, 2))[:, None])


def test_grad_of_broadcast_is_a_reduce_sum():
  f = lambda x: jnp.sum(jnp.broadcast_to(x, (2, 3)))
  np.testing.assert_array_equal(jax.grad(f)(np.ones(3, np.float32)), [2.0, 2.0, 2.0])
  jaxpr = jax.make_jaxpr(jax.grad(f))(np.ones(3, np.float32))
  assert "reduce_sum" in _primitives(jaxpr)


# --- reshape, transpose, squeeze, expand_dims, rev ---------------------------------------

def test_reshape_with_dimensions_transposes_back():
  x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
  ct = np.arange(6.0, dtype=np.float32) * 10
  pullback = _vjp(lambda x: lax.reshape(x, (6,), dimensions=(1, 0)), x)
  np.testing.assert_array_equal(pullback(ct)[0], ct.reshape(3, 2).T)


@given(S.shapes(min_dims=1, max_side=3).flatmap(
    lambda shape: st.tuples(st.just(shape), st.permutations(range(len(shape))))))
def test_transpose_pullback_is_the_inverse_permutation(shape_and_permutation):
  shape, permutation = shape_and_permutation
  x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
  ct = np.transpose(x, permutation) + 1
  out = _vjp(lambda x: lax.transpose(x, permutation), x)(ct)[0]
  np.testing.assert_array_equal(out, x + 1)


def test_squeeze_expand_dims_and_rev_pullbacks():
  x = np.arange(3.0, dtype=np.float32).reshape(1, 3, 1)
  ct = np.array([1.0, 2.0, 3.0], np.float32)
  np.testing.assert_array_equal(_vjp(lambda x: lax.squeeze(x, (0, 2)), x)(ct)[0],
                                ct.reshape(1, 3, 1))
  np.testing.assert_array_equal(_vjp(lambda v: lax.expand_dims(v, (0,)), ct)(x[..., 0])[0],
                                x[0, :, 0])
  np.testing.assert_array_equal(_vjp(lambda v: lax.rev(v, (0,)), ct)(ct)[0], ct[::-1])


def test_integer_operands_have_float0_tangents():
  x = np.arange(4, dtype=np.int32)
  out, tangent = jax.jvp(lambda x: lax.rev(lax.reshape(x, (2, 2)), (0,)), (x,),
                         (np.zeros(4, dtypes.float0),))
  np.testing.assert_array_equal(out, [[2, 3], [0, 1]])
  assert tangent.dtype == dtypes.float0 and tangent.shape == (2, 2)


# --- pad ----------------------------------------------------------------------------------

def _pad_numpy_transpose(ct, shape, config):
  """ct read at the operand's positions: element i of an axis sits at
  low + i * (interior + 1) (0 where that position was cropped)."""
  out = np.zeros(shape, ct.dtype)
  for index in np.ndindex(*shape):
    position = tuple(low + i * (interior + 1) for i, (low, _, interior) in zip(index, config))
    if all(0 <= p < n for p, n in zip(position, ct.shape)):
      out[index] = ct[position]
  return out


@pytest.mark.parametrize("config", [
    ((1, 2, 0), (0, 0, 0)),
    ((1, -1, 1), (-1, 2, 0)),       # negative high with interior; negative low
    ((-2, -1, 2), (2, -3, 1)),      # crops that reach into the interior padding
    ((0, 0, 3), (-3, 3, 0)),
])
def test_pad_transpose_reads_the_operand_positions(config):
  x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
  value = np.float32(-1.0)
  out = lax.pad(x, value, config)
  ct = np.arange(out.size, dtype=np.float32).reshape(out.shape) + 1
  t_x, t_value = _vjp(lambda x, v: lax.pad(x, v, config), x, value)(ct)
  expected = _pad_numpy_transpose(ct, x.shape, config)
  np.testing.assert_array_equal(t_x, expected)
  # every output element is either an operand element or the padding value
  assert float(t_value) == ct.sum() - expected.sum()


def test_grad_of_pad_is_a_pad_then_a_strided_slice():
  f = lambda x: jnp.sum(lax.pad(x, 0.0, [(1, -1, 2)]))  # the last element is cropped
  x = np.ones(3, np.float32)
  np.testing.assert_array_equal(jax.grad(f)(x), [1.0, 1.0, 0.0])
  primitives = _primitives(jax.make_jaxpr(jax.grad(f))(x))
  assert primitives.count("pad") == 2 and "slice" in primitives


def test_pad_of_a_constant_operand_gives_the_padding_value_its_count():
  grad = jax.grad(lambda v: jnp.sum(lax.pad(np.ones((2, 2), np.float32), v,
                                             [(1, 0, 1), (0, 2, 0)])))
  assert float(grad(np.float32(0.0))) == 4 * 4 - 4


# --- concatenate, split, tile -------------------------------------------------------------

def test_concatenate_pullback_splits():
  a, b = np.ones((2, 1), np.float32), np.ones((2, 3), np.float32)
  ct = np.arange(8.0, dtype=np.float32).reshape(2, 4)
  t_a, t_b = _vjp(lambda a, b: lax.concatenate([a, b], 1), a, b)(ct)
  np.testing.assert_array_equal(t_a, ct[:, :1])
  np.testing.assert_array_equal(t_b, ct[:, 1:])
  jaxpr = jax.make_jaxpr(jax.grad(lambda a, b: jnp.sum(jnp.concatenate([a, b], 1)),
                                  argnums=(0, 1)))(a, b)
  assert "split" in _primitives(jaxpr)


def test_split_pullback_concatenates_with_zeros_for_unused_pieces():
  x = np.arange(5.0, dtype=np.float32)
  grad = jax.grad(lambda x: jnp.sum(lax.split(x, (2, 3))[1] ** 2))(x)
  np.testing.assert_array_equal(grad, [0.0, 0.0, 4.0, 6.0, 8.0])


def test_tile_pullback_sums_the_copies():
  x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
  ct = np.arange(36.0, dtype=np.float32).reshape(4, 9)
  out = _vjp(lambda x: lax.tile(x, (2, 3)), x)(ct)[0]
  np.testing.assert_array_equal(out, ct.reshape(2, 2, 3, 3).sum(axis=(0, 2)))
  # zero copies: a zero cotangent
  np.testing.assert_array_equal(_vjp(lambda x: lax.tile(x, (0, 1)), x)(
      np.zeros((0, 3), np.float32))[0], np.zeros((2, 3)))


# --- optimization_barrier, iota --------------------------------------------------------------

def test_optimization_barrier_passes_tangents_through_a_barrier_of_their_own():
  f = lambda x, n: lax.optimization_barrier((x * 2.0, n))[0]
  x, n = np.float32(3.0), np.int32(4)
  assert float(jax.grad(f)(x, n)) == 2.0
  primal, tangent = jax.jvp(lambda x: lax.optimization_barrier((x, n))[0], (x,),
                            (np.float32(5.0),))
  assert float(primal) == 3.0 and float(tangent) == 5.0
  jaxpr = jax.make_jaxpr(lambda x: jax.jvp(lambda x: lax.optimization_barrier((x, n))[0],
                                           (x,), (x,)))(x)
  assert _primitives(jaxpr).count("optimization_barrier") == 2


def test_iota_is_not_differentiated():
  assert ad.primitive_jvps[lax.iota_p] and lax.iota_p in ad.non_differentiable
  f = lambda x: jnp.sum(x * lax.iota(np.float32, 3))
  np.testing.assert_array_equal(jax.grad(f)(np.ones(3, np.float32)), [0.0, 1.0, 2.0])


def test_second_derivative_through_shape_primitives():
  f = lambda x: jnp.sum(lax.pad(lax.rev(x, (0,)), 0.0, [(1, 1, 1)]) ** 3)
  x = np.array([1.0, 2.0], np.float32)
  np.testing.assert_allclose(jax.hessian(f)(x), np.diag(6 * x))
