"""The user-facing transformations of this layer: `jit` and `make_jaxpr`.

`jit(f)` flattens its arguments (pytrees), abstracts each leaf to a
ShapedArray, and looks up a cache keyed by (avals, static arguments, tree
structure, tracing config). On a miss it traces `f` to a ClosedJaxpr. The
call itself is one application of the `jit` primitive, whose params hold the
jaxpr; evaluated eagerly it hands the jaxpr to a backend, traced it nests.
A repeated eager call on Arrays goes straight to the compiled program
(`_EagerCall`, machinery only: the same program and results).
`jit(f).trace(*args)` / `.lower(*args)` give JAX's ahead-of-time stages
(`Traced`, `Lowered`, `Compiled`), and `make_jaxpr(f)` is
`jit(f).trace(*args).jaxpr`, as in JAX.
"""

import contextlib
import functools
import inspect
import logging
import warnings
import weakref

import numpy as np

from refimpl import backends, core, dtypes, memory, monitoring, tree_util
from refimpl._src import compiler
from refimpl.config import check_transfer, config
from refimpl.interpreters import ad, batching, partial_eval as pe
from refimpl.jaxpr import check_jaxpr, dce_jaxpr, ClosedJaxpr, Jaxpr

_logger = logging.getLogger("refimpl")


# --- the jit primitive -----------------------------------------------------

class JitPrimitive(core.Primitive):
  """The `jit` primitive: a call of a closed jaxpr, compiled by a backend."""

  multiple_results = True
  call_jaxpr_param = "jaxpr"

  def __init__(self):
    super().__init__("jit")
    # Jaxpr -> {(backend's compile, tracing config): program}, the fast path
    # in front of _programs: (structural key, compile, config) -> program,
    # shared by every jaxpr of the same structure, whatever its consts' values
    self._compiled = weakref.WeakKeyDictionary()
    self._programs = {}
    self.def_abstract_eval(lambda *avals, jaxpr, name, backend: jaxpr.out_avals)
    self.def_impl(self._call)

  def _compile(self, closed, backend_name, name):
    """The backend's program for `closed` (traced from function `name`),
    taking its consts as its first arguments; the backend compiles once per
    structure and backend (and with `jax_log_compiles`, jit logs it). The
    backend's program takes and returns physical data (`core.physical_aval`);
    the one returned here NumPy data as the reference rules hold it."""
    per_jaxpr = self._compiled.get(closed.jaxpr)
    if per_jaxpr is None:
      per_jaxpr = self._compiled[closed.jaxpr] = {}
    compile = backends.get_backend(backend_name)
    setting = (compile, config.trace_state())  # a re-registered name compiles anew
    program = per_jaxpr.get(setting)
    if program is None:
      key = (closed.jaxpr.structural_key(), *setting)
      program = self._programs.get(key)
      if program is None:
        core.check_allocatable(self, closed.out_avals)
        j = dce_jaxpr(closed.jaxpr)
        jaxpr = ClosedJaxpr(Jaxpr([], j.constvars + j.invars, j.outvars, j.eqns), [])
        if config.jax_enable_checks:
          check_jaxpr(jaxpr)
        if config.jax_log_compiles:
          _logger.warning("Compiling %s with global shapes and types %s on backend %r",
                          name, [a.str_short() for a in jaxpr.in_avals], backend_name)
        platform = "cpu" if backends.device_backend(backend_name) is None else "gpu"
        backend = compiler.Backend(backend_name, compile, platform)
        with monitoring.timed(monitoring.BACKEND_COMPILE_EVENT, fun_name=name):
          compiled = compiler.backend_compile_and_load(backend, jaxpr)
        program = self._programs[key] = core.from_physical_program(
            compiled, jaxpr.in_avals, jaxpr.out_avals)
      per_jaxpr[setting] = program
    return program

  def bind(self, *args, jaxpr, name, backend):
    """Eagerly, a call of the compiled program whose results have the types
    of the jaxpr's outputs (its shape rule), checked once when the program
    was built rather than on every call; under a transformation, its rule."""
    if type(core.current_trace()) is not core.EvalTrace or config.checking_floats:
      return super().bind(*args, jaxpr=jaxpr, name=name, backend=backend)
    data = core.to_data if backends.device_backend(backend or config.backend) else core.to_numpy
    values = [data(x) for x in args]
    outs = core._run_impl(self, values, {"jaxpr": jaxpr, "name": name, "backend": backend})
    return [core._result_array(self, out, aval, values)
            for out, aval in zip(outs, jaxpr.out_avals)]

  def _call(self, *args, jaxpr, name, backend):
    """`jit[name, jaxpr, backend] *args`: calls the closed jaxpr `jaxpr`.

    Shape rule: the outputs are the jaxpr's out_avals. Evaluated eagerly, the
    jaxpr (dead code removed, its consts made inputs) is compiled by the
    backend named `backend` (the configured one when None; a program is
    compiled once per jaxpr structure, backend and tracing config, and
    reused for new const values) and run. `name` is the traced function's
    name. With `jax_debug_nans`, a NaN in an output makes it re-run the
    jaxpr op by op to name the equation that produced it.
    """
    compiled = self._compile(jaxpr, backend or config.backend, name)
    consts = [core.to_numpy(c) for c in jaxpr.consts]
    if not config.checking_floats:
      return compiled(*consts, *args)
    with config.option("jax_debug_nans", False), config.option("jax_debug_infs", False):
      outs = compiled(*consts, *args)
    if any(_flagged(o) for o in outs):
      return self._rerun_op_by_op(jaxpr, name, args)
    return outs

  def _rerun_op_by_op(self, jaxpr, name, args):
    from refimpl.interpreters.eval import eval_closed_jaxpr
    try:
      with core.eval_context():
        outs = eval_closed_jaxpr(jaxpr, *args)
    except FloatingPointError as err:
      raise FloatingPointError(
          f"{err}\nInvalid value encountered in the output of jit function "
          f"{name}; re-running it op by op found the equation above.") from None
    warnings.warn(f"An invalid value appeared in the output of jit function {name} "
                  "but not when re-running it op by op; continuing.", RuntimeWarning)
    return [core.to_numpy(o) for o in outs]

  def pp_params(self, params):
    """`name` first, then `jaxpr`; `backend` only when one was chosen."""
    shown = {"name": params["name"], "jaxpr": params["jaxpr"]}
    if params["backend"] is not None:
      shown["backend"] = params["backend"]
    return shown


