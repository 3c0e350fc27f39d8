"""Freed memory kept for the next call, as XLA's allocator keeps its buffers.

A program allocates its results and intermediates with malloc (Numba's
runtime) and frees them when they die. glibc's malloc maps a block above its
mmap threshold (128 KiB at first) as new pages and unmaps it when freed, and
gives the top of its heap back to the system beyond its trim threshold, so
a program whose arrays are each a few MiB faults their pages in again, and
the kernel zeroes them, at every call: the MLP's gradient of the benchmark
(1.6 MiB weights) took 4.6-6.5 ms a call in a fresh process and 3.3-3.6 ms
with the thresholds below (glibc adjusts its thresholds as it sees blocks
freed, yet a fresh process still faulted their pages at every call).

When the backend is loaded, blocks up to `MMAP_THRESHOLD` come from the
heap and up to `TRIM_THRESHOLD` of free heap is kept (`mallopt`). Nothing is
changed where the environment sets glibc's own malloc settings (a
MALLOC_*_ variable or GLIBC_TUNABLES: the user's choice), or without glibc.
"""

import ctypes
import os

MMAP_THRESHOLD = 64 << 20
"""Blocks above this many bytes are mapped anew (and their pages faulted in)
at each allocation; smaller ones reuse the heap's free memory."""

TRIM_THRESHOLD = 256 << 20
"""The free memory at the top of the heap, in bytes, kept rather than given back."""

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3   # glibc's malloc.h


def keep_freed_memory():
  """Sets glibc malloc's thresholds (above); whether they were set."""
  if "GLIBC_TUNABLES" in os.environ or any(
      name.startswith("MALLOC_") and name.endswith("_") for name in os.environ):
    return False
  libc = ctypes.CDLL(None)
  if not hasattr(libc, "gnu_get_libc_version") or not hasattr(libc, "mallopt"):
    return False
  return bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
              and libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
