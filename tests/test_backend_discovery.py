"""Backend discovery (refimpl/backends.py): a backend declared as an entry
point in group `refimpl.backends` by an installed distribution is found by
name without being imported first, by `config.update`, `config.option`,
`jit(f, backend=...)`, `REFIMPL_BACKEND` and `python -m conformance
--backend`, and loaded only when selected; unknown names and backends that
fail to load are clear errors on every route.

The distribution is a fake one, written into a temporary folder put on
sys.path: a `*.dist-info` folder (METADATA, entry_points.txt) beside the
modules it declares."""

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl
import refimpl.numpy as jnp
import conformance.__main__ as cli
from refimpl import backends, config

ROOT = Path(__file__).resolve().parents[1]

ENTRY_POINTS = """\
[refimpl.backends]
fake = fake_backend
fake-fn = fake_fn_backend:compile
broken = broken_backend
silent = silent_backend
no-attr = fake_fn_backend:no_such_function
"""

# Each compile is counted in COMPILES and, when FAKE_BACKEND_LOG names a
# file, written there as a line (for runs in another process).
FAKE_BACKEND = """\
import os
from refimpl import backends

COMPILES = []

def compile(closed_jaxpr):
  COMPILES.append(closed_jaxpr)
  if "FAKE_BACKEND_LOG" in os.environ:
    with open(os.environ["FAKE_BACKEND_LOG"], "a") as log:
      log.write("compiled\\n")
  return backends.compile_reference(closed_jaxpr)

backends.register_backend("fake", compile)
"""

FAKE_FN_BACKEND = """\
from refimpl import backends

COMPILES = []

def compile(closed_jaxpr):
  COMPILES.append(closed_jaxpr)
  return backends.compile_reference(closed_jaxpr)
"""

MODULES = {"fake_backend": FAKE_BACKEND,
           "fake_fn_backend": FAKE_FN_BACKEND,
           "broken_backend": "raise OSError('libfake.so: cannot open shared object file')\n",
           "silent_backend": "COMPILES = []\n"}


def _write_distribution(folder):
  info = folder / "fake_backends-1.0.dist-info"
  info.mkdir()
  (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-backends\nVersion: 1.0\n")
  (info / "entry_points.txt").write_text(ENTRY_POINTS)
  for module, source in MODULES.items():
    (folder / f"{module}.py").write_text(source)


@pytest.fixture(scope="module")
def distribution(tmp_path_factory):
  """The folder holding the fake distribution and its modules."""
  folder = tmp_path_factory.mktemp("site")
  _write_distribution(folder)
  return folder


@pytest.fixture
def installed(distribution, monkeypatch):
  """The fake distribution on sys.path, for this test only: the backends it
  registers and the modules it imports are forgotten afterwards."""
  monkeypatch.syspath_prepend(str(distribution))
  monkeypatch.setattr(backends, "_BACKENDS", dict(backends._BACKENDS))
  yield distribution
  for module in MODULES:
    sys.modules.pop(module, None)


def _run(args, distribution, **env):
  """Runs `python args...` in a fresh interpreter that has the fake
  distribution on its path and `env` added to the environment (without a
  REFIMPL_BACKEND of this process's); returns the completed process."""
  path = os.pathsep.join(filter(None, [str(distribution), os.environ.get("PYTHONPATH")]))
  env = {**{k: v for k, v in os.environ.items() if k != "REFIMPL_BACKEND"},
         "PYTHONPATH": path, **env}
  return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True,
                        timeout=300)


def _loaded(module):
  return module in sys.modules


def f(x):
  return jnp.maximum(x, 1.0) * 3.0


X = np.arange(4, dtype=np.float32)
EXPECTED = np.array([3, 3, 6, 9], np.float32)


# --- discovery without importing ------------------------------------------------------

def test_this_project_declares_its_numba_backends():
  with open(ROOT / "pyproject.toml", "rb") as file:
    project = tomllib.load(file)["project"]
  assert project["entry-points"]["refimpl.backends"] == {
      "numba": "numba_backend", "numba-cuda": "numba_backend.cuda"}


