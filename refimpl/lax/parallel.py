"""Named-axis collectives: psum, pmax, pmin, all_gather, psum_scatter,
ppermute, pbroadcast, all_to_all and axis_index, as `jax.lax` has them.

A collective works across the members of a mapped axis named by `vmap(...,
axis_name=...)` (or `pmap`): each member calls it with its own value and
gets a result computed from every member's value. `axis_name` is a name or a
tuple of names (several axes at once, the first one major).

Only the batching rules compute collectives: under `vmap`, the batch trace
whose axis a collective names computes it across its batch axis, with
ordinary array operations, and passes the names of other axes on to its
parent (for which the batch axis is just another array axis). So the
reference rule of a collective with a named axis is only reached when no
`vmap` binds the name, and raises JAX's `NameError`; so does the shape rule
when tracing outside the map. psum/pmax/pmin also take positional (int)
axes, reduced as reduce_sum/max/min would: their batching rules turn the
mapped axis into one. `axis_index_groups` (subgroups of an axis) are
accepted, and raise NotImplementedError under `vmap`, as in JAX.
"""

import math

import numpy as np

from refimpl import core, tree_util
from refimpl.core import Primitive, ShapedArray
from refimpl.interpreters import ad, batching
from refimpl.lax import elementwise, shapes
from refimpl.lax.reductions import reduce_max_p, reduce_min_p, reduce_sum, reduce_sum_p
from refimpl.lax.rules import const

__all__ = ['psum', 'psum_p', 'pmean', 'pmax', 'pmax_p', 'pmin', 'pmin_p', 'all_gather',
           'all_gather_p', 'psum_scatter', 'ppermute', 'ppermute_p', 'pshuffle',
           'pbroadcast', 'all_to_all', 'all_to_all_p', 'pswapaxes', 'axis_index',
           'axis_index_p', 'axis_size']


# --- shared -------------------------------------------------------------------------

def _names(axis_name):
  """`axis_name` as a tuple of names."""
  return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _named(axes):
  """The names among `axes` (the others are positional ints)."""
  return tuple(a for a in axes if not isinstance(a, int))


def _check_names(axes):
  """NameError (JAX's message) for a name no enclosing map binds."""
  for name in _named(axes):
    core.axis_size(name)


def _unbound(axis_name):
  """The reference rule of a collective over a named axis: reached only
  when no `vmap`/`pmap` binds the name, so it raises `NameError`."""
  _check_names(_names(axis_name))
  raise AssertionError(f"a collective over the bound axes {axis_name} was not batched")


def _pp_names(key):
  """A pp_params showing the names in param `key` quoted, as JAX prints them."""
  def pp_params(params):
    quoted = tuple(repr(n) if isinstance(n, str) else n for n in _names(params[key]))
    return dict(sorted({**params, key: quoted}.items()))
  return pp_params


def _collective(name, names_param, multiple_results=False):
  prim = Primitive(name)
  prim.multiple_results = multiple_results
  prim.pp_params = _pp_names(names_param)
  batching.collective_axis_names[prim] = lambda params: _named(_names(params[names_param]))
  return prim


def _check_groups(axis_index_groups):
  if axis_index_groups is not None:
    raise NotImplementedError("axis_index_groups not supported in vmap collectives. "
                              "Please open a feature request!")


def _canonical_groups(axis_index_groups):
  if axis_index_groups is None:
    return None
  groups = tuple(tuple(int(i) for i in g) for g in axis_index_groups)
  if sorted(i for g in groups for i in g) != list(range(sum(map(len, groups)))):
    raise ValueError("axis_index_groups must cover all indices exactly once")
  return groups


def _times(x, n):
  """`n * x` for an integer `n`, in the dtype of `x`."""
  return elementwise.mul(const(x, n), x)


