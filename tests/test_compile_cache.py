"""jit compiles once per program structure: a backend's `compile` runs once per
(jaxpr structure, input types, backend, tracing config), and a program whose
consts have new values (a function closing over new weights) reuses it."""


import logging

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import backends





def test_a_jitted_function_called_ten_times_compiles_once(counting_backend):
  f = jax.jit(lambda x: jnp.sin(x) * 2.0 + 1.0)
  x = np.arange(4, dtype=np.float32)
  for i in range(10):
    np.testing.assert_allclose(f(x + i), np.sin(x + i) * 2 + 1, rtol=1e-5, atol=1e-6)
  assert len(counting_backend) == 1


def test_new_input_types_compile_again(counting_backend):
  f = jax.jit(lambda x: x * 2)
  f(np.ones(3, np.float32))
  f(np.ones(4, np.float32))
  f(np.ones(3, np.int32))
  f(np.ones(3, np.float32))
  assert len(counting_backend) == 3


def test_ten_eager_clips_compile_once(counting_backend):
  x = jnp.linspace(-2.0, 2.0, 9)
  for i in range(10):
    out = jnp.clip(x, -1.0, i / 10)
    np.testing.assert_array_equal(out, np.clip(np.linspace(-2, 2, 9, dtype=np.float32),
                                               -1, np.float32(i / 10)))
  assert len(counting_backend) == 1


def test_new_closed_over_values_reuse_the_program(counting_backend):
  def model(w):
    return jax.jit(lambda x: jnp.tanh(x @ w))

  x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
  rng = np.random.default_rng(0)
  for _ in range(5):
    w = rng.standard_normal((4, 2)).astype(np.float32)
    np.testing.assert_allclose(model(jnp.asarray(w))(x), np.tanh(x @ w), rtol=1e-5)
  assert len(counting_backend) == 1
  # the backend received the consts as inputs, not baked into the program
  assert counting_backend[0].consts == []
  assert len(counting_backend[0].jaxpr.invars) == 2


def test_closed_over_values_of_another_type_compile_again(counting_backend):
  x = np.ones(3, np.float32)
  jax.jit(lambda x: x + jnp.ones(3, np.float32) * 2)(x)
  jax.jit(lambda x: x + jnp.ones(3, np.int32) * 2)(x)
  assert len(counting_backend) == 2


def test_a_backend_registered_again_compiles_anew():
  compiled = []
  backends.register_backend("reregistered", backends.compile_reference)
  g = jax.jit(lambda x: x - 1, backend="reregistered")
  g(1.0)
  backends.register_backend(
      "reregistered", lambda c: compiled.append(c) or backends.compile_reference(c))
  assert g(1.0) == 0.0
  assert len(compiled) == 1


def test_eager_calls_on_arrays_follow_every_setting(counting_backend):
  """Repeated eager calls on Arrays skip tracing and the cache lookups (the
  program is called directly), and still see what changed in between:
  argument types, x64, debug_nans, the backend and a backend registered
  again; under a transformation the function is traced."""
  traces = []

  def fun(x):
    traces.append(x)
    return jnp.log(x) + 1.5

  f = jax.jit(fun)
  ints, floats = jnp.asarray(np.arange(3, dtype=np.int32)), jnp.asarray(np.float32([1, -1]))
  for _ in range(3):
    assert f(ints).dtype == np.float32
  assert len(traces) == len(counting_backend) == 1
  f(floats)
  assert len(counting_backend) == 2
  with jax.config.option("jax_enable_x64", True):
    assert f(ints).dtype == np.float64
  assert f(ints).dtype == np.float32
  assert np.isnan(f(floats)[1])
  with jax.config.option("jax_debug_nans", True), \
       pytest.raises(FloatingPointError, match="op by op"):
    f(floats)
  assert len(counting_backend) == 3
  compiled = []
  backends.register_backend(
      "compile-counting-again", lambda c: compiled.append(c) or backends.compile_reference(c))
  with jax.config.option("backend", "compile-counting-again"):
    f(ints)
    backends.register_backend(
        "compile-counting-again", lambda c: compiled.append(c) or backends.compile_reference(c))
    f(ints)
  assert len(compiled) == 2
  np.testing.assert_allclose(jax.grad(lambda x: f(x).sum())(floats[:1]), [1.0])
  f.clear_cache()
  f(ints)
  assert len(traces) == 5   # ints, floats, ints with x64, under grad, after clearing
  for name, value in [("jax_enable_x64", True), ("jax_debug_nans", True)]:   # set globally
    assert f(ints).dtype == np.float32
    jax.config.update(name, value)
    try:
      if name == "jax_enable_x64":
        assert f(ints).dtype == np.float64
      else:
        with pytest.raises(FloatingPointError, match="op by op"):
          f(floats)
    finally:
      jax.config.update(name, False)
  f(ints)
  jax.clear_caches()
  f(ints)
  assert len(traces) == 8   # x64 set globally, then for debug_nans (floats), after clearing all


def test_log_compiles_logs_each_compile_once(caplog, counting_backend):
  """Under `log_compiles` (or `jax_log_compiles`), each program a backend
  compiles is logged once, naming the function, its argument types and the
  backend; calls that reuse it, and calls outside the block, log nothing."""
  def scaled(x):
    return x * 2

  f = jax.jit(scaled)
  f(np.ones(3, np.float32))
  with caplog.at_level(logging.WARNING, logger="refimpl"):
    with jax.log_compiles():
      f(np.ones(3, np.float32))        # compiled before the block
      f(np.ones((2, 2), np.int32))
      f(np.ones((2, 2), np.int32))
    f(np.ones(5, np.float32))
  messages = [r.getMessage() for r in caplog.records if r.name == "refimpl"]
  backend = jax.config.backend
  assert messages == ["Compiling scaled with global shapes and types ['int32[2,2]'] "
                      f"on backend {backend!r}"]
  assert len(counting_backend) == 3
