"""Tests of the decompositions and solvers in refimpl/lax/linalg.py against
NumPy and against their defining properties (reconstruction, orthonormality,
triangularity)."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
from refimpl import lax
from refimpl.config import enable_x64
from refimpl.lax import linalg
from conformance import strategies as S
from conformance.families.linalg import numpy_triangular_solve, numpy_tridiagonal_solve

DTYPES = S.LINALG_DTYPES


def wide(x):
  x = np.asarray(x)
  return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def mH(x):
  return np.conj(np.swapaxes(x, -1, -2))


def close(actual, expected, tol=1e-4):
  np.testing.assert_allclose(wide(actual), wide(expected), rtol=tol, atol=tol)


def jaxpr_text(fun, *args):
  """make_jaxpr's text with runs of whitespace made single spaces."""
  return " ".join(str(jax.make_jaxpr(fun)(*args)).split())


def assert_same_multiset(actual, expected, tol=1e-3):
  """Equal multisets of complex numbers along the last axis (each actual value
  matched to its nearest remaining expected one)."""
  for a_row, e_row in zip(wide(actual).reshape(-1, actual.shape[-1]),
                          wide(expected).reshape(-1, expected.shape[-1])):
    remaining = list(e_row)
    for value in a_row:
      nearest = min(range(len(remaining)), key=lambda i: abs(remaining[i] - value))
      assert abs(remaining.pop(nearest) - value) <= tol * (1 + abs(value)), (a_row, e_row)


def identity(n, batch=()):
  return np.broadcast_to(np.eye(n), batch + (n, n))


@st.composite
def matrices(draw, kind="invertible", dtype_list=DTYPES, shape=None):
  dtype = draw(st.sampled_from(dtype_list))
  return draw(S.well_conditioned_matrices(dtype, draw(S.batch_shapes()), shape, kind))


@st.composite
def any_matrices(draw, dtype_list=DTYPES, square=False):
  dtype = draw(st.sampled_from(dtype_list))
  m = draw(st.integers(1, 4))
  n = m if square else draw(st.integers(1, 4))
  return draw(S.bounded_arrays(dtype, draw(S.batch_shapes()) + (m, n)))


# --- cholesky -----------------------------------------------------------------------------

@given(matrices("positive_definite"))
def test_cholesky_matches_numpy_and_reconstructs(a):
  factor = linalg.cholesky(a)
  assert factor.dtype == a.dtype and factor.shape == a.shape
  close(factor, np.linalg.cholesky(wide(a)))
  factor = wide(factor)
  np.testing.assert_array_equal(factor, np.tril(factor))
  close(factor @ mH(factor), a)


@given(matrices("positive_definite"), st.sampled_from([np.nan, 1e30]))
def test_cholesky_reads_only_the_lower_triangle_without_symmetrize(a, junk):
  n = a.shape[-1]
  garbage = np.where(np.triu(np.ones((n, n)), 1) > 0, junk, a).astype(a.dtype)
  close(linalg.cholesky(garbage, symmetrize_input=False), np.linalg.cholesky(wide(a)))


def test_cholesky_of_a_non_positive_definite_matrix_is_nan():
  a = np.array([[[1., 2.], [2., 1.]], [[4., 2.], [2., 3.]]], np.float32)
  result = np.asarray(lax.linalg.cholesky_p.bind(a))
  assert np.isnan(result[0]).all()
  np.testing.assert_allclose(result[1], np.linalg.cholesky(a[1]), rtol=1e-6)
  complex_result = np.asarray(linalg.cholesky(a[:1].astype(np.complex64)))
  assert np.isnan(complex_result.real[0][np.tril_indices(2)]).all()
  assert np.isnan(complex_result.imag[0][np.tril_indices(2)]).all()


def test_cholesky_errors_and_jaxpr():
  with pytest.raises(TypeError, match="cholesky does not accept dtype int32"):
    linalg.cholesky(np.eye(2, dtype=np.int32), symmetrize_input=False)
  with pytest.raises(ValueError, match=r"shape \[..., n, n\]"):
    linalg.cholesky(np.ones((2, 3), np.float32), symmetrize_input=False)
  text = jaxpr_text(linalg.cholesky, np.eye(3, dtype=np.float32))
  assert "= cholesky d" in text and "div c 2.0:f32[]" in text