def _fold(x, axis):
  """`x` with its axes `axis` and `axis + 1` merged into one (row-major)."""
  shape = list(core.get_aval(x).shape)
  shape[axis:axis + 2] = [shape[axis] * shape[axis + 1]]
  return shapes.reshape(x, tuple(shape))


def _split(x, axis, n):
  """`x` with its axis `axis` split into (n, size // n) (row-major)."""
  shape = list(core.get_aval(x).shape)
  shape[axis:axis + 1] = [n, shape[axis] // n]
  return shapes.reshape(x, tuple(shape))


def _swap(x, a, b):
  perm = list(range(core.get_aval(x).ndim))
  perm[a], perm[b] = perm[b], perm[a]
  return shapes.transpose(x, tuple(perm))


def axis_size(axis_name):
  """The size of the mapped axis `axis_name` (the product of the sizes for
  a tuple of names), a Python int. `NameError` if no map binds it."""
  return math.prod(core.axis_size(name) for name in _names(axis_name))


# --- psum, pmax, pmin ---------------------------------------------------------------

def _allreduce(name, reduction, doc):
  prim = _collective(name, "axes", multiple_results=True)

  def reference(*args, axes, axis_index_groups):
    _check_names(axes)
    return [reduction.impl(x, axes=axes) for x in args]

  def shape_rule(*avals, axes, axis_index_groups):
    _check_names(axes)
    positional = tuple(a for a in axes if isinstance(a, int))
    if axis_index_groups is not None and positional:
      raise ValueError(f"axis_index_groups can only be used with reductions over named "
                       f"axes, but got: {axes}")
    return [reduction.abstract_eval(a, axes=positional).update(weak_type=False)
            for a in avals]

  reference.__doc__ = doc
  prim.def_impl(reference)
  prim.def_abstract_eval(shape_rule)
  return prim


_ALLREDUCE_DOC = """

    Params: `axes`, names of mapped axes and positional (int) axes of the
    operands; `axis_index_groups`, None or a partition of the axis indices
    into groups reduced separately. Shape rule: each operand without its
    positional axes, dtype kept, not weakly typed. The reference rule
    reduces positional axes only; a named axis is reduced by `vmap` (its
    batching rule), and one that no map binds raises NameError."""

psum_p = _allreduce("psum", reduce_sum_p, """Each operand summed over the members
    of the named axes (and over its positional axes, as reduce_sum).""" + _ALLREDUCE_DOC)
pmax_p = _allreduce("pmax", reduce_max_p, """Each operand's maximum over the members
    of the named axes (and over its positional axes, as reduce_max); NaN
    propagates.""" + _ALLREDUCE_DOC)
pmin_p = _allreduce("pmin", reduce_min_p, """Each operand's minimum over the members
    of the named axes (and over its positional axes, as reduce_min); NaN
    propagates.""" + _ALLREDUCE_DOC)


def _psum_transpose(cts, *args, axes, axis_index_groups):
  # As JAX: psum is treated as psum followed by a broadcast to every member,
  # so its transpose sums the cotangents over the named axes again;
  # positional axes transpose to broadcasts.
  positional = tuple(a for a in axes if isinstance(a, int))
  cts = [ad.instantiate_zeros(ct) for ct in cts]
  cts = [shapes.broadcast_in_dim(ct, x.aval.shape, tuple(
      d for d in range(x.aval.ndim) if d not in positional)) if positional else ct
         for ct, x in zip(cts, args)]
  return psum_p.bind(*cts, axes=_named(axes), axis_index_groups=axis_index_groups)


ad.deflinear2(psum_p, _psum_transpose)
# As JAX: pmax and pmin have no derivative rules.
ad.defjvp_unsupported(pmax_p, NotImplementedError,
                      "Differentiation rule for 'pmax' not implemented")
ad.defjvp_unsupported(pmin_p, NotImplementedError,
                      "Differentiation rule for 'pmin' not implemented")


def _allreduce_batch(prim, if_unbatched):
  """psum/pmax/pmin under vmap. This axis named: batched operands reduce
  their batch axis as a positional axis of the same collective (with the
  other axes it names); unbatched ones give `if_unbatched(x, size)` after
  reducing the other axes. Otherwise positional axes are renumbered."""
  def rule(axis_data, args, dims, *, axes, axis_index_groups):
    ours = axis_data.name in axes
    if ours or any(isinstance(a, int) for a in axes):
      _check_groups(axis_index_groups)
    outs = []
    for x, d in zip(args, dims):  # one at a time: batched and unbatched differ in `axes`
      if d is None and ours:
        rest = tuple(a for a in axes if a != axis_data.name)
        y = prim.bind(x, axes=rest, axis_index_groups=None)[0] if rest else x
        outs.append(if_unbatched(y, axis_data.size))
        continue
      if d is not None:
        x = batching.moveaxis(x, d, 0)
      # the batch axis is now axis 0: shift positional axes past it
      new_axes = tuple(0 if a == axis_data.name else a + 1 if isinstance(a, int) else a
                       for a in axes) if d is not None else axes
      outs.append(prim.bind(x, axes=new_axes, axis_index_groups=axis_index_groups)[0])
    out_dims = [None if ours or d is None else 0 for d in dims]
    return outs, out_dims
  return rule


batching.axis_primitive_batchers[psum_p] = _allreduce_batch(psum_p, lambda x, n: _times(x, n))
batching.axis_primitive_batchers[pmax_p] = _allreduce_batch(pmax_p, lambda x, n: x)
batching.axis_primitive_batchers[pmin_p] = _allreduce_batch(pmin_p, lambda x, n: x)


def psum(x, axis_name, *, axis_index_groups=None):
  """Sum of `x` (a pytree) over the members of the mapped axis `axis_name`
  (a name, or a tuple of names and positional axes). Booleans are summed as
  int32. A value that is not traced (a constant such as 1) gives its
  product with the axis size: `psum(1, 'i')` is the size of axis 'i'."""
  axes = _names(axis_name)
  if not axes:
    return x
  if any(isinstance(a, int) for a in axes) and axis_index_groups is not None:
    raise ValueError("axis_index_groups only supported for sums over just named axes")
  axis_index_groups = _canonical_groups(axis_index_groups)
  leaves, tree = tree_util.tree_flatten(x)
  leaves = [elementwise.convert_element_type(l, np.int32)
            if core.get_aval(l).dtype == np.bool_ else l for l in leaves]
  if all(not isinstance(l, core.Tracer) for l in leaves):
    size = (len(axis_index_groups[0]) if axis_index_groups is not None
            else math.prod(core.axis_size(n) for n in _named(axes)))
    positional = tuple(a for a in axes if isinstance(a, int))
    # as JAX: a Python (NumPy) product for Python (NumPy) values
    outs = [(type(l)(size) if isinstance(l, (int, float, complex)) else const(l, size))
            * (reduce_sum(l, tuple(a % np.ndim(l) for a in positional)) if positional else l)
            for l in leaves]
  else:
    outs = psum_p.bind(*leaves, axes=axes, axis_index_groups=axis_index_groups)
  return tree_util.tree_unflatten(tree, outs)


def pmean(x, axis_name, *, axis_index_groups=None):
  """Mean of `x` (a pytree) over the members of the mapped axis `axis_name`."""
  x = psum(x, axis_name, axis_index_groups=axis_index_groups)
  n = (len(_canonical_groups(axis_index_groups)[0]) if axis_index_groups is not None
       else axis_size(_named(_names(axis_name))))
  return tree_util.tree_map(lambda v: v / n, x)


def _pminmax(prim, x, axis_name, axis_index_groups):
  axes = _names(axis_name)
  if any(isinstance(a, int) for a in axes) and axis_index_groups is not None:
    raise ValueError("axis_index_groups only supported for sums over just named axes")
  leaves, tree = tree_util.tree_flatten(x)
  outs = prim.bind(*leaves, axes=axes, axis_index_groups=_canonical_groups(axis_index_groups))
  return tree_util.tree_unflatten(tree, outs)


def pmax(x, axis_name, *, axis_index_groups=None):
  """Maximum of `x` (a pytree) over the members of the mapped axis `axis_name`."""
  return _pminmax(pmax_p, x, axis_name, axis_index_groups)


def pmin(x, axis_name, *, axis_index_groups=None):
  """Minimum of `x` (a pytree) over the members of the mapped axis `axis_name`."""
  return _pminmax(pmin_p, x, axis_name, axis_index_groups)


# --- all_gather -----------------------------------------------------------------------

all_gather_p = _collective("all_gather", "axis_name")
_unbound_doc = """

    Only `vmap` computes it (its batching rule); the reference rule is
    reached only for an axis no map binds, and raises NameError."""


def _all_gather_reference(x, *, all_gather_dimension, axis_name, axis_index_groups,
                          axis_size, tiled):
  """Every member's operand, stacked in member order along a new axis at
  `all_gather_dimension` (`tiled`: concatenated along that existing axis).

  Params: `axis_size` is the size of the named axes. Shape rule: the
  operand's shape with `axis_size` inserted at `all_gather_dimension` (or
  that dimension multiplied by it when tiled); dtype and weak type kept."""
  return _unbound(axis_name)


_all_gather_reference.__doc__ += _unbound_doc
all_gather_p.def_impl(_all_gather_reference)


@all_gather_p.def_abstract_eval
def _all_gather_shape_rule(x, *, all_gather_dimension, axis_name, axis_index_groups,
                           axis_size, tiled):
  _check_names(_names(axis_name))
  shape = list(x.shape)
  if tiled:
    shape[all_gather_dimension] *= axis_size
  else:
    shape.insert(all_gather_dimension, axis_size)
  return x.update(shape=tuple(shape))


def _all_gather_transpose(ct, x, *, all_gather_dimension, axis_name, axis_index_groups,
                          axis_size, tiled):
  return [psum_scatter(ct, axis_name, scatter_dimension=all_gather_dimension,
                       axis_index_groups=axis_index_groups, tiled=tiled)]


ad.deflinear2(all_gather_p, _all_gather_transpose)


def _all_gather_batch(axis_data, args, dims, *, all_gather_dimension, axis_name,
                      axis_index_groups, axis_size, tiled):
  (x,), (d,) = args, dims
  params = dict(axis_name=axis_name, axis_index_groups=axis_index_groups,
                axis_size=axis_size, tiled=tiled)
  if axis_data.name not in axis_name:  # the batch axis is just another axis
    if d <= all_gather_dimension:
      all_gather_dimension += 1
    elif not tiled:
      d += 1
    return all_gather_p.bind(x, all_gather_dimension=all_gather_dimension, **params), d
  _check_groups(axis_index_groups)
  if len(axis_name) > 1:
    raise NotImplementedError("all_gather over several axes under vmap: please open a "
                              "feature request!")
  # the members are the batch axis: put it where the gathered axis goes
  y = (batching.broadcast(x, axis_data.size, all_gather_dimension) if d is None
       else batching.moveaxis(x, d, all_gather_dimension))
  return (_fold(y, all_gather_dimension) if tiled else y), None


batching.axis_primitive_batchers[all_gather_p] = _all_gather_batch


def all_gather(x, axis_name, *, axis_index_groups=None, axis=0, tiled=False, to="varying"):
  """Every member's `x` (a pytree), stacked along a new axis `axis` in
  member order (`tiled`: concatenated along the existing axis `axis`).
  `to` ('varying', 'invarying' or 'reduced') is the shard_map type of the
  result; refimpl's values carry no such type, so the three gather alike
  (the last two without `axis_index_groups`, as in JAX)."""
  allowed = {"varying", "reduced", "invarying"}
  if to not in allowed:
    raise ValueError("Got unexpected `to` value for `jax.lax.all_gather`. Allowed `to` "
                     f"values are: {allowed}")
  if to != "varying" and axis_index_groups is not None:
    raise NotImplementedError
  names = _names(axis_name)
  axis_index_groups = _canonical_groups(axis_index_groups)
  size = (len(axis_index_groups[0]) if axis_index_groups is not None else axis_size(names))

  def bind(leaf):
    ndim = np.ndim(leaf) if tiled else np.ndim(leaf) + 1
    return all_gather_p.bind(leaf, all_gather_dimension=shapes.canonicalize_axis(axis, ndim),
                             axis_name=names, axis_index_groups=axis_index_groups,
                             axis_size=int(size), tiled=tiled)
  return tree_util.tree_map(bind, x)


# --- psum_scatter (reduce_scatter) ----------------------------------------------------

reduce_scatter_p = _collective("reduce_scatter", "axis_name")


def _reduce_scatter_reference(x, *, scatter_dimension, axis_name, axis_index_groups,
                              axis_size, tiled):
  """Member k's part of the sum over members: slice k of the summed operand
  along `scatter_dimension` (that dimension removed), or with `tiled` the
  k-th of `axis_size` equal blocks along it.

  Shape rule: the operand's shape without `scatter_dimension`, whose size
  must equal `axis_size` (tiled: that dimension divided by `axis_size`,
  which must divide it); dtype and weak type kept."""
  return _unbound(axis_name)


_reduce_scatter_reference.__doc__ += _unbound_doc
reduce_scatter_p.def_impl(_reduce_scatter_reference)


@reduce_scatter_p.def_abstract_eval
def _reduce_scatter_shape_rule(x, *, scatter_dimension, axis_name, axis_index_groups,
                               axis_size, tiled):
  _check_names(_names(axis_name))
  shape = list(x.shape)
  size = shape[scatter_dimension]
  if tiled:
    if size % axis_size:
      raise ValueError(f"tiled reduce_scatter operand scatter dimension size {size} must "
                       f"be divisible by shard_count {axis_size}")
    shape[scatter_dimension] = size // axis_size
  else:
    if size != axis_size:
      raise ValueError(f"reduce_scatter operand scatter dimension size {size} must match "
                       f"shard count {axis_size}")
    del shape[scatter_dimension]
  return x.update(shape=tuple(shape))


def _reduce_scatter_transpose(ct, x, *, scatter_dimension, axis_name, axis_index_groups,
                              axis_size, tiled):
  return [all_gather(ct, axis_name, axis_index_groups=axis_index_groups,
                     axis=scatter_dimension, tiled=tiled)]


ad.deflinear2(reduce_scatter_p, _reduce_scatter_transpose)


def _reduce_scatter_batch(axis_data, args, dims, *, scatter_dimension, axis_name,
                          axis_index_groups, axis_size, tiled):
  (x,), (d,) = args, dims
  params = dict(axis_name=axis_name, axis_index_groups=axis_index_groups,
                axis_size=axis_size, tiled=tiled)
  if axis_data.name not in axis_name:
    if d <= scatter_dimension:
      scatter_dimension += 1
    elif not tiled:
      d += 1
    return reduce_scatter_p.bind(x, scatter_dimension=scatter_dimension, **params), d
  _check_groups(axis_index_groups)
  if len(axis_name) > 1:
    raise NotImplementedError("psum_scatter over several axes under vmap: please open a "
                              "feature request!")
  # sum over the members; the scattered dimension becomes the batch axis
  y = _times(x, axis_data.size) if d is None else reduce_sum(x, (d,))
  return (_split(y, scatter_dimension, axis_data.size) if tiled else y), scatter_dimension


batching.axis_primitive_batchers[reduce_scatter_p] = _reduce_scatter_batch


def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False):
  """The sum of `x` (a pytree) over the members of `axis_name`, scattered:
  member k keeps slice k along `scatter_dimension` (`tiled`: block k)."""
  names = _names(axis_name)
  axis_index_groups = _canonical_groups(axis_index_groups)
  size = (len(axis_index_groups[0]) if axis_index_groups is not None else axis_size(names))
  return tree_util.tree_map(
      lambda leaf: reduce_scatter_p.bind(
          leaf, axis_name=names, scatter_dimension=scatter_dimension,
          axis_index_groups=axis_index_groups, axis_size=size, tiled=tiled), x)


