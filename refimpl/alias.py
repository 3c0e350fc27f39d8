"""Running JAX programs and libraries unmodified on refimpl: `import jax` made
to import refimpl, for one process.

    import refimpl.alias; refimpl.alias.install()   # then: import optax, ...

    python -m refimpl.alias script.py [args...]
    python -m refimpl.alias -m pytest [args...]      # any module run as a script
    python -m refimpl.alias -c "import jax; ..."

After `install()`, `import jax` gives the module `refimpl` and `import jax.X`
(`from jax import X`) the module `refimpl.X`: the same module objects, under
both names in `sys.modules`, so `jax.numpy is refimpl.numpy`. A name refimpl
lacks raises the ImportError that importing it from JAX would not
(docs/api_gaps.md lists them). Nothing else changes: an installed JAX is
shadowed, not removed, and `install()` refuses to run once a real `jax` is
imported (the process would hold two array types).
"""

import importlib
import importlib.abc
import importlib.util
import runpy
import sys

__all__ = ["install", "installed"]


class _Finder(importlib.abc.MetaPathFinder):
  """Finds `jax` and `jax.*` as the refimpl modules of the same names."""

  def find_spec(self, fullname, path=None, target=None):
    if fullname != "jax" and not fullname.startswith("jax."):
      return None
    target_name = "refimpl" + fullname[len("jax"):]
    try:
      module = importlib.import_module(target_name)
    except ModuleNotFoundError as err:
      if err.name != target_name:   # (a module it imports is missing: say so)
        raise
      return None
    return importlib.util.spec_from_loader(fullname, _Loader(module))


class _Loader(importlib.abc.Loader):
  """Loads a `jax` name as its refimpl module, already imported."""

  def __init__(self, module):
    self.module = module

  def create_module(self, spec):
    return self.module

  def exec_module(self, module):
    pass   # (imported already, under its own name)


_FINDER = _Finder()


def installed():
  """Whether `import jax` imports refimpl in this process."""
  return _FINDER in sys.meta_path


def install():
  """Makes `import jax` (and `jax.X`) import refimpl in this process, ahead
  of any installed JAX. Raises RuntimeError if a real `jax` is imported."""
  jax = sys.modules.get("jax")
  if jax is not None and not getattr(jax, "__name__", "").startswith("refimpl"):
    raise RuntimeError("refimpl.alias.install(): the real jax is already imported in this "
                       "process; install the alias before anything imports jax.")
  if not installed():
    sys.meta_path.insert(0, _FINDER)


def main(argv):
  """`python -m refimpl.alias`: runs a script, a module (`-m`) or code (`-c`)
  with the alias installed, as `python` itself would run it."""
  usage = "usage: python -m refimpl.alias (script.py | -m module | -c code) [args...]"
  if not argv or argv[0] in ("-h", "--help"):
    print(usage)
    return 0 if argv else 2
  install()
  if argv[0] in ("-m", "-c"):
    if len(argv) < 2:
      print(usage, file=sys.stderr)
      return 2
    if argv[0] == "-c":
      sys.argv = ["-c", *argv[2:]]
      exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
    else:
      sys.argv = [argv[1], *argv[2:]]
      runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    return 0
  sys.argv = list(argv)
  runpy.run_path(argv[0], run_name="__main__")
  return 0


if __name__ == "__main__":   # (the finder is refimpl.alias's, which later imports see)
  from refimpl.alias import main as _main
  sys.exit(_main(sys.argv[1:]))
