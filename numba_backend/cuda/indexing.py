"""gather and scatter on the numba-cuda backend, with the CPU rules' window
arithmetic (numba_backend/rules/indexing.py) computed on the device from
each element's index alone (`kernels.window_position`): every start is
clamped, or its window filled or dropped, before any access.

gather is one kernel, a thread an element of the result. scatter is a
kernel of one thread writing the updates in the reference's order, so that
repeated indices combine as there, deterministically (and slowly: a
parallel scatter must keep that order)."""

import numpy as np

from refimpl.lax import indexing as lax
from numba_backend.cuda import kernels
from numba_backend.cuda.lower import CUDA_RULES
from numba_backend.lower import type_source
from numba_backend.rules import indexing as cpu


def _on_device(ctx, indices, indices_aval, operand_aval, index_map, operand_batching_dims,
               indices_batching_dims, window_shape, window_dims, other_batch_strides,
               other_window_strides, clip):
  """(the count of the windows' elements, the source of `window_position`'s
  arguments after k): the indices widened to int64 by a kernel."""
  flat, wide, k = ctx.fresh("f"), ctx.fresh("w"), ctx.fresh("k")
  ctx.emit(f"{flat} = {ctx.flat(indices, indices_aval)}")
  ctx.emit(f"{wide} = {ctx.lowering.allocation(f'{flat}.size', type_source(np.int64))}")
  with ctx.lowering.elements(k, f"{flat}.size"):
    ctx.emit(f"{wide}[{k}] = {cpu.index_scalar(f'{flat}[{k}]', indices_aval.dtype)}")
  arguments = (f"{wide}, {ctx.ints(index_map)}, {ctx.ints(operand_batching_dims)}, "
               f"{ctx.ints(indices_batching_dims)}, {ctx.ints(indices_aval.shape[:-1])}, "
               f"{ctx.ints(operand_aval.shape)}, {ctx.ints(window_shape)}, "
               f"{ctx.ints(window_dims)}, {ctx.ints(other_batch_strides)}, "
               f"{ctx.ints(other_window_strides)}, {ctx.dim(clip)}")
  return ctx.dim(cpu.window_count(indices_aval, window_shape, window_dims)), arguments


def _named(ctx, source):
  """A name for the array `source` (a view made on the host: kernels take arrays)."""
  name = ctx.fresh("f")
  ctx.emit(f"{name} = {source}")
  return name


def _take(ctx, operand, windows, fill, out):
  """A kernel over the result's elements, each copying its operand element or the fill."""
  operand, out = _named(ctx, operand), _named(ctx, out)
  count, arguments = _on_device(ctx, **windows)
  k, p, q = ctx.fresh("k"), ctx.fresh("p"), ctx.fresh("q")
  with ctx.lowering.elements(k, count):
    ctx.emit(f"{p}, {q} = {ctx.function(kernels.window_position)}({k}, {arguments})")
    ctx.emit(f"{out}[{q}] = {operand}[{p}] if {p} >= 0 else {fill}")


def _apply(ctx, out, windows, updates, combiner, dtype):
  """A kernel of one thread writing the updates in order."""
  updates = _named(ctx, updates)
  count, arguments = _on_device(ctx, **windows)
  t, k, p, q = ctx.fresh("t"), ctx.fresh("k"), ctx.fresh("p"), ctx.fresh("q")
  with ctx.lowering.elements(t, "1"):
    with ctx.lowering.block(f"for {k} in range({count}):"):
      ctx.emit(f"{p}, {q} = {ctx.function(kernels.window_position)}({k}, {arguments})")
      cpu.combine_at(ctx, combiner, out, p, f"{updates}[{q}]", dtype)


CUDA_RULES[lax.gather_p] = cpu.gather_rule(_take)
for _primitive in (lax.scatter_p, *cpu.COMBINERS):
  CUDA_RULES[_primitive] = cpu.scatter_rule(_primitive, _apply)
