"""The numba backend's programs and their disk cache: one program serves
every shape, a later process loads a compiled program instead of compiling
it, damaged entries are detected and rebuilt, two processes filling one
entry at once both get it right, the directory stays under its size bound,
and `clear` empties it."""

import glob
import json
import math
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("numba")

# Runs a jitted program on the numba backend and prints its result and
# whether Numba loaded the program from its cache (hits) or compiled it.
_PROGRAM = textwrap.dedent("""
    import json, sys
    import numpy as np
    import refimpl as jax, refimpl.numpy as jnp
    from numba_backend import cache
    scale = float(sys.argv[1])
    f = jax.jit(lambda x: jnp.sin(x) * scale + 1.0, backend="numba")
    out = f(np.arange(4, dtype=np.float32))
    program = next(iter(cache._memory.values())).dispatcher
    print(json.dumps({"out": np.asarray(out).tolist(),
                      "hits": sum(program.stats.cache_hits.values()),
                      "misses": sum(program.stats.cache_misses.values())}))
""")


_BYTECODE = {"PYTHONDONTWRITEBYTECODE": ""}
"""Python writes the program modules' bytecode beside Numba's files, as it
does by default (the entries must not count it as Numba's)."""


def _run(cache_dir, scale=2.0, **env):
  result = subprocess.run(
      [sys.executable, "-c", _PROGRAM, str(scale)], capture_output=True, text=True,
      env={**os.environ, **_BYTECODE, "REFIMPL_NUMBA_CACHE_DIR": str(cache_dir), **env},
      timeout=300)
  assert result.returncode == 0, result.stderr
  return json.loads(result.stdout.strip().splitlines()[-1])


def _expected(scale=2.0):
  import numpy as np
  import refimpl as jax
  import refimpl.numpy as jnp
  return np.asarray(jax.jit(lambda x: jnp.sin(x) * scale + 1.0)(
      np.arange(4, dtype=np.float32))).tolist()


def _numba_files(cache_dir):
  return sorted(glob.glob(os.path.join(cache_dir, "program_*", "__pycache__", "program.*.nb[ic]")))


def _modules(cache_dir):
  return glob.glob(os.path.join(cache_dir, "program_*", "program.py"))


def _entry_files(cache_dir):
  """Every file of the cache directory's entries but their locks."""
  return [p for p in glob.glob(os.path.join(cache_dir, "program_*", "**"), recursive=True)
          if os.path.isfile(p) and not p.endswith(".lock")]


def test_a_later_process_loads_the_program_instead_of_compiling_it(tmp_path):
  first = _run(tmp_path)
  assert first["misses"] == 1 and first["hits"] == 0
  second = _run(tmp_path, scale=3.0)   # a new literal value: the same program
  assert second["hits"] == 1 and second["misses"] == 0
  assert first["out"] == _expected(2.0) and second["out"] == _expected(3.0)
  (sums,) = glob.glob(os.path.join(tmp_path, "program_*", "program.sums"))
  assert sorted(json.load(open(sums))) == [os.path.basename(p) for p in _numba_files(tmp_path)]


