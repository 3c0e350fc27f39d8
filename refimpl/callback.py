"""`pure_callback` and `io_callback`: calling back into Python from a traced program.

A pure callback must be a pure function: the program may call it any number
of times (or not at all, if its results are unused). An IO callback
(`jax.experimental.io_callback`) may have side effects: jit keeps it even
when its results are unused, and runs it as often as the program says, in
program order. Either receives NumPy arrays and must return arrays of the
declared shapes and dtypes.
"""

import numpy as np

from refimpl import core, dtypes, tree_util
from refimpl.core import Primitive
from refimpl.interpreters import ad, batching

__all__ = ["pure_callback", "io_callback"]

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                "legacy_vectorized", None)


def call_callback(callback, args, result_avals):
  """Calls `callback` on the NumPy data `args` (key data as key arrays: their
  NumPy data is an implementation detail); checks that it returns one array
  per entry of `result_avals` of that shape and dtype (`RuntimeError`
  otherwise) and returns them as NumPy arrays."""
  outs = callback(*[core.make_array(a, core.get_aval(a))
                    if dtypes.is_extended(core.get_aval(a).dtype) else a for a in args])
  results = []
  for i, (out, aval) in enumerate(zip(outs, result_avals)):
    out = np.asarray(out)
    if out.shape != aval.shape:
      raise RuntimeError(f"Incorrect output shape for return value #{i}: "
                         f"Expected: {aval.shape}, Actual: {out.shape}")
    if out.dtype != aval.dtype:
      raise RuntimeError(f"Incorrect output dtype for return value #{i}: "
                         f"Expected: {aval.dtype}, Actual: {out.dtype}")
    results.append(out)
  return results


class PureCallbackPrimitive(Primitive):
  """The `pure_callback` primitive: a Python function of concrete arrays."""

  multiple_results = True

  def __init__(self):
    super().__init__("pure_callback")
    self.def_abstract_eval(lambda *avals, callback, result_avals, vmap_method: list(result_avals))
    self.def_impl(self._call)

  @staticmethod
  def _call(*args, callback, result_avals, vmap_method):
    """`pure_callback[callback result_avals vmap_method] *args`.

    Calls `callback` with the arguments as NumPy arrays (PRNG keys as key
    arrays: their NumPy data is an implementation detail); it returns one
    array per entry of `result_avals`, whose shape and dtype it must have
    (`RuntimeError` otherwise). Without a side effect, an unused call may
    be removed.

    `vmap_method` says how `vmap` calls it, the batch axis first: once per
    member in order ("sequential", "sequential_unrolled"); once with the
    batched arguments, the unbatched ones getting a leading axis of size 1
    ("expand_dims") or of the batch size ("broadcast_all"), or kept as
    they are ("legacy_vectorized"); None: vmap raises NotImplementedError.
    """
    return call_callback(callback, args, result_avals)


pure_callback_p = PureCallbackPrimitive()


def _pure_callback_transpose(cts, *args, **params):
  raise ValueError("Pure callbacks do not support transpose. Please use `jax.custom_vjp` to "
                   "use callbacks while taking gradients.")


# As JAX: a callback's derivatives are unknown; custom_jvp / custom_vjp supply them.
ad.defjvp_unsupported(pure_callback_p, ValueError,
                      "Pure callbacks do not support JVP. Please use `jax.custom_jvp` to "
                      "use callbacks while taking gradients.")
ad.deftranspose(pure_callback_p, _pure_callback_transpose)


def _sequential(primitive, args, dims, unroll, **params):
  """The callback `primitive` called once per member, in order: a `scan` over
  the batched arguments (batch axes first), as JAX stages it."""
  from refimpl.lax.control_flow.loops import scan
  batched = [x for x, d in zip(args, dims) if d is not None]

  def call(_, members):
    members = iter(members)
    return (), primitive.bind(
        *[next(members) if d is not None else x for x, d in zip(args, dims)], **params)

  _, outs = scan(call, (), batched, unroll=unroll)
  return list(outs), [0] * len(outs)


def _pure_callback_batch(args, dims, *, callback, result_avals, vmap_method):
  # As JAX's callback_batching_rule.
  size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
  args = [x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(args, dims)]
  batched_avals = tuple(batching.batched_aval(a, size) for a in result_avals)
  if vmap_method in ("sequential", "sequential_unrolled"):
    return _sequential(pure_callback_p, args, dims, vmap_method == "sequential_unrolled",
                       callback=callback,
                       result_avals=result_avals, vmap_method=vmap_method)
  if vmap_method in ("expand_dims", "broadcast_all"):
    n = size if vmap_method == "broadcast_all" else 1
    args = [batching.broadcast(x, n, 0) if d is None else x for x, d in zip(args, dims)]
  elif vmap_method != "legacy_vectorized":
    raise NotImplementedError(
        "vmap is only supported for the pure_callback primitive when vmap_method is one "
        "of 'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
        f"'legacy_vectorized'. Got vmap_method={vmap_method!r}.")
  outs = pure_callback_p.bind(*args, callback=callback, result_avals=batched_avals,
                              vmap_method=vmap_method)
  return outs, [0] * len(outs)


batching.primitive_batchers[pure_callback_p] = _pure_callback_batch


