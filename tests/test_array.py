"""Tests of refimpl/array.py: the concrete Array type."""

import copy
import pickle

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp


def test_repr_and_str():
  assert repr(jnp.array([1.0, 2.0])) == "Array([1., 2.], dtype=float32)"
  assert repr(jnp.array([[1, 2], [3, 4]])) == "Array([[1, 2],\n       [3, 4]], dtype=int32)"
  assert repr(jnp.asarray(3.0)) == "Array(3., dtype=float32, weak_type=True)"
  assert str(jnp.array([1.0, 2.0])) == "[1. 2.]"
  assert f"{jnp.asarray(2.5):.2f}" == "2.50"


def test_arrays_are_immutable():
  x = jnp.zeros((3, 3), dtype=jnp.float32)
  with pytest.raises(TypeError, match=r"x\.at\[idx\]\.set\(y\)"):
    x[1, :] = 1.0
  with pytest.raises(ValueError):
    np.asarray(x)[0, 0] = 1.0  # the NumPy view is read-only too


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.complex64])
@pytest.mark.parametrize("offset", [0, 1, 3])
def test_copied_data_is_aligned_to_cache_lines(dtype, offset):
  """An Array copies a writeable NumPy array (its own data from then on):
  from 1024 bytes, to memory starting at a multiple of 64 bytes, whatever
  the source's alignment; the values, shape and dtype are the source's."""
  source = np.arange(4 + 2000, dtype=dtype)[offset:offset + 2000].reshape(40, 50)
  x = jax.Array(source)
  data = np.asarray(x)
  assert data.ctypes.data % 64 == 0 and data.flags.c_contiguous and not data.flags.writeable
  assert data.dtype == source.dtype and data.shape == source.shape
  np.testing.assert_array_equal(data, source)
  assert not np.shares_memory(data, source)


def test_numpy_interop():
  x = jnp.array([1.0, 2.0])
  assert isinstance(np.asarray(x), np.ndarray)
  np.testing.assert_array_equal(np.asarray(x), [1.0, 2.0])
  y = np.ones(2, np.float32) + x        # NumPy defers to the Array operator
  assert isinstance(y, jax.Array)
  assert np.asarray(x, dtype=np.float64).dtype == np.float64


def test_python_conversions():
  assert float(jnp.asarray(1.5)) == 1.5 and int(jnp.asarray(3)) == 3
  assert bool(jnp.asarray(True)) is True
  assert [0, 1, 2][jnp.asarray(1)] == 1
  with pytest.raises(TypeError, match="integer scalar"):
    [0, 1][jnp.asarray(1.0)]
  assert jnp.array([1, 2]).tolist() == [1, 2] and jnp.asarray(2.0).item() == 2.0


def test_array_properties():
  x = jnp.zeros((2, 3), dtype=jnp.float32)
  assert x.shape == (2, 3) and x.ndim == 2 and x.size == 6 and x.dtype == np.float32
  assert len(x) == 2 and x.block_until_ready() is x
  with pytest.raises(TypeError, match="unhashable"):
    hash(x)
  with pytest.raises(TypeError, match="len\\(\\) of unsized"):
    len(jnp.asarray(1.0))


def test_pickle_and_copy():
  x = jnp.asarray(2.0)
  y = pickle.loads(pickle.dumps(x))
  assert float(y) == 2.0 and y.weak_type
  assert copy.deepcopy(x) is x


def test_tracers_are_instances_of_array():
  """As in JAX, `isinstance(x, jax.Array)` holds for traced arrays too (jit,
  grad, vmap), so code checking for arrays works inside transformations;
  NumPy arrays and Python scalars are not Arrays."""
  seen = []

  def f(x):
    seen.append((isinstance(x, jax.Array), isinstance(x, jnp.ndarray),
                 issubclass(type(x), jax.Array)))
    return x * 2

  x = jnp.arange(3.0)
  jax.jit(f)(x)
  jax.grad(lambda x: f(x).sum())(x)
  jax.vmap(f)(x)
  assert len(seen) == 3 and all(all(checks) for checks in seen)
  assert not isinstance(np.ones(2), jax.Array) and not isinstance(1.0, jax.Array)
  np.testing.assert_array_equal(jax.jit(lambda x: jax.device_put(x) * 2)(x), [0, 2, 4])
