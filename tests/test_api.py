"""Tests of refimpl/api.py: jit, make_jaxpr, eval_shape and the backend registry."""

import collections
import inspect
import os
import subprocess
import sys

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import backends, lax
from refimpl.config import config


def counting(fun):
  """Wraps `fun` so that each Python execution (each trace under jit) is counted."""
  def wrapped(*args, **kwargs):
    wrapped.calls += 1
    return fun(*args, **kwargs)
  wrapped.calls = 0
  return wrapped


def test_jit_traces_once_per_input_types():
  f = counting(lambda x: jnp.sin(x) * 2.0)
  jf = jax.jit(f)
  np.testing.assert_allclose(jf(np.float32(1)), np.sin(np.float32(1)) * 2, rtol=1e-6)
  jf(np.float32(2))
  assert f.calls == 1
  jf(np.zeros(3, np.float32))       # new shape
  jf(np.zeros(3, np.int32))         # new dtype
  jf(1.0)                           # weak type (a Python float)
  assert f.calls == 4
  jf(2.0)
  assert f.calls == 4
  assert jf._cache_size() == 4


def test_jit_cache_is_shared_by_jits_of_the_same_function():
  f = counting(lambda x: x + 1.0)
  jax.jit(f)(4.0)
  jax.jit(f)(5.0)
  assert f.calls == 1


def test_jit_captures_globals_at_trace_time():
  state = {"g": 0.0}
  def impure_uses_globals(x):
    return x + state["g"]
  assert float(jax.jit(impure_uses_globals)(4.0)) == 4.0
  state["g"] = 10.0
  assert float(jax.jit(impure_uses_globals)(5.0)) == 5.0  # cached trace
  np.testing.assert_array_equal(jax.jit(impure_uses_globals)(jnp.array([4.0])), [14.0])


def test_static_argnums_and_argnames():
  def f(x, n, *, scale=1.0):
    return x * n * scale
  by_num = jax.jit(f, static_argnums=1)
  by_name = jax.jit(f, static_argnames=("n", "scale"))
  assert by_num.static_argnames == ("n",)
  assert by_name.static_argnums == (1,)
  assert float(by_num(np.float32(2), 3)) == 6.0
  assert float(by_name(np.float32(2), n=3, scale=2.0)) == 12.0
  counted = counting(lambda x, n: x * n)
  g = jax.jit(counted, static_argnums=(1,))
  g(np.float32(1), 2); g(np.float32(1), 2); g(np.float32(1), 3)
  assert counted.calls == 2


def test_static_argument_must_be_hashable():
  with pytest.raises(ValueError, match="Non-hashable static arguments"):
    jax.jit(lambda x, n: x, static_argnums=1)(1.0, [1, 2])


def test_static_python_control_flow_unrolls():
  def f(x, n):
    y = 0.0
    for i in range(n):
      y = y + x[i]
    return y
  out = jax.jit(f, static_argnums=(1,))(jnp.array([2.0, 3.0, 4.0]), 2)
  assert float(out) == 5.0


def test_jit_as_decorator_factory():
  @jax.jit(static_argnames="n")
  def f(x, n):
    return x * n
  assert float(f(2.0, n=3)) == 6.0


def test_jit_takes_and_returns_pytrees():
  Point = collections.namedtuple("Point", "x y")

  @jax.jit
  def f(tree):
    return {"sum": tree["p"].x + tree["p"].y, "pair": (tree["s"], None)}

  out = f({"p": Point(np.float32(1), np.float32(2)), "s": 3.0})
  assert float(out["sum"]) == 3.0
  assert float(out["pair"][0]) == 3.0 and out["pair"][1] is None


def test_jit_rejects_non_array_arguments():
  with pytest.raises(TypeError, match="static_argnums or static_argnames"):
    jax.jit(lambda s: s)("text")


def test_jit_output_keeps_weak_type():
  out = jax.jit(lambda x: x * 2)(3.0)
  assert out.dtype == np.float32 and out.weak_type
  assert repr(out) == "Array(6., dtype=float32, weak_type=True)"


def test_print_runs_only_while_tracing(capsys):
  def impure_print_side_effect(x):
    print("Executing function")
    return x
  jf = jax.jit(impure_print_side_effect)
  jf(4.0)
  jf(5.0)
  jf(jnp.array([5.0]))
  assert capsys.readouterr().out.count("Executing function") == 2


def test_traced_global_assignment_leaves_a_tracer():
  saved = []
  def impure_saves_global(x):
    saved.append(x)
    return x
  assert float(jax.jit(impure_saves_global)(4.0)) == 4.0
  assert repr(saved[0]) == "JitTracer(~float32[])"


