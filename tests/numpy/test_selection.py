"""Tests of refimpl/numpy/selection.py against NumPy, plus JAX's own choices
(size=/fill_value=, out-of-bounds modes, inplace=False, lowering, errors)."""

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import dtypes
from refimpl.errors import ConcretizationTypeError
from conformance.strategies import arrays, dtype_and_array, index_arrays, shapes

DTYPES = [np.float32, np.int8, np.uint16, np.bool_, dtypes.bfloat16, np.complex64]


def _check(actual, expected, dtype=None):
  """Same shape (and dtype, if given) and equal values, NaNs included."""
  expected = np.asarray(expected)
  actual_np = np.asarray(actual)
  assert actual_np.shape == expected.shape, (actual_np.shape, expected.shape)
  if dtype is not None:
    assert actual.dtype == np.dtype(dtype), (actual.dtype, dtype)
  if actual_np.dtype == dtypes.bfloat16:
    actual_np, expected = actual_np.astype(np.float32), expected.astype(np.float32)
  np.testing.assert_array_equal(actual_np, expected)


def _check_all(actual, expected, dtype=None):
  assert len(actual) == len(expected)
  for a, e in zip(actual, expected):
    _check(a, e, dtype)


def _fill_default(dtype):
  """What out-of-bounds gathers give by default: NaN, the lowest signed or
  highest unsigned integer, True."""
  dtype = np.dtype(dtype)
  if dtypes.is_inexact(dtype):
    return np.asarray(np.nan, dtype)
  if dtypes.is_integer(dtype):
    info = np.iinfo(dtype)
    return np.asarray(info.max if dtypes.is_unsigned(dtype) else info.min, dtype)
  return np.asarray(True)


def _names(f, *args):
  """The primitives `f` lowers to, in order, with `jit` equations inlined."""
  def names(jaxpr):
    out = []
    for e in jaxpr.eqns:
      out += names(e.params["jaxpr"].jaxpr) if e.primitive.name == "jit" else [
          e.primitive.name]
    return out
  return names(jax.make_jaxpr(f)(*args).jaxpr)


def _padded(index, size, fill=0):
  """NumPy's nonzero result cut or padded with `fill` to length `size`."""
  return np.concatenate([index[:size], np.full(max(0, size - len(index)), fill)])


@st.composite
def array_and_axis(draw, dtype_list=DTYPES, min_dims=1, max_dims=3, min_side=0):
  dtype, x = draw(dtype_and_array(dtype_list, shape=shapes(min_dims, max_dims,
                                                           min_side=min_side)))
  return x, draw(st.integers(-x.ndim, x.ndim - 1))


# --- nonzero, flatnonzero, argwhere, where ----------------------------------------------------

@given(dtype_and_array(DTYPES, shape=shapes(min_dims=1)))
def test_nonzero_family_matches_numpy(dx):
  _, x = dx
  _check_all(jnp.nonzero(x), np.nonzero(x), np.int32)
  _check_all(jnp.where(x), np.nonzero(x), np.int32)
  _check(jnp.flatnonzero(x), np.flatnonzero(x), np.int32)
  _check(jnp.argwhere(x), np.argwhere(x), np.int32)
  _check(jnp.asarray(x).nonzero()[0], np.nonzero(x)[0])


@given(dtype_and_array(DTYPES, shape=shapes(min_dims=1)), st.data())
def test_nonzero_with_size_pads_and_truncates_under_jit(dx, data):
  _, x = dx
  size = data.draw(st.integers(0, x.size + 2))
  fill = data.draw(st.sampled_from([None, -1, 7]))
  pad = 0 if fill is None or x.size == 0 else fill  # JAX ignores fill_value if x is empty
  expected = [_padded(i, size, pad) for i in np.nonzero(x)]
  f = jax.jit(lambda x: jnp.nonzero(x, size=size, fill_value=fill))
  _check_all(f(x), expected, np.int32)
  _check_all(jnp.nonzero(x, size=size, fill_value=fill), expected, np.int32)
  flat = jax.jit(lambda x: jnp.flatnonzero(x, size=size, fill_value=fill))(x)
  _check(flat, _padded(np.flatnonzero(x), size, pad))
  rows = jax.jit(lambda x: jnp.argwhere(x, size=size, fill_value=fill))(x)
  _check(rows, np.stack(expected, -1) if expected else np.zeros((size, 0)))


