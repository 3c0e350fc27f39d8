"""`refimpl.experimental.ode`: ODE integration by the adaptive Dormand-Prince
method, as `jax.experimental.ode`.

`odeint(func, y0, t, *args)` integrates `dy/dt = func(y, t, *args)` from
`y0` at `t[0]` and returns `y` at each time of `t`: the explicit 5(4)
Runge-Kutta pair of Dormand and Prince (1980), the fifth-order solution
advanced, the difference from the fourth-order one the error estimate;
steps are accepted where the RMS of the error over `atol + rtol * |y|` is
at most 1 and resized by `optimal_step_size`; output times between steps
are read off the quartic interpolant of each step (`interp_fit_dopri`).

`odeint` is differentiable in reverse mode with respect to `y0`, `t`,
`args` and the floating-point values `func` closes over, by the adjoint
method (Chen et al. 2018, appendix C): the gradient is the solution of the
augmented system integrated backwards with `odeint` itself, at the same
tolerances, not a derivative through the solver's steps.

The other public names are `odeint`'s building blocks, and the helpers JAX's
module exposes with them.
"""

import operator
from collections.abc import Callable  # noqa: F401 (a public name of JAX's module)
from functools import partial

import refimpl.numpy as jnp
from refimpl import core, lax
from refimpl.api import jit
from refimpl.autodiff import vjp
from refimpl.custom_derivatives import closure_convert, custom_vjp
from refimpl.example_libraries.optimizers import safe_map, safe_zip
from refimpl.flatten_util import ravel_pytree
from refimpl.numpy.util import promote_dtypes_inexact
from refimpl.tree_util import tree_leaves, tree_map
from refimpl.vectorize import vmap

map = safe_map  # noqa: A001 (JAX's module binds the checked versions to these names)
zip = safe_zip  # noqa: A001


def ravel_first_arg(f, unravel, debug_info):
  """`ravel_first_arg_(f, unravel)`: `f(y, *args)` as a function of the
  flat vector of `y`. (`debug_info` is JAX's description of `f` for its
  tracing errors; refimpl keeps none, and ignores it.)"""
  return ravel_first_arg_(f, unravel)


def ravel_first_arg_(fun, *gen_static_args):
  """With `gen_static_args = (unravel,)`: the function
  `(y_flat, *args) -> ravel_pytree(fun(unravel(y_flat), *args))[0]`."""
  unravel, = gen_static_args

  def raveled(y_flat, *args):
    return ravel_pytree(fun(unravel(y_flat), *args))[0]
  return raveled


def interp_fit_dopri(y0, y1, k, dt):
  """The coefficients (highest power first, shape `(5, n)`) of the quartic in
  the relative time `s` of a step from `y0` to `y1` over `dt` with stages
  `k`: it matches `y0` and `y1`, the slopes `k[0]` and `k[-1]`, and
  Dormand-Prince's dense-output estimate of `y` at the midpoint."""
  dps_c_mid = jnp.array([
      6025192743 / 30085553152 / 2, 0, 51252292925 / 65400821598 / 2,
      -2691868925 / 45128329728 / 2, 187940372067 / 1594534317056 / 2,
      -1776094331 / 19743644256 / 2, 11237099 / 235043384 / 2], dtype=y0.dtype)
  y_mid = y0 + dt.astype(y0.dtype) * jnp.dot(dps_c_mid, k)
  return jnp.asarray(fit_4th_order_polynomial(y0, y1, y_mid, k[0], k[-1], dt))


def fit_4th_order_polynomial(y0, y1, y_mid, dy0, dy1, dt):
  """The coefficients `(a, b, c, d, e)` of the quartic
  `a s^4 + b s^3 + c s^2 + d s + e` on `s` in [0, 1] through `y0`, `y_mid`
  (at 1/2) and `y1`, with derivatives `dy0`, `dy1` in `t = s * dt`."""
  dt = dt.astype(y0.dtype)
  a = -2. * dt * dy0 + 2. * dt * dy1 - 8. * y0 - 8. * y1 + 16. * y_mid
  b = 5. * dt * dy0 - 3. * dt * dy1 + 18. * y0 + 14. * y1 - 32. * y_mid
  c = -4. * dt * dy0 + dt * dy1 - 11. * y0 - 5. * y1 + 16. * y_mid
  d = dt * dy0
  e = y0
  return a, b, c, d, e


def initial_step_size(fun, t0, y0, order, rtol, atol, f0):
  """The first step size for a method of `order`, from `y0`, its slope `f0`
  and one more evaluation of `fun(y, t)` (Hairer, Norsett & Wanner, Solving
  Ordinary Differential Equations I, II.4)."""
  y0, f0 = promote_dtypes_inexact(y0, f0)
  dtype = y0.dtype
  scale = atol + jnp.abs(y0) * rtol
  d0 = jnp.linalg.norm(y0 / scale.astype(dtype))
  d1 = jnp.linalg.norm(f0 / scale.astype(dtype))
  h0 = jnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)
  y1 = y0 + h0.astype(dtype) * f0
  f1 = fun(y1, t0 + h0)
  d2 = jnp.linalg.norm((f1 - f0) / scale.astype(dtype)) / h0
  h1 = jnp.where((d1 <= 1e-15) & (d2 <= 1e-15), jnp.maximum(1e-6, h0 * 1e-3),
                 (0.01 / jnp.maximum(d1, d2)) ** (1. / (order + 1.)))
  return jnp.minimum(100. * h0, h1)


