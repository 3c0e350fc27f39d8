"""`jax.flatten_util.ravel_pytree`: a pytree's leaves as one vector and back,
with JAX's dtype promotion and errors."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl.flatten_util import ravel_pytree

_SHAPES = st.lists(st.integers(0, 3), max_size=3).map(tuple)
_DTYPES = st.sampled_from([np.float32, np.int32, np.float16, np.bool_, np.complex64])


@st.composite
def _pytrees(draw, dtypes=_DTYPES):
  """A dict of lists and tuples of arrays (and a Python float), with their NumPy leaves."""
  leaves = [np.asarray(np.arange(np.prod(shape)).reshape(shape) * 1.5 - 2, draw(dtypes))
            for shape in draw(st.lists(_SHAPES, min_size=1, max_size=5))]
  tree = {"a": leaves[:2], "b": (tuple(leaves[2:4]), {"c": leaves[4:]})}
  return tree, leaves


@settings(max_examples=30, deadline=None)
@given(case=_pytrees())
def test_ravel_concatenates_the_promoted_leaves_and_unravel_restores_them(case):
  tree, leaves = case
  flat, unravel = ravel_pytree(jax.tree_util.tree_map(jnp.asarray, tree))
  dtype = jnp.result_type(*[leaf.dtype for leaf in leaves])
  expected = np.concatenate([leaf.astype(dtype).ravel() for leaf in leaves])
  assert flat.dtype == dtype and flat.shape == expected.shape
  np.testing.assert_array_equal(flat, expected)
  with warnings.catch_warnings():
    warnings.simplefilter("error")   # complex back to real leaves: no ComplexWarning
    back = unravel(flat)
  assert jax.tree_util.tree_structure(back) == jax.tree_util.tree_structure(tree)
  for got, want in zip(jax.tree_util.tree_leaves(back), leaves):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_one_dtype_unravels_any_dtype_and_mixed_dtypes_need_the_flat_dtype():
  tree = {"w": jnp.ones((2, 3), jnp.float32), "b": jnp.zeros(3, jnp.float32)}
  flat, unravel = ravel_pytree(tree)
  back = unravel(flat.astype(jnp.float16))   # a single dtype: unravel keeps the vector's
  assert back["w"].dtype == jnp.float16 and back["b"].shape == (3,)
  flat, unravel = ravel_pytree([jnp.ones(2, jnp.int32), jnp.ones(2, jnp.float32)])
  assert flat.dtype == jnp.float32
  with pytest.raises(TypeError, match="unravel function given array of dtype float16, "
                                      "but expected dtype float32"):
    unravel(flat.astype(jnp.float16))
  with pytest.raises(ValueError, match="Sum of sizes"):
    unravel(jnp.ones(5, jnp.float32))


def test_an_empty_pytree_ravels_to_an_empty_float32_vector():
  flat, unravel = ravel_pytree({"a": [], "b": ()})
  assert flat.dtype == jnp.float32 and flat.shape == (0,)
  assert unravel(flat) == {"a": [], "b": ()}
  with pytest.raises(ValueError, match=r"expected an array of shape \(0,\), got shape \(2,\)"):
    unravel(jnp.ones(2))


def test_unravel_functions_of_one_structure_are_equal():
  first = ravel_pytree({"x": jnp.ones(3), "y": 2.0})[1]
  second = ravel_pytree({"x": jnp.zeros(3), "y": 5.0})[1]
  other = ravel_pytree({"x": jnp.zeros(4), "y": 5.0})[1]
  assert first == second and hash(first) == hash(second) and first != other


def test_ravel_under_jit_and_grad():
  params = {"w": jnp.arange(6.0).reshape(2, 3), "b": jnp.array([1.0, -2.0])}

  def loss(p):
    flat, _ = ravel_pytree(p)
    return jnp.sum(flat ** 2)

  grads = jax.jit(jax.grad(loss))(params)
  np.testing.assert_allclose(grads["w"], 2 * params["w"])
  np.testing.assert_allclose(grads["b"], 2 * params["b"])
  flat, unravel = ravel_pytree(params)
  np.testing.assert_array_equal(jax.jit(unravel)(flat * 2)["w"], params["w"] * 2)


def test_flatten_util_and_typing_are_submodules_of_the_package():
  assert jax.flatten_util.ravel_pytree is ravel_pytree
  assert jax.typing.ArrayLike is not None and jax.typing.DTypeLike is not None
