"""The lowering interpreter: a jaxpr to the source of one Python function
that Numba compiles (autodidax's `jaxpr_subcomp`, writing source text).

The function is generic in shape: every static integer a rule needs (a
dimension, a slice bound) is read from the int64 array `d`, and every
literal's value from the array `c_<dtype>` of its dtype, passed at each call. So the source, and the
compiled code, depend only on the jaxpr's structure, ranks and dtypes, and
Numba compiles it once per signature (dtypes and ranks) for all shapes.

Values in the generated code: an array of rank 1 or more is a C-contiguous
NumPy array (16-bit floats hold their bits, uint16); a rank-0 value is a
scalar (16-bit floats as float32 values). Rules keep arrays C-contiguous.

Lowering rules are registered per primitive (`numba_backend.rules`): an
elementwise primitive has a scalar rule, `rule(ctx, *operands, **params)`
giving the source of an expression computing one element of the result
from the operands' element expressions; any other primitive a rule
`rule(ctx, *operands, **params)` that writes statements with `ctx.emit` and
returns the names of its results (a list for a multiple-result primitive).
Call primitives without a rule of their own are inlined, and consecutive
elementwise equations of one shape are fused into one loop.
"""

import contextlib
import math

import numpy as np

from refimpl import core, dtypes
from refimpl.interpreters.eval import contractions, fma_signs
from refimpl.jaxpr import DropVar, JaxprEqn, Literal, Var
from refimpl.lax.linalg import dot_general_p
from refimpl.lax.shapes import broadcast_in_dim_p, transpose_p
from numba_backend import threads
from numba_backend.kernels import broadcast_strides, c_strides


class LoweringError(NotImplementedError):
  """A primitive (or a use of one) that the backend cannot lower."""


ELEMENTWISE_RULES = {}   # primitive -> scalar rule
RULES = {}   # primitive -> rule
COSTLY = set()
"""The elementwise primitives whose rules call a function per element (a
transcendental or special function): threads run their loops from fewer
elements (threads.min_elements)."""

KEY_RULES = {}
"""primitive -> the rule of its equations on key arrays (key-typed
operands or results), which it holds as their physical data: only these
lower such equations."""


def _registrar(table):
  """The decorator factory `register(*primitives)(rule)` entering `rule` in
  `table` for each primitive."""
  def register(*primitives):
    def register_rule(rule):
      for p in primitives:
        table[p] = rule
      return rule
    return register_rule
  return register


register_for_keys = _registrar(KEY_RULES)


def on_keys(eqn):
  """Whether the equation has key-typed (extended dtype) operands or results."""
  return any(dtypes.is_extended(a.aval.dtype) for a in [*eqn.invars, *eqn.outvars])


def lowering_of(primitive):
  """How the backend lowers `primitive`, in words (None: it does not): the
  coverage docs/primitives.md lists."""
  kinds = []
  if primitive in ELEMENTWISE_RULES:
    kinds.append("elementwise (fused into loops)")
  if primitive in RULES:
    kinds.append("lowered")
  elif primitive.call_jaxpr_param is not None:
    kinds.append("inlined (a call primitive)")
  if primitive in KEY_RULES:
    kinds.append("on key arrays too")
  return ", ".join(kinds) or None


def register_elementwise(*primitives, costly=False):
  def register(rule):
    for p in primitives:
      ELEMENTWISE_RULES[p] = rule
      if costly:
        COSTLY.add(p)
    return rule
  return register


register = _registrar(RULES)

ROW_RULES = {}
"""primitive -> its rule on an operand that a fused loop computes row by row
where the rule asks for the rows (`Rows`), not stored whole:
`rule(ctx, rows, **params)`, for an equation reducing the operand's
trailing axes (`_lower_region`)."""


register_rows = _registrar(ROW_RULES)


# --- dtypes in the generated source ---------------------------------------------------

_SIXTEEN_BIT = {np.dtype(np.float16): "f16", dtypes.bfloat16: "bf16"}


def storage_dtype(dtype):
  """The NumPy dtype of an array's elements in a program (16-bit floats: uint16)."""
  dtype = np.dtype(dtype)
  return np.dtype(np.uint16) if dtype in _SIXTEEN_BIT else dtype


def scalar_dtype(dtype):
  """The dtype of a scalar value in a program (16-bit floats: float32)."""
  dtype = np.dtype(dtype)
  return np.dtype(np.float32) if dtype in _SIXTEEN_BIT else dtype


def type_source(dtype):
  """The NumPy scalar type of `dtype` as source (`np.float32`)."""
  dtype = np.dtype(dtype)
  return "np.bool_" if dtype == np.bool_ else f"np.{dtype.name}"


def cast(expr, dtype):
  """Source converting the scalar `expr` to a value of `dtype`, as the
  reference rounds a result (16-bit floats: by way of float32)."""
  dtype = np.dtype(dtype)
  if dtype in _SIXTEEN_BIT:
    return f"S.round_{_SIXTEEN_BIT[dtype]}(np.float32({expr}))"
  return f"{type_source(dtype)}({expr})"


def read_element(array_expr, dtype):
  """Source reading an element (`array_expr` indexes an array) as a scalar value."""
  kind = _SIXTEEN_BIT.get(np.dtype(dtype))
  return f"S.{kind}_value({array_expr})" if kind else array_expr


def element_to_store(expr, dtype):
  """Source of the element stored for the scalar value `expr` of `dtype`."""
  kind = _SIXTEEN_BIT.get(np.dtype(dtype))
  return f"S.{kind}_bits({expr})" if kind else expr