# The Dormand-Prince tableau: nodes, stage coefficients, the fifth-order weights
# and the differences from the fourth-order ones.
_ALPHA = [1 / 5, 3 / 10, 4 / 5, 8 / 9, 1., 1., 0]
_BETA = [[1 / 5, 0, 0, 0, 0, 0, 0],
         [3 / 40, 9 / 40, 0, 0, 0, 0, 0],
         [44 / 45, -56 / 15, 32 / 9, 0, 0, 0, 0],
         [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0, 0],
         [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0, 0],
         [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]]
_C_SOL = [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]
_C_ERROR = [35 / 384 - 1951 / 21600, 0, 500 / 1113 - 22642 / 50085, 125 / 192 - 451 / 720,
            -2187 / 6784 - -12231 / 42400, 11 / 84 - 649 / 6300, -1. / 60.]


def runge_kutta_step(func, y0, f0, t0, dt):
  """One Dormand-Prince step of `dt` from `(t0, y0)` with slope `f0`:
  returns `(y1, f1, y1_error, k)`, the fifth-order solution, its slope (the
  last stage: first same as last), the error estimate and the seven stages
  (shape `(7, n)`)."""
  alpha = jnp.array(_ALPHA, dtype=dt.dtype)
  beta = jnp.array(_BETA, dtype=f0.dtype)
  c_sol = jnp.array(_C_SOL, dtype=f0.dtype)
  c_error = jnp.array(_C_ERROR, dtype=f0.dtype)

  def body_fun(i, k):
    ti = t0 + dt * alpha[i - 1]
    yi = y0 + dt.astype(f0.dtype) * jnp.dot(beta[i - 1, :], k)
    return k.at[i, :].set(func(yi, ti))

  k = jnp.zeros((7, f0.shape[0]), f0.dtype).at[0, :].set(f0)
  k = lax.fori_loop(1, 7, body_fun, k)
  y1 = dt.astype(f0.dtype) * jnp.dot(c_sol, k) + y0
  y1_error = dt.astype(f0.dtype) * jnp.dot(c_error, k)
  return y1, k[-1], y1_error, k


def abs2(x):
  """`|x|**2`, for real or complex `x` (real result)."""
  if jnp.iscomplexobj(x):
    return x.real ** 2 + x.imag ** 2
  return x ** 2


def mean_error_ratio(error_estimate, rtol, atol, y0, y1):
  """The RMS over the components of `error_estimate / (atol + rtol *
  max(|y0|, |y1|))`: a step is accepted where it is at most 1."""
  err_tol = atol + rtol * jnp.maximum(jnp.abs(y0), jnp.abs(y1))
  err_ratio = error_estimate / err_tol.astype(error_estimate.dtype)
  return jnp.sqrt(jnp.mean(abs2(err_ratio)))


def optimal_step_size(last_step, mean_error_ratio, safety=0.9, ifactor=10.0, dfactor=0.2,
                      order=5.0):
  """The next step size: `last_step * safety * ratio**(-1/order)`, the
  factor at most `ifactor` and, after a rejected step (ratio > 1), at least
  `dfactor` (1 after an accepted one); `last_step * ifactor` where the
  ratio is 0."""
  dfactor = jnp.where(mean_error_ratio < 1, 1.0, dfactor)
  factor = jnp.minimum(ifactor, jnp.maximum(mean_error_ratio ** (-1.0 / order) * safety, dfactor))
  return jnp.where(mean_error_ratio == 0, last_step * ifactor, last_step * factor)


def odeint(func, y0, t, *args, rtol=1.4e-8, atol=1.4e-8, mxstep=jnp.inf, hmax=jnp.inf):
  """The solution of `dy/dt = func(y, t, *args)`, `y(t[0]) = y0`, at the times `t`.

  `y0` is an array or a pytree of arrays, `func(y, t, *args)` returns a
  value of its structure; `t` is a 1-D float array of increasing times
  (TypeError for integer times); `args` must be arrays, scalars or pytrees
  of them (TypeError otherwise). The result has `y0`'s structure with a
  leading axis of `len(t)`, the first entry `y0`. `rtol` and `atol` bound
  each step's local error; at most `mxstep` steps are taken per output
  interval and no step is longer than `hmax` (after `mxstep` steps, or a
  step shrunk to 0, the result there is extrapolated from the last step).
  The computation is jitted (`func`, `rtol`, `atol`, `mxstep` and `hmax`
  static); see the module docstring for the method and its reverse-mode
  derivatives (forward mode is not defined, as in JAX).
  """
  for arg in tree_leaves(args):
    if not isinstance(arg, core.Tracer) and not core.valid_jaxtype(arg):
      raise TypeError(f"The contents of odeint *args must be arrays or scalars, but got {arg}.")
  if not jnp.issubdtype(t.dtype, jnp.floating):
    raise TypeError(f"t must be an array of floats, but got {t}.")
  converted, consts = closure_convert(func, y0, t[0], *args)
  return _odeint_wrapper(converted, rtol, atol, mxstep, hmax, y0, t, *args, *consts)


