"""Tests of refimpl/scipy/cluster/vq.py: vq against scipy.cluster.vq (1-D and 2-D), ties,
dtypes, errors, and jit and vmap."""

import numpy as np
import pytest
import scipy.cluster.vq
from hypothesis import given, strategies as st

import refimpl as jax
from refimpl.config import enable_x64
from refimpl.scipy.cluster import vq
from conformance import strategies as S


@given(data=st.data(), ndim=st.sampled_from([1, 2]))
def test_vq_matches_scipy(data, ndim):
  n, k, d = data.draw(st.integers(1, 6)), data.draw(st.integers(1, 4)), data.draw(st.integers(1, 3))
  shape = (n, d)[:ndim], (k, d)[:ndim]
  obs = data.draw(S.arrays(np.float64, shape[0], elements=st.floats(-5, 5)))
  book = data.draw(S.arrays(np.float64, shape[1], elements=st.floats(-5, 5)))
  with enable_x64():
    code, dist = vq.vq(obs, book)
  expected_code, expected_dist = scipy.cluster.vq.vq(obs, book)
  np.testing.assert_allclose(dist, expected_dist, rtol=1e-12, atol=1e-12)
  # Equal distances may pick different codes only where they really tie.
  distances = np.linalg.norm(np.reshape(obs, (n, -1))[:, None] - np.reshape(book, (k, -1)), axis=-1)
  np.testing.assert_allclose(distances[np.arange(n), code], expected_dist, rtol=1e-12, atol=1e-12)


def test_first_code_wins_ties_and_dtypes():
  code, dist = vq.vq(np.array([[0, 0], [2, 2]]), np.array([[1, 1], [-1, -1], [2, 2]]))
  assert (code.dtype, dist.dtype) == (np.int32, np.float32)
  np.testing.assert_array_equal(code, [0, 2])
  np.testing.assert_allclose(dist, [np.sqrt(2), 0.0], rtol=1e-6)


def test_errors():
  with pytest.raises(ValueError, match="should have the same rank"):
    vq.vq(np.ones((2, 2)), np.ones(2))
  with pytest.raises(ValueError, match="ndim different than 1 or 2"):
    vq.vq(np.ones((1, 2, 2)), np.ones((1, 2, 2)))
  with pytest.raises(TypeError):
    vq.vq([[1.0]], np.ones((1, 1)))


def test_jit_and_vmap():
  rng = np.random.default_rng(0)
  obs, book = rng.normal(size=(3, 5, 2)).astype(np.float32), rng.normal(size=(4, 2))
  code, dist = jax.vmap(vq.vq, in_axes=(0, None))(obs, book)
  for i in range(3):
    expected = jax.jit(vq.vq)(obs[i], book)
    np.testing.assert_array_equal(code[i], expected[0])
    np.testing.assert_allclose(dist[i], expected[1], rtol=1e-6)
