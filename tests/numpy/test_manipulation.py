"""Tests of refimpl/numpy/manipulation.py against NumPy."""

import re

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import dtypes
from conformance.strategies import arrays, dtype_and_array, shapes

DTYPES = [np.float32, np.int8, np.uint16, np.bool_, dtypes.bfloat16, np.complex64]


def _check(actual, expected, dtype=None):
  expected = np.asarray(expected)
  assert actual.shape == expected.shape, (actual.shape, expected.shape)
  assert actual.dtype == (expected.dtype if dtype is None else dtype), actual.dtype
  actual = np.asarray(actual)
  if expected.dtype == dtypes.bfloat16:  # NumPy's comparisons do not know bfloat16 NaN
    actual, expected = actual.astype(np.float32), expected.astype(np.float32)
  np.testing.assert_array_equal(actual, expected)


def values(shape, dtype=np.float32):
  """Distinct values (as far as the dtype allows), so misplaced elements show."""
  return (np.arange(int(np.prod(shape))) * 7 % 11 - 3).reshape(shape).astype(dtype)


array_strategy = dtype_and_array(DTYPES, shape=shapes(max_dims=3))


# --- reshaping --------------------------------------------------------------------------------

@given(array_strategy, st.data(), st.sampled_from(["C", "F"]))
def test_reshape_and_ravel_match_numpy(dx, data, order):
  _, x = dx
  target = data.draw(st.sampled_from([(x.size,), (-1,), (1, -1), (x.size, 1), x.shape[::-1]]))
  _check(jnp.reshape(x, target, order=order), np.reshape(x, target, order=order))
  _check(jnp.ravel(x, order=order), np.ravel(x, order=order))


def test_reshape_errors_and_methods():
  x = jnp.asarray(values((2, 3)))
  with pytest.raises(TypeError, match=r"cannot reshape array of shape \(2, 3\) \(size 6\) "
                                      r"into shape \(4,\) \(size 4\)"):
    jnp.reshape(x, (4,))
  with pytest.raises(ValueError, match="only specify one unknown dimension"):
    jnp.reshape(x, (-1, -1))
  _check(x.reshape(3, 2), values((2, 3)).reshape(3, 2))
  _check(x.reshape((-1,)), values(6))
  with pytest.raises(TypeError, match="reshape requires ndarray or scalar arguments"):
    jnp.reshape([1, 2], (2,))


@given(array_strategy, st.data())
def test_axis_permutations_match_numpy(dx, data):
  _, x = dx
  perm = data.draw(st.permutations(range(x.ndim)))
  _check(jnp.transpose(x, perm), np.transpose(x, perm))
  _check(jnp.transpose(x), np.transpose(x))
  _check(jnp.permute_dims(x, perm), np.transpose(x, perm))
  if x.ndim:
    axis = st.integers(-x.ndim, x.ndim - 1)
    a, b = data.draw(axis), data.draw(axis)
    _check(jnp.swapaxes(x, a, b), np.swapaxes(x, a, b))
    _check(jnp.moveaxis(x, a, b), np.moveaxis(x, a, b))
  if x.ndim >= 2:
    _check(jnp.matrix_transpose(x), np.swapaxes(x, -1, -2))


@given(array_strategy, st.data())
def test_rollaxis_matches_numpy(dx, data):
  _, x = dx
  if x.ndim == 0:
    return
  axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
  start = data.draw(st.integers(-x.ndim, x.ndim))
  _check(jnp.rollaxis(x, axis, start), np.rollaxis(x, axis, start))


@given(dtype_and_array(DTYPES, shape=shapes(max_dims=4, max_side=2)), st.data())
def test_squeeze_expand_dims_match_numpy(dx, data):
  _, x = dx
  _check(jnp.squeeze(x), np.squeeze(x))
  ones = [i for i, d in enumerate(x.shape) if d == 1]
  some = tuple(data.draw(st.lists(st.sampled_from(ones), unique=True))) if ones else ()
  _check(jnp.squeeze(x, some), np.squeeze(x, some))
  axis = data.draw(st.integers(-(x.ndim + 1), x.ndim))
  _check(jnp.expand_dims(x, axis), np.expand_dims(x, axis))
  _check(jnp.expand_dims(x, (0, -1)), np.expand_dims(x, (0, -1)))