def test_nonzero_examples_and_errors():
  x = jnp.array([0, 5, 0, 6, 0, 7])
  _check_all(jnp.nonzero(x, size=5, fill_value=len(x)), [[1, 3, 5, 6, 6]])
  _check_all(jnp.where(x > 4, size=2), [[1, 3]])
  y = jnp.array([[0, 5, 0], [6, 0, 7]])
  _check_all(jnp.nonzero(y, size=4, fill_value=(-1, -2)), [[0, 1, 1, -1], [1, 0, 2, -2]])
  _check(jnp.argwhere(1), np.zeros((1, 0)))
  _check(jnp.argwhere(0), np.zeros((0, 0)))
  with pytest.raises(ValueError, match="Calling nonzero on 0d arrays is not allowed"):
    jnp.nonzero(jnp.array(1))
  with pytest.raises(ConcretizationTypeError, match="size argument of jnp.nonzero"):
    jax.jit(jnp.nonzero)(x)
  with pytest.raises(ValueError, match="fill_value must be a scalar or a tuple of length 2"):
    jnp.nonzero(y, size=4, fill_value=(1, 2, 3))
  with pytest.raises(TypeError, match="nonzero requires ndarray or scalar arguments"):
    jnp.nonzero([1, 0])
  with pytest.raises(ValueError, match="size and fill_value arguments cannot be used"):
    jnp.where(x > 1, x, 0, size=3)


def test_nonzero_lowering():
  names = _names(lambda x: jnp.nonzero(x, size=3), np.ones(5, np.float32))
  assert names[:3] == ["ne", "convert_element_type", "cumsum"]
  assert "scatter-add" in names and names.count("cumsum") == 2


# --- compress, extract, select ----------------------------------------------------------------

@given(array_and_axis(), st.data())
def test_compress_matches_numpy(xa, data):
  x, axis = xa
  n = x.shape[axis]
  condition = data.draw(hnp.arrays(np.bool_, data.draw(st.integers(0, n))))
  condition = np.concatenate([condition, np.zeros(data.draw(st.integers(0, 2)), bool)])
  _check(jnp.compress(condition, x, axis=axis), np.compress(condition, x, axis=axis))
  flat_condition = condition[:x.size]
  _check(jnp.compress(flat_condition, x), np.compress(flat_condition, x))
  mask = np.concatenate([condition[:x.size], np.zeros(2, bool)])  # extra entries false
  _check(jnp.extract(mask, x), np.extract(mask[:x.size], x.ravel()[:mask.size]))


@given(array_and_axis(DTYPES[:3]), st.data())
def test_compress_and_extract_with_size_under_jit(xa, data):
  x, axis = xa
  n = x.shape[axis]
  condition = data.draw(hnp.arrays(np.bool_, n))
  size = data.draw(st.integers(0, n))
  selected = np.moveaxis(x, axis, 0)[condition]
  padded = np.full((size,) + selected.shape[1:], 3, x.dtype)
  padded[:min(size, len(selected))] = selected[:size]
  expected = np.moveaxis(padded, 0, axis)
  f = jax.jit(lambda c, x: jnp.compress(c, x, axis=axis, size=size, fill_value=3))
  _check(f(condition, x), expected)
  flat = np.ravel(x)
  mask = data.draw(hnp.arrays(np.bool_, flat.size))
  size = data.draw(st.integers(0, flat.size))
  g = jax.jit(lambda c, x: jnp.extract(c, x, size=size))
  _check(g(mask, x), _padded(flat[mask], size).astype(x.dtype))


def test_compress_errors():
  x = jnp.arange(4)
  with pytest.raises(ValueError, match="condition contains entries that are out of bounds"):
    jnp.compress(jnp.array([1, 0, 0, 0, 1]), x)
  with pytest.raises(ValueError, match="condition must be a 1D array"):
    jnp.compress(jnp.ones((2, 2), bool), x)
  with pytest.raises(ValueError, match="size must be positive"):
    jnp.compress(jnp.ones(4, bool), x, size=5)
  with pytest.raises(NotImplementedError, match="'out' argument"):
    jnp.compress(jnp.ones(4, bool), x, out=x)


