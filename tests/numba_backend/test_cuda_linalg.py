"""The numba-cuda backend's decompositions and solvers, in numba's CUDA
simulator: bit for bit the reference's (as the CPU backend's, whose
per-matrix functions they compile) on any operands (NaN and infinities,
singular matrices, empty dimensions and batches), tridiagonal_solve within
the LAPACK tolerance of docs/backends.md; and their kernels compiled to PTX."""

import functools
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import dtypes
from refimpl.lax import linalg
from conformance import strategies as cst
from tests.numba_backend.test_linalg import (assert_same, batches, index_ranges, matrices,
                                             square_matrices)
from tests.numba_backend.ptx import programs_ptx

DTYPES = [np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.complex64)]
SETTINGS = settings(max_examples=3, deadline=None)
MANY = settings(max_examples=20, deadline=None)
"""For the cheap kernels (milliseconds an example once compiled)."""


def _run(dtype, program, *operands, backend="reference"):
  """(the reference's or `backend`'s results, numba-cuda's) of `program`."""
  with jax.enable_x64(np.dtype(dtype) in (np.float64, np.complex128)):
    want = jax.jit(program, backend=backend)(*operands)
    got = jax.jit(program, backend="numba-cuda")(*operands)
  return jax.tree_util.tree_leaves(want), jax.tree_util.tree_leaves(got)


def _check_same(dtype, programs, *operands):
  """Each of `programs` (name -> function returning a list) gives the
  reference's results bit for bit, all jitted as one program."""
  names = [name for name, f in programs.items() for _ in f(*operands)]
  want, got = _run(dtype, lambda *xs: [y for f in programs.values() for y in f(*xs)], *operands)
  assert len(want) == len(got) == len(names)
  for name, w, g in zip(names, want, got):
    assert_same(w, g, name)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@SETTINGS
@given(data=st.data())
def test_factorizations_match_the_reference_bit_for_bit(dtype, data):
  """lu, lu_pivots_to_permutation (out-of-range pivots too), qr (with and
  without pivoting, full or reduced), geqrf and householder_product."""
  batch = data.draw(batches())
  m, n = data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3))
  k = min(m, n)
  x = data.draw(matrices(dtype, batch, (m, n)))
  size = data.draw(st.integers(max(k, 1), 4))
  pivots = data.draw(cst.arrays(np.int32, batch + (k,), elements=st.integers(-size - 2, size + 2)))
  full = data.draw(st.booleans())
  programs = {
      "lu": lambda x, p: list(linalg.lu(x)),
      "lu_pivots_to_permutation": lambda x, p: [linalg.lu_pivots_to_permutation(p, size)],
      "qr": lambda x, p: list(linalg.qr(x, full_matrices=full)),
      "qr_pivoting": lambda x, p: list(linalg.qr(x, full_matrices=not full, pivoting=True)),
  }
  if m >= n:   # householder_product needs m >= n
    programs["householder_product"] = lambda x, p: [*linalg.geqrf(x), linalg.householder_product(
        *linalg.geqrf(x))]
  _check_same(dtype, programs, x, pivots)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@SETTINGS
@given(data=st.data())
def test_cholesky_and_triangular_solve_match_the_reference_bit_for_bit(dtype, data):
  """cholesky (positive definite, indefinite, any matrices) and
  triangular_solve with every flag, on either side."""
  batch = data.draw(batches())
  m, n = data.draw(st.integers(0, 3)), data.draw(st.integers(0, 2))
  a = data.draw(square_matrices(dtype, batch, m))
  b = data.draw(matrices(dtype, batch, (m, n)))
  flags = dict(zip(["lower", "transpose_a", "conjugate_a", "unit_diagonal"],
                   data.draw(st.tuples(*[st.booleans()] * 4))))
  programs = {
      "cholesky": lambda a, b, bt: [linalg.cholesky_p.bind(a)],
      "left": lambda a, b, bt: [linalg.triangular_solve(a, b, left_side=True, **flags)],
      "right": lambda a, b, bt: [linalg.triangular_solve(a, bt, left_side=False, **flags)],
  }
  _check_same(dtype, programs, a, b, np.ascontiguousarray(np.swapaxes(b, -1, -2)))


def test_triangular_solve_every_flag_on_either_side():
  """All 16 combinations of lower, transpose_a, conjugate_a and
  unit_diagonal, left and right, on a batch with a NaN and a zero pivot."""
  rng = np.random.default_rng(2)
  a = (rng.standard_normal((2, 3, 3)) + 1j * rng.standard_normal((2, 3, 3))).astype(np.complex64)
  b = (rng.standard_normal((2, 3, 2)) - 1j * rng.standard_normal((2, 3, 2))).astype(np.complex64)
  a[1, 0, 2], a[1, 1, 1] = np.nan, 0
  flags = [dict(zip(["lower", "transpose_a", "conjugate_a", "unit_diagonal"], bits))
           for bits in np.ndindex(2, 2, 2, 2)]
  programs = {f"{side}{k}": functools.partial(
      lambda a, b, bt, side, f: [linalg.triangular_solve(a, b if side else bt, left_side=side,
                                                         **f)], side=side, f=f)
      for k, f in enumerate(flags) for side in (True, False)}
  _check_same(np.complex64, programs, a, b, np.ascontiguousarray(np.swapaxes(b, -1, -2)))


