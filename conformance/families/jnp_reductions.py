"""Cases for the jnp reductions (refimpl/numpy/reductions.py) and jnp.trace.

Floating sums and products are computed by the reference in double and
rounded once, so the expected values are NumPy's computed in float64
(complex128) too. Operand dtypes are those where NumPy is a valid reference:
integer sums and products of 32-bit integers (and all integer products and
cumulative reductions) wrap in JAX's narrower accumulator, which the
`integer_accumulation_wraps` case covers; means and variances of integers
are computed in float32 (`integers_promote_to_default_float`).
"""

import numpy as np
from hypothesis import strategies as st

import refimpl.numpy as jnp
from refimpl import dtypes
from conformance import strategies as S
from conformance.cases import Case
from conformance.divergences import xla_divide

BOOL = S.BOOL_DTYPES
FLOAT = S.FLOAT_DTYPES
INEXACT = FLOAT + S.COMPLEX_DTYPES
SMALL_INT = [np.int8, np.int16, np.uint8, np.uint16]  # their sums cannot overflow int32 here
ORDERED = BOOL + S.INT_DTYPES + FLOAT
ALL = S.ALL_DTYPES


def _wide(x):
  x = np.asarray(x)
  if dtypes.is_complex(x.dtype):
    return x.astype(np.complex128)
  return x.astype(np.float64) if dtypes.is_float(x.dtype) else x


def _quotient(total, count):
  """total / count as JAX divides: a complex quotient as XLA's (NumPy's is NaN
  in both parts where a sum's parts are both infinite)."""
  if dtypes.is_complex(total.dtype):
    return xla_divide(total, np.asarray(count).astype(total.dtype))
  return total / count


def _mean(numpy_sum, counted):
  """JAX's mean: `numpy_sum` of the (widened) elements divided by the number
  of elements that `counted` (a predicate) and `where` select."""
  def expected(a, axis=None, keepdims=False, where=True):
    a = _wide(a)
    with np.errstate(all="ignore"):
      total = numpy_sum(a, axis=axis, keepdims=keepdims, where=where)
      count = np.sum(counted(a) & where, axis=axis, keepdims=keepdims)
      return _quotient(np.asarray(total), count)
  return expected


def _w(numpy_fn):
  """numpy_fn computed in float64/complex128 (array arguments widened)."""
  def expected(a, **kwargs):
    kwargs = {k: _wide(v) if k == "initial" else v for k, v in kwargs.items()}
    with np.errstate(all="ignore"):
      return numpy_fn(_wide(a), **kwargs)
  return expected


@st.composite
def _reduction_inputs(draw, dtype_list, axis=True, keepdims=True, where=False, initial=False,
                      nonempty=False, single_axis=False, extra=None, elements=None):
  """An array and the keywords of a reduction: `axis` (None, an int, a tuple),
  `keepdims`, a `where` mask (broadcastable), `initial` (a scalar of the
  array's dtype). With `nonempty` the reduced axes are non-empty unless an
  `initial` is given (reductions without an identity)."""
  dtype = draw(st.sampled_from(dtype_list))
  x = draw(S.arrays(dtype, S.shapes(), elements=elements))
  kwargs = {}
  if axis:
    kwargs["axis"] = draw(S.axes(x.ndim, allow_tuple=not single_axis))
  if keepdims:
    kwargs["keepdims"] = draw(st.booleans())
  if where and draw(st.booleans()):
    shape = draw(st.sampled_from([x.shape, x.shape[1:], tuple(1 for _ in x.shape)]))
    kwargs["where"] = draw(S.arrays(np.bool_, shape))
  if initial and (draw(st.booleans()) or "where" in kwargs):
    kwargs["initial"] = draw(S.arrays(dtype, (), elements=elements))
  if nonempty and "initial" not in kwargs:
    reduced = _reduced_axes(x.ndim, kwargs.get("axis"))
    if any(x.shape[d] == 0 for d in reduced) or "where" in kwargs:
      x = draw(S.arrays(dtype, tuple(max(d, 1) for d in x.shape), elements=elements))
      kwargs.pop("where", None)
  if extra is not None:
    kwargs.update(draw(extra))
  return (x,), kwargs


