"""Runs every conformance case (conformance/families) under `vmap`: the
vectorized function equals the loop over the batch (conformance/batching.py),
and every primitive has a batching rule."""

import pytest
from hypothesis import given, settings, strategies as st

from conformance.batching import check_vmap
from conformance.cases import all_cases, numerical_warnings_ignored
from conformance.spec import operand_names
from refimpl.core import PRIMITIVES
from refimpl.interpreters import batching

CASES = all_cases()
EXAMPLES = settings(max_examples=max(1, settings.default.max_examples // 3))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@EXAMPLES
@given(data=st.data())
def test_vmap_matches_loop(case, data):
  with numerical_warnings_ignored():
    check_vmap(case, data)


def test_every_primitive_has_a_batching_rule():
  """Except those without operands (iota), which no batch can reach."""
  missing = sorted(name for name, p in PRIMITIVES.items()
                   if p not in batching.primitive_batchers
                   and p not in batching.axis_primitive_batchers and operand_names(p))
  assert not missing, f"primitives without a batching rule: {missing}"
