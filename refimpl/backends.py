"""The backend registry: where jit sends the programs it traces.

A backend is registered under a name with a `compile(closed_jaxpr)` function
returning a callable that takes the jaxpr's inputs as NumPy arrays (flat, in
order) and returns the list of its outputs as NumPy arrays. jit calls
`compile` once per program structure (jaxpr, input types, backend, tracing
config) and hands it jaxprs without consts: the consts of the traced program
come first among the inputs, so a program closing over new values of the
same types reuses the compiled callable. The arrays are *physical data*, of
standard dtypes only: an input or output of type `key<fry>[*S]` is its key
data `uint32[*S, 2]`, one of type `float0[*S]` is `bool[*S]` zeros, any other
is of its own type (`core.physical_aval`). A program's NaN and infinite
results are values, as the reference rules' are: it must not warn of them
(a program computing with NumPy runs under `np.errstate(all="ignore")`,
as the reference backend's does). `reference`, the
jaxpr interpreter, is always present and is the default. Select one with
`config.update("backend", name)`, the `REFIMPL_BACKEND` environment variable,
or `jit(f, backend=name)`.

Backends are found by name without being imported first: an installed
distribution declares each backend it provides as an entry point in group
`refimpl.backends` (`numba = "numba_backend"` in pyproject.toml's
`[project.entry-points."refimpl.backends"]`). A declared backend is loaded
when it is selected (`REFIMPL_BACKEND`: at the first jit call): its entry
point `name = "module"` imports the module, which must call
`register_backend(name, compile)`; `name = "module:function"` registers that
function as the backend's compile. The entry points are read (some
milliseconds) only when a name not registered is asked for or the names are
listed. docs/backends.md has the whole contract.
"""

import importlib
import operator
import os

import numpy as np

from refimpl import core
from refimpl.config import config
from refimpl.interpreters.eval import run_jaxpr

ENTRY_POINT_GROUP = "refimpl.backends"

_BACKENDS = {}  # name -> compile, for the backends registered in this process
_DEVICES = {}  # name -> its devices function, for the device backends among them


def register_backend(name, compile, devices=None):
  """Makes `compile(closed_jaxpr) -> callable` available as backend `name`.
  A device backend gives `devices`, a function returning its devices (each
  with `id`, `platform`, `device_kind` and `put(numpy_array)`, which copies
  it to a `core.DeviceBuffer` of the device): its programs take the buffers
  that Arrays hold (NumPy arrays for the others) and may return buffers."""
  if not callable(compile):
    raise TypeError(f"The compile function of backend {name!r} must be callable, got {compile!r}")
  _BACKENDS[name] = compile
  if devices is not None:
    _DEVICES[name] = devices
  else:
    _DEVICES.pop(name, None)
  config.changed()   # the programs compiled under this name are not its programs now


def device_backend(name):
  """The devices function of backend `name` if it is a registered device
  backend, else None (the others hold their data on the host)."""
  return _DEVICES.get(name)


def get_backend(name):
  """The compile function of backend `name`, a declared backend's loaded the
  first time it is asked for: ValueError for a name neither registered nor
  declared, RuntimeError when loading a declared backend fails."""
  compile = _BACKENDS.get(name) if isinstance(name, str) else None
  return compile if compile is not None else _load(name)


def backend_names():
  """The names of the registered and the declared backends, sorted."""
  return sorted(_BACKENDS.keys() | _declared().keys())


def _declared():
  """{name: entry point} of the installed distributions' backends, read anew
  each time (a distribution installed meanwhile is seen); where two declare
  one name, the first on sys.path is taken, as an import would."""
  from importlib.metadata import entry_points  # tens of milliseconds to import
  declared = {}
  for entry in entry_points(group=ENTRY_POINT_GROUP):
    declared.setdefault(entry.name, entry)
  return declared


def _load(name):
  """Loads the entry point declaring backend `name`; returns its compile."""
  declared = _declared()
  if not isinstance(name, str) or name not in declared:
    raise ValueError(_unknown(name, declared))
  entry = declared[name]
  where = (f"Backend {name!r} is declared by {entry.dist.name} {entry.dist.version} "
           f"(entry point {name} = {entry.value})")
  try:
    module = importlib.import_module(entry.module)
  except Exception as err:
    raise RuntimeError(f"{where}, but its module {entry.module} could not be imported: "
                       f"{type(err).__name__}: {err}") from err
  if entry.attr:
    try:
      register_backend(name, operator.attrgetter(entry.attr)(module))
    except AttributeError as err:
      raise RuntimeError(f"{where}, but {err}") from err
  if name not in _BACKENDS:
    raise RuntimeError(f"{where}, but importing {entry.module} did not register it: the "
                       f"module must call refimpl.backends.register_backend({name!r}, "
                       "compile) when imported")
  return _BACKENDS[name]


def _unknown(name, declared):
  """The message for a backend name neither registered nor declared."""
  named = "REFIMPL_BACKEND" in os.environ and os.environ["REFIMPL_BACKEND"] == name
  source = " (named by the environment variable REFIMPL_BACKEND)" if named else ""
  return (f"Unknown backend {name!r}{source}; known backends: "
          f"{sorted(_BACKENDS.keys() | declared.keys())}. A backend registers itself with "
          "refimpl.backends.register_backend(name, compile) when its module is imported; "
          "to be found without importing it first, its distribution declares it as an "
          f"entry point in group {ENTRY_POINT_GROUP!r} (docs/backends.md).")


def compile_reference(closed_jaxpr):
  """The reference backend: interpret the jaxpr with the primitives' reference
  rules, as a compiled program (`refimpl.interpreters.eval.run_jaxpr`), on
  the NumPy data the rules hold, converted from and to physical data at the
  boundary (`core.to_physical_program`)."""
  @np.errstate(all="ignore")   # (as a decorator: thread-safe, set and reset per call)
  def run(*args):
    if type(core.current_trace()) is core.EvalTrace:
      return run_jaxpr(closed_jaxpr, *args)
    with core.eval_context():
      return run_jaxpr(closed_jaxpr, *args)
  return core.to_physical_program(run, closed_jaxpr.in_avals, closed_jaxpr.out_avals)


register_backend("reference", compile_reference)
