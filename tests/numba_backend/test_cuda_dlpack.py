"""DLPack export of numba-cuda arrays (numba_backend/cuda/dlpack.py), in the
CUDA simulator: the capsule's tensor is read field by field here, as a
consumer (CuPy, PyTorch) reads it, and must point at the buffer's own
memory, which the simulator keeps on the host."""

import ctypes
import gc
import weakref

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import dtypes
from tests.numba_backend.test_cuda import _on_device

pytest.importorskip("numba")
from numba_backend.cuda import dlpack  # noqa: E402 (after the simulator is set)

_python = ctypes.PyDLL(None)   # (its own function objects: ctypes.pythonapi's are shared)
_name = _python.PyCapsule_GetName
_name.restype, _name.argtypes = ctypes.c_char_p, [ctypes.py_object]
_pointer = _python.PyCapsule_GetPointer
_pointer.restype, _pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
_rename = _python.PyCapsule_SetName
_rename.restype, _rename.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
_USED = b"used_dltensor"   # (PyCapsule keeps the name's pointer)

# dtype -> (DLPack's type code, bits)
_TYPES = {np.float32: (2, 32), np.float64: (2, 64), dtypes.float16: (2, 16),
          dtypes.bfloat16: (4, 16), np.complex64: (5, 64), np.int8: (0, 8), np.int64: (0, 64),
          np.uint16: (1, 16), np.uint32: (1, 32), np.bool_: (6, 8)}


def _gpu_array(values):
  with jax.enable_x64():   # (64-bit values stay so)
    return jax.device_put(values, jax.devices("gpu")[0])


def _managed(capsule):
  """The capsule's managed tensor structure."""
  name = _name(capsule)
  kind = dlpack.ManagedTensorVersioned if name == b"dltensor_versioned" else dlpack.ManagedTensor
  return kind.from_address(_pointer(capsule, name))


@pytest.mark.parametrize("dtype", list(_TYPES), ids=lambda d: np.dtype(d).name)
def test_the_capsule_points_at_the_device_memory(dtype):
  values = (np.arange(6).reshape(2, 3) % 2 == 1 if dtype is np.bool_ else
            np.arange(6).reshape(2, 3)).astype(dtype)
  x = _gpu_array(values)
  capsule = x.__dlpack__()
  assert _name(capsule) == b"dltensor" and x.__dlpack_device__() == (2, 0)
  tensor = _managed(capsule).dl_tensor
  assert tensor.data == x.__cuda_array_interface__["data"][0]   # no copy
  assert (tensor.device.device_type, tensor.device.device_id) == (2, 0)
  assert (tensor.ndim, tensor.shape[0], tensor.shape[1]) == (2, 2, 3)
  assert not tensor.strides and tensor.byte_offset == 0   # C-contiguous
  assert (tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes) == (*_TYPES[dtype], 1)
  memory = (ctypes.c_uint8 * values.nbytes).from_address(tensor.data)
  np.testing.assert_array_equal(np.frombuffer(memory, values.dtype).reshape(2, 3), values)
  assert _on_device(x)


def test_a_consumer_of_version_1_gets_a_versioned_tensor_and_a_copy_when_it_asks():
  x = _gpu_array(np.arange(4, dtype=np.float32))
  capsule = x.__dlpack__(max_version=(1, 3))
  versioned = _managed(capsule)   # (valid while the capsule is)
  assert (versioned.major, versioned.minor, versioned.flags) == (1, 0, 0)
  assert versioned.dl_tensor.data == x.__cuda_array_interface__["data"][0]
  copy = x.__dlpack__(max_version=(1, 0), copy=True)
  copied = _managed(copy)
  assert copied.flags == dlpack.IS_COPIED
  assert copied.dl_tensor.data != x.__cuda_array_interface__["data"][0]
  memory = (ctypes.c_float * 4).from_address(copied.dl_tensor.data)
  np.testing.assert_array_equal(np.frombuffer(memory, np.float32), np.arange(4))
  assert _name(x.__dlpack__(max_version=(0, 8))) == b"dltensor"


def test_the_export_holds_the_memory_until_the_consumer_deletes_it():
  x = _gpu_array(np.arange(5, dtype=np.float32))
  memory_holder = weakref.ref(x._buffer.array)
  capsule = x.__dlpack__()
  address = _pointer(capsule, b"dltensor")
  _rename(capsule, _USED)   # a consumer took it
  del x, capsule
  gc.collect()
  assert memory_holder() is not None
  tensor = dlpack.ManagedTensor.from_address(address)
  memory = (ctypes.c_float * 5).from_address(tensor.dl_tensor.data)
  np.testing.assert_array_equal(np.frombuffer(memory, np.float32), np.arange(5))
  tensor.deleter(address)   # the consumer is done with it
  gc.collect()
  assert memory_holder() is None


@pytest.mark.parametrize("max_version", [None, (1, 0)])
def test_a_capsule_no_consumer_took_releases_the_memory_when_freed(max_version):
  x = _gpu_array(np.ones(3, np.float32))
  memory_holder = weakref.ref(x._buffer.array)
  capsule = x.__dlpack__(max_version=max_version)
  del x
  gc.collect()
  assert memory_holder() is not None
  del capsule
  gc.collect()
  assert memory_holder() is None


def test_another_device_or_stream_type_is_refused_and_the_cpu_gets_the_host_data():
  x = _gpu_array(np.arange(3, dtype=np.int32))
  with pytest.raises(BufferError, match="not on dl_device"):
    x._buffer.__dlpack__(dl_device=(1, 0))
  with pytest.raises(TypeError, match="stream must be an integer"):
    x.__dlpack__(stream="default")
  on_host = np.from_dlpack(x, device="cpu")   # dl_device (1, 0): the array's host copy
  np.testing.assert_array_equal(on_host, np.arange(3))
  with pytest.raises(RuntimeError, match="Unsupported device"):
    np.from_dlpack(x)   # NumPy reads host memory only (and frees the capsule it refused)


def test_jnp_from_dlpack_keeps_a_device_array_where_it_is():
  x = _gpu_array(np.arange(3, dtype=np.float32))
  y = jnp.from_dlpack(x)
  assert y.device == x.device and _on_device(y)
  np.testing.assert_array_equal(np.asarray(y), np.arange(3))


def test_jnp_from_dlpack_refuses_other_device_data_with_what_to_do():
  class OnAnotherDevice:
    def __dlpack_device__(self):
      return (2, 0)

    def __dlpack__(self, **kwargs):
      raise AssertionError("not read")

  with pytest.raises(BufferError, match="copy it to the host first"):
    jnp.from_dlpack(OnAnotherDevice())
