"""`Array`: the immutable concrete array the user holds.

An Array wraps a read-only NumPy array and a weak-type flag (set for values
that came from Python scalars, so that `Array(2.0) * float16_array` stays
float16). Arrays cannot be updated in place: use `x.at[idx].set(y)`.

An Array a device backend computed holds its `core.DeviceBuffer` instead:
the data stays on the device, passed as it is to that backend's next
programs, and is copied to the host the first time the host reads it
(NumPy conversion, printing, indexing on the host, eager operations).

As in JAX, `Array` is also the type of traced arrays: a tracer is an
instance of it (`isinstance(tracer, Array)`, a virtual subclass), so that
annotations and checks written for arrays hold inside `jit`, `grad` and
`vmap`. Code that needs a concrete value tests for `core.ConcreteArray`.
"""

import abc
import gc

import numpy as np

from refimpl import core, tree_util
from refimpl.config import check_transfer
from refimpl.array_methods import ArrayMethods


def immutable_error(x):
  return TypeError(
      f"'{type(x).__name__}' object does not support item assignment. JAX arrays "
      "are immutable. Instead of ``x[idx] = y``, use ``x = x.at[idx].set(y)`` "
      "or another .at[] method (add, multiply, min, max, ...).")


def array_repr_text(value, weak_type=False, max_line_width=None, precision=None,
                    suppress_small=None):
  """`Array([1., 2.], dtype=float32)`: NumPy's layout of the values, the dtype
  always named (by its name, whatever NumPy or ml_dtypes make of its repr);
  weakly typed values say so."""
  prefix = "Array("
  if value.size == 0 and value.ndim > 0:
    body = f"[], shape={value.shape}"
  else:
    body = np.array2string(value, max_line_width, precision, suppress_small,
                           separator=", ", prefix=prefix)
  weak = ", weak_type=True" if weak_type else ""
  return f"{prefix}{body}, dtype={value.dtype.name}{weak})"


_ALIGNMENT = 64
"""Bytes (a cache line, an AVX-512 vector) at a multiple of which the data an
Array copies from a writeable array starts, from _ALIGNED_FROM bytes on:
compiled code then reads its rows by whole vectors, none straddling two
lines (a backend's 128x128 float32 matrix-vector product took 0.74 us a
product from data 16 bytes off, 0.52 us aligned)."""
_ALIGNED_FROM = 1024


def _copy(value):
  """A C-contiguous copy of the NumPy array `value`, aligned (above) from _ALIGNED_FROM bytes."""
  if value.nbytes < _ALIGNED_FROM:
    return value.copy()
  buffer = np.empty(value.nbytes + _ALIGNMENT, np.uint8)
  start = -buffer.__array_interface__["data"][0] % _ALIGNMENT
  out = buffer[start:start + value.nbytes].view(value.dtype).reshape(value.shape)
  np.copyto(out, value, casting="no")
  return out


