"""Tests of refimpl.interpreters.eval.run_jaxpr, the compiled evaluation of
jaxprs (docs/jaxpr.md): XLA's multiply-add contraction, where it applies and
where it does not, elementwise runs evaluated a block at a time, and the
checks a compiled program keeps."""

import tracemalloc
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import core, errors, lax
from refimpl.interpreters.eval import run_jaxpr
from refimpl.lax import ad_util, elementwise
from refimpl.lax.special import fused_multiply_add
from conformance import strategies as cst

FLOATS = [np.float32, np.float64]


def triples(dtype, shape=(5,)):
  return st.tuples(*[cst.arrays(dtype, shape, allow_nan=False, allow_inf=False)] * 3)


def same_bits(actual, expected):
  actual, expected = np.asarray(actual), np.asarray(expected)
  assert actual.dtype == expected.dtype and actual.shape == expected.shape
  np.testing.assert_array_equal(actual, expected)


def run(f, *args):
  """f's jaxpr evaluated by run_jaxpr (fresh each call: programs are built per jaxpr)."""
  closed = jax.make_jaxpr(f)(*args)
  with core.eval_context(), np.errstate(all="ignore"):
    return run_jaxpr(closed, *[np.asarray(a) for a in args])


# --- contraction ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_a_product_read_by_one_addition_is_fused(dtype, data):
  a, b, c = data.draw(triples(dtype))
  with jax.enable_x64(dtype == np.float64):
    cases = [(lambda a, b, c: a * b + c, fused_multiply_add(a, b, c)),
             (lambda a, b, c: c + a * b, fused_multiply_add(a, b, c)),
             (lambda a, b, c: ad_util.add_any_p.bind(a * b, c), fused_multiply_add(a, b, c)),
             (lambda a, b, c: a * b - c, fused_multiply_add(a, b, -c)),
             (lambda a, b, c: c - a * b, fused_multiply_add(-a, b, c))]
    for f, expected in cases:
      same_bits(jax.jit(f)(a, b, c), expected)
      same_bits(run(f, a, b, c)[0], expected)
      # Op by op, each equation rounds: the product, then the sum.
      with np.errstate(all="ignore"):
        same_bits(f(jnp.asarray(a), jnp.asarray(b), jnp.asarray(c)), f(a, b, c))


def test_fused_and_separate_roundings_differ_somewhere():
  # The rule is visible: on these operands the once-rounded value differs.
  a = np.float32(1 + 2**-23)
  b = np.float32(1 - 2**-23)
  c = np.float32(-1)
  fused = jax.jit(lambda a, b, c: a * b + c)(a, b, c)
  assert float(fused) == -2.0**-46
  assert float(jnp.asarray(a) * b + c) == 0.0


@settings(max_examples=20, deadline=None)
@given(triples(np.float32))
def test_products_with_other_readers_are_not_fused(abc):
  a, b, c = abc
  with np.errstate(all="ignore"):
    separate, cd = a * b + c, c * c[::-1]
    separate_twice = separate + a * b
  twice = jax.jit(lambda a, b, c: (lambda p: (p + c, p))(a * b))(a, b, c)
  same_bits(twice[0], separate)
  same_bits(jax.jit(lambda a, b, c: (lambda p: p + c + p)(a * b))(a, b, c), separate_twice)
  # An addition of two products fuses its first operand's.
  same_bits(jax.jit(lambda a, b, c, d: a * b + c * d)(a, b, c, c[::-1].copy()),
            fused_multiply_add(a, b, cd))


@pytest.mark.parametrize("dtype", [np.float16, jnp.bfloat16, np.complex64, np.int32])
def test_other_dtypes_are_not_fused(dtype):
  rng = np.random.default_rng(0)
  a, b, c = (rng.uniform(-3, 3, 64).astype(np.float32).astype(dtype) for _ in range(3))
  f = lambda a, b, c: a * b + c
  same_bits(jax.jit(f)(a, b, c), f(jnp.asarray(a), jnp.asarray(b), jnp.asarray(c)))


