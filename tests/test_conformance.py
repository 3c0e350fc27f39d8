"""Runs every conformance case (conformance/families) as a property test:
the reference against NumPy (or the divergence table), and the `reference`
jit backend against eager evaluation.

There are hundreds of cases, so each runs a third of the profile's examples
(10 by default; `HYPOTHESIS_PROFILE=full` runs 166, and
`python -m conformance --profile full` runs 500).
"""

import numpy as np
import pytest
from hypothesis import Phase, find, given, settings, strategies as st

from refimpl import dtypes
from conformance.cases import (Case, all_cases, check_against_numpy, check_backend,
                               compare_outputs, numerical_warnings_ignored)

CASES = all_cases()
EXAMPLES = settings(max_examples=max(1, settings.default.max_examples // 3))


@pytest.mark.parametrize("case", [c for c in CASES if c.numpy_fn or c.divergence],
                         ids=lambda c: c.name)
@EXAMPLES
@given(data=st.data())
def test_reference_matches_numpy(case, data):
  with numerical_warnings_ignored():
    args, kwargs = data.draw(case.inputs())
    check_against_numpy(case, args, kwargs)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@EXAMPLES
@given(data=st.data())
def test_jit_reference_backend_matches_eager(case, data):
  with numerical_warnings_ignored():
    args, kwargs = data.draw(case.inputs())
    check_backend(case, "reference", args, kwargs)


def test_a_case_exercises_the_primitives_of_the_program_the_backend_received():
  """The per-primitive report counts what jit handed the backend, sub-jaxprs
  included (nn.sparse_sigmoid traces max and min, not clamp)."""
  from conformance.cases import OBSERVED_PRIMITIVES
  case = next(c for c in CASES if c.name == "nn.sparse_sigmoid")
  check_backend(case, "reference", (np.linspace(-2, 2, 5, dtype=np.float32),), {})
  observed = OBSERVED_PRIMITIVES[case.name]
  assert {"jit", "max", "min"} <= observed and "clamp" not in observed
  scan = next(c for c in CASES if c.name.startswith("lax.scan"))
  with numerical_warnings_ignored():
    args, kwargs = find(scan.inputs(), lambda _: True,
                        settings=settings(database=None, derandomize=True,
                                          phases=[Phase.generate]))
    check_backend(scan, "reference", args, kwargs)
  assert "scan" in OBSERVED_PRIMITIVES[scan.name]
  assert len(OBSERVED_PRIMITIVES[scan.name]) > 2   # the body's primitives too


def test_product_oracles_overflow_as_the_contraction_dtype_does():
  """A bfloat16 vdot whose float32 product overflows to -inf beside a +inf
  product: NaN in the reference (inf - inf in float32, as XLA computes), and
  in the oracle, which would give +inf in long double alone."""
  import refimpl.numpy as jnp
  case = next(c for c in CASES if c.name == "jnp.vdot")
  a, b = np.zeros(24, dtypes.bfloat16), np.zeros(24, dtypes.bfloat16)
  a[12], b[12] = -1, -np.inf
  a[21], b[21] = -4.32191e25, 7.90274e12
  with numerical_warnings_ignored():
    assert np.isnan(np.asarray(jnp.vdot(a, b))) and np.isnan(case.numpy_fn(a, b))
    check_against_numpy(case, (a, b), {})


def test_sums_in_any_order_agree_where_both_overflowed():
  """A product's elements where both results overflowed (an infinity, a NaN
  or a part beyond a quarter of the largest finite value) agree whatever
  they hold; elsewhere, and for a case whose order is fixed, they must match."""
  for dtype in (np.float32, dtypes.bfloat16, np.complex64):
    big = float(dtypes.finfo(np.float32 if dtype == np.complex64 else dtype).max) / 2
    any_order = Case("product", None, None, any_order=True)
    fixed = Case("sum", None, None)
    actual = np.array([np.inf, -big, 1.0, np.nan]).astype(dtype)
    expected = np.array([np.nan, -np.inf, 1.0, big]).astype(dtype)
    compare_outputs([actual], [expected], any_order)
    with pytest.raises(AssertionError):
      compare_outputs([actual], [expected], fixed)
    with pytest.raises(AssertionError):   # one overflowed, the other did not
      compare_outputs([actual[:3]], [np.array([np.nan, -np.inf, 2.0]).astype(dtype)], any_order)
    with pytest.raises(AssertionError):
      compare_outputs([np.array([np.inf]).astype(dtype)], [np.array([1.0]).astype(dtype)],
                      any_order)
