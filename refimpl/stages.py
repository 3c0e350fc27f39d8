"""`refimpl.stages`: the ahead-of-time stages of `jit`, as `jax.stages`.

`jit(f).trace(*args)` is a `Traced`, its `.lower()` a `Lowered` and that
one's `.compile()` a `Compiled` (the classes are `refimpl.api`'s). Here the
program of every stage is the traced jaxpr: a backend compiles it when it is
first called. This module adds what describes the stages: `ArgInfo` (an
argument's type), `CompilerOptions`, the `Wrapped` protocol of what `jit`
returns, and the cost and memory models behind `Lowered.cost_analysis`,
`Compiled.cost_analysis` and `Compiled.memory_analysis`.
"""

import dataclasses
import math
import typing

from refimpl import core, dtypes
from refimpl.api import Compiled, Lowered, Traced  # noqa: F401 (re-exported)
from refimpl.jaxpr import jaxprs_in_params

__all__ = ["ArgInfo", "Compiled", "CompilerOptions", "Lowered", "Traced", "Wrapped"]

CompilerOptions = dict[str, typing.Any]
"""Options a compiler takes (`Lowered.compile(compiler_options)`), by name.
refimpl's backends take none."""


@dataclasses.dataclass(frozen=True)
class ArgInfo:
  """The type of an argument of a stage (its `args_info` is a pytree of
  them): its aval, and whether the program may reuse its buffer (never here:
  refimpl does not donate)."""

  _aval: core.ShapedArray
  donated: bool

  @property
  def shape(self):
    return self._aval.shape

  @property
  def dtype(self):
    return self._aval.dtype


class Wrapped(typing.Protocol):
  """A function that `jit` wrapped: callable, and staged ahead of time with
  `trace` and `lower`."""

  def __call__(self, *args, **kwargs):
    """Runs the wrapped function, compiling as needed."""

  def trace(self, *args, **kwargs) -> Traced:
    """Traces the function for these arguments."""

  def lower(self, *args, **kwargs) -> Lowered:
    """Traces and lowers the function for these arguments."""


# --- cost and memory models ------------------------------------------------------------

# The primitives that XLA's cost analysis counts as transcendental (its
# opcodes exp, expm1, log, log1p, power, sqrt, cbrt, rsqrt, tanh, sin, cos,
# tan, atan2, logistic, erf); other elementwise primitives count as flops.
_TRANSCENDENTAL = frozenset("exp exp2 expm1 log log1p pow sqrt cbrt rsqrt tanh sin cos tan "
                            "atan2 logistic erf".split())

_CUMULATIVE = frozenset("cumsum cumprod cummax cummin cumlogsumexp argmax argmin "
                        "reduce".split())


def _nbytes(aval):
  physical = core.physical_aval(aval)
  return math.prod(physical.shape) * dtypes.numpy_dtype(physical.dtype).itemsize


def _size(aval):
  return math.prod(aval.shape)


def _add(*costs):
  return tuple(map(sum, zip(*costs))) if costs else (0, 0, 0)


def _jaxpr_cost(jaxpr):
  """(flops, transcendentals, bytes accessed) of `jaxpr`'s equations."""
  return _add(*[_eqn_cost(eqn) for eqn in jaxpr.eqns])


