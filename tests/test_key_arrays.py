"""Typed PRNG key arrays (dtype key<fry>) through lax, jnp, indexing and the
transformations: shape operations move whole keys (their uint32 data keeps its
trailing key axis), equality compares keys, arithmetic is refused, as in JAX 0.10."""

import copy
import pickle

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from conformance.strategies import index_expressions, shapes
from refimpl import dtypes, lax, prng

IMPL = prng.threefry_prng_impl


def key(seed=1701):
  return prng.random_seed(seed, IMPL)


def keys(*shape, seed=0):
  return prng.random_split(key(seed), shape)


def data(k):
  """The uint32 data of key array `k` as NumPy, shape (*k.shape, 2)."""
  return np.asarray(prng.random_unwrap(k))


def wrap(d):
  return prng.random_wrap(jnp.asarray(np.asarray(d, np.uint32)), impl=IMPL)


def assert_keys(actual, expected_data):
  """`actual` is a key array whose data is `expected_data`."""
  assert isinstance(actual, prng.PRNGKeyArray), type(actual)
  assert str(actual.dtype) == "key<fry>"
  expected_data = np.asarray(expected_data)
  assert actual.shape == expected_data.shape[:-1]
  np.testing.assert_array_equal(data(actual), expected_data)


both = pytest.mark.parametrize("mode", ["eager", "jit"])


def run(mode, f, *args):
  return (f if mode == "eager" else jax.jit(f))(*args)


# --- properties ---------------------------------------------------------------

def test_properties():
  ks = keys(3, 4)
  assert ks.shape == (3, 4) and ks.ndim == 2 and ks.size == 12
  assert str(ks.dtype) == "key<fry>" and ks.dtype.itemsize == 8
  assert ks.itemsize == 8
  assert len(ks) == 3
  assert dtypes.issubdtype(ks.dtype, dtypes.prng_key)
  assert dtypes.issubdtype(ks.dtype, dtypes.extended)
  assert not dtypes.issubdtype(ks.dtype, np.integer)
  assert isinstance(ks, jax.Array)
  with pytest.raises(TypeError, match="Cannot interpret"):   # an array is not a dtype
    dtypes.issubdtype(ks, dtypes.prng_key)


def test_properties_under_jit():
  ks = keys(3, 4)
  seen = {}

  def f(k):
    seen.update(shape=k.shape, ndim=k.ndim, size=k.size, dtype=k.dtype, itemsize=k.itemsize)
    return k.copy()
  assert_keys(jax.jit(f)(ks), data(ks))
  assert seen == dict(shape=(3, 4), ndim=2, size=12, dtype=ks.dtype, itemsize=8)


def test_repr_and_jaxpr_types():
  assert repr(key()) == "Array((), dtype=key<fry>) overlaying:\n[   0 1701]"
  text = str(jax.make_jaxpr(lambda k: k.T)(keys(3, 4)))
  assert "a:key<fry>[3,4]" in text and "transpose[permutation=(1, 0)] a" in text
  assert "key<fry>[4,3]" in text


# --- shape operations -----------------------------------------------------------