@given(st.sampled_from(DTYPES[:3] + [np.complex64]), hnp.mutually_broadcastable_shapes(
    num_shapes=5, max_dims=3, max_side=3), st.data())
def test_select_matches_numpy(dtype, shapes_, data):
  c1, c2, x1, x2, default = shapes_.input_shapes
  conditions = [data.draw(hnp.arrays(np.bool_, c1)), data.draw(hnp.arrays(np.int8, c2))]
  choices = [data.draw(arrays(dtype, x1)), data.draw(arrays(dtype, x2))]
  default = data.draw(arrays(dtype, default))
  expected = np.select([c.astype(bool) for c in conditions], choices, default)
  _check(jnp.select(conditions, choices, default), expected, dtype)
  _check(jax.jit(jnp.select)(conditions, choices, default), expected, dtype)


def test_select_examples_errors_and_lowering():
  conditions = [jnp.array([False, True, False, False]), jnp.array([True, False, False, False]),
                jnp.array([False, True, True, False])]
  choices = [jnp.array([1, 2, 3, 4]), jnp.array([10, 20, 30, 40]),
             jnp.array([100, 200, 300, 400])]
  _check(jnp.select(conditions, choices), [10, 2, 300, 0], np.int32)
  _check(jnp.select(conditions, choices, default=2.5), [10, 2, 300, 2.5], np.float32)
  with pytest.raises(ValueError, match="condlist must have length equal to choicelist"):
    jnp.select(conditions, choices[:2])
  with pytest.raises(ValueError, match="condlist must be non-empty"):
    jnp.select([], [])
  names = _names(lambda c, x: jnp.select([c], [x]), np.ones(3, bool), np.ones(3, np.float32))
  assert names[-1] == "select_n" and "argmax" in names


# --- choose ------------------------------------------------------------------------------------

@given(st.sampled_from(DTYPES), hnp.mutually_broadcastable_shapes(num_shapes=4, max_dims=3,
                                                                  max_side=3), st.data())
def test_choose_matches_numpy(dtype, shapes_, data):
  a_shape, *choice_shapes = shapes_.input_shapes
  choices = [data.draw(arrays(dtype, s)) for s in choice_shapes]
  a = data.draw(hnp.arrays(np.int32, a_shape, elements=st.integers(-5, 7)))
  for mode in ("wrap", "clip"):
    _check(jnp.choose(a, choices, mode=mode), np.choose(a, choices, mode=mode), dtype)
    _check(jax.jit(lambda a, c: jnp.choose(a, c, mode=mode))(a, choices),
           np.choose(a, choices, mode=mode))
  valid = np.clip(a, 0, 2)
  _check(jnp.choose(valid, choices), np.choose(valid, choices))


def test_choose_errors():
  choices = jnp.arange(6).reshape(3, 2)
  with pytest.raises(ValueError, match="invalid entry in choice array"):
    jnp.choose(jnp.array([0, 3]), choices)
  with pytest.raises(ConcretizationTypeError, match="mode='raise'"):
    jax.jit(jnp.choose)(jnp.array([0, 1]), choices)
  with pytest.raises(ValueError, match="must be integer typed"):
    jnp.choose(jnp.array([0.0, 1.0]), choices)
  with pytest.raises(ValueError, match="mode='bad' not understood"):
    jnp.choose(jnp.array([0, 1]), choices, mode="bad")


# --- take and take_along_axis ------------------------------------------------------------------

@given(array_and_axis(min_side=1), st.data())
def test_take_matches_numpy(xa, data):
  x, axis = xa
  n = x.shape[axis]
  idx_shape = data.draw(shapes(max_dims=2))
  indices = data.draw(index_arrays(n, idx_shape))
  _check(jnp.take(x, indices, axis=axis), np.take(x, indices, axis=axis), x.dtype)
  flat = data.draw(index_arrays(x.size, idx_shape))
  _check(jnp.take(x, flat), np.take(x, flat))
  wild = data.draw(index_arrays(n, idx_shape, in_bounds=False))
  for mode in ("clip", "wrap"):
    expected = np.take(x, wild, axis=axis, mode=mode)
    _check(jnp.take(x, wild, axis=axis, mode=mode), expected)
    _check(jax.jit(lambda x, i: jnp.take(x, i, axis=axis, mode=mode))(x, wild), expected)
  _check(jnp.asarray(x).take(indices, axis=axis), np.take(x, indices, axis=axis))


