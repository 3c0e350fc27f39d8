"""Contraction primitive: dot_general, and the lax functions built on it.

`dot_general` contracts pairs of dimensions of two operands and keeps
matching batch dimensions. Result dimensions are ordered: batch dims, then
the lhs's remaining (free) dims, then the rhs's free dims, each in operand
order.
"""

import enum
import operator

import numpy as np

from refimpl import dtypes
from refimpl.core import Primitive, ShapedArray, get_aval
from refimpl.lax.rules import as_dtype

__all__ = ['Precision', 'dot_general', 'dot', 'batch_matmul']


class Precision(enum.Enum):
  """Requested precision of a contraction on accelerators.

  Accepted and recorded, as in JAX; the reference rule is always exact (see
  dot_general), so it has no effect on results here.
  """
  DEFAULT = 0
  HIGH = 1
  HIGHEST = 2

  def __str__(self):
    return self.name


def _canonicalize_precision(precision):
  """None, or a pair of Precision values (strings and single values accepted)."""
  if precision is None:
    return None
  if isinstance(precision, (str, Precision)):
    precision = (precision, precision)
  if not (isinstance(precision, (tuple, list)) and len(precision) == 2):
    raise ValueError(f"Precision argument must be None, a string in "
                     f"{[p.name for p in Precision]}, a lax.Precision value or a "
                     f"tuple of two of those; got {precision}.")
  return tuple(p if isinstance(p, Precision) else Precision[str(p).upper()]
               for p in precision)


# --- dtype rule -------------------------------------------------------------------

def _precision_rank(dtype):
  """Orders dtypes as XLA's "higher precision type": complex, exponent range,
  mantissa, bit width, then signed over unsigned."""
  dtype = np.dtype(dtype)
  real = np.dtype(np.float32 if dtype == np.complex64 else np.float64) \
      if dtypes.is_complex(dtype) else dtype
  is_float = dtypes.is_float(real)
  info = dtypes.finfo(real) if is_float else None
  bits = 1 if dtypes.is_bool(real) else real.itemsize * 8
  return (dtypes.is_complex(dtype), info.maxexp if is_float else -1,
          info.nmant if is_float else -1, bits, not dtypes.is_unsigned(real))


def _dot_general_dtype(lhs, rhs, preferred_element_type):
  lhs_rank, rhs_rank = _precision_rank(lhs.dtype), _precision_rank(rhs.dtype)
  if lhs_rank > rhs_rank:
    result = lhs.dtype
  elif rhs_rank > lhs_rank:
    result = rhs.dtype
  elif lhs.dtype != rhs.dtype:
    raise TypeError(f"lax.dot_general argument type error: {lhs.dtype.name}, "
                    f"{rhs.dtype.name}")
  else:
    result = lhs.dtype
  if preferred_element_type is None or preferred_element_type == result:
    return result
  preferred = np.dtype(preferred_element_type)
  if dtypes.is_inexact(result) and not dtypes.is_inexact(preferred):
    raise TypeError(f"dot_general preferred_element_type {preferred.name} must be "
                    f"floating or complex for operands of type {result.name}")
  if not dtypes.is_float(result) and preferred.itemsize < result.itemsize:
    raise TypeError(f"`preferred_element_type` must not be narrower than the original "
                    f"type, got preferred_element_type of {preferred.name} for result "
                    f"type of {result.name}.")
  return preferred


# --- dot_general ------------------------------------------------------------------------

dot_general_p = Primitive("dot_general")


def _free_dims(ndim, contracting, batch):
  return [d for d in range(ndim) if d not in contracting and d not in batch]


