"""sort, top_k and approx_top_k on the numba-cuda backend: its programs in
numba's CUDA simulator against the reference bit for bit (every element
where the reference puts it: signs of zero, NaN payloads), and their
kernels compiled to PTX for compute capability 9.0."""

import numpy as np
from hypothesis import given, settings, strategies as st
import pytest

import refimpl as jax
from refimpl import dtypes, lax
from conformance import strategies as cst
from tests.numba_backend.test_elementwise import run_x64
from tests.numba_backend.ptx import instructions, programs_ptx

DTYPES = [np.float32, np.float64, np.float16, dtypes.bfloat16, np.int32, np.uint32,
          np.complex64, np.bool_]
SETTINGS = settings(max_examples=4, deadline=None)
_PAYLOAD_NAN = np.array(0x7FC01234, np.uint32).view(np.float32).item()
SPECIAL = [np.nan, -np.nan, _PAYLOAD_NAN, 0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 1e-40, -3e38,
           65504.0, 2.0**-24]


def _bits(x):
  """x's elements as unsigned integers of their bits (complex: of each part)."""
  x = np.asarray(x)
  if x.dtype.kind in "fcb" or x.dtype == dtypes.bfloat16:
    return x.view(f"u{x.dtype.itemsize // (2 if x.dtype.kind == 'c' else 1)}")
  return x


def _arrays(dtype, shape):
  """Arrays with ties, zeros of both signs, NaNs (of both signs, one with a
  payload), infinities and extremes."""
  dtype = np.dtype(dtype)
  if dtype.kind in "fc" or dtype == dtypes.bfloat16:
    with np.errstate(over="ignore"):   # (as the dtype rounds them: values it holds)
      special = np.array(SPECIAL, np.float32).astype(
          np.float32 if dtype.kind == "c" else dtype).astype(np.float64).tolist()
    elements = st.sampled_from(special)
    if dtype.kind == "c":
      elements = st.builds(complex, elements, elements)
    return cst.arrays(dtype, shape, elements=st.one_of(elements, cst._elements(dtype)))
  if dtype.kind in "iu":
    return cst.arrays(dtype, shape, elements=st.one_of(
        st.sampled_from([0, 1, np.iinfo(dtype).max, np.iinfo(dtype).min]), cst._elements(dtype)))
  return cst.arrays(dtype, shape)


def _check(program, *args):
  """`program`'s results on numba-cuda are the reference's, bit for bit."""
  got = jax.tree_util.tree_leaves(jax.jit(program, backend="numba-cuda")(*args))
  want = jax.tree_util.tree_leaves(jax.jit(program, backend="reference")(*args))
  assert len(got) == len(want)
  for i, (g, w) in enumerate(zip(got, want)):
    g, w = np.asarray(g), np.asarray(w)
    assert g.dtype == w.dtype and g.shape == w.shape, i
    assert np.array_equal(_bits(g), _bits(w)), f"result {i}: numba-cuda {g}, reference {w}"


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@SETTINGS
@given(data=st.data())
def test_sort_matches_the_reference(dtype, data):
  """One operand, and two by the first key, and by two keys (the second
  this dtype's), along a drawn dimension of a rank 1 to 3 array."""
  x = data.draw(_arrays(dtype, cst.shapes(min_dims=1, max_dims=3)))
  y = data.draw(cst.arrays(np.int8, st.just(x.shape), elements=st.integers(0, 2)))
  d = data.draw(st.integers(0, x.ndim - 1))
  run_x64(dtype, lambda: _check(
      lambda x, y: [lax.sort(x, dimension=d), lax.sort((x, y), dimension=d, num_keys=1),
                    lax.sort((y, x), dimension=d, num_keys=2, is_stable=False)], x, y))


@settings(max_examples=6, deadline=None)
@given(n=st.integers(0, 40), inner=st.integers(1, 2), seed=st.integers(0, 2**32 - 1))
def test_each_merge_pass_keeps_the_stable_order_of_long_lines_with_ties(n, inner, seed):
  """Lines of up to 40 elements (up to six passes of widths 1 to 32, runs
  ending short), sorted by two keys with many ties: the second key and the
  tie order of equal pairs (their positions, carried as a third operand)
  are the reference's."""
  rng = np.random.default_rng(seed)
  x = rng.integers(0, 4, (2, n, inner)).astype(np.float32)
  y = rng.integers(0, 3, x.shape).astype(np.int32)
  positions = np.arange(x.size, dtype=np.int32).reshape(x.shape)
  _check(lambda x, y, p: [lax.sort((x, y, p), dimension=1, num_keys=2),
                          lax.sort((x, p), dimension=1, num_keys=1)], x, y, positions)


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != np.complex64],
                         ids=lambda d: np.dtype(d).name)
@SETTINGS
@given(data=st.data())
def test_top_k_and_approx_top_k_match_the_reference(dtype, data):
  """top_k along the last axis with k from 0 to its length; for floats,
  approx_max_k and approx_min_k along a drawn axis with k from 1 to its length."""
  x = data.draw(_arrays(dtype, cst.shapes(min_dims=1, max_dims=3, min_side=1)))
  k = data.draw(st.integers(0, x.shape[-1]))
  d = data.draw(st.integers(0, x.ndim - 1))
  j = data.draw(st.integers(1, x.shape[d]))

  def program(x):
    if not dtypes.is_float(dtype):
      return lax.top_k(x, k)
    return [lax.top_k(x, k), lax.approx_max_k(x, j, reduction_dimension=d),
            lax.approx_min_k(x, j, reduction_dimension=d - x.ndim, aggregate_to_topk=False)]

  run_x64(dtype, lambda: _check(program, x))


_PTX_SETUP = """
from refimpl import lax
x = np.arange(12, dtype=np.float32).reshape(3, 4)
programs = {
    "float32": lambda x: (lax.sort((x, -x), dimension=0, num_keys=2), lax.top_k(x, 2),
                          lax.approx_min_k(x, 2, reduction_dimension=0)),
    "others": lambda x: (lax.sort(x.astype(np.float16), dimension=1),
                         lax.sort((x.astype(np.complex64), x.astype(np.uint32)), dimension=0),
                         lax.top_k(x > 3, 3))}
"""



def test_sorting_kernels_compile_to_ptx_for_compute_capability_9():
  found = programs_ptx(_PTX_SETUP, "x")
  for name, kernels in found.items():
    assert len(kernels) >= 8, name   # keys, permutations, values and indices
    for kernel, ptx in kernels:
      assert ".target sm_90" in ptx and ".entry" in ptx, (name, kernel)
      # the merge sort and the keys call nothing outside the kernel
      assert ".extern .func" not in ptx, (name, kernel)
  # float32 keys are the floats' bits: no float64 instruction
  assert not any(instructions(ptx, ".f64") for _, ptx in found["float32"])
