"""Tests of refimpl.scipy.linalg against scipy.linalg (float64/complex128
under x64 with tight tolerances, float32 with loose ones), JAX's documented
examples, jit/vmap/grad, and JAX's errors."""

import math

import numpy as np
import pytest
import scipy.linalg as osp
from hypothesis import assume, given, settings, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
import refimpl.scipy.linalg as jsl
from refimpl.config import enable_x64
from conformance import strategies as S

SETTINGS = settings(max_examples=10, deadline=None)
TOL = {np.dtype(np.float32): 2e-4, np.dtype(np.complex64): 2e-4,
       np.dtype(np.float64): 1e-10, np.dtype(np.complex128): 1e-10}


def close(actual, expected, tol):
  np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=tol, atol=tol)


def mH(x):
  return np.conj(np.swapaxes(x, -1, -2))


@st.composite
def matrices(draw, kind="invertible", dtypes=(np.float32, np.float64, np.complex128),
             shape=None):
  """`(a, tolerance)`: a well-conditioned matrix (see conformance.strategies)."""
  dtype = np.dtype(draw(st.sampled_from(dtypes)))
  return draw(S.well_conditioned_matrices(dtype, (), shape, kind)), TOL[dtype]


def x64(fn, *args, **kwargs):
  """`fn` evaluated with x64 enabled (float64 stays float64)."""
  with enable_x64(True):
    return jax.tree_util.tree_map(np.asarray, fn(*args, **kwargs))


# --- factorizations and solvers ----------------------------------------------------------

@SETTINGS
@given(matrices("positive_definite"), st.booleans())
def test_cholesky_cho_factor_and_cho_solve(a_tol, lower):
  a, tol = a_tol
  close(x64(jsl.cholesky, a, lower=lower), osp.cholesky(a, lower=lower), tol)
  b = np.arange(a.shape[0], dtype=a.dtype)
  c, flag = x64(jsl.cho_factor, a, lower=lower)
  assert flag == lower
  close(x64(jsl.cho_solve, (c, lower), b), np.linalg.solve(a.astype(np.complex128), b),
        10 * tol)
  close(x64(jsl.solve, a, b[:, None], assume_a="pos", lower=lower),
        osp.solve(a, b[:, None], assume_a="pos", lower=lower), 10 * tol)


@SETTINGS
@given(matrices(), st.sampled_from([0, 1, 2]))
def test_lu_lu_factor_and_lu_solve(a_tol, trans):
  a, tol = a_tol
  lu, piv = x64(jsl.lu_factor, a)
  want_lu, want_piv = osp.lu_factor(a)
  close(lu, want_lu, tol)
  np.testing.assert_array_equal(piv, want_piv)
  b = np.ones((a.shape[0], 2), a.dtype)
  close(x64(jsl.lu_solve, (lu, piv), b, trans=trans), osp.lu_solve((want_lu, want_piv), b,
                                                                    trans=trans), 10 * tol)
  close(x64(jsl.lu_solve, (lu, piv), b[:, 0], trans=trans),
        osp.lu_solve((want_lu, want_piv), b[:, 0], trans=trans), 10 * tol)
  for got, want in zip(x64(jsl.lu, a), osp.lu(a)):
    close(got, want, tol)
  for got, want in zip(x64(jsl.lu, a, permute_l=True), osp.lu(a, permute_l=True)):
    close(got, want, tol)


def assume_distinct_column_norms(a):
  """Columns of (nearly) equal norms leave QR's pivot order, and Q and R, a tie's."""
  norms = np.sort(np.linalg.norm(a, axis=0))
  assume(np.all(np.diff(norms) > 1e-3 * norms[-1]))


def _phase(z):
  """z / |z| (one for zero)."""
  return z / abs(z) if abs(z) > 0 else 1.0


