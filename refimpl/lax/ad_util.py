"""The two primitives that automatic differentiation itself introduces.

* `add_any` sums two tangents (or cotangents) of the same type: the JVP of a
  value used twice, or the cotangent of a value read twice, is accumulated
  with it, so differentiated programs show `add_any` where JAX's do.
* `stop_gradient` is the identity whose derivative is zero.
"""

from refimpl import core, dtypes, tree_util
from refimpl.interpreters import ad
from refimpl.lax.elementwise import _add, naryop, unop
from refimpl.lax.rules import ANY, INEXACT

__all__ = ['stop_gradient', 'stop_gradient_p']


def _add_any(x, y):
  """Sum `x + y` of two tangents of the same shape and dtype, with `add`'s
  semantics (integers wrap, floats follow IEEE). Introduced by
  differentiation to accumulate tangents and cotangents."""
  return _add(x, y)


add_any_p = naryop("add_any", ANY, _add_any, nargs=2)
ad.deflinear(add_any_p, lambda ct: [ct, ct])


def add_any(x, y):
  return add_any_p.bind(x, y)


def _stop_gradient(x):
  """The identity on a floating or complex array: `x`, unchanged. Its JVP
  is zero, so no derivative flows through it. (`lax.stop_gradient` leaves
  integer and boolean leaves alone without binding it.)"""
  return x


stop_gradient_p = unop("stop_gradient", INEXACT, _stop_gradient)
ad.defjvp_zero(stop_gradient_p)


def stop_gradient(x):
  """Stops gradients through every leaf of pytree `x`: the values are
  unchanged, their derivatives are zero. Integer and boolean leaves are
  returned as they are."""
  def stop(leaf):
    if not dtypes.is_inexact(core.get_aval(leaf).dtype):
      return leaf
    if isinstance(leaf, ad.JVPTracer):
      return stop(leaf.primal)   # as JAX: the tangent is dropped, nothing staged
    return stop_gradient_p.bind(leaf)
  return tree_util.tree_map(stop, x)
