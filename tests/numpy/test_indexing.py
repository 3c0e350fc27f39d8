"""Tests of refimpl/numpy/indexing.py: `x[idx]` and `x.at[idx]` against NumPy."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import dtypes, errors
from conformance.strategies import index_expressions, shapes

DTYPES = [np.float32, np.int8, np.uint16, np.bool_, dtypes.bfloat16]


def _values(shape, dtype):
  """Distinct values (as far as the dtype allows) so misplaced elements show."""
  return (np.arange(int(np.prod(shape)), dtype=np.int64) * 7 % 11 - 3).reshape(shape).astype(dtype)


@st.composite
def array_and_index(draw):
  shape = draw(shapes(max_dims=4))
  dtype = draw(st.sampled_from(DTYPES))
  return _values(shape, dtype), draw(index_expressions(shape))


def _as_jnp_index(index, convert):
  """The index with its NumPy arrays as Arrays (when `convert`) or left as they are."""
  return tuple(jnp.asarray(i) if convert and isinstance(i, np.ndarray) else i
               for i in index)


def _check_equal(actual, expected):
  assert actual.shape == expected.shape, (actual.shape, expected.shape)
  assert actual.dtype == expected.dtype
  if expected.dtype == dtypes.bfloat16:  # NumPy's comparisons do not know bfloat16 NaN
    actual, expected = np.asarray(actual, np.float32), expected.astype(np.float32)
  np.testing.assert_array_equal(np.asarray(actual), expected)


# --- x[idx] -------------------------------------------------------------------------------------

@given(array_and_index(), st.booleans())
def test_getitem_matches_numpy(x_and_index, convert):
  x, index = x_and_index
  _check_equal(jnp.asarray(x)[_as_jnp_index(index, convert)], x[index])


@given(array_and_index())
def test_getitem_under_jit_matches_numpy(x_and_index):
  """Integer arrays are traced arguments; masks, ints and slices are static."""
  x, index = x_and_index
  traced = [i for i, e in enumerate(index) if isinstance(e, np.ndarray) and e.dtype != np.bool_]

  def f(x, *arrays):
    full = list(index)
    for position, array in zip(traced, arrays):
      full[position] = array
    return x[tuple(full)]

  _check_equal(jax.jit(f)(x, *(index[i] for i in traced)), x[index])


@pytest.mark.parametrize("index", [
    0, -1, 2, (1, 2), (-2, slice(None)), slice(1, 3), slice(None, None, -1),
    (Ellipsis, 1), (None, 1), (slice(None), None), True, False, (True, 0), (),
    [[0, 1], [1, 0]], np.array([2, 0, 2]), (np.array([0, 2]), np.array([1, 3])),
    (np.array([0, 2]), slice(1, None)), np.int32(1), (np.int64(-1), 0),
    np.array(1), (slice(None), np.array([[True, False, True, False]] * 3)[0]),
])
def test_getitem_examples(index):
  x = _values((3, 4), np.float32)
  jnp_index = tuple(index) if isinstance(index, list) else index
  _check_equal(jnp.asarray(x)[jnp_index], x[jnp_index])


def test_out_of_bounds_integers_clamp():
  x = jnp.arange(10)
  assert int(x[11]) == 9 and int(x[-11]) == 0 and int(x[100]) == 9
  np.testing.assert_array_equal(x[jnp.array([-12, 3, 25])], [0, 3, 9])
  y = jnp.asarray(np.arange(12, dtype=np.int32).reshape(3, 4))
  np.testing.assert_array_equal(y[5, 0:2], [8, 9])


def test_traced_integer_index_wraps_then_clamps():
  f = jax.jit(lambda x, i: x[i])
  x = jnp.arange(5.0)
  assert [float(f(x, i)) for i in (0, 4, -1, -5, 7, -9)] == [0.0, 4.0, 4.0, 0.0, 4.0, 0.0]


def test_scalar_array_indices_index_like_integers():
  x = _values((4, 3), np.int32)
  _check_equal(jnp.asarray(x)[jnp.asarray(2), np.int32(-1)], x[2, -1])
  _check_equal(jax.jit(lambda x, i, j: x[i, 1:, j])(
      jnp.asarray(x)[None], jnp.asarray(0), jnp.asarray(1)), x[None][0, 1:, 1])


def test_advanced_indices_separated_by_a_slice_go_first():
  x = _values((2, 3, 4, 5), np.float32)
  a, b = np.array([[0, 1]]), np.array([2, 1])
  for index in [(a, slice(None), b), (0, slice(None), b), (a, b), (slice(None), a, b),
                (a, None, b), (a, Ellipsis, b)]:
    _check_equal(jnp.asarray(x)[index], x[index])


def test_index_errors():
  x = jnp.ones((3, 4))
  with pytest.raises(TypeError, match="Indexer must have integer or boolean type"):
    x[1.0]
  with pytest.raises(TypeError, match="Indexer must have integer or boolean type"):
    x[jnp.array([0.0, 1.0])]
  with pytest.raises(TypeError, match="non-tuple sequence"):
    x[[0, 1]]
  with pytest.raises(TypeError, match="string indexing"):
    x["a"]
  with pytest.raises(IndexError, match="Too many indices"):
    x[0, 0, 0]
  with pytest.raises(IndexError, match="ellips"):
    x[..., 0, ...]
  with pytest.raises(IndexError, match="boolean index did not match"):
    x[jnp.array([True, False])]
  with pytest.raises(IndexError, match="size 0"):
    jnp.ones((0, 2))[0]


def test_traced_boolean_mask_raises_non_concrete_boolean_index_error():
  with pytest.raises(errors.NonConcreteBooleanIndexError) as info:
    jax.jit(lambda x, m: x[m])(jnp.arange(3.0), jnp.array([True, False, True]))
  assert isinstance(info.value, IndexError)  # a JAXIndexError, as in JAX
  with pytest.raises(errors.NonConcreteBooleanIndexError):
    jax.jit(lambda x: x.at[x > 1].set(0.0))(jnp.arange(3.0))


def test_concrete_boolean_mask_under_jit():
  mask = np.array([True, False, True])
  np.testing.assert_array_equal(jax.jit(lambda x: x[mask])(jnp.arange(3.0)), [0.0, 2.0])


def test_dynamic_slice_bounds_raise_index_error():
  with pytest.raises(IndexError, match="static start/stop/step"):
    jax.jit(lambda x, i: x[i:i + 2])(jnp.arange(5.0), 1)


def test_jaxprs_of_basic_indexing():
  x = jnp.ones(5)
  assert [e.primitive.name for e in jax.make_jaxpr(lambda x: x[1:3])(x).eqns] == ["slice"]
  assert str(jax.make_jaxpr(lambda x: x[1:3])(x)) == (
      "{ lambda ; a:f32[5]. let\n"
      "    b:f32[2] = slice[limit_indices=(3,) start_indices=(1,) strides=None] a\n"
      "  in (b,) }")
  names = lambda f, *args: [e.primitive.name for e in jax.make_jaxpr(f)(*args).eqns]
  assert names(lambda x: x[1], x) == ["slice", "squeeze"]
  assert names(lambda x: x[-1], x) == ["dynamic_slice", "squeeze"]
  assert names(lambda x: x[::-1], x) == ["rev"]
  assert names(lambda x, i: x[i], x, 1) == ["lt", "add", "select_n", "dynamic_slice", "squeeze"]
  assert names(lambda x: x[::2], x) == ["iota", "mul", "add", "broadcast_in_dim", "gather"]
  assert names(lambda x: x[None], x) == ["broadcast_in_dim"]
  assert names(lambda x: x.at[1].set(2.0), x) == ["broadcast_in_dim", "scatter"]
  assert names(lambda x: x.at[1:].add(2.0), x) == ["broadcast_in_dim", "broadcast_in_dim",
                                                   "scatter-add"]


def test_gather_mode_printed_for_array_index():
  jaxpr = str(jax.make_jaxpr(lambda x, i: x[i])(jnp.ones(5), jnp.array([1, 2])))
  assert "mode=GatherScatterMode.PROMISE_IN_BOUNDS" in jaxpr
  assert ("dimension_numbers=GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), "
          "start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())"
          in jaxpr)


# --- x.at[idx].get -------------------------------------------------------------------------------

def test_get_modes():
  x = jnp.arange(5.0)
  index = jnp.array([1, 7, -2, -9])
  np.testing.assert_array_equal(x.at[index].get(), [1, 4, 3, 0])
  np.testing.assert_array_equal(x.at[index].get(mode="clip"), [1, 4, 3, 0])
  np.testing.assert_array_equal(x.at[index].get(mode="fill"), [1, np.nan, 3, np.nan])
  np.testing.assert_array_equal(x.at[index].get(mode="drop", fill_value=-1), [1, -1, 3, -1])
  np.testing.assert_array_equal(x.at[20].get(mode="fill", fill_value=jnp.array(7.0)), 7.0)
  np.testing.assert_array_equal(
      x.at[index].get(mode="fill", fill_value=-1, wrap_negative_indices=False), [1, -1, -1, -1])
  assert int(jnp.asarray(np.arange(4, dtype=np.int8)).at[9].get(mode="fill")) == -128
  assert int(jnp.asarray(np.arange(3, dtype=np.uint8)).at[9].get(mode="fill")) == 255
  assert bool(jnp.asarray(np.zeros(3, bool)).at[9].get(mode="fill")) is True


def test_get_fill_value_must_be_a_concrete_scalar():
  x = jnp.arange(5.0)
  with pytest.raises(ValueError, match="must be a scalar"):
    x.at[jnp.array([9])].get(mode="fill", fill_value=jnp.array([1.0, 2.0]))
  with pytest.raises(errors.ConcretizationTypeError):
    jax.jit(lambda x, v: x.at[jnp.array([9])].get(mode="fill", fill_value=v))(x, 1.0)


# --- x.at[idx] updates ----------------------------------------------------------------------------

_UFUNC_AT = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
             "min": np.minimum, "max": np.maximum}


def _reference_update(x, index, y, method):
  """NumPy's `x[index] op= y` with every repeated index taking effect (`ufunc.at`)."""
  positions = np.arange(x.size).reshape(x.shape)[index]
  y = np.broadcast_to(y, positions.shape)
  out = x.copy().reshape(-1)
  if method == "set":
    out[positions.ravel()] = y.ravel()  # the last of repeated indices wins
  else:
    _UFUNC_AT[method].at(out, positions.ravel(), y.ravel())
  return out.reshape(x.shape)


