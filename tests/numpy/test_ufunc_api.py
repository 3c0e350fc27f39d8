"""Tests of refimpl/numpy/ufunc_api.py: the `jnp.ufunc` class and
`jnp.frompyfunc`, on ufuncs made from Python functions (whose methods fold
the function over the array). The jnp ufuncs themselves (`jnp.add`, ...)
are tested in tests/numpy/test_ufuncs.py."""

import math
import operator

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import refimpl as jax
import refimpl.numpy as jnp
from conformance import strategies as S

ADD = jnp.frompyfunc(operator.add, nin=2, nout=1, identity=0)
SUB = jnp.frompyfunc(operator.sub, 2, 1)  # not associative: the order of the fold is checked


def test_frompyfunc_examples_from_jax():
  x = jnp.arange(4)
  out = ADD(x, 10)
  assert out.dtype == np.int32 and out.tolist() == [10, 11, 12, 13]
  assert ADD.outer(x, x).tolist() == [[i + j for j in range(4)] for i in range(4)]
  assert ADD.reduce(x).tolist() == 6
  assert ADD.accumulate(x).tolist() == [0, 1, 3, 6]
  assert ADD.at(x, 1, 10, inplace=False).tolist() == [0, 11, 2, 3]
  assert ADD.reduceat(jnp.arange(1, 9), jnp.array([0, 2, 5])).tolist() == [3, 12, 21]
  assert ADD.nin == 2 and ADD.nout == 1 and ADD.nargs == 2 and ADD.identity == 0
  assert repr(ADD) == "<jnp.ufunc 'add'>" and ADD.__name__ == "add"
  same = jnp.frompyfunc(operator.add, 2, 1, identity=0)
  assert ADD == same and hash(ADD) == hash(same) and ADD != jnp.frompyfunc(operator.add, 2, 1)


def test_properties_are_read_only():
  for attr in ("nin", "nout", "nargs", "identity", "_func"):
    getattr(ADD, attr)
    with pytest.raises(AttributeError):
      setattr(ADD, attr, None)


def test_fast_methods_replace_folding_and_are_not_part_of_equality():
  calls = []
  def fast_reduce(a, **kwargs):
    calls.append(kwargs)
    return jnp.sum(a, **kwargs)
  def plus(a, b):
    return a + b
  fast = jnp.ufunc(plus, 2, 1, identity=0, reduce=fast_reduce)
  assert fast == jnp.ufunc(plus, 2, 1, identity=0)  # as in JAX: the methods are not compared
  assert fast.reduce(np.arange(4), axis=0).tolist() == 6
  assert calls == [dict(axis=0, dtype=None, keepdims=False, initial=None, where=None)]
  # the fast path is one reduce_sum; folding calls the ufunc in the body of a loop
  assert "reduce_sum" in str(jax.make_jaxpr(fast.reduce)(np.arange(4)))
  folded = str(jax.make_jaxpr(ADD.reduce)(np.arange(4)))
  assert "scan[" in folded and "reduce_sum" not in folded


def test_methods_and_calls_trace_as_jitted_functions():
  x = np.arange(3, dtype=np.float32)
  assert "jit[\n      name=_call_vectorized" in str(jax.make_jaxpr(ADD)(x, x))
  for method, args in (("reduce", (x,)), ("accumulate", (x,)), ("outer", (x, x)),
                       ("reduceat", (x, np.array([0, 2])))):
    assert f"name={method}" in str(jax.make_jaxpr(getattr(ADD, method))(*args)), method
  at = jax.make_jaxpr(lambda a, i, b: ADD.at(a, i, b, inplace=False))(x, np.array([1]), x[:1])
  assert "name=at" in str(at)
