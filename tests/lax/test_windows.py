"""Tests of refimpl/lax/windows.py: reduce_window (sum/max/min and generic),
select_and_scatter_add, select_and_scatter and select_and_gather_add, against
loops written from their definitions."""

import itertools

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
from refimpl import dtypes, lax
from refimpl.lax import windows
from refimpl.lax.special import fused_multiply_add
from conformance import strategies as S
from conformance.families.windows import numpy_reduce_window, resolve_padding

FLOATS_AND_INTS = S.INT_DTYPES + S.FLOAT_DTYPES


def _check_equal(actual, expected):
  assert actual.shape == expected.shape, (actual.shape, expected.shape)
  assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
  np.testing.assert_array_equal(np.asarray(actual).astype(np.float64),
                                np.asarray(expected).astype(np.float64))


def _identity(select_prim, dtype):
  if dtypes.is_integer(dtype):
    info = dtypes.iinfo(dtype)
    return info.min if select_prim is lax.ge_p else info.max
  return -np.inf if select_prim is lax.ge_p else np.inf


@st.composite
def operand_and_window(draw, dtype_list, dilations=True, string_padding=False, small=False,
                       **kwargs):
  """An operand (small integer values if `small`) and window params for it."""
  dtype = draw(st.sampled_from(dtype_list))
  shape = draw(S.shapes(min_dims=1, max_dims=2, max_side=4))
  x = draw(S.small_integer_arrays(dtype, shape, 3) if small else S.arrays(dtype, shape, **kwargs))
  params = draw(S.window_params(shape, string_padding=string_padding))
  if not dilations:
    del params["base_dilation"], params["window_dilation"]
  return x, params


# --- geometry ------------------------------------------------------------------------

def test_padtype_to_pads():
  assert lax.padtype_to_pads((5, 4), (3, 3), (2, 1), "SAME") == [(1, 1), (1, 1)]
  assert lax.padtype_to_pads((4,), (2,), (1,), "SAME") == [(0, 1)]
  assert lax.padtype_to_pads((4,), (2,), (1,), "SAME_LOWER") == [(1, 0)]
  assert lax.padtype_to_pads((4,), (2,), (1,), "same") == [(0, 1)]
  assert lax.padtype_to_pads((6,), (1,), (3,), "SAME") == [(0, 0)]
  assert lax.padtype_to_pads((3, 3), (2, 2), (1, 1), "VALID") == [(0, 0), (0, 0)]
  with pytest.raises(RuntimeError, match="Unrecognized padding type"):
    lax.padtype_to_pads((3,), (2,), (1,), "FULL")


def test_reduce_window_shape_tuple():
  assert lax.reduce_window_shape_tuple((5, 4), (2, 2), (1, 2), ((0, 0), (1, 1))) == (4, 3)
  # base dilation: 5 -> 9 positions; window dilation: 2 -> 3 positions
  assert lax.reduce_window_shape_tuple((5,), (2,), (1,), ((0, 0),), (2,), (2,)) == (7,)
  assert lax.reduce_window_shape_tuple((2,), (3,), (1,), ((0, 0),)) == (0,)
  assert lax.reduce_window_shape_tuple((0,), (1,), (1,), ((1, 0),)) == (1,)


# --- reduce_window_sum / max / min -------------------------------------------------------

@given(operand_and_window(S.FLOAT_DTYPES + S.INT_DTYPES + S.BOOL_DTYPES, string_padding=True))
def test_reduce_window_max_and_min_match_loops(case):
  x, params = case
  for computation, fold, prim in ((lax.max, np.maximum, "reduce_window_max"),
                                  (lax.min, np.minimum, "reduce_window_min")):
    identity = _identity(lax.ge_p if computation is lax.max else lax.le_p, x.dtype) \
        if x.dtype != np.bool_ else computation is lax.min
    init = np.asarray(identity, x.dtype)
    actual = lax.reduce_window(x, init, computation, **params)
    _check_equal(actual, numpy_reduce_window(x, init, fold, **params))
    jaxpr = jax.make_jaxpr(lambda x: lax.reduce_window(x, init, computation, **params))(x)
    assert jaxpr.eqns[0].primitive.name == prim


