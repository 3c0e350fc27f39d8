"""What the programs of the numba-cuda backend call on the host: device
allocations and kernel launches, and a mode that compiles each launch's
kernel to PTX instead of running it (`compiling_to_ptx`), for machines
without a GPU."""

import contextlib
import math

import numba
import numpy as np
from numba import cuda

from refimpl import core
from numba_backend.cuda import dlpack
from numba_backend.lower import storage_dtype

THREADS = 256
"""Threads per block of a kernel launch over at least that many iterations."""

_MAX_BLOCKS = 65535 * 4
"""The most blocks a launch asks for: grid-stride loops cover the rest."""

GRID_LIMITS = (2**31 - 1, 65535, 65535)
"""CUDA's most blocks along each axis of a launch's grid (which the
simulator does not enforce)."""

_ptx = None   # while compiling_to_ptx: its list of (kernel name, PTX)
_launches = None   # while recording_launches: its set of launches


def launch(kernel, count, *args):
  """Runs `kernel` on `args` by threads covering `count` independent
  iterations (its grid-stride loop covers what a launch's blocks do not):
  blocks of THREADS threads, or one block of a thread an iteration for
  fewer iterations than that (on a GPU, as fast as whole warps: a warp's
  missing threads are the lanes it would leave idle; in the simulator,
  where each thread is a Python thread, far cheaper)."""
  count = int(count)
  if count < THREADS:
    launch_grid(kernel, 1, max(count, 1), *args)
  else:
    launch_grid(kernel, min(-(-count // THREADS), _MAX_BLOCKS), THREADS, *args)


def launch_grid(kernel, blocks, threads, *args):
  """Runs `kernel` on `args` with `blocks` blocks (an int or a tuple of up
  to three) of `threads` threads (likewise), compiled (at its first launch
  for these types) without contraction. A grid or block beyond CUDA's
  limits (GRID_LIMITS; 1024 threads a block, 64 along its third axis) is
  refused, in the simulator too."""
  grid = blocks if isinstance(blocks, tuple) else (blocks,)
  block = threads if isinstance(threads, tuple) else (threads,)
  if (not all(1 <= g <= limit for g, limit in zip(grid, GRID_LIMITS))
      or min(block) < 1 or math.prod(block) > 1024 or block[2:] > (64,)):
    raise ValueError(f"a launch of {blocks} blocks of {threads} threads is beyond CUDA's limits")
  if _launches is not None:
    _launches.add((getattr(kernel, "made_by", kernel.py_func.__code__.co_filename),
                   kernel.py_func.__name__, tuple(numba.typeof(a) for a in args),
                   int(np.prod(threads))))
  if _ptx is not None:
    _ptx.append((kernel.py_func.__name__, ptx(kernel, tuple(numba.typeof(a) for a in args))))
    return
  with _without_contraction():
    kernel[blocks, threads](*args)


def ptx(kernel, signature):
  """The PTX of `kernel` for compute capability 9.0 on arguments of the
  Numba types `signature`, compiled without contraction (inside
  `compiling_to_ptx`, not in the CUDA simulator)."""
  with _without_contraction():
    return cuda.compile_ptx(kernel.py_func, signature, cc=(9, 0))[0]


@contextlib.contextmanager
def _without_contraction():
  """NVVM compiles numba-cuda's kernels with its default -fma=1: it fuses a
  multiply and an add into one fma, one rounding where the reference rounds
  twice. While in the `with` it compiles them with -fma=0 (without
  fastmath): the kernels' fma are the rules' explicit ones (`S.fma`)."""
  from numba.cuda.cudadrv import nvvm
  compile_ir = nvvm.compile_ir

  def separate(llvmir, **options):
    if not options.get("fastmath"):
      options.setdefault("fma", False)
    return compile_ir(llvmir, **options)

  nvvm.compile_ir = separate
  try:
    yield
  finally:
    nvvm.compile_ir = compile_ir


def empty(shape, dtype):
  """A new uninitialized device array of `shape` (a tuple or an integer)."""
  shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(n) for n in shape)
  return np.empty(shape, dtype) if _ptx is not None else cuda.device_array(shape, dtype)


def copy_array(array):
  """A new device array holding the elements of the device array `array`."""
  if _ptx is not None:
    return array.copy()
  out = cuda.device_array_like(array)
  if array.size:
    out.copy_to_device(array)
  return out


def full(shape, value, dtype):
  """A new device array of `shape` (a tuple or an integer) filled with `value`."""
  return to_device(np.full(shape, value, dtype))


def size(shape):
  """The number of elements of `shape` (an int64 array)."""
  return int(np.prod(shape))


def to_device(x):
  """The host array `x` copied to a new device array."""
  x = np.ascontiguousarray(x)
  return x if _ptx is not None else cuda.to_device(x)


def to_host(x):
  """The device array `x` copied to a new host array."""
  return x if _ptx is not None else x.copy_to_host()


@contextlib.contextmanager
def recording_launches():
  """While in the `with`, each launch is recorded in the set the `with`
  gives: (its kernel's source file, its name, its arguments' Numba types,
  its threads a block), for compiling every kernel a run launched to PTX
  (`ptx`, in a process outside the CUDA simulator). A kernel that a
  function makes (not a name of its module) says so: its `made_by`,
  (that function, its arguments), stands for the file."""
  global _launches
  _launches = found = set()
  try:
    yield found
  finally:
    _launches = None


def compiling():
  """Whether programs compile their kernels to PTX rather than run them (`compiling_to_ptx`)."""
  return _ptx is not None


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


class CudaDevice:
  """A CUDA GPU, as `jax.devices()` lists it."""

  platform = "gpu"

  def __init__(self, id, kind):
    self.id, self.device_kind = id, kind

  def __repr__(self):
    return f"CudaDevice(id={self.id})"

  def put(self, data):
    """The NumPy array `data` copied to a new buffer of this device."""
    data = np.ascontiguousarray(data)
    with cuda.gpus[self.id]:
      return Buffer(cuda.to_device(data.view(storage_dtype(data.dtype))), data.dtype, self)


_devices = []


def devices():
  """The CUDA devices numba-cuda finds (the simulator's one, in the simulator)."""
  if not _devices:
    for i, gpu in enumerate(cuda.gpus):
      name = getattr(gpu, "name", "CUDA simulator")   # (the simulator's has none)
      _devices.append(CudaDevice(i, name.decode() if isinstance(name, bytes) else name))
  return _devices


class Buffer(core.DeviceBuffer):
  """An array's data in a device's memory: `array`, the numba-cuda device
  array of its storage dtype (16-bit floats as their bits), holding values
  of `dtype`."""

  __slots__ = ("array", "dtype", "device")

  def __init__(self, array, dtype, device):
    self.array, self.dtype, self.device = array, np.dtype(dtype), device

  @property
  def shape(self):
    return tuple(self.array.shape)

  def __array__(self, dtype=None, copy=None):
    host = self.array.copy_to_host().view(self.dtype)
    return host if dtype is None else host.astype(dtype)

  def block_until_ready(self):
    cuda.synchronize()

  @property
  def __cuda_array_interface__(self):
    """The device array's interface, of the value's dtype (CUDA Array Interface 3)."""
    interface = dict(_interface(self.array))
    interface["typestr"] = self.dtype.str
    return interface

  def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule of the device memory (numba_backend/cuda/dlpack.py),
    after the device's work is done (a consumer's `stream` then reads it
    as it is); a copy of it where `copy` is True. A BufferError for another
    `dl_device`."""
    if stream is not None and not isinstance(stream, int):
      raise TypeError(f"__dlpack__: stream must be an integer or None, got {stream!r}")
    if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
      raise BufferError(f"__dlpack__: the data is on {self.__dlpack_device__()}, "
                        f"not on dl_device {tuple(dl_device)}; copy it there first")
    array = copy_array(self.array) if copy else self.array
    cuda.synchronize()
    versioned = max_version is not None and max_version[0] >= dlpack.VERSION[0]
    return dlpack.export(_interface(array)["data"][0], self.shape, self.dtype, self.device.id,
                         array, versioned, bool(copy))

  def __dlpack_device__(self):
    return (dlpack.CUDA, self.device.id)


def _interface(array):
  """The CUDA Array Interface of a numba-cuda device array; in the simulator,
  whose device memory is the host's, that of its host array."""
  interface = getattr(array, "__cuda_array_interface__", None)
  if interface is not None:
    return interface
  host = array._ary.__array_interface__   # (the simulator's FakeCUDAArray)
  return {"shape": host["shape"], "typestr": host["typestr"], "data": host["data"],
          "strides": host["strides"], "version": 3, "stream": None}