def test_ufunc_call_broadcasts_and_keeps_types():
  x = np.arange(6, dtype=np.int8).reshape(2, 3)
  out = ADD(x, np.array([1, 2, 3], np.int8))
  assert out.dtype == np.int8 and out.shape == (2, 3)
  np.testing.assert_array_equal(out, x + np.array([1, 2, 3], np.int8))
  assert ADD(1.0, 2.0).weak_type
  empty = ADD(np.zeros((0, 3), np.float32), 1.0)
  assert empty.shape == (0, 3) and empty.dtype == np.float32
  divmod_ = jnp.frompyfunc(lambda a, b: (a // b, a % b), 2, 2)
  q, r = divmod_(np.arange(6), 4)
  assert q.tolist() == [0, 0, 0, 0, 1, 1] and r.tolist() == [0, 1, 2, 3, 0, 1]
  clip = jnp.frompyfunc(lambda v: jnp.where(v > 2, 2, v), 1, 1)  # not a NumPy-style ufunc
  assert clip(np.arange(5)).tolist() == [0, 1, 2, 2, 2]
  jitted = jax.jit(lambda a, b: ADD(a, b))(x, np.int8(1))
  np.testing.assert_array_equal(jitted, x + 1)


@given(st.data())
def test_ufunc_reduce_and_accumulate_match_numpy(data):
  shape = data.draw(S.shapes(min_dims=1, max_dims=3, max_side=3))
  x = data.draw(hnp.arrays(np.int32, shape, elements=st.integers(-100, 100)))
  axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1))
  keepdims = data.draw(st.booleans())
  initial = data.draw(st.none() | st.integers(-5, 5))
  kwargs = dict(axis=axis, keepdims=keepdims)
  if initial is not None:
    kwargs["initial"] = initial
  sub = jnp.frompyfunc(operator.sub, 2, 1)  # not associative: the order is checked
  if x.size == 0 and initial is None and (axis is None or x.shape[axis] == 0):
    with pytest.raises(ValueError, match="no identity"):
      sub.reduce(x, **kwargs)
  elif axis is None:  # NumPy folds a non-reorderable ufunc over one axis only
    expected = np.subtract.reduce(x.ravel(), **{**kwargs, "axis": 0})
    np.testing.assert_array_equal(sub.reduce(x, **kwargs),
                                  np.reshape(expected, (1,) * x.ndim if keepdims else ()))
  else:
    np.testing.assert_array_equal(sub.reduce(x, **kwargs), np.subtract.reduce(x, **kwargs))
  np.testing.assert_array_equal(ADD.reduce(x, **kwargs), np.add.reduce(x, **kwargs))
  if axis is not None:
    np.testing.assert_array_equal(sub.accumulate(x, axis), np.subtract.accumulate(x, axis))


def test_ufunc_reduce_where_and_dtype():
  x = np.arange(12).reshape(3, 4)
  mask = np.array([True, False, True, True])
  np.testing.assert_array_equal(ADD.reduce(x, axis=1, where=mask),
                                np.add.reduce(x, axis=1, where=mask))
  assert ADD.reduce(x, dtype=jnp.float32).dtype == np.float32
  with pytest.raises(ValueError, match="specify 'initial'"):
    jnp.frompyfunc(operator.sub, 2, 1).reduce(x, where=mask)
  with pytest.raises(ValueError, match="dtype=bool"):
    ADD.reduce(x, where=np.ones(4, np.int32))
  with pytest.raises(NotImplementedError, match="tuple of axes"):
    ADD.reduce(x, axis=(0, 1))


def test_ufunc_at_and_reduceat_match_numpy():
  indices = np.array([0, 0, 3, 1])
  expected = np.arange(5)
  np.subtract.at(expected, indices, np.array([1, 2, 3, 4]))
  sub = jnp.frompyfunc(operator.sub, 2, 1)
  np.testing.assert_array_equal(sub.at(np.arange(5), indices, np.array([1, 2, 3, 4]),
                                       inplace=False), expected)
  neg = jnp.frompyfunc(operator.neg, 1, 1)
  np.testing.assert_array_equal(neg.at(np.arange(4), np.array([1, 1, 2]), inplace=False),
                                [0, 1, -2, 3])
  x = np.arange(24).reshape(4, 6)
  for idx, axis in (([0, 2, 5], 1), ([3, 1, 2, 2], 1), ([0, 3], 0)):
    np.testing.assert_array_equal(sub.reduceat(x, np.array(idx), axis=axis),
                                  np.subtract.reduceat(x, idx, axis=axis))
  with pytest.raises(NotImplementedError, match="inplace=False"):
    ADD.at(np.arange(3), 0, 1)


