"""Batching rules of refimpl/lax/linalg.py: the programs `vmap` stages (as
JAX's rules do: a batched matvec is one dot_general, a batch of right-hand
sides is folded into one solve), per-example gradients, and every
decomposition under `vmap` with the batch axis anywhere. Random inputs with
random in_axes are the conformance cases under vmap
(tests/test_conformance_vmap.py)."""

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import lax
from refimpl.lax import linalg as lax_linalg
from conformance.batching import loop_over_batch

F32 = np.float32
RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _reseeded():
  """Each test draws from RNG as seeded, whatever tests ran before it (in this
  process: the order differs between runs with several workers)."""
  global RNG
  RNG = np.random.default_rng(0)


def _normal(*shape, dtype=F32):
  return RNG.standard_normal(shape).astype(dtype)


def _eqns(fn, *args):
  return jax.make_jaxpr(fn)(*args).jaxpr.eqns


def _primitives(fn, *args):
  return [eqn.primitive.name for eqn in _eqns(fn, *args)]


def _check_vmap(fn, *args, in_axes, rtol=1e-6, atol=1e-6):
  actual = jax.vmap(fn, in_axes=in_axes)(*args)
  expected = loop_over_batch(fn, in_axes, *args)
  for a, e in zip(jax.tree_util.tree_leaves(actual), jax.tree_util.tree_leaves(expected)):
    assert a.shape == e.shape and a.dtype == e.dtype
    np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)


# --- dot_general: the batch axis folded into the dimension numbers -----------------------

A = _normal(3, 4)


def test_batched_matvec_is_one_dot_general_then_the_output_transpose():
  # as JAX: the batch axis of x is a free rhs dim, so the result has it last
  # and out_axes=0 moves it first
  xs = _normal(5, 4)
  eqns = _eqns(jax.vmap(lambda x: jnp.dot(A, x)), xs)
  assert [e.primitive.name for e in eqns] == ["dot_general", "transpose"]
  assert eqns[0].params["dimension_numbers"] == (((1,), (1,)), ((), ()))
  assert eqns[1].params["permutation"] == (1, 0)
  np.testing.assert_allclose(jax.vmap(lambda x: jnp.dot(A, x))(xs), xs @ A.T, rtol=1e-5)


def test_batched_vecmat_needs_no_transpose():
  # the batch axis of the lhs is its first free dim: result axis 0
  xs = _normal(5, 3)
  eqns = _eqns(jax.vmap(lambda x: jnp.dot(x, A)), xs)
  assert [e.primitive.name for e in eqns] == ["dot_general"]
  assert eqns[0].params["dimension_numbers"] == (((1,), (0,)), ((), ()))


def test_batch_axis_elsewhere_is_not_moved_before_the_dot():
  xs = _normal(4, 5)   # batch axis 1
  f = jax.vmap(lambda x: jnp.dot(A, x), in_axes=1)
  eqns = _eqns(f, xs)
  assert [e.primitive.name for e in eqns] == ["dot_general", "transpose"]
  assert eqns[0].params["dimension_numbers"] == (((1,), (0,)), ((), ()))
  np.testing.assert_allclose(f(xs), xs.T @ A.T, rtol=1e-5)
  # out_axes=1 keeps the result where the dot_general puts it
  g = jax.vmap(lambda x: jnp.dot(A, x), in_axes=1, out_axes=1)
  assert _primitives(g, xs) == ["dot_general"]


@pytest.mark.parametrize("in_axes, expected_dims", [
    ((0, 0), (((2,), (1,)), ((0,), (0,)))),
    ((2, 1), (((1,), (0,)), ((2,), (1,)))),
])
def test_both_batched_adds_a_leading_batch_dimension(in_axes, expected_dims):
  ms = np.moveaxis(_normal(5, 3, 4), 0, in_axes[0])
  xs = np.moveaxis(_normal(5, 4), 0, in_axes[1])
  f = jax.vmap(lambda m, x: m @ x, in_axes=in_axes)
  eqns = _eqns(f, ms, xs)
  assert [e.primitive.name for e in eqns] == ["dot_general"]
  assert eqns[0].params["dimension_numbers"] == expected_dims
  _check_vmap(lambda m, x: m @ x, ms, xs, in_axes=in_axes, rtol=1e-5)


@pytest.mark.parametrize("in_axes", [(None, 0), (None, 2), (None, 3), (0, None), (2, None),
                                     (3, 1), (1, 3)])
def test_dot_general_with_its_own_batch_dims(in_axes):
  # member dims: lhs [b, i, k], rhs [k, b, j]: batch (0, 1), contracting (2, 0)
  dims = (((2,), (0,)), ((0,), (1,)))
  lhs = np.moveaxis(_normal(3, 2, 4, 5), 0, in_axes[0]) if in_axes[0] is not None \
      else _normal(2, 4, 5)
  rhs = np.moveaxis(_normal(3, 5, 2, 6), 0, in_axes[1]) if in_axes[1] is not None \
      else _normal(5, 2, 6)
  f = lambda x, y: lax.dot_general(x, y, dims)
  assert _primitives(jax.vmap(f, in_axes=in_axes), lhs, rhs)[0] == "dot_general"
  _check_vmap(f, lhs, rhs, in_axes=in_axes, rtol=1e-5, atol=1e-5)


