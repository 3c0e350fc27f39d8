"""The numba backend's sort, top_k and approx_top_k agree with the reference
bit for bit: the same permutation, so every element (its sign of zero, its
NaN payload) lands where the reference puts it. One program per dtype."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
from refimpl import dtypes, lax
from conformance import strategies as cst
from tests.numba_backend.test_elementwise import run_x64

pytest.importorskip("numba")

SETTINGS = settings(max_examples=10, deadline=None)
X64 = [np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.uint64), np.dtype(np.complex128)]
SPECIAL = [np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 1.0, -1.0]


def bits(x):
  x = np.asarray(x)
  if dtypes.is_inexact(x.dtype) or dtypes.is_bool(x.dtype):
    return (x.view(f"u{x.dtype.itemsize}") if x.dtype.kind != "c"
            else x.view(f"u{x.dtype.itemsize // 2}"))
  return x


def check_bits(program, names, *args):
  reference = jax.jit(program)(*args)
  backend = jax.jit(program, backend="numba")(*args)
  for name, r, b in zip(names, reference, backend):
    r, b = np.asarray(r), np.asarray(b)
    assert r.dtype == b.dtype and r.shape == b.shape, name
    assert np.array_equal(bits(r), bits(b)), f"{name}: reference {r}, numba {b}"


def arrays(dtype, shape):
  """Arrays with many ties, zeros of both signs and NaNs of both signs."""
  if dtypes.is_float(dtype) or dtypes.is_complex(dtype):
    elements = st.sampled_from(SPECIAL)
    if dtypes.is_complex(dtype):
      elements = st.builds(complex, elements, elements)
    return cst.arrays(dtype, shape, elements=st.one_of(elements, cst._elements(dtype)))
  return cst.arrays(dtype, shape)


@pytest.mark.parametrize("dtype", [*cst.ALL_DTYPES, *X64], ids=lambda d: np.dtype(d).name)
@SETTINGS
@given(data=st.data())
def test_sort(dtype, data):
  """One operand, and several sorted by one or two keys, along each dimension."""
  x = data.draw(arrays(dtype, cst.shapes(min_dims=3, max_dims=3)))
  y = data.draw(cst.arrays(np.int8, st.just(x.shape), elements=st.integers(0, 2)))
  names, fns = [], []
  for d in range(3):
    names += [f"sort{d}", f"by x{d}: x", f"by x{d}: y", f"by (y, x){d}: y", f"by (y, x){d}: x"]
    fns += [lambda x, y, d=d: [lax.sort(x, dimension=d)],
            lambda x, y, d=d: list(lax.sort((x, y), dimension=d, num_keys=1)),
            lambda x, y, d=d: list(lax.sort((y, x), dimension=d, num_keys=2, is_stable=False))]
  run_x64(dtype, lambda: check_bits(lambda x, y: [o for f in fns for o in f(x, y)], names, x, y))


@pytest.mark.parametrize("dtype", [t for t in cst.ALL_DTYPES if not dtypes.is_complex(t)]
                         + X64[:3], ids=lambda d: np.dtype(d).name)
@SETTINGS
@given(data=st.data())
def test_top_k(dtype, data):
  """top_k along the last dimension (k from 0 to its size) by IEEE totalOrder."""
  x = data.draw(arrays(dtype, cst.shapes(min_dims=2, max_dims=2)))
  k = data.draw(st.integers(0, x.shape[1]))
  names = ["values", "indices", "values (axis 0)", "indices (axis 0)"]
  k0 = min(k, x.shape[0])
  run_x64(dtype, lambda: check_bits(
      lambda x: [*lax.top_k(x, k), *lax.top_k(x, k0, axis=0)], names, x))


@pytest.mark.parametrize("dtype", [*cst.FLOAT_DTYPES, np.dtype(np.float64)],
                         ids=lambda d: np.dtype(d).name)
@SETTINGS
@given(data=st.data())
def test_approx_top_k(dtype, data):
  """approx_max_k/approx_min_k: exact, as the reference (and XLA on CPU)."""
  x = data.draw(arrays(dtype, cst.shapes(min_dims=2, max_dims=2, min_side=1)))
  k = data.draw(st.integers(1, x.shape[0]))
  names = ["max values", "max indices", "min values", "min indices"]
  run_x64(dtype, lambda: check_bits(
      lambda x: [*lax.approx_max_k(x, k, reduction_dimension=0),
                 *lax.approx_min_k(x, k, reduction_dimension=-2, aggregate_to_topk=False)],
      names, x))
