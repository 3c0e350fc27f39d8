"""Tests of refimpl/lax/control_flow/solves.py: `lax.custom_linear_solve`
(the `custom_linear_solve` primitive) and `lax.custom_root`, with every
transformation; and `jnp.linalg.solve`, built on custom_linear_solve as in
JAX."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import lax
from conformance import strategies as S

A = np.array([[4., 1., 0.5], [2., 5., 1.], [0., 1., 3.]], np.float32)
B = np.array([1., -2., 3.], np.float32)


def close(actual, expected, rtol=1e-5, atol=1e-6):
  np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=rtol, atol=atol)


def dense_solve(a, b, transpose=True, **kwargs):
  """A x = b by custom_linear_solve, solving with jnp.linalg.solve."""
  return lax.custom_linear_solve(
      lambda x: a @ x, b, lambda matvec, x: jnp.linalg.solve(a, x),
      transpose_solve=(lambda vecmat, x: jnp.linalg.solve(a.T, x)) if transpose else None,
      **kwargs)


def numpy_solve(a, b):
  """A solver that cannot be differentiated (a NumPy callback): derivatives
  must come from the implicit rules."""
  return jax.pure_callback(lambda a, b: np.linalg.solve(a, b).astype(np.float32),
                           jax.ShapeDtypeStruct(b.shape, np.float32), a, b,
                           vmap_method="sequential")


# --- custom_linear_solve: values and jaxprs -------------------------------------------

def test_value_is_solve_result():
  close(dense_solve(A, B), np.linalg.solve(A, B))


def test_value_is_whatever_solve_returns():
  # not checked against matvec, as in JAX
  out = lax.custom_linear_solve(lambda x: A @ x, B, lambda matvec, x: 2 * x)
  close(out, 2 * B)


def test_pytree_b():
  b = {"u": B, "v": (np.float32(2.0),)}
  out = lax.custom_linear_solve(
      lambda x: {"u": A @ x["u"], "v": (4 * x["v"][0],)}, b,
      lambda matvec, x: {"u": jnp.linalg.solve(A, x["u"]), "v": (x["v"][0] / 4,)})
  close(out["u"], np.linalg.solve(A, B))
  close(out["v"][0], 0.5)


def test_jaxpr_structure():
  inv = np.linalg.inv(A)
  f = lambda a, b: lax.custom_linear_solve(lambda x: a @ x, b, lambda _, x: inv @ x,
                                           lambda _, x: inv.T @ x)
  text = str(jax.make_jaxpr(f)(A, B))
  assert text.count("custom_linear_solve[") == 1
  assert "const_lengths=_LinearSolveTuple(matvec=1, vecmat=1, solve=1, transpose_solve=1)" \
      in text
  assert "jaxprs=_LinearSolveTuple(matvec={ lambda ; " in text
  assert "vecmat={" in text and "solve={" in text and "transpose_solve={" in text
  # operands: the constants of matvec, vecmat (the matrix c), solve, transpose_solve
  # (the jaxpr's constants a, b), then b (d)
  assert text.startswith("{ lambda a:f32[3,3] b:f32[3,3]; c:f32[3,3] d:f32[3]. let")
  assert text.endswith("] c c a b d\n  in (e,) }")


def test_jaxpr_without_transpose_solve():
  text = str(jax.make_jaxpr(lambda b: dense_solve(A, b, transpose=False))(B))
  assert "const_lengths=_LinearSolveTuple(matvec=1, vecmat=0, solve=1, transpose_solve=0)" \
      in text
  assert "vecmat=None" in text and "transpose_solve=None" in text


def test_symmetric_uses_matvec_and_solve_for_the_transpose():
  text = str(jax.make_jaxpr(lambda b: lax.custom_linear_solve(
      lambda x: A @ x, b, lambda matvec, x: x, symmetric=True))(B))
  assert "const_lengths=_LinearSolveTuple(matvec=1, vecmat=1, solve=0, transpose_solve=0)" \
      in text


def test_vecmat_is_the_transpose():
  closed = jax.make_jaxpr(dense_solve)(A, B)
  vecmat = closed.eqns[0].params["jaxprs"].vecmat
  from refimpl.interpreters.eval import eval_closed_jaxpr
  close(eval_closed_jaxpr(vecmat, A, B)[0], A.T @ B)


def test_has_aux():
  def solve(matvec, x):
    y = jnp.linalg.solve(A, x)
    return y, {"residual": jnp.max(jnp.abs(matvec(y) - x)), "iterations": 1}

  x, aux = lax.custom_linear_solve(lambda x: A @ x, B, solve, has_aux=True)
  close(x, np.linalg.solve(A, B))
  assert float(aux["residual"]) < 1e-5 and int(aux["iterations"]) == 1

  def first(b):
    return lax.custom_linear_solve(lambda x: A @ x, b, solve, has_aux=True)[0]
  close(jax.jacfwd(first)(B), np.linalg.inv(A), rtol=1e-5)
  aux_t = jax.jvp(lambda b: lax.custom_linear_solve(lambda x: A @ x, b, solve,
                                                    has_aux=True)[1]["residual"],
                  (B,), (B,))[1]
  assert float(aux_t) == 0.0


# --- custom_linear_solve: derivatives -------------------------------------------------

def test_derivative_in_b_is_the_inverse():
  inv = np.linalg.inv(A)
  close(jax.jacfwd(dense_solve, argnums=1)(A, B), inv, rtol=1e-5)
  close(jax.jacrev(dense_solve, argnums=1)(A, B), inv, rtol=1e-5)


def test_derivative_in_the_matrix():
  # d(c . A^-1 b)/dA = -(A^-T c) x^T with x = A^-1 b
  c = np.array([1., 2., -1.], np.float32)
  x = np.linalg.solve(A, B)
  expected = -np.outer(np.linalg.solve(A.T, c), x)
  close(jax.grad(lambda a: dense_solve(a, B) @ c)(A), expected, rtol=1e-5)
  tangent = np.ones_like(A)
  close(jax.jvp(lambda a: dense_solve(a, B), (A,), (tangent,))[1],
        -np.linalg.solve(A, tangent @ x), rtol=1e-5)


def test_solver_is_never_differentiated():
  def f(a, b):
    return lax.custom_linear_solve(lambda x: a @ x, b, lambda _, x: numpy_solve(a, x),
                                   lambda _, x: numpy_solve(a.T, x))
  close(jax.jacrev(f, argnums=1)(A, B), np.linalg.inv(A), rtol=1e-5)
  close(jax.jacfwd(f, argnums=1)(A, B), np.linalg.inv(A), rtol=1e-5)
  c = np.array([1., 2., -1.], np.float32)
  close(jax.grad(lambda a: f(a, B) @ c)(A),
        -np.outer(np.linalg.solve(A.T, c), np.linalg.solve(A, B)), rtol=1e-5)


def test_second_derivatives():
  # d2(A^-1 b)/db2 = 0; d/dA of the b-derivative: d(A^-1) = -A^-1 dA A^-1
  hess = jax.hessian(lambda b: jnp.sum(dense_solve(A, b) ** 2))(B)
  inv = np.linalg.inv(A)
  close(hess, 2 * inv.T @ inv, rtol=1e-4)
  tangent = np.eye(3, dtype=np.float32)
  d_inv = jax.jvp(lambda a: jax.jacrev(dense_solve, argnums=1)(a, B), (A,), (tangent,))[1]
  close(d_inv, -inv @ tangent @ inv, rtol=1e-4, atol=1e-6)


def test_symmetric_reverse_mode_without_transpose_solve():
  s = A + A.T
  f = lambda b: lax.custom_linear_solve(lambda x: s @ x, b,
                                        lambda _, x: jnp.linalg.solve(s, x), symmetric=True)
  close(jax.jacrev(f)(B), np.linalg.inv(s), rtol=1e-5)


def test_reverse_mode_needs_transpose_solve():
  f = lambda b: dense_solve(A, b, transpose=False)
  close(jax.jvp(f, (B,), (B,))[1], np.linalg.solve(A, B), rtol=1e-5)  # forward is fine
  with pytest.raises(TypeError, match="transpose_solve required for backwards mode "
                                      "automatic differentiation of custom_linear_solve"):
    jax.grad(lambda b: f(b).sum())(B)


def test_grad_through_jit():
  g = jax.jit(jax.grad(lambda a, b: dense_solve(a, b).sum(), argnums=(0, 1)))
  ga, gb = g(A, B)
  close(gb, np.linalg.solve(A.T, np.ones(3)), rtol=1e-5)
  close(ga, -np.outer(np.linalg.solve(A.T, np.ones(3)), np.linalg.solve(A, B)), rtol=1e-5)


# --- custom_linear_solve: vmap -------------------------------------------------------

AS = np.stack([A, A.T + np.eye(3, dtype=np.float32), 2 * A])
BS = np.stack([B, -B, B[::-1]])


def test_vmap_batched_b():
  close(jax.vmap(dense_solve, (None, 0))(A, BS), np.linalg.solve(A, BS.T).T, rtol=1e-5)
  close(jax.vmap(dense_solve, (None, 1))(A, BS.T), np.linalg.solve(A, BS.T).T, rtol=1e-5)


def test_vmap_batched_matrix():
  close(jax.vmap(dense_solve, (0, None))(AS, B), np.linalg.solve(AS, B[None, :, None])[..., 0],
        rtol=1e-5)
  close(jax.vmap(dense_solve)(AS, BS), np.linalg.solve(AS, BS[..., None])[..., 0], rtol=1e-5)


def test_vmap_unbatched_b_becomes_batched():
  # b unbatched, only matvec's constant batched: the fixpoint batches b too
  def f(scale, b):
    return lax.custom_linear_solve(lambda x: scale * (A @ x), b,
                                   lambda _, x: jnp.linalg.solve(A, x) / scale,
                                   lambda _, x: jnp.linalg.solve(A.T, x) / scale)
  scales = np.array([1., 2., 4.], np.float32)
  close(jax.vmap(f, (0, None))(scales, B), np.linalg.solve(A, B)[None] / scales[:, None],
        rtol=1e-5)
  close(jax.vmap(jax.grad(lambda s, b: f(s, b).sum()), (0, None))(scales, B),
        -np.linalg.solve(A, B).sum() / scales ** 2, rtol=1e-5)


def test_vmap_with_pytree_and_aux():
  def f(b):
    return lax.custom_linear_solve(
        lambda x: (A @ x[0], 2 * x[1]), b,
        lambda _, x: ((jnp.linalg.solve(A, x[0]), x[1] / 2), jnp.sum(x[1])), has_aux=True)
  (x0, x1), aux = jax.vmap(f)((BS, BS[:, 0]))
  close(x0, np.linalg.solve(A, BS.T).T, rtol=1e-5)
  close(x1, BS[:, 0] / 2)
  close(aux, BS[:, 0])


def test_vmap_of_grad_and_grad_of_vmap():
  loss = lambda a, b: jnp.sum(dense_solve(a, b) ** 2)
  per_example = jax.vmap(jax.grad(loss, argnums=(0, 1)))(AS, BS)
  for i in range(3):
    ga, gb = jax.grad(loss, argnums=(0, 1))(AS[i], BS[i])
    close(per_example[0][i], ga, rtol=1e-4, atol=1e-6)
    close(per_example[1][i], gb, rtol=1e-4, atol=1e-6)
  total = jax.grad(lambda a, b: jnp.sum(jax.vmap(loss)(a, b)), argnums=(0, 1))(AS, BS)
  close(total[0], per_example[0], rtol=1e-4, atol=1e-6)
  close(total[1], per_example[1], rtol=1e-4, atol=1e-6)


def test_jit_of_vmap():
  close(jax.jit(jax.vmap(dense_solve))(AS, BS), jax.vmap(dense_solve)(AS, BS), rtol=1e-6)


# --- custom_linear_solve: errors ------------------------------------------------------

def test_matvec_shape_error():
  with pytest.raises(ValueError, match=r"matvec\(\) output shapes must match b, "
                                       r"got \[\(2,\)\] and \[\(3,\)\]"):
    lax.custom_linear_solve(lambda x: x[:2], B, lambda _, x: x)


def test_solve_tree_error():
  with pytest.raises(TypeError, match=r"solve\(\) output pytree structure must match b"):
    lax.custom_linear_solve(lambda x: x, B, lambda _, x: (x,))


def test_has_aux_needs_a_pair():
  with pytest.raises(ValueError, match=r"solve\(\) produced a pytree with structure .* but a "
                                       "pytree tuple with auxiliary output was expected"):
    lax.custom_linear_solve(lambda x: x, B, lambda _, x: x, has_aux=True)


def test_solve_dtype_error():
  # JAX checks shapes only (and fails when compiling)
  with pytest.raises(TypeError, match=r"solve\(\) output dtypes must match b, got "
                                      r"\['float32'\] and \['int32'\]"):
    lax.custom_linear_solve(lambda x: 2 * x, 1, lambda _, x: x / 2)


def test_weakly_typed_scalar_b():
  f = lambda b: lax.custom_linear_solve(lambda x: 2 * x, b, lambda _, x: x / 2, symmetric=True)
  close(f(1.0), 0.5)
  close(jax.grad(f)(1.0), 0.5)


def test_transpose_solve_shape_error():
  with pytest.raises(ValueError, match=r"transpose_solve\(\) output shapes must match b"):
    lax.custom_linear_solve(lambda x: x, B, lambda _, x: x, lambda _, x: x[:1])


@given(st.integers(1, 4).flatmap(lambda n: st.tuples(
    S.bounded_arrays(np.float64, (n, n)), S.bounded_arrays(np.float64, (n,)))))
def test_property_solve_and_its_derivative(mb):
  m, b = mb
  a = m + 2 * len(b) * np.eye(len(b))
  with jax.enable_x64():
    close(dense_solve(a, b), np.linalg.solve(a, b), rtol=1e-10, atol=1e-12)
    close(jax.jacrev(dense_solve, argnums=1)(a, b), np.linalg.inv(a), rtol=1e-10, atol=1e-12)


# --- custom_root ------------------------------------------------------------------------

def newton(f, x):
  for _ in range(10):
    x = x - f(x) / jax.grad(f)(x)
  return x


def bisection(f, x):
  """Bisection on [x - 4, x + 4] for an increasing scalar f: piecewise
  constant in f's constants, so differentiating it would give zero."""
  lo, hi = x - 4.0, x + 4.0
  for _ in range(30):
    mid = (lo + hi) / 2
    up = f(mid) > 0
    lo, hi = jnp.where(up, lo, mid), jnp.where(up, mid, hi)
  return (lo + hi) / 2


