"""The scalar functions of the numba-cuda programs: numba_backend.scalars's,
with `fma` a Numba function rather than an intrinsic, so that kernels call it
in numba's CUDA simulator too (which runs their Python), as they call the
others; and the float64 functions of the elementwise rules (`np.exp` is
`S.exp` here: kernels cannot call NumPy's ufuncs)."""

import math

import numba

from numba_backend.scalars import *  # noqa: F401,F403 (the programs name them as S.<name>)
from numba_backend.scalars import fma as _fma, scalar_jit


@scalar_jit
def fma(a, b, c):
  """a * b + c rounded once."""
  return _fma(a, b, c)


def _libm(function):
  """The float64 function `function` of Python's math module as a Numba
  function: libdevice's on the device, libm's in the simulator (where
  NumPy's ufuncs, which kernels cannot call, would serve)."""
  def libm(x):
    return function(x)
  return numba.njit(error_model="numpy")(libm)


exp, expm1, log, log1p = _libm(math.exp), _libm(math.expm1), _libm(math.log), _libm(math.log1p)
tanh, sin, cos, tan = _libm(math.tanh), _libm(math.sin), _libm(math.cos), _libm(math.tan)
arcsin, arccos, arctan = _libm(math.asin), _libm(math.acos), _libm(math.atan)
sinh, cosh, arcsinh = _libm(math.sinh), _libm(math.cosh), _libm(math.asinh)
arccosh, arctanh = _libm(math.acosh), _libm(math.atanh)
cbrt, exp2 = _libm(math.cbrt), _libm(math.exp2)
