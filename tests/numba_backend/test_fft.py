"""The numba backend's fft agrees with the reference bit for bit: both run
NumPy's pocketfft transforms (rocket-fft's in Numba) in the same axis order,
in complex128, NaN and infinities included."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
from refimpl import lax
from conformance import strategies as cst

pytest.importorskip("numba")
pytest.importorskip("rocket_fft")

fft = lax.fft


def assert_same(reference, backend, what):
  reference, backend = np.asarray(reference), np.asarray(backend)
  assert backend.dtype == reference.dtype and backend.shape == reference.shape, what
  assert np.array_equal(reference, backend, equal_nan=True), what


@pytest.mark.parametrize("x64", [False, True], ids=["32", "64"])
@pytest.mark.parametrize("rank", [1, 2, 3])
@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_fft(x64, rank, data):
  """FFT, IFFT, RFFT and IRFFT (shorter, equal and longer inputs than
  n // 2 + 1) over the last `rank` dimensions, lengths 0 included."""
  shape = data.draw(cst.shapes(min_dims=rank, max_dims=rank + 1, max_side=6))
  lengths = shape[len(shape) - rank:]
  last = data.draw(st.integers(1, 8))
  irfft_lengths = lengths[:-1] + (last,)
  with jax.enable_x64(x64):
    complex_dtype, real_dtype = (np.complex128, np.float64) if x64 else (np.complex64, np.float32)
    z = data.draw(cst.arrays(complex_dtype, shape))
    r = data.draw(cst.arrays(real_dtype, shape))

    def program(z, r):
      outs = [fft(z, "FFT", lengths), fft(z, "IFFT", lengths), fft(r, "RFFT", lengths)]
      if shape[-1]:   # the reference reads an empty last dimension as an error
        outs.append(fft(z, "IRFFT", irfft_lengths))
      return outs

    reference = jax.jit(program)(z, r)
    backend = jax.jit(program, backend="numba")(z, r)
  for name, a, b in zip(["FFT", "IFFT", "RFFT", "IRFFT"], reference, backend):
    assert_same(a, b, name)