@pytest.mark.parametrize("shape", [(300, 1), (1100, 2)], ids=str)
def test_long_columns_are_summed_pairwise_as_numpy(shape):
  """Norms of columns longer than 128 (NumPy's pairwise recursion, walked on
  the device with a stack) in qr, with and without pivoting."""
  x = np.random.default_rng(0).standard_normal(shape).astype(np.float32) * 3
  _check_same(np.float32, {"qr": lambda x: list(linalg.qr(x, full_matrices=False)),
                           "pivoting": lambda x: list(linalg.qr(x, full_matrices=False,
                                                                pivoting=True))}, x)


def _tridiagonal_case(draw, dtype):
  """(dl, d, du, b): bounded diagonals (rows swapped where elimination
  meets a larger entry below), or a dominant diagonal, or a zero row
  (singular), or a non-finite entry."""
  batch = draw(batches())
  m, n = draw(st.integers(0, 4)), draw(st.integers(0, 2))
  dl, d, du = (draw(cst.bounded_arrays(np.dtype(dtype), batch + (m,))) for _ in range(3))
  b = draw(cst.bounded_arrays(np.dtype(dtype), batch + (m, n)))
  kind = draw(st.sampled_from(["bounded", "dominant", "zero_row", "non_finite"]))
  if kind != "bounded":   # |d| > |dl| + |du|
    d = (d / (1 + np.abs(d)) + (1 + np.abs(dl) + np.abs(du))).astype(dtype)
  if m and kind == "zero_row":
    row = draw(st.integers(0, m - 1))
    for y in (dl, d, du):
      y[..., row] = 0
  elif m and kind == "non_finite":
    y = draw(st.sampled_from([dl, d, du, b]))
    y[(..., draw(st.integers(0, m - 1))) + (slice(None),) * (y is b)] = \
        draw(st.sampled_from([np.nan, np.inf, -np.inf]))
  return dl, d, du, b


def _condition(dl, d, du):
  """The largest condition number (2-norm, float64) of the dense matrices;
  inf for a singular or non-finite one."""
  m = d.shape[-1]
  a = np.zeros(d.shape + (m,), np.complex128)
  i = np.arange(m)
  a[..., i, i], a[..., i[1:], i[1:] - 1], a[..., i[:-1], i[:-1] + 1] = \
      d, dl[..., 1:], du[..., :-1]
  if not (m and a.size) or not np.isfinite(a).all():
    return 1.0 if not a.size else np.inf
  with np.errstate(all="ignore"):
    return float(np.nan_to_num(np.linalg.cond(a), nan=np.inf).max())


def _assert_solution_close(want, got, m, condition, dtype):
  """NaN where the reference has NaN; elsewhere within 64·m·ε·κ·‖x‖ of
  float64 (Gaussian elimination with partial pivoting: a backward stable
  solve, κ the condition number) plus two ulps of the result dtype."""
  want, got = np.asarray(want), np.asarray(got)
  assert want.dtype == got.dtype and want.shape == got.shape
  assert np.array_equal(np.isnan(want), np.isnan(got)), (want, got)
  finite = ~np.isnan(want)
  w, g = want[finite].astype(np.complex128), got[finite].astype(np.complex128)
  eps = dtypes.finfo(dtypes.to_real_dtype(dtype) if dtypes.is_complex(dtype) else dtype).eps
  norm = np.abs(w).max(initial=0.0)
  bound = 64 * max(m, 1) * np.finfo(np.float64).eps * condition * norm + 2 * float(eps) * np.abs(w)
  assert np.all(np.abs(w - g) <= bound), (w, g)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@settings(max_examples=4, deadline=None)
@given(data=st.data())
def test_tridiagonal_solve_is_within_the_lapack_tolerance(dtype, data):
  """gtsv's elimination against the reference's gesv: close, and NaN for a
  singular matrix (a zero row) or a non-finite entry read."""
  dl, d, du, b = _tridiagonal_case(data.draw, dtype)
  (want,), (got,) = _run(dtype, lambda *xs: [linalg.tridiagonal_solve(*xs)], dl, d, du, b)
  _assert_solution_close(want, got, d.shape[-1], _condition(dl, d, du), dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.complex64], ids=str)