def _named(a, reduction, **kwargs):
  """`jnp.<reduction>(a, **kwargs)`: cases whose divergence needs the name."""
  return getattr(jnp, reduction)(a, **kwargs)


def _reduced_axes(ndim, axis):
  if axis is None:
    return range(ndim)
  return [a % ndim for a in (axis if isinstance(axis, tuple) else (axis,))]


def _inputs(*args, **kwargs):
  return lambda: _reduction_inputs(*args, **kwargs)


def _kwargs(**strategies):
  return st.fixed_dictionaries(strategies)


# Variances are two-pass (the mean, then squared deviations) in float32 at
# least: values near each other lose relative accuracy, with an absolute error
# of about (ulp of the mean)**2. Bounded values and an atol keep that visible
# while still checking NaN and inf.
_BOUNDED = st.floats(-1000, 1000, width=16) | st.sampled_from([np.nan, np.inf, -np.inf])
_VAR_TOLERANCE = dict(atol=1e-6)
_STD_TOLERANCE = dict(atol=1e-3)
_DDOF = _kwargs(ddof=st.integers(0, 1))


def _std_kwargs(name):
  return _kwargs(ddof=st.integers(0, 1), reduction=st.just(name))


@st.composite
def _cumulative_inputs(draw, dtype_list, array_api=False):
  dtype = draw(st.sampled_from(dtype_list))
  x = draw(S.arrays(dtype, S.shapes(min_dims=1 if array_api else 0)))
  if array_api:
    axis = draw(st.integers(-x.ndim, x.ndim - 1)) if x.ndim > 1 else draw(
        st.none() | st.just(0))
    return (x,), {"axis": axis, "include_initial": draw(st.booleans())}
  return (x,), {"axis": draw(st.none() | st.integers(-x.ndim, x.ndim - 1)) if x.ndim else None}


@st.composite
def _average_inputs(draw):
  """a, and weights of a's shape or 1-D along one axis (then `axis` is that axis)."""
  dtype = draw(st.sampled_from(INEXACT))
  x = draw(S.arrays(dtype, S.shapes()))
  if x.ndim and draw(st.booleans()):
    axis = draw(st.integers(-x.ndim, x.ndim - 1))
    weights = draw(S.arrays(dtype, (x.shape[axis],)))
  else:
    axis = draw(S.axes(x.ndim))
    weights = draw(st.none() | S.arrays(dtype, x.shape))
  return (x,), {"axis": axis, "weights": weights, "returned": draw(st.booleans()),
                "keepdims": draw(st.booleans())}


