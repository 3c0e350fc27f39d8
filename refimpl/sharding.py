"""`jax.sharding`: meshes, partition specs and shardings, with their
single-device meaning (docs/sharding.md).

refimpl runs every program on one device, so a concrete `Mesh` holds at most
that device (its axes all have size 1), every concrete sharding places the
whole array on it (fully replicated, fully addressable, shard shape = global
shape), and `reshard`, `auto_axes` and `explicit_axes` leave values as they
are. The objects, their checks and the mesh context (`set_mesh`,
`get_abstract_mesh`, ...) are JAX's, so that code written for many devices
runs unchanged on one.
"""

import collections
import enum
import functools
import math
import threading

import numpy as np

from refimpl import core, tree_util


# --- partition specs ---------------------------------------------------------

class _Unconstrained:
  """`PartitionSpec.UNCONSTRAINED`: a dimension whose partitioning is left open."""

  def __repr__(self):
    return "UNCONSTRAINED"


def _canonicalize_partition(partition):
  """One entry of a spec: None, UNCONSTRAINED, an axis name, or a tuple of
  them (an empty sequence is None, a 1-sequence its element)."""
  if partition is None or partition is PartitionSpec.UNCONSTRAINED:
    return partition
  if isinstance(partition, (tuple, list)):
    if not partition:
      return None
    return partition[0] if len(partition) == 1 else tuple(partition)
  return partition


def _axis_names_of(partition):
  """The mesh axis names a spec entry uses."""
  if partition is None or partition is PartitionSpec.UNCONSTRAINED:
    return ()
  return partition if isinstance(partition, tuple) else (partition,)


def _as_frozenset(value, name, owner="PartitionSpec"):
  if not isinstance(value, (set, frozenset)):
    raise TypeError(f"`{name}` argument of {owner} should be of type `frozenset` or "
                    f"`set`. Got type {type(value)}")
  return frozenset(value)


class PartitionSpec:
  """How each dimension of an array is partitioned over mesh axes: per
  dimension None (not partitioned), an axis name, or a tuple of axis names;
  `unreduced`/`reduced` name axes over which the value is a partial sum /
  replicated for a later reduction. Iterable, indexable and hashable; equal
  to the tuple of its entries when it has neither."""

  __match_args__ = ("_partitions",)
  UNCONSTRAINED = _Unconstrained()

  def __init__(self, *partitions, unreduced=frozenset(), reduced=frozenset()):
    self._partitions = tuple(_canonicalize_partition(p) for p in partitions)
    self.unreduced = _as_frozenset(unreduced, "unreduced")
    self.reduced = _as_frozenset(reduced, "reduced")
    used = {n for p in self._partitions for n in _axis_names_of(p)}
    if used & self.unreduced:
      raise ValueError("partitions cannot overlap with unreduced axes passed to PartitionSpec. "
                       f"Got partitions: {self._partitions} and unreduced axes: {unreduced}")

  def __repr__(self):
    entries = repr(self._partitions)[1:-1]
    extra = ", ".join(f"{name}={set(axes)!r}" for name, axes in
                      (("unreduced", self.unreduced), ("reduced", self.reduced)) if axes)
    if extra and entries:
      entries += " " if entries.endswith(",") else ", "
    return f"P({entries}{extra})"

  def __getitem__(self, i):
    return self._partitions[i]

  def __iter__(self):
    return iter(self._partitions)

  def __len__(self):
    return len(self._partitions)

  def _without_axes_for(self, other, op):
    if self.unreduced or self.reduced:
      raise TypeError(f"other {other} cannot be of instance `tuple` when self {self} has "
                      f"unreduced or reduced axes in `{op}` of PartitionSpec.")

  def __eq__(self, other):
    if isinstance(other, PartitionSpec):
      return (self._partitions == other._partitions and self.unreduced == other.unreduced
              and self.reduced == other.reduced)
    if isinstance(other, tuple):
      self._without_axes_for(other, "__eq__")
      return self._partitions == tuple(_canonicalize_partition(o) for o in other)
    return False

  def __hash__(self):
    return hash((self._partitions, self.unreduced, self.reduced))

  def __add__(self, other):
    if isinstance(other, PartitionSpec):
      return PartitionSpec(*self, *other, unreduced=self.unreduced | other.unreduced,
                           reduced=self.reduced | other.reduced)
    if isinstance(other, tuple):
      self._without_axes_for(other, "__add__")
      return PartitionSpec(*self, *other)
    return NotImplemented

  def __radd__(self, other):
    if not isinstance(other, tuple):
      return NotImplemented
    self._without_axes_for(other, "__radd__")
    return PartitionSpec(*other, *self)

  def index(self, value):
    return self._partitions.index(_canonicalize_partition(value))

  def count(self, value):
    return self._partitions.count(_canonicalize_partition(value))

  def update(self, *, partitions=None, unreduced=None, reduced=None):
    """A copy with `partitions`, `unreduced` or `reduced` replaced."""
    return PartitionSpec(*(self._partitions if partitions is None else partitions),
                         unreduced=self.unreduced if unreduced is None else unreduced,
                         reduced=self.reduced if reduced is None else reduced)

  def _check_compatible_wrt_shape(self, shape, what=None):
    if len(shape) < len(self._partitions):
      extra = " For scalars the PartitionSpec should be P()" if len(shape) == 0 else ""
      raise ValueError(f"{what or f'PartitionSpec {self}'} is only valid for values of rank "
                       f"at least {len(self._partitions)}, but was applied to a value of rank "
                       f"{len(shape)}.{extra}")


