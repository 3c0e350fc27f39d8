"""Device functions of the numba-cuda programs' kernels (numba-cuda compiles
them into the kernels that call them; the simulator runs their Python).

The sums follow NumPy's order, as the CPU backend's do (its kernels in
numba_backend/rules/reductions.py, whose vector intrinsics a GPU has not):
a block of at most 128 reals by eight accumulators, of at most 64 complex
numbers by four, and a run's blocks added as `pairwise_plan` says."""

from numba import cuda


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
def planned_sum(x, start, plan, stack, zero, complex_):
  """The pairwise sum of x from `start` that `plan` (`pairwise_plan`'s rows
  (slot, start, size), flat) describes, its blocks summed from `zero`;
  `stack` holds its partial sums (complex numbers' blocks if `complex_`)."""
  stack[0] = zero
  for k in range(0, plan.shape[0], 3):
    slot, first, size = plan[k], plan[k + 1], plan[k + 2]
    if size == 0:
      stack[slot] = stack[slot] + stack[slot + 1]
    elif complex_:
      stack[slot] = complex_block_sum(x, start + first, size, zero)
    else:
      stack[slot] = block_sum(x, start + first, size, zero)
  return stack[0]
