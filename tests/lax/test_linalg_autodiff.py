"""Derivatives of refimpl/lax/linalg.py: known values, the cases JAX refuses,
what JAX gives at degenerate points, and the primitives the rules stage.
The derivative checks on random inputs are the AD_CASES of
conformance/families/linalg.py and products.py."""

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import dtypes, lax
from refimpl.lax import linalg as lax_linalg

F32 = np.float32


def _primitives(closed):
  return [eqn.primitive.name for eqn in closed.jaxpr.eqns]


# --- dot_general ------------------------------------------------------------------------

def test_dot_general_gradients_are_contractions_with_the_other_operand():
  x = np.arange(6, dtype=F32).reshape(2, 3)
  y = np.arange(12, dtype=F32).reshape(3, 4)
  gx, gy = jax.grad(lambda x, y: jnp.sum(lax.dot(x, y)), argnums=(0, 1))(x, y)
  np.testing.assert_array_equal(gx, np.ones((2, 4)) @ y.T)
  np.testing.assert_array_equal(gy, x.T @ np.ones((2, 4)))


def test_dot_general_transposes_stage_a_dot_general_and_a_transpose():
  # as JAX's _dot_general_transpose_lhs/rhs: the rhs cotangent comes out as
  # (free dims of ct, contracting dims) and is transposed back; the lhs one is
  # already in order (an identity transpose is not staged)
  x, y = np.ones((2, 3), F32), np.ones((3, 4), F32)
  closed = jax.make_jaxpr(jax.grad(lambda x, y: jnp.sum(lax.dot(x, y)), argnums=(0, 1)))(x, y)
  assert _primitives(closed) == ["dot_general", "reduce_sum", "broadcast_in_dim",
                                 "dot_general", "transpose", "dot_general"]
  dims = [eqn.params["dimension_numbers"] for eqn in closed.jaxpr.eqns
          if eqn.primitive.name == "dot_general"]
  assert dims == [(((1,), (0,)), ((), ())), (((0,), (0,)), ((), ())),
                  (((1,), (1,)), ((), ()))]


def test_dot_general_batch_dims_in_any_position():
  # batch dim 1 of x pairs with batch dim 0 of y; the cotangents come back in
  # each operand's own layout
  rng = np.random.default_rng(0)
  x, y = rng.standard_normal((3, 2, 4)), rng.standard_normal((2, 4, 5))
  dims = (((2,), (1,)), ((1,), (0,)))
  ct = rng.standard_normal((2, 3, 5))
  with jax.enable_x64():
    _, vjp = jax.vjp(lambda x, y: lax.dot_general(x, y, dims), x, y)
    gx, gy = vjp(ct)
  np.testing.assert_allclose(gx, np.einsum("bin,bkn->ibk", ct, y), rtol=1e-12)
  np.testing.assert_allclose(gy, np.einsum("bin,ibk->bkn", ct, x), rtol=1e-12)


def test_dot_general_cotangents_keep_the_operand_dtypes():
  # with preferred_element_type the product is float64; each cotangent is
  # converted back to its operand's float32, as JAX does
  x, y = np.ones((2, 3), F32), np.full((3,), 2, F32)
  with jax.enable_x64():
    grads = jax.grad(lambda x, y: jnp.sum(lax.dot(x, y, preferred_element_type=np.float64)),
                     argnums=(0, 1))(x, y)
  assert [g.dtype for g in grads] == [np.float32, np.float32]
  np.testing.assert_array_equal(grads[0], np.full((2, 3), 2))


def test_dot_general_integer_operand_has_a_float0_tangent():
  x, n = np.ones((2, 3), F32), np.arange(3, dtype=np.int32)
  out, tangent = jax.jvp(lambda x: lax.dot(x, n.astype(F32)), (x,), (np.ones((2, 3), F32),))
  np.testing.assert_array_equal(tangent, [3., 3.])
  grad_n = jax.grad(lambda n: jnp.sum(lax.dot(x, n, preferred_element_type=F32)),
                    allow_int=True)(n)
  assert grad_n.dtype == dtypes.float0


# --- the decompositions: values ---------------------------------------------------------

def test_cholesky_of_a_scalar_is_its_square_root():
  grad = jax.grad(lambda x: lax_linalg.cholesky(x)[0, 0])
  np.testing.assert_allclose(grad(np.array([[4.]], F32)), [[0.25]])


def test_triangular_solve_cotangent_solves_the_transposed_system():
  a = np.array([[2., 0.], [1., 4.]], F32)
  ct = np.array([[1., 2.], [3., 4.]], F32)
  for left_side in (True, False):
    solve = lambda b: lax_linalg.triangular_solve(a, b, left_side=left_side, lower=True)
    _, vjp = jax.vjp(solve, np.ones((2, 2), F32))
    expected = lax_linalg.triangular_solve(a, ct, left_side=left_side, lower=True,
                                           transpose_a=True)
    np.testing.assert_allclose(vjp(ct)[0], expected, rtol=1e-6)


def test_lu_integer_outputs_have_float0_tangents():
  a = np.array([[1., 2.], [3., 4.]], F32)
  (lu, pivots, perm), (dlu, dpivots, dperm) = jax.jvp(lax_linalg.lu, (a,), (np.eye(2, dtype=F32),))
  assert dpivots.dtype == dperm.dtype == dtypes.float0
  np.testing.assert_array_equal(pivots, [1, 1])
  # rows swapped: lu(a + e I) = [[3, 4 + e], [(1 + e) / 3, 2 - (1 + e) (4 + e) / 3]]
  np.testing.assert_allclose(dlu, [[0., 1.], [1 / 3, -5 / 3]], rtol=1e-6)