@given(array_and_axis(min_side=1), st.data())
def test_take_fills_out_of_bounds(xa, data):
  x, axis = xa
  n = x.shape[axis]
  indices = data.draw(index_arrays(n, data.draw(shapes(max_dims=2)), in_bounds=False))
  out_of_bounds = (indices < -n) | (indices >= n)
  expected = np.take(x, np.clip(indices, -n, n - 1), axis=axis)
  mask = np.expand_dims(out_of_bounds, tuple(range(axis % x.ndim)))
  mask = np.expand_dims(mask, tuple(range(mask.ndim, expected.ndim)))
  _check(jnp.take(x, indices, axis=axis), np.where(mask, _fill_default(x.dtype), expected))
  filled = jax.jit(lambda x, i: jnp.take(x, i, axis=axis, fill_value=1))(x, indices)
  _check(filled, np.where(mask, np.ones((), x.dtype), expected))


def test_take_examples_errors_and_lowering():
  x = jnp.array([[1., 2., 3.], [4., 5., 6.]])
  _check(jnp.take(x, jnp.array([2, 0]), axis=0), [[np.nan] * 3, [1, 2, 3]])
  _check(jnp.take(x, jnp.array([2, 0]), axis=0, mode="clip"), [[4, 5, 6], [1, 2, 3]])
  _check(jnp.take(x, jnp.array([], np.int32), axis=1), np.zeros((2, 0)))
  _check(jnp.take(x, 1, axis=1), [2, 5])
  _check(jnp.take(jnp.zeros((0, 3)), jnp.array([], np.int32), axis=0), np.zeros((0, 3)))
  with pytest.raises(IndexError, match="non-empty jnp.take"):
    jnp.take(jnp.zeros((0, 3)), jnp.array([0]), axis=0)
  with pytest.raises(NotImplementedError, match="'raise' mode to jnp.take"):
    jnp.take(x, jnp.array([0]), mode="raise")
  with pytest.raises(ValueError, match="Invalid mode 'bad' for np.take"):
    jnp.take(x, jnp.array([0]), mode="bad")
  names = _names(lambda x, i: jnp.take(x, i, axis=1), np.ones((2, 3), np.float32),
                 np.array([0, 1], np.int32))
  assert names == ["lt", "add", "select_n", "broadcast_in_dim", "gather"]


@given(array_and_axis(min_side=1), st.data())
def test_take_along_axis_matches_numpy(xa, data):
  x, axis = xa
  n = x.shape[axis]
  idx_shape = tuple(data.draw(st.sampled_from([1, d])) for d in x.shape)
  idx_shape = idx_shape[:axis % x.ndim] + (data.draw(st.integers(0, 3)),) + \
      idx_shape[axis % x.ndim + 1:]
  indices = data.draw(index_arrays(n, idx_shape))
  expected = np.take_along_axis(x, indices, axis=axis)
  _check(jnp.take_along_axis(x, indices, axis=axis), expected, x.dtype)
  _check(jax.jit(lambda x, i: jnp.take_along_axis(x, i, axis))(x, indices), expected)
  # (Empty indices are left out: products.einsum mishandles size-0 dimensions.)
  if dtypes.is_inexact(x.dtype) and np.all(np.isfinite(x)) and indices.size:
    _check(jnp.take_along_axis(x, indices, axis=axis, mode="one_hot"), expected)
  clipped = jnp.take_along_axis(x, indices + 2 * n, axis=axis, mode="clip")
  _check(clipped, np.take_along_axis(x, np.full_like(indices, n - 1), axis=axis))


def test_take_along_axis_examples_and_errors():
  x = jnp.array([[1., 2., 3.], [4., 5., 6.]])
  _check(jnp.take_along_axis(x, jnp.array([[1, 0, 2]]), axis=0), [[4, 2, np.nan]])
  _check(jnp.take_along_axis(x, jnp.array([[1, 0, 2]]), axis=0, fill_value=-1),
         [[4, 2, -1]])
  _check(jnp.take_along_axis(x, jnp.array([5, -1]), axis=None), [6, 6])
  _check(jnp.take_along_axis(jnp.zeros((2, 0)), jnp.zeros((2, 3), int), axis=1),
         np.zeros((2, 3)))
  with pytest.raises(TypeError, match="indices must be of integer type"):
    jnp.take_along_axis(x, jnp.array([[0.0]]), axis=0)
  with pytest.raises(ValueError, match="must be 1D if axis=None"):
    jnp.take_along_axis(x, jnp.array([[0]]), axis=None)
  with pytest.raises(ValueError, match="same number of dimensions"):
    jnp.take_along_axis(x, jnp.array([0]), axis=0)


