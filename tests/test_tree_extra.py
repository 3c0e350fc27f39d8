"""`jax.tree.broadcast`, `reduce_associative` and `static`, `jax.dtypes.
itemsize_bits` and `scalar_type_of`, and `jax.memory.Space`."""

import dataclasses
import operator

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import dtypes


def test_tree_aliases_are_tree_util_functions():
  assert jax.tree.broadcast is jax.tree_util.tree_broadcast
  assert jax.tree.reduce_associative is jax.tree_util.tree_reduce_associative


def test_broadcast_copies_prefix_leaves_over_subtrees():
  assert jax.tree.broadcast([1, 2], [[3, 4], (5, 6)]) == [[1, 1], (2, 2)]
  assert jax.tree.broadcast({"a": 0}, {"a": {"x": 1, "y": [2, 3]}}) == \
      {"a": {"x": 0, "y": [0, 0]}}
  with pytest.raises(ValueError):
    jax.tree.broadcast([1, 2], [3, 4, 5])


@given(st.lists(st.integers(-100, 100), max_size=20))
def test_reduce_associative_agrees_with_a_fold(values):
  tree = {"a": values[:3], "b": tuple(values[3:])}
  if values:
    assert jax.tree.reduce_associative(operator.add, tree) == sum(values)
    assert jax.tree.reduce_associative(max, tree) == max(values)
  assert jax.tree.reduce_associative(operator.add, tree, identity=0) == sum(values)


def test_reduce_associative_of_an_empty_tree_needs_an_identity():
  with pytest.raises(ValueError):
    jax.tree.reduce_associative(operator.add, [])


def test_static_field_goes_to_the_treedef():
  @jax.tree_util.register_dataclass
  @dataclasses.dataclass
  class MyOp:
    x: jax.Array
    y: jax.Array
    op: str = jax.tree.static(default="add")
    tag: int = jax.tree.static(default=0, metadata={"doc": "kept"})

  m = MyOp(x=jnp.ones(3), y=jnp.arange(3))
  leaves, treedef = jax.tree.flatten(m)
  assert len(leaves) == 2
  assert "('add', 0)" in str(treedef)
  assert jax.tree.unflatten(treedef, leaves).op == "add"
  assert dataclasses.fields(MyOp)[3].metadata == {"doc": "kept", "static": True}
  assert jax.jit(lambda m: m.x + m.y if m.op == "add" else m.x)(m).tolist() == [1, 2, 3]


@pytest.mark.parametrize("dtype, bits", [
    (np.bool_, 8), (jnp.int4, 4), (jnp.uint2, 2), (np.int8, 8), (np.uint32, 32),
    (np.int64, 64), (jnp.float4_e2m1fn, 4), (jnp.float8_e4m3fn, 8), (jnp.bfloat16, 16),
    (np.float32, 32), (np.complex64, 64), (np.complex128, 128), ("float16", 16),
])
def test_itemsize_bits(dtype, bits):
  assert dtypes.itemsize_bits(dtype) == bits


def test_itemsize_bits_errors():
  with pytest.raises(ValueError, match="dtype cannot be None"):
    dtypes.itemsize_bits(None)
  with pytest.raises(ValueError):
    dtypes.itemsize_bits(np.dtype("U3"))


@pytest.mark.parametrize("value, expected", [
    (True, bool), (3, int), (2.5, float), (1j, complex), (np.zeros(2, bool), bool),
    (np.uint8(3), int), (jnp.ones(2, jnp.int4), int), (jnp.ones(2, jnp.bfloat16), float),
    (jnp.float8_e5m2(1), float), (jnp.ones(2, jnp.complex64), complex),
])
def test_scalar_type_of(value, expected):
  assert dtypes.scalar_type_of(value) is expected


def test_scalar_type_of_a_key_array_raises():
  with pytest.raises(TypeError, match="Invalid scalar value"):
    dtypes.scalar_type_of(jax.random.key(0))


def test_memory_spaces():
  assert [s.name for s in jax.memory.Space] == ["Device", "Host", "Any"]
  assert repr(jax.memory.Space.Host) == "MemorySpace.Host"
  x = jax.device_put(jnp.arange(3), jax.memory.Space.Host)
  assert x.device == jax.devices("cpu")[0]
  np.testing.assert_array_equal(jax.device_put(x + x, jax.memory.Space.Device), [0, 2, 4])