def assume_independent_leading_columns(a):
  """A full-rank matrix's leading min(m, n) columns may still be dependent
  (two equal, say): QR without pivoting then leaves Q and R a choice there."""
  k = min(a.shape)
  assume(np.linalg.svd(a[:, :k], compute_uv=False)[-1] > 1e-3 * np.linalg.norm(a))


@SETTINGS
@given(matrices("full_rank"), st.sampled_from(["full", "economic", "r"]), st.booleans())
def test_qr(a_tol, mode, pivoting):
  a, tol = a_tol
  if pivoting:
    assume_distinct_column_norms(a)
  else:
    assume_independent_leading_columns(a)
  got, want = x64(jsl.qr, a, mode=mode, pivoting=pivoting), osp.qr(a, mode=mode,
                                                                   pivoting=pivoting)
  assert len(got) == len(want)
  # Householder QR as LAPACK's: the same Q and R but for a unit phase d_j of
  # each column of Q (conj(d_j) of each row of R), where a reflector's pivot
  # is zero up to rounding, a tie that its rounding breaks
  (q, r), (want_q, want_r) = (((None, *x[:1]) if mode == "r" else x[:2]) for x in (got, want))
  phases = [_phase(np.vdot(r[j], want_r[j])) for j in range(min(a.shape))]
  if q is not None:
    phases += [_phase(np.vdot(want_q[:, j], q[:, j])) for j in range(len(phases), q.shape[1])]
    close(q, want_q * np.array(phases), 10 * tol)
  row_phases = np.conj(np.array((phases + [1.0] * r.shape[0])[:r.shape[0]]))
  close(r, row_phases[:, None] * want_r, 10 * tol)
  for g, w in zip(got[len(got) - pivoting:], want[len(want) - pivoting:]):
    np.testing.assert_array_equal(g, w)   # the pivots


@SETTINGS
@given(st.data(), st.sampled_from(["left", "right"]), st.booleans(), st.booleans())
def test_qr_multiply(data, mode, pivoting, conjugate):
  a, tol = data.draw(matrices("full_rank", dtypes=(np.float64, np.complex128)))
  if pivoting:
    assume_distinct_column_norms(a)
  else:
    assume_independent_leading_columns(a)
  m, n = a.shape
  k = min(m, n)
  shape = data.draw(st.sampled_from([(k, 2), (k,)] if mode == "left" else [(2, m), (m,)]))
  c = data.draw(S.bounded_arrays(a.dtype, shape))
  got = x64(jsl.qr_multiply, a, c, mode=mode, pivoting=pivoting, conjugate=conjugate)
  want = osp.qr_multiply(a, c, mode=mode, pivoting=pivoting, conjugate=conjugate)
  assert len(got) == len(want)
  # the product with LAPACK's Q but for the phases of test_qr's ties
  q, r, *_ = osp.qr(a, mode="economic", pivoting=pivoting)
  q = q * np.array([_phase(np.vdot(got[1][j], r[j])) for j in range(k)])
  q = np.conj(q) if conjugate else q
  close(got[0], q @ c if mode == "left" else c @ q, 10 * tol)
  for g, w in zip(got[1:], want[1:]):
    close(g, np.asarray(w) * np.array([_phase(np.vdot(r[j], g[j])) for j in range(k)])[:, None]
          if g.ndim == 2 else w, 10 * tol)


@SETTINGS
@given(matrices("full_rank"))
def test_svd_det_inv_and_solve(a_tol):
  a, tol = a_tol
  close(x64(jsl.svd, a, compute_uv=False), osp.svd(a, compute_uv=False), 10 * tol)
  u, s, vh = x64(jsl.svd, a, full_matrices=False)
  close((u * s) @ vh, a, 10 * tol)
  if a.shape[0] == a.shape[1]:
    close(x64(jsl.det, a), osp.det(a), 100 * tol)
    close(x64(jsl.inv, a), osp.inv(a), 100 * tol)
    b = np.ones(a.shape[0], a.dtype)
    for assume_a in ("gen", "sym", "her"):
      close(x64(jsl.solve, a, b, assume_a=assume_a), np.linalg.solve(a, b), 100 * tol)


