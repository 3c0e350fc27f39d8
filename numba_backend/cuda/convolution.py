"""conv_general_dilated on the numba-cuda backend: the CPU's rule
(numba_backend/rules/convolution.py, `conv_rule`) with a thread a canonical
output element, which sums its products from zero in the contraction dtype
as the CPU's kernel does (`conv_positions`: tap by tap in row-major order,
then input feature by input feature, holes and padding skipped), so the
bits are the CPU's; its output position lives in a local array."""

import math

from refimpl.lax import convolution as lax
from numba_backend.cuda.kernels import device_version
from numba_backend.cuda.lower import CUDA_RULES
from numba_backend.lower import type_source
from numba_backend.rules import convolution as cpu

conv_bases = device_version(cpu.conv_bases, __name__)
conv_positions = device_version(cpu.conv_positions, __name__)


def _canonical(ctx, operands, shapes, out_shape, compute):
  """A thread an element e of the canonical output (n, o, y...)."""
  size, out = ctx.dim(math.prod(out_shape)), ctx.fresh()
  ctx.emit(f"{out} = {ctx.lowering.allocation(size, type_source(compute))}")
  zero = ctx.lowering.const(0, compute)
  x_shape, w_shape, shape, config = shapes
  positions, features = ctx.dim(math.prod(out_shape[2:])), ctx.dim(out_shape[1])
  e, q, y, x_base, w_base = (ctx.fresh(k) for k in ("e", "q", "y", "b", "b"))
  with ctx.lowering.elements(e, size):
    ctx.emit(f"{y} = cuda.local.array({max(len(out_shape) - 2, 1)}, np.int64)")
    ctx.emit(f"{x_base}, {w_base} = {ctx.function(conv_bases)}({x_shape}, {w_shape}, {shape}, "
             f"{config}, {e} // {positions} // {features}, {e} // {positions} % {features})")
    ctx.emit(f"{q} = {e} % {positions}")
    ctx.emit(f"{ctx.function(conv_positions)}({operands}, {x_shape}, {w_shape}, {shape}, "
             f"{config}, {x_base}, {w_base}, {q}, {q} + 1, {y}, {zero}, {out}, {e} - {q})")
  return out


CUDA_RULES[lax.conv_general_dilated_p] = cpu.conv_rule(_canonical)
