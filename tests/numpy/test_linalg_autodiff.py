"""Derivatives of jnp.linalg's functions with custom JVP rules: det (for
n > 3, trace(adjugate(a) da): finite and right for singular matrices),
slogdet (inv(a)^T) and pinv, against closed forms and finite differences,
and the `custom_jvp_call` they stage."""

import numpy as np
from hypothesis import assume, given, settings, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from conformance import strategies as S
from conformance.autodiff import check_grads


def _matrices(n, m=None, batch=()):
  return S.arrays(np.float64, st.just(batch + (n, m or n)), elements=st.floats(-2.0, 2.0))


def _adjugate(a):
  """The transposed cofactor matrix, from minors (NumPy determinants)."""
  n = a.shape[0]
  cof = np.empty_like(a)
  for i in range(n):
    for j in range(n):
      minor = np.delete(np.delete(a, i, 0), j, 1)
      cof[i, j] = (-1) ** (i + j) * np.linalg.det(minor)
  return cof.T


def test_det_gradient_is_det_times_inverse_transpose():
  rng = np.random.default_rng(0)
  with jax.enable_x64():
    for n in (1, 2, 3, 4, 5):
      a = rng.standard_normal((n, n)) + n * np.eye(n)
      np.testing.assert_allclose(jax.grad(jnp.linalg.det)(a),
                                 np.linalg.det(a) * np.linalg.inv(a).T, rtol=1e-10)
      np.testing.assert_allclose(jax.grad(lambda a: jnp.linalg.slogdet(a)[1])(a),
                                 np.linalg.inv(a).T, rtol=1e-10, atol=1e-12)


def test_det_gradient_of_singular_matrices_is_the_cofactor_matrix():
  rng = np.random.default_rng(1)
  with jax.enable_x64():
    a = rng.standard_normal((4, 4))
    a[3] = a[0] - 2 * a[1]                     # rank 3: a nonzero adjugate
    np.testing.assert_allclose(jax.grad(jnp.linalg.det)(a), _adjugate(a).T, atol=1e-12)
    a[2] = a[0]                                 # rank 2: the adjugate is 0
    np.testing.assert_array_equal(jax.grad(jnp.linalg.det)(a), np.zeros((4, 4)))


def test_slogdet_sign_has_zero_derivative():
  with jax.enable_x64():
    a = np.diag([-1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(jax.grad(lambda a: jnp.linalg.slogdet(a)[0])(a),
                                  np.zeros((4, 4)))
    for method in ("lu", "qr"):
      np.testing.assert_allclose(
          jax.grad(lambda a: jnp.linalg.slogdet(a, method=method)[1])(a),
          np.linalg.inv(a).T, atol=1e-15)


def test_custom_rules_are_staged():
  a = np.eye(4, dtype=np.float32)
  for fn in (jnp.linalg.det, jnp.linalg.slogdet, jnp.linalg.pinv):
    assert "custom_jvp_call" in str(jax.make_jaxpr(fn)(a))
  assert "custom_jvp_call" not in str(jax.make_jaxpr(jnp.linalg.det)(a[:3, :3]))


@settings(max_examples=8)   # each example runs second-order checks of an LU-based rule
@given(_matrices(4, batch=(2,)))
def test_det_and_slogdet_derivatives_match_finite_differences(a):
  a = a + 4 * np.eye(4)
  # Well away from singular (`+ 4 * eye` alone is not: a smallest singular value of 0.02
  # makes the second derivatives' finite differences inexact).
  assume(np.linalg.svd(a, compute_uv=False).min() > 0.5)
  check_grads(jnp.linalg.det, [a], order=2, rtol=1e-4)
  check_grads(lambda a: jnp.linalg.slogdet(a)[1], [a])


@given(st.sampled_from([(4, 3), (3, 4), (3, 3)]).flatmap(lambda s: _matrices(*s)))
def test_pinv_derivatives_match_finite_differences(a):
  a = a + 3 * np.eye(*a.shape)
  # pinv jumps where the rank drops, so keep singular values well away from 0
  # (`+ 3 * eye` alone does not: [[1.5, 0, 0], [-1.5, 1.5, -1.5], [-1.5, -1.5, 1.5]]).
  assume(np.linalg.svd(a, compute_uv=False).min() > 0.5)
  check_grads(jnp.linalg.pinv, [a])
  sym = a[:3, :3] + a[:3, :3].T + 6 * np.eye(3)
  assume(np.abs(np.linalg.eigvalsh(sym)).min() > 0.5)   # can be singular too
  check_grads(lambda a: jnp.linalg.pinv(a, hermitian=True), [sym])
