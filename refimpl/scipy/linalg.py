"""`refimpl.scipy.linalg`: SciPy's linear algebra built on lax, as `jax.scipy.linalg`.

As in JAX, the decompositions and solvers wrap `refimpl.lax.linalg` (and
`refimpl.numpy.linalg`): inputs are promoted to an inexact dtype, the last
two axes are the matrix and leading axes batch axes, unless a function says
it takes one matrix. SciPy's `overwrite_*`, `check_finite`, `lwork`,
`debug` and similar arguments are accepted and unused: nothing is checked
at run time, so a singular or indefinite input gives inf/NaN values, not an
error. The matrix functions (`expm`, `sqrtm`, `funm`) and `polar` follow
JAX's algorithms; the special matrices (`toeplitz`, `pascal`, ...) are
built with the dtypes JAX gives them.
"""

import functools
import math
import operator

import numpy as np

from refimpl import dtypes, lax
from refimpl.autodiff import jvp
from refimpl.lax import linalg as lax_linalg
from refimpl.numpy import linalg as np_linalg
from refimpl.numpy.creation import ensure_arraylike
from refimpl.numpy.util import promote_dtypes, promote_dtypes_inexact, to_inexact_dtype
from refimpl.numpy.vectorize import vectorize
from refimpl.vectorize import vmap
import refimpl.numpy as jnp

__all__ = [
    "block_diag", "cho_factor", "cho_solve", "cholesky", "circulant", "companion",
    "convolution_matrix", "det", "dft", "eigh", "eigh_tridiagonal", "expm", "expm_frechet",
    "fiedler", "fiedler_companion", "funm", "hadamard", "hankel", "helmert", "hessenberg",
    "hilbert", "inv", "invhilbert", "invpascal", "leslie", "lu", "lu_factor", "lu_solve",
    "pascal", "polar", "qr", "qr_multiply", "rsf2csf", "schur", "solve", "solve_sylvester",
    "solve_triangular", "sqrtm", "svd", "toeplitz",
]


def _mH(x):
  return jnp.conj(jnp.matrix_transpose(x))


def _square(name, a):
  a = jnp.asarray(a)
  if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
    raise ValueError(f"{name}: expected a (batched) square matrix, got shape {a.shape}.")
  return a


# --- factorizations -------------------------------------------------------------------

def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
  """The Cholesky factor of Hermitian positive-definite `a`: upper `U` with
  `a = U^H U`, or with `lower` `L` with `a = L L^H`. Only the `lower` (else
  upper) triangle of `a` is read; an indefinite matrix gives NaNs."""
  del overwrite_a, check_finite
  a, = promote_dtypes_inexact(ensure_arraylike("cholesky", a))
  factor = lax_linalg.cholesky(a if lower else _mH(a), symmetrize_input=False)
  return factor if lower else _mH(factor)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
  """`(c, lower)`: `cholesky(a, lower)` and the flag, for `cho_solve`. The
  other triangle of `c` is zero (SciPy leaves it unspecified)."""
  del overwrite_a, check_finite
  return cholesky(a, lower=lower), lower


def _cho_solve(c, b, lower):
  """`(c c^H)^-1 b` (`lower`) or `(c^H c)^-1 b`, by two triangular solves."""
  b = lax_linalg.triangular_solve(c, b, left_side=True, lower=lower, transpose_a=not lower,
                                  conjugate_a=not lower)
  return lax_linalg.triangular_solve(c, b, left_side=True, lower=lower, transpose_a=lower,
                                     conjugate_a=lower)


def _check_solve_shapes(a, b):
  if not (a.ndim >= 2 and b.ndim in (a.ndim, a.ndim - 1)
          and a.shape[-1] == a.shape[-2] == b.shape[a.ndim - 2]):
    raise ValueError("The arguments to solve must have shapes a=[..., m, m] and b=[..., m, k] "
                     f"or b=[..., m]; got a={a.shape} and b={b.shape}")


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
  """Solves `a x = b` from `(c, lower) = cho_factor(a)`. `b` is `[..., m]`
  (one dimension fewer than `c`) or `[..., m, k]`."""
  del overwrite_b, check_finite
  c, lower = c_and_lower
  c, b = promote_dtypes_inexact(*ensure_arraylike("cho_solve", c, b))
  _check_solve_shapes(c, b)
  return _cho_solve(c, b, lower)


def lu_factor(a, overwrite_a=False, check_finite=True):
  """`(lu, piv)`: LU with partial pivoting of `[..., m, n]` `a`, `L` (unit
  diagonal implicit) below and `U` on and above the diagonal of `lu`; row
  `i` was swapped with row `piv[i]` (int32, `[..., min(m, n)]`)."""
  del overwrite_a, check_finite
  a, = promote_dtypes_inexact(ensure_arraylike("lu_factor", a))
  lu_, pivots, _ = lax_linalg.lu(a)
  return lu_, pivots


def _lu_solve(lu_, permutation, b, trans):
  """Solves `a x = b`, `a^T x = b` (trans 1) or `a^H x = b` (trans 2) for one
  matrix `b` `(m, k)`, from the LU factors of `a` (`a[permutation] = L U`)."""
  if trans == 0:
    x = jnp.take(b, permutation, axis=0)
    x = lax_linalg.triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True)
    return lax_linalg.triangular_solve(lu_, x, left_side=True, lower=False)
  if trans in (1, 2):
    conjugate = trans == 2
    x = lax_linalg.triangular_solve(lu_, b, left_side=True, lower=False, transpose_a=True,
                                    conjugate_a=conjugate)
    x = lax_linalg.triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True,
                                    transpose_a=True, conjugate_a=conjugate)
    return jnp.take(x, jnp.argsort(permutation), axis=0)
  raise ValueError(f"'trans' value must be 0, 1, or 2, got {trans}")


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
  """Solves `a x = b` (`trans` 0), `a^T x = b` (1) or `a^H x = b` (2) from
  `(lu, piv) = lu_factor(a)`. `b` is `[..., m]` (one dimension fewer than
  `lu`) or `[..., m, k]`; batch dimensions broadcast."""
  del overwrite_b, check_finite
  lu_, pivots = lu_and_piv
  lu_, b = promote_dtypes_inexact(*ensure_arraylike("lu_solve", lu_, b))
  m = lu_.shape[-2]
  if lu_.ndim < 2 or lu_.shape[-1] != m:
    raise ValueError(f"last two dimensions of LU decomposition must be equal, got shape "
                     f"{lu_.shape}")
  permutation = lax_linalg.lu_pivots_to_permutation(jnp.asarray(pivots), m)
  if trans not in (0, 1, 2):
    raise ValueError(f"'trans' value must be 0, 1, or 2, got {trans}")
  vector = b.ndim == lu_.ndim - 1
  signature = "(m,m),(m),(m)->(m)" if vector else "(m,m),(m),(m,k)->(m,k)"
  if vector:
    solve_one = lambda lu_, p, b: _lu_solve(lu_, p, b[:, None], trans)[:, 0]
  else:
    solve_one = functools.partial(_lu_solve, trans=trans)
  return vectorize(solve_one, signature=signature)(lu_, permutation, b)


