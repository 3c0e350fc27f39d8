"""Vectorization: `vmap` by batch tracing, structured as JAX does.

Under `vmap`, every value stands for a *batch* of values, one per member.
`BatchTrace` represents a batched value by one array with an extra axis, the
batch axis, at position `batch_dim`. A value that does not depend on the
mapped inputs is *unbatched* (`not_mapped`): one value shared by every
member, never broadcast unless an operation needs it.

Binding a primitive runs its batching rule from `primitive_batchers` in the
parent trace: `rule(args, dims, **params) -> (out, out_dim)` receives the
arrays of the whole batch with their batch dims (`not_mapped` for the
unbatched ones) and returns the batch of results with its batch dim (lists
of both for multiple-result primitives). A rule moves the batch axis only
where it must: an elementwise op whose operands agree leaves it in place, a
`dot_general` folds it into its batch dimensions. A primitive whose
operands are all unbatched just runs on them.

Named axes. `vmap(..., axis_name='i')` names the batch axis so that
collectives (`lax.psum`, `lax.all_gather`, `lax.axis_index`, ...) can refer
to it. Their rules, in `axis_primitive_batchers`, also receive the trace's
`AxisData`: the trace whose axis a collective names computes it across its
batch axis; a trace of another name passes it on to its parent. Primitives
holding a jaxpr (`jit`) are there too, to batch the jaxpr with the same
axis.
"""

import collections
import contextlib
import functools

from refimpl import core
from refimpl.interpreters import partial_eval as pe
from refimpl.interpreters.eval import eval_closed_jaxpr
from refimpl.jaxpr import jaxprs_in_params

not_mapped = None
"""The batch dim of an unbatched value."""

AxisData = collections.namedtuple("AxisData", ["name", "size"])
AxisData.__doc__ = "The mapped axis of a `BatchTrace`: its name (or None) and size."

primitive_batchers = {}
"""primitive -> rule(args, dims, **params) -> (out, out_dims)."""

axis_primitive_batchers = {}
"""primitive -> rule(axis_data, args, dims, **params) -> (out, out_dims), for
the primitives that need the mapped axis itself (collectives, calls)."""

collective_axis_names = {}
"""collective primitive -> function(params) -> the axis names it works across."""


# --- batched values ------------------------------------------------------------

class BatchTracer(core.Tracer):
  """A batch of values under `vmap`: `val` (a value of the parent trace) with
  the batch axis at `batch_dim`. Its aval is a member's: without that axis."""

  __slots__ = ("val", "batch_dim")
  repr_name = "BatchTracer"

  def __init__(self, trace, val, batch_dim):
    self._trace = trace
    self.val = val
    self.batch_dim = batch_dim

  @property
  def aval(self):
    aval = core.get_aval(self.val)
    d = self.batch_dim
    return aval.update(shape=aval.shape[:d] + aval.shape[d + 1:])


class BatchTrace(core.Trace):
  """Runs primitives on batches with their batching rules. Values that are
  not this trace's tracers (constants, tracers of enclosing traces) are
  unbatched here."""

  def __init__(self, parent, axis_data):
    self.parent = parent
    self.axis_data = axis_data

  def to_batch_info(self, x):
    if isinstance(x, BatchTracer) and x._trace is self:
      return x.val, x.batch_dim
    return x, not_mapped

  def new_tracer(self, val, dim):
    if dim is not_mapped:
      return val
    return BatchTracer(self, val, dim % core.get_aval(val).ndim)

  def process_primitive(self, primitive, args, params):
    vals, dims = zip(*map(self.to_batch_info, args)) if args else ((), ())
    unbatched = all(d is not_mapped for d in dims)
    with core.set_current_trace(self.parent):
      if primitive in axis_primitive_batchers and (
          not unbatched or self.axis_data.name in used_axis_names(primitive, params)):
        out, out_dims = axis_primitive_batchers[primitive](self.axis_data, vals, dims,
                                                           **params)
      elif unbatched:
        return primitive.bind(*vals, **params)
      else:
        rule = primitive_batchers.get(primitive)
        if rule is None:
          raise NotImplementedError(f"Batching rule for '{primitive.name}' not implemented")
        out, out_dims = rule(vals, dims, **params)
    if primitive.multiple_results:
      return [self.new_tracer(o, d) for o, d in zip(out, out_dims)]
    return self.new_tracer(out, out_dims)


def used_axis_names(primitive, params):
  """The axis names an application of `primitive` works across, its
  sub-jaxprs' included."""
  names = set()
  if primitive in collective_axis_names:
    names.update(collective_axis_names[primitive](params))
  for sub in jaxprs_in_params(params):
    for eqn in sub.eqns:
      names |= used_axis_names(eqn.primitive, eqn.params)
  return names


def batch_flat(fun, axis_data, args, in_dims):
  """Runs `fun` (flat lists in and out) on batched `args` (batch axis of each
  at `in_dims`, `not_mapped` for none). Returns (outputs, their batch dims)."""
  trace = BatchTrace(core.current_trace(), axis_data)
  tracers = [trace.new_tracer(x, d) for x, d in zip(args, in_dims)]
  scope = (contextlib.nullcontext() if axis_data.name is None
           else core.extend_axis_env(axis_data.name, axis_data.size))
  with core.set_current_trace(trace), scope:
    outs = fun(*tracers)
  pairs = [trace.to_batch_info(o) for o in outs]
  return [v for v, _ in pairs], [d for _, d in pairs]


# --- moving batch axes -----------------------------------------------------------

