"""Block-scaled matrix products (microscaling, MX), as `jax.nn`'s
`scaled_matmul`, `scaled_dot_general` and `get_scaled_dot_general_config`.

A block-scaled operand is narrow data (float8, float4) with one scale per
block of `block_size` consecutive elements along the contracting dimension;
its value is the data times its block's scale. `scaled_matmul` contracts two
such operands; `scaled_dot_general` first quantizes full-precision operands
into that form (the "mxfp8" recipe: float8_e4m3fn data, power-of-two
float8_e8m0fnu scales rounded up, blocks of 32; "nvfp4": float4_e2m1fn data,
float8_e4m3fn scales, blocks of 16, under a float32 global scale), as JAX's
reference path does, then multiplies. JAX computes `scaled_matmul` with
cuDNN on NVIDIA GPUs only; refimpl computes its mathematical definition
(dequantize in float32, contract in float32) on any backend.
"""

import dataclasses

import numpy as np

from refimpl import dtypes, lax
from refimpl.custom_derivatives import custom_vjp
from refimpl.numpy import (abs, asarray, clip, expand_dims, logical_and, logical_not, max,
                           ones, repeat, reshape, squeeze, transpose, where)

__all__ = ['get_scaled_dot_general_config', 'scaled_dot_general', 'scaled_matmul']


@dataclasses.dataclass
class BlockScaleConfig:
  """How `scaled_dot_general` quantizes an operand: the recipe (`mode`),
  `block_size`, the `data_type` of the quantized values and the
  `scale_type` of the block scales, an optional float32 `global_scale`
  (nvfp4), and `infer_only`."""
  mode: str
  block_size: int
  data_type: object
  scale_type: object
  global_scale: object
  infer_only: bool


def get_scaled_dot_general_config(mode, global_scale=None):
  """The `BlockScaleConfig` of recipe `mode`: "mxfp8" (float8_e4m3fn data,
  float8_e8m0fnu scales, blocks of 32) or "nvfp4" (float4_e2m1fn data,
  float8_e4m3fn scales, blocks of 16, `global_scale` a float32 array, by
  default ones((1,))); ValueError for another mode."""
  if mode == "nvfp4":
    return BlockScaleConfig(mode="nvfp4", block_size=16, data_type=dtypes.float4_e2m1fn,
                            scale_type=dtypes.float8_e4m3fn,
                            global_scale=ones((1,), np.float32) if global_scale is None
                            else global_scale, infer_only=False)
  if mode == "mxfp8":
    return BlockScaleConfig(mode="mxfp8", block_size=32, data_type=dtypes.float8_e4m3fn,
                            scale_type=dtypes.float8_e8m0fnu, global_scale=None,
                            infer_only=False)
  raise ValueError(f"Unsupported mode: {mode}")


