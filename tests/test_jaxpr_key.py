"""Structural keys: what compile caches key programs on. Two traces of the
same program share a key and compile once, whatever the values of the
top-level consts (program inputs) and the transformation-only params (custom
rules, trees); what changes evaluation (a callback, a sub-jaxpr's consts)
never shares a compiled program."""


import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl.jaxpr import ClosedJaxpr

f32 = np.float32




def _custom_jvp_square():
  @jax.custom_jvp
  def square(x):
    return x * x

  @square.defjvp
  def square_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return square(x), 2 * x * t
  return square


def _custom_vjp_square():
  @jax.custom_vjp
  def square(x):
    return x * x

  square.defvjp(lambda x: (x * x, x), lambda x, ct: (2 * x * ct,))
  return square


SQUARE_JVP, SQUARE_VJP = _custom_jvp_square(), _custom_vjp_square()
TRACED_TWICE = {
    "relu": lambda: lambda x: jax.nn.relu(x) * 2,
    "custom_jvp": lambda: lambda x: SQUARE_JVP(x) + 1,
    "custom_vjp": lambda: lambda x: SQUARE_VJP(x) + 1,
    "checkpoint": lambda: jax.checkpoint(lambda x: jnp.sin(x) * x,
                                         policy=jax.checkpoint_policies.nothing_saveable),
}


@pytest.mark.parametrize("make", TRACED_TWICE.values(), ids=TRACED_TWICE.keys())
def test_two_traces_of_the_same_program_share_a_key_and_compile_once(make, counting_backend):
  x = np.linspace(-1, 1, 5, dtype=f32)
  first, second = make(), make()  # two functions: each is traced anew
  a, b = jax.make_jaxpr(first)(x), jax.make_jaxpr(second)(x)
  assert a.jaxpr.structural_key() == b.jaxpr.structural_key()
  assert a.structural_key() == b.structural_key()
  expected = jax.jit(first)(x)
  # the program (and the jits inside it, which run as programs of their own)
  assert counting_backend
  compiled_first = len(counting_backend)
  np.testing.assert_array_equal(jax.jit(second)(x), expected)
  assert len(counting_backend) == compiled_first


def test_the_rules_still_tell_programs_apart_for_transformations():
  # equal as programs, but not interchangeable for jvp: their rules differ
  x = np.ones(3, f32)
  a = jax.make_jaxpr(lambda x: _custom_jvp_square()(x))(x)
  b = jax.make_jaxpr(lambda x: _custom_jvp_square()(x))(x)
  assert a.structural_key() == b.structural_key()
  assert a != b and a.key_with_rules() != b.key_with_rules()
  same = ClosedJaxpr(a.jaxpr, a.consts)
  assert same == a and hash(same) == hash(a)


def test_a_scan_of_different_custom_rules_differentiates_with_each():
  # jvp_jaxpr's cache is keyed by ClosedJaxpr equality: the rules must count
  def square_with(factor):
    @jax.custom_jvp
    def square(x):
      return x * x
    square.defjvp(lambda p, t: (square(p[0]), factor * p[0] * t[0]))
    return square

  def summed(square):
    return lambda xs: jax.lax.scan(lambda c, x: (c + square(x), ()), 0.0, xs)[0]

  xs = np.arange(3, dtype=f32)
  np.testing.assert_allclose(jax.grad(summed(square_with(2.0)))(xs), 2 * xs)
  np.testing.assert_allclose(jax.grad(summed(square_with(3.0)))(xs), 3 * xs)


def test_const_values_are_not_part_of_the_key():
  big = 4 * 2**20  # 16 MB of float32
  w1 = np.zeros(big, f32)
  w2 = np.ones(big, f32)
  a = jax.make_jaxpr(lambda x: x + w1)(np.float32(1))
  b = jax.make_jaxpr(lambda x: x + w2)(np.float32(1))
  assert a.jaxpr.structural_key() == b.jaxpr.structural_key()
  assert hash(a.structural_key()) == hash(b.structural_key())  # no bytes hashed
  assert a != b  # but they compute different things
  assert a == jax.make_jaxpr(lambda x: x + w1.copy())(np.float32(1))  # the same bytes


def test_new_top_level_const_values_reuse_the_program(counting_backend):
  for value in (1.0, 2.0, -0.0):
    w = np.full(3, value, f32)
    np.testing.assert_array_equal(jax.jit(lambda x: x / w)(np.ones(3, f32)), 1 / w)
  assert len(counting_backend) == 1


def _closing_over(w):
  """A custom_jvp function closing over the concrete array `w`, under a
  function: `w` is a const of the custom_jvp_call's sub-jaxpr, which a
  compiled program evaluates as it is (it is not one of its inputs)."""
  @jax.custom_jvp
  def f(y):
    return 1 / (y * w)

  f.defjvp(lambda p, t: (f(*p), t[0]))
  return lambda x: f(x) + 0


@settings(max_examples=20, deadline=None)
@given(st.lists(st.floats(-4, 4, width=32), min_size=3, max_size=3),
       st.lists(st.floats(-4, 4, width=32), min_size=3, max_size=3))
def test_nested_consts_never_share_a_program_wrongly(v1, v2):
  x = np.ones(3, f32)
  w1, w2 = np.asarray(v1, f32), np.asarray(v2, f32)
  closed = jax.make_jaxpr(_closing_over(w1))(x)
  assert closed.consts == [] and closed.eqns[0].params["call_jaxpr"].consts
  with np.errstate(divide="ignore"):
    np.testing.assert_array_equal(jax.jit(_closing_over(w1))(x), 1 / (x * w1))
    np.testing.assert_array_equal(jax.jit(_closing_over(w2))(x), 1 / (x * w2))  # -0.0 too


def test_nested_consts_of_the_same_bytes_share_a_program(counting_backend):
  x = np.ones(3, f32)
  for _ in range(3):
    w = np.arange(1, 4, dtype=f32)  # a new array of the same bytes each time
    np.testing.assert_array_equal(jax.jit(_closing_over(w))(x), 1 / w)
  assert len(counting_backend) == 1


def test_different_callbacks_never_share_a_program(counting_backend):
  x = np.arange(3, dtype=f32)
  spec = jax.ShapeDtypeStruct((3,), np.float32)
  for k in (1.0, 2.0):
    out = jax.jit(lambda x: jax.pure_callback(lambda a: a * np.float32(k), spec, x))(x)
    np.testing.assert_array_equal(out, x * k)
  seen = []
  for tag in ("first", "second"):
    jax.jit(lambda x: jax.debug.callback(lambda a: seen.append(tag), x))(x)
  assert seen == ["first", "second"]
  assert len(counting_backend) == 4


def test_keys_of_params_of_every_kind_are_hashable():
  # tuples of jaxprs (cond), a NamedTuple of jaxprs and None (custom_linear_solve),
  # trees and rules (custom_vmap_call), dtypes
  def f(x):
    y = jax.lax.cond(x.sum() > 0, jnp.sin, jnp.cos, x)
    z = jax.lax.custom_linear_solve(lambda v: 2 * v, x, lambda mv, b: b / 2)
    return jax.custom_batching.sequential_vmap(jnp.tanh)(y) + z.astype(jnp.float32)

  closed = jax.make_jaxpr(f)(np.ones(3, f32))
  assert hash(closed.jaxpr.structural_key()) == hash(
      jax.make_jaxpr(f)(np.ones(3, f32)).jaxpr.structural_key())
  assert hash(closed) == hash(closed)
