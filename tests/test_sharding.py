"""jax.sharding with its single-device meaning (docs/sharding.md)."""

import pickle

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from refimpl.sharding import (AbstractMesh, AxisType, ManualAxisType, Mesh, NamedSharding,
                              PartitionSpec, SingleDeviceSharding, auto_axes, explicit_axes,
                              get_abstract_mesh, get_mesh, make_single_device_sharding,
                              use_abstract_mesh)

P = jax.P
CPU = jax.devices()[0]


@pytest.fixture
def mesh():
  return jax.make_mesh((1,), ("x",))


def test_top_level_names():
  assert jax.P is PartitionSpec and jax.NamedSharding is NamedSharding
  assert jax.sharding.Mesh is Mesh and jax.set_mesh is jax.sharding.set_mesh


def test_make_mesh_of_size_one(mesh):
  assert mesh.shape == {"x": 1} and list(mesh.shape) == ["x"]
  assert mesh.size == 1 and not mesh.empty and mesh.axis_names == ("x",)
  assert mesh.devices.shape == (1,) and mesh.devices[0] is CPU
  assert mesh.axis_types == (AxisType.Explicit,)
  assert repr(mesh) == "Mesh(axis_sizes=(1,), axis_names=('x',), axis_types=(Explicit,))"
  assert str(mesh) == "Mesh('x': 1, axis_types=(Explicit,))"
  mesh2 = jax.make_mesh((1, 1), ("a", "b"), (AxisType.Auto, AxisType.Explicit))
  assert mesh2.shape == {"a": 1, "b": 1} and mesh2.auto_axes == ("a",)
  assert mesh == jax.make_mesh((1,), ("x",)) and hash(mesh) == hash(jax.make_mesh((1,), ("x",)))
  assert mesh != Mesh(np.array([CPU]), ("x",))   # axis types Auto
  assert pickle.loads(pickle.dumps(P("x", unreduced={"y"}))) == P("x", unreduced={"y"})


def test_meshes_too_large_raise():
  with pytest.raises(ValueError, match=r"Number of devices 1 must be >= the product of "
                     r"mesh_shape \(2, 1\)"):
    jax.make_mesh((2, 1), ("x", "y"))
  with pytest.raises(ValueError, match="at most one device"):
    Mesh(np.array([CPU, CPU]), ("x",))
  with pytest.raises(ValueError, match="should be a sequence of ints"):
    jax.make_mesh((1.5,), ("x",))
  with pytest.raises(ValueError, match="ndim of its first argument"):
    Mesh(np.array([CPU]), ("x", "y"))


def test_mesh_is_a_context_manager(mesh):
  with mesh as m:
    assert m is mesh


def test_set_mesh_as_context_manager_and_setter(mesh):
  assert get_mesh().empty and get_abstract_mesh().empty
  with jax.set_mesh(mesh):
    assert get_mesh() is mesh
    assert get_abstract_mesh() == mesh.abstract_mesh
    assert get_abstract_mesh().shape == {"x": 1}
    assert isinstance(get_abstract_mesh(), AbstractMesh)
  assert get_mesh().empty and get_abstract_mesh().empty
  previous = jax.set_mesh(mesh)
  try:
    assert get_mesh() is mesh
  finally:
    jax.set_mesh(None)
  assert get_mesh().empty and previous.prev_mesh.empty


def test_mesh_context_inside_jit(mesh):
  seen = []

  def f(x):
    seen.append(get_abstract_mesh())
    with pytest.raises(ValueError, match="outside of `jax.jit`"):
      get_mesh()
    with pytest.raises(ValueError, match="outside of `jax.jit`"):
      jax.set_mesh(mesh)
    return x

  with jax.set_mesh(mesh):
    jax.jit(f)(1.0)
  assert seen == [mesh.abstract_mesh]


def test_set_mesh_checks_its_argument():
  with pytest.raises(ValueError, match="Expected mesh of type"):
    jax.set_mesh(AbstractMesh((1,), ("x",)))
  with pytest.raises(ValueError, match="manual axes"):
    jax.set_mesh(jax.make_mesh((1,), ("x",), (AxisType.Manual,)))


def test_use_abstract_mesh():
  abstract = AbstractMesh((8,), ("x",), (AxisType.Explicit,))
  with use_abstract_mesh(abstract):
    assert get_abstract_mesh() is abstract
  assert get_abstract_mesh().empty
  with pytest.raises(ValueError, match="AbstractMesh"):
    use_abstract_mesh(jax.make_mesh((1,), ("x",)))


