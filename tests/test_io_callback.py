"""`refimpl.experimental.io_callback`: a host callback with side effects,
kept by jit even when unused, called in program order, as in JAX."""

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from refimpl.experimental import io_callback

f32 = np.float32


def _recorder():
  calls = []

  def callback(x):
    calls.append(np.asarray(x).copy())
    return np.asarray(x) * 2

  return calls, callback


@pytest.mark.parametrize("backend", ["reference", "numba"])
def test_unused_results_still_call_under_jit(backend):
  calls, callback = _recorder()

  def g(x):
    io_callback(callback, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    return x + 1

  f = jax.jit(g, backend=backend)
  np.testing.assert_array_equal(f(np.ones(3, f32)), 2 * np.ones(3, f32))
  np.testing.assert_array_equal(f(np.zeros(3, f32)), np.ones(3, f32))
  assert [c.tolist() for c in calls] == [[1, 1, 1], [0, 0, 0]]   # once per run, in order
  eqns = jax.make_jaxpr(g)(np.ones(3, f32)).jaxpr.eqns
  assert [e.primitive.name for e in eqns] == ["io_callback", "add"]


def test_results_pytrees_and_ordered_calls():
  order = []

  def log(tag):
    def callback(x):
      order.append(tag)
      return {"double": np.asarray(x) * 2, "tag": np.int32(len(order))}
    return callback

  spec = {"double": jax.ShapeDtypeStruct((), f32), "tag": jax.ShapeDtypeStruct((), np.int32)}

  @jax.jit
  def f(x):
    a = io_callback(log("a"), spec, x, ordered=True)
    b = io_callback(log("b"), spec, a["double"], ordered=True)
    return b

  out = f(f32(1.5))
  assert out["double"] == 6.0 and out["tag"] == 2 and order == ["a", "b"]
  assert io_callback(lambda: None, None) is None


def test_vmap_calls_once_per_member_and_ordered_callbacks_cannot_vmap():
  calls, callback = _recorder()
  out = jax.vmap(lambda x: io_callback(callback, jax.ShapeDtypeStruct((), f32), x))(
      np.arange(3, dtype=f32))
  np.testing.assert_array_equal(out, [0, 2, 4])
  assert [c.tolist() for c in calls] == [0, 1, 2]
  with pytest.raises(ValueError, match="Cannot `vmap` ordered IO callback."):
    jax.vmap(lambda x: io_callback(callback, jax.ShapeDtypeStruct((), f32), x, ordered=True))(
        np.arange(3, dtype=f32))


def test_not_differentiable():
  _, callback = _recorder()
  g = jax.grad(lambda x: io_callback(callback, jax.ShapeDtypeStruct((), f32), x))
  with pytest.raises(ValueError, match="IO callbacks do not support JVP."):
    g(f32(1.0))


def test_results_must_have_the_declared_types():
  with pytest.raises(RuntimeError, match="Incorrect output shape for return value #0"):
    jax.jit(lambda x: io_callback(lambda a: np.zeros(2, f32), jax.ShapeDtypeStruct((3,), f32),
                                  x))(np.ones(3, f32))
  with pytest.raises(TypeError, match="io_callback results cannot have an extended dtype"):
    io_callback(lambda: None, jax.ShapeDtypeStruct((), jax.random.key(0).dtype))
  assert jnp.asarray(io_callback(lambda x: x, jax.ShapeDtypeStruct((), np.int32),
                                 np.int32(4))) == 4
