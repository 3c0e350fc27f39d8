"""What the numba-cuda backend computes on the host, its operands copied
there and its array results back to the device, in program order:

- the host callbacks (pure_callback, io_callback, debug_callback) and
  checkify's debug checks: the CPU rules
  (numba_backend/rules/host.py), whose `numba.objmode` block the host
  program runs as Python, calling `host_call` here;
- by the CPU backend's program of the equation (`on_host`): the
  elementwise equations whose scalar functions device code cannot run
  (`_HOST_ELEMENTWISE_COMPLEX`), each taken out of the loops over elements as an
  `on_host_p` equation (`with_host_equations`).
"""

import numpy as np

from refimpl import dtypes
from refimpl.callback import io_callback_p, pure_callback_p
from refimpl.debug import debug_callback_p
from refimpl.experimental.checkify import check_p
from refimpl.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var
from refimpl.lax import elementwise
from numba_backend import backend as cpu_backend
from numba_backend.cuda import device as G
from numba_backend.cuda.lower import CUDA_RULES, HOST_FUNCTIONS
from numba_backend.cuda.rules import run_as_they_are
from numba_backend.lower import Operation
from numba_backend.rules import host as cpu


def host_call(token, *args):
  """`host.host_call` on the program's values: arrays (rank 1 or more) are
  the device's, copied to the host for the callback and back for its results."""
  outs = cpu.host_call(token, *(G.to_host(a) if np.ndim(a) else a for a in args))
  return tuple(G.to_device(o) if np.ndim(o) else o for o in outs)


HOST_FUNCTIONS[cpu.host_call] = host_call
run_as_they_are(pure_callback_p, io_callback_p, debug_callback_p, check_p)


# --- equations computed by the CPU backend ------------------------------------------------

_PROGRAMS = []
"""token -> (the CPU backend's program of an equation, its operands' avals, its results')."""


def on_host(token, *args):
  """The equation registered under `token` (`_on_host`) run by the CPU
  backend on host copies of the program's values `args`; its results as
  the program holds them (arrays on the device)."""
  run, in_avals, out_avals = _PROGRAMS[token]
  outs = run(*(cpu._value(G.to_host(a) if np.ndim(a) else a, aval)
               for a, aval in zip(args, in_avals)))
  outs = [cpu._program_value(o, aval) for o, aval in zip(outs, out_avals)]
  return tuple(G.to_device(o) if np.ndim(o) else o for o in outs)


def _on_host(ctx, *operands, primitive, params):
  """`primitive` with `params` on `operands`, compiled alone by the CPU
  backend, called by the host program."""
  invars, outvars = [Var(a) for a in ctx.avals_in], [Var(a) for a in ctx.avals_out]
  equation = JaxprEqn(invars, outvars, primitive, params)
  _PROGRAMS.append((cpu_backend.compile(ClosedJaxpr(Jaxpr([], invars, outvars, [equation]), [])),
                    ctx.avals_in, ctx.avals_out))
  outs = [ctx.fresh("h") for _ in outvars]
  ctx.emit(f"{''.join(o + ', ' for o in outs)}= "
           f"{ctx.function(on_host)}({ctx.dim(len(_PROGRAMS) - 1)}, {', '.join(operands)})")
  return outs if primitive.multiple_results else outs[0]


on_host_p = Operation("on_host")
"""An elementwise equation computed on the host (`with_host_equations`):
params `primitive` and `params`, the equation's."""
CUDA_RULES[on_host_p] = _on_host

_HOST_ELEMENTWISE_COMPLEX = {
    elementwise.pow_p, elementwise.tanh_p, elementwise.sin_p, elementwise.cos_p,
    elementwise.tan_p, elementwise.asin_p, elementwise.acos_p, elementwise.atan_p,
    elementwise.sinh_p, elementwise.cosh_p, elementwise.asinh_p, elementwise.acosh_p,
    elementwise.atanh_p, elementwise.atan2_p}
"""Elementwise primitives whose complex forms call the C library's complex
functions (csin, clog, ...: NumPy's, for the reference's bits), which
device code has not (csqrt, cexp and the log it has: numba_backend/cuda/complex.py)."""


def with_host_equations(jaxpr):
  """`jaxpr` with each elementwise equation that kernels cannot compute
  (`_HOST_ELEMENTWISE_COMPLEX` on complex numbers)
  an `on_host_p` equation, in its sub-jaxprs too (a new Jaxpr where any changed)."""
  eqns = [_with_host_equations(eqn) for eqn in jaxpr.eqns]
  if all(new is old for new, old in zip(eqns, jaxpr.eqns)):
    return jaxpr
  return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns)


def _with_host_equations(eqn):
  complex_ = any(dtypes.is_complex(a.aval.dtype) for a in eqn.invars)
  if complex_ and eqn.primitive in _HOST_ELEMENTWISE_COMPLEX:
    return JaxprEqn(eqn.invars, eqn.outvars, on_host_p,
                    {"primitive": eqn.primitive, "params": eqn.params})
  params = {name: _in_value(value) for name, value in eqn.params.items()}
  if all(params[name] is value for name, value in eqn.params.items()):
    return eqn
  return JaxprEqn(eqn.invars, eqn.outvars, eqn.primitive, params)


def _in_value(value):
  """A param's value with its jaxprs' equations `with_host_equations`' (params
  hold jaxprs as themselves, closed or not, or in tuples: `jaxprs_in_value`)."""
  if isinstance(value, Jaxpr):
    return with_host_equations(value)
  if isinstance(value, ClosedJaxpr):
    inner = with_host_equations(value.jaxpr)
    return value if inner is value.jaxpr else ClosedJaxpr(inner, value.consts)
  if isinstance(value, tuple) and any(isinstance(v, (Jaxpr, ClosedJaxpr)) for v in value):
    new = tuple(map(_in_value, value))
    return value if all(a is b for a, b in zip(new, value)) else new
  return value