def test_partition_spec():
  spec = P("x", None, ("y", "z"))
  assert repr(spec) == "P('x', None, ('y', 'z'))"
  assert repr(P("x")) == "P('x',)" and repr(P()) == "P()"
  assert repr(P("x", unreduced={"y"})) == "P('x', unreduced={'y'})"
  assert len(spec) == 3 and spec[0] == "x" and list(spec) == ["x", None, ("y", "z")]
  assert spec == ("x", None, ("y", "z")) and spec == P("x", None, ("y", "z"))
  assert hash(spec) == hash(P("x", None, ("y", "z"))) and spec != P("x")
  assert P(("x",)) == P("x") and P(()) == P(None) and P(["a", "b"]) == P(("a", "b"))
  assert P("x") + P(None) == P("x", None) and P("x") + (None,) == P("x", None)
  assert P("x", reduced={"y"}).reduced == frozenset({"y"})
  assert P("x", unreduced={"y"}) != P("x")
  assert not isinstance(spec, tuple)   # as in JAX 0.10: a pytree leaf
  assert jax.tree_util.tree_leaves([spec]) == [spec]
  with pytest.raises(TypeError, match="frozenset"):
    P("x", unreduced=["y"])
  with pytest.raises(ValueError, match="overlap"):
    P("x", unreduced={"x"})


def test_single_device_sharding():
  s = SingleDeviceSharding(CPU)
  assert s.device_set == {CPU} and s.addressable_devices == {CPU}
  assert s.num_devices == 1 and s.is_fully_replicated and s.is_fully_addressable
  assert s.memory_kind == "device"
  assert s.with_memory_kind("pinned_host").memory_kind == "pinned_host"
  assert s.shard_shape((4, 3)) == (4, 3)
  assert s.devices_indices_map((4, 3)) == {CPU: (slice(None), slice(None))}
  assert s == make_single_device_sharding(CPU) and hash(s) == hash(SingleDeviceSharding(CPU))
  assert s != s.with_memory_kind("pinned_host")
  assert repr(s) == "SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)"


def test_named_sharding(mesh):
  s = NamedSharding(mesh, P("x", None))
  assert s.mesh is mesh and s.spec == P("x", None)
  assert s.device_set == {CPU} and s.num_devices == 1
  assert s.is_fully_replicated and s.is_fully_addressable and s.memory_kind == "device"
  assert s.shard_shape((4, 3)) == (4, 3) and s.shard_shape((4, 3, 2)) == (4, 3, 2)
  assert s.devices_indices_map((4, 3)) == {CPU: (slice(None), slice(None))}
  assert s == NamedSharding(jax.make_mesh((1,), ("x",)), P("x", None))
  assert hash(s) == hash(NamedSharding(jax.make_mesh((1,), ("x",)), P("x", None)))
  assert s != NamedSharding(mesh, P())
  assert s.is_equivalent_to(NamedSharding(mesh, P()), 2)
  assert s.is_equivalent_to(SingleDeviceSharding(CPU), 2)
  assert not s.is_equivalent_to(SingleDeviceSharding(CPU, memory_kind="pinned_host"), 2)
  assert s.with_spec(("x",)).spec == P("x")
  assert repr(s) == ("NamedSharding(mesh=Mesh('x': 1, axis_types=(Explicit,)), "
                     "spec=P('x', None), memory_kind=device)")
  with pytest.raises(ValueError, match="only valid for values of rank at least 2"):
    s.shard_shape((4,))


def test_named_sharding_checks_its_spec(mesh):
  with pytest.raises(ValueError, match="Resource axis: y of P\\('y',\\) is not found"):
    NamedSharding(mesh, P("y"))
  with pytest.raises(ValueError, match="duplicate entries for `x`"):
    NamedSharding(mesh, P("x", "x"))
  with pytest.raises(TypeError, match="PartitionSpec"):
    NamedSharding(mesh, ("x",))


def test_named_sharding_of_an_abstract_mesh():
  s = NamedSharding(AbstractMesh((2, 4), ("x", "y")), P("x", "y"))
  assert s.shard_shape((8, 8)) == (4, 2) and not s.is_fully_replicated
  assert s.memory_kind is None and s.num_devices == 8
  with pytest.raises(ValueError, match="AbstractMesh"):
    s.device_set


def test_array_sharding_eager_and_jit(mesh):
  x = jnp.arange(3.0)
  assert x.sharding == SingleDeviceSharding(CPU) and x.committed
  assert jax.jit(lambda v: v * 2)(x).sharding == SingleDeviceSharding(CPU)
  assert (x + 1).sharding.device_set == {CPU}


