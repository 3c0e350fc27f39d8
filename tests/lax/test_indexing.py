"""Tests of refimpl/lax/indexing.py: slice, dynamic_slice, dynamic_update_slice,
gather and the scatter family, against NumPy."""

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import dtypes, lax
from conformance.strategies import shapes

GDN = lax.GatherDimensionNumbers
SDN = lax.ScatterDimensionNumbers
Mode = lax.GatherScatterMode


def _check_equal(actual, expected):
  assert actual.shape == expected.shape, (actual.shape, expected.shape)
  assert actual.dtype == expected.dtype
  if expected.dtype == dtypes.bfloat16:  # NumPy's comparisons do not know bfloat16 NaN
    actual, expected = np.asarray(actual, np.float32), expected.astype(np.float32)
  np.testing.assert_array_equal(np.asarray(actual), expected)


def _iota(shape, dtype=np.float32):
  return np.arange(int(np.prod(shape))).reshape(shape).astype(dtype)


# --- slice --------------------------------------------------------------------------------------

@st.composite
def slice_case(draw):
  shape = draw(shapes(max_dims=3))
  starts, limits, strides = [], [], []
  for d in shape:
    start = draw(st.integers(0, d))
    starts.append(start)
    limits.append(draw(st.integers(start, d)))
    strides.append(draw(st.integers(1, 3)))
  return _iota(shape), tuple(starts), tuple(limits), tuple(strides)


@given(slice_case(), st.booleans())
def test_slice_matches_numpy(case, with_strides):
  x, starts, limits, strides = case
  if not with_strides:
    strides = None
  expected = x[tuple(slice(s, l, st) for s, l, st
                     in zip(starts, limits, strides or (1,) * x.ndim))]
  _check_equal(lax.slice(x, starts, limits, strides), expected)
  _check_equal(jax.jit(lambda x: lax.slice(x, starts, limits, strides))(x), expected)


def test_slice_errors():
  x = np.ones((3, 4), np.float32)
  with pytest.raises(TypeError, match="start_indices must have length equal"):
    lax.slice(x, (0,), (1,))
  with pytest.raises(TypeError, match="less than or equal to operand shape"):
    lax.slice(x, (0, 0), (4, 1))
  with pytest.raises(TypeError, match="greater than or equal to zero"):
    lax.slice(x, (-1, 0), (1, 1))
  with pytest.raises(TypeError, match="greater than or equal to start_indices"):
    lax.slice(x, (2, 0), (1, 1))
  with pytest.raises(TypeError, match="strides must be positive"):
    lax.slice(x, (0, 0), (1, 1), (0, 1))


def test_slice_in_dim_and_index_in_dim():
  x = _iota((4, 3))
  _check_equal(lax.slice_in_dim(x, 1, 3), x[1:3])
  _check_equal(lax.slice_in_dim(x, -2, None, axis=1), x[:, -2:])
  _check_equal(lax.slice_in_dim(x, None, None, 2), x[::2])
  _check_equal(lax.index_in_dim(x, -1), x[-1:])
  _check_equal(lax.index_in_dim(x, 1, axis=1, keepdims=False), x[:, 1])
  with pytest.raises(IndexError, match="out of bounds for axis 0 with size 4"):
    lax.index_in_dim(x, 4)


def test_slice_jaxpr():
  jaxpr = jax.make_jaxpr(lambda x: lax.slice(x, (1,), (5,), (2,)))(np.ones(6, np.float32))
  assert str(jaxpr) == ("{ lambda ; a:f32[6]. let\n"
                        "    b:f32[2] = slice[limit_indices=(5,) start_indices=(1,) "
                        "strides=(2,)] a\n"
                        "  in (b,) }")


# --- dynamic_slice and dynamic_update_slice ------------------------------------------------------

@st.composite
def dynamic_slice_case(draw):
  shape = draw(shapes(min_dims=1, max_dims=3))
  sizes = tuple(draw(st.integers(0, d)) for d in shape)
  starts = tuple(draw(st.integers(-d - 3, d + 3)) for d in shape)
  return _iota(shape), starts, sizes


