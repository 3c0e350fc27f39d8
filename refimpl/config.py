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
    produces (part of jit's cache key)."""
    local = _context.values
    return _trace_options({**self._values, **local} if local else self._values)


_UNSET = object()
_trace_options = operator.itemgetter(
    "jax_enable_x64", "jax_numpy_rank_promotion", "jax_threefry_partitionable",
    "jax_default_prng_impl", "jax_enable_custom_prng", "jax_legacy_prng_key",
    "jax_high_dynamic_range_gumbel")


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
}


def _check_value(name, value):
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


def numpy_rank_promotion(new_val):
  """Context manager: 'allow' (NumPy's rank promotion), 'warn' or 'raise'."""
  _check_value("jax_numpy_rank_promotion", new_val)   # now, not when the block is entered
  return config.option("jax_numpy_rank_promotion", new_val)


def threefry_partitionable(new_val=True):
  """Context manager selecting the partitionable (default) or legacy threefry mode."""
  return config.option("jax_threefry_partitionable", new_val)


def default_prng_impl(new_val):
  """Context manager naming the PRNG implementation of new keys
  ('threefry2x32', the only one refimpl has)."""
  return config.option("jax_default_prng_impl", new_val)


def enable_custom_prng(new_val=True):
  """Context manager under which `random.PRNGKey`, and every key function
  given raw keys, return typed keys (and raw keys passed to jax.random warn
  FutureWarning)."""
  return config.option("jax_enable_custom_prng", new_val)


def legacy_prng_key(new_val):
  """Context manager: what raw uint32 keys passed to jax.random do: 'allow'
  (the default), 'warn' (UserWarning) or 'error' (ValueError)."""
  _check_value("jax_legacy_prng_key", new_val)
  return config.option("jax_legacy_prng_key", new_val)


def default_device(new_val):
  """Context manager naming the default device (refimpl has a single CPU device)."""
  return config.option("jax_default_device", new_val)


def disable_jit(disable=True):
  """Context manager under which `jit` runs functions op by op."""
  return config.option("jax_disable_jit", disable)
