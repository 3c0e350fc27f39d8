"""The numba backend's reductions agree with the reference rules bit for bit.

One program per test and dtype applies the reductions over several axis
sets of a rank-3 operand (hypothesis shapes, empty and size-1 axes
included, so the program compiles once per dtype). Float sums match the
reference exactly: the backend adds in NumPy's pairwise order (long rows
exercise its blocks of 128 and the recursion).
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from refimpl import dtypes, lax
from conformance import strategies as cst
from tests.numba_backend.test_elementwise import check, run_x64

pytest.importorskip("numba")

SETTINGS = settings(max_examples=10, deadline=None)
RANK3 = cst.shapes(min_dims=3, max_dims=3)
AXES = [(), (0,), (2,), (0, 2), (1, 2), (0, 1, 2)]
X64 = [np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.uint64), np.dtype(np.complex128)]
ALL = [*cst.ALL_DTYPES, *X64]


def arrays(dtype, shape):
  if dtypes.is_integer(dtype):
    info = np.iinfo(dtype)
    extreme = st.sampled_from([int(info.min), int(info.max), int(info.max) - 1, 0, 1])
    return cst.arrays(dtype, shape, elements=st.one_of(
        extreme, st.integers(int(info.min), int(info.max))))
  return cst.arrays(dtype, shape)


def reductions(dtype):
  """name -> reduction of an array of `dtype` (the ones defined for it)."""
  out = {}
  for axes in AXES:
    if not dtypes.is_bool(dtype):
      out[f"sum{axes}"] = lambda x, axes=axes: lax.reduce_sum(x, axes)
      out[f"prod{axes}"] = lambda x, axes=axes: lax.reduce_prod(x, axes)
    out[f"max{axes}"] = lambda x, axes=axes: lax.reduce_max(x, axes)
    out[f"min{axes}"] = lambda x, axes=axes: lax.reduce_min(x, axes)
    if dtypes.is_integer(dtype) or dtypes.is_bool(dtype):
      out[f"and{axes}"] = lambda x, axes=axes: lax.reduce_and(x, axes)
      out[f"or{axes}"] = lambda x, axes=axes: lax.reduce_or(x, axes)
      out[f"xor{axes}"] = lambda x, axes=axes: lax.reduce_xor(x, axes)
  return out


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: np.dtype(d).name)
@SETTINGS
@given(data=st.data())
def test_reductions(dtype, data):
  x = data.draw(arrays(dtype, RANK3))
  fns = reductions(dtype)
  run_x64(dtype, lambda: check(lambda x: [f(x) for f in fns.values()], list(fns), x))


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: np.dtype(d).name)
@SETTINGS
@given(data=st.data())
def test_argmax_argmin(dtype, data):
  """First index of the extremum; the first NaN wins; int32 and int8 indices."""
  x = data.draw(arrays(dtype, cst.shapes(min_dims=3, max_dims=3, min_side=1)))
  fns = {f"{name}{axis}": (lambda x, f=f, axis=axis: f(x, axis, np.int32 if axis else np.int8))
         for name, f in (("argmax", lax.argmax), ("argmin", lax.argmin)) for axis in range(3)}
  run_x64(dtype, lambda: check(lambda x: [f(x) for f in fns.values()], list(fns), x))


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: np.dtype(d).name)
@SETTINGS
@given(data=st.data())
def test_cumulative(dtype, data):
  x = data.draw(arrays(dtype, RANK3))
  fns = {}
  for axis in range(3):
    for reverse in (False, True):
      ops = [("cummax", lax.cummax), ("cummin", lax.cummin)]
      if not dtypes.is_bool(dtype):
        ops += [("cumsum", lax.cumsum), ("cumprod", lax.cumprod)]
      if dtypes.is_float(dtype):
        ops += [("cumlogsumexp", lax.cumlogsumexp)]
      for name, f in ops:
        fns[f"{name}{axis}{'r' if reverse else ''}"] = (
            lambda x, f=f, axis=axis, reverse=reverse: f(x, axis, reverse))
  run_x64(dtype, lambda: check(lambda x: [f(x) for f in fns.values()], list(fns), x))


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float64),
                                   np.dtype(np.complex128), dtypes.bfloat16],
                         ids=lambda d: np.dtype(d).name)
@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(100, 20000), m=st.integers(1, 300))
def test_long_sums(dtype, seed, n, m):
  """Rows long enough for NumPy's pairwise blocks and its recursion."""
  rng = np.random.default_rng(seed)
  x = rng.standard_normal((2, n, 3)) * 10.0 ** rng.integers(-5, 5, (2, n, 3))
  if dtypes.is_complex(dtype):
    x = x + 1j * rng.standard_normal(x.shape)
  x = x.astype(dtype)
  y = x[:, :m].reshape(-1)
  names = ["sum(1)", "sum(2)", "sum(0,1)", "sum(1,2)", "sum(all)", "sum(flat)", "cumsum"]
  program = lambda x, y: [lax.reduce_sum(x, (1,)), lax.reduce_sum(x, (2,)),
                          lax.reduce_sum(x, (0, 1)), lax.reduce_sum(x, (1, 2)),
                          lax.reduce_sum(x, (0, 1, 2)), lax.reduce_sum(y, (0,)),
                          lax.cumsum(x, 1)]
  run_x64(dtype, lambda: check(program, names, x, y))


