"""The windowed reductions and selections on the numba-cuda backend: the CPU
rules' orders (numba_backend/rules/windows.py), each window's positions
computed on the device from the thread's index rather than read from a
table (`window_position`, the CPU's table entry, from the coordinates of
the output position, which a thread keeps in a local array).

A thread computes one output element: reduce_window_max and min fold its
window from the identity in row-major order (holes and padding read the
identity), the generic reduce_window folds its operand elements by the
computation inlined (`reduce_window_rule`, the CPU's loop as a kernel),
select_and_gather_add keeps the first selected tangent. reduce_window_sum
gathers the windows (a thread an element, holes and padding zero) and sums
each by this target's reduce_sum (NumPy's order: pairwise runs, as the CPU's
`sum_rows`).

select_and_scatter_add and select_and_scatter select in each window (a
thread a window, as the CPU does) and then give a thread to each operand
element, which walks the windows holding it in row-major order
(`covering_window`) and applies the source values of those that selected it
in that order, from zero or the init value: the reference adds (or
scatters) the windows' values in row-major order of the windows, and for
one position that is the order of the windows selecting it, so each result
has the reference's sequence of operations, deterministically and in
parallel (one thread writing every window's value in order would keep it
too, serially)."""

import math

import numpy as np
from numba import cuda

from refimpl.core import ShapedArray
from refimpl.jaxpr import JaxprEqn, Var
from refimpl.lax import reductions, windows as lax
from refimpl.lax.rules import accumulation_dtype
from numba_backend import lower
from numba_backend.cuda.kernels import device_version
from numba_backend.cuda.lower import CUDA_RULES, named
from numba_backend.lower import (RuleContext, element_to_store, lower_jaxpr, read_element,
                                 scalar_dtype, storage_dtype)
from numba_backend.rules import windows as cpu
from numba_backend.rules.reductions import new_flat, stored


unravel = device_version(cpu.unravel, __name__)
window_position = device_version(cpu.window_position, __name__)


