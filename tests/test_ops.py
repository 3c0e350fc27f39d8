"""`jax.ops` segment reductions against NumPy's unbuffered `ufunc.at`: out-of-range
ids (negative ones included) dropped, empty segments holding the identity, with
buckets, under jit, vmap and grad, and JAX's errors."""

import inspect

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import ops
from refimpl.errors import ConcretizationTypeError
from refimpl.sharding import NamedSharding, PartitionSpec
from refimpl.test_util import check_grads

_UFUNCS = {"segment_sum": np.add, "segment_prod": np.multiply,
           "segment_max": np.maximum, "segment_min": np.minimum}
_DTYPES = [np.float32, np.float16, np.int32, np.int8, np.uint8, np.bool_]   # bool: max, min


def _identity(name, dtype):
  if name == "segment_sum":
    return 0
  if name == "segment_prod":
    return 1
  if dtype == np.bool_:
    return name == "segment_min"
  if np.issubdtype(dtype, np.integer):
    return np.iinfo(dtype).max if name == "segment_min" else np.iinfo(dtype).min
  return np.inf if name == "segment_min" else -np.inf


def _reference(name, data, ids, num_segments):
  """`_UFUNCS[name].at` into the identity, the ids outside [0, num_segments) dropped."""
  out = np.full((num_segments,) + data.shape[1:], _identity(name, data.dtype), data.dtype)
  keep = (ids >= 0) & (ids < num_segments)
  _UFUNCS[name].at(out, ids[keep], data[keep])
  return out


@st.composite
def _cases(draw, max_rows=10):
  """A reduction, data of small integers (exact in every dtype), ids with
  out-of-range and negative ones, num_segments (None: from the ids) and a
  bucket size."""
  name = draw(st.sampled_from(sorted(_UFUNCS)))
  dtype = draw(st.sampled_from(_DTYPES if name in ("segment_max", "segment_min")
                               else [d for d in _DTYPES if d != np.bool_]))
  rows = draw(st.integers(1, max_rows))
  trailing = draw(st.sampled_from([(), (2,)]))
  size = rows * int(np.prod(trailing))
  data = np.asarray(draw(st.lists(st.integers(-2, 2), min_size=size, max_size=size)))
  data = data.reshape((rows,) + trailing)
  data = data != 0 if dtype == np.bool_ else data.astype(dtype)
  num_segments = draw(st.one_of(st.none(), st.integers(0, 5)))
  ids = np.asarray(draw(st.lists(st.integers(-2, 7), min_size=rows, max_size=rows)), np.int32)
  bucket_size = draw(st.one_of(st.none(), st.integers(1, 4)))
  return name, data, ids, num_segments, bucket_size


def _check(got, name, data, ids, num_segments):
  expected = _reference(name, data, ids, num_segments)
  assert got.dtype == data.dtype and got.shape == expected.shape
  np.testing.assert_array_equal(np.asarray(got), expected)


@given(case=_cases())
def test_segment_reductions_match_numpy_ufunc_at(case):
  name, data, ids, num_segments, bucket_size = case
  reduce = getattr(ops, name)
  if num_segments is None and ids.max() < -1:
    with pytest.raises(ValueError, match="num_segments must be non-negative"):
      reduce(data, ids, bucket_size=bucket_size)
    return
  got = reduce(data, ids, num_segments, bucket_size=bucket_size)
  _check(got, name, data, ids, ids.max() + 1 if num_segments is None else num_segments)


@given(case=_cases())
def test_segment_reductions_under_jit_with_static_num_segments(case):
  name, data, ids, num_segments, bucket_size = case
  num_segments = 3 if num_segments is None else num_segments
  f = jax.jit(getattr(ops, name), static_argnames=("num_segments", "bucket_size"))
  got = f(data, ids, num_segments=num_segments, bucket_size=bucket_size)
  _check(got, name, data, ids, num_segments)


@settings(max_examples=15)
@given(case=_cases(), data=st.data())
def test_segment_reductions_under_vmap_of_data_and_ids(case, data):
  name, rows, ids, num_segments, bucket_size = case
  num_segments = 4 if num_segments is None else num_segments
  batch_rows = np.stack([rows, rows[::-1]])
  batch_ids = np.stack([ids, np.asarray(data.draw(st.permutations(ids)), np.int32)])
  f = jax.vmap(lambda x, i: getattr(ops, name)(x, i, num_segments, bucket_size=bucket_size))
  got = f(batch_rows, batch_ids)
  for k in range(2):
    _check(got[k], name, batch_rows[k], batch_ids[k], num_segments)


@settings(max_examples=15)
@given(ids=st.lists(st.integers(-2, 6), min_size=1, max_size=8),
       bucket_size=st.one_of(st.none(), st.integers(1, 3)))
