"""The Python array API standard's entry points of `jnp` (version 2024.12):
`jnp.__array_api_version__`, `Array.__array_namespace__()` (which is `jnp`)
and `jnp.__array_namespace_info__()`, whose answers are JAX's: no boolean
indexing and no data-dependent shapes (outputs' shapes depend on input
shapes only), at most 64 dimensions, no default device (arrays go where the
backend puts them), and the standard's dtypes that the x64 setting allows.
"""

import numpy as np

from refimpl import dtypes
from refimpl.config import config

__array_api_version__ = "2024.12"

_KINDS = {
    "bool": ("bool",),
    "signed integer": ("int8", "int16", "int32", "int64"),
    "unsigned integer": ("uint8", "uint16", "uint32", "uint64"),
    "real floating": ("float32", "float64"),
    "complex floating": ("complex64", "complex128"),
}
_KINDS["integral"] = _KINDS["signed integer"] + _KINDS["unsigned integer"]
_KINDS["numeric"] = _KINDS["integral"] + _KINDS["real floating"] + _KINDS["complex floating"]
_X64_ONLY = frozenset({"int64", "uint64", "float64", "complex128"})


def array_namespace(api_version=None):
  """`Array.__array_namespace__`: the `refimpl.numpy` module."""
  if api_version is not None and api_version != __array_api_version__:
    raise ValueError(f"api_version={api_version!r} is not available; available versions "
                     f"are: {[__array_api_version__]}")
  import refimpl.numpy
  return refimpl.numpy


class ArrayNamespaceInfo:
  """`jnp.__array_namespace_info__()`: the standard's inspection functions."""

  def capabilities(self):
    return {"boolean indexing": False, "data-dependent shapes": False, "max dimensions": 64}

  def default_device(self):
    """None: arrays are not committed to a device unless placed (as in JAX)."""
    return None

  def devices(self):
    """None (no device chosen) and the devices of refimpl.devices()."""
    from refimpl.api import devices
    return [None, *devices()]

  def default_dtypes(self, *, device=None):
    """The default real, complex, integral and indexing dtypes (x64's or not)."""
    return {"real floating": dtypes.default_float_dtype(),
            "complex floating": dtypes.default_complex_dtype(),
            "integral": dtypes.default_int_dtype(), "indexing": dtypes.default_int_dtype()}

  def dtypes(self, *, device=None, kind=None):
    """{name: dtype} of the standard's dtypes of `kind` (a kind's name, a tuple
    of them, or None: numeric and bool), the 64-bit ones with x64 only."""
    kinds = ("numeric", "bool") if kind is None else kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
      if k not in _KINDS:
        raise ValueError(f"kind must be one of {sorted(_KINDS)} or a tuple of them, got {k!r}")
    return {name: np.dtype(name) for k in kinds for name in _KINDS[k]
            if config.jax_enable_x64 or name not in _X64_ONLY}


def __array_namespace_info__():
  return ArrayNamespaceInfo()
