"""The parameters refimpl's public functions take to match JAX 0.10.2's
signatures (tests/test_api_signatures.py): each one's meaning on one CPU
device, and JAX's errors for the values that have none."""

import inspect
import warnings

from hypothesis import assume, given, strategies as st
from hypothesis.extra import numpy as hnp
import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import lax
from refimpl.sharding import NamedSharding, PartitionSpec as P, SingleDeviceSharding

f32 = np.float32


@pytest.fixture
def named():
  return NamedSharding(jax.make_mesh((1,), ("x",)), P())


@pytest.fixture
def single():
  return SingleDeviceSharding(jax.devices()[0])


# --- shardings of operations -----------------------------------------------------------

def test_out_sharding_of_a_named_sharding_changes_nothing(named):
  x = jnp.arange(3.)
  np.testing.assert_array_equal(lax.broadcast_in_dim(x, (2, 3), (1,), out_sharding=named),
                                np.broadcast_to(np.arange(3.), (2, 3)))
  np.testing.assert_array_equal(lax.reshape(x, (3, 1), out_sharding=named), x[:, None])
  np.testing.assert_array_equal(lax.reduce_sum(x, (0,), out_sharding=named), 3.)
  np.testing.assert_array_equal(jnp.zeros(2, out_sharding=named), np.zeros(2))
  key = jax.random.key(0)
  np.testing.assert_array_equal(jax.random.normal(key, (2,), out_sharding=named),
                                jax.random.normal(key, (2,)))


def test_out_sharding_that_is_not_named_raises_as_jax(single):
  with pytest.raises(TypeError, match="only supports instances of `NamedSharding`"):
    lax.broadcast(jnp.ones(2), (3,), out_sharding=single)
  with pytest.raises(ValueError, match="not under a mesh context"):
    jax.random.uniform(jax.random.key(0), out_sharding=P())
  with pytest.raises(TypeError):
    jnp.reshape(jnp.ones(2), (2, 1), out_sharding="x")


def test_full_takes_any_sharding_and_creation_one_placement(single, named):
  np.testing.assert_array_equal(lax.full((2,), 1., sharding=single), [1., 1.])
  np.testing.assert_array_equal(lax.full_like(jnp.ones(2), 2., sharding=single), [2., 2.])
  with pytest.raises(ValueError, match="Only one of `device` or `out_sharding`"):
    jnp.ones(2, device=jax.devices()[0], out_sharding=named)


def test_out_sharding_under_jit(named):
  f = jax.jit(lambda x: jnp.dot(x, x, out_sharding=named))
  np.testing.assert_allclose(f(jnp.arange(3.)), 5.)


# --- jit, vmap, autodiff ---------------------------------------------------------------

def test_jit_in_and_out_shardings(single, named):
  f = jax.jit(lambda x, y: (x + y, x), in_shardings=(single, None), out_shardings=named)
  out = f(jnp.ones(2), 1.)
  np.testing.assert_array_equal(out[0], [2., 2.])
  assert out[0].sharding.device_set == {jax.devices()[0]}
  np.testing.assert_array_equal(jax.jit(in_shardings=single)(jnp.negative)(1.), -1.)
  with pytest.raises(ValueError, match="not a jax.sharding.Sharding"):
    jax.jit(jnp.negative, out_shardings=(single, 3))


def test_vmap_sum_match_sums_a_mapped_output_with_out_axes_none():
  x = jnp.arange(4.)
  np.testing.assert_allclose(jax.vmap(jnp.sin, out_axes=None, sum_match=True)(x),
                             np.sin(np.arange(4.)).sum(), rtol=1e-6)
  with pytest.raises(ValueError):
    jax.vmap(jnp.sin, out_axes=None)(x)


def test_vjp_reduce_axes_is_removed():
  jax.vjp(jnp.sin, 1., reduce_axes=())
  with pytest.raises(NotImplementedError, match="reduce_axes"):
    jax.vjp(jnp.sin, 1., reduce_axes=("i",))


def test_make_jaxpr_axis_env_binds_named_axes():
  jaxpr = jax.make_jaxpr(lambda x: lax.psum(x, "i"), axis_env=[("i", 4)])(1.)
  assert "psum" in str(jaxpr)
  with pytest.raises(NameError):
    jax.make_jaxpr(lambda x: lax.psum(x, "j"))(1.)


def _jvp_of_power():
  def power(x, n):
    return x ** n

  def rule(n, primals, tangents):
    (x,), (t,) = primals, tangents
    return x ** n, n * x ** (n - 1) * t
  return power, rule


