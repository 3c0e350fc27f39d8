"""The lowering rules, one module per family of refimpl/lax (the same names):
importing this package registers them all."""

from numba_backend.rules import elementwise, shapes  # noqa: F401
