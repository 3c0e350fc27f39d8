"""`refimpl.scipy.signal`: convolutions and spectral analysis, as `jax.scipy.signal`.

Inputs are promoted to an inexact dtype (integers give the default float).
`convolve`/`correlate` (and the 2-D forms) lower to `lax.conv_general_dilated`
over the whole arrays, `fftconvolve` multiplies real or complex FFTs;
`stft`, `csd`, `welch` and `istft` cut the signal into windowed segments
along one axis as SciPy does ('hann' windows are computed here, other window
names come from `scipy.signal.get_window`). JAX's restrictions are kept:
convolve2d/correlate2d only take boundary='fill' with fillvalue=0, `detrend`
only the 'constant' and 'linear' types, and `istft` does not check SciPy's
nonzero-overlap-add condition.
"""

import functools
import math
import operator
import warnings

import numpy as np

from refimpl import dtypes, lax
from refimpl.lax.shapes import canonicalize_axis
from refimpl.numpy import (
    arange, asarray, array, broadcast_shapes, concatenate, conjugate, flip, iscomplexobj,
    linalg, linspace, matmul, median, moveaxis, ones, pad, real, imag, repeat, sin, sqrt,
    transpose, vstack, where, zeros, zeros_like)
from refimpl.numpy import fft as jnp_fft
from refimpl.numpy.creation import concrete, ensure_arraylike
from refimpl.numpy.util import check_arraylike, promote_dtypes_inexact
from refimpl.vectorize import vmap

__all__ = ["convolve", "convolve2d", "correlate", "correlate2d", "csd", "detrend",
           "fftconvolve", "istft", "stft", "welch"]

_MODES = ["full", "same", "valid"]


def _to_complex(x):
  """`x` promoted to an inexact dtype, then to the complex dtype of that precision."""
  x, = promote_dtypes_inexact(x)
  return lax.convert_element_type(x, dtypes.to_complex_dtype(x.dtype))


def _concrete_int(value, context):
  return int(concrete(value, context))


# --- convolutions ----------------------------------------------------------------------------

def fftconvolve(in1, in2, mode="full", axes=None):
  """The N-D convolution of `in1` and `in2` (same rank) through FFTs: real FFTs for
  real inputs, complex ones otherwise. With `axes`, only those axes are convolved;
  the other axes must have equal sizes and are mapped over."""
  check_arraylike('fftconvolve', in1, in2)
  in1, in2 = promote_dtypes_inexact(in1, in2)
  if in1.ndim != in2.ndim:
    raise ValueError("in1 and in2 should have the same dimensionality")
  if mode not in _MODES:
    raise ValueError("mode must be one of ['same', 'full', 'valid']")
  conv = functools.partial(_fftconvolve_unbatched, mode=mode)
  if axes is None:
    return conv(in1, in2)
  axes = (axes,) if isinstance(axes, int) else tuple(axes)
  axes = tuple(canonicalize_axis(ax, in1.ndim) for ax in axes)
  mapped_axes = set(range(in1.ndim)) - set(axes)
  if any(in1.shape[i] != in2.shape[i] for i in mapped_axes):
    raise ValueError(f"mapped axes must have same shape; got {in1.shape=} {in2.shape=} {axes=}")
  for ax in sorted(mapped_axes):
    conv = vmap(conv, in_axes=ax, out_axes=ax)
  return conv(in1, in2)


