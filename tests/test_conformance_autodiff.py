"""Runs every derivative case (the `AD_CASES` of conformance/families) as a
property test, and checks that every primitive's rules are covered."""

import pytest
from hypothesis import given, settings, strategies as st

from conformance.autodiff import all_ad_cases, run_ad_case
from conformance.cases import numerical_warnings_ignored
from refimpl.core import PRIMITIVES
from refimpl.interpreters import ad

AD_CASES = all_ad_cases()
EXAMPLES = settings(max_examples=max(1, settings.default.max_examples // 3),
                    deadline=None)


@pytest.mark.parametrize("case", AD_CASES, ids=lambda c: c.name)
@EXAMPLES
@given(data=st.data())
def test_derivatives(case, data):
  with numerical_warnings_ignored():
    args, kwargs = data.draw(case.inputs())
    run_ad_case(case, args, kwargs)


def _project_primitives():
  """The registry's primitives defined by refimpl (tests may register their own)."""
  return [(name, p) for name, p in PRIMITIVES.items()
          if p.impl is not None and p.impl.__module__.startswith("refimpl")]


def _covered(mode):
  return {p for c in AD_CASES if mode in c.modes for p in c.primitives}


def test_every_primitive_has_a_jvp_rule():
  missing = sorted(name for name, p in _project_primitives() if p not in ad.primitive_jvps)
  assert not missing, f"primitives without a JVP rule: {missing}"


def test_every_differentiable_primitive_has_a_checked_jvp():
  differentiable = {name for name, p in _project_primitives()
                    if p in ad.primitive_jvps and p not in ad.non_differentiable
                    and p not in ad.unsupported_jvps}
  # Reverse mode runs the JVP rules too (linearize), so either mode counts.
  unchecked = sorted(differentiable - _covered("fwd") - _covered("rev"))
  assert not unchecked, f"JVP rules without a derivative case: {unchecked}"


def test_every_transpose_rule_is_checked():
  """Except those registered as raising JAX's error (their unit tests check it)."""
  linear = {name for name, p in _project_primitives() if p in ad.primitive_transposes
            and p not in ad.unsupported_transposes}
  unchecked = sorted(linear - _covered("rev"))
  assert not unchecked, f"transpose rules without a reverse-mode case: {unchecked}"