# --- ppermute, pshuffle, pbroadcast -------------------------------------------------------

ppermute_p = _collective("ppermute", "axis_name")


def _ppermute_reference(x, *, axis_name, perm):
  """Member `dst` receives the operand of member `src` for each pair
  `(src, dst)` of `perm`; a member no pair sends to receives zeros.

  Shape rule: the operand's."""
  return _unbound(axis_name)


_ppermute_reference.__doc__ += _unbound_doc
ppermute_p.def_impl(_ppermute_reference)


@ppermute_p.def_abstract_eval
def _ppermute_shape_rule(x, *, axis_name, perm):
  _check_names(_names(axis_name))
  return x


def _ppermute_transpose(ct, x, *, axis_name, perm):
  return [ppermute(ct, axis_name, [(dst, src) for src, dst in perm])]


ad.deflinear2(ppermute_p, _ppermute_transpose)


def _take_members(x, d, sources, size):
  """Member i of the batch `x` (batch axis `d`) becomes member `sources[i]`,
  or zeros where that is None: one gather along the batch axis."""
  from refimpl.numpy import take
  if any(s is None for s in sources):  # a zero member after the last to take from
    config = [(0, 0, 0)] * core.get_aval(x).ndim
    config[d] = (0, 1, 0)
    x = shapes.pad(x, const(x, 0), config)
    sources = [size if s is None else s for s in sources]
  return take(x, np.asarray(sources, np.int32), axis=d)


