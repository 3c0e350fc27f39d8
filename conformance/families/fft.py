"""Cases for the `fft` primitive (refimpl/lax/fft.py) and `jnp.fft`.

Inputs are finite and bounded (|x| <= 1), so results can be compared with
NumPy's transforms computed in float64/complex128; how NaN and inf spread
through an FFT depends on the algorithm and is not specified.
"""

import numpy as np
from hypothesis import strategies as st

import refimpl.numpy as jnp
from refimpl import lax
from conformance import strategies as S
from conformance.autodiff import ADCase
from conformance.cases import Case

REAL = [np.float32]
REAL_OR_COMPLEX = [np.float32, np.complex64]
NORMS = [None, "backward", "ortho", "forward"]
TOL = dict(rtol=1e-5, atol=1e-5)


def _wide(x):
  x = np.asarray(x)
  return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def _in_wide(np_fn):
  return lambda x, **kwargs: np_fn(_wide(x), **kwargs)


def _array(draw, dtype_list, min_dims=1, max_dims=3):
  dtype = draw(st.sampled_from(dtype_list))
  shape = draw(S.shapes(min_dims=min_dims, max_dims=max_dims, min_side=1, max_side=5))
  return draw(S.bounded_arrays(dtype, shape))


@st.composite
def lax_fft_inputs(draw, real=REAL, complex_=(np.complex64,)):
  """`((x,), {fft_type, fft_lengths})` over the last 1-3 dimensions of `x`."""
  fft_type = draw(st.sampled_from(list(lax.FftType)))
  x = _array(draw, real if fft_type == lax.FftType.RFFT else list(complex_))
  rank = draw(st.integers(1, min(3, x.ndim)))
  lengths = x.shape[x.ndim - rank:]
  if fft_type == lax.FftType.IRFFT:  # output lengths; the input holds n // 2 + 1
    last = draw(st.sampled_from([2 * lengths[-1] - 2, 2 * lengths[-1] - 1]).filter(bool))
    lengths = lengths[:-1] + (last,)
  return (x,), {"fft_type": fft_type, "fft_lengths": tuple(lengths)}


def numpy_lax_fft(x, fft_type, fft_lengths):
  axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))
  transform = {lax.FftType.FFT: np.fft.fftn, lax.FftType.IFFT: np.fft.ifftn,
               lax.FftType.RFFT: np.fft.rfftn, lax.FftType.IRFFT: np.fft.irfftn}[fft_type]
  return transform(_wide(x), s=fft_lengths, axes=axes)


@st.composite
def fft_1d_inputs(draw, dtype_list=REAL_OR_COMPLEX, norms=NORMS, halved=False):
  """`((x,), {n, axis, norm})`. With `halved` (inputs holding half a spectrum:
  irfft, hfft), an axis of length 1 needs an explicit `n`."""
  x = _array(draw, dtype_list)
  axis = draw(st.integers(-x.ndim, x.ndim - 1))
  n = draw(st.none() | st.integers(1, 8))
  if halved and n is None and x.shape[axis] == 1:
    n = draw(st.integers(1, 8))
  return (x,), {"n": n, "axis": axis, "norm": draw(st.sampled_from(norms))}


@st.composite
def fft_nd_inputs(draw, dtype_list=REAL_OR_COMPLEX, two_axes=False, halved=False):
  """`((x,), {s, axes, norm})`: distinct axes (or None), sizes `s` (or None)."""
  x = _array(draw, dtype_list, min_dims=2 if two_axes else 1, max_dims=4)
  if two_axes:
    axes = tuple(draw(st.permutations(range(x.ndim)))[:2])
  else:
    axes = draw(st.none() | st.lists(st.integers(0, x.ndim - 1), min_size=1, max_size=x.ndim,
                                      unique=True).map(tuple))
  if axes is not None:
    axes = tuple(draw(st.sampled_from([a, a - x.ndim])) for a in axes)
  count = len(axes) if axes is not None else draw(st.integers(1, x.ndim))
  s = draw(st.none() | st.lists(st.integers(1, 6), min_size=count, max_size=count).map(tuple))
  if halved and s is None:  # the default output length 2 (m - 1) must be positive
    last = axes[-1] if axes is not None else -1
    if x.shape[last] == 1:
      s = tuple(x.shape[a] for a in (axes or range(x.ndim))[:-1]) + (2,)
  if axes is None and s is not None:  # NumPy 2 wants explicit axes with s
    axes = tuple(range(x.ndim - len(s), x.ndim))
  return (x,), {"s": s, "axes": axes, "norm": draw(st.sampled_from(NORMS))}


