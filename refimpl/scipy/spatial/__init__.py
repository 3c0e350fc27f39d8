"""`refimpl.scipy.spatial`: spatial algorithms, as `jax.scipy.spatial` (the `transform` module)."""

from refimpl.scipy.spatial import transform  # noqa: F401
