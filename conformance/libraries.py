"""JAX libraries' own test files, run unmodified on refimpl.

  python -m conformance.libraries [--library optax] [--files SUBSTRING ...]
                  [--backend NAME] [--dir FOLDER]

installs the library's pinned release and its test-only dependencies with
`pip install --no-deps --target` (no JAX: `python -m refimpl.alias` makes
`import jax` import refimpl) into a folder (`--dir`, default
`$REFIMPL_LIBRARIES_DIR` or ~/.cache/refimpl/libraries), runs each of the
test files the release ships with pytest, one process a file, under the
alias (and `REFIMPL_BACKEND`), and prints a line a file (passed, failed,
errors, skipped, seconds), then the totals and the pass rate. Files that need
a library refimpl does not stand in for (flax, tensorflow) are left out.
The exit status is 1 when a test failed.
"""

import argparse
import os
import re
import subprocess
import sys
import time

LIBRARIES = {
  "optax": dict(
    release="optax==0.2.8",
    # what optax imports, and its tests import, besides jax, numpy and chex
    requirements=["absl-py", "etils", "toolz", "typing_extensions", "scipy", "scikit-learn"],
    package="optax",
    # (they import flax, which refimpl does not stand in for)
    left_out=["optax/_src/linear_algebra_test.py", "optax/transforms/_accumulation_test.py"]),
  "chex": dict(
    release="chex==0.1.92",
    requirements=["absl-py", "typing_extensions", "toolz", "cloudpickle", "dm-tree"],
    package="chex",
    left_out=[]),
}

_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped)")


def default_folder():
  """Where releases are installed: $REFIMPL_LIBRARIES_DIR, else ~/.cache/refimpl/libraries."""
  return os.environ.get("REFIMPL_LIBRARIES_DIR") or os.path.join(
      os.path.expanduser("~"), ".cache", "refimpl", "libraries")


def install(library, folder):
  """The folder holding `library`'s release and requirements (installed
  there by pip the first time), for PYTHONPATH."""
  spec = LIBRARIES[library]
  target = os.path.join(folder, spec["release"].replace("==", "-"))
  marker = os.path.join(target, ".installed")
  if not os.path.exists(marker):
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--target", target]
    subprocess.run([*pip, "--no-deps", spec["release"]], check=True)
    subprocess.run([*pip, *spec["requirements"]], check=True)
    open(marker, "w").close()
  return target


def test_files(library, target, only=()):
  """The test files (paths relative to `target`) of `library`'s release, less
  those left out; with `only`, those whose path contains one of its strings."""
  spec = LIBRARIES[library]
  found = []
  for folder, _, names in os.walk(os.path.join(target, spec["package"])):
    for name in names:
      if name.endswith("_test.py"):
        path = os.path.relpath(os.path.join(folder, name), target)
        if path not in spec["left_out"] and (not only or any(s in path for s in only)):
          found.append(path)
  return sorted(found)


def run_file(target, path, backend=None, timeout=3600):
  """{passed, failed, errors, skipped: counts, seconds} of pytest on one test
  file under `python -m refimpl.alias`, in the installed release's folder."""
  env = dict(os.environ,
             PYTHONPATH=os.pathsep.join(filter(None, [target, os.environ.get("PYTHONPATH")])))
  if backend:
    env["REFIMPL_BACKEND"] = backend
  start = time.perf_counter()
  done = subprocess.run([sys.executable, "-m", "refimpl.alias", "-m", "pytest", "-q",
                         "-p", "no:cacheprovider", path], cwd=target, env=env,
                        capture_output=True, text=True, timeout=timeout)
  counts = dict(passed=0, failed=0, errors=0, skipped=0)
  last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
  for number, kind in _COUNT.findall(last):
    counts["errors" if kind.startswith("error") else kind] = int(number)
  if done.returncode not in (0, 1, 5) and not any(counts.values()):
    counts["errors"] = 1   # (pytest itself failed: say so as an error)
  return dict(counts, seconds=time.perf_counter() - start, output=done.stdout + done.stderr)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--library", default="optax", choices=sorted(LIBRARIES))
  parser.add_argument("--files", nargs="*", default=(),
                      help="only the test files whose path contains one of these")
  parser.add_argument("--backend", help="refimpl's jit backend (REFIMPL_BACKEND)")
  parser.add_argument("--dir", default=default_folder())
  args = parser.parse_args(argv)
  target = install(args.library, args.dir)
  totals = dict(passed=0, failed=0, errors=0, skipped=0)
  for path in test_files(args.library, target, args.files):
    result = run_file(target, path, args.backend)
    for kind in totals:
      totals[kind] += result[kind]
    print(f"{path:60s} {result['passed']:5d} passed {result['failed']:4d} failed "
          f"{result['errors']:3d} errors {result['skipped']:4d} skipped "
          f"{result['seconds']:7.1f} s", flush=True)
  ran = totals["passed"] + totals["failed"] + totals["errors"]
  rate = 100 * totals["passed"] / ran if ran else 0.0
  print(f"{args.library}: {totals['passed']} passed, {totals['failed']} failed, "
        f"{totals['errors']} errors, {totals['skipped']} skipped: {rate:.1f}% passed")
  return 1 if totals["failed"] or totals["errors"] else 0


if __name__ == "__main__":
  sys.exit(main())
