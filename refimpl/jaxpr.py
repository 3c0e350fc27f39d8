"""The jaxpr IR: typed, first-order programs in A-normal form.

Grammar (see docs/jaxpr.md)::

    ClosedJaxpr ::= Jaxpr with a value for each constvar
    Jaxpr       ::= { lambda Binder* ; Binder* . let Eqn* in ( Atom* ) }
    Eqn         ::= Binder+ = primitive[param=value ...] Atom*
    Atom        ::= Var | Literal
    Binder      ::= Var:type           e.g.  a:f32[3,4]
    Literal     ::= value:type         e.g.  2.0:f32[]

Params are plain hashable data (ints, tuples, dtypes, enums, strings) or
ClosedJaxprs for sub-programs, so a jaxpr can be hashed, printed and lowered
by a backend without running any Python from the user's program.
"""

import itertools

import numpy as np

from refimpl import core, dtypes


class Var:
  """A variable: defined once (as an input or an equation output)."""

  __slots__ = ("aval", "_id")
  _counter = itertools.count()

  def __init__(self, aval):
    self.aval = aval
    self._id = next(Var._counter)

  def __repr__(self):
    return f"Var({self._id}:{self.aval.str_short(short_dtypes=True)})"


class DropVar(Var):
  """An equation output that nothing reads; printed as `_`."""

  __slots__ = ()


class Literal:
  """A scalar constant written inline in an equation."""

  __slots__ = ("val", "aval")

  def __init__(self, val, aval):
    self.val = np.asarray(val, dtype=aval.dtype)
    self.aval = aval

  def __repr__(self):
    return f"{format_literal_value(self.val)}:{self.aval.str_short(short_dtypes=True)}"


def format_literal_value(val):
  if val.dtype == np.bool_:
    return str(bool(val))
  if dtypes.is_inexact(val.dtype) and val.dtype.itemsize <= 2:
    return str(float(val))  # float16/bfloat16 print as their exact value
  return str(val)


class JaxprEqn:
  """`outvars = primitive[params] invars`."""

  __slots__ = ("invars", "outvars", "primitive", "params")

  def __init__(self, invars, outvars, primitive, params):
    self.invars = list(invars)
    self.outvars = list(outvars)
    self.primitive = primitive
    self.params = dict(params)

  def __repr__(self):
    return pp_eqn(self, _Names(), 0)


class Jaxpr:
  """A program: constvars and invars in, outvars out, equations in order.

  A jaxpr is not modified once built, so what is derived from it (the
  interpreter's schedule, the structural key) is computed once and kept.
  """

  __slots__ = ("constvars", "invars", "outvars", "eqns", "_schedule", "_program",
               "_key", "__weakref__")

  def __init__(self, constvars, invars, outvars, eqns):
    self.constvars = list(constvars)
    self.invars = list(invars)
    self.outvars = list(outvars)
    self.eqns = list(eqns)
    self._schedule = None  # refimpl.interpreters.eval's, built on first evaluation
    self._program = None   # likewise, for run_jaxpr
    self._key = None

  @property
  def in_avals(self):
    return [v.aval for v in self.invars]

  @property
  def out_avals(self):
    return [v.aval for v in self.outvars]

  def __str__(self):
    return pp_jaxpr(self, _Names(), 0)

  __repr__ = __str__

  def pretty_print(self):
    return str(self)

  def structural_key(self):
    """A hashable key equal for structurally identical jaxprs (whatever the
    values of their constvars): variables are numbered by first appearance,
    literals keyed by value, nested closed jaxprs by their structural keys.
    Compile caches use it."""
    if self._key is None:
      self._key = _jaxpr_key(self)
    return self._key


def _jaxpr_key(jaxpr):
  names = {}

  def atom(a):
    if isinstance(a, Literal):
      return ("lit", a.val.tobytes(), a.aval)
    return ("var", names.setdefault(a, len(names)), a.aval)

  def param(v):
    if isinstance(v, (ClosedJaxpr, Jaxpr)):
      return v.structural_key()
    if isinstance(v, (tuple, list)):
      return tuple(param(x) for x in v)
    return v

  return (tuple(atom(v) for v in jaxpr.constvars), tuple(atom(v) for v in jaxpr.invars),
          tuple((e.primitive.name,
                 tuple(sorted((k, param(v)) for k, v in e.params.items())),
                 tuple(atom(a) for a in e.invars),
                 tuple(atom(a) for a in e.outvars)) for e in jaxpr.eqns),
          tuple(atom(a) for a in jaxpr.outvars))


def _const_key(c):
  if isinstance(c, core.Tracer):
    return id(c)
  data = core.to_numpy(c)
  return (data.dtype, data.shape, data.tobytes())


class ClosedJaxpr:
  """A jaxpr together with the values of its constvars."""

  __slots__ = ("jaxpr", "consts", "_key", "_hash", "__weakref__")

  def __init__(self, jaxpr, consts):
    assert len(jaxpr.constvars) == len(consts)
    self.jaxpr = jaxpr
    self.consts = list(consts)
    self._key = None
    self._hash = None

  @property
  def in_avals(self):
    return self.jaxpr.in_avals

  @property
  def out_avals(self):
    return self.jaxpr.out_avals

  @property
  def eqns(self):
    return self.jaxpr.eqns

  def __str__(self):
    return str(self.jaxpr)

  __repr__ = __str__

  def pretty_print(self):
    return str(self)

  def structural_key(self):
    """A hashable key equal for structurally identical programs: the jaxpr's
    `Jaxpr.structural_key` and the consts keyed by their bytes, so two traces
    of the same function give the same key."""
    if self._key is None:
      self._key = (self.jaxpr.structural_key(), tuple(_const_key(c) for c in self.consts))
    return self._key

  def __hash__(self):
    if self._hash is None:
      self._hash = hash(self.structural_key())
    return self._hash

  def __eq__(self, other):
    return (isinstance(other, ClosedJaxpr)
            and self.structural_key() == other.structural_key())