def _ppermute_batch(axis_data, args, dims, *, axis_name, perm):
  (x,), (d,) = args, dims
  if axis_data.name not in axis_name:
    return ppermute_p.bind(x, axis_name=axis_name, perm=perm), d
  if len(axis_name) > 1:
    raise NotImplementedError("ppermute over several axes under vmap: please open a "
                              "feature request!")
  sources = [None] * axis_data.size
  for src, dst in perm:
    sources[dst] = src
  if d is None:
    if None not in sources:
      return x, None
    x, d = batching.broadcast(x, axis_data.size, 0), 0
  return _take_members(x, d, sources, axis_data.size), d


batching.axis_primitive_batchers[ppermute_p] = _ppermute_batch


def ppermute(x, axis_name, perm):
  """Sends `x` (a pytree) from member `src` to member `dst` for each pair of
  `perm`; members that receive nothing get zeros. Sources and destinations
  must be distinct."""
  perm = tuple((int(s), int(d)) for s, d in perm)
  srcs, dsts = [s for s, _ in perm], [d for _, d in perm]
  if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
    raise ValueError(f"ppermute sources and destinations must be unique, got {perm}.")
  names = _names(axis_name)
  return tree_util.tree_map(lambda l: ppermute_p.bind(l, axis_name=names, perm=perm), x)