def _flagged(x):
  """Whether output `x` holds a NaN (an inf) while jax_debug_nans (_infs) is on."""
  x = np.asarray(x)
  if not dtypes.is_inexact(x.dtype):
    return False
  return bool((config.jax_debug_nans and np.isnan(x).any())
              or (config.jax_debug_infs and np.isinf(x).any()))


jit_p = JitPrimitive()


def _jit_partial_eval(trace, args, params):
  """Splits a call with known and unknown inputs into a call of the known
  part, run now, and a recorded call of the unknown part on its residuals.
  Residuals that are known inputs are passed to the unknown call directly."""
  unknowns = [trace.is_own(x) for x in args]
  known, unknown, out_unknowns, num_res = pe.partial_eval_jaxpr(params["jaxpr"], unknowns)
  known_args = [x for x, u in zip(args, unknowns) if not u]
  k = known.jaxpr
  num_known_outs = len(k.outvars) - num_res
  res_vars = k.outvars[num_known_outs:]
  forwarded = [k.invars.index(v) if v in k.invars else None for v in res_vars]
  known = ClosedJaxpr(Jaxpr(k.constvars, k.invars, k.outvars[:num_known_outs] + [
      v for v, f in zip(res_vars, forwarded) if f is None], k.eqns), known.consts)
  with core.set_current_trace(trace.parent):
    known_outs = jit_p.bind(*known_args, **dict(params, jaxpr=known))
  computed = iter(known_outs[num_known_outs:])
  residuals = [known_args[f] if f is not None else next(computed) for f in forwarded]
  unknown_outs = iter(trace.record(
      jit_p, [*residuals, *[x for x, u in zip(args, unknowns) if u]],
      dict(params, jaxpr=unknown)))
  known_outs = iter(known_outs[:num_known_outs])
  return [next(unknown_outs) if u else next(known_outs) for u in out_unknowns]


ad.primitive_jvps[jit_p] = ad.call_jvp_rule(jit_p)
ad.deftranspose(jit_p, ad.call_transpose_rule(jit_p))
pe.partial_eval_rules[jit_p] = _jit_partial_eval
batching.axis_primitive_batchers[jit_p] = batching.call_batching_rule(jit_p)


# --- jit -------------------------------------------------------------------

# Traces shared by every jit of the same function, as in JAX: calling
# `jit(f)(x)` twice traces f once.
_trace_cache = weakref.WeakKeyDictionary()


def _normalize_static(fun, static_argnums, static_argnames, kind="static"):
  """Resolves static_argnums and static_argnames (or, with kind="donate",
  donate_argnums and donate_argnames) into each other via the signature, and
  checks them against it as JAX does (ValueError for an index past the
  positional parameters, or a name the function does not take)."""
  if static_argnums is None:
    static_argnums = ()
  elif isinstance(static_argnums, int):
    static_argnums = (static_argnums,)
  if static_argnames is None:
    static_argnames = ()
  elif isinstance(static_argnames, str):
    static_argnames = (static_argnames,)
  static_argnums, static_argnames = tuple(static_argnums), tuple(static_argnames)
  if not (static_argnums or static_argnames):
    return (), ()   # nothing to resolve or check
  try:
    params = list(inspect.signature(fun).parameters.values())
  except (TypeError, ValueError):
    return static_argnums, static_argnames
  kinds = {p.kind for p in params}
  positional = [p.name for p in params
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
  if static_argnums and inspect.Parameter.VAR_POSITIONAL not in kinds and (
      -min(static_argnums) > len(positional) or max(static_argnums) >= len(positional)):
    raise ValueError(f"Jitted function has {kind}_argnums={static_argnums}, "
                     f"but only accepts {len(positional)} positional arguments.")
  positional_only = {p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL)}
  keywords = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
  if invalid := positional_only & set(static_argnames):
    raise ValueError(f"Jitted function has invalid argnames {invalid} in "
                     f"{kind}_argnames. These are positional-only")
  if inspect.Parameter.VAR_KEYWORD not in kinds and (invalid := set(static_argnames) - keywords):
    raise ValueError(f"Jitted function has invalid argnames {invalid} in "
                     f"{kind}_argnames. Function does not take these args.")
  names = set(static_argnames)
  nums = set(i if i >= 0 else i + len(positional) for i in static_argnums)
  names.update(positional[i] for i in nums if 0 <= i < len(positional))
  nums.update(positional.index(n) for n in names if n in positional)
  return tuple(sorted(nums)), tuple(sorted(names))


def _abstractify(leaf, fun_name, path, structs=False):
  """The aval of argument leaf `leaf` (also of a ShapeDtypeStruct when `structs`)."""
  if structs and isinstance(leaf, ShapeDtypeStruct):
    return leaf.aval
  try:
    return core.get_aval(leaf)
  except TypeError:
    raise TypeError(
        f"Error interpreting argument to {fun_name} as an abstract array. The "
        f"problematic value is of type {type(leaf)} and was passed to the function "
        f"at path {path}.\nThis typically means that a jit-wrapped function was "
        "called with a non-array argument, and this argument was not marked as "
        "static using the static_argnums or static_argnames parameters of "
        "jax.jit.") from None


