"""`jax.test_util`: check_grads, check_jvp and check_vjp accept correct
derivatives (of ordinary functions and of custom rules) and raise
AssertionError for wrong ones, at first and second order, in both modes."""

import functools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl.test_util import check_grads, check_jvp, check_vjp

_MODES = [("fwd",), ("rev",)]


@jax.custom_jvp
def _sin(x):
  return jnp.sin(x)


@_sin.defjvp
def _sin_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  return jnp.sin(x), jnp.cos(x) * t


@jax.custom_jvp
def _sin_wrong(x):
  return jnp.sin(x)


@_sin_wrong.defjvp
def _sin_wrong_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  return jnp.sin(x), 2 * jnp.cos(x) * t


@jax.custom_jvp
def _cube_wrong_2nd(x):
  """x**3 whose JVP is right but itself has a zero derivative in x."""
  return x ** 3


@_cube_wrong_2nd.defjvp
def _cube_wrong_2nd_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  return x ** 3, 3 * jax.lax.stop_gradient(x) ** 2 * t


def _custom_vjp_cube(bwd):
  """x**3 with the backward rule `bwd(x, g)`."""
  f = jax.custom_vjp(lambda x: x ** 3)
  f.defvjp(lambda x: (x ** 3, x), lambda x, g: (bwd(x, g),))
  return f


_cube_vjp = _custom_vjp_cube(lambda x, g: 3 * x ** 2 * g)
_cube_vjp_wrong = _custom_vjp_cube(lambda x, g: 3 * x * g)
_cube_vjp_wrong_2nd = _custom_vjp_cube(lambda x, g: 3 * jax.lax.stop_gradient(x) ** 2 * g)

_X = jnp.array([0.3, -1.2, 0.8], jnp.float32)


@pytest.mark.parametrize("modes", _MODES)
@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("f, args", [
    (lambda x, y: x ** 3 - 2 * x * y + y ** 2, (_X, _X[::-1])),
    (jnp.sin, (_X,)),
    (lambda x: jnp.tanh(x) * jnp.exp(-x ** 2), (_X,)),
    (lambda x: {"s": jnp.sum(x ** 2), "v": (x * 2.0,)}, (_X,)),
    (_sin, (_X,)),
    (lambda x, y: x * y, (1.5, 2.0)),
])
def test_correct_derivatives_pass(f, args, order, modes):
  check_grads(f, args, order, modes=modes)


def test_a_correct_custom_vjp_passes_in_reverse_mode_to_second_order():
  check_grads(_cube_vjp, (_X,), 2, modes=("rev",))


@pytest.mark.parametrize("modes", _MODES)
@pytest.mark.parametrize("order", [1, 2])
def test_a_wrong_custom_jvp_rule_fails(order, modes):
  with pytest.raises(AssertionError, match="JVP" if modes == ("fwd",) else "VJP"):
    check_grads(_sin_wrong, (_X,), order, modes=modes)


@pytest.mark.parametrize("modes", _MODES)
def test_a_rule_wrong_only_at_second_order_fails_only_at_order_two(modes):
  check_grads(_cube_wrong_2nd, (_X,), 1, modes=modes)
  of = "JVP of JVP" if modes == ("fwd",) else "VJP of VJP"
  with pytest.raises(AssertionError, match=of):
    check_grads(_cube_wrong_2nd, (_X,), 2, modes=modes)


@pytest.mark.parametrize("order", [1, 2])
def test_a_wrong_custom_vjp_rule_fails(order):
  with pytest.raises(AssertionError, match="VJP cotangent projection"):
    check_grads(_cube_vjp_wrong, (_X,), order, modes=("rev",))


def test_a_custom_vjp_rule_wrong_only_at_second_order_fails_only_at_order_two():
  check_grads(_cube_vjp_wrong_2nd, (_X,), 1, modes=("rev",))
  with pytest.raises(AssertionError, match="VJP of VJP cotangent projection"):
    check_grads(_cube_vjp_wrong_2nd, (_X,), 2, modes=("rev",))


