"""Polynomials as 1-D coefficient arrays, highest power first (NumPy's
`poly*` functions), and the helpers `vander` and `trim_zeros`.

Results are inexact except for `polyadd`/`polysub` (which keep integers).
Unlike NumPy, products and quotients keep leading zeros (their shape is
static) unless `trim_leading_zeros=True`, which needs concrete values.
`polyval` evaluates by Horner's rule in a `lax.scan`, as JAX;
`roots` finds the eigenvalues of the companion matrix.
"""

import functools
import operator

import numpy as np

from refimpl import dtypes, lax
from refimpl.api import jit
from refimpl.numpy import convolution, reductions, ufuncs
from refimpl.numpy.creation import (arange, array, asarray, concrete, ensure_arraylike, full,
                                    ones, zeros)
from refimpl.numpy.manipulation import atleast_1d, concatenate, diag, expand_dims, roll
from refimpl.numpy.products import dot, outer
from refimpl.numpy.util import (check_arraylike, promote_dtypes, promote_dtypes_inexact,
                                 to_inexact_dtype)

__all__ = ['poly', 'polyadd', 'polysub', 'polymul', 'polydiv', 'polyder', 'polyint',
           'polyval', 'polyfit', 'roots', 'vander', 'trim_zeros']


# --- helpers: vander, trim_zeros ---------------------------------------------------------------

@functools.partial(jit, static_argnames=("N", "increasing"))
def vander(x, N=None, increasing=False):
  """The Vandermonde matrix of 1-D `x`: columns `x ** (N-1), ..., x ** 0`
  (increasing powers if `increasing`); N defaults to len(x)."""
  x = ensure_arraylike("vander", x)
  if x.ndim != 1:
    raise ValueError("x must be a one-dimensional array")
  N = x.shape[0] if N is None else operator.index(concrete(N, "'N' argument of jnp.vander()"))
  if N < 0:
    raise ValueError("N must be nonnegative")
  powers = lax.iota(x.dtype, N)
  if not increasing:
    powers = lax.sub(np.array(N - 1, x.dtype), powers)
  return ufuncs.power(x[..., None], expand_dims(powers, tuple(range(x.ndim))))


def trim_zeros(filt, trim="fb", axis=None):
  """`filt` without its leading ('f' in `trim`) and trailing ('b') zeros along
  each axis of `axis` (an int or a sequence; all axes by default): cut to the
  span of the slices along that axis that hold a nonzero (to none if all are
  zero). The result's size depends on the values, so `filt` must be concrete.
  """
  check_arraylike("trim_zeros", filt)
  concrete(filt, "Error arose in the `filt` argument of trim_zeros()")
  filt = asarray(filt)
  axes = range(filt.ndim) if axis is None else np.atleast_1d(axis).tolist()
  axes = {lax.shapes.canonicalize_axis(ax, filt.ndim) for ax in axes}
  trim = trim.lower()
  if not axes or ("f" not in trim and "b" not in trim):
    return filt
  nonzero = np.asarray(filt) != 0
  index = []
  for ax in range(filt.ndim):
    mask = nonzero.any(axis=tuple(i for i in range(filt.ndim) if i != ax))
    if ax not in axes:
      index.append(slice(None))
    elif not mask.any():
      index.append(slice(0, 0))
    else:
      index.append(slice(int(mask.argmax()) if "f" in trim else None,
                         len(mask) - int(mask[::-1].argmax()) if "b" in trim else None))
  return filt[tuple(index)]


def _trim(filt, is_zero, trim):
  """`filt` cut to the span between the first and last False of `is_zero`."""
  if reductions.all(is_zero):
    return zeros(0, filt.dtype)
  start = int(reductions.argmin(is_zero)) if "f" in trim.lower() else 0
  end = int(reductions.argmin(is_zero[::-1])) if "b" in trim.lower() else 0
  return filt[start:len(filt) - end]


# --- arithmetic ---------------------------------------------------------------------------------

@jit
def polyadd(a1, a2):
  """The sum of two polynomials (the shorter one is added to the end of the longer)."""
  a1, a2 = ensure_arraylike("polyadd", a1, a2)
  a1, a2 = promote_dtypes(a1, a2)
  if a2.shape[0] <= a1.shape[0]:
    return a1.at[-a2.shape[0]:].add(a2)
  return a2.at[-a1.shape[0]:].add(a1)


@jit
def polysub(a1, a2):
  """The difference of two polynomials."""
  a1, a2 = ensure_arraylike("polysub", a1, a2)
  a1, a2 = promote_dtypes(a1, a2)
  return polyadd(a1, -a2)


