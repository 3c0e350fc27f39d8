"""Tests of refimpl/lax/linalg.py: dot_general against np.einsum."""

import string

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import dtypes, lax
from conformance.strategies import (BOOL_DTYPES, COMPLEX_DTYPES, FLOAT_DTYPES, INT_DTYPES,
                                    arrays)


@st.composite
def dot_general_problem(draw, dtype_list=INT_DTYPES + FLOAT_DTYPES + COMPLEX_DTYPES
                        + BOOL_DTYPES):
  """Operands and dimension numbers with 0-2 batch, contracting and free dims each."""
  dtype = draw(st.sampled_from(dtype_list))
  side = st.integers(0, 3)
  batch = draw(st.lists(side, max_size=2))
  contract = draw(st.lists(side, max_size=2))
  lhs_free = draw(st.lists(side, max_size=2))
  rhs_free = draw(st.lists(side, max_size=2))
  # lay out each operand's dims in a random order
  lhs_kinds = ([("b", i) for i in range(len(batch))] + [("c", i) for i in range(len(contract))]
               + [("f", i) for i in range(len(lhs_free))])
  rhs_kinds = ([("b", i) for i in range(len(batch))] + [("c", i) for i in range(len(contract))]
               + [("g", i) for i in range(len(rhs_free))])
  lhs_kinds = draw(st.permutations(lhs_kinds))
  rhs_kinds = draw(st.permutations(rhs_kinds))
  sizes = {"b": batch, "c": contract, "f": lhs_free, "g": rhs_free}
  lhs = draw(arrays(dtype, tuple(sizes[k][i] for k, i in lhs_kinds), allow_nan=False,
                    allow_inf=False))
  rhs = draw(arrays(dtype, tuple(sizes[k][i] for k, i in rhs_kinds), allow_nan=False,
                    allow_inf=False))
  position = lambda kinds, kind: tuple(kinds.index((kind, i)) for i in range(len(sizes[kind])))
  dims = ((position(lhs_kinds, "c"), position(rhs_kinds, "c")),
          (position(lhs_kinds, "b"), position(rhs_kinds, "b")))
  return lhs, rhs, dims


def _einsum_oracle(lhs, rhs, dims, wide):
  """The contraction written as an einsum over letters (an independent formulation)."""
  (lc, rc), (lb, rb) = dims
  letters = iter(string.ascii_letters)
  lhs_sub = [None] * lhs.ndim
  rhs_sub = [None] * rhs.ndim
  for l, r in list(zip(lb, rb)) + list(zip(lc, rc)):
    lhs_sub[l] = rhs_sub[r] = next(letters)
  for sub in (lhs_sub, rhs_sub):
    for i, s in enumerate(sub):
      if s is None:
        sub[i] = next(letters)
  out = ([lhs_sub[d] for d in lb] + [s for i, s in enumerate(lhs_sub) if i not in lb + lc]
         + [s for i, s in enumerate(rhs_sub) if i not in rb + rc])
  spec = f"{''.join(lhs_sub)},{''.join(rhs_sub)}->{''.join(out)}"
  return np.einsum(spec, lhs.astype(wide), rhs.astype(wide))


@given(dot_general_problem())
def test_dot_general_matches_einsum(problem):
  lhs, rhs, dims = problem
  dtype = lhs.dtype
  out = lax.dot_general(lhs, rhs, dims)
  assert out.dtype == dtype
  if dtypes.is_bool(dtype):
    expected = _einsum_oracle(lhs, rhs, dims, np.int64) > 0
    np.testing.assert_array_equal(out, expected)
  elif dtypes.is_integer(dtype):  # wraps modulo 2**bits
    expected = _einsum_oracle(lhs, rhs, dims, np.int64).astype(dtype)
    np.testing.assert_array_equal(out, expected)
  else:
    wide = np.complex128 if dtypes.is_complex(dtype) else np.float64
    expected = _einsum_oracle(lhs, rhs, dims, wide).astype(dtype).astype(wide)
    out = np.asarray(out).astype(wide)
    with np.errstate(all="ignore"):
      if dtype.itemsize <= 2:   # accumulated in float32 (as XLA): a product beyond its range is inf
        overflowed = np.isinf(_einsum_oracle(lhs, rhs, dims, np.float32)) & np.isinf(out)
        expected = np.where(overflowed, out, expected)
      tol = 2e-2 if dtype.itemsize <= 2 else 1e-5
      np.testing.assert_allclose(out, expected, rtol=tol, atol=tol)


