"""`refimpl.numpy.linalg`: linear algebra, as `jax.numpy.linalg`.

Built on `refimpl.lax.linalg` as JAX builds it: `det` and `slogdet` via
`lu`; `solve` as a `lax.custom_linear_solve` whose solvers reuse one `lu`
factorization (a row permutation and two `triangular_solve`s), so that its
derivatives are solves too; `inv` as a solve against the identity; `pinv`,
`lstsq`, `matrix_rank`, `cond` and the 2/nuclear norms via `svd`. Inputs
are promoted to an inexact dtype. Matrices are the last two axes; leading
axes are batch axes.

As in JAX, `slogdet`, `det` (of matrices larger than 3x3) and `pinv` have
custom JVP rules: d logabsdet = trace(solve(a, da)); d det =
trace(adjugate(a) da), well defined for singular matrices; and the
Golub-Pereyra derivative of the pseudo-inverse.
"""

import functools
import math
import operator
import warnings
from typing import NamedTuple

import numpy as np

from refimpl import dtypes, lax
from refimpl.custom_derivatives import custom_jvp
from refimpl.lax import linalg as lax_linalg
from refimpl.lax.shapes import canonicalize_axis
from refimpl.numpy import creation, manipulation, products, reductions, selection, ufuncs
from refimpl.numpy.creation import ensure_arraylike
from refimpl.numpy.util import promote_dtypes_inexact
from refimpl.numpy.vectorize import vectorize
from refimpl.vectorize import vmap

__all__ = ['cholesky', 'cond', 'cross', 'det', 'diagonal', 'eig', 'eigh', 'eigvals',
           'eigvalsh', 'inv', 'lstsq', 'matmul', 'matrix_norm', 'matrix_power',
           'matrix_rank', 'matrix_transpose', 'multi_dot', 'norm', 'outer', 'pinv', 'qr',
           'slogdet', 'solve', 'svd', 'svdvals', 'tensordot', 'tensorinv', 'tensorsolve',
           'trace', 'vecdot', 'vector_norm']


class EighResult(NamedTuple):
  eigenvalues: object
  eigenvectors: object


class QRResult(NamedTuple):
  Q: object
  R: object


class SlogdetResult(NamedTuple):
  sign: object
  logabsdet: object


class SVDResult(NamedTuple):
  U: object
  S: object
  Vh: object


def _H(x):
  return ufuncs.conjugate(manipulation.matrix_transpose(x))


# --- decompositions -------------------------------------------------------------------

def cholesky(a, *, upper=False, symmetrize_input=True):
  """Cholesky factor of Hermitian positive-definite `a`: lower `L` with
  `a = L L^H` (or upper `U = L^H` with `upper`). NaNs if `a` is not positive
  definite."""
  a = ensure_arraylike("jnp.linalg.cholesky", a)
  a, = promote_dtypes_inexact(a)
  factor = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
  return _H(factor) if upper else factor


def qr(a, mode="reduced"):
  """QR decomposition. `mode`: "reduced" (Q `[..., m, k]`, R `[..., k, n]`,
  `k = min(m, n)`), "complete" (Q `[..., m, m]`, R `[..., m, n]`), "r" (R
  only) or "raw" (LAPACK's `(a^T, taus)` compact form)."""
  a = ensure_arraylike("jnp.linalg.qr", a)
  a, = promote_dtypes_inexact(a)
  if mode == "raw":
    a, taus = lax_linalg.geqrf(a)
    return QRResult(manipulation.matrix_transpose(a), taus)
  if mode in ("reduced", "r", "full"):
    full_matrices = False
  elif mode == "complete":
    full_matrices = True
  else:
    raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
  q, r = lax_linalg.qr(a, pivoting=False, full_matrices=full_matrices)
  return r if mode == "r" else QRResult(q, r)


def svd(a, full_matrices=True, compute_uv=True, hermitian=False, subset_by_index=None):
  """Singular value decomposition: `SVDResult(U, S, Vh)` with `a = U diag(S) Vh`,
  or the singular values `S` (descending) when not `compute_uv`.

  With `hermitian`, `a` is taken to be Hermitian and decomposed with `eigh`
  (singular values are the eigenvalues' absolute values).
  """
  a = ensure_arraylike("jnp.linalg.svd", a)
  a, = promote_dtypes_inexact(a)
  if hermitian:
    vectors, values = lax_linalg.eigh(a, subset_by_index=subset_by_index)
    s = lax.abs(values)
    if not compute_uv:
      return lax.rev(lax.sort(s, dimension=-1), dimensions=[s.ndim - 1])
    sign = lax.sign(values)
    idxs = lax.broadcasted_iota(np.int64, s.shape, dimension=s.ndim - 1)
    s, idxs, sign = lax.sort((s, idxs, sign), dimension=-1, num_keys=1)
    s, idxs, sign = (lax.rev(t, dimensions=[s.ndim - 1]) for t in (s, idxs, sign))
    u = selection.take_along_axis(vectors, lax.expand_dims(idxs, (idxs.ndim - 1,)), axis=-1)
    vh = _H(u * lax.expand_dims(sign, (sign.ndim - 1,)).astype(u.dtype))
    return SVDResult(u, s, vh)
  if compute_uv:
    u, s, vh = lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=True,
                              subset_by_index=subset_by_index)
    return SVDResult(u, s, vh)
  return lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=False,
                        subset_by_index=subset_by_index)