def pure_callback(callback, result_shape_dtypes, *args, sharding=None,
                  vmap_method=None, **kwargs):
  """Calls the pure Python function `callback(*args, **kwargs)` at run time.

  `result_shape_dtypes` is a pytree of objects with `shape` and `dtype`
  (such as `ShapeDtypeStruct`) describing the result, which has its structure.
  `vmap_method` says how `vmap` calls the callback (see `pure_callback_p`);
  without one, `vmap` of the call raises. Key arguments reach the callback as
  key arrays; results cannot be keys (TypeError: return the key data).
  """
  if vmap_method not in VMAP_METHODS:
    raise ValueError(f"vmap_method must be on of the allowed methods {list(VMAP_METHODS)}, "
                     f"but got: {vmap_method}")
  leaves, flat_callback, result_avals, out_tree = _flatten_call(
      "pure_callback", callback, result_shape_dtypes, args, kwargs)
  outs = pure_callback_p.bind(*leaves, callback=flat_callback, result_avals=result_avals,
                              vmap_method=vmap_method)
  return tree_util.tree_unflatten(out_tree, outs)


def _flatten_call(name, callback, result_shape_dtypes, args, kwargs):
  """(argument leaves, the callback on them returning result leaves, the
  result avals, the results' treedef) of a call of callback `name`."""
  leaves, in_tree = tree_util.tree_flatten((args, kwargs))
  result_leaves, out_tree = tree_util.tree_flatten(result_shape_dtypes)
  if any(dtypes.is_extended(r.dtype) for r in result_leaves):
    raise TypeError(f"{name} results cannot have an extended dtype (PRNG keys): "
                    "return the key data (random.key_data) and wrap it with "
                    "random.wrap_key_data.")
  result_avals = tuple(core.ShapedArray(r.shape, r.dtype) for r in result_leaves)

  def flat_callback(*flat_args):
    call_args, call_kwargs = tree_util.tree_unflatten(in_tree, flat_args)
    out = callback(*call_args, **call_kwargs)
    out_leaves, tree = tree_util.tree_flatten(out)
    if tree != out_tree:
      raise RuntimeError(f"The callback returned a result of structure {tree}, but "
                         f"result_shape_dtypes has structure {out_tree}.")
    return out_leaves

  flat_callback.__name__ = getattr(callback, "__name__", "callback")
  return leaves, flat_callback, result_avals, out_tree


class IOCallbackPrimitive(Primitive):
  """The `io_callback` primitive: a Python function run for its effects too."""

  multiple_results = True
  has_side_effects = True

  def __init__(self):
    super().__init__("io_callback")
    self.def_abstract_eval(
        lambda *avals, callback, result_avals, sharding, ordered: list(result_avals))
    self.def_impl(self._call)

  @staticmethod
  def _call(*args, callback, result_avals, sharding, ordered):
    """`io_callback[callback result_avals sharding ordered] *args`.

    Calls `callback` with the arguments as NumPy arrays (PRNG keys as key
    arrays); it returns one array per entry of `result_avals`, whose shape
    and dtype it must have (`RuntimeError` otherwise). The call has a side
    effect: it is never removed as dead code, and runs each time the
    program reaches it, in program order. `ordered` asks for that order
    among the ordered callbacks (every program here runs its equations in
    order); it forbids `vmap`. `sharding` (where the results live) is a
    placement hint only. Not differentiable (ValueError, as in JAX); under
    `vmap` an unordered callback is called once per member, in order.
    """
    return call_callback(callback, args, result_avals)


io_callback_p = IOCallbackPrimitive()

ad.defjvp_unsupported(io_callback_p, ValueError, "IO callbacks do not support JVP.")
ad.deftranspose_unsupported(io_callback_p, ValueError, "IO callbacks do not support transpose.")


def _io_callback_batch(args, dims, *, callback, result_avals, sharding, ordered):
  # As JAX: an unordered callback runs once per member (a lax.map over the batch).
  if ordered:
    raise ValueError("Cannot `vmap` ordered IO callback.")
  args = [x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(args, dims)]
  return _sequential(io_callback_p, args, dims, False, callback=callback,
                     result_avals=result_avals, sharding=sharding, ordered=ordered)


batching.primitive_batchers[io_callback_p] = _io_callback_batch


def io_callback(callback, result_shape_dtypes, *args, sharding=None, ordered=False,
                **kwargs):
  """Calls the Python function `callback(*args, **kwargs)` at run time, for
  its results and its side effects (`jax.experimental.io_callback`).

  `result_shape_dtypes` is a pytree of objects with `shape` and `dtype`
  describing the results (None or `()` for none). Unlike `pure_callback`,
  jit never removes the call, even when its results are unused, and the
  program calls it each time it runs it; `ordered=True` keeps the ordered
  callbacks in program order (and forbids vmap). Not differentiable.
  """
  leaves, flat_callback, result_avals, out_tree = _flatten_call(
      "io_callback", callback, result_shape_dtypes, args, kwargs)
  outs = io_callback_p.bind(*leaves, callback=flat_callback, result_avals=result_avals,
                            sharding=sharding, ordered=bool(ordered))
  return tree_util.tree_unflatten(out_tree, outs)
