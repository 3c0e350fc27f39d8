"""The CPU rules the numba-cuda backend runs as they are: those that emit
only allocations, views, strided copies (`Lowering.strided_copy` and the
like), loops over elements, sub-jaxprs written inline, and calls of
functions that have a counterpart on the host (`HOST_FUNCTIONS`), all of
which the kernel lowering places on the device. Where the CPU rule is also
the primitive's rule on key arrays, it is here too."""

from refimpl import ad_checkpoint, custom_derivatives, random
from refimpl.lax import elementwise, indexing, parallel, shapes as lax, staging
from refimpl.lax.control_flow import solves
from refimpl.lax.control_flow.conditionals import cond_p
from numba_backend.cuda.lower import CUDA_KEY_RULES, CUDA_RULES
from numba_backend.lower import KEY_RULES, RULES


def run_as_they_are(*primitives):
  """Registers the CPU rules of `primitives` (and their rules on key arrays
  where those are the same) as this target's."""
  for primitive in primitives:
    CUDA_RULES[primitive] = RULES[primitive]
    if KEY_RULES.get(primitive) is RULES[primitive]:
      CUDA_KEY_RULES[primitive] = RULES[primitive]


run_as_they_are(
    lax.broadcast_in_dim_p, lax.reshape_p, lax.squeeze_p, lax.transpose_p, lax.rev_p,
    lax.concatenate_p, lax.split_p, lax.stack_p, lax.unstack_p, lax.tile_p, lax.pad_p, lax.iota_p,
    lax.optimization_barrier_p,
    indexing.slice_p, indexing.dynamic_slice_p, indexing.dynamic_update_slice_p,
    elementwise.bitcast_convert_type_p,
    # sub-jaxprs inline (numba_backend/rules/calls.py), and psum over positional axes
    ad_checkpoint.checkpoint_p, ad_checkpoint.name_p, random.random_clone_p, staging.stage_p,
    staging.dce_sink_p,
    custom_derivatives.custom_lin_p, solves.linear_solve_p, parallel.psum_p, parallel.pmax_p,
    parallel.pmin_p,
    # branches run by the host program (loops: numba_backend/cuda/control_flow.py)
    cond_p)
