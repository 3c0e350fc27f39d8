"""The numba-cuda backend on a machine with a CUDA GPU, in minutes: each
workload at a real size, checked against the numba backend on the CPU, then
timed on the device, with the device's measured copy bandwidth and the
fraction of it (or of the FP32 rate given) each workload reaches.

  python benchmarks/gpu_check.py [--report gpu_report.md] [--scale S]
                                 [--fp32-tflops 67] [--conformance N] [--family NAME]
                                 [--jobs J] [--simulate]

The report (Markdown, and JSON beside it) says how long the whole check
took, whether a result's device memory reaches CUDA consumers without a
copy (`interop`), and for each workload its check (bit for bit, or within
the stated tolerance), its times (median and minimum over repeats, results
left on the device), and its rate against the target of docs/backends.md's
numba-cuda section: elementwise and reduction workloads at 70% of the copy
bandwidth, matmul at 50% of the FP32 rate (a loop, sort, scatter, fft and
the batched decompositions, a thread a matrix, have none: `UNTARGETED`,
their rate reported alone). A workload the backend does not lower yet is
reported as such. First, the conformance suite runs on the device
(`python -m conformance --backend numba-cuda --examples N [--family
NAME]... --shard K/J`, N = 1 by default, 0 leaving it out; J processes at
once, the CPU count up to 8 by default), its verdicts in the report.
`--simulate` runs it all in numba's CUDA simulator at tiny sizes, without
the conformance suite unless asked (and then without its documented
examples), a check of the script itself, no GPU needed; its times mean
nothing.
"""

