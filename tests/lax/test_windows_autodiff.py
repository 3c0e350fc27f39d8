"""Derivatives of refimpl/lax/windows.py at the edges (ties, padding, the
cases JAX refuses) and the primitives they stage, as JAX's rules do. The
derivative checks on random inputs are the AD_CASES of
conformance/families/windows.py and select_and_scatter.py."""

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import lax
from refimpl.lax import windows


def _primitives(jaxpr):
  return [eqn.primitive.name for eqn in jaxpr.jaxpr.eqns]


def _pool(computation, init, window, strides, padding="VALID", **dilations):
  return lambda x: jnp.sum(lax.reduce_window(x, init, computation, window, strides, padding,
                                             **dilations))


def test_sum_pool_gradient_counts_windows():
  x = np.zeros(4, np.float32)
  np.testing.assert_array_equal(jax.grad(_pool(lax.add, 0., (2,), (1,)))(x), [1, 2, 2, 1])
  # SAME pads (0, 1): windows [0, 1], [2, 3], [4, pad]
  np.testing.assert_array_equal(jax.grad(_pool(lax.add, 0., (2,), (2,), "SAME"))(
      np.zeros(5, np.float32)), [1, 1, 1, 1, 1])


def test_sum_pool_gradient_with_dilations():
  # base dilation 2: [x0 _ x1 _ x2], windows of 2 at stride 1 hold one element each
  g = jax.grad(_pool(lax.add, 0., (2,), (1,), base_dilation=(2,)))(np.zeros(3, np.float32))
  np.testing.assert_array_equal(g, [1, 2, 1])
  # window dilation 2: windows {0, 2}, {1, 3}
  g = jax.grad(_pool(lax.add, 0., (2,), (1,), window_dilation=(2,)))(np.zeros(4, np.float32))
  np.testing.assert_array_equal(g, [1, 1, 1, 1])


def test_max_pool_ties_go_to_the_first_maximum():
  x = np.array([1., 3., 3., 2.], np.float32)
  np.testing.assert_array_equal(jax.grad(_pool(lax.max, -np.inf, (2,), (1,)))(x),
                                [0, 2, 1, 0])
  np.testing.assert_array_equal(jax.grad(_pool(lax.min, np.inf, (2,), (1,)))(-x),
                                [0, 2, 1, 0])


def test_max_pool_jvp_takes_the_selected_tangent():
  x = np.array([[1., 5.], [7., 2.]], np.float32)
  t = np.array([[10., 20.], [30., 40.]], np.float32)
  fn = lambda x: lax.reduce_window(x, -np.inf, lax.max, (2, 1), (1, 1), "VALID")
  _, tangent = jax.jvp(fn, (x,), (t,))
  np.testing.assert_array_equal(tangent, [[30., 20.]])


def test_max_pool_window_over_padding_only_has_zero_tangent():
  fn = lambda x: lax.reduce_window(x, -np.inf, lax.max, (1,), (1,), ((1, 0),))
  out, tangent = jax.jvp(fn, (np.array([2.], np.float32),), (np.array([5.], np.float32),))
  np.testing.assert_array_equal(out, [-np.inf, 2.])
  np.testing.assert_array_equal(tangent, [0., 5.])


def test_max_pool_gradient_with_base_dilation():
  # [x0 _ x1 _ x2], windows of 3 at stride 2: {x0, x1}, {x1, x2}
  x = np.array([1., 3., 2.], np.float32)
  g = jax.grad(_pool(lax.max, -np.inf, (3,), (2,), base_dilation=(2,)))(x)
  np.testing.assert_array_equal(g, [0, 2, 0])


def test_max_pool_vjp_with_window_dilation_is_not_implemented():
  fn = _pool(lax.max, -np.inf, (2,), (1,), window_dilation=(2,))
  x = np.arange(4, dtype=np.float32)
  np.testing.assert_array_equal(jax.jvp(fn, (x,), (np.ones(4, np.float32),))[1], 2.)
  with pytest.raises(NotImplementedError, match="with window dilation"):
    jax.grad(fn)(x)