def lu(a, permute_l=False, overwrite_a=False, check_finite=True):
  """LU decomposition `a = P L U` of `[..., m, n]` `a`: `(P, L, U)`, or
  `(P @ L, U)` with `permute_l`; `P` a permutation matrix `[..., m, m]`
  (of `a`'s dtype), `L` `[..., m, k]` unit lower, `U` `[..., k, n]`,
  `k = min(m, n)`."""
  del overwrite_a, check_finite
  a, = promote_dtypes_inexact(ensure_arraylike("lu", a))
  lu_, _, permutation = lax_linalg.lu(a)
  m, n = a.shape[-2:]
  k = min(m, n)
  p = (permutation[..., None, :] == jnp.arange(m, dtype=permutation.dtype)[:, None])
  p = p.astype(a.dtype)
  lower = jnp.tril(lu_, -1)[..., :k] + jnp.eye(m, k, dtype=a.dtype)
  upper = jnp.triu(lu_)[..., :k, :]
  if permute_l:
    return jnp.matmul(p, lower, precision=lax.Precision.HIGHEST), upper
  return p, lower, upper


def qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
  """QR decomposition `a = Q R` (`a[..., :, P] = Q R` with `pivoting`).

  `mode`: "full" (`Q` `[..., m, m]`, `R` `[..., m, n]`), "economic" (`Q`
  `[..., m, k]`, `R` `[..., k, n]`, k = min(m, n)) or "r" (`R` alone, as a
  1-tuple, or `(R, P)`). Returns `(Q, R)` or `(Q, R, P)`; other modes raise
  ValueError.
  """
  del overwrite_a, lwork, check_finite
  if mode in ("full", "r"):
    full_matrices = True
  elif mode == "economic":
    full_matrices = False
  else:
    raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
  a, = promote_dtypes_inexact(ensure_arraylike("qr", a))
  q, r, *p = lax_linalg.qr(a, pivoting=pivoting, full_matrices=full_matrices)
  if mode == "r":
    return (r, *p)
  return (q, r, *p)


def qr_multiply(a, c, mode="right", pivoting=False, conjugate=False, overwrite_a=False,
                overwrite_c=False):
  """`Q @ c` (`mode="left"`) or `c @ Q` ("right"), `Q` (`m x k`, k = min(m,
  n)) from the economic QR decomposition of the `m x n` matrix `a`, without
  forming `Q` (`lax.linalg.ormqr`), and `R` (`k x n`): `(CQ, R)`, or `(CQ,
  R, P)` with `pivoting` (columns `P` of `a`). `conjugate` uses `conj(Q)`.
  `c` is `(k, p)` or `(k,)` for "left", `(p, m)` or `(m,)` for "right".
  """
  del overwrite_a, overwrite_c
  if mode not in ("left", "right"):
    raise ValueError(f"Mode argument can only be 'left' or 'right' but not '{mode}'")
  a, c = promote_dtypes_inexact(*ensure_arraylike("qr_multiply", a, c))
  if a.ndim != 2 or c.ndim not in (1, 2):
    raise ValueError(f"qr_multiply takes a 2-D `a` and a 1-D or 2-D `c`, got shapes {a.shape} "
                     f"and {c.shape}.")
  m, n = a.shape
  k = min(m, n)
  vector = c.ndim == 1
  c = c[:, None] if vector and mode == "left" else c[None, :] if vector else c
  if (mode == "left" and c.shape[0] != k) or (mode == "right" and c.shape[1] != m):
    raise ValueError(f"Array shapes are not compatible for Q @ c (mode='left') or c @ Q "
                     f"(mode='right'): a {a.shape}, c {c.shape}, mode {mode!r}.")
  outs = ()
  if pivoting:
    _, _, p = lax_linalg.qr(a, pivoting=True, full_matrices=False)
    a = a[:, p]
    outs = (p,)
  reflectors, taus = lax_linalg.geqrf(a)
  r = jnp.triu(reflectors[:k])
  if conjugate:
    c = jnp.conj(c)
  if mode == "left":   # Q c = Q_full [c; 0]
    cq = lax_linalg.ormqr(reflectors, taus, jnp.pad(c, ((0, m - k), (0, 0))))
  else:                # c Q = (c Q_full)[:, :k]
    cq = lax_linalg.ormqr(reflectors, taus, c, left=False)[:, :k]
  if conjugate:
    cq = jnp.conj(cq)
  if vector:
    cq = cq[:, 0] if mode == "left" else cq[0]
  return (cq, r, *outs)


def svd(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True,
        lapack_driver="gesdd"):
  """Singular value decomposition `a = U diag(s) V^H`: `(U, s, Vh)`, or `s`
  alone without `compute_uv` (see `jax.numpy.linalg.svd`)."""
  del overwrite_a, check_finite, lapack_driver
  a, = promote_dtypes_inexact(ensure_arraylike("svd", a))
  return lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