# --- triangular_solve ---------------------------------------------------------------------

FLAGS = ("left_side", "lower", "transpose_a", "conjugate_a", "unit_diagonal")


@pytest.mark.parametrize("flags", [dict(zip(FLAGS, values))
                                   for values in itertools.product([False, True], repeat=5)],
                         ids=lambda f: "-".join(k for k, v in f.items() if v) or "none")
@settings(max_examples=6)  # 32 combinations; the conformance case draws flags too
@given(data=st.data())
def test_triangular_solve_every_flag_combination(flags, data):
  dtype = data.draw(st.sampled_from(DTYPES))
  batch = data.draw(S.batch_shapes(max_dims=1))
  a = data.draw(S.well_conditioned_matrices(dtype, batch))
  if flags["unit_diagonal"]:
    a = (a / (2 * a.shape[-1])).astype(dtype)
  n, k = a.shape[-1], data.draw(st.integers(1, 3))
  b = data.draw(S.bounded_arrays(dtype, batch + ((n, k) if flags["left_side"] else (k, n))))
  x = linalg.triangular_solve(a, b, **flags)
  assert x.dtype == b.dtype and x.shape == b.shape
  close(x, numpy_triangular_solve(a, b, **flags))


def test_triangular_solve_vector_rhs_and_real_conjugate():
  a = np.array([[2., 0.], [1., 4.]], np.float32)
  b = np.array([2., 9.], np.float32)
  np.testing.assert_allclose(linalg.triangular_solve(a, b, left_side=True, lower=True), [1, 2])
  # x @ a = b for a vector x: x = [x0, x1] with 2 x0 + x1 = 2, 4 x1 = 9
  np.testing.assert_allclose(linalg.triangular_solve(a, b, lower=True), [-0.125, 2.25])
  text = jaxpr_text(lambda a, b: linalg.triangular_solve(a, b, conjugate_a=True), a, b)
  assert "conjugate_a=False" in text  # ignored for real a, as in JAX


def test_triangular_solve_zero_diagonal_divides_by_zero():
  a = np.array([[0., 0.], [1., 1.]], np.float32)
  x = np.asarray(linalg.triangular_solve(a, np.array([[1.], [1.]], np.float32),
                                         left_side=True, lower=True))
  np.testing.assert_array_equal(x, [[np.inf], [-np.inf]])


def test_triangular_solve_shape_errors():
  a = np.eye(3, dtype=np.float32)
  with pytest.raises(TypeError, match="Incompatible shapes"):
    linalg.triangular_solve(a, np.ones((2, 3), np.float32), left_side=True)
  with pytest.raises(TypeError, match="equal batch dimensions"):
    linalg.triangular_solve(np.ones((2, 3, 3), np.float32), np.ones((3, 3, 3), np.float32))
  with pytest.raises(TypeError, match="same dtypes"):
    linalg.triangular_solve(a, np.ones((3, 3), np.complex64))


# --- lu -----------------------------------------------------------------------------------

def lu_factors(lu, m, n):
  k = min(m, n)
  lu = wide(lu)
  return np.tril(lu[..., :k], -1) + np.eye(m, k), np.triu(lu[..., :k, :])


@given(any_matrices())
def test_lu_reconstructs_with_partial_pivoting(a):
  lu, pivots, perm = linalg.lu(a)
  m, n = a.shape[-2:]
  assert lu.dtype == a.dtype and pivots.dtype == perm.dtype == np.int32
  assert pivots.shape == a.shape[:-2] + (min(m, n),) and perm.shape == a.shape[:-1]
  lower, upper = lu_factors(lu, m, n)
  permuted = np.take_along_axis(wide(a), np.asarray(perm)[..., None], axis=-2)
  close(lower @ upper, permuted)
  # each pivot is the largest candidate by |re| + |im|, which bounds |L| by
  # 1 (real) or sqrt(2) (complex)
  assert (np.abs(lower) <= (np.sqrt(2) if a.dtype.kind == "c" else 1) + 1e-6).all()
  np.testing.assert_array_equal(perm, linalg.lu_pivots_to_permutation(pivots, m))
  assert sorted(np.asarray(perm).reshape(-1, m)[0]) == list(range(m))