# --- the program being written ----------------------------------------------------------

class Lowering:
  """The source of one program function being written, with the static
  integers (`d`) and literal values (`c`) it reads at run time."""

  def __init__(self):
    self.lines = []
    self.depth = 1
    self.dims = []
    self.consts = {}   # dtype name -> values
    self.arrays = []   # array constants (storage data), the parameters k<i>
    self.imports = {}   # module name -> its alias in the program's module
    self._count = 0
    self.unsure = None   # in a loop that checks (`_lower_region`): its flags' names
    self.threaded = False   # whether the program has a loop run by threads
    self._in_threads = False   # whether the lines being written are in such a loop

  def fresh(self, prefix="v"):
    self._count += 1
    return f"{prefix}{self._count}"

  def emit(self, line):
    self.lines.append("    " * self.depth + line)

  @contextlib.contextmanager
  def block(self, header):
    """Statements emitted inside the `with` go in the block under `header`."""
    self.emit(header)
    self.depth += 1
    try:
      yield
    finally:
      self.depth -= 1

  def threads(self, count, elements, costly=False):
    """Whether a loop of `count` independent iterations over `elements`
    elements in all (`costly` ones: see COSTLY), written here, is run by
    threads (`threads.py`): not inside another such loop."""
    return (threads.AVAILABLE and count > 1 and elements >= threads.min_elements(costly)
            and not self._in_threads)

  @contextlib.contextmanager
  def loop(self, index, count, elements, costly=False):
    """Statements emitted inside the `with` go in the loop `for index in
    range(count)` (`count` static) of independent iterations over `elements`
    elements in all (`costly` ones: see COSTLY): a `numba.prange` loop where
    threads run it, its body compiled for the CPU's widest vectors
    (`scalars.wide_vectors`)."""
    threaded = self.threads(count, elements, costly)
    with self.block(f"for {index} in {'numba.prange' if threaded else 'range'}"
                    f"({self.dim(count)}):"):
      self.threaded |= threaded
      self._in_threads |= threaded
      if threaded:
        self.emit("S.wide_vectors()")
      try:
        yield
      finally:
        self._in_threads ^= threaded

  @contextlib.contextmanager
  def elements(self, index, count):
    """Statements emitted inside the `with` go in the loop `for index in
    range(count)` (`count` the source of an integer) of independent
    iterations over elements, one thread's on the CPU (a target may run
    them in parallel: numba_backend/cuda)."""
    with self.block(f"for {index} in range({count}):"):
      yield

  checks_rounding = True
  """Whether loops over elements compute float32 transcendentals by the fast
  functions of checked.py, checking their rounding (`RuleContext.checked`);
  else by libm's float64 functions, rounded."""

  float32_functions = True
  """Whether loops over elements that check rounding compute float32 results of
  the functions of numba_backend/float32.py by those (within their ulps of the
  reference's values); else by the checked ones (the reference's bits)."""

  rules = RULES
  """primitive -> the lowering rule of this target (`rule`)."""
  row_rules = ROW_RULES
  """primitive -> the rule of this target on an operand computed row by row (`Rows`)."""
  key_rules = KEY_RULES
  """primitive -> the rule of this target on key arrays (`rule`)."""

  def rule(self, eqn):
    """The lowering rule of `eqn`'s primitive (None for an elementwise one
    without a rule of its own: its scalar rule applies)."""
    return (self.key_rules if on_keys(eqn) else self.rules).get(eqn.primitive)

  def scalar(self, expr, dtype):
    """Source of the scalar of `dtype` (a rank-0 value, or an element in a
    loop) that the source `expr` computes."""
    return expr

  def allocation(self, shape, dtype):
    """Source of a new uninitialized array of `shape` and `dtype` (sources)."""
    return f"np.empty({shape}, {dtype})"

  def copy(self, array):
    """Source of a new array holding the elements of `array` (a source)."""
    return f"{array}.copy()"

  def host_copy(self, array):
    """Source of `array` (a source) for the program to read one element at
    a time (itself here; a copy on the host where arrays are elsewhere)."""
    return array

  def host_allocation(self, shape, dtype):
    """Source of a new uninitialized array of `shape` and `dtype` (sources)
    that the program writes one element at a time, then passes to
    `from_host` (`allocation`'s here; on the host where arrays are elsewhere)."""
    return self.allocation(shape, dtype)

  def from_host(self, array):
    """Source of the array `array` that `host_allocation` made, where the
    program's other arrays are (itself here)."""
    return array

  def full(self, shape, value, dtype):
    """Source of a new array of `shape` and `dtype` filled with `value` (sources)."""
    return f"np.full({shape}, {value}, {dtype})"

  def strided_copy(self, source, offset, strides, shape, out):
    """Writes the copy into the flat array `out` of the strided view of the
    flat array `source` (all sources: `offset` an integer's, `strides` and
    `shape` int64 arrays'): out[k] = source[offset + sum_j i_j * strides[j]]
    for the row-major multi-index i of k over `shape` (`kernels.strided_copy`)."""
    self.emit(f"K.strided_copy({source}, {offset}, {strides}, {shape}, {out})")

  def strided_assign(self, out, offset, strides, shape, source):
    """Writes the flat array `source` into the strided view of the flat
    array `out` of `shape` (`kernels.strided_assign`; sources as `strided_copy`'s)."""
    self.emit(f"K.strided_assign({out}, {offset}, {strides}, {shape}, {source})")

  def strided_move(self, source, offset, strides, shape, out, out_offset, out_strides):
    """Writes the strided view of `source` of `shape` into the strided view
    of `out` of `shape` (`kernels.strided_move`; sources as `strided_copy`'s)."""
    self.emit(f"K.strided_move({source}, {offset}, {strides}, {shape}, {out}, {out_offset}, "
              f"{out_strides})")

  def source(self, signature):
    """The program's module body: its imports and `program(signature)`, compiled by Numba."""
    imports = [f"import {module} as {alias}" for module, alias in self.imports.items()]
    options = f", parallel={threads.PARALLEL_OPTIONS}" if self.threaded else ""
    return "\n".join([*imports, "", "", f"@numba.njit(cache=True, error_model=\"numpy\"{options})",
                      f"def program({signature}):", *self.lines, ""])

  def function(self, fn):
    """Source naming the Numba function `fn` (defined at the top level of a
    module, e.g. a rule module's kernel) in the program's module."""
    alias = self.imports.setdefault(fn.__module__, f"M{len(self.imports)}")
    return f"{alias}.{fn.__name__}"

  def dim(self, value):
    """Source reading the static integer `value` at run time."""
    self.dims.append(int(value))
    return f"d[{len(self.dims) - 1}]"

  def shape(self, shape):
    """Source of the tuple `shape`, its sizes read at run time."""
    return "(" + "".join(f"{self.dim(n)}, " for n in shape) + ")"

  def ints(self, values):
    """Source of an int64 array of `values` (a view of `d`), read at run time."""
    start = len(self.dims)
    self.dims.extend(int(v) for v in values)
    return f"d[{start}:{len(self.dims)}]"

  def const(self, value, dtype):
    """The name of a new variable holding the scalar `value` of `dtype`,
    read at run time (from the array `c_<dtype>` of the literals of its dtype)."""
    dtype = scalar_dtype(dtype)
    values = self.consts.setdefault(dtype.name, [])
    values.append(np.asarray(value).astype(dtype)[()])
    name = self.fresh("c")
    self.emit(f"{name} = c_{dtype.name}[{len(values) - 1}]")
    return name

  def array(self, value, aval):
    """The name of the value of `aval` holding the NumPy array `value` (a
    sub-jaxpr's const, physical data for key types), passed at run time as
    a parameter of the program."""
    data = np.array(core.to_physical(np.asarray(value), aval))   # a writeable copy
    self.arrays.append(data.reshape(data.shape or (1,)).view(storage_dtype(data.dtype)))
    name = f"k{len(self.arrays) - 1}"
    if aval.shape:
      return name
    value_name = self.fresh()
    self.emit(f"{value_name} = {read_element(f'{name}[0]', aval.dtype)}")
    return value_name


