"""cond, while and scan on the numba-cuda backend.

A loop whose every step is elementwise over its arrays of one shape (each
element of the new arrays a function of the same element of the old ones
and of rank-0 values, as are its rank-0 values and predicate of rank-0
values alone) runs on the device: one kernel, a thread an element, each
thread running the whole loop on its elements (`_while`, `_scan`), the
rank-0 values computed by every thread alike and written once.

Any other runs by the CPU rules (numba_backend/rules/control_flow.py) in the
host program: its branches and loops are Python's; each iteration launches
the kernels of the body and reads on the host the rank-0 values it
branches on (the predicate), as XLA's loops on a GPU read theirs. The CPU
rules' copies and masks between arrays are kernels here (`HOST_FUNCTIONS`)."""

import math

import numpy as np
from numba import cuda

from refimpl.core import physical_aval
from refimpl.jaxpr import Literal
from refimpl.lax.control_flow.loops import _split as split_scan_operands, scan_p
from refimpl.lax.control_flow.while_loop import _split as split_while_operands, while_p
from numba_backend.cuda import device as G
from numba_backend.cuda.lower import CUDA_KEY_RULES, CUDA_RULES, HOST_FUNCTIONS, named
from numba_backend.lower import KEY_RULES, RULES, element_of, element_to_store, \
    evaluated_equations, inlines_consts, per_element, read_element
from numba_backend.rules import control_flow as cpu


@cuda.jit(cache=True)
def _store_row(dst, offset, src):
  for k in range(cuda.grid(1), src.size, cuda.gridsize(1)):
    dst[offset + k] = src[k]


def store_row(dst, offset, src):
  """`control_flow.store_row` on device arrays: dst[offset + k] = src[k]."""
  G.launch(_store_row, src.size, dst, offset, src)