def test_disable_jit_runs_python_every_time():
  f = counting(lambda x: x + 1.0)
  with jax.disable_jit():
    jax.jit(f)(1.0)
    jax.jit(f)(1.0)
  assert f.calls == 2
  config.update("jax_disable_jit", True)
  try:
    jax.jit(f)(1.0)
  finally:
    config.update("jax_disable_jit", False)
  assert f.calls == 3


def test_closed_over_tracer_of_outer_trace_becomes_argument():
  def outer(x):
    return jax.jit(lambda y: y * x)(2.0)
  closed = jax.make_jaxpr(outer)(np.float32(3))
  jit_eqn, = closed.eqns
  assert jit_eqn.primitive.name == "jit" and len(jit_eqn.invars) == 2
  assert float(jax.jit(outer)(np.float32(3))) == 6.0


def test_make_jaxpr_static_argnums_and_return_shape():
  closed, shape = jax.make_jaxpr(lambda x, n: x * n, static_argnums=1,
                                 return_shape=True)(np.zeros(2, np.float32), 3)
  assert "mul a 3.0:f32[]" in str(closed)
  assert shape == jax.ShapeDtypeStruct((2,), np.float32)


def test_make_jaxpr_of_list_argument_has_one_input_per_element():
  closed = jax.make_jaxpr(lambda xs: xs[0] + xs[1])([1, 2])
  assert len(closed.jaxpr.invars) == 2


def test_eval_shape_runs_nothing():
  f = counting(lambda x: jnp.sum(x))
  out = jax.eval_shape(f, jax.ShapeDtypeStruct((2, 3), np.float32))
  assert out.shape == () and out.dtype == np.float32 and f.calls == 1


# --- backends -------------------------------------------------------------------

def test_backend_registry_selects_by_name():
  compiled = []

  def compile_counting(closed_jaxpr):
    compiled.append(closed_jaxpr)
    return backends.compile_reference(closed_jaxpr)

  backends.register_backend("counting", compile_counting)
  f = lambda x: jnp.sin(x) + 1.0
  x = np.arange(3, dtype=np.float32)
  np.testing.assert_allclose(jax.jit(f, backend="counting")(x), np.sin(x) + 1, rtol=1e-6)
  assert len(compiled) == 1
  with config.option("backend", "counting"):
    jax.jit(lambda x: jnp.exp(x))(x)
  assert len(compiled) == 2
  jax.jit(lambda x: jnp.exp(x))(x)  # default backend again
  assert len(compiled) == 2


def test_backend_receives_dead_code_free_jaxpr():
  seen = []
  backends.register_backend("recording", lambda c: seen.append(c) or backends.compile_reference(c))
  def f(x):
    jnp.sin(x)  # dead
    return jnp.exp(x)
  jax.jit(f, backend="recording")(1.0)
  assert [e.primitive.name for e in seen[0].eqns] == ["exp"]


def test_unknown_backend_is_a_clear_error():
  with pytest.raises(ValueError, match="Unknown backend 'nope'.*reference"):
    jax.jit(lambda x: x, backend="nope")


def test_devices_of_a_platform_absent_here_are_jaxs_runtime_error():
  with pytest.raises(RuntimeError, match="Unknown backend: 'tpu' requested, but no platforms"):
    jax.devices("tpu")

  def no_driver():
    raise OSError("no driver")

  backends.register_backend("driverless", backends.compile_reference, devices=no_driver)
  with pytest.raises(RuntimeError, match="'driverless' requested.*OSError: no driver"):
    jax.devices("driverless")


def test_every_compile_goes_through_the_compiler_seam(monkeypatch):
  """As `jax._src.compiler.backend_compile_and_load`, which chex patches."""
  from refimpl._src import compiler, xla_bridge
  seen = []
  compile_and_load = compiler.backend_compile_and_load

  def watching(backend, jaxpr):
    seen.append((backend.name, backend.platform))
    return compile_and_load(backend, jaxpr)

  monkeypatch.setattr(compiler, "backend_compile_and_load", watching)
  assert jax.jit(lambda x: x * 7, backend="reference")(3) == 21
  assert seen == [("reference", "cpu")]
  assert xla_bridge._backends["cpu"] == jax.devices("cpu")


def test_backend_from_environment():
  code = ("import refimpl; print(refimpl.config.backend, refimpl.config.jax_enable_x64, "
          "refimpl.config.jax_debug_nans)")
  env = dict(os.environ, REFIMPL_BACKEND="reference", JAX_ENABLE_X64="1", JAX_DEBUG_NANS="true")
  out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       check=True).stdout
  assert out.split() == ["reference", "True", "True"]


# --- debug_nans ---------------------------------------------------------------------

def test_debug_nans_eager_op_raises():
  with jax.debug_nans():
    with pytest.raises(FloatingPointError, match="invalid value \\(nan\\) encountered in log"):
      lax.log(np.float32(-1))
  assert np.isnan(lax.log(np.float32(-1)))  # off again