SHAPE_OPS = {
    # name: (function of keys of shape (3, 4), same function of their data)
    "jnp.reshape": (lambda k: jnp.reshape(k, (2, 6)), lambda d: d.reshape(2, 6, 2)),
    "method reshape": (lambda k: k.reshape(4, 3), lambda d: d.reshape(4, 3, 2)),
    "reshape -1": (lambda k: k.reshape(-1), lambda d: d.reshape(12, 2)),
    "ravel": (jnp.ravel, lambda d: d.reshape(12, 2)),
    "flatten": (lambda k: k.flatten(), lambda d: d.reshape(12, 2)),
    "T": (lambda k: k.T, lambda d: d.transpose(1, 0, 2)),
    "transpose": (lambda k: k.transpose(), lambda d: d.transpose(1, 0, 2)),
    "jnp.transpose": (lambda k: jnp.transpose(k, (1, 0)), lambda d: d.transpose(1, 0, 2)),
    "swapaxes": (lambda k: k.swapaxes(0, 1), lambda d: d.transpose(1, 0, 2)),
    "squeeze": (lambda k: jnp.squeeze(k[:1]), lambda d: d[0]),
    "expand_dims": (lambda k: jnp.expand_dims(k, 1), lambda d: d[:, None]),
    "expand_dims -1": (lambda k: jnp.expand_dims(k, -1), lambda d: d[:, :, None]),
    "broadcast_to": (lambda k: jnp.broadcast_to(k[:, :1], (3, 5)),
                     lambda d: np.broadcast_to(d[:, :1], (3, 5, 2))),
    "broadcast_to rank": (lambda k: jnp.broadcast_to(k, (2, 3, 4)),
                          lambda d: np.broadcast_to(d, (2, 3, 4, 2))),
    "concatenate": (lambda k: jnp.concatenate([k, k[:1]]),
                    lambda d: np.concatenate([d, d[:1]])),
    "concatenate axis 1": (lambda k: jnp.concatenate([k, k], axis=1),
                           lambda d: np.concatenate([d, d], axis=1)),
    "stack": (lambda k: jnp.stack([k, k[::-1]]), lambda d: np.stack([d, d[::-1]])),
    "stack axis 1": (lambda k: jnp.stack([k, k], axis=1), lambda d: np.stack([d, d], axis=1)),
    "append": (lambda k: jnp.append(k[0], k[1, 2]), lambda d: np.concatenate([d[0], d[1, 2:3]])),
    "tile scalar": (lambda k: jnp.tile(k[0, 0], 3), lambda d: np.tile(d[0, 0], (3, 1))),
    "tile": (lambda k: jnp.tile(k, (2, 1)), lambda d: np.tile(d, (2, 1, 1))),
    "take": (lambda k: jnp.take(k, jnp.array([2, 0, 2]), axis=0), lambda d: d[[2, 0, 2]]),
    "take axis 1": (lambda k: jnp.take(k, jnp.array([3, 1]), axis=1), lambda d: d[:, [3, 1]]),
    "method take": (lambda k: k.take(jnp.array([5, 0])), lambda d: d.reshape(12, 2)[[5, 0]]),
    "lax.slice": (lambda k: lax.slice(k, (1, 0), (3, 4), (1, 2)), lambda d: d[1:3, 0:4:2]),
    "slice_in_dim": (lambda k: lax.slice_in_dim(k, 1, 3, axis=1), lambda d: d[:, 1:3]),
    "dynamic_slice": (lambda k: lax.dynamic_slice(k, (1, 2), (2, 2)), lambda d: d[1:3, 2:4]),
    "dynamic_slice clamps": (lambda k: lax.dynamic_slice(k, (2, 3), (2, 2)),
                             lambda d: d[1:3, 2:4]),
    "dynamic_slice int16": (lambda k: lax.dynamic_slice(k, (np.int16(1), np.int16(0)), (2, 4)),
                            lambda d: d[1:3]),
    "dynamic_slice_in_dim": (lambda k: lax.dynamic_slice_in_dim(k, 1, 2, axis=1),
                             lambda d: d[:, 1:3]),
    "dynamic_update_slice": (lambda k: lax.dynamic_update_slice(k, k[:1, :2], (2, 1)),
                             lambda d: np.concatenate([d[:2], np.concatenate(
                                 [d[2:, :1], d[:1, :2], d[2:, 3:]], axis=1)])),
    "dynamic_update_slice_in_dim": (
        lambda k: lax.dynamic_update_slice_in_dim(k, k[2:], 0, axis=0),
        lambda d: np.concatenate([d[2:], d[1:]])),
    "select": (lambda k: lax.select(jnp.array([[True, False, True, False]] * 3), k, k[::-1]),
               lambda d: np.where(np.array([True, False, True, False])[None, :, None],
                                  d, d[::-1])),
    "select scalar pred": (lambda k: lax.select(False, k, k[::-1]), lambda d: d[::-1]),
    "where": (lambda k: jnp.where(jnp.array([True, False, False, True]), k, k[::-1]),
              lambda d: np.where(np.array([True, False, False, True])[:, None], d, d[::-1])),
    "where scalar key": (lambda k: jnp.where(jnp.array([True, False, False, True]), k, k[0, 0]),
                         lambda d: np.where(np.array([True, False, False, True])[:, None],
                                            d, d[0, 0])),
    "rev": (lambda k: lax.rev(k, (0, 1)), lambda d: d[::-1, ::-1]),
    "jnp.copy": (jnp.copy, lambda d: d),
    "moveaxis": (lambda k: jnp.moveaxis(k, 0, 1), lambda d: d.transpose(1, 0, 2)),
    "flip": (lambda k: jnp.flip(k, 1), lambda d: d[:, ::-1]),
    "roll": (lambda k: jnp.roll(k, 1, axis=0), lambda d: np.roll(d, 1, axis=0)),
    "split": (lambda k: jnp.split(k, 2, axis=1)[1], lambda d: d[:, 2:]),
    "atleast_2d": (lambda k: jnp.atleast_2d(k[0, 0]), lambda d: d[:1, :1]),
    "repeat": (lambda k: jnp.repeat(k, 2, axis=0), lambda d: np.repeat(d, 2, axis=0)),
}


