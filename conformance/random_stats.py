"""Statistical goodness-of-fit checks for the random samplers.

Bit-exactness against JAX pins each sampler's output at a few keys; these
checks show the output has the right *distribution*. Everything is plain
NumPy/`math` on float64 (SciPy is not a dependency):

* `ks_test`: one-sample Kolmogorov–Smirnov test of continuous samples against
  a CDF; `chi_square_test` / `chi_square_samples`: Pearson's chi-square test of
  discrete counts against probabilities; `check_moments`: sample mean and
  variance within a few standard errors. `check_ks` and `check_chi_square`
  assert the p-value is not tiny, with a readable message.
* CDFs of the continuous distributions of `jax.random`, parameterized as its
  samplers are (`gamma_cdf(x, a)` for `jax.random.gamma(key, a)`, ...), and
  pmfs of the discrete ones. They take and return float64 arrays.
* The special functions they need: `normal_cdf`, `regularized_gamma_p` /
  `regularized_gamma_q` (series and continued fraction, as Numerical Recipes'
  gammp/gammq) and `regularized_beta` (continued fraction, as betai).

Typical use, at a fixed key::

  x = jax.random.gamma(key, 2.5, (10_000,))
  check_ks(x, lambda t: gamma_cdf(t, 2.5))
  check_moments(x, mean=2.5, var=2.5)
"""

import math

import numpy as np

__all__ = [
    # tests
    "ks_test", "kolmogorov_sf", "chi_square_test", "chi_square_samples",
    "check_ks", "check_chi_square", "check_moments", "ulp_distance",
    # special functions
    "normal_cdf", "regularized_gamma_p", "regularized_gamma_q", "regularized_beta",
    # continuous CDFs
    "uniform_cdf", "truncated_normal_cdf", "exponential_cdf", "laplace_cdf",
    "logistic_cdf", "gumbel_cdf", "cauchy_cdf", "gamma_cdf", "loggamma_cdf",
    "beta_cdf", "chisquare_cdf", "t_cdf", "f_cdf", "lognormal_cdf",
    "weibull_min_cdf", "pareto_cdf", "maxwell_cdf", "double_sided_maxwell_cdf",
    "rayleigh_cdf", "generalized_normal_cdf", "triangular_cdf", "wald_cdf",
    # discrete pmfs
    "bernoulli_pmf", "rademacher_pmf", "randint_pmf", "categorical_pmf",
    "poisson_pmf", "binomial_pmf", "geometric_pmf",
]

_EPS = 1e-15      # relative convergence threshold of the series and fractions
_TINY = 1e-300    # keeps Lentz's continued-fraction denominators off zero
_MAX_ITER = 100_000

_erfc = np.vectorize(math.erfc, otypes=[np.float64])
_lgamma = np.vectorize(math.lgamma, otypes=[np.float64])


def _f64(*args):
  return np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in args))


# --------------------------------------------------------------------------
# Tests


def kolmogorov_sf(lam):
  """P(K > lam) for the Kolmogorov distribution K = lim sqrt(n) D_n.

  2 Σ_{k≥1} (-1)^{k-1} exp(-2 k² λ²) for λ ≥ 1.18; below, where that series
  converges slowly, the equivalent Jacobi-theta form
  1 - sqrt(2π)/λ Σ_{k≥1} exp(-(2k-1)² π² / (8 λ²)). Both to double precision.
  """
  lam = float(lam)
  if lam <= 0.0:
    return 1.0
  if lam < 1.18:
    s = sum(math.exp(-(2 * k - 1) ** 2 * math.pi ** 2 / (8 * lam * lam)) for k in range(1, 7))
    return max(0.0, min(1.0, 1.0 - math.sqrt(2 * math.pi) / lam * s))
  s = sum((-1) ** (k - 1) * math.exp(-2 * k * k * lam * lam) for k in range(1, 101))
  return max(0.0, min(1.0, 2.0 * s))


