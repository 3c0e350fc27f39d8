"""Tests of refimpl/autodiff.py: jvp, linearize, vjp, grad, value_and_grad,
jacfwd, jacrev, jacobian, hessian and linear_transpose, with JAX's
signatures, pytree handling, error messages and float0 conventions."""

import collections
import re

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from conformance.strategies import arrays, bounded_arrays, bounded_elements
from refimpl import core, dtypes, lax
from refimpl.jaxpr import dce_jaxpr, jaxprs_in_params

float0 = dtypes.float0


def f32(x):
  return np.asarray(x, np.float32)


def numeric_jacobian(f, x, eps=1e-6):
  """Central-difference Jacobian of `f` (float64 NumPy array to array) at `x`:
  shape f(x).shape + x.shape."""
  x = np.asarray(x, np.float64)
  cols = []
  for i in range(x.size):
    dx = np.zeros(x.size)
    dx[i] = eps
    dx = dx.reshape(x.shape)
    cols.append((np.asarray(f(x + dx)) - np.asarray(f(x - dx))) / (2 * eps))
  out_shape = np.shape(f(x))
  return np.stack(cols, axis=-1).reshape(out_shape + x.shape)


def prims(jaxpr):
  """The primitive names of a (closed) jaxpr's equations, nested jaxprs included."""
  names = []
  for eqn in jaxpr.eqns:
    names.append(eqn.primitive.name)
    names += [n for sub in jaxprs_in_params(eqn.params) for n in prims(sub)]
  return names


# --- jvp -----------------------------------------------------------------------

def test_jvp_scalar():
  y, t = jax.jvp(jnp.sin, (f32(0.5),), (f32(2.),))
  np.testing.assert_allclose(y, np.sin(np.float32(0.5)), rtol=1e-6)
  np.testing.assert_allclose(t, 2 * np.cos(np.float32(0.5)), rtol=1e-6)
  assert t.dtype == np.float32 and t.shape == ()


def test_jvp_pytrees_in_and_out():
  def f(d, x):
    return {"s": d["a"] * x[0], "t": (d["b"] + x[1], jnp.sin(x[0]))}

  primals = ({"a": f32(2.), "b": f32([1., 2.])}, [f32(3.), f32([4., 5.])])
  tangents = ({"a": f32(1.), "b": f32([0., 1.])}, [f32(0.5), f32([1., 1.])])
  out, tout = jax.jvp(f, primals, tangents)
  assert set(out) == {"s", "t"} and isinstance(out["t"], tuple)
  np.testing.assert_allclose(out["s"], 6.)
  np.testing.assert_allclose(tout["s"], 1. * 3. + 2. * 0.5)
  np.testing.assert_allclose(tout["t"][0], [1., 2.])
  np.testing.assert_allclose(tout["t"][1], np.cos(3.) * 0.5, rtol=1e-6)


def test_jvp_has_aux():
  def f(x):
    return jnp.sin(x), {"aux": jnp.cos(x)}

  y, t, aux = jax.jvp(f, (f32(1.),), (f32(1.),), has_aux=True)
  np.testing.assert_allclose(t, np.cos(1.), rtol=1e-6)
  np.testing.assert_allclose(aux["aux"], np.cos(1.), rtol=1e-6)
  assert not isinstance(aux["aux"], core.Tracer)


def test_jvp_output_independent_of_input_gives_zero_tangent():
  y, t = jax.jvp(lambda x, y: y * 2., (f32(1.), f32(3.)), (f32(1.), f32(0.)))
  assert t.shape == () and t.dtype == np.float32 and float(t) == 0.
  _, t = jax.jvp(lambda x: jnp.ones(3), (f32(1.),), (f32(1.),))
  np.testing.assert_array_equal(t, np.zeros(3, np.float32))


def test_jvp_tree_mismatch_raises_type_error():
  msg = "primal and tangent arguments to jax.jvp must have the same tree structure"
  with pytest.raises(TypeError, match=msg):
    jax.jvp(lambda x, y: x * y, (f32(2.),), ())
  with pytest.raises(TypeError, match=msg):
    jax.jvp(lambda x: x["a"], ({"a": f32(1.)},), ({"b": f32(1.)},))