# --- dead-code elimination -------------------------------------------------

def dce_jaxpr(jaxpr):
  """Removes equations whose outputs are never used (keeping side effects).

  Inputs are kept, even unused ones, so the calling convention is unchanged.
  """
  live = {v for v in jaxpr.outvars if isinstance(v, Var)}
  kept = []
  for eqn in reversed(jaxpr.eqns):
    if eqn.primitive.has_side_effects or any(v in live for v in eqn.outvars):
      kept.append(eqn)
      live.update(v for v in eqn.invars if isinstance(v, Var))
  return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, reversed(kept))


# --- printing --------------------------------------------------------------

_WIDTH = 80


class _Names:
  """Names variables a, b, ..., z, ba, bb, ... in order of first printing.

  One instance is shared by a jaxpr and the jaxprs nested in its params, so
  names are unique across the whole printout.
  """

  def __init__(self):
    self.names = {}

  def __call__(self, v):
    if isinstance(v, Literal):
      return repr(v)
    if isinstance(v, DropVar):
      return "_"
    if v not in self.names:
      n, s = len(self.names), ""
      while not s or n:
        n, i = divmod(n, 26)
        s = chr(ord("a") + i) + s
      self.names[v] = s
    return self.names[v]


def _binders(vs, names):
  return " ".join(f"{names(v)}:{v.aval.str_short(short_dtypes=True)}" for v in vs)


def pp_param_value(value, names, indent):
  if isinstance(value, ClosedJaxpr):
    return pp_jaxpr(value.jaxpr, names, indent)
  if isinstance(value, Jaxpr):
    return pp_jaxpr(value, names, indent)
  if isinstance(value, np.dtype):
    return value.name
  if isinstance(value, tuple) and hasattr(value, "_fields"):
    return repr(value)  # a NamedTuple such as GatherDimensionNumbers
  if isinstance(value, tuple) and value and all(
      isinstance(v, (ClosedJaxpr, Jaxpr)) for v in value):
    return _pp_jaxprs(value, names, indent)
  if isinstance(value, tuple):
    items = [pp_param_value(v, names, indent) for v in value]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
  if callable(value) and hasattr(value, "__name__"):
    return value.__name__
  return str(value)


def _pp_jaxprs(jaxprs, names, indent):
  """A tuple of jaxprs (cond's `branches`), as JAX prints it: `({...} {...})`
  on one line if it fits, else one jaxpr per line inside the parentheses."""
  items = [pp_param_value(j, names, indent + 2) for j in jaxprs]
  one_line = "(" + " ".join(items) + ")"
  if all("\n" not in i for i in items) and indent + len(one_line) <= _WIDTH:
    return one_line
  return "(\n" + "\n".join(" " * (indent + 2) + i for i in items) + "\n" + " " * indent + ")"


def _pp_params(params, names, indent):
  return [f"{k}={pp_param_value(v, names, indent)}" for k, v in params.items()]


def pp_eqn(eqn, names, indent):
  """`outs = prim[params] ins`; params go one per line when they do not fit.

  An equation with no outputs (a pure side effect) prints without `outs =`.
  Params holding jaxprs always go one per line.
  """
  lhs = _binders(eqn.outvars, names) + " = " if eqn.outvars else ""
  has_jaxpr = any(isinstance(v, (ClosedJaxpr, Jaxpr)) or (
      isinstance(v, tuple) and any(isinstance(x, (ClosedJaxpr, Jaxpr)) for x in v))
                  for v in eqn.params.values())
  args = "".join(" " + names(a) for a in eqn.invars)
  params = _pp_params(eqn.primitive.pp_params(eqn.params), names, indent + 2)
  one_line = lhs + eqn.primitive.name + (f"[{' '.join(params)}]" if params else "") + args
  if not has_jaxpr and indent + len(one_line) <= _WIDTH:
    return one_line
  inner = "\n".join(" " * (indent + 2) + p for p in params)
  return f"{lhs}{eqn.primitive.name}[\n{inner}\n{' ' * indent}]{args}"


def pp_jaxpr(jaxpr, names, indent):
  """`{ lambda consts ; ins . let eqns in (outs) }`, broken over lines if long."""
  head = f"{{ lambda {_binders(jaxpr.constvars, names)}; {_binders(jaxpr.invars, names)}. let"
  eqns = [pp_eqn(e, names, indent + 4) for e in jaxpr.eqns]
  outs = "(" + ", ".join(names(v) for v in jaxpr.outvars) + \
      ("," if len(jaxpr.outvars) == 1 else "") + ")"
  one_line = f"{head} {'; '.join(eqns)} in {outs} }}" if eqns else f"{head} in {outs} }}"
  if all("\n" not in e for e in eqns) and indent + len(one_line) <= _WIDTH:
    return one_line
  body = "\n".join(" " * (indent + 4) + e for e in eqns)
  return f"{head}\n{body}\n{' ' * (indent + 2)}in {outs} }}"