def eigh(a, b=None, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False,
         turbo=True, eigvals=None, type=1, check_finite=True):
  """Eigenvalues (ascending) and eigenvectors of Hermitian `a`: `(w, v)`, or
  `w` alone with `eigvals_only`; only the `lower` (else upper) triangle is
  read. The generalized problem (`b`), `type` other than 1 and `eigvals`
  raise NotImplementedError, as in JAX."""
  del overwrite_a, overwrite_b, turbo, check_finite
  if b is not None:
    raise NotImplementedError("Only the b=None case of eigh is implemented")
  if type != 1:
    raise NotImplementedError("Only the type=1 case of eigh is implemented.")
  if eigvals is not None:
    raise NotImplementedError("Only the eigvals=None case of eigh is implemented.")
  a, = promote_dtypes_inexact(ensure_arraylike("eigh", a))
  v, w = lax_linalg.eigh(a, lower=lower)
  return w if eigvals_only else (w, v)


def eigh_tridiagonal(d, e, *, eigvals_only=False, select="a", select_range=None, tol=None,
                     key=None):
  """Eigenvalues (ascending) and, unless `eigvals_only`, eigenvectors of the
  Hermitian tridiagonal matrix with diagonal `d` (n,) and off-diagonal `e`
  (n-1,) (below the diagonal; `conj(e)` above).

  `select`: "a" (all) or "i" (the eigenvalues `select_range[0]..
  select_range[1]`, inclusive, of the ascending order); "v" raises
  NotImplementedError, others ValueError. `d` and `e` must share a float or
  complex dtype (TypeError). Values: those of the dense matrix's
  eigendecomposition (`lax.linalg.eigh`), accurate to the dtype; `tol` (a
  bisection tolerance in JAX) and `key` (JAX's random start for inverse
  iteration) do not change them and are unused.
  """
  del tol, key
  alpha, beta = ensure_arraylike("eigh_tridiagonal", d, e)
  if alpha.dtype != beta.dtype:
    raise TypeError("diagonal and off-diagonal values must have same dtype, got "
                    f"{alpha.dtype} and {beta.dtype}")
  if not dtypes.is_inexact(alpha.dtype) or alpha.dtype.itemsize < 4:
    raise TypeError("Only float32 and float64 inputs are supported as inputs to "
                    "jax.scipy.linalg.eigh_tridiagonal, got "
                    f"{alpha.dtype} and {beta.dtype}")
  n = alpha.shape[0]
  if select == "a":
    lo, hi = 0, n
  elif select == "i":
    if select_range is None:
      raise ValueError("for select='i', select_range must be specified.")
    if select_range[0] > select_range[1]:
      raise ValueError("Got empty index range in select_range.")
    lo, hi = int(select_range[0]), int(select_range[1]) + 1
  elif select == "v":
    raise NotImplementedError("eigh_tridiagonal(..., select='v') is not implemented")
  else:
    raise ValueError("'select must have a value in {'a', 'i', 'v'}.")
  t = jnp.diag(alpha) + jnp.diag(beta, -1) + jnp.diag(jnp.conj(beta), 1)
  v, w = lax_linalg.eigh(t, symmetrize_input=False)
  w, v = w[lo:hi], v[:, lo:hi]
  return w if eigvals_only else (w, v)


def schur(a, output="real"):
  """Schur decomposition `a = Z T Z^H`: `(T, Z)`. `output="real"` keeps a
  real `a` real (`T` quasi-triangular, see `lax.linalg.schur`);
  "complex" converts `a` to complex first (`T` triangular); others raise
  ValueError."""
  if output not in ("real", "complex"):
    raise ValueError(f"Expected 'output' to be either 'real' or 'complex', got output={output!r}.")
  a = jnp.asarray(a)
  if output == "complex":
    a = a.astype(dtypes.to_complex_dtype(to_inexact_dtype(a.dtype)))
  return lax_linalg.schur(a)


def rsf2csf(T, Z, check_finite=True):
  """The complex Schur form `(T', Z')` of a real Schur form `(T, Z)` (single
  matrices): each 2 x 2 block of `T` whose subdiagonal entry is not
  negligible (`> eps (|T[m-1, m-1]| + |T[m, m]|)`) is triangularized by a
  Givens rotation built from one of its eigenvalues, applied to `T` and
  `Z`, and the subdiagonal set to zero; `Z' T' Z'^H = Z T Z^H`."""
  del check_finite
  t, z = jnp.asarray(T), jnp.asarray(Z)
  if t.ndim != 2 or t.shape[0] != t.shape[1]:
    raise ValueError("Input 'T' must be square.")
  if z.ndim != 2 or z.shape[0] != z.shape[1]:
    raise ValueError("Input 'Z' must be square.")
  if t.shape[0] != z.shape[0]:
    raise ValueError(f"Input array shapes must match: Z: {z.shape} vs. T: {t.shape}")
  dtype = dtypes.to_complex_dtype(jnp.result_type(t, z, np.float32))
  t, z = t.astype(dtype), z.astype(dtype)
  eps = dtypes.finfo(dtype).eps
  n = t.shape[0]
  for m in range(n - 1, 0, -1):
    a, b, c, d = t[m - 1, m - 1], t[m - 1, m], t[m, m - 1], t[m, m]
    mu = (a - d) / 2 + jnp.sqrt(((a - d) / 2) ** 2 + b * c)   # an eigenvalue, minus d
    r = jnp.sqrt(jnp.abs(mu) ** 2 + jnp.abs(c) ** 2).astype(dtype)
    g = jnp.stack([jnp.stack([jnp.conj(mu / r), c / r]), jnp.stack([-c / r, mu / r])])
    rotated_t = t.at[m - 1:m + 1, m - 1:].set(g @ t[m - 1:m + 1, m - 1:])
    rotated_t = rotated_t.at[:m + 1, m - 1:m + 1].set(rotated_t[:m + 1, m - 1:m + 1] @ _mH(g))
    rotated_z = z.at[:, m - 1:m + 1].set(z[:, m - 1:m + 1] @ _mH(g))
    rotate = jnp.abs(c) > eps * (jnp.abs(a) + jnp.abs(d))
    t, z = jnp.where(rotate, rotated_t, t), jnp.where(rotate, rotated_z, z)
    t = t.at[m, m - 1].set(0)
  return t, z


