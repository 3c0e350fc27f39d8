"""Speed and memory of the reference implementation, side by side with JAX.

    python benchmarks/reference.py [--quick] [--size-mib N] [--compare PYTHON PACKAGE]
                                   [--only NAME,...] [--json FILE] [--plot FILE]

Each workload is source text run with `jax`, `jnp`, `lax` and `np` bound to
an implementation of JAX's API, a package and its `numpy` and `lax`
modules: to `refimpl` in this process and, with `--compare PYTHON PACKAGE`
(or REFIMPL_BENCH_COMPARE="PYTHON PACKAGE"), to the package of that name
(JAX itself: `--compare /path/to/python jax`) in a subprocess of that
interpreter running this same file. The project names no other package:
the one compared with is the command line's.

Timings are per call: the median and the minimum over repeats, and the noise
(the spread of the repeats, (p75 - p25) / median); ratios to JAX compare the
minimums, the figures least disturbed by other load on the machine, and so
do the targets' verdicts. Memory figures are the
transient peak that `tracemalloc` sees during one call, beyond what was
allocated before it (NumPy reports its buffers to tracemalloc; XLA does not,
so JAX has no comparable memory figure). Results go to a table on stdout,
a JSON file, and a PNG plot of the time ratios if matplotlib is importable.
"""

import argparse
import json
import os
import re
import sys

from harness import (MIB, US, add_compare_option, fmt_time, memory_peak, namespace,
                     plot_ratios, run_worker, select, time_statement)

# name -> (kind, setup, statement, target); kind "time" or "memory".
# A target is ("ratio", r): at most r times JAX; ("abs", seconds or bytes);
# ("per_eqn", seconds, eqns): the time per equation; ("loop", seconds, n,
# body_eqns): per iteration, beyond the body's equations at the measured
# per-equation cost; ("of", workload, r): at most r times another workload
# of the same run (a NumPy version, "numpy ..."); or None (measured only).
_CONV_SETUP = """
rng = np.random.default_rng(0)
x = rng.standard_normal((8, 64, 32, 32), dtype=np.float32)
w = rng.standard_normal((64, 64, 3, 3), dtype=np.float32)
"""

WORKLOADS = {
    "import package, package.numpy": ("time", """
import subprocess, sys
command = [sys.executable, "-c", f"import {jax.__name__}, {jax.__name__}.numpy"]
""", "subprocess.run(command, check=True)", ("abs", 0.3)),
    "eager x + x f32[8]": ("time", "x = jnp.ones(8, jnp.float32)", "x + x", ("ratio", 2)),
    "eager jnp.sin f32[8]": ("time", "x = jnp.ones(8, jnp.float32)", "jnp.sin(x)", ("ratio", 2)),
    "eager jnp.clip f32[8]": ("time", "x = jnp.ones(8, jnp.float32)",
                              "jnp.clip(x, 0.0, 0.5)", None),
    "jit trivial call": ("time", "f = jax.jit(lambda x: x)\nx = jnp.ones(8, jnp.float32)",
                         "f(x)", ("ratio", 2)),
    "jit 2000-op chain, per eqn": ("time", """
def chain(x):
  for _ in range(2000):
    x = x + 1.0
  return x
f = jax.jit(chain)
x = jnp.ones(8, jnp.float32)
""", "f(x)", ("per_eqn", 5 * US, 2000)),
    "warm jit(grad) 64x64": ("time", """
w = jnp.ones((64, 64), jnp.float32) / 64
f = jax.jit(jax.grad(lambda w, x: jnp.sum(jnp.tanh(x @ w) ** 2)))
x = jnp.ones((64, 64), jnp.float32)
""", "f(w, x)", None),
    "MLP grad 784-512-10 b256": ("time", """
k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
params = (jax.random.normal(k1, (784, 512)) * 0.03, jnp.zeros(512),
          jax.random.normal(k2, (512, 10)) * 0.03, jnp.zeros(10))
x = jax.random.normal(k3, (256, 784))
y = jax.nn.one_hot(jnp.arange(256) % 10, 10)
def loss(p, x, y):
  w1, b1, w2, b2 = p
  h = jax.nn.relu(x @ w1 + b1)
  return -jnp.mean(jnp.sum(jax.nn.log_softmax(h @ w2 + b2) * y, axis=-1))
f = jax.jit(jax.grad(loss))
""", "f(params, x, y)", None),
    "scan RNN T=1000 H=128": ("time", """
k1, k2 = jax.random.split(jax.random.PRNGKey(0))
w = jax.random.normal(k1, (128, 128)) * 0.05
xs = jax.random.normal(k2, (1000, 128))
def rnn(w, xs):
  def step(h, x):
    h = jnp.tanh(h @ w + x)
    return h, h
  return lax.scan(step, jnp.zeros(128), xs)[1]
f = jax.jit(rnn)
""", "f(w, xs)", None),
    "scan empty body, per iteration": ("time", """
f = jax.jit(lambda c, xs: lax.scan(lambda c, x: (c, x), c, xs))
c, xs = jnp.zeros(()), jnp.zeros(1000)
""", "f(c, xs)", ("loop", 20 * US, 1000, 0)),
    "while_loop 2-op body, per iteration": ("time", """
f = jax.jit(lambda n: lax.while_loop(lambda i: i < n, lambda i: i + 1, 0))
""", "f(1000)", ("loop", 20 * US, 1000, 2)),
    "random.normal (10**7,)": ("time", "key = jax.random.PRNGKey(0)",
                               "jax.random.normal(key, (10**7,))", ("ratio", 10)),
    "matmul 2000x2000 f32": ("time", "a = jnp.ones((2000, 2000), jnp.float32)", "a @ a",
                             ("of", "numpy matmul 2000x2000 f32", 2)),
    "numpy matmul 2000x2000 f32": ("time", "a = np.ones((2000, 2000), np.float32)", "a @ a", None),
    "conv 3x3 f32[8,64,32,32]": ("time", _CONV_SETUP + """
x, w = jnp.asarray(x), jnp.asarray(w)
f = lambda x, w: lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)))
""", "f(x, w)", ("of", "numpy conv 3x3 f32[8,64,32,32]", 2)),
    "numpy conv 3x3 f32[8,64,32,32]": ("time", _CONV_SETUP + """
def f(x, w):   # the padded operand's 3x3 windows, contracted with the kernel by BLAS
  padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
  windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
  return np.tensordot(windows, w, axes=([1, 4, 5], [1, 2, 3])).transpose(0, 3, 1, 2)
""", "f(x, w)", None),
    # transient memory peaks (refimpl only: tracemalloc does not see XLA's buffers)
    "mem x + 1": ("memory", "x = jnp.ones(N, jnp.float32)", "x + 1", None),
    "mem x * x": ("memory", "x = jnp.ones(N, jnp.float32)", "x * x", None),
    "mem jit(sin(x) * 2 + 1)": ("memory", """
f = jax.jit(lambda x: jnp.sin(x) * 2 + 1)
x = jnp.ones(N, jnp.float32)
f(x[:8])
""", "f(x)", None),
    "mem grad(sum(sin(x) ** 2))": ("memory", """
f = jax.grad(lambda x: jnp.sum(jnp.sin(x) ** 2))
x = jnp.ones(N, jnp.float32)
""", "f(x)", None),
    "mem random.normal (10**7,)": ("memory", "key = jax.random.PRNGKey(0)",
                                   "jax.random.normal(key, (10**7,))", None),
    "mem matmul 2000x2000 f32": ("memory", "a = jnp.ones((2000, 2000), jnp.float32)",
                                 "a @ a", None),
}

