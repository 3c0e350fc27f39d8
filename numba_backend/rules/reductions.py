"""Lowering rules of the reductions (refimpl/lax/reductions.py): reduce_sum,
prod, max, min, and, or, xor, argmax, argmin, the generic reduce and the
cumulative reductions.

A reduction moves its operand's reduced axes last (a strided copy when they
are not), so that each result element reduces one contiguous row, and calls
a kernel compiled once per dtype. Sums and products accumulate in the
reference's dtype (float64, complex128, 64-bit integers) and are rounded
once; 16-bit floats are widened to float32 first (exactly).

Sums follow NumPy's order, so that float sums match the reference bit for
bit: NumPy iterates the C-contiguous operand with its adjacent reduced (and
kept) axes merged; when the innermost merged axis is reduced, each run of
it is summed pairwise (`pairwise`, NumPy's pairwise_sum) and the runs are
added in order, otherwise the elements are added one at a time.
"""

import math

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.core.extending import intrinsic, overload

from refimpl import dtypes
from refimpl.lax import reductions as lax
from refimpl.lax.rules import accumulation_dtype, max_identity, min_identity
from numba_backend import scalars as S, threads
from numba_backend.kernels import c_strides, next_run
from numba_backend.lower import (LoweringError, cast, element_to_store, lower_jaxpr, read_element,
                                 Rows, register, register_rows, scalar_dtype, storage_dtype,
                                 type_source)

_SIXTEEN_BIT = (np.dtype(np.float16), dtypes.bfloat16)


# --- kernels -----------------------------------------------------------------------------

def _vector_parts(context, builder, signature, args):
  """For an intrinsic (x, start, stop, value) on a C-contiguous 1-D x: x's
  data pointer, start and stop as intp, and a function loading the vector
  of a type at element i."""
  array, start, stop = args[:3]
  start = context.cast(builder, start, signature.args[1], types.intp)
  stop = context.cast(builder, stop, signature.args[2], types.intp)
  data = context.make_array(signature.args[0])(context, builder, array).data
  width = context.get_abi_sizeof(context.get_data_type(signature.args[0].dtype))

  def load(i, vector):
    return builder.load(builder.bitcast(builder.gep(data, [i]), vector.as_pointer()), align=width)

  return start, stop, load


def _splat(builder, value, vector):
  """The vector of type `vector` with `value` in every lane."""
  out = ir.Constant(vector, None)
  for j in range(vector.count):
    out = builder.insert_element(out, value, ir.Constant(ir.IntType(32), j))
  return out


@intrinsic
def _eight_lanes(typingctx, x, start, stop, zero):
  """NumPy's eight accumulators over x[start:stop] (a multiple of 8 elements,
  at least 8), added as its pairwise_sum adds them: r_j = zero + x[start + j],
  then r_j += x[start + 8 m + j] for m = 1, 2, ..., and the result
  ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), in `zero`'s type. The
  eight accumulators are one vector register (LLVM's SLP vectorizer, which
  would find them in scalar code, is off in Numba), each lane adding in the
  same order as the scalar lanes: the same roundings."""
  if not (isinstance(x, types.Array) and x.ndim == 1 and x.layout == "C"
          and isinstance(x.dtype, (types.Float, types.Integer, types.Boolean))
          and isinstance(zero, (types.Float, types.Integer))):
    return None
  floating = isinstance(zero, types.Float)
  narrowing = (isinstance(x.dtype, types.Float)
               and (not floating or x.dtype.bitwidth > zero.bitwidth)
               or isinstance(x.dtype, types.Integer) and not floating
               and x.dtype.bitwidth > zero.bitwidth)
  if narrowing:
    return None   # not one of NumPy's sums

  signed = isinstance(x.dtype, types.Integer) and x.dtype.signed

  def codegen(context, builder, signature, args):
    start, stop, load_vector = _vector_parts(context, builder, signature, args)
    lanes = ir.VectorType(context.get_value_type(zero), 8)

    def load(i):   # eight elements, converted to the accumulators' type
      v = load_vector(i, ir.VectorType(context.get_data_type(x.dtype), 8))
      if v.type == lanes:
        return v
      if floating and isinstance(x.dtype, types.Float):
        return builder.fpext(v, lanes)
      if floating:
        return (builder.sitofp if signed else builder.uitofp)(v, lanes)
      return (builder.sext if signed else builder.zext)(v, lanes)

    add = builder.fadd if floating else builder.add
    accumulators = cgutils.alloca_once_value(builder,
                                             add(_splat(builder, args[3], lanes), load(start)))
    first = builder.add(start, ir.Constant(start.type, 8))
    with cgutils.for_range_slice(builder, first, stop, ir.Constant(start.type, 8)) as (i, _):
      builder.store(add(builder.load(accumulators), load(i)), accumulators)
    r = [builder.extract_element(builder.load(accumulators), ir.Constant(ir.IntType(32), j))
         for j in range(8)]
    return add(add(add(r[0], r[1]), add(r[2], r[3])), add(add(r[4], r[5]), add(r[6], r[7])))

  return zero(x, start, stop, zero), codegen


