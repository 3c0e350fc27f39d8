"""refimpl: a readable reference implementation of JAX.

`import refimpl as jax; import refimpl.numpy as jnp` runs JAX programs with
JAX's semantics; each primitive's reference rule (NumPy) is the specification.
"""

import gc as _gc

# Loading refimpl (and NumPy, on which it builds) creates tens of thousands of
# long-lived objects and frees almost none, so the cyclic garbage collector's
# repeated passes over the whole heap during the import find little to collect.
# The collector is paused until the imports are done (a few percent of the
# import time); what it would have found, it finds on its next pass.
_gc_was_enabled = _gc.isenabled()
_gc.disable()
try:
  # NumPy first, while the stack is shallow. Imported from deep within the
  # imports below, its module-level loops (hundreds of calls) run at a depth
  # where each call starts a new chunk of CPython's frame stack, mapping and
  # unmapping memory each time: some 10 ms of system calls and page faults.
  import numpy as _np  # noqa: F401
  from refimpl import tree_util, tree, errors, dtypes, debug, memory  # noqa: F401
  from refimpl.config import (config, enable_x64, debug_nans, debug_infs,  # noqa: F401
                              disable_jit, numpy_rank_promotion, threefry_partitionable,
                              default_device, default_prng_impl, enable_custom_prng,
                              legacy_prng_key, enable_checks, log_compiles,
                              numpy_dtype_promotion, default_matmul_precision,
                              check_tracer_leaks, checking_leaks, explain_cache_misses,
                              no_tracing, no_execution, thread_guard, allow_f16_reductions,
                              array_garbage_collection_guard,
                              jax2tf_associative_scan_reductions, transfer_guard,
                              transfer_guard_host_to_device, transfer_guard_device_to_host,
                              transfer_guard_device_to_device, make_user_context)
  from refimpl.api import (jit, make_jaxpr, eval_shape, ShapeDtypeStruct,  # noqa: F401
                           devices, local_devices, device_count,
                           local_device_count, default_backend, device_put,
                           device_get, block_until_ready, typeof, clear_caches,
                           Device, process_count, process_index, process_indices,
                           host_count, host_id, host_ids, effects_barrier,
                           ensure_compile_time_eval, named_call, named_scope,
                           print_environment_info, make_array_from_callback,
                           make_array_from_single_device_arrays,
                           make_array_from_process_local_data)
  from refimpl.autodiff import (jvp, linearize, vjp, grad, value_and_grad,  # noqa: F401
                                jacfwd, jacrev, jacobian, hessian, linear_transpose,
                                fwd_and_bwd)
  from refimpl.vectorize import vmap, pmap  # noqa: F401
  from refimpl import custom_batching  # noqa: F401
  from refimpl.custom_derivatives import (custom_jvp, custom_vjp,  # noqa: F401
                                          custom_gradient, closure_convert)
  from refimpl.ad_checkpoint import checkpoint, remat, checkpoint_policies  # noqa: F401
  from refimpl import ad_checkpoint  # noqa: F401
  from refimpl.callback import pure_callback  # noqa: F401
  from refimpl.dtypes import float0  # noqa: F401
  from refimpl.array import Array, Shard, copy_to_host_async, live_arrays  # noqa: F401
  from refimpl import numpy, lax  # noqa: F401
  from refimpl.backends import register_backend  # noqa: F401
  from refimpl import sharding  # noqa: F401
  from refimpl.sharding import (NamedSharding, PartitionSpec as P, make_mesh,  # noqa: F401
                                reshard, set_mesh)
finally:
  if _gc_was_enabled:
    _gc.enable()
  del _gc, _gc_was_enabled
del _np

from refimpl._lazy_loader import attach as _attach_lazy

__version__ = "0.10.2"
"""The version of JAX whose behaviour refimpl follows: what libraries that
branch on `jax.__version__` compare (refimpl's own is `refimpl_version`)."""
__version_info__ = (0, 10, 2)
refimpl_version = "0.1.0"
"""This package's own version (its distribution's, in pyproject.toml)."""

# Deliberately lazy: these submodules load on first attribute access (PEP 562),
# so that `import refimpl` does not pay for them in programs that never use them.
# `refimpl.random.key(0)`, `from refimpl import nn` and `import refimpl.scipy`
# all work as if they had been imported here.
__getattr__, __dir__ = _attach_lazy(__name__, (
    "example_libraries", "experimental", "extend", "flatten_util", "image", "nn", "ops",
    "profiler", "random", "scipy", "stages", "test_util", "typing"))
del _attach_lazy
