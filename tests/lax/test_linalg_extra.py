"""Tests of lax.linalg's reductions (hessenberg, tridiagonal, schur), ormqr,
cholesky_update, symmetric_product, qdwh and the Eig/EighImplementation
enums: against LAPACK's routines through SciPy, and against their defining
properties (reconstruction, unitarity, structure)."""

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings, strategies as st
from scipy.linalg import lapack

import refimpl as jax
import refimpl.numpy as jnp
from refimpl.config import enable_x64
from refimpl.lax import linalg
from conformance import strategies as S

SETTINGS = settings(max_examples=15, deadline=None)


def mH(x):
  return np.conj(np.swapaxes(x, -1, -2))


def close(actual, expected, tol):
  np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=tol, atol=tol)


@st.composite
def square(draw, dtypes=(np.float64, np.complex128), max_side=5, batch=()):
  """A square matrix with entries in [-1, 1] (any conditioning)."""
  dtype = draw(st.sampled_from(dtypes))
  n = draw(st.integers(1, max_side))
  return draw(S.bounded_arrays(dtype, batch + (n, n)))


@st.composite
def generic_square(draw, max_side=5):
  """A random normal square matrix (float64 or complex128), from a drawn seed:
  no exact cancellation in its reductions, so LAPACK's reflectors and ours
  agree (a column that is zero in one and rounding residue in the other
  would not)."""
  rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
  n = draw(st.integers(1, max_side))
  a = rng.standard_normal((n, n))
  return a + 1j * rng.standard_normal((n, n)) if draw(st.booleans()) else a


# --- hessenberg ------------------------------------------------------------------------

@SETTINGS
@given(generic_square())
def test_hessenberg_is_lapacks_gehrd(a):
  gehrd = lapack.zgehrd if a.dtype.kind == "c" else lapack.dgehrd
  want, want_taus, info = gehrd(a)
  assert info == 0
  with enable_x64(True):
    out, taus = linalg.hessenberg(a)
  n = a.shape[0]
  close(out, want, 1e-10)
  close(taus, want_taus[:n - 1], 1e-10)


@SETTINGS
@given(square(dtypes=(np.float32, np.complex64), batch=(2,)))
def test_hessenberg_reconstructs_its_batch_members(a):
  """`Q H Q^H = a`, `Q` the product of the reflectors (`[1, 0; 0, Q']`)."""
  out, taus = linalg.hessenberg(a)
  n = a.shape[-1]
  assert out.dtype == a.dtype and taus.shape == (2, n - 1)
  q = np.zeros_like(a)
  q[:, 0, 0] = 1
  q[:, 1:, 1:] = linalg.householder_product(out[:, 1:, :-1], taus)
  close(q @ np.triu(out, -1) @ mH(q), a, 1e-5)


def test_hessenberg_matches_jaxs_example_and_rejects_rectangles():
  a = np.array([[1., 2., 3., 4.], [1., 4., 2., 3.], [3., 2., 1., 4.], [2., 3., 2., 2.]])
  out, _ = linalg.hessenberg(a.astype(np.float32))
  close(np.triu(out, -1), [[1., -5.078, 1.167, 1.361], [-3.742, 5.786, -3.613, -1.825],
                           [0., -2.992, 2.493, -0.577], [0., 0., -0.043, -1.279]], 1e-3)
  with pytest.raises(ValueError, match="Hessenberg reduction must have shape"):
    linalg.hessenberg(np.ones((2, 3), np.float32))
  with pytest.raises(TypeError, match="does not accept dtype int32"):
    linalg.hessenberg(np.ones((2, 2), np.int32))


# --- tridiagonal -----------------------------------------------------------------------

@SETTINGS
@given(generic_square(), st.booleans())
def test_tridiagonal_is_lapacks_sytrd_hetrd(a, lower):
  sytrd = lapack.zhetrd if a.dtype.kind == "c" else lapack.dsytrd
  want, want_d, want_e, want_taus, info = sytrd(a, lower=lower)
  assert info == 0
  with enable_x64(True):
    out, d, e, taus = linalg.tridiagonal(a, lower=lower)
  assert d.dtype == e.dtype == np.float64
  close(d, want_d, 1e-10)
  close(e, want_e, 1e-10)
  close(taus, want_taus, 1e-10)
  triangle = np.tri(a.shape[0], dtype=bool)
  close(np.where(triangle if lower else triangle.T, out, 0),
        np.where(triangle if lower else triangle.T, want, 0), 1e-10)
  untouched = np.triu(a, 1) if lower else np.tril(a, -1)   # the triangle not read
  close(np.triu(out, 1) if lower else np.tril(out, -1), untouched, 0)


