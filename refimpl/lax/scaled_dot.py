"""`scaled_dot`, as `jax.lax`'s: the `dot_general` of two operands each
multiplied by its scales, one scale per block of the contracting
dimensions, computed as JAX's reference decomposition does (the operands
and the broadcast scales in bfloat16, then `dot_general`)."""

from refimpl import core, dtypes
from refimpl.lax.elementwise import convert_element_type, mul
from refimpl.lax.linalg import dot_general
from refimpl.lax.shapes import broadcast_in_dim, full, reshape

__all__ = ['scaled_dot']


def _check_operand_scale(side, shape, scale_shape, contracting):
  for i, size in enumerate(shape):
    if i in contracting:
      if size % scale_shape[i]:
        raise TypeError(f"{side} contracting dim {i} of size {size} must be divisible by its "
                        f"scale's dim size {scale_shape[i]}.")
      if size // scale_shape[i] < 2:
        raise TypeError(f"The ratio of {side} contracting dim {i} to its scale's dim size "
                        f"({size // scale_shape[i]}) must be at least 2.")
    elif scale_shape[i] != size:
      raise TypeError(f"{side} dim {i} of size {size} does not match scale dim size "
                      f"{scale_shape[i]}.")


def _check_inputs(lhs, rhs, lhs_scale, rhs_scale, dimension_numbers):
  (lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch) = dimension_numbers
  if len({lhs.ndim, rhs.ndim, lhs_scale.ndim, rhs_scale.ndim}) != 1:
    raise TypeError(f"All input tensors must have the same rank. Got lhs rank: {lhs.ndim} rhs "
                    f"rank: {rhs.ndim} lhs_scale rank: {lhs_scale.ndim} rhs_scale rank: "
                    f"{rhs_scale.ndim}.")
  if len(lhs_batch) != len(rhs_batch):
    raise TypeError("LHS and RHS must have the same number of batch dimensions, got "
                    f"{len(lhs_batch)} and {len(rhs_batch)}.")
  if len(lhs_contracting) != len(rhs_contracting):
    raise TypeError("LHS and RHS must have the same number of contracting dimensions, got "
                    f"{len(lhs_contracting)} and {len(rhs_contracting)}.")
  for i, j in zip(lhs_batch, rhs_batch):
    if len({lhs.shape[i], rhs.shape[j], lhs_scale.shape[i], rhs_scale.shape[j]}) != 1:
      raise TypeError("All input tensors must have the same batch dimension size for batch "
                      f"dims ({i}, {j}).")
  for i, j in zip(lhs_contracting, rhs_contracting):
    if lhs.shape[i] != rhs.shape[j]:
      raise TypeError(f"LHS contracting dim {i} of size {lhs.shape[i]} does not match RHS "
                      f"contracting dim {j} of size {rhs.shape[j]}.")
  _check_operand_scale("LHS", lhs.shape, lhs_scale.shape, lhs_contracting)
  _check_operand_scale("RHS", rhs.shape, rhs_scale.shape, rhs_contracting)


def _scaled(x, scale, contracting):
  """x times its scales repeated over their blocks, in bfloat16."""
  shape, scale_shape = core.get_aval(x).shape, core.get_aval(scale).shape
  blocked, dims = [], []   # each contracting dim split into (blocks, block size)
  for i, (size, scale_size) in enumerate(zip(shape, scale_shape)):
    dims.append(len(blocked))
    blocked += [scale_size, size // scale_size] if i in contracting else [size]
  scale = reshape(broadcast_in_dim(scale, tuple(blocked), tuple(dims)), shape)
  return mul(convert_element_type(x, dtypes.bfloat16),
             convert_element_type(scale, dtypes.bfloat16))


def scaled_dot(lhs, rhs, *, lhs_scale=None, rhs_scale=None, dimension_numbers=None,
               preferred_element_type=None):
  """`dot_general((lhs * lhs_scale), (rhs * rhs_scale), dimension_numbers)`
  where each scale holds one value per block of the operand's contracting
  dimensions (the other dimensions equal the operand's; blocks of at least
  2 elements; a missing scale is ones), the scaled operands in bfloat16 and
  the result in `preferred_element_type` (default bfloat16). Default
  `dimension_numbers`: a matrix product, batched over the first dimension
  for rank 3. TypeError for shapes that do not fit."""
  lhs_aval, rhs_aval = core.get_aval(lhs), core.get_aval(rhs)
  if dimension_numbers is None:
    dimension_numbers = ((((2,), (1,)), ((0,), (0,))) if lhs_aval.ndim == 3
                         else (((1,), (0,)), ((), ())))
  (lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch) = dimension_numbers
  dimension_numbers = ((tuple(lhs_contracting), tuple(rhs_contracting)),
                       (tuple(lhs_batch), tuple(rhs_batch)))
  ones = lambda aval, contracting: full(   # noqa: E731
      tuple(1 if i in contracting else n for i, n in enumerate(aval.shape)), 1,
      dtypes.float8_e8m0fnu)
  lhs_scale = ones(lhs_aval, lhs_contracting) if lhs_scale is None else lhs_scale
  rhs_scale = ones(rhs_aval, rhs_contracting) if rhs_scale is None else rhs_scale
  _check_inputs(lhs_aval, rhs_aval, core.get_aval(lhs_scale), core.get_aval(rhs_scale),
                dimension_numbers)
  out_dtype = dtypes.canonicalize_dtype(dtypes.bfloat16 if preferred_element_type is None
                                        else preferred_element_type)
  return dot_general(_scaled(lhs, lhs_scale, lhs_contracting),
                     _scaled(rhs, rhs_scale, rhs_contracting), dimension_numbers,
                     preferred_element_type=out_dtype)