@both
@pytest.mark.parametrize("name", SHAPE_OPS)
def test_shape_op(mode, name):
  f, on_data = SHAPE_OPS[name]
  ks = keys(3, 4)
  assert_keys(run(mode, f, ks), on_data(data(ks)))


@given(st.permutations(range(3)), st.sampled_from([(2, 3, 2), (1, 2, 3), (3, 1, 1)]))
def test_transpose_property(perm, shape):
  ks = keys(*shape, seed=3)
  assert_keys(jnp.transpose(ks, perm), data(ks).transpose(*perm, 3))
  assert_keys(jax.jit(lambda k: jnp.transpose(k, perm))(ks), data(ks).transpose(*perm, 3))


@given(st.integers(-6, 5), st.integers(-6, 5), st.integers(1, 3))
def test_slice_property(start, stop, step):
  ks = keys(6, seed=4)
  assert_keys(ks[start:stop:step], data(ks)[start:stop:step])


# --- indexing -------------------------------------------------------------------

INDICES = {
    "0": 0,
    "-1": -1,
    "1, :": (1, slice(None)),
    ":, 1": (slice(None), 1),
    "None": None,
    "..., 1:, None": (Ellipsis, slice(1, None), None),
    "int array": np.array([0, 2]),
    "bool mask": np.array([False, True, True]),
    "2d bool mask": np.array([[True, False, False, True]] * 3),
    "int arrays both axes": (np.array([0, 2]), np.array([3, 1])),
}


@both
@pytest.mark.parametrize("name", INDICES)
def test_getitem(mode, name):
  index = INDICES[name]  # NumPy masks are constants: allowed under jit too
  ks = keys(3, 4)
  d = data(ks)
  expected = d[index] if not isinstance(index, tuple) else d[index + (slice(None),)]
  if isinstance(index, tuple) and index[0] is Ellipsis:
    expected = d[:, 1:, None]
  assert_keys(run(mode, lambda k: k[index], ks), expected)
  assert_keys(run(mode, lambda k: k.at[index].get(), ks), expected)


def distinct_keys(shape):
  """Keys of `shape` whose data words count up from 0."""
  return wrap(np.arange(2 * int(np.prod(shape)), dtype=np.uint32).reshape(*shape, 2))