def test_grad_of_segment_sum_gathers_the_cotangent_of_each_rows_segment(ids, bucket_size):
  ids = np.asarray(ids, np.int32)
  weights = np.arange(1.0, 5.0, dtype=np.float32)   # 4 segments
  data = np.linspace(-1, 1, 3 * len(ids), dtype=np.float32).reshape(len(ids), 3)
  loss = lambda x: jnp.sum(weights[:, None] * ops.segment_sum(x, ids, 4, bucket_size=bucket_size))
  grad = jax.grad(loss)(data)
  valid = (ids >= 0) & (ids < 4)
  expected = np.where(valid, weights[np.clip(ids, 0, 3)], 0)[:, None] * np.ones(3, np.float32)
  np.testing.assert_array_equal(np.asarray(grad), expected)
  np.testing.assert_array_equal(np.asarray(jax.jit(jax.grad(loss))(data)), expected)


@pytest.mark.parametrize("name", ["segment_max", "segment_min", "segment_sum"])
def test_derivatives_of_each_reduction_pass_check_grads(name):
  data = np.array([0.5, -1.25, 2.0, 0.75, 1.5], np.float32)   # distinct: max/min unique
  ids = np.array([1, 0, 1, 5, 1], np.int32)
  check_grads(lambda x: getattr(ops, name)(x, ids, 3, bucket_size=2), (data,), 2)


def test_segment_prod_differentiates_only_with_unique_indices_as_in_jax():
  data = np.array([0.5, -1.25, 2.0, 0.75], np.float32)
  check_grads(lambda x: ops.segment_prod(x, np.array([2, 0, 5, 1]), 3, unique_indices=True),
              (data,), 2)
  with pytest.raises(NotImplementedError, match="unique_indices=True"):
    jax.grad(lambda x: ops.segment_prod(x, np.array([0, 0, 1, 1]), 2).sum())(data)


def test_jax_docstring_examples():
  data, ids = jnp.arange(5), jnp.array([0, 0, 1, 1, 2])
  out = ops.segment_sum(data, ids)
  assert out.dtype == jnp.int32 and out.tolist() == [1, 5, 4]
  assert jax.jit(ops.segment_sum, static_argnums=2)(data, ids, 3).tolist() == [1, 5, 4]
  data6, ids6 = jnp.arange(6), jnp.array([0, 0, 1, 1, 2, 2])
  assert ops.segment_prod(data6, ids6).tolist() == [0, 6, 20]
  assert ops.segment_max(data6, ids6).tolist() == [1, 3, 5]
  assert ops.segment_min(data6, ids6).tolist() == [0, 2, 4]


def test_mode_clip_clamps_out_of_range_ids_to_the_ends():
  data, ids = np.arange(1.0, 6.0, dtype=np.float32), np.array([0, 5, 1, -1, 2], np.int32)
  np.testing.assert_array_equal(np.asarray(ops.segment_sum(data, ids, 3, mode="clip")),
                                [1 + 4, 3, 2 + 5])
  np.testing.assert_array_equal(
      np.asarray(ops.segment_max(data, ids, 3, mode=jax.lax.GatherScatterMode.CLIP)), [4, 3, 5])


def test_num_segments_must_be_static_under_jit():
  data, ids = jnp.arange(3.0), jnp.array([0, 1, 1])
  with pytest.raises(ConcretizationTypeError, match="num_segments"):
    jax.jit(ops.segment_sum)(data, ids)
  with pytest.raises(ConcretizationTypeError, match="num_segments"):
    jax.jit(ops.segment_max)(data, ids, 2)


def test_errors():
  with pytest.raises(ValueError, match="num_segments must be non-negative"):
    ops.segment_sum(jnp.ones(2), jnp.array([-3, -2]))
  with pytest.raises(ValueError, match="num_segments must be non-negative"):
    ops.segment_min(jnp.ones(2), jnp.array([0, 1]), -1)
  with pytest.raises(TypeError, match="segment_prod requires ndarray or scalar arguments"):
    ops.segment_prod([1.0, 2.0], jnp.array([0, 1]))
  with pytest.raises(TypeError, match="`out_sharding` argument of jax.ops.segment_sum"):
    ops.segment_sum(jnp.ones(2), jnp.array([0, 1]), 2, out_sharding="x")


def test_a_named_out_sharding_changes_nothing():
  """As other operations' `out_sharding` (tests/test_signature_parameters.py):
  on one device a NamedSharding places the result where it is."""
  named = NamedSharding(jax.make_mesh((1,), ("x",)), PartitionSpec())
  data, ids = jnp.arange(4.0), jnp.array([0, 1, 1, 0])
  for name in _UFUNCS:
    np.testing.assert_array_equal(getattr(ops, name)(data, ids, 2, out_sharding=named),
                                  getattr(ops, name)(data, ids, 2))


def test_signatures_are_jaxs():
  expected = ["data", "segment_ids", "num_segments", "indices_are_sorted", "unique_indices",
              "bucket_size", "mode", "out_sharding"]
  defaults = [None, False, False, None, None, None]
  for name in _UFUNCS:
    params = list(inspect.signature(getattr(ops, name)).parameters.values())
    assert [p.name for p in params] == expected
    assert [p.default for p in params[2:]] == defaults
  assert sorted(ops.__all__) == sorted(_UFUNCS)
