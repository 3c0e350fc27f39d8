"""Large loops run by threads (numba_backend/threads.py) where Numba's TBB
layer loads, and give the serial loops' results bit for bit, with any
number of threads."""

import importlib.metadata

import numba
import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from numba_backend import threads
from numba_backend.lower import lower_program
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


@pytest.mark.skipif(not threads.AVAILABLE, reason="no threads: the serial loops are tested elsewhere")
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