@dot_general_p.def_impl
def _dot_general_reference(lhs, rhs, *, dimension_numbers, precision,
                           preferred_element_type):
  """Generalized dot product.

  `dimension_numbers = ((lhs_contracting, rhs_contracting), (lhs_batch,
  rhs_batch))`: pairs of dimensions whose sizes must agree. Result:
  `out[b..., i..., j...] = sum_k lhs[b, i, k] * rhs[b, j, k]`, with batch
  dims first, then the lhs's free dims, then the rhs's free dims.

  Dtypes: the operands may differ; the result dtype is the "higher
  precision" one of the two (complex > wider exponent > wider mantissa >
  wider > signed; two different types of equal rank are an error), or
  `preferred_element_type` when given (it must not be narrower for
  integers). Values: products are summed exactly as the result dtype's
  wide type (double or complex128 for floats, int64/uint64 for integers)
  and rounded once; integers wrap modulo 2**bits; bool gives the OR of
  ANDs. An empty contraction gives 0. `precision` has no effect.
  """
  (lc, rc), (lb, rb) = dimension_numbers
  out_dtype = _dot_general_dtype(lhs, rhs, preferred_element_type)
  lhs_free = _free_dims(lhs.ndim, lc, lb)
  rhs_free = _free_dims(rhs.ndim, rc, rb)
  # Put both operands in (batch, free, contracting) order, then contract with
  # einsum over a single flattened contracting axis.
  lhs_t = np.transpose(lhs, [*lb, *lhs_free, *lc])
  rhs_t = np.transpose(rhs, [*rb, *rhs_free, *rc])
  batch_shape = lhs_t.shape[:len(lb)]
  lhs_free_shape = lhs_t.shape[len(lb):len(lb) + len(lhs_free)]
  rhs_free_shape = rhs_t.shape[len(rb):len(rb) + len(rhs_free)]
  size = lambda shape: int(np.prod(shape, dtype=np.int64))
  b, k = size(batch_shape), size([lhs.shape[d] for d in lc])
  lhs_3d = lhs_t.reshape(b, size(lhs_free_shape), k)
  rhs_3d = rhs_t.reshape(b, size(rhs_free_shape), k)
  wide = _accumulation_dtype(out_dtype)
  out = np.einsum("bik,bjk->bij", lhs_3d.astype(wide), rhs_3d.astype(wide))
  if dtypes.is_bool(out_dtype):
    out = out > 0
  out = out.reshape(batch_shape + lhs_free_shape + rhs_free_shape)
  return as_dtype(out, out_dtype)


def _accumulation_dtype(out_dtype):
  """Where products are summed: exact enough to round only once at the end."""
  if dtypes.is_complex(out_dtype):
    return np.complex128
  if dtypes.is_float(out_dtype):
    return np.float64
  return np.uint64 if dtypes.is_unsigned(out_dtype) else np.int64


@dot_general_p.def_abstract_eval
def _dot_general_shape_rule(lhs, rhs, *, dimension_numbers, precision,
                            preferred_element_type):
  (lc, rc), (lb, rb) = dimension_numbers
  for name, dims, ndim in (("lhs contracting", lc, lhs.ndim), ("rhs contracting", rc, rhs.ndim),
                           ("lhs batch", lb, lhs.ndim), ("rhs batch", rb, rhs.ndim)):
    if any(not 0 <= d < ndim for d in dims):
      raise TypeError(f"dot_general requires {name} dimensions to be in range "
                      f"[0, {ndim}), got {dims}.")
    if len(set(dims)) != len(dims):
      raise TypeError(f"dot_general requires {name} dimensions to be distinct, got {dims}.")
  if len(lb) != len(rb):
    raise TypeError(f"dot_general requires equal numbers of lhs_batch and rhs_batch "
                    f"dimensions, got lhs_batch {lb} and rhs_batch {rb}.")
  if len(lc) != len(rc):
    raise TypeError(f"dot_general requires equal numbers of lhs_contracting and "
                    f"rhs_contracting dimensions, got {lc} and {rc}.")
  if set(lc) & set(lb) or set(rc) & set(rb):
    raise TypeError(f"dot_general requires batch and contracting dimensions to be "
                    f"disjoint, got {dimension_numbers}.")
  lhs_batch_shape = tuple(lhs.shape[d] for d in lb)
  if lhs_batch_shape != tuple(rhs.shape[d] for d in rb):
    raise TypeError(f"dot_general requires lhs batch dimensions and rhs batch dimensions "
                    f"to have the same shape, got {lhs_batch_shape} and "
                    f"{tuple(rhs.shape[d] for d in rb)}.")
  if tuple(lhs.shape[d] for d in lc) != tuple(rhs.shape[d] for d in rc):
    raise TypeError(f"dot_general requires contracting dimensions to have the same shape, "
                    f"got {tuple(lhs.shape[d] for d in lc)} and "
                    f"{tuple(rhs.shape[d] for d in rc)}.")
  shape = (lhs_batch_shape
           + tuple(lhs.shape[d] for d in _free_dims(lhs.ndim, lc, lb))
           + tuple(rhs.shape[d] for d in _free_dims(rhs.ndim, rc, rb)))
  dtype = _dot_general_dtype(lhs, rhs, preferred_element_type)
  return ShapedArray(shape, dtype, lhs.weak_type and rhs.weak_type)