def test_jvp_tuple_versus_list_is_a_tree_mismatch():
  # JAX: "If primals and tangents must both be tuples or both lists".
  with pytest.raises(TypeError, match="must have the same tree structure"):
    jax.jvp(lambda x: x * 2., (f32(2.),), [f32(2.)])


def test_jvp_non_tuple_arguments():
  with pytest.raises(TypeError, match=re.escape(
      "primal and tangent arguments to jax.jvp must be tuples or lists; found float "
      "and tuple.")):
    jax.jvp(lambda x: x, 0., (1.,))


def test_jvp_shape_mismatch_raises_value_error():
  with pytest.raises(ValueError, match="jvp called with different primal and tangent shapes"):
    jax.jvp(lambda x: x + 1, (jnp.array([1., 2., 3.]),), (jnp.array([1., 2., 3., 4.]),))
  with pytest.raises(ValueError, match="jvp called with different primal and tangent shapes"):
    jax.jvp(lambda x: x + 1, (jnp.float32(10.),), (jnp.ones(3),))


def test_jvp_dtype_mismatch_raises_type_error():
  with pytest.raises(TypeError, match="primal and tangent arguments to jax.jvp do not match; "
                     "dtypes must be equal"):
    jax.jvp(lambda x: -x, (np.float16(2),), (np.float32(4),))
  # An integer primal needs a float0 tangent.
  with pytest.raises(TypeError, match="expected tangent dtype float0"):
    jax.jvp(lambda x: x, (np.int32(1),), (np.float32(1.),))


def test_jvp_int_input_float0_tangent():
  _, out = jax.jvp(lambda x: x + 1, (np.int32(2),), (np.zeros((), float0),))
  assert out.dtype == float0 and out.shape == ()
  # Mixed float and int arguments: the int contributes nothing.
  y, t = jax.jvp(lambda x, n: x * n, (f32(2.), np.int32(3)), (f32(1.), np.zeros((), float0)))
  np.testing.assert_allclose(y, 6.)
  np.testing.assert_allclose(t, 3.)


def test_jvp_of_jit_with_cached_inner_calls():
  # JAX's test_jvp_jit_cached: two calls to the same jitted closure.
  def func(x):
    def inner(y):
      return y * x
    return jax.jit(inner)(4.) + jax.jit(inner)(5.)

  y, t = jax.jvp(func, (5.,), (1.,))
  np.testing.assert_allclose((y, t), (45., 9.))


# --- linearize -------------------------------------------------------------------

def test_linearize_matches_jvp():
  f = lambda x, y: jnp.sin(x) * y + jnp.exp(y)
  x, y = f32([0.1, 0.2, 0.3]), f32([1., 2., 3.])
  tx, ty = f32([1., 0., -1.]), f32([0.5, 0.5, 2.])
  out, f_jvp = jax.linearize(f, x, y)
  out2, t2 = jax.jvp(f, (x, y), (tx, ty))
  np.testing.assert_allclose(out, out2, rtol=1e-6)
  np.testing.assert_allclose(f_jvp(tx, ty), t2, rtol=1e-6)
  # Applying it again, to other tangents, is linear.
  np.testing.assert_allclose(f_jvp(2 * tx, 2 * ty), 2 * t2, rtol=1e-6)
  np.testing.assert_allclose(f_jvp(tx, ty), t2, rtol=1e-6)


def test_linearize_traces_the_function_once():
  calls = []

  def f(x):
    calls.append(1)
    return jnp.sin(x) * 3.

  _, f_jvp = jax.linearize(f, f32(1.))
  f_jvp(f32(1.))
  f_jvp(f32(2.))
  assert len(calls) == 1


def test_linearize_pytrees_and_has_aux():
  def f(p):
    return {"y": p["w"] * p["x"]}, p["x"] + 1.

  p = {"w": f32(2.), "x": f32(3.)}
  out, f_jvp, aux = jax.linearize(f, p, has_aux=True)
  np.testing.assert_allclose(out["y"], 6.)
  np.testing.assert_allclose(aux, 4.)
  t = f_jvp({"w": f32(1.), "x": f32(0.)})
  np.testing.assert_allclose(t["y"], 3.)