def _batch_iotas(batch):
  """Index arrays selecting every batch element, shaped to broadcast over one more axis."""
  return tuple(lax.broadcasted_iota(np.int32, batch + (1,), i) for i in range(len(batch)))


def svdvals(x, /):
  """Singular values of `x`, descending."""
  x = ensure_arraylike("jnp.linalg.svdvals", x)
  return svd(x, compute_uv=False, hermitian=False)


def eig(a):
  """Eigenvalues and right eigenvectors `(w, v)` of a general square `a`,
  always complex (complex64 for 32-bit input, unlike NumPy, which returns
  real arrays when every eigenvalue is real)."""
  a = ensure_arraylike("jnp.linalg.eig", a)
  a, = promote_dtypes_inexact(a)
  w, v = lax_linalg.eig(a, compute_left_eigenvectors=False)
  return w, v


def eigvals(a):
  """Eigenvalues of a general square `a` (complex, as for `eig`)."""
  a = ensure_arraylike("jnp.linalg.eigvals", a)
  a, = promote_dtypes_inexact(a)
  return lax_linalg.eig(a, compute_left_eigenvectors=False,
                        compute_right_eigenvectors=False)[0]


def _uplo_lower(UPLO):
  if UPLO is None or UPLO == "L":
    return True
  if UPLO == "U":
    return False
  raise ValueError(f"UPLO must be one of None, 'L', or 'U', got {UPLO}")


def eigh(a, UPLO=None, symmetrize_input=True):
  """`EighResult(eigenvalues, eigenvectors)` of Hermitian `a`, eigenvalues
  ascending. Without `symmetrize_input`, only the `UPLO` triangle is read."""
  a = ensure_arraylike("jnp.linalg.eigh", a)
  lower = _uplo_lower(UPLO)
  a, = promote_dtypes_inexact(a)
  v, w = lax_linalg.eigh(a, lower=lower, symmetrize_input=symmetrize_input)
  return EighResult(w, v)


def eigvalsh(a, UPLO="L", *, symmetrize_input=True):
  """Eigenvalues of Hermitian `a`, ascending."""
  a = ensure_arraylike("jnp.linalg.eigvalsh", a)
  a, = promote_dtypes_inexact(a)
  w, _ = eigh(a, UPLO, symmetrize_input)
  return w


# --- determinants, solves and inverses ----------------------------------------------------

@custom_jvp
def _slogdet_lu(a):
  lu, pivots, _ = lax_linalg.lu(a)
  dtype = a.dtype
  diag = manipulation.diagonal(lu, axis1=-2, axis2=-1)
  is_zero = reductions.any(diag == creation.array(0, dtype=dtype), axis=-1)
  iota = lax.expand_dims(creation.arange(a.shape[-1], dtype=pivots.dtype),
                         range(pivots.ndim - 1))
  parity = reductions.count_nonzero(pivots != iota, axis=-1)
  if dtypes.is_complex(dtype):
    sign = reductions.prod(diag / ufuncs.abs(diag).astype(dtype), axis=-1)
  else:
    sign = creation.array(1, dtype=dtype)
    parity = parity + reductions.count_nonzero(diag < 0, axis=-1)
  sign = ufuncs.where(is_zero, creation.array(0, dtype=dtype),
                      sign * creation.array(-2 * (parity % 2) + 1, dtype=dtype))
  logdet = ufuncs.where(is_zero, creation.array(-np.inf, dtype=dtype),
                        reductions.sum(ufuncs.log(ufuncs.abs(diag)).astype(dtype), axis=-1))
  return sign, ufuncs.real(logdet)


@custom_jvp
def _slogdet_qr(a):
  if dtypes.is_complex(a.dtype):
    raise NotImplementedError("slogdet method='qr' not implemented for complex inputs")
  n = a.shape[-1]
  a, taus = lax_linalg.geqrf(a)
  diag = manipulation.diagonal(a, axis1=-2, axis2=-1)
  log_abs_det = reductions.sum(ufuncs.log(ufuncs.abs(diag)), axis=-1)
  sign_diag = reductions.prod(ufuncs.sign(diag), axis=-1)
  # each reflection actually made (tau != 0) has determinant -1
  sign_taus = reductions.prod(ufuncs.where(taus[..., :n - 1] != 0, -1, 1),
                              axis=-1).astype(sign_diag.dtype)
  return sign_diag * sign_taus, log_abs_det


