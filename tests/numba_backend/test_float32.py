"""The float32 functions of numba_backend/float32.py are within their stated
ulps of the reference's values (float64 NumPy, rounded once), at special
values exactly the reference's, and the programs using them (threaded ones
too) keep those bounds."""

import numba
import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from conformance.strategies import assert_close
from numba_backend import float32
from tests.numba_backend.test_elementwise import assert_same

FUNCTIONS = {"exp": (float32.exp, np.exp, [(86.0, 89.0), (103.0, 105.0)]),
             "tanh": (float32.tanh, np.tanh, [(0.6, 0.65), (8.5, 9.5)])}
"""name -> (the float32 function, the reference's float64 function, the
magnitudes around its changes of method, every operand of which, of either
sign, the default tests take)."""


def _vectorized(fn):
  @numba.njit(error_model="numpy")
  def run(x):
    y = np.empty_like(x)
    for i in range(x.size):
      y[i] = fn(x[i])
    return y
  return run


FAST = {name: _vectorized(fn) for name, (fn, _, _) in FUNCTIONS.items()}


def _check(name, x):
  with np.errstate(over="ignore", invalid="ignore"):
    expected = FUNCTIONS[name][1](x.astype(np.float64)).astype(np.float32)
  assert_same(expected, FAST[name](x), f"{name} of {x.size} operands", float32.ULPS[name])


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_within_the_stated_ulps(name):
  """Random float32 bit patterns (NaNs, infinities and subnormals among them),
  random operands of the usual range, and every operand near the function's
  changes of method (for exp: overflow, the subnormal results, underflow to zero)."""
  rng = np.random.default_rng(0)
  patterns = rng.integers(0, 2**32, 2**20, dtype=np.uint64).astype(np.uint32).view(np.float32)
  usual = (rng.standard_normal(2**20) * 10).astype(np.float32)
  for x in (patterns, usual):
    _check(name, x)
  for lo, hi in FUNCTIONS[name][2]:
    x = np.arange(*np.array([lo, hi], np.float32).view(np.int32)).view(np.float32)
    _check(name, x)
    _check(name, -x)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_special_values_are_the_references(name):
  """NaN, infinities, signed zeros, subnormals and the operands where the
  results overflow, underflow or saturate: exactly the reference's."""
  x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 88.72283, 88.722839,
                -103.972, -103.98, -200.0, 200.0, 9.02, -9.02, 20.0, -1e30], np.float32)
  with np.errstate(over="ignore"):
    expected = FUNCTIONS[name][1](x.astype(np.float64)).astype(np.float32)
  assert_same(expected, FAST[name](x), f"{name} at special values")
  signed = ~np.isnan(expected)   # (a NaN's sign is not compared)
  assert np.array_equal(np.signbit(expected[signed]), np.signbit(FAST[name](x)[signed]))


@pytest.mark.parametrize("size", [7, 3000, 2**17 + 5])
def test_programs_keep_the_bound(size):
  """exp and tanh, of operands fused into their loops, and in loops that threads
  run (from 2**16 elements), within their ulps of the reference backend; softmax
  and logsumexp (its sums and quotients of such values) within the
  conformance suite's float32 tolerance."""
  x = jnp.asarray((np.random.default_rng(size).standard_normal(size) * 20).astype(np.float32))

  def program(x):
    return (jnp.exp(x), jnp.exp(x * 0.5 - 1.0), jnp.tanh(x * 0.1), jax.nn.softmax(x),
            jax.nn.logsumexp(x))

  expected = jax.jit(program)(x)
  actual = jax.jit(program, backend="numba")(x)
  for k, name in enumerate(["exp", "exp", "tanh"]):
    assert_same(expected[k], actual[k], f"result {k}", float32.ULPS[name])
  for k in range(3, 5):
    assert_close(actual[k], expected[k])


@pytest.mark.numba_full
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_every_float32_operand(name):
  """Every one of the 2**32 float32 bit patterns (about a minute a function)."""
  chunk = 2**24
  for start in range(0, 2**32, chunk):
    _check(name, np.arange(start, start + chunk, dtype=np.uint64).astype(np.uint32)
           .view(np.float32))
