"""The batching rule of `fft` (refimpl/lax/fft.py): the transformed
dimensions are the operand's last ones, so the batch axis goes first,
wherever it was (as in JAX); the batched program's structure, per-example
gradients and nested vmaps."""

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import lax
from refimpl.lax import FftType

C64 = np.complex64


def _primitives(closed):
  return [eqn.primitive.name for eqn in closed.jaxpr.eqns]


def _member(fft_type):
  """A (2, 3, 4) operand for `fft_type` and its transform lengths (last two dims)."""
  rng = np.random.default_rng(0)
  x = rng.standard_normal((2, 3, 4)).astype(np.float32)
  if fft_type == FftType.RFFT:
    return x, (3, 4)
  x = (x + 1j * rng.standard_normal((2, 3, 4))).astype(C64)
  return x, ((3, 6) if fft_type == FftType.IRFFT else (3, 4))


@pytest.mark.parametrize("fft_type", list(FftType))
@pytest.mark.parametrize("bdim", [0, 1, 2, 3])
def test_fft_moves_the_batch_axis_first(fft_type, bdim):
  member, lengths = _member(fft_type)
  x = np.stack([member, member * 2, member[::-1]], bdim)
  fn = lambda m: lax.fft(m, fft_type, lengths)
  f = jax.vmap(fn, in_axes=bdim)
  expected = np.stack([np.asarray(fn(np.take(x, i, bdim))) for i in range(3)])
  np.testing.assert_allclose(f(x), expected, rtol=1e-5, atol=1e-5)
  closed = jax.make_jaxpr(f)(x)
  assert _primitives(closed) == (["fft"] if bdim == 0 else ["transpose", "fft"])
  assert closed.jaxpr.eqns[-1].params == {"fft_type": fft_type, "fft_lengths": lengths}


def test_per_example_gradients_of_fft():
  x = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)

  def power(m):
    return jnp.sum(jnp.abs(lax.fft(m, FftType.RFFT, (5,))) ** 2)

  per_example = jax.vmap(jax.grad(power), in_axes=1, out_axes=1)(x.T)
  # Parseval: the half spectrum of a real signal m of odd length n holds the
  # zero frequency, sum(m), and half of the others, so its power is
  # (n sum(m**2) + sum(m)**2) / 2, of gradient n m + sum(m)
  n = 5
  np.testing.assert_allclose(per_example.T, n * x + x.sum(1, keepdims=True),
                             rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(jax.grad(lambda x: jnp.sum(jax.vmap(power)(x)))(x),
                             per_example.T, rtol=1e-5)


def test_nested_vmap_with_different_in_axes():
  x = _member(FftType.FFT)[0]   # members x[i, :, j]: transforms of length 3
  fn = lambda m: lax.fft(m, FftType.IFFT, (3,))
  out = jax.vmap(jax.vmap(fn, in_axes=1), in_axes=0)(x)
  np.testing.assert_allclose(out, np.fft.ifft(np.swapaxes(x, 1, 2), axis=-1),
                             rtol=1e-5, atol=1e-6)
