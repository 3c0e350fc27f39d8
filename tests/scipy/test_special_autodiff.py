"""Derivatives of the jax.scipy.special functions with JAX's custom JVP
rules (logit, xlogy, xlog1py, entr and rel_entr through x log x, log_ndtr)
and of logsumexp (stopped shift, masked elements zeroed), at the edges and
on random smooth inputs, and the `custom_jvp_call` they stage."""

import math

import numpy as np
from hypothesis import given, settings, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl.scipy import special
from conformance import strategies as S
from conformance.autodiff import check_grads


def _f64_arrays(low, high, n=1):
  return S.shapes(max_dims=2, max_side=3).flatmap(lambda shape: st.tuples(
      *[S.arrays(np.float64, st.just(shape), elements=st.floats(low, high))] * n))


def test_xlogy_and_xlog1py_derivatives_at_the_edges():
  # d/dx x log y = log y: -inf at y = 0; d/dy = x / y: NaN at (0, 0), as in JAX
  gx, gy = jax.grad(special.xlogy, (0, 1))(0., 0.)
  assert float(gx) == -np.inf and np.isnan(gy)
  gx, gy = jax.grad(special.xlogy, (0, 1))(0., 2.)
  np.testing.assert_allclose([gx, gy], [math.log(2), 0.0], rtol=1e-6)
  gx, gy = jax.grad(special.xlog1py, (0, 1))(3., 1.)
  np.testing.assert_allclose([gx, gy], [math.log(2), 1.5], rtol=1e-6)
  assert float(jax.grad(special.xlog1py)(0., -1.)) == -np.inf


def test_entropy_derivatives():
  assert float(jax.grad(special.entr)(0.)) == np.inf        # -(log 0 + 1)
  np.testing.assert_allclose(jax.grad(special.entr)(2.), -(math.log(2) + 1), rtol=1e-6)
  gp, gq = jax.grad(special.rel_entr, (0, 1))(2., 0.5)
  np.testing.assert_allclose([gp, gq], [math.log(4) + 1, -4.0], rtol=1e-6)


def test_logit_and_log_ndtr_derivatives():
  np.testing.assert_allclose(jax.grad(special.logit)(0.25), 1 / (0.25 * 0.75), rtol=1e-6)
  with jax.enable_x64():
    for x in (-30.0, -5.0, 0.0, 3.0, 10.0):   # every branch; phi(x) / ndtr(x)
      ndtr = 0.5 * math.erfc(-x / math.sqrt(2))
      phi = math.exp(-x * x / 2) / math.sqrt(2 * math.pi)
      np.testing.assert_allclose(jax.grad(special.log_ndtr)(np.float64(x)), phi / ndtr,
                                 rtol=1e-8)
  assert np.isfinite(jax.grad(special.log_ndtr)(np.float32(-30.)))


def test_logsumexp_gradients():
  g = jax.grad(special.logsumexp)(jnp.array([-np.inf, 0., 0.]))
  np.testing.assert_array_equal(g, [0., 0.5, 0.5])
  # a masked-out +inf gives a zero gradient, not NaN
  where = jnp.array([True, False])
  g = jax.grad(lambda a: special.logsumexp(a, where=where))(jnp.array([1., np.inf]))
  np.testing.assert_array_equal(g, [1., 0.])
  g = jax.grad(lambda a, b: special.logsumexp(a, b=b), (0, 1))(jnp.array([0., 0.]),
                                                               jnp.array([1., 3.]))
  np.testing.assert_allclose(g, [[0.25, 0.75], [0.25, 0.25]], rtol=1e-6)
  assert "stop_gradient" in str(jax.make_jaxpr(special.logsumexp)(jnp.ones(3)))


def test_custom_rules_are_staged():
  x = jnp.array([0.5, 0.25])
  for fn in (special.logit, special.entr, special.log_ndtr, lambda x: special.xlogy(x, x),
             lambda x: special.xlog1py(x, x)):
    assert "custom_jvp_call" in str(jax.make_jaxpr(fn)(x))


@settings(max_examples=15)   # six functions, two of them to second order, per example
@given(_f64_arrays(0.2, 0.8, 2))
def test_derivatives_match_finite_differences(args):
  x, y = args
  check_grads(special.logit, [x], order=2, rtol=1e-4)
  check_grads(special.xlogy, [x, y], order=2, rtol=1e-4)
  check_grads(special.xlog1py, [x, y])
  check_grads(special.entr, [x])
  check_grads(special.rel_entr, [x, y])
  check_grads(special.log_ndtr, [(x - 0.5) * 40])
