"""Derivatives of refimpl/lax/elementwise.py (and ad_util.py) at known values
and at the edges where JAX's rules make a choice: kinks (abs, max, min,
clamp), zeros (sqrt, pow), non-differentiable operations (float0 and zero
tangents), complex conventions and broadcasting; and the primitives the
differentiated programs stage, as JAX's rules do. The derivative checks on
random inputs are the AD_CASES of conformance/families/elementwise.py."""

import math

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import dtypes, lax

F32 = np.float32


def _primitives(fn, *args):
  return [eqn.primitive.name for eqn in jax.make_jaxpr(fn)(*args).jaxpr.eqns]


def _grads(fn, *args):
  """The gradient of `fn` with respect to each of its (float32) arguments."""
  return tuple(float(g) for g in jax.grad(fn, argnums=tuple(range(len(args))))(
      *map(F32, args)))


# --- kinks and zeros ----------------------------------------------------------------------------

def test_abs_derivative_at_zero_is_one():
  assert jax.grad(jnp.abs)(F32(0.)) == 1.0
  assert jax.grad(jnp.abs)(F32(-0.)) == 1.0   # -0.0 >= 0
  assert jax.grad(jnp.abs)(F32(-2.)) == -1.0


def test_abs_of_complex_follows_jax_convention():
  # d|z|/dx - i d|z|/dy at 3 + 4i, and 0 at 0 (not NaN)
  np.testing.assert_allclose(jax.grad(jnp.abs)(np.complex64(3 + 4j)), 0.6 - 0.8j, rtol=1e-6)
  assert jax.grad(jnp.abs)(np.complex64(0)) == 0


def test_roots_at_zero_have_infinite_slope():
  assert jax.grad(jnp.sqrt)(F32(0.)) == np.inf
  assert jax.grad(lax.cbrt)(F32(0.)) == np.inf
  assert jax.grad(lax.rsqrt)(F32(1.)) == -0.5


@pytest.mark.parametrize("fn", [jnp.maximum, jnp.minimum])
def test_max_and_min_split_ties_in_halves(fn):
  assert _grads(fn, 1., 1.) == (0.5, 0.5)
  assert jax.grad(lambda x: fn(x, x))(F32(2.)) == 1.0


def test_max_and_min_pick_one_operand_away_from_ties():
  assert _grads(jnp.maximum, 3., 1.) == (1.0, 0.0)
  assert _grads(jnp.minimum, 3., 1.) == (0.0, 1.0)
  assert jax.grad(lambda x: jnp.maximum(x, 0.))(F32(0.)) == 0.5   # relu at 0


def test_pow_at_zero_base():
  # d/dx: y * x**(y - 1) is 0 * inf = NaN for a float exponent 0, and d/dy
  # takes log(0) as 0.
  dx, dy = _grads(lax.pow, 0., 0.)
  assert math.isnan(dx) and dy == 0.0
  assert _grads(lax.pow, 0., 2.) == (0.0, 0.0)
  assert jax.grad(lambda x: lax.pow(x, F32(0.5)))(F32(0.)) == np.inf
  # an integer exponent 0 has derivative 0, even at x == 0
  assert jax.grad(lambda x: lax.pow(x, np.int32(0)))(F32(0.)) == 0.0
  assert jax.grad(lambda x: lax.pow(x, np.int32(2)))(F32(3.)) == 6.0


def test_pow_exponent_derivative():
  _, dy = _grads(lax.pow, 2., 3.)
  np.testing.assert_allclose(dy, 8 * math.log(2), rtol=1e-6)


def test_integer_pow_derivatives():
  assert jax.grad(lambda x: lax.integer_pow(x, 0))(F32(0.)) == 0.0
  assert jax.grad(lambda x: lax.integer_pow(x, 1))(F32(5.)) == 1.0
  assert jax.grad(lambda x: lax.integer_pow(x, 3))(F32(2.)) == 12.0
  assert jax.grad(lax.reciprocal)(F32(2.)) == -0.25
  assert jax.grad(lambda x: x ** 0)(F32(0.)) == 0.0   # jnp's integer_pow path


def test_rem_derivatives():
  # rem(x, y) == x - y trunc(x / y)
  assert _grads(lax.rem, 7., 2.) == (1.0, -3.0)
  assert _grads(lax.rem, -7., 2.) == (1.0, 3.0)


