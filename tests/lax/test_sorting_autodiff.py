"""Derivatives of refimpl/lax/sorting.py at the edges (ties, integer keys) and
the primitives their JVPs stage, as JAX's rules do. The derivative checks on
random inputs are the AD_CASES of conformance/families/sorting.py."""

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import lax


def _primitives(jaxpr):
  return [eqn.primitive.name for eqn in jaxpr.jaxpr.eqns]


def test_sort_ties_move_tangents_in_stable_order():
  # sorted: [1 (index 1), 1 (index 2), 2 (index 0)]
  x = np.array([2., 1., 1.], np.float32)
  t = np.array([10., 20., 30.], np.float32)
  out, tangent = jax.jvp(lax.sort, (x,), (t,))
  np.testing.assert_array_equal(out, [1., 1., 2.])
  np.testing.assert_array_equal(tangent, [20., 30., 10.])
  np.testing.assert_array_equal(jax.grad(lambda x: lax.sort(x)[0])(x), [0., 1., 0.])


def test_sort_along_a_dimension():
  x = np.array([[3., 1.], [2., 4.]], np.float32)
  weights = np.array([[1., 10.], [100., 1000.]], np.float32)
  g = jax.grad(lambda x: jnp.sum(lax.sort(x, dimension=0) * weights))(x)
  # column 0: [2, 3] comes from rows [1, 0]; column 1: [1, 4] from rows [0, 1]
  np.testing.assert_array_equal(g, [[100., 10.], [1., 1000.]])


def test_sort_by_integer_keys_permutes_the_values_gradient():
  keys = np.array([2, 0, 1, 0], np.int32)
  values = np.array([1., 2., 3., 4.], np.float32)
  weights = np.array([1., 10., 100., 1000.], np.float32)
  g = jax.grad(lambda v: jnp.sum(lax.sort_key_val(keys, v)[1] * weights))(values)
  # sorted positions of the values: [1, 3, 2, 0] (ties in key order kept)
  np.testing.assert_array_equal(g, [1000., 1., 100., 10.])


def test_sort_jvp_of_integer_operand_is_float0():
  keys = np.array([2, 0, 1], np.int32)
  values = np.array([1., 2., 3.], np.float32)
  _, (t_keys, t_values) = jax.jvp(lambda v: lax.sort_key_val(keys, v), (values,),
                                  (np.ones(3, np.float32),))
  assert t_keys.dtype == jax.dtypes.float0
  np.testing.assert_array_equal(t_values, [1., 1., 1.])


def test_top_k_ties_take_the_lowest_index():
  x = np.array([1., 3., 3., 2.], np.float32)
  np.testing.assert_array_equal(jax.grad(lambda x: lax.top_k(x, 1)[0][0])(x),
                                [0., 1., 0., 0.])
  np.testing.assert_array_equal(jax.grad(lambda x: jnp.sum(lax.top_k(x, 3)[0]))(x),
                                [0., 1., 1., 1.])


@pytest.mark.parametrize("fn, expected", [
    (lambda x: lax.approx_max_k(x, 2)[0], [[0., 1., 1.], [1., 0., 1.]]),
    (lambda x: lax.approx_min_k(x, 1)[0], [[1., 0., 0.], [0., 1., 0.]]),
])
def test_approx_top_k_gradient(fn, expected):
  x = np.array([[1., 5., 3.], [4., 0., 6.]], np.float32)
  np.testing.assert_array_equal(jax.grad(lambda x: jnp.sum(fn(x)))(x), expected)


def test_sort_jvp_sorts_an_iota_and_gathers():
  # As JAX: iota (uint32) sorted along with the operand, then a gather.
  x = np.zeros((2, 3), np.float32)
  jaxpr = jax.make_jaxpr(lambda x, t: jax.jvp(lax.sort, (x,), (t,)))(x, x)
  assert _primitives(jaxpr) == ["iota", "sort", "broadcast_in_dim", "gather"]
  iota, sort, _, gather = jaxpr.jaxpr.eqns
  assert iota.params["dtype"] == np.uint32
  assert len(sort.invars) == 2 and sort.params["num_keys"] == 1
  assert gather.params["mode"] == lax.GatherScatterMode.PROMISE_IN_BOUNDS


def test_top_k_jvp_gathers_at_the_indices():
  x = np.zeros((2, 3), np.float32)
  jaxpr = jax.make_jaxpr(lambda x, t: jax.jvp(lambda x: lax.top_k(x, 2), (x,), (t,)))(x, x)
  assert _primitives(jaxpr) == ["top_k", "reshape", "gather"]


def test_sort_gradient_scatters():
  jaxpr = jax.make_jaxpr(jax.grad(lambda x: jnp.sum(lax.sort(x) ** 2)))(
      np.zeros(3, np.float32))
  assert {"iota", "sort", "scatter-add"} <= set(_primitives(jaxpr))


@pytest.mark.parametrize("shape,axis", [((0, 0), 0), ((0, 3), 1), ((2, 0), 1), ((0,), 0)])
def test_derivatives_of_empty_operands_are_empty(shape, axis):
  """sort's and top_k's JVP and gradient of an empty operand: empty arrays
  of the operand's shape and dtype (their gathers would not fit)."""
  x = np.zeros(shape, np.float16)
  out, tangent = jax.jvp(lambda x: lax.sort(x, dimension=axis), (x,), (x,))
  assert out.shape == tangent.shape == shape and tangent.dtype == np.float16
  grad = jax.grad(lambda x: jnp.sum(lax.sort(x, dimension=axis).astype(np.float32)))(x)
  assert grad.shape == shape and grad.dtype == np.float16
  y = np.zeros(shape, np.float32)
  _, top = jax.jvp(lambda y: lax.top_k(y, 0)[0], (y,), (y,))
  assert top.shape == shape[:-1] + (0,)
