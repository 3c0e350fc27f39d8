"""The PTX checks of the numba-cuda tests: a script that compiles programs'
kernels for compute capability 9.0 (`device.compiling_to_ptx`), run in a
process without numba's CUDA simulator, and the instructions of its PTX."""

import json
import os
import subprocess
import sys


def compiled_ptx(script, timeout=600):
  """The JSON that `script` prints on its last line, run by Python without
  NUMBA_ENABLE_CUDASIM (which the tests' process sets)."""
  env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
  done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                        timeout=timeout)
  assert done.returncode == 0, done.stderr[-3000:]
  return json.loads(done.stdout.splitlines()[-1])


def programs_ptx(setup, arguments, then=""):
  """{name: [(kernel, ptx), ...]}: the kernels of each program of the dict
  `programs` that the source `setup` defines (`json`, `np`, `jax` and the
  numba-cuda `device` module imported), jitted for numba-cuda and called on
  `arguments` (source); `then`, source run after them, may add to `found`."""
  return compiled_ptx("\n".join([
      "import json, numpy as np", "import refimpl as jax",
      "from numba_backend.cuda import device", setup, "found = {}",
      "for name, f in programs.items():",
      "  with device.compiling_to_ptx() as ptx:",
      f"    jax.jit(f, backend='numba-cuda')({arguments})",
      "  found[name] = ptx", then, "print(json.dumps(found))"]))


def instructions(ptx, text):
  """The PTX instructions of `ptx` (not its directives or comments) that contain `text`."""
  return [line for line in ptx.splitlines()
          if text in line and not line.lstrip().startswith((".", "//"))]
