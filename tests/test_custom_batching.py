"""Tests of refimpl/custom_batching.py: `custom_vmap` and `sequential_vmap`."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl.custom_batching import custom_vmap, sequential_vmap
from conformance import strategies as S


def _mul_rule_f():
  """JAX's docstring example: `x + y`, whose vmap rule computes `x * y`."""
  @custom_vmap
  def f(x, y):
    return x + y

  @f.def_vmap
  def f_vmap_rule(axis_size, in_batched, xs, ys):
    f.calls.append((axis_size, list(in_batched)))
    return xs * ys, any(in_batched)

  f.calls = []
  return f


def test_docstring_example_uses_the_rule_only_under_vmap():
  f = _mul_rule_f()
  xs, ys = jnp.arange(3), jnp.arange(1, 4)
  np.testing.assert_array_equal(jax.vmap(f)(xs, ys), [0, 2, 6])
  np.testing.assert_array_equal(f(xs, ys), [1, 3, 5])
  np.testing.assert_array_equal(jax.jit(jax.vmap(f))(xs, ys), [0, 2, 6])
  assert f.calls[0] == (3, [True, True])


def test_rule_sees_which_arguments_are_batched():
  f = _mul_rule_f()
  out = jax.vmap(f, in_axes=(0, None))(jnp.arange(3.0), 2.0)
  np.testing.assert_array_equal(out, [0.0, 2.0, 4.0])
  assert f.calls[-1] == (3, [True, False])


def test_unbatched_output_of_the_rule_is_broadcast():
  @custom_vmap
  def f(x):
    return x

  @f.def_vmap
  def rule(axis_size, in_batched, xs):
    return jnp.float32(7.0), False

  np.testing.assert_array_equal(jax.vmap(f)(jnp.arange(3.0)), [7.0, 7.0, 7.0])


def test_jaxpr_of_vmap_is_the_rule():
  f = _mul_rule_f()
  jaxpr = str(jax.make_jaxpr(jax.vmap(f))(jnp.arange(3.0), jnp.arange(3.0)))
  assert "mul" in jaxpr and "custom_vmap_call" not in jaxpr
  assert "custom_vmap_call" in str(jax.make_jaxpr(f)(1.0, 2.0))


@given(st.data())
def test_jvp_of_vmap_and_vmap_of_jvp_use_the_rule(data):
  n = data.draw(st.integers(1, 4))
  x, y, tx, ty = (data.draw(S.arrays(np.float32, (n,), elements=S.bounded_elements(
      np.float32, -3, 3))) for _ in range(4))
  f = _mul_rule_f()
  expected = (x * y, tx * y + x * ty)   # the derivative of the rule, x * y
  out = jax.jvp(jax.vmap(f), (x, y), (tx, ty))
  np.testing.assert_allclose(out[0], expected[0], rtol=1e-6)
  np.testing.assert_allclose(out[1], expected[1], rtol=1e-5, atol=1e-6)
  out = jax.vmap(lambda a, b, ta, tb: jax.jvp(f, (a, b), (ta, tb)))(x, y, tx, ty)
  np.testing.assert_allclose(out[0], expected[0], rtol=1e-6)
  np.testing.assert_allclose(out[1], expected[1], rtol=1e-5, atol=1e-6)


def test_jvp_with_unbatched_tangents():
  f = _mul_rule_f()
  x, y = jnp.arange(3.0), jnp.arange(1.0, 4.0)
  primal, tangent = jax.vmap(lambda a, b: jax.jvp(f, (a, b), (1.0, 1.0)))(x, y)
  np.testing.assert_allclose(primal, x * y)
  np.testing.assert_allclose(tangent, x + y)


def test_reverse_mode_is_not_supported():
  f = _mul_rule_f()
  with pytest.raises(TypeError, match="custom_vmap function is not supported"):
    jax.grad(f)(1.0, 2.0)


def test_custom_vjp_wrapping_custom_vmap():
  """JAX's docstring example: custom_vjp outside, custom_vmap inside."""
  @jax.custom_vjp
  @custom_vmap
  def f(x, y):
    return jnp.sin(x) * y

  @f.def_vmap
  def f_vmap_rule(axis_size, in_batched, xs, ys):
    return jnp.cos(xs) * ys, True

  def f_fwd(x, y):
    return f(x, y), (jnp.cos(x), jnp.sin(x), y)

  def f_bwd(res, g):
    cos_x, sin_x, y = res
    return (cos_x * g * y, sin_x * g)

  f.defvjp(f_fwd, f_bwd)
  np.testing.assert_array_equal(jax.vmap(f)(jnp.zeros(3), jnp.ones(3)), [1.0, 1.0, 1.0])
  assert jax.grad(f)(jnp.zeros(()), jnp.ones(())) == 1.0


def test_errors():
  @custom_vmap
  def f(x):
    return x, x

  with pytest.raises(AttributeError, match="No batching rule defined"):
    f(1.0)

  @f.def_vmap
  def bad_spec(axis_size, in_batched, xs):
    return (xs, xs), True

  with pytest.raises(ValueError, match="output batching specification"):
    jax.vmap(f)(jnp.arange(3.0))

  @f.def_vmap
  def bad_structure(axis_size, in_batched, xs):
    return [xs, xs], [True, True]

  with pytest.raises(ValueError, match="does not match that of original"):
    jax.vmap(f)(jnp.arange(3.0))


def test_sequential_vmap_calls_the_function_per_member(capsys):
  @sequential_vmap
  def f(x):
    jax.debug.print("{}", x)
    return x + 1

  out = jax.vmap(f)(jnp.arange(3))
  np.testing.assert_array_equal(out, [1, 2, 3])
  assert capsys.readouterr().out == "0\n1\n2\n"


def test_sequential_vmap_with_unbatched_and_pytree_arguments():
  @sequential_vmap
  def f(p, x):
    return {"s": p["a"] * x.sum(), "x": x}

  p = {"a": jnp.float32(2.0)}
  xs = jnp.arange(6.0).reshape(3, 2)
  out = jax.vmap(f, in_axes=(None, 0))(p, xs)
  np.testing.assert_array_equal(out["s"], 2.0 * np.arange(6.0).reshape(3, 2).sum(1))
  np.testing.assert_array_equal(out["x"], xs)