def _flatten_args(args, kwargs):
  """`tree_flatten((args, kwargs))`, without walking a pytree when the
  arguments are all arrays (the common call)."""
  if kwargs or not all(isinstance(a, (core.ConcreteArray, core.Tracer)) for a in args):
    return tree_util.tree_flatten((args, kwargs))
  tree = _ARRAY_ARGS_TREES.get(len(args))
  if tree is None:
    tree = _ARRAY_ARGS_TREES[len(args)] = tree_util.tree_structure((args, {}))
  return list(args), tree


_ARRAY_ARGS_TREES = {}  # n -> the tree of n array arguments and no keywords


class _EagerCall:
  """A jitted function's eager call on Arrays, once traced and compiled: its
  program, consts and output types, called directly on later calls with
  arguments of the same avals, in the same tracing config and backend
  (machinery: the results are those of tracing again, finding the trace
  in the cache and binding jit_p eagerly)."""

  __slots__ = ("program", "consts", "in_avals", "out_avals", "out_tree", "leaf", "device",
               "generation")

  def __init__(self, closed, backend, name, out_tree, in_avals, generation):
    self.program = jit_p._compile(closed, backend, name)
    self.consts = [core.to_numpy(c) for c in closed.consts]
    self.in_avals, self.out_avals, self.out_tree = in_avals, closed.out_avals, out_tree
    self.leaf = tree_util.treedef_is_leaf(out_tree) and out_tree.num_leaves == 1
    self.device = backends.device_backend(backend) is not None
    self.generation = generation

  def matches(self, args):
    """Whether a call on `args` is this call, without computing its key:
    Arrays of the same avals, outside every transformation and named axis,
    in the settings it was last found for (`config.generation`: no global
    value changed since, and no context manager's block is active, whose
    values the generation does not cover)."""
    if (self.generation is None or config.generation() != self.generation
        or not core.evaluating_eagerly() or len(args) != len(self.in_avals)):
      return False
    array = core._array_type()
    for a, aval in zip(args, self.in_avals):
      if type(a) is not array or (a._aval is not aval and a.aval != aval):
        return False
    return True

  def __call__(self, args):
    values = ([core.to_data(a) for a in args] if self.device
              else [a._contiguous_value() for a in args])
    outs = self.program(*self.consts, *values)
    results = [core._result_array(jit_p, out, aval, values)
               for out, aval in zip(outs, self.out_avals)]
    return results[0] if self.leaf else tree_util.tree_unflatten(self.out_tree, results)


_eager_calls = weakref.WeakKeyDictionary()   # fun -> {_eager_key: _EagerCall}
_NO_CALLS = {}


