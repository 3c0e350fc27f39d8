"""`refimpl.experimental`: JAX's experimental APIs, as `jax.experimental`.

`io_callback` is here; the submodules (`refimpl.experimental.checkify`,
`refimpl.experimental.ode`) are imported by name, as JAX's are.
"""

from refimpl.callback import io_callback  # noqa: F401

__all__ = ["io_callback"]