def test_preferred_element_type_and_precision_are_kept():
  xs = _normal(5, 4)
  f = jax.vmap(lambda x: lax.dot(A, x, precision=lax.Precision.HIGHEST,
                                 preferred_element_type=np.float32))
  params = _eqns(f, xs)[0].params
  assert params["precision"] == (lax.Precision.HIGHEST, lax.Precision.HIGHEST)
  assert params["preferred_element_type"] == np.float32


def test_nested_vmap_with_different_in_axes_is_still_one_dot_general():
  ms, xs = _normal(2, 3, 4), _normal(4, 6)
  f = jax.vmap(jax.vmap(jnp.dot, in_axes=(0, None)), in_axes=(None, 1))
  assert _primitives(f, ms, xs).count("dot_general") == 1
  np.testing.assert_allclose(f(ms, xs), np.einsum("bik,kn->nbi", ms, xs), rtol=1e-5)


def test_per_example_gradients_of_a_linear_model():
  # vmap(grad) over examples equals the loop of grads; grad(vmap) of the
  # summed loss equals their sum
  w = _normal(4, 2)
  xs, ys = _normal(6, 4), _normal(6, 2)
  loss = lambda w, x, y: jnp.sum((jnp.dot(x, w) - y) ** 2)
  per_example = jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(w, xs, ys)
  expected = np.stack([jax.grad(loss)(w, x, y) for x, y in zip(xs, ys)])
  np.testing.assert_allclose(per_example, expected, rtol=1e-5, atol=1e-5)
  total = jax.grad(lambda w: jnp.sum(jax.vmap(loss, in_axes=(None, 0, 0))(w, xs, ys)))(w)
  np.testing.assert_allclose(total, expected.sum(0), rtol=1e-5, atol=1e-5)
  # the batched gradient stays one contraction per dot_general of the rule
  closed = jax.make_jaxpr(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))(w, xs, ys)
  assert "dot_general" in [e.primitive.name for e in closed.jaxpr.eqns]


def test_per_example_gradient_wrt_the_batched_operand():
  xs = _normal(5, 4)
  g = jax.vmap(jax.grad(lambda x: jnp.sum(jnp.dot(A, x) ** 2)))(xs)
  np.testing.assert_allclose(g, 2 * (xs @ A.T) @ A, rtol=1e-5, atol=1e-5)


# --- triangular_solve -------------------------------------------------------------------

TRI = np.tril(_normal(3, 3)) + 4 * np.eye(3, dtype=F32)


