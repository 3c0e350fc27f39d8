"""`refimpl.scipy.sparse.linalg`: iterative solvers of linear systems, as
`jax.scipy.sparse.linalg`.

`cg`, `bicgstab` and `gmres` solve `A x = b`. `A` is a linear operator: a
function `x -> A x`, a square 2-D array, or an object with `@` and a square
`shape`; `b` is a pytree of arrays, and `x` (with the guess `x0`, zeros by
default) has its structure and shapes. They stop when
`norm(b - A x) <= max(tol * norm(b), atol)` (SciPy's non-legacy rule) or
after `maxiter` iterations (default 10 times the size of `b`), without
saying which: the second result `info` is None for `cg` and `bicgstab`, and
for `gmres` -1 where the solution has a NaN, 0 otherwise. `M` is a
preconditioner, an operator approximating the inverse of `A`.

The iterations run in `lax.while_loop`s, so the solvers work under `jit`
and `vmap`. Each solve is a `lax.custom_linear_solve`: its derivatives are
those of the exact solution, computed by a second solve (with the
transposed operator in reverse mode), not derivatives through the
iterations; they are accurate when both solves converge.
"""

import functools
import operator

import numpy as np

import refimpl.numpy as jnp
from refimpl import dtypes, lax
from refimpl.array import Array
from refimpl.lax import linalg as lax_linalg
from refimpl.tree_util import Partial, tree_leaves, tree_map, tree_reduce, tree_structure

__all__ = ["bicgstab", "cg", "gmres"]


# --- pytree vector arithmetic --------------------------------------------------------------

def _vdot_real_part(x, y):
  """The real part of `vdot(x, y)` for the `z^H M z` products of CG:
  `x.real . y.real + x.imag . y.imag`, a real float."""
  result = jnp.vdot(x.real, y.real)
  if jnp.iscomplexobj(x) or jnp.iscomplexobj(y):
    result = result + jnp.vdot(x.imag, y.imag)
  return result


def _vdot_real_tree(x, y):
  return sum(tree_leaves(tree_map(_vdot_real_part, x, y)))


def _vdot_tree(x, y):
  return sum(tree_leaves(tree_map(jnp.vdot, x, y)))


def _norm(x):
  return jnp.sqrt(sum(_vdot_real_part(leaf, leaf) for leaf in tree_leaves(x)))


def _mul(scalar, tree):
  return tree_map(functools.partial(operator.mul, scalar), tree)


_add = functools.partial(tree_map, operator.add)
_sub = functools.partial(tree_map, operator.sub)


def _select(pred, on_true, on_false):
  """`jnp.where(pred, ...)` leaf by leaf over two pytrees."""
  return tree_map(functools.partial(jnp.where, pred), on_true, on_false)


@Partial
def _identity(x):
  return x


def _normalize_matvec(f):
  """`A` as a function `x -> A x`: a callable as it is, a square matrix as
  `x -> A @ x` (ValueError if it is not square), TypeError for anything else."""
  if callable(f):
    return f
  if isinstance(f, (np.ndarray, Array)):
    if f.ndim != 2 or f.shape[0] != f.shape[1]:
      raise ValueError(f"linear operator must be a square matrix, but has shape: {f.shape}")
    return functools.partial(jnp.dot, f)
  if hasattr(f, "__matmul__"):
    if hasattr(f, "shape") and (len(f.shape) != 2 or f.shape[0] != f.shape[1]):
      raise ValueError(f"linear operator must be a square matrix, but has shape: {f.shape}")
    return functools.partial(operator.matmul, f)
  raise TypeError(f"linear operator must be either a function or ndarray: {f}")


def _check_like_b(x0, b, shapes_too):
  """ValueError unless `x0` has `b`'s tree structure (and, where asked, its shapes)."""
  if tree_structure(x0) != tree_structure(b):
    raise ValueError("x0 and b must have matching tree structure: "
                     f"{tree_structure(x0)} vs {tree_structure(b)}")
  shapes = lambda tree: [np.shape(leaf) for leaf in tree_leaves(tree)]
  if shapes_too and shapes(x0) != shapes(b):
    raise ValueError(f"arrays in x0 and b must have matching shapes: {shapes(x0)} vs "
                     f"{shapes(b)}")


