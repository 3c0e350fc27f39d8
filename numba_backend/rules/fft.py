"""Lowering rule of fft (refimpl/lax/fft.py): NumPy's FFT functions, which
the rocket-fft package implements in Numba (the pocketfft code NumPy
uses), in complex128 (float64 for RFFT's operand) over the last
`len(fft_lengths)` dimensions, rounded once to the result dtype, as the
reference computes. A zero length gives zeros (decided at run time: the
lengths are static integers of the program)."""

import math

from refimpl.lax.fft import FftType, fft_p
from numba_backend.lower import LoweringError, register, type_source

try:
  import rocket_fft  # noqa: F401 (registers numpy.fft with Numba)
except ImportError:   # the numba extra brings it
  rocket_fft = None


@register(fft_p)
def _fft(ctx, x, *, fft_type, fft_lengths):
  """One-dimensional transforms axis after axis, in the order NumPy's
  fftn, rfftn and irfftn take them (so the results are NumPy's, bit for bit)."""
  if rocket_fft is None:
    raise LoweringError("the numba backend lowers 'fft' with the rocket-fft package, "
                        "which is not installed")
  (aval,), (out_aval,) = ctx.avals_in, ctx.avals_out
  axes = list(range(aval.ndim - len(fft_lengths), aval.ndim))
  out = ctx.fresh()
  with ctx.lowering.block(f"if {ctx.dim(math.prod(fft_lengths))} == 0:"):
    ctx.emit(f"{out} = np.zeros({ctx.shape(out_aval.shape)}, {type_source(out_aval.dtype)})")
  with ctx.lowering.block("else:"):
    if fft_type == FftType.RFFT:
      ctx.emit(f"{out} = np.fft.rfft({x}.astype(np.float64), axis={axes[-1]})")
      steps = [("fft", axis) for axis in reversed(axes[:-1])]
    else:
      ctx.emit(f"{out} = {x}.astype(np.complex128)")
      if fft_type == FftType.IRFFT:
        steps = [("ifft", axis) for axis in axes[:-1]]
      else:
        steps = [(fft_type.name.lower(), axis) for axis in reversed(axes)]
    for function, axis in steps:
      ctx.emit(f"{out} = np.fft.{function}({out}, axis={axis})")
    if fft_type == FftType.IRFFT:
      ctx.emit(f"{out} = np.fft.irfft({out}, n={ctx.dim(fft_lengths[-1])}, axis={axes[-1]})")
    ctx.emit(f"{out} = np.ascontiguousarray({out}.astype({type_source(out_aval.dtype)}))")
  return out