def polymul(a1, a2, *, trim_leading_zeros=False):
  """The product of two polynomials: their full convolution (inexact).

  Leading zeros are kept (NumPy trims them) unless `trim_leading_zeros`.
  """
  a1, a2 = ensure_arraylike("polymul", a1, a2)
  a1, a2 = promote_dtypes_inexact(a1, a2)
  if trim_leading_zeros and (len(a1) > 1 or len(a2) > 1):
    a1, a2 = trim_zeros(a1, trim="f"), trim_zeros(a2, trim="f")
  if len(a1) == 0:
    a1 = zeros(1, dtype=a2.dtype)
  if len(a2) == 0:
    a2 = zeros(1, dtype=a1.dtype)
  return convolution.convolve(a1, a2, mode="full")


def polydiv(u, v, *, trim_leading_zeros=False):
  """(quotient, remainder) of polynomial long division of `u` by `v` (inexact).

  The remainder keeps the length of `u` (NumPy trims its leading zeros)
  unless `trim_leading_zeros` removes those below sqrt(eps).
  """
  u, v = ensure_arraylike("polydiv", u, v)
  u, v = promote_dtypes_inexact(u, v)
  m, n = len(u) - 1, len(v) - 1
  scale = 1. / v[0]
  q = zeros(max(m - n + 1, 1), dtype=u.dtype)
  for k in range(0, m - n + 1):
    d = scale * u[k]
    q = q.at[k].set(d)
    u = u.at[k:k + n + 1].add(-d * v)
  if trim_leading_zeros:
    u = concrete(u, "Error arose in the `u` argument of polydiv()")
    u = _trim(asarray(u), ufuncs.abs(u) < np.sqrt(dtypes.finfo(u.dtype).eps), "f")
  return q, u


# --- calculus and evaluation ----------------------------------------------------------------

@functools.partial(jit, static_argnames=("m",))
def polyder(p, m=1):
  """The coefficients of the m-th derivative (inexact; static `m`)."""
  p = ensure_arraylike("polyder", p)
  m = operator.index(concrete(m, "'m' argument of jnp.polyder"))
  p, = promote_dtypes_inexact(p)
  if m < 0:
    raise ValueError("Order of derivative must be positive")
  if m == 0:
    return p
  coeff = (arange(m, len(p), dtype=p.dtype)[np.newaxis]
           - arange(m, dtype=p.dtype)[:, np.newaxis]).prod(0)
  return p[:-m] * coeff[::-1]


@functools.partial(jit, static_argnames=("m",))
def polyint(p, m=1, k=None):
  """The coefficients of the m-th antiderivative with integration constants
  `k` (a scalar, or m values: the last one is the constant term)."""
  m = operator.index(concrete(m, "'m' argument of jnp.polyint"))
  k = 0 if k is None else k
  p, k = ensure_arraylike("polyint", p, k)
  p, k = promote_dtypes_inexact(p, k)
  if m < 0:
    raise ValueError("Order of integral must be positive (see polyder)")
  k = atleast_1d(k)
  if len(k) == 1:
    k = full((m,), k[0])
  if k.shape != (m,):
    raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
  if m == 0:
    return p
  grid = (arange(len(p) + m, dtype=p.dtype)[np.newaxis]
          - arange(m, dtype=p.dtype)[:, np.newaxis])
  coeff = ufuncs.maximum(1, grid).prod(0)[::-1]
  return ufuncs.true_divide(concatenate((p, k)), coeff)


@functools.partial(jit, static_argnames=("unroll",))
def polyval(p, x, *, unroll=16):
  """The polynomial `p` (coefficients along its first axis) at `x`, by
  Horner's rule in a `lax.scan` over the coefficients (`unroll` steps per
  iteration, as JAX): `y = y * x + p[i]` from `y = 0`, in the inexact dtype."""
  p, x = ensure_arraylike("polyval", p, x)
  p, x = promote_dtypes_inexact(p, x)
  shape = np.broadcast_shapes(p.shape[1:], x.shape)
  y = lax.full_like(x, 0, shape=shape, dtype=x.dtype)
  y, _ = lax.scan(lambda y, coefficient: (y * x + coefficient, None), y, p, unroll=unroll)
  return y


# --- roots and fits ------------------------------------------------------------------------------

@jit
def poly(seq_of_zeros):
  """The monic polynomial with the given roots (the eigenvalues, for a square
  2-D array); always inexact, complex for complex or square input."""
  from refimpl.numpy import linalg  # here, not at import: jnp.linalg loads on first use
  seq_of_zeros = ensure_arraylike("poly", seq_of_zeros)
  seq_of_zeros, = promote_dtypes_inexact(seq_of_zeros)
  zeros_ = atleast_1d(seq_of_zeros)
  shape = zeros_.shape
  if len(shape) == 2 and shape[0] == shape[1] and shape[0] != 0:
    zeros_ = linalg.eigvals(zeros_)
  if zeros_.ndim != 1:
    raise ValueError("input must be 1d or non-empty square 2d array.")
  dtype = zeros_.dtype
  if len(zeros_) == 0:
    return ones((), dtype=dtype)
  a = ones((1,), dtype=dtype)
  for k in range(len(zeros_)):
    a = convolution.convolve(a, array([1, -zeros_[k]], dtype=dtype), mode="full")
  return a


