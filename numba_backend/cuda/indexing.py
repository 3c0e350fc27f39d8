"""gather and scatter on the numba-cuda backend, with the CPU rules' window
arithmetic (numba_backend/rules/indexing.py) computed on the device from
each element's index alone (`kernels.window_position`): every start is
clamped, or its window filled or dropped, before any access.

gather is one kernel, a thread an element of the result. scatter orders
its updates by operand position, stably (the sort's merge passes), so that
a thread for each position applies that position's updates in the
reference's order: repeated indices combine as there, deterministically,
and distinct positions in parallel."""

import numpy as np

from refimpl.lax import indexing as lax
from numba_backend.cuda import kernels
from numba_backend.cuda.lower import CUDA_RULES, named
from numba_backend.cuda.sorting import merge_sort
from numba_backend.lower import type_source
from numba_backend.rules import indexing as cpu


def _on_device(ctx, indices, indices_aval, operand_aval, index_map, operand_batching_dims,
               indices_batching_dims, window_shape, window_dims, other_batch_strides,
               other_window_strides, clip):
  """(the count of the windows' elements, the source of `window_position`'s
  arguments after k): the indices widened to int64 by a kernel."""
  flat, wide, k = named(ctx, ctx.flat(indices, indices_aval)), ctx.fresh("w"), ctx.fresh("k")
  ctx.emit(f"{wide} = {ctx.lowering.allocation(f'{flat}.size', type_source(np.int64))}")
  with ctx.lowering.elements(k, f"{flat}.size"):
    ctx.emit(f"{wide}[{k}] = {cpu.index_scalar(f'{flat}[{k}]', indices_aval.dtype)}")
  arguments = (f"{wide}, {ctx.ints(index_map)}, {ctx.ints(operand_batching_dims)}, "
               f"{ctx.ints(indices_batching_dims)}, {ctx.ints(indices_aval.shape[:-1])}, "
               f"{ctx.ints(operand_aval.shape)}, {ctx.ints(window_shape)}, "
               f"{ctx.ints(window_dims)}, {ctx.ints(other_batch_strides)}, "
               f"{ctx.ints(other_window_strides)}, {ctx.dim(clip)}")
  return ctx.dim(cpu.window_count(indices_aval, window_shape, window_dims)), arguments


def _take(ctx, operand, windows, fill, out):
  """A kernel over the result's elements, each copying its operand element or the fill."""
  operand, out = named(ctx, operand), named(ctx, out)
  count, arguments = _on_device(ctx, **windows)
  k, p, q = ctx.fresh("k"), ctx.fresh("p"), ctx.fresh("q")
  with ctx.lowering.elements(k, count):
    ctx.emit(f"{p}, {q} = {ctx.function(kernels.window_position)}({k}, {arguments})")
    ctx.emit(f"{out}[{q}] = {operand}[{p}] if {p} >= 0 else {fill}")


def _apply(ctx, out, windows, updates, combiner, dtype):
  """The updates' operand positions (-1: dropped) by a kernel, a thread an
  update element; their stable order by position (`merge_sort`); then a
  kernel a thread a position of that order: a plain scatter's last update
  of each operand position writes it, and a combiner's first one combines
  all of that position's updates into it, in the reference's order."""
  updates = named(ctx, updates)
  count, arguments = _on_device(ctx, **windows)
  targets = named(ctx, ctx.lowering.allocation(f"(1, {count})", "np.int64"))
  sources, order = (named(ctx, ctx.lowering.allocation(count, "np.int64")) for _ in range(2))
  k, j, i, p = ctx.fresh("k"), ctx.fresh("j"), ctx.fresh("i"), ctx.fresh("p")
  with ctx.lowering.elements(k, count):
    ctx.emit(f"{targets}[0, {k}], {sources}[{k}] = "
             f"{ctx.function(kernels.window_position)}({k}, {arguments})")
  merge_sort(ctx, targets, (1, cpu.window_count(windows["indices_aval"], windows["window_shape"],
                                                 windows["window_dims"]), 1), order)

  def target(j):
    return f"{targets}[0, {order}[{j}]]"

  def update(j):
    return f"{updates}[{sources}[{order}[{j}]]]"

  with ctx.lowering.elements(j, count):
    ctx.emit(f"{p} = {target(j)}")
    if combiner is None:
      with ctx.lowering.block(f"if {j} == {count} - 1 or {target(f'{j} + 1')} != {p}:"):
        cpu.combine_at(ctx, None, out, p, update(j), dtype)
    else:
      with ctx.lowering.block(f"if {j} == 0 or {target(f'{j} - 1')} != {p}:"):
        ctx.emit(f"{i} = {j}")
        with ctx.lowering.block(f"while {i} < {count} and {target(i)} == {p}:"):
          cpu.combine_at(ctx, combiner, out, p, update(i), dtype)
          ctx.emit(f"{i} += 1")


CUDA_RULES[lax.gather_p] = cpu.gather_rule(_take)
for _primitive in (lax.scatter_p, *cpu.COMBINERS):
  CUDA_RULES[_primitive] = cpu.scatter_rule(_primitive, _apply)
