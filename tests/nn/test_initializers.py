"""Tests of refimpl/nn/initializers.py (`jax.nn.initializers`).

* JAX's documented examples (the docstrings of jax/_src/nn/initializers.py, at
  `jax.random.key(42)`): they were made with the legacy threefry mode, so they
  are checked under `threefry_partitionable(False)`, within 1e-6 (XLA's float32
  erf_inv and QR round differently; the docstrings print 8 digits).
* Each initializer equals its sampler expression at the same key, bit for bit.
* Statistics at a fixed key: Kolmogorov–Smirnov and moment checks of the
  variance-scaling distributions, real and complex.
* Orthogonality (Q^T Q = I) for square, wide, tall and higher-rank shapes
  with any column_axis; delta_orthogonal's structure.
* Typed and raw keys, jit, dtypes, and the errors JAX raises.
"""

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import random
from refimpl.config import enable_x64
from refimpl.nn import initializers as init
from conformance import random_stats as rs

F32 = np.float32
KEY = random.key(0)
TRUNC_STD = 0.87962566103423978          # stddev of N(0, 1) truncated to (-2, 2)
COMPLEX_TRUNC_STD = 0.95311164380491208  # JAX's divisor for complex truncated normals
# E|z|^2 of a complex N(0, 1) (|z|^2 ~ Exp(1)) with |z| < 2.
COMPLEX_TRUNC_MEAN_SQUARE = 1 - 4 * math.exp(-4) / (1 - math.exp(-4))

VARIANCE_SCALING_ALIASES = {
    # name: (scale, mode, distribution)
    "glorot_uniform": (1.0, "fan_avg", "uniform"),
    "xavier_uniform": (1.0, "fan_avg", "uniform"),
    "glorot_normal": (1.0, "fan_avg", "truncated_normal"),
    "xavier_normal": (1.0, "fan_avg", "truncated_normal"),
    "lecun_uniform": (1.0, "fan_in", "uniform"),
    "lecun_normal": (1.0, "fan_in", "truncated_normal"),
    "he_uniform": (2.0, "fan_in", "uniform"),
    "kaiming_uniform": (2.0, "fan_in", "uniform"),
    "he_normal": (2.0, "fan_in", "truncated_normal"),
    "kaiming_normal": (2.0, "fan_in", "truncated_normal"),
}

# name -> a ready initializer, for the checks every initializer must pass.
INITIALIZERS = {
    "zeros": init.zeros,
    "ones": init.ones,
    "constant": init.constant(-7),
    "uniform": init.uniform(10.0),
    "normal": init.normal(5.0),
    "truncated_normal": init.truncated_normal(5.0),
    "orthogonal": init.orthogonal(),
    "delta_orthogonal": init.delta_orthogonal(),
    **{name: getattr(init, name)() for name in VARIANCE_SCALING_ALIASES},
    "variance_scaling_fan_geo_avg": init.variance_scaling(3.0, "fan_geo_avg", "normal"),
}


def _shape_for(name):
  return (3, 2, 4) if name == "delta_orthogonal" else (2, 3)


# --- names -------------------------------------------------------------------

def test_the_names_of_jax_nn_initializers():
  assert sorted(init.__all__) == sorted([
      "Initializer", "constant", "delta_orthogonal", "glorot_normal", "glorot_uniform",
      "he_normal", "he_uniform", "kaiming_normal", "kaiming_uniform", "lecun_normal",
      "lecun_uniform", "normal", "ones", "orthogonal", "truncated_normal", "uniform",
      "variance_scaling", "xavier_normal", "xavier_uniform", "zeros"])
  assert jax.nn.initializers is init
  assert init.xavier_uniform is init.glorot_uniform and init.kaiming_normal is init.he_normal
  assert all(isinstance(f, init.Initializer) for f in INITIALIZERS.values())
  assert not isinstance(3, init.Initializer)


# --- JAX's documented values -------------------------------------------------