@SETTINGS
@given(matrices(), st.sampled_from([0, 1, 2, "N", "T", "C"]), st.booleans(), st.booleans())
def test_solve_triangular(a_tol, trans, lower, unit_diagonal):
  a, tol = a_tol
  if unit_diagonal:
    a = (a / (2 * a.shape[0])).astype(a.dtype)
  b = np.ones((a.shape[0], 2), a.dtype)
  kwargs = dict(trans=trans, lower=lower, unit_diagonal=unit_diagonal)
  close(x64(jsl.solve_triangular, a, b, **kwargs), osp.solve_triangular(a, b, **kwargs), tol)
  close(x64(jsl.solve_triangular, a, b[:, 0], **kwargs),
        osp.solve_triangular(a, b[:, 0], **kwargs), tol)


@SETTINGS
@given(matrices("hermitian"), st.booleans())
def test_eigh(a_tol, lower):
  a, tol = a_tol
  close(x64(jsl.eigh, a, lower=lower, eigvals_only=True), osp.eigh(a, eigvals_only=True),
        10 * tol)
  w, v = x64(jsl.eigh, a, lower=lower)
  close((v * w) @ mH(v), a, 10 * tol)


@SETTINGS
@given(st.data())
def test_eigh_tridiagonal(data):
  n = data.draw(st.integers(1, 6))
  d = data.draw(S.bounded_arrays(np.float64, (n,)))
  e = data.draw(S.bounded_arrays(np.float64, (n - 1,)))
  close(x64(jsl.eigh_tridiagonal, d, e, eigvals_only=True),
        osp.eigh_tridiagonal(d, e, eigvals_only=True), 1e-10)
  w, v = x64(jsl.eigh_tridiagonal, d, e)
  t = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
  close(t @ v, v * w, 1e-10)
  lo = data.draw(st.integers(0, n - 1))
  hi = data.draw(st.integers(lo, n - 1))
  close(x64(jsl.eigh_tridiagonal, d, e, eigvals_only=True, select="i", select_range=(lo, hi)),
        osp.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(lo, hi)), 1e-10)


@SETTINGS
@given(st.data(), st.sampled_from(["real", "complex"]))
def test_schur_hessenberg_and_rsf2csf(data, output):
  a = data.draw(S.bounded_arrays(np.float64, (data.draw(st.integers(1, 5)),) * 2))
  t, z = x64(jsl.schur, a, output=output)
  assert t.dtype == (np.complex128 if output == "complex" else np.float64)
  close(z @ t @ mH(z), a, 1e-10)
  close(np.tril(t, -1 if output == "complex" else -2), np.zeros_like(t), 0)
  if output == "real":
    tc, zc = x64(jsl.rsf2csf, t, z)
    close(zc @ tc @ mH(zc), a, 1e-10)
    close(np.tril(tc, -1), np.zeros_like(tc), 0)
    close(mH(zc) @ zc, np.eye(a.shape[0]), 1e-10)
  h, q = x64(jsl.hessenberg, a, calc_q=True)
  close(q @ h @ mH(q), a, 1e-10)
  close(np.tril(h, -2), np.zeros_like(h), 0)


@SETTINGS
@given(matrices("full_rank", dtypes=(np.float64, np.complex128)), st.sampled_from(["qdwh", "svd"]))
def test_polar(a_tol, method):
  a, tol = a_tol
  side = "right" if a.shape[0] >= a.shape[1] else "left"
  u, p = x64(jsl.polar, a, side, method=method)
  want_u, want_p = osp.polar(a, side)
  close(u, want_u, 1e-8)
  close(p, want_p, 1e-8)


