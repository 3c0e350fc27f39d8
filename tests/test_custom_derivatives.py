"""Tests of refimpl/custom_derivatives.py: custom_jvp, custom_vjp,
custom_gradient and closure_convert, including the examples of JAX's
"Custom derivative rules for JAX-transformable Python functions"."""

import functools
import re

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import core
from refimpl.custom_derivatives import CustomJVPException, CustomVJPException
from refimpl.interpreters import ad


def f32(x):
  return np.asarray(x, np.float32)


# --- custom_jvp ----------------------------------------------------------------

@jax.custom_jvp
def log1pexp(x):
  return jnp.log(1. + jnp.exp(x))


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
  x, = primals
  x_dot, = tangents
  ans = log1pexp(x)
  ans_dot = (1 - 1 / (1 + jnp.exp(x))) * x_dot
  return ans, ans_dot


def test_log1pexp_doc_example():
  # Without the rule the gradient at 100. is nan (inf / inf); with it, 1.
  naive = lambda x: jnp.log(1. + jnp.exp(x))
  assert np.isnan(jax.grad(naive)(100.))
  np.testing.assert_allclose(log1pexp(3.), np.log1p(np.exp(3.)), rtol=1e-6)
  assert float(jax.grad(log1pexp)(100.)) == 1.0
  assert float(jax.jit(jax.grad(log1pexp))(100.)) == 1.0
  assert float(jax.grad(jax.jit(log1pexp))(100.)) == 1.0
  np.testing.assert_allclose(jax.grad(log1pexp)(0.), 0.5)


def test_custom_jvp_decorator_returns_the_rule():
  @jax.custom_jvp
  def f(x):
    return x

  def rule(primals, tangents):
    return primals[0], tangents[0]

  assert f.defjvp(rule) is rule


def test_custom_jvp_rule_is_really_used():
  # A deliberately wrong rule: its tangent shows up everywhere.
  @jax.custom_jvp
  def f(x):
    return jnp.sin(x)

  @f.defjvp
  def f_jvp(primals, tangents):
    x, = primals
    t, = tangents
    return f(x), 10. * t

  x = f32(0.3)
  np.testing.assert_allclose(f(x), np.sin(0.3), rtol=1e-6)
  np.testing.assert_allclose(jax.jvp(f, (x,), (f32(2.),))[1], 20.)
  np.testing.assert_allclose(jax.grad(f)(x), 10.)
  np.testing.assert_allclose(jax.grad(jax.jit(f))(x), 10.)
  np.testing.assert_allclose(jax.jit(jax.grad(f))(x), 10.)
  np.testing.assert_allclose(jax.grad(lambda x: f(x) * 2.)(x), 20.)
  # The rule's own derivative gives the second derivative.
  np.testing.assert_allclose(jax.grad(jax.grad(f))(x), 0.)


def test_custom_jvp_multiple_args_and_jit():
  @jax.custom_jvp
  def f(x, y):
    return jnp.sin(x) * y

  @f.defjvp
  def f_jvp(primals, tangents):
    x, y = primals
    x_dot, y_dot = tangents
    return f(x, y), jnp.cos(x) * x_dot * y + jnp.sin(x) * y_dot

  x, y = f32(2.), f32(3.)
  np.testing.assert_allclose(jax.jit(f)(x, y), np.sin(2.) * 3., rtol=1e-6)
  gx, gy = jax.grad(f, argnums=(0, 1))(x, y)
  np.testing.assert_allclose((gx, gy), (np.cos(2.) * 3., np.sin(2.)), rtol=1e-6)
  _, t = jax.jvp(f, (x, y), (f32(1.), f32(0.)))
  np.testing.assert_allclose(t, np.cos(2.) * 3., rtol=1e-6)


