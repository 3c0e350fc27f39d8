"""The jaxpr IR: typed, first-order programs in A-normal form.

Grammar (see docs/jaxpr.md)::

    ClosedJaxpr ::= Jaxpr with a value for each constvar
    Jaxpr       ::= { lambda Binder* ; Binder* . let Eqn* in ( Atom* ) }
    Eqn         ::= Binder+ = primitive[param=value ...] Atom*
    Atom        ::= Var | Literal
    Binder      ::= Var:type           e.g.  a:f32[3,4]
    Literal     ::= value:type         e.g.  2.0:f32[]

Params are plain hashable data (ints, tuples, dtypes, enums, strings),
ClosedJaxprs for sub-programs (`jaxprs_in_params`), the Python objects only
transformations read (each primitive's `transformation_params`) and the
callbacks of the callback primitives (docs/jaxpr.md). `check_jaxpr` checks
that a jaxpr is well typed.
"""

import enum
import functools
import itertools

import numpy as np

from refimpl import core, dtypes
from refimpl.errors import JaxprTypeError


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
               "_key", "_rules_key", "__weakref__")

  def __init__(self, constvars, invars, outvars, eqns):
    self.constvars = list(constvars)
    self.invars = list(invars)
    self.outvars = list(outvars)
    self.eqns = list(eqns)
    self._schedule = None  # refimpl.interpreters.eval's, built on first evaluation
    self._program = None   # likewise, for run_jaxpr
    self._key = self._rules_key = None

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
    """A hashable key equal for jaxprs that compute the same (whatever the
    values of their constvars): variables are numbered by first appearance,
    literals keyed by value, sub-jaxprs by their structural keys, and params
    a transformation alone reads (`Primitive.transformation_params`) left
    out. Compile caches use it: a program compiled for one jaxpr computes
    what any jaxpr of the same key does, its consts passed as inputs."""
    if self._key is None:
      self._key = _jaxpr_key(self, rules=False)
    return self._key

  def key_with_rules(self):
    """The structural key with the transformation-only params kept (compared
    as values: custom rules by identity). Jaxprs of equal keys are the same
    to transformations too; the transformations' caches use it (through
    `ClosedJaxpr` equality)."""
    if self._rules_key is None:
      self._rules_key = _jaxpr_key(self, rules=True)
    return self._rules_key


def _jaxpr_key(jaxpr, rules):
  names = {}

  def atom(a):
    if isinstance(a, Literal):
      return ("lit", a.val.tobytes(), a.aval)
    return ("var", names.setdefault(a, len(names)), a.aval)

  def param(v):
    if not jaxprs_in_value(v):
      return v
    if isinstance(v, tuple):
      return tuple(map(param, v))
    return v.key_with_rules() if rules else v.structural_key()

  return (tuple(atom(v) for v in jaxpr.constvars), tuple(atom(v) for v in jaxpr.invars),
          tuple((e.primitive.name,
                 tuple(sorted((k, param(v)) for k, v in e.params.items()
                              if rules or k not in e.primitive.transformation_params)),
                 tuple(atom(a) for a in e.invars),
                 tuple(atom(a) for a in e.outvars)) for e in jaxpr.eqns),
          tuple(atom(a) for a in jaxpr.outvars))


class _ConstKey:
  """A const in a structural key: hashed by its aval alone (its data is not
  read to hash it), equal to another const's key when they are the same
  object or hold the same bytes (so -0.0 and 0.0 differ). A tracer equals
  itself only."""

  __slots__ = ("value", "aval")

  def __init__(self, value):
    self.value = value
    self.aval = core.get_aval(value)

  def __hash__(self):
    return hash(self.aval)

  def __eq__(self, other):
    if not isinstance(other, _ConstKey):
      return NotImplemented
    if self.value is other.value:
      return True
    if self.aval != other.aval or isinstance(self.value, core.Tracer) or isinstance(
        other.value, core.Tracer):
      return False
    return core.to_numpy(self.value).tobytes() == core.to_numpy(other.value).tobytes()