def _clamped(starts, shape, sizes):
  return [min(max(s, 0), d - n) for s, d, n in zip(starts, shape, sizes)]


def _wrapped(starts, shape):
  return [s + d if s < 0 else s for s, d in zip(starts, shape)]


@given(dynamic_slice_case())
def test_dynamic_slice_wraps_negative_starts_then_clamps(case):
  x, starts, sizes = case
  begin = _clamped(_wrapped(starts, x.shape), x.shape, sizes)
  expected = x[tuple(slice(b, b + n) for b, n in zip(begin, sizes))]
  _check_equal(lax.dynamic_slice(x, starts, sizes), expected)
  traced = jax.jit(lambda x, *s: lax.dynamic_slice(x, s, sizes))(x, *map(np.int32, starts))
  _check_equal(traced, expected)


@given(dynamic_slice_case())
def test_dynamic_slice_primitive_clamps_without_wrapping(case):
  x, starts, sizes = case
  begin = _clamped(starts, x.shape, sizes)
  expected = x[tuple(slice(b, b + n) for b, n in zip(begin, sizes))]
  out = lax.indexing.dynamic_slice_p.bind(x, *map(np.int32, starts), slice_sizes=sizes)
  _check_equal(out, expected)


@given(dynamic_slice_case())
def test_dynamic_update_slice_wraps_then_clamps(case):
  x, starts, sizes = case
  update = -1 - _iota(sizes)
  begin = _clamped(_wrapped(starts, x.shape), x.shape, sizes)
  expected = x.copy()
  expected[tuple(slice(b, b + n) for b, n in zip(begin, sizes))] = update
  _check_equal(lax.dynamic_update_slice(x, update, starts), expected)
  traced = jax.jit(lambda x, u, *s: lax.dynamic_update_slice(x, u, s))(
      x, update, *map(np.int32, starts))
  _check_equal(traced, expected)


def test_dynamic_slice_examples():
  x = _iota((3, 4), np.int32)
  _check_equal(lax.dynamic_slice(x, (1, 1), (2, 4)), x[1:3, 0:4])
  _check_equal(lax.dynamic_slice_in_dim(np.arange(5, dtype=np.int32), 4, 3),
               np.array([2, 3, 4], np.int32))
  _check_equal(lax.dynamic_index_in_dim(x, -1, axis=1, keepdims=False), x[:, 3])
  _check_equal(lax.dynamic_index_in_dim(x, 7), x[2:3])
  _check_equal(lax.dynamic_update_slice_in_dim(np.zeros(6, np.float32), np.ones(3, np.float32),
                                               5, axis=0),
               np.array([0, 0, 0, 1, 1, 1], np.float32))
  expected = np.zeros((4, 4), np.float32)
  expected[1] = 1
  _check_equal(lax.dynamic_update_index_in_dim(np.zeros((4, 4), np.float32),
                                               np.ones(4, np.float32), 1, 0), expected)
  with pytest.raises(ValueError, match="allow_negative_indices=False"):
    lax.dynamic_slice(x, (-1, 0), (1, 1), allow_negative_indices=False)


def test_dynamic_slice_unsigned_and_large_indices():
  x = np.arange(5, dtype=np.float32)
  _check_equal(lax.dynamic_slice(x, (np.uint32(4_000_000_000),), (2,)), x[3:])
  _check_equal(lax.dynamic_slice(x, (np.int32(-2_000_000_000),), (2,)), x[:2])


def test_dynamic_slice_errors():
  x = np.ones((3, 4), np.float32)
  with pytest.raises(TypeError, match="must be integers of the same type"):
    lax.dynamic_slice(x, (np.int32(0), np.int8(0)), (1, 1))
  with pytest.raises(TypeError, match="less than or equal to operand shape"):
    lax.dynamic_slice(x, (0, 0), (4, 1))
  with pytest.raises(ValueError, match="Length of slice indices"):
    lax.dynamic_slice(x, (0,), (1, 1))
  with pytest.raises(TypeError, match="same rank"):
    lax.dynamic_update_slice(x, np.ones(2, np.float32), (0, 0))
  with pytest.raises(TypeError, match="same dtypes"):
    lax.dynamic_update_slice(x, np.ones((1, 1), np.int32), (0, 0))


