"""`jax.scipy.integrate.trapezoid` against scipy.integrate.trapezoid."""

import numpy as np
import pytest
import scipy.integrate as osp_integrate
from hypothesis import given, settings, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl.scipy.integrate import trapezoid


@settings(max_examples=20, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), data=st.data(),
       dtype=st.sampled_from([np.float32, np.int32, np.bool_]))
def test_trapezoid_matches_scipy(shape, data, dtype):
  axis = data.draw(st.integers(-len(shape), len(shape) - 1))
  y = (np.random.RandomState(len(shape)).randn(*shape) * 3).astype(dtype)
  x_kind = data.draw(st.sampled_from(["none", "1d", "full"]))
  x = {"none": None, "1d": np.cumsum(np.random.RandomState(1).rand(shape[axis])),
       "full": np.cumsum(np.random.RandomState(2).rand(*shape), axis=axis)}[x_kind]
  x = None if x is None else x.astype(np.float32)
  got = trapezoid(jnp.asarray(y), None if x is None else jnp.asarray(x), dx=0.5, axis=axis)
  expected = osp_integrate.trapezoid(y.astype(np.float64), x, dx=0.5, axis=axis)
  assert got.dtype == np.float32
  np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_trapezoid_under_jit_and_grad():
  x = jnp.linspace(0.0, 1.0, 5)
  np.testing.assert_allclose(jax.jit(trapezoid)(x ** 2, x), 0.34375, rtol=1e-6)
  np.testing.assert_allclose(jax.grad(lambda y: trapezoid(y, dx=2.0))(jnp.ones(4)),
                             [1.0, 2.0, 2.0, 1.0])


def test_trapezoid_rejects_lists():
  with pytest.raises(TypeError):
    trapezoid([1.0, 2.0])
