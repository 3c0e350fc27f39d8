"""`jax.scipy.sparse.linalg`: cg, bicgstab and gmres against NumPy's solution
and scipy.sparse.linalg's iterates, with operators as matrices, functions
and pytrees, preconditioners, jit and vmap, implicit derivatives against
finite differences, and errors."""

import functools

import numpy as np
import pytest
import scipy.sparse.linalg as osp_sparse
from hypothesis import given, settings, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl.scipy.sparse.linalg import bicgstab, cg, gmres

_GMRES_INCREMENTAL = functools.partial(gmres, solve_method="incremental")
_SOLVERS = [cg, bicgstab, gmres, _GMRES_INCREMENTAL]


def _spd(seed, n):
  rng = np.random.RandomState(seed)
  a = rng.randn(n, n)
  return a @ a.T + n * np.eye(n), rng.randn(n)


def _nonsymmetric(seed, n):
  rng = np.random.RandomState(seed)
  return rng.randn(n, n) + 2 * n ** 0.5 * np.eye(n), rng.randn(n)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2 ** 16), n=st.integers(1, 6), solver=st.sampled_from(_SOLVERS))
def test_solvers_solve_spd_systems_in_float64(seed, n, solver):
  a, b = _spd(seed, n)
  with jax.enable_x64():
    x, _ = solver(jnp.asarray(a), jnp.asarray(b), tol=1e-12)
  assert x.dtype == np.float64
  np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-8, atol=1e-9)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2 ** 16), n=st.integers(2, 6),
       solver=st.sampled_from([bicgstab, gmres, _GMRES_INCREMENTAL]))
def test_general_solvers_solve_nonsymmetric_systems(seed, n, solver):
  a, b = _nonsymmetric(seed, n)
  x, _ = solver(lambda v: jnp.asarray(a, jnp.float32) @ v, jnp.asarray(b, jnp.float32))
  assert x.dtype == np.float32
  np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("solver, osp_solver", [(cg, osp_sparse.cg),
                                                (bicgstab, osp_sparse.bicgstab)])
@pytest.mark.parametrize("maxiter", [1, 2, 3])
def test_iterates_match_scipy(solver, osp_solver, maxiter):
  a, b = _spd(7, 6)
  with jax.enable_x64():
    x, info = solver(jnp.asarray(a), jnp.asarray(b), maxiter=maxiter)
  expected, _ = osp_solver(a, b, maxiter=maxiter, rtol=1e-5, atol=0.0)
  assert info is None
  np.testing.assert_allclose(x, expected, rtol=1e-10, atol=1e-12)


def test_preconditioner_and_initial_guess():
  a, b = _spd(3, 5)
  m = np.diag(1 / np.diag(a))
  with jax.enable_x64():
    for solver in _SOLVERS:
      x, _ = solver(jnp.asarray(a), jnp.asarray(b), x0=jnp.ones(5), M=jnp.asarray(m), tol=1e-12)
      np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-8, atol=1e-9)
    exact = np.linalg.solve(a, b)
    x, _ = cg(jnp.asarray(a), jnp.asarray(b), x0=jnp.asarray(exact), maxiter=0)
    np.testing.assert_array_equal(x, exact)


def test_pytree_right_hand_sides():
  a, b = _spd(4, 4)
  a1, a2 = jnp.asarray(a[:2, :2]), jnp.asarray(a[2:, 2:])

  def matvec(tree):
    return {"u": a1 @ tree["u"], "v": a2 @ tree["v"]}

  with jax.enable_x64():
    for solver in _SOLVERS:
      x, _ = solver(matvec, {"u": jnp.asarray(b[:2]), "v": jnp.asarray(b[2:])}, tol=1e-12)
      np.testing.assert_allclose(x["u"], np.linalg.solve(a[:2, :2], b[:2]), rtol=1e-7)
      np.testing.assert_allclose(x["v"], np.linalg.solve(a[2:, 2:], b[2:]), rtol=1e-7)


def test_complex_hermitian_system():
  rng = np.random.RandomState(5)
  c = rng.randn(4, 4) + 1j * rng.randn(4, 4)
  a, b = c @ c.conj().T + 4 * np.eye(4), rng.randn(4) + 1j * rng.randn(4)
  with jax.enable_x64():
    for solver in _SOLVERS:
      x, _ = solver(jnp.asarray(a), jnp.asarray(b), tol=1e-12)
      assert x.dtype == np.complex128
      np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-8, atol=1e-9)


def test_jit_and_vmap():
  a, b = _spd(8, 4)
  bs = np.stack([b, 2 * b, -b])
  for solver in _SOLVERS:
    solve = lambda b: solver(jnp.asarray(a, jnp.float32), b)[0]
    np.testing.assert_allclose(jax.jit(solve)(jnp.asarray(b, jnp.float32)),
                               np.linalg.solve(a, b), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(jax.vmap(solve)(jnp.asarray(bs, jnp.float32)),
                               np.linalg.solve(a, bs.T).T, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("solver", _SOLVERS)
def test_derivatives_are_those_of_the_exact_solution(solver):
  a, b = _nonsymmetric(2, 4) if solver is not cg else _spd(2, 4)
  w = np.random.RandomState(1).randn(4)

  def loss(a, b):
    x, _ = solver(lambda v: a @ v, b, tol=1e-12)
    return jnp.dot(x, jnp.asarray(w)) + jnp.sum(x ** 2)

  def numpy_loss(a, b):
    x = np.linalg.solve(a, b)
    return x @ w + np.sum(x ** 2)

  with jax.enable_x64():
    ga, gb = jax.grad(loss, argnums=(0, 1))(jnp.asarray(a), jnp.asarray(b))
    _, tangent = jax.jvp(lambda b: loss(jnp.asarray(a), b), (jnp.asarray(b),),
                         (jnp.asarray(w),))
  eps = 1e-6
  fd_b = np.array([(numpy_loss(a, b + eps * e) - numpy_loss(a, b - eps * e)) / (2 * eps)
                   for e in np.eye(4)])
  np.testing.assert_allclose(gb, fd_b, rtol=1e-6, atol=1e-7)
  np.testing.assert_allclose(tangent, fd_b @ w, rtol=1e-6)
  if solver is not cg:  # (cg's matrix must stay symmetric)
    e00 = np.zeros((4, 4))
    e00[0, 1] = eps
    fd_a01 = (numpy_loss(a + e00, b) - numpy_loss(a - e00, b)) / (2 * eps)
    np.testing.assert_allclose(ga[0, 1], fd_a01, rtol=1e-6)


def test_gmres_reports_nan_solutions_and_checks_its_method():
  _, info = gmres(jnp.eye(2), jnp.asarray([1.0, 2.0]))
  assert int(info) == 0
  x, info = gmres(jnp.zeros((2, 2)), jnp.ones(2))   # a singular least-squares problem
  assert np.isnan(x).all() and int(info) == -1
  with pytest.raises(ValueError, match="invalid solve_method"):
    gmres(jnp.eye(2), jnp.ones(2), solve_method="qr")


def test_operator_and_guess_errors():
  with pytest.raises(ValueError, match="must be a square matrix"):
    cg(jnp.ones((2, 3)), jnp.ones(2))
  with pytest.raises(TypeError, match="either a function or ndarray"):
    cg("A", jnp.ones(2))
  with pytest.raises(ValueError, match="matching tree structure"):
    bicgstab(jnp.eye(2), jnp.ones(2), x0=[jnp.ones(2)])
  with pytest.raises(ValueError, match="matching shapes"):
    cg(jnp.eye(2), jnp.ones(2), x0=jnp.ones(3))