def test_linearize_tangent_errors():
  # JAX's issue 871: the tangents do not fit the primals.
  msg = ("linearized function called on tangent values inconsistent with "
         "the original primal values")
  x = jnp.array([1., 2., 3.])
  _, f_jvp = jax.linearize(jnp.sum, x)
  with pytest.raises(ValueError, match=msg):
    f_jvp(jnp.array([[1., 2.], [3., 4.], [5., 6.]]))


# --- vjp -------------------------------------------------------------------------

def test_vjp_pytree_cotangents():
  def f(x, y):
    return {"a": jnp.sin(x) * y, "b": (x * 2., y)}

  x, y = f32([0.5, 1.]), f32(3.)
  out, f_vjp = jax.vjp(f, x, y)
  ct = {"a": f32([1., 2.]), "b": (f32([1., 1.]), f32(1.))}
  gx, gy = f_vjp(ct)
  np.testing.assert_allclose(gx, np.cos([0.5, 1.]) * 3. * [1., 2.] + 2., rtol=1e-6)
  np.testing.assert_allclose(gy, np.sum(np.sin([0.5, 1.]) * [1., 2.]) + 1., rtol=1e-6)


def test_vjp_returns_a_tuple_shaped_like_primals():
  _, f_vjp = jax.vjp(lambda p: p["w"] * 2., {"w": f32(1.)})
  (g,) = f_vjp(f32(1.))
  assert isinstance(g, dict) and float(g["w"]) == 2.


def test_vjp_has_aux():
  out, f_vjp, aux = jax.vjp(lambda x: (x ** 2, [x, 4.]), f32(3.), has_aux=True)
  np.testing.assert_allclose(out, 9.)
  np.testing.assert_allclose(f_vjp(f32(1.))[0], 6.)
  np.testing.assert_allclose(aux[0], 3.)
  assert not isinstance(aux[0], core.Tracer)


# JAX >= 0.4.14 raises ValueError for every pullback argument mismatch
# ("unexpected tree structure ..." / "unexpected JAX type (e.g. shape/dtype)
# for argument to vjp function: got ..., but expected ..."); the newest
# versions write "VJP function".

def test_vjp_cotangent_tree_mismatch():
  _, pullback = jax.vjp(lambda x, y: x * y, np.float32(3), np.float32(4))
  with pytest.raises(ValueError, match="unexpected tree structure"):
    pullback((np.float32(7), np.float32(100)))


def test_vjp_cotangent_shape_mismatch():
  _, pullback = jax.vjp(jnp.sin, jnp.ones(3))
  with pytest.raises(ValueError, match=re.compile(re.escape(
      "unexpected JAX type (e.g. shape/dtype) for argument to vjp function: got f32[2], "
      "but expected f32[3]"), re.IGNORECASE)):
    pullback(jnp.ones(2))


def test_vjp_cotangent_dtype_mismatch():
  _, pullback = jax.vjp(lambda x, y: x * y, np.float32(3), np.float32(4))
  with pytest.raises(ValueError, match=re.compile(re.escape(
      "unexpected JAX type (e.g. shape/dtype) for argument to vjp function: got f16[], "
      "but expected f32[]"), re.IGNORECASE)):
    pullback(np.float16(42))


def test_vjp_integer_output_cotangent():
  _, f_vjp = jax.vjp(lambda x: (x * 2., jnp.ones(2, jnp.int32)), f32(3.))
  (g,) = f_vjp((f32(1.), np.zeros(2, float0)))
  np.testing.assert_allclose(g, 2.)
  # JAX's "temporary dtype exception": where a float0 cotangent is expected,
  # any dtype of the right shape is accepted (and ignored).
  (g,) = f_vjp((f32(1.), np.ones(2, np.int32)))
  np.testing.assert_allclose(g, 2.)


def test_vjp_of_int_index():
  # JAX's test_vjp_of_int_index.
  primal, fn_vjp = jax.vjp(lambda x, i: x[i], np.ones(2, np.float32) * 2, 1)
  tangent_x, tangent_i = fn_vjp(f32(1.))
  assert float(primal) == 2.
  np.testing.assert_array_equal(tangent_x, [0., 1.])
  assert tangent_i.dtype == float0 and tangent_i.shape == ()


