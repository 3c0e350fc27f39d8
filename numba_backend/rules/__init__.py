"""The lowering rules, one module per family of refimpl/lax (the same names:
rules/indexing.py lowers refimpl/lax/indexing.py's primitives). Importing
this package imports every module in it, which registers their rules."""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
  importlib.import_module(f"{__name__}.{_module.name}")