def test_clamp_derivatives():
  assert _grads(lax.clamp, 0., 0.5, 1.) == (0.0, 1.0, 0.0)
  assert _grads(lax.clamp, 0., -1., 1.) == (1.0, 0.0, 0.0)
  assert _grads(lax.clamp, 0., 2., 1.) == (0.0, 0.0, 1.0)
  # at a bound the derivative is 0 for every operand (as JAX's rule)
  assert _grads(lax.clamp, 0., 0., 1.) == (0.0, 0.0, 0.0)
  assert _grads(lax.clamp, 0., 1., 1.) == (0.0, 0.0, 0.0)


def test_clamp_scalar_bound_cotangent_is_summed():
  x = np.array([-2., 0.5, 3., -1.5], F32)
  _, vjp = jax.vjp(lambda lo, hi: lax.clamp(lo, x, hi), F32(-1.), F32(1.))
  lo_ct, hi_ct = vjp(np.array([1., 2., 3., 4.], F32))
  assert (float(lo_ct), float(hi_ct)) == (5.0, 3.0)


def test_nextafter_is_not_differentiable_as_in_jax():
  # JAX registers no JVP rule for nextafter (so jnp.spacing has none either)
  message = "Differentiation rule for 'nextafter' not implemented"
  for argnums in (0, 1):
    with pytest.raises(NotImplementedError, match=message):
      jax.grad(lax.nextafter, argnums=argnums)(F32(1.), F32(2.))
  with pytest.raises(NotImplementedError, match=message):
    jax.jvp(jnp.spacing, (F32(1.),), (F32(1.),))
  # constant operands: nothing to differentiate, the value is just computed
  assert jax.grad(lambda y: y * lax.nextafter(F32(0.), F32(1.)))(F32(1.)) == F32(1e-45)


# --- zero and float0 tangents -------------------------------------------------------------------

@pytest.mark.parametrize("fn", [jnp.floor, jnp.ceil, jnp.round, jnp.sign,
                                lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN),
                                lambda x: x.astype(jnp.int32).astype(jnp.float32),
                                lambda x: lax.bitcast_convert_type(
                                    lax.bitcast_convert_type(x, jnp.int32), jnp.float32),
                                lambda x: lax.stop_gradient(x)])
def test_piecewise_constant_functions_have_zero_derivative(fn):
  assert jax.grad(fn)(F32(1.7)) == 0.0


@pytest.mark.parametrize("fn", [lambda x: lax.lt(x, F32(1.)), lax.is_finite,
                                lambda x: lax.convert_element_type(x, np.int32),
                                lambda x: lax.bitcast_convert_type(x, np.uint32)])
def test_non_float_results_have_float0_tangents(fn):
  x = np.array([0.5, 1.5], F32)
  _, t = jax.jvp(fn, (x,), (np.ones(2, F32),))
  assert t.dtype == dtypes.float0 and t.shape == (2,)


def test_integer_operations_have_float0_tangents():
  x = np.array([3, 5], np.int32)
  zero = np.zeros(2, dtypes.float0)
  for fn in (lambda a: lax.bitwise_and(a, a), lambda a: lax.shift_left(a, a),
             lax.population_count, lax.clz, lambda a: lax.add(a, a)):
    _, t = jax.jvp(fn, (x,), (zero,))
    assert t.dtype == dtypes.float0


def test_convert_element_type_between_floats_passes_tangents():
  with jax.enable_x64():
    assert jax.grad(lambda x: lax.convert_element_type(x, np.float64) * 2)(F32(1.)) == 2.0
    g = jax.grad(lambda x: lax.convert_element_type(x, np.float32))(np.float64(1.))
    assert g == 1.0 and g.dtype == np.float64


# --- complex parts ------------------------------------------------------------------------------

def test_complex_part_transposes_follow_jax_convention():
  z = np.complex64(1 + 2j)
  assert jax.grad(jnp.real)(z) == 1 + 0j
  assert jax.grad(jnp.imag)(z) == -1j   # complex(0, -ct)
  _, vjp = jax.vjp(lax.complex, F32(1.), F32(2.))
  assert tuple(map(float, vjp(np.complex64(3 + 4j)))) == (3.0, -4.0)
  _, vjp = jax.vjp(lax.conj, z)
  assert vjp(np.complex64(3 + 4j))[0] == 3 - 4j
  _, vjp = jax.vjp(lax.conj, F32(1.))   # a real operand takes the real part
  (ct,) = vjp(np.complex64(3 + 4j))
  assert ct == 3.0 and ct.dtype == np.float32