def hessenberg(a, *, calc_q=False, overwrite_a=False, check_finite=True):
  """Hessenberg form `a = Q H Q^H`: `H` (zero below the first subdiagonal),
  or `(H, Q)` with `calc_q` (see `lax.linalg.hessenberg`)."""
  del overwrite_a, check_finite
  a, = promote_dtypes_inexact(ensure_arraylike("hessenberg", a))
  n = a.shape[-1]
  if n == 0:
    return (jnp.zeros_like(a), jnp.zeros_like(a)) if calc_q else jnp.zeros_like(a)
  out, taus = lax_linalg.hessenberg(a)
  h = jnp.triu(out, -1)
  if not calc_q:
    return h
  q = lax_linalg.householder_product(out[..., 1:, :-1], taus)
  q = jnp.pad(q, [(0, 0)] * (a.ndim - 2) + [(1, 0), (1, 0)]).at[..., 0, 0].set(1)
  return h, q


def polar(a, side="right", *, method="qdwh", eps=None, max_iterations=None):
  """Polar decomposition: `(u, p)` with `a = u p` (`side="right"`, `p`
  `n x n`) or `a = p u` ("left", `p` `m x m`), `u` with orthonormal columns
  (rows when n > m), `p` Hermitian positive semidefinite.

  `method="qdwh"` (`lax.linalg.qdwh`; `eps` and `max_iterations` passed
  on) needs m >= n for "right" and m < n for "left" (else
  NotImplementedError); "svd" forms `u = U V^H` from the SVD. A 2-D `a`
  only (ValueError).
  """
  arr = jnp.asarray(a)
  if arr.ndim != 2:
    raise ValueError("The input `a` must be a 2-D array.")
  if side not in ("right", "left"):
    raise ValueError("The argument `side` must be either 'right' or 'left'.")
  m, n = arr.shape
  if method == "qdwh":
    if m >= n and side == "right":
      unitary, posdef, _, _ = lax_linalg.qdwh(arr, max_iterations=max_iterations, eps=eps)
    elif m < n and side == "left":
      unitary, posdef, _, _ = lax_linalg.qdwh(_mH(arr), max_iterations=max_iterations, eps=eps)
      unitary, posdef = _mH(unitary), _mH(posdef)
    else:
      raise NotImplementedError("method='qdwh' only supports mxn matrices where m < n where "
                                "side='right' and m >= n side='left', got "
                                f"{arr.shape} with side={side!r}")
  elif method == "svd":
    u_svd, s_svd, vh_svd = lax_linalg.svd(arr, full_matrices=False)
    s_svd = s_svd.astype(u_svd.dtype)
    unitary = u_svd @ vh_svd
    if side == "right":
      posdef = (_mH(vh_svd) * s_svd[None, :]) @ vh_svd
    else:
      posdef = (u_svd * s_svd[None, :]) @ _mH(u_svd)
  else:
    raise ValueError(f"Unknown polar decomposition method {method}.")
  return unitary, posdef


# --- solvers and matrix functions -----------------------------------------------------------

def det(a, overwrite_a=False, check_finite=True):
  """Determinant (see `jax.numpy.linalg.det`)."""
  del overwrite_a, check_finite
  return np_linalg.det(a)


def inv(a, overwrite_a=False, check_finite=True):
  """Inverse of square `a` (see `jax.numpy.linalg.inv`)."""
  del overwrite_a, check_finite
  return np_linalg.inv(a)


def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, debug=False,
          check_finite=True, assume_a="gen"):
  """Solves `a x = b`. `assume_a`: "gen", "sym" or "her" solve by LU (see
  `jax.numpy.linalg.solve`); "pos" by the Cholesky factor of the `lower`
  (else upper) triangle of `a`, as a `custom_linear_solve` (derivatives are
  solves with the same factor); others raise ValueError."""
  del overwrite_a, overwrite_b, debug, check_finite
  valid = ["gen", "sym", "her", "pos"]
  if assume_a not in valid:
    raise ValueError(f"Expected assume_a to be one of {valid}; got {assume_a!r}")
  if assume_a != "pos":
    return np_linalg.solve(a, b)
  a, b = promote_dtypes_inexact(*ensure_arraylike("solve", a, b))
  _check_solve_shapes(a, b)

  def solve_one(a, b):
    factor = cholesky(lax.stop_gradient(a), lower=lower)
    matvec = lambda x: lax.dot_general(a, x, (((1,), (0,)), ((), ())),
                                       precision=lax.Precision.HIGHEST)
    return lax.custom_linear_solve(matvec, b, lambda _, x: _cho_solve(factor, x, lower),
                                   symmetric=True)

  if b.ndim == a.ndim - 1:
    return vectorize(solve_one, signature="(m,m),(m)->(m)")(a, b)
  return vectorize(vmap(solve_one, (None, 1), 1), signature="(m,m),(m,k)->(m,k)")(a, b)


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     debug=None, check_finite=True):
  """Solves `op(a) x = b` for triangular `a` (its `lower`, else upper,
  triangle; ones on the diagonal with `unit_diagonal`): `trans` 0 or "N"
  `op(a) = a`, 1 or "T" `a^T`, 2 or "C" `a^H`; others raise ValueError. `b`
  is `[..., m]` (one dimension fewer than `a`) or `[..., m, k]`."""
  del overwrite_b, debug, check_finite
  if trans in (0, "N"):
    transpose_a, conjugate_a = False, False
  elif trans in (1, "T"):
    transpose_a, conjugate_a = True, False
  elif trans in (2, "C"):
    transpose_a, conjugate_a = True, True
  else:
    raise ValueError(f"Invalid 'trans' value {trans}")
  a, b = promote_dtypes_inexact(*ensure_arraylike("solve_triangular", a, b))
  vector = b.ndim == a.ndim - 1
  out = lax_linalg.triangular_solve(a, b[..., None] if vector else b, left_side=True,
                                    lower=lower, transpose_a=transpose_a,
                                    conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)
  return out[..., 0] if vector else out


