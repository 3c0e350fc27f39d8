"""Windowed reductions: reduce_window (sum, max, min and the generic form),
select_and_scatter_add, select_and_scatter and select_and_gather_add.

Window geometry, shared by every primitive here. Per dimension of the
operand:

* base dilation `b` puts `b - 1` holes between neighbouring elements
  (a size `d` becomes `1 + b * (d - 1)`, or 0 for `d == 0`);
* padding `(lo, hi)` adds `lo` positions before and `hi` after (a negative
  amount crops elements instead);
* a window holds `window_dimensions` positions, `window_dilation` apart
  (spanning `1 + w_dil * (w - 1)` positions), and window `i` starts at
  position `i * window_strides`.

Output size per dimension: `max(0, (padded - spanned) // stride + 1)`, with
`padded = lo + hi + dilated size` (see `reduce_window_shape_tuple`).

Holes and padding are not operand elements: a reduction folds only the
operand elements under a window, starting from the initial value (for the
monoids sum/max/min this is the same as reading the identity there).
"""

import operator

import numpy as np

from refimpl import core, dtypes, tree_util
from refimpl.core import Primitive, ShapedArray
from refimpl.interpreters import ad, batching
from refimpl.interpreters.eval import eval_closed_jaxpr
from refimpl.lax import elementwise
from refimpl.lax.indexing import slice as slice_
from refimpl.lax.reductions import reduction_jaxpr, reduce_max_p, reduce_min_p, reduce_sum_p
from refimpl.lax.rules import (ANY, NUMBER, ORDERED, accumulation_dtype, as_dtype, check_dtype,
                               check_same_dtypes, max_identity, min_identity)
from refimpl.lax.shapes import pad, pad_p

__all__ = ['reduce_window', 'reduce_window_shape_tuple', 'padtype_to_pads',
           'reduce_window_sum_p', 'reduce_window_max_p', 'reduce_window_min_p',
           'reduce_window_p', 'select_and_scatter_add_p', 'select_and_scatter_p',
           'select_and_gather_add_p']


# --- window geometry ---------------------------------------------------------------

def _dilate_dim(size, dilation):
  return 0 if size == 0 else 1 + dilation * (size - 1)


def dilate_shape(shape, dilation):
  """`shape` dilated; leading dimensions without a dilation are left as they are."""
  if not all(d > 0 for d in dilation):
    raise TypeError(f"All dilations must be positive, got {tuple(dilation)}.")
  dilation = (1,) * (len(shape) - len(dilation)) + tuple(dilation)
  return tuple(_dilate_dim(d, k) for d, k in zip(shape, dilation))