@given(st.data())
def test_getitem_property(data_strategy):
  """Any NumPy index picks the keys its data would (the key axis kept last)."""
  shape = data_strategy.draw(shapes(max_dims=3))
  index = data_strategy.draw(index_expressions(shape))
  ks = distinct_keys(shape)
  expected = data(ks)[index + (slice(None),)]
  assert_keys(ks[index], expected)
  assert_keys(jax.jit(lambda k: k[index])(ks), expected)


@given(st.data())
def test_scatter_property(data_strategy):
  shape = data_strategy.draw(shapes(max_dims=3))
  index = data_strategy.draw(index_expressions(shape))
  ks, k = distinct_keys(shape), key()
  expected = data(ks).copy()
  expected[index + (slice(None),)] = data(k)
  assert_keys(ks.at[index].set(k), expected)


@both
def test_getitem_traced_index(mode):
  ks = keys(5)
  assert_keys(run(mode, lambda k, i: k[i], ks, 3), data(ks)[3])
  assert_keys(run(mode, lambda k, i: k[i], ks, jnp.array([4, 0])), data(ks)[[4, 0]])


@both
def test_scatter_set(mode):
  ks, k = keys(3, 4), key()
  d = data(ks).copy()
  d[1, 2] = data(k)
  assert_keys(run(mode, lambda ks, k: ks.at[1, 2].set(k), ks, k), d)
  d = data(ks).copy()
  d[[0, 2]] = data(ks)[1]
  assert_keys(run(mode, lambda ks: ks.at[np.array([0, 2])].set(ks[1]), ks), d)


@both
def test_broadcast_arrays(mode):
  ks, k = keys(3, 1), key()
  a, b = run(mode, lambda ks, k: jnp.broadcast_arrays(ks, k[None]), ks, k)
  assert_keys(a, data(ks))
  assert_keys(b, np.broadcast_to(data(k), (3, 1, 2)))
  a, b = run(mode, lambda ks: jnp.broadcast_arrays(ks, ks.T), ks)
  assert_keys(a, np.broadcast_to(data(ks), (3, 3, 2)))
  assert_keys(b, np.broadcast_to(data(ks).transpose(1, 0, 2), (3, 3, 2)))


def test_scalar_key_indexing():
  k = key()
  assert_keys(k[None], data(k)[None])
  assert_keys(k[...], data(k))
  with pytest.raises(IndexError, match="Too many indices"):
    k[0]


def test_iteration_and_len():
  ks = keys(3)
  k1, k2, k3 = ks
  assert_keys(k2, data(ks)[1])
  assert [k.shape for k in ks] == [(), (), ()]
  assert len(ks) == 3
  with pytest.raises(TypeError):
    len(key())
  with pytest.raises(TypeError):
    iter(key())


def test_iteration_under_jit():
  out = jax.jit(lambda ks: [k for k in ks][::-1])(keys(2))
  assert_keys(out[0], data(keys(2))[1])


# --- jnp.array / asarray --------------------------------------------------------

@both
@pytest.mark.parametrize("convert", [
    jnp.array, jnp.asarray,
    lambda k: jnp.array(k, dtype=k.dtype), lambda k: jnp.asarray(k, dtype=k.dtype),
    lambda k: jnp.array(k, copy=True),
])
def test_array_of_keys(mode, convert):
  ks = keys(3)
  assert_keys(run(mode, convert, ks), data(ks))


def test_result_type():
  k = key()
  assert jnp.result_type(k) == k.dtype
  assert jnp.result_type(k, k) == k.dtype
  with pytest.raises(ValueError, match=r"dtype=key<fry> is not a valid dtype for JAX type"):
    jnp.result_type(k, np.int32)


# --- creation -------------------------------------------------------------------

@both
@pytest.mark.parametrize("like, value", [
    (jnp.zeros_like, 0), (jnp.ones_like, 1), (jnp.empty_like, 0),
    (lambda k: jnp.full_like(k, 100), 100)])
