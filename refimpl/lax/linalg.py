"""Linear algebra: the contraction primitive `dot_general`, and the matrix
decompositions and solvers of `jax.lax.linalg`.

`dot_general` contracts pairs of dimensions of two operands and keeps
matching batch dimensions. Result dimensions are ordered: batch dims, then
the lhs's remaining (free) dims, then the rhs's free dims, each in operand
order.

The decompositions (`cholesky`, `lu`, `qr`, `eigh`, `svd`, `eig`, ...) act on
the last two dimensions; every leading dimension is a batch dimension. Their
reference rules compute in float64 (complex128) and round each result once
to the operand's dtype. Only `dot_general`, `dot` and `batch_matmul` are
star-exported into `refimpl.lax`; the rest are reached as
`refimpl.lax.linalg.<name>`, as in JAX.
"""

import cmath
import enum
import math
import operator
from collections.abc import Sequence

import numpy as np

from refimpl import dtypes
from refimpl.core import Primitive, ShapedArray, get_aval
from refimpl.dtypes import to_real_dtype
from refimpl.interpreters import ad, batching
from refimpl.lax import indexing
from refimpl.lax.ad_util import stop_gradient
from refimpl.lax.elementwise import (add, conj, convert_element_type, div, eq, ge, integer_pow,
                                     mul, neg, real, select, sub)
from refimpl.lax.indexing import (GatherDimensionNumbers, GatherScatterMode,
                                  ScatterDimensionNumbers, gather, scatter)
from refimpl.lax.reductions import reduce_sum
from refimpl.lax.rules import (ANY, FLOAT, INEXACT, as_dtype, check_dtype, check_same_dtypes, const,
                               contraction_dtype)
from refimpl.lax.shapes import (broadcast, broadcasted_iota, concatenate, expand_dims, full,
                                full_like, pad, reshape, squeeze, transpose)
from refimpl.sharding import check_out_sharding

__all__ = ['Precision', 'DotDimensionNumbers', 'dot_general', 'dot', 'batch_matmul',
           'dot_general_p']


DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]],
                            tuple[Sequence[int], Sequence[int]]]
"""`((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`."""


class Precision(enum.Enum):
  """Requested precision of a contraction on accelerators.

  Accepted and recorded, as in JAX; it has no effect on results here, as on
  XLA's CPU backend (see dot_general).
  """
  DEFAULT = 0
  HIGH = 1
  HIGHEST = 2

  def __str__(self):
    return self.name

  def __repr__(self):   # how jaxprs print a precision pair
    return f"Precision.{self.name}"


_PRECISION_NAMES = {
    "highest": Precision.HIGHEST, "float32": Precision.HIGHEST,
    "high": Precision.HIGH, "bfloat16_3x": Precision.HIGH, "tensorfloat32": Precision.HIGH,
    "default": Precision.DEFAULT, "bfloat16": Precision.DEFAULT, "fastest": Precision.DEFAULT,
}


def canonicalize_precision(precision):
  """None, or a pair of Precision values. Accepted, as JAX accepts them: None,
  a Precision, one of the lowercase names of _PRECISION_NAMES ("float32" is
  HIGHEST), or a pair of Precision values or a pair of names; anything else
  raises ValueError."""
  if precision is None:
    return None
  if isinstance(precision, Precision):
    return (precision, precision)
  if isinstance(precision, str) and precision in _PRECISION_NAMES:
    return (_PRECISION_NAMES[precision],) * 2
  if isinstance(precision, (tuple, list)) and len(precision) == 2:
    if all(isinstance(p, Precision) for p in precision):
      return tuple(precision)
    if all(isinstance(p, str) and p in _PRECISION_NAMES for p in precision):
      return tuple(_PRECISION_NAMES[p] for p in precision)
  raise ValueError(f"Precision argument must be one of:\n- None,\n- a string in "
                   f"{list(_PRECISION_NAMES)},\n- a lax.Precision value,\n- a tuple of two "
                   f"lax.Precision values or strings;\nbut got {precision!r}.")


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
  for position, operand in enumerate((lhs, rhs)):
    check_dtype("dot_general", operand, ANY, position)
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
  integers). Values, as XLA computes them on CPU: real floats are
  multiplied and summed in the result dtype (16-bit floats in float32, the
  sum rounded once), in an unspecified order, so the last bits of a float
  result depend on the implementation; complex numbers are computed in
  complex128 and rounded, and which parts of a result an infinite or NaN
  operand makes NaN also depends on the implementation (NumPy's matmul,
  XLA's dot and its conv differ); IEEE rules hold (0 * inf is NaN).
  Integers are exact, wrapping modulo 2**bits; bool gives the OR of ANDs.
  An empty contraction gives 0. `precision` has no effect.
  """
  (lc, rc), (lb, rb) = dimension_numbers
  out_dtype = _dot_general_dtype(lhs, rhs, preferred_element_type)
  lhs_free = _free_dims(lhs.ndim, lc, lb)
  rhs_free = _free_dims(rhs.ndim, rc, rb)
  # Put both operands in (batch, free, contracting) order, then contract them
  # as a batch of matrix products over a single flattened contracting axis.
  lhs_t = np.transpose(lhs, [*lb, *lhs_free, *lc])
  rhs_t = np.transpose(rhs, [*rb, *rhs_free, *rc])
  batch_shape = lhs_t.shape[:len(lb)]
  lhs_free_shape = lhs_t.shape[len(lb):len(lb) + len(lhs_free)]
  rhs_free_shape = rhs_t.shape[len(rb):len(rb) + len(rhs_free)]
  size = lambda shape: int(np.prod(shape, dtype=np.int64))
  b, k = size(batch_shape), size([lhs.shape[d] for d in lc])
  compute = contraction_dtype(out_dtype)
  lhs_3d = lhs_t.reshape(b, size(lhs_free_shape), k).astype(compute, copy=False)
  rhs_3d = rhs_t.reshape(b, size(rhs_free_shape), k).astype(compute, copy=False)
  if np.isfinite(lhs_3d).all() and np.isfinite(rhs_3d).all():
    out = np.matmul(lhs_3d, np.swapaxes(rhs_3d, 1, 2))   # by BLAS where NumPy has it
  else:   # NumPy's own loops: BLAS kernels need not keep 0 * inf = NaN
    out = np.einsum("bik,bjk->bij", lhs_3d, rhs_3d)
  if dtypes.is_bool(out_dtype):
    out = out > 0
  out = out.reshape(batch_shape + lhs_free_shape + rhs_free_shape)
  return as_dtype(out, out_dtype)


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


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None, *,
               out_sharding=None):
  """Contracts `lhs` and `rhs` per `dimension_numbers`.

  `dimension_numbers = ((lhs_contracting, rhs_contracting), (lhs_batch,
  rhs_batch))`; see the `dot_general` primitive for the result's layout and
  dtype.
  """
  check_out_sharding(out_sharding, "dot_general")
  (lc, rc), (lb, rb) = dimension_numbers
  as_tuple = lambda dims: tuple(operator.index(d) for d in (
      (dims,) if np.ndim(dims) == 0 else dims))
  dimension_numbers = ((as_tuple(lc), as_tuple(rc)), (as_tuple(lb), as_tuple(rb)))
  if preferred_element_type is not None:
    preferred_element_type = dtypes.canonicalize_dtype(preferred_element_type,
                                                       allow_extended_dtype=True)
  return dot_general_p.bind(lhs, rhs, dimension_numbers=dimension_numbers,
                            precision=canonicalize_precision(precision),
                            preferred_element_type=preferred_element_type)


def dot(lhs, rhs, *, dimension_numbers=None, precision=None, preferred_element_type=None,
        out_sharding=None):
  """Vector/matrix product of 1-D or 2-D operands: contracts lhs's last dim with
  rhs's first; with `dimension_numbers`, `dot_general` of any operands."""
  if dimension_numbers is not None:
    return dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type,
                       out_sharding=out_sharding)
  lhs_shape, rhs_shape = get_aval(lhs).shape, get_aval(rhs).shape
  if 1 <= len(lhs_shape) <= 2 and 1 <= len(rhs_shape) <= 2 and lhs_shape[-1] == rhs_shape[0]:
    return dot_general(lhs, rhs, (((len(lhs_shape) - 1,), (0,)), ((), ())),
                       precision=precision, preferred_element_type=preferred_element_type,
                       out_sharding=out_sharding)
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


# =====================================================================================
# Decompositions and solvers (jax.lax.linalg)
# =====================================================================================

class SvdAlgorithm(enum.Enum):
  """Which SVD algorithm to use on accelerators: a hint, ignored by the reference."""
  DEFAULT = "default"
  QR = "QR"
  JACOBI = "Jacobi"
  POLAR = "polar"

  def __str__(self):
    return f"SvdAlgorithm.{self.name}"


class EigImplementation(enum.Enum):
  """Which library computes `eig` on GPUs: a hint, ignored by the reference."""
  CUSOLVER = "cusolver"
  MAGMA = "magma"
  LAPACK = "lapack"


class EighImplementation(enum.Enum):
  """Which algorithm computes `eigh` on accelerators: a hint, ignored by the reference."""
  QR = "qr"
  JACOBI = "jacobi"
  QDWH = "qdwh"


def _check_implementation(implementation, kind):
  """None, a member of `kind` or its value; anything else raises ValueError."""
  if implementation is not None:
    kind(implementation)


# --- helpers of the reference rules -------------------------------------------------

def _wide(dtype):
  """The dtype a reference rule computes in: complex128 or float64."""
  return np.dtype(np.complex128 if dtypes.is_complex(dtype) else np.float64)


def _nans(shape, dtype):
  """NaNs (NaN + NaN·j when complex): the result of a failed decomposition."""
  dtype = np.dtype(dtype)
  return np.full(shape, complex(np.nan, np.nan) if dtype.kind == "c" else np.nan, dtype)


def _stack(x, core_ndim=2):
  """`x` as a stack of its batch elements, in the wide dtype: shape `(batch size, *core)`."""
  core = x.shape[x.ndim - core_ndim:]
  return x.reshape((int(np.prod(x.shape[:x.ndim - core_ndim])),) + core).astype(_wide(x.dtype))


def _mT(x):
  return np.swapaxes(x, -1, -2)


def _hermitian_from_triangle(x, lower):
  """The Hermitian matrix whose `lower` (else upper) triangle is that of `x`.

  The imaginary part of the diagonal is ignored, as LAPACK does."""
  tri, strict = (np.tril(x), np.tril(x, -1)) if lower else (np.triu(x), np.triu(x, 1))
  h = tri + _mT(strict).conj()
  i = np.arange(x.shape[-1])
  h[..., i, i] = h[..., i, i].real
  return h


def _per_matrix(fn, inputs, outputs):
  """Applies `fn` to each batch element of `inputs` (arrays sharing a batch shape).

  `fn` takes one matrix per input and returns one array per entry of
  `outputs`, a list of `(core_shape, dtype)`. A batch element with a
  non-finite input entry, or on which `fn` raises `LinAlgError` (no
  convergence, a singular matrix), gets NaN outputs.
  """
  batch = inputs[0].shape[:inputs[0].ndim - 2]
  results = [_nans(batch + tuple(shape), dtype) for shape, dtype in outputs]
  for index in np.ndindex(*batch):
    matrices = [x[index] for x in inputs]
    if not all(np.isfinite(m).all() for m in matrices):
      continue
    try:
      outs = fn(*matrices)
    except np.linalg.LinAlgError:
      continue
    for result, out in zip(results, outs):
      result[index] = out
  return results


def _check_matrix(name, x, square=False):
  """Inexact operand of rank >= 2 (square if asked), else TypeError/ValueError."""
  check_dtype(name, x, INEXACT)
  if x.ndim < 2 or (square and x.shape[-1] != x.shape[-2]):
    shape = "[..., n, n]" if square else "[..., m, n]"
    raise ValueError(f"Argument to {name} must have shape {shape}, got shape {x.shape}.")


# --- helpers of the user-facing functions -------------------------------------------

def _T(x):
  ndim = get_aval(x).ndim
  return transpose(x, (*range(ndim - 2), ndim - 1, ndim - 2))


def _H(x):
  return conj(_T(x)) if dtypes.is_complex(get_aval(x).dtype) else _T(x)


def _symmetrize(x):
  """`(x + x^H) / 2`."""
  return (x + _H(x)) / 2


def _tri_mask(x, k=0):
  """True on and below diagonal `k` (0 the main one, -1 the first below) of the
  last two dims, broadcast to x's shape."""
  shape = get_aval(x).shape
  n, m = shape[-2:]
  rows = broadcasted_iota(np.int32, (n, m), 0)
  if k:
    rows = add(rows, np.int32(k))
  mask = ge(rows, broadcasted_iota(np.int32, (n, m), 1))
  return broadcast(mask, shape[:-2])


def _tril(x, k=0):
  """`x` with zeros above diagonal `k` of its last two dims."""
  return select(_tri_mask(x, k), x, full_like(x, 0))


def _triu(x, k=0):
  """`x` with zeros below diagonal `k` of its last two dims."""
  return select(_tri_mask(x, k - 1), full_like(x, 0), x)


# --- cholesky -------------------------------------------------------------------------

cholesky_p = Primitive("cholesky")


@cholesky_p.def_impl
def _cholesky_reference(x):
  """Cholesky factor of Hermitian positive-definite matrices: `x = L @ L^H`.

  Operand `[..., n, n]`, float or complex; result of the same shape and
  dtype. Only the lower triangle of `x` is read (the imaginary part of its
  diagonal is ignored); `L` is lower triangular with a positive real
  diagonal and zeros above it. Computed column by column as LAPACK's potrf:
  `L[j, j] = sqrt(x[j, j] - sum_k |L[j, k]|^2)`, then the column below it.

  Failure: if some `x[j, j] - sum_k |L[j, k]|^2` is not > 0 (the matrix is
  not positive definite, or a NaN appeared), every element of that batch
  element's result is NaN (NaN + NaN·j for complex); no error is raised.
  Empty (n = 0) gives an empty result.
  """
  n = x.shape[-1]
  a = _stack(x)
  factor = np.zeros_like(a)
  ok = np.ones(a.shape[0], bool)
  for j in range(n):
    row = factor[:, j, :j]
    d = a[:, j, j].real - np.sum(np.abs(row) ** 2, axis=-1)
    ok &= d > 0
    factor[:, j, j] = np.sqrt(d)
    below = a[:, j + 1:, j] - np.einsum("bik,bk->bi", factor[:, j + 1:, :j], row.conj())
    factor[:, j + 1:, j] = below / factor[:, j, j, None]
  factor[~ok] = _nans((n, n), factor.dtype)
  return as_dtype(factor.reshape(x.shape), x.dtype)


