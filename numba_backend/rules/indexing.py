"""Lowering rules of the indexing primitives (refimpl/lax/indexing.py).

Indices are data, so no index value can make a program read or write
outside a buffer: every start is brought into [0, dim - size] (clamped, or
its window filled or dropped, per the primitive's rule) before any access,
in int64 arithmetic on indices saturated to int64 (`_INT64_MAX` for
larger uint64s: the same clamp and the same out-of-bounds decision as on
the reference's Python ints, since no dimension comes near it).

gather and scatter share one kernel (`window_positions`, compiled once per
index dtype) listing, for each element of each window in the reference's
order (batch positions row-major, then the window row-major), its flat
position in the operand (-1 for a filled or dropped window) and in the
other array (gather's output, scatter's updates); the mode is a value
read at run time, so programs differing only in it share their code. gather then copies
(`gather_take`, once per dtype); scatter writes a loop in the program
applying its combiner, the scalar lowering of the combining primitive or
of `update_jaxpr`, in that order, so repeated indices combine as in the
reference.

Key arrays: the rules work on the physical data (`shapes.physical_avals`),
whose trailing element dimensions are whole window dimensions, and are
registered for equations on keys too (plain scatter only of the scatters).
"""

import math

import numpy as np

from refimpl import dtypes
from refimpl.core import ShapedArray
from refimpl.interpreters.partial_eval import trace_to_jaxpr
from refimpl.lax import elementwise, indexing as lax
from numba_backend.kernels import c_strides, kernel_jit
from numba_backend.lower import (LoweringError, element_to_store, lower_jaxpr, read_element,
                                 register)
from numba_backend.rules.shapes import (element_rank, physical_avals, register_with_keys, strided,
                                       trailing)

_INT64_MAX = np.iinfo(np.int64).max


# --- kernels ---------------------------------------------------------------------------

@kernel_jit
def widen_indices(indices):
  """The int64 array of the values of a flat integer array (not uint64)."""
  out = np.empty(indices.size, np.int64)
  for k in range(indices.size):
    out[k] = indices[k]
  return out


@kernel_jit
def widen_uint64_indices(indices):
  """The int64 array of the values of a flat uint64 array, saturated at the largest int64."""
  out = np.empty(indices.size, np.int64)
  limit = np.uint64(_INT64_MAX)
  for k in range(indices.size):
    out[k] = np.int64(min(indices[k], limit))
  return out


@kernel_jit
def clamped_offset(shape, sizes, starts):
  """The flat offset, in a C-contiguous array of `shape`, of the block of
  `sizes` at `starts`, each start clamped to [0, dim - size]."""
  offset, stride = 0, 1
  for d in range(shape.size - 1, -1, -1):
    start = min(max(starts[d], 0), shape[d] - sizes[d])
    offset += start * stride
    stride *= shape[d]
  return offset


@kernel_jit
def window_positions(indices, index_map, operand_batching_dims, indices_batching_dims,
                     batch_shape, operand_shape, window_shape, window_dims,
                     other_batch_strides, other_window_strides, clip,
                     operand_positions, other_positions):
  """For each element of each window (batch positions row-major, then the
  window's elements row-major): its flat position in the operand, or -1
  where the window is not inside the operand and not `clip`ped, and in the
  other array (strides per batch dimension and per window dimension).

  `indices` (int64, flat) holds one index vector of `index_map.size`
  entries per batch position; a window of `window_shape` (one size per
  operand dimension) starts at index vector entry k along operand dimension
  `index_map[k]`, at the batch coordinate `indices_batching_dims[j]` along
  `operand_batching_dims[j]`, at 0 elsewhere; `window_dims` are the operand
  dimensions that map to the other array's window dimensions."""
  rank = operand_shape.size
  operand_strides = np.empty(rank, np.int64)
  stride = 1
  for d in range(rank - 1, -1, -1):
    operand_strides[d] = stride
    stride *= operand_shape[d]
  num_batch = 1
  for i in range(batch_shape.size):
    num_batch *= batch_shape[i]
  window_size = 1
  for j in range(window_dims.size):
    window_size *= window_shape[window_dims[j]]
  vector = index_map.size
  batch = np.zeros(batch_shape.size, np.int64)
  start = np.zeros(rank, np.int64)
  window = np.zeros(window_dims.size, np.int64)
  k = 0
  for b in range(num_batch):
    start[:] = 0
    for j in range(vector):
      start[index_map[j]] = indices[b * vector + j]
    for j in range(operand_batching_dims.size):
      start[operand_batching_dims[j]] = batch[indices_batching_dims[j]]
    inside = True
    position = 0
    for d in range(rank):
      high = operand_shape[d] - window_shape[d]
      s = start[d]
      if s < 0 or s > high:
        inside = False
        s = 0 if s < 0 else high
      position += s * operand_strides[d]
    if not (inside or clip):
      position = -1
    other = 0
    for i in range(batch_shape.size):
      other += batch[i] * other_batch_strides[i]
    window[:] = 0
    for _ in range(window_size):
      operand_positions[k] = position
      other_positions[k] = other
      k += 1
      for j in range(window_dims.size - 1, -1, -1):   # the next window element, row-major
        d = window_dims[j]
        window[j] += 1
        other += other_window_strides[j]
        if position >= 0:
          position += operand_strides[d]
        if window[j] < window_shape[d]:
          break
        other -= other_window_strides[j] * window_shape[d]
        if position >= 0:
          position -= operand_strides[d] * window_shape[d]
        window[j] = 0
    for i in range(batch_shape.size - 1, -1, -1):   # the next batch position, row-major
      batch[i] += 1
      if batch[i] < batch_shape[i]:
        break
      batch[i] = 0