def test_squeeze_error():
  with pytest.raises(ValueError, match="size not equal to one"):
    jnp.squeeze(np.ones((2, 1)), 0)


# --- joining ----------------------------------------------------------------------------------

@given(shapes(min_dims=1), st.data())
def test_concatenate_promotes_and_matches_numpy(shape, data):
  axis = data.draw(st.integers(-len(shape), len(shape) - 1))
  parts = []
  for _ in range(data.draw(st.integers(1, 4))):
    part_shape = list(shape)
    part_shape[axis] = data.draw(st.integers(0, 3))
    parts.append(values(tuple(part_shape), data.draw(st.sampled_from(
        [np.int8, np.int32, np.float32, np.bool_]))))
  expected_dtype = jnp.result_type(*parts)
  _check(jnp.concatenate(parts, axis),
         np.concatenate([p.astype(expected_dtype) for p in parts], axis), expected_dtype)
  _check(jnp.concatenate(parts, None),
         np.concatenate([p.astype(expected_dtype).ravel() for p in parts]), expected_dtype)


def test_concatenate_details():
  x = values((2, 3))
  _check(jnp.concatenate(jnp.asarray(x)), np.concatenate(x))
  _check(jnp.concatenate(jnp.asarray(values((2, 3, 4))), axis=1),
         np.concatenate(values((2, 3, 4)), axis=1))
  _check(jnp.concatenate([x, x], dtype=np.int32), np.concatenate([x, x]).astype(np.int32))
  _check(jnp.concat([x, x], axis=1), np.concatenate([x, x], 1))
  with pytest.raises(ValueError, match="Zero-dimensional"):
    jnp.concatenate([1.0, 2.0])
  scalar = jnp.asarray(3, np.uint8)   # axis=None flattens first, 0-d arrays too
  _check(jnp.concat([scalar, scalar], axis=None), np.array([3, 3], np.uint8))
  with pytest.raises(TypeError, match="concatenate requires ndarray or scalar arguments, got "
                                      "<class 'list'> at position 0"):
    jnp.concatenate([[1.0], [2.0]])
  jaxpr = jax.make_jaxpr(lambda *xs: jnp.concatenate(xs))(*[np.ones(2, np.float32)] * 17)
  assert [len(e.invars) for e in jaxpr.eqns] == [16, 2]


@given(array_strategy, st.integers(1, 3), st.data())
def test_stacking_matches_numpy(dx, n, data):
  _, x = dx
  xs = [x] * n
  axis = data.draw(st.integers(-(x.ndim + 1), x.ndim))
  _check(jnp.stack(xs, axis), np.stack(xs, axis))
  _check(jnp.hstack(xs), np.hstack(xs))
  _check(jnp.vstack(xs), np.vstack(xs))
  _check(jnp.dstack(xs), np.dstack(xs))
  if x.ndim <= 2:
    _check(jnp.column_stack(xs), np.column_stack(xs))
  for fn, np_fn in ((jnp.atleast_1d, np.atleast_1d), (jnp.atleast_2d, np.atleast_2d),
                    (jnp.atleast_3d, np.atleast_3d)):
    _check(fn(x), np_fn(x))
  for actual, expected in zip(jnp.unstack(jnp.stack(xs, axis), axis=axis), xs):
    _check(actual, expected)


def test_stack_lowering_and_errors():
  jaxpr = jax.make_jaxpr(lambda a, b: jnp.stack([a, b]))(np.ones(2, np.float32),
                                                          np.ones(2, np.float32))
  assert [e.primitive.name for e in jaxpr.eqns] == ["broadcast_in_dim"] * 2 + ["concatenate"]
  with pytest.raises(ValueError, match="same shape"):
    jnp.stack([np.ones(2), np.ones(3)])
  _check(jnp.stack(jnp.asarray(values((2, 3))), axis=1), np.stack(values((2, 3)), axis=1))


