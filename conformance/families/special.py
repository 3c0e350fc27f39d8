"""Cases for the special-function primitives (refimpl/lax/special.py),
`jnp.i0` and `refimpl.scipy.special`.

SciPy is not a dependency, so the expected values come from Python's `math`
module and NumPy formulas. Single primitives (computed in float64 and rounded
once) are checked on every float dtype against float64 formulas; functions
composed of several operations are checked in float32 against the same
operations done by NumPy in float32, in JAX's order. Functions with no such
formula have backend-only cases (their accuracy is tested in
tests/lax/test_special.py and tests/scipy/test_special.py). Operands are
bounded where the formula or the cost needs it.
"""

import math

import numpy as np
from hypothesis import strategies as st

import refimpl.numpy as jnp
from refimpl import lax
from refimpl.scipy import special as jsp
from conformance import strategies as S
from conformance.autodiff import ADCase
from conformance.cases import Case

FLOAT = S.FLOAT_DTYPES
F32 = [np.float32]


def _inputs(dtype_list, n=1, kwargs=None):
  return lambda: S.case_inputs(dtype_list, n, kwargs=kwargs)


def _bounded(dtype_list, n=1, low=-100.0, high=100.0, kwargs=None):
  return lambda: S.bounded_case_inputs(dtype_list, n, low, high, kwargs=kwargs)


def _scaled(dtype_list, scales, low=0.0, high=1.0):
  """Operands drawn in [low, high], then multiplied by `scales` (one per
  operand) and rounded to the dtype: e.g. betainc's (a, b) in [0, 50], x in [0, 1]."""
  def scale(inputs):
    arrays, kwargs = inputs
    return tuple((np.asarray(a, np.float64) * s).astype(a.dtype)
                 for a, s in zip(arrays, scales)), kwargs
  return lambda: S.bounded_case_inputs(dtype_list, len(scales), low, high).map(scale)


def _math(fn):
  """A math-module function applied elementwise in float64 (cast back to the
  operand dtype), with the IEEE results where math raises: inf on overflow and
  at poles."""
  def scalar(*v):
    try:
      return fn(*v)
    except (OverflowError, ValueError):
      return math.inf
  vectorized = np.vectorize(scalar, otypes=[np.float64])
  return lambda *args: vectorized(*(np.asarray(a, np.float64) for a in args)).astype(
      np.asarray(args[0]).dtype)


def _gamma(x):
  """math.gamma with the IEEE/JAX conventions: NaN at the poles 0, -1, ..."""
  if x <= 0 and x == math.floor(x):
    return math.copysign(math.inf, x) if x == 0 else math.nan
  return math.gamma(x)


def _gammasgn(x):
  x = np.asarray(x)
  floor_x = np.floor(x)
  nan = ((x < 0) & (x == floor_x)) | np.isnan(x)
  minus = ((x < 0) & (np.fmod(floor_x, 2) != 0)) | ((x == 0) & np.signbit(x))
  return np.where(nan, np.nan, np.where(minus, -1.0, 1.0)).astype(x.dtype)


def _expit(v):
  return 1 / (1 + math.exp(-v)) if v >= 0 else math.exp(v) / (1 + math.exp(v))


def _mulhi(x, y):
  bits = x.dtype.itemsize * 8
  high = [(int(a) * int(b)) >> bits
          for a, b in zip(*(v.ravel() for v in np.broadcast_arrays(x, y)))]
  return np.array(high, dtype=object).reshape(np.broadcast_shapes(x.shape, y.shape)).astype(x.dtype)


def _i0e(x):
  wide = np.asarray(x, np.float64)
  return (np.i0(wide) * np.exp(-np.abs(wide))).astype(np.asarray(x).dtype)


def _i0(x):
  return np.i0(np.asarray(x, np.float64)).astype(np.asarray(x).dtype)


def _erfcx(x):
  return _math(lambda v: math.exp(v * v) * math.erfc(v))(x)