def test_dynamic_slice_jaxpr_wraps_traced_index():
  jaxpr = jax.make_jaxpr(lambda x, i: lax.dynamic_slice(x, (i, 1), (2, 2)))(
      np.ones((3, 4), np.float32), 1)
  assert str(jaxpr) == ("{ lambda ; a:f32[3,4] b:i32[]. let\n"
                        "    c:bool[] = lt b 0:i32[]\n"
                        "    d:i32[] = add b 3:i32[]\n"
                        "    e:i32[] = select_n c b d\n"
                        "    f:f32[2,2] = dynamic_slice[slice_sizes=(2, 2)] a e 1:i32[]\n"
                        "  in (f,) }")


# --- gather ------------------------------------------------------------------------------------

def test_dimension_numbers_and_modes():
  dnums = GDN(offset_dims=(0,), collapsed_slice_dims=(1,), start_index_map=(1,))
  assert repr(dnums) == ("GatherDimensionNumbers(offset_dims=(0,), collapsed_slice_dims=(1,), "
                         "start_index_map=(1,), operand_batching_dims=(), "
                         "start_indices_batching_dims=())")
  assert hash(dnums) == hash(GDN((0,), (1,), (1,), (), ()))
  assert SDN((), (0,), (0,)).scatter_indices_batching_dims == ()
  assert Mode.from_any(None) is Mode.FILL_OR_DROP
  assert Mode.from_any("fill") is Mode.from_any("drop") is Mode.FILL_OR_DROP
  assert Mode.from_any("clip") is Mode.CLIP and Mode.from_any(Mode.CLIP) is Mode.CLIP
  assert Mode.from_any("promise_in_bounds") is Mode.PROMISE_IN_BOUNDS
  with pytest.raises(ValueError, match='Unknown gather mode "wrap"'):
    Mode.from_any("wrap")


@st.composite
def window_case(draw):
  """A 2-D operand, window sizes and start index pairs (some out of bounds)."""
  rows, cols = draw(st.integers(1, 5)), draw(st.integers(1, 5))
  sizes = (draw(st.integers(0, rows)), draw(st.integers(0, cols)))
  batch = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3))
  starts = draw(hnp.arrays(np.int32, batch + (2,), elements=st.integers(-6, 8)))
  return _iota((rows, cols)), sizes, starts


def _windows_reference(x, sizes, starts, mode, fill=np.nan):
  """Each window of `x` of shape `sizes` at `starts` (clamped, or filled when partly out)."""
  out = np.empty(starts.shape[:-1] + sizes, x.dtype)
  for b in np.ndindex(*starts.shape[:-1]):
    i, j = starts[b]
    fits = 0 <= i <= x.shape[0] - sizes[0] and 0 <= j <= x.shape[1] - sizes[1]
    if mode is Mode.FILL_OR_DROP and not fits:
      out[b] = fill
      continue
    i, j = min(max(i, 0), x.shape[0] - sizes[0]), min(max(j, 0), x.shape[1] - sizes[1])
    out[b] = x[i:i + sizes[0], j:j + sizes[1]]
  return out


@pytest.mark.parametrize("mode", list(Mode))
@given(case=window_case())
def test_gather_windows_match_reference(mode, case):
  x, sizes, starts = case
  nb = starts.ndim - 1
  dnums = GDN(offset_dims=(nb, nb + 1), collapsed_slice_dims=(), start_index_map=(0, 1))
  expected = _windows_reference(x, sizes, starts, mode)
  _check_equal(lax.gather(x, starts, dnums, sizes, mode=mode), expected)
  _check_equal(jax.jit(lambda x, s: lax.gather(x, s, dnums, sizes, mode=mode))(x, starts),
               expected)


@given(hnp.arrays(np.int32, hnp.array_shapes(min_dims=0, max_dims=2, max_side=3),
                  elements=st.integers(-7, 7)))