def test_result_dtype_rule():
  def out_dtype(a, b, preferred=None):
    return lax.dot_general(np.ones(2, a), np.ones(2, b), (((0,), (0,)), ((), ())),
                           preferred_element_type=preferred).dtype
  assert out_dtype(np.int8, np.float32) == np.float32
  assert out_dtype(np.int32, np.uint32) == np.int32
  assert out_dtype(np.float16, dtypes.bfloat16) == dtypes.bfloat16  # wider exponent
  assert out_dtype(np.float32, np.complex64) == np.complex64
  assert out_dtype(np.int8, np.int8, np.int32) == np.int32
  with pytest.raises(TypeError, match="must not be narrower"):
    out_dtype(np.int32, np.int32, np.int8)
  assert out_dtype(np.int8, np.uint8) == np.int8  # equal width: signed wins


def test_preferred_element_type_accumulates_exactly():
  x = np.full(4, 100, np.int8)
  assert int(lax.dot(x, x)) == (40000 % 256) - 256 * (40000 % 256 >= 128)
  assert int(lax.dot(x, x, preferred_element_type=np.int32)) == 40000


def test_shape_rule_errors():
  x = np.ones((2, 3), np.float32)
  with pytest.raises(TypeError, match="contracting dimensions to have the same shape"):
    lax.dot_general(x, x, (((1,), (0,)), ((), ())))
  with pytest.raises(TypeError, match="batch dimensions to have the same shape"):
    lax.dot_general(x, x, (((), ()), ((0,), (1,))))
  with pytest.raises(TypeError, match="equal numbers of lhs_batch"):
    lax.dot_general(x, x, (((), ()), ((0,), ())))
  with pytest.raises(TypeError, match="in range"):
    lax.dot_general(x, x, (((2,), (1,)), ((), ())))
  with pytest.raises(TypeError, match="Incompatible shapes for dot"):
    lax.dot(x, x)


def test_printing_as_jax():
  x = np.ones((2, 3), np.float32)
  jaxpr = jax.make_jaxpr(lambda a, b: lax.dot(a, b))(x, x.T)
  assert "dot_general[dimension_numbers=(([1], [0]), ([], []))] a b" in str(jaxpr)
  jaxpr = jax.make_jaxpr(lambda a, b: lax.dot_general(
      a, b, (((1,), (1,)), ((0,), (0,))), precision=lax.Precision.HIGHEST,
      preferred_element_type=np.float32))(x, x)
  assert ("dimension_numbers=(([1], [1]), ([0], [0]))" in str(jaxpr)
          and "precision=(Precision.HIGHEST, Precision.HIGHEST)" in str(jaxpr)
          and "preferred_element_type=float32" in str(jaxpr))


def test_precision_arguments_as_jax():
  x = np.ones(2, np.float32)
  for given, expected in (("float32", "HIGHEST"), ("tensorfloat32", "HIGH"), ("fastest", "DEFAULT"),
                          (lax.Precision.HIGH, "HIGH"), (["highest", "bfloat16"], "HIGHEST"),
                          ((lax.Precision.HIGH, lax.Precision.HIGHEST), "HIGH")):
    jaxpr = jax.make_jaxpr(lambda a: lax.dot(a, a, precision=given))(x)
    assert f"precision=(Precision.{expected}, " in str(jaxpr)
    assert lax.dot(x, x, precision=given) == 2
  for bad in ("bogus", "HIGHEST", 3, ("highest", None), ("highest", lax.Precision.HIGH),
              ("high",) * 3):
    with pytest.raises(ValueError, match="Precision argument must be one of"):
      lax.dot(x, x, precision=bad)
    with pytest.raises(ValueError, match="Precision argument must be one of"):
      jnp.dot(x, x, precision=bad)


def test_batch_matmul():
  a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
  b = np.arange(40, dtype=np.float32).reshape(2, 4, 5)
  np.testing.assert_allclose(lax.batch_matmul(a, b), a @ b)
  with pytest.raises(ValueError, match="same ndim"):
    lax.batch_matmul(a, b[0])