def test_generic_reduce_window_jvp():
  # products of windows of 2: [x0 x1, x1 x2]
  fn = lambda x: lax.reduce_window(x, 1., lax.mul, (2,), (1,), "VALID")
  x = np.array([1., 2., 3.], np.float32)
  _, tangent = jax.jvp(fn, (x,), (np.array([1., 0., 0.], np.float32),))
  np.testing.assert_array_equal(tangent, [2., 0.])
  _, tangent = jax.jvp(fn, (x,), (np.array([0., 1., 0.], np.float32),))
  np.testing.assert_array_equal(tangent, [1., 3.])


def test_generic_reduce_window_jvp_refuses_an_init_tangent():
  fn = lambda init: lax.reduce_window(np.ones(3, np.float32), init, lax.mul, (2,), (1,),
                                      "VALID")
  with pytest.raises(TypeError, match="non-zero init_value_tangent"):
    jax.jvp(fn, (np.float32(1),), (np.float32(1),))


def test_generic_reduce_window_jvp_carries_no_integer_tangents():
  # (value, index) pairs reduced together: the index has no tangent
  def fn(x):
    def keep_larger(a, b):
      pick = a[0] >= b[0]
      return lax.select(pick, a[0], b[0]), lax.select(pick, a[1], b[1])
    index = lax.iota(np.int32, 3)
    return lax.reduce_window((x, index), (np.float32(-np.inf), np.int32(-1)), keep_larger,
                             (2,), (1,), "VALID")
  x = np.array([1., 5., 2.], np.float32)
  (values, indices), (t_values, t_indices) = jax.jvp(fn, (x,), (np.array([1., 2., 3.],
                                                                         np.float32),))
  np.testing.assert_array_equal(indices, [1, 1])
  np.testing.assert_array_equal(t_values, [2., 2.])
  assert t_indices.dtype == jax.dtypes.float0


def test_select_and_gather_add_transpose_with_window_dilation_is_not_implemented():
  fn = lambda t: windows.select_and_gather_add(t, np.arange(4, dtype=np.float32), lax.ge_p,
                                               (2,), (1,), ((0, 0),), (1,), (2,))
  with pytest.raises(NotImplementedError, match="window_dilation=\\(2,\\)"):
    jax.linear_transpose(fn, np.zeros(4, np.float32))(np.ones(2, np.float32))


def test_jaxprs_stage_the_primitives_jax_does():
  x = np.zeros(4, np.float32)
  max_pool = _pool(lax.max, -np.inf, (2,), (1,))
  assert "select_and_gather_add" in _primitives(
      jax.make_jaxpr(lambda x, t: jax.jvp(max_pool, (x,), (t,)))(x, x))
  assert "select_and_scatter_add" in _primitives(jax.make_jaxpr(jax.grad(max_pool))(x))
  sum_grad = _primitives(jax.make_jaxpr(jax.grad(_pool(lax.add, 0., (2,), (2,))))(x))
  assert sum_grad[-2:] == ["pad", "reduce_window_sum"]
  prod_jvp = jax.make_jaxpr(lambda x, t: jax.jvp(_pool(lax.mul, 1., (2,), (1,)), (x,), (t,)))
  window_eqn = next(e for e in prod_jvp(x, x).jaxpr.eqns if e.primitive.name == "reduce_window")
  assert len(window_eqn.invars) == 4   # primal and tangent operands, then their inits


def test_select_and_scatter_is_not_differentiable():
  # As JAX: the generic select_and_scatter has no JVP rule.
  def fn(source):
    return windows.select_and_scatter(np.arange(4, dtype=np.float32), lax.ge, (2,), (1,),
                                      ((0, 0),), source, np.float32(0), lax.add)
  with pytest.raises(NotImplementedError,
                     match="Differentiation rule for 'select_and_scatter' not implemented"):
    jax.jvp(fn, (np.ones(3, np.float32),), (np.ones(3, np.float32),))
