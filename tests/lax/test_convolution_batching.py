"""Batching rule of conv_general_dilated (refimpl/lax/convolution.py): every
combination of batched lhs/rhs with feature and batch groups, in two layouts,
equals the loop over members and stays ONE convolution (as JAX's rule: the
vmapped axis is merged into the lhs batch, the kernel's output features or
the groups); per-example gradients. Random layouts, strides, dilations and
paddings under random in_axes are the conformance case under vmap
(tests/test_conformance_vmap.py)."""

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import lax
from conformance.batching import loop_over_batch

F32 = np.float32
RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _reseeded():
  """Each test draws from RNG as seeded, whatever tests ran before it (in this
  process: the order differs between runs with several workers)."""
  global RNG
  RNG = np.random.default_rng(0)
SIZE = 3   # members of the vmapped batch

# dimension_numbers, by name
LAYOUTS = {
    "NCHW": ("NCHW", "OIHW", "NCHW"),
    "NHWC": ("NHWC", "HWIO", "NHWC"),
}


def _ints(shape):
  """Small integers, so the convolutions are exact in float32."""
  return RNG.integers(-3, 4, shape).astype(F32)


def _operands(layout, feature_groups, batch_groups):
  lhs_spec, rhs_spec, _ = LAYOUTS[layout]
  lhs_sizes = {"N": 2 * batch_groups, "C": 2 * feature_groups, "H": 5, "W": 4}
  rhs_sizes = {"O": 2 * feature_groups * batch_groups, "I": 2, "H": 3, "W": 2}
  return (tuple(lhs_sizes[c] for c in lhs_spec), tuple(rhs_sizes[c] for c in rhs_spec))


def _conv(feature_groups, batch_groups, layout):
  def conv(lhs, rhs):
    return lax.conv_general_dilated(lhs, rhs, (2, 1), ((1, 0), (0, 1)), lhs_dilation=(1, 2),
                                    rhs_dilation=(2, 1), dimension_numbers=LAYOUTS[layout],
                                    feature_group_count=feature_groups,
                                    batch_group_count=batch_groups)
  return conv


def _batched(shape, axis):
  """A batch of SIZE members of `shape` along `axis`, or one member (axis None)."""
  if axis is None:
    return _ints(shape)
  return np.moveaxis(_ints((SIZE,) + shape), 0, axis)


GROUPS = [(1, 1), (2, 1), (1, 2)]
IN_AXES = [(0, None), (3, None), (None, 0), (None, 2), (0, 0), (4, 1)]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("groups", GROUPS, ids=lambda g: f"fgc{g[0]}-bgc{g[1]}")
@pytest.mark.parametrize("in_axes", IN_AXES, ids=str)
def test_batched_conv_equals_the_loop_and_is_one_convolution(layout, groups, in_axes):
  lhs_shape, rhs_shape = _operands(layout, *groups)
  args = (_batched(lhs_shape, in_axes[0]), _batched(rhs_shape, in_axes[1]))
  conv = _conv(*groups, layout)
  batched = jax.vmap(conv, in_axes=in_axes)
  np.testing.assert_array_equal(batched(*args), loop_over_batch(conv, in_axes, *args))

  eqns = jax.make_jaxpr(batched)(*args).jaxpr.eqns
  names = [e.primitive.name for e in eqns]
  assert names.count("conv_general_dilated") == 1
  assert "broadcast_in_dim" not in names   # the unbatched operand is never broadcast
  params, = [e.params for e in eqns if e.primitive.name == "conv_general_dilated"]
  # JAX's rule: with both batched the members become more groups (feature
  # groups, or batch groups when those are in use); otherwise the counts stay
  feature_groups, batch_groups = groups
  if None not in in_axes:
    if batch_groups > 1:
      batch_groups *= SIZE
    else:
      feature_groups *= SIZE
  assert (params["feature_group_count"], params["batch_group_count"]) == (
      feature_groups, batch_groups)


