"""Derivatives of refimpl/lax/special.py at known values and at the edges
(x = 0, the ends of erf_inv's domain, the arguments JAX does not
differentiate), and the primitives they stage, as JAX's rules do. The
derivative checks on random inputs are the AD_CASES of
conformance/families/special.py."""

import math

import numpy as np
import pytest

import refimpl as jax
from refimpl import lax
from refimpl.interpreters import ad
from refimpl.lax import special

F32 = np.float32
EULER_GAMMA = 0.5772156649015329


def _primitives(closed):
  return [eqn.primitive.name for eqn in closed.jaxpr.eqns]


def _f64_grad(fn, *args, argnums=0):
  with jax.enable_x64():
    return jax.grad(fn, argnums=argnums)(*[np.float64(a) for a in args])


def test_error_function_derivatives():
  two_over_sqrt_pi = 2 / math.sqrt(math.pi)
  np.testing.assert_allclose(jax.grad(lax.erf)(F32(0.)), two_over_sqrt_pi, rtol=1e-6)
  np.testing.assert_allclose(jax.grad(lax.erfc)(F32(0.)), -two_over_sqrt_pi, rtol=1e-6)
  np.testing.assert_allclose(_f64_grad(lax.erf, 1.5), two_over_sqrt_pi * math.exp(-2.25),
                             rtol=1e-14)
  np.testing.assert_allclose(_f64_grad(lax.erfc, -0.5), -two_over_sqrt_pi * math.exp(-0.25),
                             rtol=1e-14)
  # the second derivative of erf: -2x erf'(x)
  with jax.enable_x64():
    np.testing.assert_allclose(jax.grad(jax.grad(lax.erf))(np.float64(0.7)),
                               -1.4 * two_over_sqrt_pi * math.exp(-0.49), rtol=1e-13)


def test_erf_inv_derivative_is_the_reciprocal_of_erfs():
  np.testing.assert_allclose(jax.grad(lax.erf_inv)(F32(0.)), math.sqrt(math.pi) / 2, rtol=1e-6)
  with jax.enable_x64():
    y = lax.erf_inv(np.float64(0.6))
    np.testing.assert_allclose(jax.grad(lax.erf_inv)(np.float64(0.6)) * jax.grad(lax.erf)(y),
                               1.0, rtol=1e-13)
  # at the ends of the domain the slope is infinite (sqrt(pi)/2 exp(inf))
  assert jax.grad(lax.erf_inv)(F32(1.)) == np.inf
  assert jax.grad(lax.erf_inv)(F32(-1.)) == np.inf


def test_gamma_function_family_derivatives():
  np.testing.assert_allclose(_f64_grad(lax.lgamma, 1.0), -EULER_GAMMA, rtol=1e-14)
  np.testing.assert_allclose(_f64_grad(lax.digamma, 1.0), math.pi ** 2 / 6, rtol=1e-13)
  # polygamma(1, x) is digamma's derivative: its own is polygamma(2, x) = -2 zeta(3) at 1
  np.testing.assert_allclose(_f64_grad(lambda x: lax.polygamma(np.float64(1), x), 1.0),
                             -2 * 1.2020569031595942, rtol=1e-12)
  # digamma's pole: polygamma(1, 0) is +inf
  assert jax.grad(lax.digamma)(F32(0.)) == np.inf


def test_incomplete_gamma_derivatives():
  # d/dx P(a, x) is the Gamma(a) density; Q = 1 - P
  for a, x in [(1.0, 0.5), (2.5, 3.0)]:
    density = x ** (a - 1) * math.exp(-x) / math.gamma(a)
    np.testing.assert_allclose(_f64_grad(lax.igamma, a, x, argnums=1), density, rtol=1e-13)
    np.testing.assert_allclose(_f64_grad(lax.igammac, a, x, argnums=1), -density, rtol=1e-13)
    with jax.enable_x64():
      grad_a = np.asarray(lax.igamma_grad_a(np.float64(a), np.float64(x)))
    np.testing.assert_allclose(_f64_grad(lax.igamma, a, x), grad_a, rtol=1e-15)
    np.testing.assert_allclose(_f64_grad(lax.igammac, a, x), -grad_a, rtol=1e-15)


def test_bessel_derivatives_at_zero():
  # i0e(x) = e**-|x| I0(x) has slopes -1 and 1 on either side of 0; the rule
  # gives i1e(0) - sign(0) i0e(0) = 0 there. i1e's slope at 0 is 1/2.
  assert jax.grad(lax.bessel_i0e)(F32(0.)) == 0.
  assert jax.grad(lax.bessel_i1e)(F32(0.)) == 0.5
  np.testing.assert_allclose(jax.grad(lax.bessel_i1e)(F32(1e-9)), 0.5, rtol=1e-6)
  with jax.enable_x64():
    x = np.float64(1.5)
    np.testing.assert_allclose(jax.grad(lax.bessel_i0e)(x),
                               lax.bessel_i1e(x) - lax.bessel_i0e(x), rtol=1e-14)
    np.testing.assert_allclose(jax.grad(lax.bessel_i0e)(-x), -jax.grad(lax.bessel_i0e)(x),
                               rtol=1e-14)