class ClosedJaxpr:
  """A jaxpr together with the values of its constvars."""

  __slots__ = ("jaxpr", "consts", "_consts_key", "_hash", "__weakref__")

  def __init__(self, jaxpr, consts):
    assert len(jaxpr.constvars) == len(consts)
    self.jaxpr = jaxpr
    self.consts = list(consts)
    self._consts_key = None
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

  def _const_keys(self):
    if self._consts_key is None:
      self._consts_key = tuple(map(_ConstKey, self.consts))
    return self._consts_key

  def structural_key(self):
    """A hashable key equal for programs that compute the same: the jaxpr's
    `Jaxpr.structural_key` and its consts, equal when the same objects or
    of the same bytes (`_ConstKey`: hashing reads no const data, comparing
    two different consts does). So two traces of the same function give the
    same key, and a sub-jaxpr's consts are part of the key of the jaxpr
    holding it."""
    return (self.jaxpr.structural_key(), self._const_keys())

  def key_with_rules(self):
    """`structural_key` with the transformation-only params kept
    (`Jaxpr.key_with_rules`): the key of ClosedJaxpr equality and hash."""
    return (self.jaxpr.key_with_rules(), self._const_keys())

  def __hash__(self):
    if self._hash is None:
      self._hash = hash(self.key_with_rules())
    return self._hash

  def __eq__(self, other):
    return isinstance(other, ClosedJaxpr) and self.key_with_rules() == other.key_with_rules()


# --- sub-jaxprs --------------------------------------------------------------

def jaxprs_in_value(value):
  """The Jaxprs and ClosedJaxprs a param value holds, in order: the value
  itself, or the jaxpr elements of a tuple (cond's `branches`, the four of
  custom_linear_solve's `jaxprs`, some None). Jaxprs are nowhere else in
  params."""
  if isinstance(value, (Jaxpr, ClosedJaxpr)):
    return (value,)
  if isinstance(value, tuple):
    return tuple(v for v in value if isinstance(v, (Jaxpr, ClosedJaxpr)))
  return ()


def jaxprs_in_params(params):
  """Every Jaxpr in an equation's params, ClosedJaxprs unwrapped (JAX's
  `core.jaxprs_in_params`)."""
  for value in params.values():
    for j in jaxprs_in_value(value):
      yield j.jaxpr if isinstance(j, ClosedJaxpr) else j


def subjaxprs(jaxpr):
  """Every Jaxpr in the params of `jaxpr`'s equations, not looking further
  into them (JAX's `core.subjaxprs`)."""
  for eqn in jaxpr.eqns:
    yield from jaxprs_in_params(eqn.params)


# --- type checking -------------------------------------------------------------

def check_jaxpr(jaxpr):
  """Raises `JaxprTypeError` unless `jaxpr` (a Jaxpr or a ClosedJaxpr) is
  well typed (JAX's `core.check_jaxpr`):

  * every variable is defined once (a constvar, an invar or an equation
    output; a `_` output defines nothing) before it is read, the outvars
    included;
  * a literal's value has its type's shape and dtype;
  * an equation's outvars have the types its primitive's shape rule gives
    for its operands' types (a rule rejecting them, with TypeError or
    ValueError, is a type error); a call primitive's operands have the
    types of its sub-jaxpr's invars (`Primitive.call_jaxpr_param`);
  * a ClosedJaxpr has one const per constvar, of that constvar's type;
  * every sub-jaxpr, recursively, with its own binders (it sees no variable
    of the jaxpr around it).

  Types agree as JAX's `typematch` says: the same shape and dtype, weak
  types ignored. The message says what is wrong, in which equation (printed,
  for each jaxpr it is nested in), then prints `jaxpr`, whose variable names
  the message uses.
  """
  top = jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr

  @functools.cache
  def names():  # named as the printout of `jaxpr` names them
    names = _Names()
    pp_jaxpr(top, names, 0)
    return names

  try:
    _check_program(jaxpr, names)
  except JaxprTypeError as err:
    raise JaxprTypeError(f"{err}\n\nwhile checking jaxpr:\n\n{pp_jaxpr(top, names(), 0)}"
                         ) from None


def _typematch(aval, other):
  return aval.shape == other.shape and aval.dtype == other.dtype


def _short(aval):
  return aval.str_short(short_dtypes=True)


