"""`refimpl._src.compiler`, as `jax._src.compiler`: the one function through
which jit compiles, `backend_compile_and_load`. jit looks it up in this module
at every compile, so a library that replaces it (chex's `restrict_backends`
forbids compiling for a platform this way) sees every compile."""

from typing import Any, Callable, NamedTuple


class Backend(NamedTuple):
  """A jit backend as `backend_compile_and_load` receives it."""
  name: str
  """The backend's registered name ("reference", "numba", ...)."""
  compile: Callable[[Any], Callable]
  """Its compile function (refimpl.backends.register_backend's)."""
  platform: str
  """"gpu" for a device backend (its Arrays hold device buffers), else "cpu"."""


def backend_compile_and_load(backend, jaxpr):
  """`backend`'s program for `jaxpr` (a ClosedJaxpr without consts, taking
  physical data): what its compile function returns."""
  return backend.compile(jaxpr)