def test_tridiagonal_rejects_empty_and_rectangular_matrices():
  for shape in [(0, 0), (2, 3)]:
    with pytest.raises(ValueError, match="The input to tridiagonal must be a square matrix"):
      linalg.tridiagonal(np.ones(shape, np.float32))


# --- ormqr -------------------------------------------------------------------------------

@SETTINGS
@given(st.data(), st.booleans(), st.booleans())
def test_ormqr_multiplies_by_the_qr_factor(data, left, transpose):
  dtype = data.draw(st.sampled_from([np.float64, np.complex128]))
  m = data.draw(st.integers(1, 4))
  n = data.draw(st.integers(1, 4))
  a = data.draw(S.bounded_arrays(dtype, (2, m, n)))
  c = data.draw(S.bounded_arrays(dtype, (2, m, 3) if left else (2, 3, m)))
  with enable_x64(True):
    reflectors, taus = linalg.geqrf(a)
    out = linalg.ormqr(reflectors, taus, c, left=left, transpose=transpose)
  # LAPACK's ormqr applied to the same reflectors: a rank-deficient draw leaves the complete Q
  # of a QR factorisation undetermined, but not the product its reflectors define.
  reflectors, taus = np.asarray(reflectors), np.asarray(taus)
  complex_ = dtype == np.complex128
  unmqr = lapack.zunmqr if complex_ else lapack.dormqr
  trans = ("C" if complex_ else "T") if transpose else "N"
  k = min(m, n)
  expected = [unmqr("L" if left else "R", trans, r[:, :k], t[:k], ci, lwork=max(1, 64 * m))[0]
              for r, t, ci in zip(reflectors, taus, c)]
  close(out, np.stack(expected), 1e-10)


def test_ormqr_checks_shapes():
  a, taus = linalg.geqrf(np.ones((3, 2), np.float32))
  with pytest.raises(ValueError, match="left=True expects c to have the same number of rows"):
    linalg.ormqr(a, taus, np.ones((2, 2), np.float32))
  with pytest.raises(ValueError, match="left=False expects c to have the same number of colu"):
    linalg.ormqr(a, taus, np.ones((2, 2), np.float32), left=False)


# --- schur -------------------------------------------------------------------------------

def _check_schur(a, t, z, tol):
  n = a.shape[-1]
  close(z @ t @ mH(z), a, tol)
  close(mH(z) @ z, np.eye(n), tol)
  if a.dtype.kind == "c":
    close(np.tril(t, -1), np.zeros((n, n)), 0)
    return
  close(np.tril(t, -2), np.zeros((n, n)), 0)
  sub = np.diagonal(t, -1)
  for i in np.flatnonzero(sub):   # standard 2 x 2 blocks: a complex pair each
    assert t[i, i] == t[i + 1, i + 1] and t[i, i + 1] * t[i + 1, i] < 0
    assert i == 0 or sub[i - 1] == 0


@SETTINGS
@given(square(max_side=6))
def test_schur_reconstructs_and_has_the_eigenvalues(a):
  """Z T Z^H = a, and each eigenvalue w of T (its diagonal and 2 x 2 blocks)
  is one of a to backward accuracy: the smallest singular value of a - w I
  within 1e-10 ‖a‖ (not compared with np.linalg.eigvals: a defective
  eigenvalue moves by the square root of a rounding error, or more)."""
  with enable_x64(True):
    t, z = linalg.schur(a)
  _check_schur(a, np.asarray(t), np.asarray(z), 1e-10)
  n, scale = a.shape[-1], max(1.0, float(np.linalg.norm(a)))
  for w in np.linalg.eigvals(np.asarray(t)):
    assert np.linalg.svd(a - w * np.eye(n), compute_uv=False)[-1] <= 1e-10 * scale, w


@pytest.mark.parametrize("a", [np.eye(4), np.zeros((3, 3)), np.roll(np.eye(5), 1, 0),
                               np.array([[0., 1.], [-1., 0.]]), np.array([[1., 2.], [0., 1.]]),
                               np.array([[0., 3., 3.], [0., 1., 2.], [2., 0., 1.]])])