def stride_dim(size, window, stride):
  """How many windows of `window` positions, `stride` apart, fit in `size`."""
  return max(0, (size - window) // stride + 1)


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None):
  """The output shape of a windowed reduction (see the module docstring)."""
  if base_dilation is not None:
    operand_shape = dilate_shape(operand_shape, base_dilation)
  if window_dilation is not None:
    window_dimensions = dilate_shape(window_dimensions, window_dilation)
  padded = [d + lo + hi for d, (lo, hi) in zip(operand_shape, padding)]
  return tuple(stride_dim(d, w, s)
               for d, w, s in zip(padded, window_dimensions, window_strides))


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
  """The (lo, hi) pairs that padding 'VALID', 'SAME' or 'SAME_LOWER' stands for.

  VALID: no padding. SAME: enough padding that the output has
  `ceil(in / stride)` elements, split evenly with the odd one at the end;
  SAME_LOWER puts the odd one at the start.
  """
  kind = padding.upper() if isinstance(padding, str) else padding
  if kind not in ("VALID", "SAME", "SAME_LOWER"):
    raise RuntimeError(f"Unrecognized padding type: expected 'VALID' or 'SAME', got "
                       f"{padding}.")
  if kind == "VALID":
    return [(0, 0)] * len(in_shape)
  pads = []
  for d, w, s in zip(in_shape, window_shape, window_strides):
    out = -(-d // s)
    total = max((out - 1) * s + w - d, 0)
    small, large = total // 2, total - total // 2
    pads.append((small, large) if kind == "SAME" else (large, small))
  return pads


def _check_shapelike(fun_name, arg_name, obj, non_zero_shape=False):
  """A tuple of ints, each >= 0 (> 0 with `non_zero_shape`), as JAX checks."""
  if not isinstance(obj, (tuple, list, np.ndarray)):
    raise TypeError(f"{fun_name} {arg_name} must be of type tuple/list/ndarray, got "
                    f"{type(obj)}.")
  if not all(isinstance(d, (int, np.integer)) for d in obj):
    raise TypeError(f"{fun_name} {arg_name} must have every element be an integer type, "
                    f"got {tuple(map(type, obj))}.")
  bound, words = (1, "strictly positive") if non_zero_shape else (0, "nonnegative")
  if not all(d >= bound for d in obj):
    raise TypeError(f"{fun_name} {arg_name} must have every element be {words}, got "
                    f"{obj}.")


def _window_shape_rule(name, operand, window_dimensions, window_strides, padding,
                       base_dilation, window_dilation):
  """Checks the window params against `operand` (a ShapedArray); the output shape."""
  _check_shapelike(name, "window_dimensions", window_dimensions, non_zero_shape=True)
  _check_shapelike(name, "window_strides", window_strides, non_zero_shape=True)
  _check_shapelike(name, "base_dilation", base_dilation, non_zero_shape=True)
  _check_shapelike(name, "window_dilation", window_dilation, non_zero_shape=True)
  if operand.ndim != len(window_dimensions):
    raise TypeError(f"{name} got the wrong number of window_dimensions for operand: got "
                    f"operand shape {operand.shape} with window_dimensions "
                    f"{window_dimensions}.")
  for what, value in (("window_strides", window_strides), ("padding", padding),
                      ("base_dilation", base_dilation),
                      ("window_dilation", window_dilation)):
    if len(value) != len(window_dimensions):
      raise TypeError(f"{name} got inconsistent {what} and window_dimensions: got "
                      f"{what} {value} and window_dimensions {window_dimensions}.")
  return reduce_window_shape_tuple(operand.shape, window_dimensions, window_strides,
                                   padding, base_dilation, window_dilation)


def _windows(x, fill, *, window_dimensions, window_strides, padding, base_dilation,
             window_dilation):
  """Every window of `x`, as an array of shape `output_shape + window_dimensions`.

  `x` is dilated and padded with the scalar `fill` (holes and padding read
  `fill`); element `[i..., k...]` is the position `i * stride + k * window_dilation`
  of that array.
  """
  config = tuple((lo, hi, b - 1) for (lo, hi), b in zip(padding, base_dilation))
  padded = pad_p.impl(x, np.asarray(fill, x.dtype), padding_config=config)
  out_shape = reduce_window_shape_tuple(x.shape, window_dimensions, window_strides,
                                        padding, base_dilation, window_dilation)
  n = x.ndim
  index = []
  for d in range(n):
    positions = (np.arange(out_shape[d])[:, None] * window_strides[d]
                 + np.arange(window_dimensions[d])[None, :] * window_dilation[d])
    shape = [1] * (2 * n)
    shape[d], shape[n + d] = positions.shape
    index.append(positions.reshape(shape))
  return padded[tuple(index)]


def _is_element(shape, **window_params):
  """`_windows` of a mask: True where a window position holds an operand element."""
  return _windows(np.ones(shape, bool), False, **window_params)


def _window_axes(ndim):
  return tuple(range(ndim, 2 * ndim))


def _jaxpr_fn(closed):
  """Evaluates a closed jaxpr on NumPy scalars, eagerly; a list of NumPy scalars."""
  from refimpl.interpreters.eval import run_jaxpr
  def call(*args):
    with core.eval_context():
      return run_jaxpr(closed, *args)
  return call


# --- reduce_window_sum / max / min ---------------------------------------------------

def _monoid_window_primitive(name, category, reduction, identity, doc):
  prim = Primitive(name)

  def reference(operand, *, window_dimensions, window_strides, padding, base_dilation,
                window_dilation):
    windows = _windows(operand, identity(operand.dtype), window_dimensions=window_dimensions,
                       window_strides=window_strides, padding=padding,
                       base_dilation=base_dilation, window_dilation=window_dilation)
    return reduction.impl(windows, axes=_window_axes(operand.ndim))

  def shape_rule(operand, **window_params):
    check_dtype(name, operand, category)
    return operand.update(shape=_window_shape_rule("reduce_window", operand,
                                                   **window_params))

  reference.__doc__ = doc
  prim.def_impl(reference)
  prim.def_abstract_eval(shape_rule)
  return prim


_WINDOW_PARAMS_DOC = """

    `padding` holds a (lo, hi) pair per dimension; see the module docstring
    for the window geometry and the output shape. Dtype and weak type are
    the operand's."""

reduce_window_sum_p = _monoid_window_primitive(
    "reduce_window_sum", NUMBER, reduce_sum_p, lambda dtype: 0,
    """Sum of the operand elements under each window (0 for a window over
    padding and holes only). Computed as reduce_sum: floats in double
    precision rounded once, integers wrap around.""" + _WINDOW_PARAMS_DOC)

reduce_window_max_p = _monoid_window_primitive(
    "reduce_window_max", ANY, reduce_max_p, max_identity,
    """Maximum of the operand elements under each window; NaN if any is NaN.
    A window over padding and holes only gives the dtype's smallest value
    (-inf, the minimum integer, False).""" + _WINDOW_PARAMS_DOC)

reduce_window_min_p = _monoid_window_primitive(
    "reduce_window_min", ANY, reduce_min_p, min_identity,
    """Minimum of the operand elements under each window; NaN if any is NaN.
    A window over padding and holes only gives the dtype's largest value
    (+inf, the maximum integer, True).""" + _WINDOW_PARAMS_DOC)


# --- reduce_window (generic) ---------------------------------------------------------

reduce_window_p = Primitive("reduce_window")
reduce_window_p.multiple_results = True


@reduce_window_p.def_impl
def _reduce_window_reference(*args, jaxpr, consts, window_dimensions, window_strides,
                             padding, base_dilation, window_dilation):
  """Reduces windows of n operands together with the computation `jaxpr`.

  Operands: n arrays of one shape, then n scalar init values (the i-th of
  the operand's dtype). `jaxpr` (a ClosedJaxpr; `consts` is always ()) maps
  `(acc_1..acc_n, x_1..x_n)` to the new `acc_1..acc_n`, all scalars.

  Fold order: for each output position, the accumulators start at the init
  values and are combined with the operand elements under the window in
  row-major order of window position, `acc = jaxpr(acc, x)`; holes and
  padding are skipped, so a window with no operand element gives the init
  values. XLA leaves the order unspecified: it matters only for a
  computation that is not associative and commutative.

  Shape rule: each output has the window output shape (see the module
  docstring) and its operand's dtype, not weakly typed.
  """
  n = len(args) // 2
  operands, inits = args[:n], args[n:]
  window_params = dict(window_dimensions=window_dimensions, window_strides=window_strides,
                       padding=padding, base_dilation=base_dilation,
                       window_dilation=window_dilation)
  computation = _jaxpr_fn(jaxpr)
  windows = [_windows(x, 0, **window_params) for x in operands]
  is_element = _is_element(operands[0].shape, **window_params)
  ndim = operands[0].ndim
  outs = [np.empty(is_element.shape[:ndim], x.dtype) for x in operands]
  for i in np.ndindex(*is_element.shape[:ndim]):
    acc = list(inits)
    for k in np.ndindex(*is_element.shape[ndim:]):
      if is_element[i + k]:
        acc = computation(*acc, *(w[i + k] for w in windows))
    for out, value in zip(outs, acc):
      out[i] = value
  return outs


@reduce_window_p.def_abstract_eval
def _reduce_window_shape_rule(*avals, jaxpr, consts, **window_params):
  n = len(avals) // 2
  operands, inits = avals[:n], avals[n:]
  if any(o.dtype != i.dtype for o, i in zip(operands, inits)):
    raise TypeError(f"reduce_window got inconsistent dtypes for operands and init_values: "
                    f"got operand dtypes {[o.dtype.name for o in operands]} and "
                    f"init_value dtypes {[i.dtype.name for i in inits]}.")
  if any(i.shape != () for i in inits):
    raise TypeError(f"reduce_window expected init_values to be scalars but init_values "
                    f"have shapes {[i.shape for i in inits]}.")
  if any(o.shape != operands[0].shape for o in operands):
    raise TypeError(f"reduce_window operands must have the same shape, got "
                    f"{[o.shape for o in operands]}.")
  expected = [ShapedArray((), o.dtype) for o in operands]
  if [a.strip_weak_type() for a in jaxpr.out_avals] != expected:
    raise TypeError(f"reduce_window computation must return {n} scalars of the operand "
                    f"dtypes, got {[str(a) for a in jaxpr.out_avals]}.")
  shape = _window_shape_rule("reduce_window", operands[0], **window_params)
  return [ShapedArray(shape, o.dtype) for o in operands]


# --- lax.reduce_window -------------------------------------------------------------------

def _concrete_scalar(x):
  """The value of `x` if it is a concrete scalar, else None."""
  value = x.to_concrete_value() if isinstance(x, core.Tracer) else core.to_numpy(x)
  return None if value is None or np.shape(value) != () else value


def _monoid_window_primitive_for(computation, init_value, dtype):
  """reduce_window_sum/max/min_p when `computation` is lax.add/max/min and
  `init_value` its identity, as JAX recognises them; else None."""
  value = _concrete_scalar(init_value)
  if value is None:
    return None
  monoids = {elementwise.add: (reduce_window_sum_p, 0),
             elementwise.max: (reduce_window_max_p, max_identity(dtype)),
             elementwise.min: (reduce_window_min_p, min_identity(dtype))}
  for fn, (prim, identity) in monoids.items():
    if computation is fn and value == identity:
      return prim
  return None


def _ints(values):
  return tuple(operator.index(v) for v in values)


def _canonical_window_params(window_dimensions, window_strides, padding, base_dilation,
                             window_dilation):
  ones = (1,) * len(window_dimensions)
  return dict(window_dimensions=_ints(window_dimensions), window_strides=_ints(window_strides),
              padding=tuple(_ints(p) for p in padding),
              base_dilation=ones if base_dilation is None else _ints(base_dilation),
              window_dilation=ones if window_dilation is None else _ints(window_dilation))


def reduce_window(operand, init_value, computation, window_dimensions, window_strides=None,
                  padding="VALID", base_dilation=None, window_dilation=None):
  """Reduces each window of `operand` with `computation`, starting from `init_value`.

  `operand` and `init_value` may be matching pytrees (several arrays reduced
  together); `computation(acc, x)` takes and returns such trees of scalars.
  `padding` is 'VALID', 'SAME', 'SAME_LOWER' or (lo, hi) pairs; a string is
  resolved for the window-dilated window on the undilated operand, as JAX
  does. `window_strides` defaults to 1 in every dimension. lax.add, lax.max and
  lax.min with their identity as init value lower to reduce_window_sum/max/min;
  anything else to the generic reduce_window.
  """
  if window_strides is None:
    window_strides = (1,) * len(window_dimensions)
  flat_operands, operand_tree = tree_util.tree_flatten(operand)
  flat_inits, init_tree = tree_util.tree_flatten(init_value)
  if operand_tree != init_tree:
    raise ValueError(f"Operands must have the same tree structure as init_values: "
                     f"{operand_tree} vs. {init_tree}")
  if not flat_operands:
    raise ValueError("reduce_window must have at least one operand.")
  if isinstance(padding, str):
    dilated_window = (window_dimensions if window_dilation is None
                      else dilate_shape(window_dimensions, window_dilation))
    padding = padtype_to_pads(core.get_aval(flat_operands[0]).shape, dilated_window,
                              window_strides, padding)
  params = _canonical_window_params(window_dimensions, window_strides, padding,
                                    base_dilation, window_dilation)
  if len(flat_operands) == 1:
    prim = _monoid_window_primitive_for(computation, flat_inits[0],
                                        core.get_aval(flat_inits[0]).dtype)
    if prim is not None:
      return prim.bind(flat_operands[0], **params)
  init_avals = [core.get_aval(x) for x in flat_inits]
  jaxpr, out_tree = reduction_jaxpr("reduce_window", computation, init_tree, init_avals)
  if out_tree != operand_tree:
    raise ValueError(f"reduce_window output must have the same tree structure as the "
                     f"operands {operand_tree} vs. {out_tree}")
  outs = reduce_window_p.bind(*flat_operands, *flat_inits, jaxpr=jaxpr, consts=(), **params)
  return tree_util.tree_unflatten(out_tree, outs)


def _reduce_window_monoid(prim, operand, window_dimensions, window_strides, padding,
                          base_dilation=None, window_dilation=None):
  return prim.bind(operand, **_canonical_window_params(
      window_dimensions, window_strides, padding, base_dilation, window_dilation))


def reduce_window_sum(operand, window_dimensions, window_strides, padding,
                      base_dilation=None, window_dilation=None):
  """Binds reduce_window_sum (JAX's internal `_reduce_window_sum`); explicit padding."""
  return _reduce_window_monoid(reduce_window_sum_p, operand, window_dimensions,
                               window_strides, padding, base_dilation, window_dilation)


def reduce_window_max(operand, window_dimensions, window_strides, padding,
                      base_dilation=None, window_dilation=None):
  """Binds reduce_window_max (JAX's internal `_reduce_window_max`); explicit padding."""
  return _reduce_window_monoid(reduce_window_max_p, operand, window_dimensions,
                               window_strides, padding, base_dilation, window_dilation)


def reduce_window_min(operand, window_dimensions, window_strides, padding,
                      base_dilation=None, window_dilation=None):
  """Binds reduce_window_min (JAX's internal `_reduce_window_min`); explicit padding."""
  return _reduce_window_monoid(reduce_window_min_p, operand, window_dimensions,
                               window_strides, padding, base_dilation, window_dilation)


# --- selection in windows -----------------------------------------------------------------

def _select_in_windows(select, values, valid):
  """The window position each window selects, or -1 if none is valid.

  `values` and `valid` have one window per row of their last axis. Row-major
  fold: the first valid element is selected; each later valid element `e`
  replaces the selected `s` when `select(s, e)` is false. So with ge (le)
  the first maximum (minimum) wins ties, and a NaN is replaced by the next
  element (NaN compares false).
  """
  chosen = np.full(values.shape[:-1], -1)
  best = values[..., 0]
  for k in range(values.shape[-1]):
    e = values[..., k]
    replace = valid[..., k] & ((chosen < 0) | ~select(best, e))
    best = np.where(replace, e, best)
    chosen = np.where(replace, k, chosen)
  return chosen


def _selected_positions(chosen, window_dimensions, window_strides, padding, operand_shape):
  """Operand coordinates (a tuple of arrays shaped as `chosen`) of the window
  positions `chosen` (undilated windows), and a mask of those that select an
  operand element (not padding, not -1)."""
  offsets = np.unravel_index(np.maximum(chosen, 0), window_dimensions)
  positions, inside = [], chosen >= 0
  for d, k in enumerate(offsets):
    i = np.arange(chosen.shape[d]).reshape([-1 if e == d else 1 for e in range(chosen.ndim)])
    p = i * window_strides[d] + k - padding[d][0]
    inside = inside & (p >= 0) & (p < operand_shape[d])
    positions.append(p)
  return positions, inside


def _select_prim_identity(select_prim, dtype):
  return (max_identity if select_prim is elementwise.ge_p else min_identity)(dtype)


def _check_select_prim(name, select_prim):
  if select_prim not in (elementwise.ge_p, elementwise.le_p):
    raise TypeError(f"{name} select_prim must be ge_p or le_p, got {select_prim}")


# --- select_and_scatter_add ----------------------------------------------------------------

select_and_scatter_add_p = Primitive("select_and_scatter_add")


def _no_dilation(ndim):
  return dict(base_dilation=(1,) * ndim, window_dilation=(1,) * ndim)


@select_and_scatter_add_p.def_impl
def _select_and_scatter_add_reference(source, operand, *, select_prim, window_dimensions,
                                      window_strides, padding):
  """Adds each `source` element to the operand position its window selects.

  The windows are those of reduce_window over `operand` (no dilation);
  `source` has the window output shape. In each window the element chosen
  by `select_prim` is selected: ge_p selects the first maximum, le_p the
  first minimum, in row-major window order (the first element is selected,
  and each later element e replaces the selected s when select(s, e) is
  false, so a NaN is replaced by the next element). Padding takes part with
  the select identity (-inf / +inf, or the integer limits), as JAX on CPU
  pads, and a selection that falls in padding is dropped.

  Result: zeros of the operand's shape plus, at each selected position, the
  sum of the source values of the windows selecting it (floats summed in
  double precision and rounded once; integers wrap; bool ORs).
  Shape rule: operand and source share a dtype; source has the window
  output shape; the result has the operand's shape and dtype.
  """
  window_params = dict(window_dimensions=window_dimensions, window_strides=window_strides,
                       padding=padding, **_no_dilation(operand.ndim))
  identity = _select_prim_identity(select_prim, operand.dtype)
  values = _windows(operand, identity, **window_params).reshape(
      source.shape + (int(np.prod(window_dimensions)),))
  chosen = _select_in_windows(select_prim.impl, values, np.ones(values.shape, bool))
  positions, inside = _selected_positions(chosen, window_dimensions, window_strides,
                                          padding, operand.shape)
  positions = tuple(p[inside] for p in positions)
  out = np.zeros(operand.shape, accumulation_dtype(operand.dtype))
  np.add.at(out, positions, source[inside].astype(out.dtype))
  return as_dtype(out, operand.dtype)


@select_and_scatter_add_p.def_abstract_eval
def _select_and_scatter_add_shape_rule(source, operand, *, select_prim, window_dimensions,
                                       window_strides, padding):
  _check_select_prim("select_and_scatter_add", select_prim)
  check_dtype("select_and_scatter_add", operand, ORDERED)
  check_same_dtypes("select_and_scatter_add", source, operand)
  out_shape = _window_shape_rule("select_and_scatter_add", operand, window_dimensions,
                                 window_strides, padding, **_no_dilation(operand.ndim))
  if source.shape != out_shape:
    raise TypeError(f"select_and_scatter_add source must have the window output shape "
                    f"{out_shape}, got {source.shape}.")
  return ShapedArray(operand.shape, source.dtype, source.weak_type and operand.weak_type)


def select_and_scatter_add(source, operand, select_prim, window_dimensions, window_strides,
                           padding):
  """Binds select_and_scatter_add (JAX's internal `_select_and_scatter_add`)."""
  return select_and_scatter_add_p.bind(
      source, operand, select_prim=select_prim, window_dimensions=_ints(window_dimensions),
      window_strides=_ints(window_strides), padding=tuple(_ints(p) for p in padding))


# --- select_and_scatter (generic) ----------------------------------------------------------

select_and_scatter_p = Primitive("select_and_scatter")


def _elementwise(fn, *arrays):
  """`fn` (NumPy scalars in, a list of one NumPy scalar out) applied elementwise."""
  shape = np.broadcast_shapes(*(a.shape for a in arrays))
  arrays = [np.broadcast_to(a, shape) for a in arrays]
  results = [fn(*(a[i] for a in arrays))[0] for i in np.ndindex(*shape)]
  return np.asarray(results).reshape(shape)


@select_and_scatter_p.def_impl
def _select_and_scatter_reference(operand, source, init_value, *, select_jaxpr,
                                  select_consts, scatter_jaxpr, scatter_consts,
                                  window_dimensions, window_strides, padding):
  """Scatters each `source` element to the operand position its window selects.

  The windows are those of reduce_window over `operand` (no dilation);
  `source` has the window output shape. Selection: `select_jaxpr(s, e)`
  (scalars to a bool) says whether the selected `s` stays selected against
  a later element `e`; the first operand element of the window is selected
  first and later ones are tried in row-major order. Padding is skipped (a
  window over padding only selects nothing).

  Result: starts as `init_value` everywhere; then for each source element,
  in row-major order, the selected position becomes
  `scatter_jaxpr(current, source_value)`. `select_consts` and
  `scatter_consts` are always () (the jaxprs are closed). Shape rule: the
  operand's shape and dtype; source and init_value share its dtype.
  """
  window_params = dict(window_dimensions=window_dimensions, window_strides=window_strides,
                       padding=padding, **_no_dilation(operand.ndim))
  select = _jaxpr_fn(select_jaxpr)
  flat_shape = source.shape + (int(np.prod(window_dimensions)),)
  values = _windows(operand, 0, **window_params).reshape(flat_shape)
  valid = _is_element(operand.shape, **window_params).reshape(flat_shape)
  chosen = _select_in_windows(lambda s, e: _elementwise(select, s, e).astype(bool),
                              values, valid)
  positions, inside = _selected_positions(chosen, window_dimensions, window_strides,
                                          padding, operand.shape)
  scatter = _jaxpr_fn(scatter_jaxpr)
  out = np.full(operand.shape, init_value, operand.dtype)
  for i in np.ndindex(*source.shape):
    if inside[i]:
      p = tuple(q[i] for q in positions)
      out[p] = scatter(out[p], source[i])[0]
  return out


@select_and_scatter_p.def_abstract_eval
def _select_and_scatter_shape_rule(operand, source, init_value, *, select_jaxpr,
                                   select_consts, scatter_jaxpr, scatter_consts,
                                   window_dimensions, window_strides, padding):
  check_same_dtypes("select_and_scatter", operand, source, init_value)
  if init_value.shape != ():
    raise TypeError(f"select_and_scatter init_value must be a scalar, got shape "
                    f"{init_value.shape}.")
  out_shape = _window_shape_rule("select_and_scatter", operand, window_dimensions,
                                 window_strides, padding, **_no_dilation(operand.ndim))
  if source.shape != out_shape:
    raise TypeError(f"select_and_scatter source must have the window output shape "
                    f"{out_shape}, got {source.shape}.")
  if [a.strip_weak_type() for a in select_jaxpr.out_avals] != [ShapedArray((), np.bool_)]:
    raise TypeError("select_and_scatter select must return one boolean scalar.")
  return operand.strip_weak_type()


def select_and_scatter(operand, select, window_dimensions, window_strides, padding, source,
                       init_value, scatter):
  """Binds select_and_scatter (JAX's internal `_select_and_scatter`).

  `select(a, b)` and `scatter(a, b)` are functions of two scalars, traced
  at the init value's type.
  """
  aval = core.get_aval(init_value)
  tree = tree_util.tree_structure(0)
  select_jaxpr, _ = reduction_jaxpr("select_and_scatter", select, tree, [aval])
  scatter_jaxpr, _ = reduction_jaxpr("select_and_scatter", scatter, tree, [aval])
  return select_and_scatter_p.bind(
      operand, source, init_value, select_jaxpr=select_jaxpr, select_consts=(),
      scatter_jaxpr=scatter_jaxpr, scatter_consts=(),
      window_dimensions=_ints(window_dimensions), window_strides=_ints(window_strides),
      padding=tuple(_ints(p) for p in padding))


# --- select_and_gather_add -----------------------------------------------------------------

select_and_gather_add_p = Primitive("select_and_gather_add")


@select_and_gather_add_p.def_impl
def _select_and_gather_add_reference(tangents, operand, *, select_prim, window_dimensions,
                                     window_strides, padding, base_dilation, window_dilation):
  """For each window of `operand`, the `tangents` element at the selected position.

  The windows are those of reduce_window (dilations allowed). Selection is
  JAX's pair reduction: start from (identity of `select_prim`, 0) (-inf or
  +inf, or the integer limits), then fold the operand elements under the
  window in row-major order, holes and padding skipped: the pair (x, t)
  replaces the current (s, u) when `select_prim(s, x)` is false. So ge_p
  takes the first maximum (le_p the first minimum); a window whose elements
  all equal the identity, or with none, gives 0; a NaN is replaced by the
  next element. Shape rule: tangents and operand share shape and dtype; the
  result has the window output shape and their dtype.
  """
  window_params = dict(window_dimensions=window_dimensions, window_strides=window_strides,
                       padding=padding, base_dilation=base_dilation,
                       window_dilation=window_dilation)
  identity = _select_prim_identity(select_prim, operand.dtype)
  values = _windows(operand, identity, **window_params)
  out_shape = values.shape[:operand.ndim]
  flat = lambda w: w.reshape(out_shape + (int(np.prod(window_dimensions)),))
  start = lambda fill, dtype: np.full(out_shape + (1,), fill, dtype)
  # the starting pair is a window position in front of all the others
  values = np.concatenate([start(identity, operand.dtype), flat(values)], -1)
  valid = np.concatenate([start(True, bool),
                          flat(_is_element(operand.shape, **window_params))], -1)
  pairs = np.concatenate([start(0, tangents.dtype),
                          flat(_windows(tangents, 0, **window_params))], -1)
  chosen = _select_in_windows(select_prim.impl, values, valid)
  return np.take_along_axis(pairs, chosen[..., None], -1)[..., 0]


@select_and_gather_add_p.def_abstract_eval
def _select_and_gather_add_shape_rule(tangents, operand, *, select_prim, **window_params):
  _check_select_prim("select_and_gather_add", select_prim)
  check_dtype("select_and_gather_add", operand, ORDERED)
  check_same_dtypes("select_and_gather_add", tangents, operand)
  if tangents.shape != operand.shape:
    raise TypeError(f"select_and_gather_add tangents and operand shapes must match, got "
                    f"{tangents.shape} and {operand.shape}.")
  shape = _window_shape_rule("select_and_gather_add", operand, **window_params)
  return ShapedArray(shape, tangents.dtype, tangents.weak_type and operand.weak_type)


def select_and_gather_add(tangents, operand, select_prim, window_dimensions, window_strides,
                          padding, base_dilation, window_dilation):
  """Binds select_and_gather_add (JAX's internal `_select_and_gather_add`)."""
  return select_and_gather_add_p.bind(
      tangents, operand, select_prim=select_prim, **_canonical_window_params(
          window_dimensions, window_strides, padding, base_dilation, window_dilation))


# --- differentiation rules -----------------------------------------------------------------

def _transpose_padding(in_shape, window_dimensions, window_strides, out_shape, padding,
                       base_dilation, window_dilation):
  """(lo, hi) padding of a window output (its elements `window_strides` apart)
  such that the windows over it, strided by `base_dilation`, are the
  transposed windows: one per operand element (JAX's
  `_conv_general_vjp_lhs_padding`)."""
  operand = dilate_shape(in_shape, base_dilation)
  window = dilate_shape(window_dimensions, window_dilation)
  out = dilate_shape(out_shape, window_strides)
  lo = [w - p - 1 for w, (p, _) in zip(window, padding)]
  return [(l, d + w - 1 - o - l) for l, d, w, o in zip(lo, operand, window, out)]


def _reduce_window_sum_transpose(ct, operand, *, window_dimensions, window_strides, padding,
                                 base_dilation, window_dilation):
  # Each operand element was added into every window holding it: spread the
  # cotangent out (strides as holes) and sum it over the same windows, which
  # are symmetric, so they need no flip.
  in_shape = operand.aval.shape
  ct_aval = core.get_aval(ct)
  pads = _transpose_padding(in_shape, window_dimensions, window_strides, ct_aval.shape,
                            padding, base_dilation, window_dilation)
  spread = pad(ct, np.zeros((), ct_aval.dtype),
               [(lo, hi, s - 1) for (lo, hi), s in zip(pads, window_strides)])
  ones = (1,) * len(in_shape)
  return [reduce_window_sum(spread, window_dimensions, base_dilation, [(0, 0)] * len(in_shape),
                            base_dilation=ones, window_dilation=window_dilation)]


ad.deflinear2(reduce_window_sum_p, _reduce_window_sum_transpose)


def _with_batch_window(dim, window_dimensions, window_strides, padding, base_dilation=None,
                       window_dilation=None):
  """The window params with a window of one element, stride 1 and no padding
  or dilation inserted for the batch axis at `dim` (dilations only if given)."""
  ins = lambda params, v: None if params is None else params[:dim] + (v,) + params[dim:]
  params = dict(window_dimensions=ins(window_dimensions, 1),
                window_strides=ins(window_strides, 1), padding=ins(padding, (0, 0)))
  if base_dilation is not None:
    params.update(base_dilation=ins(base_dilation, 1),
                  window_dilation=ins(window_dilation, 1))
  return params


def _monoid_window_batch(prim):
  """reduce_window_sum/max/min: the batch axis stays in place, under a
  window of one element."""
  def rule(args, dims, **window_params):
    (x,), (d,) = args, dims
    return prim.bind(x, **_with_batch_window(d, **window_params)), d
  return rule


batching.primitive_batchers[reduce_window_sum_p] = _monoid_window_batch(reduce_window_sum_p)


def _chooser_jvp(select_prim):
  """The JVP of reduce_window_max (ge) / min (le): each window's tangent is
  the one at its selected element."""
  def rule(t, operand, **window_params):
    return select_and_gather_add(t, operand, select_prim, **window_params)
  return rule


ad.defjvp(reduce_window_max_p, _chooser_jvp(elementwise.ge_p))
ad.defjvp(reduce_window_min_p, _chooser_jvp(elementwise.le_p))
batching.primitive_batchers[reduce_window_max_p] = _monoid_window_batch(reduce_window_max_p)
batching.primitive_batchers[reduce_window_min_p] = _monoid_window_batch(reduce_window_min_p)


def _reduce_window_jvp(primals, tangents, *, jaxpr, consts, **window_params):
  # Reduces the (primal, tangent) pairs together, with the JVP of the
  # computation; only inexact operands carry tangents.
  n = len(primals) // 2
  operands, inits = primals[:n], primals[n:]
  if not all(isinstance(t, ad.Zero) for t in tangents[n:]):
    raise TypeError("reduce_window jvp does not support non-zero init_value_tangent.")
  has_tangent = [dtypes.is_inexact(core.get_aval(x).dtype) for x in operands]
  jvp_closed, _ = ad.jvp_jaxpr(jaxpr, has_tangent * 2, instantiate=has_tangent)
  m = n + sum(has_tangent)

  def computation(acc, x):
    return eval_closed_jaxpr(jvp_closed, *acc[:n], *x[:n], *acc[n:], *x[n:])

  tangent_operands = [ad.instantiate_zeros(t) for t, d in zip(tangents[:n], has_tangent) if d]
  tangent_inits = [ad.zeros_like_aval(core.get_aval(x)) for x, d in zip(inits, has_tangent)
                   if d]
  outs = reduce_window([*operands, *tangent_operands], [*inits, *tangent_inits], computation,
                       **window_params)
  out_tangents = iter(outs[n:m])
  return outs[:n], [next(out_tangents) if d else ad.Zero(ad.tangent_aval(core.get_aval(o)))
                    for o, d in zip(outs[:n], has_tangent)]


ad.primitive_jvps[reduce_window_p] = _reduce_window_jvp


def _reduce_window_batch(args, dims, *, jaxpr, consts, **window_params):
  # As JAX: operands batched at axis 0 (unbatched ones broadcast), init values
  # must stay unbatched (they are the scalars the computation starts from).
  n = len(args) // 2
  if any(d is not None for d in dims[n:]):
    raise NotImplementedError("reduce_window batching is not implemented for initial values")
  size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
  operands = [batching.bdim_at_front(x, d, size) for x, d in zip(args[:n], dims[:n])]
  outs = reduce_window_p.bind(*operands, *args[n:], jaxpr=jaxpr, consts=consts,
                              **_with_batch_window(0, **window_params))
  return outs, [0] * n


batching.primitive_batchers[reduce_window_p] = _reduce_window_batch


def _linear_in_first(prim):
  """The JVP for the first argument of `prim`, linear in it (the second
  argument, the operand, only selects: its tangent contributes nothing)."""
  return lambda t, _, operand, **params: prim.bind(t, operand, **params)


def _select_and_scatter_add_transpose(ct, source, operand, *, select_prim, window_dimensions,
                                      window_strides, padding):
  # Linear in `source`: scattering to the selected elements transposes to
  # gathering from them.
  ones = (1,) * len(window_dimensions)
  return [select_and_gather_add(ct, operand, select_prim, window_dimensions, window_strides,
                                padding, ones, ones), None]


ad.defjvp(select_and_scatter_add_p, _linear_in_first(select_and_scatter_add_p), None)
ad.deftranspose(select_and_scatter_add_p, _select_and_scatter_add_transpose)


def _front(args, dims):
  """The args with their batch axes first (unbatched ones broadcast)."""
  size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
  return [batching.bdim_at_front(x, d, size) for x, d in zip(args, dims)]


def _select_and_scatter_add_batch(args, dims, *, select_prim, **window_params):
  source, operand = _front(args, dims)
  return select_and_scatter_add_p.bind(source, operand, select_prim=select_prim,
                                       **_with_batch_window(0, **window_params)), 0


batching.primitive_batchers[select_and_scatter_add_p] = _select_and_scatter_add_batch


def _select_and_gather_add_transpose(ct, tangents, operand, *, select_prim, window_dimensions,
                                     window_strides, padding, base_dilation, window_dilation):
  # Linear in `tangents`: gathering from the selected elements transposes to
  # scattering to them. Base dilation: the holes become elements that are
  # never selected (the select identity), dropped afterwards.
  if any(d != 1 for d in window_dilation):
    raise NotImplementedError(f"VJP not implemented for select_and_gather (MaxPool) with "
                              f"window dilation, got window_dilation={window_dilation}.")
  dilated = any(d != 1 for d in base_dilation)
  if dilated:
    dtype = core.get_aval(operand).dtype
    identity = np.asarray(_select_prim_identity(select_prim, dtype), dtype)
    operand = pad(operand, identity, [(0, 0, d - 1) for d in base_dilation])
  result = select_and_scatter_add(ct, operand, select_prim, window_dimensions, window_strides,
                                  padding)
  if dilated:
    shape = core.get_aval(result).shape
    result = slice_(result, (0,) * len(shape), shape, base_dilation)
  return [result, None]


ad.defjvp(select_and_gather_add_p, _linear_in_first(select_and_gather_add_p), None)
ad.deftranspose(select_and_gather_add_p, _select_and_gather_add_transpose)


def _select_and_gather_add_batch(args, dims, *, select_prim, **window_params):
  tangents, operand = _front(args, dims)
  return select_and_gather_add_p.bind(tangents, operand, select_prim=select_prim,
                                      **_with_batch_window(0, **window_params)), 0


batching.primitive_batchers[select_and_gather_add_p] = _select_and_gather_add_batch

# As JAX: the generic select_and_scatter (any select and scatter computations)
# has no derivative; max pooling differentiates through select_and_gather_add.
ad.defjvp_unsupported(select_and_scatter_p, NotImplementedError,
                      "Differentiation rule for 'select_and_scatter' not implemented")


def _select_and_scatter_batch(args, dims, *, window_dimensions, window_strides, padding,
                              **jaxprs):
  # JAX has no rule here; the batch axis gets a window of one element, as
  # for select_and_scatter_add (the init value must stay unbatched).
  if dims[2] is not None:
    raise NotImplementedError("select_and_scatter batching is not implemented for a batched "
                              "init_value")
  operand, source = _front(args[:2], dims[:2])
  return select_and_scatter_p.bind(operand, source, args[2], **jaxprs, **_with_batch_window(
      0, window_dimensions, window_strides, padding)), 0


batching.primitive_batchers[select_and_scatter_p] = _select_and_scatter_batch