class JitFunction:
  """The callable `jit(f)` returns."""

  def __init__(self, fun, static_argnums, static_argnames, backend):
    self.fun = fun
    self.static_argnums, self.static_argnames = _normalize_static(
        fun, static_argnums, static_argnames)
    self.backend = backend
    self.__name__ = getattr(fun, "__name__", "fun")
    self.__qualname__ = getattr(fun, "__qualname__", self.__name__)
    self.__doc__ = getattr(fun, "__doc__", None)
    self.__wrapped__ = fun
    self._last_call = None   # the _EagerCall of the last eager call, tried first

  def __repr__(self):
    return f"<jitted function {self.__name__}>"

  def __get__(self, obj, objtype=None):
    return self if obj is None else functools.partial(self, obj)

  @property
  def __signature__(self):
    """`fun`'s, as `inspect.signature` gives for JAX's jitted functions (even
    with `follow_wrapped=False`, which would otherwise take this object with
    a `__get__` for a builtin)."""
    return inspect.signature(self.fun)

  def _split_args(self, args, kwargs):
    if not (self.static_argnums or self.static_argnames):
      return (), args, kwargs
    static = tuple((i, args[i]) for i in self.static_argnums if i < len(args))
    static += tuple((k, kwargs[k]) for k in sorted(kwargs) if k in self.static_argnames)
    for where, value in static:
      try:
        hash(value)
      except TypeError:
        where = f"index {where}" if isinstance(where, int) else f"name {where}"
        raise ValueError(
            "Non-hashable static arguments are not supported, as this can lead to "
            f"unexpected cache-misses. Static argument ({where}) of type {type(value)} "
            f"for function {self.__name__} is non-hashable.") from None
    dyn_args = tuple(a for i, a in enumerate(args) if i not in self.static_argnums)
    dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
    return static, dyn_args, dyn_kwargs

  def _rebuild(self, static, dyn_args, dyn_kwargs):
    static_pos = {k: v for k, v in static if isinstance(k, int)}
    args, it = [], iter(dyn_args)
    for i in range(len(dyn_args) + len(static_pos)):
      args.append(static_pos[i] if i in static_pos else next(it))
    kwargs = dict(dyn_kwargs)
    kwargs.update((k, v) for k, v in static if isinstance(k, str))
    return args, kwargs

  def _trace(self, args, kwargs, structs=False):
    """Traces for these arguments (or returns the cached trace); with
    `structs`, ShapeDtypeStructs stand for arrays (ahead-of-time tracing).

    Returns (closed_jaxpr, in_tree, out_tree, dynamic leaves).
    """
    static, dyn_args, dyn_kwargs = self._split_args(args, kwargs)
    leaves, in_tree = _flatten_args(dyn_args, dyn_kwargs)
    try:
      avals = (tuple(leaf.aval if isinstance(leaf, ShapeDtypeStruct) else core.get_aval(leaf)
                     for leaf in leaves) if structs else tuple(map(core.get_aval, leaves)))
    except TypeError:  # say which argument, by its path
      avals = tuple(_abstractify(leaf, self.__name__, tree_util.keystr(path), structs)
                    for path, leaf in tree_util.tree_flatten_with_path(
                        (dyn_args, dyn_kwargs))[0])
    # static values match only with equal types too, as in JAX (2 and 2.0 differ)
    key = (self.static_argnums, self.static_argnames,
           tuple([(k, type(v), v) for k, v in static]) if static else (), in_tree, avals,
           config.trace_state(), core.axis_env())
    per_fun = _trace_cache.get(self.fun)
    if per_fun is None:
      per_fun = _trace_cache.setdefault(self.fun, {})
    entry = per_fun.get(key)
    if entry is None:
      if config.jax_no_tracing:
        raise RuntimeError(f"re-tracing function {_source_info(self.fun)} for `jit`, but "
                           "'no_tracing' is set")
      if config.jax_explain_cache_misses:
        _logger.warning("%s", _explain_cache_miss(self.fun, list(per_fun), key))
      out_tree_box = []

      def flat_fun(*flat_args):
        d_args, d_kwargs = tree_util.tree_unflatten(in_tree, flat_args)
        f_args, f_kwargs = self._rebuild(static, d_args, d_kwargs)
        out = self.fun(*f_args, **f_kwargs)
        out_leaves, out_tree = tree_util.tree_flatten(out)
        out_tree_box.append(out_tree)
        return out_leaves

      with monitoring.timed(monitoring.JAXPR_TRACE_EVENT, fun_name=self.__name__):
        closed = pe.trace_to_jaxpr(flat_fun, avals)
      entry = (closed, out_tree_box[0])
      if not any(isinstance(c, core.Tracer) for c in closed.consts):
        per_fun[key] = entry  # traces that captured outer tracers are not reusable
    return entry[0], in_tree, entry[1], leaves

  def __call__(self, *args, **kwargs):
    last = self._last_call
    if last is not None and not kwargs and last.matches(args):
      return last(args)
    if config.jax_disable_jit:
      return self.fun(*args, **kwargs)
    generation = config.generation()
    eager = None if kwargs or self.static_argnums or self.static_argnames else \
        self._eager_key(args)
    if eager is not None:
      call = _eager_calls.get(self.fun, _NO_CALLS).get(eager)
      if call is not None:
        call.generation = generation   # (its key says it is the call under these settings)
        self._last_call = call
        return call(args)
    closed, _, out_tree, leaves = self._trace(args, kwargs)
    closed, tracer_consts = pe.split_tracer_consts(closed)
    outs = jit_p.bind(*tracer_consts, *leaves, jaxpr=closed, name=self.__name__,
                      backend=self.backend)
    if eager is not None and not tracer_consts:
      call = _EagerCall(closed, eager[0], self.__name__, out_tree, eager[3:], generation)
      _eager_calls.setdefault(self.fun, {})[eager] = self._last_call = call
    return tree_util.tree_unflatten(out_tree, outs)

  def _eager_key(self, args):
    """For a call on Arrays only, outside every transformation and float
    check, the key of its `_EagerCall`: (backend, its compile function,
    tracing config, the arguments' avals); None for any other call."""
    if (type(core.current_trace()) is not core.EvalTrace or core.axis_env()
        or config.checking_floats):
      return None
    array = core._array_type()
    for a in args:
      if type(a) is not array:
        return None
    backend = self.backend or config.backend
    try:
      compile = backends.get_backend(backend)
    except (ValueError, RuntimeError):   # raised where the call binds jit_p
      return None
    return (backend, compile, config.trace_state(), *[a.aval for a in args])

  # --- ahead-of-time stages (JAX's jax.stages): trace -> lower -> compile ---

  def trace(self, *args, **kwargs):
    """Traces `fun` for these arguments (arrays, or ShapeDtypeStructs standing
    for them; static arguments as values) and returns a `Traced`."""
    closed, in_tree, out_tree, _ = self._trace(args, kwargs, structs=True)
    return Traced(self, closed, in_tree, out_tree)

  def lower(self, *args, **kwargs):
    """`trace(*args, **kwargs).lower()`."""
    return self.trace(*args, **kwargs).lower()

  def eval_shape(self, *args, **kwargs):
    """The output shapes and dtypes for these arguments, as ShapeDtypeStructs."""
    return self.trace(*args, **kwargs).out_info

  def clear_cache(self):
    """Forgets the cached traces of this function."""
    _trace_cache.pop(self.fun, None)
    _eager_calls.pop(self.fun, None)
    config.changed()   # (other jit objects of this function remember their last call)

  def _cache_size(self):
    return len(_trace_cache.get(self.fun, {}))


def _source_info(fun):
  """`name at file:line` of a Python function (its name alone otherwise)."""
  name = getattr(fun, "__qualname__", None) or getattr(fun, "__name__", repr(fun))
  code = getattr(fun, "__code__", None)
  return f"{name} at {code.co_filename}:{code.co_firstlineno}" if code else name


_KEY_PARTS = ("static argument positions", "static argument names", "static arguments",
              "argument structure", "argument types", "tracing configuration", "named axes")
"""What each item of a trace cache key (`JitFunction._trace`) holds."""


def _differs(a, b):
  try:
    return bool(a != b)
  except Exception:   # (values without a truth value of their comparison)
    return True


def _explain_cache_miss(fun, seen_keys, key):
  """Why trace cache `key` of `fun` is new (`jax_explain_cache_misses`): the
  function was never traced, or what differs from the closest key seen."""
  lines = ["TRACING CACHE MISS because:", f"  for {_source_info(fun)}"]
  if not seen_keys:
    lines.append("  never seen function")
    return "\n".join(lines)
  closest = min(seen_keys, key=lambda seen: sum(map(_differs, seen, key)))
  for part, seen, now in zip(_KEY_PARTS, closest, key):
    if not _differs(seen, now):
      continue
    if part == "argument types" and len(seen) == len(now):
      for i, (a, b) in enumerate(zip(seen, now)):
        if a != b:
          lines.append(f"  argument {i}: seen {a.str_short()}, but now given {b.str_short()}")
    else:
      lines.append(f"  {part}: seen {seen}, but now {now}")
  return "\n".join(lines)