def pshuffle(x, axis_name, perm):
  """`ppermute` with `perm[i]` the member whose value member i receives."""
  if set(perm) != set(range(len(perm))):
    raise ValueError(f"`perm` does not represent a permutation: {perm}")
  return ppermute(x, axis_name, list(zip(perm, range(len(perm)))))


pbroadcast_p = _collective("pbroadcast", "axis_name")


def _pbroadcast_reference(x, *, axis_name, source):
  """Every member receives the operand of member `source`.

  Shape rule: the operand's."""
  return _unbound(axis_name)


_pbroadcast_reference.__doc__ += _unbound_doc
pbroadcast_p.def_impl(_pbroadcast_reference)


@pbroadcast_p.def_abstract_eval
def _pbroadcast_shape_rule(x, *, axis_name, source):
  _check_names(_names(axis_name))
  return x


def _pbroadcast_transpose(ct, x, *, axis_name, source):
  # the source member's cotangent is the sum of all of them; the others get 0
  total = psum(ct, axis_name)
  is_source = elementwise.eq(axis_index(axis_name), np.int32(source))
  return [elementwise.select(shapes.broadcast(is_source, core.get_aval(ct).shape), total,
                             elementwise.mul(const(ct, 0), ct))]


ad.deflinear2(pbroadcast_p, _pbroadcast_transpose)