def test_custom_jvp_nondiff_argnames():
  power, rule = _jvp_of_power()
  f = jax.custom_jvp(power, nondiff_argnames=("n",))
  f.defjvp(rule)
  assert f.nondiff_argnums == (1,)
  np.testing.assert_allclose(jax.grad(f)(2., 3), 12.)


def test_custom_vjp_nondiff_argnames():
  def scale(x, k):
    return x * k
  f = jax.custom_vjp(scale, nondiff_argnames=("k",))
  f.defvjp(lambda x, k: (x * k, None), lambda k, res, g: (g * k * 10,))
  np.testing.assert_allclose(jax.grad(f)(1., 2.), 20.)


def test_checkpoint_static_argnames_and_removed_concrete():
  def f(x, *, double):
    return jnp.sin(x) * (2 if double else 1)   # `double` must be a Python bool
  g = jax.checkpoint(f, static_argnames=("double",))
  np.testing.assert_allclose(jax.grad(lambda x: g(x, double=True))(0.), 2.)
  with pytest.raises(NotImplementedError, match="`concrete` option"):
    jax.checkpoint(f, concrete=False)
  with pytest.raises(NotImplementedError):
    jax.remat(f, concrete=True)
  assert "static_argnames" not in inspect.signature(jax.remat).parameters


def test_debug_callback_partitioned():
  seen = []
  jax.jit(lambda x: jax.debug.callback(seen.append, x, partitioned=True))(f32(3.))
  assert seen == [3.]


def test_local_devices_host_id_is_deprecated():
  with pytest.warns(DeprecationWarning, match="host_id"):
    assert jax.local_devices(host_id=0) == jax.local_devices()


def test_abstract_device_takes_its_three_fields():
  from refimpl.sharding import AbstractDevice
  assert AbstractDevice("cpu", None, "cpu") == AbstractDevice(
      device_kind="cpu", num_cores=None, platform="cpu")
  with pytest.raises(TypeError):
    AbstractDevice("cpu")


def test_shape_dtype_struct_takes_only_the_defaults_of_new_parameters():
  assert jax.ShapeDtypeStruct((2,), f32, manual_axis_type=None, is_ref=False).shape == (2,)
  with pytest.raises(NotImplementedError):
    jax.ShapeDtypeStruct((2,), f32, is_ref=True)


# --- configuration and dtypes ----------------------------------------------------------

def test_value_options_require_a_value():
  with pytest.raises(TypeError, match="requires an argument"):
    jax.default_device()
  with pytest.raises(TypeError, match="requires an argument"):
    jax.numpy_rank_promotion()
  with jax.numpy_rank_promotion("raise"):
    pass


def test_canonicalize_dtype_of_extended_dtypes_only_when_allowed():
  key_dtype = jax.random.key_dtype()
  assert jax.dtypes.canonicalize_dtype(key_dtype, allow_extended_dtype=True) == key_dtype
  with pytest.raises(ValueError, match="allow_extended_dtype=False"):
    jax.dtypes.canonicalize_dtype(key_dtype)
  assert jax.dtypes.canonicalize_dtype(np.float64) == np.float32


def test_dtype_functions_take_jax_parameter_names():
  assert jax.dtypes.result_type(1.0, return_weak_type_flag=True) == (np.dtype(f32), True)
  assert jax.dtypes.result_type(np.int8, np.int16) == np.int16
  assert jnp.finfo(dtype=np.float16).bits == 16 and jnp.iinfo(int_type=np.int8).max == 127
  assert jnp.issubdtype(arg1=np.float32, arg2=jnp.floating)
  with pytest.raises(TypeError):
    jnp.float32()   # the value is required, as in JAX


# --- lax -------------------------------------------------------------------------------

def test_dot_with_dimension_numbers_is_dot_general():
  a, b = jnp.ones((2, 3, 4)), jnp.ones((2, 4, 5))
  dims = (((2,), (1,)), ((0,), (0,)))
  np.testing.assert_array_equal(lax.dot(a, b, dimension_numbers=dims),
                                lax.dot_general(a, b, dims))
  np.testing.assert_array_equal(lax.dot(jnp.ones(3), jnp.ones(3), precision=None), 3.)


