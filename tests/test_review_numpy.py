"""Review findings for refimpl.numpy / refimpl.lax and the Array class: each
test asserts JAX's behaviour (stated in the test), derived from NumPy or from
JAX's documented semantics."""

import copy

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp


# --- jnp.pad: linear_ramp, statistics and callable modes (JAX supports all of NumPy's) -----

PAD_CASES = [
    (np.arange(3.0), 2, dict(mode="linear_ramp", end_values=(5, -1))),
    (np.arange(3), 2, dict(mode="linear_ramp", end_values=(5, -1))),
    (np.arange(12.0).reshape(3, 4), ((1, 2), (3, 0)),
     dict(mode="linear_ramp", end_values=((1, 2), (3, 4)))),
    (np.arange(12.0).reshape(3, 4), ((1, 2), (3, 1)), dict(mode="linear_ramp")),
    (np.arange(5.0), 2, dict(mode="maximum", stat_length=2)),
    (np.arange(5.0), (2, 3), dict(mode="minimum", stat_length=(1, 10))),
    (np.array([1, 2, 4]), 1, dict(mode="mean")),                  # mean 7/3 rounds to 2
    (np.array([1, 2, 4, 7]), (2, 1), dict(mode="median", stat_length=2)),
    (np.arange(12).reshape(3, 4), ((1, 2), (3, 0)),
     dict(mode="mean", stat_length=((1, 2), (3, 1)))),
    (np.arange(12.0).reshape(3, 4), ((1, 2), (3, 0)), dict(mode="median")),
    (np.arange(12.0).reshape(3, 4), 1, dict(mode="maximum")),
]


@pytest.mark.parametrize("a, width, kwargs", PAD_CASES)
def test_pad_ramp_and_statistic_modes_match_numpy(a, width, kwargs):
  out = jnp.pad(jnp.asarray(a), width, **kwargs)
  expected = np.pad(a, width, **kwargs)
  assert out.dtype == jnp.asarray(a).dtype
  np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-6)


@given(st.lists(st.floats(-100, 100, width=32), min_size=1, max_size=6),
       st.integers(0, 4), st.integers(0, 4), st.integers(1, 7),
       st.sampled_from(["maximum", "minimum", "mean", "median"]))
def test_pad_statistic_modes_property(values, before, after, stat_length, mode):
  a = np.array(values, np.float32)
  out = jax.jit(lambda x: jnp.pad(x, (before, after), mode=mode, stat_length=stat_length))(a)
  np.testing.assert_allclose(np.asarray(out),
                             np.pad(a, (before, after), mode=mode, stat_length=stat_length),
                             rtol=1e-5, atol=1e-5)


def test_pad_callable_mode_returns_the_padded_vector():
  # JAX's callable takes (vector, (before, after), axis, kwargs) and RETURNS the
  # vector (NumPy's modifies it in place); both give the same array.
  def jax_fill(v, width, axis, kwargs):
    return v.at[:width[0]].set(kwargs["val"]).at[v.shape[0] - width[1]:].set(-1)

  def numpy_fill(v, width, axis, kwargs):
    v[:width[0]] = kwargs["val"]
    v[v.shape[0] - width[1]:] = -1

  a = np.arange(6).reshape(2, 3)
  np.testing.assert_array_equal(np.asarray(jnp.pad(jnp.asarray(a), (1, 2), jax_fill, val=7)),
                                np.pad(a, (1, 2), numpy_fill, val=7))


def test_pad_argument_errors():
  x = jnp.arange(3.0)
  with pytest.raises(ValueError, match="stat_length of 0"):
    jnp.pad(x, 1, mode="maximum", stat_length=0)
  with pytest.raises(ValueError, match="unsupported keyword arguments"):
    jnp.pad(x, 1, mode="mean", end_values=1)
  with pytest.raises(NotImplementedError, match="Unimplemented padding mode"):
    jnp.pad(x, 1, mode="bogus")
  assert jnp.pad(jnp.array(3.0), 2, mode="mean").shape == ()  # JAX returns a 0-d array as is


# --- jnp.einsum: the interleaved (operand, sublist, ...) form -----------------------------

EINSUM_INTERLEAVED = [
    lambda a, b, v, m: (a, [0, 1], b, [1, 2]),
    lambda a, b, v, m: (a, [0, 1], b, [1, 2], [2, 0]),
    lambda a, b, v, m: (a, [0, 1], v, [1], [0]),
    lambda a, b, v, m: (a, [Ellipsis, 1], v, [1]),
    lambda a, b, v, m: (m, [5, 5]),
    lambda a, b, v, m: (m, [30, 2]),      # implicit output ordered by index number
    lambda a, b, v, m: (a, [1, 0]),
]


