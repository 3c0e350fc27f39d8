"""The numba backend's dot_general and linalg lowerings agree with the reference.

dot_general: integers and bool bit for bit; floats within the bound of
docs/backends.md's Tolerances table (the reference sums by BLAS, in
another order), NaN and infinities where the reference has them. The
decompositions (a host call of the reference rule) bit for bit.
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
from refimpl import dtypes, lax
from refimpl.lax import linalg
from refimpl.lax.rules import contraction_dtype
from conformance import strategies as cst

pytest.importorskip("numba")

SETTINGS = settings(max_examples=15, deadline=None)


def _finfo(dtype):
  return dtypes.finfo(dtypes.to_real_dtype(dtype) if dtypes.is_complex(dtype) else dtype)


def assert_dot_close(reference, backend, magnitude, depth, what):
  """`backend` within the dot_general tolerance of `reference`, whose exact
  value is a sum of `depth` products of absolute sum `magnitude` (float64)."""
  reference, backend = np.asarray(reference), np.asarray(backend)
  assert backend.dtype == reference.dtype and backend.shape == reference.shape, what
  dtype = reference.dtype
  if not dtypes.is_inexact(dtype):
    assert np.array_equal(reference, backend), what
    return
  compute = contraction_dtype(dtype)
  info, out_info = _finfo(compute), _finfo(dtype)
  factor = 2 if dtypes.is_complex(dtype) else 1
  bound = factor * depth * (float(info.eps) * magnitude + float(info.smallest_subnormal))
  if out_info.eps > info.eps:   # rounded once more, to the result dtype
    bound = bound + float(out_info.eps) * np.maximum(np.abs(reference), np.abs(backend)).astype(
        np.float64) + float(out_info.smallest_subnormal)
  overflow = magnitude >= float(out_info.max) / 2   # partial sums may overflow in one order only
  parts = [(reference.real, backend.real), (reference.imag, backend.imag)] \
      if dtypes.is_complex(dtype) else [(reference, backend)]
  for r, b in parts:
    r, b = r.astype(np.float64), b.astype(np.float64)
    finite = np.isfinite(r) & np.isfinite(b)
    with np.errstate(invalid="ignore"):
      close = finite & (np.abs(r - b) <= bound)
    same = (r == b) | (np.isnan(r) & np.isnan(b))
    bad = ~(close | same | overflow)
    assert not bad.any(), (f"{what}: {bad.sum()} of {bad.size} elements differ, e.g. "
                           f"reference {r[bad][:3]}, numba {b[bad][:3]}, bound "
                           f"{np.broadcast_to(bound, bad.shape)[bad][:3]}")


# Each output: (its dot_general, the einsum of the same contraction, its depth).
CONTRACTIONS = {
    "batched": (lambda x, y, v: lax.dot_general(x, y, (((2,), (0,)), ((0,), (1,)))),
                "bmk,kbn->bmn", lambda b, m, k, n: k),
    "two_dims": (lambda x, y, v: lax.dot_general(x, y, (((0, 2), (1, 0)), ((), ()))),
                 "bmk,kbn->mn", lambda b, m, k, n: b * k),
    "vector": (lambda x, y, v: lax.dot_general(v, v, (((0,), (0,)), ((), ()))),
               "k,k->", lambda b, m, k, n: k),
    "outer": (lambda x, y, v: lax.dot_general(v, x, (((), ()), ((), ()))),
              "k,bmj->kbmj", lambda b, m, k, n: 1),
    "matrix_vector": (lambda x, y, v: lax.dot_general(x, v, (((2,), (0,)), ((), ()))),
                      "bmk,k->bm", lambda b, m, k, n: k),
}


def _magnitude(subscripts, x, y, v):
  """The float64 sum of the products' absolute values (NaN and inf left out)."""
  operands = {"bmk,kbn->bmn": (x, y), "bmk,kbn->mn": (x, y), "k,k->": (v, v),
              "k,bmj->kbmj": (v, x), "bmk,k->bm": (x, v)}[subscripts]
  return np.einsum(subscripts, *[_abs_finite(a) for a in operands])


def _abs_finite(a):
  """|a| in float64, NaN and inf as 0."""
  a = a.astype(np.complex128 if dtypes.is_complex(a.dtype) else np.float64)
  return np.where(np.isfinite(a), np.abs(a), 0.0)


def check_contractions(x, y, v):
  program = lambda x, y, v: [f(x, y, v) for f, _, _ in CONTRACTIONS.values()]
  reference = jax.jit(program)(x, y, v)
  backend = jax.jit(program, backend="numba")(x, y, v)
  (b, m, k), n = x.shape, y.shape[2]
  for (name, (_, subscripts, depth)), r, o in zip(CONTRACTIONS.items(), reference, backend):
    assert_dot_close(r, o, _magnitude(subscripts, x, y, v), depth(b, m, k, n), name)