def ks_test(samples, cdf):
  """One-sample Kolmogorov–Smirnov test: returns (D, p-value).

  `samples` is any array (flattened, as float64; NaN raises ValueError);
  `cdf` maps a float64 array to the hypothesized CDF values, elementwise.
  D = sup |F_n - F|. The p-value is the asymptotic Kolmogorov tail
  `kolmogorov_sf(λ)` at λ = (√n + 0.12 + 0.11/√n) D (Stephens' correction).
  Against the exact distribution of D_n (Marsaglia–Tsang–Wang), for
  n ≥ 100 its relative error is below about 2% for p in [1e-3, 0.85] and
  about 3% down to p = 1e-4 (tests/test_random_stats.py checks this): ample
  for judging "p not tiny". Only for continuous distributions.
  """
  x = np.sort(np.asarray(samples, dtype=np.float64).ravel())
  n = x.size
  if n == 0:
    raise ValueError("ks_test needs at least one sample")
  if np.isnan(x).any():
    raise ValueError("ks_test: samples contain NaN")
  f = np.asarray(cdf(x), dtype=np.float64)
  if f.shape != x.shape:
    raise ValueError(f"ks_test: cdf returned shape {f.shape} for input shape {x.shape}")
  i = np.arange(1, n + 1)
  d = max(np.max(i / n - f), np.max(f - (i - 1) / n))
  sqrt_n = math.sqrt(n)
  return float(d), kolmogorov_sf((sqrt_n + 0.12 + 0.11 / sqrt_n) * d)


def _merge_small_bins(counts, expected, min_expected):
  """Merges runs of adjacent bins until each has expected count ≥ min_expected.

  Bins are grouped left to right; a final group still below the threshold is
  merged into the group before it.
  """
  groups_c, groups_e = [], []
  c_acc = e_acc = 0.0
  for c, e in zip(counts, expected):
    c_acc, e_acc = c_acc + c, e_acc + e
    if e_acc >= min_expected:
      groups_c.append(c_acc)
      groups_e.append(e_acc)
      c_acc = e_acc = 0.0
  if e_acc > 0 or c_acc > 0:
    if groups_c:
      groups_c[-1] += c_acc
      groups_e[-1] += e_acc
    else:
      groups_c.append(c_acc)
      groups_e.append(e_acc)
  return np.array(groups_c), np.array(groups_e)


def chi_square_test(counts, expected_probs, min_expected=5.0):
  """Pearson's chi-square goodness-of-fit test: returns (statistic, p-value).

  `counts[i]` observations fell in bin i, whose probability under the
  hypothesis is `expected_probs[i]` (they must sum to 1 within 1e-6).
  Adjacent bins with expected count below `min_expected` are merged first
  (see `_merge_small_bins`), so list bins in their natural order. With m bins
  left the statistic Σ (O - E)² / E has m - 1 degrees of freedom; the p-value
  is Q((m-1)/2, stat/2) (`regularized_gamma_q`). Fewer than 2 bins after
  merging raise ValueError.
  """
  counts = np.asarray(counts, dtype=np.float64).ravel()
  probs = np.asarray(expected_probs, dtype=np.float64).ravel()
  if counts.shape != probs.shape:
    raise ValueError(f"chi_square_test: {counts.size} counts but {probs.size} probabilities")
  if (probs < 0).any() or abs(probs.sum() - 1.0) > 1e-6:
    raise ValueError("chi_square_test: probabilities must be ≥ 0 and sum to 1, "
                     f"got sum {probs.sum()!r}")
  n = counts.sum()
  obs, exp = _merge_small_bins(counts, n * probs, min_expected)
  if obs.size < 2:
    raise ValueError(f"chi_square_test: fewer than 2 bins with expected count ≥ {min_expected}; "
                     "draw more samples")
  stat = float(np.sum((obs - exp) ** 2 / exp))
  return stat, float(regularized_gamma_q((obs.size - 1) / 2, stat / 2))