def _pbroadcast_batch(axis_data, args, dims, *, axis_name, source):
  (x,), (d,) = args, dims
  names = _names(axis_name)
  if axis_data.name not in names:
    return pbroadcast_p.bind(x, axis_name=axis_name, source=source), d
  if len(names) > 1:
    raise NotImplementedError("pbroadcast batcher only supports a single axis")
  if d is None:
    return x, None
  return _take_members(x, d, [source] * axis_data.size, axis_data.size), d


batching.axis_primitive_batchers[pbroadcast_p] = _pbroadcast_batch


def pbroadcast(x, axis_name, source):
  """Every member gets the `x` (a pytree) of member `source`."""
  return tree_util.tree_map(
      lambda l: pbroadcast_p.bind(l, axis_name=axis_name, source=source), x)


# --- all_to_all ---------------------------------------------------------------------------

all_to_all_p = _collective("all_to_all", "axis_name")


def _all_to_all_reference(x, *, split_axis, concat_axis, axis_name, axis_index_groups,
                          tiled):
  """Each member splits its operand into `n` equal blocks along `split_axis`
  (`n` the size of the named axes) and sends block k to member k, which
  concatenates the blocks it receives along `concat_axis` in member order.

  Shape rule: `split_axis` divided by `n` (which must divide it),
  `concat_axis` multiplied by `n`; dtype kept, not weakly typed. (The
  untiled `lax.all_to_all` adds and removes size-1 axes around it.)"""
  return _unbound(axis_name)


