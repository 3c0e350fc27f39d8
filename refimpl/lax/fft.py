"""The FFT primitive: discrete Fourier transforms over the innermost 1-3 dimensions."""

import enum
import operator

import numpy as np

from refimpl import dtypes
from refimpl.core import Primitive, get_aval
from refimpl.interpreters import ad, batching
from refimpl.lax.elementwise import conj, convert_element_type, div, mul
from refimpl.lax.indexing import dynamic_update_slice
from refimpl.lax.rules import as_dtype
from refimpl.lax.shapes import expand_dims, full_like

__all__ = ['FftType', 'fft', 'fft_p']


class FftType(enum.IntEnum):
  """Which transform `fft` computes."""
  FFT = 0    # forward complex-to-complex
  IFFT = 1   # inverse complex-to-complex
  RFFT = 2   # forward real-to-complex
  IRFFT = 3  # inverse complex-to-real

  def __str__(self):
    return f"FftType.{self.name}"


fft_p = Primitive("fft")


@fft_p.def_impl
def _fft_reference(x, *, fft_type, fft_lengths):
  """Discrete Fourier transform over the last `len(fft_lengths)` (1 to 3)
  dimensions of `x`; the leading dimensions are batch dimensions.

  With `N = prod(fft_lengths)` and `e(t) = exp(-2πi t)`, over the
  transformed indices `k`, `j` (`k·j/n` summed over the dimensions):

  * `FFT`: `y[k] = sum_j x[j] e(k·j/n)`; complex64/complex128 in and out,
    same shape; the last dims of `x` must equal `fft_lengths`.
  * `IFFT`: `y[k] = (1/N) sum_j x[j] e(-k·j/n)`; as `FFT` otherwise.
  * `RFFT`: the `FFT` of a real `x` (float32/float64 → complex64/complex128),
    keeping only the non-negative frequencies of the last dimension: its
    size becomes `n // 2 + 1`.
  * `IRFFT`: the inverse of `RFFT`: complex → real, output sized
    `fft_lengths`. The last transformed dimension of `x` should hold
    `n // 2 + 1` entries (more are ignored, missing ones read as zeros).
    `x` is read as the first half of a Hermitian spectrum:
    inverse complex transforms over the leading transformed dimensions,
    then a complex-to-real inverse over the last, in which the imaginary
    parts of the zero-frequency entry (and, for even `n`, of the `n / 2`
    entry) are ignored.

  Values: the exact transform (computed in complex128), rounded once.
  A transform length of 0 gives an all-zero (or empty) result. NaN and inf
  propagate into the outputs they contribute to; which outputs become NaN
  rather than inf depends on the FFT algorithm and is not specified.
  """
  axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))
  out_aval = _fft_shape_rule(get_aval(x), fft_type=fft_type, fft_lengths=fft_lengths)
  if 0 in fft_lengths:
    return np.zeros(out_aval.shape, out_aval.dtype)
  if fft_type == FftType.FFT:
    y = np.fft.fftn(x.astype(np.complex128), axes=axes)
  elif fft_type == FftType.IFFT:
    y = np.fft.ifftn(x.astype(np.complex128), axes=axes)
  elif fft_type == FftType.RFFT:
    y = np.fft.rfftn(x.astype(np.float64), axes=axes)
  else:
    y = np.fft.irfftn(x.astype(np.complex128), s=fft_lengths, axes=axes)
  return as_dtype(y, out_aval.dtype)