def test_custom_jvp_defjvps():
  @jax.custom_jvp
  def f(x, y):
    return jnp.sin(x) * y

  f.defjvps(lambda x_dot, primal_out, x, y: jnp.cos(x) * x_dot * y,
            lambda y_dot, primal_out, x, y: jnp.sin(x) * y_dot)
  x, y = f32(2.), f32(3.)
  gx, gy = jax.grad(f, argnums=(0, 1))(x, y)
  np.testing.assert_allclose((gx, gy), (np.cos(2.) * 3., np.sin(2.)), rtol=1e-6)
  _, t = jax.jvp(f, (x, y), (f32(1.), f32(1.)))
  np.testing.assert_allclose(t, np.cos(2.) * 3. + np.sin(2.), rtol=1e-6)


def test_custom_jvp_defjvps_none_means_no_dependence():
  @jax.custom_jvp
  def f(x, y):
    return x * y

  f.defjvps(lambda x_dot, primal_out, x, y: x_dot * y, None)
  gx, gy = jax.grad(f, argnums=(0, 1))(f32(2.), f32(3.))
  np.testing.assert_allclose((gx, gy), (3., 0.))


def test_custom_jvp_nondiff_argnums():
  @functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
  def app(f, x):
    return f(x)

  @app.defjvp
  def app_jvp(f, primals, tangents):
    x, = primals
    x_dot, = tangents
    return f(x), 2. * x_dot

  cube = lambda x: x ** 3
  np.testing.assert_allclose(app(cube, 3.), 27.)
  np.testing.assert_allclose(jax.grad(app, 1)(cube, 3.), 2.)
  np.testing.assert_allclose(jax.jit(jax.grad(app, 1), static_argnums=0)(cube, 3.), 2.)


def test_custom_jvp_nondiff_argnums_python_int():
  @functools.partial(jax.custom_jvp, nondiff_argnums=(1,))
  def power(x, n):
    return x ** n

  @power.defjvp
  def power_jvp(n, primals, tangents):
    x, = primals
    t, = tangents
    return power(x, n), n * x ** (n - 1) * t

  np.testing.assert_allclose(jax.grad(power)(f32(2.), 3), 12.)


def test_nondiff_argnums_reach_the_rules_in_position_order_each_once():
  """As in JAX: nondiff_argnums=(2, 0, 2) is (0, 2); the rules get arguments 0 then 2."""
  def f(a, x, b):
    return a * 10 + b + x

  jvp_f = jax.custom_jvp(f, nondiff_argnums=(2, 0, 2))
  jvp_f.defjvp(lambda a, b, primals, tangents: (f(a, primals[0], b), (a - b) * tangents[0]))
  assert jax.jvp(lambda x: jvp_f(1., x, 2.), (0.5,), (1.,)) == (12.5, -1.)

  vjp_f = jax.custom_vjp(f, nondiff_argnums=(2, 0, 0))
  vjp_f.defvjp(lambda a, x, b: (f(a, x, b), None), lambda a, b, _, g: ((a - b) * g,))
  assert vjp_f(1., 0.5, 2.) == 12.5
  assert jax.grad(lambda x: vjp_f(1., x, 2.))(0.5) == -1.


def test_custom_jvp_symbolic_zeros_receives_zero_tangents():
  seen = []

  @jax.custom_jvp
  def f(x, y):
    return x * y

  def f_jvp(primals, tangents):
    x, y = primals
    x_dot, y_dot = tangents
    seen.append((type(x_dot), type(y_dot)))
    t = 0.
    if not isinstance(x_dot, ad.Zero):
      t = t + x_dot * y
    if not isinstance(y_dot, ad.Zero):
      t = t + x * y_dot
    return f(x, y), t

  f.defjvp(f_jvp, symbolic_zeros=True)
  g = jax.grad(f)(f32(2.), f32(3.))   # y is not differentiated
  np.testing.assert_allclose(g, 3.)
  assert seen[-1][0] is not ad.Zero and seen[-1][1] is ad.Zero
  _, t = jax.jvp(lambda y: f(f32(2.), y), (f32(3.),), (f32(1.),))
  np.testing.assert_allclose(t, 2.)
  assert seen[-1][0] is ad.Zero and seen[-1][1] is not ad.Zero