def scalar_tangent_solve(g, y):
  return y / g(1.0)


def sqrt_root(a, solve=newton):
  return lax.custom_root(lambda x: x ** 2 - a, 1.0, solve, scalar_tangent_solve)


def test_root_value():
  close(sqrt_root(2.0), np.sqrt(2.0))
  close(sqrt_root(2.0, bisection), np.sqrt(2.0))


def test_root_implicit_derivative():
  # d sqrt(a)/da = 1 / (2 sqrt(a)); d2 = -1 / (4 a^1.5)
  for solve in (newton, bisection):
    close(jax.grad(sqrt_root)(2.0, solve), 0.5 / np.sqrt(2.0), rtol=1e-5)
    close(jax.jvp(lambda a: sqrt_root(a, solve), (2.0,), (1.0,))[1], 0.5 / np.sqrt(2.0),
          rtol=1e-5)
  close(jax.grad(jax.grad(sqrt_root))(2.0), -0.25 * 2.0 ** -1.5, rtol=1e-4)


def test_root_derivative_is_not_through_the_solver():
  # bisection is piecewise constant: without custom_root its derivative is 0
  f = lambda a: bisection(lambda x: x ** 2 - a, 1.0)
  assert float(jax.grad(f)(2.0)) == 0.0
  close(jax.grad(lambda a: sqrt_root(a, bisection))(2.0), 0.5 / np.sqrt(2.0), rtol=1e-5)


