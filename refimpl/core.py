"""The core: abstract values, primitives, traces and tracers.

A program is a composition of *primitives*. Calling `prim.bind(*args)` hands
the primitive to the *current trace*, which decides what binding means:

* the `EvalTrace` (the default, outermost trace) runs the primitive's
  reference rule on concrete data, op by op;
* a tracing trace (`interpreters.partial_eval.JaxprTrace`) records an
  equation in a jaxpr instead;
* transformation traces (`interpreters.ad.JVPTrace`,
  `interpreters.batching.BatchTrace`) transform the application and bind
  the result in their parent trace.

Each trace knows its parent; a rule that needs to compute something runs under
the parent trace (`set_current_trace`), so traces nest without a global stack.
"""

import contextlib
import functools
import gc
import math
import operator
import os
import threading

import numpy as np

from refimpl import dtypes
from refimpl.array_methods import ArrayMethods
from refimpl.config import check_transfer, config
from refimpl.errors import (ConcretizationTypeError, TracerArrayConversionError,
                            TracerBoolConversionError,
                            TracerIntegerConversionError, UnexpectedTracerError,
                            JaxRuntimeError)


# --- abstract values -------------------------------------------------------

class ShapedArray:
  """The abstract value of an array: its shape, dtype and weak type flag.

  Every value a traced program handles is described by one of these; jit
  traces once per tuple of them.
  """

  __slots__ = ("shape", "dtype", "weak_type", "_hash")

  def __init__(self, shape, dtype, weak_type=False):
    self.shape = canonicalize_shape(shape)
    self.dtype = dtype if dtypes.is_extended(dtype) else np.dtype(dtype)
    self.weak_type = bool(weak_type)
    self._hash = None  # computed once: avals are keys of the shape rule and jit caches

  @property
  def ndim(self):
    return len(self.shape)

  @property
  def size(self):
    return int(np.prod(self.shape, dtype=np.int64))

  @property
  def sharding(self):
    """That of an unsharded value (refimpl runs on one device): no mesh, no
    dimension partitioned."""
    from refimpl.sharding import empty_sharding   # (it builds on this module)
    return empty_sharding(self.ndim)

  def update(self, shape=None, dtype=None, weak_type=None):
    return ShapedArray(self.shape if shape is None else shape,
                       self.dtype if dtype is None else dtype,
                       self.weak_type if weak_type is None else weak_type)

  def strip_weak_type(self):
    return self.update(weak_type=False)

  def __eq__(self, other):
    return self is other or (
        isinstance(other, ShapedArray) and self.shape == other.shape
        and self.dtype == other.dtype and self.weak_type == other.weak_type)

  def __hash__(self):
    if self._hash is None:
      self._hash = hash((self.shape, self.dtype, self.weak_type))
    return self._hash

  def str_short(self, short_dtypes=False):
    """`float32[3,4]`, or `f32[3,4]` with short dtypes (the jaxpr form)."""
    name = dtypes.short_name(self.dtype) if short_dtypes else self.dtype.name
    return f"{name}[{','.join(map(str, self.shape))}]"

  def __str__(self):
    """`~` marks a weak type: `~float32[]`."""
    return ("~" if self.weak_type else "") + self.str_short()

  def __repr__(self):
    weak = ", weak_type=True" if self.weak_type else ""
    return f"ShapedArray({self.str_short()}{weak})"


def canonicalize_shape(shape):
  """`shape` as a tuple of Python ints (a Python int `n` is the shape (n,), as
  in JAX); anything else (a traced size) is a TypeError."""
  if isinstance(shape, int):
    shape = (shape,)
  try:
    return tuple(map(operator.index, shape))
  except TypeError:
    pass
  msg = f"Shapes must be 1D sequences of concrete values of integer type, got {shape}."
  dims = shape if isinstance(shape, (tuple, list)) else (shape,)
  if any(isinstance(d, Tracer) for d in dims):
    msg += ("\nThe size comes from a traced value, which has no concrete value "
            "while tracing. If using `jit`, mark the argument that gives the size "
            "static with `static_argnums` or `static_argnames`, or apply `jit` to "
            "smaller subfunctions.")
  raise TypeError(msg)