@st.composite
def update_case(draw):
  shape = draw(shapes(max_dims=3))
  dtype = draw(st.sampled_from([np.float32, np.int32]))
  x = _values(shape, dtype)
  index = draw(index_expressions(shape))
  target_shape = x[index].shape
  y_shape = target_shape[draw(st.integers(0, len(target_shape))):]  # a suffix broadcasts
  y = np.asarray(draw(st.lists(st.integers(-3, 3), min_size=int(np.prod(y_shape)),
                               max_size=int(np.prod(y_shape)))), dtype).reshape(y_shape)
  return x, index, y


@pytest.mark.parametrize("method", ["set", "add", "subtract", "multiply", "min", "max"])
@given(case=update_case(), convert=st.booleans())
def test_at_updates_match_numpy(method, case, convert):
  x, index, y = case
  ref = getattr(jnp.asarray(x).at[_as_jnp_index(index, convert)], method)
  _check_equal(ref(jnp.asarray(y)), _reference_update(x, index, y, method))


@given(update_case())
def test_at_add_under_jit_matches_numpy(case):
  x, index, y = case
  out = jax.jit(lambda x, y: x.at[index].add(y))(x, y)
  _check_equal(out, _reference_update(x, index, y, "add"))


def test_seed_examples():
  np.testing.assert_array_equal(jnp.zeros((3, 3)).at[1, :].set(1.0),
                                [[0, 0, 0], [1, 1, 1], [0, 0, 0]])
  expected = np.ones((5, 6), np.float32)
  expected[::2, 3:] += 7
  _check_equal(jnp.ones((5, 6)).at[::2, 3:].add(7.), expected)
  assert int(jnp.arange(10)[11]) == 9
  x = jnp.zeros((3, 3))
  with pytest.raises(TypeError, match=r"\.at"):
    x[1, :] = 1.0


