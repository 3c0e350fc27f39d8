"""Tests of refimpl/numpy/products.py against NumPy."""

import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import dtypes
from conformance.strategies import arrays

DTYPES = [np.float32, np.int8, np.int32, np.uint8, np.bool_, np.float16, np.complex64]
sides = st.integers(0, 3)


def _close(actual, expected, dtype):
  expected = np.asarray(expected)
  assert actual.shape == expected.shape, (actual.shape, expected.shape)
  assert actual.dtype == dtype, (actual.dtype, dtype)
  if dtypes.is_bool(dtype) or dtypes.is_integer(dtype):
    np.testing.assert_array_equal(actual, expected.astype(dtype))
  else:
    tol = 1e-2 if np.dtype(dtype).itemsize <= 2 else 1e-5
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=tol, atol=tol)


def _oracle(fn, *xs):
  """NumPy's result computed exactly (int64 / float64), as the result dtype sees it."""
  dtype = jnp.result_type(*xs)
  wide = (np.int64 if dtypes.is_bool(dtype) or dtypes.is_integer(dtype) else
          np.complex128 if dtypes.is_complex(dtype) else np.float64)
  out = fn(*(x.astype(wide) for x in xs))
  return (np.asarray(out) > 0 if dtypes.is_bool(dtype) else np.asarray(out)), dtype


@st.composite
def operand(draw, shape):
  dtype = draw(st.sampled_from(DTYPES))
  return draw(arrays(dtype, shape, elements=st.integers(-3, 3).map(
      lambda v: bool(v) if dtype == np.bool_ else abs(v) if dtype == np.uint8 else v)))


@given(st.data(), st.lists(sides, max_size=2), sides, st.lists(sides, max_size=1))
def test_dot_matches_numpy(data, a_lead, k, b_lead):
  a = data.draw(operand(tuple(a_lead) + (k,)))
  b_shape = (k,) + tuple(b_lead)
  b = data.draw(operand(b_shape))
  expected, dtype = _oracle(np.dot, a, b)
  _close(jnp.dot(a, b), expected, dtype)
  scalar = data.draw(operand(()))
  expected, dtype = _oracle(np.dot, a, scalar)
  _close(jnp.dot(a, scalar), expected, dtype)


@given(st.data(), st.lists(st.integers(1, 3), max_size=2), st.lists(st.integers(1, 3),
                                                                    max_size=2),
       st.booleans(), st.booleans(), sides, sides, sides)
def test_matmul_broadcasts_as_numpy(data, a_batch, b_batch, a_vec, b_vec, m, k, n):
  # make the batch shapes broadcast-compatible, with some size-1 axes
  width = max(len(a_batch), len(b_batch))
  a_batch = [1] * (width - len(a_batch)) + a_batch
  b_batch = [1] * (width - len(b_batch)) + b_batch
  b_batch = [bd if bd == 1 or ad == 1 else ad for ad, bd in zip(a_batch, b_batch)]
  a_batch, b_batch = a_batch[width - data.draw(st.integers(0, width)):], b_batch
  a_shape = (k,) if a_vec else tuple(a_batch) + (m, k)
  b_shape = (k,) if b_vec else tuple(b_batch) + (k, n)
  a, b = data.draw(operand(a_shape)), data.draw(operand(b_shape))
  expected, dtype = _oracle(np.matmul, a, b)
  _close(jnp.matmul(a, b), expected, dtype)
  _close(jnp.asarray(a) @ b, expected, dtype)


@given(st.data(), st.lists(sides, max_size=3), st.lists(sides, max_size=3), sides)
def test_tensordot_inner_outer_vdot_match_numpy(data, a_free, b_free, k):
  a = data.draw(operand(tuple(a_free) + (k,)))
  b = data.draw(operand((k,) + tuple(b_free)))
  expected, dtype = _oracle(lambda x, y: np.tensordot(x, y, 1), a, b)
  _close(jnp.tensordot(a, b, 1), expected, dtype)
  expected, dtype = _oracle(lambda x, y: np.tensordot(x, y, ([-1], [0])), a, b)
  _close(jnp.tensordot(a, b, ([-1], [0])), expected, dtype)
  b_last = np.moveaxis(b, 0, -1)
  expected, dtype = _oracle(np.inner, a, b_last)
  _close(jnp.inner(a, b_last), expected, dtype)
  expected, dtype = _oracle(np.outer, a, b)
  _close(jnp.outer(a, b), expected, jnp.result_type(a, b))
  if a.size == b.size:
    expected, dtype = _oracle(np.vdot, a, b.reshape(a.shape))
    _close(jnp.vdot(a, b.reshape(a.shape)), expected, dtype)


