"""What `jax.lax` says to the compiler rather than computes: `stage` (a
value lifted into the trace), `dce_sink` (a use that dead-code elimination
keeps), `composite` (a function a backend may lower as one named
operation), `platform_dependent` (the branch of the platform the program
runs on) and `with_sharding_constraint` (a layout request, on one device the
identity).
"""

import functools

from refimpl import core, tree_util
from refimpl.core import Primitive
from refimpl.interpreters import ad, batching

__all__ = ['composite', 'dce_sink', 'dce_sink_p', 'platform_dependent', 'stage', 'stage_p',
           'with_sharding_constraint']


# --- stage ------------------------------------------------------------------------------

stage_p = Primitive("stage")


@stage_p.def_impl
def _stage_reference(x):
  """The identity: `x` as a value of the current trace (an Array outside
  every transformation), weak type kept."""
  return x


stage_p.def_abstract_eval(lambda aval: aval)


def stage(x, /):
  """Lifts `x` (a Python scalar, a NumPy array, an Array) into the active
  trace: logically the identity; outside every transformation an Array."""
  return stage_p.bind(x)


ad.deflinear(stage_p, lambda ct: [stage(ct)])
batching.primitive_batchers[stage_p] = lambda args, dims: (stage(*args), *dims)


# --- dce_sink -----------------------------------------------------------------------------

class _DCESinkPrimitive(Primitive):
  """`dce_sink[prevent_mlir_dce] x`: no result, an effect: dead-code
  elimination keeps it, and with it the computation of `x`."""

  multiple_results = True
  has_side_effects = True


dce_sink_p = _DCESinkPrimitive("dce_sink")


@dce_sink_p.def_impl
def _dce_sink_reference(x, *, prevent_mlir_dce):
  """No results: its operand is used, so what computes it stays in the
  program. `prevent_mlir_dce` also keeps it from MLIR's own elimination
  (a hint for compilers)."""
  return []


dce_sink_p.def_abstract_eval(lambda aval, *, prevent_mlir_dce: [])


def dce_sink(val, *, prevent_mlir_dce=False):
  """Marks each leaf of pytree `val` as used (a `dce_sink` equation), so that
  dead-code elimination keeps its computation; returns None."""
  for leaf in tree_util.tree_leaves(val):
    dce_sink_p.bind(leaf, prevent_mlir_dce=prevent_mlir_dce)


def _dce_sink_jvp(primals, tangents, *, prevent_mlir_dce):
  return dce_sink_p.bind(*primals, prevent_mlir_dce=prevent_mlir_dce), []


ad.primitive_jvps[dce_sink_p] = _dce_sink_jvp
batching.primitive_batchers[dce_sink_p] = lambda args, dims, **params: (
    dce_sink_p.bind(*args, **params), [])


# --- functions that choose what is staged --------------------------------------------------

def composite(decomposition, name, version=0):
  """`decomposition`, marked as the composite operation `name` (of
  `version`): JAX stages it as one `composite` operation, with the
  decomposition as its body, which a backend may replace by an
  implementation of its own. refimpl's backends have none: calling the
  result calls `decomposition(*args, **kwargs)` (keyword arguments are its
  static attributes), whose equations are staged in place."""
  @functools.wraps(decomposition)
  def composite_fn(*args, **kwargs):
    return decomposition(*args, **kwargs)
  composite_fn.composite_name, composite_fn.composite_version = name, version
  return composite_fn


_PLATFORMS = {"cpu": ("cpu",), "gpu": ("cuda", "rocm", "gpu")}
"""The names `platform_dependent` accepts for each platform of refimpl's devices."""


def platform_dependent(*args, default=None, **per_platform):
  """`branch(*args)` for the branch of the platform the program runs on:
  `per_platform[name]` for the configured backend's platform ("cpu"; "cuda",
  "rocm" or "gpu" for a GPU backend), else `default`; NotImplementedError
  when neither exists. refimpl chooses while tracing, from the configured
  backend (JAX when lowering, for each platform it compiles for), so a
  trace that jit keeps keeps its branch if the configured backend changes."""
  from refimpl.api import default_backend
  platform = default_backend()
  for name in _PLATFORMS.get(platform, (platform,)):
    if name in per_platform:
      return per_platform[name](*args)
  if default is None:
    raise NotImplementedError(f"platform_dependent has no branch for platform {platform!r} "
                              f"(branches: {sorted(per_platform)}) and no default")
  return default(*args)


def with_sharding_constraint(x, shardings):
  """Each array of pytree `x` constrained to its sharding in `shardings` (a
  Sharding or PartitionSpec per leaf, or a pytree prefix of `x` of them): on
  one device the values as they are, staging nothing (as `jax.reshard`),
  after the shardings are checked against the arrays' ranks (a
  PartitionSpec needs a mesh set with `jax.set_mesh`, ValueError otherwise)."""
  from refimpl import sharding as sharding_module

  def constrain(sharding, subtree):
    if isinstance(sharding, sharding_module.PartitionSpec):
      mesh = sharding_module.get_abstract_mesh()
      if mesh.empty:
        raise ValueError("Using PartitionSpec when you are not under a mesh context is not "
                         "allowed. Please pass a NamedSharding instance or enter into a mesh "
                         f"context via `jax.set_mesh`. Got {sharding}")
      sharding = sharding_module.NamedSharding(mesh, sharding)
    for leaf in tree_util.tree_leaves(subtree):
      if isinstance(sharding, sharding_module.NamedSharding):
        sharding.check_compatible_aval(core.get_aval(leaf).shape)
    return subtree
  return tree_util.tree_map(constrain, shardings, x, is_leaf=lambda s: s is None)
