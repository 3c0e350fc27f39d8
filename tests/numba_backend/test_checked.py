"""The fast functions of numba_backend/checked.py round as the reference's
float64 values (NumPy's loops) do wherever they are sure, and the loops
using them give the reference's results bit for bit, also in the blocks
they compute again."""

from unittest import mock

import numba
import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import dtypes
from numba_backend import checked
from numba_backend.lower import Lowering
from tests.numba_backend.test_elementwise import assert_same

REFERENCE = {   # as the reference computes them (float64)
    "exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p, "sin": np.sin,
    "cos": np.cos, "tanh": np.tanh, "logistic": lambda x: 1.0 / (1.0 + np.exp(-x))}


def _vectorized(fn):
  @numba.njit
  def run(x):
    y, unsure = np.empty(x.size), np.empty(x.size, np.bool_)
    for i in range(x.size):
      y[i], unsure[i] = fn(np.float64(x[i]))
    return y, unsure
  return run


FAST = {name: _vectorized(getattr(checked, name)) for name in REFERENCE}


def _usual(name, rng, size):
  """Random float32 operands of the function's usual range."""
  x = (rng.standard_normal(size) * 10).astype(np.float32)
  return np.abs(x) if name in ("log", "log1p") else x


def _disagreements(name, x):
  """The operands among the float32 `x` where the fast function is sure
  and rounds otherwise than the reference, and the number where it is unsure."""
  y, unsure = FAST[name](x)
  with np.errstate(over="ignore", invalid="ignore"):
    expected = REFERENCE[name](x.astype(np.float64)).astype(np.float32)
    wrong = ~unsure & (y.astype(np.float32).view(np.uint32) != expected.view(np.uint32))
  return x[wrong], int(unsure.sum())


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_sure_values_round_as_the_reference(name):
  """Random float32 bit patterns (NaNs, infinities and subnormals among
  them) and random operands of the functions' usual range."""
  rng = np.random.default_rng(0)
  patterns = rng.integers(0, 2**32, 2**20, dtype=np.uint64).astype(np.uint32).view(np.float32)
  for x in (patterns, _usual(name, rng, 2**20)):
    wrong, _ = _disagreements(name, x)
    assert wrong.size == 0, f"{name} rounds otherwise than the reference at {wrong[:5]}"


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_unsure_rarely(name):
  """The fast path is the common one: unsure for about one operand in a
  million of the usual range, always for NaN."""
  _, unsure = _disagreements(name, _usual(name, np.random.default_rng(1), 2**20))
  assert unsure <= 16
  assert FAST[name](np.array([np.nan, -np.nan], np.float32))[1].all()


def _unsure_operands(name, count):
  """`count` float32 operands where the fast function is unsure (near a
  rounding boundary), from a scan of random ones."""
  rng = np.random.default_rng(2)
  found = []
  while sum(map(len, found)) < count:
    x = _usual(name, rng, 2**22)
    found.append(x[FAST[name](x)[1] & np.isfinite(x)])
  return np.concatenate(found)[:count]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, dtypes.bfloat16])
def test_programs_match_the_reference_in_blocks_computed_again(dtype):
  """Each function, and selu (expm1 fused with a select and products), of
  arrays of several blocks, some holding an operand a fast function is
  unsure of, NaN or infinities, and one block not: bit for bit the
  reference's (NaNs equal to NaNs)."""
  size = 7000   # blocks of 1024 and a partial one
  x = (np.random.default_rng(3).standard_normal(size) * 5).astype(np.float32)
  for k, name in enumerate(sorted(REFERENCE)):
    x[[10 + 250 * k, 2100 + 250 * k]] = _unsure_operands(name, 2)
  x[[5100, 5101, 5102]] = [np.nan, np.inf, -np.inf]
  x = jnp.asarray(x.astype(dtype))

  def program(x):
    return (jnp.exp(x), jnp.expm1(x), jnp.log(x), jnp.log1p(x), jnp.sin(x), jnp.cos(x),
            jnp.tanh(x), jax.nn.sigmoid(x), jax.nn.selu(x))

  expected = jax.jit(program)(x)
  with mock.patch.object(Lowering, "float32_functions", False):   # (float32 exp, tanh checked too)
    actual = jax.jit(program, backend="numba")(x)
  for k, (e, a) in enumerate(zip(expected, actual)):
    assert_same(e, a, f"result {k}")


@pytest.mark.numba_full
@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_every_float32_operand(name):
  """Every one of the 2**32 float32 bit patterns (a minute per function)."""
  chunk = 2**24
  for start in range(0, 2**32, chunk):
    x = np.arange(start, start + chunk, dtype=np.uint64).astype(np.uint32).view(np.float32)
    wrong, _ = _disagreements(name, x)
    assert wrong.size == 0, f"{name} rounds otherwise than the reference at {wrong[:5]}"
