"""Configuration: `refimpl.config.update(name, value)` and context managers.

Options mirror JAX's names. Each may also be set from the environment when the
package is imported (``JAX_ENABLE_X64=1``, ``JAX_DEBUG_NANS=1``,
``JAX_DISABLE_JIT=1``, ``REFIMPL_BACKEND=name``). As JAX reads
``JAX_PLATFORMS``, ``REFIMPL_BACKEND`` is read unchecked, its backend found and
loaded at the first jit call; `config.update("backend", name)` and
`config.option` do both at once.

As in JAX, `config.update` sets an option's global value, seen by every
thread, while a context manager (`enable_x64()`, `config.option(name, value)`,
...) sets it for the current thread only, until the block exits. Reading an
option (`config.jax_enable_x64`) gives the value of this thread's innermost
active block, else the global value.
"""

import contextlib
import logging
import operator
import os
import threading


def _env_flag(name):
  return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


class _ThreadContext(threading.local):
  def __init__(self):
    self.values = {}  # option name -> this thread's innermost block's value


_context = _ThreadContext()


class Config:
  """Holds the options' global values; read an option as an attribute
  (`config.jax_enable_x64`) for its value in the current thread."""

  def __init__(self):
    self._values = {  # the global values
        "jax_enable_x64": _env_flag("JAX_ENABLE_X64"),
        "jax_debug_nans": _env_flag("JAX_DEBUG_NANS"),
        "jax_debug_infs": _env_flag("JAX_DEBUG_INFS"),
        "jax_numpy_rank_promotion": os.environ.get("JAX_NUMPY_RANK_PROMOTION", "allow"),
        "jax_default_device": None,
        "jax_enable_compile_time_eval": False,
        "jax_disable_jit": _env_flag("JAX_DISABLE_JIT"),
        "jax_enable_checks": _env_flag("JAX_ENABLE_CHECKS"),
        "jax_log_compiles": _env_flag("JAX_LOG_COMPILES"),
        "jax_threefry_partitionable": True,
        "jax_default_prng_impl": "threefry2x32",
        "jax_enable_custom_prng": False,
        "jax_legacy_prng_key": "allow",
        "jax_high_dynamic_range_gumbel": False,
        "jax_numpy_dtype_promotion": os.environ.get("JAX_NUMPY_DTYPE_PROMOTION", "standard"),
        "jax_default_matmul_precision": None,
        "jax_check_tracer_leaks": _env_flag("JAX_CHECK_TRACER_LEAKS"),
        "jax_explain_cache_misses": _env_flag("JAX_EXPLAIN_CACHE_MISSES"),
        "jax_no_tracing": False,
        "jax_no_execution": False,
        "jax_thread_guard": False,
        "jax_transfer_guard": os.environ.get("JAX_TRANSFER_GUARD", "allow"),
        "jax_transfer_guard_host_to_device": None,
        "jax_transfer_guard_device_to_host": None,
        "jax_transfer_guard_device_to_device": None,
        "jax_allow_f16_reductions": True,
        "jax_array_garbage_collection_guard": None,
        "jax2tf_associative_scan_reductions": False,
        "backend": os.environ.get("REFIMPL_BACKEND", "reference"),
    }
    self._generation = 0   # counts the global changes (`changed`)

  def _check_name(self, name):
    if name not in self._values:
      raise AttributeError(f"Unrecognized config option: {name}")

  def update(self, name, value):
    """Sets the global value of option `name` (every thread sees it, except
    inside its own block for `name`); unknown names raise `AttributeError`,
    values the option does not take `ValueError` (a backend that fails to
    load, `RuntimeError`)."""
    self._check_name(name)
    _check_value(name, value)
    self._values[name] = value
    self.changed()

  def changed(self):
    """Notes a change of the global values, or of anything else that what
    was cached under them depends on (a backend registered again, the
    caches cleared): `generation` will differ."""
    self._generation += 1

  def generation(self):
    """A number that stays the same while no global value changes
    (`changed`), for a cache of the results of the current settings; None
    inside a context manager's block (the thread's own values)."""
    return None if _context.values else self._generation

  def read(self, name):
    """The value of option `name` in the current thread."""
    self._check_name(name)
    return getattr(self, name)

  def __getattr__(self, name):  # only reached for names that are not options
    raise AttributeError(f"Unrecognized config option: {name}")

  @contextlib.contextmanager
  def option(self, name, value):
    """Context manager that sets `name` to `value` in the current thread
    until the block exits, then restores the thread's previous value."""
    self._check_name(name)
    _check_value(name, value)
    local = _context.values  # the entering thread's
    outer = local.get(name, _UNSET)
    local[name] = value
    try:
      yield
    finally:
      if outer is _UNSET:
        del local[name]
      else:
        local[name] = outer

  @property
  def checking_floats(self):
    """Whether `jax_debug_nans` or `jax_debug_infs` is on in the current thread."""
    local, values = _context.values, self._values
    return (local.get("jax_debug_nans", values["jax_debug_nans"])
            or local.get("jax_debug_infs", values["jax_debug_infs"]))

  def trace_state(self):
    """The current thread's values of the options that change what tracing
    produces or whether it runs (part of jit's cache key), and of the user
    contexts (`make_user_context`)."""
    local = _context.values
    values = {**self._values, **local} if local else self._values
    state = _trace_options(values)
    return state + tuple(values[c] for c in _USER_CONTEXTS) if _USER_CONTEXTS else state