class Array(ArrayMethods, core.ConcreteArray, metaclass=abc.ABCMeta):
  """A concrete array: NumPy data plus JAX's weak-type flag (and, as a
  virtual subclass, every tracer)."""

  __slots__ = ("_host", "_buffer", "_weak_type", "_aval")
  __array_priority__ = 100

  def __init__(self, value, weak_type=False):
    self._buffer = None
    if isinstance(value, core.DeviceBuffer):
      self._host, self._buffer = None, value
    else:
      value = np.array(value, copy=True) if not isinstance(value, np.ndarray) else value
      if value.flags.writeable:
        value = _copy(value)
        value.flags.writeable = False
      self._host = value
    self._weak_type = bool(weak_type)
    self._aval = None

  @classmethod
  def _owning(cls, data, aval):
    """The Array of read-only NumPy `data` of `aval`'s shape and dtype, owning
    it (machinery: `__init__` less its checks, for a program's results)."""
    array = cls.__new__(cls)
    array._host, array._buffer, array._weak_type, array._aval = data, None, aval.weak_type, aval
    return array

  @property
  def _value(self):
    """The read-only NumPy data (copied from the device buffer the first time)."""
    host = self._host
    return self._fetch(explicit=False) if host is None else host

  def _fetch(self, explicit):
    """Copies the device buffer to the host, once (a device-to-host transfer,
    which the transfer guard checks); returns the read-only host data."""
    if self._host is not None:
      return self._host
    if self._buffer is None:
      raise RuntimeError(f"Array has been deleted with shape={self._aval.str_short()}.")
    check_transfer("device_to_host", self.aval, explicit)
    host = np.asarray(self._buffer)
    host.flags.writeable = False
    self._host = host
    return host

  def _contiguous_value(self):
    """The read-only NumPy data, C-contiguous: data that is not (a broadcast,
    a transposed view) is copied once and kept, for the programs jit calls
    repeatedly on this Array (a backend's compiled code takes contiguous data)."""
    host = self._value
    if not host.flags.c_contiguous:
      host = np.ascontiguousarray(host)
      host.flags.writeable = False
      self._host = host
    return host

  @property
  def aval(self):
    if self._aval is None:  # built once: arrays are immutable
      data = self._buffer if self._host is None else self._host
      self._aval = core.ShapedArray(data.shape, data.dtype, self._weak_type)
    return self._aval

  # -- conversion to Python and NumPy ---------------------------------------
  def __array__(self, dtype=None, copy=None):
    if copy:
      return np.array(self._value, dtype=dtype, copy=True)
    return np.asarray(self._value, dtype=dtype)

  def __bool__(self):
    return bool(self._value)

  def __int__(self):
    return int(self._value)

  def __float__(self):
    return float(self._value)

  def __complex__(self):
    return complex(self._value)

  def __index__(self):
    if not np.issubdtype(self._value.dtype, np.integer) and self._value.dtype != np.bool_:
      raise TypeError(f"only integer scalar arrays can be converted to a scalar index, "
                      f"got dtype {self._value.dtype}")
    return self._value.__index__()

  def item(self, *args):
    return self._value.item(*args)

  def tolist(self):
    return self._value.tolist()

  def __len__(self):
    if self._value.ndim == 0:
      raise TypeError("len() of unsized object")
    return len(self._value)

  def __iter__(self):
    if self._value.ndim == 0:
      raise TypeError("iteration over a 0-d array")
    return (self[i] for i in range(self._value.shape[0]))

  def __hash__(self):
    raise TypeError("unhashable type: 'Array'")

  def __setitem__(self, index, value):
    raise immutable_error(self)

  def __format__(self, spec):
    if self._value.ndim == 0:
      return format(self._value.item(), spec)
    return format(str(self), spec)

  def __str__(self):
    return str(self._value)

  def __repr__(self):
    return array_repr_text(self._value, self._weak_type)

  def __reduce__(self):
    return (Array, (np.array(self._value), self._weak_type))

  def __copy__(self):
    return self

  def __deepcopy__(self, memo):
    return self

  def copy(self):
    return Array(self._value if self._buffer is None else self._buffer, self._weak_type)

  def block_until_ready(self):
    """Waits for the computation of a device buffer; returns the array itself."""
    if self._buffer is not None:
      self._buffer.block_until_ready()
    return self

  def copy_to_host_async(self):
    """Starts copying a device buffer's data to the host (refimpl copies it
    now); nothing for data already on the host."""
    self._value

  @property
  def addressable_shards(self):
    """The pieces of the array this process's devices hold: one `Shard`, the
    whole array on its device."""
    return [Shard(self.device, self.sharding, self.shape, self)]

  global_shards = addressable_shards
  """Every device's piece: the same one `Shard` (one device, one process)."""

  def addressable_data(self, index):
    """The data of addressable shard `index` (0: the whole array)."""
    return self.addressable_shards[index].data

  @property
  def is_fully_replicated(self):
    return True

  committed = True
  """Whether the array is placed on its device explicitly (always, on one device)."""

  @property
  def sharding(self):
    """The SingleDeviceSharding of the array's device."""
    from refimpl.sharding import SingleDeviceSharding
    return SingleDeviceSharding(self.device)

  def devices(self):
    return {self.device}

  def delete(self):
    """Frees the array's data; using it afterwards is a RuntimeError."""
    self.aval   # (its type stays known)
    self._host = self._buffer = None

  def is_deleted(self):
    return self._host is None and self._buffer is None

  @property
  def __cuda_array_interface__(self):
    """The CUDA Array Interface (version 3) of a device buffer that has one,
    for zero-copy exchange with CUDA libraries; an AttributeError otherwise
    (data on the host), as a JAX CPU array has none."""
    interface = getattr(self._buffer, "__cuda_array_interface__", None)
    if interface is None:
      raise AttributeError("__cuda_array_interface__: the array's data is not in a CUDA "
                           "device's memory (compute it with the numba-cuda backend, or "
                           "jax.device_put it on a GPU device)")
    return interface

  # -- DLPack: a device buffer that exports itself does (the data stays on its
  # device), unless the consumer asks for another device; else the NumPy data
  # is exported, so that jnp.from_dlpack, np.from_dlpack and other consumers read it.
  def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    kwargs = dict(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)
    if self._exporting_buffer(dl_device):
      return self._buffer.__dlpack__(**kwargs)
    try:
      return self._value.__dlpack__(**kwargs)
    except BufferError:  # a DLPack < 1.0 consumer cannot be told the data is read-only
      return np.array(self._value).__dlpack__(**kwargs)

  def __dlpack_device__(self):
    if self._exporting_buffer(None):
      return self._buffer.__dlpack_device__()
    return self._value.__dlpack_device__()

  def _exporting_buffer(self, dl_device):
    """Whether DLPack exports the device buffer itself (for `dl_device`)."""
    exports = getattr(self._buffer, "__dlpack_device__", None)
    return exports is not None and dl_device in (None, exports())

  @property
  def device(self):
    """The device the array lives on: its buffer's, else the CPU."""
    if self._buffer is not None:
      return self._buffer.device
    from refimpl.api import devices
    return devices("cpu")[0]

  def to_device(self, device, *, stream=None):
    if stream is not None:
      raise NotImplementedError("stream argument of array.to_device()")
    return self


