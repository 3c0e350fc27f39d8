"""Lowering rule of conv_general_dilated (refimpl/lax/convolution.py).

The operands are transposed to the canonical layouts (lhs (N, C, spatial...),
kernel (O, I, spatial...)) in the contraction dtype, as dot_general's
(`numba_backend.rules.linalg`), and one kernel, generic in the number of
spatial dimensions and compiled once per dtype, sums the products of each
output element directly, kernel tap by tap and input feature by input
feature: holes (lhs dilation) and padding are skipped, so they never form
0 * inf. The canonical result is then transposed to the output layout.
"""

import math

import numpy as np

from refimpl.lax import convolution as lax
from refimpl.lax.rules import contraction_dtype
from numba_backend.kernels import c_strides, kernel_jit
from numba_backend.lower import register, type_source
from numba_backend.rules.linalg import from_compute, operand


@kernel_jit
def conv(x, x_shape, w, w_shape, out, out_shape, config):
  """out[n, o, y...] = sum over taps k... (row-major), then input features i,
  of x[n', c, p...] * w[o, i, k...] where lhs position p_d = (y_d * stride_d
  + k_d * rhs_dilation_d - pad_lo_d) / lhs_dilation_d is an element of x.
  Flat row-major arrays, zeroed `out`; `config` is (feature groups, batch
  groups, then per spatial dimension: stride, pad_lo, lhs_dilation,
  rhs_dilation); groups as the reference's docstring says."""
  spatial = x_shape.size - 2
  groups, batch_groups = config[0], config[1]
  channels, features = x_shape[1], w_shape[1]
  out_features = out_shape[1]
  per_group, per_batch_group = out_features // groups, out_features // batch_groups
  batch_per_group = x_shape[0] // batch_groups
  x_size, taps, positions = 1, 1, 1
  for d in range(spatial):
    x_size *= x_shape[2 + d]
    taps *= w_shape[2 + d]
    positions *= out_shape[2 + d]
  y = np.zeros(spatial, np.int64)
  for n in range(out_shape[0]):
    for o in range(out_features):
      g, b = o // per_group, o // per_batch_group
      x_base = ((b * batch_per_group + n) * channels + g * features) * x_size
      w_base = o * features * taps
      for q in range(positions):
        rest = q
        for d in range(spatial - 1, -1, -1):
          y[d] = rest % out_shape[2 + d]
          rest //= out_shape[2 + d]
        total = out[(n * out_features + o) * positions + q]
        for t in range(taps):
          rest, offset, step, inside = t, 0, 1, True
          for d in range(spatial - 1, -1, -1):
            k = rest % w_shape[2 + d]
            rest //= w_shape[2 + d]
            p = y[d] * config[2 + 4 * d] + k * config[5 + 4 * d] - config[3 + 4 * d]
            dilation = config[4 + 4 * d]
            if p < 0 or p % dilation != 0 or p // dilation >= x_shape[2 + d]:
              inside = False
              break
            offset += p // dilation * step
            step *= x_shape[2 + d]
          if inside:
            for i in range(features):
              total += x[x_base + i * x_size + offset] * w[w_base + i * taps + t]
        out[(n * out_features + o) * positions + q] = total


@register(lax.conv_general_dilated_p)
def _conv_general_dilated(ctx, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                          dimension_numbers, feature_group_count, batch_group_count, precision,
                          preferred_element_type):
  (lhs_aval, rhs_aval), (out_aval,) = ctx.avals_in, ctx.avals_out
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  compute = contraction_dtype(np.dtype(out_aval.dtype))
  x = operand(ctx, lhs, lhs_aval, lhs_spec, compute)
  w = operand(ctx, rhs, rhs_aval, rhs_spec, compute)
  x_shape = [lhs_aval.shape[d] for d in lhs_spec]
  w_shape = [rhs_aval.shape[d] for d in rhs_spec]
  out_shape = [out_aval.shape[d] for d in out_spec]   # canonical: (N, O, spatial...)
  config = [feature_group_count, batch_group_count]
  for s, (lo, _), ld, rd in zip(window_strides, padding, lhs_dilation, rhs_dilation):
    config += [s, lo, ld, rd]
  size = ctx.dim(math.prod(out_shape))
  canonical = ctx.fresh()
  ctx.emit(f"{canonical} = np.zeros({size}, {type_source(compute)})")
  ctx.emit(f"{ctx.function(conv)}({x}, {ctx.ints(x_shape)}, {w}, {ctx.ints(w_shape)}, "
           f"{canonical}, {ctx.ints(out_shape)}, {ctx.ints(config)})")
  permutation = np.argsort(out_spec)   # output dim j is canonical dim permutation[j]
  if list(permutation) != list(range(len(out_spec))):
    strides = c_strides(out_shape)
    moved = ctx.fresh()
    ctx.emit(f"{moved} = np.empty({size}, {type_source(compute)})")
    ctx.emit(f"K.strided_copy({canonical}, 0, {ctx.ints([strides[i] for i in permutation])}, "
             f"{ctx.ints(out_aval.shape)}, {moved})")
    canonical = moved
  return from_compute(ctx, canonical, compute, out_aval)
