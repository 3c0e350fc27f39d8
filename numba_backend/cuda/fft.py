"""fft on the numba-cuda backend: NumPy's one-dimensional transforms in its
axis order (`transforms`, numba_backend/rules/fft.py), each a mixed-radix
Cooley-Tukey transform in complex128: the line's inputs (IRFFT's Hermitian
spectrum made whole) loaded by a kernel, then a kernel for each radix r of
n's factorization (`radices`: fours, a two, then odd primes ascending), a
thread an output of the stage computing its sum of r products (`stage`),
then the outputs (scaled by 1/n for the inverse transforms, as pocketfft
does) rounded to the result dtype by the last transform. Twiddles are
computed on the host by NumPy (`twiddles`, program constants). Not
pocketfft's order, so not its bits: a transform of length n is within
(Σ_r (r + 8) + 1)·ε·S of the exact one (ε float64's eps, S the sum of the
magnitudes of its n inputs, IRFFT's Hermitian spectrum whole, over n for
the inverse transforms), so the whole result within the sum of its
transforms' bounds, S over the whole transformed block (the transforms'
unit weights carry each one's error on unchanged), before its rounding.
An input that is not finite is loaded as NaN (both parts), and a stage's
output to which a non-finite value contributes is NaN, so every output of a
transform reading one is (a transform of length 1 too). The work is n·Σ_r r
a transform: a large prime factor p of n costs p terms an output."""

import math

import numpy as np
from numba import cuda

from refimpl import core
from refimpl.lax.fft import fft_p
from numba_backend.cuda.lower import CUDA_RULES
from numba_backend.lower import type_source
from numba_backend.rules.fft import transforms, unless_empty


def radices(n):
  """The factors of n by which its transform proceeds, in order: fours, a
  two, then its odd prime factors ascending (none for n <= 1)."""
  factors, p = [], 3
  while n % 4 == 0 and n > 1:
    factors.append(4)
    n //= 4
  if n % 2 == 0 and n > 1:
    factors.append(2)
    n //= 2
  while n > 1:
    while n % p == 0:
      factors.append(p)
      n //= p
    p += 2
  return factors


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
def _poisoned(value):
  """`value` (complex128), or NaN in both parts where a part is not finite."""
  a, b = value.real, value.imag
  if (a - a) + (b - b) != 0.0:   # (NaN where a part is not finite)
    return complex(math.nan, math.nan)
  return value


@cuda.jit(device=True)
def load(x, t, n, length, inner, terms, hermitian):
  """Input j = t % n of line t // n (outer index times `inner` plus inner
  index) of a transform of length n along an axis of `length` of the flat
  array x, as complex128; `hermitian` (IRFFT): entry j of the Hermitian
  spectrum whose first `terms` entries x holds (its others zero): x_j for
  j <= n/2 (the real part alone for j 0 and n/2), else conj(x_(n - j)).
  NaN in both parts where a part it reads is not finite."""
  line, j = t // n, t % n
  start = (line // inner) * length * inner + line % inner
  m = j if not hermitian or 2 * j <= n else n - j
  if hermitian and m >= terms:
    return complex(0.0, 0.0)
  value = complex(x[start + m * inner])
  if hermitian and (m == 0 or 2 * m == n):
    value = complex(value.real, 0.0)
  elif m != j:
    value = value.conjugate()
  return _poisoned(value)


@cuda.jit(device=True)
def stage(source, t, n, table, radix, before):
  """Output t of the stage of radix `radix` of the transforms of length n
  whose twiddles are `table` (`twiddles`) on the flat lines of n of
  `source`, each holding, for each q < n / before, the transform of length
  `before` of its inputs q, q + n / before, ... in place q·before + k: the
  transform of length before·radix of inputs q, q + n / (before·radix), ...
  at its place, sum_j w[(j k mod before·radix)·n / (before·radix)]·source_j
  over the radix transforms interleaved in it, j ascending from zero, each
  product's part a·c - b·d (a·d + b·c) rounded twice (no fma); NaN, both
  parts, where a value read is not finite."""
  line, e = t // n, t % n
  after = before * radix
  q, k, stride = e // after, e % after, n // after
  re, im, poison = 0.0, 0.0, 0.0
  for j in range(radix):
    value, w = source[line * n + (q + j * stride) * before + k % before], \
        table[((j * k) % after) * stride]
    a, b = value.real, value.imag
    poison += (a - a) + (b - b)   # (0 where both are finite, else NaN)
    re += a * w.real - b * w.imag
    im += a * w.imag + b * w.real
  if poison != poison:
    return complex(math.nan, math.nan)
  return complex(re, im)


def _transform(ctx, value, shape, axis, function, n, twiddle, dtype):
  """Kernels computing np.fft's `function` of length n along `axis` of the
  flat array `value` of `shape` (`load`, a `stage` a radix of n, `twiddle`
  the table's name) into a new flat array of `dtype`; the inverse
  transforms scaled by 1/n after the sum, as pocketfft does. Its name."""
  hermitian = function == "irfft"
  size = n // 2 + 1 if function == "rfft" else n   # the outputs along the axis
  terms = min(shape[axis], n // 2 + 1) if hermitian else n
  outer, inner = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
  factors = radices(n)
  work, other, out = ctx.fresh(), ctx.fresh(), ctx.fresh()
  for name, count, kind in ((work, outer * inner * n, np.complex128),
                            (other, outer * inner * n, np.complex128),
                            (out, outer * size * inner, dtype)):
    ctx.emit(f"{name} = {ctx.lowering.allocation(ctx.dim(count), type_source(kind))}")
  scale = ctx.lowering.const(1 / max(n, 1), np.float64) if function in ("ifft", "irfft") else None
  lines, length, step, terms, steps = ctx.dim(outer * inner * n), *map(
      ctx.dim, (shape[axis], inner, terms)), ctx.ints(factors)
  results, size, n = ctx.dim(outer * size * inner), ctx.dim(size), ctx.dim(n)
  t, o, k, i, v, s, before = (ctx.fresh(p) for p in "tokivsb")
  with ctx.lowering.elements(t, lines):
    ctx.emit(f"{work}[{t}] = {ctx.function(load)}({value}, {t}, {n}, {length}, {step}, "
             f"{terms}, {hermitian})")
  ctx.emit(f"{before} = 1")
  with ctx.lowering.block(f"for {s} in range({ctx.dim(len(factors))}):"):
    with ctx.lowering.elements(t, lines):
      ctx.emit(f"{other}[{t}] = {ctx.function(stage)}({work}, {t}, {n}, {twiddle}, "
               f"{steps}[{s}], {before})")
    ctx.emit(f"{work}, {other}, {before} = {other}, {work}, {before} * {steps}[{s}]")
  with ctx.lowering.elements(t, results):
    ctx.emit(f"{o}, {k}, {i} = {t} // ({size} * {step}), ({t} // {step}) % {size}, {t} % {step}")
    ctx.emit(f"{v} = {work}[({o} * {step} + {i}) * {n} + {k}]")
    if scale:
      ctx.emit(f"{v} = complex({v}.real * {scale}, {v}.imag * {scale})")
    ctx.emit(f"{out}[{t}] = {type_source(dtype)}({f'{v}.real' if hermitian else v})")
  return out


def _fft(ctx, x, *, fft_type, fft_lengths):
  """NumPy's transforms (`_transform`'s kernels each) into complex128
  arrays, the last one's outputs rounded to the result dtype."""
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
