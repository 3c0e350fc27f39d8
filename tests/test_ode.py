"""`jax.experimental.ode`: odeint against closed forms and
scipy.integrate.solve_ivp, its adjoint gradients against finite differences,
its options and errors, and its building blocks."""

import numpy as np
import pytest
import scipy.integrate as osp_integrate
from hypothesis import given, settings, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl.experimental import ode
from refimpl.experimental.ode import odeint


def _decay(y, t, k):
  return -k * y


def _pendulum(state, t, damping, g):
  theta, omega = state
  return omega, -damping * omega - g * jnp.sin(theta)


@settings(max_examples=8, deadline=None)
@given(k=st.floats(0.1, 3.0), y0=st.floats(-2.0, 2.0))
def test_exponential_decay_matches_its_closed_form(k, y0):
  t = np.linspace(0.0, 2.0, 6)
  with jax.enable_x64():
    ys = odeint(_decay, jnp.asarray([y0, 2 * y0]), jnp.asarray(t), k)
  assert ys.shape == (6, 2) and ys.dtype == np.float64
  # odeint's default tolerances are rtol = atol = 1.4e-8 per step: a y0 near zero is held to
  # the absolute one, accumulated over the steps.
  np.testing.assert_allclose(ys, np.exp(-k * t)[:, None] * [y0, 2 * y0], rtol=1e-6, atol=1e-7)


def test_harmonic_oscillator_as_a_pytree_matches_closed_form_and_solve_ivp():
  t = np.linspace(0.0, 5.0, 11)
  with jax.enable_x64():
    ys = odeint(lambda s, t, w: {"x": s["v"], "v": -w ** 2 * s["x"]},
                {"x": jnp.asarray(1.0), "v": jnp.asarray(0.0)}, jnp.asarray(t), 1.5)
  np.testing.assert_allclose(ys["x"], np.cos(1.5 * t), rtol=1e-6, atol=1e-7)
  np.testing.assert_allclose(ys["v"], -1.5 * np.sin(1.5 * t), rtol=1e-6, atol=1e-7)
  expected = osp_integrate.solve_ivp(lambda t, s: [s[1], -2.25 * s[0]], (0.0, 5.0), [1.0, 0.0],
                                     t_eval=t, rtol=1e-10, atol=1e-10).y
  np.testing.assert_allclose(ys["x"], expected[0], atol=1e-6)


def test_float32_pendulum_and_a_time_dependent_system_match_solve_ivp():
  t = np.linspace(0.0, 3.0, 7)
  ys = odeint(_pendulum, (jnp.float32(np.pi - 0.1), jnp.float32(0.0)),
              jnp.asarray(t, jnp.float32), 0.25, 9.8)
  assert ys[0].dtype == np.float32
  expected = osp_integrate.solve_ivp(lambda t, s: [s[1], -0.25 * s[1] - 9.8 * np.sin(s[0])],
                                     (0.0, 3.0), [np.pi - 0.1, 0.0], t_eval=t, rtol=1e-10,
                                     atol=1e-10).y
  np.testing.assert_allclose(ys[0], expected[0], atol=2e-4)
  ys = odeint(lambda y, t: jnp.cos(t) * y, jnp.ones(1), jnp.asarray(t, jnp.float32))
  np.testing.assert_allclose(ys[:, 0], np.exp(np.sin(t)), rtol=2e-5)


def test_gradients_match_finite_differences():
  t = np.linspace(0.0, 1.0, 4)

  def loss(y0, ts, damping, g):
    theta, omega = odeint(_pendulum, (y0[0], y0[1]), ts, damping, g)
    return jnp.sum(theta ** 2) + jnp.sum(omega * ts)

  with jax.enable_x64():
    args = [jnp.asarray([np.pi - 0.1, 0.2]), jnp.asarray(t), 0.25, 9.8]
    grads = jax.grad(loss, argnums=(0, 1, 2, 3))(*args)
    eps = 1e-5
    for i, grad in enumerate(grads):
      x = np.asarray(args[i], np.float64)
      for j in np.ndindex(x.shape):
        dx = np.zeros_like(x)
        dx[j] = eps
        up = [*args[:i], jnp.asarray(x + dx), *args[i + 1:]]
        down = [*args[:i], jnp.asarray(x - dx), *args[i + 1:]]
        fd = (float(loss(*up)) - float(loss(*down))) / (2 * eps)
        np.testing.assert_allclose(np.asarray(grad)[j], fd, rtol=1e-4, atol=1e-6)


def test_forward_mode_is_not_defined():
  t = jnp.linspace(0.0, 1.0, 3)
  with pytest.raises(TypeError, match="forward-mode autodiff"):
    jax.jvp(lambda y0: odeint(_decay, y0, t, 1.0), (jnp.ones(1),), (jnp.ones(1),))


