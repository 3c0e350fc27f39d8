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


# --- JAX's custom rules of poch, zeta, expn/exp1, expi, hyp1f1, wofz, erfcx,
# dawsn, owens_t and fresnel -------------------------------------------------------

def _central_difference(fn, args, i, eps=1e-6):
  up, down = list(args), list(args)
  up[i], down[i] = args[i] + eps, args[i] - eps
  return (fn(*up) - fn(*down)) / (2 * eps)


def test_custom_rule_derivatives_match_closed_forms():
  with jax.enable_x64():
    g = jax.grad(special.poch, (0, 1))(2.5, 1.5)   # (z)_m (psi(z+m) - psi(z)), (z)_m psi(z+m)
    poch = special.poch(2.5, 1.5)
    np.testing.assert_allclose(g, [poch * (special.digamma(4.0) - special.digamma(2.5)),
                                   poch * special.digamma(4.0)], rtol=1e-12)
    np.testing.assert_allclose(jax.grad(special.zeta, 1)(3.0, 1.5), -3 * special.zeta(4.0, 1.5),
                               rtol=1e-12)
    np.testing.assert_allclose(jax.grad(special.expi)(2.0), math.exp(2) / 2, rtol=1e-12)
    np.testing.assert_allclose(jax.grad(special.exp1)(2.0), -math.exp(-2) / 2, rtol=1e-12)
    np.testing.assert_allclose(jax.grad(special.expn, 1)(3, 2.0), -special.expn(2, 2.0),
                               rtol=1e-12)
    np.testing.assert_allclose(jax.grad(special.hyp1f1, 2)(0.7, 1.8, 1.3),
                               0.7 / 1.8 * special.hyp1f1(1.7, 2.8, 1.3), rtol=1e-12)
    x = 1.3
    np.testing.assert_allclose(jax.grad(special.erfcx)(x),
                               2 * x * special.erfcx(x) - 2 / math.sqrt(math.pi), rtol=1e-12)
    np.testing.assert_allclose(jax.grad(special.dawsn)(x), 1 - 2 * x * special.dawsn(x),
                               rtol=1e-12)
    ds, dc = jax.jacfwd(special.fresnel)(x)
    np.testing.assert_allclose([ds, dc], [math.sin(math.pi * x * x / 2),
                                          math.cos(math.pi * x * x / 2)], rtol=1e-12)
    z = 0.4 + 0.3j
    _, dw = jax.jvp(special.wofz, (z,), (1 + 0j,))
    np.testing.assert_allclose(dw, -2 * z * special.wofz(z) + 2j / math.sqrt(math.pi),
                               rtol=1e-12)
    _, de = jax.jvp(special.erfcx, (z,), (1 + 0j,))   # erfcx(z) = w(iz)
    np.testing.assert_allclose(de, 1j * (-2j * z * special.erfcx(z) + 2j / math.sqrt(math.pi)),
                               rtol=1e-12)
    h, a = 0.7, 1.8
    dh, da = jax.grad(special.owens_t, (0, 1))(h, a)
    dh_expected = (-math.exp(-h * h / 2) * math.erf(a * h / math.sqrt(2))
                   / (2 * math.sqrt(2 * math.pi)))
    da_expected = math.exp(-(1 + a * a) * h * h / 2) / (2 * math.pi * (1 + a * a))
    np.testing.assert_allclose([dh, da], [dh_expected, da_expected], rtol=1e-12)


def test_custom_rule_derivatives_match_finite_differences():
  # the series-based rules (zeta in x, hyp1f1 in a and b) against central differences
  with jax.enable_x64():
    for fn, args in ((special.zeta, (3.0, 1.5)), (special.zeta, (2.5, 0.75)),
                     (special.hyp1f1, (0.7, 1.8, 1.3)), (special.hyp1f1, (0.7, 1.8, -3.3)),
                     (special.owens_t, (0.7, 0.4)), (special.poch, (-1.5, 0.7))):
      args = tuple(np.float64(v) for v in args)
      grads = jax.grad(fn, tuple(range(len(args))))(*args)
      for i, g in enumerate(grads):
        np.testing.assert_allclose(g, _central_difference(fn, args, i), rtol=1e-7, atol=1e-9)


def test_custom_rule_derivatives_at_the_edges():
  assert float(jax.grad(special.erfcx)(0.)) == np.float32(-2 / math.sqrt(math.pi))
  assert float(jax.grad(special.dawsn)(0.)) == 1.0
  assert float(jax.grad(special.expi)(0.)) == np.inf        # exp(0) / 0
  assert float(jax.grad(special.exp1)(0.)) == -np.inf       # -E_0(0)
  ds, dc = jax.jacfwd(special.fresnel)(0.)
  assert (float(ds), float(dc)) == (0.0, 1.0)
  dh, da = jax.grad(special.owens_t, (0, 1))(0., 2.)       # T(0, a) = atan(a) / 2pi
  assert float(dh) == 0.0
  np.testing.assert_allclose(da, 1 / (10 * math.pi), rtol=1e-6)
  dz, dm = jax.grad(special.poch, (0, 1))(2.5, 0.)          # (z)_0 = 1
  assert float(dz) == 0.0
  np.testing.assert_allclose(dm, special.digamma(2.5), rtol=1e-6)
  _, dw = jax.jvp(special.wofz, (0j,), (1 + 0j,))
  np.testing.assert_allclose(dw, 2j / math.sqrt(math.pi), rtol=1e-6)
  # the expn rule does not differentiate n
  assert jax.grad(special.expn, 1)(1, 1.).dtype == np.float32


def test_new_custom_rules_are_staged():
  scalars = {special.poch: 2, special.zeta: 2, special.expn: 2, special.hyp1f1: 3,
             special.owens_t: 2, special.expi: 1, special.exp1: 1, special.wofz: 1,
             special.erfcx: 1, special.dawsn: 1, special.fresnel: 1}
  for fn, n in scalars.items():
    assert "custom_jvp_call" in str(jax.make_jaxpr(fn)(*[1.5] * n)), fn
  assert "custom_jvp_call" in str(jax.make_jaxpr(special.erfcx)(1.5 + 0.5j))


def test_jit_and_vmap_of_custom_rule_gradients():
  x = jnp.array([0.5, 1.5, -2.0])
  np.testing.assert_allclose(jax.vmap(jax.grad(special.dawsn))(x),
                             1 - 2 * x * special.dawsn(x), rtol=1e-5)
  np.testing.assert_allclose(jax.jit(jax.vmap(jax.grad(special.erfcx)))(x),
                             2 * x * special.erfcx(x) - 2 / math.sqrt(math.pi), rtol=1e-5)
  q = jnp.array([1.0, 2.0])
  np.testing.assert_allclose(jax.jit(jax.vmap(jax.grad(special.zeta, 1)))(jnp.array([2., 3.]), q),
                             [-2 * special.zeta(3., 1.), -3 * special.zeta(4., 2.)], rtol=1e-5)


@settings(max_examples=10)
@given(_f64_arrays(0.2, 1.5, 2))
def test_custom_rule_functions_check_grads(args):
  x, y = args
  check_grads(special.erfcx, [x], order=2, rtol=1e-4)
  check_grads(special.dawsn, [x], order=2, rtol=1e-4)
  check_grads(special.expi, [x], rtol=1e-4)
  check_grads(lambda x: special.fresnel(x)[0], [x], rtol=1e-4)
  check_grads(special.owens_t, [x, y], rtol=1e-4)
  check_grads(special.poch, [x + 1, y], rtol=1e-4)