# --- meshes ------------------------------------------------------------------

class AxisType(enum.Enum):
  """How a mesh axis is partitioned: by the compiler (Auto), in the types of
  values (Explicit), or by the program itself, inside `shard_map` (Manual)."""
  Auto = enum.auto()
  Explicit = enum.auto()
  Manual = enum.auto()

  def __repr__(self):
    return self.name


def _normalize_axis_types(axis_names, axis_types, name):
  axis_types = (AxisType.Auto,) * len(axis_names) if axis_types is None else axis_types
  if not isinstance(axis_types, tuple):
    axis_types = (axis_types,)
  if not all(isinstance(a, AxisType) for a in axis_types):
    raise TypeError(f"axis_types passed to {name} must be of type `jax.sharding.AxisType`. "
                    f"Got {axis_types} of type {tuple(type(a) for a in axis_types)}")
  if len(axis_names) != len(axis_types):
    raise ValueError("Number of axis names should match the number of axis_types. Got "
                     f"axis_names={axis_names} and axis_types={axis_types}")
  return axis_types


class _BaseMesh:
  """What concrete and abstract meshes share: axis names, sizes and types."""

  @property
  def shape(self):
    """The axis sizes by axis name, in axis order."""
    return collections.OrderedDict(zip(self.axis_names, self.axis_sizes))

  @property
  def shape_tuple(self):
    return tuple(zip(self.axis_names, self.axis_sizes))

  @property
  def size(self):
    """The number of devices (0 for the empty mesh)."""
    return math.prod(self.axis_sizes) if self.axis_names else 0

  @property
  def empty(self):
    return self.size == 0

  def _axes_of_type(self, axis_type):
    return tuple(n for n, t in zip(self.axis_names, self.axis_types) if t is axis_type)

  auto_axes = property(lambda self: self._axes_of_type(AxisType.Auto))
  explicit_axes = property(lambda self: self._axes_of_type(AxisType.Explicit))
  manual_axes = property(lambda self: self._axes_of_type(AxisType.Manual))
  are_all_axes_auto = property(lambda self: bool(self.axis_names)
                               and len(self.auto_axes) == len(self.axis_names))
  are_all_axes_explicit = property(lambda self: bool(self.axis_names)
                                   and len(self.explicit_axes) == len(self.axis_names))
  are_all_axes_manual = property(lambda self: bool(self.axis_names)
                                 and len(self.manual_axes) == len(self.axis_names))

  @property
  def _name_to_type(self):
    return dict(zip(self.axis_names, self.axis_types))


