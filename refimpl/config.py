"""Global configuration: `refimpl.config.update(name, value)`.

Options mirror JAX's names. Each may also be set from the environment when the
package is imported (``JAX_ENABLE_X64=1``, ``JAX_DEBUG_NANS=1``,
``JAX_DISABLE_JIT=1``, ``REFIMPL_BACKEND=name``).
"""

import contextlib
import os


def _env_flag(name):
  return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


class Config:
  """Holds option values; read them as attributes (`config.jax_enable_x64`)."""

  def __init__(self):
    self._values = {
        "jax_enable_x64": _env_flag("JAX_ENABLE_X64"),
        "jax_debug_nans": _env_flag("JAX_DEBUG_NANS"),
        "jax_debug_infs": _env_flag("JAX_DEBUG_INFS"),
        "jax_numpy_rank_promotion": os.environ.get("JAX_NUMPY_RANK_PROMOTION", "allow"),
        "jax_default_device": None,
        "jax_enable_compile_time_eval": False,
        "jax_disable_jit": _env_flag("JAX_DISABLE_JIT"),
        "jax_threefry_partitionable": True,
        "jax_default_prng_impl": "threefry2x32",
        "jax_enable_custom_prng": False,
        "jax_legacy_prng_key": "allow",
        "jax_high_dynamic_range_gumbel": False,
        "backend": os.environ.get("REFIMPL_BACKEND", "reference"),
    }

  def update(self, name, value):
    """Sets option `name` to `value`; unknown names raise `AttributeError`."""
    if name not in self._values:
      raise AttributeError(f"Unrecognized config option: {name}")
    self._values[name] = value

  def read(self, name):
    return self._values[name]

  def __getattr__(self, name):
    try:
      return self.__dict__["_values"][name]
    except KeyError:
      raise AttributeError(f"Unrecognized config option: {name}") from None

  @contextlib.contextmanager
  def option(self, name, value):
    """Context manager that sets `name` to `value` and restores it on exit."""
    old = self.read(name)
    self.update(name, value)
    try:
      yield
    finally:
      self.update(name, old)

  def trace_state(self):
    """The options that change what tracing produces (part of jit's cache key)."""
    return (self._values["jax_enable_x64"],
            self._values["jax_threefry_partitionable"],
            self._values["jax_default_prng_impl"],
            self._values["jax_enable_custom_prng"],
            self._values["jax_legacy_prng_key"],
            self._values["jax_high_dynamic_range_gumbel"])


config = Config()


def enable_x64(new_val=True):
  """Context manager enabling (or disabling) 64-bit types within a block."""
  return config.option("jax_enable_x64", new_val)


def debug_nans(new_val=True):
  """Context manager enabling (or disabling) NaN checking within a block."""
  return config.option("jax_debug_nans", new_val)


def debug_infs(new_val=True):
  """Context manager enabling (or disabling) inf checking within a block."""
  return config.option("jax_debug_infs", new_val)


def numpy_rank_promotion(new_val):
  """Context manager: 'allow' (NumPy's rank promotion), 'warn' or 'raise'."""
  if new_val not in ("allow", "warn", "raise"):
    raise ValueError(f"jax_numpy_rank_promotion must be 'allow', 'warn' or 'raise', got {new_val!r}")
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
  if new_val not in ("allow", "warn", "error"):
    raise ValueError(f"jax_legacy_prng_key must be 'allow', 'warn' or 'error', got {new_val!r}")
  return config.option("jax_legacy_prng_key", new_val)


def default_device(new_val):
  """Context manager naming the default device (refimpl has a single CPU device)."""
  return config.option("jax_default_device", new_val)


def disable_jit(disable=True):
  """Context manager under which `jit` runs functions op by op."""
  return config.option("jax_disable_jit", disable)
