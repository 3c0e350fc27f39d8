"""Lowering rules of sort, top_k and approx_top_k (refimpl/lax/sorting.py).

Each key operand becomes int64 keys whose order is the reference's order
(`float_keys`: the sort order's canonical floats, or IEEE totalOrder); a
stable merge sort of every line along the dimension by those keys
(lexicographically) gives one permutation, which moves the elements of
every operand. So results are the reference's exactly (it is stable too).
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
def float_keys(x, key, canonical, nan_key, out):
  """out[i] = key(x[i]); canonical: zeros as +0.0 and every NaN `nan_key`."""
  for i in range(x.size):
    v = x[i]
    if canonical and v != v:
      out[i] = nan_key
    elif canonical and v == 0:
      out[i] = 0
    else:
      out[i] = key(v)


@numba.njit(**_JIT)
def half_keys(x, canonical, inf_magnitude, out):
  """float_keys of the 16-bit floats whose bits are x (infinity's bits
  `inf_magnitude`): the NaN key is just above +inf's."""
  for i in range(x.size):
    magnitude = np.int64(x[i] & 0x7FFF)
    if canonical and magnitude > inf_magnitude:
      out[i] = inf_magnitude + 1
    elif canonical and magnitude == 0:
      out[i] = 0
    else:
      out[i] = _signed_magnitude((x[i] & 0x8000) != 0, magnitude)


@numba.njit(**_JIT)
def complex_keys(x, key, real, imag):
  """The totalOrder keys of the real and imaginary parts of x."""
  for i in range(x.size):
    real[i] = key(x[i].real)
    imag[i] = key(x[i].imag)


@numba.njit(**_JIT)
def int_keys(x, out):
  """out[i] = x[i] as int64 (bool as 0 or 1)."""
  for i in range(x.size):
    out[i] = np.int64(x[i])


@numba.njit(**_JIT)
def uint64_keys(x, out):
  """out[i] = x[i] with its top bit flipped, as int64 (the same order)."""
  for i in range(x.size):
    out[i] = np.int64(x[i] ^ np.uint64(0x8000000000000000))


@numba.njit(**_JIT)
def invert(keys):
  """Reverses the order of `keys` in place (~k, without overflow)."""
  for i in range(keys.size):
    keys[i] = ~keys[i]


# --- sorting -----------------------------------------------------------------------------

@numba.njit(**_JIT)
def _precedes(keys, a, b):
  """Whether position a's keys come before position b's (lexicographically)."""
  for r in range(keys.shape[0]):
    if keys[r, a] != keys[r, b]:
      return keys[r, a] < keys[r, b]
  return False


@numba.njit(**_JIT)
def sort_permutation(keys, outer, n, inner, perm):
  """perm[o, j, k] (flat, shape (outer, n, inner)) = the index along the
  middle axis of the j-th element of line (o, :, k) in the stable order of
  the key rows `keys` (flat positions in their columns)."""
  line = np.empty(n, np.int64)
  other = np.empty(n, np.int64)
  for o in range(outer):
    for k in range(inner):
      base = o * n * inner + k
      for j in range(n):
        line[j] = j
      width = 1
      while width < n:   # bottom-up merge sort of `line`, stable
        for lo in range(0, n, 2 * width):
          mid, hi = min(lo + width, n), min(lo + 2 * width, n)
          a, b = lo, mid
          for t in range(lo, hi):
            if a < mid and (b >= hi or not _precedes(keys, base + line[b] * inner,
                                                     base + line[a] * inner)):
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
def take_lines(x, perm, outer, n, inner, m, out):
  """out (outer, m, inner) = the first m of x's elements along the middle
  axis in the order `perm` (outer, n, inner)."""
  for o in range(outer):
    for j in range(m):
      for k in range(inner):
        out[(o * m + j) * inner + k] = x[(o * n + perm[(o * n + j) * inner + k]) * inner + k]


@numba.njit(**_JIT)
def first_indices(perm, outer, n, inner, m, out):
  """out (outer, m, inner) = the first m indices of `perm` (outer, n, inner)."""
  for o in range(outer):
    for j in range(m):
      for k in range(inner):
        out[(o * m + j) * inner + k] = perm[(o * n + j) * inner + k]


# --- rules -------------------------------------------------------------------------------