def get_aval(x):
  """The abstract value of any value a primitive accepts.

  Python scalars are weakly typed (a Python int must fit the default
  integer dtype: OverflowError); NumPy values are canonicalized (float64
  becomes float32 unless x64 is on); NumPy data of an extended dtype (key
  data, structured elements) has that dtype. NumPy masked arrays raise
  `ValueError`, anything else `TypeError`.
  """
  if isinstance(x, (Tracer, ConcreteArray)):
    return x.aval
  if dtypes.is_python_scalar(x):
    return _python_scalar_aval(type(dtypes.check_python_int(x)), config.jax_enable_x64)
  if isinstance(x, (np.ndarray, np.generic)):
    if isinstance(x, np.ma.MaskedArray):
      raise ValueError("numpy masked arrays are not supported as direct inputs to JAX "
                       "functions. Use arr.filled() to convert the value to a standard "
                       "numpy array.")
    dtype = _numpy_value_dtype(x.dtype, config.jax_enable_x64)
    if dtype is None:
      raise TypeError(f"Value {x!r} with dtype {x.dtype} is not a valid JAX array type. "
                      "Only arrays of numeric types are supported by JAX.")
    return ShapedArray(x.shape, dtype)
  raise TypeError(f"Value {x!r} of type {type(x)} is not a valid JAX type")


@functools.cache
def _python_scalar_aval(scalar_type, x64):
  """The aval of a Python scalar of `scalar_type` (`x64` as the option is)."""
  return ShapedArray((), dtypes.python_scalar_dtype(scalar_type(0)),
                     weak_type=scalar_type is not bool)


def _numpy_value_dtype(np_dtype, x64):
  """The dtype of a NumPy value of dtype `np_dtype`: the extended dtype its
  data stands for, or the canonical dtype (`x64` as the option is); None if
  it is no JAX type."""
  dtype = _NUMPY_VALUE_DTYPES.get((np_dtype, x64))
  if dtype is None:
    dtype = dtypes.extended_of_numpy(np_dtype)
    if dtype is None:
      if np_dtype not in dtypes.SUPPORTED_DTYPES and np_dtype != dtypes.float0:
        return None
      dtype = dtypes.canonicalize_dtype(np_dtype)
    _NUMPY_VALUE_DTYPES[np_dtype, x64] = dtype
  return dtype


_NUMPY_VALUE_DTYPES = {}


def valid_jaxtype(x):
  try:
    get_aval(x)
  except TypeError:
    return False
  return True


def to_numpy(x):
  """The NumPy data of a concrete value, in its canonical dtype."""
  if isinstance(x, ConcreteArray):
    return x._value
  if isinstance(x, Tracer):
    raise UnexpectedTracerError(
        f"Encountered an unexpected tracer: {x._short_repr()} was used outside "
        "the transformation that created it.")
  if type(x) is np.ndarray and _numpy_value_dtype(x.dtype, config.jax_enable_x64) is x.dtype:
    return x  # already data of its canonical dtype
  aval = get_aval(x)
  with np.errstate(over="ignore"):   # (a float too large for its dtype is inf, as in JAX)
    return np.asarray(x, dtype=dtypes.numpy_dtype(aval.dtype))


class ConcreteArray:
  """Marker base of concrete arrays (`refimpl.array.Array`)."""
  __slots__ = ()


class DeviceBuffer:
  """Base of the buffers a device backend's programs return (docs/backends.md):
  an array's data in the memory of one of its devices, which an `Array`
  holds until the host reads it. A buffer has `shape` and `dtype` (the
  value's, standard dtypes only), `device` (one of its backend's devices),
  `__array__` (the data copied to a new host array) and
  `block_until_ready()` (waits for the computation writing it)."""
  __slots__ = ()


def to_data(x):
  """What a device backend's program takes for the concrete value `x`: the
  buffer an Array holds, else its NumPy data (`to_numpy`), which the program
  puts on its device (an implicit host-to-device transfer)."""
  buffer = getattr(x, "_buffer", None)
  if buffer is not None:
    return buffer
  check_transfer("host_to_device", get_aval(x))
  return to_numpy(x)


# --- physical types ----------------------------------------------------------

def physical_aval(aval):
  """The aval of the physical data of a value of `aval`: the array of a
  standard dtype that compiled programs (backends) take and return for it.

  * An extended dtype's element is physically an array of the dtype's
    `element_shape` and `element_dtype`: `key<fry>[3]` is `uint32[3,2]`.
  * `float0` (the tangent type of integers; no data) is `bool` of the same
    shape, all False, as JAX passes float0 arrays to XLA.
  * Any other aval is its own physical aval (the same object).
  """
  dtype = aval.dtype
  if dtypes.is_extended(dtype):
    return ShapedArray((*aval.shape, *dtype.element_shape), dtype.element_dtype)
  if dtype == dtypes.float0:
    return ShapedArray(aval.shape, dtypes.bool_)
  return aval


