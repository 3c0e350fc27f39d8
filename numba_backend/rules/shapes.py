"""Lowering rules of the shape primitives (refimpl/lax/shapes.py): strided
copies of C-contiguous arrays (`Lowering.strided_copy` and the like), or
views where the data does not move (reshape, squeeze).

Key arrays: a value of `key<fry>[*S]` is its physical data uint32[*S, 2]
(`core.physical_aval`), so each rule works on physical avals and extends
its params over the trailing element dimensions (`physical_avals`,
`element_rank`), which the primitives never touch; the rules are
registered for equations on keys too (`register_with_keys`).
"""

import math

from refimpl import core, dtypes
from refimpl.lax import shapes as lax
from numba_backend.kernels import broadcast_strides, c_strides
from numba_backend.lower import (cast, element_to_store, register, register_for_keys, storage_dtype,
                                 type_source)


def element_rank(aval):
  """The number of trailing element dimensions of `aval`'s physical data (2 for keys: 1)."""
  return len(aval.dtype.element_shape) if dtypes.is_extended(aval.dtype) else 0


def physical_avals(ctx):
  """The physical avals (`core.physical_aval`) of the equation's operands and results."""
  return ([core.physical_aval(a) for a in ctx.avals_in],
          [core.physical_aval(a) for a in ctx.avals_out])


def register_with_keys(*primitives):
  """Registers a rule of `primitives` for their equations on any dtype, key arrays too."""
  def register_rule(rule):
    register_for_keys(*primitives)(rule)
    return register(*primitives)(rule)
  return register_rule


def trailing(dims, start, count):
  """`dims` extended by the `count` dimensions from `start` on."""
  return (*dims, *range(start, start + count))


def strided(ctx, x, aval, out_aval, offset, strides):
  """The value of `out_aval` (physical) whose element at multi-index i is
  x's flat element `offset + sum_j i_j * strides[j]` (x of physical `aval`)."""
  if not out_aval.shape and not aval.shape:
    return x
  out, out_flat = ctx.empty_flat(out_aval)
  ctx.lowering.strided_copy(ctx.flat(x, aval), ctx.dim(offset), ctx.ints(strides),
                            ctx.ints(out_aval.shape), out_flat)
  return ctx.result(out, out_aval)


@register_with_keys(lax.broadcast_in_dim_p)
def _broadcast_in_dim(ctx, x, *, shape, broadcast_dimensions, sharding=None):
  (aval,), (out_aval,) = physical_avals(ctx)
  e = element_rank(ctx.avals_in[0])
  if math.prod(aval.shape) == math.prod(out_aval.shape):   # new size-1 axes only
    return _reshaped(ctx, x, aval, out_aval)
  dims = trailing(broadcast_dimensions, len(shape), e)
  return strided(ctx, x, aval, out_aval, 0, broadcast_strides(aval.shape, dims, out_aval.shape))


def _reshaped(ctx, x, aval, out_aval):
  """x (of physical `aval`) as a value of the physical `out_aval`, sharing its data."""
  if not aval.shape:
    if not out_aval.shape:
      return x
    name = ctx.fresh()
    value, dtype = element_to_store(x, aval.dtype), type_source(storage_dtype(aval.dtype))
    ctx.emit(f"{name} = {ctx.lowering.full(ctx.shape(out_aval.shape), value, dtype)}")
    return name
  return ctx.result(x, out_aval)


@register_with_keys(lax.reshape_p)
def _reshape(ctx, x, *, new_sizes, dimensions, sharding=None):
  (aval,), (out_aval,) = physical_avals(ctx)
  if dimensions is not None and tuple(dimensions) != tuple(range(len(dimensions))):
    permutation = trailing(dimensions, len(dimensions), element_rank(ctx.avals_in[0]))
    permuted = aval.update(shape=tuple(aval.shape[i] for i in permutation))
    x, aval = _permuted(ctx, x, aval, permuted, permutation), permuted
  return _reshaped(ctx, x, aval, out_aval)


@register_with_keys(lax.squeeze_p)
def _squeeze(ctx, x, *, dimensions):
  (aval,), (out_aval,) = physical_avals(ctx)
  return _reshaped(ctx, x, aval, out_aval)


def _permuted(ctx, x, aval, out_aval, permutation):
  operand_strides = c_strides(aval.shape)
  return strided(ctx, x, aval, out_aval, 0, [operand_strides[i] for i in permutation])


@register_with_keys(lax.transpose_p)
def _transpose(ctx, x, *, permutation):
  (aval,), (out_aval,) = physical_avals(ctx)
  permutation = trailing(permutation, len(permutation), element_rank(ctx.avals_in[0]))
  return _permuted(ctx, x, aval, out_aval, permutation)


@register_with_keys(lax.rev_p)
def _rev(ctx, x, *, dimensions):
  (aval,), (out_aval,) = physical_avals(ctx)
  strides = list(c_strides(aval.shape))
  offset = 0
  for j in dimensions:
    offset += (aval.shape[j] - 1) * strides[j] if aval.shape[j] else 0
    strides[j] = -strides[j]
  return strided(ctx, x, aval, out_aval, offset, strides)