def chi_square_samples(samples, values, probs, min_expected=5.0):
  """`chi_square_test` of discrete `samples` against P(X = values[i]) = probs[i].

  Samples equal to none of `values` are counted in one extra last bin of
  probability 1 - Σ probs (clipped at 0), so `values` may list only part of
  an infinite support (e.g. `np.arange(40)` for a Poisson): list them in
  increasing order so that the rest bin neighbours the upper tail.
  """
  x = np.asarray(samples).ravel()
  values = np.asarray(values).ravel()
  probs = np.asarray(probs, dtype=np.float64).ravel()
  counts = np.array([np.count_nonzero(x == v) for v in values] + [0])
  counts[-1] = x.size - counts.sum()
  rest = max(0.0, 1.0 - probs.sum())
  all_probs = np.append(probs, rest)
  return chi_square_test(counts, all_probs / all_probs.sum(), min_expected)


def check_ks(samples, cdf, min_p=1e-3, name="samples"):
  """Asserts `ks_test(samples, cdf)` gives a p-value ≥ `min_p`; returns (D, p)."""
  d, p = ks_test(samples, cdf)
  n = np.size(samples)
  assert p >= min_p, (f"{name}: Kolmogorov–Smirnov test rejects the distribution: "
                      f"D = {d:.4g} with n = {n} gives p = {p:.3g} < {min_p:g}")
  return d, p


def check_chi_square(samples, values, probs, min_p=1e-3, name="samples"):
  """Asserts `chi_square_samples(...)` gives a p-value ≥ `min_p`; returns (stat, p)."""
  stat, p = chi_square_samples(samples, values, probs)
  assert p >= min_p, (f"{name}: chi-square test rejects the distribution: "
                      f"statistic {stat:.4g} (n = {np.size(samples)}) gives p = {p:.3g} "
                      f"< {min_p:g}")
  return stat, p


def check_moments(samples, mean, var=None, fourth_central_moment=None, k=5.0, name="samples"):
  """Asserts the sample mean and variance lie within `k` standard errors.

  The standard error of the mean is sqrt(var / n) (needs `var`; without it,
  the sample variance is used and only the mean is checked). The sample
  variance (ddof=1) has standard error sqrt((μ4 - var²) / n), with μ4 the
  `fourth_central_moment` if given, else the normal-theory μ4 = 3 var²,
  i.e. var sqrt(2 / n): pass μ4 for heavy-tailed distributions, whose
  variance fluctuates more. Returns (sample mean, sample variance).
  """
  x = np.asarray(samples, dtype=np.float64).ravel()
  n = x.size
  if n < 2:
    raise ValueError("check_moments needs at least two samples")
  m, s2 = float(x.mean()), float(x.var(ddof=1))
  se_mean = math.sqrt((s2 if var is None else var) / n)
  z = abs(m - mean) / se_mean if se_mean > 0 else (0.0 if m == mean else math.inf)
  assert z <= k, (f"{name}: sample mean {m:.6g} is {z:.2f} standard errors "
                  f"({se_mean:.3g}) from the expected {mean:.6g} (allowed {k}; n = {n})")
  if var is not None:
    mu4 = 3 * var * var if fourth_central_moment is None else fourth_central_moment
    se_var = math.sqrt(max(mu4 - var * var, 0.0) / n)
    z = abs(s2 - var) / se_var if se_var > 0 else (0.0 if s2 == var else math.inf)
    assert z <= k, (f"{name}: sample variance {s2:.6g} is {z:.2f} standard errors "
                    f"({se_var:.3g}) from the expected {var:.6g} (allowed {k}; n = {n})")
  return m, s2


# --------------------------------------------------------------------------
# Special functions


def normal_cdf(x, loc=0.0, scale=1.0):
  """Φ((x - loc) / scale) = erfc(-z/√2) / 2, accurate in both tails."""
  x, loc, scale = _f64(x, loc, scale)
  return 0.5 * _erfc(-(x - loc) / (scale * math.sqrt(2.0)))


