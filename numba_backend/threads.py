"""Threads for the backend's large loops.

A loop over at least `min_elements()` elements (an elementwise loop, the
rows of a reduction) is a `numba.prange` loop, run by Numba's TBB threading
layer, when that layer loads and Numba has more than one thread
(NUMBA_NUM_THREADS, by default the number of cores). Its iterations are
independent and each computes its elements in the serial loop's order, so
the results are the same bits with any number of threads.

TBB is chosen because its calling thread takes part in the work: where the
other cores are busy, a parallel loop runs at the speed of the serial one.
Numba's OpenMP layer waits for every thread of its team (selu of 1e6
floats took 6.5 ms instead of 1.5 with both cores of a 2-core machine busy),
and its workqueue layer aborts the process when two threads call in. Without TBB
(the `tbb` package's libtbb), loops are serial.
"""

import ctypes
import importlib
import importlib.metadata
import os

import numba

MIN_ELEMENTS = 1 << 16
"""The elements of a loop run by threads where each calls a transcendental
or special function (about a nanosecond per element): below, the cost of
starting a parallel loop (a few microseconds) is a large part of the loop's."""

MIN_PLAIN_ELEMENTS = 1 << 20
"""The elements of any other loop run by threads. Its elements take a
fraction of a nanosecond while its arrays stay in the caches: below, two
threads gain at most tens of microseconds a call (x + y on 2^18 float32
elements: 33 us serial, 20 us threaded), and a program with parallel loops
takes about 0.5 s longer to compile (once per machine: the disk cache). Over
larger arrays, one core does not reach the memory's bandwidth (2^22: 1.7 ms
serial, 0.7 ms threaded)."""


def min_elements(costly):
  """The elements from which a loop is run by threads (`costly`: its elements
  call a transcendental or special function)."""
  return MIN_ELEMENTS if costly else MIN_PLAIN_ELEMENTS


def _load_tbb():
  """Whether Numba's TBB layer loads. The `tbb` wheel puts libtbb in the
  environment's lib folder, not on the loader's path: load it first by its
  path, so that Numba's layer finds it already loaded (by its soname)."""
  try:
    files = importlib.metadata.distribution("tbb").files or []
  except importlib.metadata.PackageNotFoundError:
    files = []
  for file in files:
    if file.name in ("libtbb.so.12", "libtbb.12.dylib"):
      try:
        ctypes.CDLL(str(file.locate()), mode=ctypes.RTLD_GLOBAL)
      except OSError:
        pass
  try:
    importlib.import_module("numba.np.ufunc.tbbpool")
  except ImportError:
    return False
  return True


if os.environ.get("NUMBA_THREADING_LAYER", "tbb") == "tbb" and _load_tbb():
  numba.config.THREADING_LAYER = "tbb"
AVAILABLE = numba.config.THREADING_LAYER == "tbb" and numba.config.NUMBA_NUM_THREADS > 1
"""Whether large loops run by threads: the TBB layer loads and is the one
Numba will use (NUMBA_THREADING_LAYER, where set, names another layer or
"tbb"), with more than one thread."""


PARALLEL_OPTIONS = dict(comprehension=False, reduction=False, inplace_binop=False, setitem=False,
                        numpy=False, stencil=False, fusion=False, prange=True)
"""Numba's `parallel` option for a program with prange loops: those loops
only, none of its automatic parallelization of array expressions."""