def _arrays(b, x0):
  """`b` and `x0` (zeros like `b` if None) with array leaves."""
  b = tree_map(jnp.asarray, b)
  x0 = tree_map(jnp.zeros_like, b) if x0 is None else tree_map(jnp.asarray, x0)
  return b, x0


# --- conjugate gradient and BiCGSTAB ----------------------------------------------------

def _cg_solve(A, b, x0=None, *, maxiter, tol=1e-5, atol=0.0, M=_identity):  # noqa: N803
  """Preconditioned conjugate gradient from `x0`. A breakdown (`p^H A p` or
  `r^H M r` not positive, as round-off can make them) keeps the last iterate."""
  atol2 = jnp.maximum(jnp.square(tol) * _vdot_real_tree(b, b), jnp.square(atol))

  def cond_fun(value):
    _, r, gamma, _, k = value
    rs = gamma.real if M is _identity else _vdot_real_tree(r, r)
    return (rs > atol2) & (k < maxiter) & (k >= 0)   # k < 0: breakdown

  def body_fun(value):
    x, r, gamma, p, k = value
    Ap = A(p)  # noqa: N806
    pAp = _vdot_real_tree(p, Ap).astype(dtype)  # noqa: N806
    breakdown = (pAp.real <= 0) | (gamma.real <= 0)
    safe = lambda d: jnp.where(breakdown, jnp.ones_like(d), d)
    alpha = gamma / safe(pAp)
    x_ = _add(x, _mul(alpha, p))
    r_ = _sub(r, _mul(alpha, Ap))
    z_ = M(r_)
    gamma_ = _vdot_real_tree(r_, z_).astype(dtype)
    p_ = _add(z_, _mul(gamma_ / safe(gamma), p))
    return (_select(breakdown, x, x_), _select(breakdown, r, r_),
            jnp.where(breakdown, gamma, gamma_), _select(breakdown, p, p_),
            jnp.where(breakdown, -1, k + 1))

  r0 = _sub(b, A(x0))
  p0 = z0 = M(r0)
  dtype = dtypes.result_type(*tree_leaves(p0))
  gamma0 = _vdot_real_tree(r0, z0).astype(dtype)
  x_final, *_ = lax.while_loop(cond_fun, body_fun, (x0, r0, gamma0, p0, 0))
  return x_final


def _bicgstab_solve(A, b, x0=None, *, maxiter, tol=1e-5, atol=0.0, M=_identity):  # noqa: N803
  """Preconditioned BiCGSTAB from `x0`; stops early when `rho`, `alpha` or
  `omega` becomes 0 (a breakdown), keeping that iterate."""
  atol2 = jnp.maximum(jnp.square(tol) * _vdot_real_tree(b, b), jnp.square(atol))

  def cond_fun(value):
    _, r, *_, k = value
    return (_vdot_real_tree(r, r) > atol2) & (k < maxiter) & (k >= 0)

  def body_fun(value):
    x, r, rhat, alpha, omega, rho, p, q, k = value
    rho_ = _vdot_tree(rhat, r)
    beta = rho_ / rho * alpha / omega
    p_ = _add(r, _mul(beta, _sub(p, _mul(omega, q))))
    phat = M(p_)
    q_ = A(phat)
    alpha_ = rho_ / _vdot_tree(rhat, q_)
    s = _sub(r, _mul(alpha_, q_))
    exit_early = _vdot_real_tree(s, s) < atol2
    shat = M(s)
    t = A(shat)
    omega_ = _vdot_tree(t, s) / _vdot_tree(t, t)
    x_ = _select(exit_early, _add(x, _mul(alpha_, phat)),
                 _add(x, _add(_mul(alpha_, phat), _mul(omega_, shat))))
    r_ = _select(exit_early, s, _sub(s, _mul(omega_, t)))
    k_ = jnp.where((omega_ == 0) | (alpha_ == 0), -11, k + 1)
    k_ = jnp.where(rho_ == 0, -10, k_)
    return x_, r_, rhat, alpha_, omega_, rho_, p_, q_, k_

  r0 = _sub(b, A(x0))
  one = lax.convert_element_type(1, *dtypes.result_type_and_weak_type(*tree_leaves(b)))
  x_final, *_ = lax.while_loop(cond_fun, body_fun, (x0, r0, r0, one, one, one, r0, r0, 0))
  return x_final