@SETTINGS
@given(st.data())
def test_solve_sylvester(data):
  m, n = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
  a = data.draw(S.well_conditioned_matrices(np.float64, (), (m, m)))
  b = data.draw(S.well_conditioned_matrices(np.float64, (), (n, n)))   # spectra in Re > 0
  c = data.draw(S.bounded_arrays(np.float64, (m, n)))
  x = x64(jsl.solve_sylvester, a, b, c)
  assert x.dtype == np.float64
  close(x, osp.solve_sylvester(a, b, c), 1e-10)


def test_solve_sylvester_without_a_unique_solution_is_nan():
  a = np.eye(2)
  assert np.isnan(x64(jsl.solve_sylvester, a, -a, np.ones((2, 2)))).all()
  with pytest.raises(ValueError, match="method must be 'schur'"):
    jsl.solve_sylvester(a, a, a, method="bartels")


# --- matrix functions ----------------------------------------------------------------------

@st.composite
def scaled_matrices(draw, dtypes=(np.float32, np.float64, np.complex128)):
  """`(a, tol)`: a matrix with entries in [-1, 1] times a scale from 1e-3 to 20,
  so that each Pade degree and the squarings are met."""
  dtype = np.dtype(draw(st.sampled_from(dtypes)))
  n = draw(st.integers(1, 4))
  scale = draw(st.sampled_from([1e-3, 0.1, 1., 3., 20.]))
  return (draw(S.bounded_arrays(dtype, (n, n))) * scale).astype(dtype), TOL[dtype]


def squared_pade_error(a):
  """The relative error of exp(x) by JAX's expm at x = norm1(a): its top Pade
  approximant [m/m] (m = 13, or 7 for 32-bit dtypes) at x / 2^s, s =
  max(0, floor(log2(x / maxnorm))), raised to the power 2^s. JAX's floor
  (SciPy's is a ceiling) leaves x / 2^s up to twice the approximant's bound
  maxnorm, where its error is far above the dtype's rounding (6% at x = 60 in
  float32)."""
  m, maxnorm = (7, 3.925724783138660) if a.dtype in (np.float32, np.complex64) else \
      (13, 5.371920351148152)
  x = float(np.abs(a).sum(axis=0).max())
  s = max(0, math.floor(math.log2(x / maxnorm))) if x else 0
  coefficients = [math.factorial(2 * m - k) * math.factorial(m)
                  / (math.factorial(2 * m) * math.factorial(k) * math.factorial(m - k))
                  for k in range(m + 1)]
  p, q = (sum(c * (sign * x / 2 ** s) ** k for k, c in enumerate(coefficients))
          for sign in (1, -1))
  return (p / q / math.exp(x / 2 ** s)) ** (2 ** s) - 1 if x else 0.


@SETTINGS
@given(scaled_matrices())
def test_expm_and_expm_frechet(a_tol):
  a, tol = a_tol
  pade = 2 * abs(squared_pade_error(a))
  want = osp.expm(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64))
  scale = max(1, np.abs(want).max())
  close(x64(jsl.expm, a) / scale, want / scale, 10 * tol + pade)
  e = np.ones_like(a)
  got_expm, got_frechet = x64(jsl.expm_frechet, a, e)
  want_expm, want_frechet = osp.expm_frechet(a, e)
  close(got_frechet / scale, want_frechet / scale, 100 * tol + pade)
  close(x64(jsl.expm, np.triu(a), upper_triangular=True) / scale,
        osp.expm(np.triu(a)) / scale, 10 * tol + 2 * abs(squared_pade_error(np.triu(a))))


def test_expm_of_a_large_norm_in_float32_has_the_error_of_jaxs_scaling():
  """All 20s (norm 60): JAX squares 3 times a degree 7 approximant at 7.5,
  twice its bound; each element is e^60 / 3 times 1.062, not e^60 / 3."""
  a = np.full((3, 3), 20, np.float32)
  got = np.asarray(jsl.expm(a)) / (math.exp(60) / 3)
  np.testing.assert_allclose(got, 1 + squared_pade_error(a), rtol=1e-3)
  assert abs(got - 1).min() > 0.06


