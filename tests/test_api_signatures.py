"""Signatures of JAX's public API: every public name of JAX 0.10.2 that refimpl
provides takes the parameters JAX's takes (tests/data/api_signatures.json):
the same names in the same order, of the same kinds, the same ones with
defaults and the same simple default values, unless docs/api_gaps.md's
"Signatures" table lists the difference with its reason."""

import ast
import importlib
import inspect
import json
import pathlib
import re

import pytest

from tests.test_api_names import documented_gaps

ROOT = pathlib.Path(__file__).resolve().parent.parent
JAX_SIGNATURES = json.loads((ROOT / "tests" / "data" / "api_signatures.json").read_text())
MODULES = JAX_SIGNATURES["modules"]

_KINDS = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD,
          inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.KEYWORD_ONLY,
          inspect.Parameter.VAR_KEYWORD)
_NO_DEFAULT = "no default"
_OPAQUE = "a default that is not a simple literal"


def _literal(value):
  """`value` when it is a simple literal (None, bool, int, float, str, or a
  tuple of those), else `_OPAQUE`."""
  if value is None or type(value) in (bool, int, float, str):
    return value
  if type(value) is tuple and all(_literal(v) is not _OPAQUE for v in value):
    return value
  return _OPAQUE


def parse_signature(text):
  """[(name, kind, default)] of a signature string such as "(x, /, *, y=1)"."""
  args = ast.parse(f"def f{text}: pass").body[0].args
  positional = args.posonlyargs + args.args
  defaults = [_NO_DEFAULT] * (len(positional) - len(args.defaults)) + args.defaults
  params = []
  for i, (arg, default) in enumerate(zip(positional, defaults)):
    params.append((arg.arg, _KINDS[0 if i < len(args.posonlyargs) else 1], default))
  if args.vararg:
    params.append((args.vararg.arg, _KINDS[2], _NO_DEFAULT))
  for arg, default in zip(args.kwonlyargs, args.kw_defaults):
    params.append((arg.arg, _KINDS[3], _NO_DEFAULT if default is None else default))
  if args.kwarg:
    params.append((args.kwarg.arg, _KINDS[4], _NO_DEFAULT))

  def value(node):
    if node is _NO_DEFAULT:
      return node
    try:
      return _literal(ast.literal_eval(node))
    except ValueError:
      return _OPAQUE
  return [(name, kind, value(default)) for name, kind, default in params]


def refimpl_signature(obj):
  """[(name, kind, default)] of `obj`'s signature, or None if it has none."""
  try:
    signature = inspect.signature(obj)
  except (TypeError, ValueError):
    return None
  return [(p.name, p.kind, _NO_DEFAULT if p.default is p.empty else _literal(p.default))
          for p in signature.parameters.values()]


def differences(jax_params, refimpl_params):
  """What differs between two parameter lists (empty when they match):
  names and order, kinds, which have defaults, and defaults that are simple
  literals on both sides."""
  if [p[0] for p in jax_params] != [p[0] for p in refimpl_params]:
    return [f"parameters {[p[0] for p in refimpl_params]}, JAX's are "
            f"{[p[0] for p in jax_params]}"]
  found = []
  for (name, kind, default), (_, ref_kind, ref_default) in zip(jax_params, refimpl_params):
    if kind != ref_kind:
      found.append(f"{name} is {ref_kind.description}, in JAX {kind.description}")
    elif (default is _NO_DEFAULT) != (ref_default is _NO_DEFAULT):
      found.append(f"{name} has {'no ' if ref_default is _NO_DEFAULT else 'a '}default, "
                   f"in JAX {'none' if default is _NO_DEFAULT else default!r}")
    elif _OPAQUE not in (default, ref_default) and (
        default != ref_default or type(default) is not type(ref_default)):
      found.append(f"{name} defaults to {ref_default!r}, in JAX to {default!r}")
  return found


def documented_differences():
  """{(module, name): reason} from the "Signatures" table of docs/api_gaps.md,
  whose rows name a function by its full path: | `jax.lax.dot` | reason |."""
  text = (ROOT / "docs" / "api_gaps.md").read_text()
  section = text.split("\n## Signatures\n", 1)[1].split("\n## ", 1)[0]
  documented = {}
  for line in section.splitlines():
    match = re.match(r"\|\s*`([\w.]+)\.(\w+)`\s*\|\s*([^`|].*?)\s*\|$", line)
    if match:
      documented[(match.group(1), match.group(2))] = match.group(3)
  return documented


def compared_names():
  """[(module, name, jax_params, refimpl_params)] for every name with a JAX
  signature that refimpl provides with an inspectable signature."""
  out = []
  for module, names in MODULES.items():
    mod = importlib.import_module("refimpl" + module[len("jax"):])
    for name, text in names.items():
      if hasattr(mod, name):
        params = refimpl_signature(getattr(mod, name))
        if params is not None:
          out.append((module, name, parse_signature(text), params))
  return out


COMPARED = compared_names()


def test_many_signatures_are_compared():
  assert len(COMPARED) > 1300


def test_signatures_match_jax():
  documented = documented_differences()
  undocumented = [f"{module}.{name}: {'; '.join(found)}"
                  for module, name, jax_params, params in COMPARED
                  if (found := differences(jax_params, params))
                  and (module, name) not in documented]
  assert not undocumented, ("signatures that differ from JAX's: match them, or list each in "
                            "docs/api_gaps.md's Signatures table with its reason:\n"
                            + "\n".join(undocumented))


def test_no_documented_difference_is_stale():
  documented = documented_differences()
  differing = {(module, name) for module, name, jax_params, params in COMPARED
               if differences(jax_params, params)}
  stale = sorted(f"{m}.{n}" for (m, n) in documented if (m, n) not in differing)
  assert not stale, f"docs/api_gaps.md's Signatures table lists names that now match: {stale}"


def test_documented_differences_are_not_name_gaps():
  """The Signatures table's rows are not read as missing names."""
  assert documented_differences()
  assert not set(documented_differences()) & set(documented_gaps())


@pytest.mark.parametrize("text, expected", [
    ("(x, /, y=1, *args, z, w=(1, 'a'), **kw)",
     [("x", _KINDS[0], _NO_DEFAULT), ("y", _KINDS[1], 1), ("args", _KINDS[2], _NO_DEFAULT),
      ("z", _KINDS[3], _NO_DEFAULT), ("w", _KINDS[3], (1, "a")),
      ("kw", _KINDS[4], _NO_DEFAULT)]),
    ("(a=..., b=np.float32(1.0), c=UnspecifiedValue)",
     [("a", _KINDS[1], _OPAQUE), ("b", _KINDS[1], _OPAQUE), ("c", _KINDS[1], _OPAQUE)]),
])
def test_parse_signature(text, expected):
  assert parse_signature(text) == expected


def test_differences_name_each_kind_of_difference():
  def f(x, y=1, *, z=None): pass
  params = refimpl_signature(f)
  assert differences(parse_signature("(x, y=1, *, z=None)"), params) == []
  assert differences(parse_signature("(x, y=..., *, z=None)"), params) == []
  assert differences(parse_signature("(x, y=1, *, w=None)"), params)
  assert differences(parse_signature("(x, /, y=1, *, z=None)"), params)
  assert differences(parse_signature("(x, y, *, z=None)"), params)
  assert differences(parse_signature("(x, y=1.0, *, z=None)"), params)
  assert differences(parse_signature("(x, y=True, *, z=None)"), params)