def slogdet(a, *, method=None):
  """`SlogdetResult(sign, logabsdet)`: `det(a) = sign * exp(logabsdet)`; a
  singular matrix gives sign 0 and logabsdet -inf. `method`: "lu" (default)
  or "qr"."""
  a = ensure_arraylike("jnp.linalg.slogdet", a)
  a, = promote_dtypes_inexact(a)
  if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
    raise ValueError(f"Argument to slogdet() must have shape [..., n, n], got {a.shape}")
  if method is None or method == "lu":
    return SlogdetResult(*_slogdet_lu(a))
  if method == "qr":
    return SlogdetResult(*_slogdet_qr(a))
  raise ValueError(f"Unknown slogdet method '{method}'. Supported methods are 'lu' "
                   "(`None`), and 'qr'.")


def _slogdet_jvp(primals, tangents):
  """d logabsdet = Re trace(solve(a, da)); for complex a, the sign turns by
  i Im trace(solve(a, da)) (a real sign has zero derivative)."""
  x, = primals
  g, = tangents
  sign, ans = slogdet(x)
  ans_dot = manipulation.trace(solve(x, g), axis1=-1, axis2=-2)
  if dtypes.is_complex(x.dtype):
    sign_dot = (ans_dot - ufuncs.real(ans_dot).astype(ans_dot.dtype)) * sign
    ans_dot = ufuncs.real(ans_dot)
  else:
    sign_dot = creation.zeros_like(sign)
  return (sign, ans), (sign_dot, ans_dot)


_slogdet_lu.defjvp(_slogdet_jvp)
_slogdet_qr.defjvp(_slogdet_jvp)


def _cofactor_solve(a, b):
  """(det(a), adjugate(a) @ b), from `a`'s LU factors, as JAX computes it:
  well defined for singular `a` too. For rank n-1 the last pivot is 0: it
  is replaced by 1 / (the product of the others), and the other rows are
  scaled by det(a) (0) instead of dividing by it; matrices of lower rank,
  whose adjugate is 0, are detected by a failing triangular solve and give
  zeros."""
  a, = promote_dtypes_inexact(a)
  b, = promote_dtypes_inexact(b)
  if not (a.ndim >= 2 and a.shape[-1] == a.shape[-2] and b.shape[-2:] == a.shape[-2:]):
    raise ValueError("The arguments to _cofactor_solve must have shapes a=[..., m, m] and "
                     f"b=[..., m, m]; got a={a.shape} and b={b.shape}")
  n = a.shape[-1]
  if n == 1:
    return a[..., 0, 0], b
  lu, pivots, permutation = lax_linalg.lu(a)
  batch = np.broadcast_shapes(lu.shape[:-2], b.shape[:-2])
  x = creation.broadcast_to(b, batch + b.shape[-2:])
  lu = creation.broadcast_to(lu, batch + lu.shape[-2:])
  diag = manipulation.diagonal(lu, axis1=-2, axis2=-1)
  iota = lax.expand_dims(creation.arange(n, dtype=pivots.dtype), range(pivots.ndim - 1))
  parity = reductions.count_nonzero(pivots != iota, axis=-1)
  sign = creation.asarray(-2 * (parity % 2) + 1, dtype=a.dtype)
  # partial_det[..., -1] is det(a); partial_det[..., -2] is det(a) / u_nn
  partial_det = reductions.cumprod(diag, axis=-1) * sign[..., None]
  lu = lu.at[..., -1, -1].set(1.0 / partial_det[..., -2])
  permutation = creation.broadcast_to(permutation, (*batch, n))
  # rank < n - 1: the solve with the modified u still fails; the result is 0
  d = lax_linalg.triangular_solve(lu, creation.ones(x.shape[:-1], x.dtype), left_side=True,
                                  lower=False)
  d = reductions.any(ufuncs.logical_or(ufuncs.isnan(d), ufuncs.isinf(d)), axis=-1)
  d = manipulation.tile(d[..., None, None], d.ndim * (1,) + x.shape[-2:])
  x = ufuncs.where(d, creation.zeros_like(x), x)
  x = x[_batch_iotas(batch) + (permutation, slice(None))]
  x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True)
  x = manipulation.concatenate((x[..., :-1, :] * partial_det[..., -1, None, None],
                                x[..., -1:, :]), axis=-2)
  x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=False)
  x = ufuncs.where(d, creation.zeros_like(x), x)
  return partial_det[..., -1], x


@custom_jvp
def _det(a):
  sign, logdet = slogdet(a)
  return sign * ufuncs.exp(logdet).astype(sign.dtype)


@_det.defjvp
def _det_jvp(primals, tangents):
  """d det = trace(adjugate(a) @ da) (det(a) trace(solve(a, da)) when invertible)."""
  x, = primals
  g, = tangents
  y, z = _cofactor_solve(x, g)
  return y, manipulation.trace(z, axis1=-1, axis2=-2)


