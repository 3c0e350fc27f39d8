"""`refimpl.scipy.fft`: discrete cosine transforms, as `jax.scipy.fft`.

JAX provides the type-2 DCT and its inverse (the type-3 DCT, suitably scaled)
with norm None/"backward" (unnormalized forward transform, as SciPy) or
"ortho". Each is computed through one complex FFT of the reordered input
(Makhoul, "A Fast Cosine Transform in One and Two Dimensions", 1980): the
even-indexed samples followed by the odd-indexed ones reversed, transformed,
then rotated by the quarter-wave factors exp(-i pi k / 2N). Complex inputs
transform their real and imaginary parts separately; integers give the
default float. Other types raise NotImplementedError, other norms ValueError.
"""

import functools
import math
import operator

import numpy as np

from refimpl import dtypes, lax
from refimpl.lax.shapes import canonicalize_axis
from refimpl.numpy import arange, exp, fft as jnp_fft, flip, roll, zeros
from refimpl.numpy.creation import ensure_arraylike
from refimpl.numpy.util import promote_dtypes_inexact

__all__ = ["dct", "dctn", "idct", "idctn"]


def _check_type_and_norm(name, type, norm):
  if type != 2:
    raise NotImplementedError('Only DCT type 2 is implemented.')
  if norm is not None and norm not in ['backward', 'ortho']:
    raise ValueError(f"jax.scipy.fft.{name}: {norm=!r} is not implemented")


def _quarter_wave(n, k):
  """exp(-i pi k / (2 n)), complex of k's precision."""
  return exp(-0.5j * np.pi * k / n)


def _along(values, axis, ndim):
  """1-D `values` expanded to broadcast along `axis` of an `ndim`-dimensional array."""
  return lax.expand_dims(values, [a for a in range(ndim) if a != axis])


def _interleave(x, axis):
  """x[0], x[2], x[4], ... followed by the odd-indexed entries reversed."""
  evens = lax.slice_in_dim(x, None, None, 2, axis)
  odds = lax.rev(lax.slice_in_dim(x, 1, None, 2, axis), (axis,))
  return lax.concatenate([evens, odds], axis)


def _deinterleave(x, axis):
  """The inverse of `_interleave`."""
  half = math.ceil(x.shape[axis] / 2)
  evens = lax.slice_in_dim(x, 0, half, 1, axis)
  odds = lax.rev(lax.slice_in_dim(x, half, None, 1, axis), (axis,))
  index = lambda sl: tuple(sl if a == axis else slice(None) for a in range(x.ndim))
  out = zeros(x.shape, dtype=x.dtype)
  return out.at[index(slice(None, None, 2))].set(evens).at[index(slice(1, None, 2))].set(odds)


def _ortho_scale(out, axis):
  """Divides entry 0 along `axis` by sqrt(4 N) and the others by sqrt(2 N)."""
  n = out.shape[axis]
  factor = lax.concatenate([lax.full((1,), 4, out.dtype), lax.full((n - 1,), 2, out.dtype)], 0)
  return out / lax.sqrt(_along(factor, axis, out.ndim) * n)


def _resize(x, sizes):
  """x zero-padded (or cropped) to `sizes`, a dict axis -> length."""
  pads = [(0, sizes[a] - x.shape[a] if a in sizes else 0, 0) for a in range(x.ndim)]
  return lax.pad(x, lax.full((), 0, x.dtype), pads)


def _split_complex(fn, x, **kwargs):
  return lax.complex(fn(x.real, **kwargs), fn(x.imag, **kwargs))


def _transform_1d(name, transform, x, type, n, axis, norm):
  """The checks and defaults shared by dct and idct: complex inputs transform their
  parts apart; otherwise the input is resized to `n` along `axis` and
  `transform(x, axis, norm)` applies."""
  x = ensure_arraylike(name, x)
  _check_type_and_norm(name, type, norm)
  if dtypes.issubdtype(x.dtype, np.complexfloating):
    same = functools.partial(_transform_1d, name, transform)
    return _split_complex(same, x, type=type, n=n, axis=axis, norm=norm)
  axis = canonicalize_axis(axis, x.ndim)
  if n is not None:
    x = _resize(x, {axis: n})
  return transform(x, axis, norm)


def _dct_1d(x, axis, norm):
  size = x.shape[axis]
  spectrum = jnp_fft.fft(_interleave(x, axis), axis=axis)
  k = _along(arange(size, dtype=spectrum.real.dtype), axis, x.ndim)
  out = 2 * (spectrum * _quarter_wave(size, k)).real
  return _ortho_scale(out, axis) if norm == 'ortho' else out


