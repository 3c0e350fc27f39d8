"""`refimpl.experimental`: JAX's experimental APIs, as `jax.experimental`."""
