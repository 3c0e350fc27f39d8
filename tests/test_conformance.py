"""Runs every conformance case (conformance/families) as a property test:
the reference against NumPy (or the divergence table), and the `reference`
jit backend against eager evaluation.

There are hundreds of cases, so each runs a third of the profile's examples
(10 by default; `HYPOTHESIS_PROFILE=full` runs 166, and
`python -m conformance --profile full` runs 500).
"""

import pytest
from hypothesis import given, settings, strategies as st

from conformance.cases import (all_cases, check_against_numpy, check_backend,
                               numerical_warnings_ignored)

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