def contraction_operands(dtype, elements=None):
  return st.tuples(*[st.integers(0, 4)] * 4).flatmap(lambda s: st.tuples(
      cst.arrays(dtype, (s[0], s[1], s[2]), elements=elements),
      cst.arrays(dtype, (s[2], s[0], s[3]), elements=elements),
      cst.arrays(dtype, (s[2],), elements=elements)))


@pytest.mark.parametrize("dtype", cst.ALL_DTYPES, ids=str)
@SETTINGS
@given(data=st.data())
def test_dot_general(dtype, data):
  check_contractions(*data.draw(contraction_operands(dtype)))


@pytest.mark.parametrize("dtype", [np.int32, np.uint32], ids=str)
@SETTINGS
@given(data=st.data())
def test_dot_general_wraps(dtype, data):
  """Extreme integers: exact sums wrapped once."""
  info = np.iinfo(dtype)
  extremes = st.sampled_from([int(info.min), int(info.max), 0, 1, -1 if info.min else 2])
  check_contractions(*data.draw(contraction_operands(dtype, elements=extremes)))


MIXED = [(np.int8, np.int8, np.int32), (dtypes.bfloat16, dtypes.bfloat16, np.float32),
         (np.float16, np.float32, None), (np.int8, np.float32, None), (np.bool_, np.int16, None),
         (np.uint8, np.int8, np.float32), (np.float32, np.complex64, None)]


@pytest.mark.parametrize("lhs_dtype,rhs_dtype,preferred", MIXED, ids=str)
@SETTINGS
@given(data=st.data())
def test_dot_general_mixed_and_preferred(lhs_dtype, rhs_dtype, preferred, data):
  b, m, k, n = data.draw(st.tuples(*[st.integers(0, 4)] * 4))
  x = data.draw(cst.arrays(lhs_dtype, (b, m, k)))
  y = data.draw(cst.arrays(rhs_dtype, (k, b, n)))
  program = lambda x, y: lax.dot_general(x, y, (((2,), (0,)), ((0,), (1,))),
                                         preferred_element_type=preferred)
  assert_dot_close(jax.jit(program)(x, y), jax.jit(program, backend="numba")(x, y),
                   np.einsum("bmk,kbn->bmn", _abs_finite(x), _abs_finite(y)), k, "mixed")


def assert_same(reference, backend, what):
  reference, backend = np.asarray(reference), np.asarray(backend)
  assert backend.dtype == reference.dtype and backend.shape == reference.shape, what
  assert np.array_equal(reference, backend, equal_nan=dtypes.is_inexact(reference.dtype)), what


DECOMPOSITIONS = {
    "cholesky": lambda a, x: [linalg.cholesky(a)],
    "lu": lambda a, x: list(linalg.lu(x)),
    "lu_pivots_to_permutation": lambda a, x: [linalg.lu_pivots_to_permutation(
        linalg.lu(x)[1], x.shape[-1] + 1)],
    "qr": lambda a, x: list(linalg.qr(x)),
    "qr_economic": lambda a, x: list(linalg.qr(x, full_matrices=False)),
    "geqrf_householder_product": lambda a, x: [*linalg.geqrf(x), linalg.householder_product(
        *linalg.geqrf(x))],
    "eigh": lambda a, x: list(linalg.eigh(a)),
    "eig": lambda a, x: list(linalg.eig(a)),
    "svd": lambda a, x: list(linalg.svd(x)),
    "singular_values": lambda a, x: [linalg.svd(x, compute_uv=False)],
    "triangular_solve": lambda a, x: [linalg.triangular_solve(a, x, left_side=True, lower=True),
                                      linalg.triangular_solve(a, x, transpose_a=True)],
}


@pytest.mark.parametrize("dtype", cst.LINALG_DTYPES, ids=str)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_decompositions(dtype, data):
  """The host call gives the reference's results, NaN (non-finite operands) included."""
  n = data.draw(st.integers(1, 4))
  batch = data.draw(cst.batch_shapes())
  a = data.draw(cst.well_conditioned_matrices(dtype, batch, (n, n), kind="positive_definite"))
  x = data.draw(cst.arrays(dtype, batch + (n, n)))
  diagonals = [data.draw(cst.arrays(dtype, batch + (n,))) for _ in range(3)]

  def program(a, x, *diagonals):
    return ([out for f in DECOMPOSITIONS.values() for out in f(a, x)]
            + [linalg.tridiagonal_solve(*diagonals, x)])

  reference = jax.jit(program)(a, x, *diagonals)
  backend = jax.jit(program, backend="numba")(a, x, *diagonals)
  names = [name for name, f in DECOMPOSITIONS.items() for _ in f(a, x)] + ["tridiagonal_solve"]
  for name, r, b in zip(names, reference, backend):
    assert_same(r, b, name)
