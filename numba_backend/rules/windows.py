"""Lowering rules of the windowed reductions and selections
(refimpl/lax/windows.py).

`window_table` (one kernel for every dtype) lists, for each output position
and each window position in row-major order, the flat operand index there
(`window_position`), or -1 for a hole or padding. The monoid reductions
gather the windows (holes read the identity, as in the reference) and reduce
them as reduce_sum/max/min do (`numba_backend.rules.reductions`: NumPy's
summation order too); the selections and the generic forms walk the table.
The numba-cuda rules (numba_backend/cuda/windows.py) compute the positions
from each element's index (`window_position`) and share the generic forms'
loops (`reduce_window_rule`, `select_in_window`).
"""

import math

import numba
import numpy as np

from refimpl import dtypes
from refimpl.lax import elementwise, windows as lax
from refimpl.lax.rules import accumulation_dtype, max_identity, min_identity
from numba_backend import scalars as S
from numba_backend.kernels import c_strides
from numba_backend.lower import (LoweringError, element_to_store, lower_jaxpr, read_element,
                                 register, scalar_dtype, storage_dtype)
from numba_backend.rules.reductions import (new_flat, over_rows, pairwise_run, row_fold, stored,
                                            sum_rows, widened)

_JIT = dict(cache=True, error_model="numpy")


# --- kernels -----------------------------------------------------------------------------

@numba.njit(**_JIT)
def unravel(t, shape, first, index):
  """index[j] = coordinate j of the position t (row-major) over shape[first:]."""
  for d in range(shape.size - 1, first - 1, -1):
    index[d - first] = t % shape[d]
    t //= shape[d]