def _gamma_series(a, x):
  """Σ_{n≥0} x^n / (a (a+1) ... (a+n)): P(a, x) = that · x^a e^{-x} / Γ(a)."""
  term = 1.0 / a
  total = term.copy()
  ap = a.copy()
  for _ in range(_MAX_ITER):
    ap += 1.0
    term *= x / ap
    total += term
    if np.all(np.abs(term) <= np.abs(total) * _EPS):
      break
  return total


def _gamma_fraction(a, x):
  """Continued fraction (modified Lentz) with Q(a, x) = that · x^a e^{-x} / Γ(a)."""
  b = x + 1.0 - a
  c = np.full_like(x, 1.0 / _TINY)
  d = 1.0 / b
  h = d.copy()
  for i in range(1, _MAX_ITER):
    an = -i * (i - a)
    b += 2.0
    d = an * d + b
    d[np.abs(d) < _TINY] = _TINY
    c = b + an / c
    c[np.abs(c) < _TINY] = _TINY
    d = 1.0 / d
    delta = d * c
    h *= delta
    if np.all(np.abs(delta - 1.0) <= _EPS):
      break
  return h


def _regularized_gamma(a, x, upper):
  a, x = _f64(a, x)
  out = np.full(a.shape, np.nan)
  ok = (a > 0) & (x >= 0)
  out[ok & (x == 0)] = 1.0 if upper else 0.0
  out[ok & np.isposinf(x)] = 0.0 if upper else 1.0
  finite = ok & (x > 0) & np.isfinite(x)
  series = finite & (x < a + 1)
  fraction = finite & ~series
  for mask, is_upper, fn in ((series, False, _gamma_series), (fraction, True, _gamma_fraction)):
    if mask.any():
      am, xm = a[mask], x[mask]
      value = fn(am, xm) * np.exp(am * np.log(xm) - xm - _lgamma(am))
      out[mask] = value if is_upper == upper else 1.0 - value
  return out


def regularized_gamma_p(a, x):
  """P(a, x) = γ(a, x) / Γ(a), the regularized lower incomplete gamma function.

  For a > 0, x ≥ 0 (else NaN); P(a, ∞) = 1. Series for x < a + 1, else
  1 - Q by continued fraction; about 1e-14 relative accuracy.
  """
  return _regularized_gamma(a, x, upper=False)


def regularized_gamma_q(a, x):
  """Q(a, x) = 1 - P(a, x), the regularized upper incomplete gamma function.

  Computed directly (not as 1 - P) where it is small, so tail p-values keep
  their relative accuracy.
  """
  return _regularized_gamma(a, x, upper=True)


def _beta_fraction(a, b, x):
  """Continued fraction (modified Lentz) of I_x(a, b), as Numerical Recipes' betacf."""
  qab, qap, qam = a + b, a + 1.0, a - 1.0
  c = np.ones_like(x)
  d = 1.0 - qab * x / qap
  d[np.abs(d) < _TINY] = _TINY
  d = 1.0 / d
  h = d.copy()
  for m in range(1, _MAX_ITER):
    m2 = 2 * m
    for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)),
               -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
      d = 1.0 + aa * d
      d[np.abs(d) < _TINY] = _TINY
      c = 1.0 + aa / c
      c[np.abs(c) < _TINY] = _TINY
      d = 1.0 / d
      delta = d * c
      h *= delta
    if np.all(np.abs(delta - 1.0) <= _EPS):
      break
  return h


def regularized_beta(a, b, x):
  """I_x(a, b) = B(x; a, b) / B(a, b), the regularized incomplete beta function.

  For a, b > 0 and 0 ≤ x ≤ 1 (else NaN). Continued fraction for
  x < (a+1)/(a+b+2), else 1 - I_{1-x}(b, a); about 1e-13 relative accuracy.
  """
  a, b, x = _f64(a, b, x)
  out = np.full(a.shape, np.nan)
  ok = (a > 0) & (b > 0) & (x >= 0) & (x <= 1)
  out[ok & (x == 0)] = 0.0
  out[ok & (x == 1)] = 1.0
  inner = ok & (x > 0) & (x < 1)
  direct = inner & (x < (a + 1) / (a + b + 2))
  mirror = inner & ~direct
  for mask, flip in ((direct, False), (mirror, True)):
    if mask.any():
      am, bm, xm = a[mask], b[mask], x[mask]
      if flip:
        am, bm, xm = bm, am, 1.0 - xm
      log_front = (_lgamma(am + bm) - _lgamma(am) - _lgamma(bm)
                   + am * np.log(xm) + bm * np.log1p(-xm))
      value = np.exp(log_front) * _beta_fraction(am, bm, xm) / am
      out[mask] = 1.0 - value if flip else value
  return out