JAX_DOC_EXAMPLES = {
    "uniform": (init.uniform(10.0), (2, 3),
                [[7.298188, 8.691938, 8.7230015], [2.0818567, 1.8662417, 5.5022564]]),
    "normal": (init.normal(5.0), (2, 3),
               [[3.0613258, 5.6129413, 5.6866574], [-4.063663, -4.4520254, 0.63115686]]),
    "truncated_normal": (init.truncated_normal(5.0), (2, 3),
                         [[2.9047365, 5.2338114, 5.29852], [-3.836303, -4.192359, 0.6022964]]),
    "glorot_uniform": (init.glorot_uniform(), (2, 3),
                       [[0.50350785, 0.8088631, 0.81566876],
                        [-0.6393332, -0.6865721, 0.11003882]]),
    "glorot_normal": (init.glorot_normal(), (2, 3),
                      [[0.41770416, 0.75262755, 0.7619329],
                       [-0.5516644, -0.6028657, 0.08661086]]),
    "lecun_uniform": (init.lecun_uniform(), (2, 3),
                      [[0.56293887, 0.90433645, 0.9119454],
                       [-0.71479625, -0.7676109, 0.12302713]]),
    "lecun_normal": (init.lecun_normal(), (2, 3),
                     [[0.46700746, 0.8414632, 0.8518669],
                      [-0.61677957, -0.67402434, 0.09683388]]),
    "he_uniform": (init.he_uniform(), (2, 3),
                   [[0.79611576, 1.2789248, 1.2896855], [-1.0108745, -1.0855657, 0.17398663]]),
    "he_normal": (init.he_normal(), (2, 3),
                  [[0.6604483, 1.1900088, 1.2047218], [-0.87225807, -0.95321447, 0.1369438]]),
    "orthogonal": (init.orthogonal(), (2, 3),
                   [[3.9026976e-01, 7.2495741e-01, -5.6756169e-01],
                    [8.8047469e-01, -4.7409311e-01, -1.3157725e-04]]),
    "delta_orthogonal": (init.delta_orthogonal(), (3, 3, 3),
                         [np.zeros((3, 3)),
                          [[0.27858758, -0.7949833, -0.53887904],
                           [0.9120717, 0.04322892, 0.40774566],
                           [-0.30085585, -0.6050892, 0.73712474]],
                          np.zeros((3, 3))]),
}


@pytest.mark.parametrize("name", sorted(JAX_DOC_EXAMPLES))
def test_jax_documented_example(name):
  initializer, shape, want = JAX_DOC_EXAMPLES[name]
  with jax.threefry_partitionable(False):
    got = initializer(random.key(42), shape, jnp.float32)
  assert got.dtype == F32 and got.shape == shape
  np.testing.assert_allclose(np.asarray(got), np.array(want, F32), rtol=1e-6, atol=1e-6)


def test_constant_initializers_documented_examples():
  np.testing.assert_array_equal(init.zeros(random.key(42), (2, 3), jnp.float32),
                                np.zeros((2, 3), F32))
  np.testing.assert_array_equal(init.ones(random.key(42), (3, 2), jnp.float32),
                                np.ones((3, 2), F32))
  got = init.constant(-7)(random.key(42), (2, 3), jnp.float32)
  assert got.dtype == F32
  np.testing.assert_array_equal(got, np.full((2, 3), -7, F32))


# --- each initializer is its sampler expression ------------------------------

def test_simple_initializers_are_scaled_samplers():
  shape = (3, 4)
  np.testing.assert_array_equal(init.uniform(3.0)(KEY, shape),
                                random.uniform(KEY, shape, F32) * F32(3.0))
  np.testing.assert_array_equal(init.normal(0.5)(KEY, shape),
                                random.normal(KEY, shape, F32) * F32(0.5))
  np.testing.assert_array_equal(init.truncated_normal(0.5, lower=-1.0, upper=3.0)(KEY, shape),
                                random.truncated_normal(KEY, -1.0, 3.0, shape, F32) * F32(0.5))


def _variance_scaling_expected(key, shape, dtype, variance, distribution):
  """The sampler expression of variance_scaling for a real dtype."""
  variance = jnp.array(variance, dtype)
  if distribution == "truncated_normal":
    stddev = jnp.sqrt(variance) / jnp.array(TRUNC_STD, dtype)
    return random.truncated_normal(key, -2, 2, shape, dtype) * stddev
  if distribution == "normal":
    return random.normal(key, shape, dtype) * jnp.sqrt(variance)
  return random.uniform(key, shape, dtype, -1) * jnp.sqrt(3 * variance)


