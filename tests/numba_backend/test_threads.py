"""Large loops run by threads (numba_backend/threads.py) where Numba's TBB
layer loads, and give the serial loops' results bit for bit, with any
number of threads."""

import importlib.metadata

import numba
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from numba_backend import threads
from numba_backend.lower import lower_program
from numba_backend.rules import reductions
from tests.numba_backend.test_elementwise import assert_same


def _programs(x):
  """Elementwise loops with fast functions (selu) and without, one over
  rows (an operand broadcast along the last axis), and reductions over
  rows: sum, max, product and a window sum."""
  m = x.reshape(-1, 64)
  return (jax.nn.selu(x), x * 2 - 1, m - m.max(axis=1, keepdims=True),
          jnp.sum(m, axis=1), jnp.prod(m * 0.01 + 1, axis=1),
          jax.lax.reduce_window(m, 0.0, jax.lax.add, (1, 4), (1, 2), "VALID"))


def _source(x):
  return lower_program(jax.make_jaxpr(_programs)(x).jaxpr)[0]


def test_tbb_layer_chosen_where_installed():
  """With the `tbb` package installed, more than one thread and no other
  layer asked for, large loops are run by TBB's threads."""
  try:
    importlib.metadata.distribution("tbb")
  except importlib.metadata.PackageNotFoundError:
    assert not threads.AVAILABLE
    return
  if numba.config.NUMBA_NUM_THREADS > 1 and numba.config.THREADING_LAYER in ("tbb", "default"):
    assert threads.AVAILABLE
    x = np.ones(threads.MIN_ELEMENTS, np.float32)
    jax.jit(jax.nn.selu, backend="numba")(x)
    assert numba.threading_layer() == "tbb"


@pytest.mark.parametrize("size", [threads.MIN_ELEMENTS // 4, threads.MIN_ELEMENTS * 2 + 64,
                                  threads.MIN_PLAIN_ELEMENTS * 2 + 64])
def test_loops_threaded_from_the_threshold(size):
  """Loops over MIN_ELEMENTS elements or more that call a transcendental
  function (selu's) are prange loops, other loops from MIN_PLAIN_ELEMENTS
  (the program compiled with parallel options), smaller ones are not. The
  largest loop of `_programs` is the window sum's, over about twice as
  many elements as x has."""
  source = _source(np.ones(size, np.float32))
  costly = threads.AVAILABLE and size >= threads.MIN_ELEMENTS
  plain = threads.AVAILABLE and size >= threads.MIN_PLAIN_ELEMENTS
  assert ("parallel=" in source) == costly
  # every loop but those rounding the reductions' results: the 2 over
  # elements (selu and x * 2 - 1 are one, the costly one), 1 over rows,
  # the 4 reductions'
  assert source.count("numba.prange") == (7 if plain else 1 if costly else 0)


@pytest.mark.skipif(not threads.AVAILABLE,
                    reason="no threads: the serial loops are tested elsewhere")
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_threaded_loops_match_the_reference_with_any_thread_count(dtype):
  """Bit for bit the reference's, with the machine's threads and with one."""
  x = np.random.default_rng(0).standard_normal(threads.MIN_ELEMENTS * 2 + 64) * 3
  x[[7, 5000, 100000]] = [np.nan, np.inf, -np.inf]
  x = jnp.asarray(x.astype(dtype))
  expected = jax.jit(_programs)(x)
  compiled = jax.jit(_programs, backend="numba")
  for count in (numba.config.NUMBA_NUM_THREADS, 1):
    numba.set_num_threads(count)
    try:
      actual = compiled(x)
    finally:
      numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    for k, (e, a) in enumerate(zip(expected, actual)):
      assert_same(e, a, f"result {k} with {count} threads")