# --- grad and value_and_grad ---------------------------------------------------------

def test_grad_argnums():
  f = lambda x, y, z: x * y * z
  args = (f32(2.), f32(3.), f32(5.))
  assert float(jax.grad(f)(*args)) == 15.
  assert float(jax.grad(f, argnums=1)(*args)) == 10.
  assert float(jax.grad(f, argnums=-1)(*args)) == 6.
  g = jax.grad(f, argnums=(0, 2))(*args)
  assert isinstance(g, tuple) and len(g) == 2
  np.testing.assert_allclose(g, (15., 6.))
  (g0,) = jax.grad(f, argnums=(0,))(*args)
  assert float(g0) == 15.


def test_grad_argnums_out_of_range():
  with pytest.raises(TypeError, match=re.escape(
      "differentiating with respect to argnums=2 requires at least 3 positional "
      "arguments to be passed by the caller, but got only 2 positional arguments.")):
    jax.grad(lambda x, y: x * y, argnums=2)(1., 2.)


def test_grad_pytree_argument():
  Point = collections.namedtuple("Point", ["x", "y"])
  g = jax.grad(lambda p: jnp.sqrt(p.x ** 2 + p.y ** 2))(Point(f32(3.), f32(4.)))
  assert isinstance(g, Point)
  np.testing.assert_allclose(g, (0.6, 0.8), rtol=1e-6)
  g = jax.grad(lambda d: d["a"][0] * d["b"])({"a": [f32(2.)], "b": f32(5.)})
  assert float(g["a"][0]) == 5. and float(g["b"]) == 2.


def test_grad_has_aux():
  g, aux = jax.grad(lambda x: (x ** 3, [x ** 2]), has_aux=True)(3.)
  np.testing.assert_allclose(g, 27.)
  np.testing.assert_allclose(aux[0], 9.)
  (v, aux), g = jax.value_and_grad(lambda x: (x ** 3, {"sq": x ** 2}), has_aux=True)(2.)
  np.testing.assert_allclose((v, aux["sq"], g), (8., 4., 12.))


def test_grad_has_aux_wrong_output():
  for bad in (lambda x: (1, 2, 3), lambda x: x, lambda x: (x,)):
    with pytest.raises(TypeError, match="two-element tuple"):
      jax.grad(bad, has_aux=True)(1.)


def test_grad_nested_has_aux():
  def f(x):
    _, aux = jax.grad(lambda x: (x ** 3, [x ** 3]), has_aux=True)(x)
    return aux[0]

  np.testing.assert_allclose(jax.grad(f)(4.), 48.)
  np.testing.assert_allclose(jax.jit(jax.grad(f))(4.), 48.)


def test_grad_keeps_weak_type():
  # JAX seeds the backward pass with full_like(output, 1): a weakly typed
  # output (from Python scalars) gives a weakly typed gradient (JAX PR 8661,
  # "Make autodiff respect weak types": grad(jnp.sin)(0.0) is weak).
  assert core.get_aval(jax.grad(jnp.sin)(0.)).weak_type
  assert core.get_aval(jax.grad(lambda x: x * 2.)(3.)).weak_type
  assert not core.get_aval(jax.grad(lambda x: x * 2.)(f32(3.))).weak_type


def test_value_and_grad():
  v, g = jax.value_and_grad(lambda x, y: jnp.sin(x) * y)(f32(1.), f32(2.))
  np.testing.assert_allclose(v, 2 * np.sin(1.), rtol=1e-6)
  np.testing.assert_allclose(g, 2 * np.cos(1.), rtol=1e-6)
  v, (gx, gy) = jax.value_and_grad(lambda x, y: x * y, argnums=(0, 1))(f32(3.), f32(4.))
  np.testing.assert_allclose((v, gx, gy), (12., 4., 3.))


def test_grad_kwargs_are_passed_through_not_differentiated():
  def f(x, *, scale):
    return x * x * scale

  np.testing.assert_allclose(jax.grad(f)(f32(3.), scale=f32(2.)), 12.)
  np.testing.assert_allclose(jax.value_and_grad(f)(f32(3.), scale=2.)[0], 18.)


