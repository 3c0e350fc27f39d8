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

import operator
from collections.abc import Sequence

import numpy as np

from refimpl import dtypes
from refimpl.core import Primitive, ShapedArray
from refimpl.lax.rules import ANY, ORDERED, check_dtype
from refimpl.lax.shapes import canonicalize_axis

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


@approx_top_k_p.def_impl
def _approx_top_k_reference(operand, *, k, reduction_dimension, recall_target, is_max_k,
                            reduction_input_size_override, aggregate_to_topk):
  """The `k` largest (`is_max_k`) or smallest elements along
  `reduction_dimension` and their int32 indices, largest (smallest) first.

  The reference is exact: it returns the true top k, which is what XLA does
  on CPU (the approximation, steered by `recall_target` and
  `reduction_input_size_override`, is a TPU optimization). Elements compare
  by IEEE totalOrder; equal elements come lowest index first.

  Shape rule: a floating operand of rank >= 1, `0 < k <= shape[dim]`;
  outputs have `shape[dim]` replaced by `k`. `aggregate_to_topk=False`
  (whose output size XLA derives from the TPU tiling) is not supported.
  """
  axis = reduction_dimension % operand.ndim
  order = np.take(_smallest_first(operand, axis, largest=is_max_k), np.arange(k), axis=axis)
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
  if 0 <= reduction_input_size_override < dims[reduction_dimension]:
    raise ValueError(f"reduction_input_size_override {reduction_input_size_override} "
                     f"should be greater equal than operand.shape"
                     f"[reduction_dimension] {dims[reduction_dimension]}")
  if not aggregate_to_topk:
    raise NotImplementedError(
        "approx_top_k with aggregate_to_topk=False is not supported: its output size "
        "follows the TPU tiling. Use aggregate_to_topk=True.")
  dims[reduction_dimension] = k
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

  Exact here (as on CPU); see `approx_top_k_p` for the semantics.
  """
  return _approx_top_k(operand, k, reduction_dimension, recall_target, True,
                       reduction_input_size_override, aggregate_to_topk)


def approx_min_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True):
  """The `k` smallest values along `reduction_dimension` and their indices.

  Exact here (as on CPU); see `approx_top_k_p` for the semantics.
  """
  return _approx_top_k(operand, k, reduction_dimension, recall_target, False,
                       reduction_input_size_override, aggregate_to_topk)