def test_creation_like(mode, like, value):
  ks = keys(3, 2)
  assert_keys(run(mode, like, ks), np.full((3, 2, 2), value, np.uint32))


@both
@pytest.mark.parametrize("make, value", [
    (jnp.zeros, 0), (jnp.ones, 1), (jnp.empty, 0),
    (lambda s, dtype: jnp.full(s, 100, dtype=dtype), 100)])
def test_creation_with_key_dtype(mode, make, value):
  dt = key().dtype
  assert_keys(run(mode, lambda: make((2, 3), dtype=dt)), np.full((2, 3, 2), value, np.uint32))


@both
def test_full_with_key_fill(mode):
  ks, k = keys(3), key()
  assert_keys(run(mode, lambda ks, k: jnp.full_like(ks, k), ks, k),
              np.broadcast_to(data(k), (3, 2)))
  assert_keys(run(mode, lambda k: jnp.full((2, 2), k, dtype=k.dtype), k),
              np.broadcast_to(data(k), (2, 2, 2)))
  assert_keys(run(mode, lambda k: jnp.full((2,), k), k), np.broadcast_to(data(k), (2, 2)))


def test_full_like_jaxpr():
  text = str(jax.make_jaxpr(jnp.zeros_like)(keys(3)))
  assert "random_wrap[impl=fry]" in text and "key<fry>[3]" in text


# --- equality and refused arithmetic --------------------------------------------

@both
def test_equality(mode):
  ks = keys(3)
  k = ks[1]
  assert run(mode, lambda a, b: a == b, k, k).dtype == np.bool_
  assert bool(run(mode, lambda a, b: a == b, k, k))
  assert not bool(run(mode, lambda a, b: a == b, k, ks[0]))
  assert bool(run(mode, lambda a, b: a != b, k, ks[0]))
  np.testing.assert_array_equal(run(mode, lambda a, b: a == b, k, ks), [False, True, False])
  np.testing.assert_array_equal(run(mode, lambda a, b: a != b, ks, k), [True, False, True])
  np.testing.assert_array_equal(run(mode, jnp.equal, ks, ks[::-1]), [False, True, False])
  np.testing.assert_array_equal(run(mode, lax.eq, ks, ks), [True] * 3)
  np.testing.assert_array_equal(run(mode, lax.ne, ks, ks), [False] * 3)


def test_equality_with_same_data_different_object():
  assert bool(wrap([3, 4]) == wrap([3, 4]))
  assert not bool(wrap([3, 4]) == wrap([3, 5]))


@both
@pytest.mark.parametrize("f, error, match", [
    (lambda k: k + k, TypeError, "add does not accept dtype key<fry>"),
    (lambda k: jnp.add(k, k), TypeError, "add does not accept dtype key<fry>"),
    (lambda k: lax.add(k, k), TypeError, "add does not accept dtype key<fry>"),
    (lambda k: -k, TypeError, "neg does not accept dtype key<fry>"),
    (lambda k: k * k, TypeError, "mul does not accept dtype key<fry>"),
    (lambda k: k < k, TypeError, "lt does not accept dtype key<fry>"),
    (lambda k: k + 1, ValueError, r"dtype=key<fry> is not a valid dtype for JAX type promotion"),
    (lambda k: k == 1, ValueError, r"dtype=key<fry> is not a valid dtype for JAX type promotion"),
    (lambda k: lax.convert_element_type(k, int), ValueError,
     "Cannot call convert_element_type on dtype key<fry>"),
    (lambda k: k.astype(np.uint32), ValueError,
     "Cannot call convert_element_type on dtype key<fry>"),
    (lambda k: jnp.sum(k), TypeError, "key<fry>"),
    (lambda k: jnp.max(k), TypeError, "key<fry>"),
    (lambda k: jnp.sort(k), TypeError, "key<fry>"),
    (lambda k: jnp.argsort(k), TypeError, "key<fry>"),
    (lambda k: jnp.mean(k), ValueError, "Cannot call convert_element_type on dtype key<fry>"),
    (lambda k: jnp.cumsum(k), TypeError, "key<fry>"),
    (lambda k: jnp.abs(k), TypeError, "key<fry>"),
    (lambda k: k @ k, TypeError, "dot_general does not accept dtype key<fry> at position 0"),
    (lambda k: jnp.argmax(k), TypeError, "argmax does not accept dtype key<fry>"),
    (lambda k: jnp.argmin(k), TypeError, "argmin does not accept dtype key<fry>"),
])
def test_refused_operations(mode, f, error, match):
  with pytest.raises(error, match=match):
    run(mode, f, keys(3))