def _fftconvolve_unbatched(in1, in2, mode):
  full_shape = tuple(s1 + s2 - 1 for s1, s2 in zip(in1.shape, in2.shape))
  if mode == 'valid':
    no_swap = all(s1 >= s2 for s1, s2 in zip(in1.shape, in2.shape))
    swap = all(s1 <= s2 for s1, s2 in zip(in1.shape, in2.shape))
    if not (no_swap or swap):
      raise ValueError("For 'valid' mode, One input must be at least as "
                       "large as the other in every dimension.")
    if swap:
      in1, in2 = in2, in1
  if all(s1 == 1 or s2 == 1 for s1, s2 in zip(in1.shape, in2.shape)):
    conv = in1 * in2
  else:
    if iscomplexobj(in1):
      forward, inverse = jnp_fft.fftn, jnp_fft.ifftn
    else:
      forward, inverse = jnp_fft.rfftn, jnp_fft.irfftn
    conv = inverse(forward(in1, full_shape) * forward(in2, full_shape), full_shape)
  if mode == "full":
    out_shape = full_shape
  elif mode == "same":
    out_shape = in1.shape
  else:
    out_shape = tuple(s1 - s2 + 1 for s1, s2 in zip(in1.shape, in2.shape))
  start = tuple((full - out) // 2 for full, out in zip(full_shape, out_shape))
  return lax.dynamic_slice(conv, start, out_shape)


def _convolve_nd(in1, in2, mode, *, precision):
  """The N-D convolution as one `conv_general_dilated` of the larger input by the
  flipped smaller one ('same' keeps in1's shape, centred as SciPy)."""
  if mode not in _MODES:
    raise ValueError("mode must be one of ['full', 'same', 'valid']")
  if in1.ndim != in2.ndim:
    raise ValueError("in1 and in2 must have the same number of dimensions")
  if in1.size == 0 or in2.size == 0:
    raise ValueError(f"zero-size arrays not supported in convolutions, got shapes "
                     f"{in1.shape} and {in2.shape}.")
  in1, in2 = promote_dtypes_inexact(in1, in2)
  no_swap = all(s1 >= s2 for s1, s2 in zip(in1.shape, in2.shape))
  swap = all(s1 <= s2 for s1, s2 in zip(in1.shape, in2.shape))
  if not (no_swap or swap):
    raise ValueError("One input must be smaller than the other in every dimension.")
  shape_o = in2.shape
  if swap:
    in1, in2 = in2, in1
  shape = in2.shape
  in2 = flip(in2)
  if mode == 'valid':
    padding = [(0, 0) for _ in shape]
  elif mode == 'same':
    padding = [(s - 1 - (s_o - 1) // 2, s - s_o + (s_o - 1) // 2)
               for s, s_o in zip(shape, shape_o)]
  else:
    padding = [(s - 1, s - 1) for s in shape]
  result = lax.conv_general_dilated(in1[None, None], in2[None, None], (1,) * len(shape),
                                    padding, precision=precision)
  return result[0, 0]


def convolve(in1, in2, mode='full', method='auto', precision=None):
  """The N-D convolution of `in1` and `in2` (same rank) in mode 'full', 'same' (in1's
  shape) or 'valid'; method 'auto' and 'direct' use lax.conv_general_dilated, 'fft'
  uses `fftconvolve`."""
  if method == 'fft':
    return fftconvolve(in1, in2, mode=mode)
  if method in ['direct', 'auto']:
    return _convolve_nd(asarray(in1), asarray(in2), mode, precision=precision)
  raise ValueError(f"Got {method=}; expected 'auto', 'fft', or 'direct'.")


def _check_2d(name, in1, in2, boundary, fillvalue):
  if boundary != 'fill' or fillvalue != 0:
    raise NotImplementedError(f"{name}() only supports boundary='fill', fillvalue=0")
  if np.ndim(in1) != 2 or np.ndim(in2) != 2:
    raise ValueError(f"{name}() only supports 2-dimensional inputs.")


def convolve2d(in1, in2, mode='full', boundary='fill', fillvalue=0, precision=None):
  """The 2-D convolution of 2-D `in1` and `in2`; only boundary='fill' with fillvalue=0
  (NotImplementedError otherwise)."""
  _check_2d("convolve2d", in1, in2, boundary, fillvalue)
  return _convolve_nd(asarray(in1), asarray(in2), mode, precision=precision)


def correlate(in1, in2, mode='full', method='auto', precision=None):
  """The N-D cross-correlation: `convolve(in1, flip(conj(in2)))`."""
  in2 = asarray(in2)
  return convolve(in1, flip(in2.conj()), mode, precision=precision, method=method)


def correlate2d(in1, in2, mode='full', boundary='fill', fillvalue=0, precision=None):
  """The 2-D cross-correlation of 2-D `in1` and `in2`, as SciPy's (including its
  output when in2 is the larger input); only boundary='fill' with fillvalue=0."""
  _check_2d("correlate2d", in1, in2, boundary, fillvalue)
  in1, in2 = asarray(in1), asarray(in2)
  conv = functools.partial(_convolve_nd, mode=mode, precision=precision)
  swap = all(s1 <= s2 for s1, s2 in zip(in1.shape, in2.shape))
  same_shape = all(s1 == s2 for s1, s2 in zip(in1.shape, in2.shape))
  if mode == "same":
    return flip(conv(flip(in1), in2.conj()))
  if mode == "valid":
    if swap and not same_shape:
      return conv(flip(in2), in1.conj())
    return flip(conv(flip(in1), in2.conj()))
  if swap:
    return conv(flip(in2), in1.conj()).conj()
  return flip(conv(flip(in1), in2.conj()))


# --- detrending and windowed FFTs ------------------------------------------------------------

def detrend(data, axis=-1, type='linear', bp=0, overwrite_data=None):
  """`data` minus its mean ('constant') or minus a least-squares line fitted to each
  piece between the breakpoints `bp` ('linear'), along `axis`."""
  if overwrite_data is not None:
    raise NotImplementedError("overwrite_data argument not implemented.")
  if type not in ['constant', 'linear']:
    raise ValueError("Trend type must be 'linear' or 'constant'.")
  data_arr, = promote_dtypes_inexact(asarray(data))
  if type == 'constant':
    return data_arr - data_arr.mean(axis, keepdims=True)
  n = data_arr.shape[axis]
  bp_arr = np.sort(np.unique(np.r_[0, bp, n]))
  if bp_arr[0] < 0 or bp_arr[-1] > n:
    raise ValueError("Breakpoints must be non-negative and less than length of data along "
                     "given axis.")
  data_arr = moveaxis(data_arr, axis, 0)
  shape = data_arr.shape
  data_arr = data_arr.reshape(n, -1)
  for start, stop in zip(bp_arr[:-1], bp_arr[1:]):
    npts = int(stop - start)
    design = vstack([ones(npts, dtype=data_arr.dtype),
                     arange(1, npts + 1, dtype=data_arr.dtype) / npts]).T
    piece = slice(int(start), int(stop))
    coef, *_ = linalg.lstsq(design, data_arr[piece])
    data_arr = data_arr.at[piece].add(-matmul(design, coef, precision=lax.Precision.HIGHEST))
  return moveaxis(data_arr.reshape(shape), 0, axis)


def _hann(n, dtype):
  """The periodic Hann window of length n (sin(pi k / n)^2)."""
  win = array([1.0]) if n == 1 else sin(linspace(0, np.pi, n, endpoint=False)) ** 2
  return win.astype(dtype)


def _named_window(window, n, dtype):
  """The window `window` (a name or a (name, parameters) tuple) of length n."""
  if isinstance(window, str) and window == 'hann':
    return _hann(n, dtype)
  try:
    from scipy.signal import get_window
  except ImportError as err:
    raise ImportError(f"scipy must be available to use {window=}") from err
  return array(get_window(window, n), dtype=dtype)


def _triage_segments(window, nperseg, input_length, dtype):
  """The window array and segment length from `window` (name, tuple or array) and
  `nperseg` (default: the input length for a name, the window's length for an array)."""
  if isinstance(window, (str, tuple)):
    nperseg_int = input_length if nperseg is None else int(nperseg)
    if nperseg_int > input_length:
      warnings.warn(f'nperseg={nperseg_int} is greater than {input_length=},'
                    f' using nperseg={input_length}')
      nperseg_int = input_length
    return _named_window(window, nperseg_int, dtype), nperseg_int
  win = asarray(window, dtype=dtype)
  nperseg_int = win.size if nperseg is None else int(nperseg)
  if win.ndim != 1:
    raise ValueError('window must be 1-D')
  if input_length < win.size:
    raise ValueError('window is longer than input signal')
  if nperseg_int != win.size:
    raise ValueError("value specified for nperseg is different from length of window")
  return win, nperseg_int


def _median_bias(n):
  """The bias of the median of n periodograms relative to their mean."""
  ii_2 = arange(2., n, 2)
  return 1 + (1. / (ii_2 + 1) - 1. / ii_2).sum()


def _fft_helper(x, win, detrend_func, nperseg, noverlap, nfft, sides):
  """The FFTs (length nfft) of the detrended, windowed segments of x's last axis,
  a new next-to-last axis indexing the segments."""
  if x.dtype.kind == 'i':
    x = x.astype(win.dtype)
  *batch_shape, signal_length = x.shape
  if nperseg == 1 and noverlap == 0:
    result = x[..., np.newaxis]
  else:
    starts = arange(signal_length - nperseg + 1, step=nperseg - noverlap)
    segment = lambda start: lax.dynamic_slice_in_dim(x, start, nperseg, axis=-1)
    result = vmap(segment, out_axes=-2)(starts)
  result = detrend_func(result)
  if iscomplexobj(win):
    result = _to_complex(result)
  result = win.reshape((1,) * len(batch_shape) + (1, nperseg)) * result
  if sides == 'twosided':
    return jnp_fft.fft(result, n=nfft)
  return jnp_fft.rfft(result.real, n=nfft)


def _odd_ext(x, n, axis=-1):
  """x extended by n points at each end by odd reflection about its end values."""
  if n < 1:
    return x
  if n > x.shape[axis] - 1:
    raise ValueError(f"The extension length n ({n}) is too big. "
                     f"It must not exceed x.shape[axis]-1, which is {x.shape[axis] - 1}.")
  left_end = lax.slice_in_dim(x, 0, 1, axis=axis)
  left_ext = flip(lax.slice_in_dim(x, 1, n + 1, axis=axis), axis=axis)
  right_end = lax.slice_in_dim(x, -1, None, axis=axis)
  right_ext = flip(lax.slice_in_dim(x, -(n + 1), -1, axis=axis), axis=axis)
  return concatenate((2 * left_end - left_ext, x, 2 * right_end - right_ext), axis=axis)


def _pad_ext(mode, **kwargs):
  def ext(x, n, axis=-1):
    pad_width = [(0, 0)] * x.ndim
    pad_width[axis] = (n, n)
    return pad(x, pad_width, mode, **kwargs)
  return ext


_BOUNDARY_FUNCS = {
    'even': _pad_ext('reflect'),
    'odd': _odd_ext,
    'constant': _pad_ext('edge'),
    'zeros': _pad_ext('constant', constant_values=0.0),
    None: lambda x, n, axis=-1: x,
}


def _without(shape, axis):
  return shape[:axis] + shape[axis + 1:]


def _spectral_helper(x, y, fs=1.0, window='hann', nperseg=None, noverlap=None, nfft=None,
                     detrend_type='constant', return_onesided=True, scaling='density',
                     axis=-1, mode='psd', boundary=None, padded=False):
  """SciPy's `_spectral_helper`: (frequencies, segment times, per-segment spectra),
  the cross spectra of x and y (mode 'psd' with y), x's power spectra ('psd'), or
  x's scaled FFTs ('stft')."""
  if mode not in ('psd', 'stft'):
    raise ValueError(f"Unknown value for mode {mode}, must be one of: ('psd', 'stft')")
  if boundary not in _BOUNDARY_FUNCS:
    raise ValueError(f"Unknown boundary option '{boundary}', "
                     f"must be one of: {list(_BOUNDARY_FUNCS.keys())}")
  axis = canonicalize_axis(operator.index(concrete(axis, "axis of windowed-FFT")), x.ndim)

  if y is None:
    check_arraylike('spectral_helper', x)
    x, = promote_dtypes_inexact(x)
    y_arr = x
    outershape = _without(x.shape, axis)
  else:
    if mode != 'psd':
      raise ValueError("two-argument mode is available only when mode=='psd'")
    check_arraylike('spectral_helper', x, y)
    x, y_arr = promote_dtypes_inexact(x, y)
    if x.ndim != y_arr.ndim:
      raise ValueError("two-arguments must have the same rank ({x.ndim} vs {y.ndim}).")
    try:
      outershape = broadcast_shapes(_without(x.shape, axis), _without(y_arr.shape, axis))
    except ValueError as err:
      raise ValueError('x and y cannot be broadcast together.') from err

  result_dtype = dtypes.to_complex_dtype(x.dtype)
  freq_dtype = np.finfo(result_dtype).dtype

  if nperseg is not None:
    nperseg = _concrete_int(nperseg, "nperseg of windowed-FFT")
    if nperseg < 1:
      raise ValueError('nperseg must be a positive integer')
  win, nperseg_int = _triage_segments(window, nperseg, input_length=x.shape[axis],
                                      dtype=x.dtype)
  noverlap_int = (nperseg_int // 2 if noverlap is None
                  else _concrete_int(noverlap, "noverlap of windowed-FFT"))
  nfft_int = nperseg_int if nfft is None else _concrete_int(nfft, "nfft of windowed-FFT")

  if y is None:
    if x.size == 0:
      return zeros(x.shape, freq_dtype), zeros(x.shape, freq_dtype), zeros(x.shape, result_dtype)
  elif x.size == 0 or y_arr.size == 0:
    shape = outershape[:axis] + (min(x.shape[axis], y_arr.shape[axis]),) + outershape[axis:]
    return zeros(shape, freq_dtype), zeros(shape, freq_dtype), zeros(shape, result_dtype)

  x = moveaxis(x, axis, -1)
  if y is not None and y_arr.ndim > 1:
    y_arr = moveaxis(y_arr, axis, -1)

  if y is not None and x.shape[-1] != y_arr.shape[-1]:
    if x.shape[-1] < y_arr.shape[-1]:
      pad_shape = (*x.shape[:-1], y_arr.shape[-1] - x.shape[-1])
      x = concatenate((x, zeros_like(x, shape=pad_shape)), -1)
    else:
      pad_shape = (*y_arr.shape[:-1], x.shape[-1] - y_arr.shape[-1])
      y_arr = concatenate((y_arr, zeros_like(x, shape=pad_shape)), -1)

  if nfft_int < nperseg_int:
    raise ValueError('nfft must be greater than or equal to nperseg.')
  if noverlap_int >= nperseg_int:
    raise ValueError('noverlap must be less than nperseg.')
  nstep = nperseg_int - noverlap_int

  if boundary is not None:
    ext_func = _BOUNDARY_FUNCS[boundary]
    x = ext_func(x, nperseg_int // 2, axis=-1)
    if y is not None:
      y_arr = ext_func(y_arr, nperseg_int // 2, axis=-1)

  if padded:
    nadd = (-(x.shape[-1] - nperseg_int) % nstep) % nperseg_int
    x = concatenate((x, zeros_like(x, shape=(*x.shape[:-1], nadd))), axis=-1)
    if y is not None:
      y_arr = concatenate((y_arr, zeros_like(x, shape=(*y_arr.shape[:-1], nadd))), axis=-1)

  if isinstance(detrend_type, str):
    detrend_func = functools.partial(detrend, type=detrend_type, axis=-1)
  elif callable(detrend_type):
    if axis != -1:
      def detrend_func(d):
        return moveaxis(detrend_type(moveaxis(d, axis, -1)), -1, axis)
    else:
      detrend_func = detrend_type
  elif not detrend_type:
    detrend_func = lambda d: d
  else:
    raise ValueError(f'Unsupported detrend type: {detrend_type}')

  if scaling == 'density':
    scale = 1.0 / (fs * (win * win).sum())
  elif scaling == 'spectrum':
    scale = 1.0 / win.sum() ** 2
  else:
    raise ValueError(f'Unknown scaling: {scaling}')
  if mode == 'stft':
    scale = sqrt(scale)
  scale = _to_complex(scale)

  sides = 'onesided' if return_onesided else 'twosided'
  if return_onesided and (iscomplexobj(x) or iscomplexobj(y)):
    sides = 'twosided'
    warnings.warn('Input data is complex, switching to return_onesided=False')
  if sides == 'twosided':
    freqs = jnp_fft.fftfreq(nfft_int, 1 / fs, dtype=freq_dtype)
  else:
    freqs = jnp_fft.rfftfreq(nfft_int, 1 / fs, dtype=freq_dtype)

  result = _fft_helper(x, win, detrend_func, nperseg_int, noverlap_int, nfft_int, sides)
  if y is not None:
    result_y = _fft_helper(y_arr, win, detrend_func, nperseg_int, noverlap_int, nfft_int, sides)
    result = conjugate(result) * result_y
  elif mode == 'psd':
    result = conjugate(result) * result
  result = result * scale

  if sides == 'onesided' and mode == 'psd':
    end = None if nfft_int % 2 else -1
    result = result.at[..., 1:end].mul(2)

  time = arange(nperseg_int / 2, x.shape[-1] - nperseg_int / 2 + 1, nperseg_int - noverlap_int,
                dtype=freq_dtype) / fs
  if boundary is not None:
    time = time - (nperseg_int / 2) / fs

  result = result.astype(result_dtype)
  if y is None and mode != 'stft':
    result = result.real
  return freqs, time, moveaxis(result, -1, axis)


def stft(x, fs=1.0, window='hann', nperseg=256, noverlap=None, nfft=None, detrend=False,
         return_onesided=True, boundary='zeros', padded=True, axis=-1):
  """The short-time Fourier transform: (frequencies, segment times, Zxx), Zxx with the
  frequencies in place of `axis` and the segments last, 'spectrum'-scaled as SciPy's
  (segments of `nperseg` points overlapping by `noverlap`, default nperseg // 2)."""
  return _spectral_helper(x, None, fs, window, nperseg, noverlap, nfft, detrend,
                          return_onesided, scaling='spectrum', axis=axis, mode='stft',
                          boundary=boundary, padded=padded)


def csd(x, y, fs=1.0, window='hann', nperseg=None, noverlap=None, nfft=None,
        detrend='constant', return_onesided=True, scaling='density', axis=-1, average='mean'):
  """The cross power spectral density of x and y by Welch's method: (frequencies, Pxy),
  the per-segment cross spectra averaged by 'mean' or 'median' (bias-corrected);
  y=None gives x's power spectral density."""
  freqs, _, pxy = _spectral_helper(x, y, fs, window, nperseg, noverlap, nfft, detrend,
                                   return_onesided, scaling, axis, mode='psd')
  if y is not None:
    pxy = pxy + 0j
  if pxy.ndim >= 2 and pxy.size > 0:
    if pxy.shape[-1] > 1:
      if average == 'median':
        bias = _median_bias(pxy.shape[-1]).astype(pxy.dtype)
        if iscomplexobj(pxy):
          pxy = median(real(pxy), axis=-1) + 1j * median(imag(pxy), axis=-1)
        else:
          pxy = median(pxy, axis=-1)
        pxy = pxy / bias
      elif average == 'mean':
        pxy = pxy.mean(axis=-1)
      else:
        raise ValueError(f'average must be "median" or "mean", got {average}')
    else:
      pxy = pxy.reshape(pxy.shape[:-1])
  return freqs, pxy


def welch(x, fs=1.0, window='hann', nperseg=None, noverlap=None, nfft=None,
          detrend='constant', return_onesided=True, scaling='density', axis=-1,
          average='mean'):
  """The power spectral density of x by Welch's method: (frequencies, Pxx), the real
  part of `csd(x, None, ...)`."""
  freqs, pxx = csd(x, None, fs=fs, window=window, nperseg=nperseg, noverlap=noverlap,
                   nfft=nfft, detrend=detrend, return_onesided=return_onesided,
                   scaling=scaling, axis=axis, average=average)
  return freqs, pxx.real


def _overlap_and_add(x, step_size):
  """Frames x[..., frames, frame_length] summed into one signal, frame i starting at
  i * step_size (by reshapes that shift each frame into place, as TensorFlow's)."""
  step_size = _concrete_int(step_size, "step_size for overlap_and_add")
  if x.ndim < 2:
    raise ValueError('Input must have (..., frames, frame_length) shape.')
  *batch_shape, nframes, segment_len = x.shape
  batch = math.prod(batch_shape)
  x = x.reshape((batch, nframes, segment_len))
  output_size = step_size * (nframes - 1) + segment_len
  nstep_per_segment = 1 + (segment_len - 1) // step_size
  padded_segment_len = nstep_per_segment * step_size
  x = pad(x, ((0, 0), (0, 0), (0, padded_segment_len - segment_len)))
  x = x.reshape((batch, nframes, nstep_per_segment, step_size))
  x = x.transpose((0, 2, 1, 3))
  x = pad(x, ((0, 0), (0, 0), (0, nframes), (0, 0)))
  shrunken = x.shape[2] - 1
  x = x.reshape((batch, -1))[:, :nstep_per_segment * shrunken * step_size]
  x = x.reshape((batch, nstep_per_segment, shrunken * step_size))
  x = x.sum(axis=1)[:, :output_size]
  return x.reshape(tuple(batch_shape) + (-1,))


def istft(Zxx, fs=1.0, window='hann', nperseg=None, noverlap=None, nfft=None,
          input_onesided=True, boundary=True, time_axis=-1, freq_axis=-2):
  """The inverse short-time Fourier transform: (times, x), the inverse FFTs of the
  segments windowed again, overlap-added and divided by the overlap-added squared
  window (where that exceeds 1e-10); `boundary` drops the nperseg // 2 points that
  stft's padding added at each end. As in JAX the inverse FFTs take `nfft` as given
  (None: 2 (F - 1) points for one-sided input), so an odd nperseg needs nfft."""
  Zxx = ensure_arraylike("istft", Zxx)
  if Zxx.ndim < 2:
    raise ValueError('Input stft must be at least 2d!')
  freq_axis = canonicalize_axis(freq_axis, Zxx.ndim)
  time_axis = canonicalize_axis(time_axis, Zxx.ndim)
  if freq_axis == time_axis:
    raise ValueError('Must specify differing time and frequency axes!')
  Zxx = asarray(Zxx, dtype=dtypes.to_complex_dtype(Zxx.dtype))

  n_default = 2 * (Zxx.shape[freq_axis] - 1) if input_onesided else Zxx.shape[freq_axis]
  nperseg_int = _concrete_int(nperseg or n_default, "nperseg: segment length of STFT")
  if nperseg_int < 1:
    raise ValueError('nperseg must be a positive integer')
  if nfft is None:
    nfft_int = n_default
    if input_onesided and nperseg_int == n_default + 1:
      nfft_int += 1
  else:
    nfft_int = _concrete_int(nfft, "nfft of STFT")
  if nfft_int < nperseg_int:
    raise ValueError(f'FFT length ({nfft_int}) must be longer than nperseg ({nperseg_int}).')
  noverlap_int = _concrete_int(noverlap or nperseg_int // 2, "noverlap of STFT")
  if noverlap_int >= nperseg_int:
    raise ValueError('noverlap must be less than nperseg.')
  nstep = nperseg_int - noverlap_int

  if time_axis != Zxx.ndim - 1 or freq_axis != Zxx.ndim - 2:
    outer = tuple(i for i in range(Zxx.ndim) if i not in {time_axis, freq_axis})
    Zxx = transpose(Zxx, outer + (freq_axis, time_axis))

  inverse = jnp_fft.irfft if input_onesided else jnp_fft.ifft
  xsubs = inverse(Zxx, axis=-2, n=nfft)[..., :nperseg_int, :]

  if isinstance(window, (str, tuple)):
    win = _named_window(window, nperseg_int, xsubs.dtype)
  else:
    win = asarray(window)
    if len(win.shape) != 1:
      raise ValueError('window must be 1-D')
    if win.shape[0] != nperseg_int:
      raise ValueError(f'window must have length of {nperseg_int}')
  xsubs = xsubs * win.sum()

  win = lax.expand_dims(win, (*range(xsubs.ndim - 2), -1))
  x = _overlap_and_add((xsubs * win).swapaxes(-2, -1), nstep)
  win_squared = repeat(win * win, xsubs.shape[-1], axis=-1)
  norm = _overlap_and_add(win_squared.swapaxes(-2, -1), nstep)
  if boundary:
    x = x[..., nperseg_int // 2:-(nperseg_int // 2)]
    norm = norm[..., nperseg_int // 2:-(nperseg_int // 2)]
  x = x / where(norm > 1e-10, norm, 1.0)

  if x.ndim > 1 and time_axis != Zxx.ndim - 1:
    if freq_axis < time_axis:
      time_axis -= 1
    x = moveaxis(x, -1, time_axis)
  time = arange(x.shape[0], dtype=np.finfo(x.dtype).dtype) / fs
  return time, x
