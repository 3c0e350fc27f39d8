"""refimpl: a readable reference implementation of JAX."""

from refimpl import tree_util
from refimpl.config import config
from refimpl.api import jit, make_jaxpr, ShapeDtypeStruct, eval_shape, devices, device_put, device_get, block_until_ready
from refimpl.array import Array
from refimpl import numpy, lax
