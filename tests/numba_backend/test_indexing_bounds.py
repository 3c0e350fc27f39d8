"""No index value makes the numba backend's indexing code access memory
outside a buffer: gather, scatter, scatter-add (every mode), dynamic_slice
and dynamic_update_slice run on fuzzed indices (huge, negative, INT_MIN,
INT_MAX) in a process with Numba's bounds checks on (NUMBA_BOUNDSCHECK=1,
which raises IndexError on any out-of-bounds access), and agree with the
reference there; so do random programs of indexing operations
(test_random_programs.py's generator, under vmap and scan too). That
process compiles into caches of its own, beside the backend's cache
directory: bounds checks change the compiled code, and Numba's cache does
not tell the two apart. Modes and shapes are run-time values of the
compiled programs, so the fuzzing compiles few programs (once: later runs
load them). Rank-0 results of the indexing primitives, which a kernel
fills through a one-element view, are checked too.
"""

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
from refimpl import lax
from conformance import strategies as cst
from numba_backend import cache
from tests.numba_backend.test_elementwise import assert_same
from tests.numba_backend.test_indexing import MODES, ROW_GATHER, ROW_SCATTER, index_arrays

pytest.importorskip("numba")

INT32 = np.iinfo(np.int32)


@settings(max_examples=40, deadline=None, database=None)
@given(data=st.data())
def fuzz_indexing(data):
  """Run in the bounds-checked process: every primitive on fuzzed indices."""
  shape = (data.draw(st.integers(1, 4)), data.draw(st.integers(0, 4)))
  x = data.draw(cst.arrays(np.float32, shape))
  width = data.draw(st.integers(0, shape[1]))
  count = data.draw(st.integers(0, 4))
  indices = data.draw(index_arrays(np.int32, (count, 2)))
  updates = data.draw(cst.arrays(np.float32, (count, width)))
  block = tuple(data.draw(st.integers(0, n)) for n in shape)
  update = data.draw(cst.arrays(np.float32, block))
  starts = tuple(np.int32(data.draw(st.sampled_from([INT32.min, -1, 0, 1, 3, INT32.max])))
                 for _ in shape)
  mode = data.draw(st.sampled_from(MODES))

  def program(x, indices, updates, update, starts):
    return [lax.gather(x, indices, ROW_GATHER, (1, width), mode=mode),
            lax.scatter(x, indices, updates, ROW_SCATTER, mode=mode),
            lax.scatter_add(x, indices, updates, ROW_SCATTER, mode=mode),
            lax.dynamic_slice(x, starts, block, allow_negative_indices=False),
            lax.dynamic_update_slice(x, update, starts, allow_negative_indices=False)]
  args = (x, indices, updates, update, starts)
  for k, (r, b) in enumerate(zip(jax.jit(program)(*args),
                                 jax.jit(program, backend="numba")(*args))):
    assert_same(r, b, f"result {k}")


def test_no_access_out_of_bounds():
  root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  caches = cache.directory().rstrip(os.sep) + "-boundscheck"
  env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=os.path.join(caches, "numba"),
             REFIMPL_NUMBA_CACHE_DIR=os.path.join(caches, "programs"))
  run = subprocess.run(
      [sys.executable, "-c", "from tests.numba_backend.test_indexing_bounds import "
       "fuzz_indexing; fuzz_indexing(); from tests.numba_backend.test_random_programs import "
       "fuzz_indexing_programs; fuzz_indexing_programs()"],
      cwd=root, env=env, capture_output=True, text=True)
  assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize("mode", ["clip", "fill"])
def test_rank0_results(mode):
  """Gathers, scatters and dynamic slices of rank-0 operands and results,
  and the JVP and VJP of `x.at[()].set(y)` (whose gathers and scatters are
  of rank 0), agree with the reference."""
  x, y = np.float32(2.5), np.float32(-1.0)
  v = np.arange(4, dtype=np.float32)
  set_at = lambda x, y: x.at[()].set(y, mode=mode)

  def program(x, y, v, i):
    return [jax.jvp(set_at, (x, y), (y, x)), jax.vjp(set_at, x, y)[1](y),
            v.at[i].get(mode=mode, fill_value=7.0), v.at[i].set(x, mode=mode),
            lax.dynamic_index_in_dim(v, i, keepdims=False), x.at[()].get(mode=mode)]

  for i in (np.int32(2), np.int32(9), np.int32(-9)):
    reference = jax.tree_util.tree_leaves(jax.jit(program)(x, y, v, i))
    backend = jax.tree_util.tree_leaves(jax.jit(program, backend="numba")(x, y, v, i))
    assert len(backend) == len(reference)
    for k, (r, b) in enumerate(zip(reference, backend)):
      assert_same(r, b, f"result {k} at index {i}")