@given(st.sampled_from(FLOATS_AND_INTS + S.COMPLEX_DTYPES).flatmap(
    lambda dtype: S.shapes(min_dims=1, max_dims=3, max_side=3).flatmap(
        lambda shape: st.tuples(S.small_integer_arrays(dtype, shape),
                                S.window_params(shape)))))
def test_reduce_window_sum_matches_loop(case):
  x, params = case
  wide = np.complex128 if dtypes.is_complex(x.dtype) else np.int64
  expected = numpy_reduce_window(x, np.zeros((), x.dtype),
                                 lambda acc, v: acc + v.astype(wide), **params)
  _check_equal(windows.reduce_window_sum(x, **{**params, "padding": resolve_padding(
      params["padding"], x.shape, params["window_dimensions"], params["window_strides"],
      params["window_dilation"])}), expected)


def test_reduce_window_examples():
  x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
  np.testing.assert_array_equal(
      lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), "VALID"), [[12, 16]])
  np.testing.assert_array_equal(
      lax.reduce_window(x, -np.inf, lax.max, (1, 2), (1, 2), "SAME"), [[2, 3], [5, 6]])
  # base dilation puts holes between elements; they are skipped
  np.testing.assert_array_equal(
      lax.reduce_window(np.array([1., 2., 3.], np.float32), 0., lax.add, (2,), (1,),
                        ((0, 0),), base_dilation=(2,)), [1, 2, 2, 3])
  # window dilation spaces the window's elements
  np.testing.assert_array_equal(
      lax.reduce_window(np.arange(5.0, dtype=np.float32), 0., lax.add, (2,), (1,),
                        ((0, 0),), window_dilation=(3,)), [3, 5])


def test_reduce_window_edge_values():
  x = np.array([1.0, np.nan, 3.0, -np.inf], np.float32)
  np.testing.assert_array_equal(
      lax.reduce_window(x, -np.inf, lax.max, (2,), (1,), "VALID"), [np.nan, np.nan, 3.0])
  # a window over padding only gives the identity
  out = lax.reduce_window(np.float32([5.0]), -np.inf, lax.max, (1,), (1,), ((2, 0),))
  np.testing.assert_array_equal(out, [-np.inf, -np.inf, 5.0])
  ints = np.array([3, -2], np.int8)
  np.testing.assert_array_equal(
      lax.reduce_window(ints, np.int8(127), lax.min, (2,), (1,), ((1, 1),)), [3, -2, -2])
  np.testing.assert_array_equal(  # integer sums wrap
      lax.reduce_window(np.int8([100, 100]), np.int8(0), lax.add, (2,), (1,), "VALID"),
      np.int8([-56]))
  empty = lax.reduce_window(np.zeros((0, 3), np.float32), 0., lax.add, (1, 2), (1, 1),
                            "VALID")
  assert empty.shape == (0, 2)


def test_reduce_window_keeps_weak_type():
  weak = lax.convert_element_type(np.ones(3, np.float32), np.float32, weak_type=True)
  assert lax.reduce_window(weak, 0.0, lax.add, (2,), (1,), "VALID").weak_type
  assert not lax.reduce_window(np.ones(3, np.float32), 0.0, lax.add, (2,), (1,),
                               "VALID").weak_type


# --- reduce_window (generic) ---------------------------------------------------------------

@given(operand_and_window(FLOATS_AND_INTS))
def test_generic_reduce_window_folds_in_order(case):
  x, params = case
  # a non-commutative computation shows the fold order: acc * 3 + x (wrapping / rounding
  # in the operand's dtype at every step; a compiled computation, so float32 rounds the
  # product and the sum once: XLA's multiply-add contraction, docs/jaxpr.md)
  def computation(acc, v):
    return lax.add(lax.mul(acc, lax.full_like(acc, 3)), v)
  init = np.asarray(1, x.dtype)
  if x.dtype == np.float32:
    fold = lambda acc, v: fused_multiply_add(np.asarray(acc, x.dtype), np.float32(3),
                                             np.asarray(v, x.dtype))
  else:
    fold = lambda acc, v: np.asarray(acc * x.dtype.type(3) + v, x.dtype)
  with np.errstate(all="ignore"):
    expected = numpy_reduce_window(x, init, fold, **params)
  _check_equal(lax.reduce_window(x, init, computation, **params), expected)


