"""What the numba-cuda backend computes on the host, its operands copied
there and its array results back to the device, in program order:

- the host callbacks (pure_callback, debug_callback): the CPU rules
  (numba_backend/rules/host.py), whose `numba.objmode` block the host
  program runs as Python, calling `host_call` here;
- `eig`, by the CPU backend's program of the equation (LAPACK's geev), as
  XLA long computed it on the CPU for a GPU (`on_host`).
"""

import numpy as np

from refimpl.callback import pure_callback_p
from refimpl.debug import debug_callback_p
from refimpl.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var
from refimpl.lax import linalg
from numba_backend import backend as cpu_backend
from numba_backend.cuda import device as G
from numba_backend.cuda.lower import CUDA_RULES, HOST_FUNCTIONS
from numba_backend.cuda.rules import run_as_they_are
from numba_backend.rules import host as cpu


def host_call(token, *args):
  """`host.host_call` on the program's values: arrays (rank 1 or more) are
  the device's, copied to the host for the callback and back for its results."""
  outs = cpu.host_call(token, *(G.to_host(a) if np.ndim(a) else a for a in args))
  return tuple(G.to_device(o) if np.ndim(o) else o for o in outs)


HOST_FUNCTIONS[cpu.host_call] = host_call
run_as_they_are(pure_callback_p, debug_callback_p)


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


def _on_host(ctx, *operands, **params):
  """The equation, compiled alone by the CPU backend, called by the host program."""
  invars, outvars = [Var(a) for a in ctx.avals_in], [Var(a) for a in ctx.avals_out]
  equation = JaxprEqn(invars, outvars, ctx.eqn.primitive, params)
  _PROGRAMS.append((cpu_backend.compile(ClosedJaxpr(Jaxpr([], invars, outvars, [equation]), [])),
                    ctx.avals_in, ctx.avals_out))
  outs = [ctx.fresh("h") for _ in outvars]
  ctx.emit(f"{''.join(o + ', ' for o in outs)}= "
           f"{ctx.function(on_host)}({ctx.dim(len(_PROGRAMS) - 1)}, {', '.join(operands)})")
  return outs if ctx.eqn.primitive.multiple_results else outs[0]


CUDA_RULES[linalg.eig_p] = _on_host
