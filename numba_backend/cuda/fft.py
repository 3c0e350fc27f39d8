"""fft on the numba-cuda backend: NumPy's one-dimensional transforms in its
axis order (`transforms`, numba_backend/rules/fft.py), each a kernel whose
thread computes one output element, a DFT sum in float64 (`dft`) with
twiddles computed on the host by NumPy (`twiddles`, program constants), into
complex128 arrays, the last transform's outputs rounded once to the result
dtype. Not pocketfft's algorithm, so not its bits: a transform of length n
is within (⌈log2 n⌉ + 20)·ε·S of the exact one (ε float64's eps, S the sum of
the magnitudes of its n inputs, IRFFT's Hermitian spectrum whole, over n for
the inverse transforms), so the whole result within the sum of its
transforms' (⌈log2 n⌉ + 20)·ε·S, S over the whole transformed block (the
transforms' unit weights carry each one's error on unchanged), before its
rounding. An output to which a non-finite value contributes is NaN."""

import math

import numba
import numpy as np
from numba import cuda

from refimpl import core
from refimpl.lax.fft import fft_p
from numba_backend.cuda.lower import CUDA_RULES
from numba_backend.lower import type_source
from numba_backend.rules.fft import transforms, unless_empty

_BLOCK = 8
"""The terms a block of `dft`'s sum adds in order."""
_LEVELS = 64
"""The partial sums `dft`'s pairwise sum holds at most (one a power of two of blocks)."""


def twiddles(n, sign):
  """exp(sign·2πi m/n) for m < n, complex128: each part the cosine or sine of
  an angle in [0, π/4] (NumPy's, within 4ε), exact where it is 0 or ±1."""
  quadrant, rest = np.divmod(4 * np.arange(n), n)   # 2π m/n = (π/2)(quadrant + rest/n)
  near = 2 * rest <= n
  angle = (np.pi / 2) * np.where(near, rest, n - rest) / n
  c, s = np.where(near, np.cos(angle), np.sin(angle)), np.where(near, np.sin(angle), np.cos(angle))
  table = np.empty(n, np.complex128)
  table.real = np.choose(quadrant, [c, -s, -c, s]) + 0.0   # (+ 0.0: no negative zeros)
  table.imag = sign * np.choose(quadrant, [s, c, -s, -c]) + 0.0
  return table


@cuda.jit(device=True)
def dft(x, start, stride, count, table, k, hermitian):
  """(real part, imaginary part), in float64, of output k of the transform
  of length n = table.size whose twiddles are `table` (`twiddles`) of the
  count <= n elements x_j = x[start + j * stride] (k < n): sum_j x_j·w[j k mod n];
  `hermitian`: (the real sum of the Hermitian spectrum of which x_j are the
  first count entries, 0): Re(x_0) + 2·sum_{0<j<n/2} Re(x_j·w[j k mod n])
  + Re(x_{n/2})·w[n/2 k mod n] for even n. Each product's part is
  a·c - b·d (a·d + b·c) rounded twice (no fma); the terms are added in
  ascending j in blocks of 8, each summed in order from zero, the blocks'
  sums pairwise (those of 2^(m+1) aligned blocks as the sum of the first
  2^m's plus the next 2^m's), the partial sums left at the end from the
  last: deterministic. NaN, both parts, where an input part read is not finite."""
  n = table.size
  re_sums = cuda.local.array(_LEVELS, numba.float64)
  im_sums = cuda.local.array(_LEVELS, numba.float64)
  top, poison, m = 0, 0.0, 0   # m: j k mod n
  for first in range(0, count, _BLOCK):
    re, im = 0.0, 0.0
    for j in range(first, min(first + _BLOCK, count)):
      value, w = x[start + j * stride], table[m]
      a, b = np.float64(value.real), np.float64(value.imag)
      m = m + k if m + k < n else m + k - n
      if hermitian and (j == 0 or 2 * j == n):
        poison += a - a   # (0 where a is finite, else NaN)
        re += a * w.real
      elif hermitian:
        poison += (a - a) + (b - b)
        re += 2.0 * (a * w.real - b * w.imag)
      else:
        poison += (a - a) + (b - b)
        re += a * w.real - b * w.imag
        im += a * w.imag + b * w.real
    merged = first // _BLOCK   # the blocks before: its trailing ones, sums to merge
    while merged & 1:
      top -= 1
      re, im = re_sums[top] + re, im_sums[top] + im
      merged >>= 1
    re_sums[top], im_sums[top] = re, im
    top += 1
  re, im = 0.0, 0.0
  for level in range(top - 1, -1, -1):
    re, im = re_sums[level] + re, im_sums[level] + im
  if poison != poison:
    return math.nan, math.nan
  return re, im


