"""jax.random's argument handling as in current JAX: `dtype=None` defaults,
bernoulli's and gumbel's modes, parameter dtype and shape checks,
orthogonal's `m`, `clone`, and where the samplers' bodies are jitted."""

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
    "poisson": lambda s: random.poisson(K, 3., s),
    "binomial": lambda s: random.binomial(K, 5., .5, s),
    "multivariate_normal": lambda s: random.multivariate_normal(K, jnp.zeros(2), jnp.eye(2), s),
    "orthogonal": lambda s: random.orthogonal(K, 2, s), "wald": lambda s: random.wald(K, 1., s),
    "gamma": lambda s: random.gamma(K, 2., s), "loggamma": lambda s: random.loggamma(K, 2., s),
    "beta": lambda s: random.beta(K, 2., 3., s),
    "dirichlet": lambda s: random.dirichlet(K, jnp.ones(2), s),
    "chisquare": lambda s: random.chisquare(K, 2., s), "f": lambda s: random.f(K, 2., 3., s),
    "t": lambda s: random.t(K, 3., s),
    "generalized_normal": lambda s: random.generalized_normal(K, 1.5, s),
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


@pytest.mark.parametrize("name, call", [
    ("randint", lambda: random.randint(K, (2,), [0, 1], 5)),
    ("geometric", lambda: random.geometric(K, [0.3, 0.4])),
    ("truncated_normal", lambda: random.truncated_normal(K, [0.], 1.)),
    ("double_sided_maxwell", lambda: random.double_sided_maxwell(K, [0.], 1.)),
    ("weibull_min", lambda: random.weibull_min(K, 1., [2.])),
    ("pareto", lambda: random.pareto(K, [2.])), ("rayleigh", lambda: random.rayleigh(K, [2.])),
    ("lognormal", lambda: random.lognormal(K, [0.5])),
    ("triangular", lambda: random.triangular(K, 0., [.5], 1.)),
    ("binomial", lambda: random.binomial(K, [5.], 0.5)), ("wald", lambda: random.wald(K, "a")),
    ("gamma", lambda: random.gamma(K, [1.])), ("loggamma", lambda: random.loggamma(K, [1.])),
    ("beta", lambda: random.beta(K, 1., [2.])),
    ("dirichlet", lambda: random.dirichlet(K, [1., 2.])),
    ("chisquare", lambda: random.chisquare(K, [1.])), ("f", lambda: random.f(K, 1., [2.])),
    ("t", lambda: random.t(K, [3.])),
])
def test_parameters_must_be_arrays_or_scalars(name, call):
  """A list (or string) parameter is refused before it reaches the jitted
  body, where a list would be a pytree of scalars."""
  with pytest.raises(TypeError, match=f"^{name} requires ndarray or scalar arguments"):
    call()


def _sampler_jits(jaxpr):
  """The jitted functions of refimpl.random in `jaxpr`'s equations, with the
  ones each calls in parentheses: "_normal(_normal_real(_uniform))"."""
  calls = []
  for eqn in jaxpr.eqns:
    if eqn.primitive.name == "jit" and hasattr(random, eqn.params["name"]):
      inner = _sampler_jits(eqn.params["jaxpr"].jaxpr)
      calls.append(eqn.params["name"] + (f"({inner})" if inner else ""))
  return ", ".join(calls)


