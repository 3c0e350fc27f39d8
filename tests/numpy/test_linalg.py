"""Tests of refimpl/numpy/linalg.py against numpy.linalg: properties on
well-conditioned inputs, plus exact examples of JAX's own behaviour (result
types, singular inputs, errors, lowering)."""

import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl.config import enable_x64
from conformance.families.linalg import (matrix_inputs, norm_inputs, numpy_matrix_rank,
                                         low_rank_inputs, solve_inputs)

L = jnp.linalg


def wide(x):
  x = np.asarray(x)
  return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def close(actual, expected, tol=1e-4):
  np.testing.assert_allclose(wide(actual), wide(expected), rtol=tol, atol=tol)


# --- properties against NumPy -------------------------------------------------------------

@given(matrix_inputs())
def test_det_slogdet_inv(inputs):
  (a,), _ = inputs
  close(L.det(a), np.linalg.det(wide(a)))
  sign, logabsdet = L.slogdet(a)
  expected_sign, expected_log = np.linalg.slogdet(wide(a))
  close(sign, expected_sign)
  close(logabsdet, expected_log)
  close(L.inv(a), np.linalg.inv(wide(a)))
  assert L.inv(a).dtype == a.dtype


@given(solve_inputs())
def test_solve(inputs):
  (a, b), _ = inputs
  x = L.solve(a, b)
  assert x.dtype == a.dtype
  close(x, np.linalg.solve(wide(a), wide(b)))


@given(matrix_inputs("hermitian", st.fixed_dictionaries({"UPLO": st.sampled_from(["L", "U"])})))
def test_eigh_and_eigvalsh(inputs):
  (a,), kwargs = inputs
  w, v = L.eigh(a, **kwargs)
  close(w, np.linalg.eigvalsh(wide(a)))
  close(L.eigvalsh(a, **kwargs), w)
  close((wide(v) * wide(w)[..., None, :]) @ np.conj(np.swapaxes(wide(v), -1, -2)), a)


@given(matrix_inputs("full_rank"))
def test_svd_pinv_and_rank(inputs):
  (a,), _ = inputs
  u, s, vh = L.svd(a, full_matrices=False)
  close(s, np.linalg.svd(wide(a), compute_uv=False))
  close((wide(u) * wide(s)[..., None, :]) @ wide(vh), a)
  close(L.svdvals(a), s)
  close(L.pinv(a), np.linalg.pinv(wide(a)))
  np.testing.assert_array_equal(L.matrix_rank(a), min(a.shape[-2:]))


@given(low_rank_inputs())
def test_matrix_rank_of_low_rank_products(inputs):
  (m,), _ = inputs
  rank = L.matrix_rank(m)
  assert rank.dtype == np.int32
  np.testing.assert_array_equal(rank, numpy_matrix_rank(m))


@given(norm_inputs())
def test_norm(inputs):
  (x,), kwargs = inputs
  close(L.norm(x, **kwargs), np.linalg.norm(wide(x), **kwargs))


# --- results, dtypes and JAX's conventions -------------------------------------------------

def test_result_types_are_named_tuples():
  a = np.array([[2., 1.], [1., 3.]], np.float32)
  assert type(L.eigh(a)).__name__ == "EighResult" and L.eigh(a).eigenvalues.shape == (2,)
  assert type(L.svd(a)).__name__ == "SVDResult" and L.svd(a).Vh.shape == (2, 2)
  assert type(L.qr(a)).__name__ == "QRResult" and L.qr(a).R.shape == (2, 2)
  assert type(L.slogdet(a)).__name__ == "SlogdetResult" and L.slogdet(a).sign == 1
  result = jax.jit(L.svd)(a)
  assert type(result).__name__ == "SVDResult"
  close(result.S, np.linalg.svd(a, compute_uv=False))