@given(operand_and_window([np.float32, np.int32], allow_nan=False))
def test_generic_reduce_window_of_a_pair_is_argmax_pooling(case):
  x, params = case
  index = np.arange(x.size, dtype=np.int32).reshape(x.shape)

  def computation(acc, new):
    (av, ai), (bv, bi) = acc, new
    keep = lax.ge(av, bv)
    return lax.select(keep, av, bv), lax.select(keep, ai, bi)

  low = np.asarray(_identity(lax.ge_p, x.dtype), x.dtype)
  values, indices = lax.reduce_window((x, index), (low, np.int32(-1)), computation, **params)
  flat = x.ravel()

  def fold(acc, i):  # from the init pair: only a strictly larger value replaces
    return i if flat[i] > (low if acc < 0 else flat[acc]) else acc
  expected = numpy_reduce_window(index, np.int32(-1), fold, **params)
  _check_equal(indices, expected)
  _check_equal(values, np.append(flat, low)[expected])  # -1: no element, low


def test_reduce_window_monoid_recognition():
  x = np.arange(4, dtype=np.float32)
  name = lambda f: jax.make_jaxpr(f)(x).eqns[0].primitive.name
  assert name(lambda x: lax.reduce_window(x, 0., lax.add, (2,), (1,), "VALID")) == \
      "reduce_window_sum"
  assert name(lambda x: lax.reduce_window(x, 1., lax.add, (2,), (1,), "VALID")) == \
      "reduce_window"
  assert name(lambda x: lax.reduce_window(x, np.inf, lax.min, (2,), (1,), "VALID")) == \
      "reduce_window_min"
  assert name(lambda x: lax.reduce_window(x, 0., lax.max, (2,), (1,), "VALID")) == \
      "reduce_window"
  # an init value that is traced is not known to be the identity
  f = lambda x, init: lax.reduce_window(x, init, lax.add, (2,), (1,), "VALID")
  assert jax.make_jaxpr(f)(x, np.float32(0)).eqns[0].primitive.name == "reduce_window"
  # a non-identity init is folded once per window, not once per padding position
  np.testing.assert_array_equal(
      lax.reduce_window(x, 10., lax.add, (2,), (1,), ((1, 1),)), [10, 11, 13, 15, 13])


def test_reduce_window_jaxprs_print_as_jax():
  x = np.zeros((4, 6), np.float32)
  text = str(jax.make_jaxpr(
      lambda x: lax.reduce_window(x, -np.inf, lax.max, (2, 2), (2, 2), "VALID"))(x))
  assert text == """{ lambda ; a:f32[4,6]. let
    b:f32[2,3] = reduce_window_max[
      base_dilation=(1, 1)
      padding=((0, 0), (0, 0))
      window_dilation=(1, 1)
      window_dimensions=(2, 2)
      window_strides=(2, 2)
    ] a
  in (b,) }"""
  text = str(jax.make_jaxpr(
      lambda x: lax.reduce_window(x, 1.0, lax.mul, (2, 2), (1, 1), "VALID"))(x))
  assert "jaxpr={ lambda ; c:f32[] d:f32[]. let e:f32[] = mul c d in (e,) }" in text
  assert "consts=()" in text and "] a 1.0:f32[]" in text


def test_reduce_window_errors():
  x = np.zeros((3, 3), np.float32)
  with pytest.raises(TypeError, match="wrong number of window_dimensions"):
    lax.reduce_window(x, 0., lax.add, (2,), (1,), "VALID")
  with pytest.raises(TypeError, match="window_dimensions must have every element be "
                                      "strictly positive"):
    lax.reduce_window(x, 0., lax.add, (0, 1), (1, 1), "VALID")
  with pytest.raises(TypeError, match="inconsistent window_strides"):
    lax.reduce_window(x, 0., lax.add, (1, 1), (1,), ((0, 0), (0, 0)))
  with pytest.raises(TypeError, match="inconsistent dtypes for operands and init_values"):
    lax.reduce_window(x, np.int32(1), lax.mul, (1, 1), (1, 1), "VALID")
  with pytest.raises(ValueError, match="same tree structure"):
    lax.reduce_window((x, x), 0., lax.add, (1, 1), (1, 1), "VALID")
  with pytest.raises(TypeError, match="reduce_window_sum does not accept dtype bool"):
    windows.reduce_window_sum(np.zeros(3, bool), (1,), (1,), ((0, 0),))

  @jax.jit
  def closes_over_tracer(x, y):
    return lax.reduce_window(x, 1., lambda a, b: a * b * y, (1, 1), (1, 1), "VALID")
  with pytest.raises(NotImplementedError, match="can't close over Tracers"):
    closes_over_tracer(x, np.float32(2))


