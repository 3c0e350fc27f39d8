"""Derivatives of the jnp ufuncs JAX gives custom JVP rules: logaddexp and
logaddexp2 (finite where an operand is -inf), sinc (Maclaurin values at 0,
to every order) and i0 (0 at 0), at the edges and on random smooth inputs,
and the `custom_jvp_call` they stage."""

import math

import numpy as np
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import lax
from conformance import strategies as S
from conformance.autodiff import check_grads


def _staged(fn, *args):
  closed = jax.make_jaxpr(fn)(*args)
  return str(closed)


def _f64_arrays(low, high, n=1):
  """n float64 arrays of one small shape, elements in [low, high]."""
  return S.shapes(max_dims=2, max_side=3).flatmap(lambda shape: st.tuples(
      *[S.arrays(np.float64, st.just(shape), elements=st.floats(low, high))] * n))


def test_logaddexp_gradient_with_an_infinite_operand():
  g1, g2 = jax.grad(jnp.logaddexp, (0, 1))(-np.inf, 0.)
  assert (float(g1), float(g2)) == (0.0, 1.0)
  # +inf: the result is +inf, replaced by 0 on both sides of exp(x - out)
  g1, g2 = jax.grad(jnp.logaddexp, (0, 1))(np.inf, 0.)
  assert (float(g1), float(g2)) == (1.0, 1.0)


def test_logaddexp_gradient_is_the_softmax_weight():
  g1, g2 = jax.grad(jnp.logaddexp, (0, 1))(np.float32(1.), np.float32(3.))
  np.testing.assert_allclose([g1, g2], [1 / (1 + math.exp(2)), 1 / (1 + math.exp(-2))],
                             rtol=1e-6)
  g1, g2 = jax.grad(jnp.logaddexp2, (0, 1))(np.float32(1.), np.float32(3.))
  np.testing.assert_allclose([g1, g2], [1 / 5, 4 / 5], rtol=1e-6)
  g1, g2 = jax.grad(jnp.logaddexp2, (0, 1))(-np.inf, 2.)
  assert (float(g1), float(g2)) == (0.0, 1.0)


def test_logaddexp_stages_custom_jvp_call():
  for fn in (jnp.logaddexp, jnp.logaddexp2):
    assert "custom_jvp_call" in _staged(fn, np.float32(1.), np.float32(2.))


@given(_f64_arrays(-20.0, 20.0, 2))
def test_logaddexp_derivatives_match_finite_differences(args):
  check_grads(jnp.logaddexp, args, order=2)
  check_grads(jnp.logaddexp2, args, order=2)


def test_sinc_derivatives_at_zero():
  d1 = jax.grad(jnp.sinc)
  d2 = jax.grad(d1)
  d3 = jax.grad(d2)
  assert float(d1(0.)) == 0.0
  with jax.enable_x64():
    np.testing.assert_allclose(d2(np.float64(0.)), -math.pi ** 2 / 3, rtol=1e-14)
    assert float(d3(np.float64(0.))) == 0.0
    np.testing.assert_allclose(jax.grad(d3)(np.float64(0.)), math.pi ** 4 / 5, rtol=1e-14)
  assert "custom_jvp_call" in _staged(jnp.sinc, np.float32(0.))


@given(_f64_arrays(0.1, 3.0))
def test_sinc_derivatives_match_finite_differences(args):
  check_grads(jnp.sinc, args, order=2)


def test_i0_derivative():
  assert float(jax.grad(jnp.i0)(0.)) == 0.0
  with jax.enable_x64():
    x = np.float64(1.5)
    i1 = math.exp(x) * float(lax.bessel_i1e(x))   # I0' = I1
    np.testing.assert_allclose(jax.grad(jnp.i0)(x), i1, rtol=1e-12)
    np.testing.assert_allclose(jax.grad(jnp.i0)(-x), -i1, rtol=1e-12)
  assert "custom_jvp_call" in _staged(jnp.i0, np.float32(1.))


@given(_f64_arrays(0.1, 5.0))
def test_i0_derivatives_match_finite_differences(args):
  check_grads(jnp.i0, args, order=2)