def test_grad_scalar_output_required():
  with pytest.raises(TypeError, match=re.escape(
      "Gradient only defined for scalar-output functions. Output had shape: (3,).")):
    jax.grad(lambda x: x * 2)(jnp.ones(3))


def test_grad_integer_input_raises():
  with pytest.raises(TypeError, match=re.escape(
      "grad requires real- or complex-valued inputs (input dtype that is a sub-dtype of "
      "np.inexact), but got int32. If you want to use Boolean- or integer-valued "
      "inputs, use vjp or set allow_int to True.")):
    jax.grad(lambda x: x ** 2)(3)


def test_grad_allow_int_gives_float0():
  gx, gn = jax.grad(lambda x, n: x * n, argnums=(0, 1), allow_int=True)(f32(2.), np.int32(3))
  np.testing.assert_allclose(gx, 3.)
  assert gn.dtype == float0 and gn.shape == ()
  g = jax.grad(lambda n: jnp.float32(1.) * 2., allow_int=True)(np.arange(3, dtype=np.int32))
  assert g.dtype == float0 and g.shape == (3,)
  for grad_of in (jax.grad, lambda f, **kw: jax.jit(jax.grad(f, **kw))):   # NumPy arrays, as in JAX
    g = grad_of(lambda n: jnp.sum(n * 1.0), allow_int=True)(np.arange(3, dtype=np.int32))
    assert type(g) is np.ndarray and g.dtype == float0 and g.shape == (3,)


def test_grad_complex_output_raises():
  with pytest.raises(TypeError, match=re.escape(
      "grad requires real-valued outputs (output dtype that is a sub-dtype of "
      "np.floating), but got complex64. For holomorphic differentiation, pass "
      "holomorphic=True.")):
    jax.grad(jnp.sin)(np.complex64(1 + 2j))


def test_grad_integer_output_raises():
  with pytest.raises(TypeError, match="grad requires real-valued outputs"):
    jax.grad(lambda x: jnp.int32(1), allow_int=True)(np.int32(3))


def test_grad_holomorphic():
  out = jax.grad(jnp.sin, holomorphic=True)(np.complex64(1 + 2j))
  np.testing.assert_allclose(out, np.cos(1 + 2j), rtol=1e-5)
  assert out.dtype == np.complex64
  with pytest.raises(TypeError, match="grad with holomorphic=True requires inputs with "
                     "complex dtype, but got float32."):
    jax.grad(jnp.sin, holomorphic=True)(f32(1.))


def test_grad_of_real_function_of_complex_input():
  # JAX's convention: the gradient of f(z) = x**2 + y**2 at 3+4j is 6-8j.
  def f(z):
    x, y = jnp.real(z), jnp.imag(z)
    return x ** 2 + y ** 2

  np.testing.assert_allclose(jax.grad(f)(np.complex64(3 + 4j)), 6 - 8j)


def test_grad_python_control_flow_on_concrete_values():
  def f(x):
    if x < 3:
      return 3. * x ** 2
    return -4 * x

  assert float(jax.grad(f)(2.)) == 12.
  assert float(jax.grad(f)(4.)) == -4.


# --- compositions ---------------------------------------------------------------------

def test_grad_jit_grad_jit_grad():
  d3 = jax.grad(jax.jit(jax.grad(jax.jit(jax.grad(jnp.sin)))))
  np.testing.assert_allclose(d3(f32(1.)), -np.cos(1.), rtol=1e-6)


def test_jit_of_grad_and_grad_of_jit():
  f = lambda x: jnp.sum(jnp.tanh(x) * x)
  x = f32([0.1, -0.5, 2.])
  expected = np.tanh(x) + x * (1 - np.tanh(x) ** 2)
  np.testing.assert_allclose(jax.jit(jax.grad(f))(x), expected, rtol=1e-5)
  np.testing.assert_allclose(jax.grad(jax.jit(f))(x), expected, rtol=1e-5)

  def calls_jit(x):
    return jax.jit(lambda y: y * jnp.sin(y))(x) * 2.
  np.testing.assert_allclose(jax.grad(calls_jit)(f32(1.)),
                             2 * (np.sin(1.) + np.cos(1.)), rtol=1e-6)