@pytest.mark.parametrize("subscripts, shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]), ("ij->", [(2, 3)]), ("ij->ji", [(2, 3)]), ("i,i->", [(3,), (3,)]),
    ("i,j->ij", [(2,), (3,)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]), ("ij,ij,j->i", [(2, 3), (2, 3), (3,)]),
    ("iij->j", [(2, 2, 3)]), ("ij,kl->", [(2, 3), (4, 5)]), ("a,ab,bc->c", [(2,), (2, 3), (3, 4)]),
    ("i,i", [(1,), (3,)]),
])
def test_einsum_matches_numpy(subscripts, shapes):
  rng = np.random.default_rng(0)
  operands = [rng.integers(-3, 4, size=s).astype(np.float32) for s in shapes]
  _close(jnp.einsum(subscripts, *operands), np.einsum(subscripts, *operands), np.float32)
  ints = [x.astype(np.int8) for x in operands]
  _close(jnp.einsum(subscripts, *ints), np.einsum(subscripts, *ints), np.int8)


def test_batched_vector_products():
  rng = np.random.default_rng(1)
  m = rng.normal(size=(2, 3, 4)).astype(np.float32)
  v = rng.normal(size=(4,)).astype(np.float32)
  _close(jnp.matvec(m, v), m @ v, np.float32)
  x1 = rng.normal(size=(2, 3)).astype(np.complex64) * (1 + 1j)
  x2 = rng.normal(size=(3,)).astype(np.complex64)
  _close(jnp.vecdot(x1, x2), np.sum(np.conj(x1) * x2, axis=-1), np.complex64)
  vec = rng.normal(size=(2, 3)).astype(np.float32)
  _close(jnp.vecmat(vec, m), np.einsum("bi,bij->bj", vec, m), np.float32)


def test_dot_lowering_and_dtypes():
  mat = np.ones((4, 3), np.float32)
  jaxpr = jax.make_jaxpr(lambda x: jnp.dot(mat, x))(np.ones(3, np.float32))
  eqn, = jaxpr.eqns
  assert eqn.primitive.name == "dot_general"
  assert eqn.params["dimension_numbers"] == (((1,), (0,)), ((), ()))
  assert eqn.params["preferred_element_type"] == np.float32
  # mixed dtypes are passed to dot_general as they are; the result is promoted
  eqn, = jax.make_jaxpr(jnp.dot)(np.ones(3, np.int32), np.ones(3, np.float32)).eqns
  assert [v.aval.dtype for v in eqn.invars] == [np.int32, np.float32]
  assert jnp.dot(np.ones(2, np.int8), np.ones(2, np.int8)).dtype == np.int8
  assert jnp.dot(np.ones(2, np.int8), 2).weak_type is False
  assert jnp.dot(2.0, 3.0).weak_type
  out = jnp.dot(np.full(4, 100, np.int8), np.full(4, 100, np.int8),
                preferred_element_type=np.int32)
  assert out.dtype == np.int32 and int(out) == 40000


def test_matmul_lowering_and_errors():
  prims = [e.primitive.name for e in jax.make_jaxpr(jnp.matmul)(
      np.ones((2, 3, 4), np.float32), np.ones((2, 4, 5), np.float32)).eqns]
  assert prims == ["dot_general"]
  with pytest.raises(ValueError, match="must have ndim at least 1"):
    jnp.matmul(np.ones(3), 2.0)
  with pytest.raises(ValueError, match="Incompatible types for matmul"):
    jnp.matmul(np.ones((2, 3, 4)), np.ones((3, 4, 5)))
  with pytest.raises(TypeError, match="contracting dimensions to have the same shape"):
    jnp.dot(np.ones((2, 3)), np.ones((4, 2)))
  with pytest.raises(TypeError, match="exceeds input ranks"):
    jnp.tensordot(np.ones(2), np.ones(2), 2)
  with pytest.raises(TypeError, match="dot requires ndarray or scalar arguments"):
    jnp.dot([1, 2], np.ones(2))


@given(st.data(), st.lists(sides, max_size=3), st.lists(sides, max_size=3))
def test_kron_matches_numpy(data, a_shape, b_shape):
  a, b = data.draw(operand(tuple(a_shape))), data.draw(operand(tuple(b_shape)))
  if jnp.result_type(a, b) == np.bool_:  # lax.mul takes no booleans, as in JAX
    with pytest.raises(TypeError, match="mul does not accept dtype bool"):
      jnp.kron(a, b)
    return
  expected, dtype = _oracle(np.kron, a, b)
  _close(jnp.kron(a, b), expected, dtype)


@given(st.sampled_from([(3, 3), (2, 3), (3, 2), (2, 2)]), st.integers(0, 3), st.data())
def test_cross_matches_numpy(sizes, batch, data):
  a = data.draw(arrays(np.float32, (batch, sizes[0]), allow_nan=False, allow_inf=False,
                       elements=st.floats(-100, 100, width=32)))
  b = data.draw(arrays(np.float32, (batch, sizes[1]), allow_nan=False, allow_inf=False,
                       elements=st.floats(-100, 100, width=32)))
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # NumPy deprecates 2-vectors
    expected = np.cross(a, b)
  np.testing.assert_allclose(jnp.cross(a, b), expected, rtol=1e-5, atol=1e-2)
  np.testing.assert_allclose(jnp.cross(a.T, b.T, axisa=0, axisb=0), expected, rtol=1e-5,
                             atol=1e-2)


def test_cross_rejects_other_sizes():
  with pytest.raises(ValueError, match="either 2 or 3"):
    jnp.cross(np.ones(4), np.ones(4))
