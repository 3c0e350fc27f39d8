"""vmap of pure_callback (each `vmap_method`), debug callbacks and custom_lin."""

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp


def _recording_callback(calls):
  """A callback x, y -> x + y that records the shapes it receives."""
  def callback(x, y):
    calls.append((np.shape(x), np.shape(y)))
    return (np.asarray(x) + np.asarray(y)).astype(np.float32)
  return callback


def _add(calls, vmap_method, out_shape):
  def f(x, y):
    return jax.pure_callback(_recording_callback(calls),
                             jax.ShapeDtypeStruct(out_shape, np.float32), x, y,
                             vmap_method=vmap_method)
  return f


X = np.arange(6.0, dtype=np.float32).reshape(2, 3)
Y = np.float32(10) + np.arange(3, dtype=np.float32)


@pytest.mark.parametrize("method, shapes", [
    ("sequential", [((3,), (3,)), ((3,), (3,))]),
    ("sequential_unrolled", [((3,), (3,)), ((3,), (3,))]),
    ("expand_dims", [((2, 3), (1, 3))]),
    ("broadcast_all", [((2, 3), (2, 3))]),
    ("legacy_vectorized", [((2, 3), (3,))]),
])
def test_vmap_methods_call_the_callback_as_jax_does(method, shapes):
  calls = []
  out = jax.vmap(_add(calls, method, (3,)), in_axes=(0, None))(X, Y)
  np.testing.assert_array_equal(out, X + Y)
  assert calls == shapes


def test_batch_axis_goes_first():
  calls = []
  out = jax.vmap(_add(calls, "expand_dims", (2,)), in_axes=(1, None))(X, Y[:2])
  np.testing.assert_array_equal(out, X.T + Y[:2])
  assert calls == [((3, 2), (1, 2))]


def test_sequential_calls_in_member_order_and_nests():
  seen = []

  def record(x):
    seen.append(float(np.asarray(x)))
    return np.asarray(x)
  f = lambda x: jax.pure_callback(record, jax.ShapeDtypeStruct((), np.float32), x,
                                  vmap_method="sequential")
  x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
  np.testing.assert_array_equal(jax.vmap(jax.vmap(f))(x), x)
  # the inner vmap stages a scan over the inner axis; the outer vmap batches
  # that scan, whose body then scans over the outer axis: inner index slowest
  assert seen == list(x.T.ravel())
  assert "scan" in str(jax.make_jaxpr(jax.vmap(f))(x[0]))


def test_without_vmap_method_vmap_raises():
  f = lambda x: jax.pure_callback(lambda a: a, jax.ShapeDtypeStruct((), np.float32), x)
  assert f(np.float32(2)) == 2
  with pytest.raises(NotImplementedError, match="Got vmap_method=None"):
    jax.vmap(f)(np.ones(3, np.float32))


def test_unknown_vmap_method_is_rejected():
  with pytest.raises(ValueError, match="vmap_method must be on of the allowed methods"):
    jax.pure_callback(lambda a: a, jax.ShapeDtypeStruct((), np.float32), np.float32(1),
                      vmap_method="vectorized")


def test_vmap_of_jit_of_callback():
  calls = []
  f = jax.jit(_add(calls, "broadcast_all", (3,)))
  np.testing.assert_array_equal(jax.vmap(f, in_axes=(0, None))(X, Y), X + Y)


def test_debug_callback_once_per_member_in_order():
  seen = []
  f = lambda x, y: jax.debug.callback(lambda a, b: seen.append((a.tolist(), b.tolist())), x, y)
  jax.vmap(f, in_axes=(1, None))(X, Y)
  assert seen == [([0.0, 3.0], Y.tolist()), ([1.0, 4.0], Y.tolist()),
                  ([2.0, 5.0], Y.tolist())]
  jaxpr = jax.make_jaxpr(jax.vmap(f, in_axes=(1, None)))(X, Y)
  assert [e.primitive.name for e in jaxpr.jaxpr.eqns].count("debug_callback") == 3


def test_debug_print_under_nested_vmap(capsys):
  # as in JAX, the inner vmap unrolls first: the outer one loops inside each
  # of its members, so the outer (row) index runs fastest
  jax.vmap(jax.vmap(lambda x: jax.debug.print("{}", x)))(np.arange(4).reshape(2, 2))
  assert capsys.readouterr().out.split() == ["0", "2", "1", "3"]


# --- custom_lin under vmap ------------------------------------------------------------------

@jax.custom_vjp
def _f(x):
  return jnp.sin(x)


_f.defvjp(lambda x: (jnp.sin(x), jnp.cos(x)), lambda cos, g: (2 * cos * g,))


def test_vmap_of_jvp_of_custom_vjp_raises_as_jax():
  with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
    jax.vmap(lambda t: jax.jvp(_f, (np.ones(3),), (t,))[1])(np.ones((2, 3)))


def test_vmap_of_linearized_custom_vjp_transposes_with_batched_bwd():
  # vmap of the linearized function binds a batched custom_lin, which
  # evaluates to the same error, and transposes by the batched bwd rule
  x = np.arange(3.0, dtype=np.float32)
  _, f_jvp = jax.linearize(_f, x)
  with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
    jax.vmap(f_jvp)(np.ones((2, 3), np.float32))
  cts = np.arange(6.0, dtype=np.float32).reshape(2, 3)
  out, = jax.linear_transpose(jax.vmap(f_jvp), cts)(cts)
  np.testing.assert_allclose(out, 2 * np.cos(x) * cts, rtol=1e-6)


def test_per_example_gradients_through_custom_vjp():
  x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
  grads = jax.vmap(jax.grad(lambda v: _f(v).sum()))(x)
  np.testing.assert_allclose(grads, 2 * np.cos(x), rtol=1e-6)
  np.testing.assert_allclose(jax.vmap(jax.vjp(_f, x[0])[1])(x)[0], 2 * np.cos(x[0]) * x,
                             rtol=1e-6)