def test_complex_to_real_cast_transposes_to_a_complex_cotangent():
  _, vjp = jax.vjp(lambda x: lax.convert_element_type(x, np.complex64), F32(2.))
  (ct,) = vjp(np.complex64(3 + 4j))
  assert ct == 3.0 and ct.dtype == np.float32


# --- linear primitives: broadcasting and selection ----------------------------------------------

def test_add_and_mul_cotangents_are_summed_over_broadcast_dimensions():
  ct = np.arange(6, dtype=F32).reshape(2, 3)
  _, vjp = jax.vjp(lax.add, F32(1.), np.ones((2, 3), F32))
  scalar_ct, full_ct = vjp(ct)
  assert float(scalar_ct) == 15.0 and np.array_equal(full_ct, ct)
  _, vjp = jax.vjp(lax.sub, np.ones((1, 3), F32), np.ones((2, 3), F32))
  x_ct, y_ct = vjp(ct)
  assert np.array_equal(x_ct, [[3., 5., 7.]]) and np.array_equal(y_ct, -ct)
  _, vjp = jax.vjp(lax.mul, np.ones((1, 3), F32), np.full((2, 3), 2., F32))
  x_ct, y_ct = vjp(ct)
  assert np.array_equal(x_ct, [[6., 10., 14.]]) and np.array_equal(y_ct, ct)


def test_select_n_routes_cotangents_to_the_picked_case():
  ct = np.array([1., 2., 3., 4.], F32)
  ones = np.ones(4, F32)
  _, vjp = jax.vjp(lambda a, b: lax.select_n(np.array([True, False, True, False]), a, b),
                   ones, ones)
  a_ct, b_ct = vjp(ct)
  assert np.array_equal(a_ct, [0., 2., 0., 4.]) and np.array_equal(b_ct, [1., 0., 3., 0.])
  _, vjp = jax.vjp(lambda a, b, c: lax.select_n(np.array([0, 1, 2, 1], np.int32), a, b, c),
                   ones, ones, ones)
  cts = vjp(ct)
  assert [c.tolist() for c in cts] == [[1., 0., 0., 0.], [0., 2., 0., 4.], [0., 0., 3., 0.]]


# --- higher order -------------------------------------------------------------------------------

def test_higher_derivatives():
  x = F32(0.7)
  np.testing.assert_allclose(jax.grad(jax.grad(jnp.sin))(x), -np.sin(x), rtol=1e-6)
  np.testing.assert_allclose(jax.grad(jax.grad(jax.grad(jnp.exp)))(x), np.exp(x), rtol=1e-6)
  # tanh'' = -2 tanh (1 - tanh**2)
  t = np.tanh(np.float64(x))
  np.testing.assert_allclose(jax.grad(jax.grad(jnp.tanh))(x), -2 * t * (1 - t * t), rtol=1e-5)


# --- staged primitives, as JAX's rules stage them -----------------------------------------------

def test_differentiated_programs_stage_jax_primitives():
  one = F32(1.)
  assert _primitives(jax.grad(jnp.sin), one) == ["sin", "cos", "mul"]
  assert _primitives(jax.grad(jnp.log), one) == ["log", "div"]
  assert _primitives(jax.grad(jnp.exp), one) == ["exp", "mul"]
  # JAX's tanh rule: (g + g ans) (1 - ans), so the cotangents meet in add_any
  assert _primitives(jax.grad(jnp.tanh), one) == ["tanh", "sub", "mul", "mul", "add_any"]
  assert _primitives(jax.grad(lambda x: x * x), one) == ["mul", "mul", "mul", "add_any"]
  # max's ties: _balanced_eq
  assert _primitives(jax.grad(lambda x: jnp.maximum(x, 0.)), one) == [
      "max", "eq", "select_n", "eq", "select_n", "div", "mul"]
  # with accuracy=HIGHEST, tanh' is 4 logistic(2x) logistic(-2x)
  assert "logistic" in _primitives(
      jax.grad(lambda x: lax.tanh(x, accuracy=lax.AccuracyMode.HIGHEST)), one)


def test_stop_gradient_is_not_differentiated():
  assert jax.grad(lambda x: x * lax.stop_gradient(x))(F32(3.)) == 3.0
