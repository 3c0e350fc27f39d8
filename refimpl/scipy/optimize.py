"""`refimpl.scipy.optimize`: unconstrained minimization, as `jax.scipy.optimize`.

`minimize(fun, x0, args, method=...)` minimizes `fun(x, *args)` over a 1-D
array `x`, with gradients from `value_and_grad`, and returns an
`OptimizeResults`. Methods: "BFGS" (Nocedal & Wright's Algorithm 6.1, a
dense inverse-Hessian estimate) and "l-bfgs-experimental-do-not-rely-on-this"
(limited-memory BFGS, Algorithm 7.5, which also minimizes real functions of
complex variables). Both search along their direction with an inexact line
search satisfying the strong Wolfe conditions (Algorithms 3.5 and 3.6, a
zoom by cubic, quadratic or bisection steps), as JAX's do, so the iterates
can differ from SciPy's. Everything runs in `lax.while_loop`s, so
`minimize` works under `jit`; it is not differentiable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import refimpl.numpy as jnp
from refimpl import dtypes, lax
from refimpl.autodiff import value_and_grad
from refimpl.array import Array
from refimpl.numpy.util import promote_dtypes_inexact

__all__ = ["OptimizeResults", "minimize"]


class OptimizeResults(NamedTuple):
  """The result of `minimize`.

  x: the solution; success: whether it converged (gradient norm below
  `gtol`) without a line-search failure; status: 0 converged, 1 the
  iteration limit reached, for BFGS 2 + the line search's status where it
  failed (3 a zoom failure, 5 its iteration limit), for L-BFGS 2 / 3 the
  function / gradient evaluation limit, 4 too little progress (`ftol`) and
  5 a line-search failure, -1 otherwise; fun, jac: the function value and
  gradient at x; hess_inv: BFGS's inverse-Hessian estimate (None for
  L-BFGS); nfev, njev: the function and gradient evaluations; nit: the
  iterations.
  """
  x: Array
  success: bool | Array
  status: int | Array
  fun: Array
  jac: Array
  hess_inv: Array | None
  nfev: int | Array
  njev: int | Array
  nit: int | Array


def minimize(fun: Callable, x0: Array, args: tuple = (), *, method: str,
             tol: float | None = None, options: Mapping[str, Any] | None = None
             ) -> OptimizeResults:
  """Minimizes `fun(x, *args)` (a real scalar) from `x0`, a 1-D array.

  `method` is required: "BFGS" or "l-bfgs-experimental-do-not-rely-on-this"
  (any case; another is a ValueError). `args` must be a tuple (TypeError).
  `options` are the method's: for BFGS `maxiter` (default 200 * size),
  `norm` (of the gradient for convergence, default inf), `gtol` (1e-5) and
  `line_search_maxiter` (10); for L-BFGS also `maxcor` (the history, 10),
  `ftol`, `maxfun`, `maxgrad` and `maxls` (20). `tol` is accepted and, as
  in JAX, not used.
  """
  if options is None:
    options = {}
  if not isinstance(args, tuple):
    raise TypeError(f"args argument to jax.scipy.optimize.minimize must be a tuple, got {args}")
  fun_with_args = lambda x: fun(x, *args)
  if method.lower() == 'bfgs':
    results = _minimize_bfgs(fun_with_args, x0, **options)
    hess_inv = results.H_k
  elif method.lower() == 'l-bfgs-experimental-do-not-rely-on-this':
    results = _minimize_lbfgs(fun_with_args, x0, **options)
    hess_inv = None
  else:
    raise ValueError(f"Method {method} not recognized")
  return OptimizeResults(x=results.x_k, success=results.converged & ~results.failed,
                         status=results.status, fun=results.f_k, jac=results.g_k,
                         hess_inv=hess_inv, nfev=results.nfev, njev=results.ngev,
                         nit=results.k)


# --- line search --------------------------------------------------------------------------

def _cubicmin(a, fa, fpa, b, fb, c, fc):
  """The minimizer of the cubic through `(a, fa)` with slope `fpa` there,
  `(b, fb)` and `(c, fc)` (NaN where it has none)."""
  dtype = dtypes.result_type(a, fa, fpa, b, fb, c, fc)
  C = fpa  # noqa: N806
  db, dc = b - a, c - a
  denom = (db * dc) ** 2 * (db - dc)
  d1 = jnp.array([[dc ** 2, -db ** 2], [-dc ** 3, db ** 3]], dtype=dtype)
  d2 = jnp.array([fb - fa - C * db, fc - fa - C * dc], dtype=dtype)
  A, B = jnp.dot(d1, d2) / denom  # noqa: N806
  return a + (-B + jnp.sqrt(B * B - 3. * A * C)) / (3. * A)


def _quadmin(a, fa, fpa, b, fb):
  """The minimizer of the parabola through `(a, fa)` with slope `fpa` there and `(b, fb)`."""
  db = b - a
  B = (fb - fa - fpa * db) / (db ** 2)  # noqa: N806
  return a - fpa / (2. * B)


def _replace_where(pred, state, **new):
  """`state._replace` with each field `jnp.where(pred, new value, old value)`."""
  return state._replace(**{k: jnp.where(pred, v, getattr(state, k)) for k, v in new.items()})


class _ZoomState(NamedTuple):
  done: bool | Array
  failed: bool | Array
  j: int | Array
  a_lo: float | Array
  phi_lo: float | Array
  dphi_lo: float | Array
  a_hi: float | Array
  phi_hi: float | Array
  dphi_hi: float | Array
  a_rec: float | Array
  phi_rec: float | Array
  a_star: float | Array
  phi_star: float | Array
  dphi_star: float | Array
  g_star: float | Array
  nfev: int | Array
  ngev: int | Array


def _zoom(restricted_func_and_grad, wolfe_one, wolfe_two, a_lo, phi_lo, dphi_lo, a_hi, phi_hi,
          dphi_hi, g_0, pass_through):
  """Zoom (Algorithm 3.6) in the bracket `[a_lo, a_hi]` to a step satisfying
  the strong Wolfe conditions, trying a cubic step (after the first), then a
  quadratic one, then bisection; it fails when the bracket shrinks below
  1e-5 (1e-10 in 64 bits) or after 30 steps. With `pass_through` true it
  does nothing (the caller selects between zooms with `where`)."""
  state = _ZoomState(
      done=False, failed=False, j=0, a_lo=a_lo, phi_lo=phi_lo, dphi_lo=dphi_lo, a_hi=a_hi,
      phi_hi=phi_hi, dphi_hi=dphi_hi, a_rec=(a_lo + a_hi) / 2., phi_rec=(phi_lo + phi_hi) / 2.,
      a_star=1., phi_star=phi_lo, dphi_star=dphi_lo, g_star=g_0, nfev=0, ngev=0)
  delta1, delta2 = 0.2, 0.1

  def body(state):
    dalpha = state.a_hi - state.a_lo
    a = jnp.minimum(state.a_hi, state.a_lo)
    b = jnp.maximum(state.a_hi, state.a_lo)
    cchk, qchk = delta1 * dalpha, delta2 * dalpha
    threshold = jnp.where(dtypes.finfo(dalpha.dtype).bits < 64, 1e-5, 1e-10)
    state = state._replace(failed=state.failed | (dalpha <= threshold))

    a_j_cubic = _cubicmin(state.a_lo, state.phi_lo, state.dphi_lo, state.a_hi, state.phi_hi,
                          state.a_rec, state.phi_rec)
    use_cubic = (state.j > 0) & (a_j_cubic > a + cchk) & (a_j_cubic < b - cchk)
    a_j_quad = _quadmin(state.a_lo, state.phi_lo, state.dphi_lo, state.a_hi, state.phi_hi)
    use_quad = (~use_cubic) & (a_j_quad > a + qchk) & (a_j_quad < b - qchk)
    a_j = jnp.where(use_cubic, a_j_cubic, state.a_rec)
    a_j = jnp.where(use_quad, a_j_quad, a_j)
    a_j = jnp.where((~use_cubic) & (~use_quad), (state.a_lo + state.a_hi) / 2., a_j)

    phi_j, dphi_j, g_j = restricted_func_and_grad(a_j)
    phi_j = phi_j.astype(state.phi_lo.dtype)
    dphi_j = dphi_j.astype(state.dphi_lo.dtype)
    g_j = g_j.astype(state.g_star.dtype)
    state = state._replace(nfev=state.nfev + 1, ngev=state.ngev + 1)

    hi_to_j = wolfe_one(a_j, phi_j) | (phi_j >= state.phi_lo)
    star_to_j = wolfe_two(dphi_j) & (~hi_to_j)
    hi_to_lo = (dphi_j * (state.a_hi - state.a_lo) >= 0.) & (~hi_to_j) & (~star_to_j)
    lo_to_j = (~hi_to_j) & (~star_to_j)

    state = _replace_where(hi_to_j, state, a_hi=a_j, phi_hi=phi_j, dphi_hi=dphi_j,
                           a_rec=state.a_hi, phi_rec=state.phi_hi)
    state = _replace_where(star_to_j, state, a_star=a_j, phi_star=phi_j, dphi_star=dphi_j,
                           g_star=g_j)._replace(done=star_to_j | state.done)
    state = _replace_where(hi_to_lo, state, a_hi=state.a_lo, phi_hi=state.phi_lo,
                           dphi_hi=state.dphi_lo, a_rec=state.a_hi, phi_rec=state.phi_hi)
    state = _replace_where(lo_to_j & ~hi_to_lo, state, a_rec=state.a_lo,
                           phi_rec=state.phi_lo)
    state = _replace_where(lo_to_j, state, a_lo=a_j, phi_lo=phi_j, dphi_lo=dphi_j)
    return state._replace(j=state.j + 1, failed=state.failed | (state.j + 1 >= 30))

  return lax.while_loop(lambda state: (~state.done) & (~pass_through) & (~state.failed),
                        body, state)


class _LineSearchState(NamedTuple):
  done: bool | Array
  failed: bool | Array
  i: int | Array
  a_i1: float | Array
  phi_i1: float | Array
  dphi_i1: float | Array
  nfev: int | Array
  ngev: int | Array
  a_star: float | Array
  phi_star: float | Array
  dphi_star: float | Array
  g_star: Array


class _LineSearchResults(NamedTuple):
  failed: bool | Array
  nit: int | Array
  nfev: int | Array
  ngev: int | Array
  k: int | Array
  a_k: int | Array
  f_k: Array
  g_k: Array
  status: bool | Array


def _line_search(f, xk, pk, old_fval=None, old_old_fval=None, gfk=None, c1=1e-4, c2=0.9,
                 maxiter=20):
  """A step `a` along the descent direction `pk` from `xk` satisfying the
  strong Wolfe conditions with constants `c1`, `c2` (Algorithm 3.5): from a
  first trial of `min(1, 2.02 (f(xk) - old_old_fval) / f'(0))`, doubling
  the step until a bracket is found, then zooming. status: 0 passed, 1 a
  zoom failure, 3 `maxiter` trials reached. Outside 64 bits a step below
  1e-8 in magnitude is raised to 1e-8 (a zero step would stall)."""
  xk, pk = promote_dtypes_inexact(xk, pk)

  def restricted_func_and_grad(t):
    phi, g = value_and_grad(f)(xk + jnp.asarray(t, dtype=pk.dtype) * pk)
    return phi, jnp.real(jnp.dot(g, pk)), g

  if old_fval is None or gfk is None:
    phi_0, dphi_0, gfk = restricted_func_and_grad(0)
  else:
    phi_0 = old_fval
    dphi_0 = jnp.real(jnp.dot(gfk, pk))
  if old_old_fval is not None:
    candidate_start_value = 1.01 * 2 * (phi_0 - old_old_fval) / dphi_0
    start_value = jnp.where(candidate_start_value > 1, 1.0, candidate_start_value)
  else:
    start_value = 1

  def wolfe_one(a_i, phi_i):   # the sufficient-decrease condition, negated
    return phi_i > phi_0 + c1 * a_i * dphi_0

  def wolfe_two(dphi_i):       # the strong curvature condition
    return jnp.abs(dphi_i) <= -c2 * dphi_0

  evaluated = 1 if (old_fval is None or gfk is None) else 0
  state = _LineSearchState(
      done=False, failed=False, i=1, a_i1=0., phi_i1=phi_0, dphi_i1=dphi_0, nfev=evaluated,
      ngev=evaluated, a_star=0., phi_star=phi_0, dphi_star=dphi_0, g_star=gfk)

  def body(state):
    a_i = jnp.where(state.i == 1, start_value, state.a_i1 * 2.)
    phi_i, dphi_i, g_i = restricted_func_and_grad(a_i)
    state = state._replace(nfev=state.nfev + 1, ngev=state.ngev + 1)

    star_to_zoom1 = wolfe_one(a_i, phi_i) | ((phi_i >= state.phi_i1) & (state.i > 1))
    star_to_i = wolfe_two(dphi_i) & (~star_to_zoom1)
    star_to_zoom2 = (dphi_i >= 0.) & (~star_to_zoom1) & (~star_to_i)

    zoom1 = _zoom(restricted_func_and_grad, wolfe_one, wolfe_two, state.a_i1, state.phi_i1,
                  state.dphi_i1, a_i, phi_i, dphi_i, gfk, ~star_to_zoom1)
    zoom2 = _zoom(restricted_func_and_grad, wolfe_one, wolfe_two, a_i, phi_i, dphi_i,
                  state.a_i1, state.phi_i1, state.dphi_i1, gfk, ~star_to_zoom2)
    state = state._replace(nfev=state.nfev + zoom1.nfev + zoom2.nfev,
                           ngev=state.ngev + zoom1.ngev + zoom2.ngev)

    for taken, found in [(star_to_zoom1, zoom1), (star_to_i, None), (star_to_zoom2, zoom2)]:
      if found is None:
        state = _replace_where(taken, state, a_star=a_i, phi_star=phi_i, dphi_star=dphi_i,
                               g_star=g_i)
      else:
        state = _replace_where(taken, state, a_star=found.a_star, phi_star=found.phi_star,
                               dphi_star=found.dphi_star, g_star=found.g_star)
        state = state._replace(failed=state.failed | (taken & found.failed))
      state = state._replace(done=state.done | taken)
    return state._replace(i=state.i + 1, a_i1=a_i, phi_i1=phi_i, dphi_i1=dphi_i)

  state = lax.while_loop(lambda state: (~state.done) & (state.i <= maxiter) & (~state.failed),
                         body, state)
  status = jnp.where(state.failed, jnp.array(1), jnp.where(state.i > maxiter, jnp.array(3),
                                                           jnp.array(0)))
  alpha_k = jnp.asarray(state.a_star)
  alpha_k = jnp.where((dtypes.finfo(alpha_k.dtype).bits != 64) & (jnp.abs(alpha_k) < 1e-8),
                      jnp.sign(alpha_k) * 1e-8, alpha_k)
  return _LineSearchResults(failed=state.failed | (~state.done), nit=state.i - 1,
                            nfev=state.nfev, ngev=state.ngev, k=state.i, a_k=alpha_k,
                            f_k=state.phi_star, g_k=state.g_star, status=status)


# --- BFGS ---------------------------------------------------------------------------------

class _BFGSResults(NamedTuple):
  converged: bool | Array
  failed: bool | Array
  k: int | Array
  nfev: int | Array
  ngev: int | Array
  nhev: int | Array
  x_k: Array
  f_k: Array
  g_k: Array
  H_k: Array
  old_old_fval: Array
  status: int | Array
  line_search_status: int | Array


def _minimize_bfgs(fun, x0, maxiter=None, norm=jnp.inf, gtol=1e-5, line_search_maxiter=10):
  """BFGS (Algorithm 6.1) from the identity as inverse Hessian; the update
  is skipped where `1 / (y . s)` is not finite. It stops when the gradient's
  `norm` is below `gtol`, a line search fails, or after `maxiter` steps."""
  if maxiter is None:
    maxiter = jnp.size(x0) * 200
  d = x0.shape[0]
  f_0, g_0 = value_and_grad(fun)(x0)
  state = _BFGSResults(
      converged=jnp.linalg.norm(g_0, ord=norm) < gtol, failed=False, k=0, nfev=1, ngev=1,
      nhev=0, x_k=x0, f_k=f_0, g_k=g_0, H_k=jnp.eye(d, dtype=x0.dtype),
      old_old_fval=f_0 + jnp.linalg.norm(g_0) / 2, status=0, line_search_status=0)

  def cond_fun(state):
    return ~state.converged & ~state.failed & (state.k < maxiter)

  def body_fun(state):
    p_k = -jnp.dot(state.H_k, state.g_k)
    search = _line_search(fun, state.x_k, p_k, old_fval=state.f_k,
                          old_old_fval=state.old_old_fval, gfk=state.g_k,
                          maxiter=line_search_maxiter)
    s_k = search.a_k * p_k
    y_k = search.g_k - state.g_k
    rho_k = jnp.reciprocal(jnp.dot(y_k, s_k))
    sy_k = s_k[:, None] * y_k[None, :]
    w = jnp.eye(d, dtype=rho_k.dtype) - rho_k * sy_k
    H_kp1 = (jnp.einsum('ij,jk,lk', w, state.H_k, w)  # noqa: N806
             + rho_k * s_k[:, None] * s_k[None, :])
    return state._replace(
        converged=jnp.linalg.norm(search.g_k, ord=norm) < gtol, failed=search.failed,
        k=state.k + 1, nfev=state.nfev + search.nfev, ngev=state.ngev + search.ngev,
        x_k=state.x_k + s_k, f_k=search.f_k, g_k=search.g_k,
        H_k=jnp.where(jnp.isfinite(rho_k), H_kp1, state.H_k), old_old_fval=state.f_k,
        line_search_status=search.status)

  state = lax.while_loop(cond_fun, body_fun, state)
  status = jnp.where(state.converged, 0,
                     jnp.where(state.k == maxiter, 1,
                               jnp.where(state.failed, 2 + state.line_search_status, -1)))
  return state._replace(status=status)


# --- L-BFGS -------------------------------------------------------------------------------

class _LBFGSResults(NamedTuple):
  converged: bool | Array
  failed: bool | Array
  k: int | Array
  nfev: int | Array
  ngev: int | Array
  x_k: Array
  f_k: Array
  g_k: Array
  s_history: Array
  y_history: Array
  rho_history: Array
  gamma: float | Array
  status: int | Array
  ls_status: int | Array


def _minimize_lbfgs(fun, x0, maxiter=None, norm=jnp.inf, maxcor=10, ftol=2.220446049250313e-09,
                    gtol=1e-05, maxfun=None, maxgrad=None, maxls=20):
  """L-BFGS (Algorithm 7.5) keeping the last `maxcor` steps, for real or
  complex `x` (Sorber et al. 2012). It stops when the gradient's `norm` is
  below `gtol` (converged) or, failing, at an iteration, function or
  gradient evaluation limit, a decrease below `ftol`, or a line-search
  failure (without any limit, `maxiter` is 200 * size)."""
  d = len(x0)
  dtype = jnp.dtype(x0)
  if maxiter is None and maxfun is None and maxgrad is None:
    maxiter = d * 200
  maxiter, maxfun, maxgrad = (jnp.inf if limit is None else limit
                              for limit in (maxiter, maxfun, maxgrad))
  f_0, g_0 = value_and_grad(fun)(x0)
  state = _LBFGSResults(
      converged=False, failed=False, k=0, nfev=1, ngev=1, x_k=x0, f_k=f_0, g_k=g_0,
      s_history=jnp.zeros((maxcor, d), dtype=dtype), y_history=jnp.zeros((maxcor, d), dtype=dtype),
      rho_history=jnp.zeros((maxcor,), dtype=dtype), gamma=1., status=0, ls_status=0)

  def body_fun(state):
    p_k = _two_loop_recursion(state)
    search = _line_search(fun, state.x_k, p_k, old_fval=state.f_k, gfk=state.g_k,
                          maxiter=maxls)
    s_k = search.a_k.astype(p_k.dtype) * p_k
    y_k = search.g_k - state.g_k
    rho_k_inv = jnp.real(jnp.dot(y_k, s_k))
    status = jnp.array(0)
    status = jnp.where(state.f_k - search.f_k < ftol, 4, status)
    status = jnp.where(state.ngev >= maxgrad, 3, status)
    status = jnp.where(state.nfev >= maxfun, 2, status)
    status = jnp.where(state.k >= maxiter, 1, status)
    status = jnp.where(search.failed, 5, status)
    converged = jnp.linalg.norm(search.g_k, ord=norm) < gtol
    return state._replace(
        converged=converged, failed=(status > 0) & ~converged, k=state.k + 1,
        nfev=state.nfev + search.nfev, ngev=state.ngev + search.ngev,
        x_k=(state.x_k + s_k).astype(state.x_k.dtype), f_k=search.f_k.astype(state.f_k.dtype),
        g_k=search.g_k.astype(state.g_k.dtype),
        s_history=_push(state.s_history, s_k), y_history=_push(state.y_history, y_k),
        rho_history=_push(state.rho_history, jnp.reciprocal(rho_k_inv).astype(y_k.dtype)),
        gamma=rho_k_inv / jnp.real(jnp.dot(jnp.conj(y_k), y_k)),
        status=jnp.where(converged, 0, status), ls_status=search.status)

  return lax.while_loop(lambda state: ~state.converged & ~state.failed, body_fun, state)


def _two_loop_recursion(state):
  """The L-BFGS direction `-H g` from the stored history (the last
  `min(k, maxcor)` rows of the histories, oldest first) and `gamma` as the
  initial inverse-Hessian scale."""
  dtype = state.rho_history.dtype
  his_size = len(state.rho_history)
  curr_size = jnp.where(state.k < his_size, state.k, his_size)

  def body_fun1(j, carry):
    i = his_size - 1 - j
    q, a_his = carry
    a_i = state.rho_history[i] * jnp.dot(jnp.conj(state.s_history[i]), q).real.astype(dtype)
    return q - a_i * jnp.conj(state.y_history[i]), a_his.at[i].set(a_i)

  q, a_his = lax.fori_loop(0, curr_size, body_fun1,
                           (-jnp.conj(state.g_k), jnp.zeros_like(state.rho_history)))

  def body_fun2(j, q):
    i = his_size - curr_size + j
    b_i = state.rho_history[i] * jnp.dot(state.y_history[i], q).real.astype(dtype)
    return q + (a_his[i] - b_i) * state.s_history[i]

  return lax.fori_loop(0, curr_size, body_fun2, state.gamma * q)


def _push(history, new):
  """`history` (newest last) without its oldest row, `new` appended."""
  return jnp.roll(history, -1, axis=0).at[-1].set(new)

