"""The reference interpreter: evaluates a jaxpr equation by equation.

Each equation's primitive is bound in the current trace, so the same
interpreter runs a jaxpr eagerly (under the eval trace) and re-traces it
under any transformation.
"""

import math
import operator

import numpy as np

from refimpl import core, dtypes
from refimpl.config import config
from refimpl.jaxpr import Literal


def eval_jaxpr(jaxpr, consts, *args):
  """Runs `jaxpr` on `consts` and `args`; returns the list of outputs.

  With `jax_debug_nans` or `jax_debug_infs` on, a `FloatingPointError` raised
  by an equation is re-raised naming that equation.
  """
  if len(args) != len(jaxpr.invars):
    raise TypeError(f"jaxpr takes {len(jaxpr.invars)} arguments, got {len(args)}")
  steps, literals = _schedule(jaxpr)
  env = dict(literals)  # atom -> value; literals are read like variables
  env.update(zip(jaxpr.constvars, consts))
  env.update(zip(jaxpr.invars, args))
  for eqn, primitive, invars, outvars, params, dead in steps:
    invals = [env[a] for a in invars]
    try:
      outs = primitive.bind(*invals, **params)
    except FloatingPointError as err:
      if not config.checking_floats:
        raise
      raise FloatingPointError(f"{err}\n  in equation: {eqn}") from None
    if primitive.multiple_results:
      env.update(zip(outvars, outs))
    else:
      env[outvars[0]] = outs
    for v in dead:   # read for the last time: its value's memory can go now
      del env[v]
  return [env[v] for v in jaxpr.outvars]


def _schedule(jaxpr):
  """What `eval_jaxpr` needs of `jaxpr`, computed once per jaxpr (jaxprs are
  not modified once built): for each equation (eqn, primitive, invars,
  outvars, params, dead), where dead lists the variables that no later
  equation and no output reads; and the value of each literal."""
  if jaxpr._schedule is None:
    literals = {a: literal_value(a) for eqn in jaxpr.eqns for a in eqn.invars
                if isinstance(a, Literal)}
    literals.update((a, literal_value(a)) for a in jaxpr.outvars if isinstance(a, Literal))
    steps = [(eqn, eqn.primitive, eqn.invars, eqn.outvars, eqn.params, dead)
             for eqn, dead in zip(jaxpr.eqns, _dead_after(jaxpr))]
    jaxpr._schedule = (steps, literals)
  return jaxpr._schedule


def _dead_after(jaxpr):
  """For each equation, the variables that no later equation and no output reads."""
  last = {}
  for i, eqn in enumerate(jaxpr.eqns):
    for v in eqn.outvars:
      last[v] = i
    for v in eqn.invars:
      if not isinstance(v, Literal):
        last[v] = i
  for v in jaxpr.outvars:
    last.pop(v, None)
  dead = [[] for _ in jaxpr.eqns]
  for v, i in last.items():
    dead[i].append(v)
  return dead


def literal_value(literal):
  """The value of a literal as an Array, weakly typed if its type is
  (`2.0:f32[]` from a Python scalar stays weak when the jaxpr is re-evaluated)."""
  from refimpl.array import Array
  return Array(literal.val, weak_type=literal.aval.weak_type)


def eval_closed_jaxpr(closed, *args):
  return eval_jaxpr(closed.jaxpr, closed.consts, *args)


# --- compiled evaluation -------------------------------------------------------

