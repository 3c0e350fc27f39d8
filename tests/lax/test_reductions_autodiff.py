"""Derivatives of refimpl/lax/reductions.py at the edges (ties, zeros,
empty reductions, infinities, the cases JAX refuses) and the primitives
they stage, as JAX's rules do. The derivative checks on random inputs are
the AD_CASES of conformance/families/reductions.py."""

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import lax
from refimpl.interpreters import ad
from refimpl.lax import reductions

F32 = np.float32


def _primitives(closed):
  return [eqn.primitive.name for eqn in closed.jaxpr.eqns]


def test_reduce_sum_gradient_broadcasts_the_cotangent():
  x = np.arange(6, dtype=F32).reshape(2, 3)
  ct = np.array([1., 2.], F32)
  _, vjp = jax.vjp(lambda x: lax.reduce_sum(x, (1,)), x)
  np.testing.assert_array_equal(vjp(ct)[0], [[1, 1, 1], [2, 2, 2]])
  closed = jax.make_jaxpr(jax.grad(lambda x: lax.reduce_sum(x, (0, 1))))(x)
  assert _primitives(closed) == ["reduce_sum", "broadcast_in_dim"]


def test_reduce_max_and_min_share_the_tangent_among_ties():
  x = np.array([[1., 3., 3.], [2., 2., 2.]], F32)
  np.testing.assert_allclose(jax.grad(lambda x: jnp.sum(lax.reduce_max(x, (1,))))(x),
                             [[0, .5, .5], [1 / 3, 1 / 3, 1 / 3]])
  np.testing.assert_allclose(jax.grad(lambda x: jnp.sum(lax.reduce_min(x, (1,))))(-x),
                             [[0, .5, .5], [1 / 3, 1 / 3, 1 / 3]])
  # the JVP averages the tangents at the tied positions
  t = np.array([[5., 10., 20.], [3., 6., 9.]], F32)
  _, tangent = jax.jvp(lambda x: lax.reduce_max(x, (1,)), (x,), (t,))
  np.testing.assert_allclose(tangent, [15., 6.])


def test_reduce_max_of_nothing_has_a_nan_tangent():
  # the tangent is (sum of nothing) / (count of nothing) = 0 / 0, as in JAX
  out, tangent = jax.jvp(lambda x: lax.reduce_max(x, (0,)), (np.zeros(0, F32),),
                         (np.zeros(0, F32),))
  assert out == -np.inf and np.isnan(tangent)


def test_reduce_max_staged_primitives_are_jaxs():
  closed = jax.make_jaxpr(jax.grad(lambda x: lax.reduce_max(x, (0,))))(np.ones(3, F32))
  assert _primitives(closed) == ["reduce_max", "reshape", "eq", "convert_element_type",
                                 "reduce_sum", "div", "broadcast_in_dim", "mul"]


def test_reduce_prod_gradient_is_exact_at_zeros():
  grad = jax.grad(lambda x: lax.reduce_prod(x, (0,)))
  np.testing.assert_array_equal(grad(np.array([2., 0., 3.], F32)), [0., 6., 0.])
  np.testing.assert_array_equal(grad(np.array([0., 0., 3.], F32)), [0., 0., 0.])
  np.testing.assert_array_equal(grad(np.array([2., 5., 3., 7., 1.], F32)),
                                [105., 42., 70., 30., 210.])
  assert grad(np.zeros(0, F32)).shape == (0,)


def test_reduce_prod_differentiates_a_tree_of_products():
  # as JAX: the primal comes from the tree too, so no reduce_prod is staged
  closed = jax.make_jaxpr(jax.grad(lambda x: lax.reduce_prod(x, (0,))))(np.ones(3, F32))
  names = _primitives(closed)
  assert "reduce_prod" not in names
  assert {"slice", "pad", "mul", "squeeze"} <= set(names)


def test_integer_reductions_and_arg_reductions_are_not_differentiable():
  for prim in (reductions.reduce_and_p, reductions.reduce_or_p, reductions.reduce_xor_p,
               reductions.argmax_p, reductions.argmin_p):
    assert prim in ad.non_differentiable
  x = np.array([1., 4., 2.], F32)
  _, tangent = jax.jvp(lambda x: lax.argmax(x, 0, np.int32), (x,), (np.ones(3, F32),))
  assert tangent.dtype == jax.dtypes.float0


def test_generic_reduce_gradients():
  x = np.array([[1., 5., 2.], [7., 3., 4.]], F32)
  add = lambda a, b: lax.add(a, b)   # a new function: not recognized as a monoid
  fn = lambda x: jnp.sum(lax.reduce(x, F32(0), add, (1,)))
  assert "reduce" in _primitives(jax.make_jaxpr(fn)(x))
  np.testing.assert_array_equal(jax.grad(fn)(x), np.ones((2, 3)))

  def max_and_index(x):
    index = lax.broadcasted_iota(np.int32, x.shape, 1)

    def computation(a, b):
      pick = lax.gt(b[0], a[0])
      return lax.select(pick, b[0], a[0]), lax.select(pick, b[1], a[1])
    value, i = lax.reduce((x, index), (F32(-np.inf), np.int32(0)), computation, (1,))
    return jnp.sum(value), i
  grad, index = jax.grad(max_and_index, has_aux=True)(x)
  np.testing.assert_array_equal(grad, [[0, 1, 0], [1, 0, 0]])
  np.testing.assert_array_equal(index, [1, 0])


