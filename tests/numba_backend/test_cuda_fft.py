"""The numba-cuda backend's fft in numba's CUDA simulator against the
reference (NumPy's pocketfft in complex128): within the bound that
numba_backend/cuda/fft.py states, NaN wherever the reference is not finite;
and its kernels compiled to PTX for compute capability 9.0."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import lax
from refimpl.lax import FftType
from tests.numba_backend.ptx import compiled_ptx, instructions

LENGTHS = [0, 1, 2, 3, 5, 8, 12, 17, 30, 64]


def _prime_factors(n):
  """n's prime factors, with their multiplicity."""
  factors, p = [], 2
  while n > 1:
    while n % p == 0:
      factors.append(p)
      n //= p
    p += 1
  return factors


def _bound(x, fft_type, fft_lengths):
  """Per batch element (broadcasting against the result), the most a part
  of the backend's result may differ from the reference's before their
  rounding: each value within C·ε·S of the exact transform, C the sum over
  the transforms of 1 + the sum of p + 8 over n's prime factors p (with
  their multiplicity: at least the stated Σ_r (r + 8) + 1 over the radices,
  whose fours are two twos), S the sum of the magnitudes of the
  block's entries read (IRFFT's last axis: its Hermitian spectrum's,
  entries 0 < k < n/2 counted twice), over N for the inverse transforms."""
  x = np.abs(np.asarray(x).astype(np.complex128))
  batch = x.shape[:x.ndim - len(fft_lengths)]
  if fft_type == FftType.IRFFT:
    n = fft_lengths[-1]
    weights = np.where(np.arange(n // 2 + 1) % (max(n, 1) / 2) == 0, 1.0, 2.0)
    x = x[..., :n // 2 + 1] * weights[:x.shape[-1]]
  total = x.reshape(*batch, -1).sum(-1)
  if fft_type in (FftType.IFFT, FftType.IRFFT):
    total = total / max(math.prod(fft_lengths), 1)
  c = sum(1 + sum(p + 8 for p in _prime_factors(n)) for n in fft_lengths if n)
  return (c * np.finfo(np.float64).eps * total).reshape(*batch, *[1] * len(fft_lengths))


def _assert_within(got, want, x, fft_type, fft_lengths, what=""):
  """got (the backend's) within the bound of the reference's `want`: twice
  `_bound` (the reference's own float64 error is of its order) plus the
  two roundings to the result dtype."""
  got, want = np.asarray(got), np.asarray(want)
  assert got.dtype == want.dtype and got.shape == want.shape, what
  finfo = np.finfo(got.dtype)
  bound = 2 * _bound(x, fft_type, fft_lengths)
  for g, w in ((got.real, want.real), (got.imag, want.imag)):
    allowed = bound + finfo.eps * np.maximum(np.abs(g), np.abs(w)) + finfo.smallest_subnormal
    assert (np.abs(g.astype(np.float64) - w) <= allowed).all(), (what, got, want)


def _operand(rng, fft_type, shape, x64, scale=1.0):
  """Standard normal values of the operand dtype of `fft_type` (times `scale`)."""
  real = np.float64 if x64 else np.float32
  x = rng.standard_normal(shape) * scale
  if fft_type == FftType.RFFT:
    return x.astype(real)
  x = x + 1j * rng.standard_normal(shape) * scale
  return x.astype(np.complex128 if x64 else np.complex64)


@st.composite
def _cases(draw, elements=240):
  """(fft_type, fft_lengths, operand shape, x64, scale): 1-3 transformed
  axes (their lengths among LENGTHS, at most `elements` elements), perhaps a batch
  axis, IRFFT's last input axis shorter than, as long as or longer than n // 2 + 1."""
  fft_type = draw(st.sampled_from(list(FftType)))
  rank = draw(st.integers(1, 3))
  lengths = tuple(draw(st.lists(st.sampled_from(LENGTHS), min_size=rank, max_size=rank)
                       .filter(lambda ls: math.prod(ls) <= elements)))
  shape = draw(st.sampled_from([(), (2,)])) + lengths
  if fft_type == FftType.IRFFT:
    half = lengths[-1] // 2 + 1
    shape = shape[:-1] + (max(1, half + draw(st.integers(-1, 1))),)
  return fft_type, lengths, shape, draw(st.booleans()), 2.0 ** draw(st.integers(-30, 30))


@settings(max_examples=40, deadline=None)
@given(_cases(), st.integers(0, 2**32 - 1))
def test_fft_within_the_bound_of_the_reference(case, seed):
  fft_type, lengths, shape, x64, scale = case
  x = _operand(np.random.default_rng(seed), fft_type, shape, x64, scale)
  f = lambda x: lax.fft(x, fft_type, lengths)
  with jax.enable_x64(x64):
    got = jax.jit(f, backend="numba-cuda")(x)
    want = jax.jit(f, backend="reference")(x)
  _assert_within(got, want, x, fft_type, lengths, case)
  if 0 in lengths:
    assert not np.asarray(got).any()


@pytest.mark.parametrize("n", LENGTHS)
def test_every_transform_of_each_length(n):
  """FFT, IFFT and RFFT of length n (complex64 and float32), IRFFT to n (its
  input n // 2 + 1 long) and to n + 1 (odd and even); complex128 too."""
  rng = np.random.default_rng(n)
  for x64 in (False, True):
    z, r = _operand(rng, FftType.FFT, (2, n), x64), _operand(rng, FftType.RFFT, (2, n), x64)
    h = _operand(rng, FftType.IRFFT, (2, n // 2 + 1), x64)
    cases = [(FftType.FFT, z, n), (FftType.IFFT, z, n), (FftType.RFFT, r, n),
             (FftType.IRFFT, h, n), (FftType.IRFFT, h, n + 1)]
    f = lambda z, r, h: [lax.fft(x, t, (m,)) for t, x, m in cases]
    with jax.enable_x64(x64):
      got = jax.jit(f, backend="numba-cuda")(z, r, h)
      want = jax.jit(f, backend="reference")(z, r, h)
    for (t, x, m), g, w in zip(cases, got, want):
      _assert_within(g, w, x, t, (m,), (t, m, x64))


_SPECIALS = [np.nan, np.inf, -np.inf]


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")   # (inf - inf, inf * 0)
@settings(max_examples=15, deadline=None)
@given(_cases(elements=60), st.integers(0, 2**32 - 1), st.integers(1, 3))
def test_non_finite_values_give_nan_where_the_reference_is_not_finite(case, seed, specials):
  """NaN (both parts) wherever the reference has NaN or inf; the batch
  elements without non-finite values within the bound."""
  fft_type, lengths, shape, x64, _ = case
  rng = np.random.default_rng(seed)
  x = _operand(rng, fft_type, (2,) + shape, x64)   # (the second batch element stays finite)
  if x[0].size:
    for _ in range(specials):
      where = tuple(rng.integers(0, n) for n in x[0].shape)
      special = x.real.dtype.type(rng.choice(_SPECIALS))
      if fft_type == FftType.RFFT or rng.integers(2):
        x[0].real[where] = special
      else:
        x[0].imag[where] = special
  f = lambda x: lax.fft(x, fft_type, lengths)
  with jax.enable_x64(x64):
    got = np.asarray(jax.jit(f, backend="numba-cuda")(x))
    want = np.asarray(jax.jit(f, backend="reference")(x))
  not_finite = ~np.isfinite(want)
  assert np.isnan(got.real[not_finite]).all()
  assert fft_type == FftType.IRFFT or np.isnan(got.imag[not_finite]).all()
  finite = np.isfinite(x.reshape(x.shape[0], -1)).all(1)
  _assert_within(got[finite], want[finite], x[finite], fft_type, lengths, case)


def test_jnp_fft_functions():
  rng = np.random.default_rng(0)
  z, r = _operand(rng, FftType.FFT, (3, 5), False), _operand(rng, FftType.RFFT, (2, 6), False)
  h = _operand(rng, FftType.IRFFT, (3, 4), False)
  programs = [(lambda z, r, h: jnp.fft.fft(z), FftType.FFT, 0, (5,)),
              (lambda z, r, h: jnp.fft.ifft(z, axis=0), FftType.IFFT, 0, (3,)),
              (lambda z, r, h: jnp.fft.rfft(r), FftType.RFFT, 1, (6,)),
              (lambda z, r, h: jnp.fft.irfft(h), FftType.IRFFT, 2, (6,)),
              (lambda z, r, h: jnp.fft.irfft(h, n=7), FftType.IRFFT, 2, (7,)),
              (lambda z, r, h: jnp.fft.fftn(z), FftType.FFT, 0, (3, 5))]
  f = lambda z, r, h: [p(z, r, h) for p, *_ in programs]
  got = jax.jit(f, backend="numba-cuda")(z, r, h)
  want = jax.jit(f, backend="reference")(z, r, h)
  for (_, fft_type, operand, lengths), g, w in zip(programs, got, want):
    x = [z, r, h][operand]
    x = x.T if lengths == (3,) else x   # (ifft along axis 0: transposed last)
    g, w = (np.asarray(a).T if lengths == (3,) else a for a in (g, w))
    _assert_within(g, w, x, fft_type, lengths, (fft_type, lengths))


_PTX_CHECK = """
import json, numpy as np
import refimpl as jax
from refimpl import lax
from numba_backend.cuda import device
found = {}
for x64 in (False, True):
  with jax.enable_x64(x64):
    c = np.complex128 if x64 else np.complex64
    for name, lengths, shape in [("FFT", (3, 4), (2, 3, 4)), ("IRFFT", (3, 6), (3, 4))]:
      with device.compiling_to_ptx() as ptx:
        jax.jit(lambda x: lax.fft(x, name, lengths), backend="numba-cuda")(np.ones(shape, c))
      found[f"{name}/{np.dtype(c).name}"] = ptx
  with device.compiling_to_ptx() as ptx:
    jax.jit(lambda x: lax.fft(x, "RFFT", (5,)), backend="numba-cuda")(np.ones(5, np.float32))
  found["RFFT/float32"] = ptx
print(json.dumps(found))
"""



def test_fft_kernels_compile_to_ptx_for_compute_capability_9():
  found = compiled_ptx(_PTX_CHECK)
  assert len(found) == 5
  # a transform's kernels: its load, its stage for each radix of its length, its outputs
  # (FFT: lengths 4 and 3, a radix each; IRFFT: 3, then 6 = 2·3; RFFT: 5)
  launches = {"FFT": 6, "IRFFT": 7, "RFFT": 3}
  for name, kernels in found.items():
    assert len(kernels) == launches[name.split("/")[0]], name
    for kernel, ptx in kernels:
      assert ".target sm_90" in ptx and ".entry" in ptx, (name, kernel)
      assert ".extern .func" not in ptx, (name, kernel)   # nothing called outside the kernel
      assert not instructions(ptx, "fma"), (name, kernel)   # products rounded twice
    # float64 sums of products, for every dtype (the algorithm's)
    assert any(instructions(ptx, "mul.rn.f64") or instructions(ptx, "mul.f64")
               for _, ptx in kernels), name


def test_a_transform_of_length_one_of_a_value_not_finite_is_nan():
  """No stage runs for length 1: the load makes a value not finite NaN in both parts."""
  x = np.array([[complex(np.inf, 0.5)], [1 + 2j], [complex(3, -np.inf)]], np.complex64)
  for fft_type in (FftType.FFT, FftType.IFFT):
    got = np.asarray(jax.jit(lambda x: lax.fft(x, fft_type, (1,)), backend="numba-cuda")(x))
    assert np.isnan(got[[0, 2]].real).all() and np.isnan(got[[0, 2]].imag).all()
    assert got[1] == 1 + 2j
  got = np.asarray(jax.jit(lambda x: lax.fft(x.real, FftType.RFFT, (1,)),
                           backend="numba-cuda")(x))
  assert np.isnan(got[0, 0].real) and np.isnan(got[0, 0].imag) and got[2, 0] == 3