class Mesh(_BaseMesh):
  """An array of devices with named axes (`devices.ndim == len(axis_names)`).
  refimpl runs a program on one device, so a mesh holds at most one: every
  axis has size 1. Usable as a context manager (JAX's legacy mesh context,
  which sets no mesh for `get_mesh`; `jax.set_mesh` does)."""

  def __init__(self, devices, axis_names, axis_types=None):
    devices = np.array(devices, dtype=object) if not isinstance(devices, np.ndarray) else devices
    axis_names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
    if any(n is None for n in axis_names):
      raise ValueError(f"Mesh axis names cannot be None. Got: {axis_names}")
    if devices.ndim != len(axis_names):
      raise ValueError(
          "Mesh requires the ndim of its first argument (`devices`) to equal the length of its "
          "second argument (`axis_names`), but got devices.ndim == "
          f"{devices.ndim} and len(axis_names) == {len(axis_names)}.")
    if devices.ndim and devices.size > 1:
      raise ValueError(f"A Mesh holds at most one device in refimpl, which runs every program "
                       f"on one device; got {devices.size} of shape {devices.shape}.")
    self.devices = devices.copy()
    self.devices.flags.writeable = False
    self.axis_names = axis_names
    self.axis_types = _normalize_axis_types(axis_names, axis_types, "Mesh")

  axis_sizes = property(lambda self: self.devices.shape)

  def _key(self):
    return (self.axis_names, self.devices.shape, tuple(self.devices.flat), self.axis_types)

  def __eq__(self, other):
    return self is other or (isinstance(other, Mesh) and self._key() == other._key())

  def __hash__(self):
    return hash(self._key())

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    return False

  def update(self, devices=None, axis_names=None, axis_types=None):
    return Mesh(self.devices if devices is None else devices,
                self.axis_names if axis_names is None else axis_names,
                self.axis_types if axis_types is None else axis_types)

  @property
  def device_ids(self):
    return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

  @property
  def local_devices(self):
    return [] if self.empty else list(self.devices.flat)

  @property
  def local_mesh(self):
    return self

  is_multi_process = False

  @property
  def abstract_mesh(self):
    """The AbstractMesh of the same axes (and the kind of its device)."""
    device = None if self.empty else self.devices.flat[0]
    abstract_device = None if device is None else AbstractDevice(
        device_kind=device.device_kind, num_cores=None, platform=device.platform)
    return AbstractMesh(self.axis_sizes, self.axis_names, self.axis_types,
                        abstract_device=abstract_device)

  def __str__(self):
    sizes = ", ".join(f"'{k}': {v}" for k, v in self.shape.items())
    return f"Mesh({sizes}, axis_types={self.axis_types})"

  def __repr__(self):
    if self.empty:
      return "Mesh(axis_sizes=(), axis_names=())"
    return (f"Mesh(axis_sizes={self.axis_sizes}, axis_names={self.axis_names!r}, "
            f"axis_types={self.axis_types})")


class _Record:
  """An immutable value of named fields (`_fields`), equal and hashed by them
  (a dataclass would cost `import refimpl` a millisecond)."""

  __slots__ = ()

  def __init__(self, *args, **kwargs):
    for name, value in zip(self._fields, args):
      kwargs[name] = value
    for name, default in zip(self._fields, self._defaults):
      object.__setattr__(self, name, kwargs.pop(name, default))
    if kwargs:
      raise TypeError(f"{type(self).__name__}() got unexpected arguments {sorted(kwargs)}")

  def __setattr__(self, name, value):
    raise AttributeError(f"cannot assign to field {name!r}")

  def _values(self):
    return tuple(getattr(self, name) for name in self._fields)

  def __eq__(self, other):
    return type(other) is type(self) and other._values() == self._values()

  def __hash__(self):
    return hash(self._values())

  def __repr__(self):
    fields = ", ".join(f"{n}={v!r}" for n, v in zip(self._fields, self._values()))
    return f"{type(self).__name__}({fields})"


