"""The numba backend's differential tests compile one Numba program per
family, dtype and rank: minutes of compiling on a fresh machine (seconds
once the programs are in the disk cache). The default suite runs the files
in DEFAULT; the others are marked `numba_full` and run on request:
`python -m pytest -m numba_full` (or `-m ""` for everything).

The numba-cuda backend's kernels run in numba's CUDA simulator here (set
before anything imports numba.cuda, which reads it once)."""

import os
import pathlib

import pytest

HERE = pathlib.Path(__file__).resolve().parent
os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

DEFAULT = {"test_cache.py", "test_calls.py", "test_checked.py", "test_control_flow.py",
           "test_cuda.py", "test_cuda_conformance.py", "test_cuda_dlpack.py", "test_cuda_fft.py",
           "test_cuda_linalg.py", "test_cuda_prng.py", "test_cuda_sorting.py",
           "test_cuda_windows.py", "test_float32.py", "test_fused_sums.py", "test_host.py",
           "test_indexing_bounds.py", "test_random_programs.py", "test_memory.py",
           "test_transposed_products.py", "test_threads.py"}


def pytest_collection_modifyitems(config, items):
  for item in items:
    path = pathlib.Path(item.path).resolve()
    if path.parent == HERE and path.name not in DEFAULT:
      item.add_marker(pytest.mark.numba_full)