def _transform(ctx, value, shape, axis, function, n, twiddle, dtype):
  """A kernel computing np.fft's `function` of length n along `axis` of the
  flat array `value` of `shape` (a thread an output: `dft`, with the
  `twiddle` table's name) into a new flat array of `dtype`; the inverse
  transforms scaled by 1/n after the sum, as pocketfft does. Its name."""
  hermitian = function == "irfft"
  size = n // 2 + 1 if function == "rfft" else n   # the outputs along the axis
  terms = min(shape[axis], n // 2 + 1) if hermitian else n
  inner = math.prod(shape[axis + 1:])
  count = math.prod(shape[:axis]) * size * inner
  out = ctx.fresh()
  ctx.emit(f"{out} = {ctx.lowering.allocation(ctx.dim(count), type_source(dtype))}")
  scale = ctx.lowering.const(1 / max(n, 1), np.float64) if function in ("ifft", "irfft") else None
  length, inner, size, terms = map(ctx.dim, (shape[axis], inner, size, terms))
  t, o, k, i, re, im = (ctx.fresh(p) for p in ("t", "o", "k", "i", "r", "m"))
  with ctx.lowering.elements(t, ctx.dim(count)):
    ctx.emit(f"{o}, {k}, {i} = {t} // ({size} * {inner}), ({t} // {inner}) % {size}, {t} % {inner}")
    ctx.emit(f"{re}, {im} = {ctx.function(dft)}({value}, {o} * {length} * {inner} + {i}, {inner}, "
             f"{terms}, {twiddle}, {k}, {hermitian})")
    if scale:
      ctx.emit(f"{re}, {im} = {re} * {scale}, {im} * {scale}")
    ctx.emit(f"{out}[{t}] = {type_source(dtype)}({re if hermitian else f'complex({re}, {im})'})")
  return out


def _fft(ctx, x, *, fft_type, fft_lengths):
  """NumPy's transforms, a kernel each, into complex128 arrays, the last
  one's outputs rounded to the result dtype."""
  (aval,), (out_aval,) = ctx.avals_in, ctx.avals_out
  tables = {}

  def table(n, sign):
    """The name of the twiddles of length n (a program constant; n = 0's never read)."""
    if (n, sign) not in tables:
      values = twiddles(max(n, 1), sign)
      tables[n, sign] = ctx.lowering.array(values, core.get_aval(values))
    return tables[n, sign]

  def transform():
    shape, value = list(aval.shape), ctx.fresh()
    ctx.emit(f"{value} = {ctx.flat(x, aval)}")   # (a view made on the host: kernels take arrays)
    steps = transforms(fft_type, fft_lengths, aval.ndim)
    for step, (function, axis, n) in enumerate(steps):
      dtype = out_aval.dtype if step == len(steps) - 1 else np.complex128
      twiddle = table(n, 1 if function in ("ifft", "irfft") else -1)
      value = _transform(ctx, value, shape, axis, function, n, twiddle, dtype)
      shape[axis] = n // 2 + 1 if function == "rfft" else n
    return f"{value}.reshape({ctx.shape(out_aval.shape)})"

  return unless_empty(ctx, fft_lengths, transform)


CUDA_RULES[fft_p] = _fft