def test_one_program_serves_every_shape():
  """The lowering reads every size at run time and leaves no code out for
  empty operands: the same function traced at shapes with and without
  empty axes gives one program source, and each instance agrees with the
  reference."""
  import numpy as np
  import refimpl as jax
  from refimpl import lax
  from numba_backend.lower import lower_program

  def f(x):
    update = lax.slice(x, (0, 0), (x.shape[0] // 2, x.shape[1]))
    return [lax.concatenate([x, update, x], 0),
            lax.pad(x, np.float32(7), [(1, -1, 1), (-1, 2, 0)]),
            lax.reduce_sum(x, (0,)), lax.reduce_max(x, (0,)),
            lax.dynamic_update_slice(x, update, (np.int32(1), np.int32(0)))]

  sources = set()
  for shape in [(3, 2), (0, 2), (4, 0), (1, 1)]:
    x = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
    sources.add(lower_program(jax.make_jaxpr(f)(x).jaxpr)[0])
    for ref, out in zip(jax.jit(f)(x), jax.jit(f, backend="numba")(x)):
      np.testing.assert_array_equal(np.asarray(out), np.asarray(ref))
  assert len(sources) == 1


@pytest.mark.parametrize("damage", ["flip a bit of the object code", "truncate the index",
                                    "garble the module"])
def test_a_damaged_entry_is_detected_and_rebuilt(tmp_path, damage):
  _run(tmp_path)
  if damage == "garble the module":
    (path,) = _modules(tmp_path)
  else:
    suffix = ".nbc" if "object code" in damage else ".nbi"
    (path,) = [p for p in _numba_files(tmp_path) if p.endswith(suffix)]
  data = bytearray(open(path, "rb").read())
  if damage == "truncate the index":
    data = data[:len(data) // 2]
  elif damage == "flip a bit of the object code":
    data[len(data) // 2] ^= 0x10
  else:
    data = data.replace(b"np.sin(", b"np.cos(")   # a program computing something else
  open(path, "wb").write(bytes(data))
  rebuilt = _run(tmp_path)
  assert rebuilt["misses"] == 1 and rebuilt["out"] == _expected()
  assert _run(tmp_path)["hits"] == 1   # and the rebuilt entry is trusted again


def test_two_processes_filling_one_entry_at_once_are_both_right(tmp_path):
  env = {**os.environ, "REFIMPL_NUMBA_CACHE_DIR": str(tmp_path)}
  processes = [subprocess.Popen([sys.executable, "-c", _PROGRAM, "2.0"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for _ in range(2)]
  results = [p.communicate(timeout=300) for p in processes]
  for p, (out, err) in zip(processes, results):
    assert p.returncode == 0, err
    assert json.loads(out.strip().splitlines()[-1])["out"] == _expected()
  # The lock made one of them wait and load what the other compiled.
  assert sorted(json.loads(out.strip().splitlines()[-1])["misses"]
                for out, _ in results) == [0, 1]
  assert _run(tmp_path)["hits"] == 1


def test_the_directory_stays_under_its_size_bound_and_clear_empties_it(tmp_path, monkeypatch):
  _run(tmp_path)
  (old,) = _modules(tmp_path)
  entry_bytes = sum(os.path.getsize(p) for p in _entry_files(tmp_path))
  code = _PROGRAM.replace("jnp.sin(x)", "jnp.cos(x)")   # another program, of about that size
  subprocess.run([sys.executable, "-c", code, "2.0"], check=True, capture_output=True,
                 env={**os.environ, **_BYTECODE, "REFIMPL_NUMBA_CACHE_DIR": str(tmp_path),
                      "REFIMPL_NUMBA_CACHE_MAX_MB": str(1.5 * entry_bytes / 2**20)}, timeout=300)
  programs = _modules(tmp_path)
  files = {os.path.relpath(p, tmp_path): os.path.getsize(p) for p in _entry_files(tmp_path)}
  assert len(programs) == 1, f"no entry went under a bound of {1.5 * entry_bytes} bytes: {files}"
  assert programs[0] != old   # the least recently used entry went

  monkeypatch.setenv("REFIMPL_NUMBA_CACHE_DIR", str(tmp_path))
  from numba_backend import cache
  cache.clear()
  assert not _entry_files(tmp_path)


def test_a_process_measures_the_directory_at_its_first_program_then_each_32nd_of_the_bound(
    monkeypatch):
  from numba_backend import cache
  pruned = []
  monkeypatch.setattr(cache, "prune", lambda: pruned.append(True))
  monkeypatch.setattr(cache, "_unmeasured", None)
  monkeypatch.setenv("REFIMPL_NUMBA_CACHE_MAX_MB", "32")   # a 32nd of it: 1 MiB
  cache._compiled(10)
  assert len(pruned) == 1
  cache._compiled(2**20 - 1)
  assert len(pruned) == 1
  cache._compiled(1)
  assert len(pruned) == 2
  cache._compiled(2**20 - 1)
  assert len(pruned) == 2


def test_the_cpu_programs_key_covers_the_backends_source_less_the_cuda_targets(tmp_path):
  """A change to a file of numba_backend/ changes the key of every program
  that may compile it (the CPU backend's, VERSION, and numba-cuda's); one to
  numba_backend/cuda/ changes numba-cuda's alone."""
  from numba_backend.backend import source_digest
  package = tmp_path / "numba_backend"
  (package / "cuda").mkdir(parents=True)
  (package / "scalars.py").write_text("a = 1\n")
  (package / "cuda" / "lower.py").write_text("b = 1\n")

  def keys():
    return (source_digest(str(package), skip=str(package / "cuda")),
            source_digest(str(package)))

  first = keys()
  (package / "cuda" / "lower.py").write_text("b = 2\n")
  second = keys()
  (package / "scalars.py").write_text("a = 2\n")
  third = keys()
  assert second[0] == first[0] and second[1] != first[1]
  assert third[0] != second[0] and third[1] != second[1]


def test_the_programs_keys_cover_the_reference_functions_they_compile(tmp_path, monkeypatch):
  """A change to a module of the reference whose functions the rules compile
  into programs (refimpl/lax/linalg.py's QR steps, for one) changes the key
  of the CPU backend's programs and of numba-cuda's."""
  import types
  from numba_backend import backend
  from refimpl.lax import linalg
  assert linalg in backend.COMPILED_REFERENCE
  package, module = tmp_path / "numba_backend", tmp_path / "linalg.py"
  package.mkdir()
  (package / "scalars.py").write_text("a = 1\n")
  module.write_text("def f():\n  return 1\n")
  monkeypatch.setattr(backend, "COMPILED_REFERENCE", (types.SimpleNamespace(__file__=str(module)),))

  def keys():
    return (backend.source_digest(str(package), skip=str(package / "cuda")),
            backend.source_digest(str(package)))

  first = keys()
  module.write_text("def f():\n  return 2\n")
  second = keys()
  assert second[0] != first[0] and second[1] != first[1]
