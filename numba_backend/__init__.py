"""refimpl's `numba` backend: jaxprs compiled to native CPU code by Numba.

Importing this package registers the backend: select it with
`refimpl.config.update("backend", "numba")`, `REFIMPL_BACKEND=numba` or
`jit(f, backend="numba")` (refimpl finds it by its entry point, so it need
not be imported first). See docs/backends.md.
"""

from refimpl.backends import register_backend
from numba_backend.backend import compile

register_backend("numba", compile)