def test_repeated_indices_accumulate():
  np.testing.assert_array_equal(jnp.zeros(3).at[jnp.array([0, 0, 1])].add(1.), [2, 1, 0])
  np.testing.assert_array_equal(jnp.ones(3).at[jnp.array([2, 2])].multiply(3.), [1, 1, 9])
  np.testing.assert_array_equal(jnp.zeros(3).at[jnp.array([1, 1])].min(jnp.array([-1., -2.])),
                                [0, -2, 0])
  np.testing.assert_array_equal(
      jnp.zeros(2).at[jnp.array([0, 0])].max(jnp.array([np.nan, 1.0])), [np.nan, 0])
  np.testing.assert_array_equal(
      jnp.arange(4.0).at[jnp.array([1, 1, 3])].apply(lambda v: v * 2), [0, 4, 2, 6])


def test_divide_and_power_update_through_a_scatter_mul_of_ones():
  x = jnp.arange(5.0)
  _check_equal(x.at[jnp.array([1, 1, 3])].divide(2.0),
               np.array([0, 0.25, 2, 1.5, 4], np.float32))
  _check_equal(x.at[1:3].power(2), np.array([0, 1, 4, 3, 4], np.float32))
  ints = jnp.asarray(np.arange(5, dtype=np.int32))
  _check_equal(ints.at[1].divide(2), np.array([0, 0.5, 2, 3, 4], np.float32))
  _check_equal(ints.at[2].power(3), np.array([0, 1, 8, 3, 4], np.int32))
  names = [e.primitive.name for e in jax.make_jaxpr(lambda x: x.at[1].divide(2.0))(x).eqns]
  assert names[-2:] == ["scatter-mul", "div"]


