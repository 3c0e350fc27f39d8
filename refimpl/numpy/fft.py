"""`refimpl.numpy.fft`: discrete Fourier transforms, as `jax.numpy.fft`.

Every transform lowers to the `fft` primitive (`lax.fft`), which works on
the innermost 1-3 dimensions: the requested axes are moved there first, the
input cropped or zero-padded to the requested sizes `s`, and transforms over
more than 3 axes are split into several. `norm` scales as NumPy's:
"backward" (default: the inverse is scaled by 1/n), "ortho" (both by
1/sqrt(n)) or "forward" (the forward transform by 1/n).
"""

import operator


from refimpl import dtypes, lax
from refimpl.lax.fft import FftType
from refimpl.numpy import creation, manipulation, reductions, ufuncs
from refimpl.numpy.util import check_arraylike, promote_dtypes_inexact

__all__ = ['fft', 'ifft', 'rfft', 'irfft', 'hfft', 'ihfft', 'fft2', 'ifft2', 'rfft2',
           'irfft2', 'fftn', 'ifftn', 'rfftn', 'irfftn', 'fftfreq', 'rfftfreq', 'fftshift',
           'ifftshift']


def _fft_norm(s, func_name, norm):
  """The factor applied to the transform for `norm` (`s`: the transform lengths)."""
  if norm == "backward":
    return creation.array(1)
  s, = promote_dtypes_inexact(s)
  inverse = func_name.startswith("i")
  if norm == "ortho":
    root = ufuncs.sqrt(reductions.prod(s))
    return root if inverse else 1 / root
  if norm == "forward":
    size = reductions.prod(s)
    return size if inverse else 1 / size
  raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')


def _fft_core(func_name, fft_type, a, s, axes, norm):
  full_name = f"jax.numpy.fft.{func_name}"
  check_arraylike(full_name, a)
  arr = creation.asarray(a)
  if s is not None:
    s = tuple(map(operator.index, s))
    if any(n <= 0 for n in s):
      raise ValueError("Shape should be positive.")
  if s is not None and axes is not None and len(s) != len(axes):
    raise ValueError("Shape and axes have different lengths.")
  orig_axes = axes
  if axes is None:
    axes = range(arr.ndim) if s is None else range(arr.ndim - len(s), arr.ndim)
  if len(axes) != len(set(axes)):
    raise ValueError(f"{full_name} does not support repeated axes. Got axes {axes}.")

  # lax.fft transforms the innermost dimensions: move the axes there.
  if orig_axes is not None:
    axes = tuple(range(arr.ndim - len(axes), arr.ndim))
    arr = manipulation.moveaxis(arr, orig_axes, axes)

  if s is not None:
    in_s = list(arr.shape)
    for axis, n in zip(axes, s):
      in_s[axis] = n
    if fft_type == FftType.IRFFT:
      in_s[-1] = in_s[-1] // 2 + 1
    arr = arr[tuple(map(slice, in_s))]  # crop
    arr = manipulation.pad(arr, [(0, n - m) for n, m in zip(in_s, arr.shape)])
  elif fft_type == FftType.IRFFT:
    s = [arr.shape[axis] for axis in axes[:-1]]
    if axes:
      s += [max(0, 2 * (arr.shape[axes[-1]] - 1))]
  else:
    s = [arr.shape[axis] for axis in axes]
  transformed = _fft_core_nd(arr, fft_type, s)
  if norm is not None:
    transformed *= _fft_norm(creation.array(s, dtype=transformed.dtype), func_name, norm)
  if orig_axes is not None:
    transformed = manipulation.moveaxis(transformed, axes, orig_axes)
  return transformed


def _fft_core_nd(arr, fft_type, s):
  """lax.fft over the last len(s) axes, in chunks of at most 3 axes (2+2 for 4)."""
  if len(s) <= 3:
    return lax.fft(arr, fft_type, tuple(s))
  n = 2 if len(s) == 4 else 3
  src = tuple(range(arr.ndim - len(s), arr.ndim - n))
  dst = tuple(range(arr.ndim - len(s) + n, arr.ndim))
  if fft_type in (FftType.RFFT, FftType.FFT):
    arr = lax.fft(arr, fft_type, tuple(s)[-n:])
    arr = manipulation.moveaxis(arr, src, dst)
    arr = _fft_core_nd(arr, FftType.FFT, s[:-n])
    return manipulation.moveaxis(arr, dst, src)
  arr = manipulation.moveaxis(arr, src, dst)
  arr = _fft_core_nd(arr, FftType.IFFT, s[:-n])
  arr = manipulation.moveaxis(arr, dst, src)
  return lax.fft(arr, fft_type, tuple(s)[-n:])


def _check_one_axis(func_name, axis):
  if isinstance(axis, (list, tuple)):
    full_name = f"jax.numpy.fft.{func_name}"
    raise ValueError(f"{full_name} does not support multiple axes. Please use "
                     f"{full_name}n. Got axis = {axis!r}.")


def _fft_core_1d(func_name, fft_type, a, n, axis, norm):
  _check_one_axis(func_name, axis)
  return _fft_core(func_name, fft_type, a, None if n is None else [n],
                   None if axis is None else [axis], norm)


def _fft_core_2d(func_name, fft_type, a, s, axes, norm):
  if len(axes) != 2:
    raise ValueError(f"jax.numpy.fft.{func_name} only supports 2 axes. Got axes = {axes!r}.")
  return _fft_core(func_name, fft_type, a, s, axes, norm)


