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


def transforms(fft_type, fft_lengths, ndim):
  """The one-dimensional transforms by which NumPy's fftn, ifftn, rfftn and
  irfftn compute `fft_type` over the last `len(fft_lengths)` of `ndim`
  dimensions, in the order they apply them: (np.fft's function name, axis,
  transform length)."""
  axes = list(range(ndim - len(fft_lengths), ndim))
  if fft_type == FftType.RFFT:
    steps = [("rfft", axes[-1])] + [("fft", axis) for axis in reversed(axes[:-1])]
  elif fft_type == FftType.IRFFT:
    steps = [("ifft", axis) for axis in axes[:-1]] + [("irfft", axes[-1])]
  else:
    steps = [(fft_type.name.lower(), axis) for axis in reversed(axes)]
  lengths = dict(zip(axes, fft_lengths))
  return [(function, axis, lengths[axis]) for function, axis in steps]


def unless_empty(ctx, fft_lengths, transform):
  """The name of fft's result: zeros where a transform length is 0 (decided
  at run time), else the array whose source `transform()` returns, having
  written the statements computing it."""
  (out_aval,) = ctx.avals_out
  out = ctx.fresh()
  with ctx.lowering.block(f"if {ctx.dim(math.prod(fft_lengths))} == 0:"):
    zeros = ctx.lowering.full(ctx.shape(out_aval.shape), 0, type_source(out_aval.dtype))
    ctx.emit(f"{out} = {zeros}")
  with ctx.lowering.block("else:"):
    ctx.emit(f"{out} = {transform()}")
  return out


@register(fft_p)
def _fft(ctx, x, *, fft_type, fft_lengths):
  """One-dimensional transforms axis after axis, in the order NumPy's fftn,
  rfftn and irfftn take them (so the results are NumPy's, bit for bit)."""
  if rocket_fft is None:
    raise LoweringError("the numba backend lowers 'fft' with the rocket-fft package, "
                        "which is not installed")
  (aval,), (out_aval,) = ctx.avals_in, ctx.avals_out

  def transform():
    out = ctx.fresh()
    ctx.emit(f"{out} = {x}.astype(np.{'float64' if fft_type == FftType.RFFT else 'complex128'})")
    for function, axis, n in transforms(fft_type, fft_lengths, aval.ndim):
      length = f", n={ctx.dim(n)}" if function == "irfft" else ""
      ctx.emit(f"{out} = np.fft.{function}({out}{length}, axis={axis})")
    return f"np.ascontiguousarray({out}.astype({type_source(out_aval.dtype)}))"

  return unless_empty(ctx, fft_lengths, transform)
