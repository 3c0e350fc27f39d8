"""Sorting primitives: `sort` (several operands sorted together by their
first `num_keys`), `top_k` and `approx_top_k`.

Two orders appear here, both total:

* The *sort order* (`sort`, and everything built on it): integers by value,
  False < True; floats by value with -0.0 equal to 0.0 and every NaN larger
  than +inf (all NaNs equal), so NaNs go to the end. This is JAX's
  comparator: it canonicalizes float keys (zeros to +0.0, NaNs to +NaN)
  before an IEEE totalOrder comparison. Complex numbers compare
  lexicographically by (real, imag), each part by IEEE totalOrder *without*
  that canonicalization (as JAX's comparator does): -NaN < -inf < ... <
  -0.0 < 0.0 < ... < +inf < +NaN.
* *IEEE totalOrder* (`top_k`, `approx_top_k`): floats ordered by their bits,
  so -NaN < -inf < ... < -0.0 < 0.0 < ... < +inf < +NaN (XLA's CPU TopK).

Sorted outputs are the operands' own elements, moved: the sign of a zero and
the payload of a NaN travel with the element.
"""

import math
import operator
from collections.abc import Sequence

import numpy as np

from refimpl import core, dtypes
from refimpl.core import Primitive, ShapedArray
from refimpl.errors import JaxRuntimeError
from refimpl.interpreters import ad, batching
from refimpl.lax.indexing import GatherDimensionNumbers, GatherScatterMode, gather
from refimpl.lax.rules import ANY, ORDERED, check_dtype
from refimpl.lax.shapes import broadcasted_iota, canonicalize_axis, expand_dims, full, reshape

__all__ = ['sort', 'sort_key_val', 'top_k', 'approx_max_k', 'approx_min_k',
           'sort_p', 'top_k_p', 'approx_top_k_p']


# --- orders as integer keys (for the reference rules) ----------------------------------------

def _total_order_key(x):
  """Integers that order like IEEE totalOrder on float array `x`.

  The float's bits read as a signed integer order non-negative floats
  correctly; for negative floats (sign bit set) the other bits are flipped,
  which reverses them: -0.0 becomes -1, just below +0.0 (0).
  """
  bits = x.view(np.dtype(f"int{8 * x.dtype.itemsize}"))
  return np.where(bits < 0, bits ^ np.iinfo(bits.dtype).max, bits)


def _canonical_float(x):
  """Zeros as +0.0 and NaNs as +NaN: the float keys of the sort order."""
  return np.where(np.isnan(x), np.array(np.nan, x.dtype),
                  np.where(x == 0, np.zeros((), x.dtype), x))


def _sort_keys(x):
  """The keys whose lexicographic order is the sort order of `x`."""
  if dtypes.is_complex(x.dtype):
    return [_total_order_key(np.ascontiguousarray(x.real)),
            _total_order_key(np.ascontiguousarray(x.imag))]
  if dtypes.is_float(x.dtype):
    return [_total_order_key(_canonical_float(x))]
  return [x.astype(np.uint8) if dtypes.is_bool(x.dtype) else x]


def _ascending_total_order(x):
  """A key whose ascending order is IEEE totalOrder (floats) or value order."""
  return _total_order_key(x) if dtypes.is_float(x.dtype) else x


def _smallest_first(x, axis, largest):
  """Indices sorting `x` along `axis` by IEEE totalOrder, ties by index.

  `largest` sorts descending; negating a key with `~` reverses its order
  without overflow (bools, signed and unsigned integers alike).
  """
  key = _ascending_total_order(x)
  return np.argsort(~key if largest else key, axis=axis, kind="stable")


# --- sort --------------------------------------------------------------------------------------

sort_p = Primitive("sort")
sort_p.multiple_results = True