def run_jaxpr(closed, *args):
  """Evaluates the closed jaxpr `closed` on NumPy data as a compiled program
  does; returns the list of its outputs as NumPy data. The reference backend
  runs jitted programs this way, and reference rules their sub-jaxprs (a
  scan's body, a cond's branch), which XLA compiles too. Called from within
  a reference rule (NumPy's floating-point errors ignored, the eval trace
  current).

  Each equation's reference rule runs on the NumPy data of its operands,
  and its results are checked against the equation's types (the shape rules
  ran when the jaxpr was built; a result too large to allocate raises
  JaxRuntimeError before the program starts). The values are `eval_jaxpr`'s
  but for one rule, XLA's on the CPU: a floating multiplication whose result
  only an addition or subtraction reads is fused into it, rounding once
  (see `_contractions`). Consecutive elementwise equations over large arrays
  run a block of elements at a time, so their intermediates take a block's
  memory, not an array's: memory, not semantics.
  With `jax_debug_nans` (`jax_debug_infs`) on, an equation whose result holds
  a NaN (an infinity) raises FloatingPointError naming the equation.
  """
  if len(args) != len(closed.jaxpr.invars):
    raise TypeError(f"jaxpr takes {len(closed.jaxpr.invars)} arguments, got {len(args)}")
  template, const_slots, in_slots, out_slots, steps = _program(closed.jaxpr)
  env = list(template)
  for slot, value in zip(const_slots, closed.consts):
    env[slot] = core.to_numpy(value)
  for slot, value in zip(in_slots, args):
    env[slot] = value if type(value) is np.ndarray else np.asarray(value)
  debug = config.checking_floats
  for fn, params, multiple, operands, writes, types, frees, eqns in steps:
    outs = fn(*operands(env), **params) if params else fn(*operands(env))
    if multiple:
      for slot, out, out_type in zip(writes, outs, types):
        env[slot] = _checked(out, out_type, eqns, debug)
    else:  # one result: _checked, inline
      if type(outs) is not np.ndarray:
        outs = np.asarray(outs)
      shape, dtype = types[0]
      if outs.shape != shape or outs.dtype != dtype or debug:
        outs = _checked(outs, types[0], eqns, debug)
      env[writes[0]] = outs
    for slot in frees:
      env[slot] = None
  return [env[slot] for slot in out_slots]


def _checked(out, out_type, eqns, debug):
  """Result `out` of a step as NumPy data, checked against its (shape, dtype)."""
  if type(out) is not np.ndarray:
    out = np.asarray(out)
  if out.shape != out_type[0] or out.dtype != out_type[1]:
    raise AssertionError(f"reference rule of {eqns[-1].primitive.name} returned "
                         f"{out.dtype}{list(out.shape)} but its shape/dtype rule "
                         f"says {out_type[1]}{list(out_type[0])}")
  if debug:
    _check_floats(eqns[-1], out)
  return out


def _getter(slots):
  """env -> the tuple of the values in `slots` (C-level for two or more)."""
  if len(slots) > 1:
    return operator.itemgetter(*slots)
  if slots:
    return lambda env, i=slots[0]: (env[i],)
  return lambda env: ()


def _check_floats(eqn, value):
  try:
    core.check_floats(eqn.primitive.name, value)
  except FloatingPointError as err:
    raise FloatingPointError(f"{err}\n  in equation: {eqn}") from None


class _Step:
  """A step of a program: `fn(*reads, **params)` computes `writes` (a tuple
  of them when `multiple`); `eqns` are the equations it evaluates."""

  def __init__(self, fn, params, multiple, reads, writes, eqns):
    self.fn, self.params, self.multiple = fn, params, multiple
    self.reads, self.writes, self.eqns = reads, writes, eqns