def test_custom_jvp_without_symbolic_zeros_gets_instantiated_zeros():
  seen = []

  @jax.custom_jvp
  def f(x, y):
    return x * y

  @f.defjvp
  def f_jvp(primals, tangents):
    seen.append(tangents)
    x, y = primals
    x_dot, y_dot = tangents
    return f(x, y), x_dot * y + x * y_dot

  jax.grad(f)(f32(2.), f32(3.))
  y_dot = seen[-1][1]
  assert not isinstance(y_dot, ad.Zero)
  assert core.get_aval(y_dot).shape == () and core.get_aval(y_dot).dtype == np.float32


def test_custom_jvp_pytree_inputs_and_outputs():
  @jax.custom_jvp
  def f(p):
    return {"s": jnp.sin(p["x"]) * p["y"]}

  @f.defjvp
  def f_jvp(primals, tangents):
    p, = primals
    t, = tangents
    out = f(p)
    return out, {"s": jnp.cos(p["x"]) * p["y"] * t["x"] + jnp.sin(p["x"]) * t["y"]}

  g = jax.grad(lambda p: f(p)["s"])({"x": f32(1.), "y": f32(2.)})
  np.testing.assert_allclose((g["x"], g["y"]), (2 * np.cos(1.), np.sin(1.)), rtol=1e-6)


def test_custom_jvp_no_rule_raises_attribute_error():
  @jax.custom_jvp
  def f(x):
    return x

  with pytest.raises(AttributeError, match="No JVP defined for custom_jvp function f using "
                     "`defjvp`."):
    f(1.)


def test_custom_jvp_wrong_output_structure_raises_type_error():
  @jax.custom_jvp
  def f(x):
    return jnp.sin(x)

  @f.defjvp
  def f_jvp(primals, tangents):
    return f(primals[0]), (tangents[0], tangents[0])

  with pytest.raises(TypeError, match="Custom JVP rule f_jvp for function f must produce "
                     "primal and tangent outputs with equal container \\(pytree\\) structures"):
    jax.jvp(f, (f32(1.),), (f32(1.),))

  @jax.custom_jvp
  def g(x):
    return jnp.sin(x)

  @g.defjvp
  def g_jvp(primals, tangents):
    return g(primals[0])

  with pytest.raises(TypeError, match=re.escape(
      "Custom JVP rule g_jvp for function g must produce a pair (list or tuple of length "
      "two) representing primal and tangent outputs, but got")):
    jax.jvp(g, (f32(1.),), (f32(1.),))


def test_custom_jvp_wrong_tangent_shape_raises_type_error():
  @jax.custom_jvp
  def f(x):
    return jnp.sin(x)

  @f.defjvp
  def f_jvp(primals, tangents):
    return f(primals[0]), jnp.ones(3)

  with pytest.raises(TypeError, match=re.escape(
      "Custom JVP rule must produce primal and tangent outputs with corresponding shapes "
      "and dtypes. Expected f32[] (tangent type of f32[]) but got f32[3].")):
    jax.jvp(f, (f32(1.),), (f32(1.),))


def test_custom_jvp_closed_over_differentiated_value_raises():
  def g(x):
    @jax.custom_jvp
    def f(y):
      return x * y

    @f.defjvp
    def f_jvp(primals, tangents):
      return f(primals[0]), x * tangents[0]
    return f(f32(1.))

  with pytest.raises(CustomJVPException, match="Detected differentiation of a custom_jvp "
                     "function with respect to a closed-over value"):
    jax.grad(g)(f32(2.))


def test_custom_jvp_closed_over_nondifferentiated_value_is_fine():
  c = f32(3.)

  @jax.custom_jvp
  def f(y):
    return c * y

  @f.defjvp
  def f_jvp(primals, tangents):
    return f(primals[0]), c * tangents[0]

  np.testing.assert_allclose(jax.grad(f)(f32(1.)), 3.)


# --- custom_vjp ----------------------------------------------------------------

def make_f_sin_times_y():
  @jax.custom_vjp
  def f(x, y):
    return jnp.sin(x) * y

  def f_fwd(x, y):
    return f(x, y), (jnp.cos(x), jnp.sin(x), y)

  def f_bwd(res, g):
    cos_x, sin_x, y = res
    return (cos_x * g * y, sin_x * g)

  f.defvjp(f_fwd, f_bwd)
  return f