# --- splitting ----------------------------------------------------------------------------------

@given(dtype_and_array(DTYPES, shape=shapes(min_dims=1)), st.data())
def test_split_matches_numpy(dx, data):
  _, x = dx
  axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
  n = x.shape[axis]
  indices = sorted(data.draw(st.lists(st.integers(0, n), max_size=3)))
  for actual, expected in zip(jnp.split(x, indices, axis), np.split(x, indices, axis)):
    _check(actual, expected)
  sections = data.draw(st.integers(1, 4))
  for actual, expected in zip(jnp.array_split(x, sections, axis),
                              np.array_split(x, sections, axis)):
    _check(actual, expected)
  if n % sections == 0:
    assert len(jnp.split(x, sections, axis)) == sections
  else:
    with pytest.raises(ValueError, match="equal division"):
      jnp.split(x, sections, axis)


def test_split_points_are_taken_literally_as_jax():
  """NumPy wraps negative points and gives empty pieces for decreasing or
  out-of-range ones; JAX's sizes (differences of the points) go negative."""
  x = np.arange(6, dtype=np.int32)
  for points, sizes in (([4, 2], [4, -2, 4]), ([-2], [-2, 8]), ([2, 10], [2, 8, -4])):
    for fn in (jnp.split, jnp.array_split):
      with pytest.raises(ValueError, match=re.escape(
          f"Sizes passed to split must be nonnegative, got {sizes}")):
        fn(x, points)
  for actual, expected in zip(jnp.split(x, [0, 3, 3, 6]), np.split(x, [0, 3, 3, 6])):
    _check(actual, expected)


def test_hsplit_vsplit_dsplit():
  x = values((2, 4, 6))
  for fn, np_fn in ((jnp.hsplit, np.hsplit), (jnp.vsplit, np.vsplit), (jnp.dsplit, np.dsplit)):
    for actual, expected in zip(fn(x, 2), np_fn(x, 2)):
      _check(actual, expected)
  jaxpr = jax.make_jaxpr(lambda a: jnp.split(a, 2))(np.ones(4, np.float32))
  assert [e.primitive.name for e in jaxpr.eqns] == ["split"]


# --- repeating ----------------------------------------------------------------------------------

@given(array_strategy, st.lists(st.integers(0, 3), max_size=4))
def test_tile_matches_numpy(dx, reps):
  _, x = dx
  _check(jnp.tile(x, reps), np.tile(x, reps))


@given(array_strategy, st.integers(0, 3), st.data())
def test_repeat_matches_numpy(dx, count, data):
  _, x = dx
  _check(jnp.repeat(x, count), np.repeat(x, count))
  if x.ndim:
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    _check(jnp.repeat(x, count, axis), np.repeat(x, count, axis))
    counts = data.draw(st.lists(st.integers(0, 3), min_size=x.shape[axis],
                                max_size=x.shape[axis]))
    _check(jnp.repeat(x, np.array(counts, np.int32), axis), np.repeat(x, counts, axis))
    _check(jnp.repeat(x, np.array(counts, np.uint64), axis), np.repeat(x, counts, axis))


def test_repeat_lowering_and_errors():
  jaxpr = jax.make_jaxpr(lambda a: jnp.repeat(a, 2))(np.ones(3, np.float32))
  assert "gather" not in str(jaxpr)
  with pytest.raises(jax.errors.ConcretizationTypeError):
    jax.jit(lambda a, r: jnp.repeat(a, r))(np.ones(3), 2)


# --- flipping, rolling --------------------------------------------------------------------------