def to_physical(data, aval):
  """The physical data (of `physical_aval(aval)`) of NumPy data of `aval` as
  the reference rules hold it (structured elements for an extended dtype)."""
  if dtypes.is_extended(aval.dtype):
    return aval.dtype.to_physical(data)
  if aval.dtype == dtypes.float0:
    return np.zeros(aval.shape, dtypes.bool_)
  return data


def from_physical(data, aval):
  """The NumPy data of `aval` whose physical data is `data`, the inverse of
  `to_physical` (float0 data is zeros, whatever `data` holds)."""
  if dtypes.is_extended(aval.dtype):
    return aval.dtype.from_physical(data)
  if aval.dtype == dtypes.float0:
    return np.zeros(aval.shape, dtypes.float0)
  return data


def from_physical_program(program, in_avals, out_avals):
  """A program on physical data (a backend's compiled program for a jaxpr
  with inputs `in_avals` and outputs `out_avals`) as a program on NumPy data
  as the reference rules hold it: it converts the arguments `to_physical`
  and the results `from_physical`. `program` itself when every aval is its
  own physical aval."""
  return _converting(program, in_avals, out_avals, to_physical, from_physical)


def to_physical_program(run, in_avals, out_avals):
  """The converse of `from_physical_program`: `run`, a program on NumPy data
  as the reference rules hold it, as a program on physical data."""
  return _converting(run, in_avals, out_avals, from_physical, to_physical)


def _converting(fn, in_avals, out_avals, convert_in, convert_out):
  """`fn` with each argument and result whose aval is not its own physical
  aval converted (`convert_in(arg, aval)`, `convert_out(result, aval)`)."""
  ins = [(i, a) for i, a in enumerate(in_avals) if physical_aval(a) is not a]
  outs = [(i, a) for i, a in enumerate(out_avals) if physical_aval(a) is not a]
  if not (ins or outs):
    return fn

  def converted(*args):
    args = list(args)
    for i, aval in ins:
      args[i] = convert_in(args[i], aval)
    results = list(fn(*args))
    for i, aval in outs:
      results[i] = convert_out(results[i], aval)
    return results
  return converted


# --- primitives ------------------------------------------------------------

PRIMITIVES = {}
"""Every primitive by name (filled as primitives are defined): the registry
from which the primitive reference in docs/ is generated."""


class Primitive:
  """A named operation with rules attached.

  `impl` is the reference rule: NumPy arrays in, NumPy array(s) out; its
  docstring states the semantics. `abstract_eval` is the shape/dtype rule:
  avals in, aval(s) out, raising `TypeError`/`ValueError` on bad input.
  The transformations keep their own rule tables keyed by primitive.
  """

  multiple_results = False
  has_side_effects = False

  call_jaxpr_param = None
  """On a *call primitive* (jit, checkpoint, custom_jvp_call, custom_vjp_call,
  custom_vmap_call), whose semantics is evaluating a sub-program on its
  operands: the name of the param holding that ClosedJaxpr `closed`. The
  equation `outs = prim[...] *operands` computes `eval_jaxpr(closed.jaxpr,
  closed.consts, *operands)`: operand i is bound to `closed.jaxpr.invars[i]`
  (there are as many operands as invars; the closed-over values a call takes
  as operands come first in both), the constvars to `closed.consts`, and
  `outs` are its outvars. So a backend may inline any call primitive; the
  other params direct transformations or are hints. None on other primitives."""

  transformation_params = frozenset()
  """The names of the params that only transformations read (custom rules,
  thunks, pytree definitions, policies): evaluating an equation ignores them,
  so a jaxpr's structural key leaves them out (docs/jaxpr.md)."""

  def __init__(self, name):
    self.name = name
    self.impl = None
    self.abstract_eval = None
    PRIMITIVES[name] = self

  def __repr__(self):
    return self.name

  def def_impl(self, impl):
    self.impl = impl
    return impl

  def def_abstract_eval(self, abstract_eval):
    self.abstract_eval = abstract_eval
    return abstract_eval

  def pp_params(self, params):
    """The params shown when printing an equation, in order (sorted by name)."""
    return dict(sorted(params.items()))

  def bind(self, *args, **params):
    """Applies the primitive in the current trace."""
    return _context.trace.process_primitive(self, args, params)

  @property
  def __doc__(self):
    return self.impl.__doc__ if self.impl is not None else None


