"""refimpl's `numba-cuda` backend: jaxprs compiled to CUDA kernels by numba-cuda.

Importing this package imports numba.cuda (seconds) and registers the
backend; refimpl loads it only when it is selected (its entry point), so the
`numba` backend never pays for it. With `NUMBA_ENABLE_CUDASIM=1` the kernels
run in numba's CUDA simulator. See docs/backends.md for what it lowers.
"""

from refimpl.backends import register_backend
from numba_backend.cuda.backend import compile
from numba_backend.cuda.device import devices

register_backend("numba-cuda", compile, devices)