def _struct(aval):
  return ShapeDtypeStruct(aval.shape, aval.dtype, weak_type=aval.weak_type)


class _Stage:
  """A jitted function traced for one set of argument types (JAX's jax.stages).
  Here lowering and compiling keep the jaxpr: the backend compiles on call."""

  def __init__(self, jit_fun, jaxpr, in_tree, out_tree):
    self._jit_fun, self.jaxpr, self.in_tree, self.out_tree = jit_fun, jaxpr, in_tree, out_tree
    self.fun_name = jit_fun.__name__

  @property
  def in_avals(self):
    """The (args, kwargs) pytree of the dynamic arguments' avals."""
    return tree_util.tree_unflatten(self.in_tree, self.jaxpr.in_avals)

  @property
  def out_info(self):
    """The outputs as a pytree of ShapeDtypeStructs."""
    return tree_util.tree_unflatten(self.out_tree, [_struct(a) for a in self.jaxpr.out_avals])

  @property
  def args_info(self):
    """The (args, kwargs) pytree of the dynamic arguments' `jax.stages.ArgInfo`
    (none donated: refimpl never reuses an argument's buffer)."""
    from refimpl.stages import ArgInfo   # (refimpl.stages builds on this module)
    return tree_util.tree_unflatten(self.in_tree,
                                    [ArgInfo(a, False) for a in self.jaxpr.in_avals])

  def as_text(self):
    return str(self.jaxpr)

  def cost_analysis(self):
    """The program's estimated flops, transcendentals and bytes accessed, as
    a dict (`refimpl.stages.cost_analysis` says how each is counted)."""
    from refimpl.stages import cost_analysis
    return cost_analysis(self.jaxpr)


class Traced(_Stage):
  """`jit(f).trace(*args)`."""

  def lower(self):
    return Lowered(self._jit_fun, self.jaxpr, self.in_tree, self.out_tree)


class Lowered(_Stage):
  """`jit(f).lower(*args)`."""

  def compiler_ir(self, dialect=None):
    """The lowered program in the compiler's IR `dialect`: refimpl's backends
    compile jaxprs, so for `dialect` None or "jaxpr" its ClosedJaxpr; for an
    IR refimpl has no lowering to ("stablehlo", "hlo"), None, as JAX's
    `compiler_ir` returns where a lowering lacks the dialect."""
    if dialect in (None, "jaxpr"):
      return self.jaxpr
    if dialect in ("stablehlo", "hlo", "mhlo"):
      return None
    raise ValueError(f"Unknown dialect {dialect!r}: refimpl's programs are jaxprs "
                     "(dialect None or 'jaxpr'); 'stablehlo' and 'hlo' give None.")

  def compile(self, compiler_options=None):
    """The `Compiled` stage; refimpl's backends take no `compiler_options`
    (they compile when the program is first called)."""
    return Compiled(self._jit_fun, self.jaxpr, self.in_tree, self.out_tree)


