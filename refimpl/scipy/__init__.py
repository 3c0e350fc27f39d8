"""`refimpl.scipy`: SciPy functions built on lax, as `jax.scipy`."""

from refimpl._lazy_loader import attach as _attach_lazy
from refimpl.scipy import special  # noqa: F401

# `stats` loads on first attribute access (PEP 562), as in JAX; it also needs
# refimpl.nn, which itself imports `special`.
__getattr__, __dir__ = _attach_lazy(__name__, ("stats",))
del _attach_lazy