def test_lu_exact_example_and_singular_matrix():
  a = np.array([[1., 2.], [3., 4.]], np.float32)
  lu, pivots, perm = linalg.lu(a)
  np.testing.assert_allclose(lu, [[3, 4], [1 / 3, 2 - 4 / 3]], rtol=1e-6)
  np.testing.assert_array_equal(pivots, [1, 1])
  np.testing.assert_array_equal(perm, [1, 0])
  lu, pivots, perm = linalg.lu(np.zeros((3, 3), np.float32))  # no NaN, no error
  np.testing.assert_array_equal(lu, np.zeros((3, 3)))
  np.testing.assert_array_equal(pivots, [0, 1, 2])
  # ties go to the first row; the zero pivot of column 1 leaves it unscaled
  lu, pivots, _ = linalg.lu(np.array([[1., 1., 1.], [-1., -1., 0.], [1., 1., 2.]], np.float32))
  np.testing.assert_array_equal(pivots, [0, 1, 2])
  np.testing.assert_allclose(lu, [[1, 1, 1], [-1, 0, 1], [1, 0, 1]])


def test_lu_pivots_to_permutation():
  pivots = np.array([[2, 2, 3], [0, 1, 2]], np.int32)
  np.testing.assert_array_equal(linalg.lu_pivots_to_permutation(pivots, 5),
                                [[2, 0, 3, 1, 4], [0, 1, 2, 3, 4]])
  with pytest.raises(ValueError, match="has to exceed"):
    linalg.lu_pivots_to_permutation(pivots, 2)
  with pytest.raises(ValueError, match="dtype int32"):
    linalg.lu_pivots_to_permutation(pivots.astype(np.float32), 5)


# --- qr -----------------------------------------------------------------------------------

def test_qr_matches_lapack_conventions():
  rng = np.random.default_rng(0)
  for shape in [(5, 3), (3, 5), (4, 4), (2, 3, 2)]:
    for dtype in DTYPES:
      a = rng.normal(size=shape) + (1j * rng.normal(size=shape) if dtype == np.complex64 else 0)
      a = a.astype(dtype)
      for full, mode in [(True, "complete"), (False, "reduced")]:
        q, r = linalg.qr(a, full_matrices=full)
        expected_q, expected_r = np.linalg.qr(a, mode=mode)
        close(q, expected_q, 1e-5)
        close(r, expected_r, 1e-5)
      raw, taus = linalg.geqrf(a)
      expected_raw, expected_taus = np.linalg.qr(a, mode="raw")
      close(raw, np.swapaxes(expected_raw, -1, -2), 1e-5)
      close(taus, expected_taus, 1e-5)


@given(matrices("full_rank"), st.booleans())
def test_qr_reconstructs(a, full_matrices):
  q, r = linalg.qr(a, full_matrices=full_matrices)
  m, n = a.shape[-2:]
  k = m if full_matrices else min(m, n)
  assert q.shape == a.shape[:-2] + (m, k) and r.shape == a.shape[:-2] + (k, n)
  q, r = wide(q), wide(r)
  np.testing.assert_array_equal(r, np.triu(r))
  close(q @ r, a)
  close(mH(q) @ q, identity(k, a.shape[:-2]))


@given(matrices("full_rank"))
def test_pivoted_qr_orders_columns_by_norm(a):
  q, r, p = linalg.qr(a, pivoting=True, full_matrices=False)
  assert p.dtype == np.int32 and p.shape == a.shape[:-1][:-1] + (a.shape[-1],)
  permuted = np.take_along_axis(wide(a), np.asarray(p)[..., None, :], axis=-1)
  close(wide(q) @ wide(r), permuted)
  diag = np.abs(np.diagonal(wide(r), axis1=-2, axis2=-1))
  assert (np.diff(diag, axis=-1) <= 1e-5 * diag.max()).all()