def _average(a, axis, weights, returned, keepdims):
  """np.average's formula sum(a * w) / sum(w), as JAX evaluates it: the product
  a * w in the operands' dtype (it may overflow or lose bits to subnormals),
  the sums in float64 rounded to that dtype, then the quotient (rounded once).
  (NumPy refuses to divide, ZeroDivisionError, when weights sum to 0.)"""
  dtype = a.dtype
  if weights is None:  # the mean: the sum divided by the count (as a complex number too)
    with np.errstate(all="ignore"):
      total = np.sum(_wide(a), axis=axis, keepdims=keepdims).astype(dtype)
      count = np.asarray(a.size // max(total.size, 1) if a.size else 0, _wide(a).dtype)
      average = _quotient(_wide(total), count)
    return (average, np.broadcast_to(count, average.shape)) if returned else average
  if weights.shape != a.shape:
    shape = [1] * a.ndim
    shape[axis] = -1
    weights = weights.reshape(shape)
  weights = np.broadcast_to(weights, a.shape)
  with np.errstate(all="ignore"):
    total = np.sum(_wide(weights), axis=axis, keepdims=keepdims).astype(dtype)
    weighted = np.sum(_wide(a * weights), axis=axis, keepdims=keepdims).astype(dtype)
    average = _quotient(_wide(weighted), _wide(total))  # complex64 fails on subnormals
  return (average, np.broadcast_to(total, average.shape)) if returned else average


@st.composite
def _trace_inputs(draw, dtype_list):
  x = draw(S.arrays(draw(st.sampled_from(dtype_list)), S.shapes(min_dims=2)))
  axis1, axis2 = draw(st.lists(st.integers(-x.ndim, x.ndim - 1), min_size=2, max_size=2)
                      .filter(lambda a: a[0] % x.ndim != a[1] % x.ndim))
  return (x,), {"offset": draw(st.integers(-3, 3)), "axis1": axis1, "axis2": axis2}


_ACCUMULATIONS = {
    "sum": dict(axis=True, keepdims=True, where=True, initial=True),
    "prod": dict(axis=True, keepdims=True, where=True, initial=True),
    "nansum": dict(axis=True, keepdims=True),
    "nanprod": dict(axis=True, keepdims=True),
    "cumsum": dict(axis=True, keepdims=False, single_axis=True),
    "cumprod": dict(axis=True, keepdims=False, single_axis=True),
    "nancumsum": dict(axis=True, keepdims=False, single_axis=True),
    "nancumprod": dict(axis=True, keepdims=False, single_axis=True),
}


@st.composite
def _integer_accumulation_inputs(draw):
  reduction = draw(st.sampled_from(sorted(_ACCUMULATIONS) + ["trace"]))
  if reduction == "trace":
    (x,), kwargs = draw(_trace_inputs(S.INT_DTYPES + BOOL))
  else:
    (x,), kwargs = draw(_reduction_inputs(S.INT_DTYPES + BOOL, **_ACCUMULATIONS[reduction]))
  if reduction != "trace" and "cum" in reduction and x.ndim == 0:
    kwargs["axis"] = None
  return (x,), dict(kwargs, reduction=reduction)


@st.composite
def _integer_mean_inputs(draw):
  ufunc = draw(st.sampled_from(["mean", "average", "var", "std", "nanmean", "nanvar",
                                "nanstd"]))
  # NumPy's average raises ZeroDivisionError on an empty axis (JAX gives NaN).
  average = ufunc == "average"
  (x,), kwargs = draw(_reduction_inputs(S.INT_DTYPES + BOOL, keepdims=not average))
  # Magnitudes at most 1000, as the float cases' elements: the float32 means
  # and squares stay within the float64 oracle's tolerance (the mean of
  # [5592407] * 3 is 5592406.5 in float32, its variance 0.25, as in JAX).
  x = np.clip(x, -1000, 1000).astype(x.dtype)
  if average and x.size == 0:
    x = draw(S.arrays(x.dtype, tuple(max(d, 1) for d in x.shape)))
  return (x,), dict(kwargs, ufunc=ufunc)


CASES = [
    Case("jnp.sum", jnp.sum, _inputs(INEXACT + SMALL_INT + BOOL, where=True, initial=True),
         _w(np.sum)),
    Case("jnp.sum[dtype]", jnp.sum, _inputs(FLOAT + SMALL_INT, extra=_kwargs(
        dtype=st.sampled_from([np.float32, np.complex64]))), _w(np.sum)),
    Case("jnp.prod", _named, _inputs(INEXACT + BOOL, where=True, initial=True,
                                      extra=_kwargs(reduction=st.just("prod"))),
         divergence="product_initial_multiplies_the_result"),
    Case("jnp integer sums and products", _named, _integer_accumulation_inputs,
         divergence="integer_accumulation_wraps"),
    Case("jnp.max", jnp.max, _inputs(ORDERED, where=True, initial=True, nonempty=True),
         np.max),
    Case("jnp.min", jnp.min, _inputs(ORDERED, where=True, initial=True, nonempty=True),
         np.min),
    Case("jnp.all", _named, _inputs(ALL, where=True, extra=_kwargs(reduction=st.just("all"))),
         divergence="all_any_of_complex_test_the_real_part"),
    Case("jnp.any", _named, _inputs(ALL, where=True, extra=_kwargs(reduction=st.just("any"))),
         divergence="all_any_of_complex_test_the_real_part"),
    Case("jnp.mean", jnp.mean, _inputs(INEXACT, where=True),
         _mean(np.sum, lambda a: np.ones(a.shape, bool))),
    Case("jnp.var", jnp.var, _inputs(INEXACT, where=True, extra=_DDOF, elements=_BOUNDED),
         _w(np.var), **_VAR_TOLERANCE),
    Case("jnp.std", _named, _inputs(INEXACT, where=True, extra=_std_kwargs("std"),
                                     elements=_BOUNDED),
         divergence="std_rounds_variance_first",
         **_STD_TOLERANCE),
    Case("jnp means and variances[integer operands]", lambda a, ufunc, **kwargs: getattr(
        jnp, ufunc)(a, **kwargs), _integer_mean_inputs,
         divergence="integers_promote_to_default_float", **_VAR_TOLERANCE),
    Case("jnp.argmax", jnp.argmax, _inputs(ALL, nonempty=True, single_axis=True), np.argmax),
    Case("jnp.argmin", jnp.argmin, _inputs(ALL, nonempty=True, single_axis=True), np.argmin),
    Case("jnp.nanargmax", jnp.nanargmax, _inputs(ORDERED, nonempty=True, single_axis=True),
         divergence="nanargmax_all_nan_is_minus_one"),
    Case("jnp.nanargmin", jnp.nanargmin, _inputs(ORDERED, nonempty=True, single_axis=True),
         divergence="nanargmin_all_nan_is_minus_one"),
    Case("jnp.nansum", jnp.nansum, _inputs(INEXACT + SMALL_INT, where=True, initial=True),
         _w(np.nansum)),
    Case("jnp.nanprod", _named, _inputs(INEXACT, where=True, initial=True,
                                         extra=_kwargs(reduction=st.just("nanprod"))),
         divergence="product_initial_multiplies_the_result"),
    Case("jnp.nanmax", _named, _inputs(ORDERED, where=True, initial=True, nonempty=True,
                                        extra=_kwargs(reduction=st.just("nanmax"))),
         divergence="nan_extremum_initial_propagates_nan"),
    Case("jnp.nanmin", _named, _inputs(ORDERED, where=True, initial=True, nonempty=True,
                                        extra=_kwargs(reduction=st.just("nanmin"))),
         divergence="nan_extremum_initial_propagates_nan"),
    Case("jnp.nanmean", jnp.nanmean, _inputs(INEXACT, where=True),
         _mean(np.nansum, lambda a: ~np.isnan(a))),
    Case("jnp.nanvar", jnp.nanvar, _inputs(INEXACT, where=True, extra=_DDOF,
                                           elements=_BOUNDED),
         _w(np.nanvar), **_VAR_TOLERANCE),
    Case("jnp.nanstd", _named, _inputs(INEXACT, where=True, extra=_std_kwargs("nanstd"),
                                        elements=_BOUNDED),
         divergence="std_rounds_variance_first",
         **_STD_TOLERANCE),
    Case("jnp.cumsum", jnp.cumsum, lambda: _cumulative_inputs(INEXACT + BOOL), _w(np.cumsum)),
    Case("jnp.cumprod", jnp.cumprod, lambda: _cumulative_inputs(INEXACT + BOOL),
         _w(np.cumprod)),
    Case("jnp.nancumsum", jnp.nancumsum, lambda: _cumulative_inputs(INEXACT),
         _w(np.nancumsum)),
    Case("jnp.nancumprod", jnp.nancumprod, lambda: _cumulative_inputs(INEXACT),
         _w(np.nancumprod)),
    Case("jnp.cumulative_sum", jnp.cumulative_sum,
         lambda: _cumulative_inputs(INEXACT + SMALL_INT + BOOL, array_api=True),
         _w(np.cumulative_sum)),
    Case("jnp.cumulative_prod", jnp.cumulative_prod,
         lambda: _cumulative_inputs(INEXACT + BOOL, array_api=True),
         _w(np.cumulative_prod)),
    Case("jnp.count_nonzero", jnp.count_nonzero, _inputs(ALL), np.count_nonzero),
    # ptp subtracts in the operand's dtype (integers wrap, as NumPy's); booleans
    # cannot be subtracted in either.
    Case("jnp.ptp", jnp.ptp, _inputs(S.INT_DTYPES + FLOAT, nonempty=True), np.ptp),
    Case("jnp.average", jnp.average, _average_inputs, _average),
    Case("jnp.trace", jnp.trace, lambda: _trace_inputs(INEXACT + SMALL_INT + BOOL),
         _w(np.trace)),
]