# --- put, put_along_axis, place, fill_diagonal -------------------------------------------------

@given(dtype_and_array(DTYPES, shape=shapes(min_dims=1, min_side=1)), st.data())
def test_put_matches_numpy(dx, data):
  dtype, x = dx
  positions = data.draw(st.lists(st.integers(0, x.size - 1), unique=True, min_size=1))
  signs = data.draw(st.lists(st.booleans(), min_size=len(positions), max_size=len(positions)))
  indices = np.array([p - x.size if s else p for p, s in zip(positions, signs)], np.int32)
  values = data.draw(arrays(dtype, data.draw(st.integers(1, 4))))
  expected = x.copy()
  np.put(expected, indices, values)
  _check(jnp.put(x, indices, values, inplace=False), expected, dtype)
  wild = indices + x.size * data.draw(st.sampled_from([0, 1, 2]))
  for mode in ("clip", "wrap"):
    if mode == "clip" and np.unique(np.clip(wild, 0, x.size - 1)).size < wild.size:
      continue  # repeated positions: which value wins is unspecified
    expected = x.copy()
    np.put(expected, wild, values, mode=mode)
    f = jax.jit(lambda x, i, v: jnp.put(x, i, v, mode=mode, inplace=False))
    _check(f(x, wild, values), expected)


def test_put_examples_and_errors():
  x = jnp.zeros(5, int)
  # By default an index past the end goes to the last position (unravel_index clips).
  _check(jnp.put(x, jnp.array([0, 2, 6]), jnp.array([10, 20, 30]), inplace=False),
         [10, 0, 20, 0, 30])
  _check(jnp.put(x, jnp.array([], int), jnp.array([1]), inplace=False), [0] * 5)
  with pytest.raises(ValueError, match="cannot modify arrays in-place"):
    jnp.put(x, jnp.array([0]), 1)
  with pytest.raises(NotImplementedError, match="'raise' mode to jnp.put"):
    jnp.put(x, jnp.array([0]), 1, mode="raise", inplace=False)
  with pytest.raises(ValueError, match="mode should be one of 'wrap' or 'clip'"):
    jnp.put(x, jnp.array([0]), 1, mode="bad", inplace=False)


@given(array_and_axis(DTYPES[:4], min_side=1), st.data())
def test_put_along_axis_matches_numpy(xa, data):
  x, axis = xa
  ax = axis % x.ndim
  n = x.shape[ax]
  k = data.draw(st.integers(1, n))
  # Distinct indices along the axis (a prefix of one permutation), so no
  # position is written twice.
  order = np.array(data.draw(st.permutations(range(n))))[:k]
  idx_shape = [1] * x.ndim
  idx_shape[ax] = k
  indices = np.broadcast_to(order.reshape(idx_shape),
                            x.shape[:ax] + (k,) + x.shape[ax + 1:]).astype(np.int32)
  values = data.draw(arrays(x.dtype, indices.shape[-1:] if ax == x.ndim - 1 else ()))
  expected = x.copy()
  np.put_along_axis(expected, indices, values, axis=axis)
  f = jax.jit(lambda x, i, v: jnp.put_along_axis(x, i, v, axis, inplace=False))
  _check(f(x, indices, values), expected, x.dtype)


def test_put_along_axis_examples_and_errors():
  a = jnp.array([[10, 30, 20], [60, 40, 50]])
  i = jnp.argmax(a, axis=1, keepdims=True)
  _check(jnp.put_along_axis(a, i, 99, axis=1, inplace=False), [[10, 99, 20], [99, 40, 50]])
  _check(jnp.put_along_axis(a, jnp.array([0, 5]), 7, axis=None, inplace=False),
         [[7, 30, 20], [60, 40, 7]])
  with pytest.raises(ValueError, match="cannot modify arrays in-place"):
    jnp.put_along_axis(a, i, 99, axis=1)
  with pytest.raises(ValueError, match="must have same ndim"):
    jnp.put_along_axis(a, jnp.array([0]), 99, axis=1, inplace=False)
  with pytest.raises(ValueError, match="must be broadcastable to 'indices'"):
    jnp.put_along_axis(a, i, jnp.ones(3, int), axis=1, inplace=False)


