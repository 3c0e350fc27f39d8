"""The backend registry: where jit sends the programs it traces.

A backend is registered under a name with a `compile(closed_jaxpr)` function
returning a callable that takes the jaxpr's inputs as NumPy arrays (flat, in
order) and returns the list of its outputs as NumPy arrays. jit calls
`compile` once per program structure (jaxpr, input types, backend, tracing
config) and hands it jaxprs without consts: the consts of the traced program
come first among the inputs, so a program closing over new values of the
same types reuses the compiled callable. `reference`, the
jaxpr interpreter, is always present and is the default. Select one with
`config.update("backend", name)`, the `REFIMPL_BACKEND` environment variable,
or `jit(f, backend=name)`.
"""


from refimpl import core
from refimpl.interpreters.eval import run_jaxpr

_BACKENDS = {}


def register_backend(name, compile):
  """Makes `compile(closed_jaxpr) -> callable` available as backend `name`."""
  _BACKENDS[name] = compile


def get_backend(name):
  if name not in _BACKENDS:
    raise ValueError(f"Unknown backend {name!r}; registered backends: "
                     f"{sorted(_BACKENDS)}. A backend package registers itself "
                     "with refimpl.backends.register_backend when imported.")
  return _BACKENDS[name]


def backend_names():
  return sorted(_BACKENDS)


def compile_reference(closed_jaxpr):
  """The reference backend: interpret the jaxpr with the primitives' reference
  rules, as a compiled program (`refimpl.interpreters.eval.run_jaxpr`)."""
  def run(*args):
    if type(core.current_trace()) is core.EvalTrace:
      return run_jaxpr(closed_jaxpr, *args)
    with core.eval_context():
      return run_jaxpr(closed_jaxpr, *args)
  return run


register_backend("reference", compile_reference)