def test_copy_method():
  ks = keys(3)
  assert_keys(ks.copy(), data(ks))
  assert_keys(copy.copy(ks), data(ks))


def test_convert_to_own_dtype_is_noop():
  ks = keys(3)
  assert_keys(lax.convert_element_type(ks, ks.dtype), data(ks))
  assert_keys(ks.astype(ks.dtype), data(ks))
  assert "convert_element_type" not in str(
      jax.make_jaxpr(lambda k: lax.convert_element_type(k, k.dtype))(ks))


def test_no_numpy_conversion():
  with pytest.raises(TypeError):
    np.asarray(key())
  with pytest.raises(TypeError, match="unhashable type"):
    hash(key())


# --- transformations -------------------------------------------------------------

def test_vmap():
  ks = keys(3, 4, 5)
  assert_keys(jax.vmap(lambda k: k.T)(ks), data(ks).transpose(0, 2, 1, 3))
  assert_keys(jax.vmap(jax.jit(lambda k: k.T))(ks), data(ks).transpose(0, 2, 1, 3))
  assert_keys(jax.vmap(lambda k: k[0], in_axes=1)(ks), data(ks)[0])
  assert_keys(jax.vmap(lambda k: k, in_axes=1, out_axes=1)(ks), data(ks))


def test_vmap_mixes_batched_and_unbatched_keys():
  ks, k = keys(3), key()
  out = jax.vmap(lambda a: jnp.stack([a, k]))(ks)
  expected = np.stack([data(ks), np.broadcast_to(data(k), (3, 2))], axis=1)
  assert_keys(out, expected)
  np.testing.assert_array_equal(jax.vmap(lambda a: a == k)(ks), [False] * 3)
  assert_keys(jax.vmap(lambda a, b: lax.select(a > 0, b, k))(jnp.arange(3), ks),
              np.where(np.arange(3)[:, None] > 0, data(ks), data(k)))


VMAPPED = {
    # name: function of (keys of shape (4,), an int32 index, a key)
    "getitem": lambda ks, i, k: ks[i],
    "getitem unbatched keys": lambda ks, i, k: keys(4)[i],
    "scatter": lambda ks, i, k: ks.at[i].set(k),
    "scatter unbatched keys": lambda ks, i, k: keys(4).at[i].set(k),
    "dynamic_slice": lambda ks, i, k: lax.dynamic_slice(ks, (i,), (2,)),
    "dynamic_update_slice": lambda ks, i, k: lax.dynamic_update_slice(ks, k[None], (i,)),
    "where": lambda ks, i, k: jnp.where(jnp.arange(4) < i, ks, k),
    "concatenate": lambda ks, i, k: jnp.concatenate([ks, k[None], keys(2)]),
    "full_like key fill": lambda ks, i, k: jnp.full_like(ks, k),
    "switch": lambda ks, i, k: lax.switch(i % 2, [lambda k: ks[0], lambda k: k], k),
}


