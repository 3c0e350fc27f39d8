"""Counting, histograms, covariance, numerical calculus, interpolation and
whole-array comparisons, lowered as JAX's jnp lowers them.

* `bincount` is one `scatter-add` into zeros; histograms find each value's
  bin with `searchsorted` and count with `scatter-add` (`bincount`);
* `cov` centres the rows and contracts them with `dot_general`;
* `gradient`, `trapezoid`, `ediff1d` and `unwrap` are slices and arithmetic;
* `interp` finds intervals with `searchsorted` and gathers their ends.

Output sizes must be static: `bincount` of a traced `x` needs `length=`,
and the number of bins must be concrete.
"""

import builtins
import functools
import math
import operator

import numpy as np

from refimpl import dtypes, lax
from refimpl.api import jit
from refimpl.lax.shapes import canonicalize_axis
from refimpl.numpy import reductions, selection, sorting, ufuncs  # modules: import cycles
from refimpl.numpy.creation import (array, asarray, concrete, ensure_arraylike, linspace,
                                    ones_like, user_dtype, zeros)
from refimpl.numpy.manipulation import (atleast_2d, concatenate, diag, diff, moveaxis,
                                        ravel, reshape, transpose)
from refimpl.numpy.products import dot
from refimpl.numpy.util import (check_arraylike, promote_args_inexact,
                                promote_dtypes_inexact, to_inexact_dtype)
from refimpl.sharding import check_out_sharding

__all__ = ['bincount', 'histogram_bin_edges', 'histogram', 'histogram2d', 'histogramdd',
           'cov', 'corrcoef', 'gradient', 'trapezoid', 'interp', 'ediff1d', 'unwrap',
           'allclose', 'array_equal', 'array_equiv']


# --- counting and histograms ----------------------------------------------------------------

def bincount(x, weights=None, minlength=0, *, length=None, out_sharding=None):
  """`counts[i]`: the number (or summed `weights`) of the entries of 1-D
  integer `x` equal to i; one `scatter-add` into zeros.

  The output length is `length` if given (static; needed under `jit`), else
  `max(minlength, x.max() + 1)` from a concrete `x`. Unlike NumPy, negative
  entries count in bin 0 and entries beyond `length` are dropped. The result
  has the dtype of `weights` (int32 without weights).
  """
  check_out_sharding(out_sharding, "jnp.bincount")
  x = ensure_arraylike("bincount", x)
  if x.dtype == dtypes.bool_:
    x = lax.convert_element_type(x, np.int32)
  if not dtypes.is_integer(x.dtype):
    raise TypeError(f"x argument to bincount must have an integer type; got {x.dtype}")
  if x.ndim != 1:
    raise ValueError("only 1-dimensional input supported.")
  minlength = operator.index(concrete(
      minlength, "The error occurred because of argument 'minlength' of jnp.bincount."))
  if length is None:
    values = concrete(x, "The error occurred because of argument 'x' of jnp.bincount. "
                         "To avoid this error, pass a static `length` argument.")
    length = builtins.max(minlength, values.size and int(builtins.max(0, values.max())) + 1)
  else:
    length = operator.index(concrete(
        length, "The error occurred because of argument 'length' of jnp.bincount."))
  if weights is None:
    weights = np.array(1, dtypes.default_int_dtype())
  elif np.shape(x) != np.shape(weights):
    raise ValueError("shape of weights must match shape of x.")
  return zeros(length, dtypes.dtype(weights)).at[ufuncs.clip(x, 0)].add(weights, mode="drop")


def histogram_bin_edges(a, bins=10, range=None, weights=None):
  """The edges of the histogram bins: `bins` itself if 1-D, else `bins + 1`
  evenly spaced edges over `range` (the data's min and max by default; an
  empty range is widened by 0.5 on each side). `weights` is unused."""
  if isinstance(bins, str):
    raise NotImplementedError("string values for `bins` not implemented.")
  check_arraylike("histogram_bin_edges", a, bins)
  arr = asarray(a)
  dtype = to_inexact_dtype(arr.dtype)
  if np.ndim(bins) == 1:
    return asarray(bins, dtype=dtype)
  bins = operator.index(concrete(bins, "bins argument of histogram_bin_edges"))
  if range is None:
    range = [arr.min(), arr.max()]
  range = asarray(range, dtype=dtype)
  if range.shape != (2,):
    raise ValueError(f"`range` must be either None or a sequence of scalars, got {range}")
  empty = reductions.ptp(range) == 0
  low = ufuncs.where(empty, range[0] - 0.5, range[0])
  high = ufuncs.where(empty, range[1] + 0.5, range[1])
  return linspace(low, high, bins + 1, dtype=dtype)


