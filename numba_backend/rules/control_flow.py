"""Lowering rules of cond, while and scan (refimpl/lax/control_flow/):
native branches and loops in the program, their sub-jaxprs written inline
(`calls.inline`), carried values in variables of one type across
iterations (arrays of their storage dtype and rank, scalars cast to their
scalar dtype; key arrays as their physical data), so that no Python runs between iterations."""

import math

import numpy as np

from refimpl.core import physical_aval
from refimpl.lax.control_flow.conditionals import cond_p
from refimpl.lax.control_flow.loops import _split as split_scan_operands, scan_p
from refimpl.lax.control_flow.while_loop import _split as split_while_operands, while_p
from refimpl.jaxpr import Var
from numba_backend.kernels import kernel_jit
from numba_backend.lower import element_to_store, fusible, read_element, register, \
    register_for_keys, scalar_dtype, storage_dtype, type_source, writes_over
from numba_backend.rules.calls import inline


def _assign(ctx, names, values, avals):
  """`name = value` for each, a scalar cast to its scalar dtype (so that
  Numba types every assignment of the variable alike)."""
  for name, value, aval in zip(names, values, avals):
    aval = physical_aval(aval)
    if aval.shape:
      ctx.emit(f"{name} = {value}")
    else:
      ctx.emit(f"{name} = {type_source(scalar_dtype(aval.dtype))}({value})")


def _variables(ctx, values, avals):
  """New variables holding `values`, their names."""
  names = [ctx.fresh("w") for _ in values]
  _assign(ctx, names, values, avals)
  return names


_SMALL_CARRY = 1024
"""The elements in all of a loop's array carries (those not written over
by their loop) up to which they are copied in place after each iteration
rather than rebound (`_carried`)."""


def _carried(ctx, body, carry, avals, first, reuse=True):
  """How the variables `carry` (of physical `avals`) of a loop whose body is
  `body` (a ClosedJaxpr whose first outputs are the new carry, its inputs
  from position `first` the carry) take the new carry: (`destinations`
  ({i: name}) for `inline`, `update(new)`, which emits the statements
  giving them the values named `new`). Without `reuse` (a new carry the
  loop computes from the body's outputs), they are rebound to the values.

  Where the body computes each array of the new carry in a fused loop (a
  new array each time), the variables keep arrays of their own (copies of
  the initial values), since rebinding an array variable costs Numba's
  reference counting (about 10 ns an iteration):
  - where that loop may write the new value over the old
    (`lower.writes_over`), it writes into the carry's own array;
  - the other carries, if small (at most _SMALL_CARRY elements in all):
    into one array each, made before the loop and copied into the carry's
    own array after each iteration;
  - larger ones: into two arrays each, made before the loop, by turns, the
    variables rebound to the one written. A carry then never holds an array
    written at the iteration before last (no carry can be a view of
    another), so the array written holds no value still read.
  Otherwise the variables are rebound to the body's outputs."""
  outs = body.jaxpr.outvars[:len(avals)]
  arrays = [k for k, aval in enumerate(avals) if aval.shape]
  producers = {v: eqn for eqn in body.jaxpr.eqns for v in eqn.outvars}
  if not reuse or not arrays or len({outs[k] for k in arrays}) < len(arrays) or not all(
      isinstance(outs[k], Var) and outs[k] in producers and fusible(producers[outs[k]])
      for k in arrays):
    return {}, lambda new: _assign(ctx, carry, new, avals)
  over = [k for k in arrays if writes_over(body.jaxpr, k, first + k)]
  rest = [k for k in arrays if k not in over]
  for k in over:
    ctx.emit(f"{carry[k]} = {ctx.lowering.copy(carry[k])}")
  destinations = {k: carry[k] for k in over}
  rebound = [k for k in range(len(avals)) if k not in over]
  if sum(math.prod(avals[k].shape) for k in rest) <= _SMALL_CARRY:
    copies = []   # (the carry's flat array, the written one's), views made once
    for k in rest:
      destinations[k] = ctx.empty(avals[k])
      ctx.emit(f"{carry[k]} = {ctx.lowering.copy(carry[k])}")
      copies.append(tuple(_flat_once(ctx, name, avals[k]) for name in (carry[k], destinations[k])))
    scalars = [k for k in range(len(avals)) if k not in arrays]

    def copy_back(new):
      _assign(ctx, [carry[k] for k in scalars], [new[k] for k in scalars],
              [avals[k] for k in scalars])
      for own, new_value in copies:
        ctx.emit(f"{ctx.function(store_row)}({own}, 0, {new_value})")
    return destinations, copy_back
  first_arrays = [ctx.empty(avals[k]) for k in rest]
  second_arrays = [ctx.empty(avals[k]) for k in rest]
  destinations.update(zip(rest, first_arrays))
  swap = (f"{', '.join(first_arrays + second_arrays)} = "
          f"{', '.join(second_arrays + first_arrays)}")

  def rebind(new):
    _assign(ctx, [carry[k] for k in rebound], [new[k] for k in rebound],
            [avals[k] for k in rebound])
    ctx.emit(swap)
  return destinations, rebind


