"""`refimpl.numpy`: the NumPy API built on lax, as `jax.numpy`.

Each module lists its public functions in `__all__`.
"""

from refimpl._lazy_loader import attach as _attach_lazy
from refimpl.numpy.util import is_arraylike  # noqa: F401
from refimpl.numpy.creation import *  # noqa: F401,F403
from refimpl.numpy.ufuncs import *  # noqa: F401,F403
from refimpl.numpy.reductions import *  # noqa: F401,F403
from refimpl.numpy.scalar_types import *  # noqa: F401,F403
from refimpl.numpy.manipulation import *  # noqa: F401,F403
from refimpl.numpy.products import *  # noqa: F401,F403
from refimpl.numpy.sorting import *  # noqa: F401,F403
from refimpl.numpy.convolution import *  # noqa: F401,F403
from refimpl.numpy.selection import *  # noqa: F401,F403
from refimpl.numpy.statistics import *  # noqa: F401,F403
from refimpl.numpy.polynomial import *  # noqa: F401,F403
from refimpl.numpy.utilities import *  # noqa: F401,F403
from refimpl.numpy.vectorize import *  # noqa: F401,F403
from refimpl.numpy.array_api import __array_api_version__, __array_namespace_info__  # noqa: F401

# Deliberately lazy: `jnp.fft` and `jnp.linalg` load on first attribute access
# (PEP 562), so that importing refimpl.numpy does not pay for them in programs
# that never use them; `import refimpl.numpy.linalg` works too.
__getattr__, __dir__ = _attach_lazy(__name__, ("fft", "linalg"))
del _attach_lazy
