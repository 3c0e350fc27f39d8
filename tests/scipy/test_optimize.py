"""`jax.scipy.optimize.minimize`: BFGS and the experimental L-BFGS against
scipy.optimize.minimize on smooth test functions, under jit, the
OptimizeResults fields, JAX's line-search failure on Rosenbrock, and errors."""

import numpy as np
import pytest
import scipy.optimize as osp_optimize
from hypothesis import given, settings, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl.scipy.optimize import OptimizeResults, minimize

_LBFGS = "l-bfgs-experimental-do-not-rely-on-this"


def _himmelblau(np):
  return lambda p: (p[0] ** 2 + p[1] - 11.) ** 2 + (p[0] + p[1] ** 2 - 7.) ** 2


def _matyas(np):
  return lambda p: 0.26 * (p[0] ** 2 + p[1] ** 2) - 0.48 * p[0] * p[1]


def _zakharov(np):
  def f(x):
    s = 0.5 * np.sum(np.arange(1, x.shape[0] + 1) * x)
    return np.sum(x ** 2) + s ** 2 + s ** 4
  return f


def _rosenbrock(np):
  return lambda x: np.sum(100. * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


@pytest.mark.parametrize("method", ["BFGS", _LBFGS])
@pytest.mark.parametrize("func, x0", [(_himmelblau, [1., 1.]), (_matyas, [1., 1.]),
                                      (_zakharov, [0.5, 0.5, 0.5])])
def test_minimize_matches_scipy_bfgs_in_float64(func, x0, method):
  with jax.enable_x64():
    result = minimize(func(jnp), jnp.asarray(x0), method=method)
    assert result.x.dtype == np.float64
  expected = osp_optimize.minimize(func(np), np.asarray(x0), method="BFGS")
  assert bool(result.success) and int(result.status) == 0
  np.testing.assert_allclose(result.x, expected.x, rtol=2e-5, atol=2e-6)
  np.testing.assert_allclose(result.fun, expected.fun, atol=1e-8)
  assert np.abs(np.asarray(result.jac)).max() < 1e-5


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2 ** 16), n=st.integers(2, 4))
def test_bfgs_minimizes_a_positive_definite_quadratic(seed, n):
  # Eigenvalues in [0.2, 1]: the first unit step then meets the Wolfe conditions,
  # so no search goes through JAX's zoom, which fails on some brackets (see
  # test_bfgs_reproduces_jaxs_zoom_failure_on_rosenbrock).
  rng = np.random.RandomState(seed)
  q, _ = np.linalg.qr(rng.randn(n, n))
  spd, b = q @ np.diag(rng.uniform(0.2, 1.0, n)) @ q.T, rng.randn(n)
  with jax.enable_x64():
    fun = lambda x, spd, b: 0.5 * x @ spd @ x - b @ x
    result = minimize(fun, jnp.zeros(n), (jnp.asarray(spd), jnp.asarray(b)), method="BFGS")
  assert bool(result.success)
  # (it stops once max|grad| < gtol = 1e-5: x - x* = spd^-1 grad, whose largest element is
  # at most its 2-norm, at most |grad|_2 / 0.2 <= sqrt(n) gtol / 0.2)
  np.testing.assert_allclose(result.x, np.linalg.solve(spd, b), rtol=0, atol=5e-5 * np.sqrt(n))
  # BFGS's inverse-Hessian estimate stays symmetric positive definite
  h = np.asarray(result.hess_inv)
  np.testing.assert_allclose(h, h.T, atol=1e-12)
  assert np.linalg.eigvalsh(h).min() > 0


def test_minimize_runs_under_jit_in_float32():
  fun = _himmelblau(jnp)
  result = jax.jit(lambda x0: minimize(fun, x0, method="BFGS"))(jnp.ones(2, jnp.float32))
  assert isinstance(result, OptimizeResults)
  assert result.x.dtype == np.float32
  np.testing.assert_allclose(result.x, [3.0, 2.0], rtol=1e-4)
  assert int(result.nit) > 0 and int(result.nfev) >= int(result.nit)
  assert int(result.njev) == int(result.nfev)


def test_lbfgs_has_no_inverse_hessian_and_minimizes_himmelblau_from_the_origin():
  with jax.enable_x64():
    result = minimize(_himmelblau(jnp), jnp.zeros(2), method=_LBFGS)
  assert result.hess_inv is None
  assert bool(result.success)
  np.testing.assert_allclose(result.x, [3.0, 2.0], rtol=1e-6)


def test_bfgs_reproduces_jaxs_zoom_failure_on_rosenbrock():
  # JAX 0.10's zoom compares the signed bracket width with its threshold, so the
  # search fails (status 3) where SciPy converges: at (0, 0) after one step
  # with f = 0.77657, at (-1.2, 1) after eight with f = 1.74729.
  with jax.enable_x64():
    for x0, nit, fun in [([0., 0.], 1, 0.77657), ([-1.2, 1.], 8, 1.74729)]:
      result = minimize(_rosenbrock(jnp), jnp.asarray(x0), method="BFGS")
      assert not bool(result.success) and int(result.status) == 3
      assert int(result.nit) == nit
      np.testing.assert_allclose(result.fun, fun, rtol=1e-5)


def test_maxiter_stops_with_status_1():
  with jax.enable_x64():
    result = minimize(_zakharov(jnp), jnp.full(3, 0.5), method="BFGS", options={"maxiter": 2})
  assert int(result.status) == 1 and int(result.nit) == 2 and not bool(result.success)


def test_arguments_are_checked():
  with pytest.raises(TypeError, match="must be a tuple"):
    minimize(lambda x, a: jnp.sum(x ** 2), jnp.ones(2), [1.0], method="BFGS")
  with pytest.raises(ValueError, match="Method Nelder-Mead not recognized"):
    minimize(lambda x: jnp.sum(x ** 2), jnp.ones(2), method="Nelder-Mead")
  assert int(minimize(lambda x: jnp.sum(x ** 2), jnp.ones(2), method="bfgs").status) == 0
