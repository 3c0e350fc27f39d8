"""Tests of refimpl/scipy/interpolate.py: RegularGridInterpolator against
scipy.interpolate (linear and nearest, fill values, trailing value dimensions, tuple
sample points), JAX's documented example, errors, and use as a pytree under jit and vmap."""

import numpy as np
import pytest
import scipy.interpolate
from hypothesis import given, strategies as st

import refimpl as jax
from refimpl.config import enable_x64
from refimpl.scipy.interpolate import RegularGridInterpolator
from conformance import strategies as S


def _grid(draw, ndim):
  """Strictly increasing grid axes of 2-4 points with spacings of at least 0.25."""
  axes = []
  for _ in range(ndim):
    steps = draw(st.lists(st.floats(0.25, 2), min_size=1, max_size=3))
    axes.append(draw(st.floats(-3, 3)) + np.concatenate([[0.0], np.cumsum(steps)]))
  return tuple(axes)


@given(data=st.data(), method=st.sampled_from(["linear", "nearest"]),
       fill_value=st.sampled_from([np.nan, None, -2.0]))
def test_matches_scipy(data, method, fill_value):
  ndim = data.draw(st.integers(1, 3))
  grid = _grid(data.draw, ndim)
  trailing = data.draw(st.sampled_from([(), (2,)]))
  values = data.draw(S.arrays(np.float64, tuple(len(g) for g in grid) + trailing,
                              elements=st.floats(-10, 10)))
  # Points inside and outside the grid, away from the midpoints where nearest breaks ties.
  lo, hi = [g[0] - 1 for g in grid], [g[-1] + 1 for g in grid]
  xi = np.stack([data.draw(S.arrays(np.float64, (6,), elements=st.floats(l, h)))
                 for l, h in zip(lo, hi)], axis=-1)
  reference = scipy.interpolate.RegularGridInterpolator(
      grid, values, method=method, bounds_error=False, fill_value=fill_value)
  with enable_x64():
    actual = RegularGridInterpolator(grid, values, method, fill_value=fill_value)(xi)
  if method == "nearest":
    cells = [np.clip(np.searchsorted(g, x) - 1, 0, len(g) - 2) for g, x in zip(grid, xi.T)]
    mid = [abs(x - (g[c] + g[c + 1]) / 2) < 1e-9 for g, x, c in zip(grid, xi.T, cells)]
    keep = ~np.any(mid, axis=0)
    actual, xi = np.asarray(actual)[keep], xi[keep]
  np.testing.assert_allclose(actual, reference(xi), rtol=1e-12, atol=1e-12)


def test_documented_example_and_call_forms():
  points = (np.array([1, 2, 3]), np.array([4, 5, 6]))
  values = np.array([[10, 20, 30], [40, 50, 60], [70, 80, 90]])
  interpolate = RegularGridInterpolator(points, values, method='linear')
  query = np.array([[1.5, 4.5], [2.2, 5.8]])
  out = interpolate(query)
  assert out.dtype == np.float32
  np.testing.assert_allclose(out, [30., 64.], rtol=1e-6)
  np.testing.assert_allclose(interpolate((query[:, 0], query[:, 1])), [30., 64.], rtol=1e-6)
  np.testing.assert_allclose(interpolate(query, method="nearest"), [10., 60.])
  assert interpolate(np.zeros((2, 3, 2)) + 2).shape == (2, 3)
  assert np.isnan(interpolate(np.array([[0.5, 5.0]]))).all()


def test_errors():
  points, values = (np.arange(3.0),), np.arange(3.0)
  with pytest.raises(ValueError, match="method 'cubic' is not defined"):
    RegularGridInterpolator(points, values, method="cubic")
  with pytest.raises(NotImplementedError, match="bounds_error"):
    RegularGridInterpolator(points, values, bounds_error=True)
  with pytest.raises(ValueError, match="there are 2 point arrays"):
    RegularGridInterpolator(points * 2, values)
  with pytest.raises(ValueError, match="fill_value must be either 'None' or of a type"):
    RegularGridInterpolator(points, values, fill_value=1j)
  with pytest.raises(ValueError, match="method 'cubic' is not defined"):
    RegularGridInterpolator(points, values)(np.zeros((1, 1)), method="cubic")
  with pytest.raises(ValueError, match="have dimension 2"):
    RegularGridInterpolator(points, values)(np.zeros((1, 2)))


def test_pytree_under_jit_vmap_and_grad():
  grid = (np.array([0.0, 1.0, 2.0]), np.array([0.0, 2.0]))
  values = np.array([[0.0, 2.0], [1.0, 3.0], [4.0, 6.0]], np.float32)
  interp = RegularGridInterpolator(grid, values)
  leaves, treedef = jax.tree_util.tree_flatten(interp)
  assert len(leaves) == 4
  rebuilt = jax.tree_util.tree_unflatten(treedef, leaves)
  assert (rebuilt.method, rebuilt.bounds_error) == ("linear", False)
  xi = np.array([[0.5, 1.0], [1.5, 0.5]], np.float32)
  np.testing.assert_allclose(jax.jit(lambda f, x: f(x))(interp, xi), interp(xi))
  scaled = jax.vmap(lambda v: RegularGridInterpolator(grid, v)(xi))(np.stack([values, 2 * values]))
  np.testing.assert_allclose(scaled, [interp(xi), 2 * np.asarray(interp(xi))], rtol=1e-6)
  # At (0.5, 1.0): d/dx = values[1] - values[0] = 1, d/dy = (values[:, 1] - values[:, 0]) / 2 = 1.
  grad = jax.grad(lambda p: interp(p[None])[0])(xi[0])
  np.testing.assert_allclose(grad, [1.0, 1.0], rtol=1e-6)