class RuleContext:
  """What a rule knows of its equation: the lowering, the operands' and the
  results' avals."""

  def __init__(self, lowering, eqn):
    self.lowering = lowering
    self.avals_in = [a.aval for a in eqn.invars]
    self.avals_out = [v.aval for v in eqn.outvars]
    self.eqn = eqn

  def emit(self, line):
    self.lowering.emit(line)

  def fresh(self, prefix="v"):
    return self.lowering.fresh(prefix)

  def dim(self, value):
    return self.lowering.dim(value)

  def shape(self, shape):
    return self.lowering.shape(shape)

  def ints(self, values):
    return self.lowering.ints(values)

  def function(self, fn):
    return self.lowering.function(fn)

  def flat(self, value, aval):
    """Source of a flat (1-D) array of the value named `value` (a view of an
    array; a new one-element array for a rank-0 value)."""
    if aval.shape:
      return f"{value}.reshape({self.dim(math.prod(aval.shape))})"
    storage = type_source(storage_dtype(aval.dtype))
    return self.lowering.full("1", element_to_store(value, aval.dtype), storage)

  def checked(self, fn, *args):
    """The name of the float64 value of `fn(*args)` for a result rounded to
    float32 (or a 16-bit float), where `fn` is a function of
    numba_backend/checked.py, inside a loop over elements; None elsewhere,
    where a rule computes it with libm. The loop evaluates its elements
    again with libm where `fn` is unsure of the rounding."""
    if self.lowering.unsure is None:
      return None
    value, unsure = self.fresh(), self.fresh("u")
    self.emit(f"{value}, {unsure} = {self.function(fn)}({', '.join(args)})")
    self.lowering.unsure.append(unsure)
    return value

  def fast(self, fn, *args):
    """Source of `fn(*args)`, where `fn` is a function of numba_backend/float32.py,
    inside a loop over elements of a target whose loops use fast functions
    (`Lowering.checks_rounding`, `Lowering.float32_functions`); None
    elsewhere, where a rule computes it otherwise."""
    if self.lowering.unsure is None or not self.lowering.float32_functions:
      return None
    return f"{self.function(fn)}({', '.join(args)})"

  def result(self, array, aval):
    """The name of the value of `aval` that the new C-contiguous array
    `array` (of aval's size) holds: itself, or its element for rank 0."""
    name = self.fresh()
    if aval.shape:
      self.emit(f"{name} = {array}.reshape({self.shape(aval.shape)})")
    else:
      self.emit(f"{name} = {read_element(f'{array}.reshape(1)[0]', aval.dtype)}")
    return name

  def empty(self, aval):
    """A new uninitialized array of `aval` (its storage dtype); its name."""
    name = self.fresh()
    dtype = type_source(storage_dtype(aval.dtype))
    self.emit(f"{name} = {self.lowering.allocation(self.shape(aval.shape), dtype)}")
    return name

  def empty_flat(self, aval):
    """A new uninitialized array of `aval` and a flat view of it (for a
    kernel to fill, rank 0 too): their names' sources."""
    name = self.empty(aval)
    return name, f"{name}.reshape({self.dim(math.prod(aval.shape))})"