@given(array_strategy, st.data())
def test_flips_and_rotations_match_numpy(dx, data):
  _, x = dx
  _check(jnp.flip(x), np.flip(x))
  if x.ndim:
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    _check(jnp.flip(x, axis), np.flip(x, axis))
    _check(jnp.flipud(x), np.flipud(x))
  if x.ndim >= 2:
    _check(jnp.fliplr(x), np.fliplr(x))
    k = data.draw(st.integers(-5, 5))
    axes = tuple(data.draw(st.permutations(range(x.ndim)))[:2])
    _check(jnp.rot90(x, k, axes), np.rot90(x, k, axes))


@given(array_strategy, st.data())
def test_roll_matches_numpy(dx, data):
  _, x = dx
  shift = data.draw(st.integers(-7, 7))
  _check(jnp.roll(x, shift), np.roll(x, shift))
  if x.ndim:
    axes = tuple(data.draw(st.lists(st.integers(0, x.ndim - 1), min_size=1, max_size=2)))
    shifts = tuple(data.draw(st.integers(-7, 7)) for _ in axes)
    _check(jnp.roll(x, shifts, axes), np.roll(x, shifts, axes))
    traced = jax.jit(lambda a, s: jnp.roll(a, s, axes[0]))(x, shifts[0])
    _check(traced, np.roll(x, shifts[0], axes[0]))


# --- padding ------------------------------------------------------------------------------------

@given(dtype_and_array([np.float32, np.int16], shape=shapes(min_dims=1, max_dims=3, min_side=1)),
       st.sampled_from(["constant", "edge", "wrap", "reflect", "symmetric"]), st.data())
def test_pad_matches_numpy(dx, mode, data):
  _, x = dx
  widths = [tuple(data.draw(st.integers(0, 5)) for _ in range(2)) for _ in range(x.ndim)]
  _check(jnp.pad(x, widths, mode=mode), np.pad(x, widths, mode=mode))
  if mode in ("reflect", "symmetric") and x.dtype == np.float32 and np.abs(x).max() < 1e30:
    # odd reflection computes 2 * edge - x, which overflows near the float32
    # limit (and gives NaN for an infinite edge), as in JAX. Repeated reflections
    # cancel in a different order than NumPy's, so errors scale with the largest
    # value rather than with each element.
    odd = jnp.pad(x, widths, mode=mode, reflect_type="odd")
    with np.errstate(all="ignore"):
      expected = np.pad(x, widths, mode=mode, reflect_type="odd")
      np.testing.assert_allclose(odd, expected, rtol=1e-5,
                                 atol=1e-5 * float(np.abs(expected).max()))


def test_pad_constant_details():
  x = values((2, 3))
  _check(jnp.pad(x, 1, constant_values=((1, 2), (3, 4))),
         np.pad(x, 1, constant_values=((1, 2), (3, 4))))
  _check(jnp.pad(x, (1, 2)), np.pad(x, (1, 2)))
  jaxpr = jax.make_jaxpr(lambda a: jnp.pad(a, ((1, 0), (0, 2))))(x)
  assert "pad[padding_config=((1, 0, 0), (0, 2, 0))]" in str(jaxpr)
  with pytest.raises(ValueError, match="negative"):
    jnp.pad(x, -1)
  with pytest.raises(NotImplementedError, match="bogus"):
    jnp.pad(x, 1, mode="bogus")
  with pytest.raises(ValueError, match="empty axis"):
    jnp.pad(np.ones((0, 2)), 1, mode="edge")


def test_pad_width_shapes_as_jax():
  x = values((2, 3))
  for pad_width, shape in (((), (0,)), ([[]], (1, 0)), ([1, 2, 3], (3,))):
    with pytest.raises(ValueError, match=re.escape(
        f"jnp.pad: pad_width with nd=2 has unsupported shape {shape}. Valid shapes are "
        "(2, 2), (1, 2), (2,), (1,), or ().")):
      jnp.pad(x, pad_width)
  with pytest.raises(ValueError, match=re.escape("nd=0 has unsupported shape (0,)")):
    jnp.pad(np.float32(1), ())   # no special case for scalars (JAX has none)
  with pytest.raises(TypeError, match="`pad_width` entries must be the same shape"):
    jnp.pad(x, [[1, 2], [3]])
  with pytest.raises(TypeError, match="`pad_width` must be of integral type"):
    jnp.pad(x, 1.5)
  # A scalar has no (before, after) pairs, so any broadcastable width, even a
  # float one, is accepted and does nothing.
  _check(jnp.pad(np.float32(2), 1.5), np.float32(2))
  _check(jnp.pad(np.float32(2), ((1, 2),)), np.float32(2))