def _program(jaxpr):
  """What `run_jaxpr` needs of `jaxpr`, built once per jaxpr: the initial
  environment (a list of slots, literals filled in), the slots of the
  constvars, invars and outvars, and the steps, each as (fn, params,
  multiple, a function of the environment giving the operands, write
  slots, write (shape, dtype)s, slots read for the last time, eqns)."""
  if jaxpr._program is None:
    for eqn in jaxpr.eqns:
      core.check_allocatable(eqn.primitive, [v.aval for v in eqn.outvars])
    steps = _blocked(_contractions(jaxpr), jaxpr.outvars)
    slots = {}

    def slot(atom):
      return slots.setdefault(atom, len(slots))

    const_slots = [slot(v) for v in jaxpr.constvars]
    in_slots = [slot(v) for v in jaxpr.invars]
    last_read = {}
    for i, step in enumerate(steps):
      for a in step.reads:
        slot(a)
        last_read[a] = i
      for v in step.writes:
        slot(v)
    out_slots = [slot(a) for a in jaxpr.outvars]
    for a in jaxpr.outvars:
      last_read.pop(a, None)
    frees = [[] for _ in steps]
    for a, i in last_read.items():
      if not isinstance(a, Literal):
        frees[i].append(slot(a))
    template = [None] * len(slots)
    for a in slots:
      if isinstance(a, Literal):
        template[slots[a]] = core.to_numpy(literal_value(a))
    jaxpr._program = (template, const_slots, in_slots, out_slots, [
        (s.fn, s.params, s.multiple, _getter([slot(a) for a in s.reads]),
         [slot(v) for v in s.writes],
         [(v.aval.shape, dtypes.numpy_dtype(v.aval.dtype)) for v in s.writes],
         frees[i], s.eqns) for i, s in enumerate(steps)])
  return jaxpr._program


# XLA's CPU compiler lets LLVM contract a floating multiplication into the
# addition that reads it (AllowFPOpFusion=Fast), which LLVM does where the
# product has no other use; a product read by both operands prefers the first.
_ADDITIONS = {"add": 1, "add_any": 1, "sub": -1}   # the sign of the second operand


def contractions(jaxpr):
  """XLA's CPU contraction of `jaxpr` (its own equations, not its sub-jaxprs'):
  a float32 or float64 `c = mul a b` that one `add`/`add_any`/`sub` reads
  (once, its only reader; not an output) is evaluated in it as a fused
  multiply-add: `add c z` and `add z c` are fma(a, b, z), `sub c z` is
  fma(a, b, -z) and `sub z c` fma(-a, b, z), each rounded once. An addition
  of two such products fuses the first.

  Returns {addition equation: (its product's mul equation, the product's
  position among the addition's operands)}; every backend contracts these
  (the reference in `run_jaxpr`).
  """
  reads = {}
  for eqn in jaxpr.eqns:
    for a in eqn.invars:
      if not isinstance(a, Literal):
        reads[a] = reads.get(a, 0) + 1
  for v in jaxpr.outvars:
    reads[v] = reads.get(v, 0) + 2
  products = {}  # the contractible products: outvar -> its mul equation
  for eqn in jaxpr.eqns:
    if (eqn.primitive.name == "mul" and eqn.params.get("out_dtype") is None
        and dtypes.numpy_dtype(eqn.outvars[0].aval.dtype) in (np.float32, np.float64)
        and reads.get(eqn.outvars[0]) == 1):
      products[eqn.outvars[0]] = eqn
  fused = {}
  for eqn in jaxpr.eqns:
    if eqn.primitive.name in _ADDITIONS:
      for i, a in enumerate(eqn.invars):
        if a in products:
          fused[eqn] = products.pop(a), i
          break
  return fused


def fma_signs(addition, position):
  """(negate_product, negate_addend) of the fused multiply-add that an
  `addition` equation (add, add_any or sub) with its product at operand
  `position` (0 or 1) computes."""
  subtracted = _ADDITIONS[addition.primitive.name] < 0
  return subtracted and position == 1, subtracted and position == 0


def _contractions(jaxpr):
  """The steps of `jaxpr`, one per equation, except that the products of
  `contractions(jaxpr)` are evaluated in their additions."""
  fused = contractions(jaxpr)
  fused_muls = {mul for mul, _ in fused.values()}
  steps = []
  for eqn in jaxpr.eqns:
    if eqn in fused:
      mul, position = fused[eqn]
      negate_product, negate_addend = fma_signs(eqn, position)
      steps.append(_Step(_fused_multiply_add,
                         {"negate_product": negate_product, "negate_addend": negate_addend},
                         False, [*mul.invars, eqn.invars[1 - position]], eqn.outvars,
                         (mul, eqn)))
    elif eqn not in fused_muls:
      steps.append(_Step(eqn.primitive.impl, eqn.params, eqn.primitive.multiple_results,
                         eqn.invars, eqn.outvars, (eqn,)))
  return steps


