"""`refimpl.extend`: interfaces for building on refimpl's internals, as
`jax.extend` (its `core`: primitives, jaxprs and traces)."""

from refimpl.extend import core  # noqa: F401