_UNSET = object()
_trace_options = operator.itemgetter(
    "jax_enable_x64", "jax_numpy_rank_promotion", "jax_threefry_partitionable",
    "jax_default_prng_impl", "jax_enable_custom_prng", "jax_legacy_prng_key",
    "jax_high_dynamic_range_gumbel", "jax_numpy_dtype_promotion", "jax_default_matmul_precision",
    "jax_no_execution", "jax_allow_f16_reductions")


MATMUL_PRECISIONS = (
    None, "default", "high", "highest", "bfloat16", "tensorfloat32", "float32",
    "ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM", "ANY_F8_ANY_F8_ANY",
    "ANY_F8_ANY_F8_ANY_FAST_ACCUM", "F16_F16_F16", "F16_F16_F32", "BF16_BF16_BF16",
    "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6", "BF16_BF16_F32_X9",
    "TF32_TF32_F32", "TF32_TF32_F32_X3", "F32_F32_F32", "F64_F64_F64")
"""The values of `jax_default_matmul_precision`: None (each operation's own
`precision`), JAX's precision names, and the names of `lax.DotAlgorithmPreset`."""

TRANSFER_GUARD_LEVELS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")


def _check_backend(name):
  """A backend must be registered, or declared by an installed distribution
  and then loaded now (refimpl/backends.py)."""
  from refimpl import backends  # it imports the core, which imports this module
  backends.get_backend(name)


def _one_of(name, choices):
  def check(value):
    if value not in choices:
      raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")
  return check


_VALUE_CHECKS = {  # option -> raises for a value it does not take
    "backend": _check_backend,
    "jax_numpy_rank_promotion": _one_of("jax_numpy_rank_promotion", ("allow", "warn", "raise")),
    "jax_legacy_prng_key": _one_of("jax_legacy_prng_key", ("allow", "warn", "error")),
    "jax_numpy_dtype_promotion": _one_of("jax_numpy_dtype_promotion", ("standard", "strict")),
    "jax_default_matmul_precision": _one_of("jax_default_matmul_precision", MATMUL_PRECISIONS),
    "jax_transfer_guard": _one_of("jax_transfer_guard", TRANSFER_GUARD_LEVELS),
    **{f"jax_transfer_guard_{direction}": _one_of(f"jax_transfer_guard_{direction}",
                                                  (None, *TRANSFER_GUARD_LEVELS))
       for direction in ("host_to_device", "device_to_host", "device_to_device")},
    "jax_array_garbage_collection_guard": _one_of("jax_array_garbage_collection_guard",
                                                  (None, "allow", "log", "fatal")),
}


class _NoDefault:
  """The default of the context managers of options that have no default
  value to set (JAX's `config.NoDefault`): calling one without a value raises."""

  def __repr__(self):
    return "<no default>"


_NO_DEFAULT = _NoDefault()


def _check_value(name, value):
  if value is _NO_DEFAULT:
    raise TypeError(f"Context manager for {name} config option requires an argument "
                    "representing the new value for the config option.")
  check = _VALUE_CHECKS.get(name)
  if check is not None:
    check(value)


def _option_property(name):
  """`config.<name>`: this thread's innermost block's value, else the global
  one (two dict lookups: options are read on every operation)."""
  def value(self):
    local = _context.values
    return local[name] if name in local else self._values[name]
  return property(value)


config = Config()
for _name in config._values:
  setattr(Config, _name, _option_property(_name))
del _name


def enable_x64(new_val=True):
  """Context manager enabling (or disabling) 64-bit types within a block."""
  return config.option("jax_enable_x64", new_val)


def debug_nans(new_val=True):
  """Context manager enabling (or disabling) NaN checking within a block."""
  return config.option("jax_debug_nans", new_val)


def debug_infs(new_val=True):
  """Context manager enabling (or disabling) inf checking within a block."""
  return config.option("jax_debug_infs", new_val)


