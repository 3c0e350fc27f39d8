"""Cases for the windowed reductions (lax.reduce_window).

`numpy_reduce_window` is reduce_window written out from its definition
(loops over every output element and window position), the formula the
reference must agree with; the tests use it too.
"""

import itertools

import numpy as np
from hypothesis import strategies as st

from refimpl import dtypes, lax
from refimpl.lax import windows
from conformance import strategies as S
from conformance.autodiff import ADCase
from conformance.cases import Case


def resolve_padding(padding, shape, window_dimensions, window_strides, window_dilation):
  """(lo, hi) pairs for 'VALID'/'SAME'/'SAME_LOWER', computed as lax.reduce_window
  does: for the window-dilated window over the undilated operand."""
  if not isinstance(padding, str):
    return padding
  pads = []
  for d, w, s, r in zip(shape, window_dimensions, window_strides, window_dilation):
    total = 0 if padding == "VALID" else max(0, (-(-d // s) - 1) * s + 1 + r * (w - 1) - d)
    small, large = total // 2, total - total // 2
    pads.append((large, small) if padding == "SAME_LOWER" else (small, large))
  return pads


def numpy_reduce_window(x, init, fold, window_dimensions, window_strides, padding,
                        base_dilation, window_dilation):
  """Each output element folds `acc = fold(acc, element)` from `init` over the
  operand elements under its window, in row-major window order.

  Window position k of output i is dilated-and-padded position
  `i * stride + k * window_dilation`; it holds operand element `q // b`
  where `q = position - lo` satisfies `0 <= q < dilated size` and `q % b == 0`,
  and nothing otherwise (holes and padding are skipped).
  """
  x = np.asarray(x)
  padding = resolve_padding(padding, x.shape, window_dimensions, window_strides,
                            window_dilation)
  dilated = [1 + b * (d - 1) if d else 0 for d, b in zip(x.shape, base_dilation)]
  out_shape = [max(0, (dd + lo + hi - (1 + r * (w - 1))) // s + 1)
               for dd, (lo, hi), w, r, s in zip(dilated, padding, window_dimensions,
                                                window_dilation, window_strides)]
  out = np.empty(out_shape, x.dtype)
  for i in itertools.product(*map(range, out_shape)):
    acc = init
    for k in itertools.product(*map(range, window_dimensions)):
      q = [ii * s + kk * r - lo for ii, kk, s, r, (lo, _)
           in zip(i, k, window_strides, window_dilation, padding)]
      if all(0 <= qq < dd and qq % b == 0 for qq, dd, b in zip(q, dilated, base_dilation)):
        acc = fold(acc, x[tuple(qq // b for qq, b in zip(q, base_dilation))])
    out[i] = acc
  return out


def _identity(kind, dtype):
  """The identity of `kind` (sum, max, min or prod) in `dtype`, as a 0-d array."""
  dtype = np.dtype(dtype)
  if kind == "sum":
    return np.zeros((), dtype)
  if kind == "prod":
    return np.ones((), dtype)
  if dtype == np.bool_:
    return np.asarray(kind == "min")
  limits = dtypes.iinfo(dtype) if dtypes.is_integer(dtype) else None
  if kind == "max":
    return np.asarray(-np.inf if limits is None else limits.min, dtype)
  return np.asarray(np.inf if limits is None else limits.max, dtype)


def _wide(dtype):
  return np.complex128 if dtypes.is_complex(dtype) else np.float64 \
      if dtypes.is_float(dtype) else np.int64


# computation, fold in NumPy (acc in the dtype `_wide` gives for sums)
_MONOIDS = {
    "sum": (lax.add, lambda acc, x: acc + x.astype(_wide(x.dtype))),
    "max": (lax.max, lambda acc, x: np.maximum(acc, x)),
    "min": (lax.min, lambda acc, x: np.minimum(acc, x)),
    "prod": (lax.mul, lambda acc, x: acc * x),
}


def _case(kind, dtype_list, arrays, max_dims=3, max_side=4):
  """lax.reduce_window with lax.add/max/min (lowering to reduce_window_sum/max/min)
  or lax.mul (the generic reduce_window), init value the identity."""
  computation, fold = _MONOIDS[kind]

  def fn(x, **params):
    return lax.reduce_window(x, _identity(kind, x.dtype), computation, **params)

  def expected(x, **params):
    return numpy_reduce_window(x, _identity(kind, x.dtype), fold, **params)

  def inputs():
    shapes = S.shapes(min_dims=1, max_dims=max_dims, max_side=max_side)
    return st.tuples(st.sampled_from(dtype_list), shapes).flatmap(
        lambda ds: st.tuples(st.tuples(arrays(*ds)), S.window_params(ds[1])))

  return Case(f"lax.reduce_window ({kind})", fn, inputs, expected)


ORDERED = S.BOOL_DTYPES + S.INT_DTYPES + S.FLOAT_DTYPES

CASES = [
    _case("sum", S.INT_DTYPES + S.FLOAT_DTYPES + S.COMPLEX_DTYPES, S.small_integer_arrays),
    _case("max", ORDERED, S.arrays),
    _case("min", ORDERED, S.arrays),
    _case("prod", S.INT_DTYPES + S.FLOAT_DTYPES, S.arrays, max_dims=2, max_side=3),
]


# --- derivatives --------------------------------------------------------------------
# max/min: operands without ties (`S.distinct_arrays`), every window holding an
# element (an empty window's -inf has no derivative); JAX's VJP of max/min
# has no window dilation.

def _every_window_has_an_element(shape, params):
  params = dict(params, padding=resolve_padding(
      params["padding"], shape, params["window_dimensions"], params["window_strides"],
      params["window_dilation"]))
  is_element = windows._is_element(shape, **params)
  return bool(is_element.any(axis=windows._window_axes(len(shape))).all())


@st.composite
def _window_ad_inputs(draw, arrays, max_dims=3, max_side=4, nonempty=False,
                      window_dilation=True):
  shape = draw(S.shapes(min_dims=1, max_dims=max_dims, min_side=1, max_side=max_side))
  params = S.window_params(shape, max_dilation=2)
  if not window_dilation:
    params = params.map(lambda p: dict(p, window_dilation=(1,) * len(shape)))
  if nonempty:
    params = params.filter(lambda p: _every_window_has_an_element(shape, p))
  return (draw(arrays(shape)),), draw(params)


def _reduce_window_fn(kind):
  computation, _ = _MONOIDS[kind]
  return lambda x, **params: lax.reduce_window(x, _identity(kind, x.dtype), computation,
                                               **params)


def _pair_computation(acc, x):
  """A generic two-operand reduction, not commutative: (s, p) <- (s * b + a, p * b)."""
  return acc[0] * x[1] + x[0], acc[1] * x[1]


def _reduce_window_pair(a, b, **params):
  return lax.reduce_window((a, b), (np.float64(0), np.float64(1)), _pair_computation,
                           **params)


@st.composite
def _pair_inputs(draw):
  shape = draw(S.shapes(min_dims=1, max_dims=2, min_side=1, max_side=3))
  arrays = [draw(S.bounded_arrays(np.float64, shape)) for _ in range(2)]
  return tuple(arrays), draw(S.window_params(shape, max_window=2))


_BOUNDED = lambda shape: S.bounded_arrays(np.float64, shape)

AD_CASES = [
    ADCase("lax.reduce_window (sum)", _reduce_window_fn("sum"),
           lambda: _window_ad_inputs(_BOUNDED), ("reduce_window_sum",), order=2),
    ADCase("lax.reduce_window (max)", _reduce_window_fn("max"),
           lambda: _window_ad_inputs(S.distinct_arrays, nonempty=True, window_dilation=False),
           ("reduce_window_max",), order=2),
    ADCase("lax.reduce_window (min)", _reduce_window_fn("min"),
           lambda: _window_ad_inputs(S.distinct_arrays, nonempty=True, window_dilation=False),
           ("reduce_window_min",)),
    ADCase("lax.reduce_window (max, window dilation)", _reduce_window_fn("max"),
           lambda: _window_ad_inputs(S.distinct_arrays, nonempty=True),
           ("reduce_window_max",), modes=("fwd",)),
    # JAX has no reverse mode for the generic reduce_window (its JVP reduces
    # primals and tangents together, so the primal output needs the tangents).
    ADCase("lax.reduce_window (prod)", _reduce_window_fn("prod"),
           lambda: _window_ad_inputs(_BOUNDED, max_dims=2, max_side=3), ("reduce_window",),
           modes=("fwd",), order=2),
    ADCase("lax.reduce_window (two operands)", _reduce_window_pair, _pair_inputs,
           ("reduce_window",), modes=("fwd",)),
]