def _check_program(program, names):
  if isinstance(program, Jaxpr):
    return _check_jaxpr(program, names)
  jaxpr, consts = program.jaxpr, program.consts
  if len(consts) != len(jaxpr.constvars):
    raise JaxprTypeError(f"ClosedJaxpr has {len(consts)} consts for its "
                         f"{len(jaxpr.constvars)} constvars")
  for v, c in zip(jaxpr.constvars, consts):
    aval = core.get_aval(c)
    if not _typematch(v.aval, aval):
      raise JaxprTypeError(f"Const of type {_short(aval)} bound to constvar "
                           f"'{names()(v)}' of type {_short(v.aval)}")
  _check_jaxpr(jaxpr, names)


def _check_jaxpr(jaxpr, names):
  defined = set()

  def read(a):
    if isinstance(a, Literal):
      if not (isinstance(a.val, np.ndarray) and a.val.shape == a.aval.shape
              and a.val.dtype == dtypes.numpy_dtype(a.aval.dtype)):
        raise JaxprTypeError(f"Literal value {a.val!r} does not match its type "
                             f"annotation {_short(a.aval)}")
    elif not isinstance(a, Var) or a not in defined:
      raise JaxprTypeError(f"Variable '{names()(a)}' not defined")

  def define(v, aval):
    if v in defined:
      raise JaxprTypeError(f"Variable '{names()(v)}' already bound")
    if not _typematch(v.aval, aval):
      raise JaxprTypeError(f"Value for variable '{names()(v)}' inconsistently typed as "
                           f"{_short(aval)} for let-binder of type {_short(v.aval)}")
    if not isinstance(v, DropVar):
      defined.add(v)

  for v in jaxpr.constvars + jaxpr.invars:
    define(v, v.aval)
  for eqn in jaxpr.eqns:
    try:
      for a in eqn.invars:
        read(a)
      out_avals = _eqn_out_avals(eqn, names)
      if len(out_avals) != len(eqn.outvars):
        raise JaxprTypeError(f"{eqn.primitive.name} has {len(out_avals)} results "
                             f"bound to {len(eqn.outvars)} variables")
      for v, aval in zip(eqn.outvars, out_avals):
        define(v, aval)
    except JaxprTypeError as err:
      raise JaxprTypeError(f"{err}\n\nin equation:\n\n  {pp_eqn(eqn, names(), 2)}"
                           ) from None
  for a in jaxpr.outvars:
    try:
      read(a)
    except JaxprTypeError as err:
      raise JaxprTypeError(f"{err}, an output of the jaxpr") from None


def _eqn_out_avals(eqn, names):
  """The types of `eqn`'s results as its shape rule gives them, once its
  sub-jaxprs (and a call's operands) are checked."""
  primitive, params = eqn.primitive, eqn.params
  for value in params.values():
    for sub in jaxprs_in_value(value):
      _check_program(sub, names)
  in_avals = [a.aval for a in eqn.invars]
  if primitive.call_jaxpr_param is not None:
    callee = params[primitive.call_jaxpr_param]
    if len(in_avals) != len(callee.in_avals):
      raise JaxprTypeError(f"Call primitive {primitive.name} with {len(in_avals)} "
                           f"operands cannot call a jaxpr with {len(callee.in_avals)} inputs")
    for a, v in zip(eqn.invars, callee.jaxpr.invars):
      if not _typematch(v.aval, a.aval):
        raise JaxprTypeError(f"Call primitive {primitive.name} passes operand "
                             f"{names()(a)} of type {_short(a.aval)} to input "
                             f"'{names()(v)}' of type {_short(v.aval)}")
  try:
    out = primitive.abstract_eval(*in_avals, **params)
  except (TypeError, ValueError) as err:
    raise JaxprTypeError(f"The shape rule of {primitive.name} rejects operands of types "
                         f"{', '.join(map(_short, in_avals))}: {err}") from None
  return list(out) if primitive.multiple_results else [out]


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
  if isinstance(value, tuple) and value and len(jaxprs_in_value(value)) == len(value):
    return _pp_jaxprs(value, names, indent)
  if isinstance(value, tuple):   # enum members inside as their repr, as Python prints tuples
    items = [repr(v) if isinstance(v, enum.Enum) else pp_param_value(v, names, indent)
             for v in value]
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
  has_jaxpr = any(map(jaxprs_in_value, eqn.params.values()))
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