@st.composite
def freq_inputs(draw):
  return (), {"n": draw(st.integers(1, 10)), "d": draw(st.sampled_from([1.0, 0.5, 3.0]))}


@st.composite
def shift_inputs(draw):
  x = _array(draw, REAL_OR_COMPLEX)
  options = [st.none(), st.integers(-x.ndim, x.ndim - 1),
             st.lists(st.integers(0, x.ndim - 1), max_size=x.ndim, unique=True).map(tuple)]
  return (x,), {"axes": draw(st.one_of(options))}


def _transform_case(name, inputs, **kwargs):
  return Case(f"jnp.fft.{name}", getattr(jnp.fft, name), inputs,
              _in_wide(getattr(np.fft, name)), **{**TOL, **kwargs})


CASES = [
    Case("lax.fft", lax.fft, lax_fft_inputs, numpy_lax_fft, **TOL),
    _transform_case("fft", fft_1d_inputs),
    _transform_case("ifft", fft_1d_inputs),
    _transform_case("rfft", lambda: fft_1d_inputs(REAL)),
    _transform_case("irfft", lambda: fft_1d_inputs(halved=True)),
    _transform_case("hfft", lambda: fft_1d_inputs(halved=True)),
    _transform_case("ihfft", lambda: fft_1d_inputs(REAL)),
    _transform_case("fftn", fft_nd_inputs),
    _transform_case("ifftn", fft_nd_inputs),
    _transform_case("rfftn", lambda: fft_nd_inputs(REAL)),
    _transform_case("irfftn", lambda: fft_nd_inputs(halved=True)),
    _transform_case("fft2", lambda: fft_nd_inputs(two_axes=True)),
    _transform_case("ifft2", lambda: fft_nd_inputs(two_axes=True)),
    _transform_case("rfft2", lambda: fft_nd_inputs(REAL, two_axes=True)),
    _transform_case("irfft2", lambda: fft_nd_inputs(two_axes=True, halved=True)),
    Case("jnp.fft.fftfreq", jnp.fft.fftfreq, freq_inputs, np.fft.fftfreq),
    Case("jnp.fft.rfftfreq", jnp.fft.rfftfreq, freq_inputs, np.fft.rfftfreq),
    Case("jnp.fft.fftshift", jnp.fft.fftshift, shift_inputs, np.fft.fftshift),
    Case("jnp.fft.ifftshift", jnp.fft.ifftshift, shift_inputs, np.fft.ifftshift),
]


# --- derivatives: fft is linear, so every transform has a reverse-mode check ---------

AD_REAL, AD_COMPLEX = [np.float64], [np.complex128]
AD_REAL_OR_COMPLEX = AD_REAL + AD_COMPLEX


def _ad_case(name, inputs, order=1):
  return ADCase(f"jnp.fft.{name}", getattr(jnp.fft, name), inputs, ("fft",), order=order)


AD_CASES = [
    ADCase("lax.fft", lax.fft, lambda: lax_fft_inputs(AD_REAL, AD_COMPLEX), ("fft",),
           order=2),
    _ad_case("fft", lambda: fft_1d_inputs(AD_REAL_OR_COMPLEX)),
    _ad_case("rfft", lambda: fft_1d_inputs(AD_REAL)),
    _ad_case("irfft", lambda: fft_1d_inputs(AD_REAL_OR_COMPLEX, halved=True)),
    _ad_case("ifftn", lambda: fft_nd_inputs(AD_REAL_OR_COMPLEX)),
    _ad_case("rfftn", lambda: fft_nd_inputs(AD_REAL)),
    _ad_case("irfftn", lambda: fft_nd_inputs(AD_REAL_OR_COMPLEX, halved=True)),
]
