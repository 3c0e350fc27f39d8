"""Tests of refimpl/numpy/creation.py and scalar_types.py: array construction,
dtype inference, weak types, ranges and grids."""

import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import dtypes, errors
from conformance.strategies import shapes


def _check(actual, expected, dtype=None, weak_type=False):
  expected = np.asarray(expected)
  assert isinstance(actual, jax.Array)
  assert actual.shape == expected.shape, (actual.shape, expected.shape)
  assert actual.dtype == (expected.dtype if dtype is None else dtype), actual.dtype
  assert actual.weak_type == weak_type
  np.testing.assert_allclose(np.asarray(actual, np.float64),
                             expected.astype(np.float64), rtol=1e-6, atol=1e-6)


# --- array / asarray ---------------------------------------------------------------------------

@pytest.mark.parametrize("value, dtype, weak", [
    (1, np.int32, True), (1.0, np.float32, True), (1j, np.complex64, True),
    (True, np.bool_, False), ([1, 2], np.int32, False), ([1, 2.5], np.float32, False),
    ([True, 1], np.int32, False), ([[1], [2]], np.int32, False), ((1.0, 2), np.float32, False),
    (np.float64(1), np.float32, False), (np.arange(3, dtype=np.int64), np.int32, False),
    ([np.int8(1), 2], np.int8, False), ([np.float16(1), 2.0], np.float16, False),
    (range(3), np.int32, False), ([], np.float32, False),
])
def test_array_dtype_and_weak_type(value, dtype, weak):
  """Python scalars give weak arrays (as JAX's `jnp.array(3.5)`); containers do not."""
  with warnings.catch_warnings():
    warnings.simplefilter("error")  # canonicalizing NumPy float64 data does not warn
    out = jnp.array(value)
  _check(out, np.array(value), dtype, weak)
  assert jnp.asarray(value).weak_type == weak


def test_array_of_arrays_and_explicit_dtype():
  x = jnp.array([1.5, 2.5])
  assert jnp.asarray(x) is x
  _check(jnp.array([x, x]), [[1.5, 2.5], [1.5, 2.5]], np.float32)
  _check(jnp.array([x, [3, 4]]), [[1.5, 2.5], [3, 4]], np.float32)
  _check(jnp.array([1.7, -1.7], dtype=jnp.int32), [1, -1], np.int32)
  _check(jnp.array(2.0, dtype="float16"), np.float16(2))
  _check(jnp.array([1, 2], ndmin=3), [[[1, 2]]], np.int32)
  assert jnp.array(jnp.asarray(2.0)).weak_type


def test_array_64_bit_requests_warn_and_truncate():
  with pytest.warns(UserWarning, match="Explicitly requested dtype float64"):
    out = jnp.array([1, 2], dtype=np.float64)
  assert out.dtype == np.float32
  with pytest.warns(UserWarning, match="int64"):
    assert jnp.zeros(2, jnp.int64).dtype == np.int32


def test_array_errors():
  with pytest.raises(ValueError, match="None is not a valid value"):
    jnp.array([1, None])
  with pytest.raises(TypeError, match="Unexpected input type"):
    jnp.array("abc")
  with pytest.raises(OverflowError):
    jnp.array(2 ** 40)
  with pytest.raises(NotImplementedError, match="order='K'"):
    jnp.array([1], order="F")


def test_array_of_tracers_stacks_with_broadcast_in_dim_and_concatenate():
  args = [np.float32(i) for i in range(10)]
  jaxpr = jax.make_jaxpr(lambda *xs: jnp.sum(jnp.array(xs)))(*args)
  prims = [e.primitive.name for e in jaxpr.eqns]
  assert prims == ["broadcast_in_dim"] * 10 + ["concatenate", "reduce_sum"]
  assert jax.jit(lambda *xs: jnp.sum(jnp.array(xs)))(*args) == 45


def test_array_of_weak_tracers_converts_each_as_jax():
  jaxpr = jax.make_jaxpr(lambda x: jnp.sum(jnp.array(x)))(list(range(3)))
  prims = [e.primitive.name for e in jaxpr.eqns]
  # As jnp.stack: every element is converted, then every one expanded.
  assert prims == (["convert_element_type"] * 3 + ["broadcast_in_dim"] * 3
                   + ["concatenate", "reduce_sum"])