@pytest.mark.parametrize("make_args", EINSUM_INTERLEAVED)
def test_einsum_interleaved_form_matches_numpy(make_args):
  arrays = (np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4), np.arange(3.0),
            np.arange(9.0).reshape(3, 3))
  args = make_args(*arrays)
  out = jnp.einsum(*[jnp.asarray(x) if isinstance(x, np.ndarray) else x for x in args])
  np.testing.assert_allclose(np.asarray(out), np.einsum(*args))


def test_einsum_interleaved_rejects_bad_index():
  with pytest.raises(ValueError):
    jnp.einsum(jnp.ones((2, 2)), [0, 60])


# --- jnp.unique accepts NumPy 2.3's `sorted` (JAX: "sorted: unused by JAX") ---------------

def test_unique_accepts_sorted_argument():
  x = jnp.array([3, 1, 3, 2])
  np.testing.assert_array_equal(np.asarray(jnp.unique(x, sorted=False)), [1, 2, 3])
  np.testing.assert_array_equal(np.asarray(jnp.unique(x, sorted=True)), [1, 2, 3])


# --- Array methods and protocols ----------------------------------------------------------

def test_builtin_round_without_ndigits_gives_integers():
  # JAX's __round__: `round(x)` casts to int (as round(7.5) is an int); round(x, n) does not.
  out = round(jnp.array([2.5, 3.5, -0.5, 1.2]))
  assert out.dtype == jnp.int32 and not out.weak_type
  np.testing.assert_array_equal(np.asarray(out), [2, 4, 0, 1])  # half to even
  assert round(jnp.array(2.567), 2).dtype == jnp.float32
  assert float(round(jnp.array(2.567), 2)) == pytest.approx(2.57)


VIEW_CASES = [
    (np.arange(6, dtype=np.int16).reshape(2, 3), np.int8),
    (np.arange(8, dtype=np.int8).reshape(2, 4), np.int16),
    (np.array([1.5, -2.0], np.float32), np.int32),
    (np.array([1.5, -2.0], np.float32), np.uint8),
    (np.array([True, False, True, True]), np.int16),
    (np.array([1, 0, 1], np.int8), np.bool_),
    (np.array([1 + 2j, 3 - 1j], np.complex64), np.float32),
    (np.array([1.0, 2, 3, 4], np.float32), np.complex64),
    (np.array(1.5, np.float32), np.int32),
    (np.array([1.0, 2.0], np.float16), ml_dtypes.bfloat16),
]


@pytest.mark.parametrize("a, dtype", VIEW_CASES)
def test_array_view_matches_numpy(a, dtype):
  expected = a.view(dtype)
  for out in (jnp.asarray(a).view(dtype), jax.jit(lambda x: x.view(dtype))(jnp.asarray(a))):
    assert out.shape == expected.shape and out.dtype == expected.dtype
    np.testing.assert_array_equal(np.asarray(out), expected)


def test_array_view_errors():
  with pytest.raises(ValueError, match="0d array"):
    jnp.array(1.0).view(jnp.int16)
  with pytest.raises(ValueError, match="divisor"):
    jnp.arange(3, dtype=jnp.int8).view(jnp.int16)
  x = jnp.arange(3)
  assert x.view() is x


def test_array_methods_that_forward_to_jnp():
  x = jnp.array([3.0, 1.0, 2.0, 7.0])
  np.testing.assert_array_equal(np.asarray(jnp.sort(x).searchsorted(2.5)), 2)
  assert float(x.ptp()) == 6.0
  np.testing.assert_array_equal(np.asarray(x.compress(jnp.array([True, False, True]))),
                                [3.0, 2.0])
  np.testing.assert_array_equal(
      np.asarray(x.compress(jnp.array([True, False, False, False]), size=3, fill_value=-1)),
      [3.0, -1, -1])
  choices = [jnp.array([10, 11]), jnp.array([20, 21])]
  np.testing.assert_array_equal(np.asarray(jnp.array([1, 0]).choose(choices)), [20, 11])
  part = np.asarray(x.argpartition(1))
  assert set(part[:2]) == {1, 2}   # the two smallest come first


def test_array_flat_is_not_implemented():
  with pytest.raises(NotImplementedError, match="flatten"):
    jnp.arange(3).flat


def test_array_device_properties():
  x = jnp.arange(3)
  assert x.is_fully_replicated is True     # a property in JAX, not a method
  assert x.device in x.devices()
  np.testing.assert_array_equal(np.asarray(x.to_device(x.device)), [0, 1, 2])
  assert copy.deepcopy(x) is not None


def test_item_and_tolist_of_a_tracer_raise_concretization_error():
  # JAX: item() uses concrete_or_error ("This occurred in the item() method of
  # jax.Array"); Tracer.tolist raises ConcretizationTypeError too.
  for method in ("item", "tolist"):
    with pytest.raises(jax.errors.ConcretizationTypeError, match=f"{method}\\(\\) method"):
      jax.jit(lambda x: getattr(x, method)())(jnp.ones(1))
  assert jnp.ones(2).tolist() == [1.0, 1.0] and jnp.ones(1).item() == 1.0