def moveaxis(x, src, dst):
  """`x` with its axis `src` moved to position `dst` (a `transpose`, none
  when the axis is already there)."""
  from refimpl.lax.shapes import transpose
  ndim = core.get_aval(x).ndim
  src, dst = src % ndim, dst % ndim
  if src == dst:
    return x
  perm = [i for i in range(ndim) if i != src]
  perm.insert(dst, src)
  return transpose(x, tuple(perm))


def broadcast(x, size, axis):
  """`x` with a new axis of length `size` inserted at position `axis`."""
  from refimpl.lax.shapes import broadcast_in_dim
  aval = core.get_aval(x)
  shape = list(aval.shape)
  shape.insert(axis, size)
  dims = tuple(i for i in range(len(shape)) if i != axis)
  return broadcast_in_dim(x, tuple(shape), dims)


def bdim_at_front(x, dim, size):
  """The batch `x` (batch axis at `dim`) with its batch axis first; an
  unbatched `x` is broadcast to a batch of `size`."""
  if dim is not_mapped:
    return broadcast(x, size, 0)
  return moveaxis(x, dim, 0)


def matchaxis(src, dst, size, x):
  """The batch `x` with its batch axis moved from `src` to `dst`, an
  unbatched `x` broadcast to a batch of `size` if `dst` asks for one.
  Asking to unbatch a batched value raises `ValueError`."""
  if src == dst:
    return x
  if dst is not_mapped:
    raise ValueError(f"cannot unbatch a value batched along axis {src}")
  if src is not_mapped:
    return broadcast(x, size, dst % (core.get_aval(x).ndim + 1))
  return moveaxis(x, src, dst)


# --- registering rules -----------------------------------------------------------

def defvectorized(primitive):
  """An elementwise unary primitive: it applies to the batch as it is, and
  the batch axis stays where it is."""
  def rule(args, dims, **params):
    (x,), (d,) = args, dims
    return primitive.bind(x, **params), d
  primitive_batchers[primitive] = rule


def defbroadcasting(primitive):
  """An n-ary elementwise primitive (operands broadcast as `add`'s do)."""
  primitive_batchers[primitive] = functools.partial(broadcast_batcher, primitive)


def broadcast_batcher(primitive, args, dims, **params):
  """The batching rule of an elementwise primitive.

  When the batched operands agree in shape and batch dim (others being
  scalars) the primitive applies as it is. Otherwise batch axes go first,
  unbatched operands get a size-1 leading axis, and per-member scalars get
  trailing size-1 axes, so that the primitive's own broadcasting of size-1
  axes does the rest.
  """
  shape, dim = next((core.get_aval(x).shape, d) for x, d in zip(args, dims)
                    if d is not not_mapped)
  if all(core.get_aval(x).shape == shape and d == dim
         for x, d in zip(args, dims) if core.get_aval(x).ndim):
    out = primitive.bind(*args, **params)
  else:
    from refimpl.lax.shapes import expand_dims
    args = [bdim_at_front(x, d, 1) if core.get_aval(x).ndim else x
            for x, d in zip(args, dims)]
    ndim = max(core.get_aval(x).ndim for x in args)
    args = [x if d is not_mapped or core.get_aval(x).ndim == ndim
            else expand_dims(x, tuple(range(core.get_aval(x).ndim, ndim)))
            for x, d in zip(args, dims)]
    out, dim = primitive.bind(*args, **params), 0
  return out, ([dim] * len(out) if primitive.multiple_results else dim)


# --- primitives holding jaxprs ---------------------------------------------------

_batch_jaxpr_cache = {}


def batch_jaxpr(closed, axis_data, in_batched, instantiate):
  """The batched version of a closed jaxpr, as a closed jaxpr.

  Its inputs where `in_batched` is True carry a leading batch axis of
  `axis_data.size`; its outputs do where they depend on those inputs or are
  `instantiate`d (a bool, or one per output). Returns (jaxpr, out_batched).
  Used by the rules of primitives holding jaxprs.
  """
  if isinstance(instantiate, bool):
    instantiate = (instantiate,) * len(closed.out_avals)
  key = (closed, axis_data, tuple(in_batched), tuple(instantiate))
  if key in _batch_jaxpr_cache:
    return _batch_jaxpr_cache[key]
  out_batched_box = []

  def fun(*args):
    in_dims = [0 if b else not_mapped for b in in_batched]
    outs, dims = batch_flat(lambda *xs: eval_closed_jaxpr(closed, *xs), axis_data,
                            args, in_dims)
    out_batched = [d is not not_mapped or inst for d, inst in zip(dims, instantiate)]
    out_batched_box.append(out_batched)
    return [matchaxis(d, 0 if b else not_mapped, axis_data.size, x)
            for x, d, b in zip(outs, dims, out_batched)]

  in_avals = [batched_aval(a, axis_data.size) if b else a
              for a, b in zip(closed.in_avals, in_batched)]
  result = pe.trace_to_jaxpr(fun, in_avals), out_batched_box[0]
  _batch_jaxpr_cache[key] = result
  return result


def batched_aval(aval, size, axis=0):
  """The aval of a batch of `size` values of type `aval`, batch axis at `axis`."""
  shape = list(aval.shape)
  shape.insert(axis, size)
  return aval.update(shape=tuple(shape))


def call_batching_rule(primitive):
  """The batching rule of a primitive calling its `jaxpr` param (jit,
  checkpoint): a call of the batched jaxpr, batch axes first."""
  def rule(axis_data, args, dims, *, jaxpr, **params):
    args = [x if d is not_mapped else moveaxis(x, d, 0) for x, d in zip(args, dims)]
    batched, out_batched = batch_jaxpr(jaxpr, axis_data,
                                       [d is not not_mapped for d in dims], False)
    outs = primitive.bind(*args, jaxpr=batched, **params)
    return outs, [0 if b else not_mapped for b in out_batched]
  return rule