def _ndtr(x):
  return _math(lambda v: 0.5 * math.erfc(-v / math.sqrt(2)))(x)


def _log_ndtr(x):
  return _math(lambda v: math.log(0.5 * math.erfc(-v / math.sqrt(2))))(x)


def _xlogy(x, y):
  return np.where((x != 0) | np.isnan(y), x * np.log(y), np.zeros_like(x))


def _xlog1py(x, y):
  return np.where((x != 0) | np.isnan(y), x * np.log1p(y), np.zeros_like(x))


def _entr(x):
  return np.where(x < 0, -np.inf, -_xlogy(x, x))


def _rel_entr(p, q):
  positive = (p > 0) & (q > 0)
  safe_p, safe_q = np.where(positive, p, 1), np.where(positive, q, 1)
  value = _xlogy(safe_p, safe_p) - _xlogy(safe_p, safe_q)
  return np.where(positive, value, np.where((p == 0) & (q >= 0), 0, np.inf)).astype(p.dtype)


def _boxcox(log_x, lmbda):
  zero = lmbda == 0
  safe = np.where(zero, np.ones_like(lmbda), lmbda)
  return np.where(zero, log_x, np.expm1(safe * log_x) / safe)


def _logsumexp(a):
  if a.size == 0:
    return np.array(-np.inf, a.dtype)
  amax = np.max(a)
  amax = amax if np.isfinite(amax) else np.zeros_like(amax)
  return np.log(np.sum(np.exp(a - amax))) + amax


def _factorial(n):
  return _math(lambda v: 0.0 if v < 0 else math.gamma(v + 1))(n)


