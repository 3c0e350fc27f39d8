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
  `shape` (C-contiguous `out` of that size)."""
  n = out.size
  rank = shape.size
  index = np.zeros(rank, np.int64)
  position = offset
  for k in range(n):
    out[k] = src[position]
    for j in range(rank - 1, -1, -1):   # the next multi-index, row-major
      index[j] += 1
      position += strides[j]
      if index[j] < shape[j]:
        break
      position -= strides[j] * shape[j]
      index[j] = 0


@kernel_jit
def strided_assign(dst, offset, strides, shape, src):
  """The strided view of `dst` of `shape` set to `src` (row-major, flat)."""
  n = src.size
  rank = shape.size
  index = np.zeros(rank, np.int64)
  position = offset
  for k in range(n):
    dst[position] = src[k]
    for j in range(rank - 1, -1, -1):
      index[j] += 1
      position += strides[j]
      if index[j] < shape[j]:
        break
      position -= strides[j] * shape[j]
      index[j] = 0


def c_strides(shape):
  """The element strides of a C-contiguous array of `shape`."""
  strides, step = [], 1
  for n in reversed(shape):
    strides.append(step)
    step *= n
  return tuple(reversed(strides))
