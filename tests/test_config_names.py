"""The configuration options and contexts of JAX's top-level namespace
(leak checking, promotion modes, tracing and execution guards, transfer
guards, user contexts), and the array-placement names (`Shard`,
`make_array_from_*`, `live_arrays`, `copy_to_host_async`)."""

import logging
import sys
import weakref

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import core, dtypes
from refimpl.array import Array
from refimpl.sharding import NamedSharding, PartitionSpec as P, SingleDeviceSharding

config_module = sys.modules["refimpl.config"]


# --- options exist, are settable globally and per block -----------------------

BOOL_CONTEXTS = {
    "check_tracer_leaks": "jax_check_tracer_leaks", "explain_cache_misses":
    "jax_explain_cache_misses", "no_tracing": "jax_no_tracing", "no_execution":
    "jax_no_execution", "thread_guard": "jax_thread_guard", "allow_f16_reductions":
    "jax_allow_f16_reductions", "jax2tf_associative_scan_reductions":
    "jax2tf_associative_scan_reductions"}


@pytest.mark.parametrize("name", sorted(BOOL_CONTEXTS))
def test_bool_context_sets_its_option_in_the_block(name):
  option = BOOL_CONTEXTS[name]
  before = jax.config.read(option)
  with getattr(jax, name)(not before):
    assert jax.config.read(option) is (not before)
  assert jax.config.read(option) is before


@pytest.mark.parametrize("name, option, value", [
    ("numpy_dtype_promotion", "jax_numpy_dtype_promotion", "strict"),
    ("default_matmul_precision", "jax_default_matmul_precision", "highest"),
    ("default_matmul_precision", "jax_default_matmul_precision", "BF16_BF16_F32"),
    ("array_garbage_collection_guard", "jax_array_garbage_collection_guard", "log"),
    ("transfer_guard_host_to_device", "jax_transfer_guard_host_to_device", "disallow"),
    ("transfer_guard_device_to_host", "jax_transfer_guard_device_to_host", "log"),
    ("transfer_guard_device_to_device", "jax_transfer_guard_device_to_device",
     "disallow_explicit"),
])
def test_enum_context_sets_its_option_and_checks_the_value(name, option, value):
  before = jax.config.read(option)
  with getattr(jax, name)(value):
    assert jax.config.read(option) == value
  assert jax.config.read(option) == before
  with pytest.raises(ValueError, match=option):
    getattr(jax, name)("no such value")


def test_update_sets_the_global_value_and_checks_it():
  jax.config.update("jax_numpy_dtype_promotion", "strict")
  try:
    assert jax.config.jax_numpy_dtype_promotion == "strict"
  finally:
    jax.config.update("jax_numpy_dtype_promotion", "standard")
  with pytest.raises(ValueError):
    jax.config.update("jax_transfer_guard", "sometimes")


def test_checking_leaks_turns_the_check_on():
  with jax.checking_leaks():
    assert jax.config.jax_check_tracer_leaks


def test_transfer_guard_sets_every_direction():
  with jax.transfer_guard("log_explicit"):
    for direction in ("host_to_device", "device_to_host", "device_to_device"):
      assert config_module.transfer_guard_level(direction) == "log_explicit"
  assert config_module.transfer_guard_level("device_to_host") == "allow"


# --- what they do -------------------------------------------------------------

def test_tracer_leak_raises_when_the_trace_ends():
  leaked = []

  def f(x):
    leaked.append(x)
    return x + 1
  with jax.check_tracer_leaks():
    with pytest.raises(Exception, match="Leaked trace"):
      jax.jit(f)(1.0)
    leaked.clear()
    jax.jit(lambda x: jnp.sin(x) * 2)(1.0)   # no leak, no error
    jax.make_jaxpr(lambda x: jax.lax.scan(lambda c, y: (c + y, c), x, jnp.ones(3)))(1.0)
  jax.jit(f)(2.0)   # off: the leak goes unnoticed until the tracer is used
  with pytest.raises(jax.errors.UnexpectedTracerError):
    leaked[-1] + 1


def test_strict_promotion():
  f32, f16, i32 = jnp.ones(2, jnp.float32), jnp.ones(2, jnp.float16), jnp.ones(2, jnp.int32)
  with jax.numpy_dtype_promotion("strict"):
    assert (f16 + 1.0).dtype == jnp.float16   # Python scalars are weak: they adapt
    assert (i32 + 1).dtype == jnp.int32
    assert (f32 * f32).dtype == jnp.float32
    for a, b in ((f32, f16), (i32, f32), (i32, 1.5)):
      with pytest.raises(dtypes.TypePromotionError, match="jax_numpy_dtype_promotion=strict"):
        a + b
    with pytest.raises(dtypes.TypePromotionError):
      jax.jit(lambda a, b: a + b)(f32, f16)
    assert jnp.promote_types(jnp.int8, jnp.int8) == jnp.int8
  assert (f32 + f16).dtype == jnp.float32
  assert jax.jit(lambda a, b: a + b)(f32, f16).dtype == jnp.float32   # traced anew