import argparse
import concurrent.futures
import json
import math
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# name: (setup source with sizes as names, statement, sizes, the data's axes, bytes moved,
#        flops, whether the check is bit for bit)
WORKLOADS = {
    "selu f32[n]": (
        "x = jnp.asarray(np.linspace(-3, 3, n, dtype=np.float32))\n"
        "f = jax.jit(jax.nn.selu)", "f(x)", {"n": 10**8}, 1, lambda s: 8 * s["n"], 0, True),
    "chain (tanh, exp, sin, sqrt) f32[n]": (
        "x = jnp.asarray(np.linspace(0, 2, n, dtype=np.float32))\n"
        "f = jax.jit(lambda x: jnp.sqrt(jnp.abs(jnp.sin(jnp.exp(jnp.tanh(x)) * 2.0)) + 1.0))",
        "f(x)", {"n": 10**8}, 1, lambda s: 8 * s["n"], 0, True),
    "sum over axis 1 f32[n, n]": (
        "x = jnp.asarray(np.random.default_rng(0).standard_normal((n, n), np.float32))\n"
        "f = jax.jit(lambda x: jnp.sum(x, axis=1))", "f(x)", {"n": 16384}, 2,
        lambda s: 4 * s["n"] ** 2, 0, True),
    "sum over axis 0 f32[n, n]": (
        "x = jnp.asarray(np.random.default_rng(0).standard_normal((n, n), np.float32))\n"
        "f = jax.jit(lambda x: jnp.sum(x, axis=0))", "f(x)", {"n": 16384}, 2,
        lambda s: 4 * s["n"] ** 2, 0, True),
    "softmax over the last axis f32[n, m]": (
        "x = jnp.asarray(np.random.default_rng(0).standard_normal((n, m), np.float32))\n"
        "f = jax.jit(lambda x: jax.nn.softmax(x, axis=-1))", "f(x)", {"n": 8192, "m": 4096},
        2, lambda s: 8 * s["n"] * s["m"], 0, True),
    "transpose f32[n, n]": (
        "x = jnp.asarray(np.arange(n * n, dtype=np.float32).reshape(n, n))\n"
        "f = jax.jit(lambda x: x.T + 1.0)", "f(x)", {"n": 8192}, 2, lambda s: 8 * s["n"] ** 2,
        0, True),
    "cumsum over axis 0 f32[n, n]": (
        "x = jnp.asarray(np.random.default_rng(0).standard_normal((n, n), np.float32))\n"
        "f = jax.jit(lambda x: jnp.cumsum(x, axis=0))", "f(x)", {"n": 8192}, 2,
        lambda s: 8 * s["n"] ** 2, 0, True),
    "matmul f32[n]^2": (
        "x = jnp.asarray(np.random.default_rng(0).standard_normal((n, n), np.float32))\n"
        "f = jax.jit(lambda x: x @ x)", "f(x)", {"n": 4096}, 2,
        lambda s: 8 * s["n"] ** 2, lambda s: 2 * s["n"] ** 3, False),
    "random.normal f32[n]": (
        "key = jax.random.PRNGKey(0)\nf = jax.jit(lambda key: jax.random.normal(key, (n,)))",
        "f(key)", {"n": 10**8}, 1, lambda s: 4 * s["n"], 0, True),
    "sum f32[n]": (
        "x = jnp.asarray(np.random.default_rng(0).standard_normal(n, np.float32))\n"
        "f = jax.jit(jnp.sum)", "f(x)", {"n": 10**8}, 1, lambda s: 4 * s["n"], 0, True),
    "fori_loop of 100 elementwise steps f32[n]": (
        "x = jnp.asarray(np.linspace(0, 1, n, dtype=np.float32))\n"
        "f = jax.jit(lambda x: lax.fori_loop(0, 100, lambda i, x: x * 0.999 + jnp.sin(x), x))",
        "f(x)", {"n": 10**7}, 1, lambda s: 8 * s["n"], 0, True),
    "sort f32[n]": (
        "x = jnp.asarray(np.random.default_rng(0).standard_normal(n, np.float32))\n"
        "f = jax.jit(jnp.sort)", "f(x)", {"n": 2**24}, 1, lambda s: 8 * s["n"], 0, True),
    "scatter-add of 8n updates f32[n]": (
        "rng = np.random.default_rng(0)\nx = jnp.zeros(n, np.float32)\n"
        "i = jnp.asarray(rng.integers(0, n, 8 * n))\n"
        "u = jnp.asarray(rng.standard_normal(8 * n, np.float32))\n"
        "f = jax.jit(lambda x, i, u: x.at[i].add(u))", "f(x, i, u)", {"n": 10**6}, 1,
        lambda s: 4 * s["n"] + 80 * s["n"], 0, True),
    "fft c64[n]": (
        "rng = np.random.default_rng(0)\n"
        "x = rng.standard_normal(n) + 1j * rng.standard_normal(n)\n"
        "x = jnp.asarray(x.astype(np.complex64))\n"
        "f = jax.jit(jnp.fft.fft)", "f(x)", {"n": 2**22}, 1, lambda s: 16 * s["n"], 0, False),
    "qr of a batch f32[b, 8, 8]": (
        "x = jnp.asarray(np.random.default_rng(0).standard_normal((b, 8, 8), np.float32))\n"
        "f = jax.jit(lambda x: jnp.linalg.qr(x)[1])", "f(x)", {"b": 2**16}, 1,
        lambda s: 4 * 128 * s["b"], 0, True),
    "eigvalsh of a batch f32[b, 8, 8]": (
        "x = np.random.default_rng(0).standard_normal((b, 8, 8), np.float32)\n"
        "x = jnp.asarray(x + np.swapaxes(x, 1, 2))\nf = jax.jit(jnp.linalg.eigvalsh)", "f(x)",
        {"b": 2**16}, 1, lambda s: 4 * 72 * s["b"], 0, False),
    "eigenvalues' moduli summed, a batch f32[b, 8, 8]": (
        "x = jnp.asarray(np.random.default_rng(0).standard_normal((b, 8, 8), np.float32))\n"
        "f = jax.jit(lambda x: jnp.sum(jnp.abs(jnp.linalg.eigvals(x)), axis=-1))", "f(x)",
        {"b": 2**16}, 1, lambda s: 4 * 65 * s["b"], 0, False),
}
UNTARGETED = {"fori_loop of 100 elementwise steps f32[n]", "sort f32[n]",
              "scatter-add of 8n updates f32[n]", "fft c64[n]", "qr of a batch f32[b, 8, 8]",
              "eigvalsh of a batch f32[b, 8, 8]",
              "eigenvalues' moduli summed, a batch f32[b, 8, 8]"}
