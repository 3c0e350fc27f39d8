"""Shape primitives: broadcast_in_dim, reshape, and friends.

None of these change values or dtypes; they rearrange elements.
"""

import numpy as np

from refimpl.core import Primitive, ShapedArray

__all__ = ['broadcast_in_dim', 'reshape']

# --- broadcast_in_dim ---------------------------------------------------------

broadcast_in_dim_p = Primitive("broadcast_in_dim")


@broadcast_in_dim_p.def_impl
def _broadcast_in_dim_reference(operand, *, shape, broadcast_dimensions):
  """Broadcasts `operand` to `shape`; operand dim i becomes result dim
  `broadcast_dimensions[i]`.

  Shape rule: `len(broadcast_dimensions) == operand.ndim`, strictly
  increasing, and each operand dim is 1 or equal to the result dim it maps
  to. Dtype and weak type are the operand's.
  """
  expanded = [1] * len(shape)
  for i, d in enumerate(broadcast_dimensions):
    expanded[d] = operand.shape[i]
  return np.broadcast_to(operand.reshape(expanded), shape)


@broadcast_in_dim_p.def_abstract_eval
def _broadcast_in_dim_shape_rule(operand, *, shape, broadcast_dimensions):
  if len(broadcast_dimensions) != operand.ndim:
    raise TypeError(
        f"broadcast_in_dim broadcast_dimensions must have length equal to operand "
        f"ndim; got broadcast_dimensions {broadcast_dimensions} for operand ndim "
        f"{operand.ndim}.")
  if any(not 0 <= d < len(shape) for d in broadcast_dimensions):
    raise TypeError(f"broadcast_in_dim broadcast_dimensions {broadcast_dimensions} "
                    f"out of range for result rank {len(shape)}")
  if any(a >= b for a, b in zip(broadcast_dimensions, broadcast_dimensions[1:])):
    raise TypeError(f"broadcast_in_dim broadcast_dimensions must be strictly "
                    f"increasing; got {broadcast_dimensions}")
  for i, d in enumerate(broadcast_dimensions):
    if operand.shape[i] not in (1, shape[d]):
      raise TypeError(
          f"broadcast_in_dim operand dimension sizes must either be 1, or be equal "
          f"to their corresponding dimensions in the target broadcast shape; got "
          f"operand of shape {operand.shape}, target broadcast shape {shape}, "
          f"broadcast_dimensions {broadcast_dimensions}")
  return ShapedArray(shape, operand.dtype, operand.weak_type)


def broadcast_in_dim(operand, shape, broadcast_dimensions):
  return broadcast_in_dim_p.bind(operand, shape=tuple(shape),
                                 broadcast_dimensions=tuple(broadcast_dimensions))


# --- reshape ------------------------------------------------------------------------

reshape_p = Primitive("reshape")


@reshape_p.def_impl
def _reshape_reference(operand, *, new_sizes, dimensions):
  """Reshapes `operand` (row-major order) to `new_sizes`.

  If `dimensions` is not None the operand is first transposed by it. Shape
  rule: the element counts must match. Dtype and weak type are kept.
  """
  if dimensions is not None:
    operand = np.transpose(operand, dimensions)
  return operand.reshape(new_sizes)


@reshape_p.def_abstract_eval
def _reshape_shape_rule(operand, *, new_sizes, dimensions):
  if any(d < 0 for d in new_sizes):
    raise TypeError(f"reshape new_sizes must all be non-negative, got {new_sizes}")
  if int(np.prod(new_sizes, dtype=np.int64)) != operand.size:
    raise TypeError(f"reshape total size must be unchanged, got new_sizes "
                    f"{new_sizes} for shape {operand.shape}.")
  if dimensions is not None and sorted(dimensions) != list(range(operand.ndim)):
    raise TypeError(f"reshape dimensions must be a permutation of operand "
                    f"dimensions, got dimensions {dimensions} for shape {operand.shape}.")
  return ShapedArray(new_sizes, operand.dtype, operand.weak_type)


def reshape(operand, new_sizes, dimensions=None):
  new_sizes = tuple(int(d) for d in new_sizes)
  dims = None if dimensions is None else tuple(dimensions)
  if operand_shape(operand) == new_sizes and dims is None:
    return operand
  return reshape_p.bind(operand, new_sizes=new_sizes, dimensions=dims)


def operand_shape(x):
  return np.shape(x) if not hasattr(x, "aval") else x.aval.shape