def _dot_general_pp_params(params):
  """As JAX prints them: dimension numbers as lists, None-valued params left out."""
  (lc, rc), (lb, rb) = params["dimension_numbers"]
  shown = {k: v for k, v in params.items() if v is not None}
  shown["dimension_numbers"] = ((list(lc), list(rc)), (list(lb), list(rb)))
  return dict(sorted(shown.items()))


dot_general_p.pp_params = _dot_general_pp_params


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
  """Contracts `lhs` and `rhs` per `dimension_numbers`.

  `dimension_numbers = ((lhs_contracting, rhs_contracting), (lhs_batch,
  rhs_batch))`; see the `dot_general` primitive for the result's layout and
  dtype.
  """
  (lc, rc), (lb, rb) = dimension_numbers
  as_tuple = lambda dims: tuple(operator.index(d) for d in (
      (dims,) if np.ndim(dims) == 0 else dims))
  dimension_numbers = ((as_tuple(lc), as_tuple(rc)), (as_tuple(lb), as_tuple(rb)))
  if preferred_element_type is not None:
    preferred_element_type = dtypes.canonicalize_dtype(np.dtype(preferred_element_type))
  return dot_general_p.bind(lhs, rhs, dimension_numbers=dimension_numbers,
                            precision=_canonicalize_precision(precision),
                            preferred_element_type=preferred_element_type)


def dot(lhs, rhs, precision=None, preferred_element_type=None):
  """Vector/matrix product of 1-D or 2-D operands: contracts lhs's last dim with
  rhs's first."""
  lhs_shape, rhs_shape = get_aval(lhs).shape, get_aval(rhs).shape
  if 1 <= len(lhs_shape) <= 2 and 1 <= len(rhs_shape) <= 2 and lhs_shape[-1] == rhs_shape[0]:
    return dot_general(lhs, rhs, (((len(lhs_shape) - 1,), (0,)), ((), ())),
                       precision=precision, preferred_element_type=preferred_element_type)
  raise TypeError(f"Incompatible shapes for dot: got {lhs_shape} and {rhs_shape}.")


def batch_matmul(lhs, rhs, precision=None):
  """Batched matrix product: leading dims are batch dims, the last two multiply."""
  lhs_ndim, rhs_ndim = get_aval(lhs).ndim, get_aval(rhs).ndim
  if min(lhs_ndim, rhs_ndim) < 2:
    raise ValueError(f"Arguments to batch_matmul must be at least 2D, got {lhs_ndim}, "
                     f"{rhs_ndim}")
  if lhs_ndim != rhs_ndim:
    raise ValueError(f"Arguments to batch_matmul must have same ndim, got {lhs_ndim}, "
                     f"{rhs_ndim}")
  batch = tuple(range(lhs_ndim - 2))
  return dot_general(lhs, rhs, (((lhs_ndim - 1,), (rhs_ndim - 2,)), (batch, batch)),
                     precision=precision)