# --- traces ----------------------------------------------------------------

class Trace:
  """Interprets primitive applications. Subclasses define `process_primitive`."""

  def process_primitive(self, primitive, args, params):
    raise NotImplementedError


class EvalTrace(Trace):
  """Runs each primitive's reference rule on concrete NumPy data.

  The result is checked against the primitive's shape/dtype rule, so a rule
  that disagrees with its own specification fails loudly. With
  `jax_debug_nans` (`jax_debug_infs`) on, a floating result holding a NaN
  (an infinity) raises `FloatingPointError` naming the primitive.
  """

  def process_primitive(self, primitive, args, params):
    # get_aval and to_numpy, with their first case (concrete arrays) inline
    in_avals = [x.aval if isinstance(x, ConcreteArray) else get_aval(x) for x in args]
    out_avals = _shape_rule(primitive, in_avals, params)
    values = [x._value if isinstance(x, ConcreteArray) else to_numpy(x) for x in args]
    outs = _run_impl(primitive, values, params)
    if not primitive.multiple_results:
      return _result_array(primitive, outs, out_avals, values)
    return [_result_array(primitive, out, aval, values) for out, aval in zip(outs, out_avals)]


def _result_array(primitive, out, aval, values):
  """The Array of `out`, a result of `primitive`'s reference rule run on
  `values`, once checked against `aval` (from the shape rule) and, with
  debug_nans/debug_infs, for NaNs and infinities. A float0 result stays a
  NumPy array, as in JAX (float0 has no data, so there is no Array of it)."""
  if (type(out) is np.ndarray and out.dtype == aval.dtype and out.dtype.kind != "V"
      and out.shape == aval.shape and not out.flags.writeable and not config.checking_floats):
    # (the common result: read-only, of its type, not float0)
    return _array_type()._owning(out, aval)
  if aval.dtype == dtypes.float0:
    return np.zeros(aval.shape, dtypes.float0)
  if isinstance(out, DeviceBuffer):   # (a device backend's result: checked as it is)
    if out.shape != aval.shape or out.dtype != aval.dtype:
      raise AssertionError(f"backend of {primitive.name} returned a buffer of {out.dtype}"
                           f"{list(out.shape)} but its shape/dtype rule says {aval.str_short()}")
    check_floats(primitive.name, out)
    return make_array(out, aval)
  if type(out) is not np.ndarray:
    out = np.asarray(out)
  if out.shape != aval.shape or (out.dtype != aval.dtype  # else an extended dtype's data?
                                 and out.dtype != dtypes.numpy_dtype(aval.dtype)):
    raise AssertionError(
        f"reference rule of {primitive.name} returned {out.dtype}{list(out.shape)}"
        f" but its shape/dtype rule says {aval.str_short()}")
  check_floats(primitive.name, out)
  if out.base is None and out.flags.writeable and _is_new(out, values):
    out.flags.writeable = False  # a new buffer the rule made: the Array can own it
  return make_array(out, aval)


def _is_new(out, values):
  """Whether `out` is none of `values` (a rule may return an operand as it is)."""
  for v in values:
    if out is v:
      return False
  return True


_SHAPE_RULE_RESULTS = {}


def _shape_rule(primitive, in_avals, params):
  """`primitive.abstract_eval(*in_avals, **params)`, checked by
  `check_allocatable`, remembered: a shape rule is a function of the avals,
  the params (told apart by type too: 2 and 2.0 differ) and x64 alone.
  Errors are raised anew each time. Applications with jaxpr params (jit,
  scan, cond, ...) are not remembered: their keys would keep the jaxprs'
  consts alive."""
  if params:
    key = (primitive, config.jax_enable_x64, *in_avals, *params.items(),
           *map(type, params.values()))
  else:
    key = (primitive, config.jax_enable_x64, *in_avals)
  try:
    out = _SHAPE_RULE_RESULTS.get(key)
  except TypeError:  # an unhashable param
    return _allocatable_out_avals(primitive, in_avals, params)
  if out is None:
    out = _allocatable_out_avals(primitive, in_avals, params)
    if any(map(_jaxprs_in_value(), params.values())):
      return out
    if len(_SHAPE_RULE_RESULTS) > 100_000:
      _SHAPE_RULE_RESULTS.clear()
    _SHAPE_RULE_RESULTS[key] = out
  return out