def histogram(a, bins=10, range=None, weights=None, density=None):
  """(counts, bin_edges) of the values of `a` (any shape) in `bins` bins.

  Each bin is half-open [left, right) except the last, which includes its
  right edge; values outside the edges are not counted. `weights` (the shape
  of `a`) are summed instead of counts; `density` normalizes to a density.
  """
  if weights is None:
    a, _ = ensure_arraylike("histogram", a, bins)
    a, = promote_dtypes_inexact(a)
    weights = ones_like(a)
  else:
    a, _, weights = ensure_arraylike("histogram", a, bins, weights)
    if np.shape(a) != np.shape(weights):
      raise ValueError("weights should have the same shape as a.")
    a, weights = promote_dtypes_inexact(a, weights)
  bin_edges = histogram_bin_edges(a, bins, range, weights)
  bin_idx = sorting.searchsorted(bin_edges, a, side="right")
  bin_idx = ufuncs.where(a == bin_edges[-1], len(bin_edges) - 1, bin_idx)
  counts = zeros(len(bin_edges), weights.dtype).at[bin_idx].add(weights)[1:]
  if density:
    counts = counts / diff(bin_edges) / counts.sum()
  return counts, bin_edges


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):
  """(counts, x_edges, y_edges) of the points (x[i], y[i]); see `histogramdd`."""
  x, y = ensure_arraylike("histogram2d", x, y)
  try:
    n = len(bins)
  except TypeError:
    n = 1
  if n != 1 and n != 2:  # one array of edges for both dimensions
    edges = asarray(bins)
    bins = [edges, edges]
  hist, edges = histogramdd(transpose(asarray([x, y])), bins, range, weights, density)
  return hist, edges[0], edges[1]


def histogramdd(sample, bins=10, range=None, weights=None, density=None):
  """(counts, [edges per dimension]) of the N points `sample` (shape (N, D)).

  `bins` is a count, or one count or edge array per dimension; `range` one
  (min, max) pair or None per dimension. Counts are int32 without weights.
  """
  if weights is None:
    sample = ensure_arraylike("histogramdd", sample)
    sample, = promote_dtypes_inexact(sample)
  else:
    sample, weights = ensure_arraylike("histogramdd", sample, weights)
    if np.shape(weights) != np.shape(sample)[:1]:
      raise ValueError("should have one weight for each sample.")
    sample, weights = promote_dtypes_inexact(sample, weights)
  n, d = sample.shape
  if range is not None and (
      len(range) != d or any(r is not None and np.shape(r)[0] != 2 for r in range)):
    raise ValueError(f"For sample.shape={(n, d)}, range must be a sequence of {d} pairs "
                     f"or Nones; got range={range}")
  try:
    if len(bins) != d:
      raise ValueError("should be a bin for each dimension.")
    bins_per_dim = list(bins)
  except TypeError:  # one bin count for every dimension
    bins_per_dim = d * [bins]
  bin_idx_by_dim, edges_by_dim = [], []
  for i in builtins.range(d):
    edges = histogram_bin_edges(sample[:, i], bins_per_dim[i],
                                None if range is None else range[i], weights)
    bin_idx = sorting.searchsorted(edges, sample[:, i], side="right")
    bin_idx = ufuncs.where(sample[:, i] == edges[-1], bin_idx - 1, bin_idx)
    bin_idx_by_dim.append(bin_idx)
    edges_by_dim.append(edges)
  nbins = tuple(len(edges) + 1 for edges in edges_by_dim)  # with under- and overflow bins
  flat = selection.ravel_multi_index(tuple(bin_idx_by_dim), nbins, mode="clip")
  hist = reshape(bincount(flat, weights, length=math.prod(nbins)), nbins)
  hist = hist[d * (slice(1, -1),)]
  if density:
    hist = hist.astype(sample.dtype)
    hist = hist / hist.sum()
    for width in selection.ix_(*(diff(edges) for edges in edges_by_dim)):
      hist = hist / width
  return hist, edges_by_dim


# --- covariance --------------------------------------------------------------------------------