@pytest.mark.parametrize("name", VMAPPED)
def test_vmap_matches_loop(name):
  f = VMAPPED[name]
  ks, idx, k = keys(3, 4, seed=5), jnp.array([0, 3, 1]), keys(3, seed=6)
  expected = np.stack([data(f(ks[j], idx[j], k[j])) for j in range(3)])
  assert_keys(jax.vmap(f)(ks, idx, k), expected)
  assert_keys(jax.vmap(jax.jit(f))(ks, idx, k), expected)


def test_vmap_random_ops():
  ks = keys(4)
  bits = jax.vmap(lambda k: prng.random_bits(k, 32, (2,)))(ks)
  np.testing.assert_array_equal(bits, prng.random_bits(ks, 32, (2,)))
  split = jax.vmap(lambda k: prng.random_split(k, (2,)))(ks)
  assert_keys(split, data(prng.random_split(ks, (2,))))


@both
def test_scan_over_keys(mode):
  ks = keys(3, 4, 5)
  f = lambda ks: lax.scan(lambda _, k: (None, k.T), None, ks)[1]
  assert_keys(run(mode, f, ks), data(ks).transpose(0, 2, 1, 3))
  text = str(jax.make_jaxpr(f)(ks))
  assert "key<fry>[3,4,5]" in text and "key<fry>[3,5,4]" in text


@both
def test_loops_with_key_carries(mode):
  k = key()
  step = lambda k: prng.random_split(k, (2,))[0]
  expected = step(step(step(k)))
  out = run(mode, lambda k: lax.fori_loop(0, 3, lambda i, k: step(k), k), k)
  assert_keys(out, data(expected))
  out = run(mode, lambda k: lax.while_loop(lambda c: c[0] < 3,
                                           lambda c: (c[0] + 1, step(c[1])), (0, k))[1], k)
  assert_keys(out, data(expected))
  out = run(mode, lambda k: lax.scan(lambda k, _: (step(k), k), k, None, length=3), k)
  assert_keys(out[0], data(expected))
  assert_keys(out[1], np.stack([data(k), data(step(k)), data(step(step(k)))]))


@both
def test_cond_and_switch_return_keys(mode):
  ks = keys(2)
  f = lambda p, ks: lax.cond(p, lambda ks: ks[0], lambda ks: ks[1], ks)
  assert_keys(run(mode, f, True, ks), data(ks)[0])
  assert_keys(run(mode, f, False, ks), data(ks)[1])
  g = lambda i, ks: lax.switch(i, [lambda ks: ks[1], lambda ks: ks[0]], ks)
  assert_keys(run(mode, g, 0, ks), data(ks)[1])


def test_vmap_of_control_flow():
  ks = keys(3, 4)
  step = lambda k: prng.random_split(k, (2,))[1]
  out = jax.vmap(lambda ks: lax.scan(lambda c, k: (step(c), k == c), ks[0], ks))(ks)
  expected = [lax.scan(lambda c, k: (step(c), k == c), row[0], row) for row in ks]
  assert_keys(out[0], np.stack([data(c) for c, _ in expected]))
  np.testing.assert_array_equal(out[1], np.stack([ys for _, ys in expected]))
  # a batched predicate: cond becomes a select_n of the keys, while masks its rows
  out = jax.vmap(lambda p, ks: lax.cond(p, lambda ks: ks[0], lambda ks: ks[1], ks))(
      jnp.array([True, False, True]), ks)
  assert_keys(out, data(ks)[[0, 1, 2], [0, 1, 0]])
  out = jax.vmap(lambda n, k: lax.while_loop(lambda c: c[0] < n,
                                             lambda c: (c[0] + 1, step(c[1])), (0, k))[1])(
      jnp.array([0, 2, 1]), ks[:, 0])
  assert_keys(out, np.stack([data(ks[0, 0]), data(step(step(ks[1, 0]))),
                             data(step(ks[2, 0]))]))