def _flat_once(ctx, name, aval):
  """A variable holding a flat view of the array `name`."""
  flat = ctx.fresh("f")
  ctx.emit(f"{flat} = {ctx.flat(name, aval)}")
  return flat


@register(cond_p)
@register_for_keys(cond_p)
def _cond(ctx, index, *operands, branches):
  """Branch `clamp(index, 0, len(branches) - 1)` evaluated on the operands."""
  avals = ctx.avals_out
  outs = [ctx.fresh("w") for _ in avals]
  i = ctx.fresh("i")
  ctx.emit(f"{i} = min(max(np.int64({index}), 0), {len(branches) - 1})")
  for k, branch in enumerate(branches):
    if k == len(branches) - 1:
      header = "else:" if k else "if True:"
    else:
      header = f"{'if' if k == 0 else 'elif'} {i} == {k}:"
    with ctx.lowering.block(header):
      _assign(ctx, outs, inline(ctx, branch, operands), avals)
  return outs


@kernel_jit
def any_true(pred):
  """Whether some element of the bool array `pred` is true."""
  for k in range(pred.size):
    if pred[k]:
      return True
  return False


@kernel_jit
def mask_rows(pred, new, old, out):
  """out[k] = new[k] where pred holds for row k // (size / pred.size), else
  old[k] (flat arrays; pred's shape a prefix of the others')."""
  inner = out.size // pred.size if pred.size else 0
  for k in range(out.size):
    out[k] = new[k] if pred[k // inner] else old[k]


@register(while_p)
@register_for_keys(while_p)
def _while(ctx, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  """carry = body(*bconsts, *carry) while cond(*cconsts, *carry) holds (a
  predicate with axes: while any element does, the rows where it is false
  keep their values)."""
  cconsts, bconsts, init = split_while_operands(args, cond_nconsts, body_nconsts)
  avals = [physical_aval(a) for a in ctx.avals_out]
  carry = _variables(ctx, init, avals)
  (pred_aval,) = cond_jaxpr.out_avals
  # (a predicate with axes: the new carry is the body's outputs masked)
  destinations, update = _carried(ctx, body_jaxpr, carry, avals, body_nconsts,
                                  reuse=not pred_aval.shape)
  with ctx.lowering.block("while True:"):
    (pred,) = inline(ctx, cond_jaxpr, [*cconsts, *carry])
    if pred_aval.shape:
      ctx.emit(f"if not {ctx.function(any_true)}({ctx.flat(pred, pred_aval)}): break")
    else:
      ctx.emit(f"if not {pred}: break")
    new = inline(ctx, body_jaxpr, [*bconsts, *carry], destinations=destinations)
    if pred_aval.shape:
      masked = []
      for n, c, aval in zip(new, carry, avals):
        out, out_flat = ctx.empty_flat(aval)
        ctx.emit(f"{ctx.function(mask_rows)}({ctx.flat(pred, pred_aval)}, {ctx.flat(n, aval)}, "
                 f"{ctx.flat(c, aval)}, {out_flat})")
        masked.append(out)
      new = masked
    update(new)
  return carry


@kernel_jit
def store_row(dst, offset, src):
  """dst[offset + k] = src[k] for every k (flat arrays), by unsigned indices
  (so that the loop vectorizes: signed ones could be negative, which wrap)."""
  start = np.uint64(offset)
  for k in range(np.uint64(0), np.uint64(src.size)):
    dst[start + k] = src[k]


@register(scan_p)
@register_for_keys(scan_p)
def _scan(ctx, *args, reverse, length, jaxpr, num_consts, num_carry, linear, unroll,
          _split_transpose):
  """Iteration i (in order, or reversed) evaluates jaxpr(*consts, *carry,
  *[x[i] for x in xs]), the new carry and each y stored at index i of its
  output. x[i] is a view of x (no copy), made once per iteration; the xs
  and ys of rank 1, read and written an element at a time, are the
  lowering's `host_copy` and `host_allocation` (on the host where the
  arrays are elsewhere: one copy each rather than one an iteration)."""
  consts, init, xs = split_scan_operands(args, [num_consts, num_carry])
  avals = [physical_aval(a) for a in ctx.avals_out]
  carry_avals, y_avals = avals[:num_carry], avals[num_carry:]
  carry = _variables(ctx, init, carry_avals)
  destinations, update = _carried(ctx, jaxpr, carry, carry_avals, num_consts)
  ys = []
  for aval in y_avals:
    ys.append(ctx.fresh())
    allocation = ctx.lowering.host_allocation if aval.ndim == 1 else ctx.lowering.allocation
    dtype = type_source(storage_dtype(aval.dtype))
    ctx.emit(f"{ys[-1]} = {allocation(ctx.shape(aval.shape), dtype)}")
  y_flats = [_flat_once(ctx, y, aval) for y, aval in zip(ys, y_avals)]
  x_avals = [physical_aval(a) for a in ctx.avals_in[num_consts + num_carry:]]
  xs = [_source(ctx, ctx.lowering.host_copy(x)) if aval.ndim == 1 else x
        for x, aval in zip(xs, x_avals)]
  n, step, i = ctx.dim(length), ctx.fresh("j"), ctx.fresh("i")
  with ctx.lowering.block(f"for {step} in range({n}):"):
    ctx.emit(f"{i} = {n} - 1 - {step}" if reverse else f"{i} = {step}")
    x_slices = []   # each x[i] read once (a view made in an element loop costs each element)
    for x, aval in zip(xs, x_avals):
      x_slices.append(ctx.fresh())
      ctx.emit(f"{x_slices[-1]} = "
               + (read_element(f"{x}[{i}]", aval.dtype) if len(aval.shape) == 1 else f"{x}[{i}]"))
    outs = inline(ctx, jaxpr, [*consts, *carry, *x_slices], destinations=destinations)
    for flat, out, aval in zip(y_flats, outs[num_carry:], y_avals):   # before the carry
      row = aval.update(shape=aval.shape[1:])                          # changes: a y may be it
      size = ctx.dim(math.prod(row.shape))
      if row.shape:
        ctx.emit(f"{ctx.function(store_row)}({flat}, {i} * {size}, {ctx.flat(out, row)})")
      else:
        ctx.emit(f"{flat}[{i}] = {element_to_store(out, aval.dtype)}")
    update(outs[:num_carry])
  return [*carry, *(_source(ctx, ctx.lowering.from_host(y)) if aval.ndim == 1 else y
                    for y, aval in zip(ys, y_avals))]


def _source(ctx, source):
  """A name for the value of `source`: itself where it is a name."""
  if source.isidentifier():
    return source
  name = ctx.fresh()
  ctx.emit(f"{name} = {source}")
  return name
