"""Cases for the PRNG samplers' primitive `random_gamma` (refimpl/random.py).

No NumPy function draws JAX's bits, so the value cases only check the jit
backend against eager evaluation (and vmap against the loop); the samplers'
values are tested against JAX's golden values and their distributions in
tests/test_random_gamma.py.

The derivative of a gamma sample is JAX's implicit gradient
(`lax.random_gamma_grad`), not the derivative of the rejection sampler as
computed, so finite differences cannot check it directly. The derivative
case checks that the two forms of the rule agree: exp(loggamma) - gamma
(same key, so the same draws and rejection decisions) is zero to rounding,
and so must its derivative be, through the log-space rule (which divides by
the sample) and the plain rule.
"""

import numpy as np

from conformance import strategies as S
from conformance.autodiff import ADCase
from conformance.cases import Case
from refimpl import lax, random

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


CASES = [
    Case("random.gamma", lambda a: random.gamma(KEY, a, dtype=a.dtype),
         _positive(0.125, 30.0), primitives=("random_gamma",)),
    Case("random.loggamma", lambda a: random.loggamma(KEY, a, dtype=a.dtype),
         _positive(0.125, 30.0), primitives=("random_gamma",)),
]

AD_CASES = [
    ADCase("random.gamma (log space vs plain)", _gamma_difference, _ad_inputs(0.3, 10.0),
           ("random_gamma",)),
]
