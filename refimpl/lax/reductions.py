"""Reduction primitives: reduce_sum/prod/max/min/and/or/xor, the generic
`reduce` (any scalar computation, given as a jaxpr), argmax/argmin, and the
cumulative reductions cumsum/cumprod/cummax/cummin/cumlogsumexp.

Shape rule (reduce_*, argmax, argmin): `axes` are distinct dimensions of the
operand and the result has them removed. Cumulative reductions keep the
shape. Dtype and weak type are the operand's, except argmax/argmin, which
give `index_dtype` (not weak).

Accumulation: floating sums and products are computed in double precision
(complex128 for complex) and rounded once to the operand's dtype; integer
sums and products wrap around modulo 2**bits. A reduction over an empty set
of elements gives the identity of its operation.
"""

import math
import operator

import numpy as np

from refimpl import core, dtypes, tree_util
from refimpl.core import Primitive, ShapedArray, get_aval
from refimpl.interpreters.eval import eval_closed_jaxpr
from refimpl.interpreters.partial_eval import trace_to_jaxpr
from refimpl.lax import elementwise
from refimpl.lax.rules import (ANY, FLOAT, INT_OR_BOOL, NUMBER, as_dtype, canonical_axes,
                               check_dtype)
from refimpl.lax.shapes import canonicalize_axis

__all__ = ['reduce', 'reduce_sum', 'reduce_prod', 'reduce_max', 'reduce_min',
           'reduce_and', 'reduce_or', 'reduce_xor', 'argmax', 'argmin',
           'cumsum', 'cumprod', 'cummax', 'cummin', 'cumlogsumexp',
           'reduce_p', 'reduce_sum_p', 'reduce_prod_p', 'reduce_max_p', 'reduce_min_p',
           'reduce_and_p', 'reduce_or_p', 'reduce_xor_p', 'argmax_p', 'argmin_p',
           'cumsum_p', 'cumprod_p', 'cummax_p', 'cummin_p', 'cumlogsumexp_p']


def _reduced_aval(name, operand, axes, category):
  check_dtype(name, operand, category)
  axes = canonical_axes(name, axes, operand.ndim)
  shape = tuple(d for i, d in enumerate(operand.shape) if i not in axes)
  return ShapedArray(shape, operand.dtype, operand.weak_type)


def _wide_dtype(dtype):
  """The dtype a sum or product accumulates in (see the module docstring)."""
  if dtypes.is_complex(dtype):
    return np.complex128
  if dtypes.is_float(dtype):
    return np.float64
  if dtypes.is_unsigned(dtype):
    return np.uint64
  if dtypes.is_integer(dtype):
    return np.int64
  return dtype


def _max_identity(dtype):
  """The smallest value of `dtype`: the identity of max."""
  if dtypes.is_bool(dtype):
    return False
  if dtypes.is_integer(dtype):
    return dtypes.iinfo(dtype).min
  return -np.inf


def _min_identity(dtype):
  """The largest value of `dtype`: the identity of min."""
  if dtypes.is_bool(dtype):
    return True
  if dtypes.is_integer(dtype):
    return dtypes.iinfo(dtype).max
  return np.inf


def _as_comparable(x):
  """Values NumPy can order exactly: float16/bfloat16 widened to float32."""
  return x.astype(np.float32) if dtypes.is_float(x.dtype) and x.dtype.itemsize <= 2 else x


def _monoid_primitive(name, category, reference):
  prim = Primitive(name)
  prim.def_impl(reference)
  prim.def_abstract_eval(
      lambda operand, *, axes: _reduced_aval(name, operand, axes, category))
  return prim


def _reduce_sum_reference(operand, *, axes):
  """Sum over `axes`. Empty: 0. Integers wrap; floats accumulate in double."""
  wide = np.sum(operand, axis=tuple(axes), dtype=_wide_dtype(operand.dtype))
  return as_dtype(wide, operand.dtype)


def _reduce_prod_reference(operand, *, axes):
  """Product over `axes`. Empty: 1. Integers wrap; floats accumulate in double."""
  wide = np.prod(operand, axis=tuple(axes), dtype=_wide_dtype(operand.dtype))
  return as_dtype(wide, operand.dtype)


def _reduce_max_reference(operand, *, axes):
  """Maximum over `axes`. NaN if any element is NaN. Empty: the dtype's
  smallest value (-inf for floats, the minimum integer, False)."""
  x = _as_comparable(operand)
  return as_dtype(np.max(x, axis=tuple(axes), initial=_max_identity(operand.dtype)),
                  operand.dtype)