def test_nested_grad_no_perturbation_confusion():
  # d/dx [x * d/dy (x + y)] = d/dx [x] = 1, not 2.
  assert float(jax.grad(lambda x: x * jax.grad(lambda y: x + y)(1.))(1.)) == 1.
  # d/dx [d/dy (x y^2) at y = x] = d/dx [2 x^2] = 4x.
  assert float(jax.grad(lambda x: jax.grad(lambda y: x * y * y)(x))(2.)) == 8.


def test_closures_over_differentiated_values():
  assert float(jax.grad(lambda x: jax.jit(lambda y: x * y)(2.))(3.)) == 2.
  assert float(jax.jit(lambda a: jax.grad(lambda x: a * x * x)(3.))(2.)) == 12.


def test_grad_of_constant_function_and_stop_gradient():
  assert float(jax.grad(lambda x: 3.)(1.)) == 0.
  assert float(jax.grad(lambda x: lax.stop_gradient(x) * x)(3.)) == 3.


def test_jvp_of_grad_is_second_derivative():
  _, t = jax.jvp(jax.grad(lambda x: x ** 3), (f32(2.),), (f32(1.),))
  np.testing.assert_allclose(t, 12.)
  _, t = jax.jvp(jax.grad(jnp.sin), (f32(1.),), (f32(1.),))
  np.testing.assert_allclose(t, -np.sin(1.), rtol=1e-6)


def test_vjp_of_jvp():
  def df(x):
    return jax.jvp(jnp.exp, (x,), (f32(1.),))[1] * x

  _, f_vjp = jax.vjp(df, f32(0.5))
  np.testing.assert_allclose(f_vjp(f32(1.))[0], np.exp(0.5) * 1.5, rtol=1e-6)


def test_jit_jacfwd_jacrev():
  f = lambda x: jnp.sin(x) * x[0]
  x = f32([0.3, 0.7])
  h = jax.jit(jax.jacfwd(jax.jacrev(f)))(x)
  assert h.shape == (2, 2, 2)
  with jax.enable_x64():
    x64 = np.asarray(x, np.float64)
    expected = numeric_jacobian(
        lambda y: np.asarray(jax.jacrev(f)(y)), x64, eps=1e-5)
  np.testing.assert_allclose(h, expected, rtol=1e-3, atol=1e-4)


# --- Jacobians -----------------------------------------------------------------------

def test_jacfwd_jacrev_vector_function():
  # The example from JAX's jacfwd/jacrev docstrings.
  def f(x):
    return jnp.asarray([x[0], 5 * x[2], 4 * x[1] ** 2 - 2 * x[2], x[2] * jnp.sin(x[0])])

  x = f32([1., 2., 3.])
  expected = [[1., 0., 0.], [0., 0., 5.], [0., 16., -2.], [3 * np.cos(1.), 0., np.sin(1.)]]
  for jac in (jax.jacfwd, jax.jacrev, jax.jacobian):
    np.testing.assert_allclose(jac(f)(x), expected, rtol=1e-5, atol=1e-6)


def test_jacobian_pytree_structure_and_shapes():
  def f(p):
    return {"u": p["a"] * jnp.sum(p["b"][0]), "v": jnp.sum(p["a"])}

  p = {"a": f32([1., 2., 3.]), "b": (f32([[1., 2.], [3., 4.]]),)}
  for jac in (jax.jacfwd, jax.jacrev):
    j = jac(f)(p)
    assert set(j) == {"u", "v"}
    # Output leaves outside, input tree inside; shape out.shape + in.shape.
    assert j["u"]["a"].shape == (3, 3) and j["u"]["b"][0].shape == (3, 2, 2)
    assert j["v"]["a"].shape == (3,) and j["v"]["b"][0].shape == (2, 2)
    np.testing.assert_allclose(j["u"]["a"], 10. * np.eye(3))
    np.testing.assert_allclose(j["u"]["b"][0], np.broadcast_to(p["a"][:, None, None], (3, 2, 2)))
    np.testing.assert_allclose(j["v"]["a"], [1., 1., 1.])
    np.testing.assert_allclose(j["v"]["b"][0], np.zeros((2, 2)))