def test_closed_over_keys():
  """Traced functions may close over concrete keys: they become constvars
  (never literals) and jit's cache tells different closed-over keys apart."""
  k = key()
  ks = keys(3).at[1].set(k)
  np.testing.assert_array_equal(jax.jit(lambda x: x == k)(ks), [False, True, False])
  np.testing.assert_array_equal(jax.jit(lambda x: x != ks)(k), [True, False, True])
  assert_keys(lax.cond(True, lambda: k, lambda: ks[0]), data(k))
  assert_keys(lax.cond(False, lambda: k, lambda: ks[0]), data(ks[0]))
  draw = lambda key: jax.jit(lambda: prng.random_bits(key, 32, (2,)))()
  np.testing.assert_array_equal(draw(ks[1]), prng.random_bits(ks[1], 32, (2,)))
  np.testing.assert_array_equal(draw(ks[2]), prng.random_bits(ks[2], 32, (2,)))
  jaxpr = jax.make_jaxpr(lambda: k == k)()
  assert len(jaxpr.jaxpr.constvars) == 1 and "key<fry>[]" in str(jaxpr)


def test_eval_shape():
  k = keys(3)
  spec = jax.ShapeDtypeStruct(k.shape, k.dtype)
  out = jax.eval_shape(lambda x: x, spec)
  assert out == spec
  assert out.shape == (3,) and out.dtype == k.dtype
  assert jax.eval_shape(lambda k: k.T, keys(2, 3)) == jax.ShapeDtypeStruct((3, 2), k.dtype)
  assert jax.eval_shape(lambda k: prng.random_split(k, (2,)), key()) == spec.__class__(
      (2,), k.dtype)


def test_make_jaxpr_of_shape_dtype_struct():
  k = key()
  text = str(jax.make_jaxpr(lambda k: k[None])(jax.ShapeDtypeStruct((), k.dtype)))
  assert "a:key<fry>[]" in text and "key<fry>[1]" in text


def test_grad():
  k = key()
  with pytest.raises(TypeError, match="grad requires real- or complex-valued inputs"):
    jax.grad(lambda x: 1.)(k)
  g = jax.grad(lambda x: 1., allow_int=True)(keys(3))
  assert g.dtype == dtypes.float0 and g.shape == (3,)


def test_vjp_and_jvp():
  out, f_vjp = jax.vjp(lambda s: prng.random_bits(prng.random_seed(s, IMPL), 32, ()), 1)
  assert out.dtype == np.uint32
  out, f_vjp = jax.vjp(lambda x, k: (x * 2., k.T), 3., keys(2, 3))
  assert_keys(out[1], data(keys(2, 3)).transpose(1, 0, 2))
  ct = f_vjp((1., np.zeros((3, 2), dtypes.float0)))
  assert float(ct[0]) == 2.
  assert ct[1].dtype == dtypes.float0 and ct[1].shape == (2, 3)

  def f(x, k):
    return x * jnp.float32(prng.random_bits(k, 32, ()) % 4), k[None]
  k = key()
  (y, k1), (ty, tk) = jax.jvp(f, (2., k), (1., np.zeros((), dtypes.float0)))
  factor = float(np.asarray(prng.random_bits(k, 32, ())) % 4)
  assert float(y) == 2. * factor and float(ty) == factor
  assert_keys(k1, data(k)[None])
  assert tk.dtype == dtypes.float0 and tk.shape == (1,)


def test_device_put_copy_pickle():
  ks = keys(3)
  for other in (jax.device_put(ks), copy.copy(ks), copy.deepcopy(ks),
                pickle.loads(pickle.dumps(ks))):
    assert_keys(other, data(ks))
    assert other.dtype == ks.dtype


def test_pytrees():
  ks = keys(3)
  leaves = jax.tree_util.tree_leaves(ks)
  assert len(leaves) == 1 and leaves[0] is ks
  leaves = jax.tree_util.tree_leaves({"a": ks, "b": [key(), 1.]})
  assert len(leaves) == 3
  assert_keys(jax.tree_util.tree_map(lambda k: k[::-1], ks), data(ks)[::-1])