@given(dtype_and_array(DTYPES), st.data())
def test_place_matches_numpy(dx, data):
  dtype, x = dx
  mask = data.draw(hnp.arrays(np.bool_, x.shape))
  values = data.draw(arrays(dtype, data.draw(st.integers(1, 4))))
  expected = x.copy()
  np.place(expected, mask, values)
  _check(jnp.place(x, mask, values, inplace=False), expected, dtype)
  _check(jax.jit(lambda x, m, v: jnp.place(x, m, v, inplace=False))(x, mask, values),
         expected)


def test_place_errors():
  x = jnp.zeros(3)
  with pytest.raises(ValueError, match="cannot modify arrays in-place"):
    jnp.place(x, x > 0, 1.0)
  with pytest.raises(ValueError, match="arr and mask must be the same size"):
    jnp.place(x, jnp.ones(2, bool), 1.0, inplace=False)
  with pytest.raises(ValueError, match="Cannot place values from an empty array"):
    jnp.place(x, x > 0, jnp.array([]), inplace=False)


@given(st.sampled_from(DTYPES), st.one_of(
    st.tuples(st.integers(1, 4), st.integers(1, 4)),
    st.tuples(st.integers(1, 3)).map(lambda n: n * 3)), st.data())
def test_fill_diagonal_matches_numpy(dtype, shape, data):
  x = data.draw(arrays(dtype, shape))
  val = data.draw(arrays(dtype, data.draw(st.sampled_from([(), (1,), (2,), (2, 3)]))))
  expected = x.copy()
  np.fill_diagonal(expected, val)
  _check(jnp.fill_diagonal(x, val, inplace=False), expected, dtype)


def test_fill_diagonal_errors():
  with pytest.raises(NotImplementedError, match="must use inplace=False"):
    jnp.fill_diagonal(jnp.zeros((2, 2)), 1)
  with pytest.raises(NotImplementedError, match="wrap=True is not implemented"):
    jnp.fill_diagonal(jnp.zeros((2, 2)), 1, wrap=True, inplace=False)
  with pytest.raises(ValueError, match="array must be at least 2-d"):
    jnp.fill_diagonal(jnp.zeros(2), 1, inplace=False)
  with pytest.raises(ValueError, match="All dimensions of input must be of equal length"):
    jnp.fill_diagonal(jnp.zeros((2, 2, 3)), 1, inplace=False)


# --- index conversions ---------------------------------------------------------------------------

@given(st.lists(st.integers(0, 4), min_size=0, max_size=3), st.data())
def test_ix_matches_numpy(sizes, data):
  seqs = [data.draw(hnp.arrays(np.int32, n, elements=st.integers(0, 3))) for n in sizes]
  _check_all(jnp.ix_(*seqs), np.ix_(*seqs))
  if sizes:
    x = np.arange(4 ** len(sizes)).reshape((4,) * len(sizes))
    _check(jnp.asarray(x)[jnp.ix_(*seqs)], x[np.ix_(*seqs)])


def test_ix_errors():
  with pytest.raises(ValueError, match="must be 1-dimensional"):
    jnp.ix_(jnp.zeros((2, 2), int))
  with pytest.raises(NotImplementedError, match="Boolean arguments"):
    jnp.ix_(jnp.array([True, False]))


@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.data(),
       st.sampled_from(["C", "F"]))
def test_ravel_and_unravel_index_match_numpy(dims, data, order):
  dims = tuple(dims)
  shape = data.draw(shapes(max_dims=2))
  multi = [data.draw(hnp.arrays(np.int32, shape, elements=st.integers(0, d - 1)))
           for d in dims]
  flat = np.ravel_multi_index(multi, dims, order=order)
  _check(jnp.ravel_multi_index(multi, dims, order=order), flat, np.int32)
  _check_all(jnp.unravel_index(flat.astype(np.int32), dims), np.unravel_index(flat, dims))
  wild = [data.draw(hnp.arrays(np.int32, shape, elements=st.integers(-9, 9))) for _ in dims]
  for mode in ("clip", "wrap"):
    expected = np.ravel_multi_index(wild, dims, mode=mode, order=order)
    f = jax.jit(lambda *m: jnp.ravel_multi_index(m, dims, mode=mode, order=order))
    _check(f(*wild), expected)


