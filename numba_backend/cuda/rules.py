"""The CPU rules the numba-cuda backend runs as they are: those that emit
only allocations, views, strided copies (`KernelLowering.strided_copy`) and
loops over elements, all of which the kernel lowering places on the device."""

from refimpl.lax import shapes as lax
from numba_backend.cuda.lower import CUDA_RULES
from numba_backend.lower import RULES

for _primitive in (lax.broadcast_in_dim_p, lax.reshape_p, lax.squeeze_p, lax.transpose_p):
  CUDA_RULES[_primitive] = RULES[_primitive]
