"""DLPack export of device buffers: a capsule whose tensor points at the
buffer's device memory (no copy), for CuPy, PyTorch and other consumers of
the Python array API's `from_dlpack`.

The structures are those of dlpack.h (DLPack 1.0): a consumer that asks
for version 1 or later (`max_version`) gets a "dltensor_versioned" capsule
holding a DLManagedTensorVersioned, any other a "dltensor" capsule holding
a DLManagedTensor. The tensor is C-contiguous (strides NULL), on device
(kDLCUDA, the device's ordinal), flagged neither read-only nor copied
unless the consumer asked for a copy: as JAX exports a GPU array, whose
consumer must not write to it (the Array would change). Until the consumer
calls the tensor's deleter, the export holds the device array, and with
it the memory; a capsule no consumer took (still so named) calls the
deleter when it is freed. Both are native functions (`_native`).
"""

import ctypes
import functools

import numba
import numpy as np
from llvmlite import ir
from numba import types

from refimpl import dtypes

CUDA = 2
"""DLDeviceType kDLCUDA."""

VERSION = (1, 0)
"""The DLPack version of the versioned tensors."""

IS_COPIED = 1 << 1
"""DLPACK_FLAG_BITMASK_IS_COPIED."""

_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}
"""DLDataTypeCode by NumPy's dtype kind (kDLInt, kDLUInt, kDLFloat, kDLComplex, kDLBool)."""
_BFLOAT = 4   # kDLBfloat

_LEGACY, _VERSIONED = b"dltensor", b"dltensor_versioned"   # (PyCapsule keeps these pointers)


class _Device(ctypes.Structure):
  _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
  _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class Tensor(ctypes.Structure):
  """DLTensor."""
  _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32),
              ("dtype", _DataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
              ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class ManagedTensor(ctypes.Structure):
  """DLManagedTensor (the "dltensor" capsule's)."""
  _fields_ = [("dl_tensor", Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]


class ManagedTensorVersioned(ctypes.Structure):
  """DLManagedTensorVersioned (the "dltensor_versioned" capsule's)."""
  _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
              ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter),
              ("flags", ctypes.c_uint64), ("dl_tensor", Tensor)]


@numba.extending.intrinsic
def _load_word(typingctx, address):
  """The 64-bit word at `address`."""
  def codegen(context, builder, signature, args):
    return builder.load(builder.inttoptr(args[0], ir.IntType(64).as_pointer()))
  return types.uint64(types.uint64), codegen


_python = ctypes.PyDLL(None)   # (its own function objects: ctypes.pythonapi's are shared)


def _c_api(name, restype, *argtypes):
  """The C API function `name` (addresses as size_t, for native code)."""
  function = getattr(_python, name)
  function.restype, function.argtypes = restype, list(argtypes)
  return function


_size = ctypes.c_size_t
_incref = _c_api("Py_IncRef", None, ctypes.py_object)
_decref = _c_api("Py_DecRef", None, _size)
_initialized = _c_api("Py_IsInitialized", ctypes.c_int)
_gil_ensure = _c_api("PyGILState_Ensure", ctypes.c_int)
_gil_release = _c_api("PyGILState_Release", None, ctypes.c_int)
_capsule_new = _c_api("PyCapsule_New", ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                      ctypes.c_void_p)
_capsule_valid = _c_api("PyCapsule_IsValid", ctypes.c_int, _size, _size)
_capsule_pointer = _c_api("PyCapsule_GetPointer", _size, _size, _size)


@functools.cache
def _native(tensor_type, name):
  """(the deleter of `tensor_type`'s tensors, the destructor of their capsules
  named `name`), compiled: native code, since a capsule may be freed while
  an exception propagates, when no Python code may run. The deleter
  releases the reference to what the export keeps (`manager_ctx`), taking
  the GIL (a consumer may call it from any thread, without it; after the
  interpreter's end it leaves the memory to the process's); the destructor
  calls it for a capsule still so named (no consumer took it)."""
  context, at = tensor_type.manager_ctx.offset, ctypes.cast(name, ctypes.c_void_p).value

  @numba.cfunc(types.void(types.uint64))
  def deleter(managed):
    if _initialized():
      state = _gil_ensure()
      _decref(_load_word(managed + context))
      _gil_release(state)

  @numba.cfunc(types.void(types.uint64))
  def destructor(capsule):
    if _capsule_valid(capsule, at):
      deleter(_capsule_pointer(capsule, at))

  return deleter.address, destructor.address


def data_type(dtype):
  """The DLDataType of the NumPy dtype `dtype` (one lane); a BufferError for
  a dtype DLPack has no code for."""
  dtype = np.dtype(dtype)
  if dtype == dtypes.bfloat16:
    code = _BFLOAT
  elif dtype.kind in _CODES:
    code = _CODES[dtype.kind]
  else:
    raise BufferError(f"DLPack has no type for {dtype}")
  return _DataType(code, dtype.itemsize * 8, 1)


def export(pointer, shape, dtype, device_id, owner, versioned, copied):
  """A capsule of the C-contiguous array of `shape` and the NumPy `dtype` at
  device address `pointer` on CUDA device `device_id`, keeping `owner` (what
  holds the memory) until the consumer deletes it; a versioned tensor
  (flagged IS_COPIED where `copied`) where `versioned`, else a legacy one."""
  tensor_type, name = ((ManagedTensorVersioned, _VERSIONED) if versioned else
                       (ManagedTensor, _LEGACY))
  deleter, destructor = _native(tensor_type, name)
  managed = tensor_type()
  extents = (ctypes.c_int64 * max(len(shape), 1))(*shape)
  managed.dl_tensor = Tensor(pointer, _Device(CUDA, device_id), len(shape), data_type(dtype),
                             extents, None, 0)
  kept = (managed, extents, owner)
  _incref(kept)   # released by the deleter
  managed.manager_ctx, managed.deleter = id(kept), _Deleter(deleter)
  if versioned:
    managed.major, managed.minor = VERSION
    managed.flags = IS_COPIED if copied else 0
  return _capsule_new(ctypes.addressof(managed), name, destructor)