def test_eigh_at_a_repeated_eigenvalue():
  # JAX's rule assumes distinct eigenvalues. At a repeated one it still gives
  # w' = diag(V^H A' V) for the eigenvectors V returned (here the identity),
  # not the eigenvalues of the projected A', and the eigenvector tangents
  # divide by the zero gap
  t = np.array([[1., 2.], [2., 3.]], F32)
  (v, w), (dv, dw) = jax.jvp(lax_linalg.eigh, (np.eye(2, dtype=F32),), (t,))
  np.testing.assert_array_equal(v, np.eye(2))
  np.testing.assert_allclose(dw, [1., 3.])
  assert not np.isfinite(dv).all()


def test_svd_of_a_diagonal_matrix():
  a = np.diag(np.array([3., 2.], F32))
  t = np.array([[1., 2.], [3., 4.]], F32)
  (s,), (ds,) = jax.jvp(lambda a: [lax_linalg.svd(a, compute_uv=False)], (a,), (t,))
  np.testing.assert_allclose(ds, [1., 4.], rtol=1e-6)


def test_eig_eigenvalue_tangents_are_complex():
  a = np.array([[2., 1.], [0., 3.]], F32)
  t = np.array([[1., 0.], [0., 2.]], F32)
  (w,), (dw,) = jax.jvp(lambda a: lax_linalg.eig(a, compute_left_eigenvectors=False,
                                                  compute_right_eigenvectors=False),
                        (a,), (t,))
  assert dw.dtype == np.complex64
  np.testing.assert_allclose(dw[np.argsort(w.real)], [1., 2.], atol=1e-6)


def test_tridiagonal_solve_cotangent_solves_the_transposed_system():
  dl, d, du = (np.array(v, F32) for v in ([0., 1., 2.], [4., 5., 6.], [3., 1., 0.]))
  dense = np.diag(d) + np.diag(dl[1:], -1) + np.diag(du[:-1], 1)
  ct = np.array([[1.], [2.], [3.]], F32)
  _, vjp = jax.vjp(lambda b: lax_linalg.tridiagonal_solve(dl, d, du, b), np.ones((3, 1), F32))
  np.testing.assert_allclose(vjp(ct)[0], np.linalg.solve(dense.T, ct), rtol=1e-6)


# --- the cases JAX refuses ------------------------------------------------------------------

def _jvp(fn, x):
  return jax.jvp(fn, (x,), (np.ones_like(x),))


def test_svd_with_full_matrices_has_no_jvp():
  with pytest.raises(NotImplementedError, match="not implemented for full matrices"):
    _jvp(lambda a: lax_linalg.svd(a, full_matrices=True), np.eye(3, 2, dtype=F32))
  # the singular values alone are fine
  _jvp(lambda a: lax_linalg.svd(a, full_matrices=True, compute_uv=False), np.eye(3, 2, dtype=F32))


def test_qr_of_a_wide_matrix_has_no_jvp():
  with pytest.raises(NotImplementedError, match="Unimplemented case of QR"):
    _jvp(lambda a: lax_linalg.qr(a, full_matrices=False), np.eye(2, 3, dtype=F32))
  with pytest.raises(NotImplementedError, match="Unimplemented case of QR"):
    _jvp(lambda a: lax_linalg.qr(a, full_matrices=True), np.eye(3, 2, dtype=F32))


def test_eig_eigenvectors_have_no_jvp():
  with pytest.raises(NotImplementedError, match="derivatives of eigenvectors"):
    _jvp(lax_linalg.eig, np.eye(2, dtype=F32))


def test_eigh_subset_has_no_jvp():
  with pytest.raises(NotImplementedError, match="partial eigen decomposition"):
    _jvp(lambda a: lax_linalg.eigh(a, subset_by_index=(0, 1)), np.eye(2, dtype=F32))


@pytest.mark.parametrize("fn", [lambda a: lax_linalg.geqrf(a)[0],
                                lambda a: lax_linalg.householder_product(a, a[:, 0])],
                         ids=["geqrf", "householder_product"])
def test_householder_primitives_are_not_differentiable(fn):
  # JAX defines no rule for them (qr differentiates as a whole)
  with pytest.raises(NotImplementedError, match="Differentiation rule for"):
    _jvp(fn, np.eye(2, dtype=F32))


# --- staged primitives ------------------------------------------------------------------------

def test_triangular_solve_gradient_stages_triangular_solves():
  a = np.array([[2., 0.], [1., 4.]], F32)
  closed = jax.make_jaxpr(jax.grad(
      lambda a, b: jnp.sum(lax_linalg.triangular_solve(a, b, left_side=True, lower=True)),
      argnums=(0, 1)))(a, np.ones((2, 3), F32))
  solves = [eqn.params["transpose_a"] for eqn in closed.jaxpr.eqns
            if eqn.primitive.name == "triangular_solve"]
  # the primal; the cotangent of b (a transposed solve); a's path solves
  # (A^-1 dA) X, whose transpose is another transposed solve
  assert solves == [False, True, True]
  assert "dot_general" in _primitives(closed)


def test_eig_jvp_solves_with_the_lu_of_the_eigenvectors():
  closed = jax.make_jaxpr(lambda a, t: jax.jvp(
      lambda a: lax_linalg.eig(a, compute_left_eigenvectors=False,
                               compute_right_eigenvectors=False), (a,), (t,)))(
      np.eye(2, dtype=F32), np.eye(2, dtype=F32))
  # one eig, with right eigenvectors (JAX's rule does not bind the original)
  names = _primitives(closed)
  assert names == ["eig", "convert_element_type", "stop_gradient", "lu", "broadcast_in_dim",
                   "gather", "triangular_solve", "triangular_solve", "transpose", "mul",
                   "reduce_sum"]
  assert closed.jaxpr.eqns[0].params["compute_right_eigenvectors"]