def test_products_fused_in_control_flow_bodies_evaluated_eagerly():
  a, b, c = (np.random.default_rng(i).uniform(-1, 1, 8).astype(np.float32) for i in range(3))
  expected = fused_multiply_add(a, b, c)
  # Operands are traced values (arrays closed over would be computed while tracing).
  _, ys = lax.scan(lambda carry, x: (carry, x[0] * x[1] + x[2]), 0., np.stack([a, b, c], 1))
  same_bits(ys, expected)
  same_bits(lax.cond(True, lambda a, b, c: a * b + c, lambda a, b, c: c, a, b, c), expected)
  body = lambda s: (s[0] + 1, s[1], s[2], s[1] * s[2] + s[3])
  same_bits(lax.while_loop(lambda s: s[0] < 1, body, (0, a, b, c))[3], expected)
  # Under disable_jit nothing is compiled, so nothing is fused.
  with jax.disable_jit():
    same_bits(jax.jit(lambda a, b, c: a * b + c)(a, b, c), a * b + c)


# --- blocks ----------------------------------------------------------------------------------

def chain(x, y):
  s = jnp.sin(x) * 2 + 1                # a product fused into its addition
  t = jnp.where(s > 1.5, s, y)          # select_n over the chain
  u = lax.convert_element_type(t, np.float32) / (1 + y * y)
  return u, jnp.sum(t), s


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_blocked_runs_compute_what_whole_arrays_do(data):
  # Blocks of 3 elements (the machinery's are 2**16), so that small arrays
  # span several blocks, with a last partial one.
  shape = data.draw(st.sampled_from([(7,), (2, 5), (3, 1, 4)]))
  x = data.draw(cst.arrays(np.float32, shape, allow_nan=False))
  y = data.draw(cst.arrays(np.float32, st.sampled_from([shape, (1,), ()]), allow_nan=False))
  whole = run(chain, x, y)
  with mock.patch.object(elementwise, "_BLOCK", 3):
    closed = jax.make_jaxpr(chain)(x, y)
    with core.eval_context(), np.errstate(all="ignore"):
      blocked = run_jaxpr(closed, x, np.asarray(y))
    assert any(e.primitive.name == "sin" for e in closed.jaxpr.eqns)
  for b, w in zip(blocked, whole):
    np.testing.assert_array_equal(b, w)


def test_a_jitted_elementwise_chain_takes_about_its_result_in_memory():
  x = jnp.asarray(np.linspace(-10, 10, 1 << 21, dtype=np.float32))
  f = jax.jit(lambda x: jnp.sin(x) * 2 + 1)
  expected = fused_multiply_add(np.asarray(jnp.sin(x)), np.float32(2) + np.zeros_like(x),
                                np.ones_like(np.asarray(x)))
  f(x[:10])  # traced and compiled once for another shape: not counted
  tracemalloc.start()
  try:
    out = f(x)
    peak = tracemalloc.get_traced_memory()[1]
  finally:
    tracemalloc.stop()
  assert peak < 1.5 * np.asarray(out).nbytes, peak
  same_bits(out, expected)


# --- the checks a compiled program keeps -------------------------------------------------------

def test_results_too_large_fail_before_the_program_runs():
  with pytest.raises(errors.JaxRuntimeError, match="RESOURCE_EXHAUSTED|INVALID_ARGUMENT"):
    jax.jit(lambda: jnp.zeros((2**40,), np.float32).sum())()


def test_a_rule_that_breaks_its_shape_rule_is_caught():
  closed = jax.make_jaxpr(lambda x: jnp.sin(x))(np.ones(3, np.float32))
  wrong = lambda x, **params: np.ones(4, np.float64)
  with mock.patch.object(lax.sin_p, "impl", wrong), core.eval_context():
    with pytest.raises(AssertionError, match="reference rule of sin returned float64"):
      run_jaxpr(closed, np.ones(3, np.float32))


def test_debug_nans_names_the_equation_in_a_body():
  with jax.debug_nans(True):
    with pytest.raises(FloatingPointError, match="in equation: .*log"):
      lax.scan(lambda c, x: (c, jnp.log(x)), 0., jnp.asarray([1., -1.]))


def test_wrong_argument_count():
  closed = jax.make_jaxpr(lambda x: x)(1.)
  with pytest.raises(TypeError, match="takes 1 arguments, got 2"):
    run_jaxpr(closed, np.float32(1), np.float32(2))