@pytest.mark.parametrize("name", sorted(VARIANCE_SCALING_ALIASES))
def test_named_initializer_is_its_variance_scaling(name):
  scale, mode, distribution = VARIANCE_SCALING_ALIASES[name]
  fan_in, fan_out = 3, 4
  n = {"fan_in": fan_in, "fan_avg": (fan_in + fan_out) / 2}[mode]
  want = _variance_scaling_expected(KEY, (3, 4), F32, scale / n, distribution)
  np.testing.assert_array_equal(getattr(init, name)()(KEY, (3, 4)), want)


def test_glorot_normal_spelled_out():
  # truncated_normal(k, -2, 2) * sqrt(2 / (3 + 4)) / 0.8796...
  got = init.glorot_normal()(KEY, (3, 4))
  want = (random.truncated_normal(KEY, -2, 2, (3, 4), F32)
          * (jnp.sqrt(jnp.float32(2 / 7)) / jnp.float32(TRUNC_STD)))
  np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("mode, n", [("fan_in", 3 * 10), ("fan_out", 4 * 10),
                                     ("fan_avg", 35), ("fan_geo_avg", math.sqrt(30 * 40))])
@pytest.mark.parametrize("distribution", ["truncated_normal", "normal", "uniform"])
def test_variance_scaling_modes_and_distributions(mode, n, distribution):
  # A conv kernel (in, out, spatial...) = (3, 4, 2, 5): receptive field 10.
  shape = (3, 4, 2, 5)
  got = init.variance_scaling(0.5, mode, distribution, in_axis=0, out_axis=1)(KEY, shape)
  np.testing.assert_array_equal(got, _variance_scaling_expected(KEY, shape, F32, 0.5 / n,
                                                                distribution))


@pytest.mark.parametrize("shape, kwargs, fans", [
    ((3, 4), {}, (3, 4)),
    ((5, 5, 3, 8), {}, (75, 200)),                                   # HWIO conv kernel
    ((8, 3, 5, 5), dict(in_axis=1, out_axis=0), (75, 200)),           # OIHW
    ((2, 3, 4), dict(in_axis=(0, 1), out_axis=-1), (6, 4)),
    ((7, 3, 4), dict(batch_axis=0), (3, 4)),
    ((7, 3, 2, 4), dict(in_axis=1, out_axis=3, batch_axis=(0,)), (6, 8)),
])
def test_compute_fans(shape, kwargs, fans):
  assert init._compute_fans(shape, **kwargs) == fans


def test_compute_fans_needs_rank_2():
  for shape in [(), (5,)]:
    with pytest.raises(ValueError, match=f"sizes of a {len(shape)}-dimensional weights "
                                         "tensor. Must be at least 2D."):
      init._compute_fans(shape)


def test_correction_constants():
  # Var of N(0, 1) on (-2, 2): 1 - 2 * 2 phi(2) / (Phi(2) - Phi(-2)).
  phi2 = math.exp(-2) / math.sqrt(2 * math.pi)
  assert math.isclose(math.sqrt(1 - 4 * phi2 / math.erf(math.sqrt(2))), TRUNC_STD,
                      rel_tol=1e-15)
  # JAX's complex constant is NOT the stddev of its complex sample (|z|^2 ~ Exp(1)
  # cut at 4, whose mean is 1 - 4 e^-4 / (1 - e^-4)): kept as JAX has it.
  assert COMPLEX_TRUNC_MEAN_SQUARE == pytest.approx(0.96196182800821 ** 2, rel=1e-13)
  assert COMPLEX_TRUNC_MEAN_SQUARE / COMPLEX_TRUNC_STD ** 2 == pytest.approx(1.018657, rel=1e-6)


