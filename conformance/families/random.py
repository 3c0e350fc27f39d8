"""Cases for the PRNG primitives: threefry2x32, iota_2x32_shape, the key
primitives (random_seed, random_split, random_fold_in, random_bits,
random_wrap, random_unwrap; refimpl/prng.py), and `random_clone` and the
samplers' primitive `random_gamma` (refimpl/random.py).

No NumPy function draws JAX's bits, so the value cases only check the jit
backend against eager evaluation (and vmap against the loop); the values
are tested against JAX's golden values and their distributions in
tests/test_prng.py and tests/test_random*.py.

The derivative of a gamma sample is JAX's implicit gradient
(`lax.random_gamma_grad`), not the derivative of the rejection sampler as
computed, so finite differences cannot check it directly. The derivative
case checks that the two forms of the rule agree: exp(loggamma) - gamma
(same key, so the same draws and rejection decisions) is zero to rounding,
and so must its derivative be, through the log-space rule (which divides by
the sample) and the plain rule.
"""

import numpy as np
from hypothesis import strategies as st

from conformance import strategies as S
from conformance.autodiff import ADCase
from conformance.cases import Case
from refimpl import lax, prng, random

KEY = np.array([0, 42], np.uint32)


def _positive(low, high):
  """One float operand (float16, bfloat16 or float32) in [low, high]."""
  return lambda: S.bounded_case_inputs(S.FLOAT_DTYPES, 1, low, high)


def _ad_inputs(low, high):
  def rescale(inputs):
    (a,), kw = inputs
    return (low + (high - low) * a,), kw
  return lambda: S.bounded_case_inputs([np.float64], 1, 0.0, 1.0).map(rescale)


def _gamma_difference(a):
  return lax.exp(random.loggamma(KEY, a)) - random.gamma(KEY, a)


def _uint32_arrays(shape):
  return S.arrays(np.uint32, shape)


def _key_data(key_shape=st.just(())):
  """Raw key data uint32[*key_shape, 2] (any words)."""
  return key_shape.flatmap(lambda shape: _uint32_arrays((*shape, 2)))


def _inputs(*args, **kwargs):
  """(args, kwargs) from strategies."""
  return st.tuples(st.tuples(*args), st.fixed_dictionaries(kwargs))


_SPLIT_NUMS = st.sampled_from([1, 2, 3, (2, 2), (0,)])
_BITS_DTYPES = st.sampled_from([np.uint8, np.uint16, np.uint32])


def _threefry_inputs():
  shape = S.shapes(max_dims=2)
  return _inputs(_uint32_arrays(()), _uint32_arrays(()),
                 shape.flatmap(_uint32_arrays))


CASES = [
    Case("prng.threefry_2x32", lambda k0, k1, count: prng.threefry_2x32((k0, k1), count),
         _threefry_inputs),
    Case("prng.iota_2x32_shape", prng.iota_2x32_shape,
         lambda: _inputs(shape=S.shapes(min_dims=1, max_dims=3))),
    Case("random.key", lambda seed: random.key_data(random.key(seed)),
         lambda: _inputs(st.integers(-2 ** 31, 2 ** 31 - 1).map(np.int32))),
    Case("random.split", lambda key, num: random.split(key, num),
         lambda: _inputs(_key_data(), num=_SPLIT_NUMS)),
    Case("random.fold_in", random.fold_in,
         lambda: _inputs(_key_data(), _uint32_arrays(()))),
    Case("random.bits", lambda key, shape, dtype: random.bits(key, shape, dtype),
         lambda: _inputs(_key_data(), shape=S.shapes(max_dims=2), dtype=_BITS_DTYPES)),
    Case("random.wrap_key_data", lambda data: random.key_data(random.wrap_key_data(data)),
         lambda: _inputs(_key_data(S.shapes(max_dims=2)))),
    Case("random.clone", lambda data: random.key_data(random.clone(random.wrap_key_data(data))),
         lambda: _inputs(_key_data(S.shapes(max_dims=2)))),
    Case("random.gamma", lambda a: random.gamma(KEY, a, dtype=a.dtype),
         _positive(0.125, 30.0)),
    Case("random.loggamma", lambda a: random.loggamma(KEY, a, dtype=a.dtype),
         _positive(0.125, 30.0)),
]

AD_CASES = [
    ADCase("random.gamma (log space vs plain)", _gamma_difference, _ad_inputs(0.3, 10.0),
           ("random_gamma",)),
]
