"""What `import refimpl, refimpl.numpy` does to be quick: the submodules it
leaves unloaded (refimpl/_lazy_loader.py) load on first use and then behave
as if they had been imported eagerly; the garbage collector it pauses while
loading is left as it was found."""

import json
import subprocess
import sys

import pytest

LAZY = {"refimpl": ["example_libraries", "experimental", "extend", "flatten_util", "image", "nn",
                    "ops", "profiler", "random", "scipy", "stages", "test_util", "typing"],
        "refimpl.numpy": ["fft", "linalg"],
        "refimpl.scipy": ["cluster", "fft", "integrate", "interpolate", "linalg", "ndimage",
                          "optimize", "signal", "sparse", "spatial", "stats"]}


def _run(code):
  """The JSON that `code`, run in a fresh interpreter, prints."""
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       check=True)
  return json.loads(out.stdout)


def test_import_leaves_the_lazy_submodules_unloaded():
  loaded = _run("import json, sys, refimpl, refimpl.numpy\n"
                "print(json.dumps(sorted(m for m in sys.modules if m.startswith('refimpl'))))")
  lazy = {f"{package}.{name}" for package, names in LAZY.items() for name in names}
  assert not lazy & set(loaded)
  assert "refimpl.prng" not in loaded   # only refimpl.random needs it


@pytest.mark.parametrize("package,name", [(p, n) for p, names in LAZY.items() for n in names])
def test_a_lazy_submodule_loads_on_attribute_access(package, name):
  code = (f"import importlib, json, sys, {package}\n"
          f"listed = {name!r} in dir({package})\n"
          f"module = getattr({package}, {name!r})\n"
          f"print(json.dumps([listed, module is sys.modules['{package}.{name}'],\n"
          f"                  module is importlib.import_module('{package}.{name}')]))")
  assert _run(code) == [True, True, True]


def test_lazy_submodules_work_through_every_import_form():
  code = ("import json, refimpl as jax, refimpl.numpy as jnp\n"
          "from refimpl import nn\n"
          "import refimpl.scipy.special\n"
          "from refimpl.numpy import linalg\n"
          "key = jax.random.key(0)\n"
          "print(json.dumps([float(nn.relu(-1.0)), float(refimpl.scipy.special.erf(0.0)),\n"
          "                  float(linalg.det(jnp.eye(2))), "
          "float(jnp.fft.fft(jnp.ones(2))[0].real),\n"
          "                  jax.random.key_data(key).tolist()]))")
  assert _run(code) == [0.0, 0.0, 1.0, 2.0, [0, 0]]


@pytest.mark.parametrize("package", sorted(LAZY))
def test_star_import_binds_the_lazy_submodules_too(package):
  code = ("import json\n"
          f"from {package} import *\n"
          f"import {package}\n"
          f"public = sorted(n for n in vars({package}) if not n.startswith('_'))\n"
          "print(json.dumps([public, sorted(n for n in globals() if n in public)]))")
  public, bound = _run(code)
  assert set(LAZY[package]) <= set(public) and bound == public


@pytest.mark.parametrize("package,typo,meant", [("refimpl", "jitt", "jit"),
                                               ("refimpl.numpy", "arange_", "arange")])
def test_unknown_attribute_raises_attribute_error_with_a_suggestion(package, typo, meant):
  out = subprocess.run([sys.executable, "-c", f"import {package}; {package}.{typo}"],
                       capture_output=True, text=True)
  assert out.returncode == 1
  assert out.stderr.rstrip().endswith(
      f"AttributeError: module '{package}' has no attribute '{typo}'. "
      f"Did you mean: '{meant}'?")


def test_the_loader_itself_is_not_a_public_name():
  import refimpl
  import refimpl.numpy as jnp
  assert not hasattr(refimpl, "_attach_lazy") and not hasattr(jnp, "_attach_lazy")


@pytest.mark.parametrize("enabled", [True, False])
def test_import_leaves_the_garbage_collector_as_it_found_it(enabled):
  code = ("import gc, json\n"
          f"{'gc.enable()' if enabled else 'gc.disable()'}\n"
          "import refimpl.numpy\n"
          "print(json.dumps(gc.isenabled()))")
  assert _run(code) is enabled