_all_to_all_reference.__doc__ += _unbound_doc
all_to_all_p.def_impl(_all_to_all_reference)


@all_to_all_p.def_abstract_eval
def _all_to_all_shape_rule(x, *, split_axis, concat_axis, axis_name, axis_index_groups,
                           tiled):
  names = _names(axis_name)
  _check_names(names)
  n = axis_size(names) if axis_index_groups is None else len(axis_index_groups[0])
  shape = list(x.shape)
  if shape[split_axis] % n:
    raise ValueError(f"all_to_all split_axis size {shape[split_axis]} is not divisible by "
                     f"the axis size {n}")
  shape[split_axis] //= n
  shape[concat_axis] *= n
  return x.update(shape=tuple(shape), weak_type=False)


def _all_to_all_transpose(ct, x, *, split_axis, concat_axis, **params):
  # a permutation of the elements: its transpose is the inverse exchange
  return [all_to_all_p.bind(ct, split_axis=concat_axis, concat_axis=split_axis, **params)]


ad.deflinear2(all_to_all_p, _all_to_all_transpose)


def _all_to_all_batch(axis_data, args, dims, *, split_axis, concat_axis, axis_name,
                      axis_index_groups, tiled):
  (x,), (d,) = args, dims
  names = _names(axis_name)
  params = dict(axis_name=axis_name, axis_index_groups=axis_index_groups, tiled=tiled)
  if axis_data.name not in names:
    return all_to_all_p.bind(x, split_axis=split_axis + (d <= split_axis),
                             concat_axis=concat_axis + (d <= concat_axis), **params), d
  _check_groups(axis_index_groups)
  if len(names) > 1:
    raise NotImplementedError("all_to_all over several axes under vmap: please open a "
                              "feature request!")
  n = axis_data.size
  if d is None:
    x, d = batching.broadcast(x, n, 0), 0
  if split_axis == concat_axis:
    # split the axis into (block, rest), exchange the block and batch axes,
    # and merge the old batch axis (the sending member) into the axis
    axis = split_axis + (d <= split_axis)
    y = _split(x, axis, n)
    y = _swap(y, d + (axis <= d), axis)
    return _fold(y, axis), d
  # merge the batch axis (sending member, major) into concat_axis, then split
  # the blocks of split_axis off as the new batch axis
  y = _fold(batching.moveaxis(x, d, concat_axis), concat_axis)
  return _split(y, split_axis, n), split_axis


