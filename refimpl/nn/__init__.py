"""`refimpl.nn`: neural-network functions, as `jax.nn`, and the weight
initializers of `jax.nn.initializers` (`refimpl.nn.initializers`)."""

from refimpl.nn.functions import *  # noqa: F401,F403
from refimpl.nn.functions import __all__  # noqa: F401
from refimpl.nn import initializers  # noqa: F401