def test_strict_promotion_is_not_answered_from_a_standard_promotion():
  """jnp remembers promotions by their operands' types: the mode is part of what it keys on."""
  i32, f32 = jnp.ones(2, jnp.int32), jnp.ones(2, jnp.float32)
  assert (i32 + f32).dtype == jnp.float32
  with jax.numpy_dtype_promotion("strict"):
    with pytest.raises(dtypes.TypePromotionError):
      i32 + f32


def test_python_scalars_promote_by_kind_among_weak_values():
  """As JAX's lattice: Python scalars are weak nodes even when every operand
  is weak, so int with float is a weak float in strict mode too, and a
  weakly typed float32 keeps its width with a Python int under x64."""
  with jax.numpy_dtype_promotion("strict"):
    out = jnp.add(1, 1.0)
    assert out.dtype == jnp.float32 and out.weak_type
  with jax.enable_x64():
    weak_f32 = jax.lax.convert_element_type(1.0, jnp.float32, weak_type=True)
    assert (weak_f32 + 1).dtype == jnp.float32
    assert jnp.add(1, 1.0).dtype == jnp.float64


def test_default_matmul_precision_has_no_effect_on_values():
  a = np.arange(6, dtype=np.float32).reshape(2, 3) / 7
  b = np.arange(6, dtype=np.float32).reshape(3, 2) / 3
  expected = jnp.dot(a, b)
  with jax.default_matmul_precision("bfloat16"):
    np.testing.assert_array_equal(jnp.dot(a, b), expected)


def test_explain_cache_misses_logs_why(caplog):
  f = jax.jit(lambda x, n: x * n, static_argnums=1)
  with jax.explain_cache_misses(), caplog.at_level(logging.WARNING, logger="refimpl"):
    f(jnp.ones(2), 2)
    f(jnp.ones(2), 2)     # a hit: nothing logged
    f(jnp.ones(3), 2)
    f(jnp.ones(3), 3)
  messages = [r.getMessage() for r in caplog.records if "TRACING CACHE MISS" in r.getMessage()]
  assert len(messages) == 3
  assert "never seen function" in messages[0]
  assert "argument 0: seen float32[2], but now given float32[3]" in messages[1]
  assert "static arguments" in messages[2]


def test_no_tracing_raises_on_a_cache_miss():
  f = jax.jit(jnp.cos)
  f(1.0)
  with jax.no_tracing():
    f(2.0)   # traced already
    with pytest.raises(RuntimeError, match="'no_tracing' is set"):
      f(jnp.ones(2))


def test_no_execution_raises_on_running_but_not_on_tracing():
  x = jnp.ones(2)
  f = jax.jit(jnp.sin)
  f(x)
  with jax.no_execution():
    assert "sin" in str(jax.make_jaxpr(f)(x))
    with pytest.raises(RuntimeError, match="no_execution config option is set"):
      f(x)
    with pytest.raises(RuntimeError, match="no_execution"):
      jnp.cos(x)
  np.testing.assert_allclose(f(x), np.sin(1.0), rtol=1e-6)


def test_f16_reductions_can_be_disallowed():
  h = jnp.ones((2, 3), jnp.float16)
  with jax.allow_f16_reductions(False):
    with pytest.raises(ValueError, match="jax_allow_f16_reductions=False"):
      jax.lax.reduce_sum(h, (1,))
    assert jax.lax.reduce_sum(jnp.ones((2, 1), jnp.bfloat16), (1,)).shape == (2,)
    assert jax.lax.reduce_sum(jnp.ones(3), (0,)) == 3
  assert jax.lax.reduce_sum(h, (1,)).dtype == jnp.float16


class _Buffer(core.DeviceBuffer):
  """A device buffer of an imaginary device holding NumPy data."""

  def __init__(self, data):
    self.data, self.shape, self.dtype, self.device = data, data.shape, data.dtype, "device:1"

  def __array__(self, dtype=None, copy=None):
    return np.array(self.data, dtype=dtype)

  def block_until_ready(self):
    return self


def _device_array():
  return Array(_Buffer(np.arange(3, dtype=np.float32)))


