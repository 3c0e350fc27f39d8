"""The CPU rules the numba-cuda backend runs as they are: those that emit
only allocations, views, strided copies (`Lowering.strided_copy` and the
like) and loops over elements, all of which the kernel lowering places on
the device."""

from refimpl.lax import elementwise, indexing, shapes as lax
from numba_backend.cuda.lower import CUDA_RULES
from numba_backend.lower import RULES

for _primitive in (lax.broadcast_in_dim_p, lax.reshape_p, lax.squeeze_p, lax.transpose_p,
                   lax.rev_p, lax.concatenate_p, lax.split_p, lax.tile_p, lax.pad_p, lax.iota_p,
                   lax.optimization_barrier_p, indexing.slice_p, indexing.dynamic_slice_p,
                   indexing.dynamic_update_slice_p, elementwise.bitcast_convert_type_p):
  CUDA_RULES[_primitive] = RULES[_primitive]