# --- lowering a jaxpr ---------------------------------------------------------------------

def lower_jaxpr(lowering, jaxpr, args, contract=True, destinations=None):
  """Writes the statements evaluating `jaxpr` on the values named `args`
  (constvars first, then invars); returns the names of its outputs.
  `contract=False` evaluates its products unfused (as `eval_jaxpr` does).
  `destinations`, {i: name}: output i, where a fused loop computes it,
  written into the existing array `name` (of its type) rather than a new one."""
  env = dict(zip([*jaxpr.constvars, *jaxpr.invars], args))

  def read(atom):
    if isinstance(atom, Literal):
      return lowering.const(atom.val, atom.aval.dtype)
    return env[atom]

  eqns, outvars = evaluated_equations(lowering, jaxpr, env, contract)
  eqns = _transposed_products(eqns, outvars)
  last_read = _last_reads(eqns, outvars)
  into = {outvars[k]: name for k, name in (destinations or {}).items()}
  i = 0
  while i < len(eqns):
    end = _region_end(eqns, i)
    if end > i:
      reader = eqns[end] if end < len(eqns) else None
      rows = _lower_region(lowering, eqns[i:end], env, read, last_read, end, into, reader)
      if rows is not None:   # `reader` reads one of the run's results as rows
        rule = lowering.row_rules[reader.primitive]
        env[reader.outvars[0]] = rule(RuleContext(lowering, reader), rows, **reader.params)
        end += 1
      i = end
      continue
    eqn = eqns[i]
    rule = lowering.rule(eqn)
    ctx = RuleContext(lowering, eqn)
    operands = [read(a) for a in eqn.invars]
    if rule is None and on_keys(eqn):
      raise LoweringError(f"the numba backend has no lowering for primitive "
                          f"'{eqn.primitive.name}' on key arrays (in equation: {eqn})")
    if rule is None:
      scalar_rule = ELEMENTWISE_RULES.get(eqn.primitive)
      if scalar_rule is None:
        raise LoweringError(f"the numba backend has no lowering for primitive "
                            f"'{eqn.primitive.name}' (in equation: {eqn})")
      outs = [_lower_scalar(ctx, scalar_rule, operands, eqn)]   # rank 0
    else:
      outs = rule(ctx, *operands, **eqn.params)
      if not eqn.primitive.multiple_results:
        outs = [outs]
    for v, name in zip(eqn.outvars, outs):
      if not isinstance(v, DropVar):
        env[v] = name
    i += 1
  return [read(a) for a in outvars]


def _rule(eqn):
  return (KEY_RULES if on_keys(eqn) else RULES).get(eqn.primitive)


def evaluated_equations(lowering, jaxpr, env, contract=True):
  """(the equations, the outputs) of `jaxpr` as `lower_jaxpr` evaluates it:
  calls inlined (`_inline_calls`, their consts bound in `env`), and the
  products that the reference contracts fused into their additions unless
  not `contract`."""
  return _inline_calls(lowering, _contracted(jaxpr) if contract else jaxpr.eqns, jaxpr.outvars,
                       env)


def inlines_consts(lowering, jaxpr):
  """Whether `evaluated_equations` of `jaxpr` would bind consts (those of
  a call it inlines, at any depth), without binding them."""
  for eqn in jaxpr.eqns:
    if eqn.primitive.call_jaxpr_param is not None and lowering.rule(eqn) is None:
      closed = eqn.params[eqn.primitive.call_jaxpr_param]
      if closed.consts or inlines_consts(lowering, closed.jaxpr):
        return True
  return False


def _inline_calls(lowering, eqns, outvars, env):
  """`eqns` and `outvars` with each equation of a call primitive that has
  no rule of its own replaced by its jaxpr's equations (contracted, as the
  call evaluates them), recursively, so that loops fuse across calls. An
  inlined jaxpr's variables are replaced by new ones (a jaxpr may be called
  twice); its consts are bound in `env`, as arrays passed to the program."""
  flat = []

  def splice(eqns, outvars, renamed):
    def atom(a):
      return a if isinstance(a, Literal) else renamed.get(a, a)

    for eqn in eqns:
      invars = [atom(a) for a in eqn.invars]
      if eqn.primitive.call_jaxpr_param is not None and lowering.rule(eqn) is None:
        closed = eqn.params[eqn.primitive.call_jaxpr_param]
        inner = dict(zip(closed.jaxpr.invars, invars))
        for v, value in zip(closed.jaxpr.constvars, closed.consts):
          inner[v] = Var(v.aval)
          env[inner[v]] = lowering.array(value, v.aval)
        results = splice(_contracted(closed.jaxpr), closed.jaxpr.outvars, inner)
        renamed.update((v, r) for v, r in zip(eqn.outvars, results) if not isinstance(v, DropVar))
      else:
        outs = [v if isinstance(v, DropVar) else renamed.setdefault(v, Var(v.aval))
                for v in eqn.outvars]
        flat.append(JaxprEqn(invars, outs, eqn.primitive, eqn.params))
    return [atom(a) for a in outvars]

  outvars = splice(eqns, outvars, {})
  return flat, outvars