@kernel_jit
def gather_take(operand, operand_positions, out_positions, fill, out):
  """out[out_positions[k]] = operand[operand_positions[k]], or `fill` where that is -1."""
  for k in range(operand_positions.size):
    p = operand_positions[k]
    out[out_positions[k]] = operand[p] if p >= 0 else fill


@kernel_jit
def scatter_put(out, operand_positions, updates_positions, updates):
  """out[operand_positions[k]] = updates[updates_positions[k]] in order, except where -1."""
  for k in range(operand_positions.size):
    p = operand_positions[k]
    if p >= 0:
      out[p] = updates[updates_positions[k]]


# --- helpers -----------------------------------------------------------------------------

def index_scalar(value, dtype):
  """Source of the int64 value of the integer scalar `value` (uint64 saturated)."""
  if np.dtype(dtype) == np.uint64:
    return f"np.int64(min({value}, np.uint64({_INT64_MAX})))"
  return f"np.int64({value})"


def _starts(ctx, starts, dtype, rank):
  """The name of an int64 array of the scalar start indices (then zeros up to `rank`)."""
  name = ctx.fresh("s")
  ctx.emit(f"{name} = np.zeros({ctx.dim(rank)}, np.int64)")
  for i, s in enumerate(starts):
    ctx.emit(f"{name}[{i}] = {index_scalar(s, dtype)}")
  return name


def _widened(ctx, indices, aval):
  """Source of the int64 flat array of the index array `indices`."""
  kernel = widen_uint64_indices if np.dtype(aval.dtype) == np.uint64 else widen_indices
  return f"{ctx.function(kernel)}({ctx.flat(indices, aval)})"


def _copy(ctx, x, aval):
  """The name of a new flat array holding the value `x` (of physical `aval`)."""
  name = ctx.fresh("o")
  if aval.shape:
    ctx.emit(f"{name} = {ctx.lowering.copy(ctx.flat(x, aval))}")
  else:
    ctx.emit(f"{name} = {ctx.flat(x, aval)}")   # a new one-element array
  return name


def _positions(ctx, indices, indices_aval, operand_aval, index_map, operand_batching_dims,
               indices_batching_dims, window_shape, window_dims, other_batch_strides,
               other_window_strides, clip):
  """The names of the arrays of operand and other positions (`window_positions`)."""
  size = window_count(indices_aval, window_shape, window_dims)
  operand_positions, other_positions = ctx.fresh("p"), ctx.fresh("q")
  ctx.emit(f"{operand_positions} = np.empty({ctx.dim(size)}, np.int64)")
  ctx.emit(f"{other_positions} = np.empty({ctx.dim(size)}, np.int64)")
  ctx.emit(f"{ctx.function(window_positions)}({_widened(ctx, indices, indices_aval)}, "
           f"{ctx.ints(index_map)}, {ctx.ints(operand_batching_dims)}, "
           f"{ctx.ints(indices_batching_dims)}, {ctx.ints(indices_aval.shape[:-1])}, "
           f"{ctx.ints(operand_aval.shape)}, {ctx.ints(window_shape)}, {ctx.ints(window_dims)}, "
           f"{ctx.ints(other_batch_strides)}, {ctx.ints(other_window_strides)}, "
           f"{ctx.dim(clip)}, {operand_positions}, {other_positions})")
  return operand_positions, other_positions


def window_count(indices_aval, window_shape, window_dims):
  """The number of elements of all windows: batch positions times a window's size."""
  return math.prod(indices_aval.shape[:-1]) * math.prod(window_shape[d] for d in window_dims)


# --- slice, dynamic_slice, dynamic_update_slice --------------------------------------------

@register_with_keys(lax.slice_p)
def _slice(ctx, x, *, start_indices, limit_indices, strides):
  (aval,), (out_aval,) = physical_avals(ctx)
  e = element_rank(ctx.avals_in[0])
  steps = [*(strides or (1,) * len(start_indices)), *(1,) * e]
  starts = [*start_indices, *(0,) * e]
  operand_strides = c_strides(aval.shape)
  offset = sum(s * t for s, t in zip(starts, operand_strides))
  return strided(ctx, x, aval, out_aval, offset, [t * n for t, n in zip(operand_strides, steps)])


