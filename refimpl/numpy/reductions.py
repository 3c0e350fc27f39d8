from refimpl import lax
from refimpl.numpy.util import check_arraylike, promote_dtypes
from refimpl.core import get_aval

__all__ = ['sum']


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None, promote_integers=True):
  check_arraylike("sum", a)
  a, = promote_dtypes(a)
  ndim = get_aval(a).ndim
  axes = tuple(range(ndim)) if axis is None else ((axis,) if isinstance(axis, int) else tuple(axis))
  return lax.reduce_sum(a, axes)