def test_gradient_through_a_closed_over_value():
  with jax.enable_x64():
    t = jnp.linspace(0.0, 1.5, 3)

    def final(k):
      return odeint(lambda y, t: -k * y * t, jnp.asarray(1.0), t)[-1]
    # y(t) = exp(-k t^2 / 2)
    np.testing.assert_allclose(jax.grad(final)(0.8), -1.125 * np.exp(-0.9), rtol=1e-6)


def test_odeint_composes_with_jit_and_vmap():
  t = jnp.linspace(0.0, 1.0, 3)
  solve = jax.jit(lambda y0: odeint(_decay, y0, t, 2.0))
  np.testing.assert_allclose(solve(jnp.ones(2)), np.exp(-2.0 * np.asarray(t))[:, None] *
                             np.ones(2), rtol=1e-5)
  batched = jax.vmap(lambda k: odeint(_decay, jnp.ones(1), t, k))(jnp.asarray([0.5, 1.0]))
  np.testing.assert_allclose(batched[:, :, 0], np.exp(-np.outer([0.5, 1.0], t)), rtol=1e-5)


def test_mxstep_and_hmax():
  with jax.enable_x64():
    t = jnp.linspace(0.0, 4.0, 3)
    exact = np.exp(-np.asarray(t))
    capped = odeint(_decay, jnp.asarray(1.0), t, 1.0, hmax=0.05)
    np.testing.assert_allclose(capped, exact, rtol=1e-9)
    truncated = odeint(_decay, jnp.asarray(1.0), t, 1.0, mxstep=1)
    assert np.abs(np.asarray(truncated) - exact).max() > 1e-3


def test_arguments_are_checked():
  with pytest.raises(TypeError, match="t must be an array of floats"):
    odeint(_decay, jnp.ones(1), jnp.arange(3), 1.0)
  with pytest.raises(TypeError, match="must be arrays or scalars"):
    odeint(lambda y, t, s: -y, jnp.ones(1), jnp.linspace(0.0, 1.0, 2), "fast")


def test_runge_kutta_step_is_fifth_order_with_a_fourth_order_error_estimate():
  with jax.enable_x64():
    for dt in [0.1, 0.05]:
      y1, f1, err, k = ode.runge_kutta_step(lambda y, t: y, jnp.ones(1), jnp.ones(1),
                                            jnp.asarray(0.0), jnp.asarray(dt))
      assert k.shape == (7, 1)
      np.testing.assert_allclose(f1, y1, rtol=1e-12)
      true_error = abs(float(y1[0]) - np.exp(dt))
      assert true_error < 2e-3 * dt ** 6
      assert abs(float(err[0])) < 2e-2 * dt ** 5 and abs(float(err[0])) > true_error


def test_fit_4th_order_polynomial_reproduces_a_quartic():
  p = np.asarray([0.3, -1.0, 2.0, 0.5, 1.5])
  dt = jnp.asarray(2.0)
  deriv = np.polyder(p)
  coeffs = ode.fit_4th_order_polynomial(
      jnp.asarray(np.polyval(p, 0.0)), jnp.asarray(np.polyval(p, 1.0)),
      jnp.asarray(np.polyval(p, 0.5)), jnp.asarray(np.polyval(deriv, 0.0) / 2.0),
      jnp.asarray(np.polyval(deriv, 1.0) / 2.0), dt)
  np.testing.assert_allclose(coeffs, p, rtol=1e-5, atol=1e-5)


def test_step_size_control():
  step = lambda ratio: ode.optimal_step_size(jnp.float32(0.1), jnp.float32(ratio))
  np.testing.assert_allclose(step(0.0), 1.0)
  np.testing.assert_allclose(step(0.5), 0.1 * 0.9 * 0.5 ** -0.2, rtol=1e-6)
  np.testing.assert_allclose(step(1e-9), 1.0, rtol=1e-6)   # at most 10x
  np.testing.assert_allclose(step(1e9), 0.02, rtol=1e-6)   # at least 0.2x after a rejection
  np.testing.assert_allclose(step(0.99), 0.1, rtol=1e-6)   # at least 1x after an acceptance
  ratio = ode.mean_error_ratio(jnp.asarray([1e-3, 2e-3]), 0.1, 0.0, jnp.asarray([0.1, 0.1]),
                               jnp.asarray([0.05, -0.1]))
  np.testing.assert_allclose(ratio, np.sqrt((0.01 + 0.04) / 2), rtol=1e-6)
  np.testing.assert_allclose(ode.abs2(jnp.asarray([3 + 4j])), [25.0])
  h = ode.initial_step_size(lambda y, t: -y, 0.0, jnp.ones(2), 4, 1e-6, 1e-6, -jnp.ones(2))
  assert 0 < float(h) <= 1.0


def test_ravel_first_arg():
  flat, unravel = ode.ravel_pytree({"a": jnp.ones(2), "b": jnp.zeros(())})
  raveled = ode.ravel_first_arg(lambda y, s: {"a": y["a"] * s, "b": y["b"] + s}, unravel, None)
  np.testing.assert_array_equal(raveled(flat, 3.0), [3.0, 3.0, 3.0])
  assert ode.safe_zip([1], [2]) == [(1, 2)]