def det(a):
  """Determinant: closed forms for 2x2 and 3x3 matrices, else `slogdet`'s
  sign * exp(logabsdet) with a custom JVP (JAX's `_det`): trace(adjugate(a)
  da), so the gradient of a singular matrix's determinant is its (finite)
  cofactor matrix."""
  a = ensure_arraylike("jnp.linalg.det", a)
  a, = promote_dtypes_inexact(a)
  if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
    raise ValueError(f"Argument to _det() must have shape [..., n, n], got {a.shape}")
  if a.shape[-1] == 2:
    return a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]
  if a.shape[-1] == 3:
    return (a[..., 0, 0] * a[..., 1, 1] * a[..., 2, 2]
            + a[..., 0, 1] * a[..., 1, 2] * a[..., 2, 0]
            + a[..., 0, 2] * a[..., 1, 0] * a[..., 2, 1]
            - a[..., 0, 2] * a[..., 1, 1] * a[..., 2, 0]
            - a[..., 0, 0] * a[..., 1, 2] * a[..., 2, 1]
            - a[..., 0, 1] * a[..., 1, 0] * a[..., 2, 2])
  return _det(a)


def solve(a, b):
  """Solves `a @ x = b`. `b` is `[..., m]` only when 1-D, else `[..., m, k]`;
  batch axes broadcast (`jnp.vectorize` over one solve per matrix). A
  singular `a` gives inf/NaN values."""
  a, b = ensure_arraylike("jnp.linalg.solve", a, b)
  a, b = promote_dtypes_inexact(a, b)
  if a.ndim < 2:
    raise ValueError(f"left hand array must be at least two dimensional; got a.shape={a.shape}")
  if (b.ndim > 1 and a.ndim == b.ndim + 1 and a.shape[-1] == b.shape[-1]
      and a.shape[-1] != b.shape[-2]):
    raise ValueError(f"Invalid shapes for solve: {a.shape}, {b.shape}. Prior to JAX v0.5.0, "
                     "this would have been treated as a batched 1-dimensional solve. To "
                     "recover this behavior, use solve(a, b[..., None]).squeeze(-1).")
  signature = "(m,m),(m)->(m)" if b.ndim == 1 else "(m,m),(m,n)->(m,n)"
  return vectorize(_solve, signature=signature)(a, b)


def _solve(a, b):
  """`a^-1 b` for one square `a` and `b` `(m,)` or `(m, k)`, as JAX's
  `lax.linalg._solve`: a `custom_linear_solve` with the matvec `a @ x` and
  solvers reusing one LU factorization of `a` (its derivatives are then
  solves with the same factors, not derivatives of the factorization).
  `jnp.vectorize` has checked the shapes."""
  lu, _, permutation = lax_linalg.lu(lax.stop_gradient(a))
  custom_solve = functools.partial(
      lax.custom_linear_solve,
      lambda x: lax.dot_general(a, x, (((1,), (0,)), ((), ())),
                                precision=lax.Precision.HIGHEST),
      solve=lambda _, x: _lu_solve(lu, permutation, x, trans=0),
      transpose_solve=lambda _, x: _lu_solve(lu, permutation, x, trans=1))
  if b.ndim == 1:
    return custom_solve(b)
  return vmap(custom_solve, 1, 1)(b)


def _lu_solve(lu, permutation, b, trans):
  """Solves `a x = b` (`trans=0`) or `a^T x = b` (`trans=1`) for a vector
  `b`, from the LU factors of one matrix `a` (`a[permutation] = L U`)."""
  x = lax.expand_dims(b, (1,))
  if trans == 0:
    x = x[permutation, :]
    x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True)
    x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=False)
  else:
    x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=False, transpose_a=True)
    x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True,
                                    transpose_a=True)
    _, inverse = lax.sort_key_val(permutation, lax.iota(np.int32, permutation.shape[0]))
    x = x[inverse, :]
  return x[:, 0]


def inv(a):
  """Inverse of square `a` (a solve against the identity); singular gives inf/NaN."""
  arr = ensure_arraylike("jnp.linalg.inv", a)
  if arr.ndim < 2 or arr.shape[-1] != arr.shape[-2]:
    raise ValueError(f"Argument to inv must have shape [..., n, n], got {arr.shape}.")
  return solve(arr, lax.broadcast(creation.eye(arr.shape[-1], dtype=arr.dtype),
                                  arr.shape[:-2]))


def _deprecated_alias(value, old_name, new_name, fun_name):
  warnings.warn(f"The {old_name} argument for linalg.{fun_name} is deprecated. Please use "
                f"{new_name} instead.", DeprecationWarning, stacklevel=3)
  return value


def pinv(a, rtol=None, hermitian=False, *, rcond=None):
  """Moore-Penrose pseudo-inverse via the SVD. Singular values at most
  `rtol * largest` are dropped; `rtol` defaults to `10 * max(m, n) * eps`
  (NumPy's default is 1e-15). `rcond` is a deprecated alias of `rtol`.
  Custom JVP (JAX's, after Golub and Pereyra)."""
  if rcond is not None:
    rtol = _deprecated_alias(rcond, "rcond", "rtol", "pinv")
  return _pinv(a, rtol, hermitian)


