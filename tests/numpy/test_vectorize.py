"""Tests of refimpl/numpy/vectorize.py: `jnp.vectorize` (generalized ufuncs on vmap)."""

import functools

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from conformance import strategies as S


@functools.partial(jnp.vectorize, signature="(k),(k)->(k)")
def cross_product(a, b):
  assert a.shape == b.shape and a.ndim == b.ndim == 1
  return jnp.array([a[1] * b[2] - a[2] * b[1],
                    a[2] * b[0] - a[0] * b[2],
                    a[0] * b[1] - a[1] * b[0]])


@functools.partial(jnp.vectorize, signature="(n,m),(m)->(n)")
def matrix_vector_product(matrix, vector):
  assert matrix.ndim == 2 and matrix.shape[1:] == vector.shape
  return matrix @ vector


def test_docstring_examples_shapes():
  assert cross_product(jnp.ones(3), jnp.ones(3)).shape == (3,)
  assert cross_product(jnp.ones((2, 3)), jnp.ones(3)).shape == (2, 3)
  assert cross_product(jnp.ones((1, 2, 3)), jnp.ones((2, 1, 3))).shape == (2, 2, 3)
  assert matrix_vector_product(jnp.ones((2, 3)), jnp.ones(3)).shape == (2,)
  assert matrix_vector_product(jnp.ones((2, 3)), jnp.ones((4, 3))).shape == (4, 2)


def test_not_enough_core_dimensions():
  with pytest.raises(ValueError, match=r"input with shape \(3,\) does not have enough "
                     r"dimensions for all core dimensions \('n', 'm'\) on vectorized"):
    matrix_vector_product(jnp.ones(3), jnp.ones(3))


@given(st.data())
def test_cross_product_matches_numpy(data):
  shape_a, shape_b = data.draw(S.broadcastable_shapes(2, max_dims=2))
  a = data.draw(S.arrays(np.float32, shape_a + (3,),
                         elements=S.bounded_elements(np.float32, -10, 10)))
  b = data.draw(S.arrays(np.float32, shape_b + (3,),
                         elements=S.bounded_elements(np.float32, -10, 10)))
  np.testing.assert_allclose(cross_product(a, b), np.cross(a, b), rtol=1e-5, atol=1e-5)


@given(st.data())
def test_no_signature_maps_scalars_like_numpy(data):
  shape_a, shape_b = data.draw(S.broadcastable_shapes(2, max_dims=3))
  a = data.draw(S.arrays(np.float32, shape_a, elements=S.bounded_elements(np.float32, -10, 10)))
  b = data.draw(S.arrays(np.float32, shape_b, elements=S.bounded_elements(np.float32, -10, 10)))
  f = lambda x, y: x * y + jnp.sin(x)
  expected = np.vectorize(lambda x, y: np.float32(x * y + np.sin(x)), otypes=[np.float32])(a, b)
  np.testing.assert_allclose(jnp.vectorize(f)(a, b), expected, rtol=1e-5, atol=1e-6)


def test_size_one_loop_dimensions_are_not_broadcast():
  f = jnp.vectorize(lambda x, y: x + y)
  jaxpr = jax.make_jaxpr(f)(jnp.ones((1, 4)), jnp.ones((3, 1)))
  assert "shape=(3, 4)" not in str(jaxpr)   # the operands meet in `add` unbroadcast
  assert f(jnp.ones((1, 4)), jnp.ones((3, 1))).shape == (3, 4)
  assert f(jnp.ones((1, 1)), jnp.ones((1,))).shape == (1, 1)


def test_excluded_positional_and_keyword():
  f = jnp.vectorize(lambda x, n, *, scale: x * n * scale, excluded={1, "scale"})
  out = f(jnp.arange(3.0), 2, scale=10.0)
  np.testing.assert_array_equal(out, np.arange(3.0) * 20)


def test_unexcluded_keyword_is_an_error():
  f = jnp.vectorize(lambda x, y=1: x + y)
  with pytest.raises(TypeError, match="keyword arguments"):
    f(jnp.arange(3.0), y=2.0)


def test_none_arguments_are_passed_through():
  f = jnp.vectorize(lambda x, y: x if y is None else x + y)
  np.testing.assert_array_equal(f(jnp.arange(3.0), None), np.arange(3.0))


def test_multiple_outputs():
  f = jnp.vectorize(lambda x: (x.sum(), x * 2), signature="(n)->(),(n)")
  s, d = f(jnp.ones((4, 3)))
  assert s.shape == (4,) and d.shape == (4, 3)


@pytest.mark.parametrize("fn, signature, args, error, match", [
    (lambda x: x, "(n)->", (np.ones(3),), ValueError, "not a valid gufunc signature"),
    (lambda x, y: x, "(n),(n)->(n)", (np.ones(3),), TypeError,
     "wrong number of positional arguments: expected 2, got 1"),
    (lambda x, y: x, "(n),(n)->(n)", (np.ones(3), np.ones(4)), ValueError,
     "inconsistent size for core dimension 'n': 4 vs 3"),
    (lambda x: x.sum(), "(n)->(n)", (np.ones(3),), ValueError,
     r"output shape \(\) does not match core dimensions \('n',\)"),
    (lambda x: x, "(n)->(n),(n)", (np.ones(3),), TypeError,
     "output must be a tuple when multiple outputs are expected"),
    (lambda x: (x, x), "(n)->(n)", (np.ones(3),), TypeError,
     "wrong number of output arguments: expected 1, got 2"),
])
def test_errors(fn, signature, args, error, match):
  with pytest.raises(error, match=match):
    jnp.vectorize(fn, signature=signature)(*args)


def test_bad_excluded():
  with pytest.raises(TypeError, match="can only exclude integer or string"):
    jnp.vectorize(lambda x: x, excluded={1.5})
  with pytest.raises(ValueError, match="contains negative numbers"):
    jnp.vectorize(lambda x: x, excluded={-1})