QUICK_SKIPPED = {"random.normal (10**7,)", "matmul 2000x2000 f32", "numpy matmul 2000x2000 f32"}
NUMPY = "numpy "   # the workloads that are NumPy's versions of others (not run with JAX)


# --- the worker: runs workloads with one implementation -----------------------------------

def run_workloads(impl, names, size_elems, budget):
  results = {}
  for name in names:
    kind, setup, stmt, _ = WORKLOADS[name]
    ns = namespace(impl, N=size_elems)
    try:
      exec(setup, ns)
      if kind == "time":
        median, minimum, noise = time_statement(ns, stmt, budget)
        results[name] = {"median": median, "min": minimum, "noise": noise}
      elif impl == "refimpl":  # tracemalloc sees NumPy's buffers, not XLA's
        results[name] = {"peak": memory_peak(ns, stmt)}
    except Exception as err:  # a failing workload is reported, not fatal
      results[name] = {"error": f"{type(err).__name__}: {err}"}
    print(f"  {impl}: {name} done", file=sys.stderr, flush=True)
  return results


# --- the report ------------------------------------------------------------------------

def _per_eqn_cost(results, stat):
  """The `stat` ("median" or "min") time per equation of the 2000-op chain (0
  when it was not run)."""
  chain = results.get("jit 2000-op chain, per eqn", {})
  return chain[stat] / 2000 if stat in chain else 0


def _figure(name, res, results):
  """(median, min) of the figure shown for a workload: the time per call, or
  per equation, or per loop iteration beyond the body's equations (at the
  per-equation cost measured in the same run, `results`)."""
  target = WORKLOADS[name][3]
  if target and target[0] == "per_eqn":
    return res["median"] / target[2], res["min"] / target[2]
  if target and target[0] == "loop":
    _, _, n, body = target
    return tuple(res[stat] / n - body * _per_eqn_cost(results, stat)
                 for stat in ("median", "min"))
  return res["median"], res["min"]


def _ratio(name, ref, jax):
  """refimpl's time over JAX's, of the minimums (the least disturbed by other
  load on the machine); None without JAX, or for figures per equation or
  iteration (XLA compiles those loops away: no like for like)."""
  target = WORKLOADS[name][3]
  if "min" not in jax.get(name, {}) or "min" not in ref.get(name, {}) or (
      target and target[0] in ("per_eqn", "loop")):
    return None
  return ref[name]["min"] / jax[name]["min"]