@sort_p.def_impl
def _sort_reference(*operands, dimension, is_stable, num_keys):
  """Sorts all operands along `dimension` by one permutation.

  The permutation orders positions lexicographically by the first
  `num_keys` operands (the first is primary), each compared in the sort
  order: integers by value, False < True; floats by value with -0.0 equal
  to 0.0 and every NaN (either sign, any payload) equal to the others and
  above +inf; complex numbers by (real, imag), each part by IEEE totalOrder
  (-NaN < -inf < ... < -0.0 < 0.0 < ... < +inf < +NaN). Positions whose
  keys are all equal keep their original relative order: the reference is
  always stable, which is also a valid result when `is_stable` is False.
  The other operands are permuted along with the keys; every output element
  is an input element, moved (its sign of zero and NaN payload kept).

  Shape rule: operands of one shape, of rank >= 1, any dtypes; the outputs
  have the operands' shapes, dtypes and weak types. Empty dimensions sort
  to empty results.
  """
  keys = [k for op in operands[:num_keys] for k in _sort_keys(op)]
  perm = np.lexsort(keys[::-1], axis=dimension)
  return [np.take_along_axis(op, perm, axis=dimension) for op in operands]


@sort_p.def_abstract_eval
def _sort_shape_rule(*operands, dimension, is_stable, num_keys):
  if not operands:
    raise TypeError("Sort requires at least one operand")
  if any(op.shape != operands[0].shape for op in operands[1:]):
    shapes = " ".join(str(op.shape) for op in operands)
    raise TypeError(f"Arguments to sort must have equal shapes, got: {shapes}")
  if not 1 <= num_keys <= len(operands):
    raise ValueError(f"num_keys={num_keys} must be between 1 and "
                     f"len(operand)={len(operands)}")
  if not 0 <= dimension < operands[0].ndim:
    raise ValueError(f"sort dimension {dimension} is out of bounds for operands of "
                     f"shape {operands[0].shape}")
  for i, op in enumerate(operands):
    check_dtype("sort", op, ANY, position=i if len(operands) > 1 else None)
  return list(operands)


def sort(operand, dimension=-1, is_stable=True, num_keys=1):
  """Sorts `operand` (an array, or a sequence of arrays sorted together)
  along `dimension`, by the first `num_keys` arrays lexicographically.

  Floats: -0.0 and 0.0 are equal and NaNs go to the end. Complex numbers
  sort by (real, imag). Returns an array, or a tuple for a sequence.
  """
  if isinstance(operand, Sequence):
    if len(operand) == 0:
      raise TypeError("Sort requires at least one operand")
    if not 1 <= num_keys <= len(operand):
      raise ValueError(f"num_keys={num_keys} must be between 1 and "
                       f"len(operand)={len(operand)}")
    dimension = canonicalize_axis(dimension, np.ndim(operand[0]))
    return tuple(sort_p.bind(*operand, dimension=dimension, is_stable=bool(is_stable),
                             num_keys=operator.index(num_keys)))
  if num_keys != 1:
    raise ValueError(f"num_keys={num_keys} must equal 1 for a single operand.")
  dimension = canonicalize_axis(dimension, np.ndim(operand))
  return sort_p.bind(operand, dimension=dimension, is_stable=bool(is_stable),
                     num_keys=1)[0]


def sort_key_val(keys, values, dimension=-1, is_stable=True):
  """Sorts `keys` along `dimension` and applies the same permutation to `values`."""
  dimension = canonicalize_axis(dimension, np.ndim(keys))
  k, v = sort_p.bind(keys, values, dimension=dimension, is_stable=bool(is_stable),
                     num_keys=1)
  return k, v


# --- top_k -------------------------------------------------------------------------------------

top_k_p = Primitive("top_k")
top_k_p.multiple_results = True


@top_k_p.def_impl
def _top_k_reference(operand, *, k, axis):
  """The `k` largest elements along `axis`, largest first, and their indices.

  Elements compare by IEEE totalOrder (floats: +NaN above +inf, -NaN below
  -inf, 0.0 above -0.0); equal elements come lowest index first.

  Shape rule: `operand` of rank >= 1, not complex, `0 <= k <=
  shape[axis]`; both outputs have `shape[axis]` replaced by `k`. Values keep
  the operand's dtype and weak type; indices are int32.
  """
  order = np.take(_smallest_first(operand, axis, largest=True), np.arange(k), axis=axis)
  return [np.take_along_axis(operand, order, axis=axis), order.astype(np.int32)]