def _allocatable_out_avals(primitive, in_avals, params):
  out_avals = primitive.abstract_eval(*in_avals, **params)
  check_allocatable(primitive, out_avals)
  return out_avals


@np.errstate(all="ignore")  # as a decorator: thread-safe, set and reset per call
def _run_impl(primitive, values, params):
  """Runs `primitive`'s reference rule; NaN/inf results are values, not
  warnings (NumPy's floating-point errors are ignored). With
  `jax_no_execution`, raises RuntimeError instead."""
  if config.jax_no_execution:
    name = params["name"] if primitive.name == "jit" else primitive.name
    raise RuntimeError(f"JAX tried to execute function {name}, but the "
                       "no_execution config option is set")
  return primitive.impl(*values, **params)


_MEMORY_BYTES = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def check_allocatable(primitive, out_avals):
  """Raises JaxRuntimeError, before any work is done, when a result in
  `out_avals` (one aval or a list) cannot be allocated, as XLA fails: more
  elements than int64 counts (INVALID_ARGUMENT), or more bytes than this
  machine's memory (RESOURCE_EXHAUSTED)."""
  for aval in out_avals if isinstance(out_avals, (list, tuple)) else (out_avals,):
    size = math.prod(aval.shape)
    nbytes = size * dtypes.numpy_dtype(aval.dtype).itemsize
    if size < 2**63 and nbytes <= _MEMORY_BYTES:
      continue
    where = f"the result {aval.str_short()} of {primitive.name}"
    if size >= 2**63:
      raise JaxRuntimeError(f"INVALID_ARGUMENT: Shape {aval.str_short()} size may "
                            f"overflow int64: {where} has {size} elements.")
    if nbytes > _MEMORY_BYTES:
      raise JaxRuntimeError(
          f"RESOURCE_EXHAUSTED: Out of memory while trying to allocate {nbytes} bytes "
          f"for {where}; this machine has {_MEMORY_BYTES} bytes. Use a smaller shape, "
          "or reduce in pieces (e.g. with lax.map or lax.scan over chunks).")


def make_array(data, aval):
  """The concrete array of NumPy `data` (or a `DeviceBuffer`) that `aval` describes: an `Array`,
  or for an extended dtype the array type that dtype names (key arrays)."""
  if isinstance(aval.dtype, dtypes.ExtendedDType):
    return aval.dtype.array_type(data, aval.dtype)
  array = _array_type()(data, aval.weak_type)
  array._aval = aval  # the aval it would build (it describes `data` exactly)
  return array


@functools.cache
def _jaxprs_in_value():
  from refimpl.jaxpr import jaxprs_in_value  # refimpl.jaxpr builds on this module
  return jaxprs_in_value


@functools.cache
def _array_type():
  from refimpl.array import Array  # refimpl.array builds on this module
  return Array


def check_floats(name, value):
  """With `jax_debug_nans` (`jax_debug_infs`) on, raises `FloatingPointError`
  if a floating `value` holds a NaN (an infinity)."""
  if not config.checking_floats or not dtypes.is_inexact(value.dtype):
    return
  if config.jax_debug_nans and np.isnan(value).any():
    raise FloatingPointError(f"invalid value (nan) encountered in {name}")
  if config.jax_debug_infs and np.isinf(value).any():
    raise FloatingPointError(f"invalid value (inf) encountered in {name}")


class _TraceContext(threading.local):
  def __init__(self):
    self.trace = EvalTrace()
    self.axis_env = ()  # ((name, size), ...): the named axes in scope, innermost last


_context = _TraceContext()


def current_trace():
  return _context.trace


def evaluating_eagerly():
  """Whether operations run now, outside every transformation and named axis."""
  context = _context
  return type(context.trace) is EvalTrace and not context.axis_env


class set_current_trace:  # noqa: N801 (used as a function)
  """Makes `trace` the one that `bind` uses within the block (`with
  set_current_trace(trace):`; a class rather than a generator: it is
  entered for every traced call)."""

  __slots__ = ("trace", "previous")

  def __init__(self, trace):
    self.trace = trace

  def __enter__(self):
    self.previous, _context.trace = _context.trace, self.trace
    return self.trace

  def __exit__(self, *exc):
    _context.trace = self.previous


