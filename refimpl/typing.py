"""`jax.typing`: the annotations of JAX's public API.

`ArrayLike`: what functions taking arrays accept (Arrays, NumPy arrays and
scalars, Python scalars); `DTypeLike`: what they accept as a dtype (NumPy
dtypes and scalar types, their names, Python's scalar types, objects with a
`dtype`). Both are for annotations and static checkers, as in JAX; use
`isinstance(x, refimpl.Array)` to test for an array at run time.
"""

from typing import Any, Protocol, Union

import numpy as np

from refimpl.array import Array

__all__ = ["ArrayLike", "DTypeLike"]


class _SupportsDType(Protocol):
  @property
  def dtype(self) -> np.dtype: ...


ArrayLike = Union[Array, np.ndarray, np.bool_, np.number, bool, int, float, complex]
DTypeLike = Union[str, type[Any], np.dtype, _SupportsDType]