def test_expm_batches_jits_and_gives_nan_past_max_squarings():
  a = np.array([[[0., 1.], [-1., 0.]], [[1., 0.], [0., 2.]]], np.float32)
  got = jax.jit(jsl.expm)(a)
  close(got[0], [[np.cos(1), np.sin(1)], [-np.sin(1), np.cos(1)]], 1e-6)
  close(got[1], np.diag(np.exp([1., 2.])), 1e-5)
  assert np.isnan(jsl.expm(a[1] * 1000, max_squarings=4)).all()
  with pytest.raises(ValueError, match="Expected A to be a \\(batched\\) square matrix"):
    jsl.expm(np.ones((2, 3), np.float32))


def test_expm_gradient_matches_finite_differences():
  a = np.array([[0.3, -0.2], [0.5, 0.1]])
  with enable_x64(True):
    grad = np.asarray(jax.grad(lambda x: jsl.expm(x)[0, 1])(a))
  eps = 1e-6
  for i, j in np.ndindex(2, 2):
    da = np.zeros((2, 2))
    da[i, j] = eps
    fd = (osp.expm(a + da)[0, 1] - osp.expm(a - da)[0, 1]) / (2 * eps)
    assert abs(grad[i, j] - fd) < 1e-8


@SETTINGS
@given(matrices("positive_definite", dtypes=(np.float64, np.complex128)))
def test_sqrtm_and_funm(a_tol):
  a, tol = a_tol
  root = x64(jsl.sqrtm, a)
  close(root, osp.sqrtm(a), 1e-8)
  close(x64(jsl.funm, a, jnp.exp), osp.expm(a), 1e-8)
  f, err = x64(jsl.funm, a, jnp.sqrt, disp=False)
  close(f, root, 1e-8)
  assert 0 <= err <= 1


def test_documented_examples():
  """JAX's docstring examples (float32)."""
  x = jnp.array([[1., 2., 3.], [2., 4., 2.], [3., 2., 1.]])
  close(jsl.sqrtm(x), [[0.92 + 0.71j, 0.54, 0.92 - 0.71j], [0.54, 1.85, 0.54],
                       [0.92 - 0.71j, 0.54, 0.92 + 0.71j]], 5e-3)
  u, p = jsl.polar(jnp.array([[1., 2., 3.], [5., 4., 2.], [3., 2., 1.]]))
  close(p, [[4.79, 3.25, 1.23], [3.25, 3.06, 2.01], [1.23, 2.01, 2.91]], 5e-3)
  tr, zr = jsl.schur(jnp.array([[0., 3., 3.], [0., 1., 2.], [2., 0., 1.]]))
  tc, _ = jsl.rsf2csf(tr, zr)
  close(np.sort_complex(np.diagonal(tc)), np.sort_complex([3.76, -0.88 + 0.91j, -0.88 - 0.91j]),
        5e-3)
  close(jsl.eigh_tridiagonal(jnp.array([1., 2., 3., 4.]), jnp.array([1., 1., 1.]),
                             eigvals_only=True), [0.2547188, 1.8227171, 3.1772828, 4.745281],
        1e-5)
  close(jsl.cho_solve(jsl.cho_factor(jnp.array([[2., 1.], [1., 2.]])), jnp.array([3., 4.])),
        [0.6666666, 1.6666666], 1e-6)
  close(jsl.solve_triangular(jnp.array([[1., 2., 3.], [0., 3., 2.], [0., 0., 5.]]),
                             jnp.array([10., 8., 5.]), trans="T"), [10., -4., -3.4], 1e-5)
  a = jnp.array([[1., 2.], [3., 4.]])
  close(jsl.funm(a, lambda x: jnp.sin(x) + 2 * jnp.cos(x)),
        [[1.2452652, -0.3701772], [-0.55526584, 0.6899995]], 1e-5)