def solve_sylvester(A, B, C, *, method="schur", tol=1e-8):
  """Solves the Sylvester equation `A X + X B = C` (`A` m x m, `B` n x n, `C`
  m x n) by the Bartels-Stewart method: complex Schur forms `A = U R U^H`,
  `B = V S V^H`, then `R Y + Y S = U^H C V` column by column (triangular
  solves), `X = U Y V^H` (real for real inputs). Where `A` and `-B` have
  eigenvalues closer than `tol` (`min |R_ii + S_jj| < tol`: no unique
  solution), the result is NaN. `method` other than "schur" raises
  ValueError.
  """
  if method != "schur":
    raise ValueError(f"method must be 'schur', got {method!r}")
  a, b, c = promote_dtypes_inexact(*ensure_arraylike("solve_sylvester", A, B, C))
  if a.ndim != 2 or b.ndim != 2 or a.shape[0] != a.shape[1] or b.shape[0] != b.shape[1]:
    raise ValueError(f"A and B must be square matrices, got shapes {a.shape} and {b.shape}.")
  if c.shape != (a.shape[0], b.shape[0]):
    raise ValueError(f"C must have shape {(a.shape[0], b.shape[0])}, got {c.shape}.")
  r, u = schur(a, output="complex")
  s, v = schur(b, output="complex")
  f = _mH(u) @ c.astype(u.dtype) @ v
  m, n = c.shape
  columns = []
  for k in range(n):
    rhs = f[:, k]
    if k:
      rhs = rhs - jnp.stack(columns, axis=1) @ s[:k, k]
    columns.append(solve_triangular(r + s[k, k] * jnp.eye(m, dtype=r.dtype), rhs))
  y = jnp.stack(columns, axis=1) if n else f
  x = u @ y @ _mH(v)
  gap = jnp.min(jnp.abs(jnp.diagonal(r)[:, None] + jnp.diagonal(s)[None, :]), initial=np.inf)
  x = jnp.where(gap < tol, np.nan, x)
  return x if dtypes.is_complex(c.dtype) else jnp.real(x)


