"""The Python array API's entry points (version 2024.12): arrays' namespace
is jnp, and jnp.__array_namespace_info__() answers as JAX's does."""

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp

_STANDARD = {"bool": ["bool"], "signed integer": ["int8", "int16", "int32"],
             "unsigned integer": ["uint8", "uint16", "uint32"], "real floating": ["float32"],
             "complex floating": ["complex64"]}
_WIDE = {"signed integer": ["int64"], "unsigned integer": ["uint64"],
         "real floating": ["float64"], "complex floating": ["complex128"]}


def _names(kind, x64):
  if kind == "integral":
    return _names("signed integer", x64) + _names("unsigned integer", x64)
  if kind == "numeric":
    return sum((_names(k, x64) for k in ("integral", "real floating", "complex floating")), [])
  return _STANDARD[kind] + (_WIDE.get(kind, []) if x64 else [])


def test_arrays_and_tracers_give_jnp_as_their_namespace():
  x = jnp.arange(3)
  assert x.__array_namespace__() is jnp and x.__array_namespace__(api_version="2024.12") is jnp
  seen = []
  jax.jit(lambda x: seen.append(x.__array_namespace__()) or x)(x)
  assert seen == [jnp]
  assert jnp.__array_api_version__ == "2024.12"
  with pytest.raises(ValueError, match=r"api_version='2021.12' is not available; available "
                                       r"versions are: \['2024.12'\]"):
    x.__array_namespace__(api_version="2021.12")


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("kind", [None, "bool", "signed integer", "unsigned integer",
                                  "real floating", "complex floating", "integral", "numeric",
                                  ("real floating", "complex floating"), ("integral", "bool")])
def test_inspection_dtypes_follow_x64(kind, x64):
  with jax.enable_x64(x64):
    info = jnp.__array_namespace_info__()
    kinds = ("numeric", "bool") if kind is None else kind if isinstance(kind, tuple) else (kind,)
    expected = {n: np.dtype(n) for k in kinds for n in _names(k, x64)}
    assert info.dtypes(kind=kind) == expected
    defaults = info.default_dtypes()
    wide = "64" if x64 else "32"
    assert defaults == {"real floating": np.dtype(f"float{wide}"),
                        "complex floating": np.dtype(f"complex{2 * int(wide)}"),
                        "integral": np.dtype(f"int{wide}"), "indexing": np.dtype(f"int{wide}")}


def test_inspection_capabilities_and_devices():
  info = jnp.__array_namespace_info__()
  assert info.capabilities() == {"boolean indexing": False, "data-dependent shapes": False,
                                 "max dimensions": 64}
  assert info.default_device() is None
  assert None in info.devices() and set(jax.devices()) <= set(info.devices())
  with pytest.raises(ValueError, match="kind must be one of"):
    info.dtypes(kind="floating")