def test_custom_vjp_doc_example():
  f = make_f_sin_times_y()
  x, y = f32(2.), f32(3.)
  np.testing.assert_allclose(f(x, y), np.sin(2.) * 3., rtol=1e-6)
  np.testing.assert_allclose(jax.grad(f)(x, y), np.cos(2.) * 3., rtol=1e-6)
  gx, gy = jax.grad(f, argnums=(0, 1))(x, y)
  np.testing.assert_allclose((gx, gy), (np.cos(2.) * 3., np.sin(2.)), rtol=1e-6)
  np.testing.assert_allclose(jax.jit(f)(x, y), np.sin(2.) * 3., rtol=1e-6)
  np.testing.assert_allclose(jax.grad(jax.jit(f))(x, y), np.cos(2.) * 3., rtol=1e-6)
  np.testing.assert_allclose(jax.jit(jax.grad(f))(x, y), np.cos(2.) * 3., rtol=1e-6)


def test_custom_vjp_bwd_is_really_used():
  @jax.custom_vjp
  def f(x):
    return jnp.sin(x)

  f.defvjp(lambda x: (f(x), None), lambda _, g: (7. * g,))
  np.testing.assert_allclose(jax.grad(f)(f32(0.5)), 7.)
  np.testing.assert_allclose(jax.grad(lambda x: 2. * f(x))(f32(0.5)), 14.)
  _, f_vjp = jax.vjp(f, f32([1., 2.]))
  np.testing.assert_allclose(f_vjp(f32([1., -1.]))[0], [7., -7.])


def test_clip_gradient_doc_example():
  @functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1))
  def clip_gradient(lo, hi, x):
    return x

  def clip_gradient_fwd(lo, hi, x):
    return x, None

  def clip_gradient_bwd(lo, hi, _, g):
    return (jnp.clip(g, lo, hi),)

  clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)

  def clipped_sin(x):
    return jnp.sin(clip_gradient(-0.75, 0.75, x))

  np.testing.assert_allclose(clipped_sin(f32(1.)), np.sin(1.), rtol=1e-6)
  np.testing.assert_allclose(jax.grad(clipped_sin)(f32(1.)), np.cos(1.), rtol=1e-6)
  np.testing.assert_allclose(jax.grad(clipped_sin)(f32(0.)), 0.75)
  np.testing.assert_allclose(jax.grad(clipped_sin)(f32(np.pi)), -0.75)


def test_custom_vjp_pytree_residuals_and_arguments():
  @jax.custom_vjp
  def f(p, z):
    return {"out": p["a"] * p["b"] * z}

  def fwd(p, z):
    return f(p, z), {"p": p, "z": [z, (jnp.sin(z),)]}

  def bwd(res, ct):
    p, z = res["p"], res["z"][0]
    g = ct["out"]
    return {"a": g * p["b"] * z, "b": g * p["a"] * z}, g * p["a"] * p["b"]

  f.defvjp(fwd, bwd)
  p = {"a": f32(2.), "b": f32(3.)}
  gp, gz = jax.grad(lambda p, z: f(p, z)["out"], argnums=(0, 1))(p, f32(5.))
  np.testing.assert_allclose((gp["a"], gp["b"], gz), (15., 10., 6.))


def test_custom_vjp_none_cotangents_mean_zero():
  @jax.custom_vjp
  def f(x, y):
    return x * y

  f.defvjp(lambda x, y: (f(x, y), y), lambda y, g: (g * y, None))
  gx, gy = jax.grad(f, argnums=(0, 1))(f32(2.), f32(3.))
  np.testing.assert_allclose((gx, gy), (3., 0.))
  assert gy.dtype == np.float32 and gy.shape == ()


def test_custom_vjp_nondiff_argnums_function_argument():
  @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
  def apply(f, x):
    return f(x)

  def fwd(f, x):
    return f(x), x

  def bwd(f, x, g):
    return (jax.grad(f)(x) * g * 100.,)

  apply.defvjp(fwd, bwd)
  np.testing.assert_allclose(jax.grad(lambda x: apply(jnp.sin, x))(f32(0.)), 100.)


