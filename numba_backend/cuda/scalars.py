"""The scalar functions of the numba-cuda programs: numba_backend.scalars's,
with `fma` a Numba function rather than an intrinsic, so that kernels call it
in numba's CUDA simulator too (which runs their Python), as they call the
others."""

from numba_backend.scalars import *  # noqa: F401,F403 (the programs name them as S.<name>)
from numba_backend.scalars import fma as _fma, scalar_jit


@scalar_jit
def fma(a, b, c):
  """a * b + c rounded once."""
  return _fma(a, b, c)

