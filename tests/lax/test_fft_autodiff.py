"""Derivatives of the fft primitive (refimpl/lax/fft.py): the transposes of
each transform type, JAX's convention for complex cotangents, and the
primitives the rules stage. The derivative checks on random inputs are the
AD_CASES of conformance/families/fft.py."""

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import lax

rng = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _reseeded():
  """Each test draws from rng as seeded, whatever tests ran before it (in this
  process: the order differs between runs with several workers)."""
  global rng
  rng = np.random.default_rng(0)


def _complex(shape):
  return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _primitives(closed):
  return [eqn.primitive.name for eqn in closed.jaxpr.eqns]


@pytest.mark.parametrize("fft_type, transform", [("fft", np.fft.fft), ("ifft", np.fft.ifft)])
def test_complex_transforms_are_their_own_transposes(fft_type, transform):
  # the DFT matrix is symmetric: the cotangent goes through the same
  # transform, not its inverse or adjoint
  ct = _complex((2, 5))
  with jax.enable_x64():
    _, vjp = jax.vjp(lambda x: lax.fft(x, fft_type, (5,)), _complex((2, 5)))
    np.testing.assert_allclose(vjp(ct)[0], transform(ct), rtol=1e-12)


@pytest.mark.parametrize("n", [4, 5])
def test_rfft_cotangent_is_the_real_part_of_the_transposed_matrix(n):
  # rfft is R-linear from R^n to C^(n//2+1), matrix R; JAX's cotangent is Re(R^T ct)
  matrix = np.fft.rfft(np.eye(n), axis=0)
  ct = _complex((n // 2 + 1,))
  with jax.enable_x64():
    _, vjp = jax.vjp(lambda x: lax.fft(x, "rfft", (n,)), rng.standard_normal(n))
    np.testing.assert_allclose(vjp(ct)[0], np.real(matrix.T @ ct), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [4, 5])
def test_irfft_gradient_follows_jaxs_complex_convention(n):
  # for real f of complex z, grad is df/dx - i df/dy; irfft ignores the
  # imaginary part of the zero frequency (and of n/2 for even n): no gradient there
  z, w = _complex((n // 2 + 1,)), rng.standard_normal(n)
  f = lambda z: np.sum(np.fft.irfft(z, n) * w)
  eps = 1e-6
  basis = np.eye(len(z))
  expected = np.array([(f(z + eps * e) - f(z - eps * e)) / (2 * eps)
                       - 1j * (f(z + 1j * eps * e) - f(z - 1j * eps * e)) / (2 * eps)
                       for e in basis])
  with jax.enable_x64():
    grad = jax.grad(lambda z: jnp.sum(lax.fft(z, "irfft", (n,)) * w))(z)
  np.testing.assert_allclose(grad, expected, rtol=1e-6, atol=1e-8)
  assert grad[0].imag == 0 and (n % 2 or grad[-1].imag == 0)


def test_rfft_transpose_stages_a_masked_irfft():
  for n, updates in ((4, 2), (5, 1)):  # the n/2 entry is unique only for even n
    closed = jax.make_jaxpr(jax.grad(lambda x: jnp.sum(jnp.real(lax.fft(x, "rfft", (n,))))))(
        np.ones(n, np.float32))
    names = _primitives(closed)
    assert names.count("dynamic_update_slice") == updates
    assert names[-4:] == ["conj", "div", "fft", "mul"]
    assert closed.jaxpr.eqns[-2].params["fft_type"] == lax.FftType.IRFFT


def test_irfft_transpose_stages_a_scaled_rfft():
  closed = jax.make_jaxpr(jax.grad(lambda z: jnp.sum(lax.fft(z, "irfft", (4,)))))(
      np.ones(3, np.complex64))
  names = _primitives(closed)
  assert names[-3:] == ["mul", "mul", "conj"]
  ffts = [eqn.params["fft_type"] for eqn in closed.jaxpr.eqns if eqn.primitive.name == "fft"]
  assert ffts == [lax.FftType.IRFFT, lax.FftType.RFFT]


def test_fft_jvp_transforms_the_tangent():
  x, t = _complex((3, 4)), _complex((3, 4))
  with jax.enable_x64():
    _, tangent = jax.jvp(lambda x: lax.fft(x, "fft", (3, 4)), (x,), (t,))
  np.testing.assert_allclose(tangent, np.fft.fft2(t), rtol=1e-12)