def test_complex_variance_scaling_spelled_out():
  shape, c64 = (3, 4), np.complex64
  variance = jnp.array(1 / 3, c64)
  key_r, key_theta = random.split(KEY)
  theta = 2 * jnp.pi * random.uniform(key_theta, shape, F32).astype(c64)

  r = jnp.sqrt(2 * random.uniform(key_r, shape, F32)).astype(c64)
  want = r * jnp.exp(1j * theta) * jnp.sqrt(variance)
  got = init.variance_scaling(1.0, "fan_in", "uniform")(KEY, shape, c64)
  assert got.dtype == c64
  np.testing.assert_array_equal(got, want)

  t = (1 - jnp.exp(jnp.array(-4, c64))) * random.uniform(key_r, shape, F32).astype(c64)
  r = jnp.sqrt(-jnp.log(1 - t))
  want = r * jnp.exp(1j * theta) * (jnp.sqrt(variance) / jnp.array(COMPLEX_TRUNC_STD, c64))
  got = init.variance_scaling(1.0, "fan_in", "truncated_normal")(KEY, shape, c64)
  np.testing.assert_array_equal(got, want)

  got = init.variance_scaling(1.0, "fan_in", "normal")(KEY, shape, c64)
  np.testing.assert_array_equal(got, random.normal(KEY, shape, c64) * jnp.sqrt(variance))


# --- statistics ----------------------------------------------------------------

STATS_SHAPE = (200, 150)   # 30000 samples; fan_in 200, fan_out 150


@pytest.mark.parametrize("distribution", ["truncated_normal", "normal", "uniform"])
def test_variance_scaling_distribution(distribution):
  variance = 2.0 / 175   # scale 2, fan_avg
  x = np.asarray(init.variance_scaling(2.0, "fan_avg", distribution)(
      random.key(7), STATS_SHAPE), np.float64)
  sd = math.sqrt(variance)
  if distribution == "truncated_normal":
    s = sd / TRUNC_STD
    assert np.abs(x).max() < 2 * s
    rs.check_ks(x, lambda t: rs.truncated_normal_cdf(t / s, -2, 2))
    # mu4 of the truncated normal: (3 - 2^3 * 2 phi(2) / Z - 3 * 2 * 2 phi(2) / Z) s^4.
    z, phi2 = math.erf(math.sqrt(2)), math.exp(-2) / math.sqrt(2 * math.pi)
    mu4 = (3 - (16 + 12) * phi2 / z) * s ** 4
    rs.check_moments(x, 0.0, variance, fourth_central_moment=mu4)
  elif distribution == "normal":
    rs.check_ks(x, lambda t: rs.normal_cdf(t, 0.0, sd))
    rs.check_moments(x, 0.0, variance)
  else:
    limit = math.sqrt(3 * variance)
    assert np.abs(x).max() < limit
    rs.check_ks(x, lambda t: rs.uniform_cdf(t, -limit, limit))
    rs.check_moments(x, 0.0, variance, fourth_central_moment=9 / 5 * variance ** 2)


@pytest.mark.parametrize("distribution", ["truncated_normal", "uniform"])
def test_complex_variance_scaling_distribution(distribution):
  variance = 1.0 / 200   # lecun: fan_in
  z = np.asarray(init.variance_scaling(1.0, "fan_in", distribution)(
      random.key(8), STATS_SHAPE, np.complex64), np.complex128)
  assert z.dtype == np.complex128
  m = np.abs(z) / math.sqrt(variance)   # modulus of the unit-variance sample
  if distribution == "uniform":
    # uniform on the disk of radius sqrt(2): P(|z| <= s) = s^2 / 2
    assert m.max() < math.sqrt(2) * (1 + 1e-6)
    rs.check_ks(m, lambda s: np.clip(s * s / 2, 0, 1))
  else:
    # |z| * 0.953 is a complex N(0, 1) modulus cut at 2: P = (1 - e^{-s^2}) / (1 - e^{-4})
    m = m * COMPLEX_TRUNC_STD
    assert m.max() < 2 * (1 + 1e-6)
    rs.check_ks(m, lambda s: np.clip((1 - np.exp(-s * s)) / (1 - math.exp(-4)), 0, 1))
  rs.check_ks(np.angle(z), lambda a: (a + np.pi) / (2 * np.pi))
  # E|z|^2 = variance for the disk; 1.9% more for the truncated normal (JAX's constant).
  mean_square = variance * (COMPLEX_TRUNC_MEAN_SQUARE / COMPLEX_TRUNC_STD ** 2
                            if distribution == "truncated_normal" else 1.0)
  rs.check_moments(np.abs(z) ** 2, mean_square, None)


