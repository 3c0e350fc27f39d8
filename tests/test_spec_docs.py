"""The generated documents in docs/ are up to date with the code."""

from conformance import spec


def test_primitive_reference_is_current():
  current = (spec.DOCS / "primitives.md").read_text()
  assert current == spec.primitives_markdown(), \
      "docs/primitives.md is stale: run `python -m conformance.spec`"


def test_divergence_table_is_current():
  current = (spec.DOCS / "divergences.md").read_text()
  assert current == spec.divergences_markdown(), \
      "docs/divergences.md is stale: run `python -m conformance.spec`"


def test_every_primitive_is_documented():
  text = spec.primitives_markdown()
  assert "(no docstring)" not in text