def _reduce_min_reference(operand, *, axes):
  """Minimum over `axes`. NaN if any element is NaN. Empty: the dtype's
  largest value (+inf for floats, the maximum integer, True)."""
  x = _as_comparable(operand)
  return as_dtype(np.min(x, axis=tuple(axes), initial=_min_identity(operand.dtype)),
                  operand.dtype)


def _reduce_and_reference(operand, *, axes):
  """Logical (bool) or bitwise (integer) AND over `axes`. Empty: all bits set."""
  return as_dtype(np.bitwise_and.reduce(operand, axis=tuple(axes)), operand.dtype)


def _reduce_or_reference(operand, *, axes):
  """Logical (bool) or bitwise (integer) OR over `axes`. Empty: 0 / False."""
  return as_dtype(np.bitwise_or.reduce(operand, axis=tuple(axes)), operand.dtype)


def _reduce_xor_reference(operand, *, axes):
  """Logical (bool) or bitwise (integer) XOR over `axes`. Empty: 0 / False."""
  return as_dtype(np.bitwise_xor.reduce(operand, axis=tuple(axes)), operand.dtype)


reduce_sum_p = _monoid_primitive("reduce_sum", NUMBER, _reduce_sum_reference)
reduce_prod_p = _monoid_primitive("reduce_prod", NUMBER, _reduce_prod_reference)
reduce_max_p = _monoid_primitive("reduce_max", ANY, _reduce_max_reference)
reduce_min_p = _monoid_primitive("reduce_min", ANY, _reduce_min_reference)
reduce_and_p = _monoid_primitive("reduce_and", INT_OR_BOOL, _reduce_and_reference)
reduce_or_p = _monoid_primitive("reduce_or", INT_OR_BOOL, _reduce_or_reference)
reduce_xor_p = _monoid_primitive("reduce_xor", INT_OR_BOOL, _reduce_xor_reference)


def _axes(axes):
  return tuple(operator.index(a) for a in axes)


def reduce_sum(operand, axes):
  return reduce_sum_p.bind(operand, axes=_axes(axes))


def reduce_prod(operand, axes):
  return reduce_prod_p.bind(operand, axes=_axes(axes))


def reduce_max(operand, axes):
  return reduce_max_p.bind(operand, axes=_axes(axes))


def reduce_min(operand, axes):
  return reduce_min_p.bind(operand, axes=_axes(axes))


def reduce_and(operand, axes):
  return reduce_and_p.bind(operand, axes=_axes(axes))


def reduce_or(operand, axes):
  return reduce_or_p.bind(operand, axes=_axes(axes))


def reduce_xor(operand, axes):
  return reduce_xor_p.bind(operand, axes=_axes(axes))


def _and_identity(dtype):
  """All bits set: the identity of bitwise and."""
  return True if dtypes.is_bool(dtype) else np.array(-1).astype(dtype)


# --- the generic reduction -------------------------------------------------------------

reduce_p = Primitive("reduce")
reduce_p.multiple_results = True


@reduce_p.def_impl
def _reduce_reference(*operands_and_inits, jaxpr, dimensions):
  """Reduces n operands together over `dimensions` with a scalar computation.

  The first n arguments are the operands, the last n their initial values.
  `jaxpr` is the computation: a closed jaxpr taking 2n scalars, an
  accumulator (n values) then one element of each operand, and returning
  the new accumulator (n values). For each result position the accumulator
  starts at the initial values and is combined with the elements of the
  reduced dimensions one at a time, in row-major order of those dimensions
  (a left fold); an empty reduction gives the initial values. XLA assumes
  the computation is a monoid with the initial values as identity and may
  combine in any order, so only for monoids do other orders agree.

  Shape rule: operands of one shape, scalar initial values of the operands'
  dtypes, distinct `dimensions` in range, and a computation mapping those
  scalars to the same types. Each result has its operand's shape with
  `dimensions` removed and its dtype; it is weak when both the operand and
  its initial value are.
  """
  n = len(operands_and_inits) // 2
  operands, inits = operands_and_inits[:n], operands_and_inits[n:]
  reduced = sorted(dimensions)
  kept = [d for d in range(operands[0].ndim) if d not in reduced]
  out_shape = tuple(operands[0].shape[d] for d in kept)
  out_size, reduced_size = math.prod(out_shape), math.prod(
      operands[0].shape[d] for d in reduced)
  rows = [np.transpose(op, kept + reduced).reshape(out_size, reduced_size)
          for op in operands]
  outs = [np.empty(out_size, op.dtype) for op in operands]
  with core.eval_context():
    for i in range(out_size):
      acc = list(inits)
      for j in range(reduced_size):
        acc = [core.to_numpy(v) for v in
               eval_closed_jaxpr(jaxpr, *acc, *(row[i, j] for row in rows))]
      for out, value in zip(outs, acc):
        out[i] = value
  return [out.reshape(out_shape) for out in outs]