def scaled_matmul(lhs, rhs, lhs_scales, rhs_scales, preferred_element_type=np.float32):
  """The block-scaled product of `lhs[B, M, K]` and `rhs[B, N, K]` with
  scales `lhs_scales[B, M, K_a]` and `rhs_scales[B, N, K_b]` (block sizes
  `K // K_a` and `K // K_b`): `einsum('BMK,BNK->BMN', a, b)` of the
  operands times their blocks' scales, computed in float32, in
  `preferred_element_type`. ValueError for shapes that do not fit."""
  a, b, a_scales, b_scales = map(asarray, (lhs, rhs, lhs_scales, rhs_scales))
  if not all(x.ndim == 3 for x in (a, b, a_scales, b_scales)):
    raise ValueError("scaled_matmul requires all inputs to be 3-dimensional arrays")
  (batch_a, m, k_a), (batch_b, n, k_b) = a.shape, b.shape
  if k_a != k_b or batch_a != batch_b:
    raise ValueError("scaled_matmul requires inputs a and b to have matching batch (B) and "
                     f"contract (K) dimensions, but got shapes {a.shape} and {b.shape}")
  if a_scales.shape[::2] != b_scales.shape[::2]:
    raise ValueError("scaled_matmul requires scales to have matching batch (B) and contract "
                     f"(K) dimensions, but got shapes {a_scales.shape} and {b_scales.shape}")
  if a_scales.shape[1] != m or b_scales.shape[1] != n:
    raise ValueError("scaled_matmul requires scales to match non-contract dimensions of "
                     f"inputs, but got shapes a: {a.shape}, b: {b.shape}, a_scales: "
                     f"{a_scales.shape}, b_scales: {b_scales.shape}")
  out_dtype = dtypes.canonicalize_dtype(preferred_element_type)

  def dequantized(x, scales):
    scales = scales.astype(np.float32)
    return x.astype(np.float32) * repeat(scales, x.shape[-1] // scales.shape[-1], axis=-1)
  out = lax.dot_general(dequantized(a, a_scales), dequantized(b, b_scales),
                        (((2,), (2,)), ((0,), (0,))), preferred_element_type=np.float32)
  return out.astype(out_dtype)


# --- quantization -------------------------------------------------------------------------------

def _e8m0_rounding_up(x):
  """The float8_e8m0fnu power of two at or above positive float `x`, as its
  uint8 bits: float32's exponent field, plus one where the mantissa is not
  zero (the largest exponent and subnormals of at most half the smallest
  normal excepted)."""
  bits = lax.bitcast_convert_type(x.astype(np.float32), np.uint32)
  exponent, mantissa = bits >> 23, bits & 0x7FFFFF
  round_up = logical_and(logical_and(mantissa > 0, exponent != 0xFE),
                         logical_not(logical_and(exponent == 0, mantissa <= 0x400000)))
  return where(round_up, exponent + 1, exponent).astype(np.uint8)


def _e8m0_value(bits, dtype):
  """The value of float8_e8m0fnu `bits` (uint8) in `dtype`, 0 (the bits of
  2**-127) as the smallest value worth dividing by."""
  value = lax.bitcast_convert_type(bits.astype(np.uint32) << 23, np.float32)
  near_zero = 2.0**-15 if dtype == np.float16 else 2.0**-127
  return where(value == 0, np.float32(near_zero), value).astype(dtype)


def _quantize(x, config):
  """x[B, M, K] as `config.data_type` values and their blocks' scales
  [B, M, K / block_size] of `config.scale_type`."""
  shape, block = x.shape, config.block_size
  if not (shape[-1] >= block and shape[-1] % block == 0):
    raise ValueError(f"scaled_dot_general: the contracting size {shape[-1]} must be a multiple "
                     f"of the block size {block}")
  x = reshape(x, shape[:-1] + (shape[-1] // block, block))
  largest = np.asarray(dtypes.finfo(config.data_type).max, x.dtype)
  block_scales = lambda v: max(abs(v), axis=-1, keepdims=True) / largest   # noqa: E731
  if config.mode == "mxfp8":
    scales = _e8m0_rounding_up(block_scales(x))
    scaled = x / _e8m0_value(scales, x.dtype)
    scales = lax.bitcast_convert_type(scales, config.scale_type)
  elif config.mode == "nvfp4":
    largest_scale = np.asarray(dtypes.finfo(config.scale_type).max, x.dtype)
    x = x / config.global_scale
    scales = clip(block_scales(x), 0, largest_scale).astype(config.scale_type)
    scaled = x / scales.astype(np.float32)
  else:
    raise ValueError(f"Unrecognized mode: {config.mode}.")
  values = clip(scaled, -largest, largest).astype(config.data_type)
  return reshape(values, shape), squeeze(scales, -1)


def _to_3d(x, contracting, batch):
  """x transposed and reshaped to (batch, non-contracting, contracting)."""
  rest = [d for d in range(x.ndim) if d not in contracting and d not in batch]
  batch, contracting = sorted(batch), sorted(contracting)
  size = lambda dims: int(np.prod([x.shape[d] for d in dims], dtype=int))   # noqa: E731
  return reshape(transpose(x, batch + rest + contracting),
                 (size(batch), size(rest), size(contracting)))


def _out_shape(lhs_shape, rhs_shape, lhs_dims, rhs_dims):
  """`dot_general`'s result shape: batch, lhs's free, rhs's free dimensions."""
  (lhs_contract, lhs_batch), (rhs_contract, rhs_batch) = lhs_dims, rhs_dims
  return (tuple(n for d, n in enumerate(lhs_shape) if d in lhs_batch)
          + tuple(n for d, n in enumerate(lhs_shape) if d not in lhs_contract + lhs_batch)
          + tuple(n for d, n in enumerate(rhs_shape) if d not in rhs_contract + rhs_batch))


def _quantized_product(lhs, rhs, lhs_dims, rhs_dims, out_dtype, lhs_config, rhs_config):
  """Both operands quantized along their contracting dimensions, multiplied,
  reshaped to `dot_general`'s layout (nvfp4: rescaled by the global scales)."""
  lhs_q, lhs_scales = _quantize(_to_3d(lhs, *lhs_dims), lhs_config)
  rhs_q, rhs_scales = _quantize(_to_3d(rhs, *rhs_dims), rhs_config)
  nvfp4 = lhs_config.mode == "nvfp4"
  out = scaled_matmul(lhs_q, rhs_q, lhs_scales, rhs_scales,
                      np.float32 if nvfp4 else out_dtype)
  if nvfp4:
    out = (out * (lhs_config.global_scale * rhs_config.global_scale)).astype(out_dtype)
  return reshape(out, _out_shape(lhs.shape, rhs.shape, lhs_dims, rhs_dims))


def _scaled_dot(lhs, rhs, dimension_numbers, preferred_element_type, configs):
  (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
  return _quantized_product(lhs, rhs, (lhs_contract, lhs_batch), (rhs_contract, rhs_batch),
                            preferred_element_type, configs[0], configs[1])


def _transpose_lhs(g, x, y, dimension_numbers, preferred_element_type, configs, swap_ans=False):
  """The cotangent of x: g contracted with y over y's free dimensions (g and
  y quantized with `configs`, except under nvfp4), laid out as x."""
  (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
  x_kept = [d for d in range(x.ndim) if d not in x_contract + x_batch]
  y_kept = [d for d in range(y.ndim) if d not in y_contract + y_batch]
  nb, nx, ny = len(x_batch), len(x_kept), len(y_kept)
  ans_batch = tuple(range(nb))
  ans_y = tuple(range(nb, nb + ny)) if swap_ans else tuple(range(nb + nx, nb + nx + ny))
  y_dims, g_dims = (tuple(y_kept), y_batch), (ans_y, ans_batch)
  if configs[0].mode != "nvfp4":
    out = _quantized_product(g, y, g_dims, y_dims, preferred_element_type, *configs)
  else:
    out = reshape(lax.dot_general(_to_3d(g, *g_dims), _to_3d(y, *y_dims),
                                  (((2,), (2,)), ((0,), (0,))),
                                  preferred_element_type=preferred_element_type),
                  _out_shape(g.shape, y.shape, g_dims, y_dims))
  x_contract_sorted_by_y = list(np.take(x_contract, np.argsort(y_contract)))
  return lax.transpose(out, tuple(np.argsort(list(x_batch) + x_kept + x_contract_sorted_by_y)))


def _scaled_dot_fn(lhs, rhs, dimension_numbers, preferred_element_type, configs):
  return _scaled_dot(lhs, rhs, dimension_numbers, preferred_element_type, configs)


_scaled_dot_fn = custom_vjp(_scaled_dot_fn, nondiff_argnums=(2, 3, 4))


def _scaled_dot_fwd(lhs, rhs, dimension_numbers, preferred_element_type, configs):
  return _scaled_dot(lhs, rhs, dimension_numbers, preferred_element_type, configs), (lhs, rhs)


def _scaled_dot_bwd(dimension_numbers, preferred_element_type, configs, residuals, g):
  """The operands' cotangents, the output's cotangent quantized with
  `configs[2]`; under nvfp4 zero where an operand was clipped when
  quantized (a straight-through estimator)."""
  lhs, rhs = residuals
  (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
  grad_lhs = _transpose_lhs(g, lhs, rhs, dimension_numbers, preferred_element_type,
                            [configs[2], configs[1]])
  grad_rhs = _transpose_lhs(g, rhs, lhs, ((rhs_contract, lhs_contract), (rhs_batch, lhs_batch)),
                            preferred_element_type, [configs[2], configs[0]], swap_ans=True)
  if configs[2].mode == "nvfp4":
    largest = np.asarray(dtypes.finfo(configs[0].data_type).max, lhs.dtype)
    largest_scale = np.asarray(dtypes.finfo(configs[0].scale_type).max, lhs.dtype)
    grad_lhs = where(abs(lhs) <= configs[0].global_scale * largest * largest_scale, grad_lhs, 0)
    grad_rhs = where(abs(rhs) <= configs[1].global_scale * largest * largest_scale, grad_rhs, 0)
  return grad_lhs, grad_rhs


_scaled_dot_fn.defvjp(_scaled_dot_fwd, _scaled_dot_bwd)


def scaled_dot_general(lhs, rhs, dimension_numbers, preferred_element_type=np.float32,
                       configs=None, implementation=None):
  """`dot_general` of `lhs` and `rhs` computed in block-scaled narrow
  precision: each operand quantized along its contracting dimensions with
  its config (`configs` = [lhs, rhs, output gradient], by default three
  "mxfp8" configs; see `get_scaled_dot_general_config`; the contracting
  size must be a multiple of the block size), then `scaled_matmul`, the
  result in `preferred_element_type` (float32, bfloat16 or float16). Its
  gradient quantizes the output's cotangent with the third config. Operands
  without batch dimensions get one of size 1 (dropped from the result).
  `implementation` may be None or "cudnn" (JAX's only kernel; refimpl
  computes the same definition either way)."""
  if implementation not in (None, "cudnn"):
    raise ValueError(f"Unsupported implementation option: {implementation}")
  preferred_element_type = np.dtype(preferred_element_type)
  if preferred_element_type not in (np.dtype(np.float32), dtypes.bfloat16,
                                    np.dtype(np.float16)):
    raise TypeError("Only support preferred_element_type in (f32, bf16, f16), but got "
                    f"{preferred_element_type}")
  if configs is None:
    configs = [get_scaled_dot_general_config("mxfp8")] * 3
  lhs, rhs = asarray(lhs), asarray(rhs)
  (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
  dims = ((tuple(lhs_contract), tuple(rhs_contract)), (tuple(lhs_batch), tuple(rhs_batch)))
  unbatched = not dims[1][0] and not dims[1][1]
  if unbatched:   # (a batch dimension of size 1, last)
    lhs, rhs = expand_dims(lhs, lhs.ndim), expand_dims(rhs, rhs.ndim)
    dims = (dims[0], ((lhs.ndim - 1,), (rhs.ndim - 1,)))
  out = _scaled_dot_fn(lhs, rhs, dims, preferred_element_type, configs)
  return squeeze(out, 0) if unbatched else out