def test_transformations():
  a = np.array([[2., 1.], [1., 3.]], np.float32)
  b = np.array([1., 2.], np.float32)
  close(jax.jit(jsl.solve, static_argnames="assume_a")(a, b, assume_a="pos"),
        np.linalg.solve(a, b), 1e-6)
  # d/db of solve(a, b) is a^-1; through the Cholesky custom_linear_solve too
  close(jax.jacobian(lambda b: jsl.solve(a, b, assume_a="pos"))(b), np.linalg.inv(a), 1e-5)
  close(jax.jacobian(lambda b: jsl.cho_solve(jsl.cho_factor(a), b))(b), np.linalg.inv(a), 1e-5)
  batch = np.stack([a, 2 * a])
  close(jax.vmap(jsl.det)(batch), [5., 20.], 1e-5)
  close(jax.vmap(jsl.sqrtm)(batch)[1], osp.sqrtm(2 * a.astype(np.float64)), 1e-5)
  close(jax.jit(jsl.schur)(a)[0], np.diag(np.linalg.eigvalsh(a)), 1e-5)
  close(jax.grad(lambda x: jsl.det(x))(a), np.linalg.det(a) * np.linalg.inv(a).T, 1e-5)


# --- special matrices ----------------------------------------------------------------------

@settings(max_examples=5, deadline=None)
@given(st.data())
def test_vector_built_matrices(data):
  dtype = data.draw(st.sampled_from([np.float32, np.int32, np.complex64]))
  c = data.draw(S.small_integer_arrays(dtype, (data.draw(st.integers(1, 5)),), bound=5))
  r = data.draw(S.small_integer_arrays(dtype, (data.draw(st.integers(1, 5)),), bound=5))
  close(jsl.toeplitz(c, r), osp.toeplitz(c, r), 0)
  close(jsl.toeplitz(c), osp.toeplitz(c), 0)
  close(jsl.hankel(c, r), osp.hankel(c, r), 0)
  close(jsl.hankel(c), osp.hankel(c), 0)
  close(jsl.circulant(c), osp.circulant(c), 0)
  # (|z| of a complex64 is correctly rounded here; NumPy's can be an ulp off)
  close(jsl.fiedler(c), osp.fiedler(c), np.finfo(np.float32).eps if dtype == np.complex64 else 0)
  if c.size > 1:
    close(jsl.leslie(c, c[1:]), osp.leslie(c, c[1:]), 0)
  close(jsl.convolution_matrix(c, r.size, "same"), osp.convolution_matrix(c, r.size, "same"), 0)
  for mode in ("full", "valid"):
    close(jsl.convolution_matrix(c, r.size, mode), osp.convolution_matrix(c, r.size, mode), 0)
  close(jsl.block_diag(c, r[:, None], c[0]), osp.block_diag(c, r[:, None], c[0]), 0)
  poly = np.concatenate([[1], c.real]).astype(np.float32)
  close(jsl.companion(poly), osp.companion(poly), 1e-6)
  close(jsl.fiedler_companion(poly), osp.fiedler_companion(poly), 1e-6)


def test_vector_built_matrices_batch_along_leading_axes():
  c = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
  assert jsl.toeplitz(c).shape == jsl.hankel(c).shape == jsl.circulant(c).shape == (2, 3, 3)
  close(jsl.circulant(c)[1], osp.circulant(c[1]), 0)
  close(jsl.companion(c.astype(np.float32))[1], osp.companion(c[1]), 1e-6)
  close(jsl.fiedler_companion(c.astype(np.float32))[0], osp.fiedler_companion(c[0]), 1e-6)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_sized_matrices(n):
  close(jsl.hilbert(n), osp.hilbert(n), 1e-7)
  close(jsl.invhilbert(n), osp.invhilbert(n), 1e-6)
  close(jsl.helmert(n), osp.helmert(n), 1e-7)
  close(jsl.helmert(n, full=True), osp.helmert(n, full=True), 1e-7)
  for scale in (None, "sqrtn", "n"):
    close(jsl.dft(n, scale), osp.dft(n, scale), 1e-6)
  for kind in ("symmetric", "lower", "upper"):
    close(jsl.pascal(n, kind), osp.pascal(n, kind), 0)
    close(jsl.invpascal(n, kind), osp.invpascal(n, kind), 0)
  assert jsl.pascal(n).dtype == np.float32 and jsl.hilbert(n).dtype == np.float32
  assert jsl.dft(n).dtype == np.complex64
  if n & (n - 1) == 0:
    close(jsl.hadamard(n), osp.hadamard(n), 0)
    assert jsl.hadamard(n).dtype == np.int32


