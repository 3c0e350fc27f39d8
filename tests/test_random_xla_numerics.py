"""The float arithmetic of XLA's CPU code that `jax.random` depends on, as the
reference reproduces it: the fused multiply-add (`lax.special.fused_multiply_add`,
against exact rational arithmetic), XLA's erf_inv (`lax.erf_inv`, against a
Newton-refined float64 inverse, and through `random.normal` against every
normal JAX 0.10.2 recorded in tests/data/prng.json) and the contraction of
`random.uniform`'s scaling in JAX's recorded values."""

import json
import math
import pathlib
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
from refimpl import lax, random
from refimpl.lax.special import fused_multiply_add

GOLDEN = json.loads((pathlib.Path(__file__).parent / "data" / "prng.json").read_text())
FORMATS = {np.float32: (24, -126, 127), np.float64: (53, -1022, 1023)}
"""(precision, emin, emax) of each binary format."""


def round_exact(value, dtype):
  """The rational `value` rounded to nearest (ties to even) in `dtype`."""
  precision, emin, emax = FORMATS[dtype]
  if value == 0:
    return dtype(0.0)
  sign, magnitude = (-1 if value < 0 else 1), abs(value)
  k = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
  if Fraction(2) ** k > magnitude:
    k -= 1
  quantum = Fraction(2) ** (max(k, emin) - (precision - 1))
  n = round(magnitude / quantum)   # Python rounds halves to even
  if n * quantum >= Fraction(2) ** (emax + 1):
    return dtype(sign * math.inf)
  return dtype(sign * float(n * quantum))


def exact_fma(a, b, c, dtype):
  if not all(math.isfinite(v) for v in (a, b, c)):
    with np.errstate(all="ignore"):
      return dtype(np.float64(a) * np.float64(b) + np.float64(c))
  exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
  if exact == 0:   # the sign of an exact zero follows IEEE addition
    return dtype(a) * dtype(b) + dtype(c)
  return round_exact(exact, dtype)


def floats_of(dtype):
  """Any float of `dtype`: subnormals, huge magnitudes, infinities, NaN."""
  width = 32 if dtype == np.float32 else 64
  return st.floats(width=width, allow_nan=True, allow_infinity=True)


def same_float(x, y):
  return (np.isnan(x) and np.isnan(y)) or (x == y and np.signbit(x) == np.signbit(y))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_fused_multiply_add_rounds_once(dtype, data):
  """Each element is a * b + c rounded once, as exact rationals say."""
  n = data.draw(st.integers(1, 8))
  elements = st.lists(floats_of(dtype), min_size=n, max_size=n)
  a, b, c = (np.array(data.draw(elements), dtype) for _ in range(3))
  if data.draw(st.booleans()):   # c nearly cancels a * b: the hard cases
    with np.errstate(all="ignore"):
      c = -(a * b) * dtype(data.draw(st.sampled_from([1, 1 + 2.0 ** -20, 1 - 2.0 ** -30])))
  got = fused_multiply_add(a, b, c)
  assert got.dtype == dtype and got.shape == (n,)
  for i in range(n):
    assert same_float(got[i], exact_fma(a[i], b[i], c[i], dtype)), (a[i], b[i], c[i])


def test_fused_multiply_add_double_rounding_cases():
  """Values where rounding the product first, or the float64 sum, gives a
  different float32 than one rounding."""
  one_plus = np.float32(1 + 2.0 ** -23)
  # (1 + 2**-23)**2 = 1 + 2**-22 + 2**-46: the product rounds to 1 + 2**-22,
  # and minus (1 + 2**-22) the fused result keeps 2**-46.
  a = np.array([one_plus], np.float32)
  assert fused_multiply_add(a, a, np.float32([-(1 + 2.0 ** -22)]))[0] == np.float32(2.0 ** -46)
  # 1 + 2**-24 + 2**-60 is above the float32 midpoint 1 + 2**-24 only by
  # 2**-60, which a float64 sum loses: one rounding goes up.
  x = fused_multiply_add(np.float32([2.0 ** -30]), np.float32([2.0 ** -30]),
                         np.float32([1 + 2.0 ** -24 - 2.0 ** -24]))
  assert x[0] == np.float32(1)
  b = np.float32([1 + 2.0 ** -23])
  y = fused_multiply_add(np.float32([2.0 ** -24]), b, np.float32([1]))
  # exact 1 + 2**-24 + 2**-47: above the midpoint, rounds up
  assert y[0] == np.float32(1 + 2.0 ** -23)


# --- erf_inv ---------------------------------------------------------------------------

def erf_inv_float64(x):
  """erf_inv of float64 `x` refined by Newton steps on erf (math.erf and
  math.erfc, accurate to about 1 ulp of float64: far beyond float32)."""
  x = np.asarray(x, np.float64)
  y = np.zeros_like(x)
  for i, v in enumerate(x.ravel()):
    a, t = abs(v), 0.0
    t = math.sqrt(-math.log((1 - a) * (1 + a))) if a > 0.5 else a
    for _ in range(60):
      residual = (math.erf(t) - a) if a <= 0.5 else (1 - a) - math.erfc(t)
      step = residual / (2 / math.sqrt(math.pi) * math.exp(-t * t))
      t -= step
      if abs(step) <= 1e-17 * max(abs(t), 1e-300):
        break
    y.flat[i] = math.copysign(t, v)
  return y


