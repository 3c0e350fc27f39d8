"""The PTX checks of the numba-cuda tests: a script that compiles programs'
kernels for compute capability 9.0 (`device.compiling_to_ptx`), or the
kernels a run launched (`device.recording_launches`), run in a process
without numba's CUDA simulator, and the instructions of its PTX."""

import json
import os
import pickle
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


_RECORDED = """
import importlib.util, json, pickle, re, sys
import numba_backend.cuda.backend
from numba_backend.cuda import device
with open(sys.argv[1], "rb") as f:
  launches = pickle.load(f)
modules = {getattr(m, "__file__", None): m for m in list(sys.modules.values())}
found = {"compiled": 0, "failed": [], "externs": [], "shared": 0, "threads": 0}
with device.compiling_to_ptx():
  for path, name, signature, threads in sorted(launches, key=str):
    if isinstance(path, str) and path not in modules:
      spec = importlib.util.spec_from_file_location(f"recorded{len(modules)}", path)
      modules[path] = importlib.util.module_from_spec(spec)
      spec.loader.exec_module(modules[path])
    kernel = path[0](*path[1]) if isinstance(path, tuple) else getattr(modules[path], name)
    try:
      ptx = device.ptx(kernel, signature)
    except Exception as err:
      found["failed"].append(f"{name}{signature}: {type(err).__name__}: {err}"[:400])
      continue
    found["compiled"] += 1
    if ".entry" not in ptx or ".target sm_90" not in ptx:
      found["failed"].append(f"{name}{signature}: no sm_90 entry")
    if ".extern .func" in ptx:
      found["externs"].append(f"{name}{signature}")
    shared = sum(map(int, re.findall(r"\\.shared \\.align \\d+ \\.b8 \\w+\\[(\\d+)\\]", ptx)))
    found["shared"] = max(found["shared"], shared)
    found["threads"] = max(found["threads"], threads)
print(json.dumps(found))
"""


def recorded_ptx(launches, directory, timeout=1800):
  """Every kernel of `launches` (a set `device.recording_launches` filled)
  compiled to PTX for compute capability 9.0, in a process outside the
  simulator: {"compiled": count, "failed": [...], "externs": [kernels
  calling a function outside themselves], "shared": the most static shared
  memory of a kernel in bytes, "threads": the most threads of a launch's block}."""
  path = os.path.join(directory, "launches.pickle")
  with open(path, "wb") as f:
    pickle.dump(launches, f)
  env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
  done = subprocess.run([sys.executable, "-c", _RECORDED, path], env=env, capture_output=True,
                        text=True, timeout=timeout)
  assert done.returncode == 0, done.stderr[-3000:]
  return json.loads(done.stdout.splitlines()[-1])
