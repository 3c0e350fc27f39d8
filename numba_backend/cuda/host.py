"""What the numba-cuda backend computes on the host, its operands copied
there and its array results back to the device, in program order: the
host callbacks (pure_callback, io_callback, debug_callback) and checkify's
debug checks, by the CPU rules (numba_backend/rules/host.py), whose
`numba.objmode` block the host program runs as Python, calling `host_call`
here."""

import numpy as np

from refimpl.callback import io_callback_p, pure_callback_p
from refimpl.debug import debug_callback_p
from refimpl.experimental.checkify import check_p
from numba_backend.cuda import device as G
from numba_backend.cuda.lower import HOST_FUNCTIONS
from numba_backend.cuda.rules import run_as_they_are
from numba_backend.rules import host as cpu


def host_call(token, *args):
  """`host.host_call` on the program's values: arrays (rank 1 or more) are
  the device's, copied to the host for the callback and back for its results."""
  outs = cpu.host_call(token, *(G.to_host(a) if np.ndim(a) else a for a in args))
  return tuple(G.to_device(o) if np.ndim(o) else o for o in outs)


HOST_FUNCTIONS[cpu.host_call] = host_call
run_as_they_are(pure_callback_p, io_callback_p, debug_callback_p, check_p)

