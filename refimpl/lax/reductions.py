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

Complex products (reduce_prod, cumprod) multiply in order along the axes
(row-major over several; reduce_prod from 1), each step (a + bi)(c + di) =
(ac - bd) + (ad + bc)i rounded operation by operation, with no fused
multiply-add, on every CPU. (NumPy's complex loops fuse them where they are
SIMD, which depends on the CPU and on the array's layout, so the reference
multiplies the parts itself.)
"""

import math
import operator

import numpy as np

from refimpl import core, dtypes, tree_util
from refimpl.config import config
from refimpl.core import Primitive, ShapedArray, get_aval
from refimpl.custom_derivatives import custom_jvp
from refimpl.interpreters import ad, batching
from refimpl.interpreters.eval import eval_closed_jaxpr, run_jaxpr
from refimpl.interpreters.partial_eval import trace_to_jaxpr
from refimpl.lax import elementwise
from refimpl.lax.elementwise import (add, convert_element_type, div, eq, exp, log1p, mul, ne,
                                     neg, select, sub)
from refimpl.lax.indexing import slice_in_dim
from refimpl.lax.rules import (ANY, FLOAT, INT_OR_BOOL, NUMBER, accumulation_dtype,
                               as_dtype, canonical_axes, check_dtype, const, max_identity,
                               min_identity)
from refimpl.lax.shapes import (broadcast_in_dim, canonicalize_axis, full, full_like, pad,
                                reshape, squeeze)
from refimpl.sharding import check_out_sharding

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
  wide = np.sum(operand, axis=tuple(axes), dtype=accumulation_dtype(operand.dtype))
  return as_dtype(wide, operand.dtype)


def _reduce_prod_reference(operand, *, axes):
  """Product over `axes`. Empty: 1. Integers wrap; floats accumulate in
  double; complex numbers multiply in order, unfused (module docstring)."""
  acc = accumulation_dtype(operand.dtype)
  if not dtypes.is_complex(operand.dtype):
    return as_dtype(np.prod(operand, axis=tuple(axes), dtype=acc), operand.dtype)
  kept = [d for d in range(operand.ndim) if d not in axes]
  rows = np.transpose(operand, kept + sorted(axes)).astype(acc)
  rows = rows.reshape([operand.shape[d] for d in kept] + [math.prod(rows.shape[len(kept):])])
  ones = np.ones(rows.shape[:-1] + (1,), acc)
  return as_dtype(_complex_products(np.concatenate([ones, rows], -1))[..., -1], operand.dtype)


def _complex_products(rows):
  """The running products along the last axis of complex `rows`, in order,
  each (a + bi)(c + di) = (ac - bd) + (ad + bc)i in real operations."""
  re, im = rows.real.copy(), rows.imag.copy()
  for k in range(1, rows.shape[-1]):
    a, b, c, d = re[..., k - 1], im[..., k - 1], re[..., k], im[..., k]
    re[..., k], im[..., k] = a * c - b * d, a * d + b * c
  out = np.empty(rows.shape, rows.dtype)
  out.real, out.imag = re, im
  return out


def _reduce_max_reference(operand, *, axes):
  """Maximum over `axes`. NaN if any element is NaN. Empty: the dtype's
  smallest value (-inf for floats, the minimum integer, False)."""
  x = _as_comparable(operand)
  return as_dtype(np.max(x, axis=tuple(axes), initial=max_identity(operand.dtype)),
                  operand.dtype)


def _reduce_min_reference(operand, *, axes):
  """Minimum over `axes`. NaN if any element is NaN. Empty: the dtype's
  largest value (+inf for floats, the maximum integer, True)."""
  x = _as_comparable(operand)
  return as_dtype(np.min(x, axis=tuple(axes), initial=min_identity(operand.dtype)),
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


def reduce_sum(operand, axes, *, out_sharding=None):
  """Sum over `axes`. With `jax_allow_f16_reductions` off, a float16 or
  bfloat16 operand raises ValueError (unless every summed axis has size 1)."""
  check_out_sharding(out_sharding, "reduce_sum")
  axes = _axes(axes)
  if not config.jax_allow_f16_reductions:
    aval = get_aval(operand)
    if aval.dtype in (dtypes.float16, dtypes.bfloat16) and any(aval.shape[d] != 1 for d in axes):
      raise ValueError(f"reduce_sum on operand {aval.str_short()} is not allowed when "
                       "jax_allow_f16_reductions=False.")
  return reduce_sum_p.bind(operand, axes=axes)


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
        acc = run_jaxpr(jaxpr, *acc, *(row[i, j] for row in rows))
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
             (elementwise.max, reduce_max, max_identity(dtype)),
             (elementwise.min, reduce_min, min_identity(dtype))]
  if dtypes.is_integer(dtype) or dtypes.is_bool(dtype):
    monoids += [(elementwise.bitwise_and, reduce_and, _and_identity(dtype)),
                (elementwise.bitwise_or, reduce_or, 0),
                (elementwise.bitwise_xor, reduce_xor, 0)]
  for op, reducer, identity in monoids:
    if computation is op:
      return reducer if np.equal(value, np.asarray(identity).astype(dtype)) else None
  return None


def reduce(operands, init_values, computation, dimensions, out_sharding=None):
  """Reduces `operands` (a pytree of arrays) over `dimensions`, starting from
  `init_values` (a pytree of scalars of the same structure) and combining with
  `computation(accumulator, element)`, a function of pytrees of scalars.

  `computation` and `init_values` must form a monoid (an associative
  operation and its identity) for XLA's result to be defined. lax.add, mul,
  max, min and the bitwise ops with their identity lower to the reduce_*
  primitives (returning an array); any other computation is traced to a
  jaxpr and lowers to `reduce_p` (see its reference rule for the order).
  """
  check_out_sharding(out_sharding, "reduce")
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
    check_dtype(name, operand, ANY)
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
    lambda x, axis: np.cumsum(x, axis=axis, dtype=accumulation_dtype(x.dtype)),
    """Running sums along `axis` (from the end when `reverse`).

    Element i is the sum of elements 0..i, each computed in double precision
    for floats and rounded once; integers wrap. Shape and dtype unchanged.""")

def _running_products(x, axis):
  acc = accumulation_dtype(x.dtype)
  if not dtypes.is_complex(x.dtype):
    return np.cumprod(x, axis=axis, dtype=acc)
  return np.moveaxis(_complex_products(np.moveaxis(x, axis, -1).astype(acc)), -1, axis)


cumprod_p = _cumulative_primitive(
    "cumprod", NUMBER, _running_products,
    """Running products along `axis` (from the end when `reverse`).

    Computed in double precision for floats and rounded per element;
    integers wrap; complex numbers multiply in order, unfused (module
    docstring). Shape and dtype unchanged.""")

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


# --- differentiation rules ----------------------------------------------------------------------
# JAX's rules, with the same math and primitives: reduce_sum and cumsum are
# linear; reduce_max/min give the extremum's tangent (averaged over ties);
# reduce_prod and the generic reduce differentiate a tree of pairwise
# reductions; cumprod, cummax, cummin and cumlogsumexp differentiate a parallel
# prefix scan. Integer and boolean results have zero tangents.

def _reduce_sum_transpose(ct, operand, *, axes):
  shape = operand.aval.shape
  return [broadcast_in_dim(ct, shape, tuple(d for d in range(len(shape)) if d not in axes))]


ad.deflinear2(reduce_sum_p, _reduce_sum_transpose)


def _reduce_chooser_jvp(g, ans, operand, *, axes):
  # The tangent at the positions equal to the result, divided among them.
  shape = [1 if i in axes else d for i, d in enumerate(get_aval(operand).shape)]
  location_indicators = convert_element_type(eq(operand, reshape(ans, shape)),
                                             get_aval(g).dtype)
  counts = reduce_sum(location_indicators, axes)
  return div(reduce_sum(mul(g, location_indicators), axes), counts)


ad.defjvp2(reduce_max_p, _reduce_chooser_jvp)
ad.defjvp2(reduce_min_p, _reduce_chooser_jvp)

for _p in (reduce_and_p, reduce_or_p, reduce_xor_p, argmax_p, argmin_p):
  ad.defjvp_zero(_p)


def _reduce_jvp(reducer, init_values, primals, tangents, axes):
  """The JVP of reducing `primals` over `axes` with `reducer` (lists of
  arrays in and out, elementwise) from `init_values`: that of a tree of
  pairwise reductions along the reduced axes moved to the front and
  flattened, the second half padded with the init values when odd."""
  shape = get_aval(primals[0]).shape
  kept = tuple(d for d in range(len(shape)) if d not in axes)
  kept_shape = tuple(shape[d] for d in kept)
  new_shape = (math.prod(shape[d] for d in axes),) + kept_shape
  primals = [reshape(x, new_shape, tuple(axes) + kept) for x in primals]
  tangents = [ad.Zero(ad.tangent_aval(get_aval(x))) if isinstance(t, ad.Zero)
              else reshape(t, new_shape, tuple(axes) + kept) for x, t in zip(primals, tangents)]

  def reduce_tree(*xs):
    while get_aval(xs[0]).shape[0] > 1:
      n = get_aval(xs[0]).shape[0]
      half = (n + 1) // 2
      firsts = [slice_in_dim(x, 0, half) for x in xs]
      seconds = [slice_in_dim(x, half, None) for x in xs]
      if n % 2:
        padding = [(0, 0, 0)] * len(new_shape)
        padding[0] = (0, 1, 0)
        seconds = [pad(x, init, padding) for x, init in zip(seconds, init_values)]
      xs = reducer(*firsts, *seconds)
    if get_aval(xs[0]).shape[0] == 0:
      return [full(kept_shape, init) for init in init_values]
    return [squeeze(x, (0,)) for x in xs]

  return ad.jvp_flat(reduce_tree, primals, tangents)


def _reduce_prod_jvp(primals, tangents, *, axes):
  outs, tangents_out = _reduce_jvp(lambda x, y: [mul(x, y)], [const(primals[0], 1)],
                                   primals, tangents, axes)
  return outs[0], tangents_out[0]


ad.primitive_jvps[reduce_prod_p] = _reduce_prod_jvp


def _reduce_jvp_rule(primals, tangents, *, jaxpr, dimensions):
  # The scalar computation is mapped (vmap) over every dimension of the
  # pairwise reduction tree's operands, as in JAX.
  from refimpl.vectorize import vmap
  n = len(primals) // 2
  if any(not isinstance(t, ad.Zero) for t in tangents[n:]):
    raise NotImplementedError("Gradient of general lax.reduce with non-zero tangents for "
                              "initial values to reduction not implemented")
  reducer = lambda *xs: eval_closed_jaxpr(jaxpr, *xs)
  for _ in range(get_aval(primals[0]).ndim - len(dimensions) + 1):
    reducer = vmap(reducer)
  return _reduce_jvp(reducer, primals[n:], primals[:n], tangents[:n], dimensions)


ad.primitive_jvps[reduce_p] = _reduce_jvp_rule


def _reduce_batch(args, dims, *, jaxpr, dimensions):
  # Batch axes (or broadcasts of unbatched operands) go first; the initial
  # values must be shared by the whole batch, as in JAX.
  n = len(args) // 2
  if any(d is not batching.not_mapped for d in dims[n:]):
    raise NotImplementedError("Batching of lax.reduce with batched initial values is "
                              "not implemented")
  size = next(x.shape[d] for x, d in zip(args, dims) if d is not batching.not_mapped)
  operands = [batching.bdim_at_front(x, d, size) for x, d in zip(args[:n], dims[:n])]
  outs = reduce_p.bind(*operands, *args[n:], jaxpr=jaxpr,
                       dimensions=tuple(d + 1 for d in dimensions))
  return outs, [0] * n


batching.primitive_batchers[reduce_p] = _reduce_batch

ad.deflinear2(cumsum_p, lambda ct, operand, *, axis, reverse: [cumsum(ct, axis, not reverse)])


def _replace_inf(x):
  return select(eq(x, const(x, np.inf)), full_like(x, 0), x)


@custom_jvp
def _logaddexp(x1, x2):
  """log(exp(x1) + exp(x2)) without overflow (JAX's lax-level logaddexp)."""
  amax = elementwise.max(x1, x2)
  delta = sub(x1, x2)
  return select(ne(delta, delta),   # NaN, or infinities of one sign
                add(x1, x2), add(amax, log1p(exp(neg(elementwise.abs(delta))))))


@_logaddexp.defjvp
def _logaddexp_jvp(primals, tangents):
  # The derivatives are exp(x_i - out): the softmax weights of x1 and x2.
  x1, x2 = primals
  t1, t2 = tangents
  out = _logaddexp(x1, x2)
  return out, add(mul(t1, exp(sub(_replace_inf(x1), _replace_inf(out)))),
                  mul(t2, exp(sub(_replace_inf(x2), _replace_inf(out)))))


def _cumulative_jvp(combine):
  """The JVP of a cumulative reduction: that of
  `lax.associative_scan(combine, x, axis=axis, reverse=reverse)`, as in JAX
  (whose rule is `jvp(partial(associative_scan, combine_fn, ...))`)."""
  def rule(primals, tangents, *, axis, reverse):
    from refimpl.lax.control_flow.loops import associative_scan
    outs, tangents_out = ad.jvp_flat(
        lambda x: [associative_scan(combine, x, axis=axis, reverse=reverse)],
        primals, tangents)
    return outs[0], tangents_out[0]
  return rule


ad.primitive_jvps[cumprod_p] = _cumulative_jvp(mul)
ad.primitive_jvps[cummax_p] = _cumulative_jvp(elementwise.max)
ad.primitive_jvps[cummin_p] = _cumulative_jvp(elementwise.min)
ad.primitive_jvps[cumlogsumexp_p] = _cumulative_jvp(_logaddexp)


# --- batching rules --------------------------------------------------------------------------
# As JAX's: the batch axis stays where it is and the reduced (or scanned)
# axes are renumbered around it.

def _reducer_batch(prim):
  """The rule of a reduction over `axes` (reduce_*, argmax, argmin)."""
  def rule(args, dims, *, axes, **params):
    (operand,), (d,) = args, dims
    axes = tuple(a + (a >= d) for a in axes)
    # the batch axis moves left past each reduced axis before it
    return prim.bind(operand, axes=axes, **params), d - sum(a < d for a in axes)
  return rule


for _p in (reduce_sum_p, reduce_prod_p, reduce_max_p, reduce_min_p, reduce_and_p,
           reduce_or_p, reduce_xor_p, argmax_p, argmin_p):
  batching.primitive_batchers[_p] = _reducer_batch(_p)


def _cumulative_batch(prim):
  """The rule of a cumulative reduction along `axis`."""
  def rule(args, dims, *, axis, reverse):
    (operand,), (d,) = args, dims
    return prim.bind(operand, axis=axis + (axis >= d), reverse=reverse), d
  return rule


for _p in (cumsum_p, cumprod_p, cummax_p, cummin_p, cumlogsumexp_p):
  batching.primitive_batchers[_p] = _cumulative_batch(_p)