def test_errors():
  a = np.eye(2, dtype=np.float32)
  for call, error, match in [
      (lambda: jsl.eigh(a, a), NotImplementedError, "Only the b=None case"),
      (lambda: jsl.eigh(a, type=2), NotImplementedError, "Only the type=1 case"),
      (lambda: jsl.schur(a, output="both"), ValueError, "'real' or 'complex'"),
      (lambda: jsl.qr(a, mode="raw"), ValueError, "Unsupported QR decomposition mode"),
      (lambda: jsl.qr_multiply(a, a, mode="up"), ValueError, "can only be 'left' or 'right'"),
      (lambda: jsl.solve(a, a, assume_a="banded"), ValueError, "Expected assume_a"),
      (lambda: jsl.solve_triangular(a, a, trans=3), ValueError, "Invalid 'trans' value"),
      (lambda: jsl.lu_solve(jsl.lu_factor(a), a, trans=3), ValueError, "'trans' value"),
      (lambda: jsl.polar(a[0]), ValueError, "must be a 2-D array"),
      (lambda: jsl.polar(a, side="up"), ValueError, "either 'right' or 'left'"),
      (lambda: jsl.polar(np.ones((2, 3), np.float32)), NotImplementedError, "qdwh"),
      (lambda: jsl.polar(a, method="newton"), ValueError, "Unknown polar decomposition"),
      (lambda: jsl.sqrtm(a, blocksize=2), NotImplementedError, "Blocked version"),
      (lambda: jsl.funm(a[0], jnp.exp), ValueError, "expected square"),
      (lambda: jsl.rsf2csf(a, np.eye(3)), ValueError, "shapes must match"),
      (lambda: jsl.eigh_tridiagonal(a[0], a[0, :1], select="v"), NotImplementedError,
       "select='v'"),
      (lambda: jsl.eigh_tridiagonal(a[0], a[0, :1].astype(np.int32)), TypeError,
       "same dtype"),
      (lambda: jsl.eigh_tridiagonal(a[0], a[0, :1], select="i"), ValueError,
       "select_range must be specified"),
      (lambda: jsl.expm_frechet(a, np.eye(3)), ValueError, "same shape"),
      (lambda: jsl.hadamard(6), ValueError, "power of 2"),
      (lambda: jsl.dft(3, "half"), ValueError, "scale must be None"),
      (lambda: jsl.companion(a[0, :1]), ValueError, "at least 2"),
      (lambda: jsl.fiedler_companion(a[0, :0]), ValueError, "nonzero length"),
      (lambda: jsl.leslie(a[0], a[0]), ValueError, "one less than the length of f"),
      (lambda: jsl.leslie(a[0, :1], a[0, :0]), ValueError, "length of s must be at least 1"),
      (lambda: jsl.convolution_matrix(a[0], 0), ValueError, "positive integer"),
      (lambda: jsl.convolution_matrix(a[0], 2, "circular"), ValueError, "mode must be one of"),
      (lambda: jsl.block_diag(np.ones((1, 1, 1))), ValueError, "at most 2 dimensions"),
      (lambda: jsl.pascal(3, "diagonal"), ValueError, "Expected kind"),
  ]:
    with pytest.raises(error, match=match):
      call()