def test_tridiagonal_solve_swaps_rows_and_finds_zero_pivots(dtype):
  """Elimination swapping rows (the entry below the larger), and a zero
  pivot met after a swap: all NaN, as the reference."""
  phase = 1 - 1j if dtypes.is_complex(dtype) else 1
  dl, d, du = (np.array(y, dtype) * phase for y in ([[0, 2, 1], [0, 2, 0]], [[1, 4, 2], [1, 4, 2]],
                                                    [[2, 1, 0], [2, 1, 0]]))
  b = np.arange(12).reshape(2, 3, 2).astype(dtype)
  (want,), (got,) = _run(dtype, lambda *xs: [linalg.tridiagonal_solve(*xs)], dl, d, du, b)
  assert np.isnan(np.asarray(got)[1]).all() and not np.isnan(np.asarray(got)[0]).any()
  _assert_solution_close(want, got, 3, _condition(dl[:1], d[:1], du[:1]), dtype)


def _reflectors_product(out, taus):
  """Q = H_0 ... H_{n-2} (complex128) of each matrix of a hessenberg result:
  H_j = I - taus[j] v v^H, v one at row j + 1 and out[j + 2:, j] below."""
  *batch, n = out.shape[:-1]
  q = np.broadcast_to(np.eye(n, dtype=np.complex128), out.shape).copy()
  for j in range(n - 1):
    v = np.zeros(tuple(batch) + (n,), np.complex128)
    v[..., j + 1], v[..., j + 2:] = 1, out[..., j + 2:, j]
    h = np.eye(n) - taus[..., j, None, None] * v[..., :, None] * np.conj(v[..., None, :])
    q = q @ h
  return q


def _assert_similar(a, q, t, dtype, what):
  """q t q^H is `a` within 64 n² ε of `dtype` times ‖a‖ (a backward-stable
  reduction, its results rounded to `dtype`), and q is unitary as closely."""
  n = a.shape[-1]
  eps, _ = _precision(dtype)
  scale = _norms(a)[..., None, None]
  qh = np.conj(np.swapaxes(q, -1, -2))
  assert np.all(np.abs(q @ t @ qh - a) <= 64 * n * n * eps * (scale + 1e-300)), what
  assert np.all(np.abs(qh @ q - np.eye(n)) <= 64 * n * n * eps), what


def _hermitian(a, lower):
  """The Hermitian matrices (complex128) of the `lower` (else upper) triangles of `a`."""
  triangle = np.tril(a) if lower else np.triu(a)
  hermitian = (triangle + np.conj(np.swapaxes(triangle, -1, -2))).astype(np.complex128)
  i = np.arange(a.shape[-1])
  hermitian[..., i, i] = triangle[..., i, i].real
  return hermitian


def _precision(dtype):
  """(eps, the smallest subnormal) of the real dtype of `dtype`."""
  info = dtypes.finfo(dtypes.to_real_dtype(dtype) if dtypes.is_complex(dtype) else dtype)
  return float(info.eps), float(info.smallest_subnormal)


def _norms(x):
  """The Frobenius norm (float64) of each matrix of the stack `x`, each
  scaled by its largest modulus first, so that no square underflows or
  overflows."""
  moduli = np.abs(np.asarray(x).astype(np.complex128))
  largest = moduli.max(axis=(-2, -1), initial=0.0)
  with np.errstate(all="ignore"):
    scaled = moduli / np.where(largest > 0, largest, 1)[..., None, None]
    return largest * np.sqrt((scaled * scaled).sum(axis=(-2, -1)))


def _finite_matrices(x):
  """Which matrices of the stack `x` have no NaN or infinity."""
  return np.isfinite(x).all(axis=(-2, -1))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@MANY
@given(data=st.data())
def test_hessenberg_and_tridiagonal_are_similarity_transforms(dtype, data):
  """hessenberg: a = Q H Q^H with Q the product of its reflectors; tridiagonal
  (either triangle): the Hermitian matrix of the read triangle is Q T Q^H,
  the other triangle as given; both NaN where the reference is (a non-finite
  entry read). (Their sums are ascending, the reference's BLAS's in its own
  order: results that cancel to rounding noise may differ from the reference's.)"""
  batch, n = data.draw(batches()), data.draw(st.integers(1, 4))
  x = data.draw(square_matrices(dtype, batch, n))
  lower = data.draw(st.booleans())
  want, got = _run(dtype, lambda x: [*linalg.hessenberg(x), *linalg.tridiagonal(x, lower=lower)],
                   x)
  for w, g in zip(want, got):
    w, g = np.asarray(w), np.asarray(g)
    assert w.dtype == g.dtype and w.shape == g.shape
    assert np.array_equal(np.isnan(w), np.isnan(g))
  a = x.astype(np.complex128)
  out, taus = (np.asarray(y).astype(np.complex128) for y in got[:2])
  finite = _finite_matrices(out)   # (NaN, as the reference's, from a non-finite entry or overflow)
  _assert_similar(a[finite], _reflectors_product(out, taus)[finite], np.triu(out, -1)[finite],
                  dtype, "hessenberg")
  out, d, e, taus = (np.asarray(y) for y in got[2:])
  hermitian = _hermitian(a, lower)
  if not lower:   # LAPACK's upper storage: the lower one of the reversed matrix
    hermitian, out, d, e, taus = (hermitian[..., ::-1, ::-1], out[..., ::-1, ::-1],
                                  d[..., ::-1], e[..., ::-1], taus[..., ::-1])
  t = np.zeros(a.shape, np.complex128)
  i = np.arange(n)
  t[..., i, i], t[..., i[1:], i[:-1]], t[..., i[:-1], i[1:]] = d, e, e
  finite = np.isfinite(d).all(axis=-1)
  _assert_similar(hermitian[finite], _reflectors_product(out.astype(np.complex128), taus)[finite],
                  t[finite], dtype, "tridiagonal")
  kept = np.triu(x, 1) if lower else np.tril(x, -1)
  untouched = (np.triu(got[2], 1) if lower else np.tril(got[2], -1))
  assert_same(kept, untouched, "the triangle not read")