def _verdict(name, ref, jax):
  target = WORKLOADS[name][3]
  res = ref.get(name, {})
  if target is None or "median" not in res:
    return ""
  minimum = _figure(name, res, ref)[1]
  if target[0] == "ratio":
    ratio = _ratio(name, ref, jax)
    if ratio is None:
      return f"target <= {target[1]}x JAX: needs JAX"
    return f"target <= {target[1]}x JAX: {'met' if ratio <= target[1] else 'not met'}"
  if target[0] == "of":
    other = ref.get(target[1], {})
    if "min" not in other:
      return f"target <= {target[2]}x {target[1]}: needs it"
    ratio = res["min"] / other["min"]
    return (f"target <= {target[2]}x {target[1]}: {ratio:.2f}x, "
            f"{'met' if ratio <= target[2] else 'not met'}")
  limit = target[1]
  what = " beyond body" if target[0] == "loop" else ""
  return f"target <= {fmt_time(limit)}{what}: {'met' if minimum <= limit else 'not met'}"


def report(ref, jax, size_elems):
  rows = []
  lines = [f"{'':38} {'refimpl':>10} {'':>10} {'':>6} {'JAX':>10}",
           f"{'workload':38} {'median':>10} {'min':>10} {'noise':>6} {'median':>10} "
           f"{'min':>10} {'ratio':>7}  target"]
  for name, (kind, *_rest) in WORKLOADS.items():
    if name not in ref:
      continue
    res = ref[name]
    if "error" in res:
      lines.append(f"{name:38} error: {res['error'][:80]}")
      rows.append({"name": name, "error": res["error"]})
      continue
    if kind == "memory":
      peak = res["peak"]
      lines.append(f"{name:38} {peak / MIB:11.1f} MiB   ({peak / (size_elems * 4):.2f}x "
                   "the f32 input of size N)" if re.search(r"\bN\b", WORKLOADS[name][1])
                   else f"{name:38} {peak / MIB:11.1f} MiB")
      rows.append({"name": name, "kind": kind, "peak_bytes": peak})
      continue
    median, minimum = _figure(name, res, ref)
    j = jax.get(name, {})
    jmed, jmin = _figure(name, j, jax) if "median" in j else (None, None)
    ratio = _ratio(name, ref, jax)
    lines.append(f"{name:38} {fmt_time(median):>10} {fmt_time(minimum):>10} "
                 f"{res['noise']:6.0%} {fmt_time(jmed) if jmed else '-':>10} "
                 f"{fmt_time(jmin) if jmin else '-':>10} "
                 f"{f'{ratio:.1f}x' if ratio else '-':>7}  {_verdict(name, ref, jax)}")
    rows.append({"name": name, "kind": kind, "median_s": median, "min_s": minimum,
                 "noise": res["noise"], "jax_median_s": jmed, "jax_min_s": jmin,
                 "ratio": ratio, "target": _verdict(name, ref, jax)})
  return "\n".join(lines), rows


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--quick", action="store_true",
                      help="small sizes and short repeats (a smoke run)")
  parser.add_argument("--size-mib", type=float, default=256,
                      help="size of the float32 arrays of the memory workloads")
  add_compare_option(parser)
  parser.add_argument("--only", help="comma-separated workload names (substrings)")
  parser.add_argument("--json", default="benchmarks/results.json")
  parser.add_argument("--plot", default="benchmarks/ratios.png")
  parser.add_argument("--worker", help=argparse.SUPPRESS)  # the package to run
  parser.add_argument("--names", help=argparse.SUPPRESS)
  parser.add_argument("--budget", type=float, help=argparse.SUPPRESS)
  args = parser.parse_args()
  size_mib = 1 if args.quick else args.size_mib
  size_elems = int(size_mib * MIB) // 4
  budget = args.budget or (0.1 if args.quick else 0.5)

  if args.worker:  # the subprocess side
    names = json.loads(args.names)
    json.dump(run_workloads(args.worker, names, size_elems, budget), sys.stdout)
    return

  names = select(WORKLOADS, args.only)
  if args.quick:
    names = [n for n in names if n not in QUICK_SKIPPED]
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  ref = run_workloads("refimpl", names, size_elems, budget)
  jax = {}
  if args.compare:
    python, package = args.compare
    timed = [n for n in names if WORKLOADS[n][0] == "time" and not n.startswith(NUMPY)]
    jax = run_worker(python, __file__, ["--worker", package, "--names", json.dumps(timed),
                                        "--budget", str(budget), "--size-mib", str(size_mib)],
                     package) or {}
  table, rows = report(ref, jax, size_elems)
  print(table)
  with open(args.json, "w") as f:
    json.dump({"size_mib": size_mib, "quick": args.quick, "rows": rows}, f, indent=1)
  print(f"results written to {args.json}", file=sys.stderr)
  timed = [r for r in rows if "ratio" in r]
  plot_ratios(args.plot, [r["name"] for r in timed], {"refimpl": [r["ratio"] for r in timed]},
              "refimpl time / JAX time (log scale)")


if __name__ == "__main__":
  main()