CASES = [
    # --- lax primitives ---
    Case("lax.erf", lax.erf, _inputs(FLOAT), _math(math.erf)),
    Case("lax.erfc", lax.erfc, _inputs(FLOAT), _math(math.erfc)),
    Case("lax.lgamma", lax.lgamma, _inputs(FLOAT), _math(math.lgamma)),
    Case("lax.erf_inv", lax.erf_inv, _bounded(FLOAT, 1, -1.0, 1.0)),
    Case("lax.digamma", lax.digamma, _inputs(FLOAT)),
    Case("lax.bessel_i0e", lax.bessel_i0e, _bounded(FLOAT), _i0e),
    Case("lax.bessel_i1e", lax.bessel_i1e, _bounded(FLOAT)),
    Case("lax.mulhi", lax.mulhi, _inputs(S.INT_DTYPES, 2), _mulhi),
    Case("lax.igamma", lax.igamma, _scaled(FLOAT, (30, 60))),
    Case("lax.igammac", lax.igammac, _scaled(FLOAT, (30, 60))),
    Case("lax.igamma_grad_a", lax.igamma_grad_a, _scaled(FLOAT, (30, 60))),
    Case("lax.random_gamma_grad", lax.random_gamma_grad, _scaled(FLOAT, (30, 60))),
    Case("lax.zeta", lax.zeta, _scaled(FLOAT, (20, 20), -0.5, 1.0)),
    Case("lax.polygamma", lambda m, x: lax.polygamma(lax.round(m), x),
         _scaled(FLOAT, (5, 20), -0.5, 1.0)),
    Case("lax.betainc", lax.betainc, _scaled(FLOAT, (40, 40, 1))),
    # (exp(|x|) overflows before I0(x) does, as in JAX: beyond 88.7 in float32, 11 in float16)
    Case("jnp.i0", jnp.i0, _bounded(FLOAT, 1, -10.0, 10.0), _i0),
    # --- scipy.special with math/NumPy formulas ---
    Case("jsp.gammaln", jsp.gammaln, _inputs(FLOAT), _math(math.lgamma)),
    Case("jsp.gamma", jsp.gamma, _bounded(F32, 1, -30.0, 40.0), _math(_gamma), rtol=1e-5),
    Case("jsp.gammasgn", jsp.gammasgn, _inputs(FLOAT), _gammasgn),
    Case("jsp.erf", jsp.erf, _inputs(FLOAT), _math(math.erf)),
    Case("jsp.erfc", jsp.erfc, _inputs(FLOAT), _math(math.erfc)),
    Case("jsp.erfcx", jsp.erfcx, _bounded(F32, 1, -5.0, 9.0), _erfcx, rtol=2e-6),
    Case("jsp.expit", jsp.expit, _inputs(FLOAT), _math(_expit)),
    Case("jsp.logit", jsp.logit, _inputs(F32), lambda x: np.log(x / (1 - x))),
    Case("jsp.xlogy", jsp.xlogy, _inputs(F32, 2), _xlogy),
    Case("jsp.xlog1py", jsp.xlog1py, _inputs(F32, 2), _xlog1py),
    Case("jsp.entr", jsp.entr, _inputs(F32), _entr),
    Case("jsp.rel_entr", jsp.rel_entr, _bounded(F32, 2, -1.0, 10.0), _rel_entr, atol=1e-5),
    Case("jsp.kl_div", jsp.kl_div, _bounded(F32, 2, -1.0, 10.0),
         lambda p, q: _rel_entr(p, q) - p + q, atol=1e-5),
    # float32 rounding of x / sqrt(2) costs about 2 x**2 ulps in the tails (as in JAX)
    Case("jsp.ndtr", jsp.ndtr, _inputs(F32), _ndtr, rtol=3e-5, atol=1e-37),
    # log(ndtr(x)) for x up to 5 in float32 (as JAX) loses digits once ndtr is near 1
    Case("jsp.log_ndtr", jsp.log_ndtr, _bounded(F32, 1, -30.0, 2.0), _log_ndtr,
         rtol=5e-5),
    Case("jsp.i0", jsp.i0, _bounded(F32, 1, -85.0, 85.0), _i0),
    Case("jsp.i0e", jsp.i0e, _bounded(FLOAT), _i0e),
    Case("jsp.factorial", jsp.factorial, _bounded(F32, 1, -5.0, 30.0), _factorial, rtol=1e-5),
    Case("jsp.boxcox", jsp.boxcox, _bounded(F32, 2, 0.0, 5.0),
         lambda x, l: _boxcox(np.log(x), l)),
    Case("jsp.boxcox1p", jsp.boxcox1p, _bounded(F32, 2, 0.0, 5.0),
         lambda x, l: _boxcox(np.log1p(x), l)),
    Case("jsp.logsumexp", jsp.logsumexp, _bounded(F32, 1, -50.0, 50.0), _logsumexp,
         rtol=1e-5, atol=1e-6),
    # --- scipy.special, backend-only ---
    Case("jsp.digamma", jsp.digamma, _inputs(FLOAT)),
    Case("jsp.betaln", jsp.betaln, _scaled(F32, (100, 100))),
    Case("jsp.beta", jsp.beta, _scaled(F32, (30, 30), -0.5, 1.0)),
    Case("jsp.poch", jsp.poch, _scaled(F32, (10, 5), -1.0, 1.0)),
    Case("jsp.comb", jsp.comb, _scaled(F32, (30, 30))),
    Case("jsp.loggamma", jsp.loggamma, _inputs(F32)),
    Case("jsp.erfinv", jsp.erfinv, _bounded(F32, 1, -1.0, 1.0)),
    Case("jsp.ndtri", jsp.ndtri, _bounded(F32, 1, 0.0, 1.0)),
    Case("jsp.dawsn", jsp.dawsn, _bounded(FLOAT)),
    Case("jsp.owens_t", jsp.owens_t, _bounded(F32, 2, -5.0, 5.0)),
    Case("jsp.spence", jsp.spence, _bounded(F32, 1, 0.0, 100.0)),
    Case("jsp.expi", jsp.expi, _bounded(F32, 1, -50.0, 50.0)),
    Case("jsp.expn", lambda n, x: jsp.expn(lax.round(n), x), _scaled(F32, (10, 10))),
    Case("jsp.sici", jsp.sici, _bounded(F32, 1, -20.0, 20.0)),
    Case("jsp.fresnel", jsp.fresnel, _bounded(FLOAT, 1, -10.0, 10.0)),
    Case("jsp.hyp1f1", jsp.hyp1f1, _scaled(F32, (5, 5, 10), 0.1, 1.0)),
    Case("jsp.multigammaln", jsp.multigammaln, _bounded(F32, 1, 2.0, 20.0,
                                                        kwargs=st.fixed_dictionaries(
                                                            {"d": st.integers(1, 3)}))),
]