def test_schur_of_special_matrices(a):
  """Identity, zero, a cyclic permutation (unit-modulus eigenvalues, hard for
  unshifted QR), a rotation, a Jordan block."""
  for x in (a, a.astype(np.complex128)):
    with enable_x64(True):
      t, z = linalg.schur(x)
    _check_schur(x, np.asarray(t), np.asarray(z), 1e-12)


@settings(max_examples=40, deadline=None)
@given(st.integers(3, 10), st.sampled_from(["reflection", "reflection in float32", "cluster"]),
       st.integers(0, 2 ** 32 - 1))
def test_schur_converges_where_eigenvalues_are_repeated_or_clustered(n, kind, seed):
  """A reflection I - 2 u u^T (eigenvalues -1 and 1, n - 1 times; its
  square the identity, which both of a real double shift at ±1 make a
  step of nothing), one rounded to float32 (its eigenvalue 1 split by
  rounding errors) and Q diag(1 + 1e-8 r) Q^T (a cluster): the QR steps
  converge (real and complex) as LAPACK's dlahqr does on them."""
  rng = np.random.default_rng(seed)
  u = rng.standard_normal(n)
  a = np.eye(n) - 2 * np.outer(u, u) / (u @ u)
  if kind == "reflection in float32":
    a = a.astype(np.float32).astype(np.float64)
  elif kind == "cluster":
    q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    a = (q * (1 + 1e-8 * rng.standard_normal(n))) @ q.T
  for x in (a, a.astype(np.complex128)):
    with enable_x64(True):
      t, z = linalg.schur(x)
    _check_schur(x, np.asarray(t), np.asarray(z), 1e-12)


def test_schur_options_and_failures():
  a = np.array([[1., 2.], [3., 4.]], np.float32)
  t, = linalg.schur(a, compute_schur_vectors=False)
  close(np.sort(np.diagonal(t)), np.sort(np.linalg.eigvals(a).real), 1e-5)
  with pytest.raises(NotImplementedError, match="sort feature of LAPACK's gees"):
    linalg.schur(a, sort_eig_vals=True)
  t, z = linalg.schur(np.array([[np.nan, 0.], [0., 1.]], np.float32))
  assert np.isnan(t).all() and np.isnan(z).all()
  t, z = jax.vmap(linalg.schur)(np.stack([a, 2 * a]))
  _check_schur(2 * a.astype(np.float64), np.asarray(t[1], np.float64),
               np.asarray(z[1], np.float64), 1e-5)


# --- cholesky_update and symmetric_product ----------------------------------------------------

@st.composite
def factor_and_vector(draw):
  a = draw(S.well_conditioned_matrices(np.float64, (), kind="positive_definite"))
  return np.linalg.cholesky(a).T, draw(S.bounded_arrays(np.float64, (a.shape[0],)))


@SETTINGS
@given(factor_and_vector())
def test_cholesky_update_is_the_factor_of_the_updated_matrix(rw):
  r, w = rw
  with enable_x64(True):
    out = np.asarray(linalg.cholesky_update(r, w))
  want = np.linalg.cholesky(r.T @ r + np.outer(w, w)).T
  close(np.triu(out), want, 1e-10)
  close(np.tril(out, -1), np.zeros_like(out), 1e-12)   # rounding residue only


def test_cholesky_update_takes_one_real_matrix_and_vmaps():
  r, w = np.eye(2, dtype=np.float32) * 2, np.array([1., 0.], np.float32)
  close(linalg.cholesky_update(r, w), [[np.sqrt(5), 0], [0, 2]], 1e-6)
  with pytest.raises(TypeError, match="Input 0 to cholesky_update must have a rank of exactly 2"):
    linalg.cholesky_update(r[None], w[None])
  with pytest.raises(TypeError, match="does not accept dtype complex64"):
    linalg.cholesky_update(r.astype(np.complex64), w.astype(np.complex64))
  with pytest.raises(ValueError, match="Rank-1 update to Cholesky decomposition"):
    linalg.cholesky_update(r, np.ones(3, np.float32))
  batched = jax.vmap(linalg.cholesky_update)(np.stack([r, 2 * r]), np.stack([w, w]))
  close(batched[1], [[np.sqrt(17), 0], [0, 4]], 1e-6)


