"""dot_general on the numba-cuda backend: a thread a result element, adding
its products in ascending order of the contracted index from zero, in the
contraction dtype (as the CPU's `batched_matmul`, whose bits it has; the
CPU's BLAS products are within the tolerance docs/backends.md states)."""

import math

from refimpl.lax import linalg as lax
from numba_backend.cuda.lower import CUDA_RULES
from numba_backend.lower import type_source
from numba_backend.rules.linalg import from_compute, matmul_operands


def _dot_general(ctx, lhs, rhs, *, dimension_numbers, precision, preferred_element_type):
  (out_aval,) = ctx.avals_out
  a, b, (batch, m, depth, n), compute = matmul_operands(ctx, lhs, rhs, dimension_numbers)
  out, count = ctx.fresh(), math.prod(out_aval.shape)
  ctx.emit(f"{out} = {ctx.lowering.allocation(ctx.dim(count), type_source(compute))}")
  m, depth, n, zero = ctx.dim(m), ctx.dim(depth), ctx.dim(n), ctx.lowering.const(0, compute)
  t, p, i, j, k, acc = (ctx.fresh(x) for x in "tpijka")
  with ctx.lowering.elements(t, ctx.dim(count)):
    ctx.emit(f"{p}, {i}, {j} = {t} // ({m} * {n}), ({t} // {n}) % {m}, {t} % {n}")
    ctx.emit(f"{acc} = {zero}")
    with ctx.lowering.block(f"for {k} in range({depth}):"):
      product = f"{a}[({p} * {m} + {i}) * {depth} + {k}] * {b}[({p} * {depth} + {k}) * {n} + {j}]"
      ctx.emit(f"{acc} = {type_source(compute)}({acc} + {type_source(compute)}({product}))")
    ctx.emit(f"{out}[{t}] = {acc}")
  return from_compute(ctx, out, compute, out_aval)


CUDA_RULES[lax.dot_general_p] = _dot_general