"""Workloads without a target: their rate (the bytes they read and write a
second) is reported beside the copy bandwidth's, with no target to meet."""


def _scaled(sizes, axes, scale):
  """The sizes for `scale` times the elements of data of `axes` axes."""
  return {k: max(2, int(round(v * scale ** (1 / axes)))) for k, v in sizes.items()}


def _copy_bandwidth(nbytes):
  """Bytes a second a device-to-device copy of `nbytes` moves (read and written)."""
  import numpy as np
  from numba import cuda
  source = cuda.to_device(np.ones(nbytes // 4, np.float32))
  target = cuda.device_array_like(source)
  target.copy_to_device(source)
  cuda.synchronize()
  best = math.inf
  for _ in range(10):
    start = time.perf_counter()
    target.copy_to_device(source)
    cuda.synchronize()
    best = min(best, time.perf_counter() - start)
  return 2 * nbytes / best


def _check(name, ns, exact):
  """The workload's result on numba-cuda against the numba backend's (CPU),
  compiled with its checked float32 functions (the reference's bits, as the
  device's libdevice functions rounded from float64), not its float32 ones."""
  import numpy as np
  import refimpl as jax
  from numba_backend.lower import Lowering
  setup, stmt, *_ = WORKLOADS[name]
  got = eval(stmt, ns)
  with jax.config.option("backend", "numba"):
    fast, Lowering.float32_functions = Lowering.float32_functions, False
    try:
      cpu = dict(ns)
      exec(setup, cpu)
      want = eval(stmt, cpu)
    finally:
      Lowering.float32_functions = fast
  got, want = np.asarray(got), np.asarray(want)
  if got.shape != want.shape or got.dtype != want.dtype:
    return (f"FAILED: {got.dtype}{list(got.shape)} where the CPU gives "
            f"{want.dtype}{list(want.shape)}")
  if exact:
    same = np.array_equal(got, want, equal_nan=True)
    return "bit for bit" if same else f"FAILED: {np.sum(got != want)} elements differ"
  scale = np.max(np.abs(want)) * want.size ** 0.5
  error = np.max(np.abs(got.astype(np.result_type(got.dtype, np.float64)) - want))
  bound = 64 * np.finfo(want.dtype).eps * scale
  return f"within {error:.3g} (bound {bound:.3g})" if error <= bound else \
      f"FAILED: off by {error:.3g} (bound {bound:.3g})"


def conformance(examples, families, simulate, jobs):
  """The verdict lines of the conformance suite on numba-cuda, with
  `examples` examples a case (the `families` only, if any), split between
  `jobs` processes run at once (`--shard K/jobs`; on a fresh machine,
  compiling its thousands of kernels is most of its time, a core a
  process, and the processes share numba-cuda's disk cache); simulated,
  without the documented examples, whose million-element arrays would take
  hours."""
  selected = [arg for family in families for arg in ("--family", family)]
  if simulate:
    selected += ["--part", "cases", "--part", "derivatives"]
  command = [sys.executable, "-m", "conformance", "--backend", "numba-cuda",
             "--examples", str(examples), *selected]

  def shard(k):
    done = subprocess.run([*command, "--shard", f"{k}/{jobs}"], capture_output=True, text=True,
                          cwd=os.path.dirname(HERE))
    lines = done.stdout.strip().splitlines()
    return lines[-1] if lines else f"exited {done.returncode}: {done.stderr[-300:]}"

  with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
    return list(pool.map(shard, range(1, jobs + 1)))


def interop(simulate):
  """How a result's device memory reaches CUDA consumers: through
  `__cuda_array_interface__` to numba-cuda, and DLPack to PyTorch and CuPy
  where they are installed; each "zero-copy" when the consumer's array
  starts at the result's device address and holds its values. A line for
  the report (the simulator has no device addresses to share)."""
  if simulate:
    return "not checked in the simulator"
  import numpy as np
  import refimpl as jax
  from numba import cuda
  expected = np.arange(1024, dtype=np.float32) * 2
  x = jax.jit(lambda a: a * 2, backend="numba-cuda")(np.arange(1024, dtype=np.float32))
  address = x.__cuda_array_interface__["data"][0]
  consumers = {"numba-cuda": lambda: cuda.from_cuda_array_interface(
      x.__cuda_array_interface__, owner=x)}
  readers = {"numba-cuda": lambda a: (a.device_ctypes_pointer.value, a.copy_to_host())}
  try:
    import torch
    consumers["torch"] = lambda: torch.from_dlpack(x)
    readers["torch"] = lambda t: (t.data_ptr(), t.cpu().numpy())
  except ImportError:
    pass
  try:
    import cupy
    consumers["cupy"] = lambda: cupy.from_dlpack(x)
    readers["cupy"] = lambda a: (a.data.ptr, a.get())
  except ImportError:
    pass
  results = []
  for name, consume in consumers.items():
    try:
      start, values = readers[name](consume())
      same = start == address and np.array_equal(values, expected)
      results.append(f"{name} {'zero-copy' if same else 'FAILED: another address or values'}")
    except Exception as err:   # a consumer's refusal is the finding to report
      results.append(f"{name} FAILED: {type(err).__name__}: {err}")
  return ", ".join(results)


def run(scale, fp32_flops, simulate):
  """The report of every workload, jitted for numba-cuda (for this block
  only: the process's configured backend is left as it was)."""
  import refimpl as jax
  with jax.config.option("backend", "numba-cuda"):
    return _run(scale, fp32_flops, simulate)


def _run(scale, fp32_flops, simulate):
  import numpy as np
  import refimpl as jax
  from refimpl import lax
  import refimpl.numpy as jnp
  from numba_backend.lower import LoweringError
  if HERE not in sys.path:
    sys.path.insert(0, HERE)
  from harness import time_statement
  device = jax.devices()[0]
  bandwidth = _copy_bandwidth(2**20 if simulate else 2**30)
  rows = []
  for name, (setup, stmt, sizes, axes, moved, flops, exact) in WORKLOADS.items():
    s = _scaled(sizes, axes, scale)
    ns = {"jax": jax, "jnp": jnp, "lax": lax, "np": np, **s}
    row = {"workload": name, "sizes": s}
    try:
      exec(setup, ns)
      start = time.perf_counter()
      jax.block_until_ready(eval(stmt, ns))
      row["first call s"] = time.perf_counter() - start
    except LoweringError as err:
      row["check"] = f"not lowered yet: {str(err).split(' (in equation')[0]}"
      rows.append(row)
      continue
    row["check"] = _check(name, ns, exact)
    median, least, noise = time_statement(  # (in the simulator, only that the timing runs)
        ns, stmt, **(dict(budget=0, warmups=0, min_samples=2) if simulate else dict(budget=3)))
    row.update({"median s": median, "min s": least, "noise": noise})
    if flops:
      row["rate"] = flops(s) / least
      row["of the limit"] = row["rate"] / fp32_flops
      row["target"] = 0.5
    else:
      row["rate"] = moved(s) / least
      row["of the limit"] = row["rate"] / bandwidth
      row["target"] = None if name in UNTARGETED else 0.7
    rows.append(row)
  return {"device": f"{device} {device.device_kind}", "copy bandwidth B/s": bandwidth,
          "fp32 flop/s": fp32_flops, "simulated": simulate, "rows": rows}


def _conformance_lines(report):
  verdicts = report["conformance"]
  passed = all(v.startswith("conformance: PASS") for v in verdicts)
  return [f"Conformance, in {len(verdicts)} processes ({report['conformance s']:.0f} s): "
          f"{'PASS' if passed else 'FAIL'}", "",
          *(f"- shard {k}/{len(verdicts)}: {v}" for k, v in enumerate(verdicts, 1)), ""]


def markdown(report):
  lines = [f"# numba-cuda on {report['device']}", "",
           f"Copy bandwidth {report['copy bandwidth B/s'] / 1e9:.0f} GB/s (device to device, "
           f"read and written); FP32 rate taken as {report['fp32 flop/s'] / 1e12:.1f} TFLOP/s. "
           f"The whole check took {report['whole run s']:.0f} s."
           + (" Simulated: the times mean nothing." if report["simulated"] else ""), "",
           *(_conformance_lines(report) if "conformance" in report else []),
           f"Device memory to CUDA consumers: {report['interop']}", "",
           "| workload | check | first call | median | min | rate | of the limit | target |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
  for row in report["rows"]:
    if "median s" not in row:
      lines.append(f"| {row['workload']} | {row['check']} | | | | | | |")
      continue
    unit = "GFLOP/s" if row["target"] == 0.5 else "GB/s"
    met = "none" if row["target"] is None else \
        f"{row['target']:.0%}: {'met' if row['of the limit'] >= row['target'] else 'not met'}"
    lines.append(f"| {row['workload']} {row['sizes']} | {row['check']} | "
                 f"{row['first call s']:.2f} s | {row['median s'] * 1e3:.3f} ms | "
                 f"{row['min s'] * 1e3:.3f} ms | {row['rate'] / 1e9:.1f} {unit} | "
                 f"{row['of the limit']:.0%} | {met} |")
  return "\n".join(lines) + "\n"


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--report", default="gpu_report.md", help="the Markdown report's path "
                      "(its JSON beside it, .json)")
  parser.add_argument("--scale", type=float, default=None,
                      help="the workloads' elements times S (default 1; 1e-5 simulated)")
  parser.add_argument("--fp32-tflops", type=float, default=67.0,
                      help="the device's FP32 rate (an H200's, by default)")
  parser.add_argument("--conformance", type=int, default=None, metavar="N",
                      help="examples a case of the conformance suite run first (default 1; "
                           "0 simulated); 0 leaves it out")
  parser.add_argument("--family", action="append", default=[],
                      help="run the conformance cases of this family only (repeatable)")
  parser.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1), metavar="J",
                      help="processes the conformance suite is split between (default: the "
                           "CPU count, at most 8)")
  parser.add_argument("--simulate", action="store_true",
                      help="run in numba's CUDA simulator at tiny sizes (no GPU)")
  args = parser.parse_args(argv)
  if args.simulate:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"   # (read when numba.cuda is first imported)
  scale = args.scale if args.scale is not None else (1e-5 if args.simulate else 1.0)
  examples = args.conformance if args.conformance is not None else (0 if args.simulate else 1)
  if args.jobs < 1:
    parser.error("--jobs must be at least 1")
  start = time.perf_counter()
  verdicts = conformance(examples, args.family, args.simulate, args.jobs) if examples else []
  took = time.perf_counter() - start
  report = run(scale, args.fp32_tflops * 1e12, args.simulate)
  report["interop"] = interop(args.simulate)
  if verdicts:
    report.update({"conformance": verdicts, "conformance s": took})
  report["whole run s"] = time.perf_counter() - start
  text = markdown(report)
  print(text)
  with open(args.report, "w") as f:
    f.write(text)
  with open(os.path.splitext(args.report)[0] + ".json", "w") as f:
    json.dump(report, f, indent=1)
  failed = (any(not v.startswith("conformance: PASS") for v in verdicts)
            or "FAILED" in report["interop"])
  return 1 if failed or any(row["check"].startswith("FAILED") for row in report["rows"]) else 0


if __name__ == "__main__":
  sys.exit(main())