def test_import_reads_no_entry_point_and_imports_no_backend(distribution):
  code = ("import json, sys\n"
          "before = set(sys.modules)\n"
          "import refimpl, refimpl.numpy\n"
          "print(json.dumps(sorted(set(sys.modules) - before)))")
  proc = _run(["-c", code], distribution, REFIMPL_BACKEND="fake")
  assert proc.returncode == 0, proc.stderr
  imported = set(json.loads(proc.stdout))
  assert "refimpl.backends" in imported
  assert not imported & {"importlib.metadata", *MODULES}


def test_backend_names_lists_declared_backends_without_importing_them(installed):
  names = backends.backend_names()
  assert {"reference", "fake", "fake-fn", "broken", "silent", "no-attr"} <= set(names)
  assert names == sorted(names)
  assert not any(map(_loaded, MODULES))


# --- selecting a declared backend loads it ------------------------------------------

def test_config_update_loads_the_backend_and_jit_compiles_on_it(installed):
  assert not _loaded("fake_backend")
  previous = config.backend
  try:
    config.update("backend", "fake")
    assert _loaded("fake_backend") and config.backend == "fake"
    compiles = sys.modules["fake_backend"].COMPILES
    assert compiles == []
    np.testing.assert_array_equal(refimpl.jit(f)(X), EXPECTED)
    assert len(compiles) == 1
  finally:
    config.update("backend", previous)


def test_config_option_loads_the_backend_for_its_block(installed):
  with config.option("backend", "fake"):
    assert _loaded("fake_backend")
    refimpl.jit(f)(X)
  assert config.backend != "fake"
  refimpl.jit(lambda x: f(x) + 1.0)(X)  # the configured backend again
  assert len(sys.modules["fake_backend"].COMPILES) == 1


def test_jit_backend_argument_loads_the_backend(installed):
  jitted = refimpl.jit(f, backend="fake")
  assert _loaded("fake_backend")
  np.testing.assert_array_equal(jitted(X), EXPECTED)
  assert len(sys.modules["fake_backend"].COMPILES) == 1


def test_a_module_colon_function_entry_point_registers_that_function(installed):
  refimpl.jit(f, backend="fake-fn")(X)
  assert backends.get_backend("fake-fn") is sys.modules["fake_fn_backend"].compile
  assert len(sys.modules["fake_fn_backend"].COMPILES) == 1


def test_environment_variable_loads_the_backend_at_the_first_jit_call(distribution):
  code = ("import json, sys, refimpl, refimpl.numpy as jnp\n"
          "loaded = ['fake_backend' in sys.modules]\n"
          "y = refimpl.jit(lambda x: x * 3.0)(jnp.float32(2.0))\n"
          "import fake_backend\n"
          "print(json.dumps([*loaded, refimpl.config.backend, float(y),"
          " len(fake_backend.COMPILES)]))")
  proc = _run(["-c", code], distribution, REFIMPL_BACKEND="fake")
  assert proc.returncode == 0, proc.stderr
  assert json.loads(proc.stdout) == [False, "fake", 6.0, 1]


def test_conformance_cli_runs_on_a_declared_backend(distribution, tmp_path):
  log = tmp_path / "compiles"
  proc = _run(["-m", "conformance", "--backend", "fake", "--family", "tiling",
               "--examples", "1"], distribution, FAKE_BACKEND_LOG=str(log))
  assert proc.returncode == 0, proc.stdout + proc.stderr
  lines = proc.stdout.splitlines()
  assert lines[0].startswith("refimpl conformance: backend=fake "), lines[0]
  assert lines[-1].startswith("conformance: PASS - "), lines[-1]
  assert log.read_text().count("compiled\n") > 0


def test_conformance_help_lists_declared_backends(installed):
  text = " ".join(cli._parser().format_help().split())
  assert "broken" in text and "silent" in text and "reference" in text
  assert not any(map(_loaded, MODULES))


# --- unknown names --------------------------------------------------------------------