def test_integer_inputs_promote_to_float():
  a = np.array([[1, 2], [3, 4]], np.int32)
  assert L.det(a).dtype == np.float32 and L.det(a) == pytest.approx(-2)
  assert L.inv(a).dtype == np.float32
  close(L.solve(a, np.array([5, 6])), [-4, 4.5])
  assert L.matrix_rank(a).dtype == np.int32


def test_eig_is_always_complex():
  a = np.array([[1., 2.], [2., 1.]], np.float32)  # real eigenvalues 3 and -1
  w, v = L.eig(a)
  assert w.dtype == v.dtype == np.complex64  # NumPy returns float64 here
  close(sorted(np.asarray(w).real), [-1, 3])
  close(a @ wide(v), wide(v) * wide(w))
  close(sorted(np.asarray(L.eigvals(a)).real), [-1, 3])


def test_singular_matrices():
  singular = np.array([[1., 2.], [2., 4.]], np.float32)
  assert L.det(singular) == 0
  sign, logabsdet = L.slogdet(np.zeros((4, 4), np.float32))
  assert sign == 0 and logabsdet == -np.inf
  assert np.isinf(L.cond(np.array([[1., 2.], [0., 0.]], np.float32)))
  assert not np.isfinite(np.asarray(L.solve(singular, np.ones(2, np.float32)))).all()
  assert L.matrix_rank(singular) == 1
  close(L.pinv(singular), np.linalg.pinv(singular))
  assert np.isnan(L.cholesky(-np.eye(2, dtype=np.float32))).any()


def test_cholesky_upper_and_symmetrize():
  a = np.array([[4., 2.], [2., 3.]], np.float32)
  lower = np.linalg.cholesky(a)
  close(L.cholesky(a), lower)
  close(L.cholesky(a, upper=True), lower.T)
  # without symmetrization only the lower triangle is read
  close(L.cholesky(np.array([[4., 100.], [2., 3.]], np.float32), symmetrize_input=False), lower)


def test_qr_modes():
  a = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
  for mode in ["reduced", "complete"]:
    q, r = L.qr(a, mode=mode)
    expected_q, expected_r = np.linalg.qr(a, mode=mode)
    close(q, expected_q, 1e-5)
    close(r, expected_r, 1e-5)
  close(L.qr(a, mode="r"), np.linalg.qr(a, mode="r"), 1e-5)
  h, tau = L.qr(a, mode="raw")
  expected_h, expected_tau = np.linalg.qr(a, mode="raw")
  close(h, expected_h, 1e-5)
  close(tau, expected_tau, 1e-5)
  with pytest.raises(ValueError, match="Unsupported QR decomposition mode"):
    L.qr(a, mode="economic")


def test_svd_hermitian():
  a = np.array([[2., 1., 0.], [1., -3., 0.], [0., 0., 1.]], np.float32)
  u, s, vh = L.svd(a, hermitian=True)
  close(s, np.linalg.svd(a, compute_uv=False))
  close((wide(u) * wide(s)) @ wide(vh), a)
  close(L.svd(a, hermitian=True, compute_uv=False), s)


def test_lstsq():
  rng = np.random.default_rng(1)
  a, b = rng.normal(size=(5, 3)).astype(np.float32), rng.normal(size=(5, 2)).astype(np.float32)
  x, resid, rank, s = L.lstsq(a, b)
  expected_x, expected_resid, expected_rank, expected_s = np.linalg.lstsq(a, b)
  close(x, expected_x)
  close(resid, expected_resid, 1e-3)
  assert rank == expected_rank == 3
  close(s, expected_s)
  x, resid, rank, _ = L.lstsq(a[:2], b[:2, 0])  # underdetermined: minimum norm
  close(x, np.linalg.lstsq(a[:2], b[:2, 0])[0])
  assert resid.shape == (1,) and rank == 2  # a column per right-hand side, as JAX
  assert L.lstsq(a[:2], b[:2, 0], numpy_resid=True)[1].shape == (0,)  # as NumPy
  with pytest.raises(ValueError, match="Leading dimensions"):
    L.lstsq(a, b[:3])