def test_gather_take_columns_matches_numpy(indices):
  """Columns of a (3, 5) operand, with the window dimension before the batch ones."""
  x = _iota((3, 5))
  dnums = GDN(offset_dims=(0,), collapsed_slice_dims=(1,), start_index_map=(1,))
  out = lax.gather(x, indices[..., None], dnums, (3, 1), mode="clip")
  _check_equal(out, np.take(x, np.clip(indices, 0, 4), axis=1))
  filled = lax.gather(x, indices[..., None], dnums, (3, 1), mode="fill", fill_value=-1)
  expected = np.where((indices >= 0) & (indices < 5), np.take(x, np.clip(indices, 0, 4), axis=1),
                      -1).astype(np.float32)
  _check_equal(filled, expected)


def test_gather_batching_dims_match_take_along_axis():
  x = _iota((3, 5), np.int32)
  indices = np.array([[4], [0], [2]], np.int32)
  dnums = GDN(offset_dims=(), collapsed_slice_dims=(1,), start_index_map=(1,),
              operand_batching_dims=(0,), start_indices_batching_dims=(0,))
  _check_equal(lax.gather(x, indices, dnums, (1, 1)),
               np.take_along_axis(x, indices, axis=1)[:, 0])


@pytest.mark.parametrize("dtype, fill", [
    (np.float32, np.nan), (dtypes.bfloat16, np.nan), (np.complex64, np.nan),
    (np.int8, -128), (np.int32, -2**31), (np.uint8, 255), (np.uint32, 2**32 - 1),
    (np.bool_, True)])