def test_jacobian_matrix_to_matrix_shape():
  x = f32(np.arange(6.).reshape(2, 3) / 10)
  for jac in (jax.jacfwd, jax.jacrev):
    j = jac(jnp.sin)(x)
    assert j.shape == (2, 3, 2, 3)
    np.testing.assert_allclose(j.reshape(6, 6), np.diag(np.cos(x).ravel()), rtol=1e-6, atol=1e-7)


def test_jacobian_argnums_tuple_and_has_aux():
  f = lambda x, y: (x * y, {"aux": x + y})
  x, y = f32([1., 2.]), f32(3.)
  for jac in (jax.jacfwd, jax.jacrev):
    (jx, jy), aux = jac(f, argnums=(0, 1), has_aux=True)(x, y)
    np.testing.assert_allclose(jx, 3. * np.eye(2))
    np.testing.assert_allclose(jy, [1., 2.])
    np.testing.assert_allclose(aux["aux"], [4., 5.])


def test_hessian():
  f = lambda x: jnp.sum(x ** 3) + x[0] * x[1]
  x = f32([1., 2.])
  np.testing.assert_allclose(jax.hessian(f)(x), [[6., 1.], [1., 12.]])
  h = jax.hessian(lambda p: p["a"] ** 2 * p["b"])({"a": f32(2.), "b": f32(3.)})
  np.testing.assert_allclose([[h["a"]["a"], h["a"]["b"]], [h["b"]["a"], h["b"]["b"]]],
                             [[6., 4.], [4., 0.]])


def test_jacobian_dtype_errors():
  with pytest.raises(TypeError, match="jacfwd requires real-valued inputs"):
    jax.jacfwd(jnp.sin)(np.complex64(1 + 2j))
  with pytest.raises(TypeError, match="jacrev requires real-valued outputs"):
    jax.jacrev(jnp.sin)(np.complex64(1 + 2j))
  with pytest.raises(TypeError, match="jacrev requires real- or complex-valued inputs"):
    jax.jacrev(lambda x: x * 1.)(np.int32(1))


# --- linear_transpose -----------------------------------------------------------------

def test_linear_transpose():
  f = lambda x, y: 0.5 * x - 0.5 * y
  scalar = jax.ShapeDtypeStruct(shape=(), dtype=np.float32)
  gx, gy = jax.linear_transpose(f, scalar, scalar)(f32(1.))
  np.testing.assert_allclose((gx, gy), (0.5, -0.5))
  assert gx.dtype == np.float32


def test_linear_transpose_matrix_and_pytrees():
  a = f32([[1., 2., 3.], [4., 5., 6.]])
  (ct,) = jax.linear_transpose(lambda x: a @ x, jnp.zeros(3))(f32([1., -1.]))
  np.testing.assert_allclose(ct, a.T @ [1., -1.])
  (ct,) = jax.linear_transpose(lambda x: x[0], [f32(1.), f32(2.)])(f32(3.))
  np.testing.assert_allclose(ct, [3., 0.])


def test_linear_transpose_integer_and_complex():
  (actual,) = jax.linear_transpose(lambda x: 2 * x, 1)(3)
  assert int(actual) == 6
  (actual,) = jax.linear_transpose(lambda x: (1 + 2j) * x, 1j)(3 + 4j)
  np.testing.assert_allclose(actual, -5 + 10j)


def test_linear_transpose_errors():
  with pytest.raises(TypeError, match="linear_transpose only supports"):
    jax.linear_transpose(lambda x: 2. * x, 1)
  with pytest.raises(TypeError, match="cotangent tree does not match"):
    jax.linear_transpose(lambda x: [x, x], 1.0)(1.0)
  with pytest.raises(TypeError, match="cotangent type does not match"):
    jax.linear_transpose(lambda x: jnp.stack([x, x]), 1.0)(1.0)


def test_linear_transpose_of_nonlinear_function_raises():
  # sin is not linear: transposing it has no rule.
  with pytest.raises(NotImplementedError, match="Transpose rule .* for 'sin' not implemented"):
    jax.linear_transpose(jnp.sin, 1.0)(1.0)


# --- the jaxpr of a gradient -------------------------------------------------------------