# --- select_and_scatter_add -------------------------------------------------------------------

def _loop_select_and_scatter_add(source, operand, select_prim, window_dimensions,
                                 window_strides, padding):
  """Each window selects its first maximum (ge) / minimum (le), padding reading
  the identity; the source value is added at the selection if it is in bounds."""
  select = np.greater_equal if select_prim is lax.ge_p else np.less_equal
  identity = _identity(select_prim, operand.dtype)
  out = np.zeros(operand.shape, np.float64 if dtypes.is_float(operand.dtype) else np.int64)
  for i in np.ndindex(*source.shape):
    for n, k in enumerate(itertools.product(*map(range, window_dimensions))):
      p = tuple(ii * s + kk - lo for ii, s, kk, (lo, _) in
                zip(i, window_strides, k, padding))
      inside = all(0 <= q < d for q, d in zip(p, operand.shape))
      value = operand[p] if inside else identity
      if n == 0 or not select(best_value, value):
        best, best_value = (p if inside else None), value
    if best is not None:
      out[best] += source[i]
  return out.astype(operand.dtype)


@given(operand_and_window(FLOATS_AND_INTS, dilations=False, small=True),
       st.sampled_from([lax.ge_p, lax.le_p]), st.data())
def test_select_and_scatter_add_matches_loop(case, select_prim, data):
  operand, params = case
  out_shape = lax.reduce_window_shape_tuple(operand.shape, **params)
  source = data.draw(S.small_integer_arrays(operand.dtype, out_shape))
  actual = windows.select_and_scatter_add(source, operand, select_prim, **params)
  _check_equal(actual, _loop_select_and_scatter_add(source, operand, select_prim, **params))


def test_select_and_scatter_add_examples():
  operand = np.array([[1, 5, 5, 2], [3, 0, 7, 7]], np.float32)
  source = np.array([[10, 20, 30]], np.float32)
  # ties go to the first element of the window (row-major)
  np.testing.assert_array_equal(
      windows.select_and_scatter_add(source, operand, lax.ge_p, (2, 2), (1, 1),
                                     ((0, 0), (0, 0))),
      [[0, 10, 0, 0], [0, 0, 50, 0]])
  np.testing.assert_array_equal(
      windows.select_and_scatter_add(source, operand, lax.le_p, (2, 2), (1, 1),
                                     ((0, 0), (0, 0))),
      [[0, 0, 0, 30], [0, 30, 0, 0]])
  # a NaN is replaced by the next element; padding reads -inf (never beats an element)
  x = np.array([np.nan, 1.0], np.float32)
  np.testing.assert_array_equal(
      windows.select_and_scatter_add(np.float32([1, 2, 4]), x, lax.ge_p, (2,), (1,),
                                     ((1, 1),)), [1, 6])
  bools = windows.select_and_scatter_add(np.array([True, False]), np.array([True, False]),
                                         lax.ge_p, (1,), (1,), ((0, 0),))
  np.testing.assert_array_equal(bools, [True, False])
  for source, expected in (([True, True], [False, True, False]),   # both windows select 1: OR
                           ([False, True], [False, True, False]),
                           ([False, False], [False, False, False])):
    bools = windows.select_and_scatter_add(np.array(source), np.array([False, True, False]),
                                           lax.ge_p, (2,), (1,), ((0, 0),))
    np.testing.assert_array_equal(bools, expected)