class Compiled(_Stage):
  """`jit(f).lower(*args).compile()`: callable on arguments of the types it was
  traced for (static arguments left out); it cannot be transformed."""

  def memory_analysis(self):
    """The bytes of the program's arguments, outputs and intermediates, as
    `refimpl.stages.CompiledMemoryStats` (see `refimpl.stages.memory_analysis`)."""
    from refimpl.stages import memory_analysis
    return memory_analysis(self.jaxpr)

  def _arg_names(self):
    """JAX's names for the dynamic argument leaves: `x`, `y['a']`, `kw`."""
    fun = self._jit_fun
    try:
      params = [p.name for p in inspect.signature(fun.fun).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
      params = []
    dyn_names = [n for i, n in enumerate(params) if i not in fun.static_argnums]
    names = []
    for path, _ in tree_util.tree_flatten_with_path(
        tree_util.tree_unflatten(self.in_tree, [0] * self.in_tree.num_leaves))[0]:
      where, key, *rest = path
      if where.idx == 0:
        base = dyn_names[key.idx] if key.idx < len(dyn_names) else f"args[{key.idx}]"
      else:
        base = key.key
      names.append(base + tree_util.keystr(tuple(rest)))
    return names

  def __call__(self, *args, **kwargs):
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    if in_tree != self.in_tree:
      raise TypeError("Function compiled with input pytree does not match the input "
                      f"pytree it was called with: compiled for {self.in_tree}, called "
                      f"with {in_tree}.")
    for leaf in leaves:
      if isinstance(leaf, core.Tracer):
        raise TypeError("Cannot apply JAX transformations to a function lowered and "
                        "compiled for a particular signature. Detected argument of "
                        f"Tracer type {type(leaf)}.")
    expected = tree_util.tree_leaves(self.in_avals)
    errors = [f"Argument '{name}' compiled with {ref.str_short()} and called with "
              f"{got.str_short()}"
              for name, ref, got in zip(self._arg_names(), expected, map(core.get_aval, leaves))
              if (ref.shape, ref.dtype) != (got.shape, got.dtype)]
    if errors:
      raise TypeError("Argument types differ from the types for which this computation "
                      "was compiled. The mismatches are:\n" + "\n".join(errors))
    closed, tracer_consts = pe.split_tracer_consts(self.jaxpr)
    outs = jit_p.bind(*tracer_consts, *leaves, jaxpr=closed, name=self.fun_name,
                      backend=self._jit_fun.backend)
    return tree_util.tree_unflatten(self.out_tree, outs)


class _UnspecifiedValue:
  """The default of jit's `in_shardings` and `out_shardings` (JAX's
  `UnspecifiedValue`): the compiler chooses."""

  def __repr__(self):
    return "UnspecifiedValue"


UNSPECIFIED = _UnspecifiedValue()


def _check_jit_shardings(shardings, what):
  """JAX's check of jit's `in_shardings`/`out_shardings`: a pytree (prefix) whose
  leaves are Shardings, PartitionSpecs or None. Every sharding places arrays
  on the one device, so a valid one changes nothing else."""
  from refimpl import sharding
  if shardings is UNSPECIFIED:
    return
  for leaf in tree_util.tree_leaves(shardings, is_leaf=lambda x: x is None):
    if not (leaf is None or isinstance(leaf, (sharding.Sharding, sharding.PartitionSpec))):
      raise ValueError(f"One of jit {what} got sharding {leaf!r} of type "
                       f"{type(leaf).__name__}, which is not a jax.sharding.Sharding, a "
                       "PartitionSpec or None.")


def jit(fun=None, /, *, in_shardings=UNSPECIFIED, out_shardings=UNSPECIFIED,
        static_argnums=None, static_argnames=None, donate_argnums=None, donate_argnames=None,
        keep_unused=False, device=None, backend=None, inline=False, compiler_options=None):
  """Compiles `fun`: traces it once per input types and runs the jaxpr on a backend.

  `static_argnums`/`static_argnames` name arguments passed as Python values
  (they must be hashable; each new value retraces). `in_shardings` and
  `out_shardings` are checked as JAX checks them and place everything on the
  one device. Donation, devices and compiler options are accepted and
  ignored. Used bare or as `@jit(static_argnums=...)`.
  """
  _check_jit_shardings(in_shardings, "in_shardings")
  _check_jit_shardings(out_shardings, "out_shardings")
  if fun is None:
    return functools.partial(
        jit, in_shardings=in_shardings, out_shardings=out_shardings,
        static_argnums=static_argnums, static_argnames=static_argnames,
        donate_argnums=donate_argnums, donate_argnames=donate_argnames,
        keep_unused=keep_unused, device=device, backend=backend, inline=inline,
        compiler_options=compiler_options)
  if not callable(fun):
    raise TypeError(f"Expected a callable value, got {fun}")
  if backend is not None:
    backends.get_backend(backend)
  jit_fun = JitFunction(fun, static_argnums, static_argnames, backend)
  _check_donation(fun, jit_fun, donate_argnums, donate_argnames)
  return jit_fun


def _check_donation(fun, jit_fun, donate_argnums, donate_argnames):
  """Donation is ignored, but its arguments are checked as JAX checks them:
  against the signature, and disjoint from the static arguments."""
  if donate_argnums is None and donate_argnames is None:
    return
  donated, donated_names = _normalize_static(fun, donate_argnums, donate_argnames, "donate")
  if both := set(jit_fun.static_argnames) & set(donated_names):
    raise ValueError("static_argnames and donate_argnames cannot intersect. Argument "
                     f"names {both} appear in both static_argnames and donate_argnames")
  if set(jit_fun.static_argnums) & set(donated):
    raise ValueError(f"`static_argnums` {sorted(jit_fun.static_argnums)} and "
                     f"`donate_argnums` {sorted(donated)} cannot intersect.")


# --- make_jaxpr ------------------------------------------------------------

def make_jaxpr(fun, static_argnums=(), axis_env=None, return_shape=False):
  """Returns a function that traces `fun` on its arguments and returns the ClosedJaxpr.

  Arguments may be arrays, Python scalars (weakly typed), `ShapeDtypeStruct`s
  or pytrees of them. With `return_shape=True` also returns the output shapes
  as a pytree of `ShapeDtypeStruct`. As in JAX, this is
  `jit(fun, static_argnums=static_argnums).trace(*args, **kwargs)`, so static
  arguments follow jit's rules (hashable; negative indices count from the end).
  `axis_env`, a sequence of (axis name, size) pairs, binds named axes for the
  collectives `fun` uses (as an enclosing `vmap` would).
  """
  try:
    hash(fun)
    weakref.ref(fun)
  except TypeError:
    fun = functools.partial(fun)   # traces are cached per function: needs both

  @functools.wraps(fun)
  def make_jaxpr_f(*args, **kwargs):
    with contextlib.ExitStack() as stack:
      for name, size in axis_env or ():
        stack.enter_context(core.extend_axis_env(name, size))
      traced = jit(fun, static_argnums=static_argnums).trace(*args, **kwargs)
    if return_shape:
      return traced.jaxpr, traced.out_info
    return traced.jaxpr

  name = getattr(fun, "__name__", None)
  if name is not None:
    make_jaxpr_f.__name__ = f"make_jaxpr({name})"
  return make_jaxpr_f


class ShapeDtypeStruct:
  """A shape and dtype standing in for an array (for make_jaxpr, eval_shape),
  with the sharding it is given (a PartitionSpec: over the abstract mesh in context).
  `manual_axis_type` and `is_ref` take only their defaults."""

  __slots__ = ("shape", "dtype", "sharding", "weak_type")

  def __init__(self, shape, dtype, *, sharding=None, weak_type=False, manual_axis_type=None,
               is_ref=False):
    from refimpl import sharding as sharding_lib
    if manual_axis_type is not None or is_ref:
      raise NotImplementedError("ShapeDtypeStruct: shard_map's manual axis types and mutable "
                                "array references (is_ref) are not modelled by refimpl")
    self.shape = tuple(shape)
    if dtype is None:
      raise ValueError("ShapeDtypeStruct: dtype must be specified.")
    self.dtype = dtype if dtypes.is_extended(dtype) else np.dtype(dtype)
    if sharding is not None and not isinstance(
        sharding, (sharding_lib.Sharding, sharding_lib.PartitionSpec)):
      raise ValueError("sharding should be an instance of `jax.sharding.Sharding` or "
                       f"`jax.sharding.PartitionSpec`. Got {sharding} of type {type(sharding)}.")
    if isinstance(sharding, sharding_lib.PartitionSpec):
      mesh = sharding_lib.get_abstract_mesh()
      if mesh.empty:
        raise TypeError("When specifying PartitionSpec to `ShapeDtypeStruct`, the context mesh "
                        "cannot be empty. Please use `jax.set_mesh` to set the mesh context.")
      sharding = sharding_lib.NamedSharding(mesh, sharding)
    self.sharding = sharding
    self.weak_type = weak_type

  @property
  def aval(self):
    return core.ShapedArray(self.shape, self.dtype, self.weak_type)

  @property
  def ndim(self):
    return len(self.shape)

  @property
  def size(self):
    return int(np.prod(self.shape, dtype=np.int64))

  def __repr__(self):
    sharding = "" if self.sharding is None else f", sharding={self.sharding}"
    weak = ", weak_type=True" if self.weak_type else ""
    return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{sharding}{weak})"

  def _key(self):
    return (self.shape, self.dtype, self.sharding, self.weak_type)

  def __eq__(self, other):
    return isinstance(other, ShapeDtypeStruct) and self._key() == other._key()

  def __hash__(self):
    return hash(self._key())