@numba.njit(cache=True, error_model="numpy")
def block_sum(x, start, n, zero):
  """NumPy's sum of a block of n <= 128 elements x[start:start + n]
  (C-contiguous, real), accumulated from `zero`'s type: by eight
  accumulators from 8 elements on, else one element at a time."""
  if n < 8:
    res = zero
    for i in range(start, start + n):
      res += x[i]
    return res
  stop = start + n - n % 8
  res = _eight_lanes(x, start, stop, zero)
  for i in range(stop, start + n):
    res += x[i]
  return res


@numba.njit(cache=True, error_model="numpy")
def first_half(n):
  """The length of the first half of a run of n > 128 elements that
  pairwise splits: n / 2 rounded down to a multiple of 8."""
  half = n // 2
  return half - half % 8


@numba.njit(cache=True, error_model="numpy")
def pairwise_plan(n, scale):
  """NumPy's pairwise_sum of n * scale real elements as a program of
  operations (rows of `(slot, start, size)`, in elements of `scale` reals):
  a block of size <= 128 / scale summed into stack[slot] (`size` > 0), or
  stack[slot] += stack[slot + 1] (`size` 0). A longer run's halves, split
  by `first_half`, are summed into slot and slot + 1, then added: the
  recursion in postfix order, walked once per run length rather than once
  per row (as a function calling itself, each of its calls would cost a
  Numba call; complex elements, scale 2, halve as their reals do)."""
  ops = np.empty((2 * (n * scale // 32) + 1, 3), np.int64)
  work = np.empty((192, 4), np.int64)   # runs to visit: start, size, slot, and 1 to add
  work[0, 0], work[0, 1], work[0, 2], work[0, 3] = 0, n * scale, 0, 0
  top, k = min(n, 1), 0   # (n 0: no operations, the sum is stack[0], zero)
  while top:
    top -= 1
    start, size, slot, add = work[top, 0], work[top, 1], work[top, 2], work[top, 3]
    if add or size <= 128:
      ops[k, 0], ops[k, 1], ops[k, 2] = slot, start // scale, size // scale
      k += 1
      continue
    half = first_half(size)   # the left half is visited first, then the right, then the add
    work[top, 0], work[top, 1], work[top, 2], work[top, 3] = 0, 0, slot, 1
    work[top + 1, 0], work[top + 1, 1], work[top + 1, 2] = start + half, size - half, slot + 1
    work[top + 2, 0], work[top + 2, 1], work[top + 2, 2] = start, half, slot
    work[top + 1, 3] = work[top + 2, 3] = 0
    top += 3
  return ops[:k]


@numba.njit(cache=True, error_model="numpy")
def complex_block_sum(x, start, n, zero):
  """NumPy's complex sum of a block of n <= 64 elements x[start:start + n]
  (it counts 2n reals: 4 complex accumulators from 4 elements on)."""
  if n < 4:
    res = zero
    for i in range(start, start + n):
      res += x[i]
    return res
  r0, r1, r2, r3 = zero + x[start], zero + x[start + 1], zero + x[start + 2], zero + x[start + 3]
  i = 4
  while i < n - n % 4:
    r0 += x[start + i]
    r1 += x[start + i + 1]
    r2 += x[start + i + 2]
    r3 += x[start + i + 3]
    i += 4
  res = (r0 + r1) + (r2 + r3)
  while i < n:
    res += x[start + i]
    i += 1
  return res


def _block(x, start, n, zero):
  """NumPy's sum of a block of x from `start`: `block_sum` (n <= 128) for
  reals, `complex_block_sum` (n <= 64) for complex numbers."""


@overload(_block, inline="always")
def _block_impl(x, start, n, zero):
  return (complex_block_sum if isinstance(x.dtype, types.Complex) else block_sum).py_func


def _reals(x):
  """The reals of an element of the array x: 2 if complex, else 1."""


@overload(_reals)
def _reals_impl(x):
  reals = 2 if isinstance(x.dtype, types.Complex) else 1
  return lambda x: reals


@intrinsic
def _prefetch(typingctx, x, i):
  """Asks the CPU to fetch the cache line of x[i] (a 1-D C-contiguous array,
  0 <= i < x.size) into its caches (`scalars.emit_prefetch`)."""
  if not (isinstance(x, types.Array) and x.ndim == 1 and x.layout == "C"):
    return None

  def codegen(context, builder, signature, args):
    data = context.make_array(signature.args[0])(context, builder, args[0]).data
    index = context.cast(builder, args[1], signature.args[1], types.intp)
    S.emit_prefetch(builder, builder.gep(data, [index]))
    return context.get_dummy_value()

  return types.none(x, i), codegen


PREFETCH_FROM = 1 << 22
"""The bytes of an operand from which its sums fetch ahead (`prefetch_distance`):
beyond the caches closest to a core, where the CPU's own prefetching leaves
a core reading at half the rate it reaches with it (sum over axis 1 of
f32[4096, 4096], 64 MiB: 2.45 ms without, 1.39 ms with, on two cores). Data
already in those caches gains nothing and pays the extra instructions (10-20%)."""

_PREFETCH_BYTES = 1 << 14
"""How far ahead of the block being summed its sums fetch, in bytes."""


@numba.njit(cache=True, error_model="numpy")
def prefetch_distance(x):
  """How many elements ahead of the block being summed `planned_sum` fetches
  x's cache lines: 0 (none) for x of fewer than PREFETCH_FROM bytes."""
  return 0 if x.size * x.itemsize < PREFETCH_FROM else _PREFETCH_BYTES // x.itemsize


@numba.njit(cache=True, error_model="numpy")
def planned_sum(x, start, plan, stack, zero, ahead=0):
  """The pairwise sum of x from `start` that `plan` (`pairwise_plan` of
  `_reals(x)`) describes, its blocks summed from `zero` (`_block`);
  `stack` holds 64 partial sums (stack[0] zero for an empty plan). Before
  each block, the cache lines of the block `ahead` elements further (0:
  none) are fetched (`_prefetch`), which changes no value."""
  line = max(1, 64 // x.itemsize)
  for k in range(plan.shape[0]):
    slot, size = plan[k, 0], plan[k, 2]
    if size:
      first = start + plan[k, 1]
      if ahead:
        for i in range(first + ahead, min(first + ahead + size, x.size), line):
          _prefetch(x, i)
      stack[slot] = _block(x, first, size, zero)
    else:
      stack[slot] = stack[slot] + stack[slot + 1]
  return stack[0]


@numba.njit(cache=True, error_model="numpy")
def pairwise(x, start, n, zero):
  """NumPy's pairwise_sum of x[start:start + n]: blocks of at most 128
  reals (`_block`), the halves of a longer run split by `first_half` (of
  its reals), accumulated from `zero`'s type."""
  return planned_sum(x, start, pairwise_plan(n, _reals(x)), np.full(64, zero), zero,
                     prefetch_distance(x))


THREADED_ROW = 1 << 18
"""The elements from which a reduction's only row is summed by threads
(`pairwise_threads`): a kernel compiled once, not a parallel program."""


@numba.njit(cache=True, error_model="numpy", parallel=threads.PARALLEL_OPTIONS)
def pairwise_threads(x, start, n, zero):
  """pairwise(x, start, n, zero) for n > 1024: the four runs pairwise halves
  x into at its second level summed by threads, then added as pairwise adds
  them."""
  half = first_half(n)
  left, right = first_half(half), first_half(n - half)
  starts = np.array([start, start + left, start + half, start + half + right])
  sizes = np.array([left, half - left, right, n - half - right])
  sums = np.full(4, zero)
  for q in numba.prange(4):
    sums[q] = pairwise(x, starts[q], sizes[q], zero)
  return (sums[0] + sums[1]) + (sums[2] + sums[3])


@numba.njit(cache=True, error_model="numpy")
def row_sums(x, first, stop, size, run, zero, acc):
  """acc[i] = the sum of row i of x (its `size` elements from i * size) for
  i in [first, stop), in NumPy's order: runs of `run` elements summed
  pairwise (`planned_sum`), then added in order (run 0: one element at a
  time), accumulated from `zero` (of the accumulation type)."""
  plan, stack = pairwise_plan(max(run, 1), _reals(x)), np.full(64, zero)
  ahead = prefetch_distance(x)
  for i in range(first, stop):
    total = zero
    if run == 0:
      for j in range(i * size, i * size + size):
        total = total + x[j]
    else:
      for b in range(i * size, i * size + size, run):
        total += planned_sum(x, b, plan, stack, zero, ahead)
    acc[i] = total


@numba.njit(cache=True, error_model="numpy")
def add_rows(x, strides, shape, group, first, stop, acc):
  """acc[p + j] += x[r * n + j] for j in [first, stop) and each row r of x
  (its elements by rows of n = shape[-1]), in order: the rows come in runs
  of `group` adding into one row of acc, p the position of the run's
  multi-index over shape[:-1] (row-major, in order) by `strides`. Each
  element of acc adds its elements one at a time, in order, four rows in
  one pass (the row of acc read and written once for four), by unsigned
  indices (so that the loop vectorizes)."""
  n = np.uint64(shape[shape.size - 1])
  index = np.zeros(shape.size, np.int64)
  position = 0
  for r in range(0, x.size, shape[shape.size - 1] * group):
    p, row, k = np.uint64(position), np.uint64(r), 0
    while k < group:
      if k + 4 <= group:
        for j in range(np.uint64(first), np.uint64(stop)):
          acc[p + j] = (((acc[p + j] + x[row + j]) + x[row + n + j]) + x[row + n + n + j]) \
              + x[row + n + n + n + j]
        row, k = row + n + n + n + n, k + 4
      else:
        for j in range(np.uint64(first), np.uint64(stop)):
          acc[p + j] += x[row + j]
        row, k = row + n, k + 1
    position = next_run(index, position, strides, shape)


_EXTREMUM_VECTORS = 4
"""The vectors of lanes `_extremum_lanes` folds into at once: one vector's
compare and select wait for the one before (f32 rows in the caches: 0.118 ns
an element with one, 0.072 with four)."""


def _extremum_lanes(largest):
  """An intrinsic folding x[start:stop] (a multiple of the lanes of a
  64-byte vector, float elements of init's type) from `init` by NaN-
  propagating max (`largest`) or min, into _EXTREMUM_VECTORS vectors of
  lanes (vector j taking the j-th vector of each run of that many, the
  first taking those after the last run), then those vectors into one,
  then across the lanes. Its result is the in-order fold's unless that is
  NaN or a zero (which NaN, which zero: the order decides)."""
  @intrinsic
  def lanes(typingctx, x, start, stop, init):
    if not (isinstance(x, types.Array) and x.ndim == 1 and x.layout == "C"
            and isinstance(x.dtype, types.Float) and init == x.dtype):
      return None

    def codegen(context, builder, signature, args):
      start, stop, load = _vector_parts(context, builder, signature, args)
      element = context.get_data_type(x.dtype)
      vector = ir.VectorType(element, 64 // context.get_abi_sizeof(element))

      def pick(acc, v):   # acc if it is NaN, else v if v is NaN or beats acc
        keep = builder.fcmp_unordered("uno", acc, acc)
        better = builder.fcmp_unordered(">" if largest else "<", v, acc)
        return builder.select(keep, acc, builder.select(better, v, acc))

      accs = [cgutils.alloca_once_value(builder, _splat(builder, args[3], vector))
              for _ in range(_EXTREMUM_VECTORS)]
      run = ir.Constant(start.type, vector.count * _EXTREMUM_VECTORS)
      runs_end = builder.sub(stop, builder.srem(builder.sub(stop, start), run))
      with cgutils.for_range_slice(builder, start, runs_end, run) as (i, _):
        for j, acc in enumerate(accs):
          at = builder.add(i, ir.Constant(start.type, j * vector.count))
          builder.store(pick(builder.load(acc), load(at, vector)), acc)
      step = ir.Constant(start.type, vector.count)
      with cgutils.for_range_slice(builder, runs_end, stop, step) as (i, _):
        builder.store(pick(builder.load(accs[0]), load(i, vector)), accs[0])
      lanes_value = builder.load(accs[0])
      for acc in accs[1:]:
        lanes_value = pick(lanes_value, builder.load(acc))
      result = builder.extract_element(lanes_value, ir.Constant(ir.IntType(32), 0))
      for j in range(1, vector.count):
        result = pick(result, builder.extract_element(lanes_value, ir.Constant(ir.IntType(32), j)))
      return result

    return init(x, start, stop, init), codegen
  return lanes


_max_lanes, _min_lanes = _extremum_lanes(True), _extremum_lanes(False)


@numba.njit(cache=True, error_model="numpy")
def row_extremum(x, start, size, init, largest, combine):
  """x[start:start + size] (floats) folded from `init` by `combine`
  (NaN-propagating max if `largest`, else min) in order: by vector lanes,
  and in order where their result is NaN or a zero."""
  stop = start + size - size % (64 // x.itemsize)
  acc = _max_lanes(x, start, stop, init) if largest else _min_lanes(x, start, stop, init)
  for j in range(stop, start + size):
    acc = combine(acc, x[j])
  if acc == 0 or acc != acc:
    acc = init
    for j in range(start, start + size):
      acc = combine(acc, x[j])
  return acc


@numba.njit(cache=True, error_model="numpy")
def row_fold(x, start, size, init, combine):
  """x[start:start + size] folded from `init` by `combine`, in order."""
  acc = init
  for j in range(start, start + size):
    acc = combine(acc, x[j])
  return acc


@numba.njit(cache=True, error_model="numpy")
def add(x, y):
  return x + y


@numba.njit(cache=True, error_model="numpy")
def multiply(x, y):
  return x * y


@numba.njit(cache=True, error_model="numpy")
def bitwise_and(x, y):
  return x & y


@numba.njit(cache=True, error_model="numpy")
def bitwise_or(x, y):
  return x | y


@numba.njit(cache=True, error_model="numpy")
def bitwise_xor(x, y):
  return x ^ y


@numba.njit(cache=True, error_model="numpy")
def logaddexp(x, y):
  """NumPy's logaddexp of float64s (by `math`'s functions, which CUDA
  kernels call too: libm's, as NumPy's are in Numba)."""
  if x == y:
    return x + 0.693147180559945309417232121458176568
  d = x - y
  if d > 0:
    return x + math.log1p(math.exp(-d))
  if d <= 0:
    return y + math.log1p(math.exp(d))
  return d


@numba.njit(cache=True, error_model="numpy")
def greater(x, y):
  """x > y, a NaN x above every y that is not NaN (argmax's order)."""
  if y != y:
    return False
  return x != x or x > y


@numba.njit(cache=True, error_model="numpy")
def less(x, y):
  """x < y, a NaN x below every y that is not NaN (argmin's order)."""
  if y != y:
    return False
  return x != x or x < y


@numba.njit(cache=True, error_model="numpy")
def complex_greater(x, y):
  if S._complex_has_nan(y):
    return False
  return S._complex_has_nan(x) or S._complex_greater(x, y)


@numba.njit(cache=True, error_model="numpy")
def complex_less(x, y):
  if S._complex_has_nan(y):
    return False
  return S._complex_has_nan(x) or S._complex_greater(y, x)


@numba.njit(cache=True, error_model="numpy")
def arg_best(x, outer, n, inner, beats, out):
  """out[o * inner + k] = the first index j along the middle axis of x
  (outer, n, inner) whose element no later element `beats` (strictly)."""
  for o in range(outer):
    for k in range(inner):
      base = o * n * inner + k
      best, best_value = 0, x[base]
      for j in range(1, n):
        value = x[base + j * inner]
        if beats(value, best_value):
          best, best_value = j, value
      out[o * inner + k] = best


@numba.njit(cache=True, error_model="numpy")
def cumulative(x, outer, n, inner, reverse, zero, combine, out):
  """The running fold by `combine` of x (outer, n, inner) along its middle
  axis (from the end when `reverse`), each element first converted to the
  type of `zero` (the accumulator's)."""
  for o in range(outer):
    for k in range(inner):
      base = o * n * inner + k
      acc = zero
      for t in range(n):
        p = base + (n - 1 - t if reverse else t) * inner
        acc = x[p] if t == 0 else combine(acc, x[p])
        out[p] = acc


@numba.njit(cache=True, error_model="numpy")
def f16_values(bits, out):
  for i in range(out.size):
    out[i] = S.f16_value(bits[i])


@numba.njit(cache=True, error_model="numpy")
def bf16_values(bits, out):
  for i in range(out.size):
    out[i] = S.bf16_value(bits[i])


# --- rules -------------------------------------------------------------------------------

def widened(ctx, flat, dtype, size):
  """`flat` (a flat array of `dtype`'s storage) as values: 16-bit floats widened to float32."""
  if np.dtype(dtype) not in _SIXTEEN_BIT:
    return flat
  name = ctx.fresh()
  ctx.emit(f"{name} = np.empty({ctx.dim(size)}, np.float32)")
  widen = f16_values if np.dtype(dtype) == np.float16 else bf16_values
  ctx.emit(f"{ctx.function(widen)}({flat}, {name})")
  return name


def _rows(ctx, x, aval, axes):
  """The name of a flat array of x's elements with the `axes` moved last
  (row-major), in storage, and the length of a row."""
  kept = [d for d in range(aval.ndim) if d not in axes]
  order = kept + sorted(axes)
  size = math.prod(aval.shape[d] for d in axes)
  flat = ctx.fresh("f")
  ctx.emit(f"{flat} = {ctx.flat(x, aval)}")   # (a view made once, not in each iteration)
  if order != sorted(order):
    strides = c_strides(aval.shape)
    rows = new_flat(ctx, math.prod(aval.shape), storage_dtype(aval.dtype))
    ctx.lowering.strided_copy(flat, ctx.dim(0), ctx.ints(strides[d] for d in order),
                              ctx.ints(aval.shape[d] for d in order), rows)
    flat = rows
  return flat, size


def over_rows(ctx, kernel, rows, size, args, acc):
  """acc[i] = kernel(rows, i * size, size, *args) (`args` their source) for
  each element of the flat array `acc`, row i of `rows` being its `size`
  elements from i * size: a loop of the program, run by threads where large."""
  count, row, flat = math.prod(ctx.avals_out[0].shape), ctx.fresh("i"), ctx.fresh("f")
  ctx.emit(f"{flat} = {rows}")   # (a view made once, not in each iteration)
  length = ctx.dim(size)
  with ctx.lowering.loop(row, count, count * size):
    ctx.emit(f"{acc}[{row}] = {ctx.function(kernel)}({flat}, {row} * {length}, {length}, {args})")


_ROWS_A_CALL = 1 << 15
"""The elements of the rows a call of `row_sums` sums (at least one row):
it walks the pairwise plan once for them."""


def sum_rows(ctx, rows, size, run, dtype, acc):
  """acc[i] = the sum (`row_sums`) of row i of `rows` (its `size` elements
  from i * size, of `dtype` values) for each element of the flat array
  `acc` (of `dtype`'s accumulation type), runs of `run` summed pairwise: a
  loop of the program over groups of rows, run by threads where large.
  `rows` a `Rows`: each group computed into a new array just before its sums."""
  count, group = math.prod(ctx.avals_out[0].shape), ctx.fresh("g")
  per_call = max(1, _ROWS_A_CALL // max(size, 1))
  zero = ctx.lowering.const(0, accumulation_dtype(dtype))
  computed = isinstance(rows, Rows)
  if not computed:
    flat = ctx.fresh("f")
    ctx.emit(f"{flat} = {rows}")
  first, stop, rows_a_call = ctx.fresh("r"), ctx.fresh("z"), ctx.dim(per_call)
  tail = f"{ctx.dim(size)}, {ctx.dim(run)}, {zero}"
  with ctx.lowering.loop(group, -(-count // per_call), count * size, computed and rows.costly):
    ctx.emit(f"{first} = {group} * {rows_a_call}")
    ctx.emit(f"{stop} = min({first} + {rows_a_call}, {ctx.dim(count)})")
    if computed:
      ctx.emit(f"{ctx.function(row_sums)}({rows.write(first, stop)}, 0, {stop} - {first}, "
               f"{tail}, {acc}[{first}:])")
    else:
      ctx.emit(f"{ctx.function(row_sums)}({flat}, {first}, {stop}, {tail}, {acc})")


def new_flat(ctx, size, dtype):
  name = ctx.fresh()
  ctx.emit(f"{name} = {ctx.lowering.allocation(ctx.dim(size), type_source(dtype))}")
  return name


def stored(ctx, acc, acc_dtype, out_aval):
  """The value of `out_aval` whose elements are the flat array `acc` (of
  `acc_dtype`) rounded to its dtype."""
  dtype = out_aval.dtype
  if np.dtype(acc_dtype) != storage_dtype(dtype) or np.dtype(dtype) in _SIXTEEN_BIT:
    size = math.prod(out_aval.shape)
    out, k = new_flat(ctx, size, storage_dtype(dtype)), ctx.fresh("k")
    with ctx.lowering.elements(k, ctx.dim(size)):
      ctx.emit(f"{out}[{k}] = {element_to_store(cast(f'{acc}[{k}]', dtype), dtype)}")
    acc = out
  return ctx.result(acc, out_aval)


def pairwise_run(shape, axes):
  """The length of the runs NumPy sums pairwise when reducing a C-contiguous
  array of `shape` over `axes` (0: none, it adds one element at a time)."""
  run = 0
  for d in reversed(range(len(shape))):
    if shape[d] == 1:
      continue
    if d not in axes:
      break
    run = max(run, 1) * shape[d]
  return run


_COLUMNS = 1024
"""The elements of a row `add_rows` adds at a time."""


def _sum_by_rows(ctx, flat, aval, axes, acc):
  """acc (zeros) += the sum over `axes` as NumPy adds it where a kept axis
  of a size other than 1 follows the last reduced one of a size other than
  1: each result element adding its elements one at a time, in order. It
  is a pass over x (`flat`) in order, adding each row of the trailing
  kept axes into the results' row, the rows along that last reduced axis
  into the same row (`add_rows`). (The arrays of sizes have the rank's
  length whatever the shape: the source is the same for every shape.)"""
  kept = [d for d in range(aval.ndim) if d not in axes]
  out_strides = dict(zip(kept, c_strides([aval.shape[d] for d in kept])))
  last = max((d for d in axes if aval.shape[d] != 1), default=0)
  n = math.prod(aval.shape[last + 1:])
  leading = list(aval.shape[:last]) + [1] * (aval.ndim - 1 - last)
  strides = ctx.ints([out_strides.get(d, 0) for d in range(last)]
                     + [0] * (aval.ndim - 1 - last) + [1])
  shape = ctx.ints([*leading, max(n, 1)])
  group = ctx.dim(aval.shape[last] if aval.shape else 1)   # (rank 0: one row)
  columns, width, block = ctx.dim(n), ctx.dim(_COLUMNS), ctx.fresh("b")
  with ctx.lowering.loop(block, -(-n // _COLUMNS), math.prod(aval.shape)):
    ctx.emit(f"{ctx.function(add_rows)}({flat}, {strides}, {shape}, {group}, "
             f"{block} * {width}, min({block} * {width} + {width}, {columns}), {acc})")


@register(lax.reduce_sum_p)
def _reduce_sum(ctx, x, *, axes):
  """The rows' pairwise sums (`row_sums`; one large row of real floats by
  threads, `pairwise_threads`), or where NumPy adds one element at a time
  with a kept axis after the last reduced one (a choice made at run time,
  as the sizes decide it), `_sum_by_rows`."""
  (aval,), (out_aval,) = ctx.avals_in, ctx.avals_out
  acc_dtype = accumulation_dtype(aval.dtype)
  run = pairwise_run(aval.shape, axes)
  by_rows = (run == 0 and any(aval.shape[d] != 1 for d in axes) and math.prod(aval.shape) > 0)
  acc = _zeros(ctx, acc_dtype)
  with ctx.lowering.block(f"if {ctx.dim(by_rows)}:"):
    flat = widened(ctx, ctx.flat(x, aval), aval.dtype, math.prod(aval.shape))
    _sum_by_rows(ctx, flat, aval, axes, acc)
  with ctx.lowering.block("else:"):
    rows, size = _rows(ctx, x, aval, axes)
    rows = widened(ctx, rows, aval.dtype, math.prod(aval.shape))
    if (threads.AVAILABLE and math.prod(out_aval.shape) == 1 and size >= THREADED_ROW
        and run == size and not dtypes.is_complex(aval.dtype)):
      ctx.emit(f"{acc}[0] = {ctx.function(pairwise_threads)}({rows}, 0, {ctx.dim(size)}, "
               f"{ctx.lowering.const(0, acc_dtype)})")
    else:
      sum_rows(ctx, rows, size, run, aval.dtype, acc)
  return stored(ctx, acc, acc_dtype, out_aval)


@register_rows(lax.reduce_sum_p)
def _reduce_sum_rows(ctx, rows, *, axes):
  """reduce_sum over the trailing axes of an operand computed row by row
  (`Rows`): the rows' pairwise sums, as `_reduce_sum`'s, each group of rows
  that one call of `row_sums` sums computed just before it, so that the
  operand is read from the caches, not stored whole in memory (logsumexp's
  exp(x - max))."""
  (aval,), (out_aval,) = ctx.avals_in, ctx.avals_out
  acc_dtype = accumulation_dtype(aval.dtype)
  acc = _zeros(ctx, acc_dtype)
  sum_rows(ctx, rows, rows.size, pairwise_run(aval.shape, axes), aval.dtype, acc)
  return stored(ctx, acc, acc_dtype, out_aval)


def _zeros(ctx, dtype):
  """A new flat array of zeros of `dtype`, one for each result element; its name."""
  acc = ctx.fresh()
  ctx.emit(f"{acc} = np.zeros({ctx.dim(math.prod(ctx.avals_out[0].shape))}, {type_source(dtype)})")
  return acc


def _fold(ctx, x, axes, acc_dtype, init, combine, kernel=row_fold):
  """The reduction of x over `axes` folding each row from `init` by
  `kernel` (`row_fold`, or `row_extremum`), `combine` the source of its
  arguments after `init`."""
  (aval,), (out_aval,) = ctx.avals_in, ctx.avals_out
  rows, size = _rows(ctx, x, aval, axes)
  rows = widened(ctx, rows, aval.dtype, math.prod(aval.shape))
  acc = new_flat(ctx, math.prod(out_aval.shape), acc_dtype)
  over_rows(ctx, kernel, rows, size, f"{ctx.lowering.const(init, acc_dtype)}, {combine}", acc)
  return stored(ctx, acc, acc_dtype, out_aval)


@register(lax.reduce_prod_p)
def _reduce_prod(ctx, x, *, axes):
  acc_dtype = accumulation_dtype(ctx.avals_in[0].dtype)
  return _fold(ctx, x, axes, acc_dtype, 1, ctx.function(multiply))


def _extremum(largest):
  def rule(ctx, x, *, axes):
    dtype = ctx.avals_in[0].dtype
    complex_ = dtypes.is_complex(dtype)
    combine = (S.complex_max if complex_ else S.nan_max) if largest else \
        (S.complex_min if complex_ else S.nan_min)
    init = (max_identity if largest else min_identity)(dtype)
    if dtypes.is_float(dtype):
      return _fold(ctx, x, axes, scalar_dtype(dtype), init,
                   f"{largest}, {ctx.function(combine)}", row_extremum)
    return _fold(ctx, x, axes, scalar_dtype(dtype), init, ctx.function(combine))
  return rule


register(lax.reduce_max_p)(_extremum(True))
register(lax.reduce_min_p)(_extremum(False))


def _bitwise(combine, identity):
  def rule(ctx, x, *, axes):
    dtype = ctx.avals_in[0].dtype
    return _fold(ctx, x, axes, dtype, np.array(identity).astype(dtype), ctx.function(combine))
  return rule


register(lax.reduce_and_p)(_bitwise(bitwise_and, -1))
register(lax.reduce_or_p)(_bitwise(bitwise_or, 0))
register(lax.reduce_xor_p)(_bitwise(bitwise_xor, 0))


def _along(aval, axis):
  """(outer, n, inner): the sizes before, along and after `axis`."""
  return (math.prod(aval.shape[:axis]), aval.shape[axis], math.prod(aval.shape[axis + 1:]))


def _arg_extremum(largest):
  def rule(ctx, x, *, axes, index_dtype):
    (aval,), (out_aval,) = ctx.avals_in, ctx.avals_out
    values = widened(ctx, ctx.flat(x, aval), aval.dtype, math.prod(aval.shape))
    complex_ = dtypes.is_complex(aval.dtype)
    beats = (complex_greater if complex_ else greater) if largest else \
        (complex_less if complex_ else less)
    out = new_flat(ctx, math.prod(out_aval.shape), np.int64)
    ctx.emit(f"{ctx.function(arg_best)}({values}, "
             f"{', '.join(map(ctx.dim, _along(aval, axes[0])))}, "
             f"{ctx.function(beats)}, {out})")
    return stored(ctx, out, np.int64, out_aval)
  return rule


register(lax.argmax_p)(_arg_extremum(True))
register(lax.argmin_p)(_arg_extremum(False))


def _cumulative(acc_dtype, combine):
  def rule(ctx, x, *, axis, reverse):
    (aval,), (out_aval,) = ctx.avals_in, ctx.avals_out
    size = math.prod(aval.shape)
    values = widened(ctx, ctx.flat(x, aval), aval.dtype, size)
    dtype = acc_dtype(aval.dtype)
    out = new_flat(ctx, size, dtype)
    ctx.emit(f"{ctx.function(cumulative)}({values}, {', '.join(map(ctx.dim, _along(aval, axis)))}, "
             f"{bool(reverse)}, {ctx.lowering.const(0, dtype)}, "
             f"{ctx.function(combine(aval.dtype))}, {out})")
    return stored(ctx, out, dtype, out_aval)
  return rule


register(lax.cumsum_p)(_cumulative(accumulation_dtype, lambda dtype: add))
register(lax.cumprod_p)(_cumulative(accumulation_dtype, lambda dtype: multiply))
register(lax.cummax_p)(_cumulative(
    scalar_dtype, lambda dtype: S.complex_max if dtypes.is_complex(dtype) else S.nan_max))
register(lax.cummin_p)(_cumulative(
    scalar_dtype, lambda dtype: S.complex_min if dtypes.is_complex(dtype) else S.nan_min))
register(lax.cumlogsumexp_p)(_cumulative(lambda dtype: np.dtype(np.float64),
                                         lambda dtype: logaddexp))


@register(lax.reduce_p)
def _reduce(ctx, *operands_and_inits, jaxpr, dimensions):
  """A loop over the result elements folding their rows by the computation,
  its jaxpr lowered inline on scalars (the reference's left fold)."""
  n = len(operands_and_inits) // 2
  operands, inits = operands_and_inits[:n], operands_and_inits[n:]
  avals, out_avals = ctx.avals_in[:n], ctx.avals_out
  consts = []
  for c in jaxpr.consts:
    if np.ndim(c):
      raise LoweringError("the numba backend lowers reduce only with scalar constants "
                          "in its computation")
    consts.append(ctx.lowering.const(c, np.asarray(c).dtype))
  rows = [_rows(ctx, x, aval, dimensions) for x, aval in zip(operands, avals)]
  size = ctx.dim(rows[0][1])
  outs = [new_flat(ctx, math.prod(a.shape), storage_dtype(a.dtype)) for a in out_avals]
  i, j = ctx.fresh("i"), ctx.fresh("j")
  with ctx.lowering.elements(i, ctx.dim(math.prod(out_avals[0].shape))):
    acc = [ctx.fresh("acc") for _ in range(n)]
    for a, init in zip(acc, inits):
      ctx.emit(f"{a} = {init}")
    with ctx.lowering.block(f"for {j} in range({size}):"):
      elements = []
      for (row, _), aval in zip(rows, avals):
        e = ctx.fresh("e")
        ctx.emit(f"{e} = {read_element(f'{row}[{i} * {size} + {j}]', aval.dtype)}")
        elements.append(e)
      new = lower_jaxpr(ctx.lowering, jaxpr.jaxpr, [*consts, *acc, *elements])
      ctx.emit(f"{''.join(a + ', ' for a in acc)}= {''.join(v + ', ' for v in new)}")
    for out, a, aval in zip(outs, acc, out_avals):
      ctx.emit(f"{out}[{i}] = {element_to_store(a, aval.dtype)}")
  return [ctx.result(out, aval) for out, aval in zip(outs, out_avals)]