# --------------------------------------------------------------------------
# CDFs of the continuous samplers (parameters as in jax.random)


def uniform_cdf(x, minval=0.0, maxval=1.0):
  """jax.random.uniform(key, shape, dtype, minval, maxval)."""
  x, lo, hi = _f64(x, minval, maxval)
  return np.clip((x - lo) / (hi - lo), 0.0, 1.0)


def truncated_normal_cdf(x, lower, upper):
  """jax.random.truncated_normal(key, lower, upper): N(0, 1) restricted to [lower, upper]."""
  x, lower, upper = _f64(x, lower, upper)
  lo, hi = normal_cdf(lower), normal_cdf(upper)
  return np.clip((normal_cdf(np.clip(x, lower, upper)) - lo) / (hi - lo), 0.0, 1.0)


def exponential_cdf(x, scale=1.0):
  """jax.random.exponential (scale 1): 1 - exp(-x / scale) for x ≥ 0."""
  x, scale = _f64(x, scale)
  return -np.expm1(-np.maximum(x, 0.0) / scale)


def laplace_cdf(x, loc=0.0, scale=1.0):
  """jax.random.laplace (loc 0, scale 1): e^z / 2 for z < 0, 1 - e^{-z} / 2 otherwise."""
  x, loc, scale = _f64(x, loc, scale)
  z = (x - loc) / scale
  return np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0.0)), 1.0 - 0.5 * np.exp(-np.maximum(z, 0.0)))


def logistic_cdf(x, loc=0.0, scale=1.0):
  """jax.random.logistic (loc 0, scale 1): 1 / (1 + e^{-z})."""
  x, loc, scale = _f64(x, loc, scale)
  return np.exp(-np.logaddexp(0.0, -(x - loc) / scale))


def gumbel_cdf(x, loc=0.0, scale=1.0):
  """jax.random.gumbel (loc 0, scale 1; either `mode`): exp(-e^{-z})."""
  x, loc, scale = _f64(x, loc, scale)
  return np.exp(-np.exp(-(x - loc) / scale))


def cauchy_cdf(x, loc=0.0, scale=1.0):
  """jax.random.cauchy (loc 0, scale 1): 1/2 + arctan(z) / π."""
  x, loc, scale = _f64(x, loc, scale)
  return 0.5 + np.arctan((x - loc) / scale) / math.pi


def gamma_cdf(x, a):
  """jax.random.gamma(key, a): shape a, scale 1; P(a, x) for x ≥ 0."""
  x, a = _f64(x, a)
  return regularized_gamma_p(a, np.maximum(x, 0.0))


def loggamma_cdf(x, a):
  """jax.random.loggamma(key, a): log of a gamma(a) variate; P(a, e^x)."""
  x, a = _f64(x, a)
  return regularized_gamma_p(a, np.exp(x))


def beta_cdf(x, a, b):
  """jax.random.beta(key, a, b): I_x(a, b) on [0, 1]."""
  x, a, b = _f64(x, a, b)
  return regularized_beta(a, b, np.clip(x, 0.0, 1.0))


def chisquare_cdf(x, df):
  """jax.random.chisquare(key, df): P(df/2, x/2)."""
  x, df = _f64(x, df)
  return regularized_gamma_p(df / 2, np.maximum(x, 0.0) / 2)