@reduce_p.def_abstract_eval
def _reduce_shape_rule(*operands_and_inits, jaxpr, dimensions):
  if not operands_and_inits or len(operands_and_inits) % 2:
    raise TypeError("reduce takes n operands and n initial values, got "
                    f"{len(operands_and_inits)} arguments")
  n = len(operands_and_inits) // 2
  operands, inits = operands_and_inits[:n], operands_and_inits[n:]
  if any(op.shape != operands[0].shape for op in operands[1:]):
    raise ValueError("reduce operands must all have the same shape, got "
                     f"{[op.shape for op in operands]}")
  if any(init.shape != () for init in inits):
    raise ValueError(f"reduce found non-scalar initial value: {[i.shape for i in inits]}")
  if [op.dtype for op in operands] != [init.dtype for init in inits]:
    raise TypeError("reduce operand dtypes should match corresponding initial value "
                    f"dtypes, got operands={list(operands)} and "
                    f"initial_values={list(inits)}")
  axes = canonical_axes("reduce", dimensions, operands[0].ndim)
  scalars = [(init.shape, init.dtype) for init in inits]
  if ([(a.shape, a.dtype) for a in jaxpr.in_avals] != scalars * 2
      or [(a.shape, a.dtype) for a in jaxpr.out_avals] != scalars):
    raise TypeError("reduce computation must map (accumulator, element) scalars of "
                    f"the operand dtypes {[d.name for _, d in scalars]} to an "
                    f"accumulator of the same types; got {jaxpr.in_avals} -> "
                    f"{jaxpr.out_avals}")
  shape = tuple(d for i, d in enumerate(operands[0].shape) if i not in axes)
  return [ShapedArray(shape, op.dtype, op.weak_type and init.weak_type)
          for op, init in zip(operands, inits)]


def _concrete_scalar(x):
  """The value of `x` if it is a concrete scalar, else None."""
  value = x.to_concrete_value() if isinstance(x, core.Tracer) else x
  if value is None or np.ndim(value) != 0:
    return None
  return np.asarray(value)


def _monoid_reducer(computation, init_values):
  """The reduce_* function for `computation` with its identity as init value.

  As in JAX: one operand, `computation` one of lax.add, mul, max, min or
  (for integers and booleans) bitwise_and/or/xor, and a concrete scalar
  init value equal to that operation's identity. Otherwise None.
  """
  if len(init_values) != 1:
    return None
  value = _concrete_scalar(init_values[0])
  if value is None:
    return None
  dtype = get_aval(init_values[0]).dtype
  monoids = [(elementwise.add, reduce_sum, 0), (elementwise.mul, reduce_prod, 1),
             (elementwise.max, reduce_max, _max_identity(dtype)),
             (elementwise.min, reduce_min, _min_identity(dtype))]
  if dtypes.is_integer(dtype) or dtypes.is_bool(dtype):
    monoids += [(elementwise.bitwise_and, reduce_and, _and_identity(dtype)),
                (elementwise.bitwise_or, reduce_or, 0),
                (elementwise.bitwise_xor, reduce_xor, 0)]
  for op, reducer, identity in monoids:
    if computation is op:
      return reducer if np.equal(value, np.asarray(identity).astype(dtype)) else None
  return None


