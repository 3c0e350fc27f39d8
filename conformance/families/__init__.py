"""Conformance cases, one module per family of primitives, each exporting `CASES`."""