def test_matrix_rank_tolerance_is_absolute_as_in_jax():
  a = np.diag(np.array([10., 1., 0.01], np.float32))
  assert L.matrix_rank(a) == 3
  assert L.matrix_rank(a, rtol=0.5) == 2  # NumPy would use 0.5 * 10 and give 1
  assert L.matrix_rank(np.array([0., 2.], np.float32)) == 1
  with pytest.warns(DeprecationWarning, match="tol argument"):
    assert L.matrix_rank(a, tol=0.5) == 2


def test_pinv_rtol_and_rcond():
  a = np.diag(np.array([10., 1e-3], np.float32))
  close(L.pinv(a), np.diag([0.1, 1e3]), 1e-3)
  close(L.pinv(a, rtol=1e-2), np.diag([0.1, 0]))
  with pytest.warns(DeprecationWarning, match="rcond argument"):
    close(L.pinv(a, rcond=1e-2), np.diag([0.1, 0]))
  assert L.pinv(np.zeros((3, 0), np.float32)).shape == (0, 3)


def test_matrix_power():
  a = np.array([[1., 1.], [0., 2.]], np.float32)
  close(L.matrix_power(a, 0), np.eye(2))
  close(L.matrix_power(a, 6), np.linalg.matrix_power(a, 6))
  close(L.matrix_power(a, -3), np.linalg.matrix_power(a, -3))
  with pytest.raises(TypeError, match="must be square"):
    L.matrix_power(np.ones((2, 3)), 2)
  with pytest.raises(TypeError, match="exponent must be an integer"):
    L.matrix_power(a, 1.5)


def test_norms():
  x = np.array([[3., -4.], [0., 12.]], np.float32)
  assert L.norm(x) == 13 and L.norm(x, "nuc") == pytest.approx(np.linalg.norm(x, "nuc"))
  close(L.vector_norm(x, ord=1, axis=0), [3, 16])
  close(L.vector_norm(x, ord=0), 3)
  close(L.matrix_norm(x, ord=np.inf), 12)
  close(L.matrix_norm(x[None], keepdims=True), [[[13]]])
  with pytest.raises(ValueError, match="Invalid order 'inf' for vector norm"):
    L.vector_norm(x, ord="inf")
  with pytest.raises(ValueError, match="Invalid order '3' for matrix norm"):
    L.norm(x, ord=3)
  with pytest.raises(ValueError, match="Improper number of axes"):
    L.norm(x[None], axis=(0, 1, 2))


def test_cond():
  a = np.array([[1., 2.], [2., 1.]], np.float32)
  close(L.cond(a), 3)
  for p in [1, -1, -2, np.inf, "fro"]:
    close(L.cond(a, p), np.linalg.cond(a, p))
  with pytest.raises(ValueError, match="must be square"):
    L.cond(np.ones((2, 3)), 1)


def test_solve_shapes():
  a = np.eye(3, dtype=np.float32) * 2
  assert L.solve(a, np.ones(3)).shape == (3,)
  assert L.solve(np.broadcast_to(a, (4, 3, 3)), np.ones(3)).shape == (4, 3)
  assert L.solve(a, np.ones((2, 3, 5))).shape == (2, 3, 5)
  with pytest.raises(ValueError, match="Prior to JAX v0.5.0"):
    L.solve(np.broadcast_to(a, (4, 3, 3)), np.ones((4, 3)))
  with pytest.raises(ValueError, match="at least two dimensional"):
    L.solve(np.ones(3), np.ones(3))
  with pytest.raises(ValueError, match="must have shape"):
    L.inv(np.ones((2, 3)))


