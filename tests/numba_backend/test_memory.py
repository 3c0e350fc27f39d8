"""The backend keeps freed memory for the next call (numba_backend/memory.py):
a program whose arrays are a few MiB does not fault their pages in again at
each call, and the environment's own glibc malloc settings are left alone."""

import os
import platform
import resource
import subprocess
import sys

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc",
                                reason="the thresholds are glibc malloc's (mallopt); "
                                       "elsewhere nothing is set")


def test_repeated_calls_fault_no_pages_in():
  """Two results of 4 and 2 MiB: with glibc's defaults, each call faulted in
  about 2000 pages."""
  f = jax.jit(lambda x: (x * 2.0, x[: x.shape[0] // 2] + 1.0), backend="numba")
  x = jnp.asarray(np.ones(1 << 20, np.float32))
  for _ in range(3):
    f(x)
  before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
  for _ in range(10):
    f(x)
  assert (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 10 < 50


def _keeps(**settings):
  """What keep_freed_memory() returns in a fresh process whose environment
  has no malloc settings but `settings`."""
  env = {k: v for k, v in os.environ.items()
         if not (k.startswith("MALLOC_") or k == "GLIBC_TUNABLES")}
  script = "from numba_backend import memory; print(memory.keep_freed_memory())"
  out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       check=True, env={**env, **settings})
  return out.stdout.strip()


def test_the_environments_settings_are_left_alone():
  assert _keeps() == "True"
  assert _keeps(MALLOC_ARENA_MAX_="2") == "False"
  assert _keeps(GLIBC_TUNABLES="glibc.malloc.tcache_count=0") == "False"
