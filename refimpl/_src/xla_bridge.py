"""`refimpl._src.xla_bridge`, as `jax._src.xla_bridge`: `_backends`, the
platforms whose backends are initialized. refimpl's CPU is, from import on:
settings that XLA reads when it starts (XLA_FLAGS' host device count, which
chex's `set_n_cpu_devices` writes) have no effect (docs/sharding.md)."""

from refimpl.api import devices

_backends = {"cpu": devices("cpu")}
"""Platform -> its devices, for the initialized backends."""