def _pinv_fn(a, rtol=None, hermitian=False):
  a = ensure_arraylike("jnp.linalg.pinv", a)
  arr, = promote_dtypes_inexact(a)
  m, n = arr.shape[-2:]
  if m == 0 or n == 0:
    return creation.empty(arr.shape[:-2] + (n, m), arr.dtype)
  arr = ufuncs.conj(arr)
  if rtol is None:
    rtol = 10. * max(m, n) * creation.array(dtypes.finfo(arr.dtype).eps)
  rtol = creation.asarray(rtol)
  u, s, vh = svd(arr, full_matrices=False, hermitian=hermitian)
  rtol = lax.expand_dims(lax.expand_dims(rtol, (rtol.ndim,)), range(s.ndim - rtol.ndim - 1))
  cutoff = rtol * s[..., 0:1]
  s = ufuncs.where(s > cutoff, s, np.inf).astype(u.dtype)
  res = products.matmul(manipulation.matrix_transpose(vh),
                        ufuncs.divide(manipulation.matrix_transpose(u),
                                      lax.expand_dims(s, (s.ndim,))),
                        precision=lax.Precision.HIGHEST)
  return lax.convert_element_type(res, arr.dtype)


_pinv = custom_jvp(_pinv_fn, nondiff_argnums=(1, 2))


def _symmetrize(x):
  return (x + _H(x)) / 2


@_pinv.defjvp
def _pinv_jvp(rtol, hermitian, primals, tangents):
  """dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P, associated
  to multiply the smaller matrices first."""
  a, = primals
  a_dot, = tangents
  p = pinv(a, rtol=rtol, hermitian=hermitian)
  if hermitian:   # svd(..., hermitian=True) symmetrizes its input; so does the JVP
    a, a_dot = _symmetrize(a), _symmetrize(a_dot)
  m, n = a.shape[-2:]
  if m >= n:
    s = (p @ _H(p)) @ _H(a_dot)
    t = (_H(a_dot) @ _H(p)) @ p
    p_dot = -(p @ a_dot) @ p + s - (s @ a) @ p + t - (p @ a) @ t
  else:
    s = p @ (_H(p) @ _H(a_dot))
    t = _H(a_dot) @ (_H(p) @ p)
    p_dot = -p @ (a_dot @ p) + s - s @ (a @ p) + t - p @ (a @ t)
  return p, p_dot


def matrix_power(a, n):
  """`a` to the integer power `n` by repeated squaring (`n < 0` inverts first)."""
  a = ensure_arraylike("jnp.linalg.matrix_power", a)
  arr, = promote_dtypes_inexact(a)
  if arr.ndim < 2:
    raise TypeError(f"{arr.ndim}-dimensional array given. Array must be at least "
                    "two-dimensional")
  if arr.shape[-2] != arr.shape[-1]:
    raise TypeError("Last 2 dimensions of the array must be square")
  try:
    n = operator.index(n)
  except TypeError as err:
    raise TypeError(f"exponent must be an integer, got {n}") from err
  if n == 0:
    return creation.broadcast_to(creation.eye(arr.shape[-2], dtype=arr.dtype), arr.shape)
  if n < 0:
    arr, n = inv(arr), -n
  if n == 1:
    return arr
  if n == 2:
    return arr @ arr
  if n == 3:
    return (arr @ arr) @ arr
  z = result = None
  while n > 0:
    z = arr if z is None else z @ z
    n, bit = divmod(n, 2)
    if bit:
      result = z if result is None else result @ z
  return result


def matrix_rank(M, rtol=None, *, hermitian=False, tol=None):
  """Number of singular values above `rtol` (default `S.max() * max(m, n) *
  eps`). As in JAX, a given `rtol` is compared with the singular values
  directly (NumPy scales it by the largest one). With `hermitian`, the
  singular values are the absolute eigenvalues of `M` (from `eigvalsh`).
  `tol` is a deprecated alias of `rtol`."""
  M = ensure_arraylike("jnp.linalg.matrix_rank", M)
  if tol is not None:
    rtol = _deprecated_alias(tol, "tol", "rtol", "matrix_rank")
  M, = promote_dtypes_inexact(M)
  if M.ndim < 2:
    return reductions.any(M != 0).astype(np.int32)
  if hermitian:
    S = ufuncs.abs(eigvalsh(M))
  else:
    S = svd(M, full_matrices=False, compute_uv=False)
  if rtol is None:
    rtol = S.max(-1) * np.array(max(M.shape[-2:]), S.dtype) * dtypes.finfo(S.dtype).eps
  rtol = manipulation.expand_dims(rtol, np.ndim(rtol))
  return reductions.sum(S > rtol, axis=-1)