@cuda.jit(cache=True)
def _mask_rows(pred, new, old, out):
  inner = out.size // pred.size
  for k in range(cuda.grid(1), out.size, cuda.gridsize(1)):
    out[k] = new[k] if pred[k // inner] else old[k]


def mask_rows(pred, new, old, out):
  """`control_flow.mask_rows` on device arrays: out[k] = new[k] where pred
  holds for row k // (out.size / pred.size), else old[k]."""
  if out.size:
    G.launch(_mask_rows, out.size, pred, new, old, out)


@cuda.jit(cache=True)
def _mark_any(pred, flag):
  for k in range(cuda.grid(1), pred.size, cuda.gridsize(1)):
    if pred[k]:
      flag[0] = True


def any_true(pred):
  """`control_flow.any_true` on a device array: whether some element of the
  bool array `pred` is true (read on the host; False while programs
  compile to PTX, whose kernels do not run)."""
  flag = G.full(1, False, np.bool_)
  if pred.size:
    G.launch(_mark_any, pred.size, pred, flag)
  return bool(G.to_host(flag)[0])


HOST_FUNCTIONS.update({cpu.store_row: store_row, cpu.mask_rows: mask_rows,
                       cpu.any_true: any_true})


# --- loops run by each thread on its elements ----------------------------------------------

def _steps(ctx, closed, shape):
  """(inputs, equations, outputs) of the ClosedJaxpr `closed` as
  `lower_jaxpr` evaluates it, where each of its equations is elementwise
  over arrays of `shape` (`per_element`) and it has no consts (nor the
  calls it inlines: checked first, so that none is passed to the program
  for nothing); else None."""
  if closed.consts or inlines_consts(ctx.lowering, closed.jaxpr):
    return None
  eqns, outvars = evaluated_equations(ctx.lowering, closed.jaxpr, {})
  if not all(per_element(eqn, shape) for eqn in eqns):
    return None
  return closed.jaxpr.invars, eqns, outvars


def _common_shape(avals):
  """The one shape (with elements) of the arrays among `avals`, where they
  have one and none is a key array; else None."""
  shapes = {a.shape for a in avals if a.shape}
  if len(shapes) != 1 or any(physical_aval(a) != a for a in avals):
    return None
  (shape,) = shapes
  return shape if math.prod(shape) else None


def _evaluate(ctx, steps, values):
  """Statements evaluating `steps` (`_steps`') on the scalars named
  `values`: the names of its outputs."""
  invars, eqns, outvars = steps
  env = dict(zip(invars, values))

  def read(atom):
    return ctx.lowering.const(atom.val, atom.aval.dtype) if isinstance(atom, Literal) else env[atom]

  for eqn in eqns:
    env[eqn.outvars[0]] = element_of(ctx.lowering, eqn, [read(a) for a in eqn.invars])
  return [read(a) for a in outvars]


def _flats(ctx, values, avals):
  """Flat views of the arrays among `values` (of `avals`); rank-0 values as they are."""
  return [named(ctx, ctx.flat(v, a)) if a.shape else v for v, a in zip(values, avals)]


def _scalar(ctx, expr, aval):
  """A new variable holding `expr` as a scalar of aval's dtype."""
  name = ctx.fresh("s")
  ctx.emit(f"{name} = {ctx.lowering.scalar(expr, aval.dtype)}")
  return name


def _element(ctx, value, aval, position):
  """A scalar of the value named `value`: itself where rank 0, else its
  element at `position` (source) of its flat view `value`."""
  if not aval.shape:
    return _scalar(ctx, value, aval)
  return _scalar(ctx, read_element(f"{value}[{position}]", aval.dtype), aval)


def _assign(ctx, names, values, avals):
  """names = values (at once), each cast to its aval's scalar type."""
  if names:
    ctx.emit(f"{', '.join(names)}, = "
             f"{', '.join(ctx.lowering.scalar(v, a.dtype) for v, a in zip(values, avals))},")


def _store(ctx, out, value, aval, position, k):
  """out[position] = value (stored): by every thread where `aval` has a
  shape, else by the first (k its element)."""
  store = f"{out}[{position}] = {element_to_store(value, aval.dtype)}"
  ctx.emit(store if aval.shape else f"if {k} == 0: {store}")


def _outputs(ctx, avals):
  """New arrays for the results `avals` (rank 0 too): (their names, their flat views')."""
  outs = [ctx.empty_flat(aval) for aval in avals]
  return [name for name, _ in outs], [named(ctx, flat) for _, flat in outs]


def _while(ctx, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  """The CPU rule, or, where each step is elementwise over arrays of one
  shape and the predicate has no axes, a kernel of a thread an element
  running the loop on its elements."""
  shape = _common_shape(ctx.avals_in)
  cond = shape and not cond_jaxpr.out_avals[0].shape and _steps(ctx, cond_jaxpr, shape)
  body = cond and _steps(ctx, body_jaxpr, shape)
  if not body:
    return RULES[while_p](ctx, *args, cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr,
                          cond_nconsts=cond_nconsts, body_nconsts=body_nconsts)
  flats = _flats(ctx, args, ctx.avals_in)
  outs, out_flats = _outputs(ctx, ctx.avals_out)
  k = ctx.fresh("k")
  with ctx.lowering.elements(k, ctx.dim(math.prod(shape))):
    values = [_element(ctx, a, aval, k) for a, aval in zip(flats, ctx.avals_in)]
    cconsts, bconsts, carry = split_while_operands(values, cond_nconsts, body_nconsts)
    with ctx.lowering.block("while True:"):
      (pred,) = _evaluate(ctx, cond, [*cconsts, *carry])
      ctx.emit(f"if not {pred}: break")
      _assign(ctx, carry, _evaluate(ctx, body, [*bconsts, *carry]), ctx.avals_out)
    for out, value, aval in zip(out_flats, carry, ctx.avals_out):
      _store(ctx, out, value, aval, k if aval.shape else 0, k)
  return [ctx.result(out, aval) for out, aval in zip(outs, ctx.avals_out)]


def _scan(ctx, *args, reverse, length, jaxpr, num_consts, num_carry, linear, unroll,
          _split_transpose):
  """The CPU rule, or, where each step is elementwise over arrays of one
  shape (its xs and ys rows of that shape or rank 0), a kernel of a thread
  an element running the loop on its elements."""
  x_avals = [a.update(shape=a.shape[1:]) for a in ctx.avals_in[num_consts + num_carry:]]
  y_avals = [a.update(shape=a.shape[1:]) for a in ctx.avals_out[num_carry:]]
  shape = _common_shape([*ctx.avals_in[:num_consts + num_carry], *x_avals, *y_avals])
  steps = shape and _steps(ctx, jaxpr, shape)
  if not steps:
    return RULES[scan_p](ctx, *args, reverse=reverse, length=length, jaxpr=jaxpr,
                         num_consts=num_consts, num_carry=num_carry, linear=linear,
                         unroll=unroll, _split_transpose=_split_transpose)
  flats = _flats(ctx, args, ctx.avals_in)
  outs, out_flats = _outputs(ctx, ctx.avals_out)
  k, step, i = ctx.fresh("k"), ctx.fresh("j"), ctx.fresh("i")
  size, count = ctx.dim(math.prod(shape)), ctx.dim(length)
  carry_avals = ctx.avals_out[:num_carry]
  with ctx.lowering.elements(k, size):
    fixed = [_element(ctx, a, aval, k) for a, aval in zip(flats[:num_consts + num_carry],
                                                           ctx.avals_in)]
    consts, carry = fixed[:num_consts], fixed[num_consts:]
    with ctx.lowering.block(f"for {step} in range({count}):"):
      ctx.emit(f"{i} = {count} - 1 - {step}" if reverse else f"{i} = {step}")

      def row(aval):   # the position of an x's or a y's element at step i
        return f"{i} * {size} + {k}" if aval.shape else i

      xs = [_scalar(ctx, read_element(f"{x}[{row(aval)}]", aval.dtype), aval)
            for x, aval in zip(flats[num_consts + num_carry:], x_avals)]
      results = _evaluate(ctx, steps, [*consts, *carry, *xs])
      for out, value, aval in zip(out_flats[num_carry:], results[num_carry:], y_avals):
        _store(ctx, out, value, aval, row(aval), k)
      _assign(ctx, carry, results[:num_carry], carry_avals)
    for out, value, aval in zip(out_flats, carry, carry_avals):
      _store(ctx, out, value, aval, k if aval.shape else 0, k)
  return [ctx.result(out, aval) for out, aval in zip(outs, ctx.avals_out)]


CUDA_RULES.update({while_p: _while, scan_p: _scan})
CUDA_KEY_RULES.update({while_p: KEY_RULES[while_p], scan_p: KEY_RULES[scan_p]})
