"""`refimpl.lax`: the primitives' user-facing functions, as `jax.lax`.

Each module lists its public functions in `__all__`; `lax.linalg` is a
submodule, as in JAX.
"""

from refimpl.lax.elementwise import *  # noqa: F401,F403
from refimpl.lax.special import *  # noqa: F401,F403
from refimpl.lax.reductions import *  # noqa: F401,F403
from refimpl.lax.shapes import *  # noqa: F401,F403
from refimpl.lax.indexing import *  # noqa: F401,F403
from refimpl.lax.linalg import *  # noqa: F401,F403
from refimpl.lax.sorting import *  # noqa: F401,F403
from refimpl.lax.windows import *  # noqa: F401,F403
from refimpl.lax.convolution import *  # noqa: F401,F403
from refimpl.lax.fft import *  # noqa: F401,F403
from refimpl.lax.ad_util import *  # noqa: F401,F403
from refimpl.lax.parallel import *  # noqa: F401,F403
from refimpl.lax.control_flow import *  # noqa: F401,F403
from refimpl.lax.ragged import *  # noqa: F401,F403
from refimpl.lax.scaled_dot import *  # noqa: F401,F403
from refimpl.lax.staging import *  # noqa: F401,F403
from refimpl.lax import linalg  # noqa: F401