@settings(max_examples=20)
@given(coefficients=st.lists(st.floats(-2, 2), min_size=1, max_size=5),
       x=st.lists(st.floats(-1.5, 1.5), min_size=1, max_size=4),
       offset=st.sampled_from([0.0, 1.0]))
def test_polynomials_pass_and_a_rule_off_by_a_constant_fails(coefficients, x, offset):
  """In float64: p passes to order 2; a JVP rule adding `offset * t` fails iff offset."""
  @jax.custom_jvp
  def p(x):
    return jnp.polyval(jnp.asarray(coefficients), x)

  @p.defjvp
  def p_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    derivative = jnp.polyval(jnp.polyder(jnp.asarray(coefficients)), x)
    return p(x), (derivative + offset) * t

  with jax.enable_x64():
    args = (np.asarray(x, np.float64),)
    for modes in _MODES:
      if offset:
        with pytest.raises(AssertionError):
          check_grads(p, args, 1, modes=modes)
      else:
        check_grads(p, args, 2, modes=modes)


def test_check_jvp_and_check_vjp_name_the_failing_part_with_err_msg():
  wrong_primal = lambda args, tangents: (jax.jvp(jnp.sin, args, tangents)[0] + 1,
                                         jax.jvp(jnp.sin, args, tangents)[1])
  with pytest.raises(AssertionError, match="mine primal"):
    check_jvp(jnp.sin, wrong_primal, (_X,), err_msg="mine")
  with pytest.raises(AssertionError, match="\ntangent\n"):
    check_jvp(_sin_wrong, functools.partial(jax.jvp, _sin_wrong), (_X,))
  with pytest.raises(AssertionError, match="mine cotangent projection"):
    check_vjp(_sin_wrong, functools.partial(jax.vjp, _sin_wrong), (_X,), err_msg="mine")
  wrong_dtype = lambda args, tangents: (jnp.sin(args[0]), jnp.cos(args[0]).astype(jnp.float16))
  with pytest.raises(AssertionError, match="dtypes"):
    check_jvp(jnp.sin, wrong_dtype, (_X,))


def test_tolerances_given_as_numbers_or_per_dtype_loosen_the_check():
  """A rule 1% off fails float32's default tolerance (2e-3) but passes 5e-2."""
  @jax.custom_jvp
  def f(x):
    return jnp.sin(x)

  f.defjvp(lambda primals, tangents: (jnp.sin(primals[0]),
                                      1.01 * jnp.cos(primals[0]) * tangents[0]))
  with pytest.raises(AssertionError):
    check_grads(f, (_X,), 1)
  check_grads(f, (_X,), 1, atol=5e-2, rtol=5e-2)
  check_grads(f, (_X,), 1, atol={np.float32: 5e-2}, rtol={np.float32: 5e-2})
  with pytest.raises(AssertionError):   # a tolerance for another dtype leaves float32's
    check_grads(f, (_X,), 1, atol={np.float64: 5e-2}, rtol={np.float64: 5e-2})


def test_float64_has_a_tighter_default_tolerance_than_float32():
  """A rule 0.05% off passes float32's default tolerance, not float64's (1e-5)."""
  @jax.custom_jvp
  def f(x):
    return jnp.sin(x)

  f.defjvp(lambda primals, tangents: (jnp.sin(primals[0]),
                                      1.0005 * jnp.cos(primals[0]) * tangents[0]))
  check_grads(f, (np.float32(0.5),), 1)
  with jax.enable_x64():
    with pytest.raises(AssertionError):
      check_grads(f, (np.float64(0.5),), 1)


def test_eps_sets_the_finite_difference_step():
  """A kink at 0: the central difference across it averages the slopes, unless
  the step is smaller than the distance to the kink."""
  x = (np.float32(0.05),)
  with pytest.raises(AssertionError):
    check_grads(jnp.abs, x, 1, modes=("fwd",), eps=0.1)
  check_grads(jnp.abs, x, 1, modes=("fwd",), eps=0.01)


def test_lin_mode_checks_the_derivative_through_linearize():
  check_grads(_sin, (_X,), 2, modes=("lin",))
  with pytest.raises(AssertionError, match="LIN tangent"):
    check_grads(_sin_wrong, (_X,), 1, modes=("lin",))