@settings(max_examples=20, deadline=None)
@given(st.sampled_from([np.float64, np.complex128]), st.integers(1, 4), st.integers(1, 4),
       st.sampled_from([-900, -600, 600, 900]), st.booleans(), st.data())
def test_reductions_commute_with_scaling_by_powers_of_two(dtype, m, n, k, pivoting, data):
  """qr (with or without pivoting), geqrf, hessenberg, tridiagonal and schur
  of 2**k x are those of x (R, the Hessenberg, tridiagonal and Schur forms
  times 2**k, the reflectors, Q and Z the same), exactly, also where the
  squares of the entries overflow or underflow: the norms are scaled by the
  largest modulus first, as LAPACK's nrm2, and schur scales the matrix
  first, as LAPACK's gees (LAPACK's results for such matrices)."""
  rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
  x = rng.standard_normal((m, n)) + (1j * rng.standard_normal((m, n)) if dtype is np.complex128
                                     else 0)
  square = x[:min(m, n), :min(m, n)]
  scale = 2.0 ** k

  def results(x, square):
    outs = [*linalg.qr(x, pivoting=pivoting), *linalg.geqrf(x), *linalg.hessenberg(square),
            *linalg.tridiagonal(square), *linalg.schur(square)]
    return [np.asarray(y) for y in outs]

  with enable_x64():
    want, got = results(x, square), results(x * scale, square * scale)
  q, r, *p = want[:3 if pivoting else 2]
  a, taus, h, h_taus, t, d, e, t_taus, schur_t, schur_z = want[len(p) + 2:]
  # (the reduced forms and the operand's other triangle scale, the reflectors below do not)
  scaled = [q, r * scale, *p, np.triu(a) * scale + np.tril(a, -1), taus,
            np.triu(h, -1) * scale + np.tril(h, -2), h_taus,
            np.triu(t, -1) * scale + np.tril(t, -2), d * scale, e * scale, t_taus,
            schur_t * scale, schur_z]
  assert len(scaled) == len(got)
  for w, g in zip(scaled, got):
    np.testing.assert_array_equal(g, w)


def test_householder_product_rebuilds_q():
  a = np.random.default_rng(1).normal(size=(2, 5, 3)).astype(np.float32)
  raw, taus = linalg.geqrf(a)
  close(linalg.householder_product(raw, taus), np.linalg.qr(a)[0], 1e-5)
  with pytest.raises(ValueError, match="at least as many rows"):
    linalg.householder_product(np.ones((2, 3), np.float32), np.ones(2, np.float32))


def test_qr_of_empty_matrices_and_jaxpr():
  q, r = linalg.qr(np.zeros((3, 0), np.float32))
  np.testing.assert_array_equal(q, np.eye(3))
  assert r.shape == (3, 0)
  q, r, p = linalg.qr(np.zeros((0, 2), np.float32), pivoting=True)
  assert q.shape == (0, 0) and r.shape == (0, 2)
  np.testing.assert_array_equal(p, [0, 0])
  text = jaxpr_text(linalg.qr, np.ones((3, 2), np.float32))
  assert "qr[full_matrices=True pivoting=False]" in text


# --- eigh ---------------------------------------------------------------------------------

@given(matrices("hermitian"))
def test_eigh_reconstructs(a):
  v, w = linalg.eigh(a)
  assert v.dtype == a.dtype and w.dtype == np.float32 and w.shape == a.shape[:-1]
  close(w, np.linalg.eigvalsh(wide(a)))
  assert (np.diff(np.asarray(w), axis=-1) >= 0).all()
  v = wide(v)
  close((v * wide(w)[..., None, :]) @ mH(v), a)
  close(mH(v) @ v, identity(a.shape[-1], a.shape[:-2]))


@given(any_matrices(square=True), st.booleans())
def test_eigh_reads_one_triangle(a, lower):
  _, w = linalg.eigh(a, lower=lower, symmetrize_input=False)
  close(w, np.linalg.eigvalsh(wide(a), UPLO="L" if lower else "U"))


