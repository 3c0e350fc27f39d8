"""Cases for the generic reduction and cumlogsumexp (refimpl/lax/reductions.py).

`lax.reduce` with a computation that is not one of the recognized monoids
lowers to `reduce_p`; its NumPy twin is the same reduction written with
NumPy (here the maximum of absolute values, folded from 0).
"""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from refimpl import dtypes, lax
from conformance import strategies as S
from conformance.autodiff import ADCase
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


@st.composite
def _two_operand_inputs(draw):
  """An int32 and a float32 array of one shape, and `dimensions`."""
  shape = draw(S.shapes(max_side=3))
  dimensions = draw(st.lists(st.integers(0, len(shape) - 1), unique=True,
                             max_size=len(shape)).map(tuple)) if shape else ()
  return ((draw(S.arrays(np.int32, shape)), draw(S.arrays(np.float32, shape))),
          {"dimensions": dimensions})


def _sum_and_max(x, y, dimensions):
  """The sum of `x` and the maximum of `y`, as one reduction of two operands."""
  return lax.reduce((x, y), (np.int32(0), np.float32(-np.inf)),
                    lambda a, b: (lax.add(a[0], b[0]), lax.max(a[1], b[1])), dimensions)


def _np_sum_and_max(x, y, dimensions):
  return (np.sum(x, axis=dimensions, dtype=np.int32),
          np.max(y, axis=dimensions, initial=-np.inf))


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
         _np_max_abs),
    Case("lax.reduce (monoid)", _sum_from_zero, _axes_inputs(S.INT_DTYPES + S.FLOAT_DTYPES),
         _np_sum),
    Case("lax.reduce (two operands)", _sum_and_max, _two_operand_inputs, _np_sum_and_max),
    Case("lax.cumlogsumexp", lambda x, axis, reverse: lax.cumlogsumexp(x, axis, reverse),
         _cumulative_inputs, _np_cumlogsumexp),
    Case("lax.cummax", lambda x, axis, reverse: lax.cummax(x, axis, reverse),
         _cumulative_extremum_inputs, _np_accumulate(np.maximum)),
    Case("lax.cummin", lambda x, axis, reverse: lax.cummin(x, axis, reverse),
         _cumulative_extremum_inputs, _np_accumulate(np.minimum)),
    Case("lax.reduce_xor", lambda x, dimensions: lax.reduce_xor(x, dimensions),
         _axes_inputs(S.BOOL_DTYPES + S.INT_DTYPES), _np_reduce_xor),
]


# --- derivative cases (float64) -----------------------------------------------------------------

def _bounded(low, high):
  return lambda shape: S.arrays(np.float64, shape,
                                elements=S.bounded_elements(np.float64, low, high))


def _signed(low, high):
  """Magnitudes in [low, high] (low > 0), either sign: products of them have
  no zeros, near which their second derivatives are all cancellation and
  finite differences of the first are dominated by third-order terms."""
  elements = st.builds(lambda sign, magnitude: sign * magnitude, st.sampled_from([-1.0, 1.0]),
                       S.bounded_elements(np.float64, low, high))
  return lambda shape: S.arrays(np.float64, shape, elements=elements)


def _distinct(shape):
  """Values at least 0.1 apart, so that no finite-difference step moves a
  maximum or minimum to another element. (Reductions of them are over
  non-empty axes: an empty maximum is -inf, with a NaN tangent as in JAX.)"""
  return hnp.arrays(np.int64, shape, elements=st.integers(-60, 60), unique=True).map(
      lambda a: a / 10)


def _ad_axes_inputs(arrays_of_shape, min_side=0):
  """A float64 array (from `arrays_of_shape(shape)`) and `dimensions` to reduce."""
  @st.composite
  def inputs(draw):
    shape = draw(S.shapes(min_side=min_side, max_side=3))
    dimensions = draw(st.lists(st.integers(0, len(shape) - 1), unique=True,
                               max_size=len(shape)).map(tuple)) if shape else ()
    return (draw(arrays_of_shape(shape)),), {"dimensions": dimensions}
  return inputs


def _ad_cumulative_inputs(arrays_of_shape):
  """A float64 array of rank >= 1 (from `arrays_of_shape(shape)`), `axis` and `reverse`."""
  @st.composite
  def inputs(draw):
    shape = draw(S.shapes(min_dims=1, max_side=4))
    kwargs = {"axis": draw(st.integers(0, len(shape) - 1)), "reverse": draw(st.booleans())}
    return (draw(arrays_of_shape(shape)),), kwargs
  return inputs


def _reduce_with(computation, init):
  """`lax.reduce` with `computation` given as a new function, so that it is
  not recognized as a monoid and lowers to the generic `reduce`."""
  return lambda x, dimensions: lax.reduce(x, np.float64(init), computation, dimensions)


def _max_and_argmax(x, dimensions):
  """The maximum, by a reduction of (value, index) pairs."""
  index = lax.broadcasted_iota(np.int32, x.shape, x.ndim - 1) if x.ndim else np.int32(0)

  def computation(a, b):
    pick = lax.gt(b[0], a[0])
    return lax.select(pick, b[0], a[0]), lax.select(pick, b[1], a[1])
  return lax.reduce((x, index), (np.float64(-np.inf), np.int32(0)), computation,
                    dimensions)[0]


def _cumulative(fn):
  return lambda x, axis, reverse: fn(x, axis, reverse)


AD_CASES = [
    ADCase("reduce_sum", lambda x, dimensions: lax.reduce_sum(x, dimensions),
           _ad_axes_inputs(_bounded(-10.0, 10.0)), ("reduce_sum",)),
    ADCase("reduce_prod", lambda x, dimensions: lax.reduce_prod(x, dimensions),
           _ad_axes_inputs(_signed(0.5, 2.0)), ("reduce_prod",), order=2),
    ADCase("reduce_max", lambda x, dimensions: lax.reduce_max(x, dimensions),
           _ad_axes_inputs(_distinct, min_side=1), ("reduce_max",),
           order=2),
    ADCase("reduce_min", lambda x, dimensions: lax.reduce_min(x, dimensions),
           _ad_axes_inputs(_distinct, min_side=1), ("reduce_min",),
           order=2),
    ADCase("reduce-add", _reduce_with(lambda a, b: lax.add(a, b), 0.0),
           _ad_axes_inputs(_bounded(-10.0, 10.0)), ("reduce",)),
    ADCase("reduce-mul", _reduce_with(lambda a, b: lax.mul(a, b), 1.0),
           _ad_axes_inputs(_signed(0.5, 2.0)), ("reduce",), order=2),
    ADCase("reduce-argmax", _max_and_argmax, _ad_axes_inputs(_distinct, min_side=1),
           ("reduce",)),
    ADCase("cumsum", _cumulative(lax.cumsum), _ad_cumulative_inputs(_bounded(-10.0, 10.0)),
           ("cumsum",)),
    ADCase("cumprod", _cumulative(lax.cumprod), _ad_cumulative_inputs(_signed(0.5, 2.0)),
           ("cumprod",), order=2),
    ADCase("cummax", _cumulative(lax.cummax), _ad_cumulative_inputs(_distinct),
           ("cummax",), order=2),
    ADCase("cummin", _cumulative(lax.cummin), _ad_cumulative_inputs(_distinct),
           ("cummin",), order=2),
    ADCase("cumlogsumexp", _cumulative(lax.cumlogsumexp),
           _ad_cumulative_inputs(_bounded(-5.0, 5.0)), ("cumlogsumexp",), order=2),
]