def process_count(backend=None):
  return 1


def process_index(backend=None):
  return 0


def process_indices(backend=None):
  return [0]


host_count, host_id, host_ids = process_count, process_index, process_indices


def effects_barrier():
  """Waits for pending side effects; they run synchronously here."""


def ensure_compile_time_eval():
  """Context manager: operations on concrete values run eagerly, even while
  tracing (their results become constants of the traced program)."""
  return config.option("jax_enable_compile_time_eval", True)


def named_call(fun, *, name=None):
  """`fun` under a name (used by profilers); the values are those of `fun`."""
  @functools.wraps(fun)
  def named(*args, **kwargs):
    return fun(*args, **kwargs)
  named.__name__ = name or getattr(fun, "__name__", "fun")
  return named


class named_scope(contextlib.ContextDecorator):  # noqa: N801 (JAX's name)
  """Context manager naming the operations staged inside it (for profilers);
  it does not change what they compute. As a decorator (`@named_scope("f")`),
  it names the operations of each call."""

  def __init__(self, name):
    if not isinstance(name, str):
      raise TypeError("named_scope name argument must be a string.")
    self.name = name

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    return False


def print_environment_info(return_string=False):
  """Prints (or returns) the versions of refimpl (and of the JAX it follows),
  Python and NumPy."""
  import platform
  import sys
  import refimpl
  info = (f"refimpl: {refimpl.refimpl_version} (jax {refimpl.__version__})\n"
          f"numpy:   {np.__version__}\n"
          f"python:  {sys.version}\nplatform: {platform.platform()}\n")
  if return_string:
    return info
  print(info, end="")


def typeof(x):
  """The abstract value (ShapedArray) of `x` (its `.sharding` that of an
  unsharded value: refimpl runs on one device)."""
  return core.get_aval(x)


def clear_caches():
  """Forgets every cached trace and compiled program; later jit calls trace
  and compile again."""
  _trace_cache.clear()
  _eager_calls.clear()
  jit_p._compiled.clear()
  jit_p._programs.clear()
  config.changed()   # (jit objects remember their last call)


def eval_shape(fun, *args, **kwargs):
  """The output shapes and dtypes of `fun(*args)` as ShapeDtypeStructs, without running it."""
  _, shapes = make_jaxpr(fun, return_shape=True)(*args, **kwargs)
  return shapes


# --- devices and data movement ----------------------------------------------

class Device:
  """The CPU device the reference implementation runs on."""

  id = 0
  platform = "cpu"
  device_kind = "cpu"

  def __repr__(self):
    return "CpuDevice(id=0)"

  def put(self, data):
    """NumPy `data` as this device holds it: itself."""
    return data


_CPU = Device()

_GPU_NAMES = ("gpu", "cuda")
"""JAX's platform names that select the device backend of CUDA GPUs."""

_GPU_BACKEND = "numba-cuda"


def _devices_of(backend):
  """The devices of `backend` (a platform or backend name; None: the
  configured backend): a device backend's own, else the CPU. RuntimeError,
  as JAX's, for a platform with no devices here."""
  requested = backend
  if backend is None:
    backend = config.backend
    try:
      backends.get_backend(backend)   # (loaded if only declared, so that its devices are known)
    except (ValueError, RuntimeError):
      return [_CPU]   # (jit raises where it is called)
  elif backend == "cpu":
    return [_CPU]
  elif backend in _GPU_NAMES:
    try:
      backends.get_backend(_GPU_BACKEND)
    except (ValueError, RuntimeError) as err:
      raise RuntimeError(f"Unknown backend {backend!r}: no GPU backend is available ({err}); "
                         "install refimpl's numba-cuda extra on a machine with a CUDA GPU") from err
    backend = _GPU_BACKEND
  else:
    try:
      backends.get_backend(backend)
    except ValueError as err:
      raise RuntimeError(_no_platform(backend)) from err
  found = backends.device_backend(backend)
  if found is None:
    return [_CPU]
  try:
    return found()
  except Exception as err:   # (a GPU backend on a machine without a driver or a GPU)
    raise RuntimeError(f"{_no_platform(requested)} ({type(err).__name__}: {err})") from err


def _no_platform(name):
  """JAX's message for a platform that has no devices here."""
  return (f"Unknown backend: {name!r} requested, but no platforms that are instances of "
          f"{name} are present. Platforms present are: cpu")


def devices(backend=None):
  """The devices of `backend` ("cpu", "gpu" or "cuda", or a backend's name),
  by default of the configured backend: the GPUs of a device backend, else
  the one CPU."""
  return list(_devices_of(backend))


