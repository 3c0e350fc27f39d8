"""Lowering rule of conv_general_dilated (refimpl/lax/convolution.py).

The operands are transposed to the canonical layouts (lhs (N, C, spatial...),
kernel (O, I, spatial...)) in the contraction dtype, as dot_general's
(`numba_backend.rules.linalg`), and one kernel, generic in the number of
spatial dimensions and compiled once per dtype, sums the products of each
output element directly (`conv_positions`), kernel tap by tap and input
feature by input feature: holes (lhs dilation) and padding are skipped, so
they never form 0 * inf. The canonical result is then transposed to the
output layout. The numba-cuda rule (numba_backend/cuda/convolution.py) is
`conv_rule` with a thread an output element calling `conv_positions`.
"""

import math

import numpy as np

from refimpl.lax import convolution as lax
from refimpl.lax.rules import contraction_dtype
from numba_backend.kernels import c_strides, kernel_jit
from numba_backend.lower import register, type_source
from numba_backend.rules.linalg import from_compute, operand


@kernel_jit
def conv_bases(x_shape, w_shape, out_shape, config, n, o):
  """(the flat index of x[n', g * I, 0...], of w[o, 0, 0...]) for the
  output (n, o, ...): its feature group g and its batch group's lhs batch
  element n' as the reference's docstring says (config[0], config[1] the
  feature and batch group counts)."""
  out_features, features = out_shape[1], w_shape[1]
  g, b = o // (out_features // config[0]), o // (out_features // config[1])
  x_size, taps = 1, 1
  for d in range(2, x_shape.size):
    x_size *= x_shape[d]
    taps *= w_shape[d]
  n_x = b * (x_shape[0] // config[1]) + n
  return (n_x * x_shape[1] + g * features) * x_size, o * features * taps


@kernel_jit
def conv_positions(x, w, x_shape, w_shape, out_shape, config, x_base, w_base, first, stop, y,
                   zero, out, out_base):
  """out[out_base + q] for the spatial positions q in [first, stop) (flat,
  row-major) of the output (n, o) whose bases `conv_bases` gives: from
  `zero`, the sum over taps k... (row-major), then input features i, of
  x[n', c, p...] * w[o, i, k...] where lhs position p_d = (y_d * stride_d
  + k_d * rhs_dilation_d - pad_lo_d) / lhs_dilation_d is an element of x,
  added in that order. Flat row-major arrays; `config` is (feature groups,
  batch groups, then per spatial dimension: stride, pad_lo, lhs_dilation,
  rhs_dilation); `y` an int64 array of a length of at least 1 and the
  number of spatial dimensions, for the output position's coordinates."""
  spatial, features = x_shape.size - 2, w_shape[1]
  x_size, taps = 1, 1
  for d in range(spatial):
    x_size *= x_shape[2 + d]
    taps *= w_shape[2 + d]
  for q in range(first, stop):
    rest = q
    for d in range(spatial - 1, -1, -1):
      y[d] = rest % out_shape[2 + d]
      rest //= out_shape[2 + d]
    total = zero
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
        for i in range(features):   # (unsigned indices: no wraparound of negative ones)
          total += (x[np.uint64(x_base + i * x_size + offset)]
                    * w[np.uint64(w_base + i * taps + t)])
    out[out_base + q] = total


@kernel_jit
def conv(x, w, x_shape, w_shape, out_shape, config, zero, out):
  """The canonical output (n, o, y...) into the flat `out`, by `conv_positions`."""
  positions = 1
  for d in range(2, out_shape.size):
    positions *= out_shape[d]
  y = np.zeros(max(out_shape.size - 2, 1), np.int64)
  for n in range(out_shape[0]):
    for o in range(out_shape[1]):
      x_base, w_base = conv_bases(x_shape, w_shape, out_shape, config, n, o)
      conv_positions(x, w, x_shape, w_shape, out_shape, config, x_base, w_base, 0, positions, y,
                     zero, out, (n * out_shape[1] + o) * positions)


def conv_rule(canonical):
  """The conv_general_dilated rule whose canonical result is written by
  `canonical(ctx, operands, shapes, out_shape, compute)`: the name of a new
  flat array of the output (n, o, y...) of `out_shape` (a list), of
  `compute`, from the canonical operands (`operands`: x, w, as a source) of
  `shapes` (the sources of `conv`'s x_shape, w_shape, out_shape and config)."""
  def rule(ctx, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
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
    shapes = ctx.ints(x_shape), ctx.ints(w_shape), ctx.ints(out_shape), ctx.ints(config)
    result = canonical(ctx, f"{x}, {w}", shapes, out_shape, compute)
    permutation = np.argsort(out_spec)   # output dim j is canonical dim permutation[j]
    if list(permutation) != list(range(len(out_spec))):
      strides = c_strides(out_shape)
      moved = ctx.fresh()
      size = ctx.dim(math.prod(out_shape))
      ctx.emit(f"{moved} = {ctx.lowering.allocation(size, type_source(compute))}")
      ctx.lowering.strided_copy(result, "0", ctx.ints([strides[i] for i in permutation]),
                                ctx.ints(out_aval.shape), moved)
      result = moved
    return from_compute(ctx, result, compute, out_aval)
  return rule


def _canonical(ctx, operands, shapes, out_shape, compute):
  out = ctx.fresh()
  ctx.emit(f"{out} = np.empty({ctx.dim(math.prod(out_shape))}, {type_source(compute)})")
  ctx.emit(f"{ctx.function(conv)}({operands}, {', '.join(shapes)}, "
           f"{ctx.lowering.const(0, compute)}, {out})")
  return out


register(lax.conv_general_dilated_p)(conv_rule(_canonical))
