"""Device functions of the numba-cuda programs' kernels (numba-cuda compiles
them into the kernels that call them; the simulator runs their Python).

The sums follow NumPy's order, as the CPU backend's do (its kernels in
numba_backend/rules/reductions.py, whose vector intrinsics a GPU has not):
a block of at most 128 reals by eight accumulators, of at most 64 complex
numbers by four (`block_sum`, `complex_block_sum`)."""

import types

from numba import cuda


def device_version(fn, module, **calls):
  """The device function of a CPU rule's Numba function `fn`: its Python
  compiled by numba-cuda (the CUDA simulator runs device functions, not
  Numba's CPU functions, on its arrays), calling the device functions that
  `calls` names in place of the CPU's of those names; named as a function
  of `module` (where it is bound to fn's name), for programs to call."""
  py = fn.py_func
  function = types.FunctionType(py.__code__, dict(py.__globals__, **calls), py.__name__,
                                py.__defaults__, py.__closure__)
  function.__module__, function.__doc__ = module, py.__doc__
  return cuda.jit(device=True)(function)


@cuda.jit(device=True)
def block_sum(x, start, n, zero):
  """NumPy's sum of the block x[start:start + n] (n <= 128 reals), from
  `zero`'s type: eight accumulators from 8 elements on, else in order."""
  if n < 8:
    res = zero
    for i in range(start, start + n):
      res += x[i]
    return res
  s = start
  r0, r1, r2, r3 = zero + x[s], zero + x[s + 1], zero + x[s + 2], zero + x[s + 3]
  r4, r5, r6, r7 = zero + x[s + 4], zero + x[s + 5], zero + x[s + 6], zero + x[s + 7]
  i = 8
  while i < n - n % 8:
    s = start + i
    r0, r1, r2, r3 = r0 + x[s], r1 + x[s + 1], r2 + x[s + 2], r3 + x[s + 3]
    r4, r5, r6, r7 = r4 + x[s + 4], r5 + x[s + 5], r6 + x[s + 6], r7 + x[s + 7]
    i += 8
  res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
  while i < n:
    res += x[start + i]
    i += 1
  return res


@cuda.jit(device=True)
def complex_block_sum(x, start, n, zero):
  """NumPy's sum of the block x[start:start + n] (n <= 64 complex numbers):
  four accumulators from 4 elements on, else in order."""
  if n < 4:
    res = zero
    for i in range(start, start + n):
      res += x[i]
    return res
  s = start
  r0, r1, r2, r3 = zero + x[s], zero + x[s + 1], zero + x[s + 2], zero + x[s + 3]
  i = 4
  while i < n - n % 4:
    s = start + i
    r0, r1, r2, r3 = r0 + x[s], r1 + x[s + 1], r2 + x[s + 2], r3 + x[s + 3]
    i += 4
  res = (r0 + r1) + (r2 + r3)
  while i < n:
    res += x[start + i]
    i += 1
  return res


@cuda.jit(device=True)
def _stride(shape, d):
  """The stride of dimension d of a C-contiguous array of `shape`, in elements."""
  stride = 1
  for e in range(d + 1, shape.size):
    stride *= shape[e]
  return stride


@cuda.jit(device=True)
def window_position(k, indices, index_map, operand_batching_dims, indices_batching_dims,
                    batch_shape, operand_shape, window_shape, window_dims,
                    other_batch_strides, other_window_strides, clip):
  """(its flat position in the operand, or -1 where its window is not inside
  the operand and not `clip`ped; its flat position in the other array) of
  the k-th element of the windows in the order of the CPU's
  `window_positions` (numba_backend/rules/indexing.py), whose arguments
  these are (`indices` int64), computed from k alone."""
  window_size = 1
  for j in range(window_dims.size):
    window_size *= window_shape[window_dims[j]]
  b, rest = k // window_size, k % window_size
  other, offset = 0, 0
  for j in range(window_dims.size - 1, -1, -1):   # the element's coordinates in its window
    d = window_dims[j]
    coordinate = rest % window_shape[d]
    rest //= window_shape[d]
    other += coordinate * other_window_strides[j]
    offset += coordinate * _stride(operand_shape, d)
  for i in range(batch_shape.size - 1, -1, -1):   # the window's batch position
    other += (b // _stride(batch_shape, i)) % batch_shape[i] * other_batch_strides[i]
  vector = index_map.size
  inside, position = True, offset
  for d in range(operand_shape.size):
    start = 0
    for j in range(vector):
      if index_map[j] == d:
        start = indices[b * vector + j]
    for j in range(operand_batching_dims.size):
      if operand_batching_dims[j] == d:
        i = indices_batching_dims[j]
        start = (b // _stride(batch_shape, i)) % batch_shape[i]
    high = operand_shape[d] - window_shape[d]
    if start < 0 or start > high:
      inside = False
      start = 0 if start < 0 else high
    position += start * _stride(operand_shape, d)
  if not (inside or clip):
    return -1, other
  return position, other