@top_k_p.def_abstract_eval
def _top_k_shape_rule(operand, *, k, axis):
  if dtypes.is_complex(operand.dtype):
    raise ValueError("top_k is not compatible with complex inputs.")
  check_dtype("top_k", operand, ORDERED)
  if k < 0:
    raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
  if operand.ndim == 0:
    raise TypeError(f"top_k operand must have >= 1 dimension, got {operand.shape}")
  if not 0 <= axis < operand.ndim:
    raise ValueError(f"axis argument out of range: axis={axis} for "
                     f"operand.shape={operand.shape}")
  shape = list(operand.shape)
  if shape[axis] < k:
    raise ValueError(f"k argument to top_k must be no larger than size along axis; "
                     f"got k={k} with shape={operand.shape} and axis={axis}")
  shape[axis] = k
  return [ShapedArray(shape, operand.dtype, operand.weak_type),
          ShapedArray(shape, np.int32)]


def top_k(operand, k, *, axis=-1):
  """The `k` largest entries along `axis` (largest first) and their int32
  indices; equal entries come lowest index first."""
  k = operator.index(k)
  if k < 0:
    raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
  axis = canonicalize_axis(axis, np.ndim(operand))
  values, indices = top_k_p.bind(operand, k=k, axis=axis)
  return values, indices


# --- approx_top_k ------------------------------------------------------------------------------

approx_top_k_p = Primitive("approx_top_k")
approx_top_k_p.multiple_results = True

_TPU_LANE_TILING = 128    # XLA's tile along the reduction dimension, operands of rank >= 2
_TPU_CHUNK_TILING = 1024  # ... and of rank 1