def test_select_and_scatter_add_jaxpr_and_errors():
  operand, source = np.zeros((4, 4), np.float32), np.zeros((2, 2), np.float32)
  f = lambda s, x: windows.select_and_scatter_add(s, x, lax.ge_p, (2, 2), (2, 2),
                                                  ((0, 0), (0, 0)))
  assert str(jax.make_jaxpr(f)(source, operand)) == """{ lambda ; a:f32[2,2] b:f32[4,4]. let
    c:f32[4,4] = select_and_scatter_add[
      padding=((0, 0), (0, 0))
      select_prim=ge
      window_dimensions=(2, 2)
      window_strides=(2, 2)
    ] a b
  in (c,) }"""
  with pytest.raises(TypeError, match="source must have the window output shape"):
    f(np.zeros((3, 2), np.float32), operand)
  with pytest.raises(TypeError, match="requires arguments to have the same dtypes"):
    f(source.astype(np.int32), operand)
  with pytest.raises(TypeError, match="select_prim must be ge_p or le_p"):
    windows.select_and_scatter_add(source, operand, lax.gt_p, (2, 2), (2, 2),
                                   ((0, 0), (0, 0)))


# --- select_and_scatter (generic) ---------------------------------------------------------------

@given(operand_and_window([np.float32, np.int32], dilations=False,
                          small=True), st.data())
def test_select_and_scatter_with_ge_and_add_matches_loop(case, data):
  operand, params = case
  out_shape = lax.reduce_window_shape_tuple(operand.shape, **params)
  source = data.draw(S.small_integer_arrays(operand.dtype, out_shape))
  actual = windows.select_and_scatter(operand, lax.ge, source=source,
                                      init_value=np.zeros((), operand.dtype),
                                      scatter=lax.add, **params)
  # padding is skipped, so with no padding value beating an element this is
  # select_and_scatter_add once padding reads the identity
  _check_equal(actual, _loop_select_and_scatter_add(source, operand, lax.ge_p, **params))


def test_select_and_scatter_generic_example():
  operand = np.array([3., 1., 4., 1., 5.], np.float32)
  source = np.array([2., 3., 7.], np.float32)
  # select the minimum (le), combine by max, starting from -1
  out = windows.select_and_scatter(operand, lax.le, (3,), (1,), ((0, 0),), source,
                                   np.float32(-1), lax.max)
  np.testing.assert_array_equal(out, [-1, 3, -1, 7, -1])
  f = lambda x, s: windows.select_and_scatter(x, lax.le, (3,), (1,), ((0, 0),), s,
                                              np.float32(0), lax.add)
  text = str(jax.make_jaxpr(f)(operand, source))
  assert "select_jaxpr={ lambda ; " in text and "le " in text
  assert "scatter_consts=()" in text and "select_consts=()" in text


# --- select_and_gather_add --------------------------------------------------------------------

@given(operand_and_window([np.float32, np.float16, np.int32], small=True),
       st.sampled_from([lax.ge_p, lax.le_p]), st.data())
def test_select_and_gather_add_matches_pair_fold(case, select_prim, data):
  operand, params = case
  params["padding"] = resolve_padding(params["padding"], operand.shape,
                                      params["window_dimensions"], params["window_strides"],
                                      params["window_dilation"])
  tangents = data.draw(S.small_integer_arrays(operand.dtype, operand.shape))
  flat, identity = operand.ravel(), _identity(select_prim, operand.dtype)
  beats = np.greater if select_prim is lax.ge_p else np.less

  def fold(acc, i):  # from (identity, 0): the first strict improvement replaces
    current = identity if acc < 0 else flat[acc]
    return i if beats(flat[i], current) else acc
  chosen = numpy_reduce_window(np.arange(operand.size).reshape(operand.shape), -1, fold,
                               **params)
  expected = np.append(tangents.ravel(), tangents.dtype.type(0))[chosen]  # -1: none, 0
  actual = windows.select_and_gather_add(tangents, operand, select_prim, **params)
  _check_equal(actual, expected)


def test_select_and_gather_add_errors():
  x = np.zeros((3,), np.float32)
  with pytest.raises(TypeError, match="tangents and operand shapes must match"):
    windows.select_and_gather_add(np.zeros(2, np.float32), x, lax.ge_p, (1,), (1,),
                                  ((0, 0),), (1,), (1,))
  text = str(jax.make_jaxpr(lambda t, x: windows.select_and_gather_add(
      t, x, lax.le_p, (2,), (1,), ((0, 0),), (1,), (1,)))(x, x))
  assert "select_and_gather_add[" in text and "select_prim=le" in text
