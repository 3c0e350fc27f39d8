"""Structured control flow: `cond`/`switch`, `while_loop`, `scan`,
`fori_loop`, `map`, `associative_scan`, `custom_linear_solve` and
`custom_root`, primitives holding their sub-programs as jaxprs (see
common.py), with rules for every transformation."""

from refimpl.lax.control_flow.conditionals import *  # noqa: F401,F403
from refimpl.lax.control_flow.while_loop import *  # noqa: F401,F403
from refimpl.lax.control_flow.loops import *  # noqa: F401,F403
from refimpl.lax.control_flow.solves import *  # noqa: F401,F403