@register_with_keys(lax.concatenate_p)
def _concatenate(ctx, *operands, dimension):
  avals, (out_aval,) = physical_avals(ctx)
  out, out_flat = ctx.empty_flat(out_aval)
  out_strides = c_strides(out_aval.shape)
  position = 0
  for x, aval in zip(operands, avals):
    ctx.lowering.strided_assign(out_flat, ctx.dim(position * out_strides[dimension]),
                                ctx.ints(out_strides), ctx.ints(aval.shape), ctx.flat(x, aval))
    position += aval.shape[dimension]
  return ctx.result(out, out_aval)


@register_with_keys(lax.split_p)
def _split(ctx, x, *, sizes, axis):
  (aval,), out_avals = physical_avals(ctx)
  strides = c_strides(aval.shape)
  outs, position = [], 0
  for size, out_aval in zip(sizes, out_avals):
    outs.append(strided(ctx, x, aval, out_aval, position * strides[axis], strides))
    position += size
  return outs


@register_with_keys(lax.stack_p)
def _stack(ctx, *operands, axis):
  """Operand i fills the result's slice i along `axis`."""
  avals, (out_aval,) = physical_avals(ctx)
  out, out_flat = ctx.empty_flat(out_aval)
  out_strides = c_strides(out_aval.shape)
  slice_strides = out_strides[:axis] + out_strides[axis + 1:]
  for i, (x, aval) in enumerate(zip(operands, avals)):
    ctx.lowering.strided_assign(out_flat, ctx.dim(i * out_strides[axis]), ctx.ints(slice_strides),
                                ctx.ints(aval.shape), ctx.flat(x, aval))
  return ctx.result(out, out_aval)


@register_with_keys(lax.unstack_p)
def _unstack(ctx, x, *, axis):
  """Result i reads x's slice i along `axis`."""
  (aval,), out_avals = physical_avals(ctx)
  strides = c_strides(aval.shape)
  slice_strides = strides[:axis] + strides[axis + 1:]
  return [strided(ctx, x, aval, out_aval, i * strides[axis], slice_strides)
          for i, out_aval in enumerate(out_avals)]


@register_with_keys(lax.tile_p)
def _tile(ctx, x, *, reps):
  """The result viewed as shape (reps[0], d0, reps[1], d1, ...) reads x at
  strides (0, s0, 0, s1, ...)."""
  (aval,), (out_aval,) = physical_avals(ctx)
  if not aval.shape:
    return x
  rank = len(reps)
  strides = c_strides(aval.shape)
  view_shape = [n for r, d in zip(reps, aval.shape) for n in (r, d)] + list(aval.shape[rank:])
  view_strides = [n for s in strides[:rank] for n in (0, s)] + list(strides[rank:])
  out, out_flat = ctx.empty_flat(out_aval)
  ctx.lowering.strided_copy(ctx.flat(x, aval), ctx.dim(0), ctx.ints(view_strides),
                            ctx.ints(view_shape), out_flat)
  return ctx.result(out, out_aval)


@register_with_keys(lax.pad_p)
def _pad(ctx, x, padding_value, *, padding_config):
  """The result filled with the padding value, then the operand's elements
  that land inside it (interior + 1 apart, from `low`) moved there."""
  (aval, value_aval), (out_aval,) = physical_avals(ctx)
  if not aval.shape:
    return x
  e = element_rank(ctx.avals_in[0])
  config = [*padding_config, *[(0, 0, 0)] * e]
  out, out_flat = ctx.empty_flat(out_aval)
  fill_strides = [0] * len(padding_config) + list(c_strides(value_aval.shape))
  ctx.lowering.strided_copy(ctx.flat(padding_value, value_aval), ctx.dim(0),
                            ctx.ints(fill_strides), ctx.ints(out_aval.shape), out_flat)
  in_strides, out_strides = c_strides(aval.shape), c_strides(out_aval.shape)
  src_offset = dst_offset = 0
  counts, dst_strides = [], []
  for size, out_size, (low, _, interior), s, t in zip(
      aval.shape, out_aval.shape, config, in_strides, out_strides):
    step = interior + 1
    first = max(0, -(low // step))   # the first operand index at a position >= 0
    last = min(size - 1, (out_size - 1 - low) // step)
    counts.append(max(0, last - first + 1))
    src_offset += first * s
    dst_offset += (low + first * step) * t
    dst_strides.append(t * step)
  ctx.lowering.strided_move(ctx.flat(x, aval), ctx.dim(src_offset), ctx.ints(in_strides),
                            ctx.ints(counts), out_flat, ctx.dim(dst_offset), ctx.ints(dst_strides))
  return ctx.result(out, out_aval)


@register(lax.iota_p)
def _iota(ctx, *, dtype, shape, dimension, sharding=None):
  """Element k (row-major) is its index along `dimension`: (k // inner) % size."""
  (out_aval,) = ctx.avals_out
  (out, flat), k = ctx.empty_flat(out_aval), ctx.fresh("k")
  size, inner = ctx.dim(shape[dimension]), ctx.dim(math.prod(shape[dimension + 1:]))
  with ctx.lowering.elements(k, ctx.dim(math.prod(shape))):
    value = cast(f"({k} // {inner}) % {size}", dtype)
    ctx.emit(f"{flat}[{k}] = {element_to_store(value, dtype)}")
  return ctx.result(out, out_aval)


@register_with_keys(lax.optimization_barrier_p)
def _optimization_barrier(ctx, *operands):
  return list(operands)
