"""`refimpl.debug`: printing and callbacks that work inside transformations.

`debug.print` stages a `debug_callback` equation, so the values are printed
when the program runs (every call of a jitted function), not when it is
traced. The equation has a side effect, so dead-code elimination keeps it.
"""

from refimpl import tree_util
from refimpl.core import Primitive
from refimpl.interpreters import ad, batching

__all__ = ["print", "callback"]


class DebugCallbackPrimitive(Primitive):
  """The `debug_callback` primitive: a Python callback run for its effect."""

  multiple_results = True
  has_side_effects = True

  def __init__(self):
    super().__init__("debug_callback")
    self.def_abstract_eval(lambda *avals, callback: [])
    self.def_impl(self._call)

  @staticmethod
  def _call(*args, callback):
    """`debug_callback[callback] *args`: calls `callback(*args)` for its effect.

    No outputs. The reference rule calls `callback` with the arguments as
    Arrays (key arrays for PRNG keys, as JAX passes them), in program order.
    Shape rule: takes any arrays, returns nothing.
    """
    from refimpl.core import get_aval, make_array
    callback(*[make_array(a, get_aval(a)) for a in args])
    return []


debug_callback_p = DebugCallbackPrimitive()


def _debug_callback_jvp(primals, tangents, *, callback):
  # As JAX: the callback sees the primal values only; it has no outputs.
  return debug_callback_p.bind(*primals, callback=callback), []


ad.primitive_jvps[debug_callback_p] = _debug_callback_jvp
# As JAX: transposing drops the callback (it gives no cotangents).
ad.deftranspose(debug_callback_p, lambda cts, *args, callback: [None] * len(args))


def _debug_callback_batch(args, dims, *, callback):
  # As JAX: unrolled over the batch, one callback per member, in order (an
  # unbatched argument is passed to each as it is).
  from refimpl.lax.indexing import index_in_dim
  size = next(x.shape[d] for x, d in zip(args, dims) if d is not None)
  for i in range(size):
    member = [x if d is None else index_in_dim(x, i, d, keepdims=False)
              for x, d in zip(args, dims)]
    debug_callback_p.bind(*member, callback=callback)
  return [], []


batching.primitive_batchers[debug_callback_p] = _debug_callback_batch


def callback(callback, *args, ordered=False, **kwargs):
  """Calls `callback(*args, **kwargs)` with concrete arrays when the program runs."""
  leaves, tree = tree_util.tree_flatten((args, kwargs))

  def flat_callback(*flat_args):
    call_args, call_kwargs = tree_util.tree_unflatten(tree, flat_args)
    callback(*call_args, **call_kwargs)

  flat_callback.__name__ = getattr(callback, "__name__", "callback")
  debug_callback_p.bind(*leaves, callback=flat_callback)


def print(fmt, *args, ordered=False, **kwargs):  # noqa: A001 (JAX's name)
  """Prints `fmt.format(*args, **kwargs)` with runtime values, also under jit."""
  import builtins
  callback(lambda *a, **k: builtins.print(fmt.format(*a, **k)), *args, **kwargs)


