"""Lowering rules of the host callbacks, `pure_callback`, `io_callback` and
`debug_callback` (`jax.debug.print`), and of `checkify.check`: the program
calls back into Python in a `numba.objmode` block, in program order, with
the arguments as the reference rules pass them, and reads results of the
equation's types. A debug check is dropped; any other check raises, as it
must have been functionalized by `checkify` before jit.

The callback object is not written into the source: compiling registers it
under a new token (`CALLBACKS`), which the program reads at run time from
its static integers `d`. So the source, and the compiled code that Numba
caches on disk, do not depend on the callback, and a program loaded from
the disk cache calls the callback that this process registered when
compiling it. A registered callback is kept alive as long as the process.
"""

import numpy as np

from refimpl import core, dtypes
from refimpl.callback import call_callback, io_callback_p, pure_callback_p
from refimpl.debug import debug_callback_p
from refimpl.experimental.checkify import check_p, functionalization_error
from numba_backend.lower import register, register_for_keys, scalar_dtype, storage_dtype

CALLBACKS = []
"""token -> (callback, operand avals, result avals, the primitive's rule)."""


def _value(data, aval):
  """The NumPy data of `aval` of a program's value `data` (an array of its
  storage dtype or a scalar of its scalar dtype)."""
  physical = core.physical_aval(aval)
  dtype = dtypes.numpy_dtype(physical.dtype)
  data = np.asarray(data)
  data = data.view(dtype) if data.dtype != dtype and data.dtype == storage_dtype(dtype) \
      and physical.shape else data.astype(dtype)
  return core.from_physical(data.reshape(physical.shape), aval)


def _program_value(out, aval):
  """A result as the program holds it."""
  dtype = dtypes.numpy_dtype(aval.dtype)
  if not aval.shape:
    return np.asarray(out).astype(scalar_dtype(dtype))[()]
  return np.ascontiguousarray(out).view(storage_dtype(dtype))


def host_call(token, *args):
  """Calls the callback registered under `token` on the program's values
  `args`; its results as the program holds them (a tuple)."""
  callback, in_avals, out_avals, call = CALLBACKS[token]
  values = [_value(a, aval) for a, aval in zip(args, in_avals)]
  outs = call(values, in_avals, callback, out_avals)
  return tuple(_program_value(o, aval) for o, aval in zip(outs, out_avals))


def _result_call(values, in_avals, callback, out_avals):
  return call_callback(callback, values, out_avals)


def _debug_call(values, in_avals, callback, out_avals):
  callback(*[core.make_array(v, aval) for v, aval in zip(values, in_avals)])
  return []


def _numba_type(aval):
  """The objmode type string of a program value of `aval`."""
  dtype = np.dtype(storage_dtype(aval.dtype)) if aval.shape else scalar_dtype(aval.dtype)
  name = "boolean" if dtype == np.bool_ else dtype.name
  if not aval.shape:
    return name
  return f"{name}[{', '.join([':'] * (len(aval.shape) - 1) + ['::1'])}]"


def _lower_call(ctx, args, callback, out_avals, call):
  token = len(CALLBACKS)
  CALLBACKS.append((callback, ctx.avals_in, tuple(out_avals), call))
  avals = [core.physical_aval(a) for a in out_avals]
  outs = [ctx.fresh("h") for _ in avals]
  types = ", ".join(f'{o}="{_numba_type(a)}"' for o, a in zip(outs, avals))
  t = ctx.fresh("t")
  ctx.emit(f"{t} = {ctx.dim(token)}")
  with ctx.lowering.block(f"with numba.objmode({types}):"):
    call_source = f"{ctx.function(host_call)}({', '.join([t, *args])})"
    ctx.emit(f"{''.join(o + ', ' for o in outs)}= {call_source}" if outs else call_source)
  for o in outs:   # read after the block, so that Numba takes even unused results out of it
    ctx.emit(f"{o} = {o}")
  return outs


@register(pure_callback_p)
@register_for_keys(pure_callback_p)
def _pure_callback(ctx, *args, callback, result_avals, vmap_method):
  return _lower_call(ctx, args, callback, result_avals, _result_call)


@register(io_callback_p)
@register_for_keys(io_callback_p)
def _io_callback(ctx, *args, callback, result_avals, sharding, ordered):
  return _lower_call(ctx, args, callback, result_avals, _result_call)


@register(debug_callback_p)
@register_for_keys(debug_callback_p)
def _debug_callback(ctx, *args, callback):
  return _lower_call(ctx, args, callback, [], _debug_call)


@register(check_p)
def _check(ctx, *args, err_tree, debug):
  # As JAX's lowering: a debug check is dropped; any other must have been
  # functionalized by checkify.
  if not debug:
    raise functionalization_error()
  return []
