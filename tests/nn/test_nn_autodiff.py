"""Derivatives of the jax.nn functions with custom JVP rules (relu, relu6,
softmax, log1mexp) and of log_softmax (stopped shift) at their edges, the
`custom_jvp_call` they stage, and softmax's Jacobian against its closed form
and finite differences. Random smooth inputs: conformance/families/nn.py's
AD_CASES."""

import math

import numpy as np
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import nn
from conformance import strategies as S
from conformance.autodiff import check_grads


def test_relu_derivative_is_zero_at_zero():
  assert [float(jax.grad(nn.relu)(x)) for x in (-1., 0., 2.)] == [0.0, 0.0, 1.0]
  np.testing.assert_array_equal(jax.vjp(nn.relu, jnp.array([-1., 0., 3.]))[1](
      jnp.ones(3))[0], [0., 0., 1.])


def test_relu6_derivative_is_zero_at_both_kinks():
  assert [float(jax.grad(nn.relu6)(x)) for x in (-1., 0., 3., 6., 7.)] == [0, 0, 1, 0, 0]
  # hard_sigmoid and hard_silu go through relu6's rule: zero slope at x = -3 and 3
  assert float(jax.grad(nn.hard_sigmoid)(3.)) == 0.0
  np.testing.assert_allclose(jax.grad(nn.hard_sigmoid)(1.), 1 / 6, rtol=1e-6)


def test_log1mexp_derivative_is_finite_near_zero():
  for x in (1e-3, 0.5, 2.0, 30.0):
    np.testing.assert_allclose(jax.grad(nn.log1mexp)(np.float32(x)), 1 / math.expm1(x),
                               rtol=1e-5)


def test_custom_rules_are_staged():
  x = jnp.array([1., 2., 3.])
  for fn in (nn.relu, nn.relu6, nn.softmax, nn.log1mexp):
    assert "custom_jvp_call" in str(jax.make_jaxpr(fn)(x))
  assert "stop_gradient" in str(jax.make_jaxpr(nn.log_softmax)(x))


def _softmax_jacobian(x):
  y = np.exp(x - x.max()) / np.exp(x - x.max()).sum()
  return np.diag(y) - np.outer(y, y)


def test_softmax_jacobian_closed_form():
  with jax.enable_x64():
    x = np.array([0.5, -1.0, 2.0, 0.0])
    np.testing.assert_allclose(jax.jacfwd(nn.softmax)(x), _softmax_jacobian(x), atol=1e-15)
    np.testing.assert_allclose(jax.jacrev(nn.softmax)(x), _softmax_jacobian(x), atol=1e-15)
    # log_softmax: I - softmax(x) in each row
    y = np.exp(x) / np.exp(x).sum()
    np.testing.assert_allclose(jax.jacrev(nn.log_softmax)(x), np.eye(4) - y, atol=1e-15)


def test_softmax_jacobian_with_where_and_large_logits():
  with jax.enable_x64():
    where = np.array([True, False, True])
    x = np.array([1.0, 5.0, -2.0])
    jac = jax.jacrev(lambda x: nn.softmax(x, where=where))(x)
    expected = np.zeros((3, 3))
    expected[np.ix_([0, 2], [0, 2])] = _softmax_jacobian(x[[0, 2]])
    np.testing.assert_allclose(jac, expected, atol=1e-15)
    big = np.array([1000.0, 1000.0])   # no overflow: the rule reuses the output
    np.testing.assert_allclose(jax.jacfwd(nn.softmax)(big), [[0.25, -0.25], [-0.25, 0.25]])


@given(S.arrays(np.float64, S.shapes(min_dims=1, max_dims=2, min_side=1, max_side=4),
                elements=st.floats(-5.0, 5.0)), st.sampled_from([-1, 0]))
def test_softmax_derivatives_match_finite_differences(x, axis):
  check_grads(lambda x: nn.softmax(x, axis=axis), [x], order=2)
  check_grads(lambda x: nn.log_softmax(x, axis=axis), [x])
