"""jax.random's argument handling as in current JAX: `dtype=None` defaults,
bernoulli's and gumbel's modes, parameter dtype and shape checks,
orthogonal's `m`, and `clone`."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import dtypes, random
from conformance import random_stats as rs

K = random.key(7)


@pytest.mark.parametrize("name, call, default", [
    ("uniform", lambda d: random.uniform(K, (2,), d), np.float32),
    ("normal", lambda d: random.normal(K, (2,), d), np.float32),
    ("randint", lambda d: random.randint(K, (2,), 0, 5, d), np.int32),
    ("rademacher", lambda d: random.rademacher(K, (2,), d), np.int32),
    ("geometric", lambda d: random.geometric(K, 0.5, (2,), d), np.int32),
    ("poisson", lambda d: random.poisson(K, 2., (2,), d), np.int32),
    ("gamma", lambda d: random.gamma(K, 2., (2,), d), np.float32),
    ("loggamma", lambda d: random.loggamma(K, 2., (2,), d), np.float32),
    ("lognormal", lambda d: random.lognormal(K, 1., (2,), d), np.float32),
    ("orthogonal", lambda d: random.orthogonal(K, 2, (), d), np.float32),
    ("binomial", lambda d: random.binomial(K, 4., 0.5, (2,), d), np.float32),
    ("multinomial", lambda d: random.multinomial(K, 4., jnp.array([.5, .5]), dtype=d),
     np.float32),
])
def test_dtype_none_is_the_default(name, call, default):
  out = call(None)
  assert out.dtype == default
  np.testing.assert_array_equal(out, call(default))


def test_bernoulli_modes():
  p = np.float32(0.3)
  u = np.asarray(random.uniform(K, (2, 1000)))
  high = np.asarray(random.bernoulli(K, p, (1000,), mode="high"))
  np.testing.assert_array_equal(high, u[1] * np.float32(2. ** -23) < p - u[0])
  np.testing.assert_array_equal(random.bernoulli(K, p, (1000,)),
                                random.uniform(K, (1000,)) < p)
  # mode="high" resolves probabilities far below float32's uniform spacing
  tiny = np.asarray(random.bernoulli(random.key(1), 1e-6, (2_000_000,), mode="high"))
  assert 0 < tiny.sum() < 10 and not random.bernoulli(K, 1e-9, (1000,)).any()
  draws = np.asarray(random.bernoulli(random.key(2), 0.25, (20000,), mode="high"))
  rs.check_chi_square(draws.astype(int), [0, 1], [0.75, 0.25], name="bernoulli high")
  with pytest.raises(ValueError, match="got mode='medium', expected 'high' or 'low'"):
    random.bernoulli(K, 0.5, mode="medium")


def test_gumbel_default_mode_follows_the_option():
  with jax.config.option("jax_high_dynamic_range_gumbel", True):
    np.testing.assert_array_equal(random.gumbel(K, (5,)), random.gumbel(K, (5,), mode="high"))
    np.testing.assert_array_equal(random.categorical(K, jnp.zeros(4), shape=(3,)),
                                  random.categorical(K, jnp.zeros(4), shape=(3,), mode="high"))
  np.testing.assert_array_equal(random.gumbel(K, (5,)), random.gumbel(K, (5,), mode="low"))


SAFE_CAST_CALLS = {
    "beta": lambda x, **kw: random.beta(K, x, 1., **kw),
    "pareto": lambda x, **kw: random.pareto(K, x, **kw),
    "chisquare": lambda x, **kw: random.chisquare(K, x, **kw),
    "f": lambda x, **kw: random.f(K, 1., x, **kw),
    "rayleigh": lambda x, **kw: random.rayleigh(K, x, **kw),
    "wald": lambda x, **kw: random.wald(K, x, **kw),
    "lognormal": lambda x, **kw: random.lognormal(K, x, **kw),
}


@pytest.mark.parametrize("name", sorted(SAFE_CAST_CALLS))
def test_parameters_must_cast_safely(name):
  """Parameters that would lose precision in `dtype` raise TypePromotionError."""
  call = SAFE_CAST_CALLS[name]
  with jax.enable_x64():
    call(np.ones(2, np.float32))               # float32 -> float64: safe
    with pytest.raises(dtypes.TypePromotionError,
                       match=f"In arguments to {name}, cannot safely cast argument of "
                       "type float64 to float32"):
      call(np.ones(2, np.float64), dtype=np.float32)
  with pytest.raises(dtypes.TypePromotionError,
                     match="cannot safely cast argument of type complex64"):
    call(np.ones(2, np.complex64))
  assert call(np.ones(3, np.int32)).shape == (3,)   # integers promote to the float dtype


@given(st.sampled_from(["pareto", "rayleigh", "wald", "chisquare", "lognormal"]),
       st.sampled_from([(2,), (3,), (2, 3), (3, 1)]))
@settings(max_examples=15)
def test_parameter_shapes_must_broadcast_to_shape(name, shape):
  param = np.ones(3, np.float32) + 1
  f = getattr(random, name)
  if shape[-1:] in ((3,), (1,)) and not (len(shape) == 2 and shape[-1] == 1):
    assert f(K, param, shape).shape == shape
  else:
    with pytest.raises(ValueError, match=f"{name} parameter shapes must be broadcast-compatible"
                       "|Incompatible shapes for broadcasting"):
      f(K, param, shape)
  assert f(K, param).shape == (3,)


def test_lognormal_converts_sigma_to_dtype():
  out = random.lognormal(K, 0.5, (3,), np.float16)
  assert out.dtype == np.float16
  np.testing.assert_array_equal(
      out, np.exp(np.asarray(random.normal(K, (3,), np.float16)) * np.float16(0.5)))


@pytest.mark.parametrize("n, m, batch", [(3, 5, ()), (5, 3, (2,)), (4, None, ()), (1, 4, (3,))])
def test_orthogonal_semi_orthogonal(n, m, batch):
  q = np.asarray(random.orthogonal(K, n, batch, m=m))
  cols = n if m is None else m
  assert q.shape == (*batch, n, cols)
  gram = q @ np.swapaxes(q, -1, -2) if n <= cols else np.swapaxes(q, -1, -2) @ q
  np.testing.assert_allclose(gram, np.broadcast_to(np.eye(min(n, cols)), gram.shape), atol=2e-6)
  if m is not None and n < m:   # the wide case is the transposed tall one
    np.testing.assert_array_equal(q, np.swapaxes(random.orthogonal(K, m, batch, m=n), -1, -2))


def test_clone_is_the_identity_primitive():
  k2 = random.clone(K)
  np.testing.assert_array_equal(random.key_data(k2), random.key_data(K))
  raw = random.PRNGKey(3)
  np.testing.assert_array_equal(random.clone(raw), raw)
  assert "random_clone a" in str(jax.make_jaxpr(random.clone)(K))
  keys = random.split(K, 3)
  np.testing.assert_array_equal(random.key_data(jax.vmap(random.clone)(keys)),
                                random.key_data(keys))


INT_SHAPE_SAMPLERS = {
    "bits": lambda s: random.bits(K, s), "uniform": lambda s: random.uniform(K, s),
    "normal": lambda s: random.normal(K, s), "randint": lambda s: random.randint(K, s, 0, 9),
    "bernoulli": lambda s: random.bernoulli(K, 0.3, s),
    "categorical": lambda s: random.categorical(K, jnp.zeros(4), shape=s),
    "rademacher": lambda s: random.rademacher(K, s), "gumbel": lambda s: random.gumbel(K, s),
    "laplace": lambda s: random.laplace(K, s), "logistic": lambda s: random.logistic(K, s),
    "exponential": lambda s: random.exponential(K, s), "cauchy": lambda s: random.cauchy(K, s),
    "maxwell": lambda s: random.maxwell(K, s),
    "double_sided_maxwell": lambda s: random.double_sided_maxwell(K, 0., 1., s),
    "rayleigh": lambda s: random.rayleigh(K, 1., s),
    "weibull_min": lambda s: random.weibull_min(K, 1., 2., s),
    "pareto": lambda s: random.pareto(K, 2., s), "lognormal": lambda s: random.lognormal(K, 1., s),
    "triangular": lambda s: random.triangular(K, 0., .5, 1., s),
    "geometric": lambda s: random.geometric(K, .5, s),
    "truncated_normal": lambda s: random.truncated_normal(K, -1., 1., s),
    "poisson": lambda s: random.poisson(K, 3., s), "binomial": lambda s: random.binomial(K, 5., .5, s),
    "multivariate_normal": lambda s: random.multivariate_normal(K, jnp.zeros(2), jnp.eye(2), s),
    "orthogonal": lambda s: random.orthogonal(K, 2, s), "wald": lambda s: random.wald(K, 1., s),
    "gamma": lambda s: random.gamma(K, 2., s), "loggamma": lambda s: random.loggamma(K, 2., s),
    "beta": lambda s: random.beta(K, 2., 3., s),
    "dirichlet": lambda s: random.dirichlet(K, jnp.ones(2), s),
    "chisquare": lambda s: random.chisquare(K, 2., s), "f": lambda s: random.f(K, 2., 3., s),
    "t": lambda s: random.t(K, 3., s), "generalized_normal": lambda s: random.generalized_normal(K, 1.5, s),
    "ball": lambda s: random.ball(K, 2, 2, s), "split": lambda s: random.split(K, s),
}


@pytest.mark.parametrize("name", sorted(INT_SHAPE_SAMPLERS))
def test_int_shape_is_a_one_dimensional_shape(name):
  """An int shape n is the shape (n,), as JAX's core.canonicalize_shape makes it."""
  sample = INT_SHAPE_SAMPLERS[name]
  by_int, by_tuple = sample(3), sample((3,))
  assert by_int.shape == by_tuple.shape and by_int.shape[:1] == (3,)
  np.testing.assert_array_equal(random.key_data(by_int) if name == "split" else by_int,
                                random.key_data(by_tuple) if name == "split" else by_tuple)


def test_int_shape_refused_where_jax_refuses():
  """choice requires a sequence, and a float size is no shape."""
  with pytest.raises(TypeError, match="must be a sequence"):
    random.choice(K, 5, 3)
  with pytest.raises(TypeError, match="Shapes must be 1D sequences"):
    random.normal(K, 3.0)