@jit
def _roots_no_zeros(p):
  """The eigenvalues of the companion matrix of `p` (p[0] != 0)."""
  from refimpl.numpy import linalg  # here, not at import: jnp.linalg loads on first use
  if p.size < 2:
    return array([], dtype=dtypes.to_complex_dtype(p.dtype))
  companion = diag(ones((p.size - 2,), p.dtype), -1)
  companion = companion.at[0, :].set(-p[1:] / p[0])
  return linalg.eigvals(companion)


@jit
def _roots_with_zeros(p, num_leading_zeros):
  """Roots of `p` with its leading zeros rolled to the end: NaN for each one."""
  p = ufuncs.where(len(p) == num_leading_zeros, 1.0, p)  # all zeros: avoid 0 / 0
  found = _roots_no_zeros(roll(p, -num_leading_zeros))
  found = lax.sort_key_val(found == 0, found)[1]  # zero roots (from the roll) last
  keep = arange(found.size) < found.size - num_leading_zeros
  return ufuncs.where(keep, found, complex(np.nan, np.nan))


def roots(p, *, strip_zeros=True):
  """The roots of the polynomial `p` (always complex).

  Leading zeros of `p` are stripped (this needs a concrete `p`); with
  `strip_zeros=False` the output keeps length len(p) - 1, with NaN for each
  leading zero, and works under `jit`.
  """
  p = ensure_arraylike("roots", p)
  p = atleast_1d(*promote_dtypes_inexact(p))
  if p.ndim != 1:
    raise ValueError("Input must be a rank-1 array.")
  if p.size < 2:
    return array([], dtype=dtypes.to_complex_dtype(p.dtype))
  num_leading_zeros = ufuncs.where(reductions.all(p == 0), len(p),
                                    reductions.argmin(p == 0))
  if strip_zeros:
    num_leading_zeros = operator.index(concrete(
        num_leading_zeros,
        "The error occurred in the jnp.roots() function. To use this within a "
        "JIT-compiled context, pass strip_zeros=False, but be aware that leading zeros "
        "will result in some returned roots being set to NaN."))
    return _roots_no_zeros(p[num_leading_zeros:])
  return _roots_with_zeros(p, num_leading_zeros)


@functools.partial(jit, static_argnames=("deg", "rcond", "full", "cov"))
def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
  """Least-squares polynomial fit of degree `deg` (static) to points (x, y).

  `y` is 1-D or 2-D (one fit per column). Returns the coefficients; with
  `full`, also (residuals, rank, singular values, rcond); with `cov`, also
  the covariance of the coefficients ("unscaled" skips the residual scale).
  The Vandermonde matrix is column-scaled, then solved with `linalg.lstsq`.
  """
  from refimpl.numpy import linalg  # here, not at import: jnp.linalg loads on first use
  if w is None:
    x, y = ensure_arraylike("polyfit", x, y)
  else:
    x, y, w = ensure_arraylike("polyfit", x, y, w)
  deg = operator.index(concrete(deg, "deg must be int"))
  order = deg + 1
  if deg < 0:
    raise ValueError("expected deg >= 0")
  if x.ndim != 1:
    raise TypeError("expected 1D vector for x")
  if x.size == 0:
    raise TypeError("expected non-empty vector for x")
  if y.ndim < 1 or y.ndim > 2:
    raise TypeError("expected 1D or 2D array for y")
  if x.shape[0] != y.shape[0]:
    raise TypeError("expected x and y to have same length")
  if rcond is None:
    rcond = len(x) * float(dtypes.finfo(to_inexact_dtype(x.dtype)).eps)
  rcond = float(concrete(rcond, "rcond must be float"))
  lhs = vander(x, order)
  rhs = y
  if w is not None:
    w, = promote_dtypes_inexact(w)
    if w.ndim != 1:
      raise TypeError("expected a 1-d array for weights")
    if w.shape[0] != y.shape[0]:
      raise TypeError("expected w and y to have the same length")
    lhs = lhs * w[:, np.newaxis]
    rhs = rhs * (w[:, np.newaxis] if rhs.ndim == 2 else w)
  scale = ufuncs.sqrt((lhs * lhs).sum(axis=0))
  lhs = lhs / scale[np.newaxis, :]
  c, resids, rank, s = linalg.lstsq(lhs, rhs, rcond)
  c = (c.T / scale).T
  if full:
    return c, resids, rank, s, asarray(rcond)
  if cov:
    base = linalg.inv(dot(lhs.T, lhs)) / outer(scale, scale)
    if cov == "unscaled":
      fac = 1
    else:
      if len(x) <= order:
        raise ValueError("the number of data points must exceed order to scale the "
                         "covariance matrix")
      fac = (resids / (len(x) - order))[0]
    return (c, base * fac) if y.ndim == 1 else (c, base[:, :, np.newaxis] * fac)
  return c