class AbstractDevice(_Record):
  """The kind of device an AbstractMesh stands for."""
  __slots__ = _fields = ("device_kind", "num_cores", "platform")
  _defaults = (None, None, None)

  def __init__(self, device_kind, num_cores, platform):
    super().__init__(device_kind, num_cores, platform)


class AbstractMesh(_BaseMesh):
  """Axis names, sizes and types without devices (what tracing sees, as
  `get_abstract_mesh()`); any sizes are allowed."""

  def __init__(self, axis_sizes, axis_names, axis_types=None, *, abstract_device=None):
    self.axis_sizes = tuple(axis_sizes)
    self.axis_names = tuple(axis_names)
    self.axis_types = _normalize_axis_types(self.axis_names, axis_types, "AbstractMesh")
    self.abstract_device = abstract_device

  def _key(self):
    return (self.axis_sizes, self.axis_names, self.axis_types, self.abstract_device)

  def __eq__(self, other):
    return self is other or (isinstance(other, AbstractMesh) and self._key() == other._key())

  def __hash__(self):
    return hash(self._key())

  def __repr__(self):
    sizes = ", ".join(f"'{n}': {v}" for n, v in self.shape_tuple) or "()"
    device = self.abstract_device
    device = "" if device is None else (f", device_kind={device.device_kind}, "
                                        f"num_cores={device.num_cores}")
    return f"AbstractMesh({sizes}, axis_types={self.axis_types}{device})"

  def update(self, axis_sizes=None, axis_names=None, axis_types=None, **kwargs):
    kwargs.setdefault("abstract_device", self.abstract_device)
    return AbstractMesh(self.axis_sizes if axis_sizes is None else axis_sizes,
                        self.axis_names if axis_names is None else axis_names,
                        self.axis_types if axis_types is None else axis_types, **kwargs)

  def update_axis_types(self, name_to_type):
    return self.update(axis_types=tuple(name_to_type.get(n, t)
                                        for n, t in zip(self.axis_names, self.axis_types)))

  @property
  def abstract_mesh(self):
    return self

  @property
  def devices(self):
    raise ValueError("AbstractMesh does not implement devices")


_EMPTY_MESH = Mesh(np.empty((), dtype=object), ())
_EMPTY_ABSTRACT_MESH = AbstractMesh((), ())


class _MeshContext(threading.local):
  """This thread's mesh set by `set_mesh` and its abstract mesh."""

  def __init__(self):
    self.mesh = _EMPTY_MESH
    self.abstract_mesh = _EMPTY_ABSTRACT_MESH


_context = _MeshContext()


def _check_outside_jit(name):
  if not core.evaluating_eagerly():
    raise ValueError(f"`{name}` can only be used outside of `jax.jit`.")


class set_mesh:  # noqa: N801 (JAX's name)
  """Sets the mesh of this thread (`jax.set_mesh(mesh)`, None for none) at
  once; used as a context manager, the previous mesh returns when the block
  exits. Outside of `jit` only."""

  __slots__ = ("prev_mesh", "prev_abstract_mesh")

  def __init__(self, mesh):
    if mesh is not None and not isinstance(mesh, Mesh):
      raise ValueError(f"Expected mesh of type `jax.sharding.Mesh`. Got {type(mesh)}")
    _check_outside_jit("set_mesh")
    if mesh is not None and mesh.manual_axes:
      raise ValueError(f"mesh {mesh} contains manual axes which is not allowed when using "
                       "`jax.set_mesh`. Please use `jax.shard_map` to enter into `Manual` "
                       "mode instead.")
    mesh = _EMPTY_MESH if mesh is None else mesh
    self.prev_mesh, self.prev_abstract_mesh = _context.mesh, _context.abstract_mesh
    _context.mesh, _context.abstract_mesh = mesh, mesh.abstract_mesh

  def __enter__(self):
    return None

  def __exit__(self, *exc):
    _context.mesh, _context.abstract_mesh = self.prev_mesh, self.prev_abstract_mesh
    return False