def test_root_of_a_vector_pytree():
  # x**2 = c and y = x * d elementwise, with a tangent solve by the Jacobian
  c = np.array([2., 3.], np.float32)

  def root(c, d):
    f = lambda z: {"x": z["x"] ** 2 - c, "y": z["y"] - z["x"] * d}

    def solve(f, z):
      x = jnp.sqrt(c)
      return {"x": x, "y": x * d}

    def tangent_solve(g, y):
      flat = lambda v: jnp.concatenate([v["x"], v["y"]])
      jac = jax.jacfwd(lambda v: flat(g({"x": v[:2], "y": v[2:]})))(flat(y))
      sol = jnp.linalg.solve(jac, flat(y))
      return {"x": sol[:2], "y": sol[2:]}
    return lax.custom_root(f, {"x": jnp.ones(2), "y": jnp.ones(2)}, solve, tangent_solve)

  out = root(c, 3.0)
  close(out["x"], np.sqrt(c))
  close(out["y"], 3 * np.sqrt(c))
  close(jax.jacfwd(lambda c: root(c, 3.0)["y"])(c), np.diag(1.5 / np.sqrt(c)), rtol=1e-5)
  close(jax.grad(lambda d: root(c, d)["y"].sum())(3.0), np.sqrt(c).sum(), rtol=1e-5)


