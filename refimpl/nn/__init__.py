"""`refimpl.nn`: neural-network functions, as `jax.nn`, and the weight
initializers of `jax.nn.initializers` (`refimpl.nn.initializers`)."""

from refimpl.nn.functions import *  # noqa: F401,F403
from refimpl.nn.scaled import *  # noqa: F401,F403
from refimpl.nn import functions as _functions, initializers, scaled as _scaled  # noqa: F401

__all__ = _functions.__all__ + _scaled.__all__
