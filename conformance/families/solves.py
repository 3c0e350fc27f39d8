"""Cases for `lax.custom_linear_solve` (the `custom_linear_solve`
primitive) and `lax.custom_root` (a `custom_jvp_call`).

The linear systems are built inside each function from arrays with entries
in [-1, 1] (the matrix `m + 2 n I` is diagonally dominant, so well
conditioned), so that the inputs may be shuffled by the vmap property and
stay valid. Solves use `jnp.linalg.solve`. Roots: the square root by Newton's
method, and the real root of `x^3 + p x - q` (p > 0), also by Newton's method, against
closed forms (the tangent systems are diagonal: `y / g(1)` elementwise).
Derivative cases check that differentiation goes through the
implicit rules (not the solvers): the matrix and the right-hand side, and
the values `f` closes over.
"""

import numpy as np
from hypothesis import strategies as st

import refimpl.numpy as jnp
from refimpl import lax
from conformance import strategies as S
from conformance.autodiff import ADCase
from conformance.cases import Case

VALUE_DTYPES = S.LINALG_DTYPES
AD_DTYPES = [np.float64, np.complex128]
TOL = dict(rtol=1e-4, atol=1e-4)  # float32 solves of well-conditioned systems


# --- linear solves -------------------------------------------------------------------

def _matrix(m):
  """The diagonally dominant matrix `m + 2 n I` (`m` n x n, entries in [-1, 1])."""
  n = m.shape[-1]
  return m + 2 * n * jnp.eye(n, dtype=m.dtype)


def _np_matrix(m):
  m = m.astype(np.complex128 if m.dtype.kind == "c" else np.float64)
  return m + 2 * m.shape[-1] * np.eye(m.shape[-1])


def linear_solve(m, b):
  """A x = b with the transpose solve given (reverse mode works)."""
  a = _matrix(m)
  return lax.custom_linear_solve(
      lambda x: a @ x, b, lambda matvec, x: jnp.linalg.solve(a, x),
      transpose_solve=lambda vecmat, x: jnp.linalg.solve(a.T, x))


def symmetric_linear_solve(m, b):
  """A x = b for the symmetric A = m + m^T + 4 n I: `solve` serves both ways."""
  a = _matrix(m)
  a = a + a.T
  return lax.custom_linear_solve(lambda x: a @ x, b,
                                 lambda matvec, x: jnp.linalg.solve(a, x), symmetric=True)


def pytree_linear_solve(m, b):
  """A block-diagonal system on a dict: `u -> A u`, `v -> 3 v`."""
  a = _matrix(m)
  return lax.custom_linear_solve(
      lambda x: {"u": a @ x["u"], "v": 3 * x["v"]}, {"u": b, "v": b[::-1]},
      lambda matvec, x: {"u": jnp.linalg.solve(a, x["u"]), "v": x["v"] / 3},
      transpose_solve=lambda vecmat, x: {"u": jnp.linalg.solve(a.T, x["u"]),
                                         "v": x["v"] / 3})


def aux_linear_solve(m, b):
  """With `has_aux`: the solvers also return the residual norm (zero derivative)."""
  a = _matrix(m)

  def solve(matvec, x):
    y = jnp.linalg.solve(a, x)
    return y, jnp.sum(jnp.abs(matvec(y) - x))

  def transpose_solve(vecmat, x):
    y = jnp.linalg.solve(a.T, x)
    return y, jnp.sum(jnp.abs(vecmat(y) - x))
  x, _ = lax.custom_linear_solve(lambda x: a @ x, b, solve, transpose_solve, has_aux=True)
  return x


def _np_solve(m, b):
  return np.linalg.solve(_np_matrix(m), b)


def _np_symmetric_solve(m, b):
  a = _np_matrix(m)
  return np.linalg.solve(a + a.T, b)


def _np_pytree_solve(m, b):
  return {"u": _np_solve(m, b), "v": b[::-1] / 3}


