"""Tests of refimpl/lax/shapes.py: shape primitives against NumPy."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import dtypes, lax
from conformance.strategies import ALL_DTYPES, arrays, dtype_and_array, shapes


def _check(actual, expected, weak_type=False):
  assert actual.shape == expected.shape, (actual.shape, expected.shape)
  assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
  assert actual.weak_type == weak_type
  actual, expected = np.asarray(actual), np.asarray(expected)
  if expected.dtype == dtypes.bfloat16:  # NumPy's comparisons do not know bfloat16 NaN
    actual, expected = actual.astype(np.float32), expected.astype(np.float32)
  np.testing.assert_array_equal(actual, expected)


@st.composite
def array_and_permutation(draw):
  _, x = draw(dtype_and_array())
  return x, tuple(draw(st.permutations(range(x.ndim))))


# --- broadcast_in_dim, broadcast, expand_dims --------------------------------------------

@given(dtype_and_array(shape=shapes(max_dims=2)), st.lists(st.integers(0, 3), max_size=2))
def test_broadcast_matches_numpy(dx, leading):
  _, x = dx
  _check(lax.broadcast(x, leading), np.broadcast_to(x, tuple(leading) + x.shape))


@given(dtype_and_array(shape=shapes(max_dims=3, max_side=3)), st.data())
def test_broadcast_in_dim_places_operand_dims(dx, data):
  _, x = dx
  # a random result shape with the operand's dims at increasing positions
  out_rank = x.ndim + data.draw(st.integers(0, 2))
  dims = tuple(sorted(data.draw(st.permutations(range(out_rank)))[:x.ndim]))
  shape = [data.draw(st.integers(0, 3)) for _ in range(out_rank)]
  for i, d in enumerate(dims):
    shape[d] = x.shape[i] if x.shape[i] != 1 else data.draw(st.integers(0, 3))
  expanded = [1] * out_rank
  for i, d in enumerate(dims):
    expanded[d] = x.shape[i]
  _check(lax.broadcast_in_dim(x, shape, dims),
         np.broadcast_to(x.reshape(expanded), tuple(shape)))


def test_broadcast_in_dim_errors():
  x = np.ones((2, 3), np.float32)
  with pytest.raises(TypeError, match="must have length equal to operand ndim"):
    lax.broadcast_in_dim(x, (2, 3), (0,))
  with pytest.raises(TypeError, match="strictly increasing"):
    lax.broadcast_in_dim(x, (3, 2), (1, 0))
  with pytest.raises(TypeError, match="must either be 1, or be equal"):
    lax.broadcast_in_dim(x, (4, 3), (0, 1))


def test_broadcast_keeps_weak_type_and_scalar_noop():
  weak = jax.numpy.asarray(2.0)
  assert lax.broadcast_in_dim(weak, (3,), ()).weak_type
  assert lax.broadcast_in_dim(weak, (), ()) is weak


@given(dtype_and_array(shape=shapes(max_dims=3)), st.data())
def test_expand_dims_matches_numpy(dx, data):
  _, x = dx
  n = data.draw(st.integers(1, 2))
  axes = data.draw(st.lists(st.integers(-(x.ndim + n), x.ndim + n - 1), min_size=n,
                            max_size=n, unique_by=lambda a: a % (x.ndim + n)))
  _check(lax.expand_dims(x, axes), np.expand_dims(x, tuple(axes)))


def test_expand_dims_lowers_to_broadcast_in_dim():
  jaxpr = jax.make_jaxpr(lambda x: lax.expand_dims(x, (0, 2)))(np.ones(3, np.float32))
  assert str(jaxpr) == ("{ lambda ; a:f32[3]. let\n    b:f32[1,3,1] = broadcast_in_dim["
                        "broadcast_dimensions=(1,) shape=(1, 3, 1)] a\n  in (b,) }")
  with pytest.raises(ValueError, match="repeated axis"):
    lax.expand_dims(np.ones(3), (0, -3))


# --- reshape, collapse, transpose, squeeze, rev ---------------------------------------------

@given(array_and_permutation(), st.data())
def test_reshape_with_dimensions_matches_numpy(xp, data):
  x, perm = xp
  sizes = data.draw(st.sampled_from([(x.size,), (1, x.size), (x.size, 1)]))
  _check(lax.reshape(x, sizes, perm), np.transpose(x, perm).reshape(sizes))


def test_reshape_errors_and_noop():
  x = jax.numpy.ones((2, 3))
  assert lax.reshape(x, (2, 3)) is x
  with pytest.raises(TypeError, match="total size must be unchanged"):
    lax.reshape(x, (4,))
  with pytest.raises(TypeError, match="permutation"):
    lax.reshape(x, (6,), (0, 0))
  jaxpr = jax.make_jaxpr(lambda x: lax.reshape(x, (3, 2)))(np.ones((2, 3), np.float32))
  assert "reshape[dimensions=None new_sizes=(3, 2)] a" in str(jaxpr)


def test_collapse():
  x = np.arange(24).reshape(2, 3, 4).astype(np.int32)
  _check(lax.collapse(x, 1), x.reshape(2, 12))
  _check(lax.collapse(x, 0, 2), x.reshape(6, 4))


@given(array_and_permutation())
def test_transpose_matches_numpy(xp):
  x, perm = xp
  _check(lax.transpose(x, perm), np.transpose(x, perm))


def test_transpose_errors_and_printing():
  with pytest.raises(TypeError, match="isn't a permutation"):
    lax.transpose(np.ones((2, 3)), (0, 0))
  jaxpr = jax.make_jaxpr(lambda x: lax.transpose(x, (1, 0)))(np.ones((2, 3), np.float32))
  assert "transpose[permutation=(1, 0)] a" in str(jaxpr)


@given(dtype_and_array(shape=shapes(max_dims=4, max_side=2)))
def test_squeeze_matches_numpy(dx):
  _, x = dx
  ones = tuple(i for i, d in enumerate(x.shape) if d == 1)
  _check(lax.squeeze(x, ones), np.squeeze(x, ones))


def test_squeeze_errors():
  with pytest.raises(ValueError, match="size not equal to one"):
    lax.squeeze(np.ones((2, 1)), (0,))
  assert lax.squeeze(np.ones((2, 1), np.float32), (-1,)).shape == (2,)


@given(dtype_and_array(), st.data())
def test_rev_matches_numpy(dx, data):
  _, x = dx
  axes = data.draw(st.lists(st.integers(0, max(x.ndim - 1, 0)), unique=True,
                            max_size=x.ndim))
  _check(lax.rev(x, axes), np.flip(x, tuple(axes)))


# --- pad --------------------------------------------------------------------------------------

def _pad_oracle(x, value, config):
  """Pads by index arithmetic: element i of an axis lands at low + i * (interior + 1)."""
  for axis, (low, high, interior) in enumerate(config):
    n = x.shape[axis]
    full = low + high + n + max(n - 1, 0) * interior
    out_shape = list(x.shape)
    out_shape[axis] = max(low, 0) + max(high, 0) + n + max(n - 1, 0) * interior
    out = np.full(out_shape, value, x.dtype)
    for i in range(n):
      dst = [slice(None)] * x.ndim
      dst[axis] = max(low, 0) + i * (interior + 1)
      src = [slice(None)] * x.ndim
      src[axis] = i
      out[tuple(dst)] = x[tuple(src)]
    keep = [slice(None)] * x.ndim
    keep[axis] = slice(max(-low, 0), max(-low, 0) + full)
    x = out[tuple(keep)]
  return x


@given(dtype_and_array(shape=shapes(max_dims=3)), st.data())
def test_pad_matches_oracle(dx, data):
  dtype, x = dx
  config = []
  for n in x.shape:
    interior = data.draw(st.integers(0, 2))
    size = n + max(n - 1, 0) * interior
    low = data.draw(st.integers(-size, 3))
    high = data.draw(st.integers(-(size + low), 3))
    config.append((low, high, interior))
  value = np.asarray(data.draw(arrays(dtype, ())))
  _check(lax.pad(x, value, config), _pad_oracle(x, value, config))


def test_pad_errors_and_weak_type():
  x = np.ones(3, np.float32)
  with pytest.raises(TypeError, match="same dtype"):
    lax.pad(x, np.int32(0), [(1, 1, 0)])
  with pytest.raises(ValueError, match="interior padding"):
    lax.pad(x, np.float32(0), [(1, 1, -1)])
  with pytest.raises(ValueError, match="not at least 0"):
    lax.pad(x, np.float32(0), [(-2, -2, 0)])
  weak = jax.numpy.asarray(1.0)
  assert lax.pad(lax.broadcast(weak, (2,)), weak, [(1, 0, 0)]).weak_type
  assert not lax.pad(lax.broadcast(weak, (2,)), np.float32(0), [(1, 0, 0)]).weak_type


# --- concatenate, split -----------------------------------------------------------------------

@given(st.sampled_from(ALL_DTYPES), shapes(min_dims=1), st.data())
def test_concatenate_matches_numpy(dtype, shape, data):
  axis = data.draw(st.integers(0, len(shape) - 1))
  parts = []
  for _ in range(data.draw(st.integers(1, 3))):
    part_shape = list(shape)
    part_shape[axis] = data.draw(st.integers(0, 3))
    parts.append(data.draw(arrays(dtype, tuple(part_shape))))
  _check(lax.concatenate(parts, axis), np.concatenate(parts, axis))


def test_concatenate_errors():
  with pytest.raises(TypeError, match="same dtypes"):
    lax.concatenate([np.ones(2, np.float32), np.ones(2, np.int32)], 0)
  with pytest.raises(TypeError, match="different numbers of dimensions"):
    lax.concatenate([np.ones(2, np.float32), np.ones((2, 1), np.float32)], 0)
  with pytest.raises(TypeError, match="differ in dimensions other"):
    lax.concatenate([np.ones((2, 2), np.float32), np.ones((3, 2), np.float32)], 1)


@given(dtype_and_array(shape=shapes(min_dims=1)), st.data())
def test_split_matches_numpy(dx, data):
  _, x = dx
  axis = data.draw(st.integers(0, x.ndim - 1))
  cuts = sorted(data.draw(st.lists(st.integers(0, x.shape[axis]), max_size=3)))
  sizes = np.diff([0] + cuts + [x.shape[axis]])
  for actual, expected in zip(lax.split(x, sizes, axis), np.split(x, cuts, axis)):
    _check(actual, expected)


def test_split_errors_and_printing():
  with pytest.raises(ValueError, match="must be equal to dimension"):
    lax.split(np.ones(4), (1, 2))
  jaxpr = jax.make_jaxpr(lambda x: lax.split(x, (1, 3)))(np.ones(4, np.float32))
  assert "b:f32[1] c:f32[3] = split[axis=0 sizes=(1, 3)] a" in str(jaxpr)


# --- iota, full, copy --------------------------------------------------------------------------

@given(shapes(min_dims=1), st.sampled_from(["int32", "uint8", "float32", "bfloat16",
                                             "complex64"]), st.data())
def test_broadcasted_iota_matches_numpy(shape, dtype, data):
  dim = data.draw(st.integers(0, len(shape) - 1))
  _check(lax.broadcasted_iota(dtype, shape, dim), np.indices(shape)[dim].astype(dtype))


def test_iota_printing_and_errors():
  jaxpr = jax.make_jaxpr(lambda: lax.iota(np.int32, 5))()
  assert str(jaxpr) == ("{ lambda ; . let a:i32[5] = iota[dimension=0 dtype=int32 "
                        "shape=(5,)] in (a,) }")
  with pytest.raises(TypeError, match="bool"):
    lax.iota(np.bool_, 3)


def test_full_and_full_like():
  out = lax.full((2, 3), 1.5)
  assert (out.dtype, out.weak_type) == (np.float32, True)
  out = lax.full((2,), 7, np.int8)
  _check(out, np.full(2, 7, np.int8))
  like = lax.full_like(np.ones((2, 2), np.uint8), 3)
  _check(like, np.full((2, 2), 3, np.uint8))
  assert lax.full_like(jax.numpy.asarray(1.0), 0).weak_type
  with pytest.raises(TypeError, match="scalar fill_value"):
    lax.full((2,), np.ones(2))


def test_broadcast_to_rank():
  x = np.ones((2, 3), np.int8)
  _check(lax.broadcast_to_rank(x, 4), x.reshape(1, 1, 2, 3))
  assert lax.broadcast_to_rank(x, 2) is x


@given(dtype_and_array(shape=shapes(max_dims=3, max_side=3)), st.data())
def test_tile_matches_numpy(dx, data):
  dtype, x = dx
  reps = tuple(data.draw(st.lists(st.integers(0, 3), min_size=x.ndim, max_size=x.ndim)))
  out = np.asarray(lax.tile(x, reps))
  expected = np.tile(x, reps)
  assert out.shape == expected.shape and out.dtype == x.dtype
  assert out.tobytes() == expected.tobytes()  # bit-exact, NaNs of every dtype included


def test_tile_errors_and_jaxpr():
  with pytest.raises(ValueError, match="one entry per operand dimension"):
    lax.tile(np.ones((2, 2)), (2,))
  assert "tile[reps=(1, 2)]" in str(jax.make_jaxpr(lambda x: lax.tile(x, (1, 2)))(np.ones((2, 2))))


def test_broadcast_shapes_and_optimization_barrier():
  assert lax.broadcast_shapes((2, 1), (3,), ()) == (2, 3)
  with pytest.raises(ValueError, match="Incompatible shapes"):
    lax.broadcast_shapes((2,), (3,))
  x = jnp.arange(3.0)
  out = lax.optimization_barrier({"a": x, "b": (1.0,)})
  np.testing.assert_array_equal(out["a"], x)
  assert float(out["b"][0]) == 1.0
  assert "optimization_barrier" in str(jax.make_jaxpr(lax.optimization_barrier)(x))