def _fold_in_order(row, largest):
  """The fold of `row` from -inf (inf) by NaN-propagating max (min), first
  element first, as NumPy's maximum (minimum) folds: of equal values the later."""
  acc = -np.inf if largest else np.inf
  for v in row:
    if acc != acc:
      break
    if v != v or (v >= acc if largest else v <= acc):
      acc = v
  return acc


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float64), dtypes.float16],
                         ids=lambda d: np.dtype(d).name)
@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(0, 200),
       special=st.sampled_from([0.0, 0.02, 0.3]))
def test_max_min_fold_rows_in_order(dtype, seed, m, special):
  """Float max and min over rows long enough for the vector lanes give the
  in-order fold's result, the signs of a zero and of a NaN included
  (docs/backends.md, "Tolerances")."""
  import refimpl as jax
  rng = np.random.default_rng(seed)
  x = rng.standard_normal((6, m))
  x[0] = rng.choice([-1.0, 0.0, -0.0], m)   # a zero maximum, of either sign
  x[1] = rng.choice([1.0, 0.0, -0.0], m)   # a zero minimum
  mask = rng.random(x.shape) < special
  x[mask] = rng.choice([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf], mask.sum())
  x = x.astype(dtype)
  for largest, reduce in [(True, lax.reduce_max), (False, lax.reduce_min)]:
    out = run_x64(dtype, lambda: np.asarray(
        jax.jit(lambda x: reduce(x, (1,)), backend="numba")(x)).astype(np.float64))
    want = np.array([_fold_in_order(row, largest) for row in x.astype(np.float64)])
    np.testing.assert_array_equal(np.isnan(out), np.isnan(want))
    np.testing.assert_array_equal(out[~np.isnan(want)], want[~np.isnan(want)])
    np.testing.assert_array_equal(np.signbit(out), np.signbit(want))   # of zeros and NaNs too


@pytest.mark.parametrize("dtype", [dtypes.float16, dtypes.float32, dtypes.int32],
                         ids=lambda d: np.dtype(d).name)
@SETTINGS
@given(data=st.data())
def test_generic_reduce(dtype, data):
  """A computation that is not a monoid, of two operands: the reference's left fold."""
  x = data.draw(arrays(dtype, RANK3))
  y = data.draw(arrays(np.int32, st.just(x.shape)))

  def computation(acc, e):
    return acc[0] * e[0] + acc[1].astype(acc[0].dtype), acc[1] - e[1]

  def program(x, y):
    return [*lax.reduce((x, y), (np.array(1, dtype), np.int32(3)), computation, (1,)),
            *lax.reduce((x, y), (np.array(0, dtype), np.int32(0)), computation, (0, 2))]
  check(program, ["x(1)", "y(1)", "x(0,2)", "y(0,2)"], x, y)