def _assert_within(want, got, bound, dtype, what):
  """NaN where `want` has NaN; elsewhere equal (infinities) or within
  `bound` (float64) plus two ulps of `dtype` of the reference's magnitude
  (the rounding to it)."""
  want, got = np.asarray(want), np.asarray(got)
  assert want.dtype == got.dtype and want.shape == got.shape, what
  assert np.array_equal(np.isnan(want), np.isnan(got)), what
  finite = ~np.isnan(want)
  w, g = want[finite].astype(np.complex128), got[finite].astype(np.complex128)
  eps, _ = _precision(dtype)
  with np.errstate(invalid="ignore"):   # (inf - inf)
    close = np.abs(w - g) <= np.broadcast_to(bound, want.shape)[finite] + 2 * eps * np.abs(w)
  assert np.all(close | (w == g)), (what, w, g)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@MANY
@given(data=st.data())
def test_ormqr_and_symmetric_product_are_within_the_tolerance(dtype, data):
  """ormqr (either side, either op) of geqrf's reflectors (the reference's
  bits on either backend) applied to bounded matrices, within 64 m ε ‖c‖ of
  float64; symmetric_product (real) within dot_general's bound, K ε S of
  float64 (K products of absolute sum S), of the reference's."""
  batch, m, p = data.draw(batches()), data.draw(st.integers(1, 4)), data.draw(st.integers(1, 3))
  n = data.draw(st.integers(0, m))
  a = data.draw(matrices(dtype, batch, (m, n)))
  c = data.draw(cst.bounded_arrays(np.dtype(dtype), batch + (m, p)))
  left, transpose = data.draw(st.booleans()), data.draw(st.booleans())
  operand = c if left else np.ascontiguousarray(np.swapaxes(c, -1, -2))
  (want,), (got,) = _run(dtype, lambda a, c: [linalg.ormqr(*linalg.geqrf(a), c, left=left,
                                                           transpose=transpose)], a, operand)
  eps64 = np.finfo(np.float64).eps
  _assert_within(want, got, 64 * m * eps64 * _norms(c)[..., None, None], dtype, "ormqr")
  if dtypes.is_complex(dtype):
    return
  alpha, beta = data.draw(st.sampled_from([1.0, -0.5, 2.0])), data.draw(st.sampled_from([0, 3.0]))
  symmetric = (c[..., :, :1] * np.swapaxes(c[..., :, :1], -1, -2)).astype(dtype)
  (want,), (got,) = _run(dtype, lambda a, s: [linalg.symmetric_product(a, s, alpha=alpha,
                                                                       beta=beta)], c, symmetric)
  wide = np.abs(c.astype(np.float64))
  products = abs(alpha) * (wide @ np.swapaxes(wide, -1, -2))
  _assert_within(want, got, p * eps64 * products, dtype, "symmetric_product")


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=str)
@MANY
@given(data=st.data())
def test_cholesky_update_matches_the_reference_bit_for_bit(dtype, data):
  """The Givens rotations of cholesky_update, elementwise as the reference
  (no fused multiply-adds), from factors of positive-definite matrices and
  from any matrices (NaN and infinities too)."""
  batch, n = data.draw(batches()), data.draw(st.integers(0, 4))
  r = data.draw(square_matrices(dtype, batch, n))
  w = data.draw(cst.arrays(np.dtype(dtype), batch + (n,)))
  want, got = _run(dtype, lambda r, w: [jax.vmap(linalg.cholesky_update)(r, w) if batch
                                        else linalg.cholesky_update(r, w)], r, w)
  assert_same(want[0], got[0], "cholesky_update")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@MANY
