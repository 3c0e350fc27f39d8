"""Coverage of JAX's public API: every public name of the modules recorded in
tests/data/api_names.json (JAX 0.10.2's) is either provided by refimpl's
module of the same path or listed in docs/api_gaps.md with its reason."""

import importlib
import json
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
JAX_NAMES = json.loads((ROOT / "tests" / "data" / "api_names.json").read_text())
MODULES = {module: "refimpl" + module[len("jax"):] for module in JAX_NAMES
           if module not in ("jax_version", "note")}


def documented_gaps():
  """{(module, name): reason} from the tables of docs/api_gaps.md."""
  gaps = {}
  for line in (ROOT / "docs" / "api_gaps.md").read_text().splitlines():
    match = re.match(r"\|\s*`([\w.]+)`\s*\|\s*`(\w+)`\s*\|\s*(.+?)\s*\|$", line)
    if match:
      gaps[(match.group(1), match.group(2))] = match.group(3)
  return gaps


def missing_names(module):
  mod = importlib.import_module(MODULES[module])
  return {name for name in JAX_NAMES[module] if not hasattr(mod, name)}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_missing_name_is_documented(module):
  gaps = documented_gaps()
  undocumented = sorted(n for n in missing_names(module) if (module, n) not in gaps)
  assert not undocumented, (f"{module} lacks {undocumented}: provide them or list each "
                            "in docs/api_gaps.md with its reason")


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_documented_gap_is_stale(module):
  provided = set(JAX_NAMES[module]) - missing_names(module)
  stale = sorted(n for (m, n) in documented_gaps() if m == module and n in provided)
  assert not stale, f"docs/api_gaps.md lists {module} names that now exist: {stale}"


def test_every_gap_has_a_reason():
  assert all(len(reason) > 10 for reason in documented_gaps().values())
