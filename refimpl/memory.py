"""`refimpl.memory`: the memory spaces an array may live in, as `jax.memory`."""

import enum

__all__ = ["Space"]


class Space(enum.Enum):
  """A memory space: a device's own memory, the host's, or any. refimpl's
  reference backend keeps every array in host memory, which is its device's
  (docs/sharding.md); `device_put(x, Space.Host)` copies a device backend's
  buffer to the host, `Space.Device` (or `Any`) puts `x` on the default
  device."""

  Device = enum.auto()
  Host = enum.auto()
  Any = enum.auto()

  def __repr__(self):
    return f"MemorySpace.{self.name}"   # (JAX's class is core.MemorySpace)

  __str__ = __repr__