def test_root_has_aux():
  def solve(f, x):
    return newton(f, x), 10
  x, aux = lax.custom_root(lambda x: x ** 2 - 2.0, 1.0, solve, scalar_tangent_solve,
                           has_aux=True)
  close(x, np.sqrt(2.0))
  assert int(aux) == 10
  g = jax.grad(lambda a: lax.custom_root(lambda x: x ** 2 - a, 1.0, solve,
                                         scalar_tangent_solve, has_aux=True)[0])(2.0)
  close(g, 0.5 / np.sqrt(2.0), rtol=1e-5)


def test_root_jaxpr_is_a_custom_jvp_call():
  text = str(jax.make_jaxpr(sqrt_root)(2.0))
  assert text.count("custom_jvp_call[") == 1 and "jvp_jaxpr_fun=_custom_root_jvp" in text


def test_root_jit_and_vmap():
  a = np.array([1., 2., 9.], np.float32)
  close(jax.jit(sqrt_root)(2.0), np.sqrt(2.0))
  close(jax.vmap(sqrt_root)(a), np.sqrt(a))
  close(jax.vmap(jax.grad(sqrt_root))(a), 0.5 / np.sqrt(a), rtol=1e-5)
  close(jax.grad(lambda a: jax.vmap(sqrt_root)(a).sum())(a), 0.5 / np.sqrt(a), rtol=1e-5)
  close(jax.jit(jax.vmap(jax.grad(sqrt_root)))(a), 0.5 / np.sqrt(a), rtol=1e-5)