def test_betainc_derivative_in_x_is_the_beta_density():
  # I_x(2, 3) has density x (1 - x)**2 / B(2, 3), B(2, 3) = 1/12
  fn = lambda x: lax.betainc(np.float64(2), np.float64(3), x)
  np.testing.assert_allclose(_f64_grad(fn, 0.3), 12 * 0.3 * 0.7 ** 2, rtol=1e-13)
  uniform = lambda x: lax.betainc(np.float64(1), np.float64(1), x)
  np.testing.assert_allclose(_f64_grad(uniform, 0.4), 1.0, rtol=1e-13)


def test_arguments_jax_does_not_differentiate():
  x = F32(1.5)
  with pytest.raises(ValueError, match="polygamma gradient with respect to m is not supported"):
    jax.grad(lambda m: lax.polygamma(m, x))(F32(1.))
  with pytest.raises(ValueError, match="Betainc gradient with respect to a and b not supported"):
    jax.grad(lambda a: lax.betainc(a, F32(2.), F32(0.5)))(F32(1.))
  with pytest.raises(ValueError, match="Betainc gradient with respect to a and b not supported"):
    jax.grad(lambda b: lax.betainc(F32(2.), b, F32(0.5)))(F32(1.))
  # ... but the other arguments still are
  assert np.isfinite(jax.grad(lambda x: lax.polygamma(F32(1.), x))(x))


@pytest.mark.parametrize("name", ["zeta", "igamma_grad_a", "random_gamma_grad"])
def test_primitives_without_a_jax_rule_raise_in_either_argument(name):
  # JAX registers no JVP rule for these: differentiating raises in both
  # modes, whichever argument carries the tangent.
  fn = getattr(lax, name)
  a, x = F32(2.), F32(1.5)
  message = f"Differentiation rule for '{name}' not implemented"
  assert getattr(special, f"{name}_p") in ad.unsupported_jvps
  with pytest.raises(NotImplementedError, match=message):
    jax.grad(lambda a: fn(a, x))(a)
  with pytest.raises(NotImplementedError, match=message):
    jax.grad(lambda x: fn(a, x))(x)
  with pytest.raises(NotImplementedError, match=message):
    jax.jvp(lambda x: fn(a, x), (x,), (F32(1.),))
  # with constant operands the primitive is just evaluated
  np.testing.assert_allclose(jax.grad(lambda y: y * fn(a, x))(F32(1.)), fn(a, x))


def test_second_derivative_of_igamma_in_a_raises_as_in_jax():
  # igamma's derivative in a is igamma_grad_a, which JAX cannot differentiate
  with pytest.raises(NotImplementedError, match="'igamma_grad_a' not implemented"):
    jax.grad(jax.grad(lambda a: lax.igamma(a, F32(1.5))))(F32(2.))


def test_mulhi_is_not_differentiable():
  assert special.mulhi_p in ad.non_differentiable
  x = np.array([3, -7], np.int32)
  _, tangent = jax.jvp(lambda x: lax.mulhi(x, x), (x,), (np.zeros(2, jax.dtypes.float0),))
  assert tangent.dtype == jax.dtypes.float0


def test_broadcast_operand_gets_a_full_shape_tangent():
  # a rank-0 `a` against a vector `x`: the tangent of a broadcasts
  a, x = F32(2.), np.array([0.5, 1., 2.], F32)
  _, tangent = jax.jvp(lambda a: lax.igamma(a, x), (a,), (F32(1.),))
  np.testing.assert_allclose(tangent, lax.igamma_grad_a(np.full(3, a), x), rtol=1e-6)


def test_staged_primitives_are_jaxs():
  x = F32(0.5)
  assert _primitives(jax.make_jaxpr(jax.grad(lax.erf))(x)) == [
      "erf", "square", "neg", "exp", "mul", "mul"]
  assert _primitives(jax.make_jaxpr(jax.grad(lax.lgamma))(x)) == ["lgamma", "digamma", "mul"]
  assert _primitives(jax.make_jaxpr(jax.grad(lax.digamma))(x)) == [
      "digamma", "polygamma", "mul"]
  assert "igamma_grad_a" in _primitives(
      jax.make_jaxpr(jax.grad(lambda a: lax.igamma(a, x)))(F32(2.)))
  grad_x = _primitives(jax.make_jaxpr(jax.grad(lambda x: lax.igamma(F32(2.), x)))(x))
  assert {"igamma", "lgamma", "log", "exp", "mul"} <= set(grad_x)
  assert "igamma_grad_a" not in grad_x
