"""Lowering rules of sort, top_k and approx_top_k (refimpl/lax/sorting.py).

Each key operand becomes int64 keys whose order is the reference's order
(`float_key`: the sort order's canonical floats, or IEEE totalOrder); a
stable merge sort of every line along the dimension by those keys
(lexicographically) gives one permutation, which moves the elements of
every operand. So results are the reference's exactly (it is stable too).
`sorting_rules` makes the rules from a target's steps (the CPU's here, the
numba-cuda backend's kernels in numba_backend/cuda/sorting.py).
"""

import math

import numba
import numpy as np

from refimpl import dtypes
from refimpl.lax import sorting as lax
from numba_backend import scalars as S
from numba_backend.lower import register

_HALF_INF_BITS = {np.dtype(np.float16): 0x7C00, dtypes.bfloat16: 0x7F80}
_JIT = dict(cache=True, error_model="numpy")


# --- keys --------------------------------------------------------------------------------

@numba.njit(**_JIT)
def _signed_magnitude(negative, magnitude):
  """The totalOrder key of a float from its sign and its other bits: -0.0 is -1."""
  return -1 - magnitude if negative else magnitude


@numba.njit(**_JIT)
def f32_key(v):
  """The IEEE totalOrder key of float32 `v`."""
  u = S.f32_bits(v)
  return _signed_magnitude((u >> np.uint32(31)) != 0, np.int64(u & np.uint32(0x7FFFFFFF)))


@numba.njit(**_JIT)
def f64_key(v):
  """The IEEE totalOrder key of float64 `v`."""
  u = S.f64_bits(v)
  return _signed_magnitude((u >> np.uint64(63)) != 0,
                           np.int64(u & np.uint64(0x7FFFFFFFFFFFFFFF)))


@numba.njit(**_JIT)
def float_key(v, key, canonical, nan_key):
  """key(v); canonical: zeros as +0.0 and every NaN `nan_key`."""
  if canonical and v != v:
    return nan_key
  if canonical and v == 0:
    return 0
  return key(v)


@numba.njit(**_JIT)
def half_key(h, canonical, inf_magnitude):
  """float_key of the 16-bit float whose bits are h (infinity's bits
  `inf_magnitude`): the NaN key is just above +inf's."""
  magnitude = np.int64(h & 0x7FFF)
  if canonical and magnitude > inf_magnitude:
    return inf_magnitude + 1
  if canonical and magnitude == 0:
    return 0
  return _signed_magnitude((h & 0x8000) != 0, magnitude)


@numba.njit(**_JIT)
def uint64_key(v):
  """v with its top bit flipped, as int64 (the same order)."""
  return np.int64(v ^ np.uint64(0x8000000000000000))


# --- sorting -----------------------------------------------------------------------------

@numba.njit(**_JIT)
def sort_line(keys, base, n, inner, line, other, perm):
  """perm[base + j * inner] (j < n) = the index i of the j-th of the n
  positions base + i * inner in the stable order of the key rows `keys`
  (compared lexicographically): a bottom-up merge sort of the indices, runs
  of width 1, 2, 4... merged left to right, a tie taken from the left run;
  `line` and `other` its scratch (n each)."""
  for j in range(n):
    line[j] = j
  width = 1
  while width < n:
    for lo in range(0, n, 2 * width):
      mid, hi = min(lo + width, n), min(lo + 2 * width, n)
      a, b = lo, mid
      for t in range(lo, hi):
        left = a < mid
        if left and b < hi:   # unless the right one's keys come first
          p, q = base + line[a] * inner, base + line[b] * inner
          for r in range(keys.shape[0]):
            if keys[r, p] != keys[r, q]:
              left = keys[r, p] < keys[r, q]
              break
        if left:
          other[t] = line[a]
          a += 1
        else:
          other[t] = line[b]
          b += 1
    line, other = other, line
    width *= 2
  for j in range(n):
    perm[base + j * inner] = line[j]