NORMAL = "_normal(_normal_real(_uniform))"
RADEMACHER = "_rademacher(_bernoulli(_uniform))"
SAMPLER_JITS = {   # JAX 0.10's jitted functions, nested as JAX nests them
    "uniform": (lambda k: random.uniform(k, (3,)), "_uniform"),
    "normal": (lambda k: random.normal(k, (3,)), NORMAL),
    "normal complex64": (lambda k: random.normal(k, (3,), jnp.complex64),
                         "_normal(_normal_real(_uniform), _normal_real(_uniform))"),
    "randint": (lambda k: random.randint(k, (3,), 0, 5), "_randint"),
    "permutation": (lambda k: random.permutation(k, jnp.arange(6).reshape(3, 2)), "_shuffle"),
    "multivariate_normal": (lambda k: random.multivariate_normal(k, jnp.zeros(2), jnp.eye(2)),
                            f"_multivariate_normal({NORMAL})"),
    "truncated_normal": (lambda k: random.truncated_normal(k, -1., 2., (3,)),
                         "_truncated_normal(_uniform)"),
    "bernoulli": (lambda k: random.bernoulli(k, 0.3, (3,)), "_bernoulli(_uniform)"),
    "cauchy": (lambda k: random.cauchy(k, (3,)), "_cauchy(_uniform)"),
    "dirichlet": (lambda k: random.dirichlet(k, jnp.ones(3)), "_dirichlet(_gamma)"),
    "exponential": (lambda k: random.exponential(k, (3,)), "_exponential(_uniform)"),
    "gamma": (lambda k: random.gamma(k, 2., (3,)), "_gamma"),
    "loggamma": (lambda k: random.loggamma(k, 2., (3,)), "_gamma"),
    "poisson": (lambda k: random.poisson(k, 3., (3,)),
                "_poisson(_poisson_knuth, _poisson_rejection)"),
    "gumbel": (lambda k: random.gumbel(k, (3,)), "_gumbel(_uniform)"),
    "gumbel highest": (lambda k: random.gumbel(k, (3,), mode="highest"), "_gumbel"),
    "laplace": (lambda k: random.laplace(k, (3,)), "_laplace(_uniform)"),
    "logistic": (lambda k: random.logistic(k, (3,)), "_logistic(_uniform)"),
    "pareto": (lambda k: random.pareto(k, 3., (3,)), "_pareto(_exponential(_uniform))"),
    "t": (lambda k: random.t(k, 3., (3,)), f"_t({NORMAL}, _gamma)"),
    "chisquare": (lambda k: random.chisquare(k, 3., (3,)), "_chisquare(_gamma)"),
    "f": (lambda k: random.f(k, 3., 4., (3,)), "_f(_chisquare(_gamma), _chisquare(_gamma))"),
    "rademacher": (lambda k: random.rademacher(k, (3,)), RADEMACHER),
    "maxwell": (lambda k: random.maxwell(k, (3,)), f"_maxwell({NORMAL})"),
    "double_sided_maxwell": (lambda k: random.double_sided_maxwell(k, 0., 1., (3,)),
                             f"_double_sided_maxwell(_maxwell({NORMAL}), {RADEMACHER})"),
    "weibull_min": (lambda k: random.weibull_min(k, 1., 2., (3,)), "_weibull_min(_uniform)"),
    "rayleigh": (lambda k: random.rayleigh(k, 1., (3,)), "_rayleigh(_uniform)"),
    "wald": (lambda k: random.wald(k, 1., (3,)), f"_wald({NORMAL}, _uniform)"),
    "geometric": (lambda k: random.geometric(k, .3, (3,)), "_geometric(_uniform)"),
    # JAX inlines these three (inline=True); refimpl's jit keeps the equation
    "triangular": (lambda k: random.triangular(k, 0., .3, 1., (3,)), "_triangular(_uniform)"),
    "lognormal": (lambda k: random.lognormal(k, 1., (3,)), f"_lognormal({NORMAL})"),
    "binomial": (lambda k: random.binomial(k, 5., .3, (3,)),
                 "_binomial(_binomial_inversion, _btrs)"),
    # not jitted in JAX: only the samplers they call are
    "bits": (lambda k: random.bits(k, (3,)), ""),
    "beta": (lambda k: random.beta(k, 2., 3., (3,)), "_gamma, _gamma"),
    "choice": (lambda k: random.choice(k, 5, (3,)), "_randint"),
    "categorical": (lambda k: random.categorical(k, jnp.zeros(3)), "_gumbel(_uniform)"),
    "orthogonal": (lambda k: random.orthogonal(k, 3), NORMAL),
    "generalized_normal": (lambda k: random.generalized_normal(k, 1.5, (3,)),
                           f"_gamma, {RADEMACHER}"),
    "ball": (lambda k: random.ball(k, 3), f"_gamma, {RADEMACHER}, _exponential(_uniform)"),
}


@pytest.mark.parametrize("name", list(SAMPLER_JITS))
def test_samplers_jit_their_bodies_where_jax_does(name):
  """Each sampler's body is a `jit` equation named after JAX's private
  function, and jitted samplers that call others nest them."""
  sample, jits = SAMPLER_JITS[name]
  assert _sampler_jits(jax.make_jaxpr(sample)(K).jaxpr) == jits