batching.axis_primitive_batchers[all_to_all_p] = _all_to_all_batch


def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None, tiled=False):
  """Exchanges blocks of `x` (a pytree) between the members of `axis_name`:
  the axis `split_axis` (of the axis size; any multiple with `tiled`) is
  scattered to the members, and what they send is stacked along
  `concat_axis` in member order (`tiled`: concatenated along it)."""
  axis_index_groups = _canonical_groups(axis_index_groups)

  def bind(x, split_axis=split_axis, concat_axis=concat_axis):
    n = (len(axis_index_groups[0]) if axis_index_groups is not None
         else axis_size(_names(axis_name)))
    size = core.get_aval(x).shape[split_axis]
    if tiled:
      if size % n:
        raise ValueError(f"The size of all_to_all split_axis ({size}) has to be divisible "
                         f"by the size of the named axis {axis_name} ({n})")
    else:
      if n != size:
        raise ValueError("all_to_all requires the size of the mapped axis axis_name to "
                         f"equal x.shape[split_axis], but they are {n} and {size} "
                         "respectively.")
      if split_axis < concat_axis:
        concat_axis += 1  # a position after split_axis is removed
        x = shapes.expand_dims(x, (concat_axis,))
      elif concat_axis < split_axis:
        x = shapes.expand_dims(x, (concat_axis,))
        split_axis += 1
    result = all_to_all_p.bind(x, split_axis=split_axis, concat_axis=concat_axis,
                               axis_name=axis_name, axis_index_groups=axis_index_groups,
                               tiled=tiled)
    if not tiled and split_axis != concat_axis:
      result = shapes.squeeze(result, (split_axis,))
    return result
  return tree_util.tree_map(bind, x)


def pswapaxes(x, axis_name, axis, *, axis_index_groups=None):
  """Swaps the mapped axis `axis_name` with the axis `axis` of `x`:
  `all_to_all(x, axis_name, axis, axis)`."""
  return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


# --- axis_index ---------------------------------------------------------------------------

axis_index_p = _collective("axis_index", "axis_name")


def _axis_index_reference(*, axis_name):
  """The index (int32 scalar) of the member along the named axis.

  Shape rule: int32[]."""
  return _unbound(axis_name)


_axis_index_reference.__doc__ += _unbound_doc
axis_index_p.def_impl(_axis_index_reference)


@axis_index_p.def_abstract_eval
def _axis_index_shape_rule(*, axis_name):
  _check_names(_names(axis_name))
  return ShapedArray((), np.int32)


ad.defjvp_zero(axis_index_p)


def _axis_index_batch(axis_data, args, dims, *, axis_name):
  return shapes.iota(np.int32, axis_data.size), 0


batching.axis_primitive_batchers[axis_index_p] = _axis_index_batch


def axis_index(axis_name):
  """The index of this member along the mapped axis `axis_name` (int32); for
  a tuple of names, the index into their product, the first one major."""
  if not isinstance(axis_name, (tuple, list)):
    return axis_index_p.bind(axis_name=axis_name)
  index, inner = np.int32(0), 1
  for name in reversed(axis_name):
    index = elementwise.add(index, elementwise.mul(axis_index(name), np.int32(inner)))
    inner *= axis_size(name)
  return index
