"""Cases for the generic reduction and cumlogsumexp (refimpl/lax/reductions.py).

`lax.reduce` with a computation that is not one of the recognized monoids
lowers to `reduce_p`; its NumPy twin is the same reduction written with
NumPy (here the maximum of absolute values, folded from 0).
"""

import numpy as np
from hypothesis import strategies as st

from refimpl import dtypes, lax
from conformance import strategies as S
from conformance.cases import Case


def _axes_inputs(dtype_list, **array_kwargs):
  """An array and `dimensions`: a tuple of distinct non-negative axes."""
  return lambda: S.array_and_kwargs(
      lambda shape: st.fixed_dictionaries({"dimensions": st.lists(
          st.integers(0, len(shape) - 1), unique=True, max_size=len(shape)).map(tuple)
          if shape else st.just(())}),
      dtype_list, shape=S.shapes(max_side=3), **array_kwargs)


def _max_abs(x, dimensions):
  zero = np.zeros((), x.dtype)
  return lax.reduce(x, zero, lambda a, b: lax.max(lax.abs(a), lax.abs(b)), dimensions)


def _np_max_abs(x, dimensions):
  return np.max(np.abs(x), axis=dimensions, initial=0)


def _sum_from_zero(x, dimensions):
  return lax.reduce(x, np.zeros((), x.dtype), lax.add, dimensions)


def _np_sum(x, dimensions):
  wide = np.float64 if dtypes.is_float(x.dtype) else x.dtype
  return np.sum(x.astype(wide), axis=dimensions, dtype=wide).astype(x.dtype)


def _cumulative_inputs():
  return S.array_and_kwargs(
      lambda shape: st.fixed_dictionaries({"axis": st.integers(0, len(shape) - 1),
                                           "reverse": st.booleans()}),
      S.FLOAT_DTYPES, shape=S.shapes(min_dims=1))


def _np_cumlogsumexp(x, axis, reverse):
  flip = (lambda a: np.flip(a, axis)) if reverse else (lambda a: a)
  with np.errstate(all="ignore"):
    return flip(np.logaddexp.accumulate(flip(x).astype(np.float64), axis=axis))


def _cumulative_extremum_inputs():
  return S.array_and_kwargs(
      lambda shape: st.fixed_dictionaries({"axis": st.integers(0, len(shape) - 1),
                                           "reverse": st.booleans()}),
      S.INT_DTYPES + S.FLOAT_DTYPES, shape=S.shapes(min_dims=1))


def _np_accumulate(ufunc):
  """`ufunc.accumulate` along `axis`, from the end when `reverse` (NaN propagates)."""
  def accumulate(x, axis, reverse):
    flip = (lambda a: np.flip(a, axis)) if reverse else (lambda a: a)
    return flip(ufunc.accumulate(flip(x), axis=axis)).astype(x.dtype)
  return accumulate


def _np_reduce_xor(x, dimensions):
  return np.bitwise_xor.reduce(x, axis=dimensions) if dimensions else x


CASES = [
    Case("lax.reduce", _max_abs,
         _axes_inputs(S.SIGNED_DTYPES[1:] + [dtypes.float32], allow_nan=False),
         _np_max_abs, ("reduce", "abs", "max")),
    Case("lax.reduce (monoid)", _sum_from_zero, _axes_inputs(S.INT_DTYPES + S.FLOAT_DTYPES),
         _np_sum, ("reduce_sum",)),
    Case("lax.cumlogsumexp", lambda x, axis, reverse: lax.cumlogsumexp(x, axis, reverse),
         _cumulative_inputs, _np_cumlogsumexp, ("cumlogsumexp",)),
    Case("lax.cummax", lambda x, axis, reverse: lax.cummax(x, axis, reverse),
         _cumulative_extremum_inputs, _np_accumulate(np.maximum),
         ("cummax",)),
    Case("lax.cummin", lambda x, axis, reverse: lax.cummin(x, axis, reverse),
         _cumulative_extremum_inputs, _np_accumulate(np.minimum), ("cummin",)),
    Case("lax.reduce_xor", lambda x, dimensions: lax.reduce_xor(x, dimensions),
         _axes_inputs(S.BOOL_DTYPES + S.INT_DTYPES), _np_reduce_xor, ("reduce_xor",)),
]