@numba.njit(**_JIT)
def sort_permutation(keys, outer, n, inner, perm):
  """perm[o, j, k] (flat, shape (outer, n, inner)) = the index along the
  middle axis of the j-th element of line (o, :, k) in the stable order of
  the key rows `keys` (flat positions in their columns): `sort_line`."""
  line = np.empty(n, np.int64)
  other = np.empty(n, np.int64)
  for o in range(outer):
    for k in range(inner):
      sort_line(keys, o * n * inner + k, n, inner, line, other, perm)


@numba.njit(**_JIT)
def line_position(o, j, k, n, inner):
  """The flat position of element j of line (o, :, k) of an array (outer, n, inner)."""
  return (o * n + j) * inner + k


@numba.njit(**_JIT)
def take_lines(x, perm, outer, n, inner, m, out):
  """out (outer, m, inner) = the first m of x's elements along the middle
  axis in the order `perm` (outer, n, inner)."""
  for o in range(outer):
    for j in range(m):
      for k in range(inner):
        out[line_position(o, j, k, m, inner)] = x[
            line_position(o, perm[line_position(o, j, k, n, inner)], k, n, inner)]


@numba.njit(**_JIT)
def first_indices(perm, outer, n, inner, m, out):
  """out (outer, m, inner; int32) = the first m indices of `perm` (outer, n, inner)."""
  for o in range(outer):
    for j in range(m):
      for k in range(inner):
        out[line_position(o, j, k, m, inner)] = np.int32(perm[line_position(o, j, k, n, inner)])


# --- rules -------------------------------------------------------------------------------

def _key_sources(ctx, element, dtype, canonical):
  """Sources of the int64 keys (two for complex: real, imag) ordering the
  element `element` (a source) of `dtype`: the sort order (`canonical`) or
  IEEE totalOrder."""
  dtype = np.dtype(dtype)
  if dtypes.is_complex(dtype):
    key = ctx.function(f32_key if dtype == np.complex64 else f64_key)
    return [f"{key}({element}.real)", f"{key}({element}.imag)"]
  if dtype in _HALF_INF_BITS:
    return [f"{ctx.function(half_key)}({element}, {canonical}, {_HALF_INF_BITS[dtype]})"]
  if dtypes.is_float(dtype):
    key, nan_key = (f32_key, 0x7F800001) if dtype == np.float32 else (f64_key, 0x7FF0000000000001)
    return [f"{ctx.function(float_key)}({element}, {ctx.function(key)}, {canonical}, {nan_key})"]
  if dtype == np.uint64:
    return [f"{ctx.function(uint64_key)}({element})"]
  return [f"np.int64({element})"]


def _key_rows(ctx, operands, avals, canonical, descending):
  """The name of the int64 array (keys, size) whose columns order the
  elements of the flat `operands` lexicographically (`_key_sources`'
  keys, operand after operand; ~k where `descending`), written by a loop
  over each operand's elements."""
  dtypes_ = [np.dtype(aval.dtype) for aval in avals]
  count = sum(2 if dtypes.is_complex(dtype) else 1 for dtype in dtypes_)
  size = ctx.dim(math.prod(avals[0].shape))
  matrix = ctx.fresh("keys")
  ctx.emit(f"{matrix} = {ctx.lowering.allocation(f'({ctx.dim(count)}, {size})', 'np.int64')}")
  row = 0
  for x, aval, dtype in zip(operands, avals, dtypes_):
    flat, i, element = ctx.fresh("f"), ctx.fresh("i"), ctx.fresh("e")
    ctx.emit(f"{flat} = {ctx.flat(x, aval)}")
    rows = [ctx.fresh("r") for _ in range(2 if dtypes.is_complex(dtype) else 1)]
    for r in rows:   # (views made outside the loop: a target's kernels take arrays)
      ctx.emit(f"{r} = {matrix}[{row}]")
      row += 1
    with ctx.lowering.elements(i, size):
      ctx.emit(f"{element} = {flat}[{i}]")
      for r, key in zip(rows, _key_sources(ctx, element, dtype, canonical)):
        ctx.emit(f"{r}[{i}] = {f'~{key}' if descending else key}")
  return matrix


