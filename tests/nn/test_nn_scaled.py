"""jax.nn's block-scaled products: scaled_matmul against its definition,
get_scaled_dot_general_config, and scaled_dot_general's quantization
(exact where the operands are representable), gradients and errors."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import dtypes, nn

RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _reseeded():
  """Each test draws from RNG as seeded, whatever tests ran before it (in this
  process: the order differs between runs with several workers)."""
  global RNG
  RNG = np.random.default_rng(0)
NO_BATCH = (((1,), (1,)), ((), ()))


def test_scaled_matmul_documented_example():
  a = jnp.array([1, 2, 3]).reshape((1, 1, 3))
  b = jnp.array([4, 5, 6]).reshape((1, 1, 3))
  scales = jnp.array([0.5]).reshape((1, 1, 1))
  out = nn.scaled_matmul(a, b, scales, scales)
  np.testing.assert_array_equal(out, [[[8.0]]])
  assert out.dtype == jnp.float32


@given(st.integers(1, 2), st.integers(1, 3), st.integers(1, 3), st.sampled_from([1, 2, 4]),
       st.sampled_from([1, 2]))
def test_scaled_matmul_is_the_product_of_the_dequantized_operands(b, m, n, blocks, block):
  k = blocks * block
  lhs = RNG.normal(size=(b, m, k)).astype(dtypes.float8_e4m3fn)
  rhs = RNG.normal(size=(b, n, k)).astype(dtypes.float8_e4m3fn)
  lhs_scales = (2.0 ** RNG.integers(-3, 3, size=(b, m, blocks))).astype(dtypes.float8_e8m0fnu)
  rhs_scales = (2.0 ** RNG.integers(-3, 3, size=(b, n, blocks))).astype(dtypes.float8_e8m0fnu)
  expected = np.einsum("bmk,bnk->bmn",
                       lhs.astype(np.float64) * np.repeat(lhs_scales.astype(np.float64), block, -1),
                       rhs.astype(np.float64) * np.repeat(rhs_scales.astype(np.float64), block, -1))
  out = nn.scaled_matmul(lhs, rhs, lhs_scales, rhs_scales, preferred_element_type=jnp.bfloat16)
  assert out.shape == (b, m, n) and out.dtype == jnp.bfloat16
  np.testing.assert_allclose(np.asarray(out, np.float64), expected, rtol=1e-2, atol=1e-2)
  np.testing.assert_allclose(jax.jit(nn.scaled_matmul)(lhs, rhs, lhs_scales, rhs_scales),
                             expected, rtol=1e-5, atol=1e-5)


def test_scaled_matmul_shape_errors():
  x, s = jnp.ones((1, 2, 4)), jnp.ones((1, 2, 2))
  with pytest.raises(ValueError, match="3-dimensional"):
    nn.scaled_matmul(jnp.ones((2, 4)), x, s, s)
  with pytest.raises(ValueError, match="matching batch"):
    nn.scaled_matmul(x, jnp.ones((1, 2, 8)), s, s)
  with pytest.raises(ValueError, match="scales to have matching"):
    nn.scaled_matmul(x, x, s, jnp.ones((1, 2, 4)))
  with pytest.raises(ValueError, match="non-contract"):
    nn.scaled_matmul(x, x, jnp.ones((1, 3, 2)), jnp.ones((1, 3, 2)))


def test_configs():
  mx = nn.get_scaled_dot_general_config("mxfp8")
  assert (mx.mode, mx.block_size, mx.data_type, mx.scale_type, mx.global_scale) == (
      "mxfp8", 32, dtypes.float8_e4m3fn, dtypes.float8_e8m0fnu, None)
  fp4 = nn.get_scaled_dot_general_config("nvfp4")
  assert (fp4.block_size, fp4.data_type, fp4.scale_type) == (
      16, dtypes.float4_e2m1fn, dtypes.float8_e4m3fn)
  np.testing.assert_array_equal(fp4.global_scale, [1.0])
  assert nn.get_scaled_dot_general_config("nvfp4", jnp.full((1,), 2.0)).global_scale[0] == 2.0
  with pytest.raises(ValueError, match="Unsupported mode"):
    nn.get_scaled_dot_general_config("int8")


def test_scaled_dot_general_is_exact_on_representable_operands():
  """Small integers: each block's power-of-two scale makes them float8 exactly."""
  x = RNG.integers(-2, 3, size=(32, 64)).astype(np.float32)
  y = RNG.integers(-2, 3, size=(32, 64)).astype(np.float32)
  np.testing.assert_array_equal(nn.scaled_dot_general(x, y, NO_BATCH), x @ y.T)
  xb = RNG.integers(-3, 4, size=(2, 32, 64)).astype(np.float32)
  yb = RNG.integers(-3, 4, size=(2, 64, 32)).astype(np.float32)
  out = jax.jit(lambda a, b: nn.scaled_dot_general(a, b, (((2,), (1,)), ((0,), (0,))),
                                                   preferred_element_type=jnp.bfloat16))(xb, yb)
  assert out.dtype == jnp.bfloat16
  np.testing.assert_array_equal(out.astype(np.float32), np.einsum("bmk,bkn->bmn", xb, yb))


def test_scaled_dot_general_quantization_error_is_bounded():
  x = RNG.normal(size=(4, 64)).astype(np.float32)
  y = RNG.normal(size=(3, 64)).astype(np.float32)
  exact = x @ y.T
  bound = np.abs(x) @ np.abs(y).T
  mx = nn.scaled_dot_general(x, y, NO_BATCH)
  assert np.all(np.abs(mx - exact) <= 2 * 2.0**-3 * bound)   # e4m3: 3 mantissa bits
  fp4 = nn.get_scaled_dot_general_config("nvfp4")
  out = nn.scaled_dot_general(x, y, NO_BATCH, configs=[fp4] * 3)
  assert np.all(np.abs(out - exact) <= 2 * 0.5 * bound)   # e2m1: 1 mantissa bit
  assert not np.array_equal(out, mx)


def test_scaled_dot_general_gradient():
  x = RNG.integers(-2, 3, size=(32, 64)).astype(np.float32)
  y = RNG.integers(-2, 3, size=(32, 64)).astype(np.float32)
  grad = jax.grad(lambda a: nn.scaled_dot_general(a, y, NO_BATCH).sum())(x)
  np.testing.assert_array_equal(grad, np.tile(y.sum(0), (32, 1)))
  grad_y = jax.grad(lambda b: (nn.scaled_dot_general(x, b, NO_BATCH) * 2).sum())(y)
  np.testing.assert_array_equal(grad_y, np.tile(2 * x.sum(0), (32, 1)))
  fp4 = nn.get_scaled_dot_general_config("nvfp4")
  grad = jax.grad(lambda a: nn.scaled_dot_general(a, y, NO_BATCH, configs=[fp4] * 3).sum())(x)
  np.testing.assert_array_equal(grad, np.tile(y.sum(0), (32, 1)))   # unquantized under nvfp4


def test_scaled_dot_general_errors():
  x = jnp.ones((2, 64))
  with pytest.raises(TypeError, match="preferred_element_type"):
    nn.scaled_dot_general(x, x, NO_BATCH, preferred_element_type=jnp.float64)
  with pytest.raises(ValueError, match="implementation"):
    nn.scaled_dot_general(x, x, NO_BATCH, implementation="xla")
  with pytest.raises(ValueError, match="multiple of the block size"):
    nn.scaled_dot_general(jnp.ones((2, 48)), jnp.ones((2, 48)), NO_BATCH)