def get_mesh():
  """The mesh `set_mesh` set (the empty mesh when none). Outside of `jit` only."""
  if not core.evaluating_eagerly():
    raise ValueError("`get_mesh` can only be used outside of `jax.jit`. Maybe you want "
                     "`jax.sharding.get_abstract_mesh()`?")
  return _context.mesh


def get_abstract_mesh():
  """The abstract mesh in context: that of the mesh `set_mesh` set, or the one
  `use_abstract_mesh` set (empty when none)."""
  return _context.abstract_mesh


class use_abstract_mesh:  # noqa: N801 (JAX's name)
  """Context manager: `mesh` (an AbstractMesh) is `get_abstract_mesh()` within the block."""

  __slots__ = ("mesh", "prev")

  def __init__(self, mesh):
    if not isinstance(mesh, AbstractMesh):
      raise ValueError("Expected mesh of type `jax.sharding.AbstractMesh`. Got type: "
                       f"{type(mesh)}")
    self.mesh = mesh

  def __enter__(self):
    self.prev, _context.abstract_mesh = _context.abstract_mesh, self.mesh

  def __exit__(self, *exc):
    _context.abstract_mesh = self.prev
    return False


def make_mesh(axis_shapes, axis_names, axis_types=None, *, devices=None):
  """A Mesh of these axis sizes and names over the first devices (by default
  of `jax.devices()`); its axes are Explicit unless `axis_types` says
  otherwise. More devices than there are is a ValueError, as in JAX."""
  from refimpl.api import devices as all_devices   # (refimpl.api uses this module)
  devices = list(all_devices() if devices is None else devices)
  try:
    sizes = tuple(int(s) if int(s) == s else None for s in axis_shapes)
  except TypeError:
    sizes = (None,)
  if None in sizes:
    raise ValueError("`axis_shapes` passed to `make_mesh` should be a sequence of ints. "
                     f"Got {axis_shapes}")
  size = math.prod(sizes)
  if size > len(devices):
    raise ValueError(f"Number of devices {len(devices)} must be >= the product of mesh_shape "
                     f"{sizes}")
  if axis_types is None:
    axis_types = (AxisType.Explicit,) * len(sizes)
  mesh_devices = np.empty(size, dtype=object)
  mesh_devices[:] = devices[:size]
  return Mesh(mesh_devices.reshape(sizes), axis_names, axis_types)


class ManualAxisType(_Record):
  """Over which manual (`shard_map`) mesh axes a value varies, is unreduced or reduced."""
  __slots__ = _fields = ("varying", "unreduced", "reduced")
  _defaults = (frozenset(),) * 3

  def __init__(self, *, varying=frozenset(), unreduced=frozenset(), reduced=frozenset()):
    super().__init__(*(_as_frozenset(v, n, "ManualAxisType") for v, n in
                       ((varying, "varying"), (unreduced, "unreduced"), (reduced, "reduced"))))


# --- shardings ---------------------------------------------------------------

class Sharding:
  """How an array is laid out across devices. Every concrete sharding in
  refimpl holds one device, which holds the whole array."""

  device_set = property(lambda self: set(self._device_assignment),
                        doc="The devices the sharding spans.")
  is_fully_replicated = property(lambda self: True,
                                 doc="Whether every device holds the whole array.")
  is_fully_addressable = property(lambda self: True,
                                  doc="Whether this process addresses all its devices.")
  num_devices = property(lambda self: len(self._device_assignment))
  addressable_devices = property(lambda self: self.device_set)

  @property
  def _device_assignment(self):
    raise NotImplementedError("Subclasses should implement this method.")

  @property
  def memory_kind(self):
    raise NotImplementedError("Subclasses should implement this method.")

  def with_memory_kind(self, kind):
    raise NotImplementedError("Subclasses should implement this method.")

  @property
  def _device(self):
    """The one device (machinery: `device_put` onto a sharding)."""
    return self._device_assignment[0]

  def shard_shape(self, global_shape):
    """The shape of the data on each device: the whole shape on one device."""
    return tuple(global_shape)

  def devices_indices_map(self, global_shape):
    """{device: the index of the array's part it holds}: the whole array."""
    self.shard_shape(global_shape)   # (its checks)
    return {d: (slice(None),) * len(global_shape) for d in self._device_assignment}

  addressable_devices_indices_map = devices_indices_map

  def is_equivalent_to(self, other, ndim):
    """Whether both place the same parts on the same devices, in the same memory
    (on one device: the same device and memory kind)."""
    return (self._device_assignment == other._device_assignment
            and self.memory_kind == other.memory_kind)


