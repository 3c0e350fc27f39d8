"""What the programs of the numba-cuda backend call on the host: device
allocations and kernel launches, and a mode that compiles each launch's
kernel to PTX instead of running it (`compiling_to_ptx`), for machines
without a GPU."""

import contextlib

import numba
import numpy as np
from numba import cuda

THREADS = 256
"""Threads per block of every kernel launch."""

_MAX_BLOCKS = 65535 * 4
"""The most blocks a launch asks for: grid-stride loops cover the rest."""

_ptx = None   # while compiling_to_ptx: its list of (kernel name, PTX)


def launch(kernel, count, *args):
  """Runs `kernel` on `args` by threads covering `count` independent
  iterations (its grid-stride loop covers what a launch's blocks do not)."""
  if _ptx is not None:
    signature = tuple(numba.typeof(a) for a in args)
    _ptx.append((kernel.py_func.__name__,
                 cuda.compile_ptx(kernel.py_func, signature, cc=(9, 0))[0]))
    return
  blocks = int(min(max(-(-int(count) // THREADS), 1), _MAX_BLOCKS))
  kernel[blocks, THREADS](*args)


def empty(shape, dtype):
  """A new uninitialized device array."""
  shape = tuple(int(n) for n in shape)
  return np.empty(shape, dtype) if _ptx is not None else cuda.device_array(shape, dtype)


def to_device(x):
  """The host array `x` copied to a new device array."""
  x = np.ascontiguousarray(x)
  return x if _ptx is not None else cuda.to_device(x)


def to_host(x):
  """The device array `x` copied to a new host array."""
  return x if _ptx is not None else x.copy_to_host()


@contextlib.contextmanager
def compiling_to_ptx():
  """While in the `with`, programs compile each kernel they launch to PTX
  for compute capability 9.0 (numba-cuda's NVVM, no GPU needed) instead of
  running it, on host arrays standing for device arrays; the `with` gives
  the list of (kernel name, PTX) it fills. Not in the CUDA simulator."""
  global _ptx
  from numba.cuda import dispatcher   # asks the device's compute capability for device functions
  device, dispatcher.get_current_device = dispatcher.get_current_device, _Hopper
  _ptx = found = []
  try:
    yield found
  finally:
    _ptx, dispatcher.get_current_device = None, device


class _Hopper:
  """The device numba-cuda compiles device functions for in `compiling_to_ptx`."""
  compute_capability = (9, 0)