def test_unravel_index_clips_and_wraps_like_jax():
  # Negative indices count from the end; out-of-bounds ones clip (NumPy raises).
  rows, cols = jnp.unravel_index(jnp.array([-1, -6, -7, 6, 100]), (2, 3))
  _check(rows, [1, 0, 0, 1, 1])
  _check(cols, [2, 0, 0, 2, 2])
  _check_all(jnp.unravel_index(5, (2, 3)), [1, 2])
  with pytest.raises(ValueError, match="shape should be a scalar or 1D sequence"):
    jnp.unravel_index(1, [(2, 3)])


def test_ravel_multi_index_errors():
  with pytest.raises(ValueError, match="invalid entry in coordinates array"):
    jnp.ravel_multi_index((jnp.array([3]), jnp.array([0])), (3, 4))
  with pytest.raises(TypeError, match="only int indices permitted"):
    jnp.ravel_multi_index((jnp.array([1.0]),), (3,))
  with pytest.raises(ConcretizationTypeError, match="mode='raise'"):
    jax.jit(lambda i: jnp.ravel_multi_index((i,), (3,)))(jnp.array([1]))
  with pytest.raises(ValueError, match="invalid mode='bad'"):
    jnp.ravel_multi_index((jnp.array([1]),), (3,), mode="bad")
  with pytest.raises(ValueError, match="invalid order='X'"):
    jnp.ravel_multi_index((jnp.array([1]),), (3,), order="X")


@given(st.integers(0, 5), st.integers(-2, 2),
       st.sampled_from([(jnp.triu, np.triu), (jnp.tril, np.tril)]))
def test_mask_indices_matches_numpy(n, k, funcs):
  _check_all(jnp.mask_indices(n, funcs[0], k), np.mask_indices(n, funcs[1], k))


# --- delete and insert -------------------------------------------------------------------------

@given(array_and_axis(DTYPES[:4], min_side=1), st.data())
def test_delete_matches_numpy(xa, data):
  x, axis = xa
  n = x.shape[axis]
  index = data.draw(st.integers(-n, n - 1))
  _check(jnp.delete(x, index, axis=axis), np.delete(x, index, axis=axis))
  cut = slice(data.draw(st.none() | st.integers(-n - 1, n + 1)),
              data.draw(st.none() | st.integers(-n - 1, n + 1)),
              data.draw(st.none() | st.sampled_from([1, 2, -1, -3])))
  _check(jnp.delete(x, cut, axis=axis), np.delete(x, cut, axis=axis))
  many = data.draw(index_arrays(n, data.draw(st.integers(0, 4))))
  _check(jnp.delete(x, many, axis=axis), np.delete(x, many, axis=axis))
  mask = data.draw(hnp.arrays(np.bool_, n))
  _check(jnp.delete(x, mask, axis=axis), np.delete(x, mask, axis=axis))
  _check(jnp.delete(x, index), np.delete(x, index % x.size if index < 0 else index))
  distinct = np.unique(many % n).astype(np.int32)
  f = jax.jit(lambda x, i: jnp.delete(x, i, axis=axis, assume_unique_indices=True))
  _check(f(x, distinct), np.delete(x, distinct, axis=axis))


def test_delete_errors():
  with pytest.raises(ConcretizationTypeError, match="'obj' array argument of jnp.delete"):
    jax.jit(jnp.delete)(jnp.arange(4), jnp.array([0, 1]))
  with pytest.raises(ValueError, match="for boolean indices, obj must be one-dimensional"):
    jnp.delete(jnp.arange(4), np.array([True]))
  with pytest.raises(ValueError, match="must be integer or bool"):
    jnp.delete(jnp.arange(4), np.array([1.0]))