def test_device_put_with_a_sharding(mesh):
  x = jax.device_put(np.arange(4.0), NamedSharding(mesh, P("x")))
  np.testing.assert_array_equal(x, np.arange(4.0))
  assert x.sharding.is_equivalent_to(NamedSharding(mesh, P("x")), 1)
  y = jax.device_put({"a": 1.0}, SingleDeviceSharding(CPU))
  assert float(y["a"]) == 1.0 and isinstance(y["a"], jax.Array)
  with jax.set_mesh(mesh):
    np.testing.assert_array_equal(jax.device_put(np.ones(2), P("x")), np.ones(2))
  with pytest.raises(ValueError, match="not under a mesh context"):
    jax.device_put(np.ones(2), P("x"))
  with pytest.raises(ValueError, match="only valid for values of rank at least 1"):
    jax.device_put(1.0, NamedSharding(mesh, P("x")))


def test_typeof_sharding():
  s = jax.typeof(jnp.ones((2, 3))).sharding
  assert s == NamedSharding(AbstractMesh((), ()), P(None, None))
  assert s.mesh.empty and jax.typeof(1.0).sharding.spec == P()

  def f(x):
    assert jax.typeof(x).sharding.spec == P(None)
    return x
  jax.jit(f)(jnp.ones(2))


def test_reshard_returns_equal_values(mesh):
  x = jnp.arange(4.0)
  assert jax.reshard(x, NamedSharding(mesh, P("x"))) is x
  with jax.set_mesh(mesh):
    tree = {"a": x, "b": (x, x)}
    out = jax.reshard(tree, P("x"))
    assert jax.tree_util.tree_structure(out) == jax.tree_util.tree_structure(tree)
    out = jax.reshard(tree, {"a": P("x"), "b": P()})
    np.testing.assert_array_equal(out["b"][1], x)
    np.testing.assert_array_equal(jax.jit(lambda v: jax.reshard(v * 2, P("x")))(x), x * 2)
    np.testing.assert_array_equal(jax.sharding.reshard(x, P()), x)


def test_reshard_checks_its_shardings(mesh):
  x = jnp.arange(4.0)
  with pytest.raises(ValueError, match="not under a mesh context"):
    jax.reshard(x, P("x"))
  with pytest.raises(TypeError, match="only supports instances of `NamedSharding`"):
    jax.reshard(x, SingleDeviceSharding(CPU))
  with pytest.raises(ValueError, match="nonempty mesh"):
    jax.reshard(x, None)
  with pytest.raises(ValueError, match="rank at least 2"):
    jax.reshard(x, NamedSharding(mesh, P("x", None)))


def test_auto_and_explicit_axes(mesh):
  seen = []

  def f(x):
    seen.append(get_abstract_mesh().axis_types)
    return x * 2

  with jax.set_mesh(mesh):
    out = auto_axes(f, out_sharding=P("x"))(jnp.arange(2.0))
    np.testing.assert_array_equal(out, [0.0, 2.0])
    out = explicit_axes(axes="x", in_sharding=P("x"))(f)(jnp.arange(2.0))
    np.testing.assert_array_equal(out, [0.0, 2.0])
    np.testing.assert_array_equal(auto_axes(f)(jnp.ones(1), out_sharding=P()), [2.0])
    with pytest.raises(TypeError, match="out_sharding"):
      auto_axes(f)(jnp.ones(1))
  assert seen == [(AxisType.Auto,), (AxisType.Explicit,), (AxisType.Auto,)]


def test_shape_dtype_struct_keeps_its_sharding(mesh):
  s = NamedSharding(mesh, P("x"))
  struct = jax.ShapeDtypeStruct((4,), np.float32, sharding=s)
  assert struct.sharding is s and jax.ShapeDtypeStruct((4,), np.float32).sharding is None
  assert struct != jax.ShapeDtypeStruct((4,), np.float32)
  assert "sharding=NamedSharding" in repr(struct)
  with jax.set_mesh(mesh):
    assert jax.ShapeDtypeStruct((4,), np.float32, sharding=P("x")).sharding.spec == P("x")
  with pytest.raises(TypeError, match="context mesh cannot be empty"):
    jax.ShapeDtypeStruct((4,), np.float32, sharding=P("x"))
  with pytest.raises(ValueError, match="sharding should be an instance"):
    jax.ShapeDtypeStruct((4,), np.float32, sharding="x")
  assert jax.jit(lambda v: v + 1).trace(struct).out_info.shape == (4,)


def test_array_delete():
  x = jnp.arange(3.0)
  assert not x.is_deleted()
  x.delete()
  assert x.is_deleted() and x.shape == (3,)
  with pytest.raises(RuntimeError, match=r"Array has been deleted with shape=float32\[3\]"):
    x + 1
  with pytest.raises(RuntimeError, match="deleted"):
    np.asarray(x)


def test_manual_axis_type():
  mat = ManualAxisType(varying={"x"})
  assert mat.varying == frozenset({"x"}) and mat.unreduced == frozenset()
  assert mat == ManualAxisType(varying=frozenset({"x"}))
  with pytest.raises(TypeError, match="`reduced` argument of ManualAxisType"):
    ManualAxisType(reduced=["x"])
