"""`refimpl.scipy.stats`: probability distributions built on lax, as `jax.scipy.stats`.

Each distribution is a submodule (`norm`, `gamma`, ...) of functions such as
logpdf, pdf, cdf, sf and ppf with JAX's names, parameters and formulas:
arguments are promoted with promote_args_inexact (integers to the default
float, float32 stays float32), values outside the support give -inf log
densities (0 densities), and invalid parameters give NaN where JAX's do.
The sample statistics `mode`, `rankdata` and `sem` and the estimator
`gaussian_kde` are at the top level, as in JAX.
"""

from refimpl.scipy.stats import (  # noqa: F401
    bernoulli, beta, betabinom, binom, cauchy, chi2, dirichlet, expon, gamma, gennorm, geom,
    gumbel_l, gumbel_r, laplace, logistic, multinomial, multivariate_normal, nbinom, norm,
    pareto, poisson, t, truncnorm, uniform, vonmises, wrapcauchy)
from refimpl.scipy.stats._core import mode, rankdata, sem  # noqa: F401
from refimpl.scipy.stats.kde import gaussian_kde  # noqa: F401