@cholesky_p.def_abstract_eval
def _cholesky_shape_rule(x):
  _check_matrix("cholesky", x, square=True)
  return x


def cholesky(x, *, symmetrize_input=True):
  """Lower Cholesky factor `L` of Hermitian positive-definite `x` (`x = L L^H`).

  With `symmetrize_input`, `(x + x^H) / 2` is factored; otherwise only the
  lower triangle of `x` is read. A matrix that is not positive definite
  gives NaNs.
  """
  if symmetrize_input:
    x = _symmetrize(x)
  return _tril(cholesky_p.bind(x))


# --- triangular_solve -----------------------------------------------------------------

triangular_solve_p = Primitive("triangular_solve")


def _substitute(a, b, lower):
  """Solves `a @ x = b` for triangular `a` by forward (lower) or back substitution."""
  m = a.shape[-1]
  x = np.zeros_like(b)
  for i in (range(m) if lower else reversed(range(m))):
    known = slice(0, i) if lower else slice(i + 1, m)
    partial_sum = np.einsum("...k,...kn->...n", a[..., i, known], x[..., known, :])
    x[..., i, :] = (b[..., i, :] - partial_sum) / a[..., i, i, None]
  return x


@triangular_solve_p.def_impl
def _triangular_solve_reference(a, b, *, left_side, lower, transpose_a, conjugate_a,
                                unit_diagonal):
  """Solves `op(a) @ x = b` (`left_side`) or `x @ op(a) = b` for `x`.

  `a`: `[..., m, m]`; `b`: `[..., m, n]` when `left_side`, else `[..., n, m]`,
  with equal batch dims; both of one float or complex dtype, which the
  result (shaped as `b`) has. Only the `lower` (else upper) triangle of `a`
  is read; with `unit_diagonal` its diagonal is taken as ones and not read.
  `op(a)` is that triangle, conjugated if `conjugate_a`, then transposed if
  `transpose_a`.

  Values: exact substitution (no pivoting), rounded once. A zero on the
  diagonal divides by zero (inf or NaN results, no error); NaN/inf in `a`
  or `b` propagate through the substitution.
  """
  dtype, wide = b.dtype, _wide(b.dtype)
  m = a.shape[-1]
  a = (np.tril if lower else np.triu)(a.astype(wide))
  if unit_diagonal:
    a[..., np.arange(m), np.arange(m)] = 1
  if conjugate_a:
    a = a.conj()
  if transpose_a:
    a = _mT(a)
  op_lower = lower != transpose_a
  b = b.astype(wide)
  if left_side:
    x = _substitute(a, b, op_lower)
  else:  # x @ A = b  <=>  A^T @ x^T = b^T
    x = _mT(_substitute(_mT(a), _mT(b), not op_lower))
  return as_dtype(x, dtype)


@triangular_solve_p.def_abstract_eval
def _triangular_solve_shape_rule(a, b, *, left_side, lower, transpose_a, conjugate_a,
                                 unit_diagonal):
  for i, x in enumerate((a, b)):
    check_dtype("triangular_solve", x, INEXACT, position=i)
  check_same_dtypes("triangular_solve", a, b)
  if a.ndim < 2:
    raise TypeError(f"triangular_solve requires a.ndim to be at least 2, got {a.ndim}.")
  if b.ndim < 2:
    raise TypeError(f"triangular_solve requires b.ndim to be at least 2, got {b.ndim}.")
  if a.shape[-1] != a.shape[-2]:
    raise TypeError("triangular_solve requires the last two dimensions of a to be equal "
                    f"in size, got a.shape of {a.shape}.")
  if a.shape[:-2] != b.shape[:-2]:
    raise TypeError("triangular_solve requires both arguments to have the same number "
                    f"of dimensions and equal batch dimensions, got {a.shape} and {b.shape}.")
  if a.shape[-1] != b.shape[-2 if left_side else -1]:
    raise TypeError(f"Incompatible shapes for arguments to triangular_solve: {a.shape} and "
                    f"{b.shape}.")
  return b.update(weak_type=a.weak_type and b.weak_type)


def triangular_solve(a, b, *, left_side=False, lower=False, transpose_a=False,
                     conjugate_a=False, unit_diagonal=False):
  """Solves `op(a) @ x = b` (`left_side`) or `x @ op(a) = b` for triangular `a`.

  `op(a)` is `a`'s `lower` (else upper) triangle, conjugated if
  `conjugate_a` (ignored for real `a`), transposed if `transpose_a`. `b` may
  have one dimension fewer than `a` (a batch of vectors).
  """
  a_aval, b_aval = get_aval(a), get_aval(b)
  conjugate_a = bool(conjugate_a) and dtypes.is_complex(a_aval.dtype)
  singleton = b_aval.ndim == a_aval.ndim - 1
  if singleton:
    b = expand_dims(b, (b_aval.ndim if left_side else b_aval.ndim - 1,))
  out = triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                transpose_a=bool(transpose_a), conjugate_a=conjugate_a,
                                unit_diagonal=bool(unit_diagonal))
  if singleton:
    out = squeeze(out, (b_aval.ndim if left_side else b_aval.ndim - 1,))
  return out


# --- lu and lu_pivots_to_permutation ----------------------------------------------------

lu_p = Primitive("lu")
lu_p.multiple_results = True


def _pivots_to_permutation(pivots, size):
  """Applies the row swaps `i <-> pivots[..., i]`, in order, to `arange(size)`."""
  batch = pivots.shape[:-1]
  perm = np.broadcast_to(np.arange(size, dtype=np.int32), batch + (size,)).copy()
  for index in np.ndindex(*batch):
    p = perm[index]
    for i, j in enumerate(pivots[index]):
      j = j + size if j < 0 else j
      value = p[min(max(j, 0), size - 1)]
      if 0 <= j < size:
        p[j] = p[i]
      p[i] = value
  return perm


@lu_p.def_impl
def _lu_reference(x):
  """LU decomposition with partial (row) pivoting: `x[perm] = L @ U`.

  Operand `[..., m, n]`, float or complex. Outputs, with `k = min(m, n)`:
  `lu` (shape and dtype of `x`) holding `U` in its upper triangle and the
  strictly lower part of unit-lower-triangular `L` below the diagonal;
  `pivots` (int32 `[..., k]`): at step `i`, row `i` was swapped with row
  `pivots[i] >= i`; `permutation` (int32 `[..., m]`): those swaps applied to
  `arange(m)`.

  Algorithm (LAPACK's getrf, unblocked): at step `i` the pivot is the first
  row `r >= i` maximizing `|Re a[r, i]| + |Im a[r, i]|` in the partially
  reduced matrix `a` (NaN magnitudes are never preferred to numbers); rows
  `i` and `r` swap; if the pivot is
  nonzero, the column below it is divided by it (a zero pivot, i.e. a
  singular matrix, leaves the column as is: no error, no NaN); then the
  trailing block is updated. NaN/inf propagate through the arithmetic.
  """
  *batch, m, n = x.shape
  a = _stack(x)
  k = min(m, n)
  rows = np.arange(a.shape[0])
  pivots = np.zeros((a.shape[0], k), np.int32)
  for i in range(k):
    column = a[:, i:, i]
    magnitude = np.abs(column.real) + np.abs(column.imag)
    r = i + np.argmax(np.where(np.isnan(magnitude), -1, magnitude), axis=1)
    pivots[:, i] = r
    a[rows, i], a[rows, r] = a[rows, r], a[rows, i].copy()
    pivot = a[:, i, i, None]
    a[:, i + 1:, i] = np.where(pivot != 0, a[:, i + 1:, i] / np.where(pivot != 0, pivot, 1),
                               a[:, i + 1:, i])
    a[:, i + 1:, i + 1:] -= a[:, i + 1:, i, None] * a[:, i, None, i + 1:]
  pivots = pivots.reshape(*batch, k)
  return (as_dtype(a.reshape(x.shape), x.dtype), pivots,
          _pivots_to_permutation(pivots, m))


@lu_p.def_abstract_eval
def _lu_shape_rule(x):
  _check_matrix("LU decomposition", x)
  *batch, m, n = x.shape
  return (x, x.update(shape=(*batch, min(m, n)), dtype=np.int32),
          x.update(shape=(*batch, m), dtype=np.int32))


def lu(x):
  """LU decomposition with partial pivoting: `(lu, pivots, permutation)` with
  `x[permutation] = L @ U` (see the `lu` primitive)."""
  lu_, pivots, permutation = lu_p.bind(x)
  return lu_, pivots, permutation


lu_pivots_to_permutation_p = Primitive("lu_pivots_to_permutation")


@lu_pivots_to_permutation_p.def_impl
def _lu_pivots_to_permutation_reference(pivots, *, permutation_size):
  """The permutation made by LU's row swaps.

  `pivots`: int32 `[..., k]`; result int32 `[..., permutation_size]`
  (`permutation_size >= k`): `arange(permutation_size)` with entries `i` and
  `pivots[..., i]` swapped for `i = 0, 1, ..., k - 1` in order.
  Out-of-range pivots behave as JAX's gather/scatter lowering: a negative
  pivot counts from the end; one still outside `[0, permutation_size)`
  reads the nearest end entry and writes nothing.
  """
  return _pivots_to_permutation(pivots, permutation_size)


@lu_pivots_to_permutation_p.def_abstract_eval
def _lu_pivots_to_permutation_shape_rule(pivots, *, permutation_size):
  if pivots.ndim < 1 or pivots.dtype != np.int32:
    raise ValueError("Argument to lu_pivots_to_permutation must have rank >= 1 and dtype "
                     f"int32. Got shape={pivots.shape} and dtype={pivots.dtype}")
  if permutation_size < pivots.shape[-1]:
    raise ValueError(f"Output permutation size {permutation_size} has to exceed the "
                     f"trailing dimension of the pivots. Got pivots size {pivots.shape[-1]}")
  return pivots.update(shape=pivots.shape[:-1] + (permutation_size,))


def lu_pivots_to_permutation(pivots, permutation_size):
  """The permutation (int32 `[..., permutation_size]`) made by LU's row swaps."""
  return lu_pivots_to_permutation_p.bind(pivots,
                                         permutation_size=operator.index(permutation_size))


# --- Householder QR: geqrf, householder_product, qr --------------------------------------

def _norms(x, axis):
  """The 2-norms of `x` along `axis`, without overflow or underflow of the
  squares (as LAPACK's nrm2): each vector's moduli divided by the largest,
  squared and summed, the square root times the largest (the norm is the
  largest itself where that is 0, inf or NaN)."""
  moduli = np.abs(x)
  largest = np.max(moduli, axis=axis, keepdims=True, initial=0.0)
  scale = np.where((largest > 0) & (largest < np.inf), largest, 1.0)
  return np.squeeze(scale, axis) * np.sqrt(np.sum((moduli / scale) ** 2, axis=axis))


def _householder_qr(a, pivoting):
  """LAPACK-style Householder QR (geqrf, or geqp3 with column pivoting) of a
  `(batch, m, n)` array, in place: returns `(a, taus, columns)` with `R` in
  `a`'s upper triangle and the reflectors' vectors below it."""
  count, m, n = a.shape
  k = min(m, n)
  rows = np.arange(count)
  taus = np.zeros((count, k), a.dtype)
  columns = np.broadcast_to(np.arange(n, dtype=np.int32), (count, n)).copy()
  for j in range(k):
    if pivoting:  # bring the remaining column of largest norm to position j
      norms = _norms(a[:, j:, j:], 1)
      p = j + np.argmax(np.where(np.isnan(norms), -1, norms), axis=1)
      a[rows, :, j], a[rows, :, p] = a[rows, :, p], a[rows, :, j].copy()
      columns[rows, j], columns[rows, p] = columns[rows, p], columns[rows, j]
    alpha, x = a[:, j, j], a[:, j + 1:, j]
    reflect = (_norms(x, 1) != 0) | (alpha.imag != 0)
    beta = -np.copysign(_norms(a[:, j:, j], 1), alpha.real)
    tau = np.where(reflect, (beta - alpha) / np.where(reflect, beta, 1), 0)
    a[:, j + 1:, j] = np.where(reflect[:, None], x / np.where(reflect, alpha - beta, 1)[:, None],
                               x)
    a[:, j, j] = np.where(reflect, beta, alpha)
    taus[:, j] = tau
    # apply H^H = I - conj(tau) v v^H to the trailing columns
    v = np.concatenate([np.ones((count, 1), a.dtype), a[:, j + 1:, j]], axis=1)
    vh_a = np.einsum("bi,bij->bj", v.conj(), a[:, j:, j + 1:])
    a[:, j:, j + 1:] -= tau.conj()[:, None, None] * v[:, :, None] * vh_a[:, None, :]
  return a, taus, columns


def _householder_product(a, taus):
  """`H_0 H_1 ... H_{k-1}` applied to the first n columns of the identity, for a
  `(batch, m, n)` array of reflector vectors (below the diagonal) and `taus`."""
  count, m, n = a.shape
  q = np.broadcast_to(np.eye(m, n, dtype=a.dtype), a.shape).copy()
  for j in reversed(range(taus.shape[-1])):
    v = np.concatenate([np.ones((count, 1), a.dtype), a[:, j + 1:, j]], axis=1)
    vh_q = np.einsum("bi,bij->bj", v.conj(), q[:, j:, :])
    q[:, j:, :] -= taus[:, j, None, None] * v[:, :, None] * vh_q[:, None, :]
  return q