def test_root_errors():
  with pytest.raises(TypeError, match=r"f\(\) output pytree structure must match "
                                      "initial_guess"):
    lax.custom_root(lambda x: (x, x), 1.0, newton, scalar_tangent_solve)
  with pytest.raises(TypeError, match=r"solve\(\) output pytree structure must match "
                                      "initial_guess"):
    lax.custom_root(lambda x: x, 1.0, lambda f, x: [x], scalar_tangent_solve)
  with pytest.raises(ValueError, match="auxiliary output was expected"):
    lax.custom_root(lambda x: x, 1.0, lambda f, x: x, scalar_tangent_solve, has_aux=True)
  with pytest.raises(TypeError, match=r"tangent_solve\(\) output pytree structure must "
                                      "match x"):
    lax.custom_root(lambda x: x, 1.0, lambda f, x: x, lambda g, y: (y,))


@given(S.bounded_arrays(np.float64, (3,), bound=1.0))
def test_property_root_matches_sqrt(v):
  a = 1.5 + v   # in [0.5, 2.5]
  with jax.enable_x64():
    close(jax.vmap(sqrt_root)(a), np.sqrt(a), rtol=1e-12)
    close(jax.vmap(jax.grad(sqrt_root))(a), 0.5 / np.sqrt(a), rtol=1e-10)


# --- jnp.linalg.solve -----------------------------------------------------------------

def test_linalg_solve_is_a_custom_linear_solve():
  text = str(jax.make_jaxpr(jnp.linalg.solve)(A, B))
  assert "stop_gradient" in text and "= lu " in text
  assert text.count("custom_linear_solve[") == 1
  # a matrix right-hand side: the solve is mapped over its columns
  text = str(jax.make_jaxpr(jnp.linalg.solve)(A, np.ones((3, 2), np.float32)))
  assert text.count("custom_linear_solve[") == 1 and "f32[2,3] = custom_linear_solve" in text


def test_linalg_solve_derivatives():
  inv = np.linalg.inv(A)
  close(jax.jacrev(jnp.linalg.solve, argnums=1)(A, B), inv, rtol=1e-5)
  x = np.linalg.solve(A, B)
  close(jax.grad(lambda a: jnp.linalg.solve(a, B).sum())(A),
        -np.outer(inv.T @ np.ones(3), x), rtol=1e-5)
  close(jax.vmap(jax.grad(lambda a, b: jnp.linalg.solve(a, b).sum()))(AS, BS),
        -np.einsum("bi,bj->bij", np.linalg.solve(np.swapaxes(AS, 1, 2), np.ones((3, 3, 1)))[..., 0],
                   np.linalg.solve(AS, BS[..., None])[..., 0]), rtol=1e-4, atol=1e-6)