def test_custom_vjp_bwd_wrong_structure_raises():
  @jax.custom_vjp
  def f(x, y):
    return x * y

  f.defvjp(lambda x, y: (f(x, y), (x, y)), lambda res, g: (g,))
  with pytest.raises(TypeError, match="Custom VJP bwd rule must produce an output with the "
                     "same container \\(pytree\\) structure as the args tuple of the primal "
                     "function, and in particular must produce a tuple of length equal to "
                     "the number of arguments to the primal function"):
    jax.grad(f)(f32(2.), f32(3.))


def test_custom_vjp_bwd_wrong_shape_raises():
  @jax.custom_vjp
  def f(x):
    return x * 2.

  f.defvjp(lambda x: (f(x), None), lambda _, g: (jnp.ones(3),))
  with pytest.raises(ValueError, match="Custom VJP bwd rule must produce an output with the "
                     "same shape/dtypes as the args tuple of the primal function"):
    jax.grad(f)(f32(2.))


def test_custom_vjp_forward_mode_raises():
  f = make_f_sin_times_y()
  msg = "can't apply forward-mode autodiff \\(jvp\\) to a custom_vjp function."
  with pytest.raises(TypeError, match=msg):
    jax.jvp(f, (f32(1.), f32(2.)), (f32(1.), f32(0.)))
  with pytest.raises(TypeError, match=msg):
    jax.jacfwd(f)(f32(1.), f32(2.))


def test_custom_vjp_no_rule_raises_attribute_error():
  @jax.custom_vjp
  def f(x):
    return x

  with pytest.raises(AttributeError, match="No VJP defined for custom_vjp function f using "
                     "`defvjp`."):
    f(1.)


def test_custom_vjp_closed_over_differentiated_value_raises():
  def g(x):
    @jax.custom_vjp
    def f(y):
      return x * y

    f.defvjp(lambda y: (f(y), y), lambda y, ct: (x * ct,))
    return f(f32(1.))

  with pytest.raises(CustomVJPException, match="Detected differentiation of a custom_vjp "
                     "function with respect to a closed-over value"):
    jax.grad(g)(f32(2.))


def test_custom_vjp_higher_order_differentiates_fwd_and_bwd():
  # Second derivatives differentiate the rules themselves: reverse over
  # reverse, and forward over reverse (fwd and bwd see forward-mode tracers;
  # fwd does not call f itself, which forward mode could not differentiate).
  @jax.custom_vjp
  def f(x):
    return jnp.sin(x)

  f.defvjp(lambda x: (jnp.sin(x), jnp.cos(x)), lambda cos_x, g: (cos_x * g,))
  x = f32(1.)
  np.testing.assert_allclose(jax.grad(jax.grad(f))(x), -np.sin(1.), rtol=1e-6)
  np.testing.assert_allclose(jax.jacrev(jax.jacrev(f))(x), -np.sin(1.), rtol=1e-6)
  np.testing.assert_allclose(jax.hessian(f)(x), -np.sin(1.), rtol=1e-6)
  np.testing.assert_allclose(jax.jvp(jax.grad(f), (x,), (f32(1.),))[1], -np.sin(1.),
                             rtol=1e-6)
  # Reverse over reverse also works when fwd calls f.
  np.testing.assert_allclose(jax.grad(jax.grad(make_f_sin_times_y()))(x, f32(2.)),
                             -2 * np.sin(1.), rtol=1e-6)


def test_custom_vjp_of_custom_jvp_inside():
  # Differentiating fwd's computation is not needed: only bwd runs backwards.
  f = make_f_sin_times_y()
  np.testing.assert_allclose(jax.grad(lambda x: log1pexp(f(x, f32(1.))))(f32(0.)),
                             0.5, rtol=1e-6)


# --- custom_gradient -------------------------------------------------------------

