"""zeta and polygamma on the numba-cuda device: the CPU's scalar functions
(numba_backend/rules/special.py) compiled for it, but for the terms that
shift a negative q past zero, which the CPU keeps in an array to sum them
in NumPy's pairwise order (for the reference's bits) and a thread sums as
it computes them, with Neumaier's compensation: within 2 eps of the terms'
exact sum plus n eps² times the sum of their moduli, as close as the
pairwise sum or closer. The powers, and the functions the scalar functions
call, are libdevice's (docs/backends.md)."""

import math

from numba import cuda

from numba_backend.cuda.kernels import device_version
from numba_backend.cuda.lower import DEVICE_FUNCTIONS
from numba_backend.rules import special as cpu


@cuda.jit(device=True)
def _shifted_powers(q, x, shift):
  """The sum of (q + k) ** -x for k < shift, in order, compensated
  (Neumaier's: each addition's rounding error, found exactly, added at the
  end, unless a term overflowed: then the sum of the terms alone)."""
  total, compensation = -0.0, 0.0
  for k in range(shift):
    term = (q + k) ** -x
    added = total + term
    if abs(total) >= abs(term):
      compensation += (total - added) + term
    else:
      compensation += (term - added) + total
    total = added
  return total + compensation if math.isfinite(total) else total


zeta = device_version(cpu.zeta, __name__, _shifted_powers=_shifted_powers)
polygamma = device_version(cpu.polygamma, __name__, zeta=zeta)
DEVICE_FUNCTIONS.update({cpu.zeta: zeta, cpu.polygamma: polygamma})