def _approx_top_k_output_size(input_size, rank, k, recall_target, aggregate_to_topk,
                              input_size_override):
  """The size of the reduction dimension of approx_top_k's outputs (XLA's
  ApproxTopKReductionOutputSize; the rule is spelled out in the reference
  docstring below).

  Without aggregation the TPU algorithm returns the input reduced 2**r-fold,
  in whole tiles. Of the top k, the expected fraction that survive when M
  windows keep one element each is about exp((1 - k) / M): M is chosen for
  `recall_target`, and r so that about M windows remain.
  """
  if aggregate_to_topk:
    return k
  tiling = _TPU_CHUNK_TILING if rank == 1 else _TPU_LANE_TILING
  if input_size <= tiling:
    return input_size
  if input_size_override >= 0 and input_size > input_size_override:
    raise JaxRuntimeError(
        f"INVALID_ARGUMENT: reduction_input_size_override: {input_size_override} should "
        f"be greater equals to operands[reduction_dim]: {input_size}")
  logical_size = input_size_override if input_size_override >= 0 else input_size
  if k == 1:
    return tiling
  recall = np.float32(recall_target)   # XLA takes the target as a float32
  if recall == 1:
    return input_size
  if not 0 < recall < 1:
    raise JaxRuntimeError("INVALID_ARGUMENT: recall_target should range in (0,1]")
  windows = min(max(int((1.0 - k) / math.log(recall)), tiling), input_size)
  log2_reduction = max((logical_size // windows).bit_length() - 1, 0)   # floor(log2)
  if log2_reduction == 0:
    return input_size
  # Reduce no more than to one window per tile: ceil(log2(input_size // tiling)).
  log2_reduction = min(log2_reduction, (input_size // tiling - 1).bit_length())
  tiles = -(-input_size // tiling)
  return -(-tiles // 2 ** log2_reduction) * tiling


@approx_top_k_p.def_impl
def _approx_top_k_reference(operand, *, k, reduction_dimension, recall_target, is_max_k,
                            reduction_input_size_override, aggregate_to_topk):
  """The largest (`is_max_k`) or smallest elements along
  `reduction_dimension`, largest (smallest) first, and their int32 indices.

  The reference is exact, as XLA is on CPU: it sorts along the dimension
  and keeps the first `k` elements; with `aggregate_to_topk=False`, the
  first `size` elements, `size` (below) being the number of candidates the
  TPU algorithm returns. `recall_target` and `reduction_input_size_override`
  matter only through `size`. Elements compare by IEEE totalOrder; equal
  elements come lowest index first.

  Shape rule: a floating operand of rank >= 1 and `0 < k <= n`, with n =
  `shape[dim]`. The outputs have `shape[dim]` replaced by `k` when
  `aggregate_to_topk`, else by `size`, computed with the tile W = 1024
  (rank 1) or 128 (rank >= 2):

  * n, if n <= W; otherwise a `reduction_input_size_override` that is >= 0
    must be >= n (else JaxRuntimeError);
  * W, if k = 1;
  * n, if `recall_target` rounded to float32 is 1; otherwise it must be in
    (0, 1) (else JaxRuntimeError);
  * otherwise, with N the override if >= 0 else n, M = clamp(trunc((1 - k)
    / log(recall_target)), W, n) and r = floor(log2(N // M)) (0 if N < M):
    n if r = 0, else W * ceil(ceil(n / W) / 2**min(r, ceil(log2(n // W)))).

  So `k <= size <= n`. Values keep the operand's dtype and weak type;
  indices are int32.
  """
  axis = reduction_dimension % operand.ndim
  size = _approx_top_k_output_size(operand.shape[axis], operand.ndim, k, recall_target,
                                   aggregate_to_topk, reduction_input_size_override)
  order = np.take(_smallest_first(operand, axis, largest=is_max_k), np.arange(size),
                  axis=axis)
  return [np.take_along_axis(operand, order, axis=axis), order.astype(np.int32)]


@approx_top_k_p.def_abstract_eval
def _approx_top_k_shape_rule(operand, *, k, reduction_dimension, recall_target, is_max_k,
                             reduction_input_size_override, aggregate_to_topk):
  if k <= 0:
    raise ValueError(f"k must be positive, got {k}")
  if operand.ndim == 0:
    raise TypeError(f"approx_top_k operand must have >= 1 dimension, got {operand.shape}")
  if not -operand.ndim <= reduction_dimension < operand.ndim:
    raise ValueError(f"reduction_dimension {reduction_dimension} is out of bounds for "
                     f"operand of shape {operand.shape}")
  dims = list(operand.shape)
  if dims[reduction_dimension] < k:
    raise ValueError(f"k must be smaller than the size of reduction_dim "
                     f"{dims[reduction_dimension]}, got {k}")
  if not dtypes.is_float(operand.dtype):
    raise ValueError("operand must be a floating type")
  dims[reduction_dimension] = _approx_top_k_output_size(
      dims[reduction_dimension], operand.ndim, k, recall_target, aggregate_to_topk,
      reduction_input_size_override)
  return [ShapedArray(dims, operand.dtype, operand.weak_type),
          ShapedArray(dims, np.int32)]


def _approx_top_k(operand, k, reduction_dimension, recall_target, is_max_k,
                  reduction_input_size_override, aggregate_to_topk):
  values, indices = approx_top_k_p.bind(
      operand, k=operator.index(k), reduction_dimension=operator.index(reduction_dimension),
      recall_target=float(recall_target), is_max_k=is_max_k,
      reduction_input_size_override=operator.index(reduction_input_size_override),
      aggregate_to_topk=bool(aggregate_to_topk))
  return values, indices


def approx_max_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True):
  """The `k` largest values along `reduction_dimension` and their indices.

  Exact here (as on CPU). With `aggregate_to_topk=False`, at least `k`: as
  many of the largest as XLA's TPU algorithm would return (see
  `approx_top_k_p` for the size).
  """
  return _approx_top_k(operand, k, reduction_dimension, recall_target, True,
                       reduction_input_size_override, aggregate_to_topk)


def approx_min_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True):
  """The `k` smallest values along `reduction_dimension` and their indices.

  Exact here (as on CPU). With `aggregate_to_topk=False`, at least `k`: as
  many of the smallest as XLA's TPU algorithm would return (see
  `approx_top_k_p` for the size).
  """
  return _approx_top_k(operand, k, reduction_dimension, recall_target, False,
                       reduction_input_size_override, aggregate_to_topk)


# --- differentiation rules ---------------------------------------------------------------------

def _gather_along(tangent, indices, axis, mode=None):
  """`tangent[..., indices[..., i, 0], ...]` along `axis`: one element per
  index (`indices` has a trailing index-vector dimension of size 1), the
  other axes batched, as JAX's sort and top_k JVPs gather. An empty tangent
  gives an empty result (its gather's slices would not fit), as JAX's
  indexing skips the gather of an empty slice."""
  aval = core.get_aval(tangent)
  rank = aval.ndim
  if not math.prod(aval.shape):
    return full(core.get_aval(indices).shape[:-1], 0, aval.dtype)
  batch = tuple(d for d in range(rank) if d != axis)
  dnums = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(axis,),
                                 start_index_map=(axis,), operand_batching_dims=batch,
                                 start_indices_batching_dims=batch)
  return gather(tangent, indices, dnums, (1,) * rank, mode=mode)


def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
  # An iota sorted along with the operands is the permutation; the tangents
  # are gathered with it (unsigned indices, as JAX).
  shape = core.get_aval(primals[0]).shape
  iota = broadcasted_iota(np.uint32, shape, dimension)
  *sorted_primals, perm = sort_p.bind(*primals, iota, dimension=dimension,
                                      is_stable=is_stable, num_keys=num_keys)
  perm = expand_dims(perm, (len(shape),))
  return sorted_primals, [
      t if isinstance(t, ad.Zero)
      else _gather_along(t, perm, dimension, GatherScatterMode.PROMISE_IN_BOUNDS)
      for t in tangents]


ad.primitive_jvps[sort_p] = _sort_jvp


def _sort_batch(args, dims, *, dimension, is_stable, num_keys):
  # All operands get the first batched one's batch axis (the unbatched ones
  # broadcast), which the sort treats as one more unsorted dimension.
  size, bdim = next((x.shape[d], d) for x, d in zip(args, dims)
                    if d is not batching.not_mapped)
  args = [batching.matchaxis(d, bdim, size, x) for x, d in zip(args, dims)]
  outs = sort_p.bind(*args, dimension=dimension + (bdim <= dimension), is_stable=is_stable,
                     num_keys=num_keys)
  return outs, [bdim] * len(outs)


batching.primitive_batchers[sort_p] = _sort_batch


def _top_k_jvp(primals, tangents, *, k, axis):
  (operand,), (tangent,) = primals, tangents
  values, indices = top_k_p.bind(operand, k=k, axis=axis)
  index_vectors = reshape(indices, core.get_aval(indices).shape + (1,))
  return [values, indices], [_gather_along(tangent, index_vectors, axis),
                             ad.Zero(ad.tangent_aval(core.get_aval(indices)))]


ad.primitive_jvps[top_k_p] = _top_k_jvp


def _top_k_batch(args, dims, *, k, axis):
  (operand,), (d,) = args, dims
  return top_k_p.bind(operand, k=k, axis=axis + (d <= axis)), [d, d]


batching.primitive_batchers[top_k_p] = _top_k_batch


def _approx_top_k_jvp(primals, tangents, **params):
  from refimpl.numpy import take_along_axis   # as JAX's rule (jnp builds on lax)
  (operand,), (tangent,) = primals, tangents
  values, indices = approx_top_k_p.bind(operand, **params)
  axis = params["reduction_dimension"] % core.get_aval(operand).ndim
  return [values, indices], [take_along_axis(tangent, indices, axis=axis),
                             ad.Zero(ad.tangent_aval(core.get_aval(indices)))]


ad.primitive_jvps[approx_top_k_p] = _approx_top_k_jvp


def _approx_top_k_batch(args, dims, *, reduction_dimension, **params):
  (operand,), (d,) = args, dims
  dimension = [i for i in range(operand.ndim) if i != d][reduction_dimension]
  n = operand.shape[dimension]
  if operand.ndim == 2 and n > _TPU_LANE_TILING and not params["aggregate_to_topk"]:
    # A batch of rank-1 operands has rank 2, so another TPU tile and maybe
    # another output size than its members (where JAX's rule goes wrong).
    # Their outputs are their top `size` elements, which aggregating to
    # that many also gives.
    member = ShapedArray((n,), operand.dtype, operand.weak_type)
    size = _approx_top_k_shape_rule(member, reduction_dimension=reduction_dimension,
                                    **params)[0].shape[0]
    params = dict(params, k=size, aggregate_to_topk=True)
  outs = approx_top_k_p.bind(operand, reduction_dimension=dimension, **params)
  return outs, [d, d]


batching.primitive_batchers[approx_top_k_p] = _approx_top_k_batch
