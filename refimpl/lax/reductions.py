"""Reduction primitives: reduce_sum/max/min/prod/and/or, argmax/argmin.

Shape rule (all): `axes` are distinct dimensions of the operand; the result
has those dimensions removed. Dtype and weak type are the operand's, except
argmax/argmin which give `index_dtype`.
"""

import numpy as np

from refimpl.core import Primitive, ShapedArray
from refimpl.lax.rules import NUMBER, canonical_axes, check_dtype, as_dtype

__all__ = ['reduce_sum']


def _reduced_aval(name, operand, axes, category):
  check_dtype(name, operand, category)
  axes = canonical_axes(name, axes, operand.ndim)
  shape = tuple(d for i, d in enumerate(operand.shape) if i not in axes)
  return ShapedArray(shape, operand.dtype, operand.weak_type)


reduce_sum_p = Primitive("reduce_sum")


@reduce_sum_p.def_impl
def _reduce_sum_reference(operand, *, axes):
  """Sum over `axes`. Empty reductions give 0; integers wrap on overflow."""
  return as_dtype(np.sum(operand, axis=tuple(axes), dtype=operand.dtype), operand.dtype)


reduce_sum_p.def_abstract_eval(
    lambda operand, *, axes: _reduced_aval("reduce_sum", operand, axes, NUMBER))


def reduce_sum(operand, axes):
  return reduce_sum_p.bind(operand, axes=tuple(axes))
