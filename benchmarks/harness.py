"""What the benchmark scripts share: workloads as source text run with `jax`,
`jnp` and `lax` bound to an implementation of JAX's API, timing over repeats,
memory peaks, the worker subprocesses, and the report's formatting and plot.

Timings are per call: the median and the minimum over repeats, and the noise
(the spread of the repeats, (p75 - p25) / median).
"""

import importlib
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc

US, MS, MIB = 1e-6, 1e-3, 2 ** 20


def namespace(package, **names):
  """The names a workload uses: `jax`, `jnp` and `lax` bound to `package`
  and its `numpy` and `lax` modules, `np` to NumPy, and `names`."""
  import numpy as np
  modules = [importlib.import_module(name) for name in (package, f"{package}.numpy",
                                                         f"{package}.lax")]
  return {**dict(zip(("jax", "jnp", "lax"), modules)), "np": np, **names}


def leaves(out):
  """The arrays of a workload's result (nested tuples and lists flattened)."""
  if isinstance(out, (tuple, list)):
    return [leaf for o in out for leaf in leaves(o)]
  return [out]


def block(out):
  """Waits for `out` (JAX dispatches asynchronously)."""
  for leaf in leaves(out):
    if hasattr(leaf, "block_until_ready"):
      leaf.block_until_ready()


def summary(samples):
  """(median, min, noise) of `samples`; the noise is (p75 - p25) / median
  (0 for a single sample)."""
  median = statistics.median(samples)
  if len(samples) < 2 or median == 0:
    return median, min(samples), 0.0
  q = statistics.quantiles(samples, n=4)
  return median, min(samples), (q[2] - q[0]) / median


def time_statement(ns, stmt, budget, warmups=2, min_samples=5):
  """(median, min, noise) of the time per call of `stmt`, over at least
  `min_samples` repeats (at most 50) that together take about `budget`
  seconds, after `warmups` calls (trace, compile, fill caches)."""
  code = compile(stmt, "<bench>", "eval")
  for _ in range(warmups):
    block(eval(code, ns))
  start = time.perf_counter()
  block(eval(code, ns))
  once = time.perf_counter() - start
  number = max(1, int(budget / 10 / max(once, 1e-7)))
  samples = []
  deadline = time.perf_counter() + budget
  while len(samples) < min_samples or (time.perf_counter() < deadline and len(samples) < 50):
    start = time.perf_counter()
    for _ in range(number):
      block(eval(code, ns))
    samples.append((time.perf_counter() - start) / number)
  return summary(samples)


def machine_limits(repeats=10):
  """{"bandwidth": bytes/s, "read": bytes/s, "sgemm": flop/s}, the best of
  `repeats`: memory bandwidth as the bytes read and written per second by a
  copy of 256 MiB split among as many threads as there are cores (NumPy
  releases the GIL), the read rate as the bytes per second that NumPy's max
  reads of 64 MiB split the same way (from the caches where the last level
  holds it), and the float32 matmul rate of NumPy's BLAS on 2048x2048
  operands."""
  import numpy as np
  from concurrent.futures import ThreadPoolExecutor
  source = np.ones(2 ** 26, np.float32)
  target = np.empty_like(source)
  threads = os.cpu_count() or 1
  chunks = list(zip(np.array_split(target, threads), np.array_split(source, threads)))

  def best(run):
    run()
    times = []
    for _ in range(repeats):
      start = time.perf_counter()
      run()
      times.append(time.perf_counter() - start)
    return min(times)

  read = np.array_split(source[:2 ** 24], threads)
  with ThreadPoolExecutor(threads) as pool:
    copy = best(lambda: list(pool.map(lambda c: np.copyto(*c), chunks)))
    maxima = best(lambda: list(pool.map(np.max, read)))
  a = np.ones((2048, 2048), np.float32)
  product = best(lambda: a @ a)
  return {"bandwidth": 2 * source.nbytes / copy, "read": 4 * 2 ** 24 / maxima,
          "sgemm": 2 * 2048 ** 3 / product}


def memory_peak(ns, stmt):
  """The transient peak (bytes) that tracemalloc sees during one call of
  `stmt` (after a warm-up call), beyond what was allocated before it."""
  code = compile(stmt, "<bench>", "eval")
  block(eval(code, ns))
  tracemalloc.start()
  try:
    before = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    out = eval(code, ns)
    block(out)
    peak = tracemalloc.get_traced_memory()[1] - before
  finally:
    tracemalloc.stop()
  return peak


def add_compare_option(parser):
  """The `--compare PYTHON PACKAGE` option (default: $REFIMPL_BENCH_COMPARE)."""
  parser.add_argument("--compare", nargs=2, metavar=("PYTHON", "PACKAGE"),
                      default=os.environ.get("REFIMPL_BENCH_COMPARE", "").split() or None,
                      help="a Python interpreter and the package (JAX's API) to compare with")


def select(names, only):
  """The names containing one of the comma-separated substrings `only` (all without it)."""
  if not only:
    return list(names)
  wanted = only.split(",")
  return [n for n in names if any(w in n for w in wanted)]


def run_worker(python, script, args, what, env=None, show_progress=False):
  """The JSON that `python script args...` (a worker) prints, or None when it
  fails (its error output is printed). JAX runs on the CPU. With
  `show_progress` its error output goes to this process's as it runs."""
  proc = subprocess.run([python, os.path.abspath(script), *args], stdout=subprocess.PIPE,
                        stderr=None if show_progress else subprocess.PIPE, text=True,
                        env=dict(os.environ if env is None else env, JAX_PLATFORMS="cpu"))
  if proc.returncode:
    print(f"the {what} run failed" + ("" if show_progress else f":\n{proc.stderr}"),
          file=sys.stderr)
    return None
  return json.loads(proc.stdout)


def fmt_time(t):
  if t < 0:
    return "-" + fmt_time(-t)
  if t >= 1:
    return f"{t:.2f} s"
  if t >= MS:
    return f"{t / MS:.2f} ms"
  return f"{t / US:.1f} us"


def plot_ratios(path, names, series, xlabel):
  """A PNG at `path` of horizontal bars, one group per name, of the ratios
  in `series` ({label: [ratio or None per name]}, a legend when there are
  several), on a log scale; nothing (a message) without matplotlib or ratios."""
  try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
  except ImportError:
    print("matplotlib is not importable: no plot written", file=sys.stderr)
    return
  keep = [i for i in range(len(names)) if any(s[i] for s in series.values())]
  if not keep:
    print("no JAX figures: no plot written", file=sys.stderr)
    return
  fig, ax = plt.subplots(figsize=(8, 0.4 * len(keep) * len(series) + 1))
  height = 0.8 / len(series)
  for k, (label, ratios) in enumerate(series.items()):
    ax.barh([i + k * height for i in range(len(keep))],
            [ratios[i] or float("nan") for i in keep], height=height, label=label)
  ax.set_yticks([i + height * (len(series) - 1) / 2 for i in range(len(keep))],
                [names[i] for i in keep])
  ax.set_xscale("log")
  ax.axvline(1, color="k", lw=0.5)
  ax.set_xlabel(xlabel)
  ax.invert_yaxis()
  if len(series) > 1:
    ax.legend()
  fig.tight_layout()
  fig.savefig(path)
  print(f"plot written to {path}", file=sys.stderr)