def test_array_of_a_tracer_copies():
  jaxpr = jax.make_jaxpr(jnp.array)(np.ones(3, np.float32))
  assert [e.primitive for e in jaxpr.eqns] == [jax.lax.copy_p]
  jaxpr = jax.make_jaxpr(jnp.asarray)(np.ones(3, np.float32))
  assert not jaxpr.eqns


def test_wide_concatenations_form_a_tree():
  jaxpr = jax.make_jaxpr(lambda *xs: jnp.array(xs))(*[np.float32(0)] * 20)
  concats = [e for e in jaxpr.eqns if e.primitive.name == "concatenate"]
  assert [len(e.invars) for e in concats] == [16, 4, 2]


# --- scalar types and constants -------------------------------------------------------------------

def test_scalar_types():
  x = jnp.float32(1.5)
  assert isinstance(x, jax.Array) and x.dtype == np.float32 and not x.weak_type
  assert np.dtype(jnp.float32) == np.float32
  assert jnp.zeros(3, jnp.bfloat16).dtype == dtypes.bfloat16
  assert isinstance(np.float32(1), jnp.float32)
  assert jnp.float32 == np.float32 and hash(jnp.float32) == hash(np.float32)
  assert jnp.issubdtype(jnp.bfloat16, jnp.floating)
  assert jnp.issubdtype(np.int8, jnp.integer) and not jnp.issubdtype(np.int8, jnp.floating)
  assert jnp.finfo(jnp.float32).eps == np.finfo(np.float32).eps
  assert jnp.iinfo(jnp.int8).max == 127
  assert jnp.int32(jnp.asarray(2.7)) == 2
  with pytest.warns(UserWarning, match="float64"):
    assert jnp.float64(1).dtype == np.float32
  assert jnp.bool_ is jnp.bool and jnp.float_ is jnp.float64
  assert jnp.pi == np.pi and jnp.newaxis is None and np.isnan(jnp.nan)


def test_ndarray_covers_arrays_and_tracers():
  assert isinstance(jnp.ones(2), jnp.ndarray)
  assert not isinstance(np.ones(2), jnp.ndarray)
  seen = []
  jax.make_jaxpr(lambda x: seen.append(isinstance(x, jnp.ndarray)) or x)(1.0)
  assert seen == [True]


# --- filled arrays --------------------------------------------------------------------------------

@given(shapes(), st.sampled_from([None, np.int8, np.float16, np.bool_, np.complex64]))
def test_filled_arrays(shape, dtype):
  expected_dtype = np.float32 if dtype is None else dtype
  _check(jnp.zeros(shape, dtype), np.zeros(shape), expected_dtype)
  _check(jnp.ones(shape, dtype), np.ones(shape), expected_dtype)
  _check(jnp.empty(shape, dtype), np.zeros(shape), expected_dtype)
  _check(jnp.full(shape, 3, dtype), np.full(shape, 3 if dtype != np.bool_ else 1),
         np.int32 if dtype is None else dtype, weak_type=dtype is None)
  like = np.zeros(shape, np.uint8)
  _check(jnp.zeros_like(like, dtype), np.zeros(shape), dtype or np.uint8)
  _check(jnp.ones_like(like, dtype), np.ones(shape), dtype or np.uint8)
  _check(jnp.full_like(like, 2, dtype), np.full(shape, 2 if dtype != np.bool_ else 1),
         dtype or np.uint8)
  struct = jax.ShapeDtypeStruct(shape, np.uint8)   # anything with a shape and a dtype, as in JAX
  _check(jnp.zeros_like(struct, dtype), np.zeros(shape), dtype or np.uint8)
  _check(jnp.ones_like(struct, dtype), np.ones(shape), dtype or np.uint8)
  _check(jnp.empty_like(struct, dtype), np.zeros(shape), dtype or np.uint8)
  _check(jnp.full_like(struct, 2, dtype), np.full(shape, 2 if dtype != np.bool_ else 1),
         dtype or np.uint8)


