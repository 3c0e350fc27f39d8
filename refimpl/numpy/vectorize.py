"""`jnp.vectorize`: NumPy's generalized ufuncs, built on `vmap`.

`vectorize(f, signature='(m,n),(n)->(m)')` calls `f` on the *core*
dimensions (the trailing ones the signature names) and maps it with `vmap`
over the leading *loop* dimensions, broadcast NumPy-style. A loop dimension
of size 1 is not mapped (its argument is unbatched there), so broadcasting
never materializes large arrays. Without a signature, `f` maps scalars to
scalars.
"""

import functools
import re

from refimpl.lax.shapes import broadcast_shapes
from refimpl.numpy.creation import asarray
from refimpl.numpy.manipulation import expand_dims, squeeze
from refimpl.numpy.util import check_rank_promotion
from refimpl.vectorize import vmap

__all__ = ["vectorize"]

_DIMENSION = r"\w+"
_ARGUMENT = rf"\((?:{_DIMENSION}(?:,{_DIMENSION})*)?\)"
_SIGNATURE = rf"^{_ARGUMENT}(?:,{_ARGUMENT})*->{_ARGUMENT}(?:,{_ARGUMENT})*$"


def _parse_signature(signature):
  """The core dimension names of each input and output: two lists of tuples."""
  if not re.match(_SIGNATURE, signature):
    raise ValueError(f"not a valid gufunc signature: {signature}")
  return ([tuple(re.findall(_DIMENSION, arg)) for arg in re.findall(_ARGUMENT, side)]
          for side in signature.split("->"))


def _update_dim_sizes(sizes, shape, core_dims, context, is_input):
  """Records (and checks) the sizes of the named core dimensions of `shape`."""
  if is_input and len(shape) < len(core_dims):
    raise ValueError(f"input with shape {shape!r} does not have enough dimensions for "
                     f"all core dimensions {core_dims!r} {context}")
  if not is_input and len(shape) != len(core_dims):
    raise ValueError(f"output shape {shape!r} does not match core dimensions "
                     f"{core_dims!r} {context}")
  for dim, size in zip(core_dims, shape[len(shape) - len(core_dims):]):
    if sizes.setdefault(dim, size) != size:
      raise ValueError(f"inconsistent size for core dimension {dim!r}: {size!r} vs "
                       f"{sizes[dim]!r} {context}")


def _checked(func, sizes, output_core_dims, context):
  """`func`, checking that its outputs have the signature's core dimensions."""
  def checked(*args):
    out = func(*args)
    outs = out if isinstance(out, tuple) else [out]
    if output_core_dims is None:
      expected = [()] * len(outs)
    else:
      expected = output_core_dims
      if len(expected) > 1 and not isinstance(out, tuple):
        raise TypeError("output must be a tuple when multiple outputs are expected, "
                        f"got: {out!r}\n{context}")
      if len(outs) != len(expected):
        raise TypeError(f"wrong number of output arguments: expected {len(expected)!r}, "
                        f"got {len(outs)!r} {context}")
    out_sizes = dict(sizes)
    for o, core_dims in zip(outs, expected):
      _update_dim_sizes(out_sizes, asarray(o).shape, core_dims, context, is_input=False)
    return out
  return checked


def _fix_args(func, fixed):
  """`func` with the arguments at positions `fixed` (a dict) already given."""
  def fixed_func(*args):
    args = list(args)
    for i in sorted(fixed):
      args.insert(i, fixed[i])
    return func(*args)
  return fixed_func


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
  """A version of `pyfunc` mapped over leading (loop) dimensions with `vmap`.

  `signature` (e.g. `'(m,n),(n)->(m)'`) names the core dimensions `pyfunc`
  works on; without one, `pyfunc` takes and returns scalars. Loop dimensions
  broadcast as in NumPy. `excluded` names positional (ints) and keyword
  (strings) arguments passed to `pyfunc` unchanged; None arguments are
  excluded too. Other keyword arguments are an error (JAX drops them).
  """
  if any(not isinstance(e, (str, int)) for e in excluded):
    raise TypeError("jax.numpy.vectorize can only exclude integer or string arguments, "
                    f"but excluded={excluded!r}")
  if any(isinstance(e, int) and e < 0 for e in excluded):
    raise ValueError(f"excluded={excluded!r} contains negative numbers")

  @functools.wraps(pyfunc)
  def wrapped(*args, **kwargs):
    context = f"on vectorized function with excluded={excluded!r} and signature={signature!r}"
    unexcluded = sorted(k for k in kwargs if k not in excluded)
    if unexcluded:
      raise TypeError(f"jnp.vectorize maps positional arguments only: keyword arguments "
                      f"{unexcluded} are not in excluded={excluded!r}. Pass them "
                      "positionally, or add their names to `excluded`.")
    func = functools.partial(pyfunc, **kwargs)
    fixed = {i: a for i, a in enumerate(args) if i in excluded}
    args = [a for i, a in enumerate(args) if i not in excluded]
    if signature is not None:
      input_core_dims, output_core_dims = _parse_signature(signature)
    else:
      input_core_dims, output_core_dims = [()] * len(args), None
    nones = {i for i, a in enumerate(args) if a is None}
    if nones and len(input_core_dims) == len(args) and any(input_core_dims[i] for i in nones):
      raise ValueError(f"Cannot pass None at locations {nones} with signature={signature!r}")
    func = _fix_args(func, fixed)
    if nones:
      func = _fix_args(func, {i: None for i in nones})
      args = [a for i, a in enumerate(args) if i not in nones]
      input_core_dims = [d for i, d in enumerate(input_core_dims) if i not in nones]
    args = [asarray(a) for a in args]
    if len(args) != len(input_core_dims):
      raise TypeError(f"wrong number of positional arguments: expected "
                      f"{len(input_core_dims)!r}, got {len(args)!r} {context}")

    sizes = {}
    loop_shapes = []
    for arg, core_dims in zip(args, input_core_dims):
      _update_dim_sizes(sizes, arg.shape, core_dims, context, is_input=True)
      loop_shapes.append(arg.shape[:arg.ndim - len(core_dims)])
    loop_shape = broadcast_shapes(*loop_shapes)
    if len({a.ndim - len(c) for a, c in zip(args, input_core_dims) if a.ndim}) > 1:
      check_rank_promotion("vectorize", [a.shape for a in args])

    # Map each loop dimension, innermost first; an argument whose size there is 1
    # is squeezed and left unmapped, and a dimension no argument maps is added back.
    mapped = _checked(func, sizes, output_core_dims, context)
    padded = [(1,) * (len(loop_shape) - len(s)) + s for s in loop_shapes]
    args = [squeeze(a, tuple(i for i, n in enumerate(s) if n == 1))
            for a, s in zip(args, loop_shapes)]
    expand = []
    for dim in reversed(range(len(loop_shape))):
      in_axes = tuple(None if s[dim] == 1 else 0 for s in padded)
      if all(axis is None for axis in in_axes):
        expand.append(dim)
      else:
        mapped = vmap(mapped, in_axes)
    result = mapped(*args)
    if not expand:
      return result
    if isinstance(result, tuple):
      return tuple(expand_dims(r, expand) for r in result)
    return expand_dims(result, expand)

  return wrapped