@given(array_and_axis(DTYPES[:4], min_side=0), st.data())
def test_insert_matches_numpy(xa, data):
  x, axis = xa
  n = x.shape[axis]
  ax = axis % x.ndim
  index = data.draw(st.integers(-n, n))
  value = data.draw(arrays(x.dtype, ()))
  _check(jnp.insert(x, index, value, axis=axis), np.insert(x, index, value, axis=axis))
  positions = data.draw(hnp.arrays(np.int32, data.draw(st.integers(2, 3)),
                                   elements=st.integers(-n, n)))
  values_shape = x.shape[:ax] + (len(positions),) + x.shape[ax + 1:]
  values = data.draw(arrays(x.dtype, values_shape))
  _check(jnp.insert(x, positions, values, axis=axis),
         np.insert(x, positions, values, axis=axis), x.dtype)
  cut = slice(None, None, data.draw(st.sampled_from([1, 2])))
  _check(jnp.insert(x, cut, value, axis=axis), np.insert(x, cut, value, axis=axis))
  flat_index = data.draw(st.integers(-x.size, x.size))
  _check(jnp.insert(x, flat_index, value), np.insert(x, flat_index, value))


def test_insert_examples_and_errors():
  x = jnp.arange(5)
  _check(jnp.insert(x, jnp.array([4, 2, 5]), jnp.array([10, 11, 12])),
         [0, 1, 11, 2, 3, 10, 4, 12])
  _check(jax.jit(lambda x, i: jnp.insert(x, i, 9))(x, jnp.array([1, 3])),
         [0, 9, 1, 2, 9, 3, 4])
  with pytest.raises(ValueError, match="obj must be a slice, a one-dimensional array"):
    jnp.insert(x, jnp.array([[1]]), 9)
  with pytest.raises(ValueError, match="index array must be integer typed"):
    jnp.insert(x, jnp.array([1.0]), 9)


# --- index tricks --------------------------------------------------------------------------------

def test_index_tricks_match_numpy():
  a = np.arange(6).reshape(2, 3)
  cases = [
      (jnp.r_[-1:5:1, 0, 0, jnp.array([1, 2, 3])], np.r_[-1:5:1, 0, 0, np.array([1, 2, 3])]),
      (jnp.r_[-1:1:6j, 0], np.r_[-1:1:6j, 0]),
      (jnp.r_["0,2", [1, 2, 3], [4, 5, 6]], np.r_["0,2", [1, 2, 3], [4, 5, 6]]),
      (jnp.r_["0,2,0", [1, 2, 3], [4, 5, 6]], np.r_["0,2,0", [1, 2, 3], [4, 5, 6]]),
      (jnp.r_["0,2,-2", [1, 2, 3], [4, 5, 6]], np.r_["0,2,-2", [1, 2, 3], [4, 5, 6]]),
      (jnp.r_["r", [1, 2, 3], [4, 5, 6]], np.r_["r", [1, 2, 3], [4, 5, 6]]),
      (jnp.r_["c", [1, 2, 3], [4, 5, 6]], np.r_["c", [1, 2, 3], [4, 5, 6]]),
      (jnp.r_[3], np.r_[3]),
      (jnp.c_[a, a], np.c_[a, a]),
      (jnp.c_[np.arange(3), np.arange(3)], np.c_[np.arange(3), np.arange(3)]),
      (jnp.c_["0,2,-1", [1, 2, 3], [4, 5, 6]], np.c_["0,2,-1", [1, 2, 3], [4, 5, 6]]),
      (jnp.mgrid[0:4:1], np.mgrid[0:4:1]),
      (jnp.mgrid[0:1:4j], np.mgrid[0:1:4j]),
      (jnp.mgrid[:2, :3], np.mgrid[:2, :3]),
      (jnp.mgrid[-1:1:3j, 0:2], np.mgrid[-1:1:3j, 0:2]),
  ]
  for actual, expected in cases:
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=1e-6)
    assert actual.shape == expected.shape
  _check_all(jnp.ogrid[:2, :3], np.ogrid[:2, :3])
  _check(jnp.ogrid[1:7:2], np.ogrid[1:7:2])
  assert jnp.s_[1:2, ::3] == np.s_[1:2, ::3]
  assert jnp.index_exp[1:2] == np.index_exp[1:2]
  assert jnp.mgrid[0:1:4j].dtype == np.float32 and jnp.mgrid[:2, :3].dtype == np.int32
  assert len(jnp.r_) == 0
  with pytest.raises(ValueError, match="could not understand directive"):
    jnp.r_["a,b", [1]]
  with pytest.raises(ValueError, match="string directive must be placed at the beginning"):
    jnp.r_[[1], "r"]
