"""Array kernels the generated programs call, compiled by Numba once per
dtype (they are generic in shape and rank: shapes, strides and offsets are
int64 arrays, which programs pass as views of their static integers `d`).

Every array a program holds is C-contiguous and every kernel reads and
writes flat (1-D) views of them; an element of a strided view of a source
`src` at multi-index (i_0, ..., i_{n-1}) is `src[offset + sum_j i_j * strides[j]]`.
"""

import numba
import numpy as np

_JIT = dict(cache=True, error_model="numpy", boundscheck=False)


def kernel_jit(fn):
  """An array kernel of the generated programs (compiled once per signature, cached on disk)."""
  return numba.njit(**_JIT)(fn)


@kernel_jit
def strided_copy(src, offset, strides, shape, out):
  """out[k] = the element k (row-major) of the strided view of `src` of
  `shape` (C-contiguous `out` of that size): a loop along the last axis
  (which LLVM vectorizes) for each index of the others."""
  position = offset
  run, step = _last_axis(strides, shape)
  index = np.zeros(shape.size, np.int64)
  for k in range(0, out.size, run):
    p = position
    for t in range(k, k + run):
      out[t] = src[p]
      p += step
    position = next_run(index, position, strides, shape)


@kernel_jit
def strided_assign(dst, offset, strides, shape, src):
  """The strided view of `dst` of `shape` set to `src` (row-major, flat)."""
  position = offset
  run, step = _last_axis(strides, shape)
  index = np.zeros(shape.size, np.int64)
  for k in range(0, src.size, run):
    p = position
    for t in range(k, k + run):
      dst[p] = src[t]
      p += step
    position = next_run(index, position, strides, shape)


@kernel_jit
def strided_move(src, src_offset, src_strides, shape, dst, dst_offset, dst_strides):
  """The strided view of `dst` of `shape` set to the strided view of `src` of `shape`."""
  rank = shape.size
  n = 1
  for j in range(rank):
    n *= shape[j]
  index = np.zeros(rank, np.int64)
  i, o = src_offset, dst_offset
  for k in range(n):
    dst[o] = src[i]
    for j in range(rank - 1, -1, -1):   # the next multi-index, row-major
      index[j] += 1
      i += src_strides[j]
      o += dst_strides[j]
      if index[j] < shape[j]:
        break
      i -= src_strides[j] * shape[j]
      o -= dst_strides[j] * shape[j]
      index[j] = 0


@kernel_jit
def _last_axis(strides, shape):
  """The length and stride of a strided view's last axis (1 and 0 for rank 0)."""
  if shape.size == 0:
    return 1, 0
  return max(shape[shape.size - 1], 1), strides[shape.size - 1]


@kernel_jit
def next_run(index, position, strides, shape):
  """The position of the next run along the last axis, row-major, `index`
  (of the other axes) advanced in place."""
  for j in range(shape.size - 2, -1, -1):
    index[j] += 1
    position += strides[j]
    if index[j] < shape[j]:
      return position
    position -= strides[j] * shape[j]
    index[j] = 0
  return position


@kernel_jit
def apart(scratch, other):
  """The offset k (elements, below 4 KiB of them) from which `scratch`'s
  elements lie about 2 KiB from `other`'s modulo 4 KiB (both flat), for a
  loop reading other[i] and writing scratch[k + i]: where the two lay a few
  vectors apart modulo 4 KiB, the CPU takes each load for a read of the
  store before it (4K aliasing) and waits for it (logsumexp's exp(x - max)
  rows: 1.69 ms, 1.47 ms apart)."""
  offset = (other.ctypes.data + 2048 - scratch.ctypes.data) % 4096
  return offset // scratch.itemsize


def c_strides(shape):
  """The element strides of a C-contiguous array of `shape`."""
  strides, step = [], 1
  for n in reversed(shape):
    strides.append(step)
    step *= n
  return tuple(reversed(strides))


def broadcast_strides(operand_shape, dims, shape):
  """The element strides, over `shape`, of reading a C-contiguous operand
  of `operand_shape` whose axis k is axis dims[k] of `shape`: 0 along the
  axes it is broadcast along (those it lacks and its size-1 ones)."""
  strides = [0] * len(shape)
  for n, j, s in zip(operand_shape, dims, c_strides(operand_shape)):
    if n != 1:
      strides[j] = s
  return strides