def test_custom_gradient_doc_example():
  @jax.custom_gradient
  def f(x):
    return x ** 2, lambda g: (g * x,)

  np.testing.assert_allclose(f(3.), 9.)
  np.testing.assert_allclose(jax.grad(f)(3.), 3.)
  np.testing.assert_allclose(jax.jit(jax.grad(f))(3.), 3.)


def test_custom_gradient_two_arguments_and_single_value_cotangent():
  @jax.custom_gradient
  def f(x, y):
    return x * y, lambda g: (g * 10., g * 20.)

  np.testing.assert_allclose(jax.grad(f, argnums=(0, 1))(f32(2.), f32(3.)), (10., 20.))

  @jax.custom_gradient
  def h(x):
    return jnp.sin(x), lambda g: g * 5.   # a bare value for a single argument

  np.testing.assert_allclose(jax.grad(h)(f32(1.)), 5.)


# --- closure_convert -------------------------------------------------------------

def test_closure_convert_equals_original_and_hoists_perturbed_values():
  def outer(x):
    def inner(y):
      return jnp.sin(x * y)

    converted, consts = jax.closure_convert(inner, f32(1.))
    np.testing.assert_allclose(converted(f32(2.), *consts), inner(f32(2.)), rtol=1e-6)
    return converted, consts

  # Under differentiation, the closed-over x is a perturbed value: hoisted.
  def check(x):
    _, consts = outer(x)
    assert len(consts) == 1 and isinstance(consts[0], core.Tracer)
    return x
  jax.grad(check)(f32(0.5))


def test_closure_convert_keeps_unperturbed_constants_closed():
  # JAX hoists only values that may be perturbed by differentiation
  # (tracers); concrete closed-over arrays stay in the function.
  w = f32([1., 2., 3.])
  converted, consts = jax.closure_convert(lambda y: w * y, f32(1.))
  assert consts == []
  np.testing.assert_allclose(converted(f32(2.)), [2., 4., 6.])


def test_closure_convert_with_custom_vjp_differentiates_closed_over_value():
  @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
  def apply(fn, y, *consts):
    return fn(y, *consts)

  def fwd(fn, y, *consts):
    return fn(y, *consts), (y, consts)

  def bwd(fn, res, g):
    y, consts = res
    _, fn_vjp = jax.vjp(fn, y, *consts)
    return fn_vjp(g)

  apply.defvjp(fwd, bwd)

  def f(x):
    inner = lambda y: jnp.sin(x * y)
    converted, consts = jax.closure_convert(inner, f32(2.))
    return apply(converted, f32(2.), *consts)

  np.testing.assert_allclose(f(f32(0.3)), np.sin(0.6), rtol=1e-6)
  np.testing.assert_allclose(jax.grad(f)(f32(0.3)), 2 * np.cos(0.6), rtol=1e-6)


def test_custom_jvp_defaults_are_filled_in_for_the_rule():
  """Unpassed defaults reach the rule, positional, as in JAX."""
  @functools.partial(jax.custom_jvp, nondiff_argnums=(1,))
  def scaled(x, k=3.0):
    return k * x

  @scaled.defjvp
  def scaled_jvp(k, primals, tangents):
    (x,), (t,) = primals, tangents
    return scaled(x, k), 2 * k * t   # deliberately not the true derivative

  assert jax.grad(scaled)(1.0) == 6.0
  assert jax.grad(lambda x: scaled(x, k=5.0))(1.0) == 10.0


def test_custom_jvp_nondiff_tracer_arguments_have_stopped_gradients():
  """As JAX: a traced value at a nondiff position is not differentiated (its
  derivative is zero), instead of raising as a closed-over value would."""
  @functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
  def scale(k, x):
    return k * x

  @scale.defjvp
  def scale_jvp(k, primals, tangents):
    return scale(k, primals[0]), k * tangents[0]

  assert jax.grad(lambda k: scale(k, 2.0))(3.0) == 0.0
  assert jax.grad(lambda x: scale(3.0, x))(2.0) == 3.0
  assert jax.grad(lambda x: scale(x, x))(2.0) == 2.0   # only the differentiable use