def lstsq(a, b, rcond=None, *, numpy_resid=False):
  """Least-squares solution of `a @ x = b` via the SVD: `(x, resid, rank, s)`.

  Singular values below `rcond * largest` (default `eps * max(m, n)`) are
  dropped. `resid` is the squared residual norm per column; NumPy returns
  an empty array when `rank < n` or `m <= n`, which JAX does only with
  `numpy_resid=True`.
  """
  a, b = ensure_arraylike("jnp.linalg.lstsq", a, b)
  a, b = promote_dtypes_inexact(a, b)
  if a.shape[0] != b.shape[0]:
    raise ValueError("Leading dimensions of input arrays must match")
  b_orig_ndim = b.ndim
  if b_orig_ndim == 1:
    b = lax.expand_dims(b, (1,))
  if a.ndim != 2:
    raise TypeError(f"{a.ndim}-dimensional array given. Array must be two-dimensional")
  if b.ndim != 2:
    raise TypeError(f"{b.ndim}-dimensional array given. Array must be one or "
                    "two-dimensional")
  m, n = a.shape
  dtype = a.dtype
  if a.size == 0:
    s = creation.empty(0, dtype=dtype)
    rank = creation.array(0, dtype=int)
    x = creation.empty((n, *b.shape[1:]), dtype=dtype)
  else:
    if rcond is None:
      rcond = float(dtypes.finfo(dtype).eps) * max(n, m)
    else:
      rcond = ufuncs.where(rcond < 0, dtypes.finfo(dtype).eps, rcond)
    u, s, vt = svd(a, full_matrices=False)
    mask = s >= creation.array(rcond, dtype=s.dtype) * s[0]
    rank = mask.sum()
    safe_s = ufuncs.where(mask, s, 1).astype(dtype)
    s_inv = lax.expand_dims(ufuncs.where(mask, 1 / safe_s, 0), (1,))
    uTb = products.matmul(_H(u), b, precision=lax.Precision.HIGHEST)
    x = products.matmul(_H(vt), s_inv * uTb, precision=lax.Precision.HIGHEST)
  if numpy_resid and (rank < n or m <= n):
    resid = creation.asarray(np.array([], dtype))
  else:
    b_estimate = products.matmul(a, x, precision=lax.Precision.HIGHEST)
    resid = norm(b - b_estimate, axis=0) ** 2
  if b_orig_ndim == 1:
    x = x.ravel()
  return x, resid, rank, s


def tensorinv(a, ind=2):
  """Inverse of `a` seen as a map from its last axes to its first `ind` axes."""
  arr = ensure_arraylike("tensorinv", a)
  ind = operator.index(ind)
  if ind <= 0:
    raise ValueError(f"ind must be a positive integer; got ind={ind}")
  contracting_shape, batch_shape = arr.shape[:ind], arr.shape[ind:]
  flatshape = (math.prod(contracting_shape), math.prod(batch_shape))
  if flatshape[0] != flatshape[1]:
    raise ValueError("tensorinv is only possible when the product of the first `ind` "
                     "dimensions equals that of the remaining dimensions. got "
                     f"arr.shape={arr.shape} with ind={ind}.")
  return inv(arr.reshape(flatshape)).reshape(*batch_shape, *contracting_shape)


def tensorsolve(a, b, axes=None):
  """Solves `tensordot(a, x, x.ndim) = b` for `x` (after moving `axes` of `a`
  to the end)."""
  a_arr, b_arr = ensure_arraylike("tensorsolve", a, b)
  if axes is not None:
    a_arr = manipulation.moveaxis(a_arr, axes, len(axes) * (a_arr.ndim - 1,))
  out_shape = a_arr.shape[b_arr.ndim:]
  if a_arr.shape[:b_arr.ndim] != b_arr.shape:
    raise ValueError("After moving axes to end, leading shape of a must match shape of b. "
                     f"got a.shape={a_arr.shape}, b.shape={b_arr.shape}")
  if b_arr.size != math.prod(out_shape):
    raise ValueError("Input arrays must have prod(a.shape[:b.ndim]) == "
                     f"prod(a.shape[b.ndim:]); got a.shape={a_arr.shape}, "
                     f"b.ndim={b_arr.ndim}.")
  a_arr = a_arr.reshape(b_arr.size, math.prod(out_shape))
  return solve(a_arr, b_arr.ravel()).reshape(out_shape)


# --- norms and condition numbers -----------------------------------------------------------