# --- derivative cases (float64, where each function is smooth) ---------------------------------

def _ad_inputs(*bounds, kwargs=None):
  """float64 operands broadcasting as lax does, operand i in `bounds[i]`."""
  def rescale(inputs):
    arrays, kw = inputs
    return tuple(low + (high - low) * a for a, (low, high) in zip(arrays, bounds)), kw
  return lambda: S.bounded_case_inputs([np.float64], len(bounds), 0.0, 1.0,
                                       kwargs=kwargs).map(rescale)


def _away_from_zero(low, high):
  """One float64 operand with low <= |x| <= high, either sign (avoiding a kink at 0)."""
  def spread(inputs):
    (x,), kw = inputs
    return (np.where(x < 0, x * (high - low) - low, x * (high - low) + low),), kw
  return lambda: S.bounded_case_inputs([np.float64], 1, -1.0, 1.0).map(spread)


def _fixed(**choices):
  """Static keyword arguments, each drawn from a list of values."""
  return st.fixed_dictionaries({k: st.sampled_from(v) for k, v in choices.items()})


AD_CASES = [
    ADCase("lgamma", lax.lgamma, _ad_inputs((0.5, 5.0)), ("lgamma",), order=2),
    ADCase("digamma", lax.digamma, _ad_inputs((1.0, 5.0)), ("digamma",), order=2),
    ADCase("polygamma", lambda x, m: lax.polygamma(np.float64(m), x),
           _ad_inputs((1.0, 5.0), kwargs=_fixed(m=[1, 2, 3])), ("polygamma",), order=2),
    ADCase("igamma", lax.igamma, _ad_inputs((0.5, 5.0), (0.2, 5.0)),
           ("igamma",)),
    ADCase("igamma_x", lambda x, a: lax.igamma(np.float64(a), x),
           _ad_inputs((0.2, 5.0), kwargs=_fixed(a=[0.7, 2.5])), ("igamma",), order=2),
    ADCase("igammac", lax.igammac, _ad_inputs((0.5, 5.0), (0.2, 5.0)),
           ("igammac",)),
    ADCase("igammac_x", lambda x, a: lax.igammac(np.float64(a), x),
           _ad_inputs((0.2, 5.0), kwargs=_fixed(a=[0.7, 2.5])), ("igammac",), order=2),
    ADCase("bessel_i0e", lax.bessel_i0e, _away_from_zero(0.2, 6.0), ("bessel_i0e",), order=2),
    ADCase("bessel_i1e", lax.bessel_i1e, _away_from_zero(0.2, 6.0), ("bessel_i1e",), order=2),
    ADCase("erf", lax.erf, _ad_inputs((-3.0, 3.0)), ("erf",), order=2),
    ADCase("erfc", lax.erfc, _ad_inputs((-3.0, 3.0)), ("erfc",), order=2),
    ADCase("erf_inv", lax.erf_inv, _ad_inputs((-0.9, 0.9)), ("erf_inv",), order=2),
    ADCase("betainc", lambda x, a, b: lax.betainc(np.float64(a), np.float64(b), x),
           _ad_inputs((0.05, 0.95), kwargs=_fixed(a=[0.8, 2.0], b=[1.5, 4.0])),
           ("regularized_incomplete_beta",), order=2),
]