def reduce(operands, init_values, computation, dimensions):
  """Reduces `operands` (a pytree of arrays) over `dimensions`, starting from
  `init_values` (a pytree of scalars of the same structure) and combining with
  `computation(accumulator, element)`, a function of pytrees of scalars.

  `computation` and `init_values` must form a monoid (an associative
  operation and its identity) for XLA's result to be defined. lax.add, mul,
  max, min and the bitwise ops with their identity lower to the reduce_*
  primitives (returning an array); any other computation is traced to a
  jaxpr and lowers to `reduce_p` (see its reference rule for the order).
  """
  flat_operands, operand_tree = tree_util.tree_flatten(operands)
  flat_inits, init_tree = tree_util.tree_flatten(init_values)
  if operand_tree != init_tree:
    raise ValueError("Operands must have the same tree structure as init_values: "
                     f"{operand_tree} vs. {init_tree}")
  if len(flat_operands) != len(flat_inits):
    raise ValueError("Must have same total number of operands as init_values: "
                     f" {len(flat_operands)} vs. {len(flat_inits)}")
  dimensions = _axes(dimensions)
  monoid_reducer = _monoid_reducer(computation, flat_inits)
  if monoid_reducer:
    weak = (all(dtypes.is_weakly_typed(x) for x in flat_operands)
            and all(dtypes.is_weakly_typed(x) for x in flat_inits))
    out = monoid_reducer(flat_operands[0], dimensions)
    return elementwise.convert_element_type(out, out.dtype, weak_type=weak)
  jaxpr, out_tree = reduction_jaxpr("reduce", computation, init_tree,
                                    [get_aval(x) for x in flat_inits])
  outs = reduce_p.bind(*flat_operands, *flat_inits, jaxpr=jaxpr, dimensions=dimensions)
  return tree_util.tree_unflatten(out_tree, outs)


def reduction_jaxpr(name, computation, in_tree, in_avals):
  """Traces `computation(acc_tree, x_tree)` on scalars with avals `in_avals` (the
  leaves of one tree `in_tree`) to a ClosedJaxpr; returns it and its output tree.

  Shared by the generic reductions (`reduce`, `reduce_window`, `select_and_scatter`).
  """
  out_trees = []

  def flat_computation(*args):
    acc = tree_util.tree_unflatten(in_tree, args[:len(in_avals)])
    x = tree_util.tree_unflatten(in_tree, args[len(in_avals):])
    leaves, out_tree = tree_util.tree_flatten(computation(acc, x))
    out_trees.append(out_tree)
    return leaves

  closed = trace_to_jaxpr(flat_computation, list(in_avals) * 2)
  if any(isinstance(c, core.Tracer) for c in closed.consts):
    raise NotImplementedError(f"{name} computations can't close over Tracers; pass the "
                              "traced value as an operand instead.")
  return closed, out_trees[0]


# --- argmax / argmin ---------------------------------------------------------------

def _argminmax_reference(numpy_fn):
  def reference(operand, *, axes, index_dtype):
    axis, = axes
    x = _as_comparable(operand)
    if not dtypes.is_inexact(x.dtype):
      return as_dtype(numpy_fn(x, axis=axis), index_dtype)
    nan = np.isnan(x)
    best = numpy_fn(np.where(nan, 0, x), axis=axis)
    first_nan = np.argmax(nan, axis=axis)
    return as_dtype(np.where(nan.any(axis=axis), first_nan, best), index_dtype)
  return reference


def _argminmax_shape_rule(name):
  def rule(operand, *, axes, index_dtype):
    if len(axes) != 1:
      raise ValueError(f"{name} takes exactly one axis, got axes={axes}")
    axis, = axes
    if not 0 <= axis < operand.ndim:
      raise ValueError(f"Invalid axis {axis} for operand shape {operand.shape}")
    if operand.shape[axis] < 1:
      raise ValueError(f"argmin and argmax require non-empty reduction dimension. "
                       f"operand.shape={operand.shape} axis={axis}")
    if not dtypes.is_integer(index_dtype):
      raise TypeError(f"index_dtype must be an integer type, but got {np.dtype(index_dtype).name}")
    shape = operand.shape[:axis] + operand.shape[axis + 1:]
    return ShapedArray(shape, index_dtype)
  return rule


argmax_p = Primitive("argmax")
argmax_p.def_impl(_argminmax_reference(np.argmax))
argmax_p.impl.__doc__ = """Index of the largest element along the single axis in `axes`.

Ties give the first index. NaN counts as larger than everything: if the
slice holds a NaN the result is the index of the first NaN. Complex values
compare lexicographically. The reduced axis must be non-empty.
"""
argmax_p.def_abstract_eval(_argminmax_shape_rule("argmax"))