def _memory_kind(kind):
  """A concrete sharding's memory kind: its device's default memory unless given."""
  return "device" if kind is None else kind


class SingleDeviceSharding(Sharding):
  """The sharding that places the whole array on `device`."""

  def __init__(self, device, *, memory_kind=None):
    self._single_device = device
    self._memory_kind = _memory_kind(memory_kind)

  _device_assignment = property(lambda self: (self._single_device,))
  memory_kind = property(lambda self: self._memory_kind)

  def with_memory_kind(self, kind):
    return SingleDeviceSharding(self._single_device, memory_kind=kind)

  def __eq__(self, other):
    return (isinstance(other, SingleDeviceSharding) and self._single_device == other._single_device
            and self._memory_kind == other._memory_kind)

  def __hash__(self):
    return hash((self._single_device, self._memory_kind))

  def __repr__(self):
    return f"SingleDeviceSharding(device={self._single_device!r}, memory_kind={self._memory_kind})"


def make_single_device_sharding(device, *, memory_kind=None):
  return SingleDeviceSharding(device, memory_kind=memory_kind)


class NamedSharding(Sharding):
  """A mesh and a PartitionSpec of its axis names: dimension i of the array is
  split over the mesh axes `spec[i]`. The spec's axes must be the mesh's, each
  used once; with a concrete mesh (one device) every split is into one part."""

  def __init__(self, mesh, spec, *, memory_kind=None):
    if not isinstance(mesh, (Mesh, AbstractMesh)):
      raise TypeError(f"mesh should be of type `jax.sharding.Mesh` or "
                      f"`jax.sharding.AbstractMesh`. Got {mesh} of type {type(mesh)}")
    if not isinstance(spec, PartitionSpec):
      raise TypeError(f"spec should be of type `jax.sharding.PartitionSpec`. Got {spec} of "
                      f"type {type(spec)}")
    self.mesh, self.spec = mesh, spec
    self._memory_kind = memory_kind if isinstance(mesh, AbstractMesh) else _memory_kind(
        memory_kind)
    _check_spec(mesh, spec)

  memory_kind = property(lambda self: self._memory_kind)
  num_devices = property(lambda self: self.mesh.size)

  @property
  def _device_assignment(self):
    if isinstance(self.mesh, AbstractMesh):
      raise ValueError("_device_assignment is not implemented for `jax.sharding.AbstractMesh`.")
    return tuple(self.mesh.devices.flat)

  @property
  def is_fully_addressable(self):
    self._device_assignment  # (AbstractMesh: its error)
    return True

  @property
  def is_fully_replicated(self):
    shape = self.mesh.shape
    return math.prod(shape[n] for p in self.spec for n in _axis_names_of(p)) == 1

  def with_memory_kind(self, kind):
    return NamedSharding(self.mesh, self.spec, memory_kind=kind)

  def with_spec(self, spec):
    spec = spec if isinstance(spec, PartitionSpec) else PartitionSpec(*spec)
    return NamedSharding(self.mesh, spec, memory_kind=self.memory_kind)

  def update(self, *, mesh=None, spec=None, memory_kind=None):
    """A copy with `mesh`, `spec` or `memory_kind` replaced."""
    return NamedSharding(self.mesh if mesh is None else mesh,
                         self.spec if spec is None else spec,
                         memory_kind=self.memory_kind if memory_kind is None else memory_kind)

  def check_compatible_aval(self, aval_shape):
    self.spec._check_compatible_wrt_shape(aval_shape, f"Sharding {self}")

  def shard_shape(self, global_shape):
    """Each dimension divided by the product of its mesh axes' sizes (all 1 on a
    concrete mesh); a size they do not divide is a ValueError."""
    self.check_compatible_aval(global_shape)
    sizes = self.mesh.shape
    out = []
    for dim, (size, entry) in enumerate(zip(global_shape, (*self.spec, *[None] * len(
        global_shape)))):
      parts = math.prod(sizes[n] for n in _axis_names_of(entry))
      if size % parts:
        raise ValueError(f"Sharding {self} implies that array axis {dim} is partitioned "
                         f"{parts} times, but the dimension size is {size} (full shape: "
                         f"{tuple(global_shape)})")
      out.append(size // parts)
    return tuple(out)

  def __eq__(self, other):
    return self is other or (isinstance(other, NamedSharding) and self.spec == other.spec
                             and self.memory_kind == other.memory_kind
                             and self.mesh == other.mesh)

  def __hash__(self):
    return hash((self.mesh, self.memory_kind, self.spec))

  def __repr__(self):
    memory = "" if self.memory_kind is None else f", memory_kind={self.memory_kind}"
    return f"NamedSharding(mesh={self.mesh}, spec={self.spec}{memory})"


def _check_spec(mesh, spec):
  """JAX's checks of a NamedSharding's spec against its mesh."""
  counts = collections.Counter(n for p in spec for n in _axis_names_of(p))
  if duplicates := sorted(f"`{n}`" for n, c in counts.items() if c > 1):
    raise ValueError("A single NamedSharding spec specification can map every mesh axis to at "
                     f"most one positional dimension, but {spec} has duplicate entries for "
                     f"{', '.join(duplicates)}")
  types = mesh._name_to_type
  for p in spec:
    for name in _axis_names_of(p):
      if name not in types:
        raise ValueError(f"Resource axis: {name} of {spec} is not found in mesh: "
                         f"{tuple(mesh.shape.keys())}.")
  for kind, axes in (("Unreduced", spec.unreduced), ("Reduced", spec.reduced)):
    for name in axes:
      if name not in types:
        raise ValueError(f"{kind} axes {name} is not found in mesh.axis_names="
                         f"{mesh.axis_names}. Got pspec={spec}")
      if types[name] is not AxisType.Explicit:
        raise ValueError(f"{kind} axes can only refer to mesh axes that is of type `Explicit`."
                         f" Got {kind.lower()} axes: {axes} and mesh: {mesh}")


@functools.cache
def empty_sharding(ndim):
  """The sharding of an unsharded value's type (`typeof(x).sharding`): no
  mesh, no dimension partitioned."""
  return NamedSharding(_EMPTY_ABSTRACT_MESH, PartitionSpec(*[None] * ndim))


def device_of(sharding):
  """The device a Sharding (or a PartitionSpec over the mesh `set_mesh` set)
  places arrays on: its one device."""
  if isinstance(sharding, PartitionSpec):
    if _context.mesh.empty:
      raise ValueError("Using PartitionSpec when you are not under a mesh context is not "
                       "allowed. Please pass a NamedSharding instance or enter into a mesh "
                       f"context via `jax.set_mesh`. Got {sharding}")
    sharding = NamedSharding(_context.mesh, sharding)
  return sharding._device


# --- resharding ----------------------------------------------------------------

def _out_sharding(sharding, api_name):
  """`sharding` (a NamedSharding or a PartitionSpec over the abstract mesh in
  context) checked as JAX checks the sharding a value is cast to."""
  if sharding is None or isinstance(sharding, NamedSharding) and sharding.mesh.empty:
    raise ValueError(f"{api_name} should only be used with out_shardings which are non-None "
                     f"and have a nonempty mesh. Got sharding {sharding}.")
  if isinstance(sharding, PartitionSpec):
    mesh = get_abstract_mesh()
    if mesh.empty:
      raise ValueError("Using PartitionSpec when you are not under a mesh context is not "
                       "allowed. Please pass a NamedSharding instance or enter into a mesh "
                       f"context via `jax.set_mesh`. Got {sharding}")
    sharding = NamedSharding(mesh, sharding)
  elif not isinstance(sharding, NamedSharding):
    raise TypeError(f"`out_sharding` argument of {api_name} only supports instances of "
                    f"`NamedSharding` or `PartitionSpec`. Got {sharding} of type: "
                    f"{type(sharding)}")
  return sharding


def check_out_sharding(sharding, api_name, any_sharding=False):
  """JAX's checks of an operation's `out_sharding`: None, a NamedSharding, or a
  PartitionSpec over the mesh in context (with `any_sharding`, any Sharding);
  anything else raises as in JAX. Every sharding places the result on the one
  device, so a valid one changes nothing."""
  if sharding is None or any_sharding and isinstance(sharding, Sharding):
    return
  if not (isinstance(sharding, NamedSharding) and sharding.mesh.empty):
    _out_sharding(sharding, api_name)


def _cast(xs, shardings, api_name):
  """`xs` as they are, after checking `shardings` (a sharding for every leaf,
  or a pytree prefix of `xs` of them) against them."""
  def cast_subtree(sharding, subtree):
    sharding = _out_sharding(sharding, api_name)
    for leaf in tree_util.tree_leaves(subtree):
      sharding.check_compatible_aval(np.shape(leaf))
    return subtree
  return tree_util.tree_map(cast_subtree, shardings, xs, is_leaf=lambda s: s is None)


def reshard(xs, out_shardings):
  """Each array of `xs` resharded to its sharding in `out_shardings`: on one
  device, the same values (the shardings are checked as JAX checks them)."""
  return _cast(xs, out_shardings, "reshard")


def _axis_types_wrapper(f, axes, sharding, axis_type, sharding_name, in_inputs):
  """`f` run with the mesh axes `axes` (all by default) made `axis_type` in
  the abstract mesh, its inputs or outputs cast to `sharding` (a keyword
  argument of the call when not given here)."""
  @functools.wraps(f)
  def wrapped(*args, **kwargs):
    cast_to = sharding if sharding is not None else kwargs.pop(sharding_name, None)
    if cast_to is None:
      raise TypeError(f"Missing required keyword argument: '{sharding_name}'")
    mesh = get_abstract_mesh()
    names = mesh.axis_names if axes is None else (axes,) if isinstance(axes, str) else axes
    if unknown := [n for n in names if n not in mesh.axis_names]:
      raise ValueError(f"axes {unknown} are not axes of the mesh in context {mesh}")
    if in_inputs:
      args = _cast(args, cast_to, wrapped.__name__)
    with use_abstract_mesh(mesh.update_axis_types({n: axis_type for n in names})):
      out = f(*args, **kwargs)
    return out if in_inputs else _cast(out, cast_to, wrapped.__name__)
  return wrapped


def auto_axes(f=None, /, *, axes=None, out_sharding=None):
  """Decorator: `f` runs with mesh axes `axes` Auto; its outputs are cast to
  `out_sharding`. On one device, f's values."""
  if f is None:
    return functools.partial(auto_axes, axes=axes, out_sharding=out_sharding)
  return _axis_types_wrapper(f, axes, out_sharding, AxisType.Auto, "out_sharding", False)


def explicit_axes(f=None, /, *, axes=None, in_sharding=None):
  """Decorator: `f` runs with mesh axes `axes` Explicit, its inputs cast to
  `in_sharding`. On one device, f's values."""
  if f is None:
    return functools.partial(explicit_axes, axes=axes, in_sharding=in_sharding)
  return _axis_types_wrapper(f, axes, in_sharding, AxisType.Explicit, "in_sharding", True)