def _sum_of_squares(x, axis, keepdims):
  return ufuncs.sqrt(reductions.sum(ufuncs.real(x * ufuncs.conj(x)), axis=axis,
                                    keepdims=keepdims))


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
  """Vector norm over `axis` (all axes by default): `ord` 2 (default), inf,
  -inf, 0 (the count of nonzeros), 1, or any other p: `sum(|x|^p)^(1/p)`."""
  x = ensure_arraylike("jnp.linalg.vector_norm", x)
  if ord is None or ord == 2:
    return _sum_of_squares(x, axis, keepdims)
  if ord == np.inf:
    return reductions.amax(ufuncs.abs(x), axis=axis, keepdims=keepdims)
  if ord == -np.inf:
    return reductions.amin(ufuncs.abs(x), axis=axis, keepdims=keepdims)
  if ord == 0:
    return reductions.sum(x != 0, dtype=dtypes.finfo(x.dtype).dtype, axis=axis,
                          keepdims=keepdims)
  if ord == 1:
    return reductions.sum(ufuncs.abs(x), axis=axis, keepdims=keepdims)
  if isinstance(ord, str):
    msg = f"Invalid order '{ord}' for vector norm."
    if ord in ("inf", "-inf"):
      msg += f"Use '{ord[:-3]}jax.numpy.inf' instead."
    raise ValueError(msg)
  abs_x = ufuncs.abs(x)
  ord_arr = np.array(ord, abs_x.dtype)
  ord_inv = np.array(1. / ord, abs_x.dtype)
  return ufuncs.power(reductions.sum(abs_x ** ord_arr, axis=axis, keepdims=keepdims),
                      ord_inv)


def norm(x, ord=None, axis=None, keepdims=False):
  """Vector norm (one axis; `ord` as for `vector_norm`) or matrix norm (two
  axes; `ord` None/"fro", "nuc", ±1, ±2, ±inf). With neither `ord` nor
  `axis`, the 2-norm of the flattened array."""
  x = ensure_arraylike("jnp.linalg.norm", x)
  x, = promote_dtypes_inexact(x)
  ndim = x.ndim
  if axis is None:
    if ord is None:
      return _sum_of_squares(x, None, keepdims)
    axis = tuple(range(ndim))
  elif isinstance(axis, tuple):
    axis = tuple(canonicalize_axis(a, ndim) for a in axis)
  else:
    axis = (canonicalize_axis(axis, ndim),)
  if len(axis) == 1:
    return vector_norm(x, ord=2 if ord is None else ord, axis=axis, keepdims=keepdims)
  if len(axis) != 2:
    raise ValueError(f"Improper number of axes for norm: axis={axis}. Pass one axis to "
                     "compute a vector-norm, or two axes to compute a matrix-norm.")
  row_axis, col_axis = axis
  if ord is None or ord in ("f", "fro"):
    return _sum_of_squares(x, axis, keepdims)
  if ord in (1, -1, np.inf, -np.inf):  # max/min over one axis of sums over the other
    summed, reduced = (row_axis, col_axis) if ord in (1, -1) else (col_axis, row_axis)
    if not keepdims and reduced > summed:
      reduced -= 1
    reduce = reductions.amax if ord > 0 else reductions.amin
    return reduce(reductions.sum(ufuncs.abs(x), axis=summed, keepdims=keepdims),
                  axis=reduced, keepdims=keepdims)
  if ord in ("nuc", 2, -2):
    x = manipulation.moveaxis(x, axis, (-2, -1))
    reduce = {2: reductions.amax, -2: reductions.amin, "nuc": reductions.sum}[ord]
    y = reduce(svd(x, compute_uv=False), axis=-1)
    return manipulation.expand_dims(y, axis) if keepdims else y
  raise ValueError(f"Invalid order '{ord}' for matrix norm.")


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
  """Norm of the matrices in the last two axes (see `norm`)."""
  x = ensure_arraylike("jnp.linalg.matrix_norm", x)
  return norm(x, ord=ord, keepdims=keepdims, axis=(-2, -1))


def cond(x, p=None):
  """Condition number `norm(x, p) * norm(inv(x), p)`; for p None/2 (±2) the
  ratio of extreme singular values. NaN results become inf when `x` has no
  NaN (a singular matrix)."""
  arr = ensure_arraylike("cond", x)
  if arr.ndim < 2:
    raise ValueError(f"jnp.linalg.cond: input array must be at least 2D; got "
                     f"arr.shape={arr.shape}")
  if arr.shape[-1] == 0 or arr.shape[-2] == 0:
    raise ValueError(f"jnp.linalg.cond: input array must not be empty; got "
                     f"arr.shape={arr.shape}")
  if p is None or p == 2:
    s = svdvals(arr)
    return s[..., 0] / s[..., -1]
  if p == -2:
    s = svdvals(arr)
    r = s[..., -1] / s[..., 0]
  else:
    if arr.shape[-2] != arr.shape[-1]:
      raise ValueError(f"jnp.linalg.cond: for p={p}, array must be square; got "
                       f"arr.shape={arr.shape}")
    r = norm(arr, ord=p, axis=(-2, -1)) * norm(inv(arr), ord=p, axis=(-2, -1))
  return ufuncs.where(ufuncs.isnan(r) & ~reductions.any(ufuncs.isnan(arr), axis=(-2, -1)),
                      np.inf, r)


# --- products and matrix utilities --------------------------------------------------------