def fft(a, n=None, axis=-1, norm=None):
  """One-dimensional discrete Fourier transform along `axis` (length `n`:
  cropped or zero-padded)."""
  return _fft_core_1d("fft", FftType.FFT, a, n, axis, norm)


def ifft(a, n=None, axis=-1, norm=None):
  """One-dimensional inverse discrete Fourier transform."""
  return _fft_core_1d("ifft", FftType.IFFT, a, n, axis, norm)


def rfft(a, n=None, axis=-1, norm=None):
  """Fourier transform of real input: the `n // 2 + 1` non-negative frequencies."""
  return _fft_core_1d("rfft", FftType.RFFT, a, n, axis, norm)


def irfft(a, n=None, axis=-1, norm=None):
  """Inverse of `rfft`: `n` real samples (default `2 * (m - 1)` for `m` inputs)."""
  return _fft_core_1d("irfft", FftType.IRFFT, a, n, axis, norm)


def hfft(a, n=None, axis=-1, norm=None):
  """Transform of a signal with Hermitian symmetry (given by its first half):
  `irfft(conj(a), n) * n`, normalized as a forward transform."""
  conj_a = ufuncs.conj(a)
  _check_one_axis("hfft", axis)
  nn = (conj_a.shape[axis] - 1) * 2 if n is None else n
  return _fft_core_1d("hfft", FftType.IRFFT, conj_a, n, axis, norm) * nn


def ihfft(a, n=None, axis=-1, norm=None):
  """Inverse of `hfft`: `conj(rfft(a, n)) / n`, normalized as an inverse transform."""
  _check_one_axis("ihfft", axis)
  arr = creation.asarray(a)
  nn = arr.shape[axis] if n is None else n
  output = _fft_core_1d("ihfft", FftType.RFFT, arr, n, axis, norm)
  return ufuncs.conj(output) * (1 / nn)


def fftn(a, s=None, axes=None, norm=None):
  """N-dimensional discrete Fourier transform over `axes` (all by default;
  the last `len(s)` when only `s` is given)."""
  return _fft_core("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a, s=None, axes=None, norm=None):
  """N-dimensional inverse discrete Fourier transform."""
  return _fft_core("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm=None):
  """N-dimensional transform of real input (the last axis halved as in `rfft`)."""
  return _fft_core("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a, s=None, axes=None, norm=None):
  """Inverse of `rfftn`."""
  return _fft_core("irfftn", FftType.IRFFT, a, s, axes, norm)


def fft2(a, s=None, axes=(-2, -1), norm=None):
  """Two-dimensional discrete Fourier transform."""
  return _fft_core_2d("fft2", FftType.FFT, a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
  """Two-dimensional inverse discrete Fourier transform."""
  return _fft_core_2d("ifft2", FftType.IFFT, a, s, axes, norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
  """Two-dimensional transform of real input."""
  return _fft_core_2d("rfft2", FftType.RFFT, a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
  """Inverse of `rfft2`."""
  return _fft_core_2d("irfft2", FftType.IRFFT, a, s, axes, norm)


def _check_freq_args(func_name, n, d):
  if isinstance(n, (list, tuple)):
    raise ValueError(f"The n argument of jax.numpy.fft.{func_name} only takes an int. "
                     f"Got n = {list(n)}.")
  if isinstance(d, (list, tuple)):
    raise ValueError(f"The d argument of jax.numpy.fft.{func_name} only takes a single "
                     f"value. Got d = {list(d)}.")


def fftfreq(n, d=1.0, *, dtype=None, device=None):
  """Sample frequencies of `fft`'s output: `[0, 1, ..., -2, -1] / (d * n)`."""
  dtype = dtype or dtypes.default_float_dtype()
  _check_freq_args("fftfreq", n, d)
  k = creation.zeros(n, dtype=dtype)
  half = (n + 1) // 2  # the non-negative frequencies
  k = k.at[0:half].set(creation.arange(0, half, dtype=dtype))
  k = k.at[half:].set(creation.arange(-(n // 2), 0, dtype=dtype))
  return k / creation.array(d * n, dtype=dtype)


def rfftfreq(n, d=1.0, *, dtype=None, device=None):
  """Sample frequencies of `rfft`'s output: `[0, 1, ..., n // 2] / (d * n)`."""
  dtype = dtype or dtypes.default_float_dtype()
  _check_freq_args("rfftfreq", n, d)
  k = creation.arange(0, n // 2 + 1, dtype=dtype)
  return k / creation.array(d * n, dtype=dtype)


def _shift(name, x, axes, sign):
  check_arraylike(name, x)
  x = creation.asarray(x)
  if axes is None:
    axes = tuple(range(x.ndim))
    shift = [sign * (dim // 2) for dim in x.shape]
  elif isinstance(axes, int):
    shift = sign * (x.shape[axes] // 2)
  else:
    shift = [sign * (x.shape[axis] // 2) for axis in axes]
  return manipulation.roll(x, shift, axes)


def fftshift(x, axes=None):
  """Moves the zero frequency to the center (rolls each axis by half its size)."""
  return _shift("fftshift", x, axes, 1)


def ifftshift(x, axes=None):
  """The inverse of `fftshift`."""
  return _shift("ifftshift", x, axes, -1)