_HOUSEHOLDER_DOC = """
  A reflector `H = I - tau v v^H` has `v[0] = 1`. For the column
  `[alpha, x...]` it reflects, as LAPACK's larfg: if `x = 0` and `alpha` is
  real, `tau = 0` (H = I); otherwise `beta = -copysign(norm([alpha, x]),
  Re alpha)` (norms scaled by the largest modulus, so that no square
  overflows or underflows), `tau = (beta - alpha) / beta`, `v[1:] = x / (alpha - beta)`,
  and the new diagonal entry is `beta`. So `R`'s diagonal is real, of sign
  opposite to `Re alpha`, except where no reflection is needed (it is then
  `alpha` itself).
"""

geqrf_p = Primitive("geqrf")
geqrf_p.multiple_results = True


@geqrf_p.def_impl
def _geqrf_reference(a):
  """Householder QR in LAPACK's compact form (geqrf).

  Operand `[..., m, n]`, float or complex. Outputs: `a` (same shape and
  dtype) with `R` in its upper triangle and the reflectors' vectors below
  the diagonal, and `taus` (`[..., min(m, n)]`, same dtype); `Q` is the
  product `H_0 H_1 ... H_{k-1}` of the reflectors (see `householder_product`).
  """
  *batch, m, n = a.shape
  out, taus, _ = _householder_qr(_stack(a), False)
  return (as_dtype(out.reshape(a.shape), a.dtype),
          as_dtype(taus.reshape(*batch, min(m, n)), a.dtype))


_geqrf_reference.__doc__ += _HOUSEHOLDER_DOC


@geqrf_p.def_abstract_eval
def _geqrf_shape_rule(a):
  _check_matrix("QR decomposition", a)
  *batch, m, n = a.shape
  return a, a.update(shape=(*batch, min(m, n)))


def geqrf(a):
  """Householder QR in LAPACK's compact form: `(a, taus)` (see the primitive)."""
  a_out, taus = geqrf_p.bind(a)
  return a_out, taus


householder_product_p = Primitive("householder_product")


@householder_product_p.def_impl
def _householder_product_reference(a, taus):
  """The product of elementary Householder reflectors (LAPACK's orgqr/ungqr).

  `a`: `[..., m, n]` with `m >= n`, holding reflector vectors below its
  diagonal (as `geqrf` leaves them); `taus`: `[..., k]`, `k <= n`, of the
  same dtype. Result (shape and dtype of `a`): the first `n` columns of
  `H_0 H_1 ... H_{k-1}`, `H_i = I - taus[i] v_i v_i^H`, `v_i` being zero
  above row `i`, one at row `i` and `a[i+1:, i]` below.
  """
  *batch, m, n = a.shape
  q = _householder_product(_stack(a), _stack(taus, core_ndim=1).astype(_wide(a.dtype)))
  return as_dtype(q.reshape(a.shape), a.dtype)


@householder_product_p.def_abstract_eval
def _householder_product_shape_rule(a, taus):
  _check_matrix("Householder product", a)
  *batch, m, n = a.shape
  if (a.dtype != taus.dtype or tuple(batch) != taus.shape[:-1] or taus.ndim < 1
      or taus.shape[-1] > min(m, n)):
    raise ValueError(f"Type mismatch for Householder product: a={a} taus={taus}")
  if m < n:
    raise ValueError("Householder product inputs must have at least as many rows as "
                     f"columns, got shape {a.shape}")
  return a


def householder_product(a, taus):
  """The product of the Householder reflectors held by `a` and `taus`."""
  return householder_product_p.bind(a, taus)


qr_p = Primitive("qr")
qr_p.multiple_results = True


@qr_p.def_impl
def _qr_reference(x, *, full_matrices, pivoting):
  """QR decomposition `x = Q @ R` (with `pivoting`: `x[..., :, p] = Q @ R`).

  Operand `[..., m, n]`, float or complex; `k = m` if `full_matrices` else
  `min(m, n)`. Outputs: `Q` `[..., m, k]` with orthonormal columns, `R`
  `[..., k, n]` upper triangular, both of `x`'s dtype, and with `pivoting`
  `p` (int32 `[..., n]`), the column order.

  `Q` and `R` are unique only up to the phase of each column of `Q` (row of
  `R`); this is LAPACK's choice (geqrf/geqp3, then orgqr): Householder
  reflections as stated below. With `pivoting` (geqp3), step `j` first
  brings forward the remaining column whose remaining rows (`j:`) have the
  largest 2-norm (the first on ties; NaN norms are never chosen over
  numbers), so `|diag(R)|` is non-increasing. For `m = 0`, `Q` is empty
  and, with `pivoting`, `p` is zeros (as JAX). NaN/inf propagate.
  """
  *batch, m, n = x.shape
  a, taus, columns = _householder_qr(_stack(x), pivoting)
  if m < n:
    q = _householder_product(a[:, :, :m], taus)
  elif full_matrices:
    q = _householder_product(np.concatenate([a, np.zeros((len(a), m, m - n), a.dtype)], 2),
                             taus)
  else:
    q, a = _householder_product(a, taus), a[:, :n, :]
  r = np.triu(a)
  outs = [as_dtype(q.reshape(*batch, *q.shape[1:]), x.dtype),
          as_dtype(r.reshape(*batch, *r.shape[1:]), x.dtype)]
  if pivoting:
    outs.append((columns if m else np.zeros_like(columns)).reshape(*batch, n))
  return outs


_qr_reference.__doc__ += _HOUSEHOLDER_DOC


@qr_p.def_abstract_eval
def _qr_shape_rule(x, *, full_matrices, pivoting):
  _check_matrix("QR decomposition", x)
  *batch, m, n = x.shape
  k = m if full_matrices else min(m, n)
  outs = (x.update(shape=(*batch, m, k)), x.update(shape=(*batch, k, n)))
  if pivoting:
    outs += (x.update(shape=(*batch, n), dtype=np.int32),)
  return outs


def qr(x, *, pivoting=False, full_matrices=True, use_magma=None):
  """QR decomposition: `(q, r)`, or `(q, r, p)` with `pivoting` (`x[..., p] = q @ r`).

  `use_magma` (a GPU option in JAX) is accepted and ignored.
  """
  del use_magma
  q, r, *p = qr_p.bind(x, full_matrices=bool(full_matrices), pivoting=bool(pivoting))
  return (q, r, p[0]) if pivoting else (q, r)


# --- eigh -------------------------------------------------------------------------------

eigh_p = Primitive("eigh")
eigh_p.multiple_results = True


def _index_range(subset_by_index, size):
  return (0, size) if subset_by_index is None else subset_by_index


@eigh_p.def_impl
def _eigh_reference(x, *, lower, sort_eigenvalues, subset_by_index):
  """Eigendecomposition of Hermitian (real symmetric) matrices: `x = V diag(w) V^H`.

  Operand `[..., n, n]`, float or complex; only its `lower` (else upper)
  triangle is read, and the imaginary part of its diagonal is ignored.
  Outputs `(v, w)`: eigenvectors `v` `[..., n, d]` (dtype of `x`, column
  `i` for eigenvalue `w[..., i]`, orthonormal) and eigenvalues `w`
  `[..., d]` (the real dtype), ascending. `subset_by_index = (lo, hi)`
  keeps eigenpairs `lo..hi-1` of the ascending order (`d = hi - lo`; JAX
  supports this only on TPU); None keeps all (`d = n`). `sort_eigenvalues`
  False leaves the order unspecified; the reference still sorts.

  Eigenvectors are unique only up to a unit-modulus factor each (a sign
  when real), and up to a basis of the eigenspace for repeated eigenvalues:
  that choice is unspecified (the reference returns LAPACK's syevd/heevd
  via NumPy); compare `v diag(w) v^H` or `w`. A batch element with a NaN
  or inf in the read triangle, or on which the solver does not converge,
  gets all-NaN outputs.
  """
  n = x.shape[-1]
  lo, hi = _index_range(subset_by_index, n)
  h = _hermitian_from_triangle(x.astype(_wide(x.dtype)), lower)
  v, w = _per_matrix(lambda a: np.linalg.eigh(a)[::-1], [h],
                     [((n, n), h.dtype), ((n,), to_real_dtype(h.dtype))])
  return as_dtype(v[..., lo:hi], x.dtype), as_dtype(w[..., lo:hi], to_real_dtype(x.dtype))


@eigh_p.def_abstract_eval
def _eigh_shape_rule(x, *, lower, sort_eigenvalues, subset_by_index):
  _check_matrix("symmetric eigendecomposition", x, square=True)
  n = x.shape[-1]
  lo, hi = _index_range(subset_by_index, n)
  if not 0 <= lo <= hi <= n:
    raise ValueError(f"subset_by_index must satisfy 0 <= start <= end <= {n}, got "
                     f"{subset_by_index}")
  return (x.update(shape=x.shape[:-1] + (hi - lo,)),
          x.update(shape=x.shape[:-2] + (hi - lo,), dtype=to_real_dtype(x.dtype)))


def _subset(subset_by_index):
  return None if subset_by_index is None else tuple(map(operator.index, subset_by_index))


def eigh(x, *, lower=True, symmetrize_input=True, sort_eigenvalues=True,
         subset_by_index=None, implementation=None):
  """Eigendecomposition of Hermitian `x`: `(v, w)`, eigenvectors and ascending
  eigenvalues, with `x = v diag(w) v^H`.

  With `symmetrize_input`, `(x + x^H) / 2` is decomposed; otherwise only the
  `lower` (else upper) triangle is read. `implementation` (an
  `EighImplementation`, for accelerators) is checked and ignored.
  """
  _check_implementation(implementation, EighImplementation)
  if symmetrize_input:
    x = _symmetrize(x)
  v, w = eigh_p.bind(x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues),
                     subset_by_index=_subset(subset_by_index))
  return v, w


# --- svd --------------------------------------------------------------------------------

svd_p = Primitive("svd")
svd_p.multiple_results = True


@svd_p.def_impl
def _svd_reference(x, *, full_matrices, compute_uv, subset_by_index, algorithm):
  """Singular value decomposition `x = U diag(s) V^H`.

  Operand `[..., m, n]`, float or complex; `k = min(m, n)`. Outputs `(s,)`,
  or `(s, u, vt)` with `compute_uv`: singular values `s` `[..., k]` (real
  dtype, non-negative, descending); `u` `[..., m, m]` (`[..., m, k]`
  unless `full_matrices`) and `vt = V^H` `[..., n, n]` (`[..., k, n]`),
  dtype of `x`, with orthonormal columns (rows). `subset_by_index =
  (lo, hi)` keeps singular triplets `lo..hi-1` of the descending order
  (only with `full_matrices` False, or the full range; JAX supports it only
  on TPU). `algorithm` (an `SvdAlgorithm`) is a hint the reference ignores.

  Singular vectors are unique only up to a unit-modulus factor shared by
  `u[:, i]` and `vt[i, :]` (a sign when real), and up to a basis for
  repeated singular values and for the columns beyond `k`: that choice is
  unspecified (the reference returns LAPACK's gesdd via NumPy); compare `s`
  or the product `u diag(s) vt`. A batch element with a NaN or inf entry, or
  on which the solver does not converge, gets all-NaN outputs. For `k = 0`,
  `u` and `vt` are identity matrices (full) or empty.
  """
  *batch, m, n = x.shape
  k = min(m, n)
  lo, hi = _index_range(subset_by_index, k)
  wide = _wide(x.dtype)
  if k == 0:
    s = np.zeros((*batch, 0), to_real_dtype(wide))
    u = np.broadcast_to(np.eye(m, m if full_matrices else 0, dtype=wide),
                        (*batch, m, m if full_matrices else 0))
    vt = np.broadcast_to(np.eye(n if full_matrices else 0, n, dtype=wide),
                         (*batch, n if full_matrices else 0, n))
  elif compute_uv:
    u_cols, vt_rows = (m, n) if full_matrices else (k, k)
    u, s, vt = _per_matrix(lambda a: np.linalg.svd(a, full_matrices=full_matrices),
                           [x.astype(wide)],
                           [((m, u_cols), wide), ((k,), to_real_dtype(wide)), ((vt_rows, n), wide)])
  else:
    s, = _per_matrix(lambda a: (np.linalg.svd(a, compute_uv=False),), [x.astype(wide)],
                     [((k,), to_real_dtype(wide))])
  s = as_dtype(s[..., lo:hi], to_real_dtype(x.dtype))
  if not compute_uv:
    return [s]
  if not full_matrices:
    u, vt = u[..., lo:hi], vt[..., lo:hi, :]
  return [s, as_dtype(u, x.dtype), as_dtype(vt, x.dtype)]


@svd_p.def_abstract_eval
def _svd_shape_rule(x, *, full_matrices, compute_uv, subset_by_index, algorithm):
  _check_matrix("singular value decomposition", x)
  *batch, m, n = x.shape
  rank = min(m, n)
  if subset_by_index is not None:
    lo, hi = subset_by_index
    if full_matrices and subset_by_index != (0, rank):
      raise ValueError("full_matrices and subset_by_index cannot both be set")
    if not 0 <= lo <= hi:
      raise ValueError(f"subset_by_index must satisfy 0 <= start <= end, got "
                       f"{subset_by_index}")
    rank = min(rank, hi - lo)
  s = x.update(shape=(*batch, rank), dtype=to_real_dtype(x.dtype))
  if not compute_uv:
    return (s,)
  return (s, x.update(shape=(*batch, m, m if full_matrices else rank)),
          x.update(shape=(*batch, n if full_matrices else rank, n)))


def svd(x, *, full_matrices=True, compute_uv=True, subset_by_index=None, algorithm=None):
  """Singular value decomposition: `(u, s, vh)` with `x = u diag(s) vh`, or `s`
  alone when not `compute_uv`."""
  if algorithm is not None and not isinstance(algorithm, SvdAlgorithm):
    raise TypeError(f"algorithm must be an SvdAlgorithm or None, got {algorithm!r}")
  result = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv),
                      subset_by_index=_subset(subset_by_index), algorithm=algorithm)
  if compute_uv:
    s, u, vt = result
    return u, s, vt
  s, = result
  return s