@given(data=st.data())
def test_eigh_by_jacobi_rotations_is_within_the_lapack_tolerance(dtype, data):
  """eigh (either triangle, a subset of eigenpairs) by Jacobi's method
  against the reference's LAPACK (syevd/heevd): NaN where the reference has
  NaN; ascending eigenvalues within 64 n ε ‖h‖ of float64 (plus the
  rounding to the dtype); orthonormal eigenvectors with h v = v diag(w)
  within 64 n² ε of the dtype times ‖h‖, plus n of its smallest subnormals
  (h the Hermitian matrix of the triangle read; where the eigenvalues are
  finite)."""
  batch, n = data.draw(batches()), data.draw(st.integers(0, 4))
  x = data.draw(square_matrices(dtype, batch, n))
  lower, subset = data.draw(st.booleans()), data.draw(index_ranges(n))
  (want_v, want_w), (v, w) = _run(dtype, lambda x: list(linalg.eigh(
      x, lower=lower, symmetrize_input=False, subset_by_index=subset)), x)
  assert np.array_equal(np.isnan(np.asarray(want_v)), np.isnan(np.asarray(v)))
  h = _hermitian(x, lower)
  norm = _norms(h)
  _assert_within(want_w, w, 64 * n * np.finfo(np.float64).eps * norm[..., None], dtype,
                 "eigenvalues")
  finite = _finite_matrices(h) & np.isfinite(np.asarray(w)).all(axis=-1)
  v, w, h, norm = np.asarray(v)[finite], np.asarray(w)[finite], h[finite], norm[finite]
  eps, tiny = _precision(dtype)
  residual = np.abs(h @ v - v * w[..., None, :]).max(axis=(-2, -1), initial=0.0)
  assert np.all(residual <= 64 * n * n * eps * norm + n * tiny), residual
  gram = np.conj(np.swapaxes(v, -1, -2)) @ v
  assert np.all(np.abs(gram - np.eye(v.shape[-1])) <= 64 * n * n * eps)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@MANY
@given(data=st.data())
def test_svd_by_one_sided_jacobi_is_within_the_lapack_tolerance(dtype, data):
  """svd (full or reduced, a subset of triplets, with or without vectors;
  wide, tall and empty matrices) by Hestenes's one-sided Jacobi method
  against the reference's LAPACK (gesdd): NaN where the reference has NaN;
  descending singular values within 64 k ε ‖x‖ of float64 (plus the
  rounding to the dtype); orthonormal u and vt with x v_i = s_i u_i within
  64 k² ε of the dtype times ‖x‖, plus k of its smallest subnormals (k =
  max(m, n); where the singular values are finite); identities for an
  empty matrix, as the reference."""
  batch, m, n = data.draw(batches()), data.draw(st.integers(0, 4)), data.draw(st.integers(0, 4))
  x = data.draw(matrices(dtype, batch, (m, n)))
  full, vectors = data.draw(st.booleans()), data.draw(st.booleans())
  subset = None if full else data.draw(index_ranges(min(m, n)))
  want, got = _run(dtype, lambda x: linalg.svd(x, full_matrices=full, compute_uv=vectors,
                                               subset_by_index=subset), x)
  if not vectors:
    want, got = [None, want[0], None], [None, got[0], None]
  for w, g in zip(want, got):
    if w is not None:
      assert np.array_equal(np.isnan(np.asarray(w)), np.isnan(np.asarray(g)))
  k = max(m, n)
  norm = _norms(x)
  _assert_within(want[1], got[1], 64 * k * np.finfo(np.float64).eps * norm[..., None], dtype,
                 "singular values")
  if not vectors:
    return
  if min(m, n) == 0:
    for w, g in zip(want, got):
      assert_same(w, g, "an empty matrix's vectors")
    return
  finite = _finite_matrices(x) & np.isfinite(np.asarray(got[1])).all(axis=-1)
  u, s, vt = (np.asarray(y)[finite].astype(np.complex128) for y in got)
  a, norm = x[finite].astype(np.complex128), norm[finite]
  eps, tiny = _precision(dtype)
  for q in (u, np.conj(np.swapaxes(vt, -1, -2))):
    gram = np.conj(np.swapaxes(q, -1, -2)) @ q
    assert np.all(np.abs(gram - np.eye(q.shape[-1])) <= 64 * k * k * eps)
  d = s.shape[-1]   # (the triplets' vectors come first, full or not)
  left = a @ np.conj(np.swapaxes(vt[..., :d, :], -1, -2))
  residual = np.abs(left - u[..., :d] * s[..., None, :]).max(axis=(-2, -1), initial=0.0)
  assert np.all(residual <= 64 * k * k * eps * norm + k * tiny), residual


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@MANY
@given(data=st.data())
def test_schur_is_a_unitary_similarity_to_the_schur_form(dtype, data):
  """schur by the reference's QR iterations (Givens rotations and 3 x 3
  reflections applied by loops): NaN where the reference has NaN; Z T Z^H
  is x within 64 n² ε of the dtype times ‖x‖ and Z is unitary; T is upper
  triangular (complex), or quasi-triangular with its 2 x 2 blocks in
  standard form (real: equal diagonal entries, b c < 0)."""
  batch, n = data.draw(batches()), data.draw(st.integers(0, 4))
  x = data.draw(square_matrices(dtype, batch, n))
  want, (t, z) = _run(dtype, lambda x: list(linalg.schur(x)), x)
  for w, g in zip(want, (t, z)):
    assert np.array_equal(np.isnan(np.asarray(w)), np.isnan(np.asarray(g)))
  t, z = np.asarray(t), np.asarray(z)
  finite = _finite_matrices(t)
  a, t, z = x[finite].astype(np.complex128), t[finite], z[finite]
  _assert_similar(a, z.astype(np.complex128), t.astype(np.complex128), dtype, "schur")
  if dtypes.is_complex(dtype):
    assert np.all(np.tril(t, -1) == 0)
    return
  assert np.all(np.tril(t, -2) == 0)
  below = np.diagonal(t, -1, -2, -1)
  assert not np.any((below[..., 1:] != 0) & (below[..., :-1] != 0))   # no 3 x 3 blocks
  for p, k in zip(*np.nonzero(below)):   # each 2 x 2 block: complex eigenvalues, standard form
    assert t[p, k, k] == t[p, k + 1, k + 1]
    assert np.sign(t[p, k, k + 1]) * np.sign(t[p, k + 1, k]) < 0