@st.composite
def system_inputs(draw, dtype_list=VALUE_DTYPES):
  """`((m, b), {})`: `m` n x n and `b` of length n, entries in [-1, 1]."""
  dtype = draw(st.sampled_from(dtype_list))
  n = draw(st.integers(1, 4))
  return (draw(S.bounded_arrays(dtype, (n, n))), draw(S.bounded_arrays(dtype, (n,)))), {}


# --- roots ---------------------------------------------------------------------------

def _newton(f, x):
  """Newton's method for x^2 - a = 0 from `x` (converged after 8 steps
  for a in [1, 10], from 1)."""
  for _ in range(8):
    x = x - f(x) / (2 * x)
  return x


def sqrt_root(a):
  """sqrt(a) as the root of x^2 - a, from 1 (a in [1, 10])."""
  return lax.custom_root(lambda x: x * x - a, jnp.ones_like(a), _newton,
                         lambda g, y: y / g(jnp.ones_like(y)))


def _cubic_newton(p):
  """Newton's method for x^3 + p x - q = 0 from 0 (converged after 6 steps
  for p in [1, 2], q in [-1, 1])."""
  def solve(f, x):
    for _ in range(6):
      x = x - f(x) / (3 * x * x + p)
    return x
  return solve


def cubic_root(p, q):
  """The real root of x^3 + p x - q (p in [1, 2], q in [-1, 1]: |root| <= 1)."""
  return lax.custom_root(lambda x: x ** 3 + p * x - q, jnp.zeros_like(p * q),
                         _cubic_newton(p), lambda g, y: y / g(jnp.ones_like(y)))


def _np_cubic_root(p, q):
  # Cardano: one real root for p > 0.
  p, q = np.asarray(p, np.float64), np.asarray(q, np.float64)
  d = np.sqrt(q ** 2 / 4 + p ** 3 / 27)
  return np.cbrt(q / 2 + d) + np.cbrt(q / 2 - d)


def _cubic_inputs(dtype_list):
  return st.sampled_from(dtype_list).flatmap(lambda dt: S.broadcastable_arrays(
      [dt], 2, elements=S.bounded_elements(dt, 1.0, 2.0))).map(
      lambda pair: ((pair[1][0], pair[1][1] * 2 - 3), {}))


CASES = [
    Case("lax.custom_linear_solve", linear_solve, system_inputs, _np_solve,
         **TOL),
    Case("lax.custom_linear_solve symmetric", symmetric_linear_solve, system_inputs,
         _np_symmetric_solve, **TOL),
    Case("lax.custom_linear_solve pytree", pytree_linear_solve, system_inputs,
         _np_pytree_solve, **TOL),
    Case("lax.custom_linear_solve has_aux", aux_linear_solve, system_inputs, _np_solve,
         **TOL),
    Case("lax.custom_root sqrt", sqrt_root,
         lambda: S.bounded_case_inputs([np.float32], 1, 1.0, 10.0), np.sqrt,
         rtol=1e-5, atol=1e-6),
    Case("lax.custom_root cubic", cubic_root, lambda: _cubic_inputs([np.float32]),
         _np_cubic_root, rtol=1e-5, atol=1e-5),
]

AD_CASES = [
    ADCase("lax.custom_linear_solve", linear_solve,
           lambda: system_inputs(AD_DTYPES), ("custom_linear_solve",), order=2),
    ADCase("lax.custom_linear_solve symmetric", symmetric_linear_solve,
           lambda: system_inputs(AD_DTYPES), ("custom_linear_solve",)),
    ADCase("lax.custom_linear_solve pytree", pytree_linear_solve,
           lambda: system_inputs(AD_DTYPES), ("custom_linear_solve",)),
    ADCase("lax.custom_linear_solve has_aux", aux_linear_solve,
           lambda: system_inputs(AD_DTYPES), ("custom_linear_solve",)),
    ADCase("lax.custom_root sqrt", sqrt_root,
           lambda: S.bounded_case_inputs([np.float64], 1, 1.0, 10.0), ("custom_jvp_call",),
           order=2),
    ADCase("lax.custom_root cubic", cubic_root, lambda: _cubic_inputs([np.float64]),
           ("custom_jvp_call",)),
]
