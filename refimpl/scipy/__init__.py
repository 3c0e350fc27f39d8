"""`refimpl.scipy`: SciPy functions built on lax, as `jax.scipy`."""

from refimpl.scipy import special  # noqa: F401