def enable_checks(new_val=True):
  """Context manager turning on internal checks within a block: jit type-checks
  each jaxpr before a backend compiles it (`refimpl.jaxpr.check_jaxpr`)."""
  return config.option("jax_enable_checks", new_val)


def log_compiles(new_val=True):
  """Context manager under which jit logs each program it has a backend compile
  (a WARNING of logger `refimpl`, as JAX logs its compilations)."""
  return config.option("jax_log_compiles", new_val)


def numpy_rank_promotion(new_val=_NO_DEFAULT):
  """Context manager: 'allow' (NumPy's rank promotion), 'warn' or 'raise'."""
  _check_value("jax_numpy_rank_promotion", new_val)   # now, not when the block is entered
  return config.option("jax_numpy_rank_promotion", new_val)


def threefry_partitionable(new_val=True):
  """Context manager selecting the partitionable (default) or legacy threefry mode."""
  return config.option("jax_threefry_partitionable", new_val)


def default_prng_impl(new_val=_NO_DEFAULT):
  """Context manager naming the PRNG implementation of new keys
  ('threefry2x32', the only one refimpl has)."""
  _check_value("jax_default_prng_impl", new_val)
  return config.option("jax_default_prng_impl", new_val)


def enable_custom_prng(new_val=True):
  """Context manager under which `random.PRNGKey`, and every key function
  given raw keys, return typed keys (and raw keys passed to jax.random warn
  FutureWarning)."""
  return config.option("jax_enable_custom_prng", new_val)


def legacy_prng_key(new_val=_NO_DEFAULT):
  """Context manager: what raw uint32 keys passed to jax.random do: 'allow'
  (the default), 'warn' (UserWarning) or 'error' (ValueError)."""
  _check_value("jax_legacy_prng_key", new_val)
  return config.option("jax_legacy_prng_key", new_val)


def default_device(new_val=_NO_DEFAULT):
  """Context manager naming the default device (refimpl has a single CPU device)."""
  _check_value("jax_default_device", new_val)
  return config.option("jax_default_device", new_val)


def disable_jit(disable=True):
  """Context manager under which `jit` runs functions op by op."""
  return config.option("jax_disable_jit", disable)


def numpy_dtype_promotion(new_val=_NO_DEFAULT):
  """Context manager: 'standard' (JAX's promotion lattice) or 'strict', under
  which arrays of different dtypes do not promote implicitly (only Python
  scalars and weakly typed values adapt to the other operand's type; anything
  else raises `dtypes.TypePromotionError`, asking for an explicit cast)."""
  _check_value("jax_numpy_dtype_promotion", new_val)
  return config.option("jax_numpy_dtype_promotion", new_val)


def default_matmul_precision(new_val=_NO_DEFAULT):
  """Context manager naming the precision of matrix products whose `precision`
  is None (one of `MATMUL_PRECISIONS`). It selects XLA's algorithm on an
  accelerator; refimpl computes every product in its operands' dtype (with
  its `preferred_element_type`) whatever the precision, so it has no effect
  on the values."""
  _check_value("jax_default_matmul_precision", new_val)
  return config.option("jax_default_matmul_precision", new_val)


def check_tracer_leaks(new_val=True):
  """Context manager under which a tracer that outlives the jaxpr tracing that
  created it (`jit`, `make_jaxpr`, the control-flow primitives' bodies),
  being stored in a global or a closure, raises `Exception("Leaked trace
  ...")` when that tracing ends, naming the leaked tracers (checked with the
  garbage collector: slow). Without it, a leaked tracer raises
  `UnexpectedTracerError` only when it is used."""
  return config.option("jax_check_tracer_leaks", new_val)


def checking_leaks():
  """`check_tracer_leaks(True)`."""
  return check_tracer_leaks(True)


def explain_cache_misses(new_val=True):
  """Context manager under which `jit` logs, as a WARNING of logger `refimpl`,
  why each call that traces its function missed the cache of traces: the
  function never traced, or how the call differs from the closest earlier
  one (static arguments, argument structure, argument types, settings)."""
  return config.option("jax_explain_cache_misses", new_val)


def no_tracing(new_val=True):
  """Context manager under which a `jit` call that must trace its function
  (a cache miss) raises `RuntimeError` instead."""
  return config.option("jax_no_tracing", new_val)


def no_execution(new_val=True):
  """Context manager under which running any computation (an eager operation,
  a jitted program) raises `RuntimeError`; tracing still works."""
  return config.option("jax_no_execution", new_val)


def thread_guard(new_val=True):
  """Context manager that in JAX makes multi-process operations launched from
  another thread than the guard's raise. refimpl runs one process, where JAX's
  guard checks nothing either: the option is kept and has no effect."""
  return config.option("jax_thread_guard", new_val)