@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("b_axis", [0, 1, 2])
def test_triangular_solve_folds_a_batch_of_b_into_one_solve(left_side, b_axis):
  # a shared: no broadcast of a, a single solve on b reshaped (JAX's rule)
  b_member = (3, 2) if left_side else (2, 3)
  bs = np.moveaxis(_normal(4, *b_member), 0, b_axis)
  solve = lambda a, b: lax_linalg.triangular_solve(a, b, left_side=left_side, lower=True,
                                                   transpose_a=True)
  prims = _primitives(jax.vmap(solve, in_axes=(None, b_axis)), TRI, bs)
  assert prims.count("triangular_solve") == 1 and "broadcast_in_dim" not in prims
  assert "reshape" in prims
  _check_vmap(solve, TRI, bs, in_axes=(None, b_axis), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("in_axes", [(0, None), (2, 1), (1, 0)])
def test_triangular_solve_with_a_batched(in_axes):
  a_s = np.moveaxis(np.stack([TRI, 2 * TRI, TRI.T.copy()]), 0, in_axes[0])
  b = _normal(3, 2)
  bs = b if in_axes[1] is None else np.moveaxis(np.stack([b, -b, 2 * b]), 0, in_axes[1])
  solve = lambda a, b: lax_linalg.triangular_solve(a, b, left_side=True, lower=False,
                                                   unit_diagonal=True)
  _check_vmap(solve, a_s, bs, in_axes=in_axes, rtol=1e-5, atol=1e-5)


# --- tridiagonal_solve ------------------------------------------------------------------

DL, D, DU = _normal(4), _normal(4) + 5, _normal(4)


@pytest.mark.parametrize("b_axis", [0, 1, 2])
def test_tridiagonal_solve_folds_a_batch_of_b_into_one_solve(b_axis):
  bs = np.moveaxis(_normal(3, 4, 2), 0, b_axis)
  in_axes = (None, None, None, b_axis)
  prims = _primitives(jax.vmap(lax_linalg.tridiagonal_solve, in_axes=in_axes), DL, D, DU, bs)
  assert prims.count("tridiagonal_solve") == 1 and "broadcast_in_dim" not in prims
  _check_vmap(lax_linalg.tridiagonal_solve, DL, D, DU, bs, in_axes=in_axes, rtol=1e-5,
              atol=1e-5)


def test_tridiagonal_solve_with_batched_diagonals():
  ds = np.stack([D, D + 1, D * 2])
  b = _normal(4, 2)
  _check_vmap(lax_linalg.tridiagonal_solve, DL, ds, DU, b, in_axes=(None, 0, None, None),
              rtol=1e-5, atol=1e-5)
  _check_vmap(lax_linalg.tridiagonal_solve, DL, ds.T.copy(), DU, np.stack([b, -b, b], 2),
              in_axes=(None, 1, None, 2), rtol=1e-5, atol=1e-5)


# --- the decompositions: batch axes first, params kept -----------------------------------

def _spd(*batch, n=3):
  x = _normal(*batch, n, n)
  return (x @ np.swapaxes(x, -1, -2) + n * np.eye(n, dtype=F32)).astype(F32)


DECOMPOSITIONS = {
    "cholesky": (lambda x: lax_linalg.cholesky(x), _spd),
    "lu": (lax_linalg.lu, lambda *b: _normal(*b, 3, 4)),
    "qr": (lambda x: lax_linalg.qr(x, full_matrices=False), lambda *b: _normal(*b, 4, 3)),
    "qr(pivoting)": (lambda x: lax_linalg.qr(x, pivoting=True), lambda *b: _normal(*b, 3, 4)),
    "eigh": (lambda x: lax_linalg.eigh(x, lower=False, symmetrize_input=False), _spd),
    "eigh(subset, unsorted)": (lambda x: lax_linalg.eigh(x, sort_eigenvalues=False,
                                                          subset_by_index=(1, 3)), _spd),
    "svd": (lambda x: lax_linalg.svd(x, full_matrices=False), lambda *b: _normal(*b, 4, 3)),
    "svd(subset)": (lambda x: lax_linalg.svd(x, full_matrices=False, subset_by_index=(0, 2)),
                    lambda *b: _normal(*b, 3, 4)),
    "svd(values)": (lambda x: lax_linalg.svd(x, compute_uv=False), lambda *b: _normal(*b, 3, 4)),
    "eig": (lambda x: lax_linalg.eig(x, compute_left_eigenvectors=False),
            lambda *b: _normal(*b, 3, 3)),
    "geqrf": (lax_linalg.geqrf, lambda *b: _normal(*b, 4, 3)),
}


@pytest.mark.parametrize("name", DECOMPOSITIONS)
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_decompositions_under_vmap_equal_the_loop(name, axis):
  fn, make = DECOMPOSITIONS[name]
  x = np.moveaxis(make(2, 3), 1, axis)   # the mapped axis (size 3) at `axis`
  _check_vmap(fn, x, in_axes=(axis,), rtol=1e-5, atol=1e-5)
  # one application, on the batch with its batch axis first, with the params
  # of the unbatched program
  prim = name.split("(")[0]
  batched, = [e for e in _eqns(jax.vmap(fn, in_axes=axis), x) if e.primitive.name == prim]
  member, = [e for e in _eqns(fn, np.take(x, 0, axis)) if e.primitive.name == prim]
  assert batched.params == member.params
  assert batched.invars[0].aval.shape == (3,) + member.invars[0].aval.shape


def test_lu_outputs_all_have_the_batch_axis_first():
  x = np.moveaxis(_normal(5, 3, 3), 0, 2)
  lu_, pivots, perm = jax.vmap(lax_linalg.lu, in_axes=2)(x)
  assert lu_.shape == (5, 3, 3) and pivots.shape == (5, 3) and perm.shape == (5, 3)
  _check_vmap(lambda p: lax_linalg.lu_pivots_to_permutation(p, 4),
              np.array([[2, 1, 2], [0, 3, 3]], np.int32), in_axes=(1,))


@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (2, 1)])
def test_householder_product_broadcasts_the_unbatched_operand(in_axes):
  a, taus = lax_linalg.geqrf(_normal(3, 4, 3))
  a_arg = np.asarray(a)[0] if in_axes[0] is None else np.moveaxis(np.asarray(a), 0, in_axes[0])
  t_arg = np.asarray(taus)[0] if in_axes[1] is None \
      else np.moveaxis(np.asarray(taus), 0, in_axes[1])
  _check_vmap(lax_linalg.householder_product, a_arg, t_arg, in_axes=in_axes)


def test_per_example_gradients_through_cholesky():
  xs = _spd(4)
  f = lambda x: jnp.sum(lax_linalg.cholesky(x))
  expected = np.stack([jax.grad(f)(x) for x in xs])
  np.testing.assert_allclose(jax.vmap(jax.grad(f))(xs), expected, rtol=1e-4, atol=1e-5)