@register_with_keys(lax.dynamic_slice_p)
def _dynamic_slice(ctx, x, *starts, slice_sizes):
  (aval, *index_avals), (out_aval,) = physical_avals(ctx)
  if not aval.shape:
    return x
  starts = _starts(ctx, starts, index_avals[0].dtype if index_avals else np.int64, aval.ndim)
  offset = (f"{ctx.function(clamped_offset)}({ctx.ints(aval.shape)}, "
            f"{ctx.ints(out_aval.shape)}, {starts})")
  out, out_flat = ctx.empty_flat(out_aval)
  ctx.lowering.strided_copy(ctx.flat(x, aval), offset, ctx.ints(c_strides(aval.shape)),
                            ctx.ints(out_aval.shape), out_flat)
  return ctx.result(out, out_aval)


@register_with_keys(lax.dynamic_update_slice_p)
def _dynamic_update_slice(ctx, x, update, *starts):
  (aval, update_aval, *index_avals), (out_aval,) = physical_avals(ctx)
  if not aval.shape:
    return update
  starts = _starts(ctx, starts, index_avals[0].dtype if index_avals else np.int64, aval.ndim)
  out = _copy(ctx, x, aval)
  offset = (f"{ctx.function(clamped_offset)}({ctx.ints(aval.shape)}, "
            f"{ctx.ints(update_aval.shape)}, {starts})")
  ctx.lowering.strided_assign(out, offset, ctx.ints(c_strides(aval.shape)),
                              ctx.ints(update_aval.shape), ctx.flat(update, update_aval))
  return ctx.result(out, out_aval)


# --- gather --------------------------------------------------------------------------------

def _fill_value(ctx, fill_value, dtype):
  """Source of the fill element (in storage) of a FILL_OR_DROP gather of `dtype`
  (an extended dtype's element words each get the fill, converted to their dtype)."""
  logical = dtype
  if dtypes.is_extended(dtype):
    dtype = dtype.element_dtype
  if fill_value is None:
    fill_value = lax._default_fill_value(logical)
  value = elementwise.convert_element_type_p.impl(np.asarray(fill_value), new_dtype=dtype,
                                                  weak_type=False)
  return element_to_store(ctx.lowering.const(value, dtype), dtype)


def gather_rule(take):
  """The gather rule whose copy is `take(ctx, operand, windows, fill, out)`:
  `operand` and `out` sources of flat arrays, `windows` the keyword arguments
  of `_positions` (out the other array), `fill` the fill element's source."""
  def rule(ctx, operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted,
           unique_indices, mode, fill_value):
    (aval, indices_aval), (out_aval,) = physical_avals(ctx)
    dnums = dimension_numbers
    e = element_rank(ctx.avals_in[0])
    logical_rank = len(slice_sizes)
    window_shape = [*slice_sizes, *aval.shape[logical_rank:]]
    offset_dims = trailing(dnums.offset_dims, ctx.avals_out[0].ndim, e)
    window_dims = [d for d in range(aval.ndim)
                   if d not in dnums.collapsed_slice_dims + dnums.operand_batching_dims]
    out_strides = c_strides(out_aval.shape)
    batch_dims = [d for d in range(out_aval.ndim) if d not in offset_dims]
    fill = mode == lax.GatherScatterMode.FILL_OR_DROP
    windows = dict(
        indices=indices, indices_aval=indices_aval, operand_aval=aval,
        index_map=dnums.start_index_map, operand_batching_dims=dnums.operand_batching_dims,
        indices_batching_dims=dnums.start_indices_batching_dims, window_shape=window_shape,
        window_dims=window_dims, other_batch_strides=[out_strides[d] for d in batch_dims],
        other_window_strides=[out_strides[d] for d in offset_dims], clip=not fill)
    fill_element = _fill_value(ctx, fill_value if fill else None, ctx.avals_in[0].dtype)
    out, out_flat = ctx.empty_flat(out_aval)
    take(ctx, ctx.flat(operand, aval), windows, fill_element, out_flat)
    return ctx.result(out, out_aval)
  return rule


def _take(ctx, operand, windows, fill, out):
  operand_positions, out_positions = _positions(ctx, **windows)
  ctx.emit(f"{ctx.function(gather_take)}({operand}, {operand_positions}, {out_positions}, "
           f"{fill}, {out})")


register_with_keys(lax.gather_p)(gather_rule(_take))


# --- scatter -------------------------------------------------------------------------------