def local_devices(process_index=None, backend=None, host_id=None):
  """The devices of this process (all of them: there is one process);
  `host_id` is the deprecated name of `process_index`."""
  if host_id is not None:
    warnings.warn("The argument to jax.local_devices has been renamed from `host_id` to "
                  "`process_index`", DeprecationWarning, stacklevel=2)
  return devices(backend)


def device_count(backend=None):
  return len(devices(backend))


def local_device_count(backend=None):
  return device_count(backend)


def default_backend():
  """The platform of the configured backend's devices: "cpu" or "gpu"."""
  return devices()[0].platform


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
  """Converts the leaves of `x` to Arrays on `device` (by default the
  configured backend's first device; for a Sharding, or a PartitionSpec over
  the mesh `set_mesh` set, its one device; for `memory.Space.Host` the host,
  for the other memory spaces the default device): on a GPU their data is
  copied to a device buffer; on the CPU a device buffer is copied to the host."""
  import refimpl.numpy as jnp
  from refimpl import sharding
  placement = device if isinstance(device, (sharding.Sharding, sharding.PartitionSpec)) else None
  if placement is not None:
    device = sharding.device_of(placement)
  elif isinstance(device, memory.Space):
    device = _CPU if device is memory.Space.Host else None
  device = device if isinstance(device, Device) or hasattr(device, "put") else devices()[0]

  def put(leaf):
    leaf = jnp.asarray(leaf)
    if isinstance(placement, sharding.NamedSharding):
      placement.check_compatible_aval(leaf.shape)
    if not isinstance(leaf, core.ConcreteArray) or leaf.device is device:
      return leaf
    buffer = getattr(leaf, "_buffer", None)
    if buffer is None:   # (host data)
      check_transfer("host_to_device", leaf.aval, explicit=True)
      return core.make_array(device.put(np.asarray(leaf)), leaf.aval)
    if device is _CPU:
      return core.make_array(leaf._fetch(explicit=True), leaf.aval)
    check_transfer("device_to_device", leaf.aval, explicit=True)
    return core.make_array(device.put(np.asarray(buffer)), leaf.aval)
  return tree_util.tree_map(put, x)


def device_get(x):
  """Converts the Array leaves of `x` to NumPy arrays; key arrays (extended
  dtypes, which have no NumPy form) are returned as they are, as in JAX."""
  def get(leaf):
    if not isinstance(leaf, core.ConcreteArray) or dtypes.is_extended(leaf.dtype):
      return leaf
    if getattr(leaf, "_buffer", None) is not None:
      leaf._fetch(explicit=True)
    return np.asarray(leaf)
  return tree_util.tree_map(get, x)


def block_until_ready(x):
  """Waits for the computation of the arrays in pytree `x`; returns `x`."""
  for leaf in tree_util.tree_leaves(x):
    if isinstance(leaf, core.ConcreteArray):
      leaf.block_until_ready()
  return x


def _one_device_sharding(sharding, api_name):
  from refimpl import sharding as sharding_module
  if not isinstance(sharding, sharding_module.Sharding):
    raise TypeError(f"{api_name}: sharding must be a jax.sharding.Sharding, got "
                    f"{type(sharding).__name__}")
  return sharding


def _check_shard_shape(data, shape, sharding):
  expected = sharding.shard_shape(shape)
  if tuple(np.shape(data)) != tuple(expected):
    raise ValueError(f"Expected shard shape {tuple(expected)} doesn't match the single device "
                     f"array shape {tuple(np.shape(data))}. Shape of Array is {tuple(shape)} "
                     f"with sharding {sharding}")


def make_array_from_callback(shape, sharding, data_callback, dtype=None):
  """The Array of global `shape` laid out by `sharding`, whose piece on each
  device is `data_callback(index)` (index: a tuple of slices into the
  array). On one device, one call with the whole array's index
  (`(slice(None),) * len(shape)`), whose result (of `dtype` when given) must
  have the whole shape."""
  import refimpl.numpy as jnp
  sharding = _one_device_sharding(sharding, "make_array_from_callback")
  shape = tuple(shape)
  (device, index), = sharding.devices_indices_map(shape).items()
  data = jnp.asarray(data_callback(index), dtype=dtype)
  _check_shard_shape(data, shape, sharding)
  return device_put(data, sharding)


def make_array_from_single_device_arrays(shape, sharding, arrays, *, dtype=None):
  """The Array of global `shape` laid out by `sharding`, from one array per
  addressable device of it (in the order of `sharding.addressable_devices`):
  on one device, a list of one array of the whole shape."""
  sharding = _one_device_sharding(sharding, "make_array_from_single_device_arrays")
  shape, arrays = tuple(shape), list(arrays)
  if len(arrays) != len(sharding.addressable_devices):
    raise ValueError(f"The sharding has {len(sharding.addressable_devices)} addressable "
                     f"devices but {len(arrays)} arrays were given; pass one array per device")
  array, = arrays
  if dtype is not None and np.dtype(dtype) != array.dtype:
    raise ValueError(f"If `dtype` is given, it must match the dtype of the arrays: {dtype} "
                     f"!= {array.dtype}")
  _check_shard_shape(array, shape, sharding)
  return device_put(array, sharding)


def make_array_from_process_local_data(sharding, local_data, global_shape=None):
  """The Array laid out by `sharding` from the data this process holds
  (`local_data`, a NumPy or JAX array) of an array of `global_shape` (by
  default the local data's shape). refimpl is one process, which holds the
  whole array: `global_shape`, when given, must be the data's shape."""
  import refimpl.numpy as jnp
  sharding = _one_device_sharding(sharding, "make_array_from_process_local_data")
  data = jnp.asarray(local_data)
  shape = data.shape if global_shape is None else tuple(global_shape)
  if shape != data.shape:
    raise ValueError(f"global_shape {shape} differs from the local data's shape {data.shape}: "
                     "a single process holds the whole array")
  return device_put(data, sharding)
