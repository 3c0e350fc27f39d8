"""Derivatives of conv_general_dilated (refimpl/lax/convolution.py): the two
transposed convolutions JAX's rules build, with groups, dilations and empty
outputs. The derivative checks on random inputs are the AD_CASES of
conformance/families/convolution.py."""

import numpy as np

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import lax

F32 = np.float32


def _convs(closed):
  return [eqn.params for eqn in closed.jaxpr.eqns if eqn.primitive.name == "conv_general_dilated"]


def _grads(conv, lhs, rhs):
  fn = lambda lhs, rhs: jnp.sum(conv(lhs, rhs))
  return jax.grad(fn, argnums=(0, 1))(lhs, rhs), jax.make_jaxpr(jax.grad(fn, argnums=(0, 1)))(
      lhs, rhs)


def test_1d_gradients_are_correlations_with_the_other_operand():
  lhs = np.array([[[1., 2., 3., 4.]]], F32)
  rhs = np.array([[[1., 10.]]], F32)
  (glhs, grhs), _ = _grads(lambda l, r: lax.conv(l, r, (1,), "VALID"), lhs, rhs)
  # out[i] = lhs[i] + 10 lhs[i + 1] for i = 0, 1, 2
  np.testing.assert_array_equal(glhs, [[[1., 11., 11., 10.]]])
  np.testing.assert_array_equal(grhs, [[[6., 9.]]])


def test_transposes_swap_strides_and_dilations():
  lhs, rhs = np.ones((1, 2, 5, 5), F32), np.ones((3, 2, 2, 2), F32)
  conv = lambda l, r: lax.conv_general_dilated(l, r, (2, 1), ((1, 0), (0, 1)),
                                               rhs_dilation=(1, 2))
  _, closed = _grads(conv, lhs, rhs)
  forward, rhs_grad, lhs_grad = _convs(closed)
  # the rhs cotangent: lhs correlated with ct, the strides becoming a dilation
  assert rhs_grad["window_strides"] == (1, 2) and rhs_grad["rhs_dilation"] == (2, 1)
  assert rhs_grad["dimension_numbers"] == ((1, 0, 2, 3),) * 3
  # the lhs cotangent: ct (dilated by the strides) convolved with the flipped kernel
  assert lhs_grad["lhs_dilation"] == (2, 1) and lhs_grad["window_strides"] == (1, 1)
  assert lhs_grad["rhs_dilation"] == (1, 2)
  assert "rev" in [eqn.primitive.name for eqn in closed.jaxpr.eqns]


def test_feature_groups_become_batch_groups_of_the_rhs_transpose():
  lhs, rhs = np.ones((2, 4, 5), F32), np.ones((6, 2, 3), F32)
  conv = lambda l, r: lax.conv_general_dilated(l, r, (1,), "VALID", feature_group_count=2)
  (glhs, grhs), closed = _grads(conv, lhs, rhs)
  _, rhs_grad, lhs_grad = _convs(closed)
  assert (rhs_grad["feature_group_count"], rhs_grad["batch_group_count"]) == (1, 2)
  assert (lhs_grad["feature_group_count"], lhs_grad["batch_group_count"]) == (2, 1)
  # every output sees 3 taps of 2 input features; each weight sees 3 positions x 2 batches
  np.testing.assert_array_equal(grhs, np.full((6, 2, 3), 6.))
  np.testing.assert_array_equal(glhs, np.tile([3., 6., 9., 6., 3.], (2, 4, 1)))


def test_batch_groups_become_feature_groups_of_both_transposes():
  lhs, rhs = np.ones((4, 2, 3), F32), np.ones((6, 2, 2), F32)
  conv = lambda l, r: lax.conv_general_dilated(l, r, (1,), "VALID", batch_group_count=2)
  (glhs, grhs), closed = _grads(conv, lhs, rhs)
  _, rhs_grad, lhs_grad = _convs(closed)
  assert (rhs_grad["feature_group_count"], rhs_grad["batch_group_count"]) == (2, 1)
  assert (lhs_grad["feature_group_count"], lhs_grad["batch_group_count"]) == (2, 1)
  assert glhs.shape == lhs.shape and grhs.shape == rhs.shape
  np.testing.assert_array_equal(grhs, np.full((6, 2, 2), 4.))


def test_empty_output_gives_zero_cotangents():
  # a kernel larger than the input: no output positions, so no rhs transpose
  # convolution is formed (JAX returns a symbolic zero)
  lhs, rhs = np.ones((1, 1, 2), F32), np.ones((1, 1, 3), F32)
  (glhs, grhs), closed = _grads(lambda l, r: lax.conv(l, r, (1,), "VALID"), lhs, rhs)
  np.testing.assert_array_equal(grhs, np.zeros((1, 1, 3)))
  np.testing.assert_array_equal(glhs, np.zeros((1, 1, 2)))
  assert len(_convs(closed)) == 2  # the forward and the lhs transpose


def test_cotangents_keep_the_operand_dtypes():
  lhs, rhs = np.ones((1, 1, 4), F32), np.ones((1, 1, 2), F32)
  with jax.enable_x64():
    grads = jax.grad(lambda l, r: jnp.sum(lax.conv(l, r, (1,), "VALID",
                                                   preferred_element_type=np.float64)),
                     argnums=(0, 1))(lhs, rhs)
  assert [g.dtype for g in grads] == [F32, F32]
  np.testing.assert_array_equal(grads[1], [[[3., 3.]]])