Array.register(core.Tracer)   # tracers are Arrays, as in JAX


class Shard:
  """One device's piece of an array (`Array.addressable_shards`): its
  `device`, the `index` (a tuple of slices) of the piece in the array,
  `replica_id` (0: the piece's first copy) and `data`, the piece as an Array
  (None when not given). On one device the piece is the whole array."""

  def __init__(self, device, sharding, global_shape, data=None):
    self.device, self._sharding, self._global_shape = device, sharding, tuple(global_shape)
    self.data = data

  @property
  def index(self):
    return self._sharding.devices_indices_map(self._global_shape)[self.device]

  @property
  def replica_id(self):
    return 0

  def __repr__(self):
    return (f"Shard(device={self.device!r}, index={self.index}, "
            f"replica_id={self.replica_id}, data={self.data})")


def copy_to_host_async(x):
  """Calls the `copy_to_host_async` method of each leaf of pytree `x` that
  has one (arrays); returns `x`."""
  for leaf in tree_util.tree_leaves(x):
    copy = getattr(leaf, "copy_to_host_async", None)
    if copy is not None:
      copy()
  return x


def live_arrays(platform=None):
  """The Arrays alive now (not deleted), of the devices of `platform` ("cpu",
  "gpu", a backend's name) or of every device: found among the objects the
  garbage collector tracks, so that creating an Array costs nothing more."""
  from refimpl.api import devices
  wanted = None if platform is None else set(devices(platform))
  # (by type(x): isinstance would ask a weak proxy whose object is gone for its class)
  return [x for x in gc.get_objects()
          if issubclass(type(x), Array) and isinstance(x, core.ConcreteArray)
          and not x.is_deleted() and (wanted is None or x.device in wanted)]