# --- eig --------------------------------------------------------------------------------

eig_p = Primitive("eig")
eig_p.multiple_results = True


def _eig_matrix(a, left, right):
  """Eigenvalues, left and right eigenvectors of one matrix (see `eig`)."""
  w, vr = np.linalg.eig(a)
  w, vr = w.astype(np.complex128), vr.astype(np.complex128)
  outs = [w]
  if left:  # u_j^H (a - w_j) = 0: u_j spans the null space of (a - w_j)^H
    n = len(w)
    vl = np.empty((n, n), np.complex128)
    for j in range(n):
      u = np.linalg.svd((a - w[j] * np.eye(n)).conj().T)[2][-1].conj()
      largest = u[np.argmax(np.abs(u))]  # made real and positive
      vl[:, j] = u * (np.abs(largest) / largest if largest != 0 else 1)
    outs.append(vl)
  if right:
    outs.append(vr)
  return outs


def _eig_dtype(dtype):
  """complex64 for 32-bit operands, else complex128 (canonicalized)."""
  bits = dtypes.finfo(dtype).bits
  return dtypes.canonicalize_dtype(np.complex64 if bits == 32 else np.complex128)


@eig_p.def_impl
def _eig_reference(x, *, compute_left_eigenvectors, compute_right_eigenvectors):
  """Eigendecomposition of general square matrices: `x v_j = w_j v_j`.

  Operand `[..., n, n]`, float or complex. Outputs, all complex (complex64
  for 32-bit operands, else complex128): eigenvalues `w` `[..., n]`, then
  if asked the left eigenvectors `vl` (`u_j^H x = w_j u_j^H`, column `j`)
  and the right eigenvectors `vr` (column `j`), each `[..., n, n]`.

  Unspecified (compare invariants such as `x vr = vr diag(w)` or the
  sorted eigenvalues instead): the order of the eigenvalues (the reference
  returns LAPACK's geev order via NumPy; for real `x` conjugate pairs are
  adjacent, positive imaginary part first), and the phase of each
  eigenvector (and, for a repeated eigenvalue, the choice within its
  eigenspace). Eigenvectors have unit 2-norm; the reference's `vr` is
  LAPACK's (largest component real) and its `vl[:, j]` is the null vector
  of `(x - w_j)^H` (its last right singular vector) with the largest-modulus
  component made real and positive. A batch element with a NaN or inf
  entry, or on which the solver does not converge, gets all-NaN outputs.
  """
  n = x.shape[-1]
  a = x.astype(_wide(x.dtype))
  shapes = [(n,)] + [(n, n)] * (compute_left_eigenvectors + compute_right_eigenvectors)
  outs = _per_matrix(lambda m: _eig_matrix(m, compute_left_eigenvectors,
                                           compute_right_eigenvectors),
                     [a], [(shape, np.complex128) for shape in shapes])
  return [as_dtype(o, _eig_dtype(x.dtype)) for o in outs]


@eig_p.def_abstract_eval
def _eig_shape_rule(x, *, compute_left_eigenvectors, compute_right_eigenvectors):
  _check_matrix("nonsymmetric eigendecomposition", x, square=True)
  dtype = _eig_dtype(x.dtype)
  outs = [x.update(shape=x.shape[:-1], dtype=dtype)]
  outs += [x.update(dtype=dtype)] * (compute_left_eigenvectors + compute_right_eigenvectors)
  return tuple(outs)


def eig(x, *, compute_left_eigenvectors=True, compute_right_eigenvectors=True,
        implementation=None, use_magma=None):
  """Eigendecomposition of a general matrix: `[w, vl, vr]`, with `vl` and `vr`
  only when asked. `implementation` (an `EigImplementation`) and `use_magma`
  (GPU options in JAX) are checked and ignored."""
  _check_implementation(implementation, EigImplementation)
  del use_magma
  return eig_p.bind(x, compute_left_eigenvectors=bool(compute_left_eigenvectors),
                    compute_right_eigenvectors=bool(compute_right_eigenvectors))


# --- tridiagonal_solve ----------------------------------------------------------------------

tridiagonal_solve_p = Primitive("tridiagonal_solve")


@tridiagonal_solve_p.def_impl
def _tridiagonal_solve_reference(dl, d, du, b):
  """Solves `A @ x = b` for tridiagonal `A`.

  `dl`, `d`, `du`: `[..., m]`, the sub-, main and super-diagonal
  (`A[i, i-1] = dl[i]`, `A[i, i] = d[i]`, `A[i, i+1] = du[i]`; `dl[0]` and
  `du[m-1]` are not read); `b` and the result: `[..., m, n]`; all of one
  float or complex dtype. Values: the exact solution, rounded once (LAPACK
  gtsv, Gaussian elimination with partial pivoting, computes it). A
  singular `A`, or a NaN/inf input, gives an all-NaN result for that batch
  element.
  """
  m = d.shape[-1]
  wide = _wide(b.dtype)
  a = np.zeros(d.shape + (m,), wide)
  i = np.arange(m)
  a[..., i, i] = d
  a[..., i[1:], i[1:] - 1] = dl[..., 1:]
  a[..., i[:-1], i[:-1] + 1] = du[..., :-1]
  x, = _per_matrix(lambda a_, b_: (np.linalg.solve(a_, b_),), [a, b.astype(wide)],
                   [(b.shape[-2:], wide)])
  return as_dtype(x, b.dtype)


@tridiagonal_solve_p.def_abstract_eval
def _tridiagonal_solve_shape_rule(dl, d, du, b):
  for i, x in enumerate((dl, d, du, b)):
    check_dtype("tridiagonal_solve", x, INEXACT, position=i)
  check_same_dtypes("tridiagonal_solve", dl, d, du, b)
  if b.ndim < 2:
    raise TypeError(f"tridiagonal_solve requires b.ndim to be at least 2, got {b.ndim}.")
  if dl.shape != d.shape or dl.shape != du.shape:
    raise TypeError("tridiagonal_solve requires that all diagonal arguments have the same "
                    "shape.")
  if dl.shape != b.shape[:-1]:
    raise TypeError("tridiagonal_solve requires that the leading ndim-1 dimensions of b "
                    "equal the dimensions of the diagonal arguments.")
  return b.update(weak_type=all(x.weak_type for x in (dl, d, du, b)))


def tridiagonal_solve(dl, d, du, b):
  """Solves the tridiagonal system with diagonals `dl`, `d`, `du` for `b`."""
  return tridiagonal_solve_p.bind(dl, d, du, b)


# --- Householder reflections, Hessenberg and tridiagonal reduction, ormqr ----------------
#
# The per-matrix functions below (`_hessenberg_matrix`, `_ormqr_matrix`, the
# Schur iterations, `_cholesky_update_matrix`) act in place on one matrix of
# float64 or complex128, with the operations Numba compiles: the numba
# backend runs this same Python (numba_backend/rules/linalg.py).

def _larfg(x):
  """LAPACK's larfg on the vector `x = [alpha, rest...]`, in place: returns `tau`
  and leaves `[beta, v[1:]...]` in `x`, where `(I - tau v v^H)^H x = beta e_0`,
  `v[0] = 1`. No reflection (`tau = 0`) when `rest = 0` and `alpha` is real;
  otherwise `beta = -copysign(norm(x), Re alpha)` (real; `hypot(|alpha|,
  norm(rest))`, by `_norms`: no square overflows or underflows), `tau =
  (beta - alpha) / beta`, `v[1:] = rest / (alpha - beta)`."""
  alpha = x[0]
  rest = _norms(x[1:], 0)
  if rest == 0 and alpha.imag == 0:
    return alpha * 0
  beta = -math.copysign(math.hypot(abs(alpha), rest), alpha.real)
  x[1:] = x[1:] / (alpha - beta)
  x[0] = beta
  return (beta - alpha) / beta


def _reflect_left(c, v, tau):
  """`c := (I - tau v v^H) c`, in place."""
  c -= tau * np.outer(v, np.conj(v) @ np.ascontiguousarray(c))


def _reflect_right(c, v, tau):
  """`c := c (I - tau v v^H)`, in place."""
  c -= tau * np.outer(np.ascontiguousarray(c) @ v, np.conj(v))


def _reflector(a, j, start):
  """The Householder vector held in column `j` of `a` from row `start` (its
  implicit leading 1 made explicit)."""
  v = a[start:, j].copy()
  v[0] = 1
  return v


def _hessenberg_matrix(a, taus):
  """Reduces the n x n matrix `a` to upper Hessenberg form in place, as
  LAPACK's gehrd: for j = 0..n-2, the reflector `H_j = I - taus[j] v v^H`
  (`_larfg` of `a[j+1:, j]`, `v` zero above row j+1) is applied as
  `a := H_j^H a H_j`; `v[j+2:]` is kept below the first subdiagonal."""
  n = a.shape[0]
  for j in range(n - 1):
    taus[j] = _larfg(a[j + 1:, j])
    v = _reflector(a, j, j + 1)
    _reflect_left(a[j + 1:, j + 1:], v, np.conj(taus[j]))
    _reflect_right(a[:, j + 1:], v, taus[j])


def _ormqr_matrix(a, taus, c, left, transpose):
  """`c := op(Q) c` (`left`) or `c op(Q)`, in place, `Q = H_0 H_1 ... H_{k-1}`
  the reflectors held below the diagonal of `a` and in `taus` (as `geqrf`
  leaves them), `op(Q) = Q^H` if `transpose`."""
  k = taus.shape[0]
  for step in range(k):
    i = step if left == transpose else k - 1 - step
    tau = np.conj(taus[i]) if transpose else taus[i]
    v = _reflector(a, i, i)
    if left:
      _reflect_left(c[i:, :], v, tau)
    else:
      _reflect_right(c[:, i:], v, tau)


hessenberg_p = Primitive("hessenberg")
hessenberg_p.multiple_results = True


def _each_matrix(fn, inputs, outputs):
  """Calls `fn(*matrices, *outputs)` for each batch element: `inputs` are
  wide arrays sharing a batch shape, copied into the `outputs` they name
  (`outputs[i]` starts as a copy of `inputs[i]` where i < len(inputs);
  the rest are scratch arrays of the given batch-less shapes, zeroed).
  `fn` works in place and returns whether it succeeded. A batch element
  with a non-finite input, or on which `fn` fails, gets NaN outputs."""
  batch = inputs[0].shape[:inputs[0].ndim - 2]
  results = [x.copy() for x in inputs] + [np.zeros(batch + shape, dtype)
                                          for shape, dtype in outputs]
  for index in np.ndindex(*batch):
    ok = all(np.isfinite(x[index]).all() for x in inputs)
    if ok:
      ok = fn(*(r[index] for r in results)) is not False
    if not ok:
      for r in results:
        r[index] = _nans(r[index].shape, r.dtype)
  return results


@hessenberg_p.def_impl
def _hessenberg_reference(a):
  """Reduction to upper Hessenberg form `a = Q H Q^H` (LAPACK's gehrd).

  Operand `[..., n, n]`, float or complex. Outputs `(a, taus)`: `a` (shape
  and dtype of the operand) holds `H` in its upper triangle and first
  subdiagonal and the reflectors' vectors below that; `taus` `[..., n - 1]`
  (same dtype). `Q = H_0 ... H_{n-2}`, `H_j = I - taus[j] v_j v_j^H`, `v_j`
  zero above row j+1, one there, `a[j+2:, j]` below; each reflector is
  LAPACK's larfg (see `qr`), so the subdiagonal of `H` is real. A batch
  element with a NaN or inf entry gets NaN outputs.
  """
  n = a.shape[-1]
  out, taus = _each_matrix(_hessenberg_matrix, [a.astype(_wide(a.dtype))],
                           [((max(n - 1, 0),), _wide(a.dtype))])
  return as_dtype(out, a.dtype), as_dtype(taus, a.dtype)


@hessenberg_p.def_abstract_eval
def _hessenberg_shape_rule(a):
  check_dtype("hessenberg", a, INEXACT)
  if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
    raise ValueError(f"Argument to Hessenberg reduction must have shape [..., n, n], got "
                     f"shape {a.shape}")
  return a, a.update(shape=a.shape[:-2] + (max(a.shape[-1] - 1, 0),))


def hessenberg(a):
  """Reduction to upper Hessenberg form: `(a, taus)`, with `H` in the upper
  triangle and first subdiagonal of `a` and the Householder reflectors below
  (see the `hessenberg` primitive)."""
  a_out, taus = hessenberg_p.bind(a)
  return a_out, taus


tridiagonal_p = Primitive("tridiagonal")
tridiagonal_p.multiple_results = True


@tridiagonal_p.def_impl
def _tridiagonal_reference(a, *, lower):
  """Reduction of a Hermitian matrix to real symmetric tridiagonal form
  `T = Q^H A Q` (LAPACK's sytrd/hetrd).

  Operand `[..., n, n]` (n >= 1), float or complex; only its `lower` (else
  upper) triangle is read, the imaginary part of its diagonal ignored.
  Outputs `(a, d, e, taus)`: `a` is the operand with that triangle
  replaced: its diagonal is `d` and the next diagonal `e`, the reflectors'
  vectors beyond; the other triangle is returned as given. `d` `[..., n]`
  and `e` `[..., n - 1]` (the real dtype) are the diagonal and off-diagonal
  of `T`; `taus` `[..., n - 1]`. With `lower`, `Q = H_0 ... H_{n-2}`, `H_j`
  as in `hessenberg` (the Hessenberg reduction of `A`, which is
  tridiagonal); otherwise the same reduction of `A` with its rows and
  columns in reverse order (LAPACK's upper storage: `Q = H_{n-2} ... H_0`,
  `v_j` one at row j, `a[:j, j+1]` above, zero below). A batch element with
  a NaN or inf in the read triangle gets NaN outputs.
  """
  n = a.shape[-1]
  wide = _wide(a.dtype)
  h = _hermitian_from_triangle(a.astype(wide), lower)
  if not lower:
    h = h[..., ::-1, ::-1]
  h, taus = _each_matrix(_hessenberg_matrix, [h], [((n - 1,), wide)])
  i = np.arange(n)
  d, e = h[..., i, i].real, h[..., i[1:], i[:-1]].real
  h[..., i, i] = d
  if lower:
    out = np.where(np.tri(n, dtype=bool), h, a)
  else:
    h, d, e, taus = h[..., ::-1, ::-1], d[..., ::-1], e[..., ::-1], taus[..., ::-1]
    out = np.where(np.tri(n, dtype=bool).T, h, a)
  real = to_real_dtype(a.dtype)
  return as_dtype(out, a.dtype), as_dtype(d, real), as_dtype(e, real), as_dtype(taus, a.dtype)