def _eqn_cost(eqn):
  """(flops, transcendentals, bytes accessed) of one equation; see
  `cost_analysis`."""
  primitive, params = eqn.primitive, eqn.params
  name = primitive.name
  if primitive.call_jaxpr_param is not None:
    return _jaxpr_cost(params[primitive.call_jaxpr_param].jaxpr)
  if name == "cond":
    return tuple(map(max, zip(*[_jaxpr_cost(b.jaxpr) for b in params["branches"]])))
  if name == "while":
    return _add(_jaxpr_cost(params["cond_jaxpr"].jaxpr), _jaxpr_cost(params["body_jaxpr"].jaxpr))
  if name == "scan":
    return tuple(params["length"] * c for c in _jaxpr_cost(params["jaxpr"].jaxpr))
  in_avals = [a.aval for a in eqn.invars]
  out_avals = [v.aval for v in eqn.outvars]
  accessed = sum(map(_nbytes, in_avals)) + sum(map(_nbytes, out_avals))
  flops = transcendentals = 0
  if getattr(primitive, "elementwise", False):
    if name in _TRANSCENDENTAL:
      transcendentals = _size(out_avals[0])
    else:
      flops = _size(out_avals[0])
  elif name == "dot_general":
    (contracting, _), _ = params["dimension_numbers"]
    flops = 2 * _size(out_avals[0]) * math.prod(in_avals[0].shape[d] for d in contracting)
  elif name == "conv_general_dilated":
    rhs, out_features = in_avals[1], in_avals[1].shape[params["dimension_numbers"].rhs_spec[0]]
    flops = 2 * _size(out_avals[0]) * (_size(rhs) // max(out_features, 1))
  elif name.startswith("reduce_window"):
    flops = _size(out_avals[0]) * math.prod(params["window_dimensions"])
  elif (name.startswith("reduce_") and name != "reduce_precision") or name in _CUMULATIVE:
    flops = _size(in_avals[0])
  return flops, transcendentals, accessed


def cost_analysis(closed):
  """Estimated costs of running the closed jaxpr `closed`, as XLA's
  `HloCostAnalysis` reports them: a dict of floats.

  * "flops": an elementwise primitive counts one per result element (a
    transcendental one, in "transcendentals" instead); `dot_general` two per
    multiply-add (2·M·N·K); a convolution two per multiply-add of each
    output element; a reduction, cumulative reduction or argmax one per
    operand element, a window reduction one per window element of each
    output. Data movement (reshape, slice, gather, ...) and primitives with
    no standard count (decompositions, sorting, FFTs, callbacks) count none.
  * "transcendentals": one per result element of exp, log, pow, sqrt, rsqrt,
    cbrt, tanh, sin, cos, tan, atan2, logistic and erf (XLA's transcendental
    opcodes).
  * "bytes accessed": the bytes of every equation's operands and results
    (physical data: a key's words; float0 as bool), each value counted for
    each equation reading or writing it, as XLA counts unfused instructions.

  Sub-programs: a call counts its jaxpr; `cond` the most costly branch;
  `scan` its body `length` times; `while` its predicate and body once (the
  trip count is unknown, as XLA assumes).
  """
  flops, transcendentals, accessed = _jaxpr_cost(closed.jaxpr)
  return {"flops": float(flops), "transcendentals": float(transcendentals),
          "bytes accessed": float(accessed)}


@dataclasses.dataclass(frozen=True)
class CompiledMemoryStats:
  """The memory a compiled program needs, in bytes (`Compiled.memory_analysis`)."""

  generated_code_size_in_bytes: int
  argument_size_in_bytes: int
  output_size_in_bytes: int
  alias_size_in_bytes: int
  temp_size_in_bytes: int


def _peak_temp(jaxpr):
  """The most bytes of intermediate values (neither inputs, consts nor
  outputs) alive at once while `jaxpr` runs its equations in order, each
  freed after its last reader; a sub-program's own peak counts while it runs
  (its inputs and outputs are the caller's values)."""
  outputs = set(jaxpr.outvars)
  last_read = {a: i for i, eqn in enumerate(jaxpr.eqns) for a in eqn.invars}
  freed = [[] for _ in jaxpr.eqns]
  for i, eqn in enumerate(jaxpr.eqns):
    for v in eqn.outvars:
      if v not in outputs:
        freed[last_read.get(v, i)].append(v)
  live = peak = 0
  for eqn, dead in zip(jaxpr.eqns, freed):
    inner = max(map(_peak_temp, jaxprs_in_params(eqn.params)), default=0)
    live += sum(_nbytes(v.aval) for v in eqn.outvars if v not in outputs)
    peak = max(peak, live + inner)
    live -= sum(_nbytes(v.aval) for v in dead)
  return peak


def memory_analysis(closed):
  """The memory running the closed jaxpr `closed` takes, as
  `CompiledMemoryStats`: its arguments (the jaxpr's inputs; its consts are
  the program's constants), its outputs and the peak of its intermediate
  values alive at once (`temp_size_in_bytes`), evaluated equation by
  equation as the reference backend does (a fused loop of the numba backend
  needs less). No code is generated ahead of time and no buffer is aliased:
  those sizes are 0."""
  jaxpr = closed.jaxpr
  return CompiledMemoryStats(
      generated_code_size_in_bytes=0,
      argument_size_in_bytes=sum(_nbytes(v.aval) for v in jaxpr.invars),
      output_size_in_bytes=sum(_nbytes(v.aval) for v in jaxpr.outvars),
      alias_size_in_bytes=0,
      temp_size_in_bytes=_peak_temp(jaxpr))
