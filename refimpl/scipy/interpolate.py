"""`refimpl.scipy.interpolate`: interpolation on a rectilinear grid, as `jax.scipy.interpolate`.

`RegularGridInterpolator` is a pytree (grid, values and fill value are its
leaves), so it can be passed through jit and vmap. As in JAX, each grid axis
must be strictly increasing (a decreasing axis gives wrong results without
an error), `bounds_error=True` is not implemented, and points outside the
grid get `fill_value` (NaN by default; None extrapolates).
"""

import itertools

import numpy as np

from refimpl.numpy import asarray, broadcast_arrays, can_cast, empty, searchsorted, where, zeros
from refimpl.numpy.util import check_arraylike, promote_dtypes_inexact
from refimpl.tree_util import register_pytree_node

__all__ = ["RegularGridInterpolator"]


def _ndim_coords_from_arrays(points, ndim=None):
  """Sample points as one (..., ndim) array: a tuple of coordinate arrays is
  broadcast and stacked on a new last axis; a 1-D array becomes (-1, ndim)."""
  if isinstance(points, tuple) and len(points) == 1:
    points = points[0]
  if isinstance(points, tuple):
    p = broadcast_arrays(*points)
    stacked = empty(p[0].shape + (len(points),), dtype=float)
    for j, item in enumerate(p):
      stacked = stacked.at[..., j].set(item)
    return stacked
  check_arraylike("_ndim_coords_from_arrays", points)
  points = asarray(points)
  if points.ndim == 1:
    points = points.reshape(-1, 1) if ndim is None else points.reshape(-1, ndim)
  return points


class RegularGridInterpolator:
  """Interpolation ('linear' or 'nearest') of `values` given on the grid `points`
  (one strictly increasing 1-D array per leading axis of `values`); calling it on
  sample points of shape (..., ndim) gives (...) + values.shape[ndim:]. Values are
  promoted to an inexact dtype; `fill_value` must cast to it ('same_kind')."""

  def __init__(self, points, values, method="linear", bounds_error=False, fill_value=np.nan):
    if method not in ("linear", "nearest"):
      raise ValueError(f"method {method!r} is not defined")
    self.method = method
    self.bounds_error = bounds_error
    if self.bounds_error:
      raise NotImplementedError("`bounds_error` takes no effect under JIT")
    check_arraylike("RegularGridInterpolator", values)
    if len(points) > values.ndim:
      raise ValueError(f"there are {len(points)} point arrays, but values has {values.ndim} "
                       "dimensions")
    values, = promote_dtypes_inexact(values)
    if fill_value is not None:
      check_arraylike("RegularGridInterpolator", fill_value)
      fill_value = asarray(fill_value)
      if not can_cast(fill_value.dtype, values.dtype, casting='same_kind'):
        raise ValueError("fill_value must be either 'None' or of a type compatible with values")
    self.fill_value = fill_value
    check_arraylike("RegularGridInterpolator", *points)
    self.grid = tuple(asarray(p) for p in points)
    self.values = values

  def __call__(self, xi, method=None):
    """The interpolated values at the sample points `xi` (method overrides the default)."""
    method = self.method if method is None else method
    if method not in ("linear", "nearest"):
      raise ValueError(f"method {method!r} is not defined")
    ndim = len(self.grid)
    xi = _ndim_coords_from_arrays(xi, ndim=ndim)
    if xi.shape[-1] != len(self.grid):
      raise ValueError("the requested sample points xi have dimension"
                       f" {xi.shape[1]}, but this RegularGridInterpolator has"
                       f" dimension {ndim}")
    xi_shape = xi.shape
    xi = xi.reshape(-1, xi_shape[-1])
    indices, norm_distances, out_of_bounds = self._find_indices(xi.T)
    if method == "linear":
      result = self._evaluate_linear(indices, norm_distances)
    else:
      result = self._evaluate_nearest(indices, norm_distances)
    if self.fill_value is not None:
      bc_shape = result.shape[:1] + (1,) * (result.ndim - 1)
      result = where(out_of_bounds.reshape(bc_shape), self.fill_value, result)
    return result.reshape(xi_shape[:-1] + self.values.shape[ndim:])

  def _evaluate_linear(self, indices, norm_distances):
    """The sum over the cell's 2^ndim corners of value times the product of the
    1-D weights (1 - t at the lower corner, t at the upper)."""
    vslice = (slice(None),) + (None,) * (self.values.ndim - len(indices))
    values = asarray(0.)
    for edge_indices in itertools.product(*[[i, i + 1] for i in indices]):
      weight = asarray(1.)
      for ei, i, yi in zip(edge_indices, indices, norm_distances):
        weight = weight * where(ei == i, 1 - yi, yi)
      values = values + self.values[edge_indices] * weight[vslice]
    return values

  def _evaluate_nearest(self, indices, norm_distances):
    """The value at the nearer corner along each axis (the lower one on ties)."""
    idx = [where(yi <= .5, i, i + 1) for i, yi in zip(indices, norm_distances)]
    return self.values[tuple(idx)]

  def _find_indices(self, xi):
    """Per axis: the lower cell edge's index (clipped to the grid's cells), the
    distance from it in cell widths; and whether each point is outside the grid."""
    indices = []
    norm_distances = []
    out_of_bounds = zeros((xi.shape[1],), dtype=bool)
    for x, g in zip(xi, self.grid):
      i = searchsorted(g, x) - 1
      i = where(i < 0, 0, i)
      i = where(i > g.size - 2, g.size - 2, i)
      indices.append(i)
      norm_distances.append((x - g[i]) / (g[i + 1] - g[i]))
      out_of_bounds = out_of_bounds | (x < g[0]) | (x > g[-1])
    return indices, norm_distances, out_of_bounds


register_pytree_node(
    RegularGridInterpolator,
    lambda obj: ((obj.grid, obj.values, obj.fill_value), (obj.method, obj.bounds_error)),
    lambda aux, children: RegularGridInterpolator(*children[:2], *aux, *children[2:]),
)