def test_simple_initializers_distribution():
  x = np.asarray(init.uniform(3.0)(random.key(9), (30000,)), np.float64)
  assert 0 <= x.min() and x.max() < 3.0
  rs.check_ks(x, lambda t: rs.uniform_cdf(t, 0.0, 3.0))
  x = np.asarray(init.truncated_normal(0.5, lower=-1.0, upper=3.0)(random.key(9), (30000,)))
  assert -0.5 < x.min() and x.max() < 1.5
  rs.check_ks(x, lambda t: rs.truncated_normal_cdf(t / 0.5, -1.0, 3.0))


# --- orthogonal ------------------------------------------------------------------

def _as_matrix(q, column_axis):
  """The (rows, columns) matrix that `orthogonal` built: columns last."""
  q = np.moveaxis(np.asarray(q, np.complex128), column_axis, -1)
  return q.reshape(-1, q.shape[-1])


def _assert_orthonormal(m, scale, atol):
  small = m if m.shape[0] >= m.shape[1] else m.T   # orthonormal columns
  gram = small.conj().T @ small
  np.testing.assert_allclose(gram, scale ** 2 * np.eye(small.shape[1]), atol=atol)


@given(shape=st.lists(st.integers(1, 5), min_size=2, max_size=4).map(tuple),
       axis=st.integers(-4, 3), scale=st.sampled_from([1.0, 0.5, 2.0]),
       dtype=st.sampled_from([np.float32, np.complex64]))
def test_orthogonal_is_orthonormal(shape, axis, scale, dtype):
  column_axis = axis % len(shape) - (len(shape) if axis < 0 else 0)
  q = init.orthogonal(scale, column_axis)(KEY, shape, dtype)
  assert q.shape == shape and q.dtype == dtype
  _assert_orthonormal(_as_matrix(q, column_axis), scale, atol=2e-6 * scale ** 2)


def test_orthogonal_spelled_out():
  # (3, 5): 3 rows < 5 columns, so QR of a normal (5, 3) matrix, transposed.
  q, r = jnp.linalg.qr(random.normal(KEY, (5, 3), F32))
  want = (q * jnp.sign(jnp.diagonal(r))[None, :]).T
  np.testing.assert_array_equal(init.orthogonal()(KEY, (3, 5)), want)
  # a square matrix is jax.random.orthogonal's Haar sample
  np.testing.assert_array_equal(init.orthogonal()(KEY, (4, 4)), random.orthogonal(KEY, 4))
  # rank 3, column_axis 0: the (6, 3) matrix with columns moved to axis 0
  m = init.orthogonal(column_axis=-1)(KEY, (2, 3, 3)).reshape(6, 3)
  np.testing.assert_array_equal(init.orthogonal(column_axis=0)(KEY, (3, 2, 3)),
                                np.moveaxis(np.asarray(m).reshape(2, 3, 3), -1, 0))


def test_orthogonal_x64():
  with enable_x64():
    q = init.orthogonal()(KEY, (6, 4))
    assert q.dtype == np.float64
    _assert_orthonormal(np.asarray(q), 1.0, atol=1e-14)


def test_orthogonal_empty_shape_gives_zeros():
  q = init.orthogonal()(KEY, (0, 3))
  assert q.shape == (0, 3) and q.dtype == F32
  assert init.orthogonal()(KEY, (2, 0, 3)).shape == (2, 0, 3)


