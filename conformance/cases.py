"""Property cases: each function of the API checked on generated inputs.

A `Case` names a refimpl function, a hypothesis strategy for its inputs and
the NumPy function it must agree with. Two checks run a case:

* `check_against_numpy`: the reference implementation (eager) against NumPy,
  within the per-dtype tolerances of `conformance.strategies.TOLERANCES`.
  Where JAX deliberately differs from NumPy, the case names an entry of
  `conformance.divergences.DIVERGENCES`, whose function gives the expected
  result instead of NumPy.
* `check_backend`: a jit backend against the reference implementation, on the
  same inputs. Integer and boolean results must match exactly.

Cases live in `conformance/families/<family>.py`, one module per family of
primitives, each exporting `CASES`; `all_cases()` collects them (`family_names()`
lists the families).
"""

import collections
import contextlib
import dataclasses
import importlib
import pkgutil
import warnings
from typing import Callable

import numpy as np

import refimpl
from refimpl import dtypes
from refimpl.jaxpr import subjaxprs
from conformance.divergences import DIVERGENCES
from conformance.strategies import TOLERANCES, assert_close

__all__ = ["Case", "all_cases", "family_names", "family_module", "check_against_numpy",
           "check_backend", "compare_outputs", "program_primitives", "run_jitted",
           "OBSERVED_PRIMITIVES"]


@dataclasses.dataclass(frozen=True)
class Case:
  """One function checked on generated inputs.

  `inputs()` returns a strategy of `(args, kwargs)`: args are NumPy arrays or
  scalars (traced under jit), kwargs are static Python values. `numpy_fn` is
  called the same way; None means the case only checks backends against the
  reference. `divergence` names the DIVERGENCES entry that
  gives the expected result where JAX and NumPy differ. `rtol`/`atol`
  override the dtype's tolerance for functions that amplify rounding.
  `any_order`: the function sums in an order the reference leaves
  unspecified (the products), so where a sum overflows, whether it gives
  an infinity, a NaN or a value near the largest finite one depends on the
  order: two results agree at an element where both overflowed.
  """

  name: str
  fn: Callable
  inputs: Callable
  numpy_fn: Callable | None = None
  divergence: str | None = None
  rtol: float | None = None
  atol: float | None = None
  any_order: bool = False


def _leaves(x):
  return refimpl.tree_util.tree_leaves(x)


def compare_outputs(actual, expected, case, dtype_of=None, rtol_scale=1):
  actual_leaves, expected_leaves = _leaves(actual), _leaves(expected)
  assert len(actual_leaves) == len(expected_leaves), \
      f"{case.name}: {len(actual_leaves)} outputs, expected {len(expected_leaves)}"
  for a, e in zip(actual_leaves, expected_leaves):
    a = np.asarray(a)
    e = np.asarray(e)
    assert a.shape == e.shape, f"{case.name}: shape {a.shape}, expected {e.shape}"
    dtype = np.dtype(dtype_of or a.dtype)
    rtol = case.rtol if case.rtol is not None else TOLERANCES.get(dtype, (None,))[0]
    if case.any_order and dtypes.is_inexact(a.dtype) and dtypes.is_inexact(e.dtype):
      both = _overflowed(a) & _overflowed(e)
      a, e = np.where(both, 0, a).astype(a.dtype), np.where(both, 0, e).astype(e.dtype)
    assert_close(a, e, dtype=dtype, rtol=None if rtol is None else rtol * rtol_scale,
                 atol=case.atol)


def _overflowed(x):
  """Where the float or complex array x holds an infinity, a NaN or a part
  beyond a quarter of its dtype's largest finite value."""
  limit = float(dtypes.finfo(x.dtype).max) / 4
  parts = [x.real, x.imag] if dtypes.is_complex(x.dtype) else [x]
  return np.logical_or.reduce([~np.isfinite(p) | (np.abs(p.astype(np.float64)) > limit)
                               for p in parts])


@contextlib.contextmanager
def numerical_warnings_ignored():
  """Cases are evaluated at special values (inf, NaN, overflowing and empty
  operands), where NumPy's references warn (RuntimeWarning: overflow, invalid
  value, mean of an empty slice) and casts of complex to real warn as JAX does
  (ComplexWarning, a RuntimeWarning). Those warnings are expected: the checks
  compare the values."""
  with warnings.catch_warnings(), np.errstate(all="ignore"):
    warnings.simplefilter("ignore", RuntimeWarning)
    yield


def check_against_numpy(case, args, kwargs):
  """The reference implementation agrees with NumPy (or the divergence table)."""
  actual = case.fn(*args, **kwargs)
  if case.divergence is not None:
    expected = DIVERGENCES[case.divergence].expected(*args, **kwargs)
  else:
    with np.errstate(all="ignore"):
      expected = case.numpy_fn(*args, **kwargs)
  compare_outputs(actual, expected, case)


CONTRACTION_SLACK = 8
"""How many times the case's relative tolerance a compiled result may differ
from the eager one: a compiled program rounds a fused multiply-add once
(docs/jaxpr.md), and a later operation can amplify that last bit (the exp of
a sum of logs: `jsp.beta`)."""


OBSERVED_PRIMITIVES = collections.defaultdict(set)
"""Case name -> the primitives of the programs jit handed a backend for the
case's checks (their sub-jaxprs' included): what the per-primitive report
counts."""


def program_primitives(jaxpr):
  """The names of the primitives of `jaxpr`'s equations and its sub-jaxprs'."""
  names = {eqn.primitive.name for eqn in jaxpr.eqns}
  for sub in subjaxprs(jaxpr):
    names |= program_primitives(sub)
  return names


def run_jitted(fn, backend, args, case_name):
  """`jit(fn, backend=backend)(*args)`, recording in OBSERVED_PRIMITIVES the
  primitives of the program the backend receives."""
  traced = refimpl.jit(fn, backend=backend).trace(*args)
  OBSERVED_PRIMITIVES[case_name] |= program_primitives(traced.jaxpr.jaxpr) | {"jit"}
  return traced.lower().compile()(*args)


def check_backend(case, backend, args, kwargs):
  """`jit(fn, backend=backend)` agrees with the reference: with the eager
  reference implementation (within CONTRACTION_SLACK times the case's
  relative tolerance) for the reference backend, with the reference
  backend's jit (within the case's tolerance) for any other."""
  fn = lambda *a: case.fn(*a, **kwargs)
  actual = run_jitted(fn, backend, args, case.name)
  if backend == "reference":
    expected, slack = case.fn(*args, **kwargs), CONTRACTION_SLACK
  else:
    expected, slack = refimpl.jit(fn, backend="reference")(*args), 1
  for a, e in zip(_leaves(actual), _leaves(expected)):
    assert a.dtype == e.dtype, f"{case.name}: dtype {a.dtype}, reference gives {e.dtype}"
  compare_outputs(actual, expected, case, rtol_scale=slack)


def family_names():
  """The names of the family modules in `conformance.families`, sorted."""
  import conformance.families as families
  return sorted(info.name for info in pkgutil.iter_modules(families.__path__))


def family_module(name):
  """The module `conformance.families.<name>`."""
  return importlib.import_module(f"conformance.families.{name}")


def all_cases():
  """Every case of every family module in `conformance.families`."""
  return [case for name in family_names() for case in family_module(name).CASES]