@numba.njit(**_JIT)
def window_position(index, w, shape, operand_strides, window, strides, low, base, dilation):
  """The flat operand index at window position w (row-major) of the output
  position of coordinates `index`, or -1 (a hole or padding): the element
  at index_d * strides_d + w_d * dilation_d - low_d of the operand dilated
  by `base`."""
  position, rest = 0, w
  for d in range(shape.size - 1, -1, -1):
    k = rest % window[d]
    rest //= window[d]
    p = index[d] * strides[d] + k * dilation[d] - low[d]
    if position >= 0 and p >= 0 and p % base[d] == 0 and p // base[d] < shape[d]:
      position += (p // base[d]) * operand_strides[d]
    else:
      position = -1
  return position


@numba.njit(**_JIT)
def window_table(out_shape, shape, operand_strides, window, strides, low, base, dilation, table):
  """table[t * W + w] = `window_position` at window position w (of W,
  row-major) of output position t (row-major, over `out_shape`)."""
  size = 1
  for d in range(shape.size):
    size *= window[d]
  index = np.zeros(shape.size, np.int64)
  for t in range(table.size // max(size, 1)):
    unravel(t, out_shape, 0, index)
    for w in range(size):
      table[t * size + w] = window_position(index, w, shape, operand_strides, window, strides,
                                            low, base, dilation)


@numba.njit(**_JIT)
def gather_windows(x, table, fill, out):
  """out[i] = x[table[i]], or `fill` where table[i] is -1."""
  for i in range(table.size):
    out[i] = x[table[i]] if table[i] >= 0 else fill


@numba.njit(**_JIT)
def stays_selected(s, e, ge):
  """Whether the selected s stays selected against e: s >= e (ge) or s <= e."""
  return s >= e if ge else s <= e


@numba.njit(**_JIT)
def scatter_add_selected(source, x, table, size, identity, ge, out):
  """out[p] += source[t] (out accumulates) for each window t and the operand
  position p it selects (padding reading `identity`; dropped if selected)."""
  for t in range(source.size):
    chosen, best = -1, identity
    for w in range(size):
      index = table[t * size + w]
      value = x[index] if index >= 0 else identity
      if chosen < 0 or not stays_selected(best, value, ge):
        chosen, best = w, value
    if chosen >= 0 and table[t * size + chosen] >= 0:
      out[table[t * size + chosen]] += source[t]


@numba.njit(**_JIT)
def gather_selected(tangents, x, table, size, identity, ge, zero, out):
  """out[t] = the tangent at the position window t selects, starting from
  (identity, zero) and skipping holes and padding."""
  for t in range(out.size):
    best, tangent = identity, zero
    for w in range(size):
      index = table[t * size + w]
      if index >= 0 and not stays_selected(best, x[index], ge):
        best, tangent = x[index], tangents[index]
    out[t] = tangent


# --- rules -------------------------------------------------------------------------------

def window_geometry(ctx, aval, window_dimensions, window_strides, padding, base_dilation=None,
                    window_dilation=None):
  """The source of the arguments of `window_position` after (index, w)
  for the windows of `aval`, and the window size."""
  rank = aval.ndim
  arguments = (f"{ctx.ints(aval.shape)}, {ctx.ints(c_strides(aval.shape))}, "
               f"{ctx.ints(window_dimensions)}, {ctx.ints(window_strides)}, "
               f"{ctx.ints(lo for lo, _ in padding)}, {ctx.ints(base_dilation or (1,) * rank)}, "
               f"{ctx.ints(window_dilation or (1,) * rank)}")
  return arguments, math.prod(window_dimensions)


def _table(ctx, aval, out_shape, **params):
  """The name of the window table of `aval`'s windows, and the window size."""
  arguments, size = window_geometry(ctx, aval, **params)
  table = new_flat(ctx, math.prod(out_shape) * size, np.int64)
  ctx.emit(f"{ctx.function(window_table)}({ctx.ints(out_shape)}, {arguments}, {table})")
  return table, size


def table_positions(ctx, aval, out_shape, **params):
  """The positions of the windows of `aval` (of `out_shape` positions), read
  from the window table: (the source of the window size, `at`), where
  `at(t)`, in a loop over the output positions t, gives (w) -> the source
  of the flat operand index at window position w of position t (-1: none)."""
  table, size = _table(ctx, aval, out_shape, **params)
  size = ctx.dim(size)
  return size, lambda t: lambda w: f"{table}[{t} * {size} + {w}]"


def _monoid_window(ctx, x, params, acc_dtype, fill):
  """The windows of x gathered as rows of a flat array of `acc_dtype` (holes
  and padding `fill`), the row length, and a new array for the results."""
  (aval,), (out_aval,) = ctx.avals_in, ctx.avals_out
  table, size = _table(ctx, aval, out_aval.shape, **params)
  values = widened(ctx, ctx.flat(x, aval), aval.dtype, math.prod(aval.shape))
  windows = new_flat(ctx, math.prod(out_aval.shape) * size, acc_dtype)
  ctx.emit(f"{ctx.function(gather_windows)}({values}, {table}, "
           f"{ctx.lowering.const(fill, acc_dtype)}, {windows})")
  acc = new_flat(ctx, math.prod(out_aval.shape), acc_dtype)
  return windows, size, acc


def window_sum_run(aval, out_aval, window_dimensions):
  """The runs of a window's elements (row-major) that reduce_window_sum sums
  pairwise (`pairwise_run` of the windows as trailing axes: 0, one at a time)."""
  return pairwise_run(tuple(out_aval.shape) + tuple(window_dimensions),
                      range(aval.ndim, 2 * aval.ndim))


@register(lax.reduce_window_sum_p)
def _reduce_window_sum(ctx, x, **params):
  (aval,), (out_aval,) = ctx.avals_in, ctx.avals_out
  acc_dtype = accumulation_dtype(aval.dtype)
  windows, size, acc = _monoid_window(ctx, x, params, acc_dtype, 0)
  run = window_sum_run(aval, out_aval, params["window_dimensions"])
  sum_rows(ctx, windows, size, run, aval.dtype, acc)
  return stored(ctx, acc, acc_dtype, out_aval)


def window_extremum(largest, dtype):
  """(the fold's function, its identity) of reduce_window_max (`largest`) or min on `dtype`."""
  complex_ = dtypes.is_complex(dtype)
  combine = (S.complex_max if complex_ else S.nan_max) if largest else \
      (S.complex_min if complex_ else S.nan_min)
  return combine, (max_identity if largest else min_identity)(dtype)


def _window_extremum(largest):
  def rule(ctx, x, **params):
    (aval,), (out_aval,) = ctx.avals_in, ctx.avals_out
    dtype = scalar_dtype(aval.dtype)
    combine, identity = window_extremum(largest, aval.dtype)
    windows, size, acc = _monoid_window(ctx, x, params, dtype, identity)
    over_rows(ctx, row_fold, windows, size,
              f"{ctx.lowering.const(identity, dtype)}, {ctx.function(combine)}", acc)
    return stored(ctx, acc, dtype, out_aval)
  return rule


register(lax.reduce_window_max_p)(_window_extremum(True))
register(lax.reduce_window_min_p)(_window_extremum(False))


def select_params(select_prim, dtype):
  """(ge, identity) of a select_prim (ge_p: the max's, le_p: the min's)."""
  ge = select_prim is elementwise.ge_p
  if not ge and select_prim is not elementwise.le_p:
    raise LoweringError(f"the numba backend lowers window selections by ge or le, not "
                        f"{select_prim}")
  return ge, (max_identity if ge else min_identity)(dtype)


@register(lax.select_and_scatter_add_p)
def _select_and_scatter_add(ctx, source, x, *, select_prim, **params):
  (source_aval, aval), (out_aval,) = ctx.avals_in, ctx.avals_out
  ge, identity = select_params(select_prim, aval.dtype)
  table, size = _table(ctx, aval, source_aval.shape, **params)
  values = widened(ctx, ctx.flat(x, aval), aval.dtype, math.prod(aval.shape))
  added = widened(ctx, ctx.flat(source, source_aval), aval.dtype, math.prod(source_aval.shape))
  acc_dtype = accumulation_dtype(aval.dtype)
  acc = new_flat(ctx, math.prod(aval.shape), acc_dtype)
  ctx.emit(f"{acc}[:] = 0")
  ctx.emit(f"{ctx.function(scatter_add_selected)}({added}, {values}, {table}, {ctx.dim(size)}, "
           f"{ctx.lowering.const(identity, scalar_dtype(aval.dtype))}, {ge}, {acc})")
  return stored(ctx, acc, acc_dtype, out_aval)


@register(lax.select_and_gather_add_p)
def _select_and_gather_add(ctx, tangents, x, *, select_prim, **params):
  (tangents_aval, aval), (out_aval,) = ctx.avals_in, ctx.avals_out
  ge, identity = select_params(select_prim, aval.dtype)
  table, size = _table(ctx, aval, out_aval.shape, **params)
  values = widened(ctx, ctx.flat(x, aval), aval.dtype, math.prod(aval.shape))
  out = new_flat(ctx, math.prod(out_aval.shape), storage_dtype(aval.dtype))
  ctx.emit(f"{ctx.function(gather_selected)}({ctx.flat(tangents, tangents_aval)}, {values}, "
           f"{table}, {ctx.dim(size)}, {ctx.lowering.const(identity, scalar_dtype(aval.dtype))}, "
           f"{ge}, {ctx.lowering.const(0, storage_dtype(aval.dtype))}, {out})")
  return ctx.result(out, out_aval)


def named(ctx, source):
  """A name for the array `source` (a view made once, not in each iteration;
  on numba-cuda, made on the host: kernels take arrays)."""
  name = ctx.fresh("f")
  ctx.emit(f"{name} = {source}")
  return name


def no_consts(consts, name):
  if consts:
    raise LoweringError(f"the numba backend lowers {name} only without consts")


def reduce_window_rule(positions):
  """The rule of the generic reduce_window, the positions of its windows
  given by `positions(ctx, aval, out_shape, **params)` (as
  `table_positions`' for this target's own computation of them). A loop
  over the output positions (independent iterations) folding the operand
  elements under each window (row-major, holes and padding skipped) by the
  computation, its jaxpr lowered inline on scalars."""
  def rule(ctx, *operands_and_inits, jaxpr, consts, **params):
    n = len(operands_and_inits) // 2
    operands, inits = operands_and_inits[:n], operands_and_inits[n:]
    avals, out_avals = ctx.avals_in[:n], ctx.avals_out
    no_consts([*consts, *jaxpr.consts], "reduce_window")
    size, at = positions(ctx, avals[0], out_avals[0].shape, **params)
    flats = [named(ctx, ctx.flat(x, aval)) for x, aval in zip(operands, avals)]
    outs = [new_flat(ctx, math.prod(a.shape), storage_dtype(a.dtype)) for a in out_avals]
    t, w, index = ctx.fresh("t"), ctx.fresh("w"), ctx.fresh("p")
    with ctx.lowering.elements(t, ctx.dim(math.prod(out_avals[0].shape))):
      position = at(t)
      acc = [ctx.fresh("acc") for _ in range(n)]
      ctx.emit(f"{''.join(a + ', ' for a in acc)}= {''.join(v + ', ' for v in inits)}")
      with ctx.lowering.block(f"for {w} in range({size}):"):
        ctx.emit(f"{index} = {position(w)}")
        with ctx.lowering.block(f"if {index} >= 0:"):
          elements = [read_element(f"{flat}[{index}]", aval.dtype)
                      for flat, aval in zip(flats, avals)]
          new = lower_jaxpr(ctx.lowering, jaxpr.jaxpr, [*acc, *elements])
          ctx.emit(f"{''.join(a + ', ' for a in acc)}= {''.join(v + ', ' for v in new)}")
      for out, a, aval in zip(outs, acc, out_avals):
        ctx.emit(f"{out}[{t}] = {element_to_store(a, aval.dtype)}")
    return [ctx.result(out, aval) for out, aval in zip(outs, out_avals)]
  return rule


register(lax.reduce_window_p)(reduce_window_rule(table_positions))


def select_in_window(ctx, size, position, flat, aval, init, select_jaxpr):
  """Writes select_and_scatter's selection in a window (`size` and its
  `position` function as `table_positions` gives them) of the
  operand `flat` (of `aval`): its first operand element, replaced by each
  later one e (row-major, padding skipped) where the select jaxpr of
  (selected, e), lowered inline, is false. Returns the name of the selected
  flat operand index (-1: none)."""
  w, index, chosen, best = (ctx.fresh(p) for p in ("w", "p", "chosen", "best"))
  ctx.emit(f"{chosen}, {best} = -1, {init}")
  with ctx.lowering.block(f"for {w} in range({size}):"):
    ctx.emit(f"{index} = {position(w)}")
    with ctx.lowering.block(f"if {index} >= 0:"):
      e = ctx.fresh("e")
      ctx.emit(f"{e} = {read_element(f'{flat}[{index}]', aval.dtype)}")
      with ctx.lowering.block(f"if {chosen} < 0:"):
        ctx.emit(f"{chosen}, {best} = {index}, {e}")
      with ctx.lowering.block("else:"):
        (keep,) = lower_jaxpr(ctx.lowering, select_jaxpr.jaxpr, [best, e])
        with ctx.lowering.block(f"if not {keep}:"):
          ctx.emit(f"{chosen}, {best} = {index}, {e}")
  return chosen


@register(lax.select_and_scatter_p)
def _select_and_scatter(ctx, x, source, init, *, select_jaxpr, select_consts, scatter_jaxpr,
                        scatter_consts, **params):
  """A loop over the windows in order: the selection (`select_in_window`),
  then the selected position updated by the scatter jaxpr, lowered inline."""
  (aval, source_aval, _), (out_aval,) = ctx.avals_in, ctx.avals_out
  no_consts([*select_consts, *scatter_consts, *select_jaxpr.consts, *scatter_jaxpr.consts],
            "select_and_scatter")
  size, at = table_positions(ctx, aval, source_aval.shape, **params)
  flat, added = named(ctx, ctx.flat(x, aval)), named(ctx, ctx.flat(source, source_aval))
  out = new_flat(ctx, math.prod(aval.shape), storage_dtype(aval.dtype))
  ctx.emit(f"{out}[:] = {element_to_store(init, aval.dtype)}")
  t = ctx.fresh("t")
  with ctx.lowering.block(f"for {t} in range({ctx.dim(math.prod(source_aval.shape))}):"):
    chosen = select_in_window(ctx, size, at(t), flat, aval, init, select_jaxpr)
    with ctx.lowering.block(f"if {chosen} >= 0:"):
      current = ctx.fresh("e")
      ctx.emit(f"{current} = {read_element(f'{out}[{chosen}]', aval.dtype)}")
      (new,) = lower_jaxpr(ctx.lowering, scatter_jaxpr.jaxpr,
                           [current, read_element(f"{added}[{t}]", aval.dtype)])
      ctx.emit(f"{out}[{chosen}] = {element_to_store(new, aval.dtype)}")
  return ctx.result(out, out_aval)
