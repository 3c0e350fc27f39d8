"""Derivatives through callbacks (refimpl/callback.py, refimpl/debug.py), as
in JAX: a debug callback sees primal values only and has no derivative; a
pure callback refuses to be differentiated unless `custom_jvp` (or
`custom_vjp`) supplies the rule."""

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp


def _host_sin(x):
  return jax.pure_callback(lambda a: np.sin(a).astype(a.dtype),
                           jax.ShapeDtypeStruct(x.shape, x.dtype), x)


@pytest.mark.parametrize("transform", [
    lambda f, x: jax.grad(f)(x),
    lambda f, x: jax.jvp(f, (x,), (x,)),
    lambda f, x: jax.jit(jax.grad(f))(x),
])
def test_pure_callback_has_no_jvp(transform):
  with pytest.raises(ValueError, match="Pure callbacks do not support JVP. Please use "
                                       "`jax.custom_jvp`"):
    transform(_host_sin, np.float32(1))


def test_pure_callback_has_no_transpose():
  transposed = jax.linear_transpose(_host_sin, np.float32(1))
  with pytest.raises(ValueError, match="Pure callbacks do not support transpose. Please use "
                                       "`jax.custom_vjp`"):
    transposed(np.float32(1))


def test_pure_callback_under_custom_jvp_and_custom_vjp():
  sin_jvp = jax.custom_jvp(_host_sin)
  sin_jvp.defjvp(lambda primals, tangents: (sin_jvp(*primals), jnp.cos(primals[0]) * tangents[0]))
  sin_vjp = jax.custom_vjp(_host_sin)
  sin_vjp.defvjp(lambda x: (sin_vjp(x), x), lambda x, ct: (jnp.cos(x) * ct,))
  x = np.float32(0.5)
  for f in (sin_jvp, sin_vjp):
    np.testing.assert_allclose(jax.grad(f)(x), np.cos(x), rtol=1e-6)
  np.testing.assert_allclose(jax.jvp(sin_jvp, (x,), (np.float32(2),))[1], 2 * np.cos(x),
                             rtol=1e-6)


def test_debug_callback_sees_primals_only():
  seen = []

  def f(x):
    jax.debug.callback(lambda v: seen.append(np.asarray(v)), x)
    return x * x

  x = np.array([1., 2.], np.float32)
  primal, tangent = jax.jvp(f, (x,), (np.array([10., 20.], np.float32),))
  np.testing.assert_array_equal(tangent, [20., 80.])
  np.testing.assert_array_equal(jax.grad(lambda x: jnp.sum(f(x)))(x), [2., 4.])
  assert len(seen) == 2
  for v in seen:
    np.testing.assert_array_equal(v, x)


def test_debug_callback_is_staged_once_by_jvp_and_grad():
  def f(x):
    jax.debug.callback(lambda v: None, x)
    return jnp.sin(x)

  x = np.float32(1)
  for jaxpr in (jax.make_jaxpr(lambda x, t: jax.jvp(f, (x,), (t,)))(x, x),
                jax.make_jaxpr(jax.grad(f))(x)):
    assert [e.primitive.name for e in jaxpr.jaxpr.eqns].count("debug_callback") == 1