def ulps_f32(got, want):
  """Distance in float32 ulps of the float32 `got` from the float64 `want`."""
  spacing = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
  return np.abs(got.astype(np.float64) - want) / spacing


ERF_INV_ULPS = {0.9: 4, 0.99: 5, 1.0: 72}
"""Bounds (float32 ulps) of XLA's float32 erf_inv against the exact inverse
for |x| up to each limit; measured on every 8th uniform of `normal` (2**21
values): 3.57, 4.90 and 64.5 ulp (at x = ±0.99983). Near ±1 the rounding of
x * x (relative 2**-24, amplified by 1 / (1 - x**2) in w) dominates."""


def test_erf_inv_float32_accuracy():
  """XLA's float32 algorithm is within ERF_INV_ULPS of erf_inv on the
  uniforms `normal` draws (multiples of 2**-23 in (-1, 1), here every
  2**9-th one, plus the values nearest ±1)."""
  grid = np.arange(-(2 ** 23) + 1, 2 ** 23, 2 ** 9, dtype=np.int64) * 2.0 ** -23
  x = np.concatenate([grid, [1 - 2.0 ** -23, -1 + 2.0 ** -23, 2.0 ** -23]]).astype(np.float32)
  got = np.asarray(lax.erf_inv(x))
  errors = ulps_f32(got, erf_inv_float64(x))
  for limit, bound in ERF_INV_ULPS.items():
    within = np.abs(x) <= limit
    assert errors[within].max() <= bound, (limit, x[within][errors[within].argmax()])
  assert errors[np.abs(x) <= 0.5].max() > 2   # not correctly rounded: XLA's polynomial


def test_erf_inv_float64_accuracy():
  """Within 4e-15 relative, plus the rounding of x * x amplified near ±1."""
  x = np.linspace(-1, 1, 2001)[1:-1]
  x = np.concatenate([x, [1 - 2.0 ** -52, 0.999999, 1e-300, -0.5]])
  x = x[x != 0]
  with jax.enable_x64():
    got = np.asarray(lax.erf_inv(x))
  want = erf_inv_float64(x)
  bound = (4e-15 + 2.0 ** -52 / (1 - np.abs(x))) * np.abs(want)
  assert np.all(np.abs(got - want) <= bound)


def test_erf_inv_edges():
  for dtype in (np.float32, np.float16):
    x = np.array([1, -1, 0, -0.0, 1.5, -2, np.nan], dtype)
    y = np.asarray(lax.erf_inv(x))
    assert y.dtype == dtype
    assert list(y[:2]) == [np.inf, -np.inf] and np.signbit(y[3]) and y[2] == 0
    assert np.isnan(y[4:]).all()


# --- normal and uniform against JAX's recorded values --------------------------------------

def recorded_normals():
  """(mode, key seed, shape, dtype, JAX's values) of every recorded normal."""
  cases = []
  for mode, section in ((True, "threefry_partitionable=True (default)"),
                        (False, "threefry_partitionable=False (legacy)")):
    for name, shape in (("normal(PRNGKey(1), (5,))", (5,)), ("normal(PRNGKey(1), (2, 3))", (2, 3))):
      cases.append((mode, 1, shape, GOLDEN[section][name]))
  samplers = GOLDEN["samplers (threefry_partitionable=True)"]
  for seed in (3, 2024):
    for suffix in ("", ", dtype=float16"):
      cases.append((True, seed, (4,), samplers[f"normal(PRNGKey({seed}), (4,){suffix})"]))
  return cases


@pytest.mark.parametrize("mode,seed,shape,entry", recorded_normals())
def test_normal_bit_exact(mode, seed, shape, entry):
  """Every normal JAX recorded (float32 and float16) is reproduced bit for bit."""
  dtype = np.dtype(entry["dtype"])
  with jax.threefry_partitionable(mode):
    got = np.asarray(random.normal(random.PRNGKey(seed), shape, dtype))
  want = np.array(entry["data"], dtype).reshape(entry["shape"])
  np.testing.assert_array_equal(got.view(f"u{dtype.itemsize}"), want.view(f"u{dtype.itemsize}"))


@pytest.mark.parametrize("seed", [3, 2024])
def test_uniform_range_is_fused_as_jax(seed):
  """JAX's recorded uniform(minval=-2, maxval=5) is max(-2, f * 7 + (-2))
  with the multiply-add rounded once (XLA contracts it), where f is the
  [0, 1) draw, and so is refimpl's, eagerly, under jit and under vmap; the
  twice-rounded value differs in the last bit at some element."""
  entry = GOLDEN["samplers (threefry_partitionable=True)"][
      f"uniform(PRNGKey({seed}), (4,), minval=-2, maxval=5)"]
  want = np.array(entry["data"], np.float32)
  key = random.PRNGKey(seed)
  f = np.asarray(random.uniform(key, (4,)))
  lo, span = np.float32(-2), np.float32(5) - np.float32(-2)
  fused = np.maximum(lo, fused_multiply_add(f, np.full_like(f, span), np.full_like(f, lo)))
  np.testing.assert_array_equal(fused, want)
  assert not np.array_equal(np.maximum(lo, f * span + lo), want)
  draw = lambda k: random.uniform(k, (4,), minval=-2, maxval=5)
  for got in (draw(key), jax.jit(draw)(key), jax.vmap(draw)(key[None])[0]):
    np.testing.assert_array_equal(np.asarray(got), want)