def test_eigh_subset_by_index_and_nan():
  a = np.diag(np.array([3., 1., 2., 5.], np.float32))
  v, w = linalg.eigh(a, subset_by_index=(1, 3))
  np.testing.assert_allclose(w, [2, 3])
  np.testing.assert_allclose(np.abs(v), [[0, 1], [0, 0], [1, 0], [0, 0]])
  v, w = linalg.eigh(np.array([[[np.nan, 0], [0, 1]], [[2, 0], [0, 1]]], np.float32))
  assert np.isnan(w[0]).all() and np.isnan(v[0]).all()
  np.testing.assert_allclose(w[1], [1, 2])
  with pytest.raises(ValueError, match="subset_by_index"):
    linalg.eigh(a, subset_by_index=(2, 5))
  text = jaxpr_text(lambda a: linalg.eigh(a, symmetrize_input=False), a)
  assert "eigh[ lower=True sort_eigenvalues=True subset_by_index=None ] a" in text


# --- svd ----------------------------------------------------------------------------------

@given(matrices("full_rank"), st.booleans())
def test_svd_reconstructs(a, full_matrices):
  u, s, vh = linalg.svd(a, full_matrices=full_matrices)
  m, n = a.shape[-2:]
  k = min(m, n)
  assert s.dtype == np.float32 and s.shape == a.shape[:-2] + (k,)
  assert u.shape[-1] == (m if full_matrices else k) and vh.shape[-2] == (n if full_matrices else k)
  close(s, np.linalg.svd(wide(a), compute_uv=False))
  u, vh = wide(u), wide(vh)
  close((u[..., :k] * wide(s)[..., None, :]) @ vh[..., :k, :], a)
  close(mH(u) @ u, identity(u.shape[-1], a.shape[:-2]))
  close(vh @ mH(vh), identity(vh.shape[-2], a.shape[:-2]))
  close(linalg.svd(a, compute_uv=False), s)


def test_svd_subset_empty_and_errors():
  a = np.diag(np.array([1., 4., 2.], np.float32))
  u, s, vh = linalg.svd(a, full_matrices=False, subset_by_index=(0, 2))
  np.testing.assert_allclose(s, [4, 2])
  assert u.shape == (3, 2) and vh.shape == (2, 3)
  with pytest.raises(ValueError, match="cannot both be set"):
    linalg.svd(a, subset_by_index=(0, 2))
  u, s, vh = linalg.svd(np.zeros((2, 0, 3), np.float32))
  assert u.shape == (2, 0, 0) and s.shape == (2, 0)
  np.testing.assert_array_equal(vh, np.broadcast_to(np.eye(3), (2, 3, 3)))
  s = linalg.svd(np.array([[np.inf, 0], [0, 1]], np.float32), compute_uv=False)
  assert np.isnan(s).all()
  text = jaxpr_text(linalg.svd, a)
  assert "svd[ algorithm=None compute_uv=True full_matrices=True subset_by_index=None ]" in text
  text = jaxpr_text(lambda a: linalg.svd(a, algorithm=linalg.SvdAlgorithm.QR), a)
  assert "algorithm=SvdAlgorithm.QR" in text


# --- eig ----------------------------------------------------------------------------------

@given(matrices())
def test_eig_eigenvectors(a):
  w, vl, vr = linalg.eig(a)
  assert w.dtype == vl.dtype == vr.dtype == np.complex64
  a64, w, vl, vr = wide(a), wide(w), wide(vl), wide(vr)
  assert_same_multiset(w, np.linalg.eigvals(a64))
  close(a64 @ vr, vr * w[..., None, :], 1e-3)
  close(mH(vl) @ a64, w[..., :, None] * mH(vl), 1e-3)
  close(np.linalg.norm(vr, axis=-2), np.ones(w.shape))
  close(np.linalg.norm(vl, axis=-2), np.ones(w.shape))