def _scaled(a, *values):
  """The matrix `a` and `values` (complex128) times the power of two that
  brings a's largest modulus into [0.5, 1) (one for a zero matrix), and it."""
  scale = 2.0 ** -np.frexp(np.abs(a).max())[1] if np.abs(a).any() else 1.0
  return (a.astype(np.complex128) * scale,
          *(np.asarray(v).astype(np.complex128) * scale for v in values), scale)


def _assert_eigenpairs(x, w, vl, vr, dtype):
  """For each finite matrix a of `x` whose eigenvalues `w` are finite (a and
  w `_scaled`), ε the dtype's, b = 64 n² ε ‖a‖: each of `w` is an
  eigenvalue to backward accuracy (the smallest singular value of a - w I
  is within b) and their sum is a's trace within n b; each column of `vl`
  and `vr` (None where not computed) has unit norm, and its residual (|a v
  - w v|, |v^H a - w v^H|) is within b; for a real a, eigenvalues off the
  real axis come in conjugate pairs, the one with positive imaginary part
  first, their vectors conjugate, and a real eigenvalue's vectors are real
  (as LAPACK's dgeev's)."""
  n = x.shape[-1]
  eps, tiny = _precision(dtype)
  for p in np.ndindex(x.shape[:-2]):
    if n == 0 or not (np.isfinite(x[p]).all() and np.isfinite(np.asarray(w)[p]).all()):
      continue
    a, wp, scale = _scaled(x[p], np.asarray(w)[p])
    bound = 64 * n * n * eps * _norms(a) + 2 * tiny * scale
    for value in wp:
      assert np.linalg.svd(a - value * np.eye(n), compute_uv=False)[-1] <= bound, (a, value)
    assert abs(wp.sum() - np.trace(a)) <= n * bound, (a, wp)
    for v, side in ((vl, "left"), (vr, "right")):
      if v is None:
        continue
      v = np.asarray(v)[p].astype(np.complex128)
      np.testing.assert_allclose(np.linalg.norm(v, axis=0), 1, rtol=0, atol=4 * n * eps)
      residual = (np.conj(v.T) @ a - wp[:, None] * np.conj(v.T) if side == "left"
                  else (a @ v - v * wp).T)
      assert np.all(np.linalg.norm(residual, axis=1) <= bound), (side, a, wp, v)
      if dtypes.is_complex(dtype):
        continue
      k = 0
      while k < n:
        if wp[k].imag == 0:
          assert np.all(v[:, k].imag == 0), (side, wp, v)
        else:
          assert wp[k].imag > 0 and wp[k + 1] == np.conj(wp[k]), wp
          np.testing.assert_array_equal(v[:, k + 1], np.conj(v[:, k]))
        k += 1 if wp[k].imag == 0 else 2


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@MANY
@given(data=st.data())
def test_eig_gives_eigenpairs_within_the_lapack_tolerance(dtype, data):
  """eig by the Schur form and its eigenvectors (back substitution, as
  LAPACK's trevc), with the left or right vectors or neither: the
  reference's dtypes and shapes, NaN where the reference has NaN, the
  eigenpairs `_assert_eigenpairs` states, and in some order the
  reference's eigenvalues within twice Henrici's bound (max(h, h^(1/n)), h
  = 64 n² ε ‖a‖ n^n with float64's ε: a defective eigenvalue's
  sensitivity) plus their rounding to the dtype."""
  batch, n = data.draw(batches()), data.draw(st.integers(0, 4))
  x = data.draw(square_matrices(dtype, batch, n))
  left, right = data.draw(st.booleans()), data.draw(st.booleans())
  want, got = _run(dtype, lambda x: linalg.eig(x, compute_left_eigenvectors=left,
                                               compute_right_eigenvectors=right), x)
  assert len(want) == len(got) == 1 + left + right
  for w, g in zip(want, got):
    w, g = np.asarray(w), np.asarray(g)
    assert w.dtype == g.dtype and w.shape == g.shape
    assert np.array_equal(np.isnan(w), np.isnan(g))
  _assert_eigenpairs(x, got[0], got[1] if left else None, got[-1] if right else None, dtype)
  eps, tiny = _precision(dtype)
  for p in np.ndindex(batch):
    if n == 0 or not (np.isfinite(x[p]).all() and np.isfinite(np.asarray(got[0])[p]).all()):
      continue
    a, w, g, scale = _scaled(x[p], np.asarray(want[0])[p], np.asarray(got[0])[p])
    h = 64 * n * n * float(np.finfo(np.float64).eps) * _norms(a) * n ** n
    close = 2 * max(h, h ** (1 / n)) + 4 * eps * _norms(a) + 2 * tiny * scale
    assert min(np.abs(g[list(order)] - w).max()
               for order in itertools.permutations(range(n))) <= close, (a, w, g)