def test_make_jaxpr_of_grad_shows_jaxs_primitives():
  f = lambda x: jnp.sum(jnp.sin(x) * x)
  closed = jax.make_jaxpr(jax.grad(f))(jnp.ones(3))
  names = prims(closed)
  # As JAX: sin, cos (the residual), mul, reduce_sum for the primal, the
  # cotangent broadcast, and add_any where x's two cotangents meet.
  for p in ("sin", "cos", "mul", "reduce_sum", "broadcast_in_dim", "add_any"):
    assert p in names, (p, str(closed))
  assert names.count("sin") == 1 and names.count("cos") == 1
  # No dead equation in the linear part: only the primal output (mul,
  # reduce_sum) may be unused.
  live = dce_jaxpr(closed.jaxpr).eqns
  dead = [e.primitive.name for e in closed.jaxpr.eqns if e not in live]
  assert sorted(dead) == ["mul", "reduce_sum"], str(closed)


def test_make_jaxpr_of_grad_of_composition():
  closed = jax.make_jaxpr(jax.grad(lambda x: jnp.sin(jnp.cos(x))))(1.)
  names = prims(closed)
  assert names.count("cos") == 2 and names.count("sin") == 2
  assert "neg" in names and "mul" in names
  live = dce_jaxpr(closed.jaxpr).eqns
  dead = [e.primitive.name for e in closed.jaxpr.eqns if e not in live]
  assert dead == ["sin"], str(closed)  # as JAX's `_:f32[] = sin b`


# --- properties --------------------------------------------------------------------------

# (function, its derivative, low, high): smooth on [low, high].
ELEMENTWISE = [
    (jnp.sin, np.cos, -3., 3.),
    (jnp.cos, lambda x: -np.sin(x), -3., 3.),
    (jnp.exp, np.exp, -3., 3.),
    (jnp.tanh, lambda x: 1 - np.tanh(x) ** 2, -3., 3.),
    (jnp.log, lambda x: 1 / x, 0.5, 3.),
    (jnp.sqrt, lambda x: 0.5 / np.sqrt(x), 0.5, 3.),
    (lambda x: x ** 3, lambda x: 3 * x ** 2, -3., 3.),
    (lambda x: 1 / x, lambda x: -1 / x ** 2, 0.5, 3.),
    (jax.nn.sigmoid, lambda x: np.exp(-x) / (1 + np.exp(-x)) ** 2, -3., 3.),
]


@given(fns=st.lists(st.sampled_from(range(len(ELEMENTWISE))), min_size=1, max_size=3),
       data=st.data())
def test_grad_of_sum_of_elementwise_functions(fns, data):
  xs = [data.draw(arrays(np.float32, (3,),
                         elements=bounded_elements(np.float32, *ELEMENTWISE[i][2:])))
      for i in fns]

  def f(*args):
    return sum(jnp.sum(ELEMENTWISE[i][0](x)) for i, x in zip(fns, args))

  grads = jax.grad(f, argnums=tuple(range(len(xs))))(*xs)
  for i, x, g in zip(fns, xs, grads):
    np.testing.assert_allclose(g, ELEMENTWISE[i][1](x.astype(np.float64)),
                               rtol=2e-4, atol=1e-5)


SMOOTH = [jnp.sin, jnp.cos, jnp.tanh, lambda x: x * x, lambda x: jnp.exp(x / 4),
          lambda x: x[::-1] * x, lambda x: jnp.cumsum(x) / 3, lambda x: x * jnp.sum(x) / 4,
          lambda x: jnp.dot(jnp.ones((3, 3)) / 3 + jnp.eye(3), x)]


@given(chain=st.lists(st.sampled_from(range(len(SMOOTH))), min_size=1, max_size=4),
       x=bounded_arrays(np.float64, (3,)))
def test_jacfwd_equals_jacrev(chain, x):
  def f(x):
    for i in chain:
      x = SMOOTH[i](x)
    return x

  with jax.enable_x64():
    jf = jax.jacfwd(f)(x)
    jr = jax.jacrev(f)(x)
    assert jf.dtype == jr.dtype == np.float64
    np.testing.assert_allclose(jf, jr, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(jf, numeric_jacobian(lambda y: np.asarray(f(y)), x),
                               rtol=1e-5, atol=1e-7)