def _fused_multiply_add(a, b, c, negate_product, negate_addend):
  """(-a if negate_product else a) * b + (-c if negate_addend else c), rounded once."""
  from refimpl.lax.special import fused_multiply_add
  a, b, c = np.broadcast_arrays(-a if negate_product else a, b, -c if negate_addend else c)
  return fused_multiply_add(a, b, c)


def _blocked(steps, outvars):
  """`steps` with each run of two or more consecutive elementwise steps of
  one result shape, larger than a block, made one step that evaluates them
  a block of elements at a time (`_Blocks`)."""
  from refimpl.lax.elementwise import _BLOCK
  readers = {}
  for i, step in enumerate(steps):
    for a in step.reads:
      readers.setdefault(a, set()).add(i)
  for v in outvars:
    readers.setdefault(v, set()).add(len(steps))

  def shape_of(step):   # the step's result shape, if it can be evaluated in blocks
    if step.multiple or not all(getattr(e.primitive, "elementwise", False)
                                for e in step.eqns):   # (a fused step's mul and add are)
      return None
    (out,) = step.writes
    shape = out.aval.shape
    if math.prod(shape) <= _BLOCK or dtypes.is_extended(out.aval.dtype):
      return None
    for a in step.reads:
      if a.aval.shape != shape and (math.prod(a.aval.shape) != 1 or len(a.aval.shape) > len(shape)):
        return None
    return shape

  result, run, run_shape = [], [], None

  def close_run(end):
    if len(run) < 2:
      result.extend(run)
      return
    written = {v for s in run for v in s.writes}
    outputs = [v for s in run for v in s.writes
               if any(r >= end for r in readers.get(v, ()))]
    inputs = list(dict.fromkeys(a for s in run for a in s.reads if a not in written))
    result.append(_Step(_Blocks(run, run_shape, inputs, outputs), {}, True, inputs, outputs,
                        tuple(e for s in run for e in s.eqns)))

  for i, step in enumerate(steps):
    shape = shape_of(step)
    if shape is None or shape != run_shape:
      close_run(i)
      run, run_shape = [], shape
      if shape is None:
        result.append(step)
        continue
    run.append(step)
  close_run(len(steps))
  return result


class _Blocks:
  """Elementwise steps of one result shape evaluated `_BLOCK` elements at a
  time: called with the values of `inputs`, returns those of `outputs`,
  each computed block by block into an array of its own; the other results
  of the steps exist a block at a time."""

  def __init__(self, steps, shape, inputs, outputs):
    from refimpl.lax.elementwise import _BLOCK
    self.block, self.shape = _BLOCK, shape
    local = {a: i for i, a in enumerate(inputs)}
    self.full = [a.aval.shape == shape for a in inputs]
    self.steps = []
    for step in steps:
      (out,) = step.writes
      reads = [local[a] for a in step.reads]
      local[out] = len(local)
      self.steps.append((step.fn, step.params, reads, local[out],
                         dtypes.numpy_dtype(out.aval.dtype), step.eqns))
    self.outputs = [(local[v], dtypes.numpy_dtype(v.aval.dtype)) for v in outputs]

  def __call__(self, *values):
    size = math.prod(self.shape)
    flat = [v.reshape(-1) if full else v.reshape(()) for v, full in zip(values, self.full)]
    results = [np.empty(self.shape, dtype) for _, dtype in self.outputs]
    flat_results = [r.reshape(-1) for r in results]
    debug = config.checking_floats
    env = flat + [None] * len(self.steps)
    for start in range(0, size, self.block):
      stop = min(start + self.block, size)
      for i, (v, full) in enumerate(zip(flat, self.full)):
        env[i] = v[start:stop] if full else v
      for fn, params, reads, write, dtype, eqns in self.steps:
        env[write] = _checked(fn(*[env[i] for i in reads], **params),
                              ((stop - start,), dtype), eqns, debug)
      for result, (i, _) in zip(flat_results, self.outputs):
        result[start:stop] = env[i]
    return results