def test_at_updates_with_traced_index_arrays():
  f = jax.jit(lambda x, i, y: x.at[i, ::2].set(y))
  x = np.zeros((3, 4), np.float32)
  out = f(x, np.array([2, -3], np.int32), np.ones((2, 2), np.float32))
  expected = x.copy()
  expected[[2, 0], ::2] = 1
  _check_equal(out, expected)


def test_out_of_bounds_updates_are_dropped_or_clipped():
  x = jnp.arange(5.0)
  np.testing.assert_array_equal(x.at[10].add(10), [0, 1, 2, 3, 4])
  np.testing.assert_array_equal(x.at[20].add(10, mode="clip"), [0, 1, 2, 3, 14])
  np.testing.assert_array_equal(x.at[jnp.array([-1, -6, 5])].set(9.0), [0, 1, 2, 3, 9])
  np.testing.assert_array_equal(x.at[jnp.array([-1, -6, 5])].set(9.0, mode="clip"),
                                [9, 1, 2, 3, 9])
  np.testing.assert_array_equal(x.at[-1].set(9.0, wrap_negative_indices=False), x)
  np.testing.assert_array_equal(x.at[jnp.array([4, 0])].set(7.0, mode="drop"),
                                [7, 1, 2, 3, 7])


def test_update_values_are_cast_to_the_array_dtype():
  x = jnp.asarray(np.arange(4, dtype=np.int32))
  out = x.at[1].set(7)
  assert out.dtype == np.int32 and not out.weak_type and int(out[1]) == 7
  with pytest.warns(FutureWarning, match="scatter inputs have incompatible types"):
    out = x.at[1].multiply(2.6)  # computed in float32, then cast back as JAX does
  np.testing.assert_array_equal(out, [0, 2, 2, 3])
  assert jnp.asarray(2.0).at[()].set(3.0).weak_type


def test_set_with_a_boolean_mask_and_none():
  x = _values((3, 4), np.float32)
  mask = x > 0
  _check_equal(jnp.asarray(x).at[mask].set(0.0), np.where(mask, 0, x))
  expected = x.copy()
  expected[1] = -1
  _check_equal(jnp.asarray(x).at[None, 1].set(-1.0), expected)
  expected = x.copy()
  expected[True] = 5  # a scalar boolean adds a dimension of size 1
  _check_equal(jnp.asarray(x).at[True].set(5.0), expected)


def test_update_with_values_of_the_wrong_shape_raises():
  with pytest.raises(ValueError, match="Incompatible shapes for broadcasting"):
    jnp.zeros((3, 3)).at[0].set(jnp.ones(2))


def test_at_repr():
  x = jnp.zeros(2)
  assert repr(x.at).startswith("_IndexUpdateHelper(") and "_IndexUpdateRef(" in repr(x.at[0])