def test_conv_transpose_consistent_padding_is_the_gradient_of_conv():
  rng = np.random.default_rng(0)
  x, w = rng.normal(size=(1, 5, 5, 2)).astype(f32), rng.normal(size=(3, 3, 2, 4)).astype(f32)
  pads, dnums = ((1, 1), (1, 1)), ("NHWC", "HWIO", "NHWC")
  y, pullback = jax.vjp(
      lambda x: lax.conv_general_dilated(x, w, (2, 2), pads, dimension_numbers=dnums), x)
  ct = rng.normal(size=y.shape).astype(f32)
  out = lax.conv_transpose(ct, w, (2, 2), pads, dimension_numbers=dnums,
                           transpose_kernel=True, use_consistent_padding=True)
  np.testing.assert_allclose(out, pullback(ct)[0], rtol=1e-5, atol=1e-5)
  same = lax.conv_transpose(ct, w, (2, 2), "SAME", dimension_numbers=dnums,
                            transpose_kernel=True)
  np.testing.assert_array_equal(same, lax.conv_transpose(
      ct, w, (2, 2), "SAME", dimension_numbers=dnums, transpose_kernel=True,
      use_consistent_padding=True))


def test_reduce_window_defaults_to_unit_strides_and_valid_padding():
  x = jnp.arange(5.)
  np.testing.assert_array_equal(lax.reduce_window(x, 0., lax.add, (2,)), [1., 3., 5., 7.])


def test_all_gather_to():
  x = jnp.arange(6.).reshape(3, 2)
  gather = lambda to: jax.vmap(lambda v: lax.all_gather(v, "i", to=to), axis_name="i")(x)
  np.testing.assert_array_equal(gather("invarying"), gather("varying"))
  with pytest.raises(ValueError, match="unexpected `to` value"):
    gather("other")


def test_optimization_barrier_takes_its_operand_by_position():
  assert lax.optimization_barrier((1., 2.)) == (1., 2.)
  with pytest.raises(TypeError):
    lax.optimization_barrier(operand=1.)


# --- numpy, nn, random, tree -----------------------------------------------------------

def test_array_takes_copy_order_ndmin_by_keyword():
  with pytest.raises(TypeError, match="positional arguments"):
    jnp.array([1.], None, True)
  assert jnp.array([1.], ndmin=2).shape == (1, 1)


def test_var_and_std_with_a_given_mean():
  x = np.array([[1., 2., 4.], [3., 5., 9.]], f32)
  np.testing.assert_allclose(jnp.var(x, axis=1, mean=x.mean(1, keepdims=True)),
                             x.var(1), rtol=1e-6)
  np.testing.assert_allclose(jnp.std(x, mean=0.), np.sqrt((x ** 2).mean()), rtol=1e-6)
  np.testing.assert_allclose(jnp.nanvar(x, axis=0, mean=np.zeros((1, 3), f32)),
                             (x ** 2).mean(0), rtol=1e-6)
  np.testing.assert_allclose(jnp.nanstd(x, mean=1.), np.sqrt(((x - 1) ** 2).mean()),
                             rtol=1e-6)


def test_matrix_rank_hermitian():
  m = np.diag(np.array([3., -2., 0.], f32))
  assert jnp.linalg.matrix_rank(m, hermitian=True) == 2 == jnp.linalg.matrix_rank(m)


def test_einsum_dot_general_hook():
  calls = []

  def dot_general(*args, **kwargs):
    calls.append(1)
    return lax.dot_general(*args, **kwargs)
  out = jnp.einsum("ij,jk->ik", np.eye(2, dtype=f32), np.ones((2, 2), f32),
                   _dot_general=dot_general)
  np.testing.assert_array_equal(out, np.ones((2, 2)))
  assert calls


def test_ufunc_parameter_names():
  np.testing.assert_allclose(jnp.float_power(2, 3), 8.)
  assert jnp.gcd(x1=4, x2=6) == 2 and jnp.lcm(x1=4, x2=6) == 12 and jnp.trunc(x=-1.5) == -1.
  with pytest.raises(TypeError, match="clip requires ndarray"):
    jnp.clip(max=1.)


def test_standardize_algorithms():
  x = np.array([1e4 + 1., 1e4 + 2., 1e4 + 3.], f32)
  safe = jax.nn.standardize(x, algorithm="safe")
  np.testing.assert_allclose(safe, (x - x.mean()) / np.sqrt(x.var() + 1e-5), rtol=1e-4)
  np.testing.assert_allclose(jax.nn.standardize(x[:2] - 1e4, algorithm="fast"),
                             jax.nn.standardize(x[:2] - 1e4, algorithm="safe"), rtol=1e-5)
  with pytest.raises(ValueError, match="algorithm"):
    jax.nn.standardize(x, algorithm="exact")


@given(hnp.arrays(np.int32, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
                  elements=st.sampled_from([0, 0, 1])),
       st.sampled_from(["fb", "f", "b"]), st.sampled_from([None, 0, -1, (0, -1)]))
def test_trim_zeros_along_axes_matches_numpy(filt, trim, axis):
  if axis is not None and filt.ndim == 1 and axis == (0, -1):
    axis = 0
  np.testing.assert_array_equal(jnp.trim_zeros(filt, trim, axis),
                                np.trim_zeros(filt, trim, axis))