@functools.partial(jit, static_argnames=("rowvar", "bias", "ddof", "dtype"))
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None,
        dtype=None):
  """The covariance matrix of the variables in the rows of `m` (columns if
  not `rowvar`), with `y`'s stacked below; normalized by N - ddof (ddof is
  1, or 0 with `bias`), with integer frequency and real analytic weights.
  A single variable gives a scalar. With `dtype`, the data are converted to
  it (then to an inexact dtype) first: the result's dtype."""
  if dtype is not None:
    dtype = user_dtype(dtype, "cov")
    m = asarray(m, dtype=dtype)
    y = None if y is None else asarray(y, dtype=dtype)
  if y is not None:
    m, y = promote_args_inexact("cov", m, y)
    if y.ndim > 2:
      raise ValueError("y has more than 2 dimensions")
  else:
    m, = promote_args_inexact("cov", m)
  if m.ndim > 2:
    raise ValueError("m has more than 2 dimensions")
  x = atleast_2d(m)
  if not rowvar and x.shape[0] != 1:
    x = x.T
  if x.shape[0] == 0:
    return array([]).reshape(0, 0)
  if y is not None:
    y = atleast_2d(y)
    if not rowvar and y.shape[0] != 1:
      y = y.T
    x = concatenate((x, y), axis=0)
  if ddof is None:
    ddof = 1 if bias == 0 else 0
  w = None
  if fweights is not None:
    fweights = ensure_arraylike("cov", fweights)
    if fweights.ndim > 1:
      raise RuntimeError("cannot handle multidimensional fweights")
    if fweights.shape[0] != x.shape[1]:
      raise RuntimeError("incompatible numbers of samples and fweights")
    if not dtypes.is_integer(fweights.dtype):
      raise TypeError("fweights must be integer.")
    w = abs(fweights)  # NumPy raises for negative weights
  if aweights is not None:
    aweights = ensure_arraylike("cov", aweights)
    if aweights.ndim > 1:
      raise RuntimeError("cannot handle multidimensional aweights")
    if aweights.shape[0] != x.shape[1]:
      raise RuntimeError("incompatible numbers of samples and aweights")
    aweights = abs(aweights)
    w = aweights if w is None else w * aweights
  avg, w_sum = reductions.average(x, axis=1, weights=w, returned=True)
  w_sum = w_sum[0]
  if w is None:
    f = x.shape[1] - ddof
  elif ddof == 0:
    f = w_sum
  elif aweights is None:
    f = w_sum - ddof
  else:
    f = w_sum - ddof * reductions.sum(w * aweights) / w_sum
  x = x - avg[:, None]
  x_t = x.T if w is None else (x * lax.broadcast_to_rank(w, x.ndim)).T
  return ufuncs.true_divide(dot(x, x_t.conj()), f).squeeze()


@functools.partial(jit, static_argnames=("rowvar", "dtype"))
def corrcoef(x, y=None, rowvar=True, dtype=None):
  """Pearson correlation coefficients: `cov` (of `dtype`, as there) normalized by
  the standard deviations, clipped to [-1, 1] (each part, for complex values)."""
  check_arraylike("corrcoef", x)
  c = cov(x, y, rowvar, dtype=dtype)
  if c.ndim == 0:  # one variable: 1, or NaN for nan/inf/zero variance
    return ufuncs.divide(c, c)
  stddev = ufuncs.sqrt(ufuncs.real(diag(c))).astype(c.dtype)
  c = c / stddev[:, None] / stddev[None, :]
  real_part = ufuncs.clip(ufuncs.real(c), -1, 1)
  if dtypes.is_complex(c.dtype):
    return lax.complex(real_part, ufuncs.clip(ufuncs.imag(c), -1, 1))
  return real_part


# --- differences, derivatives and integrals ---------------------------------------------------

@jit
def ediff1d(ary, to_end=None, to_begin=None):
  """Differences of consecutive elements of the flattened `ary`, with
  `to_begin` and `to_end` (cast to its dtype) joined before and after."""
  arr = ensure_arraylike("ediff1d", ary).ravel()
  result = lax.sub(arr[1:], arr[:-1])
  if to_begin is not None:
    to_begin = ensure_arraylike("ediff1d", to_begin)
    result = concatenate((ravel(to_begin.astype(arr.dtype)), result))
  if to_end is not None:
    to_end = ensure_arraylike("ediff1d", to_end)
    result = concatenate((result, ravel(to_end.astype(arr.dtype))))
  return result


