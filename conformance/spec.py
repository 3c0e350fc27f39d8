"""Generates the specification documents that come from the code.

* docs/primitives.md: every primitive of `refimpl.core.PRIMITIVES`, grouped by
  the module that defines it, with its params (the keyword arguments of its
  reference rule), its semantics (the reference rule's docstring), its
  shape/dtype rule's docstring where it has one, the transformations it
  supports, and whether the numba backend lowers it.
* docs/divergences.md: the table of deliberate divergences from NumPy
  (`conformance.divergences.DIVERGENCES`).

`python -m conformance.spec` rewrites both; a test fails when they are stale.
"""

import inspect
import pathlib
import sys

import refimpl, refimpl.random  # noqa: F401 (with checkify, define every primitive)
import refimpl.experimental.checkify  # noqa: F401
from refimpl import core
from conformance.divergences import DIVERGENCES

__all__ = ["primitives_markdown", "divergences_markdown", "DOCS", "write"]

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"


def _transforms(prim):
  """The transformations `prim` has rules for, in words.

  Evaluation and jit need no per-primitive rule beyond the reference rule and
  the shape rule. Differentiation and batching rules are registered by their
  interpreters.
  """
  from refimpl.interpreters import ad, batching
  supported = []
  if prim in ad.unsupported_jvps:
    supported.append(f"jvp unsupported, as in JAX ({ad.unsupported_jvps[prim]})")
  elif prim in ad.non_differentiable:
    supported.append("jvp (zero: not differentiable)")
  elif prim in ad.primitive_jvps:
    supported.append("jvp")
  if prim in ad.unsupported_transposes:
    supported.append(f"transpose unsupported, as in JAX ({ad.unsupported_transposes[prim]})")
  elif prim in ad.primitive_transposes:
    supported.append("transpose (linear)")
  if prim in batching.primitive_batchers or prim in batching.axis_primitive_batchers:
    supported.append("vmap")
  elif not operand_names(prim):
    supported.append("vmap (no operands: never batched)")
  return supported


def _numba_lowering(prim):
  from numba_backend.lower import lowering_of
  import numba_backend  # noqa: F401 (registers the lowering rules)
  return lowering_of(prim) or "not lowered (a LoweringError names it)"


def operand_names(prim):
  """The positional parameters of the shape rule (the operands)."""
  signature = inspect.signature(prim.abstract_eval)
  return [name for name, p in signature.parameters.items()
          if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]


def _params(prim):
  signature = inspect.signature(prim.impl)
  return [name for name, p in signature.parameters.items() if p.kind is p.KEYWORD_ONLY]


def _family(prim):
  return prim.impl.__module__.removeprefix("refimpl.")


def _doc(obj):
  return inspect.cleandoc(obj.__doc__ or "") if obj is not None else ""


def primitives_markdown():
  """The primitive reference, as markdown."""
  by_family = {}
  prims = [p for _, p in sorted(core.PRIMITIVES.items())
           if p.impl is not None and p.impl.__module__.startswith("refimpl.")]
  for prim in prims:
    by_family.setdefault(_family(prim), []).append(prim)
  lines = [
      "# Primitive reference",
      "",
      "Generated from the primitive registry by `python -m conformance.spec`; do not edit.",
      "Each entry gives the primitive's params, its semantics (the docstring of its",
      "reference rule, which *is* the specification), its shape/dtype rule where that",
      "rule documents more, the transformations it supports, and how the numba backend",
      "lowers it. Every primitive can be evaluated and staged under `jit`.",
      "",
      f"{len(prims)} primitives in {len(by_family)} families: "
      + ", ".join(f"[{family}](#{family.replace('.', '')})" for family in by_family) + ".",
      "",
  ]
  for family, prims in by_family.items():
    lines += [f"## {family}", "", _doc(sys.modules[prims[0].impl.__module__]), ""]
    for prim in prims:
      params = _params(prim)
      lines += [f"### `{prim.name}`", ""]
      lines.append("Params: " + (", ".join(f"`{p}`" for p in params) if params else "none") + ".")
      if prim.multiple_results:
        lines.append("Returns several outputs.")
      if prim.has_side_effects:
        lines.append("Has a side effect: never removed as dead code.")
      supported = _transforms(prim)
      lines.append("Transformation rules: "
                   + (", ".join(supported) if supported else "none (evaluation and jit only)")
                   + ".")
      lines.append(f"Numba backend: {_numba_lowering(prim)}.")
      lines += ["", _doc(prim.impl) or "(no docstring)", ""]
      shape_doc = _doc(prim.abstract_eval)
      if shape_doc:
        lines += ["Shape/dtype rule: " + shape_doc, ""]
  return "\n".join(lines).rstrip() + "\n"


def divergences_markdown():
  """The divergence table, as markdown."""
  lines = [
      "# Deliberate divergences from NumPy",
      "",
      "Generated from `conformance/divergences.py` by `python -m conformance.spec`; do",
      "not edit. Where JAX's result differs from NumPy's by design, the conformance",
      "suite expects JAX's result, computed by the entry's function.",
      "",
      "| name | what JAX does |",
      "| --- | --- |",
  ]
  for name, divergence in sorted(DIVERGENCES.items()):
    lines.append(f"| `{name}` | {' '.join(divergence.summary.split())} |")
  return "\n".join(lines) + "\n"


def write():
  (DOCS / "primitives.md").write_text(primitives_markdown())
  (DOCS / "divergences.md").write_text(divergences_markdown())


if __name__ == "__main__":
  write()
  print(f"wrote {DOCS / 'primitives.md'} and {DOCS / 'divergences.md'}")
