"""`refimpl.nn`: neural-network functions, as `jax.nn`.

`jax.nn.initializers` is not here yet: it needs the PRNG.
"""

from refimpl.nn.functions import *  # noqa: F401,F403
from refimpl.nn.functions import __all__  # noqa: F401