def test_eig_of_scaled_matrices_is_exact():
  """eig works on the matrix scaled by a power of two (exactly): eig(2^k x)
  is (2^k w, vl, vr) bit for bit, for k = ±600 and ±900, where no entry
  becomes subnormal."""
  x = np.random.default_rng(6).standard_normal((4, 4))
  scaled = np.stack([x * 2.0 ** k for k in (0, 600, -600, 900, -900)])
  got = _run(np.float64, lambda x: list(linalg.eig(x)), scaled)[1]
  w, vl, vr = map(np.asarray, got)
  for p, k in enumerate((0, 600, -600, 900, -900)):
    np.testing.assert_array_equal(w[p], w[0] * 2.0 ** k)
    np.testing.assert_array_equal(vl[p], vl[0])
    np.testing.assert_array_equal(vr[p], vr[0])


def test_eig_of_larger_and_of_hard_matrices():
  """On 12 x 12 matrices, real and complex: Gaussian ones (the reference's
  eigenvalues within 1e-10 ‖x‖, each nearest to one of the other's), a
  reflection (its eigenvalue 1 repeated 11 times), a Jordan block (one
  eigenvector) and a cluster of eigenvalues 1e-8 apart: the eigenpairs
  `_assert_eigenpairs` states."""
  rng = np.random.default_rng(7)
  n = 12
  u = rng.standard_normal(n)
  q = np.linalg.qr(rng.standard_normal((n, n)))[0]
  matrices = np.stack([rng.standard_normal((n, n)), np.eye(n) - 2 * np.outer(u, u) / (u @ u),
                       np.eye(n) + np.eye(n, k=1), (q * (1 + 1e-8 * rng.standard_normal(n))) @ q.T])
  for x in (matrices, matrices + 1j * rng.standard_normal((n, n))):
    want, got = _run(x.dtype, lambda x: list(linalg.eig(x)), x)
    _assert_eigenpairs(x, *got, x.dtype)
    w, g = np.asarray(want[0])[0], np.asarray(got[0])[0]
    distances = np.abs(w[:, None] - g[None, :])
    assert distances.min(axis=0).max() <= 1e-10 * _norms(x[0])
    assert distances.min(axis=1).max() <= 1e-10 * _norms(x[0])


def test_eigh_of_repeated_tiny_and_huge_eigenvalues():
  """Jacobi's method scales the matrix by a power of two first: eigenvalues
  near the largest float and subnormal ones, and a repeated eigenvalue
  (any basis of its eigenspace)."""
  rng = np.random.default_rng(4)
  q = np.linalg.qr(rng.standard_normal((4, 4)))[0]
  x = np.stack([q @ np.diag(scale * np.array([1.0, 1.0, 1.0, -2.0])) @ q.T
                for scale in (1.0, 1e306, 1e-305)])
  (want_v, want_w), (v, w) = _run(np.float64, lambda x: list(linalg.eigh(x)), x)
  np.testing.assert_allclose(np.asarray(w), np.asarray(want_w), rtol=1e-14)
  for k in range(3):
    vk = np.asarray(v)[k]
    np.testing.assert_allclose(vk @ np.diag(np.asarray(w)[k] / np.abs(w[k]).max()) @ vk.T,
                               x[k] / np.abs(w[k]).max(), atol=1e-14)


def test_eigh_and_svd_of_larger_matrices():
  """Jacobi's sweeps converge on 16 x 16 Gaussian matrices (complex, and a
  wide real one for svd): the reference's values within 64 n ε ‖x‖, vectors
  that reconstruct x as closely."""
  rng = np.random.default_rng(5)
  x = rng.standard_normal((16, 16)) + 1j * rng.standard_normal((16, 16))
  wide = rng.standard_normal((9, 16))
  (_, want_w), (v, w) = _run(np.complex128, lambda x: list(linalg.eigh(x)), x)
  (_, want_s, _), (u, s, vt) = _run(np.float64, lambda a: linalg.svd(a, full_matrices=False),
                                    wide)
  bound = 64 * 16 * np.finfo(np.float64).eps
  h, (v, w, u, s, vt) = (x + np.conj(x.T)) / 2, map(np.asarray, (v, w, u, s, vt))
  np.testing.assert_allclose(w, np.asarray(want_w), rtol=0, atol=bound * _norms(h))
  np.testing.assert_allclose(s, np.asarray(want_s), rtol=0, atol=bound * _norms(wide))
  np.testing.assert_allclose((v * w) @ np.conj(v.T), h, rtol=0, atol=bound * _norms(h))
  np.testing.assert_allclose((u * s) @ vt, wide, rtol=0, atol=bound * _norms(wide))