def _isolve(solve, A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None,  # noqa: N803
            check_symmetric=False):
  """`solve` (`_cg_solve` or `_bicgstab_solve`) as a `custom_linear_solve`,
  symmetric (its own transpose) for `cg` with real `b`. The transposed solve
  runs at unit right-hand-side norm (a cotangent can be tiny)."""
  b, x0 = _arrays(b, x0)
  if maxiter is None:
    maxiter = 10 * sum(leaf.size for leaf in tree_leaves(b))
  A = _normalize_matvec(A)  # noqa: N806
  M = _normalize_matvec(_identity if M is None else M)  # noqa: N806
  _check_like_b(x0, b, shapes_too=True)
  isolve_solve = functools.partial(solve, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=M)

  def scale_tree(scale, tree):
    return tree_map(lambda leaf: leaf * scale.astype(leaf.dtype), tree)

  def transpose_solve(vecmat, b):
    inv = 1 / jnp.sqrt(_vdot_real_tree(b, b))
    scale = jnp.where(jnp.isfinite(inv) & (inv > 0), inv, 1.0)  # 1 for a zero or inf norm
    x = solve(vecmat, scale_tree(scale, b), x0=scale_tree(scale, x0), tol=tol,
              atol=atol * scale, maxiter=maxiter, M=M)
    return scale_tree(1 / scale, x)

  symmetric = check_symmetric and not any(jnp.iscomplexobj(leaf) for leaf in tree_leaves(b))
  x = lax.custom_linear_solve(A, b, solve=isolve_solve, transpose_solve=transpose_solve,
                              symmetric=symmetric)
  return x, None


def cg(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):  # noqa: N803
  """Solves `A x = b` by the (preconditioned) conjugate gradient method,
  for a Hermitian positive-definite `A` (and `M`); returns `(x, None)`.

  The iterates are SciPy's `cg`'s (up to rounding), with the non-legacy
  tolerance `norm(r) <= max(tol * norm(b), atol)`. See the module docstring
  for `A`, `b`, `x0`, `maxiter`, `M` and the derivatives (for real `b` the
  transposed solve is `cg` itself).
  """
  return _isolve(_cg_solve, A=A, b=b, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=M,
                 check_symmetric=True)


def bicgstab(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):  # noqa: N803
  """Solves `A x = b` by the (preconditioned) biconjugate gradient
  stabilized method, for a general `A`; returns `(x, None)`.

  The iterates are SciPy's `bicgstab`'s (up to rounding); see the module
  docstring for the arguments and the derivatives.
  """
  return _isolve(_bicgstab_solve, A=A, b=b, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=M)


# --- GMRES ------------------------------------------------------------------------------

def _safe_normalize(x, thresh=None):
  """`(x / norm(x), norm(x))`, or zeros and 0 where the norm is not above
  `thresh` (default: the machine epsilon of the norm's dtype)."""
  norm = _norm(x)
  dtype, weak_type = dtypes.result_type_and_weak_type(*tree_leaves(x))
  if thresh is None:
    thresh = dtypes.finfo(norm.dtype).eps
  thresh = jnp.asarray(thresh).astype(dtype).real
  use_norm = norm > thresh
  norm_cast = lax.convert_element_type(norm, dtype, weak_type)
  normalized_x = tree_map(lambda y: jnp.where(use_norm, y / norm_cast, 0.0), x)
  return normalized_x, jnp.where(use_norm, norm, 0.0)