def _pade(a, b):
  """`(U, V)` of the diagonal Pade approximant of exp with coefficients `b`:
  `U` the odd part, `V` the even part (exp(a) ~ (V - U)^-1 (V + U))."""
  dot = functools.partial(jnp.dot, precision=lax.Precision.HIGHEST)
  ident = jnp.eye(*a.shape, dtype=a.dtype)
  a2 = dot(a, a)
  if len(b) == 14:   # degree 13, from a^2, a^4, a^6
    a4 = dot(a2, a2)
    a6 = dot(a4, a2)
    u = dot(a, dot(a6, b[13] * a6 + b[11] * a4 + b[9] * a2)
            + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * ident)
    v = dot(a6, b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 \
        + b[0] * ident
    return u, v
  powers = [ident, a2]
  while len(powers) < len(b) // 2:
    powers.append(dot(powers[-1], a2))
  u = dot(a, sum(b[2 * i + 1] * p for i, p in enumerate(powers)))
  v = sum(b[2 * i] * p for i, p in enumerate(powers))
  return u, v


_PADE_COEFFICIENTS = {
    3: (120., 60., 12., 1.),
    5: (30240., 15120., 3360., 420., 30., 1.),
    7: (17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.),
    9: (17643225600., 8821612800., 2075673600., 302702400., 30270240., 2162160., 110880.,
        3960., 90., 1.),
    13: (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
         129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
         40840800., 960960., 16380., 182., 1.),
}

# Higham's thresholds on the 1-norm for each degree; the last degree scales
# by 2^-s to its threshold ("maxnorm").
_EXPM_DEGREES = {
    64: ((3, 5, 7, 9, 13), (1.495585217958292e-002, 2.539398330063230e-001,
                            9.504178996162932e-001, 2.097847961257068e+000), 5.371920351148152),
    32: ((3, 5, 7), (4.258730016922831e-001, 1.880152677804762e+000), 3.925724783138660),
}


def _expm_one(a, upper_triangular, max_squarings):
  """exp of one square matrix by scaling and squaring (see `expm`)."""
  degrees, thresholds, maxnorm = _EXPM_DEGREES[dtypes.finfo(a.dtype).bits]
  norm = np_linalg.norm(a, 1)
  squarings = jnp.maximum(0, jnp.floor(jnp.log2(norm / maxnorm)))
  # below the last threshold, squarings is 0: only the top degree meets a scaled `a`
  scaled = a / (2 ** squarings).astype(a.dtype)
  index = jnp.digitize(norm, jnp.asarray(thresholds, norm.dtype))
  u, v = lax.switch(index, [functools.partial(_pade, b=_PADE_COEFFICIENTS[d]) for d in degrees],
                    scaled)
  p, q = u + v, v - u
  r = solve_triangular(q, p) if upper_triangular else np_linalg.solve(q, p)
  squared = lax.fori_loop(0, max_squarings, lambda i, r: jnp.where(
      i < squarings, jnp.dot(r, r, precision=lax.Precision.HIGHEST), r), r)
  return jnp.where(squarings > max_squarings, np.nan, squared)


def expm(A, *, upper_triangular=False, max_squarings=16):
  """Matrix exponential of `[..., n, n]` `A`, by scaling and squaring with
  Pade approximants (Higham 2005, as JAX): with `s = max(0,
  floor(log2(norm1(A) / maxnorm)))`, the degree is the least of 3, 5, 7, 9,
  13 (3, 5, 7 for 32-bit dtypes) whose threshold exceeds `norm1(A)`, the
  top degree applied to `A / 2^s` then squared `s` times; `s >
  max_squarings` gives NaN. `upper_triangular` solves the Pade quotient by
  a triangular solve."""
  A, = promote_dtypes_inexact(ensure_arraylike("expm", A))
  if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
    raise ValueError(f"Expected A to be a (batched) square matrix, got A.shape={A.shape}.")
  if dtypes.finfo(A.dtype).bits not in _EXPM_DEGREES:
    raise TypeError(f"A.dtype={A.dtype} is not supported.")
  return vectorize(functools.partial(_expm_one, upper_triangular=upper_triangular,
                                     max_squarings=max_squarings),
                   signature="(n,n)->(n,n)")(A)


def expm_frechet(A, E, *, method=None, compute_expm=True):
  """The Frechet derivative of `expm` at `A` in the direction `E` (the JVP of
  `expm`): `(expm(A), derivative)`, or the derivative alone without
  `compute_expm`. `method` is unused."""
  del method
  a, e = jnp.asarray(A), jnp.asarray(E)
  if a.ndim < 2 or a.shape[-2] != a.shape[-1]:
    raise ValueError(f"expected A to be a (batched) square matrix, got A.shape={a.shape}")
  if e.ndim < 2 or e.shape[-2] != e.shape[-1]:
    raise ValueError(f"expected E to be a (batched) square matrix, got E.shape={e.shape}")
  if a.shape != e.shape:
    raise ValueError(f"expected A and E to be the same shape, got A.shape={a.shape} "
                     f"E.shape={e.shape}")
  expm_a, derivative = jvp(functools.partial(expm, max_squarings=16), (a,), (e,))
  return (expm_a, derivative) if compute_expm else derivative


def _sqrtm_triu(t):
  """The upper-triangular square root of upper-triangular `t` (Bjorck and
  Hammarling 1983): diagonal `sqrt(t_ii)`, then column by column, bottom
  up, `u_ij = (t_ij - sum_k u_ik u_kj) / (u_ii + u_jj)` (zero where the
  numerator is exactly zero)."""
  n = t.shape[0]
  diag = jnp.sqrt(jnp.diagonal(t))
  u = jnp.diag(diag)
  for j in range(n):
    for i in range(j - 1, -1, -1):
      s = u[i, i + 1:j] @ u[i + 1:j, j] if j - i > 1 else jnp.zeros((), t.dtype)
      value = jnp.where(t[i, j] == s, 0, (t[i, j] - s) / (diag[i] + diag[j]))
      u = u.at[i, j].set(value)
  return u


def sqrtm(A, blocksize=1):
  """Principal square root of one square matrix (complex result), by the
  complex Schur method: `Z sqrt(T) Z^H` with `T, Z = schur(A, "complex")`
  (see `_sqrtm_triu`). `blocksize > 1` raises NotImplementedError."""
  if blocksize > 1:
    raise NotImplementedError("Blocked version is not implemented yet.")
  t, z = schur(A, output="complex")
  dot = functools.partial(jnp.matmul, precision=lax.Precision.HIGHEST)
  return dot(dot(z, _sqrtm_triu(t)), _mH(z))


def funm(A, func, disp=True):
  """`func` of one square matrix by the Schur-Parlett method (Golub and Van
  Loan, Algorithm 11.1.1): `T, Z` the complex Schur form (`schur` then
  `rsf2csf`), `F` upper triangular with `F_ii = func(T_ii)` and the rest by
  Parlett's recurrence, result `Z F Z^H` (complex). With `disp` False,
  `(F, err)`, `err` SciPy's error estimate `min(1, max(tol, tol / minden *
  norm1(triu(T, 1))))` (inf for an infinite result), `minden` the least
  eigenvalue gap met (tol where zero)."""
  a = jnp.asarray(A)
  if a.ndim != 2 or a.shape[0] != a.shape[1]:
    raise ValueError("expected square array_like input")
  t, z = rsf2csf(*schur(a))
  n = t.shape[0]
  f = jnp.diag(jnp.asarray(func(jnp.diagonal(t))).astype(t.dtype))
  minden = jnp.abs(t[0, 0])
  for p in range(1, n):
    for i in range(n - p):
      j = i + p
      s = t[i, j] * (f[j, j] - f[i, i]) + t[i, i + 1:j] @ f[i + 1:j, j] \
          - f[i, i + 1:j] @ t[i + 1:j, j]
      den = t[j, j] - t[i, i]
      f = f.at[i, j].set(jnp.where(den != 0, s / den, s))
      minden = jnp.minimum(minden, jnp.abs(den))
  f = z @ f @ _mH(z)
  if disp:
    return f
  tol = dtypes.finfo(f.dtype).eps
  minden = jnp.where(minden == 0, tol, minden)
  err = jnp.where(jnp.any(jnp.isinf(f)), np.inf,
                  jnp.minimum(1, jnp.maximum(tol, (tol / minden)
                                             * np_linalg.norm(jnp.triu(t, 1), 1))))
  return f, err


# --- special matrices -------------------------------------------------------------------

def block_diag(*arrs):
  """The block-diagonal matrix of the arrays (at most 2-D each; 0-D and 1-D
  ones are rows), promoted to one dtype; no arrays give a `(1, 0)` array."""
  if not arrs:
    arrs = (jnp.zeros((1, 0)),)
  arrs = promote_dtypes(*(ensure_arraylike("block_diag", a) for a in arrs))
  bad = [i for i, a in enumerate(arrs) if a.ndim > 2]
  if bad:
    raise ValueError("Arguments to jax.scipy.linalg.block_diag must have at most 2 "
                     f"dimensions, got {arrs[bad[0]]} at argument {bad[0]}.")
  arrs = [jnp.atleast_2d(a) for a in arrs]
  columns = sum(a.shape[1] for a in arrs)
  rows, start = [], 0
  for a in arrs:
    rows.append(jnp.pad(a, ((0, 0), (start, columns - start - a.shape[1]))))
    start += a.shape[1]
  return jnp.concatenate(rows, axis=0)


def toeplitz(c, r=None):
  """The Toeplitz matrix with first column `c` and first row `r` (`r[0]` is
  ignored; `r` defaults to `conj(c)`): `A[i, j] = c[i - j]` for i >= j,
  `r[j - i]` above. `[..., m]` and `[..., n]` give `[..., m, n]`, batch
  dimensions broadcast; 0-D inputs count as 1-D."""
  c, r = _column_and_row("toeplitz", c, r, jnp.conj)
  return vectorize(_toeplitz, signature="(m),(n)->(m,n)")(c, r)


def _column_and_row(name, c, r, default):
  """`c` and `r` (`default(c)` when None) at least 1-D, of one dtype."""
  if r is None:
    c = jnp.atleast_1d(ensure_arraylike(name, c))
    r = default(c)
  else:
    c, r = ensure_arraylike(name, c, r)
  return promote_dtypes(jnp.atleast_1d(c), jnp.atleast_1d(r))


def _toeplitz(c, r):
  """`A[i, j]` = `[c reversed, r[1:]][m - 1 - i + j]`."""
  m, n = c.shape[0], r.shape[0]
  if m == 0:
    return jnp.zeros((0, n), c.dtype)
  return jnp.concatenate([c[::-1], r[1:]])[m - 1 - np.arange(m)[:, None] + np.arange(n)]


def hankel(c, r=None):
  """The Hankel matrix with first column `c` and last row `r` (`r[0]` is
  ignored; `r` defaults to zeros): `A[i, j] = c[i + j]` while i + j < m,
  else `r[i + j - m + 1]`. `[..., m]` and `[..., n]` give `[..., m, n]`."""
  c, r = _column_and_row("hankel", c, r, jnp.zeros_like)
  return vectorize(_hankel, signature="(m),(n)->(m,n)")(c, r)


def _hankel(c, r):
  """`A[i, j]` = `[c, r[1:]][i + j]`."""
  m, n = c.shape[0], r.shape[0]
  return jnp.concatenate([c, r[1:]])[np.arange(m)[:, None] + np.arange(n)]


def circulant(c):
  """The circulant matrix with first column `c`: `A[i, j] = c[(i - j) mod n]`;
  `[..., n]` gives `[..., n, n]`."""
  c = jnp.atleast_1d(ensure_arraylike("circulant", c))
  n = c.shape[-1]
  return jnp.take(c, (np.arange(n)[:, None] - np.arange(n)[None, :]) % max(n, 1), axis=-1)


def companion(a):
  """The companion matrix of the polynomial `a` (coefficients, highest
  degree first): first row `-a[1:] / a[0]`, ones on the subdiagonal;
  `[..., N]` (N >= 2, else ValueError) gives `[..., N-1, N-1]`, inexact.
  A zero leading coefficient gives inf/NaN."""
  a, = promote_dtypes_inexact(jnp.atleast_1d(ensure_arraylike("companion", a)))
  n = a.shape[-1]
  if n < 2:
    raise ValueError("The length of `a` along the last axis must be at least 2.")
  first_row = -a[..., 1:] / a[..., :1]
  below = jnp.broadcast_to(jnp.eye(n - 2, n - 1, dtype=a.dtype), a.shape[:-1] + (n - 2, n - 1))
  return jnp.concatenate([first_row[..., None, :], below], axis=-2)


def fiedler(a):
  """The Fiedler matrix `|a[i] - a[j]|` of `[..., n]` `a` (`[..., n, n]`)."""
  a = jnp.atleast_1d(ensure_arraylike("fiedler", a))
  return jnp.abs(a[..., :, None] - a[..., None, :])


def fiedler_companion(a):
  """The Fiedler companion matrix of the polynomial `a` (highest degree
  first): pentadiagonal, its eigenvalues the roots, `[..., N]` to `[..., N-1,
  N-1]` (empty for N == 1; N == 0 raises ValueError), inexact. With `b = a /
  a[0]`: `c[0, 0] = -b[1]`, `c[1, 0] = 1`, `-b[2::2]` at (0, 1), (2, 3), ...,
  ones at (0, 2), (2, 4), ..., `-b[3::2]` at (2, 1), (4, 3), ..., ones at
  (3, 1), (5, 3), ..., zeros elsewhere. A zero leading coefficient gives
  inf/NaN."""
  a, = promote_dtypes_inexact(jnp.atleast_1d(ensure_arraylike("fiedler_companion", a)))
  if a.shape[-1] == 0:
    raise ValueError("fiedler_companion requires the last axis of 'a' to have nonzero length, "
                     f"but got an array of shape {a.shape}.")
  b = a / a[..., :1]
  n = a.shape[-1] - 1
  c = jnp.zeros(a.shape[:-1] + (n, n), a.dtype)
  if n == 0:
    return c
  r = np.arange
  c = c.at[..., r(3, n, 2), r(1, n - 2, 2)].set(1)
  c = c.at[..., r(2, n, 2), r(1, n - 1, 2)].set(-b[..., 3::2])
  c = c.at[..., r(0, n - 2, 2), r(2, n, 2)].set(1)
  c = c.at[..., r(0, n - 1, 2), r(1, n, 2)].set(-b[..., 2::2])
  c = c.at[..., 0, 0].set(-b[..., 1])
  return c.at[..., 1, 0].set(1) if n > 1 else c


def leslie(f, s):
  """The Leslie matrix: first row the fecundities `f` `[..., N]`, the
  survival rates `s` `[..., N-1]` (N >= 2) on the subdiagonal; `[..., N,
  N]`, batch dimensions broadcast, dtypes promoted."""
  f, s = promote_dtypes(*(jnp.atleast_1d(x) for x in ensure_arraylike("leslie", f, s)))
  if s.shape[-1] == 0:
    raise ValueError("The length of s must be at least 1.")
  if s.shape[-1] != f.shape[-1] - 1:
    raise ValueError("Incorrect lengths for f and s. The length of s along the last axis "
                     "must be one less than the length of f.")
  n = f.shape[-1]
  batch = jnp.broadcast_shapes(f.shape[:-1], s.shape[:-1])
  f, s = jnp.broadcast_to(f, batch + (n,)), jnp.broadcast_to(s, batch + (n - 1,))
  below = jnp.pad(jnp.vectorize(jnp.diag, signature="(k)->(k,k)")(s),
                  [(0, 0)] * len(batch) + [(0, 0), (0, 1)])
  return jnp.concatenate([f[..., None, :], below], axis=-2)


def dft(n, scale=None, *, dtype=None):
  """The n x n discrete Fourier transform matrix `exp(-2 pi i j k / n)`,
  divided by `sqrt(n)` (`scale="sqrtn"`) or `n` ("n"); other scales raise
  ValueError. `dtype` defaults to the default complex dtype."""
  if scale not in (None, "sqrtn", "n"):
    raise ValueError(f"scale must be None, 'sqrtn', or 'n'; {scale!r} is not valid.")
  n = operator.index(n)
  dtype = dtypes.canonicalize_dtype(np.complex128 if dtype is None else dtype)
  k = np.arange(n)
  m = np.exp(-2j * np.pi * ((k[:, None] * k[None, :]) % max(n, 1)) / max(n, 1))
  if scale == "sqrtn":
    m = m / math.sqrt(n)
  elif scale == "n":
    m = m / n
  return jnp.asarray(m, dtype)


def hadamard(n, dtype=int):
  """The n x n Hadamard matrix of Sylvester's construction (n a power of 2,
  else ValueError), of `dtype` (canonicalized: int32 by default)."""
  n = operator.index(n)
  if n < 1 or n & (n - 1):
    raise ValueError("n must be an positive integer, and n must be a power of 2")
  h = np.ones((1, 1))
  while h.shape[0] < n:
    h = np.block([[h, h], [h, -h]])
  return jnp.asarray(h, dtypes.canonicalize_dtype(dtype))


def helmert(n, full=False):
  """The Helmert matrix of order n (orthogonal): with `full`, the n x n
  matrix whose first row is `1 / sqrt(n)`; otherwise its last n - 1 rows.
  Row i >= 1: `1 / sqrt(i (i + 1))` in its first i columns and `-i /
  sqrt(i (i + 1))` in column i. Default float dtype."""
  n = operator.index(n)
  h = np.tril(np.ones((n, n)), -1) - np.diag(np.arange(n))
  d = np.arange(n) * np.arange(1, n + 1)
  h[0] = 1
  d[0] = n
  h = h / np.sqrt(d)[:, None]
  return jnp.asarray(h if full else h[1:], dtypes.canonicalize_dtype(np.float64))


def hilbert(n):
  """The n x n Hilbert matrix `1 / (i + j + 1)`, of the default float dtype."""
  i = lax.broadcasted_iota(dtypes.canonicalize_dtype(np.float64), (n, 1), 0)
  return 1 / (i + i.T + 1)


def invhilbert(n):
  """The inverse of the n x n Hilbert matrix: `(-1)^(i+j) (i + j + 1)
  C(n+i, n-j-1) C(n+j, n-i-1) C(i+j, i)^2`, exact integers rounded once to
  the default float dtype (they exceed 2^53 from n = 14 on)."""
  n = operator.index(n)
  out = np.zeros((n, n))
  for i in range(n):
    for j in range(n):
      out[i, j] = float((-1) ** (i + j) * (i + j + 1) * math.comb(n + i, n - j - 1)
                        * math.comb(n + j, n - i - 1) * math.comb(i + j, i) ** 2)
  return jnp.asarray(out, dtypes.canonicalize_dtype(np.float64))


def _pascal_lower(n, signed):
  """`C(i, j)` (times `(-1)^(i+j)` if `signed`) as float64, zero above the diagonal."""
  return np.array([[(-1) ** ((i + j) % 2 if signed else 0) * math.comb(i, j)
                    for j in range(n)] for i in range(n)], np.float64).reshape(n, n)


def _pascal_kind(kind):
  kind = "symmetric" if kind is None else kind
  valid = ["symmetric", "lower", "upper"]
  if kind not in valid:
    raise ValueError(f"Expected kind to be on of: {valid}; got {kind}")
  return kind


def pascal(n, kind=None):
  """The n x n Pascal matrix: "lower" `C(i, j)`, "upper" its transpose,
  "symmetric" (the default) `C(i + j, i)` = lower @ upper. float32, as
  JAX's (exact while the entries stay below 2^24)."""
  kind = _pascal_kind(kind)
  lower = _pascal_lower(operator.index(n), False)
  p = {"lower": lower, "upper": lower.T, "symmetric": lower @ lower.T}[kind]
  return jnp.asarray(p, np.float32)


def invpascal(n, kind=None):
  """The inverse of `pascal(n, kind)`: "lower" `(-1)^(i+j) C(i, j)`, "upper"
  its transpose, "symmetric" (the default) `inv(lower)^T inv(lower)`;
  float32 like `pascal`."""
  kind = _pascal_kind(kind)
  lower = _pascal_lower(operator.index(n), True)
  p = {"lower": lower, "upper": lower.T, "symmetric": lower.T @ lower}[kind]
  return jnp.asarray(p, np.float32)


def convolution_matrix(a, n, mode="full"):
  """The Toeplitz matrix `A` with `A @ v == jnp.convolve(a, v, mode)` for
  `v` of length `n` (n >= 1): `[..., m]` `a` gives `[..., k, n]` with k =
  m + n - 1 ("full"), max(m, n) ("same") or max(m, n) - min(m, n) + 1
  ("valid"); others raise ValueError."""
  n = operator.index(n)
  if n <= 0:
    raise ValueError(f"n must be a positive integer; got {n}.")
  a = ensure_arraylike("convolution_matrix", a)
  if a.ndim == 0:
    raise ValueError("convolution_matrix: a must be at least 1-dimensional, got a scalar.")
  m = a.shape[-1]
  if m < 1:
    raise ValueError(f"len(a) must be at least 1; got shape {a.shape}.")
  if mode not in ("full", "valid", "same"):
    raise ValueError(f"mode must be one of 'full', 'valid', 'same'; got {mode!r}.")
  widths = [(0, 0)] * (a.ndim - 1) + [(0, n - 1)]
  az, raz = jnp.pad(a, widths), jnp.pad(jnp.flip(a, axis=-1), widths)
  length = m + n - 1
  if mode == "same":
    trim = min(n, m) - 1
    start, end = trim // 2, trim - trim // 2
  elif mode == "valid":
    start = end = min(n, m) - 1
  else:
    start = end = 0
  return toeplitz(az[..., start:length - end], raz[..., length - n - start:length - start])