def _along(aval, axis):
  """(outer, n, inner): the sizes before, along and after `axis`."""
  return math.prod(aval.shape[:axis]), aval.shape[axis], math.prod(aval.shape[axis + 1:])


def sorting_rules(permutation, take, first):
  """The rules (sort, top_k, approx_top_k) of a target whose steps are, with
  `along` the (outer, n, inner) of the lines (`_along`) and arrays flat:
  `permutation(ctx, keys, along, perm)` writing into the new int64 array
  `perm` (outer, n, inner) `sort_permutation`'s permutation by the key
  rows `keys` (`_key_rows`'); `take(ctx, x, perm, along, m, out)` writing
  `take_lines`' first m elements of x's lines; `first(ctx, perm, along, m,
  out)` writing `first_indices`' int32 indices."""
  def permuted(ctx, operands, avals, axis, canonical, descending=False):
    along = _along(avals[0], axis)
    keys = _key_rows(ctx, operands, avals, canonical, descending)
    perm = ctx.fresh("perm")
    ctx.emit(f"{perm} = {ctx.lowering.allocation(ctx.dim(math.prod(along)), 'np.int64')}")
    permutation(ctx, keys, along, perm)
    return perm, along

  def taken(ctx, x, aval, perm, along, out_aval, axis):
    out, out_flat = ctx.empty_flat(out_aval)
    take(ctx, ctx.flat(x, aval), perm, along, out_aval.shape[axis], out_flat)
    return ctx.result(out, out_aval)

  def sort(ctx, *operands, dimension, is_stable, num_keys):
    avals = ctx.avals_in
    perm, along = permuted(ctx, operands[:num_keys], avals[:num_keys], dimension, True)
    return [taken(ctx, x, aval, perm, along, out_aval, dimension)
            for x, aval, out_aval in zip(operands, avals, ctx.avals_out)]

  def top(ctx, x, axis, largest):
    (aval,), (values_aval, indices_aval) = ctx.avals_in, ctx.avals_out
    perm, along = permuted(ctx, [x], [aval], axis, False, descending=largest)
    indices, indices_flat = ctx.empty_flat(indices_aval)
    first(ctx, perm, along, indices_aval.shape[axis], indices_flat)
    return [taken(ctx, x, aval, perm, along, values_aval, axis),
            ctx.result(indices, indices_aval)]

  def top_k(ctx, x, *, k, axis):
    return top(ctx, x, axis, True)

  def approx_top_k(ctx, x, *, k, reduction_dimension, recall_target, is_max_k,
                   reduction_input_size_override, aggregate_to_topk):
    return top(ctx, x, reduction_dimension % ctx.avals_in[0].ndim, is_max_k)

  return sort, top_k, approx_top_k


PRIMITIVES = (lax.sort_p, lax.top_k_p, lax.approx_top_k_p)
"""The primitives of `sorting_rules`' rules, in their order."""


def _permutation(ctx, keys, along, perm):
  ctx.emit(f"{ctx.function(sort_permutation)}({keys}, {', '.join(map(ctx.dim, along))}, {perm})")


def _take(ctx, x, perm, along, m, out):
  ctx.emit(f"{ctx.function(take_lines)}({x}, {perm}, {', '.join(map(ctx.dim, along))}, "
           f"{ctx.dim(m)}, {out})")


def _first(ctx, perm, along, m, out):
  ctx.emit(f"{ctx.function(first_indices)}({perm}, {', '.join(map(ctx.dim, along))}, "
           f"{ctx.dim(m)}, {out})")


for _primitive, _rule in zip(PRIMITIVES, sorting_rules(_permutation, _take, _first)):
  register(_primitive)(_rule)
