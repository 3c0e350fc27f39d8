"""cond, while and scan on the numba-cuda backend: the CPU rules
(numba_backend/rules/control_flow.py), run by the host program. Its
branches and loops are Python's; each iteration launches the kernels of
the body and reads on the host the rank-0 values it branches on (the
predicate), as XLA's loops on a GPU read theirs. The CPU rules' copies and
masks between arrays are kernels here (`HOST_FUNCTIONS`)."""

import numpy as np
from numba import cuda

from numba_backend.cuda import device as G
from numba_backend.cuda.lower import HOST_FUNCTIONS
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
