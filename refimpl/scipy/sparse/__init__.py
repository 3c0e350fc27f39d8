"""`refimpl.scipy.sparse`: as `jax.scipy.sparse`, the iterative linear solvers
of its `linalg` submodule (JAX has no sparse matrix types here)."""

from refimpl.scipy.sparse import linalg  # noqa: F401