def dct(x, type=2, n=None, axis=-1, norm=None):
  """The type-2 DCT of `x` along `axis`: y[k] = 2 sum_n x[n] cos(pi k (2n + 1) / 2N),
  with `n` zero-padding or truncating the input first; norm "ortho" makes it orthonormal."""
  return _transform_1d("dct", _dct_1d, x, type, n, axis, norm)


def _dct2(x, axes, norm):
  """The 2-D type-2 DCT over two axes from one 2-D FFT (Makhoul's 2-D algorithm)."""
  axis1, axis2 = (canonicalize_axis(a, x.ndim) for a in axes)
  n1, n2 = x.shape[axis1], x.shape[axis2]
  spectrum = jnp_fft.fftn(_interleave(_interleave(x, axis1), axis2), axes=axes)
  k1 = _along(arange(n1, dtype=spectrum.dtype), axis1, x.ndim)
  k2 = _along(arange(n2, dtype=spectrum.dtype), axis2, x.ndim)
  mirrored = roll(flip(spectrum, axis=axis2), shift=1, axis=axis2)
  out = _quarter_wave(n1, k1) * (_quarter_wave(n2, k2) * spectrum
                                 + _quarter_wave(n2, -k2) * mirrored)
  out = 2 * out.real
  if norm == 'ortho':
    return _ortho_scale(_ortho_scale(out, axis1), axis2)
  return out


def _shape_and_axes(x, s, axes):
  """JAX's defaults: `s` a list of ints (at most x.ndim), `axes` the last len(s) axes or all."""
  if s is not None:
    try:
      s = list(s)
    except TypeError:
      s = [operator.index(s)]
    if len(s) > x.ndim:
      raise ValueError(f"s must have at most x.ndim ({x.ndim}) elements, got {len(s)}")
  if axes is None:
    axes = tuple(range(x.ndim - len(s), x.ndim)) if s is not None else tuple(range(x.ndim))
  else:
    axes = tuple(canonicalize_axis(a, x.ndim) for a in axes)
  return s, axes


def _transform_nd(name, transform_1d, transform_axes, x, type, s, axes, norm):
  """The checks and defaults shared by dctn and idctn: one axis goes to `transform_1d`;
  otherwise the input is resized to `s` and `transform_axes(x, axes, norm)` applies."""
  x = ensure_arraylike(name, x)
  _check_type_and_norm(name, type, norm)
  if dtypes.issubdtype(x.dtype, np.complexfloating):
    same = functools.partial(_transform_nd, name, transform_1d, transform_axes)
    return _split_complex(same, x, type=type, s=s, axes=axes, norm=norm)
  s, axes = _shape_and_axes(x, s, axes)
  if len(axes) == 1:
    return transform_1d(x, n=s[0] if s is not None else None, axis=axes[0], norm=norm)
  if s is not None:
    x = _resize(x, dict(zip(axes, s)))
  return transform_axes(x, axes, norm)


def _dct_axes(x, axes, norm):
  """The DCT over two or more axes: a 2-D transform for each pair of them."""
  if len(axes) == 2:
    return _dct2(x, axes=axes, norm=norm)
  for block in [axes[i:i + 2] for i in range(0, len(axes), 2)]:
    x = dctn(x, axes=block, norm=norm)
  return x


def dctn(x, type=2, s=None, axes=None, norm=None):
  """The type-2 DCT over `axes` (default: the last len(s) axes, or all), the input
  zero-padded or truncated to `s` along them; a 2-D FFT for each pair of axes."""
  return _transform_nd("dctn", dct, _dct_axes, x, type, s, axes, norm)


def _idct_1d(x, axis, norm):
  size = x.shape[axis]
  x, = promote_dtypes_inexact(x)
  if norm is None or norm == 'backward':
    x = _ortho_scale(x, axis)
  x = _ortho_scale(x, axis)
  k = _along(arange(size, dtype=x.dtype), axis, x.ndim)
  w = _quarter_wave(size, k)
  x = x.astype(w.dtype) / w * 2 * size
  return _deinterleave(jnp_fft.ifft(x, axis=axis).real, axis)


def idct(x, type=2, n=None, axis=-1, norm=None):
  """The inverse of `dct` with the same `norm` (SciPy's idct type 2, a scaled type-3
  DCT), computed with one inverse FFT; `n` pads or truncates the input first."""
  return _transform_1d("idct", _idct_1d, x, type, n, axis, norm)


def _idct_axes(x, axes, norm):
  for axis in axes:
    x = idct(x, axis=axis, norm=norm)
  return x


def idctn(x, type=2, s=None, axes=None, norm=None):
  """The inverse of `dctn`: `idct` along each of `axes` in turn (defaults as dctn)."""
  return _transform_nd("idctn", idct, _idct_axes, x, type, s, axes, norm)