@SETTINGS
@given(st.data())
def test_symmetric_product(data):
  m, n = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
  a = data.draw(S.bounded_arrays(np.float32, (2, m, n)))
  c = data.draw(S.bounded_arrays(np.float32, (2, m, m)))
  c = c + np.swapaxes(c, -1, -2)
  alpha, beta = data.draw(st.sampled_from([1., -2.])), data.draw(st.sampled_from([0., .5]))
  want = alpha * a.astype(np.float64) @ np.swapaxes(a, -1, -2) + beta * c
  close(linalg.symmetric_product(a, c, alpha=alpha, beta=beta), want, 1e-5)
  lower = np.tril(np.asarray(linalg.symmetric_product(a, 2 * c, symmetrize_output=True)))
  close(linalg.symmetric_product(a, 2 * c, symmetrize_output=True),
        lower + np.swapaxes(np.tril(lower, -1), -1, -2), 0)


def test_symmetric_product_checks_its_operands():
  with pytest.raises(TypeError, match="does not accept dtype complex64"):
    linalg.symmetric_product(np.ones((2, 2), np.complex64), np.ones((2, 2), np.complex64))
  with pytest.raises(ValueError, match="symmetric_update expects a rectangular matrix"):
    linalg.symmetric_product(np.ones((3, 2), np.float32), np.ones((2, 2), np.float32))


@pytest.mark.parametrize("fn, args", [
    (lambda a: linalg.hessenberg(a)[0], (np.eye(2, dtype=np.float32),)),
    (lambda a: linalg.tridiagonal(a)[0], (np.eye(2, dtype=np.float32),)),
    (lambda a: linalg.schur(a)[0], (np.eye(2, dtype=np.float32),)),
    (lambda a: linalg.cholesky_update(a, a[0]), (np.eye(2, dtype=np.float32),)),
    (lambda a: linalg.symmetric_product(a, a), (np.eye(2, dtype=np.float32),)),
    (lambda a: linalg.ormqr(*linalg.geqrf(np.eye(2, dtype=np.float32)), a),
     (np.eye(2, dtype=np.float32),)),
])
def test_the_new_primitives_have_no_derivatives_as_in_jax(fn, args):
  with pytest.raises(NotImplementedError, match="Differentiation rule for '.*' not implemented"):
    jax.jvp(fn, args, args)


# --- qdwh and the implementation enums --------------------------------------------------------

@SETTINGS
@given(st.data())
def test_qdwh_is_the_polar_decomposition(data):
  dtype = data.draw(st.sampled_from([np.float64, np.complex128]))
  n = data.draw(st.integers(1, 4))
  m = data.draw(st.integers(n, 5))
  x = data.draw(S.well_conditioned_matrices(dtype, (), (m, n), "full_rank"))
  with enable_x64(True):
    u, h, iterations, converged = linalg.qdwh(x)
  want_u, want_h = scipy.linalg.polar(x)
  close(u, want_u, 1e-8)
  close(h, want_h, 1e-8)
  assert bool(converged) and 0 < int(iterations) <= 10


def test_qdwh_options():
  x = np.array([[3., 1.], [1., 2.], [0., 1.]], np.float32)
  u, h, _, converged = jax.jit(linalg.qdwh)(x)
  close(u @ h, x, 1e-5)
  assert converged.dtype == np.bool_
  padded = np.pad(x, ((0, 2), (0, 1)))
  u_pad, h_pad, _, _ = linalg.qdwh(padded, dynamic_shape=(3, 2))
  close(u_pad[:3, :2], u, 1e-6)
  assert np.all(np.asarray(u_pad)[3:] == 0) and np.all(np.asarray(h_pad)[2:] == 0)
  with pytest.raises(ValueError, match="must have M >= N"):
    linalg.qdwh(x.T)


def test_implementation_enums_are_accepted_and_checked():
  assert [e.value for e in linalg.EigImplementation] == ["cusolver", "magma", "lapack"]
  assert [e.value for e in linalg.EighImplementation] == ["qr", "jacobi", "qdwh"]
  a = np.array([[2., 1.], [1., 2.]], np.float32)
  v, w = linalg.eigh(a, implementation=linalg.EighImplementation.JACOBI)
  close(w, [1, 3], 1e-6)
  w, = linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False,
                  implementation=linalg.EigImplementation.LAPACK)
  close(np.sort(w.real), [1, 3], 1e-6)
  with pytest.raises(ValueError):
    linalg.eigh(a, implementation="magic")
