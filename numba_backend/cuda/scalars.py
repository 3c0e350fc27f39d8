"""The scalar functions of the numba-cuda programs: numba_backend.scalars's,
with `fma` a Numba function rather than an intrinsic, so that kernels call it
in numba's CUDA simulator too (which runs their Python), as they call the
others; in the simulator, those whose Python results a kernel's Python would
handle otherwise than compiled code, typed (`_typed`)."""

import numpy as np
from numba import config

from numba_backend import scalars
from numba_backend.scalars import *  # noqa: F401,F403 (the programs name them as S.<name>)
from numba_backend.scalars import fma as _fma, scalar_jit


@scalar_jit
def fma(a, b, c):
  """a * b + c rounded once."""
  return _fma(a, b, c)


def _typed(fn, result):
  """`fn` (a Numba function), its Python scalar results as NumPy's `result` type."""
  def typed(*args):
    return result(fn(*args))
  typed.__name__, typed.__doc__ = fn.__name__, fn.__doc__
  return typed


if config.ENABLE_CUDASIM:
  # The simulator runs the kernels' Python, calling Numba's CPU functions,
  # which return their results as Python scalars: a caller's cast of a 64-bit
  # integer to a narrower one would raise where the compiled cast keeps the
  # low bits, and a division of two Python floats by zero would raise where
  # compiled code gives an infinity or NaN.
  shift_left = _typed(scalars.shift_left, np.uint64)
  shift_right_logical = _typed(scalars.shift_right_logical, np.uint64)
  shift_right_arithmetic = _typed(scalars.shift_right_arithmetic, np.int64)
  f16_value = _typed(scalars.f16_value, np.float32)
  bf16_value = _typed(scalars.bf16_value, np.float32)
  round_f16 = _typed(scalars.round_f16, np.float32)
  round_bf16 = _typed(scalars.round_bf16, np.float32)