@partial(jit, static_argnums=(0, 1, 2, 3, 4))
def _odeint_wrapper(func, rtol, atol, mxstep, hmax, y0, ts, *args):
  """`_odeint` on the flattened state, the result unflattened row by row."""
  y0, unravel = ravel_pytree(y0)
  func = ravel_first_arg(func, unravel, None)
  out = _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args)
  return vmap(unravel)(out)


@partial(custom_vjp, nondiff_argnums=(0, 1, 2, 3, 4))
def _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args):
  """The integration of a flat state: a `scan` over the output times whose
  body steps (a `while_loop`, rejected steps keeping the state) until the
  step's end passes the output time, then evaluates the last step's
  interpolant there."""
  func_ = lambda y, t: func(y, t, *args)

  def scan_fun(carry, target_t):

    def cond_fun(state):
      i, _, _, t, dt, _, _ = state
      return (t < target_t) & (i < mxstep) & (dt > 0)

    def body_fun(state):
      i, y, f, t, dt, last_t, interp_coeff = state
      next_y, next_f, next_y_error, k = runge_kutta_step(func_, y, f, t, dt)
      next_t = t + dt
      error_ratio = mean_error_ratio(next_y_error, rtol, atol, y, next_y)
      new_interp_coeff = interp_fit_dopri(y, next_y, k, dt)
      dt = jnp.clip(optimal_step_size(dt, error_ratio), min=0., max=hmax)
      new = [i + 1, next_y, next_f, next_t, dt, t, new_interp_coeff]
      old = [i + 1, y, f, t, dt, last_t, interp_coeff]
      return map(partial(jnp.where, error_ratio <= 1.), new, old)

    _, *carry = lax.while_loop(cond_fun, body_fun, [0] + carry)
    _, _, t, _, last_t, interp_coeff = carry
    relative_output_time = (target_t - last_t) / (t - last_t)
    y_target = jnp.polyval(interp_coeff, relative_output_time.astype(interp_coeff.dtype))
    return carry, y_target

  f0 = func_(y0, ts[0])
  dt = jnp.clip(initial_step_size(func_, ts[0], y0, 4, rtol, atol, f0), min=0., max=hmax)
  interp_coeff = jnp.array([y0] * 5)
  init_carry = [y0, f0, ts[0], dt, ts[0], interp_coeff]
  _, ys = lax.scan(scan_fun, init_carry, ts[1:])
  return jnp.concatenate((y0[None], ys))


def _odeint_fwd(func, rtol, atol, mxstep, hmax, y0, ts, *args):
  ys = _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args)
  return ys, (ys, ts, args)


def _odeint_rev(func, rtol, atol, mxstep, hmax, res, g):
  """The adjoint method: from the last output time back to the first,
  integrate `y` backwards with its cotangent and the cotangents of `t[0]`
  and `args` (the augmented system, in negated time so that `odeint`'s
  times increase), adding each output's cotangent at its time; an output
  time's own cotangent is `func(y, t) . g` there."""
  ys, ts, args = res

  def aug_dynamics(augmented_state, t, *args):
    y, y_bar, *_ = augmented_state
    y_dot, vjpfun = vjp(func, y, -t, *args)   # t is negated time
    return (-y_dot, *vjpfun(y_bar))

  def scan_fun(carry, i):
    y_bar, t0_bar, args_bar = carry
    t_bar = jnp.dot(func(ys[i], ts[i], *args), g[i]).real   # a time has a real cotangent
    t0_bar = t0_bar - t_bar
    _, y_bar, t0_bar, args_bar = odeint(
        aug_dynamics, (ys[i], y_bar, t0_bar, args_bar), jnp.array([-ts[i], -ts[i - 1]]),
        *args, rtol=rtol, atol=atol, mxstep=mxstep, hmax=hmax)
    y_bar, t0_bar, args_bar = tree_map(operator.itemgetter(1), (y_bar, t0_bar, args_bar))
    return (y_bar + g[i - 1], t0_bar, args_bar), t_bar

  init_carry = (g[-1], 0., tree_map(jnp.zeros_like, args))
  (y_bar, t0_bar, args_bar), rev_ts_bar = lax.scan(
      scan_fun, init_carry, jnp.arange(len(ts) - 1, 0, -1))
  ts_bar = jnp.concatenate([jnp.array([t0_bar]), rev_ts_bar[::-1]])
  return (y_bar, ts_bar, *args_bar)


_odeint.defvjp(_odeint_fwd, _odeint_rev)
