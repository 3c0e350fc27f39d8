"""The project builds as a wheel holding every module and data file of its
packages, and the conformance CLI runs from the installed copy.

The wheel is built from a copy of the source tree (so the build leaves no
`build/` behind in it) with pip, without build isolation where setuptools
and a bdist_wheel command are installed (offline), else with it (pip fetches
setuptools). It is installed into a fresh virtual environment by unpacking
it into site-packages, which is what installing a pure-Python wheel does;
the environment sees the dependencies (NumPy, ml_dtypes, hypothesis) of this
one through a .pth file, and nothing else of it. The CLI then runs from a
directory outside the repository.
"""

import importlib.metadata
import importlib.util
import os
import shutil
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import hypothesis
import ml_dtypes
import numpy
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("refimpl", "conformance")
# What a build of the source tree does not read, and what is never packaged.
_NOT_BUILT = (".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", "*.pyc",
              ".hypothesis", ".pytest_cache")

pytestmark = pytest.mark.packaging


def _source_files():
  """The files of the packages in the source tree, relative to ROOT."""
  return {path.relative_to(ROOT).as_posix()
          for package in PACKAGES for path in (ROOT / package).rglob("*")
          if path.is_file() and "__pycache__" not in path.parts
          and not path.name.startswith(".") and path.suffix != ".pyc"}


def _packages(files):
  """The (sub)packages among `files`: the folders holding an __init__.py."""
  return {f.rpartition("/")[0] for f in files if f.endswith("/__init__.py")}


def _builds_offline():
  """Whether setuptools >= 64 with a bdist_wheel command is installed here."""
  try:
    version = tuple(int(p) for p in importlib.metadata.version("setuptools").split(".")[:2])
  except importlib.metadata.PackageNotFoundError:
    return False
  return version >= (70, 1) or (version >= (64,) and bool(importlib.util.find_spec("wheel")))


def _run(cmd, **kwargs):
  proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
  assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{proc.stdout}\n{proc.stderr}"
  return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
  """The wheel built from a copy of the source tree."""
  source = tmp_path_factory.mktemp("source") / "refimpl"
  shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*_NOT_BUILT))
  out = tmp_path_factory.mktemp("wheel")
  isolation = ["--no-build-isolation"] if _builds_offline() else []
  _run([sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "--quiet", "-w", out,
        source])
  wheel, = out.glob("refimpl-*.whl")
  return wheel


def test_wheel_holds_every_package_module_and_data_file(wheel):
  with zipfile.ZipFile(wheel) as zf:
    packaged = {name for name in zf.namelist() if name.split("/")[0] in PACKAGES}
  source = _source_files()
  assert _packages(packaged) == _packages(source)
  assert "conformance/data/promotion.json" in packaged
  assert sorted(source - packaged) == []
  assert sorted(packaged - source) == []


def test_installed_conformance_cli_runs_outside_the_repository(wheel, tmp_path):
  venv = tmp_path / "venv"
  subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
  python = venv / "bin" / "python"
  site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
              .stdout.strip())
  with zipfile.ZipFile(wheel) as zf:
    zf.extractall(site)
  # The dependencies' folders only: a .pth line adds a folder to sys.path after
  # site-packages and runs none of its .pth files (an editable refimpl's finder).
  deps = {str(Path(m.__file__).parents[1]) for m in (numpy, ml_dtypes, hypothesis)}
  assert str(ROOT) not in deps
  (site / "_test_dependencies.pth").write_text("\n".join(sorted(deps)) + "\n")

  workdir = tmp_path / "elsewhere"
  workdir.mkdir()
  env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
  proc = subprocess.run([python, "-m", "conformance", "--family", "tiling", "--examples", "2"],
                        cwd=workdir, env=env, capture_output=True, text=True, timeout=300)
  assert proc.returncode == 0, proc.stdout + proc.stderr
  lines = proc.stdout.splitlines()
  assert f"checking {site / 'refimpl'} with {site / 'conformance'}" in lines, lines[:3]
  assert re.fullmatch(r"conformance: PASS - \d+ documented examples, [1-9]\d* value cases, "
                      r"\d+ derivative cases, 2 examples each, in .+", lines[-1]), lines[-1]
  assert "Warning" not in proc.stderr, proc.stderr