MUL = jnp.frompyfunc(operator.mul, 2, 1, identity=1)


def _methods(ufunc):
  """Each folding method as a function of `x` (shape (2, 3)), along axis 1."""
  return {
      "reduce": lambda x: ufunc.reduce(x, axis=1),
      "accumulate": lambda x: ufunc.accumulate(x, axis=1),
      "at": lambda x: ufunc.at(x[0], np.array([0, 0, 2]), x[1], inplace=False),
      "reduceat": lambda x: ufunc.reduceat(x, np.array([0, 2]), axis=1),
  }


def test_folding_methods_loop_as_jax_does():
  # As JAX: reduce and reduceat fold in a fori_loop with static bounds, which is
  # a scan; accumulate and at in a scan. The ufunc is traced once, in the body.
  # reduce starts from x[:, 0]; at takes one step per index.
  lengths = {"reduce": 2, "accumulate": 3, "at": 3, "reduceat": 3}
  x = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
  for name, method in _methods(SUB).items():
    text = str(jax.make_jaxpr(method)(x))
    assert text.count("scan[") == 1 and "while[" not in text, name
    assert text.count("name=_call_vectorized") == 1, name
    assert f"length={lengths[name]}" in text, name


def test_folding_methods_under_jit_vmap_and_grad():
  x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
  expected = {"reduce": np.subtract.reduce(x, axis=1),
              "accumulate": np.subtract.accumulate(x, axis=1),
              "reduceat": np.subtract.reduceat(x, [0, 2], axis=1)}
  at = x[0].copy()
  np.subtract.at(at, [0, 0, 2], x[1])
  expected["at"] = at
  for name, method in _methods(SUB).items():
    np.testing.assert_array_equal(method(x), expected[name], err_msg=name)
    np.testing.assert_array_equal(jax.jit(method)(x), expected[name], err_msg=name)
  # vmap over rows: each row alone, as a 1-D fold
  rows = np.stack([x, x[::-1] * 2])
  for name, method in _methods(SUB).items():
    np.testing.assert_array_equal(jax.vmap(method)(rows),
                                  np.stack([method(r) for r in rows]), err_msg=name)
  np.testing.assert_array_equal(jax.vmap(lambda r: SUB.reduce(r))(x),
                                np.subtract.reduce(x, axis=1))
  # reverse mode through the loops: products' gradients, by hand
  grads = {name: jax.grad(lambda x, m=method: m(x).sum())(x)
           for name, method in _methods(MUL).items()}
  np.testing.assert_allclose(grads["reduce"], [[6, 3, 2], [30, 24, 20]])
  np.testing.assert_allclose(grads["accumulate"], [[9, 4, 2], [36, 28, 20]])
  # at: a[0] = 1 * 4 * 5, a[2] = 3 * 6
  np.testing.assert_allclose(grads["at"], [[20, 1, 6], [5, 4, 3]])
  np.testing.assert_allclose(grads["reduceat"], [[2, 1, 1], [5, 4, 1]])


def test_ufunc_method_errors():
  unary = jnp.frompyfunc(operator.neg, 1, 1)
  for method in ("reduce", "accumulate", "outer"):
    with pytest.raises(ValueError, match="binary ufuncs"):
      getattr(unary, method)(np.arange(3), *(() if method != "outer" else (np.arange(3),)))
  with pytest.raises(NotImplementedError, match="out argument"):
    ADD(np.arange(3), 1, out=np.arange(3))
  with pytest.raises(TypeError):
    ADD([1, 2], 1)
  outer = ADD.outer(np.ones((2, 3)), np.ones(4))
  assert outer.shape == (2, 3, 4) and math.isclose(float(outer.sum()), 48.0)