COMBINERS = {
    lax.scatter_add_p: elementwise.add_p, lax.scatter_sub_p: elementwise.sub_p,
    lax.scatter_mul_p: elementwise.mul_p, lax.scatter_min_p: elementwise.min_p,
    lax.scatter_max_p: elementwise.max_p,
}


def _combiner(primitive, update_jaxpr, dtype):
  """The ClosedJaxpr of scalars (x, u) -> [combine(x, u)], or None for plain scatter."""
  if update_jaxpr is not None:
    return update_jaxpr
  if primitive is lax.scatter_p:
    return None
  scalar = ShapedArray((), dtype)
  return trace_to_jaxpr(lambda x, u: [COMBINERS[primitive].bind(x, u)], [scalar, scalar])


def scatter_rule(primitive, apply):
  """The rule of scatter `primitive` whose writes are `apply(ctx, out, windows,
  updates, combiner, dtype)`: into the new flat array named `out` (the
  operand's copy), the flat `updates` (a source) at the windows' positions
  (`windows` the keyword arguments of `_positions`, updates the other
  array), by `combiner` (`_combiner`'s) on elements of `dtype`."""
  def rule(ctx, operand, indices, updates, *, dimension_numbers, indices_are_sorted,
           unique_indices, mode, update_jaxpr, update_consts):
    (aval, indices_aval, updates_aval), (out_aval,) = physical_avals(ctx)
    dnums = dimension_numbers
    e = element_rank(ctx.avals_in[0])
    update_window_dims = trailing(dnums.update_window_dims, ctx.avals_in[2].ndim, e)
    window_dims = [d for d in range(aval.ndim)
                   if d not in dnums.inserted_window_dims + dnums.operand_batching_dims]
    window_sizes = iter(updates_aval.shape[d] for d in update_window_dims)
    window_shape = [next(window_sizes) if d in window_dims else 1 for d in range(aval.ndim)]
    updates_strides = c_strides(updates_aval.shape)
    batch_dims = [d for d in range(updates_aval.ndim) if d not in update_window_dims]
    windows = dict(
        indices=indices, indices_aval=indices_aval, operand_aval=aval,
        index_map=dnums.scatter_dims_to_operand_dims,
        operand_batching_dims=dnums.operand_batching_dims,
        indices_batching_dims=dnums.scatter_indices_batching_dims, window_shape=window_shape,
        window_dims=window_dims, other_batch_strides=[updates_strides[d] for d in batch_dims],
        other_window_strides=[updates_strides[d] for d in update_window_dims],
        clip=mode == lax.GatherScatterMode.CLIP)
    out = _copy(ctx, operand, aval)
    apply(ctx, out, windows, ctx.flat(updates, updates_aval),
          _combiner(primitive, update_jaxpr, aval.dtype), aval.dtype)
    return ctx.result(out, out_aval)
  return rule


def _apply(ctx, out, windows, updates, combiner, dtype):
  """The writes in a kernel (plain scatter) or a loop of the program."""
  operand_positions, updates_positions = _positions(ctx, **windows)
  if combiner is None:
    ctx.emit(f"{ctx.function(scatter_put)}({out}, {operand_positions}, "
             f"{updates_positions}, {updates})")
    return
  k, p, u = ctx.fresh("k"), ctx.fresh("p"), ctx.fresh("u")
  ctx.emit(f"{u} = {updates}")
  with ctx.lowering.block(f"for {k} in range({operand_positions}.size):"):
    ctx.emit(f"{p} = {operand_positions}[{k}]")
    combine_at(ctx, combiner, out, p, f"{u}[{updates_positions}[{k}]]", dtype)


def combine_at(ctx, combiner, out, p, update, dtype):
  """Statements setting out[p] = combine(out[p], update) where p >= 0
  (`update` the source of the update's stored element); out[p] = update
  for plain scatter (combiner None)."""
  with ctx.lowering.block(f"if {p} >= 0:"):
    if combiner is None:
      ctx.emit(f"{out}[{p}] = {update}")
      return
    x, u = ctx.fresh("x"), ctx.fresh("x")
    ctx.emit(f"{x} = {read_element(f'{out}[{p}]', dtype)}")
    ctx.emit(f"{u} = {read_element(update, dtype)}")
    consts = []
    for c in combiner.consts:
      if np.ndim(c):
        raise LoweringError("the numba backend lowers scatter update_jaxpr consts that "
                            f"are scalars only, got one of shape {np.shape(c)}")
      consts.append(ctx.lowering.const(c, np.asarray(c).dtype))
    (result,) = lower_jaxpr(ctx.lowering, combiner.jaxpr, [*consts, x, u])
    ctx.emit(f"{out}[{p}] = {element_to_store(result, dtype)}")


register_with_keys(lax.scatter_p)(scatter_rule(lax.scatter_p, _apply))   # whole keys written
for _primitive in COMBINERS:
  register(_primitive)(scatter_rule(_primitive, _apply))
