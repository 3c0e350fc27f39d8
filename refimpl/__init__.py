"""refimpl: a readable reference implementation of JAX.

`import refimpl as jax; import refimpl.numpy as jnp` runs JAX programs with
JAX's semantics; each primitive's reference rule (NumPy) is the specification.
"""

from refimpl import tree_util, tree, errors, dtypes, debug  # noqa: F401
from refimpl.config import config, enable_x64, debug_nans, disable_jit  # noqa: F401
from refimpl.api import (jit, make_jaxpr, eval_shape, ShapeDtypeStruct,  # noqa: F401
                         devices, local_devices, device_count,
                         local_device_count, default_backend, device_put,
                         device_get, block_until_ready, typeof, clear_caches)
from refimpl.dtypes import float0  # noqa: F401
from refimpl.array import Array  # noqa: F401
from refimpl import numpy, lax, nn, scipy  # noqa: F401
from refimpl.backends import register_backend  # noqa: F401

__version__ = "0.1.0"