def test_filled_array_details():
  eqn, = jax.make_jaxpr(lambda: jnp.zeros((2, 3)))().eqns
  assert (eqn.primitive.name, eqn.params) == (
      "broadcast_in_dim", {"shape": (2, 3), "broadcast_dimensions": ()})
  assert str(eqn.invars[0]) == "0.0:f32[]"
  _check(jnp.full((2, 2), np.array([1, 2], np.int8)), [[1, 2], [1, 2]], np.int8)
  _check(jnp.full_like(np.zeros((2, 2)), np.array([1, 2])), [[1, 2], [1, 2]], np.float32)
  assert jnp.zeros_like(jnp.asarray(1.0)).weak_type
  assert not jnp.zeros_like(jnp.asarray(1.0), dtype=np.float32).weak_type
  with pytest.raises(TypeError, match=r"jnp.zeros\(\(2, 3\)\)"):
    jnp.zeros(2, 3)
  with pytest.raises(TypeError, match="full requires ndarray or scalar arguments"):
    jnp.full(2, [1, 2])
  with pytest.raises(TypeError, match="zeros_like requires ndarray or scalar arguments"):
    jnp.zeros_like([1, 2])
  with pytest.raises(TypeError, match="full_like requires .* got <class 'list'> at position 1"):
    jnp.full_like(jax.ShapeDtypeStruct((2,), np.float32), [1, 2])
  _check(jnp.full_like(jax.ShapeDtypeStruct((2, 2), np.int8), np.array([1, 2])),
         [[1, 2], [1, 2]], np.int8)
  _check(jax.jit(lambda: jnp.zeros_like(jax.eval_shape(jnp.sin, np.ones(3, np.float32))))(),
         np.zeros(3), np.float32)
  with pytest.raises(TypeError, match="Shapes must be 1D sequences of concrete values"):
    jax.jit(lambda n: jnp.zeros(n))(3)


# --- ranges ---------------------------------------------------------------------------------------

@given(st.integers(-5, 5), st.one_of(st.none(), st.integers(-5, 10)),
       st.one_of(st.none(), st.integers(1, 3), st.integers(-3, -1)))
def test_arange_integers_match_numpy(start, stop, step):
  expected = np.arange(start) if stop is None and step is None else \
      np.arange(start, stop if stop is not None else start + 1, step)
  actual = jnp.arange(start) if stop is None and step is None else \
      jnp.arange(start, stop if stop is not None else start + 1, step)
  _check(actual, expected, np.int32)


def test_arange_dtypes_and_lowering():
  _check(jnp.arange(5.0), np.arange(5.0), np.float32)
  _check(jnp.arange(254.0, 258.0), [254, 255, 256, 257], np.float32)
  _check(jnp.arange(0, 1, 0.25), np.arange(0, 1, 0.25), np.float32)
  _check(jnp.arange(3, dtype=np.uint8), np.arange(3), np.uint8)
  _check(jnp.arange(2.5), np.arange(2.5), np.float32)
  assert str(jax.make_jaxpr(lambda: jnp.arange(4))()) == (
      "{ lambda ; . let a:i32[4] = iota[dimension=0 dtype=int32 shape=(4,)] in (a,) }")
  assert str(jax.make_jaxpr(lambda: jnp.arange(0, 4))()) == (
      "{ lambda ; . let a:i32[4] = iota[dimension=0 dtype=int32 shape=(4,)] in (a,) }")


def test_arange_traced_argument_is_an_error():
  with pytest.raises(errors.ConcretizationTypeError, match="jnp.arange argument 'stop'"):
    jax.jit(jnp.arange)(3)
  with pytest.raises(ValueError, match="arguments must be scalars"):
    jnp.arange(np.arange(3))


@given(st.floats(-10, 10), st.floats(-10, 10), st.integers(0, 7), st.booleans())
def test_linspace_matches_numpy(start, stop, num, endpoint):
  actual, step = jnp.linspace(start, stop, num, endpoint=endpoint, retstep=True)
  expected, expected_step = np.linspace(start, stop, num, endpoint=endpoint, retstep=True)
  _check(actual, expected.astype(np.float32), np.float32)
  if num > 1:
    np.testing.assert_allclose(step, expected_step, rtol=1e-5, atol=1e-6)
  if num > 1 and endpoint:  # both ends are exact
    assert actual[0] == np.float32(start) and actual[-1] == np.float32(stop)


def test_linspace_arrays_axis_and_integer_dtype():
  start, stop = np.array([0.0, 1.0]), np.array([1.0, 3.0])
  _check(jnp.linspace(start, stop, 5, axis=-1), np.linspace(start, stop, 5, axis=-1), np.float32)
  _check(jnp.linspace(0, 10, 4, dtype=np.int32), np.linspace(0, 10, 4, dtype=np.int32), np.int32)
  with pytest.raises(ValueError, match="must be non-negative"):
    jnp.linspace(0, 1, -1)