@functools.partial(jit, static_argnames=("axis", "edge_order"))
def gradient(f, *varargs, axis=None, edge_order=None):
  """The numerical gradient of sampled `f`: second-order central differences
  inside, first-order one-sided differences at the edges.

  `varargs`: nothing (unit spacing), one spacing for every axis, or one per
  axis, each a scalar spacing or the 1-D coordinates along that axis. An
  array for one axis, a list of arrays for several.
  """
  if edge_order is not None:
    raise NotImplementedError("The 'edge_order' argument to jnp.gradient is not supported.")
  check_arraylike("gradient", f, *varargs)
  a, *spacing = promote_dtypes_inexact(f, *varargs)

  def along_axis(a, h, axis):
    sliced = lambda start, stop: lax.slice_in_dim(a, start, stop, axis=axis)
    upper_edge = sliced(1, 2) - sliced(0, 1)
    lower_edge = sliced(-1, None) - sliced(-2, -1)
    if np.ndim(h) == 0:
      inner = (sliced(2, None) - sliced(None, -2)) * 0.5 / h
      lower_edge = lower_edge / h
      upper_edge = upper_edge / h
    elif np.ndim(h) == 1:
      if len(h) != a.shape[axis]:
        raise ValueError("Spacing arrays must have the same length as the dimension along "
                         "which the gradient is calculated.")
      h_shape = [1] * a.ndim
      h_shape[axis] = len(h)
      h = h.reshape(h_shape)
      sliced_h = lambda start, stop: lax.slice_in_dim(h, start, stop, axis=axis)
      upper_edge = upper_edge / (sliced_h(1, 2) - sliced_h(0, 1))
      lower_edge = lower_edge / (sliced_h(-1, None) - sliced_h(-2, -1))
      dx1 = sliced_h(1, -1) - sliced_h(0, -2)
      dx2 = sliced_h(2, None) - sliced_h(1, -1)
      coef_before = -dx2 / (dx1 * (dx1 + dx2))
      coef_here = (dx2 - dx1) / (dx1 * dx2)
      coef_after = dx1 / (dx2 * (dx1 + dx2))
      inner = (coef_before * sliced(0, -2) + coef_here * sliced(1, -1)
               + coef_after * sliced(2, None))
    else:
      raise ValueError("Spacing arrays must be 1D arrays or scalars.")
    return concatenate((upper_edge, inner, lower_edge), axis=axis)

  if axis is None:
    axes = tuple(range(a.ndim))
  else:
    axes = tuple(canonicalize_axis(i, a.ndim) for i in (
        (axis,) if np.ndim(axis) == 0 else axis))
  if not axes:
    return []
  if builtins.min(a.shape[i] for i in axes) < 2:
    raise ValueError("Shape of array too small to calculate a numerical gradient, at "
                     "least 2 elements are required.")
  if not spacing:
    dx = [1.0] * len(axes)
  elif len(spacing) == 1:
    dx = spacing * len(axes)
  elif len(spacing) == len(axes):
    dx = spacing
  else:
    raise TypeError(f"Invalid number of spacing arguments {len(spacing)} for axis={axis}")
  grads = [along_axis(a, h, ax) for ax, h in zip(axes, dx)]
  return grads[0] if len(axes) == 1 else grads


@functools.partial(jit, static_argnames=("axis",))
def trapezoid(y, x=None, dx=1.0, axis=-1):
  """The integral of `y` along `axis` by the trapezoidal rule, at sample
  points `x` (1-D, or the shape of `y`) or with constant spacing `dx`."""
  if x is None:
    y = ensure_arraylike("trapezoid", y)
    y, = promote_dtypes_inexact(y)
    dx = asarray(dx)
  else:
    y, x = ensure_arraylike("trapezoid", y, x)
    y, x = promote_dtypes_inexact(y, x)
    dx = diff(x) if x.ndim == 1 else moveaxis(diff(x, axis=axis), axis, -1)
  y = moveaxis(y, axis, -1)
  return 0.5 * (dx * (y[..., 1:] + y[..., :-1])).sum(-1)


@functools.partial(jit, static_argnames=("axis",))
def unwrap(p, discont=None, axis=-1, period=2 * np.pi):
  """`p` with jumps larger than `discont` (default period / 2) between
  neighbours along `axis` replaced by their complement modulo `period`."""
  p = ensure_arraylike("unwrap", p)
  if dtypes.is_complex(p.dtype):
    raise ValueError("jnp.unwrap does not support complex inputs.")
  if p.shape[axis] == 0:
    return promote_dtypes_inexact(p)[0]
  if discont is None:
    discont = period / 2
  interval = period / 2
  dd = diff(p, axis=axis)
  ddmod = ufuncs.mod(dd + interval, period) - interval
  ddmod = ufuncs.where((ddmod == -interval) & (dd > 0), interval, ddmod)
  correction = ufuncs.where(ufuncs.abs(dd) < discont, 0, ddmod - dd)
  return concatenate((
      lax.slice_in_dim(p, 0, 1, axis=axis),
      lax.slice_in_dim(p, 1, None, axis=axis) + reductions.cumsum(correction, axis=axis),
  ), axis=axis)