def _transposed_products(eqns, outvars):
  """`eqns` with each matrix product of real operands (dot_general, one free
  axis in each operand, no batch axes) that only a transpose reads replaced
  by the product of the operands swapped, which is the transpose: B^T A^T =
  (A B)^T, each sum the same products (of reals, a * b is b * a exactly) in
  the same order, and no transposed copy of the result."""
  readers = {}
  for eqn in eqns:
    for a in eqn.invars:
      if not isinstance(a, Literal):
        readers[a] = readers.get(a, 0) + 1
  for a in outvars:
    if not isinstance(a, Literal):
      readers[a] = readers.get(a, 0) + 1
  products = {eqn.outvars[0]: eqn for eqn in eqns if eqn.primitive is dot_general_p
              and _swappable(eqn)}
  swapped, dropped = {}, set()
  for eqn in eqns:
    if (eqn.primitive is transpose_p and tuple(eqn.params["permutation"]) == (1, 0)
        and eqn.invars[0] in products and readers[eqn.invars[0]] == 1):
      product = products[eqn.invars[0]]
      (lc, rc), _ = product.params["dimension_numbers"]
      swapped[product] = JaxprEqn(product.invars[::-1], eqn.outvars, dot_general_p, {
          **product.params, "dimension_numbers": ((tuple(rc), tuple(lc)), ((), ()))})
      dropped.add(eqn)
  return [swapped.get(eqn, eqn) for eqn in eqns if eqn not in dropped]