def test_logspace_and_geomspace():
  _check(jnp.logspace(0, 3, 4), np.logspace(0, 3, 4).astype(np.float32), np.float32)
  _check(jnp.logspace(0, 3, 4, base=2.0, endpoint=False),
         np.logspace(0, 3, 4, base=2.0, endpoint=False).astype(np.float32), np.float32)
  _check(jnp.geomspace(1, 1000, 4), [1, 10, 100, 1000], np.float32)
  _check(jnp.geomspace(-1, -16, 5), np.geomspace(-1, -16, 5).astype(np.float32), np.float32)


# --- eye, tri, grids ------------------------------------------------------------------------------

@given(st.integers(0, 4), st.one_of(st.none(), st.integers(0, 4)), st.integers(-4, 4))
def test_eye_and_tri_match_numpy(n, m, k):
  _check(jnp.eye(n, m, k), np.eye(n, m, k), np.float32)
  _check(jnp.tri(n, m, k, dtype=np.int8), np.tri(n, m, k), np.int8)
  _check(jnp.identity(n, dtype=bool), np.identity(n), np.bool_)


def test_eye_lowering_and_errors():
  prims = [e.primitive.name for e in jax.make_jaxpr(lambda: jnp.eye(3))().eqns]
  assert prims == ["iota", "add", "iota", "eq", "convert_element_type"]
  with pytest.raises(ValueError, match="negative dimensions"):
    jnp.eye(-1)
  for k in (2**31, -2**40):   # diagonals beyond the matrix (and int32): all zeros
    _check(jnp.eye(2, 3, k), np.zeros((2, 3)), np.float32)


@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
def test_meshgrid_matches_numpy(indexing, sparse):
  xs = [np.arange(2), np.arange(3.0), np.arange(4)]
  for actual, expected in zip(jnp.meshgrid(*xs, indexing=indexing, sparse=sparse),
                              np.meshgrid(*xs, indexing=indexing, sparse=sparse)):
    _check(actual, expected, np.int32 if expected.dtype == np.int64 else np.float32)


def test_fromfunction_matches_numpy():
  _check(jnp.fromfunction(lambda i, j: i * 10 + j, (2, 3)),
         np.fromfunction(lambda i, j: i * 10 + j, (2, 3)), np.float32)
  _check(jnp.fromfunction(lambda i: i, 3, dtype=int), np.arange(3), np.int32)


def test_indices_matches_numpy():
  _check(jnp.indices((2, 3)), np.indices((2, 3)), np.int32)
  for actual, expected in zip(jnp.indices((2, 3), sparse=True), np.indices((2, 3), sparse=True)):
    _check(actual, expected, np.int32)


# --- broadcasting ---------------------------------------------------------------------------------

@given(shapes(max_dims=3), shapes(max_dims=3))
def test_broadcast_shapes_and_arrays_match_numpy(s1, s2):
  try:
    expected = np.broadcast_shapes(s1, s2)
  except ValueError:
    with pytest.raises(ValueError, match="Incompatible shapes"):
      jnp.broadcast_shapes(s1, s2)
    return
  assert jnp.broadcast_shapes(s1, s2) == expected
  a, b = np.ones(s1, np.float32), np.zeros(s2, np.int8)
  out_a, out_b = jnp.broadcast_arrays(a, b)
  _check(out_a, np.broadcast_to(a, expected))
  _check(out_b, np.broadcast_to(b, expected))
  _check(jnp.broadcast_to(a, expected), np.broadcast_to(a, expected))


def test_broadcast_to_errors():
  with pytest.raises(ValueError, match="Incompatible shapes for broadcasting"):
    jnp.broadcast_to(np.ones(3), (4,))
  with pytest.raises(ValueError, match="fewer dimensions"):
    jnp.broadcast_to(np.ones((2, 3)), (3,))
  _check(jnp.broadcast_to(2, 3), [2, 2, 2], np.int32, weak_type=True)


def test_copy():
  x = jnp.ones(3)
  y = jnp.copy(x)
  assert y is not x
  _check(y, np.ones(3), np.float32)


def test_dtypes_with_x64_enabled():
  with jax.enable_x64():
    assert jnp.array(1.0).dtype == np.float64 and jnp.arange(3).dtype == np.int64
    assert jnp.zeros(2).dtype == np.float64 and jnp.eye(2).dtype == np.float64
    assert jnp.array(np.arange(2.0)).dtype == np.float64
  assert jnp.array(np.arange(2.0)).dtype == np.float32