@tridiagonal_p.def_abstract_eval
def _tridiagonal_shape_rule(a, *, lower):
  check_dtype("tridiagonal", a, INEXACT)
  if a.ndim < 2 or a.shape[-1] != a.shape[-2] or a.shape[-1] == 0:
    raise ValueError(f"The input to tridiagonal must be a square matrix. Got shape "
                     f"{a.shape[-2:]}.")
  *batch, n = a.shape[:-1]
  real = to_real_dtype(a.dtype)
  return (a, a.update(shape=(*batch, n), dtype=real), a.update(shape=(*batch, n - 1), dtype=real),
          a.update(shape=(*batch, n - 1)))


def tridiagonal(a, *, lower=True):
  """Reduction of a Hermitian matrix to tridiagonal form: `(a, d, e, taus)`
  (see the `tridiagonal` primitive); only the `lower` (else upper) triangle
  of `a` is read."""
  return tuple(tridiagonal_p.bind(a, lower=bool(lower)))


ormqr_p = Primitive("ormqr")


@ormqr_p.def_impl
def _ormqr_reference(a, taus, c, *, left, transpose):
  """`op(Q) @ c` (`left`) or `c @ op(Q)` without forming `Q` (LAPACK's
  ormqr/unmqr).

  `a` `[..., m, n]` holds reflectors below its diagonal and `taus`
  `[..., k]` their factors, as `geqrf` leaves them: `Q = H_0 ... H_{k-1}`
  (m x m, see `householder_product`); `op(Q)` is `Q^H` if `transpose`.
  `c`: `[..., m, p]` when `left`, else `[..., p, m]`; the result has its
  shape. All of one float or complex dtype; computed wide, rounded once.
  """
  wide = _wide(c.dtype)
  out = c.astype(wide)
  for index in np.ndindex(*c.shape[:-2]):
    _ormqr_matrix(a[index].astype(wide), taus[index].astype(wide), out[index], left, transpose)
  return as_dtype(out, c.dtype)


@ormqr_p.def_abstract_eval
def _ormqr_shape_rule(a, taus, c, *, left, transpose):
  for i, x in enumerate((a, taus, c)):
    check_dtype("ormqr", x, INEXACT, position=i)
  check_same_dtypes("ormqr", a, taus, c)
  if a.ndim < 2 or c.ndim != a.ndim or taus.ndim != a.ndim - 1:
    raise TypeError(f"ormqr takes a [..., m, n], taus [..., k] and c [..., p, q] with the same "
                    f"batch dimensions, got shapes {a.shape}, {taus.shape} and {c.shape}.")
  if a.shape[:-2] != taus.shape[:-1] or a.shape[:-2] != c.shape[:-2]:
    raise TypeError(f"ormqr requires equal batch dimensions, got shapes {a.shape}, "
                    f"{taus.shape} and {c.shape}.")
  if taus.shape[-1] > min(a.shape[-2:]):
    raise ValueError(f"ormqr takes at most min(m, n) reflectors, got {taus.shape[-1]} for a "
                     f"of shape {a.shape}.")
  m = a.shape[-2]
  if left and c.shape[-2] != m:
    raise ValueError("ormqr with left=True expects c to have the same number of rows as the "
                     f"Householder matrix a. Got a shape {a.shape} and c shape {c.shape}.")
  if not left and c.shape[-1] != m:
    raise ValueError("ormqr with left=False expects c to have the same number of columns as "
                     f"the Householder matrix a has rows. Got a shape {a.shape} and c shape "
                     f"{c.shape}.")
  return c


def ormqr(a, taus, c, *, left=True, transpose=False):
  """Multiplies `c` by `Q` of a QR factorization (`a`, `taus` as `geqrf` gives
  them) without forming `Q`: `Q @ c`, `Q^H @ c` (`transpose`; `Q^T` when
  real), `c @ Q` or `c @ Q^H` (`left=False`)."""
  return ormqr_p.bind(a, taus, c, left=bool(left), transpose=bool(transpose))


# --- schur ------------------------------------------------------------------------------

_EPS = float(np.finfo(np.float64).eps)


def _deflation_start(h, hi, norm):
  """The first row `lo <= hi` of the unreduced block of the Hessenberg `h`
  ending at row `hi`: going up from `hi`, the first subdiagonal entry
  negligible next to its diagonal neighbours (`norm` where those are zero)
  is set to zero and ends the block."""
  lo = hi
  while lo > 0:
    scale = abs(h[lo - 1, lo - 1]) + abs(h[lo, lo])
    if abs(h[lo, lo - 1]) <= _EPS * (scale if scale > 0 else norm):
      h[lo, lo - 1] = 0
      return lo
    lo -= 1
  return 0


def _givens(x, y):
  """`(c, s)`, c real, with `G = [[c, s], [-conj(s), c]]` unitary and
  `G [x, y] = [r, 0]`."""
  r = math.hypot(abs(x), abs(y))
  if x == 0:
    return 0.0, y * 0 + 1
  return abs(x) / r, (x / abs(x)) * np.conj(y) / r


def _rotate_rows(m, k, c, s, start, stop):
  """Rows k, k+1 of `m[:, start:stop]` := `G` times them, `G = [[c, s], [-conj(s), c]]`."""
  top, bottom = m[k, start:stop].copy(), m[k + 1, start:stop].copy()
  m[k, start:stop] = c * top + s * bottom
  m[k + 1, start:stop] = c * bottom - np.conj(s) * top


def _rotate_columns(m, k, c, s, start, stop):
  """Columns k, k+1 of `m[start:stop]` := them times `G^H`."""
  left, right = m[start:stop, k].copy(), m[start:stop, k + 1].copy()
  m[start:stop, k] = c * left + np.conj(s) * right
  m[start:stop, k + 1] = c * right - s * left


def _complex_schur_matrix(h, z):
  """The complex Schur form of the Hessenberg `h`, in place, its unitary
  transformations accumulated into `z` (`z := z G^H`): implicit single-shift
  QR steps (Wilkinson's shift; an exceptional shift every 10th step
  without deflation) by Givens rotations, as LAPACK's zlahqr. Returns False
  after 30 n steps without convergence."""
  n = h.shape[0]
  norm = np.sqrt(np.sum(np.abs(h) ** 2))
  hi, steps, total = n - 1, 0, 0
  while hi > 0:
    lo = _deflation_start(h, hi, norm)
    if lo == hi:
      hi, steps = hi - 1, 0
      continue
    if total == 30 * n:
      return False
    steps, total = steps + 1, total + 1
    a, b, c, d = h[hi - 1, hi - 1], h[hi - 1, hi], h[hi, hi - 1], h[hi, hi]
    if steps % 10 == 0:
      shift = d + 0.75 * abs(c)
    else:   # the eigenvalue of the trailing 2 x 2 block nearer to d
      root = cmath.sqrt(((a - d) / 2) ** 2 + b * c)
      shift = (a + d) / 2 + root
      if abs(shift - d) > abs((a + d) / 2 - root - d):
        shift = (a + d) / 2 - root
    x, y = h[lo, lo] - shift, h[lo + 1, lo]
    for k in range(lo, hi):
      if k > lo:
        x, y = h[k, k - 1], h[k + 1, k - 1]
      cos, sin = _givens(x, y)
      _rotate_rows(h, k, cos, sin, max(lo, k - 1), n)
      if k > lo:
        h[k + 1, k - 1] = 0
      _rotate_columns(h, k, cos, sin, 0, min(k + 3, hi + 1))
      _rotate_columns(z, k, cos, sin, 0, n)
  return True


def _house(x):
  """`(v, beta)` with `(I - beta v v^T) x = -+norm(x) e_0` for a real vector x
  (beta = 0 when x = 0)."""
  v = x.copy()
  norm = np.sqrt(np.sum(x * x))
  if norm == 0:
    return v, 0.0
  v[0] += math.copysign(norm, x[0])
  return v, 2 / np.sum(v * v)


def _standard_block(a, b, c, d):
  """LAPACK's dlanv2: `(cs, sn, a, b, c, d)` with [[a, b], [c, d]] (given)
  `= R [[a', b'], [c', d']] R^T`, `R = [[cs, -sn], [sn, cs]]`, the new block
  upper triangular for real eigenvalues, else with `a' = d'` and `b' c' < 0`."""
  if c == 0:
    return 1.0, 0.0, a, b, c, d
  if b == 0:   # swap rows and columns
    return 0.0, 1.0, d, -c, 0.0, a
  if a - d == 0 and (b > 0) != (c > 0):
    return 1.0, 0.0, a, b, c, d
  temp = a - d
  p = temp / 2
  bcmax, bcmis = (max(abs(b), abs(c)),
                  min(abs(b), abs(c)) * math.copysign(1, b) * math.copysign(1, c))
  scale = max(abs(p), bcmax)
  discriminant = p / scale * p + bcmax / scale * bcmis
  if discriminant >= 4 * _EPS:   # real eigenvalues: make the block triangular
    root = p + math.copysign(math.sqrt(scale) * math.sqrt(discriminant), p)
    tau = math.hypot(c, root)
    return root / tau, c / tau, d + root, b - c, 0.0, d - bcmax / root * bcmis
  # complex (or nearly equal) eigenvalues: make the diagonal equal
  sigma = b + c
  tau = math.hypot(sigma, temp)
  cs = math.sqrt(0.5 * (1 + abs(sigma) / tau))
  sn = -(p / (tau * cs)) * math.copysign(1, sigma)
  aa, bb, cc, dd = a * cs + b * sn, -a * sn + b * cs, c * cs + d * sn, -c * sn + d * cs
  a, b, c, d = aa * cs + cc * sn, bb * cs + dd * sn, -aa * sn + cc * cs, -bb * sn + dd * cs
  temp = (a + d) / 2
  a = d = temp
  if c != 0 and b != 0 and (b > 0) == (c > 0):   # real after all: triangular
    sab, sac = math.sqrt(abs(b)), math.sqrt(abs(c))
    p = math.copysign(sab * sac, c)
    tau = 1 / math.sqrt(abs(b + c))
    cs1, sn1 = sab * tau, sac * tau
    cs, sn = cs * cs1 - sn * sn1, cs * sn1 + sn * cs1
    return cs, sn, temp + p, b - c, 0.0, temp - p
  if c != 0 and b == 0:
    return -sn, cs, a, -c, 0.0, d
  return cs, sn, a, b, c, d


def _francis_shifts(a, b, c, d):
  """(re, im): the shifts re ± i im of a double QR step, from the trailing
  block [[a, b], [c, d]]: its eigenvalues, or where they are real the one
  nearer to d twice (as LAPACK's dlahqr)."""
  half = (a - d) / 2
  discriminant = half * half + b * c
  if discriminant < 0:
    return d + half, math.sqrt(-discriminant)
  larger = half + math.copysign(math.sqrt(discriminant), half)   # d + the root of
  return (d - b * c / larger if larger != 0 else d), 0.0   # m^2 - 2 half m - b c of least modulus


def _double_shift_column(h00, h01, h10, h11, h21, re, im):
  """(x, y, w): the first column of (h - re - i im)(h - re + i im), for h
  Hessenberg with the leading entries given, the shift subtracted from each
  diagonal entry first (as dlahqr: the products of entries near the shifts
  would cancel to noise)."""
  return (h00 - re) * (h00 - re) + im * im + h01 * h10, h10 * ((h00 - re) + (h11 - re)), h10 * h21


def _real_schur_matrix(h, z):
  """The real Schur form of the real Hessenberg `h`, in place, its orthogonal
  transformations accumulated into `z`: Francis double-shift QR steps by 3 x 3
  Householder reflections, as LAPACK's dlahqr. The shifts are the
  eigenvalues of the trailing 2 x 2 block, or where they are real the one
  nearer to its last diagonal entry twice; every 10th step without
  deflation an exceptional pair, by h[lo, lo] and by h[hi, hi] in turn.
  A 2 x 2 block that splits off is put in standard form
  (`_standard_block`). Returns False after 30 n steps without convergence."""
  n = h.shape[0]
  norm = np.sqrt(np.sum(h * h))
  hi, steps, total = n - 1, 0, 0
  while hi >= 0:
    lo = _deflation_start(h, hi, norm)
    if lo == hi:
      hi, steps = hi - 1, 0
      continue
    if lo == hi - 1:
      k = lo
      cs, sn, a, b, c, d = _standard_block(h[k, k], h[k, k + 1], h[k + 1, k], h[k + 1, k + 1])
      _rotate_rows(h, k, cs, sn, k, n)
      _rotate_columns(h, k, cs, sn, 0, k + 2)
      _rotate_columns(z, k, cs, sn, 0, n)
      h[k, k], h[k, k + 1], h[k + 1, k], h[k + 1, k + 1] = a, b, c, d
      hi, steps = hi - 2, 0
      continue
    if total == 30 * n:
      return False
    steps, total = steps + 1, total + 1
    if steps % 10 == 0:   # dlahqr's exceptional shifts: by h[lo, lo], then by h[hi, hi]
      if steps % 20 == 10:
        s, center = abs(h[lo + 1, lo]) + abs(h[lo + 2, lo + 1]), h[lo, lo]
      else:
        s, center = abs(h[hi, hi - 1]) + abs(h[hi - 1, hi - 2]), h[hi, hi]
      re, im = center + 0.75 * s, math.sqrt(0.4375) * s
    else:
      re, im = _francis_shifts(h[hi - 1, hi - 1], h[hi - 1, hi], h[hi, hi - 1], h[hi, hi])
    x, y, w = _double_shift_column(h[lo, lo], h[lo, lo + 1], h[lo + 1, lo], h[lo + 1, lo + 1],
                                   h[lo + 2, lo + 1], re, im)
    for k in range(lo, hi - 1):
      v, beta = _house(np.array([x, y, w]))
      _reflect_left(h[k:k + 3, max(lo, k - 1):], v, beta)
      if k > lo:
        h[k + 1, k - 1] = 0
        h[k + 2, k - 1] = 0
      _reflect_right(h[:min(k + 4, hi + 1), k:k + 3], v, beta)
      _reflect_right(z[:, k:k + 3], v, beta)
      x, y = h[k + 1, k], h[k + 2, k]
      if k < hi - 2:
        w = h[k + 3, k]
    cos, sin = _givens(x, y)
    _rotate_rows(h, hi - 1, cos, sin, hi - 2, n)
    h[hi, hi - 2] = 0
    _rotate_columns(h, hi - 1, cos, sin, 0, hi + 1)
    _rotate_columns(z, hi - 1, cos, sin, 0, n)
  return True