def _swappable(eqn):
  """Whether the dot_general `eqn` multiplies real matrices (one free axis each, no batch)."""
  lhs, rhs = (a.aval for a in eqn.invars)
  (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
  return (not lb and not rb and lhs.ndim - len(lc) == 1 and rhs.ndim - len(rc) == 1
          and not any(dtypes.is_complex(a.dtype) for a in (lhs, rhs, eqn.outvars[0].aval)))


def _lower_scalar(ctx, scalar_rule, operands, eqn):
  name = ctx.fresh()
  value = scalar_rule(ctx, *operands, **eqn.params)
  ctx.emit(f"{name} = {ctx.lowering.scalar(value, eqn.outvars[0].aval.dtype)}")
  return name


def _contracted(jaxpr):
  """The equations of `jaxpr` with the products that `contractions` fuses
  evaluated in their additions, as `fused_multiply_add` equations."""
  fused = contractions(jaxpr)
  if not fused:
    return jaxpr.eqns
  muls = {mul for mul, _ in fused.values()}
  eqns = []
  for eqn in jaxpr.eqns:
    if eqn in fused:
      mul, position = fused[eqn]
      negate_product, negate_addend = fma_signs(eqn, position)
      eqns.append(JaxprEqn([*mul.invars, eqn.invars[1 - position]], eqn.outvars,
                           fma_p, {"negate_product": negate_product,
                                  "negate_addend": negate_addend}))
    elif eqn not in muls:
      eqns.append(eqn)
  return eqns


class Operation:
  """An operation of the equations the backend prepares for itself, which
  is not a refimpl primitive (it is in no registry and no transformation
  sees it)."""

  multiple_results = False
  call_jaxpr_param = None

  def __init__(self, name):
    self.name = name

  def pp_params(self, params):
    return params


fma_p = Operation("fused_multiply_add")
"""The equation of a product fused into its addition: operands (a, b, z) and
params negate_product, negate_addend (`fma_signs`)."""


def _last_reads(eqns, outvars):
  """var -> the index of the last equation reading it (len(eqns) for outputs)."""
  last = {}
  for i, eqn in enumerate(eqns):
    for a in eqn.invars:
      if not isinstance(a, Literal):
        last[a] = i
  for a in outvars:
    if not isinstance(a, Literal):
      last[a] = len(eqns)
  return last


def fusible(eqn):
  """The result shape of an equation a loop can evaluate element by element
  (rank 1 or more): elementwise with operands of rank 0 or of the result's
  rank (broadcast along their size-1 axes), or a broadcast that is not a
  reshape; else None."""
  if on_keys(eqn) or len(eqn.outvars) != 1:
    return None
  shape = eqn.outvars[0].aval.shape
  if not shape:
    return None
  if _scalar_broadcast(eqn) or _array_broadcast(eqn):
    return shape
  if eqn.primitive not in ELEMENTWISE_RULES or eqn.primitive in RULES:
    return None
  for a in eqn.invars:
    if a.aval.shape and (len(a.aval.shape) != len(shape)
                         or any(n not in (1, m) for n, m in zip(a.aval.shape, shape))):
      return None
  return shape


def per_element(eqn, shape):
  """Whether each element of the result of `eqn` is a function of the same
  element of its operands of `shape` and of its rank-0 operands alone:
  elementwise on operands of `shape` or rank 0 (a result of `shape` or rank
  0), or a broadcast of a rank-0 value to `shape`."""
  if _rank0(eqn):
    return True
  if fusible(eqn) != shape or _array_broadcast(eqn):
    return False
  return _scalar_broadcast(eqn) or all(a.aval.shape in ((), shape) for a in eqn.invars)


def element_of(lowering, eqn, operands):
  """The name of a new variable holding the element that the elementwise
  equation `eqn` (or a broadcast of a rank-0 value) computes from the
  elements named `operands`."""
  if _scalar_broadcast(eqn):
    return operands[0]
  (v,) = eqn.outvars
  name = lowering.fresh("e")
  expr = ELEMENTWISE_RULES[eqn.primitive](RuleContext(lowering, eqn), *operands, **eqn.params)
  lowering.emit(f"{name} = {lowering.scalar(expr, v.aval.dtype)}")
  return name


def _scalar_broadcast(eqn):
  """Whether `eqn` broadcasts a rank-0 value (each element of its result is that value)."""
  return (eqn.primitive is broadcast_in_dim_p and len(eqn.invars) == 1
          and not eqn.invars[0].aval.shape and not on_keys(eqn))


def _array_broadcast(eqn):
  """Whether `eqn` broadcasts an array to more elements (a loop reads the
  array's elements in place of its result's)."""
  return (eqn.primitive is broadcast_in_dim_p and len(eqn.invars) == 1
          and eqn.invars[0].aval.shape and not on_keys(eqn)
          and math.prod(eqn.invars[0].aval.shape) != math.prod(eqn.outvars[0].aval.shape))


def _rank0(eqn):
  """Whether `eqn` is elementwise on rank-0 values (evaluated before a loop that reads it)."""
  return (eqn.primitive in ELEMENTWISE_RULES and eqn.primitive not in RULES
          and not on_keys(eqn) and not eqn.outvars[0].aval.shape)


def _region_end(eqns, start):
  """The end of the run from `start` of fusible equations of one shape (and
  of rank-0 elementwise equations among them)."""
  shape = fusible(eqns[start])
  if shape is None:
    return start
  end = start + 1
  while end < len(eqns) and (fusible(eqns[end]) == shape or _rank0(eqns[end])):
    end += 1
  return end


def writes_over(jaxpr, out_index, in_index):
  """Whether `lower_jaxpr` may take the array holding input `in_index` of
  `jaxpr` as the destination of output `out_index` (writing the new value
  over the old): the output is computed by a fused loop that reads the
  input's elements, if at all, at their own index (the input has the
  output's shape), so that each element is read before the loop writes it,
  and no equation after the loop reads the input. Before the loop, only
  matrix products may read it (their results are new arrays, never views
  of it). Where that loop reads the input, it calls no costly function
  (whose unsure elements a second pass over the block reads again:
  `_lower_elements`). The jaxpr has no call that lowering inlines (which
  could fuse more equations into the loop)."""
  x, out = jaxpr.invars[in_index], jaxpr.outvars[out_index]
  eqns = _contracted(jaxpr)
  if (not isinstance(out, Var) or x.aval.shape != out.aval.shape
      or any(a is x for a in jaxpr.outvars)
      or any(e.primitive.call_jaxpr_param is not None and _rule(e) is None for e in eqns)):
    return False
  start = 0
  while start < len(eqns):
    end = _region_end(eqns, start)
    span = eqns[start:max(end, start + 1)]
    reads = any(a is x for e in span for a in e.invars)
    if any(v is out for e in span for v in e.outvars):
      return end > start and not (reads and _costly(span)) and not any(
          a is x for e in eqns[end:] for a in e.invars)
    if reads and not (end == start and span[0].primitive is dot_general_p):
      return False
    start += len(span)
  return False


_BLOCK = 1024
"""Elements per block of a loop whose rules use fast functions
(`RuleContext.checked`), or that threads run."""


class Rows:
  """A result of a fused loop that its only reader, a reduction over its
  trailing axes (a rule of `Lowering.row_rules`), reads row by row: rows of
  `size` elements, never stored whole. The rule calls `write(first, stop)`
  (sources of row indices) where it wants rows [first, stop): that writes
  the loop computing them (and the rows of the loop's other results) and
  returns the name of a new flat array holding them, row r from
  (r - first) * size. `costly`: the loop calls a transcendental
  or special function (threads run it from fewer elements)."""

  def __init__(self, size, costly, write):
    self.size, self.costly, self.write = size, costly, write


def _lower_region(lowering, eqns, env, read, last_read, end, into, reader=None):
  """One loop over the elements of a run of elementwise equations: the
  results that later equations or the outputs read are stored in new
  arrays (or in those `into` names for them), the others live in scalars
  of one iteration. Its rank-0
  equations (which read rank-0 values only) are evaluated before the loop.
  Where an operand is broadcast (along size-1 axes, or by a broadcast in
  the run), the loop reads it in place, as rows (`_row_split`): a loop
  over the rows holding one over the elements of a row. Where its rules
  use fast functions (`RuleContext.checked`), the loop over elements runs
  over blocks of them, each computed again with libm where any fast value
  was unsure of its rounding. Where `reader` (the equation after the run)
  reads one of the results as rows (`_read_as_rows`), that result is not
  stored: the loop is written where the reader's rule asks for rows, and
  the result returned as `Rows` (else None)."""
  for eqn in eqns:
    if _rank0(eqn):
      ctx = RuleContext(lowering, eqn)
      env[eqn.outvars[0]] = _lower_scalar(ctx, ELEMENTWISE_RULES[eqn.primitive],
                                          [read(a) for a in eqn.invars], eqn)
  eqns = [eqn for eqn in eqns if not _rank0(eqn)]
  shape = eqns[0].outvars[0].aval.shape
  defined = {v for e in eqns for v in e.outvars}
  outputs = [v for v in dict.fromkeys(v for e in eqns for v in e.outvars)
             if not isinstance(v, DropVar) and last_read.get(v, -1) >= end]
  if not outputs:   # nothing reads the results: no loop
    return None
  sources = {}   # an array the loop reads -> (the array it reads, strides over `shape`)
  for eqn in eqns:
    if _array_broadcast(eqn):
      (x,) = eqn.invars
      sources[eqn.outvars[0]] = x, broadcast_strides(
          x.aval.shape, eqn.params["broadcast_dimensions"], shape)
      continue
    for a in eqn.invars:
      if not isinstance(a, Literal) and a not in defined and a.aval.shape:
        sources.setdefault(a, (a, broadcast_strides(a.aval.shape, range(len(shape)), shape)))
  strides = [strides for _, strides in sources.values()]
  rowed = _read_as_rows(lowering, reader, outputs, last_read, end, into, strides)

  def flat_view(name, value_shape):   # (rank 1: the array itself)
    if len(value_shape) == 1:
      return name
    view = lowering.fresh("f")
    lowering.emit(f"{view} = {name}.reshape({lowering.dim(math.prod(value_shape))})")
    return view

  flat = {}
  for x, _ in sources.values():
    if x not in flat:
      flat[x] = flat_view(read(x), x.aval.shape)
  stored = {}
  for v in outputs:
    if v is not rowed:
      stored[v] = into[v] if v in into else RuleContext(lowering, eqns[0]).empty(v.aval)
      flat[v] = flat_view(stored[v], shape)
  env.update(stored)
  scalars = {}
  for eqn in eqns:   # operands read outside the loop: literals and rank-0 values
    for a in eqn.invars:
      if a not in defined and not a.aval.shape and a not in scalars:
        scalars[a] = read(a)
  if rowed is not None:
    split = len(shape) - len(reader.params["axes"])
    _, contiguous = _row_split(shape, strides, split)
    size, dtype = math.prod(shape[split:]), storage_dtype(rowed.aval.dtype)
    beside = next((flat[x] for (x, _), whole in zip(sources.values(), contiguous) if whole),
                  None)

    def write(first, stop):
      rows, count = lowering.fresh("w"), lowering.fresh("n")
      lowering.emit(f"{count} = ({stop} - {first}) * {lowering.dim(size)}")
      lowering.emit(
          f"{rows} = "
          f"{lowering.allocation(f'{count} + {4096 // dtype.itemsize}', type_source(dtype))}")
      if beside is not None:
        lowering.emit(f"{rows} = {rows}[K.apart({rows}, {beside}):][:{count}]")
      _lower_rows(lowering, eqns, outputs, shape, split, sources, contiguous, flat, scalars,
                  (first, stop, {rowed: rows}))
      return rows

    return Rows(size, _costly(eqns), write)
  split, contiguous = _row_split(shape, strides)
  if split == 0 and all(contiguous):   # one loop over all the elements
    _lower_elements(lowering, eqns, {v: flat[x] for v, (x, _) in sources.items()},
                    {v: flat[v] for v in outputs}, scalars, math.prod(shape))
  else:
    _lower_rows(lowering, eqns, outputs, shape, split, sources, contiguous, flat, scalars)
  return None


def _read_as_rows(lowering, reader, outputs, last_read, end, into, strides):
  """The result among `outputs` (of one shape) that the equation `reader`,
  at `end`, reads as rows (`Rows`), or None: where the target has a rule
  for it on rows, it is the result's only reader, reducing its trailing
  axes into more than one row, the result is no output and not 16-bit
  (whose rows a rule reads widened), and the arrays the loop reads (their
  `strides` over the result's shape) are each contiguous or constant along
  those axes."""
  if reader is None or reader.primitive not in lowering.row_rules or on_keys(reader):
    return None
  operand = reader.invars[0]
  if operand not in outputs or last_read[operand] != end or operand in into \
      or np.dtype(operand.aval.dtype) in _SIXTEEN_BIT:
    return None
  shape, axes = operand.aval.shape, tuple(sorted(reader.params["axes"]))
  split = len(shape) - len(axes)
  if not axes or axes != tuple(range(split, len(shape))) or math.prod(shape[:split]) < 2:
    return None
  return operand if _row_split(shape, strides, split)[0] == split else None


def _row_split(shape, strides, least=0):
  """The number k >= `least` of leading axes a loop over rows runs over, and
  for each of the strides over `shape` of the arrays the loop reads, whether
  it is contiguous along the last len(shape) - k axes (read at each element
  of a row) or constant along them (read once per row): the least k for
  which each is one or the other."""
  own = c_strides(shape)
  contiguous = [None] * len(strides)
  split = len(shape)
  for axis in reversed(range(least, len(shape))):
    if shape[axis] != 1:
      kinds = [True if s[axis] == own[axis] else False if s[axis] == 0 else None for s in strides]
      if any(k is None or c not in (None, k) for k, c in zip(kinds, contiguous)):
        break
      contiguous = kinds
    split = axis
  return split, [c is not False for c in contiguous]


def _lower_rows(lowering, eqns, outputs, shape, split, sources, contiguous, flat, scalars,
                span=None):
  """The loop over the rows of `shape` (its first `split` axes), each with
  the position of its first element in each array it reads, holding the
  loop over the elements of a row. `span`, (first, stop, rows): only rows
  [first, stop) (sources of row indices), in a loop of one thread, the
  outputs in `rows` written into those arrays (names), row r from
  (r - first) * the row's size."""
  size = math.prod(shape[split:])
  row_size = lowering.dim(size)
  row = lowering.fresh("o")
  if span is None:
    loop = lowering.loop(row, math.prod(shape[:split]), math.prod(shape), _costly(eqns))
  else:
    first, stop, into = span
    loop = lowering.block(f"for {row} in range({first}, {stop}):")
  with loop:
    index, rest = [None] * split, row
    for axis in reversed(range(1, split)):   # the row's multi-index, row-major
      index[axis] = lowering.fresh("t")
      lowering.emit(f"{index[axis]} = {rest} % {lowering.dim(shape[axis])}")
      quotient = lowering.fresh("q")
      lowering.emit(f"{quotient} = {rest} // {lowering.dim(shape[axis])}")
      rest = quotient
    if split:
      index[0] = rest
    rows, written, local = {}, {}, dict(scalars)
    for v in outputs:
      written[v] = lowering.fresh("r")
      if span is not None and v in into:
        lowering.emit(f"{written[v]} = {into[v]}[({row} - {first}) * {row_size}:]")
      else:
        lowering.emit(f"{written[v]} = {flat[v]}[{row} * {row_size}:]")
    for (v, (x, strides)), whole in zip(sources.items(), contiguous):
      terms = [f"{index[axis]} * {lowering.dim(strides[axis])}"
               for axis in range(split) if strides[axis]]
      start = " + ".join(terms) or "0"
      if whole:
        rows[v] = lowering.fresh("r")
        lowering.emit(f"{rows[v]} = {flat[x]}[{start}:]")
      else:
        local[v] = lowering.fresh("e")
        value = read_element(f"{flat[x]}[{start}]", v.aval.dtype)
        lowering.emit(f"{local[v]} = {lowering.scalar(value, v.aval.dtype)}")
    _lower_elements(lowering, eqns, rows, written, local, size)


def _costly(eqns):
  return any(eqn.primitive in COSTLY for eqn in eqns)


def _lower_elements(lowering, eqns, rows, written, scalars, size):
  """The loop over `size` (static) elements evaluating `eqns`: element i
  of a value it reads is rows[v][i] (or scalars[v] at each i), of each
  value it stores written[v][i]. Where its rules use fast functions
  (`RuleContext.checked`), or threads run it, it is a loop over blocks of
  elements holding the loop over a block's."""
  index = lowering.fresh("i")

  def body():
    local = dict(scalars)

    def element(a):
      if a not in local:
        local[a] = lowering.fresh("e")
        value = read_element(f"{rows[a]}[{index}]", a.aval.dtype)
        lowering.emit(f"{local[a]} = {lowering.scalar(value, a.aval.dtype)}")
      return local[a]

    for eqn in eqns:
      (v,) = eqn.outvars
      if _array_broadcast(eqn):
        local[v] = element(v)
        continue
      local[v] = element_of(lowering, eqn, [element(a) for a in eqn.invars])
    for v, row in written.items():
      lowering.emit(f"{row}[{index}] = {element_to_store(local[v], v.aval.dtype)}")

  count = lowering.dim(size)
  start, lowering.unsure = len(lowering.lines), [] if lowering.checks_rounding else None
  with lowering.elements(index, count):
    body()
  unsure, lowering.unsure = lowering.unsure, None
  blocks = -(-size // _BLOCK)
  costly = _costly(eqns)
  if unsure or lowering.threads(blocks, size, costly):   # a loop over blocks of elements
    fast = lowering.lines[start + 1:]
    del lowering.lines[start:]
    block, first, stop = lowering.fresh("b"), lowering.fresh("s"), lowering.fresh("n")
    # (unsigned indices: with a signed one not known to be >= 0 the element
    # accesses wrap negative indices around, which keeps LLVM from vectorizing)
    indices = f"range(np.uint64({first}), np.uint64({stop}))"
    with lowering.loop(block, blocks, size, costly):
      lowering.emit(f"{first} = {block} * {_BLOCK}")
      lowering.emit(f"{stop} = min({first} + {_BLOCK}, {count})")
      again = lowering.fresh("u")
      if unsure:   # the loop is the first of two over the block
        lowering.emit(f"{again} = False")
      with lowering.block(f"for {index} in {indices}:"):
        lowering.lines.extend("    " + line for line in fast)
        if unsure:
          lowering.emit(f"{again} |= {' | '.join(unsure)}")
      if unsure:
        with lowering.block(f"if {again}:"):   # the block again, with libm
          with lowering.block(f"for {index} in {indices}:"):
            body()


# --- the program -------------------------------------------------------------------------

def lower_program(jaxpr, lowering=None):
  """The source of `program(d, c_<dtype>..., *args)` (its imports, then its
  definition, compiled by `numba.njit`; `lowering.source`'s, for a
  `Lowering` of another target) evaluating `jaxpr` (no
  constvars: the backend receives consts as inputs), and the arrays `d`,
  `c_<dtype>`... it is called with. Each argument is an array (rank 0
  too); the result is the tuple of the outputs (arrays, and scalars for
  rank 0)."""
  lowering = lowering or Lowering()
  params = [f"a{i}" for i in range(len(jaxpr.invars))]
  args = []
  for name, v in zip(params, jaxpr.invars):
    if core.physical_aval(v.aval).shape:   # (key arrays: their data, of rank 1 or more)
      args.append(name)
    else:
      value = lowering.fresh()
      element = read_element(f"{name}.item()", v.aval.dtype)
      lowering.emit(f"{value} = {lowering.scalar(element, v.aval.dtype)}")
      args.append(value)
  outs = lower_jaxpr(lowering, jaxpr, args)
  lowering.emit("return (" + "".join(f"{o}, " for o in outs) + ")")
  const_names = sorted(lowering.consts)
  arrays = [f"k{i}" for i in range(len(lowering.arrays))]
  signature = ", ".join(["d", *(f"c_{n}" for n in const_names), *arrays, *params])
  source = lowering.source(signature)
  constants = [np.array(lowering.consts[n], np.dtype(n)) for n in const_names] + lowering.arrays
  return source, np.array(lowering.dims, np.int64), constants