def t_cdf(x, df):
  """jax.random.t(key, df): Student's t; 1 - I_{df/(df+x²)}(df/2, 1/2) / 2 for x > 0."""
  x, df = _f64(x, df)
  tail = 0.5 * regularized_beta(df / 2, 0.5, df / (df + x * x))
  return np.where(x > 0, 1.0 - tail, tail)


def f_cdf(x, dfnum, dfden):
  """jax.random.f(key, dfnum, dfden): I_{d1 x/(d1 x + d2)}(d1/2, d2/2) for x ≥ 0."""
  x, d1, d2 = _f64(x, dfnum, dfden)
  x = np.maximum(x, 0.0)
  return regularized_beta(d1 / 2, d2 / 2, d1 * x / (d1 * x + d2))


def lognormal_cdf(x, sigma=1.0):
  """jax.random.lognormal(key, sigma): exp(sigma · N(0, 1)); Φ(log x / sigma)."""
  x, sigma = _f64(x, sigma)
  with np.errstate(divide="ignore"):
    return normal_cdf(np.log(np.maximum(x, 0.0)) / sigma)


def weibull_min_cdf(x, scale, concentration):
  """jax.random.weibull_min(key, scale, concentration): 1 - exp(-(x/scale)^k), x ≥ 0."""
  x, scale, k = _f64(x, scale, concentration)
  return -np.expm1(-(np.maximum(x, 0.0) / scale) ** k)


def pareto_cdf(x, b):
  """jax.random.pareto(key, b): Pareto with minimum 1; 1 - x^{-b} for x ≥ 1."""
  x, b = _f64(x, b)
  return -np.expm1(-b * np.log(np.maximum(x, 1.0)))


def maxwell_cdf(x):
  """jax.random.maxwell: norm of a standard 3-D normal vector; P(3/2, x²/2)."""
  (x,) = _f64(x)
  x = np.maximum(x, 0.0)
  return regularized_gamma_p(1.5, x * x / 2)


def _symmetric_cdf(z, two_tail):
  """CDF of a law symmetric about 0 from P(|Z| > |z|): kept exact in the lower tail."""
  return np.where(z < 0, 0.5 * two_tail, 1.0 - 0.5 * two_tail)


def double_sided_maxwell_cdf(x, loc=0.0, scale=1.0):
  """jax.random.double_sided_maxwell(key, loc, scale): loc ± scale · Maxwell, sign fair."""
  x, loc, scale = _f64(x, loc, scale)
  z = (x - loc) / scale
  return _symmetric_cdf(z, regularized_gamma_q(1.5, z * z / 2))


def rayleigh_cdf(x, scale=1.0):
  """jax.random.rayleigh(key, scale): 1 - exp(-x² / (2 scale²)) for x ≥ 0."""
  x, scale = _f64(x, scale)
  x = np.maximum(x, 0.0)
  return -np.expm1(-x * x / (2 * scale * scale))


def generalized_normal_cdf(x, p):
  """jax.random.generalized_normal(key, p): density ∝ exp(-|x|^p);
  Q(1/p, |x|^p) / 2 for x < 0, mirrored for x > 0."""
  x, p = _f64(x, p)
  return _symmetric_cdf(x, regularized_gamma_q(1 / p, np.abs(x) ** p))


def triangular_cdf(x, left, mode, right):
  """jax.random.triangular(key, left, mode, right)."""
  x, lo, m, hi = _f64(x, left, mode, right)
  x = np.clip(x, lo, hi)
  with np.errstate(divide="ignore", invalid="ignore"):
    rising = (x - lo) ** 2 / ((hi - lo) * (m - lo))
    falling = 1.0 - (hi - x) ** 2 / ((hi - lo) * (hi - m))
  return np.where(x <= m, np.where(x <= lo, 0.0, rising), np.where(x >= hi, 1.0, falling))