def test_lowering_follows_jax():
  a = np.eye(3, dtype=np.float32)
  text = str(jax.make_jaxpr(L.solve)(a, np.ones(3, np.float32)))
  # one LU, then custom_linear_solve whose solve and transpose_solve jaxprs
  # each hold two triangular solves and a row gather
  assert "= lu " in text and "custom_linear_solve[" in text
  assert text.count("triangular_solve[") == 4 and text.count("gather[") == 2
  text = str(jax.make_jaxpr(L.det)(np.eye(4, dtype=np.float32)))
  assert "= lu " in text
  assert "lu" not in str(jax.make_jaxpr(L.det)(a))  # closed form for 3x3
  text = str(jax.make_jaxpr(L.eigvalsh)(a))
  assert "eigh[" in text


def test_tensor_functions():
  rng = np.random.default_rng(3)
  a = rng.normal(size=(2, 3, 6)).astype(np.float32) + np.eye(6).reshape(2, 3, 6)
  close(L.tensorinv(a), np.linalg.tensorinv(a), 1e-3)
  b = np.ones((2, 3), np.float32)
  close(L.tensorsolve(a, b), np.linalg.tensorsolve(a, b), 1e-3)
  with pytest.raises(ValueError, match="ind must be a positive integer"):
    L.tensorinv(a, 0)
  with pytest.raises(ValueError, match="tensorinv is only possible"):
    L.tensorinv(a, 1)


def test_multi_dot():
  rng = np.random.default_rng(4)
  arrays = [rng.normal(size=s).astype(np.float32) for s in [(4,), (4, 10), (10, 2), (2, 3)]]
  close(L.multi_dot(arrays), np.linalg.multi_dot(arrays))
  # (10 x 2)(2 x 3) first would cost more than ((4)(4 x 10))(10 x 2): the chain order matters
  text = str(jax.make_jaxpr(lambda *a: L.multi_dot(a))(*arrays))
  assert text.count("dot_general[") == 3
  with pytest.raises(ValueError, match="at least two arrays"):
    L.multi_dot(arrays[:1])
  with pytest.raises(ValueError, match="must match first dimension"):
    L.multi_dot([arrays[1], arrays[1]])


def test_small_wrappers():
  x = np.arange(12, dtype=np.float32).reshape(3, 4)
  close(L.cross(np.eye(3, dtype=np.float32), np.array([1., 2., 3.], np.float32)),
        np.linalg.cross(np.eye(3), [1., 2., 3.]))
  with pytest.raises(ValueError, match="3-dimensional vectors"):
    L.cross(x, x)
  close(L.outer(x[0], x[1]), np.outer(x[0], x[1]))
  with pytest.raises(ValueError, match="one-dimensional"):
    L.outer(x, x)
  close(L.trace(x, offset=1), np.linalg.trace(x, offset=1))
  assert L.trace(x.astype(np.int8)).dtype == np.int32
  close(L.diagonal(x, offset=-1), np.linalg.diagonal(x, offset=-1))
  close(L.matrix_transpose(x[None]), np.swapaxes(x[None], -1, -2))
  with pytest.raises(ValueError, match="at least 2 dimensions"):
    L.matrix_transpose(x[0])
  close(L.matmul(x, x.T), x @ x.T)
  close(L.tensordot(x, x, axes=2), np.tensordot(x, x))
  close(L.vecdot(x, x), np.linalg.vecdot(x, x))


def test_float64_under_x64():
  rng = np.random.default_rng(5)
  a = rng.normal(size=(4, 4)) + 4 * np.eye(4)
  with enable_x64():
    assert L.det(a).dtype == np.float64
    np.testing.assert_allclose(L.det(a), np.linalg.det(a), rtol=1e-12)
    np.testing.assert_allclose(L.inv(a), np.linalg.inv(a), rtol=1e-12)
    np.testing.assert_allclose(L.svd(a, compute_uv=False), np.linalg.svd(a, compute_uv=False),
                               rtol=1e-12)
    assert L.eigvals(a).dtype == np.complex128


def test_deprecated_aliases_do_not_warn_by_default():
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    L.pinv(np.eye(2, dtype=np.float32))
    L.matrix_rank(np.eye(2, dtype=np.float32))