def _times_power_of_two(x, k):
  """x times 2**k, exactly where the result is a normal float: by two
  factors, each a float where 2**k may not be (|k| > 1023)."""
  return x * 2.0 ** (k // 2) * 2.0 ** (k - k // 2)


def _to_unit_scale(a):
  """Scales the finite matrix `a` in place by a power of two, its largest
  modulus into [0.5, 1) (exactly, unless an entry becomes subnormal), as
  LAPACK's gees scales a matrix beyond its safe range; returns the exponent
  that scales it back. The QR iteration then neither overflows nor
  underflows, and the Schur form of 2**k x is 2**k times that of x."""
  exponent = math.frexp(np.max(np.abs(a)))[1] if a.size else 0
  a[:] = _times_power_of_two(a, -exponent)
  return exponent


def _hessenberg_with_q(t, z, taus):
  """`t := H`, `z := Q` of `t = Q H Q^H` (`z` given zeroed; `taus` scratch)."""
  n = t.shape[0]
  _hessenberg_matrix(t, taus)
  for j in range(n):
    z[j, j] = 1
  for j in range(n - 2, -1, -1):   # z := H_0 ... H_{n-2}
    _reflect_left(z[j + 1:, j + 1:], _reflector(t, j, j + 1), taus[j])
  for j in range(n - 2):
    t[j + 2:, j] = 0


schur_p = Primitive("schur")
schur_p.multiple_results = True


@schur_p.def_impl
def _schur_reference(x, *, compute_schur_vectors, sort_eig_vals, select_callable):
  """Schur decomposition `x = Z T Z^H` (LAPACK's gees).

  Operand `[..., n, n]`, float or complex. Outputs `T`, then with
  `compute_schur_vectors` the unitary (orthogonal) `Z`, both of `x`'s
  shape and dtype. For complex `x`, `T` is upper triangular, its diagonal
  the eigenvalues; for real `x`, `T` is real and quasi-upper-triangular
  (the real Schur form): 1 x 1 blocks for real eigenvalues and 2 x 2 blocks
  `[[a, b], [c, a]]` with `b c < 0` for the pairs `a +- sqrt(b c)`.
  `sort_eig_vals` True raises NotImplementedError (as JAX on CPU);
  `select_callable` is unused.

  The form is unique only up to the order of the eigenvalues and the phase
  of each Schur vector; the reference scales the matrix by a power of two
  (`_to_unit_scale`), reduces it to Hessenberg form, then iterates shifted
  QR steps (see `_complex_schur_matrix`, `_real_schur_matrix`); compare
  `Z T Z^H` and the eigenvalues. A batch
  element with a NaN or inf entry, or on which the iteration does not
  converge, gets NaN outputs.
  """
  if sort_eig_vals:
    raise NotImplementedError("The sort feature of LAPACK's gees routine is not implemented.")
  n = x.shape[-1]
  wide = _wide(x.dtype)
  iterate = _complex_schur_matrix if dtypes.is_complex(wide) else _real_schur_matrix

  def decompose(t, z, taus):
    exponent = _to_unit_scale(t)
    _hessenberg_with_q(t, z, taus)
    converged = iterate(t, z)
    t[:] = _times_power_of_two(t, exponent)
    return converged

  t, z, _ = _each_matrix(decompose, [x.astype(wide)], [((n, n), wide), ((max(n - 1, 0),), wide)])
  outs = [as_dtype(t, x.dtype)]
  if compute_schur_vectors:
    outs.append(as_dtype(z, x.dtype))
  return outs


@schur_p.def_abstract_eval
def _schur_shape_rule(x, *, compute_schur_vectors, sort_eig_vals, select_callable):
  check_dtype("schur", x, INEXACT)
  if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
    raise ValueError(f"The input to schur must be a square matrix. Got shape {x.shape}.")
  return (x, x) if compute_schur_vectors else (x,)


def schur(x, *, compute_schur_vectors=True, sort_eig_vals=False, select_callable=None):
  """Schur decomposition `x = Z T Z^H`: `(T, Z)`, or `(T,)` without
  `compute_schur_vectors` (see the `schur` primitive)."""
  return tuple(schur_p.bind(x, compute_schur_vectors=bool(compute_schur_vectors),
                            sort_eig_vals=bool(sort_eig_vals), select_callable=select_callable))


# --- cholesky_update and symmetric_product -------------------------------------------------

def _update_rotation(x, y):
  """`(c, s) = (x, -y) / hypot(x, y)` (`(1, 0)` when y = 0), both scaled by
  max(|x|, |y|) first, as JAX's."""
  if y == 0:
    return 1.0, 0.0
  scale = max(abs(x), abs(y))
  x, y = x / scale, y / scale
  inverse = 1 / math.sqrt(x * x + y * y)
  return x * inverse, -y * inverse


def _cholesky_update_matrix(r, z):
  """`r := ` the upper Cholesky factor of `r^T r + z z^T`, in place (z
  overwritten), by a Givens rotation per row as JAX's: for row k,
  `(c, s) = _update_rotation(r[k, k], z[k])`, then `r[k] := c r[k] - s z`,
  `z := c z + s r[k]` (the old row)."""
  for k in range(r.shape[0]):
    c, s = _update_rotation(r[k, k], z[k])
    row = r[k].copy()
    r[k] = c * row - s * z
    z[:] = c * z + s * row


cholesky_update_p = Primitive("cholesky_update")


@cholesky_update_p.def_impl
def _cholesky_update_reference(r_matrix, w_vector):
  """Rank-1 update of a Cholesky factor: the upper-triangular `R'` with
  `R'^T R' = R^T R + w w^T`.

  Operands: `r_matrix` `[..., n, n]` (upper triangular, its diagonal
  positive) and `w_vector` `[..., n]`, of one float dtype (not complex);
  the result has `r_matrix`'s shape. Computed wide by JAX's Givens
  rotations (`_cholesky_update_matrix`), rounded once; the entries below
  the diagonal are those rotations' rounding residue (zero in exact
  arithmetic). `jax.lax.linalg.cholesky_update` takes exactly one matrix;
  the batch dimensions serve `vmap`.
  """
  out, w = r_matrix.astype(np.float64), w_vector.astype(np.float64)
  for index in np.ndindex(*r_matrix.shape[:-2]):
    _cholesky_update_matrix(out[index], w[index])
  return as_dtype(out, r_matrix.dtype)


@cholesky_update_p.def_abstract_eval
def _cholesky_update_shape_rule(r_matrix, w_vector):
  for i, x in enumerate((r_matrix, w_vector)):
    check_dtype("cholesky_update", x, FLOAT, position=i)
  check_same_dtypes("cholesky_update", r_matrix, w_vector)
  r_shape, w_shape = r_matrix.shape, w_vector.shape
  if (r_matrix.ndim < 2 or w_vector.ndim != r_matrix.ndim - 1 or r_shape[-1] != r_shape[-2]
      or w_shape[-1] != r_shape[-1] or w_shape[:-1] != r_shape[:-2]):
    raise ValueError("Rank-1 update to Cholesky decomposition takes a square matrix and a "
                     f"vector of the same size as input. Got shapes {r_shape} and {w_shape} "
                     "instead")
  return r_matrix


def cholesky_update(r_matrix, w_vector):
  """The upper Cholesky factor of `R^T R + w w^T` from the factor `R` (n x n,
  upper triangular) and the vector `w` (n,), in O(n^2) (see the
  `cholesky_update` primitive). Only single matrices: other ranks raise
  TypeError, as JAX."""
  for i, (x, rank) in enumerate(((r_matrix, 2), (w_vector, 1))):
    shape = get_aval(x).shape
    if len(shape) != rank:
      raise TypeError(f"Input {i} to cholesky_update must have a rank of exactly {rank}, but "
                      f"got shape={shape}")
  return cholesky_update_p.bind(r_matrix, w_vector)


symmetric_product_p = Primitive("symmetric_product")


@symmetric_product_p.def_impl
def _symmetric_product_reference(a_matrix, c_matrix, *, alpha, beta):
  """`alpha * a @ a^T + beta * c` (BLAS's syrk).

  `a_matrix` `[..., m, n]`, `c_matrix` `[..., m, m]` (symmetric), of one
  float dtype (not complex); the result has `c_matrix`'s shape. JAX
  guarantees only the lower triangle (its GPU kernel leaves the upper one
  as `beta * c`); the reference computes every entry, wide, rounded once.
  """
  a = a_matrix.astype(np.float64)
  return as_dtype(alpha * (a @ _mT(a)) + beta * c_matrix.astype(np.float64), c_matrix.dtype)


@symmetric_product_p.def_abstract_eval
def _symmetric_product_shape_rule(a_matrix, c_matrix, *, alpha, beta):
  for i, x in enumerate((a_matrix, c_matrix)):
    check_dtype("symmetric_product", x, FLOAT, position=i)
  check_same_dtypes("symmetric_product", a_matrix, c_matrix)
  a_shape, c_shape = a_matrix.shape, c_matrix.shape
  if a_matrix.ndim < 2 or c_matrix.ndim != a_matrix.ndim or a_shape[:-2] != c_shape[:-2]:
    raise TypeError(f"symmetric_product takes matrices with the same batch dimensions, got "
                    f"shapes {a_shape} and {c_shape}.")
  if a_shape[-2] != c_shape[-1] or c_shape[-2] != c_shape[-1]:
    raise ValueError("symmetric_update expects a rectangular matrix of shape (m, n) and a "
                     f"square matrix of shape (n, n). Got shapes {a_shape[-2:]} and "
                     f"{c_shape[-2:]}.")
  return c_matrix.update(weak_type=False)


def symmetric_product(a_matrix, c_matrix, *, alpha=1., beta=0., symmetrize_output=False):
  """`alpha * a @ a^T + beta * c` for symmetric `c` (see the
  `symmetric_product` primitive). With `symmetrize_output`, the upper
  triangle is replaced by the transpose of the lower one."""
  result = symmetric_product_p.bind(a_matrix, c_matrix, alpha=float(alpha), beta=float(beta))
  if symmetrize_output:
    result = add(_tril(result), _T(_tril(result, -1)))
  return result


# --- qdwh -------------------------------------------------------------------------------

def _qdwh_coefficients(eps, max_iterations):
  """QDWH's weights `(a, b, c)` for each step while the lower bound `l` on the
  smallest singular value of the scaled iterate (`eps` at first) is short of
  1 (by more than 5 eps), at most `max_iterations` of them."""
  coefficients, l, k = [], eps, 0
  while l + 5 * eps < 1 and k < max_iterations:
    k += 1
    l2 = l * l
    dd = (4 * (1 / l2 - 1) / l2) ** (1 / 3)
    sqd = (1.0 + dd) ** (1 / 2)
    a = sqd + (2 - dd + 2 * (2 - l2) / (l2 * sqd)) ** (1 / 2)
    b = (a - 1) ** 2 / 4
    c = a + b - 1
    l = l * (a + b * l2) / (1 + c * l2)
    coefficients.append((a, b, c))
  return coefficients


def _qdwh_qr_step(u, a, b, c):
  """`e u + (a - e) / sqrt(c) q1 q2^H` with `[q1; q2]` the thin Q of
  `[sqrt(c) u; I]`, e = b / c: a QDWH step by QR (for large c)."""
  import refimpl.numpy as jnp
  m, n = u.shape
  q, _ = qr(jnp.concatenate([np.sqrt(c) * u, jnp.eye(n, dtype=u.dtype)]), full_matrices=False)
  return (b / c) * u + ((a - b / c) / np.sqrt(c)) * (q[:m] @ jnp.conj(q[m:].T))


def _qdwh_cholesky_step(u, a, b, c):
  """`e u + (a - e) u (c u^H u + I)^-1`, e = b / c, by the Cholesky factor of
  `c u^H u + I`: a QDWH step for small c."""
  import refimpl.numpy as jnp
  y = cholesky(c * (jnp.conj(u.T) @ u) + jnp.eye(u.shape[1], dtype=u.dtype),
               symmetrize_input=False)
  z = jnp.conj(triangular_solve(y, u.T, left_side=True, lower=True, conjugate_a=True))
  z = jnp.conj(triangular_solve(y, z, left_side=True, lower=True, transpose_a=True,
                                conjugate_a=True).T)
  return (b / c) * u + (a - b / c) * z


def qdwh(x, *, is_hermitian=False, max_iterations=None, eps=None, dynamic_shape=None):
  """Polar decomposition `x = u h` by the QR-based dynamically weighted Halley
  iteration (Nakatsukasa, Bai and Gygi, 2010), as JAX's.

  `x`: an M x N matrix, M >= N (else ValueError), full rank. Returns
  `(u, h, num_iters, is_converged)`: `u` (M x N) with orthonormal columns,
  `h` (N x N) Hermitian positive semidefinite, the number of iterations
  (int32) and whether the iterates converged (`norm(u_k - u_{k-1}) <
  (5 eps)^(1/3)`, Frobenius) within `max_iterations` (default 10). `x` is
  first scaled by `1 / sqrt(norm(x, 1) norm(x, inf))`; steps use QR while
  the weight c exceeds 100, then Cholesky, then plain Halley steps (a, b, c
  = 3, 1, 3) until convergence; a Newton-Schulz step refines `u` and `h =
  (u^H x + x^H u) / 2`. `eps` defaults to the dtype's; `is_hermitian` is
  unused. With `dynamic_shape = (m, n)`, `x[:m, :n]` is decomposed and the
  results are padded with zeros to `x`'s shape.
  """
  import refimpl.numpy as jnp
  from refimpl.lax.control_flow.while_loop import while_loop
  del is_hermitian
  max_iterations = 10 if max_iterations is None else operator.index(max_iterations)
  x = jnp.asarray(x)
  M, N = x.shape
  if M < N:
    raise ValueError("The input matrix of shape M x N must have M >= N.")
  m, n = (M, N) if dynamic_shape is None else dynamic_shape
  x_full, x = x, x[:m, :n]
  if eps is None:
    eps = float(dtypes.finfo(x.dtype).eps)
  one_norm, inf_norm = jnp.linalg.norm(x, ord=1), jnp.linalg.norm(x, ord=jnp.inf)
  scale = jnp.where(one_norm == 0, 1, 1 / (jnp.sqrt(one_norm) * jnp.sqrt(inf_norm)))
  u = x * scale.astype(x.dtype)
  tol_norm = np.cbrt(5 * eps)
  coefficients = _qdwh_coefficients(eps, max_iterations)
  not_converged = jnp.asarray(True)
  for a, b, c in coefficients:
    previous = u
    u = (_qdwh_qr_step if c > 100 else _qdwh_cholesky_step)(u, a, b, c)
    if c <= 100:
      not_converged = jnp.linalg.norm(u - previous) > tol_norm

  def halley(state):
    k, u, _ = state
    u_next = _qdwh_cholesky_step(u, 3, 1, 3)
    return k + 1, u_next, jnp.linalg.norm(u_next - u) > tol_norm

  num_iters, u, not_converged = while_loop(
      lambda state: jnp.logical_and(state[2], state[0] < max_iterations), halley,
      (jnp.asarray(len(coefficients), np.int32), u, not_converged))
  u = 1.5 * u - 0.5 * u @ (jnp.conj(u.T) @ u)
  h = jnp.conj(u.T) @ x
  h = (h + jnp.conj(h.T)) / 2
  if (m, n) != (M, N):
    u = jnp.zeros_like(x_full).at[:m, :n].set(u)
    h = jnp.zeros((N, N), x.dtype).at[:n, :n].set(h)
  return u, h, num_iters, jnp.logical_not(not_converged)


# =====================================================================================
# --- differentiation rules ---
# =====================================================================================
# As JAX's (jax/_src/lax/lax.py and linalg.py): dot_general is bilinear; the
# decompositions' JVPs come from differentiating their defining equations
# (reverse mode transposes those JVPs); the solvers are linear in `b`.
# Primitives without rules, as in JAX: geqrf and householder_product.

def _re(x):
  """The real part of complex `x`; real `x` itself."""
  return real(x) if dtypes.is_complex(dtypes.dtype(x)) else x


def _eye(dtype, n, ndim=2):
  """The n x n identity matrix, with leading size-1 dimensions up to rank `ndim`."""
  eye = convert_element_type(eq(broadcasted_iota(np.int32, (n, n), 0),
                                broadcasted_iota(np.int32, (n, n), 1)), dtype)
  return expand_dims(eye, tuple(range(ndim - 2)))


def _matmul(a, b, precision=Precision.HIGHEST):
  """`a @ b` for stacks of matrices with equal batch dimensions."""
  ndim = get_aval(a).ndim
  batch = tuple(range(ndim - 2))
  return dot_general(a, b, (((ndim - 1,), (ndim - 2,)), (batch, batch)), precision=precision)


def _slice_axis(x, axis, start, stop):
  """`x[start:stop]` along `axis` (a `slice`)."""
  shape = get_aval(x).shape
  starts, limits = [0] * len(shape), list(shape)
  starts[axis], limits[axis] = start, stop
  return indexing.slice(x, starts, limits)


def _diagonal_indices(k):
  return np.stack([np.arange(k, dtype=np.int32)] * 2, axis=1)


def _extract_diagonal(x):
  """`x[..., i, i]`: the diagonal of each matrix of a stack (a gather)."""
  shape = get_aval(x).shape
  nb = len(shape) - 2
  dnums = GatherDimensionNumbers(offset_dims=tuple(range(nb)),
                                 collapsed_slice_dims=(nb, nb + 1), start_index_map=(nb, nb + 1))
  return gather(x, _diagonal_indices(min(shape[-2:])), dnums, shape[:-2] + (1, 1),
                mode=GatherScatterMode.PROMISE_IN_BOUNDS)


def _construct_diagonal(s):
  """The diagonal matrices whose diagonals are `s` (`[..., k]` to `[..., k, k]`;
  zeros with `s` scattered onto the diagonal)."""
  shape = get_aval(s).shape
  nb, k = len(shape) - 1, shape[-1]
  dnums = ScatterDimensionNumbers(update_window_dims=tuple(range(nb)),
                                  inserted_window_dims=(nb, nb + 1),
                                  scatter_dims_to_operand_dims=(nb, nb + 1))
  return scatter(full(shape + (k,), 0, dtypes.dtype(s)), _diagonal_indices(k), s, dnums)


def _take(x, indices, axis):
  """The rows (`axis=-2`) or columns (`axis=-1`) `indices[..., j]` of each
  matrix of `x` (indices batched as `x`): `x[..., indices, :]` as one gather."""
  shape = get_aval(x).shape
  nb = len(shape) - 2
  taken, kept = (nb, nb + 1) if axis == -2 else (nb + 1, nb)
  batch = tuple(range(nb))
  dnums = GatherDimensionNumbers(offset_dims=(kept,), collapsed_slice_dims=(taken,),
                                 start_index_map=(taken,), operand_batching_dims=batch,
                                 start_indices_batching_dims=batch)
  sizes = [1] * len(shape)
  sizes[kept] = shape[kept]
  return gather(x, expand_dims(indices, (nb + 1,)), dnums, sizes,
                mode=GatherScatterMode.PROMISE_IN_BOUNDS)


def _zero_tangent(x):
  return ad.Zero(ad.tangent_aval(get_aval(x)))


def _batch_dims_first(primitive):
  """The batching rule of a primitive whose leading dimensions are batch
  dimensions (JAX's `expand_dims_batcher`): the batch axes go first, an
  unbatched operand is broadcast."""
  def rule(args, dims, **params):
    size = next(get_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
    out = primitive.bind(*(batching.bdim_at_front(x, d, size) for x, d in zip(args, dims)),
                         **params)
    return (out, [0] * len(out)) if primitive.multiple_results else (out, 0)
  return rule


# --- dot_general: bilinear ------------------------------------------------------------

def _ranges_like(*xs):
  """Consecutive index ranges, as long as each of `xs` in turn."""
  start = 0
  for x in xs:
    yield tuple(range(start, start + len(x)))
    start += len(x)


def _dot_general_transpose_lhs(ct, x, y, *, dimension_numbers, precision,
                               preferred_element_type, swap_ans=False):
  """The cotangent of the lhs `x`: `ct` contracted with `y` over `y`'s free
  dims (`swap_ans`: `x` is really the rhs), permuted back into `x`'s layout."""
  (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
  x_aval = x.aval
  x_kept = _free_dims(x_aval.ndim, x_contract, x_batch)
  y_kept = _free_dims(get_aval(y).ndim, y_contract, y_batch)
  if swap_ans:
    ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
  else:
    ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
  dims = ((ans_y, tuple(y_kept)), (ans_batch, tuple(y_batch)))
  x_contract_sorted_by_y = [x_contract[i] for i in np.argsort(y_contract)]
  out_axes = np.argsort(list(x_batch) + x_kept + x_contract_sorted_by_y)
  x_bar = transpose(dot_general(ct, y, dims, precision=precision,
                                preferred_element_type=preferred_element_type),
                    tuple(int(a) for a in out_axes))
  if dtypes.dtype(x_bar) != x_aval.dtype:
    x_bar = convert_element_type(x_bar, x_aval.dtype, x_aval.weak_type)
  return x_bar


def _dot_general_transpose_rhs(ct, x, y, *, dimension_numbers, **params):
  (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
  swapped = ((y_contract, x_contract), (y_batch, x_batch))
  return _dot_general_transpose_lhs(ct, y, x, dimension_numbers=swapped, swap_ans=True,
                                    **params)


ad.defbilinear(dot_general_p, _dot_general_transpose_lhs, _dot_general_transpose_rhs)


def _dot_general_batch(args, dims, *, dimension_numbers, **params):
  """Both operands batched: the batch axes become a new leading pair of batch
  dimensions. One batched: its batch axis becomes a free dimension of it."""
  (lhs, rhs), (lbd, rbd) = args, dims
  (lc, rc), (lb, rb) = dimension_numbers

  def bump(ds, b):  # renumbers unbatched dims past the inserted batch axis b
    return tuple(d + (d >= b) for d in ds)

  if lbd is not None and rbd is not None:
    dnums = ((bump(lc, lbd), bump(rc, rbd)), ((lbd, *bump(lb, lbd)), (rbd, *bump(rb, rbd))))
    out_dim = 0
  elif lbd is not None:
    # result order: batch dims, then lhs free dims (the batch axis among them)
    lhs_free = _free_dims(get_aval(lhs).ndim - 1, lc, lb)
    out_dim = len(lb) + sum(d < lbd for d in lhs_free)
    dnums = ((bump(lc, lbd), rc), (bump(lb, lbd), rb))
  else:
    # result order: batch dims, lhs free dims, then rhs free dims
    rhs_free = _free_dims(get_aval(rhs).ndim - 1, rc, rb)
    out_dim = get_aval(lhs).ndim - len(lc) + sum(d < rbd for d in rhs_free)
    dnums = ((lc, bump(rc, rbd)), (lb, bump(rb, rbd)))
  return dot_general_p.bind(lhs, rhs, dimension_numbers=dnums, **params), out_dim


batching.primitive_batchers[dot_general_p] = _dot_general_batch


# --- cholesky -------------------------------------------------------------------------

def _cholesky_jvp(primals, tangents):
  # Forward-mode rule of arXiv:1602.07527: L' = L phi(L^-1 A' L^-H), phi taking
  # the lower triangle with the diagonal halved.
  x, = primals
  sigma_dot, = tangents
  L = _tril(cholesky_p.bind(x))
  ndim, n = get_aval(x).ndim, get_aval(x).shape[-1]

  def phi(X):
    return div(_tril(X), add(const(X, 1), _eye(dtypes.dtype(X), n, ndim)))

  tmp = triangular_solve(L, sigma_dot, left_side=False, transpose_a=True, conjugate_a=True,
                         lower=True)
  L_dot = _matmul(L, phi(triangular_solve(L, tmp, left_side=True, transpose_a=False,
                                          lower=True)))
  return L, L_dot


ad.primitive_jvps[cholesky_p] = _cholesky_jvp
batching.primitive_batchers[cholesky_p] = _batch_dims_first(cholesky_p)


# --- triangular_solve: linear in b ----------------------------------------------------

def _triangular_solve_jvp_a(g_a, ans, a, b, *, left_side, lower, transpose_a, conjugate_a,
                            unit_diagonal):
  # d(op(a)^-1 b) = -op(a)^-1 op(da) x (left side), -x op(da) op(a)^-1 (right side)
  m, n = get_aval(b).shape[-2:]
  k = 1 if unit_diagonal else 0
  g_a = neg(_tril(g_a, -k) if lower else _triu(g_a, k))
  g_a = _T(g_a) if transpose_a else g_a
  g_a = conj(g_a) if conjugate_a else g_a

  def a_inverse(rhs):
    return triangular_solve_p.bind(a, rhs, left_side=left_side, lower=lower,
                                   transpose_a=transpose_a, conjugate_a=conjugate_a,
                                   unit_diagonal=unit_diagonal)

  # The solve costs about a product: do it on the smaller operand.
  if left_side:
    return a_inverse(_matmul(g_a, ans)) if m > n else _matmul(a_inverse(g_a), ans)
  return a_inverse(_matmul(ans, g_a)) if m < n else _matmul(ans, a_inverse(g_a))


def _triangular_solve_transpose(ct, a, b, *, left_side, lower, transpose_a, conjugate_a,
                                unit_diagonal):
  # b -> op(a)^-1 b transposes to ct -> op(a)^-T ct
  assert not ad.is_undefined_primal(a) and ad.is_undefined_primal(b)
  return [None, triangular_solve_p.bind(a, ct, left_side=left_side, lower=lower,
                                        transpose_a=not transpose_a, conjugate_a=conjugate_a,
                                        unit_diagonal=unit_diagonal)]


ad.defjvp2(triangular_solve_p, _triangular_solve_jvp_a,
           lambda g_b, ans, a, b, **params: triangular_solve_p.bind(a, g_b, **params))
ad.deftranspose(triangular_solve_p, _triangular_solve_transpose)


def _triangular_solve_batch(args, dims, **params):
  """A batch of right-hand sides with one `a`: the members become more columns
  of `b` (more rows, for a right-side solve); otherwise batch axes go first."""
  (a, b), (a_dim, b_dim) = args, dims
  if a_dim is not None:
    size = get_aval(a).shape[a_dim]
    return triangular_solve_p.bind(batching.bdim_at_front(a, a_dim, size),
                                   batching.bdim_at_front(b, b_dim, size), **params), 0
  # b [..., m, n]: left side solves columns, so fold the batch axis into n;
  # right side solves rows, so fold it into m
  out_dim = get_aval(b).ndim - (1 if params["left_side"] else 2)
  b = batching.moveaxis(b, b_dim, out_dim)
  shape = get_aval(b).shape
  flat = shape[:out_dim - 1] + (shape[out_dim - 1] * shape[out_dim],) + shape[out_dim + 1:]
  out = triangular_solve_p.bind(a, reshape(b, flat), **params)
  return reshape(out, shape), out_dim


batching.primitive_batchers[triangular_solve_p] = _triangular_solve_batch


# --- lu ---------------------------------------------------------------------------------

def _lu_jvp(primals, tangents):
  # De Hoog, Anderssen and Lukas: from P A = L U,
  #   L' = L tril(L^-1 P A' U^-1, -1),  U' = triu(L^-1 P A' U^-1) U.
  a, = primals
  a_dot, = tangents
  lu_, pivots, permutation = lu_p.bind(a)
  shape = get_aval(a).shape
  ndim, (m, n) = len(shape), shape[-2:]
  k = min(m, n)
  dtype, zero = dtypes.dtype(a), const(a, 0)
  x = _take(a_dot, permutation, axis=-2)
  # L (m x m, unit lower) and U (n x n, upper), completed by the identity
  # where lu holds only k columns (rows).
  no_pad = ((0, 0, 0),) * (ndim - 2)
  l = pad(_tril(_slice_axis(lu_, ndim - 1, 0, k), -1), zero, no_pad + ((0, 0, 0), (0, m - k, 0)))
  l = add(l, _eye(dtype, m, ndim))
  u_eye = pad(_eye(dtype, n - k), zero, ((k, 0, 0), (k, 0, 0)))
  u = pad(_triu(_slice_axis(lu_, ndim - 2, 0, k)), zero, no_pad + ((0, n - k, 0), (0, 0, 0)))
  u = add(u, expand_dims(u_eye, tuple(range(ndim - 2))))
  la = triangular_solve(l, x, left_side=True, transpose_a=False, lower=True,
                        unit_diagonal=True)
  lau = triangular_solve(u, la, left_side=False, transpose_a=False, lower=False)
  lu_dot = add(_matmul(l, _tril(lau, -1)), _matmul(_triu(lau), u))
  return ((lu_, pivots, permutation),
          (lu_dot, _zero_tangent(pivots), _zero_tangent(permutation)))


ad.primitive_jvps[lu_p] = _lu_jvp
ad.defjvp_zero(lu_pivots_to_permutation_p)
batching.primitive_batchers[lu_p] = _batch_dims_first(lu_p)
batching.primitive_batchers[lu_pivots_to_permutation_p] = _batch_dims_first(
    lu_pivots_to_permutation_p)


# --- qr ---------------------------------------------------------------------------------

def _qr_jvp(primals, tangents, *, full_matrices, pivoting):
  # See j-towns.github.io/papers/qr-derivative.pdf.
  x, = primals
  dx, = tangents
  q, r, *p = qr_p.bind(x, full_matrices=False, pivoting=pivoting)
  shape = get_aval(x).shape
  m, n = shape[-2:]
  if m < n or (full_matrices and m != n):
    raise NotImplementedError("Unimplemented case of QR decomposition derivative")
  if pivoting:
    dx = _take(dx, p[0], axis=-1)
  dx_rinv = triangular_solve(r, dx)  # dx r^-1: a right-side solve
  qt_dx_rinv = _matmul(_H(q), dx_rinv, None)
  qt_dx_rinv_lower = _tril(qt_dx_rinv, -1)
  do = sub(qt_dx_rinv_lower, _H(qt_dx_rinv_lower))  # skew-Hermitian
  # for complex inputs, do also gets the imaginary part of the diagonal
  eye = _eye(dtypes.dtype(do), n, len(shape))
  re = qt_dx_rinv
  if dtypes.is_complex(dtypes.dtype(re)):
    re = convert_element_type(real(re), dtypes.dtype(re))
  do = add(do, mul(eye, sub(qt_dx_rinv, re)))
  dq = add(_matmul(q, sub(do, qt_dx_rinv), None), dx_rinv)
  dr = _matmul(sub(qt_dx_rinv, do), r, None)
  if pivoting:
    return [q, r, p[0]], [dq, dr, _zero_tangent(p[0])]
  return [q, r], [dq, dr]


ad.primitive_jvps[qr_p] = _qr_jvp
batching.primitive_batchers[qr_p] = _batch_dims_first(qr_p)


# --- eigh -------------------------------------------------------------------------------

def _eigh_jvp(primals, tangents, *, lower, sort_eigenvalues, subset_by_index):
  # Non-degenerate perturbation theory (distinct eigenvalues): with
  # V^H A' V = D, w' = Re diag(D) and V' = V (F * D), F[i, j] = 1 / (w[j] - w[i]).
  a, = primals
  a_dot, = tangents
  shape = get_aval(a).shape
  ndim, n = len(shape), shape[-1]
  if not (subset_by_index is None or subset_by_index == (0, n)):
    raise NotImplementedError("Derivatives not defined for partial eigen decomposition.")
  v, w_real = eigh_p.bind(_symmetrize(a), lower=lower, sort_eigenvalues=sort_eigenvalues,
                          subset_by_index=subset_by_index)
  dtype = dtypes.dtype(a)
  w = convert_element_type(w_real, dtype)
  eye_n = _eye(dtype, n, ndim)
  # the reciprocal eigenvalue gaps, built without dividing by zero
  Fmat = sub(integer_pow(sub(add(eye_n, expand_dims(w, (ndim - 2,))),
                             expand_dims(w, (ndim - 1,))), -1), eye_n)
  vdag_adot_v = _matmul(_matmul(_H(v), a_dot), v)
  dv = _matmul(v, mul(Fmat, vdag_adot_v))
  dw = _extract_diagonal(_re(vdag_adot_v))
  return [v, w_real], [dv, dw]


ad.primitive_jvps[eigh_p] = _eigh_jvp
batching.primitive_batchers[eigh_p] = _batch_dims_first(eigh_p)


# --- svd --------------------------------------------------------------------------------

def _svd_jvp(primals, tangents, *, full_matrices, compute_uv, subset_by_index, algorithm):
  # With dS = U^H A' V: s' = Re diag(dS); U' and V' from the off-diagonal part
  # of dS over the gaps s_j^2 - s_i^2, plus, for non-square A, the part of A'
  # outside the span of the thin factors.
  A, = primals
  dA, = tangents
  s, U, Vt = svd_p.bind(A, full_matrices=False, compute_uv=True,
                        subset_by_index=subset_by_index, algorithm=algorithm)
  if compute_uv and full_matrices:
    raise NotImplementedError(
        "Singular value decomposition JVP not implemented for full matrices")
  shape = get_aval(A).shape
  ndim, (m, n) = len(shape), shape[-2:]
  dtype = dtypes.dtype(A)
  Ut, V = _H(U), _H(Vt)
  s_dim = expand_dims(s, (ndim - 2,))  # [..., 1, k]
  dS = _matmul(_matmul(Ut, dA), V)
  ds = _extract_diagonal(_re(dS))
  if not compute_uv:
    return [s], [ds]
  s_diffs = mul(add(s_dim, _T(s_dim)), sub(s_dim, _T(s_dim)))
  s_diffs_zeros = _eye(dtypes.dtype(s), get_aval(s).shape[-1], ndim)
  F = sub(div(const(s, 1), add(s_diffs, s_diffs_zeros)), s_diffs_zeros)
  s_dim = convert_element_type(s_dim, dtype)
  dSS = mul(s_dim, dS)      # dS diag(s)
  SdS = mul(_T(s_dim), dS)  # diag(s) dS
  s_zeros = convert_element_type(eq(s, const(s, 0)), dtypes.dtype(s))
  s_inv = sub(div(const(s, 1), add(s, s_zeros)), s_zeros)
  s_inv_mat = convert_element_type(_construct_diagonal(s_inv), dtype)
  dUdV_diag = mul(mul(const(dS, 0.5), sub(dS, _H(dS))), s_inv_mat)
  F = convert_element_type(F, dtype)
  dU = _matmul(U, add(mul(F, add(dSS, _H(dSS))), dUdV_diag))
  dV = _matmul(V, mul(F, add(SdS, _H(SdS))))
  if m > n:
    dAV = _matmul(dA, V)
    dU = add(dU, div(sub(dAV, _matmul(U, _matmul(Ut, dAV))), s_dim))
  if n > m:
    dAHU = _matmul(_H(dA), U)
    dV = add(dV, div(sub(dAHU, _matmul(V, _matmul(Vt, dAHU))), s_dim))
  return [s, U, Vt], [ds, dU, _H(dV)]


ad.primitive_jvps[svd_p] = _svd_jvp
batching.primitive_batchers[svd_p] = _batch_dims_first(svd_p)


# --- eig --------------------------------------------------------------------------------

def _solve(a, b):
  """`a^-1 b` for square `a`, by LU with partial pivoting (the factors held
  constant, so the result is linear in `b`)."""
  lu_, _, permutation = lu(stop_gradient(a))
  x = _take(b, permutation, axis=-2)
  x = triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True)
  return triangular_solve(lu_, x, left_side=True, lower=False)


def _eig_jvp(primals, tangents, *, compute_left_eigenvectors, compute_right_eigenvectors):
  if compute_left_eigenvectors or compute_right_eigenvectors:
    raise NotImplementedError(
        'The derivatives of eigenvectors are not implemented, only '
        'eigenvalues. See '
        'https://github.com/jax-ml/jax/issues/2748 for discussion.')
  # Eq. 4.60 of arXiv:1701.00392: w' = diag(V^-1 A' V).
  a, = primals
  da, = tangents
  w, v = eig(a, compute_left_eigenvectors=False)
  ndim = get_aval(a).ndim
  dw = reduce_sum(mul(_solve(v, convert_element_type(da, dtypes.dtype(v))), _T(v)),
                  (ndim - 1,))
  return [w], [dw]


ad.primitive_jvps[eig_p] = _eig_jvp
batching.primitive_batchers[eig_p] = _batch_dims_first(eig_p)


# --- tridiagonal_solve: linear in b ---------------------------------------------------

def _tridiagonal_product(dl, d, du, b):
  """`A @ b` for the tridiagonal `A` with diagonals `dl`, `d`, `du`."""
  ndim, m = get_aval(b).ndim, get_aval(b).shape[-2]
  no_pad = ((0, 0, 0),) * (ndim - 2)

  def column(x):  # [..., k] -> [..., k, 1]
    return expand_dims(x, (ndim - 1,))

  y = mul(column(d), b)
  below = mul(column(_slice_axis(dl, ndim - 2, 1, m)), _slice_axis(b, ndim - 2, 0, m - 1))
  y = add(y, pad(below, const(b, 0), no_pad + ((1, 0, 0), (0, 0, 0))))
  above = mul(column(_slice_axis(du, ndim - 2, 0, m - 1)), _slice_axis(b, ndim - 2, 1, m))
  return add(y, pad(above, const(b, 0), no_pad + ((0, 1, 0), (0, 0, 0))))


def _tridiagonal_solve_jvp(primals, tangents):
  # x = A^-1 b: x' = A^-1 (b' - A' x)
  *diags, _ = primals
  *diags_dot, b_dot = tangents
  ans = tridiagonal_solve_p.bind(*primals)
  if all(isinstance(t, ad.Zero) for t in diags_dot):
    rhs = b_dot
  else:
    matvec_dot = _tridiagonal_product(*map(ad.instantiate_zeros, diags_dot), ans)
    rhs = ad.add_tangents(b_dot, neg(matvec_dot))
  return ans, tridiagonal_solve_p.bind(*diags, rhs)


def _tridiagonal_solve_transpose(ct, dl, d, du, b):
  # A^T is tridiagonal too: its sub-diagonal is du, its super-diagonal dl (shifted)
  assert not any(map(ad.is_undefined_primal, (dl, d, du))) and ad.is_undefined_primal(b)
  last, m = get_aval(d).ndim - 1, get_aval(d).shape[-1]
  zero = full(get_aval(d).shape[:-1] + (min(m, 1),), 0, dtypes.dtype(d))
  dl_trans = concatenate([zero, _slice_axis(du, last, 0, max(m - 1, 0))], last)
  du_trans = concatenate([_slice_axis(dl, last, min(m, 1), m), zero], last)
  return [None, None, None, tridiagonal_solve_p.bind(dl_trans, d, du_trans, ct)]


ad.primitive_jvps[tridiagonal_solve_p] = _tridiagonal_solve_jvp
ad.deftranspose(tridiagonal_solve_p, _tridiagonal_solve_transpose)


def _tridiagonal_solve_batch(args, dims):
  """A batch of right-hand sides with shared diagonals: the members become more
  columns of `b`; otherwise batch axes go first."""
  *diags, b = args
  *diag_dims, b_dim = dims
  if all(d is None for d in diag_dims):
    # b [..., m, n] -> [..., m, size, n] -> [..., m, size * n]
    out_dim = get_aval(b).ndim - 2
    b = batching.moveaxis(b, b_dim, out_dim)
    shape = get_aval(b).shape
    out = tridiagonal_solve_p.bind(*diags, reshape(b, shape[:-2] + (shape[-2] * shape[-1],)))
    return reshape(out, shape), out_dim
  return _batch_dims_first(tridiagonal_solve_p)(args, dims)


batching.primitive_batchers[tridiagonal_solve_p] = _tridiagonal_solve_batch


# As JAX: the Householder building blocks have no derivative rules.
ad.defjvp_unsupported(geqrf_p, NotImplementedError,
                      "Differentiation rule for 'geqrf' not implemented")
ad.defjvp_unsupported(householder_product_p, NotImplementedError,
                      "Differentiation rule for 'householder_product' not implemented")
batching.primitive_batchers[geqrf_p] = _batch_dims_first(geqrf_p)
batching.primitive_batchers[householder_product_p] = _batch_dims_first(householder_product_p)


# As JAX: the reductions, ormqr, cholesky_update and symmetric_product have no
# derivative rules; their leading dimensions are batch dimensions.
for _primitive in (hessenberg_p, tridiagonal_p, ormqr_p, schur_p, cholesky_update_p,
                   symmetric_product_p):
  ad.defjvp_unsupported(_primitive, NotImplementedError,
                        f"Differentiation rule for '{_primitive.name}' not implemented")
  batching.primitive_batchers[_primitive] = _batch_dims_first(_primitive)