def test_hessenberg_tridiagonal_and_ormqr_follow_the_reference():
  """On Gaussian matrices (no cancellation to rounding noise): the
  reference's results (the same reflectors, signs and layout), within a few
  ulps of float64."""
  rng = np.random.default_rng(3)
  x = (rng.standard_normal((2, 5, 5)) + 1j * rng.standard_normal((2, 5, 5)))
  c = rng.standard_normal((2, 5, 3))
  for a in (x.real.copy(), x):
    programs = [lambda a, c: linalg.hessenberg(a), lambda a, c: linalg.tridiagonal(a),
                lambda a, c: linalg.tridiagonal(a, lower=False),
                lambda a, c: [linalg.ormqr(*linalg.geqrf(a), c.astype(a.dtype), transpose=True)]]
    for program in programs:
      want, got = _run(np.float64, program, a, c)
      for w, g in zip(want, got):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=0, atol=1e-13)


def test_numpy_linalg_matches_the_reference_and_the_cpu_backend_bit_for_bit():
  """jnp.linalg's solve, inv, det, qr and cholesky end to end: the
  reference's bits, and (solve and det) the CPU backend's."""
  rng = np.random.default_rng(1)
  x = rng.standard_normal((2, 3, 3)).astype(np.float32)
  spd = (x @ np.swapaxes(x, -1, -2) + 3 * np.eye(3)).astype(np.float32)
  y = rng.standard_normal((2, 3, 2)).astype(np.float32)
  _check_same(np.float32, {"solve": lambda x, spd, y: [jnp.linalg.solve(x, y)],
                           "inv": lambda x, spd, y: [jnp.linalg.inv(x)],
                           "det": lambda x, spd, y: [jnp.linalg.det(x)],
                           "qr": lambda x, spd, y: list(jnp.linalg.qr(x)),
                           "cholesky": lambda x, spd, y: [jnp.linalg.cholesky(spd)]}, x, spd, y)
  want, got = _run(np.float32, lambda x, y: [jnp.linalg.solve(x, y), jnp.linalg.det(x)], x, y,
                   backend="numba")
  for w, g in zip(want, got):
    assert_same(w, g, "solve and det")


_PTX_SETUP = """
from refimpl.lax import linalg
x, p = np.ones((2, 3, 3), np.float32), np.zeros((2, 3), np.int32)
programs = {"cholesky": lambda x: linalg.cholesky_p.bind(x),
            "triangular_solve": lambda x: linalg.triangular_solve(x, x, lower=True),
            "lu": lambda x: linalg.lu(x),
            "lu_pivots_to_permutation": lambda x: linalg.lu_pivots_to_permutation(p, 4),
            "qr": lambda x: linalg.qr(x, pivoting=True),
            "tridiagonal_solve": lambda x: linalg.tridiagonal_solve(x[0, 0], x[0, 1], x[0, 2],
                                                                    x[0]),
            "hessenberg": linalg.hessenberg,
            "tridiagonal": lambda x: linalg.tridiagonal(x, lower=False),
            "ormqr": lambda x: [linalg.ormqr(*linalg.geqrf(x), x[..., :2, :], left=False),
                                linalg.ormqr(*linalg.geqrf(x), x, transpose=True)],
            "cholesky_update": lambda x: jax.vmap(linalg.cholesky_update)(x, x[..., 0]),
            "symmetric_product": lambda x: linalg.symmetric_product(x[..., :2], x, beta=2.0),
            "eigh": lambda x: linalg.eigh(x, subset_by_index=(1, 3)),
            "svd": lambda x: linalg.svd(x[..., :2], full_matrices=True),
            "schur": lambda x: [*linalg.schur(x), *linalg.schur(x.astype(np.complex64))],
            "eig": lambda x: [*linalg.eig(x), *linalg.eig(x.astype(np.complex64),
                                                         compute_left_eigenvectors=False)]}
"""


def test_decomposition_kernels_compile_to_ptx_for_compute_capability_9():
  found = programs_ptx(_PTX_SETUP, "x")
  for name, kernels in found.items():
    assert kernels, name
    for kernel, ptx in kernels:
      assert ".target sm_90" in ptx and ".entry" in ptx, (name, kernel)
    # the kernel of the per-matrix function calls nothing outside itself, and
    # computes in float64 as the reference (for float32 operands); the
    # permutation's in integers alone
    matrix = max((ptx for _, ptx in kernels), key=len)
    assert ".extern .func" not in matrix, name
    f64 = any(".f64" in line and not line.lstrip().startswith((".", "//"))
              for line in matrix.splitlines())
    assert f64 == (name != "lu_pivots_to_permutation"), name