def test_take_along_axis_without_wrapping_negative_indices():
  x, i = jnp.arange(4.), jnp.array([-1, 1])
  np.testing.assert_array_equal(jnp.take_along_axis(x, i), [3., 1.])
  np.testing.assert_array_equal(jnp.take_along_axis(x, i, wrap_negative_indices=False),
                                [np.nan, 1.])
  np.testing.assert_array_equal(
      jnp.take_along_axis(x, i, mode="clip", wrap_negative_indices=False), [0., 1.])


@given(hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=5),
                  elements=st.sampled_from([0., 1., 2.5, -3., np.nan])),
       st.integers(0, 2 ** 16), st.sampled_from([None, 0, -1]), st.booleans(),
       st.sampled_from(["quantile", "nanquantile", "percentile", "nanpercentile"]))
def test_weighted_quantiles_match_numpy(a, seed, axis, keepdims, name):
  rng = np.random.default_rng(seed)
  weights = rng.integers(0, 3, a.shape).astype(np.float32)
  q = np.array([0., 0.2, 0.5, 1.], np.float32) * (100 if "percentile" in name else 1)
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    try:
      expected = getattr(np, name)(a, q, axis=axis, keepdims=keepdims,
                                   method="inverted_cdf", weights=weights)
    except ValueError:   # NumPy rejects a slice whose total weight is 0
      assume(False)
  actual = getattr(jnp, name)(a, q, axis=axis, keepdims=keepdims, method="inverted_cdf",
                              weights=weights)
  np.testing.assert_array_equal(actual, expected)


def test_weighted_quantiles_need_inverted_cdf():
  with pytest.raises(ValueError, match="inverted_cdf"):
    jnp.quantile(np.ones(3, f32), 0.5, weights=np.ones(3, f32))
  np.testing.assert_array_equal(
      jnp.percentile(np.arange(4, dtype=f32), 50, out_sharding=None), 1.5)


def test_argsort_dtype():
  x = jnp.array([3, 1, 2, 1])
  out = jnp.argsort(x, dtype=np.int16)
  assert out.dtype == np.int16 and jnp.argsort(x).dtype == np.int32
  np.testing.assert_array_equal(out, np.argsort(np.array([3, 1, 2, 1]), kind="stable"))


def test_cov_and_corrcoef_dtype():
  x = np.array([[1, 2, 4], [3, 1, 0]])
  c = jnp.cov(x, dtype=np.float16)
  assert c.dtype == np.float16
  np.testing.assert_allclose(c, np.cov(x, dtype=np.float16), rtol=1e-3)
  assert jnp.corrcoef(x, dtype=np.float16).dtype == np.float16
  np.testing.assert_allclose(jnp.corrcoef(x, dtype=np.float32), np.corrcoef(x), rtol=1e-6)


def test_ravel_multi_index_dtype_and_ignore_mode():
  idx = np.array([[3, 6, 6], [4, 5, 1]], np.int8)
  out = jnp.ravel_multi_index(idx, (7, 6), dtype=np.int16)
  assert out.dtype == np.int16
  np.testing.assert_array_equal(out, np.ravel_multi_index(idx, (7, 6)))
  assert jnp.ravel_multi_index(idx, (7, 6)).dtype == np.int8
  np.testing.assert_array_equal(jax.jit(lambda i: jnp.ravel_multi_index(i, (7, 6),
                                                                        mode="ignore"))(idx),
                                [22, 41, 37])


def test_initializer_out_sharding(named):
  np.testing.assert_array_equal(
      jax.nn.initializers.zeros(None, (2,), out_sharding=named), np.zeros(2))


def test_random_parameter_names_and_defaults():
  assert jax.random.key_dtype(impl_spec="threefry2x32") == jax.random.key_dtype()
  key = jax.random.key(1)
  np.testing.assert_array_equal(jax.random.bernoulli(key), jax.random.bernoulli(key, 0.5))
  assert jax.random.t(key, 3.).shape == ()


def test_tree_is_leaf_takes_path():
  tree = {"a": [1, 2], "b": [3]}
  stop_at_a = lambda path, x: path == (jax.tree_util.DictKey("a"),)
  leaves = jax.tree_util.tree_leaves_with_path(tree, stop_at_a, is_leaf_takes_path=True)
  assert [x for _, x in leaves] == [[1, 2], 3]
  out = jax.tree.map_with_path(lambda p, x: len(p), tree, is_leaf=stop_at_a,
                               is_leaf_takes_path=True)
  assert out == {"a": 1, "b": [2]}
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    assert jax.tree.flatten_with_path(tree)[0][0][1] == 1