@given(st.one_of(st.text(max_size=12), st.integers(), st.none(), st.lists(st.text(), max_size=1)))
def test_an_unknown_name_is_rejected_by_every_route(name):
  if name in ("reference", "numba"):
    return
  configured = config.backend
  message = rf"Unknown backend {re.escape(repr(name))}; known backends: \[.*'reference'.*\]"
  routes = [lambda: config.update("backend", name),
            lambda: config.option("backend", name).__enter__()]
  if name is not None:  # jit's backend=None is the configured one
    routes.append(lambda: refimpl.jit(f, backend=name))
  for select in routes:
    with pytest.raises(ValueError, match=message):
      select()
    assert config.backend == configured


def test_the_unknown_name_message_lists_declared_names_and_how_to_register(installed):
  with pytest.raises(ValueError) as info:
    config.update("backend", "nope")
  message = str(info.value)
  assert "'fake', 'fake-fn'" in message
  assert "refimpl.backends.register_backend(name, compile)" in message
  assert "entry point in group 'refimpl.backends'" in message


def test_an_unknown_environment_variable_fails_at_the_first_jit_call(distribution):
  code = ("import refimpl, refimpl.numpy as jnp\n"
          "print(refimpl.config.backend, flush=True)\n"
          "refimpl.jit(lambda x: x)(jnp.float32(1.0))")
  proc = _run(["-c", code], distribution, REFIMPL_BACKEND="nope")
  assert proc.stdout == "nope\n"   # imported, and read unchecked as JAX reads JAX_PLATFORMS
  last = proc.stderr.strip().splitlines()[-1]
  assert last.startswith("ValueError: Unknown backend 'nope' (named by the environment "
                         "variable REFIMPL_BACKEND); known backends: ["), last
  assert "'fake'" in last


def test_conformance_cli_refuses_an_unknown_name_listing_the_declared_ones(installed, capsys):
  with pytest.raises(SystemExit) as exit_info:
    cli.main(["--backend", "nope"])
  assert exit_info.value.code == 2
  err = capsys.readouterr().err
  assert "unknown backend 'nope'" in err and "broken" in err


# --- backends that fail to load -------------------------------------------------------

LOAD_FAILURES = {
    "broken": "Backend 'broken' is declared by fake-backends 1.0 (entry point broken = "
              "broken_backend), but its module broken_backend could not be imported: "
              "OSError: libfake.so: cannot open shared object file",
    "silent": "Backend 'silent' is declared by fake-backends 1.0 (entry point silent = "
              "silent_backend), but importing silent_backend did not register it: the module "
              "must call refimpl.backends.register_backend('silent', compile) when imported",
    "no-attr": "Backend 'no-attr' is declared by fake-backends 1.0 (entry point no-attr = "
               "fake_fn_backend:no_such_function), but module 'fake_fn_backend' has no "
               "attribute 'no_such_function'",
}


@pytest.mark.parametrize("name", sorted(LOAD_FAILURES))
def test_a_backend_that_fails_to_load_is_a_clear_error_on_every_route(installed, name):
  configured = config.backend
  for select in (lambda: config.update("backend", name),
                 lambda: config.option("backend", name).__enter__(),
                 lambda: refimpl.jit(f, backend=name)):
    with pytest.raises(RuntimeError) as info:
      select()
    assert str(info.value) == LOAD_FAILURES[name]
    assert config.backend == configured
  assert name not in backends._BACKENDS


def test_a_failing_import_is_chained_to_the_error(installed):
  with pytest.raises(RuntimeError) as info:
    config.update("backend", "broken")
  assert type(info.value.__cause__) is OSError


def test_a_backend_from_the_environment_that_fails_to_load_fails_at_the_first_jit_call(
    distribution):
  code = ("import refimpl, refimpl.numpy as jnp\n"
          "refimpl.jit(lambda x: x)(jnp.float32(1.0))")
  proc = _run(["-c", code], distribution, REFIMPL_BACKEND="broken")
  assert proc.stderr.strip().splitlines()[-1] == "RuntimeError: " + LOAD_FAILURES["broken"]


def test_conformance_cli_refuses_a_backend_that_fails_to_load(installed, capsys):
  with pytest.raises(SystemExit) as exit_info:
    cli.main(["--backend", "broken"])
  assert exit_info.value.code == 2
  assert capsys.readouterr().err.rstrip().endswith(LOAD_FAILURES["broken"])