@cuda.jit(device=True)
def covering_window(p, c, shape, out_shape, window, strides, low):
  """(the number of windows (undilated, over an undilated operand of
  `shape`) that hold the operand element of flat index p, the flat index
  in the output of the c-th of them in row-major order): window i holds
  the padded positions i_d * strides_d + [0, window_d) along each dimension."""
  count, t, rest, rest_c, out_stride = 1, 0, p, c, 1
  for d in range(shape.size - 1, -1, -1):
    q = rest % shape[d] + low[d]   # the element's position in the padded operand
    rest //= shape[d]
    first = max(0, -((window[d] - 1 - q) // strides[d]))
    last = min(out_shape[d] - 1, q // strides[d])
    n = max(0, last - first + 1)
    count *= n
    if n > 0:
      t += (first + rest_c % n) * out_stride
      rest_c //= n
    out_stride *= out_shape[d]
  return count, t


def _positions(ctx, aval, out_shape, **params):
  """The positions of the windows of `aval` (of `out_shape` positions) as
  the CPU's `table_positions` gives them, computed by `window_position`
  where they are read: `at(t)` writes the coordinates of output position t
  into a local array."""
  arguments, size = cpu.window_geometry(ctx, aval, **params)
  shape, position = ctx.ints(out_shape), ctx.function(window_position)

  def at(t):
    index = ctx.fresh("x")
    ctx.emit(f"{index} = cuda.local.array({max(aval.ndim, 1)}, np.int64)")
    ctx.emit(f"{ctx.function(unravel)}({t}, {shape}, 0, {index})")
    return lambda w: f"{position}({index}, {w}, {arguments})"

  return ctx.dim(size), at


def _check_scalar(jaxpr, name):
  """Raises LoweringError where the computation `jaxpr` has an equation
  that is not elementwise (nor a call of such equations, inlined): a
  kernel runs only scalar statements."""
  for eqn in jaxpr.eqns:
    param = eqn.primitive.call_jaxpr_param
    if param is not None and eqn.primitive not in CUDA_RULES:
      _check_scalar(eqn.params[param].jaxpr, name)
    elif eqn.primitive not in lower.ELEMENTWISE_RULES or eqn.primitive in CUDA_RULES:
      raise lower.LoweringError(
          f"the numba-cuda backend lowers {name} only with a computation of elementwise "
          f"operations, not '{eqn.primitive.name}' (in equation: {eqn})")


def _sums(ctx, rows, count, size, dtype):
  """The name of the flat array of the sums of the `count` rows of `size`
  elements of `rows` (a flat array of `dtype`), by this target's reduce_sum."""
  eqn = JaxprEqn([Var(ShapedArray((count, size), dtype))], [Var(ShapedArray((count,), dtype))],
                 reductions.reduce_sum_p, {"axes": (1,)})
  table = named(ctx, f"{rows}.reshape({ctx.shape((count, size))})")
  return CUDA_RULES[reductions.reduce_sum_p](RuleContext(ctx.lowering, eqn), table, axes=(1,))


def _reduce_window_sum(ctx, x, **params):
  """The windows gathered (holes and padding 0) in the accumulation dtype,
  their rows summed as the CPU's (its `window_sum_run` is reduce_sum's run
  over the last axis), rounded once."""
  (aval,), (out_aval,) = ctx.avals_in, ctx.avals_out
  acc_dtype = accumulation_dtype(aval.dtype)
  size, at = _positions(ctx, aval, out_aval.shape, **params)
  count, window = math.prod(out_aval.shape), math.prod(params["window_dimensions"])
  flat, zero = cpu.named(ctx, ctx.flat(x, aval)), ctx.lowering.const(0, acc_dtype)
  gathered, k, p = new_flat(ctx, count * window, acc_dtype), ctx.fresh("k"), ctx.fresh("p")
  with ctx.lowering.elements(k, ctx.dim(count * window)):
    ctx.emit(f"{p} = {at(f'{k} // {size}')(f'{k} % {size}')}")
    ctx.emit(f"{gathered}[{k}] = {read_element(f'{flat}[{p}]', aval.dtype)} if {p} >= 0 "
             f"else {zero}")
  return stored(ctx, _sums(ctx, gathered, count, window, acc_dtype), acc_dtype, out_aval)


def _window_extremum(largest):
  def rule(ctx, x, **params):
    """A thread an output element folding its window from the identity in
    row-major order (holes and padding read the identity)."""
    (aval,), (out_aval,) = ctx.avals_in, ctx.avals_out
    dtype = scalar_dtype(aval.dtype)
    combine, identity = cpu.window_extremum(largest, aval.dtype)
    size, at = _positions(ctx, aval, out_aval.shape, **params)
    flat, init = cpu.named(ctx, ctx.flat(x, aval)), ctx.lowering.const(identity, dtype)
    count, combine = math.prod(out_aval.shape), ctx.function(combine)
    acc = new_flat(ctx, count, dtype)
    t, w, p, value = ctx.fresh("t"), ctx.fresh("w"), ctx.fresh("p"), ctx.fresh("a")
    with ctx.lowering.elements(t, ctx.dim(count)):
      position = at(t)
      ctx.emit(f"{value} = {init}")
      with ctx.lowering.block(f"for {w} in range({size}):"):
        ctx.emit(f"{p} = {position(w)}")
        element = read_element(f"{flat}[{p}]", aval.dtype)
        ctx.emit(f"{value} = {combine}({value}, {element} if {p} >= 0 else {init})")
      ctx.emit(f"{acc}[{t}] = {value}")
    return stored(ctx, acc, dtype, out_aval)
  return rule


def _select_and_gather_add(ctx, tangents, x, *, select_prim, **params):
  """A thread an output element: from (identity, 0), each operand element
  of the window in row-major order (holes and padding skipped) that does
  not leave the selected one selected takes its place with its tangent."""
  (tangents_aval, aval), (out_aval,) = ctx.avals_in, ctx.avals_out
  ge, identity = cpu.select_params(select_prim, aval.dtype)
  size, at = _positions(ctx, aval, out_aval.shape, **params)
  values = cpu.named(ctx, ctx.flat(x, aval))
  tangents = cpu.named(ctx, ctx.flat(tangents, tangents_aval))
  init = ctx.lowering.const(identity, scalar_dtype(aval.dtype))
  zero, stays = ctx.lowering.const(0, storage_dtype(aval.dtype)), ctx.function(cpu.stays_selected)
  count = math.prod(out_aval.shape)
  out = new_flat(ctx, count, storage_dtype(aval.dtype))
  t, w, p, e, best, tangent = (ctx.fresh(k) for k in ("t", "w", "p", "e", "b", "g"))
  with ctx.lowering.elements(t, ctx.dim(count)):
    position = at(t)
    ctx.emit(f"{best}, {tangent} = {init}, {zero}")
    with ctx.lowering.block(f"for {w} in range({size}):"):
      ctx.emit(f"{p} = {position(w)}")
      with ctx.lowering.block(f"if {p} >= 0:"):
        ctx.emit(f"{e} = {read_element(f'{values}[{p}]', aval.dtype)}")
        with ctx.lowering.block(f"if not {stays}({best}, {e}, {ge}):"):
          ctx.emit(f"{best}, {tangent} = {e}, {tangents}[{p}]")
    ctx.emit(f"{out}[{t}] = {tangent}")
  return ctx.result(out, out_aval)


def _selected(ctx, aval, source_aval, params, select):
  """A new int64 array of the flat operand index each window selects (-1:
  none, or padding): a thread a window t, `select(size, position)`
  (`_positions`' size and `at(t)`) writing its selection and returning
  its name."""
  size, at = _positions(ctx, aval, source_aval.shape, **params)
  count = math.prod(source_aval.shape)
  chosen, t = new_flat(ctx, count, np.int64), ctx.fresh("t")
  with ctx.lowering.elements(t, ctx.dim(count)):
    ctx.emit(f"{chosen}[{t}] = {select(size, at(t))}")
  return chosen


def _scatter_selected(ctx, chosen, aval, source_aval, params, out, start, update):
  """A thread an operand element p: out[p] = the fold from `start` (a
  source) of `update(acc, t)` (writing the statements, returning the new
  value's name) over the windows t that selected p, in row-major order."""
  shape, out_shape = ctx.ints(aval.shape), ctx.ints(source_aval.shape)
  low = ctx.ints(lo for lo, _ in params["padding"])
  geometry = (f"{shape}, {out_shape}, {ctx.ints(params['window_dimensions'])}, "
              f"{ctx.ints(params['window_strides'])}, {low}")
  covering = ctx.function(covering_window)
  p, n, c, t, acc = (ctx.fresh(k) for k in ("p", "n", "c", "t", "a"))
  with ctx.lowering.elements(p, ctx.dim(math.prod(aval.shape))):
    ctx.emit(f"{acc} = {start}")
    ctx.emit(f"{n}, {t} = {covering}({p}, 0, {geometry})")
    with ctx.lowering.block(f"for {c} in range({n}):"):
      ctx.emit(f"{t} = {covering}({p}, {c}, {geometry})[1]")
      with ctx.lowering.block(f"if {chosen}[{t}] == {p}:"):
        ctx.emit(f"{acc} = {update(acc, t)}")
    ctx.emit(f"{out}[{p}] = {acc}")


def _select_and_scatter_add(ctx, source, x, *, select_prim, **params):
  """Each window's selection as the CPU's `scatter_add_selected` makes it
  (padding takes part with the identity; a selection there is dropped),
  then each operand element's sum, from zero in the accumulation dtype, of
  the source values of the windows selecting it (`_scatter_selected`)."""
  (source_aval, aval), (out_aval,) = ctx.avals_in, ctx.avals_out
  ge, identity = cpu.select_params(select_prim, aval.dtype)
  values, added = cpu.named(ctx, ctx.flat(x, aval)), cpu.named(ctx, ctx.flat(source, source_aval))
  init = ctx.lowering.const(identity, scalar_dtype(aval.dtype))
  stays = ctx.function(cpu.stays_selected)

  def select(size, position):
    w, p, e, best, at = (ctx.fresh(k) for k in ("w", "p", "e", "b", "s"))
    ctx.emit(f"{best}, {at} = {init}, -1")
    with ctx.lowering.block(f"for {w} in range({size}):"):
      ctx.emit(f"{p} = {position(w)}")
      ctx.emit(f"{e} = {read_element(f'{values}[{p}]', aval.dtype)} if {p} >= 0 else {init}")
      with ctx.lowering.block(f"if {w} == 0 or not {stays}({best}, {e}, {ge}):"):
        ctx.emit(f"{best}, {at} = {e}, {p}")
    return at

  chosen = _selected(ctx, aval, source_aval, params, select)
  acc_dtype = accumulation_dtype(aval.dtype)
  acc = new_flat(ctx, math.prod(aval.shape), acc_dtype)
  _scatter_selected(ctx, chosen, aval, source_aval, params, acc,
                    ctx.lowering.const(0, acc_dtype),
                    lambda a, t: f"{a} + {read_element(f'{added}[{t}]', aval.dtype)}")
  return stored(ctx, acc, acc_dtype, out_aval)


def _select_and_scatter(ctx, x, source, init, *, select_jaxpr, select_consts, scatter_jaxpr,
                        scatter_consts, **params):
  """Each window's selection by the select jaxpr (`select_in_window`, the
  CPU's), then each operand element folded from the init value by the
  scatter jaxpr over the source values of the windows selecting it
  (`_scatter_selected`), its value stored and read back at each step as
  the CPU's loop over the windows does."""
  (aval, source_aval, _), (out_aval,) = ctx.avals_in, ctx.avals_out
  cpu.no_consts([*select_consts, *scatter_consts, *select_jaxpr.consts, *scatter_jaxpr.consts],
                "select_and_scatter")
  _check_scalar(select_jaxpr.jaxpr, "select_and_scatter")
  _check_scalar(scatter_jaxpr.jaxpr, "select_and_scatter")
  flat, added = cpu.named(ctx, ctx.flat(x, aval)), cpu.named(ctx, ctx.flat(source, source_aval))
  chosen = _selected(ctx, aval, source_aval, params, lambda size, position:
                     cpu.select_in_window(ctx, size, position, flat, aval, init, select_jaxpr))
  out = new_flat(ctx, math.prod(aval.shape), storage_dtype(aval.dtype))

  def update(acc, t):
    current = read_element(acc, aval.dtype)
    (new,) = lower_jaxpr(ctx.lowering, scatter_jaxpr.jaxpr,
                         [current, read_element(f"{added}[{t}]", aval.dtype)])
    return element_to_store(new, aval.dtype)

  _scatter_selected(ctx, chosen, aval, source_aval, params, out,
                    element_to_store(init, aval.dtype), update)
  return ctx.result(out, out_aval)


_generic_reduce_window = cpu.reduce_window_rule(_positions)


def _reduce_window(ctx, *operands_and_inits, jaxpr, **params):
  """The CPU's loop over the output positions (`reduce_window_rule`) as a
  kernel, a thread an output position."""
  _check_scalar(jaxpr.jaxpr, "reduce_window")
  return _generic_reduce_window(ctx, *operands_and_inits, jaxpr=jaxpr, **params)

CUDA_RULES.update({
    lax.reduce_window_sum_p: _reduce_window_sum, lax.reduce_window_max_p: _window_extremum(True),
    lax.reduce_window_min_p: _window_extremum(False), lax.reduce_window_p: _reduce_window,
    lax.select_and_gather_add_p: _select_and_gather_add,
    lax.select_and_scatter_add_p: _select_and_scatter_add,
    lax.select_and_scatter_p: _select_and_scatter})
