"""Where JAX deliberately differs from NumPy: the one table of divergences.

Each entry says what JAX does and gives a function computing JAX's expected
result (with NumPy, on the same inputs as the case that names it). The
conformance cases use these instead of NumPy's result; docs/divergences.md
is generated from this table.
"""

import dataclasses
from typing import Callable

import numpy as np

from refimpl import dtypes

__all__ = ["Divergence", "DIVERGENCES"]


@dataclasses.dataclass(frozen=True)
class Divergence:
  summary: str       # what JAX does, and how NumPy differs
  expected: Callable  # JAX's result, computed with NumPy


def _saturating_cast(x, dtype):
  """Float to integer as XLA on CPU: truncate, saturate, NaN to 0."""
  dtype = np.dtype(dtype)
  x = np.asarray(x)
  if not dtypes.is_inexact(x.dtype) or not dtypes.is_integer(dtype):
    return x.astype(dtype)
  info = np.iinfo(dtype)
  truncated = np.trunc(np.nan_to_num(x.real.astype(np.float64), nan=0.0))
  return np.clip(truncated, info.min, info.max).astype(dtype)


def _nanarg(np_fn):
  def expected(a, axis=None, keepdims=False):
    a = np.asarray(a)
    all_nan = np.all(np.isnan(a), axis=axis, keepdims=keepdims)
    filled = np.where(np.isnan(a), -np.inf if np_fn is np.argmax else np.inf, a)
    index = np_fn(filled, axis=axis, keepdims=keepdims) if a.size else np.zeros(all_nan.shape)
    return np.where(all_nan, -1, index).astype(np.int32)
  return expected


DIVERGENCES = {
    "float_to_int_cast_saturates": Divergence(
        "Casting floats to integers truncates toward zero and saturates at the "
        "integer type's limits, with NaN becoming 0 (XLA on CPU); NumPy's result "
        "is undefined and in practice wraps.",
        _saturating_cast),
    "nanargmin_all_nan_is_minus_one": Divergence(
        "jnp.nanargmin on an all-NaN slice returns -1; NumPy raises ValueError.",
        _nanarg(np.argmin)),
    "nanargmax_all_nan_is_minus_one": Divergence(
        "jnp.nanargmax on an all-NaN slice returns -1; NumPy raises ValueError.",
        _nanarg(np.argmax)),
}