def _project_on_columns(Q, v):  # noqa: N803
  """`Q^H v`: the overlaps of `v` with the columns (last axis) of `Q`."""
  return tree_reduce(operator.add,
                     tree_map(lambda X, y: jnp.einsum("...n,...->n", X.conj(), y), Q, v))


def _iterative_classical_gram_schmidt(Q, x, xnorm, max_iterations=2):  # noqa: N803
  """Orthogonalizes `x` against the orthonormal columns of `Q` by classical
  Gram-Schmidt, repeated ("twice is enough") up to `max_iterations` times
  while the remainder's norm falls below `norm(x) / sqrt(2)`; returns the
  remainder and the accumulated overlaps."""
  Q0 = tree_leaves(Q)[0]  # noqa: N806
  r = jnp.zeros(Q0.shape[-1], dtype=Q0.dtype)

  def body_function(carry):
    k, q, r, qnorm_scaled = carry
    h = _project_on_columns(Q, q)
    q = _sub(q, tree_map(lambda X: jnp.dot(X, h), Q))
    r = _add(r, h)

    def qnorm_cond(carry):
      k, not_done, _, _ = carry
      return jnp.logical_and(not_done, k < (max_iterations - 1))

    def qnorm(carry):
      k, _, q, _ = carry
      _, qnorm = _safe_normalize(q)
      return k, False, q, qnorm / jnp.sqrt(2.0)

    _, _, q, qnorm_scaled = lax.while_loop(qnorm_cond, qnorm, (k, True, q, qnorm_scaled))
    return k + 1, q, r, qnorm_scaled

  def cond_function(carry):
    k, _, r, qnorm_scaled = carry
    _, rnorm = _safe_normalize(r)
    return jnp.logical_and(k < (max_iterations - 1), rnorm < qnorm_scaled)

  carry = body_function((0, x, r, xnorm / jnp.sqrt(2.0)))
  _, q, r, _ = lax.while_loop(cond_function, body_function, carry)
  return q, r


def _kth_arnoldi_iteration(k, A, M, V, H):  # noqa: N803
  """Step `k` of the Arnoldi process: the Krylov vector `M(A(V[:, k]))`,
  orthonormalized against `V`'s columns, becomes column k + 1 of `V` and its
  overlaps row k of `H`; a vector whose norm falls below epsilon times its
  norm before orthogonalization is an invariant subspace (the breakdown
  result), and is stored as zeros."""
  dtype, _ = dtypes.result_type_and_weak_type(*tree_leaves(V))
  eps = dtypes.finfo(dtype).eps
  v = M(A(tree_map(lambda X: X[..., k], V)))
  _, v_norm_0 = _safe_normalize(v)
  v, h = _iterative_classical_gram_schmidt(V, v, v_norm_0, max_iterations=2)
  unit_v, v_norm_1 = _safe_normalize(v, thresh=eps * v_norm_0)
  V = tree_map(lambda X, y: X.at[..., k + 1].set(y), V, unit_v)  # noqa: N806
  h = h.at[k + 1].set(v_norm_1.astype(dtype))
  return V, H.at[k, :].set(h), v_norm_1 == 0.


def _rotate_vectors(H, i, cs, sn):  # noqa: N803
  """Applies the Givens rotation `(cs, sn)` to elements i and i + 1 of `H`."""
  x1, y1 = H[i], H[i + 1]
  H = H.at[i].set(cs.conj() * x1 - sn.conj() * y1)  # noqa: N806
  return H.at[i + 1].set(sn * x1 + cs * y1)


def _givens_rotation(a, b):
  """The `(cs, sn)` of the Givens rotation that zeroes `b` against `a`."""
  b_zero = abs(b) == 0
  a_lt_b = abs(a) < abs(b)
  t = -jnp.where(a_lt_b, a, b) / jnp.where(a_lt_b, b, a)
  r = lax.rsqrt(1 + abs(t) ** 2).astype(t.dtype)
  cs = jnp.where(b_zero, 1, jnp.where(a_lt_b, r * t, r))
  sn = jnp.where(b_zero, 0, jnp.where(a_lt_b, r, r * t))
  return cs, sn