def test_gather_default_fill_values(dtype, fill):
  x = np.zeros(3, dtype)
  dnums = GDN(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
  out = lax.gather(x, np.array([[1], [3]], np.int32), dnums, (1,), mode="fill")
  _check_equal(out, np.array([0, fill]).astype(dtype))


def test_gather_fill_replaces_whole_partly_out_of_bounds_window():
  x = _iota((4,))
  dnums = GDN(offset_dims=(1,), collapsed_slice_dims=(), start_index_map=(0,))
  out = lax.gather(x, np.array([[2], [3], [-1]], np.int32), dnums, (2,), mode="fill",
                   fill_value=-5)
  _check_equal(out, np.array([[2, 3], [-5, -5], [-5, -5]], np.float32))
  clipped = lax.gather(x, np.array([[3], [-1]], np.int32), dnums, (2,), mode="clip")
  _check_equal(clipped, np.array([[2, 3], [0, 1]], np.float32))
  default = lax.gather(x, np.array([[3]], np.int32), dnums, (2,))  # PROMISE_IN_BOUNDS, as JAX
  _check_equal(default, np.array([[2, 3]], np.float32))


def test_gather_errors():
  x = np.ones((3, 4), np.float32)
  idx = np.zeros((2, 1), np.int32)
  with pytest.raises(ValueError, match="indices must have an integer type"):
    lax.gather(x, idx.astype(np.float32), GDN((1,), (0,), (0,)), (1, 4))
  with pytest.raises(TypeError, match="start_index_map"):
    lax.gather(x, idx, GDN((1,), (0,), (0, 1)), (1, 4))
  with pytest.raises(TypeError, match="only collapse slice dims with bound 1"):
    lax.gather(x, idx, GDN((1,), (0,), (0,)), (2, 4))
  with pytest.raises(TypeError, match="offset dimension or explicitly collapsed"):
    lax.gather(x, idx, GDN((1,), (), (0,)), (1, 4))
  with pytest.raises(TypeError, match="Slice size at index 1"):
    lax.gather(x, idx, GDN((1,), (0,), (0,)), (1, 5))
  with pytest.raises(TypeError, match="offset_dims in gather op must be sorted"):
    lax.gather(x, idx, GDN((2, 1), (), (0,)), (1, 4))


def test_gather_jaxpr():
  dnums = GDN(offset_dims=(0,), collapsed_slice_dims=(1,), start_index_map=(1,))
  jaxpr = jax.make_jaxpr(lambda x, i: lax.gather(x, i, dnums, (3, 1), mode="fill"))(
      np.ones((3, 4), np.int32), np.ones((2, 1), np.int32))
  assert str(jaxpr) == (
      "{ lambda ; a:i32[3,4] b:i32[2,1]. let\n"
      "    c:i32[3,2] = gather[\n"
      "      dimension_numbers=GatherDimensionNumbers(offset_dims=(0,), "
      "collapsed_slice_dims=(1,), start_index_map=(1,), operand_batching_dims=(), "
      "start_indices_batching_dims=())\n"
      "      fill_value=-2147483648\n"
      "      indices_are_sorted=False\n"
      "      mode=GatherScatterMode.FILL_OR_DROP\n"
      "      slice_sizes=(3, 1)\n"
      "      unique_indices=False\n"
      "    ] a b\n"
      "  in (c,) }")


# --- scatter -----------------------------------------------------------------------------------

_SCATTERS = {
    "scatter": (lax.scatter, None), "scatter_add": (lax.scatter_add, np.add),
    "scatter_sub": (lax.scatter_sub, np.subtract), "scatter_mul": (lax.scatter_mul, np.multiply),
    "scatter_min": (lax.scatter_min, np.minimum), "scatter_max": (lax.scatter_max, np.maximum),
}


@st.composite
def row_scatter_case(draw):
  """Rows of a (rows, 3) operand updated at indices with repeats and some out of bounds."""
  rows = draw(st.integers(1, 5))
  indices = draw(hnp.arrays(np.int32, st.integers(0, 6), elements=st.integers(-2, rows + 1)))
  values = st.integers(-3, 3).map(float)
  updates = draw(hnp.arrays(np.float32, (len(indices), 3), elements=values))
  return _iota((rows, 3)), indices, updates


@pytest.mark.parametrize("name", list(_SCATTERS))
@pytest.mark.parametrize("mode", ["drop", "clip", "promise_in_bounds"])
@given(case=row_scatter_case())
def test_scatter_rows_match_ufunc_at(name, mode, case):
  x, indices, updates = case
  scatter, ufunc = _SCATTERS[name]
  if mode == "clip":
    indices, keep = np.clip(indices, 0, x.shape[0] - 1), slice(None)
  else:
    keep = (indices >= 0) & (indices < x.shape[0])  # out-of-bounds rows are dropped
  expected = x.copy()
  if ufunc is None:
    expected[indices[keep]] = updates[keep]  # NumPy: the last repeat wins, as here
  else:
    ufunc.at(expected, indices[keep], updates[keep])
  dnums = SDN(update_window_dims=(1,), inserted_window_dims=(0,),
              scatter_dims_to_operand_dims=(0,))
  _check_equal(scatter(x, indices[:, None], updates, dnums, mode=mode), expected)
  jitted = jax.jit(lambda x, i, u: scatter(x, i, u, dnums, mode=mode))
  _check_equal(jitted(x, indices[:, None], updates), expected)


def test_scatter_windows_are_dropped_or_clipped_whole():
  x = np.zeros(5, np.float32)
  dnums = SDN(update_window_dims=(1,), inserted_window_dims=(), scatter_dims_to_operand_dims=(0,))
  indices = np.array([[0], [4], [-1]], np.int32)
  updates = np.array([[1, 2], [3, 4], [5, 6]], np.float32)
  _check_equal(lax.scatter_add(x, indices, updates, dnums),
               np.array([1, 2, 0, 0, 0], np.float32))
  _check_equal(lax.scatter_add(x, indices, updates, dnums, mode="clip"),
               np.array([6, 8, 0, 3, 4], np.float32))


def test_scatter_with_batching_dims():
  x = np.zeros((2, 4), np.float32)
  dnums = SDN(update_window_dims=(), inserted_window_dims=(1,), scatter_dims_to_operand_dims=(1,),
              operand_batching_dims=(0,), scatter_indices_batching_dims=(0,))
  out = lax.scatter_add(x, np.array([[3], [1]], np.int32), np.array([5, 7], np.float32), dnums)
  _check_equal(out, np.array([[0, 0, 0, 5], [0, 7, 0, 0]], np.float32))


def test_scatter_min_max_propagate_nan():
  x = np.array([1.0, np.nan, 3.0], np.float32)
  dnums = SDN(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
  idx = np.array([[0], [1], [2]], np.int32)
  u = np.array([np.nan, 0.0, 2.0], np.float32)
  _check_equal(lax.scatter_min(x, idx, u, dnums), np.array([np.nan, np.nan, 2], np.float32))
  _check_equal(lax.scatter_max(x, idx, u, dnums), np.array([np.nan, np.nan, 3], np.float32))


def test_scatter_integer_overflow_wraps():
  x = np.array([127, 0], np.int8)
  dnums = SDN(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
  out = lax.scatter_add(x, np.array([[0], [0]], np.int32), np.array([1, 1], np.int8), dnums)
  _check_equal(out, np.array([-127, 0], np.int8))


def test_scatter_apply_applies_once_per_repeat():
  x = np.arange(4, dtype=np.float32)
  dnums = SDN(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
  out = lax.scatter_apply(x, np.array([[1], [1], [3], [9]], np.int32), lambda v: v * 2 + 1,
                          dnums, update_shape=(4,))
  _check_equal(out, np.array([0, 7, 2, 7], np.float32))
  jaxpr = str(jax.make_jaxpr(lambda x: lax.scatter_apply(
      x, np.array([[1]], np.int32), lambda v: v * 2, dnums, update_shape=(1,)))(x))
  assert "update_jaxpr={ lambda ; " in jaxpr and "mul" in jaxpr


def test_scatter_errors():
  x = np.zeros(3, np.float32)
  dnums = SDN(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
  idx = np.array([[0]], np.int32)
  with pytest.raises(TypeError, match="scatter-add does not accept dtype bool"):
    lax.scatter_add(np.zeros(3, bool), idx, np.ones(1, bool), dnums)
  with pytest.raises(TypeError, match="same dtypes"):
    lax.scatter(x, idx, np.ones(1, np.int32), dnums)
  with pytest.raises(ValueError, match="indices must have an integer type"):
    lax.scatter(x, idx.astype(np.float32), np.ones(1, np.float32), dnums)
  with pytest.raises(TypeError, match="Updates tensor must be of rank 1"):
    lax.scatter(x, idx, np.ones((1, 1), np.float32), dnums)
  with pytest.raises(TypeError, match="Bounds of the scatter dimensions of updates"):
    lax.scatter(x, idx, np.ones(2, np.float32), dnums)
  assert lax.scatter_max(np.zeros(2, bool), idx, np.ones(1, bool), dnums).dtype == bool


def test_scatter_jaxpr():
  dnums = SDN(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
  jaxpr = jax.make_jaxpr(lambda x, i, u: lax.scatter_mul(x, i, u, dnums))(
      np.ones(5, np.float32), np.ones((2, 1), np.int32), np.ones(2, np.float32))
  assert str(jaxpr) == (
      "{ lambda ; a:f32[5] b:i32[2,1] c:f32[2]. let\n"
      "    d:f32[5] = scatter-mul[\n"
      "      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(), "
      "inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), "
      "operand_batching_dims=(), scatter_indices_batching_dims=())\n"
      "      indices_are_sorted=False\n"
      "      mode=GatherScatterMode.FILL_OR_DROP\n"
      "      unique_indices=False\n"
      "      update_consts=()\n"
      "      update_jaxpr=None\n"
      "    ] a b c\n"
      "  in (d,) }")
  assert lax.indexing.scatter_sub_p.name == "scatter-sub"


def test_shape_ops_keep_operand_weak_type():
  weak = lax.broadcast_in_dim(jnp.asarray(1.0), (3,), ())
  assert weak.weak_type
  assert lax.slice(weak, (1,), (3,)).weak_type
  assert lax.dynamic_slice(weak, (1,), (2,)).weak_type
  dnums = GDN(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
  assert lax.gather(weak, np.array([[0]], np.int32), dnums, (1,)).weak_type
