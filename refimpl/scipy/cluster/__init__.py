"""`refimpl.scipy.cluster`: clustering, as `jax.scipy.cluster` (the `vq` module)."""

from refimpl.scipy.cluster import vq  # noqa: F401