@pytest.mark.parametrize("in_axes, out_letter", [((0, None), "N"), ((None, 0), "C"),
                                                 ((0, 0), "C")])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_result_batch_axis_is_next_to_the_dimension_it_was_merged_into(
    layout, in_axes, out_letter):
  # lhs batched: split out of the output batch dim (N); rhs batched: out of the
  # output feature dim (C). With out_axes there, no transpose is staged.
  lhs_shape, rhs_shape = _operands(layout, 1, 1)
  args = (_batched(lhs_shape, in_axes[0]), _batched(rhs_shape, in_axes[1]))
  out_axis = LAYOUTS[layout][2].index(out_letter)
  batched = jax.vmap(_conv(1, 1, layout), in_axes=in_axes, out_axes=out_axis)
  names = [e.primitive.name for e in jax.make_jaxpr(batched)(*args).jaxpr.eqns]
  assert "transpose" not in names
  expected = np.moveaxis(loop_over_batch(_conv(1, 1, layout), in_axes, *args), 0, out_axis)
  np.testing.assert_array_equal(batched(*args), expected)


@pytest.mark.parametrize("groups", GROUPS, ids=lambda g: f"fgc{g[0]}-bgc{g[1]}")
def test_nested_vmap_over_images_and_kernels(groups):
  # outer vmap over kernels, inner over images: every (kernel, image) pair
  lhs_shape, rhs_shape = _operands("NHWC", *groups)
  images, kernels = _batched(lhs_shape, 0), np.moveaxis(_ints((2,) + rhs_shape), 0, 3)
  conv = _conv(*groups, "NHWC")
  f = jax.vmap(jax.vmap(conv, in_axes=(0, None)), in_axes=(None, 3))
  expected = np.stack([np.stack([conv(x, kernels[:, :, :, k]) for x in images])
                       for k in range(2)])
  np.testing.assert_array_equal(f(images, kernels), expected)


@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0)], ids=str)
def test_an_empty_batch_gives_an_empty_result(in_axes):
  lhs_shape, rhs_shape = _operands("NCHW", 2, 1)
  args = [np.zeros(((0,) + s) if ax is not None else s, F32)
          for s, ax in zip((lhs_shape, rhs_shape), in_axes)]
  conv = _conv(2, 1, "NCHW")
  out = jax.vmap(conv, in_axes=in_axes)(*args)
  member = jax.eval_shape(conv, *(np.zeros(s, F32) for s in (lhs_shape, rhs_shape)))
  assert out.shape == (0,) + member.shape and out.dtype == F32


def test_per_example_gradients_of_a_convolution():
  # one image per example: vmap(grad) wrt the shared kernel equals the loop of
  # grads, and grad of the vmapped, summed loss equals their sum
  lhs_shape, rhs_shape = _operands("NHWC", 1, 1)
  images, kernel = _batched(lhs_shape, 0), _ints(rhs_shape)
  conv = _conv(1, 1, "NHWC")
  loss = lambda w, x: jnp.sum(jnp.tanh(conv(x, w) / 10))
  per_example = jax.vmap(jax.grad(loss), in_axes=(None, 0))(kernel, images)
  expected = np.stack([jax.grad(loss)(kernel, x) for x in images])
  np.testing.assert_allclose(per_example, expected, rtol=1e-5, atol=1e-6)
  summed = jax.grad(lambda w: jnp.sum(jax.vmap(loss, in_axes=(None, 0))(w, images)))(kernel)
  np.testing.assert_allclose(summed, expected.sum(0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("groups", GROUPS, ids=lambda g: f"fgc{g[0]}-bgc{g[1]}")
def test_per_example_gradients_wrt_both_operands_with_groups(groups):
  lhs_shape, rhs_shape = _operands("NCHW", *groups)
  images, kernels = _batched(lhs_shape, 0), _batched(rhs_shape, 0)
  conv = _conv(*groups, "NCHW")
  loss = lambda x, w: jnp.sum(conv(x, w) ** 2)
  gx, gw = jax.vmap(jax.grad(loss, argnums=(0, 1)))(images, kernels)
  for i in range(SIZE):
    ex, ew = jax.grad(loss, argnums=(0, 1))(images[i], kernels[i])
    np.testing.assert_array_equal(gx[i], ex)
    np.testing.assert_array_equal(gw[i], ew)
