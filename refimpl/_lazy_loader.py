"""Submodules loaded on first attribute access (PEP 562), as JAX's own
`jax._src.lazy_loader` does for `jax.scipy`.

A package lists the submodules most programs never use; `import package`
then does not pay for them, while `package.sub`, `from package import sub`,
`import package.sub`, `from package import *` and `dir(package)` behave as if
they had been imported.
"""

import importlib
import sys


def attach(package_name, submodules):
  """The `__getattr__` and `__dir__` of package `package_name` that import
  the named `submodules` when first accessed."""
  submodules = frozenset(submodules)

  def __getattr__(name):
    if name in submodules:
      return importlib.import_module(f"{package_name}.{name}")  # also binds it
    if name == "__all__":   # asked by `from package import *`: the public names, as without it
      return sorted({n for n in vars(sys.modules[package_name]) if not n.startswith("_")}
                    | submodules)
    raise AttributeError(f"module {package_name!r} has no attribute {name!r}",
                         name=name, obj=sys.modules[package_name])

  def __dir__():
    return sorted({*vars(sys.modules[package_name]), *submodules})

  return __getattr__, __dir__