def _apply_givens_rotations(H_row, givens, k):  # noqa: N803
  """Applies the first k rotations of `givens` to `H_row`, then a new one
  (stored as row k of `givens`) that zeroes its element k + 1."""
  R_row = lax.fori_loop(0, k, lambda i, row: _rotate_vectors(row, i, *givens[i, :]),  # noqa: N806
                        H_row)
  givens_factors = _givens_rotation(R_row[k], R_row[k + 1])
  givens = givens.at[k, :].set(givens_factors)
  return _rotate_vectors(R_row, k, *givens_factors), givens


def _krylov_basis(unit_residual, restart):
  """The Krylov basis array(s): `unit_residual` as column 0 of `restart + 1`."""
  return tree_map(lambda x: jnp.pad(x[..., None], ((0, 0),) * x.ndim + ((0, restart),)),
                  unit_residual)


def _gmres_update(A, b, x0, V, y, M):  # noqa: N803
  """The restart's solution `x0 + V[:, :-1] y`, its preconditioned residual
  normalized and its norm."""
  x = _add(x0, tree_map(lambda X: jnp.dot(X[..., :-1], y), V))
  unit_residual, residual_norm = _safe_normalize(M(_sub(b, A(x))))
  return x, unit_residual, residual_norm


def _gmres_incremental(A, b, x0, unit_residual, residual_norm, ptol, restart, M):  # noqa: N803
  """One restart of GMRES that QR-factorizes the Krylov basis with Givens
  rotations as it is built, so the residual norm is known at each step and
  the restart ends once it is below `ptol`."""
  V = _krylov_basis(unit_residual, restart)  # noqa: N806
  dtype = dtypes.result_type(*tree_leaves(b))
  R = jnp.eye(restart, restart + 1, dtype=dtype)  # noqa: N806 (eye: nonsingular if cut short)
  givens = jnp.zeros((restart, 2), dtype=dtype)
  beta_vec = jnp.zeros((restart + 1), dtype=dtype).at[0].set(residual_norm.astype(dtype))

  def loop_cond(carry):
    k, err, _, _, _, _ = carry
    return jnp.logical_and(k < restart, err > ptol)

  def arnoldi_qr_step(carry):
    k, _, V, R, beta_vec, givens = carry  # noqa: N806
    V, H, _ = _kth_arnoldi_iteration(k, A, M, V, R)  # noqa: N806
    R_row, givens = _apply_givens_rotations(H[k, :], givens, k)  # noqa: N806
    beta_vec = _rotate_vectors(beta_vec, k, *givens[k, :])
    return k + 1, abs(beta_vec[k + 1]), V, R.at[k, :].set(R_row), beta_vec, givens

  carry = (0, residual_norm, V, R, beta_vec, givens)
  _, _, V, R, beta_vec, _ = lax.while_loop(loop_cond, arnoldi_qr_step, carry)  # noqa: N806
  y = lax_linalg.triangular_solve(R[:, :-1], beta_vec[:-1], left_side=True, lower=True,
                                  transpose_a=True)
  return _gmres_update(A, b, x0, V, y, M)


def _gmres_batched(A, b, x0, unit_residual, residual_norm, ptol, restart, M):  # noqa: N803
  """One restart of GMRES that builds the whole Krylov basis (stopping only
  at a breakdown) and then solves the least-squares problem `H^T y = beta e1`
  by its normal equations."""
  V = _krylov_basis(unit_residual, restart)  # noqa: N806
  dtype, weak_type = dtypes.result_type_and_weak_type(*tree_leaves(b))
  H = lax.convert_element_type(jnp.eye(restart, restart + 1, dtype=dtype), dtype,  # noqa: N806
                               weak_type)

  def loop_cond(carry):
    _, _, breakdown, k = carry
    return jnp.logical_and(k < restart, jnp.logical_not(breakdown))

  def arnoldi_process(carry):
    V, H, _, k = carry  # noqa: N806
    V, H, breakdown = _kth_arnoldi_iteration(k, A, M, V, H)  # noqa: N806
    return V, H, breakdown, k + 1

  V, H, _, _ = lax.while_loop(loop_cond, arnoldi_process, (V, H, False, 0))  # noqa: N806
  beta_vec = jnp.zeros_like(H, shape=(restart + 1,)).at[0].set(residual_norm.astype(dtype))
  y = _solve_normal_equations(H.T, beta_vec)
  return _gmres_update(A, b, x0, V, y, M)


