"""Lowering rules of the shape primitives (refimpl/lax/shapes.py): strided
copies of C-contiguous arrays (`numba_backend.kernels`), or views where the
data does not move (reshape, squeeze)."""

import math

import numpy as np

from refimpl.lax import shapes as lax
from numba_backend.kernels import c_strides
from numba_backend.lower import cast, element_to_store, register, storage_dtype, type_source


def strided(ctx, x, aval, out_aval, offset, strides):
  """The value of `out_aval` whose element at multi-index i is x's flat
  element `offset + sum_j i_j * strides[j]`."""
  if not out_aval.shape and not aval.shape:
    return x
  out = ctx.empty(out_aval)
  ctx.emit(f"K.strided_copy({ctx.flat(x, aval)}, {ctx.dim(offset)}, {ctx.ints(strides)}, "
           f"{ctx.ints(out_aval.shape)}, {ctx.flat(out, out_aval)})")
  return ctx.result(out, out_aval)


@register(lax.broadcast_in_dim_p)
def _broadcast_in_dim(ctx, x, *, shape, broadcast_dimensions, sharding=None):
  (aval,), (out_aval,) = ctx.avals_in, ctx.avals_out
  operand_strides = c_strides(aval.shape)
  strides = [0] * len(shape)
  for k, j in enumerate(broadcast_dimensions):
    if aval.shape[k] != 1:
      strides[j] = operand_strides[k]
  return strided(ctx, x, aval, out_aval, 0, strides)


def _reshaped(ctx, x):
  """x as an array of the result's shape, sharing its data."""
  (aval,), (out_aval,) = ctx.avals_in, ctx.avals_out
  if not aval.shape:
    if not out_aval.shape:
      return x
    name = ctx.fresh()
    ctx.emit(f"{name} = np.full({ctx.shape(out_aval.shape)}, "
             f"{element_to_store(x, aval.dtype)}, {type_source(storage_dtype(aval.dtype))})")
    return name
  return ctx.result(x, out_aval)


@register(lax.reshape_p)
def _reshape(ctx, x, *, new_sizes, dimensions, sharding=None):
  if dimensions is not None and tuple(dimensions) != tuple(range(len(dimensions))):
    (aval,) = ctx.avals_in
    permuted = aval.update(shape=tuple(aval.shape[i] for i in dimensions))
    x = _permuted(ctx, x, aval, permuted, dimensions)
  return _reshaped(ctx, x)


@register(lax.squeeze_p)
def _squeeze(ctx, x, *, dimensions):
  return _reshaped(ctx, x)


def _permuted(ctx, x, aval, out_aval, permutation):
  operand_strides = c_strides(aval.shape)
  return strided(ctx, x, aval, out_aval, 0, [operand_strides[i] for i in permutation])


@register(lax.transpose_p)
def _transpose(ctx, x, *, permutation):
  (aval,), (out_aval,) = ctx.avals_in, ctx.avals_out
  return _permuted(ctx, x, aval, out_aval, permutation)


@register(lax.rev_p)
def _rev(ctx, x, *, dimensions):
  (aval,), (out_aval,) = ctx.avals_in, ctx.avals_out
  strides = list(c_strides(aval.shape))
  offset = 0
  for j in dimensions:
    offset += (aval.shape[j] - 1) * strides[j] if aval.shape[j] else 0
    strides[j] = -strides[j]
  return strided(ctx, x, aval, out_aval, offset, strides)


@register(lax.concatenate_p)
def _concatenate(ctx, *operands, dimension):
  (out_aval,) = ctx.avals_out
  out = ctx.empty(out_aval)
  out_flat = ctx.flat(out, out_aval)
  out_strides = c_strides(out_aval.shape)
  position = 0
  for x, aval in zip(operands, ctx.avals_in):
    if math.prod(aval.shape):
      ctx.emit(f"K.strided_assign({out_flat}, {ctx.dim(position * out_strides[dimension])}, "
               f"{ctx.ints(out_strides)}, {ctx.ints(aval.shape)}, {ctx.flat(x, aval)})")
    position += aval.shape[dimension]
  return ctx.result(out, out_aval)


@register(lax.iota_p)
def _iota(ctx, *, dtype, shape, dimension, sharding=None):
  """Element k (row-major) is its index along `dimension`: (k // inner) % size."""
  (out_aval,) = ctx.avals_out
  out = ctx.empty(out_aval)
  flat, k = ctx.flat(out, out_aval), ctx.fresh("k")
  size, inner = ctx.dim(shape[dimension]), ctx.dim(math.prod(shape[dimension + 1:]))
  with ctx.lowering.block(f"for {k} in range({ctx.dim(math.prod(shape))}):"):
    value = cast(f"({k} // {inner}) % {size}", dtype)
    ctx.emit(f"{flat}[{k}] = {element_to_store(value, dtype)}")
  return ctx.result(out, out_aval)


@register(lax.optimization_barrier_p)
def _optimization_barrier(ctx, *operands):
  return list(operands)
