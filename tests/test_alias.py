"""refimpl.alias: `import jax` made to import refimpl for one process, by
`install()` or by `python -m refimpl.alias` running a script, a module (such
as pytest) or code."""

import subprocess
import sys
import types

import pytest

from refimpl import alias


def _run(*args, cwd):
  return subprocess.run([sys.executable, "-m", "refimpl.alias", *args], cwd=cwd,
                        capture_output=True, text=True, timeout=300)


def test_a_script_imports_refimpl_as_jax(tmp_path):
  (tmp_path / "prog.py").write_text(
      "import sys\n"
      "import jax, jax.numpy as jnp\n"
      "from jax import lax\n"
      "from jax.tree_util import tree_map\n"
      "import refimpl\n"
      "assert jax is refimpl and jnp is refimpl.numpy and lax is refimpl.lax\n"
      "print(float(jnp.sum(jnp.arange(4.0))), sys.argv[1:], __name__)\n")
  done = _run("prog.py", "a", "--b", cwd=tmp_path)
  assert done.returncode == 0, done.stderr
  assert done.stdout.split("\n")[0] == "6.0 ['a', '--b'] __main__"


def test_code_and_modules_run_with_the_alias(tmp_path):
  done = _run("-c", "import jax.random as r, sys; print(r.__name__, sys.argv[1:])", "x",
              cwd=tmp_path)
  assert done.returncode == 0 and done.stdout.strip() == "refimpl.random ['x']", done.stderr
  (tmp_path / "mod.py").write_text("import jax\nprint(jax.__version__)\n")
  done = _run("-m", "mod", cwd=tmp_path)
  assert done.returncode == 0 and done.stdout.strip() == "0.10.2", done.stderr


def test_pytest_runs_a_test_file_importing_jax(tmp_path):
  (tmp_path / "test_it.py").write_text(
      "import jax, jax.numpy as jnp\n"
      "def test_grad():\n"
      "  assert float(jax.grad(lambda x: x ** 3)(2.0)) == 12.0\n"
      "def test_fails():\n"
      "  assert jnp.ones(2).shape == (3,)\n")
  done = _run("-m", "pytest", "-q", "-p", "no:cacheprovider", "test_it.py", cwd=tmp_path)
  assert done.returncode == 1, done.stdout + done.stderr   # (pytest's status: a test failed)
  assert "1 failed, 1 passed" in done.stdout


def test_a_name_refimpl_lacks_is_a_module_not_found_error(tmp_path):
  done = _run("-c", "import jax.no_such_module", cwd=tmp_path)
  assert done.returncode == 1 and "No module named 'jax.no_such_module'" in done.stderr
  done = _run(cwd=tmp_path)
  assert done.returncode == 2 and "usage:" in done.stdout


def test_install_refuses_once_a_real_jax_is_imported(monkeypatch):
  monkeypatch.setitem(sys.modules, "jax", types.ModuleType("jax"))
  with pytest.raises(RuntimeError, match="real jax is already imported"):
    alias.install()
  assert not alias.installed()