@fft_p.def_abstract_eval
def _fft_shape_rule(x, *, fft_type, fft_lengths):
  if not 1 <= len(fft_lengths) <= 3:
    raise ValueError(f"fft supports 1 to 3 fft_lengths, got {fft_lengths}.")
  if len(fft_lengths) > x.ndim:
    raise ValueError(f"FFT input shape {x.shape} must have at least as many input "
                     f"dimensions as fft_lengths {fft_lengths}.")
  minor = x.shape[x.ndim - len(fft_lengths):]
  if fft_type == FftType.RFFT:
    if x.dtype not in (np.float32, np.float64):
      raise ValueError(f"RFFT input must be float32 or float64, got {x.dtype}")
    if minor != fft_lengths:
      raise ValueError(f"RFFT input shape {x.shape} minor dimensions must be equal to "
                       f"fft_lengths {fft_lengths}")
    shape = x.shape[:x.ndim - len(fft_lengths)] + fft_lengths[:-1] + (fft_lengths[-1] // 2 + 1,)
    return x.update(shape=shape, dtype=dtypes.to_complex_dtype(x.dtype))
  if not dtypes.is_complex(x.dtype):
    raise ValueError(f"{fft_type.name} input must be complex64 or complex128, got {x.dtype}")
  if fft_type == FftType.IRFFT:
    if minor[:-1] != fft_lengths[:-1]:
      raise ValueError(f"IRFFT input shape {x.shape} minor dimensions must be equal to "
                       f"all except the last fft_length, got fft_lengths={fft_lengths}")
    shape = x.shape[:x.ndim - len(fft_lengths)] + fft_lengths
    return x.update(shape=shape, dtype=dtypes.to_real_dtype(x.dtype))
  if minor != fft_lengths:
    raise ValueError(f"FFT input shape {x.shape} minor dimensions must be equal to "
                     f"fft_lengths {fft_lengths}")
  return x


def _fft_type(fft_type):
  if isinstance(fft_type, FftType):
    return fft_type
  if isinstance(fft_type, str) and fft_type.upper() in FftType.__members__:
    return FftType[fft_type.upper()]
  if isinstance(fft_type, str):
    raise ValueError(f"Unknown FFT type '{fft_type}'")
  raise TypeError(f"Unknown FFT type value '{fft_type}'")


def fft(x, fft_type, fft_lengths):
  """Fourier transform of `x` over its last `len(fft_lengths)` dimensions.

  `fft_type` is an `FftType` or its name (`"fft"`, `"IRFFT"`, ...). The
  operand is converted first: integers and booleans to the default float,
  then to complex (complex128 for 64-bit floats, else complex64) for FFT,
  IFFT and IRFFT; RFFT rejects complex input. Empty `fft_lengths` returns the converted operand.
  """
  fft_type = _fft_type(fft_type)
  dtype = dtypes.dtype(x)
  if not dtypes.is_inexact(dtype):
    dtype = dtypes.canonicalize_dtype(dtypes.promote_types(dtype, np.float64))
  if fft_type == FftType.RFFT and dtypes.is_complex(dtype):
    raise ValueError("only real valued inputs supported for rfft")
  if fft_type != FftType.RFFT:
    wide = dtype in (np.float64, np.complex128)
    dtype = dtypes.canonicalize_dtype(np.complex128 if wide else np.complex64)
  x = convert_element_type(x, dtype)
  fft_lengths = tuple(operator.index(n) for n in fft_lengths)
  if not fft_lengths:
    return x
  return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths)


# --- differentiation rules ---
# fft is linear. The DFT matrix is symmetric, so FFT and IFFT are their own
# transposes. RFFT and IRFFT keep only half of a Hermitian spectrum, so their
# transposes weigh the entries standing for two frequencies (all but the zero
# one and, for even n, the n/2 one) by a mask, as JAX's rules do.

def _hermitian_mask(like, size, n, dtype=None):
  """`[1, 2, ..., 2, 1]` (a last 2, not 1, for odd `n`): the multiplicity of
  each of the `size` stored frequencies of a real signal of length `n`."""
  one = full_like(like, 1.0, shape=(1,), dtype=dtype)
  mask = dynamic_update_slice(full_like(like, 2.0, shape=(size,), dtype=dtype), one, (0,))
  if n % 2 == 0:
    mask = dynamic_update_slice(mask, one, (size - 1,))
  return expand_dims(mask, tuple(range(get_aval(like).ndim - 1)))


def _rfft_transpose(ct, fft_lengths):
  size = get_aval(ct).shape[-1]
  mask = _hermitian_mask(ct, size, fft_lengths[-1])
  out = fft(div(conj(ct), mask), FftType.IRFFT, fft_lengths)
  return mul(np.array(np.prod(fft_lengths), dtypes.dtype(out)), out)


def _irfft_transpose(ct, fft_lengths):
  x = fft(ct, FftType.RFFT, fft_lengths)
  dtype = dtypes.dtype(x)
  mask = _hermitian_mask(ct, get_aval(x).shape[-1], fft_lengths[-1], dtype)
  scale = np.array(1 / np.prod(fft_lengths), dtype)
  return conj(mul(mul(scale, mask), x))  # conjugated: JAX's convention for complex values


def _fft_transpose(ct, operand, *, fft_type, fft_lengths):
  if fft_type == FftType.RFFT:
    return [_rfft_transpose(ct, fft_lengths)]
  if fft_type == FftType.IRFFT:
    return [_irfft_transpose(ct, fft_lengths)]
  return [fft(ct, fft_type, fft_lengths)]


ad.deflinear2(fft_p, _fft_transpose)


def _fft_batch(args, dims, *, fft_type, fft_lengths):
  # the transformed dimensions are the last ones: the batch axis goes first
  (x,), (d,) = args, dims
  return fft_p.bind(batching.moveaxis(x, d, 0), fft_type=fft_type, fft_lengths=fft_lengths), 0


batching.primitive_batchers[fft_p] = _fft_batch