def _solve_normal_equations(a, b):
  """The least-squares solution of `a y = b` from `a^H a y = a^H b`, by Cholesky."""
  a_h = a.T.conj()
  chol = lax_linalg.cholesky(jnp.dot(a_h, a))
  z = lax_linalg.triangular_solve(chol, jnp.dot(a_h, b), left_side=True, lower=True)
  return lax_linalg.triangular_solve(chol, z, left_side=True, lower=True, transpose_a=True,
                                     conjugate_a=True)


def _gmres_solve(A, b, x0, atol, ptol, restart, maxiter, M, gmres_func):  # noqa: N803
  """Restarts `gmres_func` from the last solution until the preconditioned
  residual norm is at most `atol` or `maxiter` restarts are done."""
  unit_residual, residual_norm = _safe_normalize(M(_sub(b, A(x0))))

  def cond_fun(value):
    _, k, _, residual_norm = value
    return jnp.logical_and(k < maxiter, residual_norm > atol)

  def body_fun(value):
    x, k, unit_residual, residual_norm = value
    x, unit_residual, residual_norm = gmres_func(A, b, x, unit_residual, residual_norm, ptol,
                                                 restart, M)
    return x, k + 1, unit_residual, residual_norm

  x_final, *_ = lax.while_loop(cond_fun, body_fun, (x0, 0, unit_residual, residual_norm))
  return x_final


def gmres(A, b, x0=None, *, tol=1e-5, atol=0.0, restart=20, maxiter=None, M=None,  # noqa: N803
          solve_method='batched'):
  """Solves `A x = b` by restarted GMRES, for a general `A`; returns
  `(x, info)`, info -1 where `x` has a NaN and 0 otherwise.

  Each restart projects the solution onto the Krylov space of dimension
  `restart` (at most the size of `b`) built from the current residual;
  `maxiter` (default 10 times the size of `b`) bounds the restarts, and the
  tolerance is `max(tol * norm(b), atol)` on the preconditioned residual.
  `solve_method` 'incremental' QR-factorizes the Krylov basis as it is built
  with Givens rotations (and may end a restart early); 'batched' (the
  default) builds the whole basis and solves a dense least-squares problem.
  Another method is a ValueError. Derivatives: see the module docstring.
  """
  b, x0 = _arrays(b, x0)
  A = _normalize_matvec(A)  # noqa: N806
  M = _normalize_matvec(_identity if M is None else M)  # noqa: N806
  size = sum(leaf.size for leaf in tree_leaves(b))
  if maxiter is None:
    maxiter = 10 * size
  restart = min(restart, size)
  _check_like_b(x0, b, shapes_too=False)

  b_norm = _norm(b)
  atol = jnp.maximum(tol * b_norm, atol)
  ptol = _norm(M(b)) * jnp.minimum(1.0, atol / b_norm)
  if solve_method == 'incremental':
    gmres_func = _gmres_incremental
  elif solve_method == 'batched':
    gmres_func = _gmres_batched
  else:
    raise ValueError(f"invalid solve_method {solve_method}, must be either "
                     "'incremental' or 'batched'")

  def solve(A, b):  # noqa: N803
    return _gmres_solve(A, b, x0, atol, ptol, restart, maxiter, M, gmres_func)

  x = lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve)
  return x, jnp.where(jnp.isnan(_norm(x)), -1, 0)