def numpy_pairwise(x, zero, block):
  """NumPy's pairwise_sum of the list x from `zero`, as its C source adds:
  one element at a time below 8 reals, eight real accumulators up to 128
  reals (`block` elements), else the halves, split at a multiple of 8 reals."""
  reals = 128 // block
  n = len(x)
  if n * reals < 8:
    total = zero
    for v in x:
      total += v
    return total
  if n <= block:
    lanes = 8 // reals
    r = [zero + v for v in x[:lanes]]
    stop = n - n % lanes
    for i in range(lanes, stop, lanes):
      r = [a + v for a, v in zip(r, x[i:i + lanes])]
    while len(r) > 1:
      r = [r[j] + r[j + 1] for j in range(0, len(r), 2)]
    total = r[0]
    for v in x[stop:]:
      total += v
    return total
  half = n * reals // 2
  half = (half - half % 8) // reals
  return numpy_pairwise(x[:half], zero, block) + numpy_pairwise(x[half:], zero, block)


@settings(max_examples=50, deadline=None)
@given(n=st.integers(0, 5000), start=st.integers(0, 9), seed=st.integers(0, 2**32 - 1))
def test_pairwise_sums_in_numpys_order(n, start, seed):
  """`pairwise` (what pairwise_threads' threads call), and `row_sums` of
  real and complex rows, add in NumPy's pairwise order: bit for bit with
  its recursion written out, for runs of every length (a row of n is a run
  of n, then runs of 100 added in order, then one element at a time); the
  sum fetching ahead of its blocks (any distance, up to the array's end) too."""
  rng = np.random.default_rng(seed)
  x = (rng.standard_normal(start + n) * 10).astype(np.float32)
  values = [float(v) for v in x[start:]]
  expected = numpy_pairwise(values, 0.0, 128).hex()
  assert reductions.pairwise(x, start, n, 0.0).hex() == expected
  plan, stack = reductions.pairwise_plan(n, 1), np.zeros(64)
  for ahead in (1, 37, 4096):
    assert reductions.planned_sum(x, start, plan, stack, 0.0, ahead).hex() == expected
  z = x.astype(np.complex128) + 1j * rng.standard_normal(start + n)
  for row, zero, width in [(x[start:], 0.0, 128), (z[start:], 0j, 64)]:
    row = np.ascontiguousarray(row)
    for run in (n, 100, 0):
      if run and n % run:
        continue
      acc = np.full(1, np.nan, type(zero))
      reductions.row_sums(row, 0, 1, n, run, zero, acc)
      expected = zero
      for b in range(0, n, run or 1):
        part = [type(zero)(v) for v in row[b:b + (run or 1)]]
        expected = expected + (numpy_pairwise(part, zero, width) if run else part[0])
      assert acc[0] == expected and str(acc[0]) == str(expected), (run, zero)


@pytest.mark.parametrize("count", [None, 1])
def test_one_large_row_summed_by_threads(count):
  """A sum with one result over THREADED_ROW elements or more sums the
  quarters of its pairwise halving by threads (where they run): the
  reference's bits, negative zeros, NaN and infinities included."""
  n = reductions.THREADED_ROW + 1000
  source = lower_program(jax.make_jaxpr(jnp.sum)(np.ones(n, np.float32)).jaxpr)[0]
  assert ("pairwise_threads" in source) == threads.AVAILABLE
  rng = np.random.default_rng(0)
  cases = [rng.standard_normal(n).astype(np.float32), np.full(n, -0.0, np.float32)]
  cases.append(cases[0].copy())
  cases[2][[5, n - 7]] = [np.inf, -np.inf]
  compiled = jax.jit(jnp.sum, backend="numba")
  numba.set_num_threads(count or numba.config.NUMBA_NUM_THREADS)
  try:
    for x in cases:
      assert_same(jax.jit(jnp.sum)(x), compiled(x), "sum")
  finally:
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)


def test_sums_of_large_operands_fetch_ahead():
  """Sums over an operand of PREFETCH_FROM bytes or more fetch the cache lines
  ahead of each block (`prefetch_distance`): the reference's bits, over rows
  and over one row."""
  x = np.random.default_rng(1).standard_normal((64, reductions.PREFETCH_FROM // 256 + 3))
  x = x.astype(np.float32)
  assert reductions.prefetch_distance(x.reshape(-1)) > 0
  assert reductions.prefetch_distance(x[:8].reshape(-1)) == 0

  def program(x):
    return jnp.sum(x, axis=1), jnp.sum(x)

  for k, (e, a) in enumerate(zip(jax.jit(program)(x), jax.jit(program, backend="numba")(x))):
    assert_same(e, a, f"sum {k}")