def multi_dot(arrays, *, precision=None):
  """The product of a chain of matrices (the first and last may be vectors),
  multiplied in the order that needs the fewest scalar multiplications."""
  arrs = [ensure_arraylike("jnp.linalg.multi_dot", a) for a in arrays]
  if len(arrs) < 2:
    raise ValueError(f"multi_dot requires at least two arrays; got len(arrays)={len(arrs)}")
  if not (arrs[0].ndim in (1, 2) and arrs[-1].ndim in (1, 2)
          and all(a.ndim == 2 for a in arrs[1:-1])):
    raise ValueError("multi_dot: input arrays must all be two-dimensional, except for the "
                     "first and last array which may be 1 or 2 dimensional. Got array "
                     f"shapes {[a.shape for a in arrs]}")
  if any(a.shape[-1] != b.shape[0] for a, b in zip(arrs[:-1], arrs[1:])):
    raise ValueError("multi_dot: last dimension of each array must match first dimension "
                     f"of following array. Got array shapes {[a.shape for a in arrs]}")
  first_vector, last_vector = arrs[0].ndim == 1, arrs[-1].ndim == 1
  if first_vector:
    arrs[0] = lax.expand_dims(arrs[0], (0,))
  if last_vector:
    arrs[-1] = lax.expand_dims(arrs[-1], (1,))
  # dims[i], dims[i + 1]: the shape of arrs[i]; split[i][j]: best split of arrs[i..j]
  dims = [a.shape[0] for a in arrs] + [arrs[-1].shape[1]]
  count = len(arrs)
  cost = [[0] * count for _ in range(count)]
  split = [[0] * count for _ in range(count)]
  for length in range(1, count):
    for i in range(count - length):
      j = i + length
      cost[i][j], split[i][j] = min(
          (cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1], k)
          for k in range(i, j))

  def product(i, j):
    if i == j:
      return arrs[i]
    k = split[i][j]
    return products.matmul(product(i, k), product(k + 1, j), precision=precision)

  result = product(0, count - 1)
  if first_vector:
    result = lax.squeeze(result, (0,))
  if last_vector:
    result = lax.squeeze(result, (result.ndim - 1,))
  return result


def cross(x1, x2, /, *, axis=-1):
  """Cross product of 3-vectors along `axis` (other axes broadcast)."""
  x1, x2 = ensure_arraylike("jnp.linalg.cross", x1, x2)
  if x1.shape[axis] != 3 or x2.shape[axis] != 3:
    raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors, but they "
                     f"have x1.shape[axis]={x1.shape[axis]} and "
                     f"x2.shape[axis]={x2.shape[axis]}")
  return products.cross(x1, x2, axis=axis)


def outer(x1, x2, /):
  """Outer product of two 1-D arrays."""
  x1, x2 = ensure_arraylike("jnp.linalg.outer", x1, x2)
  if x1.ndim != 1 or x2.ndim != 1:
    raise ValueError(f"Input arrays must be one-dimensional, but they are x1.ndim={x1.ndim} "
                     f"x2.ndim={x2.ndim}")
  return lax.expand_dims(x1, (1,)) * lax.expand_dims(x2, (0,))


def matrix_transpose(x, /):
  """Swaps the last two axes."""
  x = ensure_arraylike("jnp.linalg.matrix_transpose", x)
  if x.ndim < 2:
    raise ValueError(f"matrix_transpose requres at least 2 dimensions; got ndim={x.ndim}")
  return lax.transpose(x, (*range(x.ndim - 2), x.ndim - 1, x.ndim - 2))


def matmul(x1, x2, /, *, precision=None, preferred_element_type=None):
  """Matrix product (as `jnp.matmul`)."""
  x1, x2 = ensure_arraylike("jnp.linalg.matmul", x1, x2)
  return products.matmul(x1, x2, precision=precision,
                         preferred_element_type=preferred_element_type)


def tensordot(x1, x2, /, *, axes=2, precision=None, preferred_element_type=None,
             out_sharding=None):
  """Tensor dot product (as `jnp.tensordot`)."""
  x1, x2 = ensure_arraylike("jnp.linalg.tensordot", x1, x2)
  return products.tensordot(x1, x2, axes=axes, precision=precision,
                            preferred_element_type=preferred_element_type,
                            out_sharding=out_sharding)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
  """Conjugate dot product along `axis` (as `jnp.vecdot`)."""
  x1, x2 = ensure_arraylike("jnp.linalg.vecdot", x1, x2)
  return products.vecdot(x1, x2, axis=axis, precision=precision,
                         preferred_element_type=preferred_element_type)


def diagonal(x, /, *, offset=0):
  """The `offset` diagonal of the last two axes."""
  x = ensure_arraylike("jnp.linalg.diagonal", x)
  return manipulation.diagonal(x, offset=offset, axis1=-2, axis2=-1)


def trace(x, /, *, offset=0, dtype=None):
  """Sum of the `offset` diagonal of the last two axes."""
  x = ensure_arraylike("jnp.linalg.trace", x)
  return manipulation.trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)