def wald_cdf(x, mean, lam=1.0):
  """jax.random.wald(key, mean): inverse Gaussian with shape lam = 1.

  Φ(√(λ/x)(x/μ - 1)) + e^{2λ/μ} Φ(-√(λ/x)(x/μ + 1)) for x > 0; the second
  term is formed in logs, but still underflows to 0 once its Φ does
  (√(λ/x)(x/μ + 1) > 38), so use means ≳ 0.01 λ.
  """
  x, mu, lam = _f64(x, mean, lam)
  with np.errstate(divide="ignore", invalid="ignore"):
    r = np.sqrt(lam / x)
    first = normal_cdf(r * (x / mu - 1))
    second = np.exp(2 * lam / mu + np.log(normal_cdf(-r * (x / mu + 1))))
  return np.where(x > 0, np.clip(first + second, 0.0, 1.0), 0.0)


# --------------------------------------------------------------------------
# pmfs of the discrete samplers (0 off the support)


def bernoulli_pmf(k, p=0.5):
  """jax.random.bernoulli(key, p): P(True) = p (k is 0/1 or bool)."""
  k, p = _f64(k, p)
  return np.where(k == 1, p, np.where(k == 0, 1.0 - p, 0.0))


def rademacher_pmf(k):
  """jax.random.rademacher: ±1 with probability 1/2 each."""
  (k,) = _f64(k)
  return np.where(np.abs(k) == 1, 0.5, 0.0)


def randint_pmf(k, minval, maxval):
  """jax.random.randint(key, shape, minval, maxval): uniform on minval ≤ k < maxval."""
  k, lo, hi = _f64(k, minval, maxval)
  return np.where((k >= lo) & (k < hi) & (k == np.floor(k)), 1.0 / (hi - lo), 0.0)


def categorical_pmf(k, probs):
  """jax.random.categorical / choice with probabilities `probs` (normalized here).

  For categorical(key, logits) pass probs = softmax(logits).
  """
  probs = np.asarray(probs, dtype=np.float64)
  probs = probs / probs.sum()
  k = np.asarray(k)
  inside = (k >= 0) & (k < probs.size)
  return np.where(inside, probs[np.where(inside, k, 0).astype(np.int64)], 0.0)


def poisson_pmf(k, lam):
  """jax.random.poisson(key, lam): e^{-λ} λ^k / k! for integer k ≥ 0."""
  k, lam = _f64(k, lam)
  on = (k >= 0) & (k == np.floor(k))
  ks = np.where(on, k, 0.0)
  with np.errstate(divide="ignore", invalid="ignore"):
    log_pmf = ks * np.log(lam) - lam - _lgamma(ks + 1)
  return np.where(on, np.where(lam == 0, (ks == 0).astype(np.float64), np.exp(log_pmf)), 0.0)


def binomial_pmf(k, n, p):
  """jax.random.binomial(key, n, p): C(n, k) p^k (1-p)^{n-k} for k = 0..n."""
  k, n, p = _f64(k, n, p)
  on = (k >= 0) & (k <= n) & (k == np.floor(k))
  ks = np.where(on, k, 0.0)
  with np.errstate(divide="ignore", invalid="ignore"):
    log_pmf = (_lgamma(n + 1) - _lgamma(ks + 1) - _lgamma(n - ks + 1)
               + np.where(ks > 0, ks * np.log(p), 0.0)
               + np.where(n - ks > 0, (n - ks) * np.log1p(-p), 0.0))
  return np.where(on, np.exp(log_pmf), 0.0)


def geometric_pmf(k, p):
  """jax.random.geometric(key, p): trials up to the first success; p (1-p)^{k-1}, k ≥ 1."""
  k, p = _f64(k, p)
  on = (k >= 1) & (k == np.floor(k))
  return np.where(on, p * np.exp(np.where(on, k - 1, 0.0) * np.log1p(-p)), 0.0)


def ulp_distance(x, want):
  """The largest distance, in float32 units in the last place, between the
  float32 values of `x` and `want` (elementwise; 0 when bit-identical)."""
  bits = lambda v: np.asarray(v, np.float32).view(np.int32).astype(np.int64)
  return int(np.abs(bits(x) - bits(want)).max())