def _keys(ctx, x, aval, canonical):
  """Names of flat int64 arrays ordering x's elements: the sort order
  (`canonical`) or IEEE totalOrder; two for complex (real, imag)."""
  dtype = np.dtype(aval.dtype)
  size = ctx.dim(math.prod(aval.shape))
  flat = ctx.flat(x, aval)
  names = [ctx.fresh("key") for _ in range(2 if dtypes.is_complex(dtype) else 1)]
  for name in names:
    ctx.emit(f"{name} = np.empty({size}, np.int64)")
  if dtypes.is_complex(dtype):
    key = f32_key if dtype == np.complex64 else f64_key
    ctx.emit(f"{ctx.function(complex_keys)}({flat}, {ctx.function(key)}, {names[0]}, {names[1]})")
  elif dtype in _HALF_INF_BITS:
    ctx.emit(f"{ctx.function(half_keys)}({flat}, {canonical}, {_HALF_INF_BITS[dtype]}, {names[0]})")
  elif dtypes.is_float(dtype):
    key, nan_key = (f32_key, 0x7F800001) if dtype == np.float32 else (f64_key, 0x7FF0000000000001)
    ctx.emit(f"{ctx.function(float_keys)}({flat}, {ctx.function(key)}, {canonical}, "
             f"{nan_key}, {names[0]})")
  else:
    kernel = uint64_keys if dtype == np.uint64 else int_keys
    ctx.emit(f"{ctx.function(kernel)}({flat}, {names[0]})")
  return names


def _permutation(ctx, keys, aval, axis, descending=False):
  """The name of the flat int64 permutation sorting the lines along `axis`
  by the flat key arrays `keys` (stably; `descending` reverses the order)."""
  size = ctx.dim(math.prod(aval.shape))
  matrix, perm = ctx.fresh("keys"), ctx.fresh("perm")
  ctx.emit(f"{matrix} = np.empty(({len(keys)}, {size}), np.int64)")
  for r, key in enumerate(keys):
    if descending:
      ctx.emit(f"{ctx.function(invert)}({key})")
    ctx.emit(f"{matrix}[{r}] = {key}")
  ctx.emit(f"{perm} = np.empty({size}, np.int64)")
  ctx.emit(f"{ctx.function(sort_permutation)}({matrix}, {_along(ctx, aval, axis)}, {perm})")
  return perm


def _along(ctx, aval, axis):
  """Source of (outer, n, inner): the sizes before, along and after `axis`."""
  sizes = (math.prod(aval.shape[:axis]), aval.shape[axis], math.prod(aval.shape[axis + 1:]))
  return ", ".join(ctx.dim(s) for s in sizes)


def _taken(ctx, kernel, x, aval, perm, axis, out_aval):
  """The value of `out_aval` holding the first elements of x's lines in the order `perm`."""
  out, out_flat = ctx.empty_flat(out_aval)
  ctx.emit(f"{ctx.function(kernel)}({ctx.flat(x, aval)}, {perm}, {_along(ctx, aval, axis)}, "
           f"{ctx.dim(out_aval.shape[axis])}, {out_flat})")
  return ctx.result(out, out_aval)


@register(lax.sort_p)
def _sort(ctx, *operands, dimension, is_stable, num_keys):
  avals = ctx.avals_in
  keys = [k for x, aval in zip(operands[:num_keys], avals) for k in _keys(ctx, x, aval, True)]
  perm = _permutation(ctx, keys, avals[0], dimension)
  return [_taken(ctx, take_lines, x, aval, perm, dimension, out_aval)
          for x, aval, out_aval in zip(operands, avals, ctx.avals_out)]


def _top(ctx, x, axis, largest):
  (aval,), (values_aval, indices_aval) = ctx.avals_in, ctx.avals_out
  perm = _permutation(ctx, _keys(ctx, x, aval, False), aval, axis, descending=largest)
  indices = ctx.fresh()
  ctx.emit(f"{indices} = np.empty({ctx.dim(math.prod(indices_aval.shape))}, np.int64)")
  ctx.emit(f"{ctx.function(first_indices)}({perm}, {_along(ctx, aval, axis)}, "
           f"{ctx.dim(indices_aval.shape[axis])}, {indices})")
  out_indices = ctx.fresh()
  ctx.emit(f"{out_indices} = {indices}.astype(np.int32)")
  return [_taken(ctx, take_lines, x, aval, perm, axis, values_aval),
          ctx.result(out_indices, indices_aval)]


@register(lax.top_k_p)
def _top_k(ctx, x, *, k, axis):
  return _top(ctx, x, axis, True)


@register(lax.approx_top_k_p)
def _approx_top_k(ctx, x, *, k, reduction_dimension, recall_target, is_max_k,
                  reduction_input_size_override, aggregate_to_topk):
  return _top(ctx, x, reduction_dimension % ctx.avals_in[0].ndim, is_max_k)