argmin_p = Primitive("argmin")
argmin_p.def_impl(_argminmax_reference(np.argmin))
argmin_p.impl.__doc__ = """Index of the smallest element along the single axis in `axes`.

Ties give the first index. NaN wins here too: if the slice holds a NaN the
result is the index of the first NaN (as in JAX and NumPy). Complex values
compare lexicographically. The reduced axis must be non-empty.
"""
argmin_p.def_abstract_eval(_argminmax_shape_rule("argmin"))


def argmax(operand, axis, index_dtype):
  """Index of the maximum along `axis` (first NaN, else first maximum)."""
  index_dtype = dtypes.canonicalize_dtype(np.dtype(index_dtype))
  return argmax_p.bind(operand, axes=(operator.index(axis),), index_dtype=index_dtype)


def argmin(operand, axis, index_dtype):
  """Index of the minimum along `axis` (first NaN, else first minimum)."""
  index_dtype = dtypes.canonicalize_dtype(np.dtype(index_dtype))
  return argmin_p.bind(operand, axes=(operator.index(axis),), index_dtype=index_dtype)


# --- cumulative reductions -----------------------------------------------------------

def _cumulative_primitive(name, category, accumulate, doc):
  prim = Primitive(name)

  def reference(operand, *, axis, reverse):
    x = np.flip(operand, axis) if reverse else operand
    out = as_dtype(accumulate(x, axis), operand.dtype)
    return np.flip(out, axis) if reverse else out

  def shape_rule(operand, *, axis, reverse):
    check_dtype(name, operand, category)
    if not 0 <= axis < operand.ndim:
      raise ValueError(f"{name} axis {axis} out of range for operand of shape "
                       f"{operand.shape}")
    return operand

  reference.__doc__ = doc
  prim.def_impl(reference)
  prim.def_abstract_eval(shape_rule)
  return prim


cumsum_p = _cumulative_primitive(
    "cumsum", NUMBER,
    lambda x, axis: np.cumsum(x, axis=axis, dtype=_wide_dtype(x.dtype)),
    """Running sums along `axis` (from the end when `reverse`).

    Element i is the sum of elements 0..i, each computed in double precision
    for floats and rounded once; integers wrap. Shape and dtype unchanged.""")

cumprod_p = _cumulative_primitive(
    "cumprod", NUMBER,
    lambda x, axis: np.cumprod(x, axis=axis, dtype=_wide_dtype(x.dtype)),
    """Running products along `axis` (from the end when `reverse`).

    Computed in double precision for floats and rounded per element;
    integers wrap. Shape and dtype unchanged.""")

cummax_p = _cumulative_primitive(
    "cummax", ANY,
    lambda x, axis: np.maximum.accumulate(_as_comparable(x), axis=axis),
    """Running maxima along `axis` (from the end when `reverse`).

    Once a NaN is met, every later element is NaN.""")

cummin_p = _cumulative_primitive(
    "cummin", ANY,
    lambda x, axis: np.minimum.accumulate(_as_comparable(x), axis=axis),
    """Running minima along `axis` (from the end when `reverse`).

    Once a NaN is met, every later element is NaN.""")

cumlogsumexp_p = _cumulative_primitive(
    "cumlogsumexp", FLOAT,
    lambda x, axis: np.logaddexp.accumulate(x.astype(np.float64), axis=axis),
    """Running log-sum-exp along `axis` (from the end when `reverse`), floats only.

    Element i is log(exp(x[0]) + ... + exp(x[i])), computed stably in double
    precision (a running logaddexp) and rounded once: -inf elements add
    nothing, +inf gives +inf from there on, NaN propagates. Shape and dtype
    unchanged.""")


def _cumulative(prim, operand, axis, reverse):
  axis = canonicalize_axis(axis, get_aval(operand).ndim)
  return prim.bind(operand, axis=axis, reverse=bool(reverse))


def cumsum(operand, axis=0, reverse=False):
  return _cumulative(cumsum_p, operand, axis, reverse)


def cumprod(operand, axis=0, reverse=False):
  return _cumulative(cumprod_p, operand, axis, reverse)


def cummax(operand, axis=0, reverse=False):
  return _cumulative(cummax_p, operand, axis, reverse)


def cummin(operand, axis=0, reverse=False):
  return _cumulative(cummin_p, operand, axis, reverse)


def cumlogsumexp(operand, axis=0, reverse=False):
  return _cumulative(cumlogsumexp_p, operand, axis, reverse)