# --- interpolation ----------------------------------------------------------------------------

def interp(x, xp, fp, left=None, right=None, period=None):
  """Piecewise-linear interpolation of the points (xp, fp) at `x`.

  `xp` must be increasing (unless `period` is given: then all three are taken
  modulo the period and `left`/`right` are ignored). Below `xp[0]` the result
  is `left` (default fp[0]), above `xp[-1]` it is `right` (default fp[-1]);
  either may be "extrapolate". Equal neighbouring `xp` give the left value.
  """
  static = [name for name, value in (("left", left), ("right", right))
            if value is None or isinstance(value, str)]
  if period is None:
    static.append("period")
  return jit(_interp, static_argnames=tuple(static))(x, xp, fp, left, right, period)


def _interp(x, xp, fp, left, right, period):
  x, xp, fp = ensure_arraylike("interp", x, xp, fp)
  if xp.shape != fp.shape or xp.ndim != 1:
    raise ValueError("xp and fp must be one-dimensional arrays of equal size")
  x, xp = promote_dtypes_inexact(x, xp)
  fp, = promote_dtypes_inexact(fp)
  extrapolate = {}
  for name, value in (("left", left), ("right", right)):
    if isinstance(value, str) and value != "extrapolate":
      raise ValueError(f"the only valid string value of `{name}` is 'extrapolate', but "
                       f"got: {value!r}")
    extrapolate[name] = isinstance(value, str)
  if dtypes.is_complex(x.dtype):
    raise ValueError("jnp.interp: complex x values not supported.")
  if period is not None:
    if np.ndim(period) != 0:
      raise ValueError(f"period must be a scalar; got {period}")
    period = ufuncs.abs(period)
    x = x % period
    xp = xp % period
    xp, fp = lax.sort_key_val(xp, fp)
    xp = concatenate([xp[-1:] - period, xp, xp[:1] + period])
    fp = concatenate([fp[-1:], fp, fp[:1]])
  i = ufuncs.clip(sorting.searchsorted(xp, x, side="right"), 1, len(xp) - 1)
  df = fp[i] - fp[i - 1]
  dx = xp[i] - xp[i - 1]
  delta = x - xp[i - 1]
  epsilon = np.spacing(dtypes.finfo(xp.dtype).eps)
  dx0 = lax.abs(dx) <= epsilon  # equal neighbours: avoid dividing by ~0
  f = ufuncs.where(dx0, fp[i - 1], fp[i - 1] + (delta / ufuncs.where(dx0, 1, dx)) * df)
  if not extrapolate["left"] and period is None:
    f = ufuncs.where(x < xp[0], fp[0] if left is None else left, f)
  if not extrapolate["right"] and period is None:
    f = ufuncs.where(x > xp[-1], fp[-1] if right is None else right, f)
  return f


# --- whole-array comparisons ------------------------------------------------------------------

@functools.partial(jit, static_argnames=("equal_nan",))
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
  """Whether `isclose(a, b, ...)` holds everywhere (a bool scalar array)."""
  check_arraylike("allclose", a, b)
  return reductions.all(ufuncs.isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan=False):
  """Whether `a1` and `a2` have the same shape and equal elements (NaNs equal
  each other only with `equal_nan`)."""
  a1, a2 = asarray(a1), asarray(a2)
  if a1.shape != a2.shape:
    return array(False, dtype=bool)
  eq = asarray(a1 == a2)
  if equal_nan:
    eq = ufuncs.logical_or(eq, ufuncs.logical_and(ufuncs.isnan(a1), ufuncs.isnan(a2)))
  return reductions.all(eq)


def array_equiv(a1, a2):
  """Whether `a1` and `a2` broadcast together and are equal everywhere
  (False for shapes that do not broadcast)."""
  a1, a2 = asarray(a1), asarray(a2)
  try:
    np.broadcast_shapes(a1.shape, a2.shape)
  except ValueError:
    return array(False)
  return reductions.all(ufuncs.equal(a1, a2))
