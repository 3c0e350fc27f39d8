"""`refimpl.scipy`: SciPy functions built on lax, as `jax.scipy`."""

from refimpl._lazy_loader import attach as _attach_lazy
from refimpl.scipy import special  # noqa: F401

# The others load on first attribute access (PEP 562), as in JAX (`stats` also
# needs refimpl.nn, which itself imports `special`).
__getattr__, __dir__ = _attach_lazy(__name__, (
    "cluster", "fft", "integrate", "interpolate", "linalg", "ndimage", "optimize", "signal",
    "sparse", "spatial", "stats"))
del _attach_lazy