# --- diagonals and triangles --------------------------------------------------------------------

@given(dtype_and_array([np.float32, np.int32, np.bool_], shape=shapes(min_dims=2)),
       st.integers(-4, 4))
def test_triangles_and_diagonals_match_numpy(dx, k):
  _, x = dx
  _check(jnp.tril(x, k), np.tril(x, k))
  _check(jnp.triu(x, k), np.triu(x, k))
  _check(jnp.diagonal(x, k), np.diagonal(x, k))
  _check(jnp.diagonal(x, k, -1, 0), np.diagonal(x, k, -1, 0))
  if x.dtype != np.bool_:
    with np.errstate(all="ignore"):
      expected = np.trace(x, k, dtype=jnp.sum(x).dtype)
    np.testing.assert_allclose(jnp.trace(x, k), expected, rtol=1e-5)
  if x.ndim == 2:
    _check(jnp.diag(x, k), np.diag(x, k))


@given(arrays(np.float32, shapes(min_dims=1, max_dims=1)), st.integers(-3, 3))
def test_diag_of_vector_matches_numpy(v, k):
  _check(jnp.diag(v, k), np.diag(v, k))
  _check(jnp.diagflat(v, k), np.diagflat(v, k))


def test_shape_queries():
  assert jnp.shape([[1, 2]]) == (1, 2) and jnp.ndim(3.0) == 0 and jnp.size(np.ones((2, 3))) == 6
  assert jnp.size(np.ones((2, 3)), 1) == 3
  assert jnp.shape(jnp.ones((4,))) == (4,)


# --- append, diff, resize, index helpers -------------------------------------------------------

@given(dtype_and_array([np.float32, np.int16, np.bool_], shape=shapes(min_dims=1)), st.data())
def test_append_and_diff_match_numpy(dx, data):
  _, x = dx
  axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
  _check(jnp.append(x, x), np.append(x, x))
  _check(jnp.append(x, x, axis=axis), np.append(x, x, axis=axis))
  n = data.draw(st.integers(0, 3))
  with np.errstate(all="ignore"):
    _check(jnp.diff(x, n, axis=axis), np.diff(x, n, axis=axis))
    if x.dtype != np.bool_:
      _check(jnp.diff(x, 1, axis=axis, prepend=x.dtype.type(1), append=x),
             np.diff(x, 1, axis=axis, prepend=x.dtype.type(1), append=x))


@given(dtype_and_array([np.float32, np.int8], shape=shapes()), shapes(max_dims=3))
def test_resize_matches_numpy(dx, new_shape):
  _, x = dx
  _check(jnp.resize(x, new_shape), np.resize(x, new_shape))


@given(st.integers(0, 4), st.integers(-4, 4), st.one_of(st.none(), st.integers(0, 4)))
def test_triangle_and_diagonal_indices_match_numpy(n, k, m):
  for actual, expected in zip(jnp.tril_indices(n, k, m), np.tril_indices(n, k, m)):
    _check(actual, expected, np.int32)
  for actual, expected in zip(jnp.triu_indices(n, k, m), np.triu_indices(n, k, m)):
    _check(actual, expected, np.int32)
  for actual, expected in zip(jnp.diag_indices(n, 3), np.diag_indices(n, 3)):
    _check(actual, expected, np.int32)
  x = np.ones((n, m or n))
  for actual, expected in zip(jnp.triu_indices_from(x, k), np.triu_indices_from(x, k)):
    _check(actual, expected, np.int32)
  for actual, expected in zip(jnp.tril_indices_from(x, k), np.tril_indices_from(x, k)):
    _check(actual, expected, np.int32)