def allow_f16_reductions(new_val=True):
  """Context manager: with False, `lax.reduce_sum` (and the sums built on it)
  of float16 or bfloat16 operands raises `ValueError`."""
  return config.option("jax_allow_f16_reductions", new_val)


def array_garbage_collection_guard(new_val=_NO_DEFAULT):
  """Context manager: 'allow', 'log' or 'fatal', what JAX does when the cyclic
  garbage collector (rather than reference counting) frees an Array's device
  memory. refimpl's Arrays hold host NumPy memory, freed alike either way: the
  option is kept and has no effect."""
  _check_value("jax_array_garbage_collection_guard", new_val)
  return config.option("jax_array_garbage_collection_guard", new_val)


def jax2tf_associative_scan_reductions(new_val=True):
  """Context manager selecting how jax2tf converts the cumulative reductions;
  refimpl has no jax2tf and computes them one way: no effect."""
  return config.option("jax2tf_associative_scan_reductions", new_val)


def _transfer_guard_option(direction):
  name = f"jax_transfer_guard_{direction}"

  def guard(new_val=_NO_DEFAULT):
    _check_value(name, new_val)
    return config.option(name, new_val)
  guard.__name__ = guard.__qualname__ = f"transfer_guard_{direction}"
  guard.__doc__ = ("Context manager setting the transfer guard level of "
                   f"{direction.replace('_', '-')}"
                   " transfers alone (see `transfer_guard`).")
  return guard


transfer_guard_host_to_device = _transfer_guard_option("host_to_device")
transfer_guard_device_to_host = _transfer_guard_option("device_to_host")
transfer_guard_device_to_device = _transfer_guard_option("device_to_device")


@contextlib.contextmanager
def transfer_guard(new_val):
  """Context manager setting the guard level of every transfer direction:
  'allow'; 'log' (log implicit transfers) or 'disallow' (raise `RuntimeError`
  on them), explicit ones (`device_put`, `device_get`) allowed; 'log_explicit'
  or 'disallow_explicit' (all transfers). refimpl's transfers are those of a
  device backend's buffers (docs/backends.md): NumPy data put on a device,
  and a device buffer read on the host; the reference backend's arrays are on
  the host and never transfer."""
  _check_value("jax_transfer_guard", new_val)
  with contextlib.ExitStack() as stack:
    for guard in (transfer_guard_host_to_device, transfer_guard_device_to_host,
                  transfer_guard_device_to_device):
      stack.enter_context(guard(new_val))
    stack.enter_context(config.option("jax_transfer_guard", new_val))
    yield


def transfer_guard_level(direction):
  """This thread's guard level of `direction` ('host_to_device', ...): its own
  option, else `jax_transfer_guard`."""
  level = config.read(f"jax_transfer_guard_{direction}")
  return config.jax_transfer_guard if level is None else level


def check_transfer(direction, aval, explicit=False):
  """What the transfer guard does with a transfer of a value of `aval` in
  `direction` ('host_to_device', 'device_to_host', 'device_to_device'),
  explicit (`device_put`, `device_get`) or implicit: nothing, log it (a
  WARNING of logger `refimpl`), or raise `RuntimeError`."""
  level = transfer_guard_level(direction)
  if level == "allow" or (explicit and level in ("log", "disallow")):
    return
  what = f"{'explicit ' if explicit else ''}{direction.replace('_', '-')} transfer"
  if level.startswith("log"):
    logging.getLogger("refimpl").warning("%s: aval=%s", what, aval.str_short())
  else:
    raise RuntimeError(f"Disallowed {what}: aval={aval.str_short()}")


def make_user_context(default_value=None):
  """A new user configuration state: an object whose `value` is this thread's
  value (the innermost `with state(v):` block's, else the global one,
  `default_value` until `state.set_global(v)`). As in JAX, it takes part in
  jit's cache key, so a traced function reading it is traced anew when it
  changes."""
  return UserContext(default_value)


class UserContext:
  """A configuration state made by `make_user_context`: call it with a value
  for a block (`with state(v):`), read `state.value`."""

  def __init__(self, default_value):
    config._values[self] = default_value   # an option of its own, keyed by this object
    _USER_CONTEXTS.append(self)

  @property
  def value(self):
    """This thread's value: its innermost block's, else the global one."""
    local = _context.values
    return local[self] if self in local else config._values[self]

  def set_global(self, value):
    """Sets the value seen outside every block, by every thread."""
    config.update(self, value)

  def get_global(self):
    return config._values[self]

  def __call__(self, new_value):
    return config.option(self, new_value)


_USER_CONTEXTS = []
