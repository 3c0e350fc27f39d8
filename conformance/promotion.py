"""Type promotion against the table recorded from JAX 0.10 (`data/promotion.json`)."""

import json
from importlib import resources

import numpy as np

import refimpl
import refimpl.numpy as jnp
from refimpl import dtypes
from conformance.report import Check

__all__ = ['CHECKS', 'load_table']

_DTYPES = {dt.name: dt for dt in dtypes.SUPPORTED_DTYPES}
_PYTHON_SCALARS = {"python int": 1, "python float": 1.0, "python bool": True}


def load_table():
  """The recorded facts: {table name: {case: dtype name}}."""
  return json.loads((resources.files("conformance") / "data" / "promotion.json").read_text())


def _assert_no_mismatches(mismatches, total):
  if mismatches:
    raise AssertionError(f"{len(mismatches)} of {total} differ from JAX: "
                         + "; ".join(mismatches[:5]) + ("; ..." if len(mismatches) > 5 else ""))


def promote_types_table():
  """`jnp.promote_types(a, b)` for every pair of the 15 dtypes, x64 enabled."""
  table = load_table()["promote_types (x64 enabled)"]
  mismatches = []
  with refimpl.enable_x64():
    for case, want in table.items():
      a, b = case.split(",")
      got = np.dtype(jnp.promote_types(_DTYPES[a], _DTYPES[b])).name
      if got != want:
        mismatches.append(f"promote_types({a}, {b}) is {got}, JAX {want}")
  _assert_no_mismatches(mismatches, len(table))


def array_plus_python_scalar_table():
  """`array + scalar` with a Python int/float/bool (weak types), x64 disabled."""
  table = load_table()["array + python scalar (x64 disabled)"]
  mismatches = []
  with refimpl.enable_x64(False):
    for case, want in table.items():
      array_dtype, scalar_kind = case.split(" + ")
      got = (jnp.zeros((), _DTYPES[array_dtype]) + _PYTHON_SCALARS[scalar_kind]).dtype.name
      if got != want:
        mismatches.append(f"{case} is {got}, JAX {want}")
  _assert_no_mismatches(mismatches, len(table))


_SOURCE = "JAX 0.10 promotion table (conformance/data/promotion.json)"
CHECKS = [Check("promote_types_table", _SOURCE, promote_types_table),
          Check("array_plus_python_scalar_table", _SOURCE, array_plus_python_scalar_table)]