def test_generic_reduce_gradient_of_a_non_elementwise_computation():
  """The computation is mapped with vmap, so any batchable (associative)
  program works: here max and sum written by stacking and reducing."""
  x = np.array([[1., 5., 2.], [7., 3., 4.]], F32)
  max_fn = lambda x: jnp.sum(lax.reduce(
      x, F32(-np.inf), lambda a, b: jnp.max(jnp.stack([a, b])), (1,)))
  np.testing.assert_array_equal(jax.grad(max_fn)(x), [[0, 1, 0], [1, 0, 0]])
  sum_fn = lambda x: lax.reduce(x, F32(0), lambda a, b: jnp.sum(jnp.stack([a, b])), (0,))
  np.testing.assert_array_equal(jax.jacfwd(sum_fn)(x), jax.jacfwd(lambda x: x.sum(0))(x))
  np.testing.assert_array_equal(jax.jacrev(sum_fn)(x), jax.jacfwd(lambda x: x.sum(0))(x))


def test_generic_reduce_refuses_a_differentiated_initial_value():
  x = np.ones(3, F32)
  fn = lambda x, init: lax.reduce(x, init, lambda a, b: lax.add(a, b), (0,))
  with pytest.raises(NotImplementedError, match="non-zero tangents for initial values"):
    jax.jvp(fn, (x, F32(0)), (x, F32(1)))
  # with only the operand differentiated it works
  _, tangent = jax.jvp(lambda x: fn(x, F32(0)), (x,), (x,))
  assert tangent == 3.


def test_cumsum_transposes_to_a_reverse_cumsum():
  x = np.ones(4, F32)
  w = np.array([1., 2., 3., 4.], F32)
  for reverse, expected in [(False, [10, 9, 7, 4]), (True, [1, 3, 6, 10])]:
    fn = lambda x: jnp.sum(lax.cumsum(x, 0, reverse) * w)
    np.testing.assert_array_equal(jax.grad(fn)(x), expected)
  closed = jax.make_jaxpr(jax.grad(lambda x: jnp.sum(lax.cumsum(x, 0))))(x)
  cumsums = [eqn for eqn in closed.jaxpr.eqns if eqn.primitive.name == "cumsum"]
  assert [eqn.params["reverse"] for eqn in cumsums] == [False, True]


def test_cumprod_gradient_with_a_zero():
  # sum(cumprod([a, b, c])) = a + ab + abc: at (2, 0, 3) the gradient is (1, 8, 0)
  grad = jax.grad(lambda x: jnp.sum(lax.cumprod(x, 0)))
  np.testing.assert_array_equal(grad(np.array([2., 0., 3.], F32)), [1., 8., 0.])
  grad_reverse = jax.grad(lambda x: jnp.sum(lax.cumprod(x, 0, reverse=True)))
  np.testing.assert_array_equal(grad_reverse(np.array([3., 0., 2.], F32)), [0., 8., 1.])


def test_cummax_ties_split_the_gradient_as_max_does():
  # cummax([1, 1]) = [x0, max(x0, x1)], and max splits a tie in halves
  grad = jax.grad(lambda x: jnp.sum(lax.cummax(x, 0)))
  np.testing.assert_array_equal(grad(np.array([1., 1.], F32)), [1.5, .5])
  np.testing.assert_array_equal(grad(np.array([3., 1., 2., 5.], F32)), [3., 0., 0., 1.])
  grad_min = jax.grad(lambda x: jnp.sum(lax.cummin(x, 0, reverse=True)))
  # from the end: [min(3, 1, 2, 5), min(1, 2, 5), min(2, 5), 5] = [1, 1, 2, 5]
  np.testing.assert_array_equal(grad_min(np.array([3., 1., 2., 5.], F32)), [0., 2., 1., 1.])


def test_cumlogsumexp_gradient_is_a_softmax():
  x = np.array([0.5, -1., 2., 0.], F32)
  last = np.array([0., 0., 0., 1.], F32)
  grad = jax.grad(lambda x: jnp.sum(lax.cumlogsumexp(x, 0) * last))(x)
  np.testing.assert_allclose(grad, np.exp(x) / np.exp(x).sum(), rtol=1e-6)
  # -inf elements add nothing and get no gradient
  x = np.array([-np.inf, 0., -np.inf], F32)
  grad = jax.grad(lambda x: jnp.sum(lax.cumlogsumexp(x, 0)))(x)
  np.testing.assert_array_equal(grad, [1., 2., 0.])


def test_cumulative_jvps_differentiate_a_prefix_scan():
  # as JAX: the cumulative primitive itself is not staged, its scan is
  x = np.ones(5, F32)
  for fn in (lax.cumprod, lax.cummax, lax.cummin, lax.cumlogsumexp):
    names = _primitives(jax.make_jaxpr(jax.grad(lambda x: jnp.sum(fn(x, 0))))(x))
    assert fn.__name__ not in names
    assert {"slice", "pad", "concatenate"} <= set(names)
  names = _primitives(jax.make_jaxpr(jax.grad(lambda x: jnp.sum(lax.cumprod(x, 0, True))))(x))
  assert "rev" in names