def test_transfer_guard_device_to_host():
  x, y = _device_array(), _device_array()
  with jax.transfer_guard("disallow"):
    np.testing.assert_array_equal(jax.device_get(y), [0, 1, 2])   # explicit: allowed
    np.testing.assert_array_equal(np.asarray(y), [0, 1, 2])       # copied already
    with pytest.raises(RuntimeError, match="Disallowed device-to-host transfer"):
      np.asarray(x)
  with jax.transfer_guard_device_to_host("disallow_explicit"):
    with pytest.raises(RuntimeError, match="Disallowed explicit device-to-host transfer"):
      jax.device_get(_device_array())
  np.testing.assert_array_equal(np.asarray(x), [0, 1, 2])


def test_transfer_guard_logs(caplog):
  with jax.transfer_guard("log"), caplog.at_level(logging.WARNING, logger="refimpl"):
    str(_device_array())
  assert any("device-to-host transfer: aval=float32[3]" in r.getMessage()
             for r in caplog.records)


def test_transfer_guard_host_to_device_of_a_device_program_input():
  with jax.transfer_guard_host_to_device("disallow"):
    assert core.to_data(_device_array()) is not None   # on its device already
    with pytest.raises(RuntimeError, match="Disallowed host-to-device transfer"):
      core.to_data(np.ones(2, np.float32))
    np.testing.assert_array_equal(jnp.ones(2) + 1, [2, 2])   # the reference backend: no transfer


def test_user_context():
  state = jax.make_user_context(1)
  assert state.value == 1
  calls = []

  @jax.jit
  def f(x):
    calls.append(None)
    return x * state.value
  assert f(2.0) == 2.0
  with state(5):
    assert state.value == 5
    assert f(2.0) == 10.0   # part of jit's cache key: traced anew
  assert state.value == 1
  assert f(2.0) == 2.0 and len(calls) == 2
  state.set_global(3)
  assert state.value == 3 and f(2.0) == 6.0


# --- array placement ----------------------------------------------------------

MESH_SHARDING = NamedSharding(jax.make_mesh((1,), ("x",)), P("x"))


def test_shards_of_an_array():
  x = jnp.arange(6.0).reshape(3, 2)
  shard, = x.addressable_shards
  assert isinstance(shard, jax.Shard)
  assert shard.device == x.device and shard.replica_id == 0
  assert shard.index == (slice(None), slice(None))
  assert shard.data is x and x.addressable_data(0) is x
  assert len(x.global_shards) == 1


def test_make_array_from_callback():
  data = np.arange(8.0).reshape(4, 2)
  indices = []

  def piece(index):
    indices.append(index)
    return data[index]
  x = jax.make_array_from_callback((4, 2), MESH_SHARDING, piece)
  np.testing.assert_array_equal(x, data)
  assert x.dtype == jnp.float32 and indices == [(slice(None), slice(None))]
  assert jax.make_array_from_callback((4, 2), MESH_SHARDING, piece, dtype=jnp.int32).dtype \
      == jnp.int32
  with pytest.raises(ValueError, match="doesn't match the single device array shape"):
    jax.make_array_from_callback((5, 2), MESH_SHARDING, piece)


def test_make_array_from_single_device_arrays():
  x = jnp.ones((2, 3))
  y = jax.make_array_from_single_device_arrays((2, 3), SingleDeviceSharding(x.device), [x])
  np.testing.assert_array_equal(y, x)
  with pytest.raises(ValueError, match="one array per device"):
    jax.make_array_from_single_device_arrays((2, 3), MESH_SHARDING, [x, x])
  with pytest.raises(ValueError, match="shard shape"):
    jax.make_array_from_single_device_arrays((4, 3), MESH_SHARDING, [x])


def test_make_array_from_process_local_data():
  x = jax.make_array_from_process_local_data(MESH_SHARDING, np.ones((3, 2)))
  assert x.shape == (3, 2) and isinstance(x, Array)
  assert jax.make_array_from_process_local_data(MESH_SHARDING, np.ones(3), (3,)).shape == (3,)
  with pytest.raises(ValueError, match="global_shape"):
    jax.make_array_from_process_local_data(MESH_SHARDING, np.ones(3), (6,))


class _Referent:
  """An object a weak proxy can refer to."""


def test_live_arrays_and_copy_to_host_async():
  x = jnp.arange(5.0) * 3
  gone = weakref.proxy(_Referent())   # (a proxy to a dead object, among those gc tracks)
  assert any(a is x for a in jax.live_arrays())
  assert gone is not None
  assert any(a is x for a in jax.live_arrays("cpu"))
  x.delete()
  assert not any(a is x for a in jax.live_arrays())
  y = _device_array()
  tree = {"y": y, "n": 3}
  assert jax.copy_to_host_async(tree) is tree
  assert y._host is not None   # the host copy is made