def test_debug_nans_jit_reruns_op_by_op_and_names_equation():
  @jax.jit
  def f(x):
    a = x * 2.0
    b = lax.log(a)
    return b + 1.0
  x = jnp.array([1.0, -1.0])
  assert np.isnan(f(x)[1])
  config.update("jax_debug_nans", True)
  try:
    with pytest.raises(FloatingPointError) as info:
      f(x)
  finally:
    config.update("jax_debug_nans", False)
  message = str(info.value)
  assert "encountered in log" in message and "= log" in message and "jit function f" in message


def test_debug_print_inside_jit_prints_every_call(capsys):
  @jax.jit
  def f(x):
    jax.debug.print("x={x}", x=x)
    return x * 2
  f(np.float32(1))
  f(np.float32(2))
  assert capsys.readouterr().out == "x=1.0\nx=2.0\n"


# --- callbacks, compile-time evaluation, config context managers ---------------------

def test_pure_callback_under_jit_and_errors():
  calls = []
  def host_sin(a):
    calls.append(type(a))
    return np.sin(a)
  f = jax.jit(lambda x: jax.pure_callback(host_sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x))
  np.testing.assert_allclose(f(jnp.arange(3.0)), np.sin(np.arange(3.0)), rtol=1e-6)
  assert calls == [np.ndarray]
  wrong = jax.ShapeDtypeStruct((2,), np.float32)
  with pytest.raises(RuntimeError, match="Incorrect output shape"):
    jax.pure_callback(host_sin, wrong, np.zeros(3, np.float32))
  unused = jax.make_jaxpr(lambda x: (jax.pure_callback(host_sin, wrong, x), x)[1])(np.zeros(2))
  from refimpl.jaxpr import dce_jaxpr
  assert not dce_jaxpr(unused.jaxpr).eqns  # pure: removable when unused


def test_ensure_compile_time_eval_folds_constants():
  def f(x):
    with jax.ensure_compile_time_eval():
      c = jnp.sin(jnp.arange(3.0))
      y = jnp.cos(x)  # a traced operand is still staged
    return x + c + y
  closed = jax.make_jaxpr(f)(np.zeros(3, np.float32))
  assert [e.primitive.name for e in closed.eqns] == ["cos", "add", "add"]
  np.testing.assert_allclose(closed.consts[0], np.sin(np.arange(3.0)), rtol=1e-6)


def test_numpy_rank_promotion_modes():
  x, y = jnp.ones((2, 3)), jnp.ones(3)
  assert (x + y).shape == (2, 3)
  with jax.numpy_rank_promotion("raise"):
    with pytest.raises(ValueError, match="jax_numpy_rank_promotion='raise'"):
      x + y
    assert (x + 1.0).shape == (2, 3)  # scalars are not rank promotion
  with jax.numpy_rank_promotion("warn"):
    with pytest.warns(UserWarning, match="rank_promotion"):
      x + y


def test_debug_infs_eager_and_jit():
  with jax.debug_infs():
    with pytest.raises(FloatingPointError, match="invalid value \\(inf\\) encountered in exp"):
      jnp.exp(jnp.float32(100))
    with pytest.raises(FloatingPointError, match="inf.*\n.*= exp"):
      jax.jit(lambda x: jnp.exp(x) * 2.0)(jnp.float32(100))
  assert np.isinf(jnp.exp(jnp.float32(100)))


def test_process_and_naming_helpers():
  assert jax.process_count() == 1 and jax.process_index() == 0 and jax.host_ids() == [0]
  named = jax.named_call(lambda x: x * 2, name="double")
  assert named.__name__ == "double" and float(named(2.0)) == 4.0
  with jax.named_scope("block"):
    assert float(jnp.add(1.0, 1.0)) == 2.0

  @jax.named_scope("decorated")   # a decorator too, as in JAX
  def triple(x):
    return x * 3

  assert float(jax.jit(triple)(2.0)) == 6.0 and triple.__name__ == "triple"
  info = jax.print_environment_info(return_string=True)
  assert "numpy" in info and f"jax {jax.__version__}" in info


def test_version_is_the_jax_version_followed():
  """Libraries branch on `jax.__version__`: it is the JAX version refimpl
  follows; refimpl's own is `refimpl_version` (its distribution's)."""
  from importlib.metadata import version
  assert jax.__version__ == "0.10.2" and jax.__version_info__ == (0, 10, 2)
  assert jax.refimpl_version == version("refimpl")


def test_a_jitted_functions_signature_is_its_functions():
  def f(x, y=2, *, z):
    return x

  for follow_wrapped in (True, False):
    assert str(inspect.signature(jax.jit(f), follow_wrapped=follow_wrapped)) == "(x, y=2, *, z)"