def test_eig_outputs_follow_the_flags():
  a = np.array([[0., 1.], [-1., 0.]], np.float32)  # eigenvalues ±i
  w, = linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)
  np.testing.assert_allclose(np.sort_complex(np.asarray(w)), [-1j, 1j], atol=1e-6)
  w, vr = linalg.eig(a, compute_left_eigenvectors=False)
  close(a @ wide(vr), wide(vr) * wide(w)[None, :], 1e-6)
  with pytest.raises(ValueError, match="shape"):
    linalg.eig(np.ones((2, 3), np.float32))


# --- tridiagonal_solve --------------------------------------------------------------------

@given(st.sampled_from(DTYPES).flatmap(lambda dtype: st.tuples(*[
    S.bounded_arrays(dtype, (2, 4)) for _ in range(3)], S.bounded_arrays(dtype, (2, 4, 2)))))
def test_tridiagonal_solve_matches_dense_solve(inputs):
  dl, d, du, b = inputs
  d = (d + 3).astype(d.dtype)
  x = linalg.tridiagonal_solve(dl, d, du, b)
  assert x.dtype == b.dtype and x.shape == b.shape
  close(x, numpy_tridiagonal_solve(dl, d, du, b))


def test_tridiagonal_solve_singular_is_nan_and_errors():
  zeros = np.zeros((1, 2), np.float32)
  x = linalg.tridiagonal_solve(zeros, zeros, zeros, np.ones((1, 2, 1), np.float32))
  assert np.isnan(x).all()
  with pytest.raises(TypeError, match="leading ndim-1"):
    linalg.tridiagonal_solve(zeros, zeros, zeros, np.ones((1, 3, 1), np.float32))


# --- 64-bit -------------------------------------------------------------------------------

def test_float64_under_x64():
  rng = np.random.default_rng(2)
  a = rng.normal(size=(3, 3)) + 3 * np.eye(3)
  with enable_x64():
    spd = a @ a.T
    factor = linalg.cholesky(spd)
    assert factor.dtype == np.float64
    np.testing.assert_allclose(factor, np.linalg.cholesky(spd), rtol=1e-12)
    v, w = linalg.eigh(spd)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(spd), rtol=1e-12)
    u, s, vh = linalg.svd(a)
    np.testing.assert_allclose((np.asarray(u) * np.asarray(s)) @ np.asarray(vh), a, atol=1e-12)
    w = linalg.eig(a.astype(np.complex128), compute_left_eigenvectors=False,
                   compute_right_eigenvectors=False)[0]
    assert w.dtype == np.complex128
    x = linalg.triangular_solve(a, a, left_side=True, lower=True)
    np.testing.assert_allclose(np.tril(a) @ np.asarray(x), a, atol=1e-12)


def test_two_batch_dimensions_match_per_matrix_results():
  rng = np.random.default_rng(3)
  a = (rng.normal(size=(2, 3, 3, 3)) + 4 * np.eye(3)).astype(np.float32)
  spd = (a @ np.swapaxes(a, -1, -2)).astype(np.float32)
  functions = [lambda x: linalg.cholesky(x), lambda x: linalg.lu(x), lambda x: linalg.qr(x),
               lambda x: linalg.eigh(x)[1], lambda x: linalg.svd(x, compute_uv=False),
               lambda x: linalg.eig(x, compute_left_eigenvectors=False)[0],
               lambda x: linalg.triangular_solve(x, x, left_side=True, lower=True)]
  for fun in functions:
    batched = jax.tree_util.tree_leaves(fun(spd))
    for i, j in itertools.product(range(2), range(3)):
      for whole, single in zip(batched, jax.tree_util.tree_leaves(fun(spd[i, j]))):
        np.testing.assert_array_equal(np.asarray(whole)[i, j], single)


def test_empty_matrices():
  empty = np.zeros((2, 0, 0), np.float32)
  for outputs in [linalg.eig(empty), linalg.eigh(empty), linalg.lu(empty), linalg.qr(empty),
                  [linalg.cholesky(empty)], [linalg.triangular_solve(empty, empty)]]:
    assert [o.shape[0] for o in outputs] == [2] * len(outputs)
    assert all(o.size == 0 for o in outputs)