@pytest.mark.parametrize("shape", [(3, 4, 4), (1, 2, 5), (3, 4, 2, 3), (2, 3, 4, 3, 3)])
def test_delta_orthogonal_structure(shape):
  w = np.asarray(init.delta_orthogonal(scale=2.0)(KEY, shape))
  assert w.shape == shape and w.dtype == F32
  center = tuple((k - 1) // 2 for k in shape[:-2])
  np.testing.assert_array_equal(w[center], init.orthogonal(2.0)(KEY, shape[-2:]))
  rest = w.copy()
  rest[center] = 0
  assert not rest.any()
  _assert_orthonormal(w[center].astype(np.complex128), 2.0, atol=1e-5)


# --- keys, jit, dtypes --------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(INITIALIZERS))
def test_typed_and_raw_keys_and_jit_agree(name):
  initializer, shape = INITIALIZERS[name], _shape_for(name)
  typed = initializer(random.key(3), shape)
  raw = initializer(random.PRNGKey(3), shape)
  jitted = jax.jit(lambda k: initializer(k, shape))(random.key(3))
  assert typed.shape == shape and typed.dtype == F32
  np.testing.assert_array_equal(raw, typed)
  np.testing.assert_array_equal(jitted, typed)


@pytest.mark.parametrize("name", sorted(INITIALIZERS))
def test_dtypes(name):
  initializer, shape = INITIALIZERS[name], _shape_for(name)
  for dtype in [np.float16, ml_dtypes.bfloat16]:
    assert initializer(KEY, shape, dtype).dtype == dtype
  with enable_x64():
    assert initializer(KEY, shape).dtype == np.float64


def test_default_dtype_is_bound_when_built():
  assert init.normal(dtype=np.float16)(KEY, (2, 2)).dtype == np.float16
  assert init.he_uniform(dtype=ml_dtypes.bfloat16)(KEY, (2, 2)).dtype == ml_dtypes.bfloat16
  assert init.orthogonal(dtype=np.complex64)(KEY, (2, 2)).dtype == np.complex64
  assert init.constant(3, dtype=np.int32)(KEY, (2,)).dtype == np.int32
  assert init.zeros(KEY, (2,), np.int32).dtype == np.int32
  # the call's dtype overrides the built default
  assert init.normal(dtype=np.float16)(KEY, (2, 2), np.float32).dtype == F32


# --- errors --------------------------------------------------------------------------

def test_errors():
  with pytest.raises(ValueError, match="Can't compute input and output sizes of a 1-dim"):
    init.glorot_normal()(KEY, (5,))
  with pytest.raises(ValueError, match="invalid mode for variance scaling initializer: fan"):
    init.variance_scaling(1.0, "fan", "normal")(KEY, (2, 2))
  with pytest.raises(ValueError, match="invalid distribution for variance scaling "
                                       "initializer: cauchy"):
    init.variance_scaling(1.0, "fan_in", "cauchy")(KEY, (2, 2))
  with pytest.raises(ValueError, match="orthogonal initializer requires at least a 2D shape"):
    init.orthogonal()(KEY, (4,))
  with pytest.raises(ValueError, match="Delta orthogonal initializer requires a 3D, 4D or 5D"):
    init.delta_orthogonal()(KEY, (3, 3))
  with pytest.raises(ValueError, match="`fan_in` must be less or equal than `fan_out`"):
    init.delta_orthogonal()(KEY, (3, 4, 3))
  # dtypes the samplers reject
  with pytest.raises(ValueError, match="dtype argument to `uniform` must be a float dtype"):
    init.uniform()(KEY, (2, 2), np.complex64)
  with pytest.raises(ValueError, match="dtype argument to `normal` must be a float or complex"):
    init.variance_scaling(1.0, "fan_in", "normal")(KEY, (2, 2), np.int32)
  with pytest.raises(ValueError, match="dtype argument to `uniform` must be a float dtype"):
    init.lecun_uniform()(KEY, (2, 2), np.int32)   # not real: the complex disk's sampler
  # not real: the complex truncated normal's sampler (its complex128 constant warns)
  with pytest.warns(UserWarning, match="complex128"), \
       pytest.raises(ValueError, match="dtype argument to `uniform` must be a float dtype"):
    init.lecun_normal()(KEY, (2, 2), np.int32)
  with pytest.raises(ValueError, match="dtype argument to `normal` must be a float or complex"):
    init.orthogonal()(KEY, (2, 2), np.int32)
  with pytest.raises(TypeError, match="invalid PRNG key data"):
    init.normal()(jnp.zeros(3, np.uint32), (2, 2))