def check_no_leaks(trace_ref):
  """With `jax_check_tracer_leaks`, where a transformation's trace ends:
  raises if the trace `trace_ref` refers to is still alive once garbage is
  collected, which means that one of its tracers outlived it (stored in a
  global, a closure, an attribute), naming those tracers."""
  for generation in range(3):   # (the young first: a full collection is slow in a large heap)
    if trace_ref() is None:
      return
    gc.collect(generation)
  trace = trace_ref()
  if trace is None:
    return
  tracers = [r for r in gc.get_referrers(trace) if isinstance(r, Tracer)]
  listed = "\n\n".join(map(str, tracers))
  raise Exception(f"Leaked trace {type(trace).__name__}. Leaked tracer(s):\n\n{listed}\n")


def eval_context():
  """A block in which binding runs eagerly, whatever trace is current."""
  return set_current_trace(EvalTrace())


# --- named axes --------------------------------------------------------------

@contextlib.contextmanager
def extend_axis_env(name, size):
  """Puts the named axis `name` of size `size` in scope within the block
  (`vmap(..., axis_name=name)` does while tracing), for collectives to name."""
  previous = _context.axis_env
  _context.axis_env = previous + ((name, size),)
  try:
    yield
  finally:
    _context.axis_env = previous


def axis_env():
  """The named axes in scope, as ((name, size), ...), innermost last."""
  return _context.axis_env


def axis_size(name):
  """The size of the named axis `name` (the innermost one of that name).

  Raises `NameError` if no enclosing `vmap`/`pmap` binds it.
  """
  for bound, size in reversed(_context.axis_env):
    if bound == name:
      return size
  raise NameError(f"unbound axis name: {name}. The following axis names (e.g. defined "
                  f"by pmap) are available to collective operations: "
                  f"{[n for n, _ in _context.axis_env]}")


# --- tracers ---------------------------------------------------------------

class Tracer(ArrayMethods):
  """A stand-in for an array while a trace records or transforms a program.

  Tracers answer to the same operators and methods as arrays (see
  `refimpl.array`); what they cannot do is produce Python values: `bool()`,
  `int()`, `float()` and `np.asarray()` raise the concretization errors,
  unless the trace knows a concrete value (as the jvp trace does).
  """

  __array_priority__ = 1000
  __slots__ = ("_trace",)
  repr_name = "Tracer"

  @property
  def aval(self):
    raise NotImplementedError

  def to_concrete_value(self):
    """A concrete NumPy value when the trace knows one, else None."""
    return None

  def _short_repr(self):
    return f"{self.repr_name}({self.aval})"

  def __repr__(self):
    return self._short_repr()

  def _concrete(self, error):
    value = self.to_concrete_value()
    if value is None:
      raise error
    return value

  def __bool__(self):
    return bool(self._concrete(TracerBoolConversionError(self)))

  def __index__(self):
    aval = self.aval
    if aval.shape != () or not np.issubdtype(aval.dtype, np.integer):
      raise TypeError("Only integer scalar arrays can be converted to a scalar index.")
    return int(self._concrete(TracerIntegerConversionError(self)))

  def __int__(self):
    return int(self._concrete(ConcretizationTypeError(
        self, "The problem arose with the `int` function.")))

  def __float__(self):
    return float(self._concrete(ConcretizationTypeError(
        self, "The problem arose with the `float` function.")))

  def __complex__(self):
    return complex(self._concrete(ConcretizationTypeError(
        self, "The problem arose with the `complex` function.")))

  def __array__(self, dtype=None, copy=None):
    value = self._concrete(TracerArrayConversionError(self))
    return np.asarray(value, dtype=dtype)

  def __hash__(self):
    raise TypeError(f"unhashable type: {type(self).__name__}")

  def __setitem__(self, index, value):
    from refimpl.array import immutable_error
    raise immutable_error(self)

  def __iter__(self):
    if self.aval.ndim == 0:
      raise TypeError("iteration over a 0-d array")
    return (self[i] for i in range(self.aval.shape[0]))

  def __len__(self):
    if self.aval.ndim == 0:
      raise TypeError("len() of unsized object")
    return self.aval.shape[0]
