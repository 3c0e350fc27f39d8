"""Speed of the numba backend, side by side with the reference backend, NumPy and JAX.

    python benchmarks/numba_bench.py [--quick] [--scale S] [--repeats R]
                                     [--compare PYTHON PACKAGE] [--only NAME,...]
                                     [--impls numba,reference,numpy] [--json FILE] [--plot FILE]

(Not named numba_backend.py: run as a script, its folder comes first on
sys.path and the file would shadow the package.)

Each workload is source text run with `jax`, `jnp`, `lax` and `np` bound to
an implementation, each implementation in its own process (a subprocess of
this file): refimpl with backend "numba" (`numba`), refimpl with its
reference backend (`reference`), NumPy where a NumPy version of the workload
is natural (`numpy`), and with `--compare PYTHON PACKAGE` (or
REFIMPL_BENCH_COMPARE) the package of that name in that interpreter (JAX:
`--compare /path/to/python jax`). Eager rows run eagerly on every
implementation: under backend "numba" eager operations are the reference's
(docs/backends.md, "Eager operations").

Before it is timed, each numba result is checked against the reference
backend's (conformance's float tolerances, a few ulps: the backend is within
an ulp on float32 exp and tanh, bit for bit on the other elementwise ops,
reductions and PRNG; where products are summed, K·eps of float32 times the
largest result, K the contraction length; for the elementwise chain, whose
subtractions carry exp's and tanh's ulp to results near zero, also 2 ulps of
its largest result).

First-call rows time the first call (trace, compile, run) in fresh
processes, after the imports and the workload's setup: for numba with an
empty REFIMPL_NUMBA_CACHE_DIR (cold) and then in a second process on the
same directory (warm); for the others (no disk cache) once per repeat. A
"(2nd program)" row's process has run another program first. The whole
process's time (imports, setup and the first call) follows the table.

Timings are the median and minimum over repeats and the noise (see
benchmarks/harness.py); ratios to JAX compare the minimums (the figures
least disturbed by other load on the machine), and so do the targets'
verdicts. Results go to a table on stdout, a JSON file, and a PNG plot of
the ratios if matplotlib is importable.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

from harness import (add_compare_option, block, fmt_time, leaves, machine_limits, namespace,
                     plot_ratios, run_worker, select, summary, time_statement)

_RANDOM = "rng = np.random.default_rng(0)\n"
_INPUT = _RANDOM + "x = jnp.asarray(rng.standard_normal({shape}, dtype=np.float32))\n"
_NP_INPUT = _RANDOM + "x = rng.standard_normal({shape}, dtype=np.float32)\n"

_CHAIN = """
def chain(x):   # 14 elementwise operations
  y = jnp.tanh(x)
  y = jnp.exp(y) - x
  y = jnp.sin(y) * 0.5
  y = jnp.sqrt(jnp.abs(y) + 1.0)
  y = jnp.cos(y * x)
  y = jnp.log1p(y * y)
  y = jnp.maximum(y, x)
  return jnp.negative(y)
"""

_MLP = """
rng = np.random.default_rng(0)
params = [np.float32(s) * rng.standard_normal(shape, dtype=np.float32)
          for s, shape in ((0.03, (784, 512)), (0, 512), (0.03, (512, 10)), (0, 10))]
x = rng.standard_normal((256, 784), dtype=np.float32)
y = np.eye(10, dtype=np.float32)[np.arange(256) % 10]
"""

_MLP_JAX = _MLP + """
params, x, y = [jnp.asarray(p) for p in params], jnp.asarray(x), jnp.asarray(y)
def loss(p, x, y):
  w1, b1, w2, b2 = p
  h = jax.nn.relu(x @ w1 + b1)
  return -jnp.mean(jnp.sum(jax.nn.log_softmax(h @ w2 + b2) * y, axis=-1))
f = jax.jit(jax.grad(loss))
"""

_RNN = """
rng = np.random.default_rng(0)
w = np.float32(0.05) * rng.standard_normal((n, n), dtype=np.float32)
xs = rng.standard_normal((t, n), dtype=np.float32)
"""

_RNN_JAX = _RNN + """
w, xs = jnp.asarray(w), jnp.asarray(xs)
def rnn(w, xs):
  def step(h, x):
    h = jnp.tanh(h @ w + x)
    return h, h
  return lax.scan(step, jnp.zeros(w.shape[0], jnp.float32), xs)[1]
f = jax.jit(rnn)
"""

_RNN_NP = _RNN + """
def rnn(w, xs):
  h, hs = np.zeros(w.shape[0], np.float32), []
  for x in xs:
    h = np.tanh(h @ w + x)
    hs.append(h)
  return np.stack(hs)
"""

_FORI = """
x = jnp.ones(16, jnp.float32)
f = jax.jit(lambda x: lax.fori_loop(0, n, lambda i, x: x * 0.999 + 0.001, x))
"""
_FORI_NP = """
x = np.ones(16, np.float32)
def loop(x):
  for _ in range(n):
    x = x * np.float32(0.999) + np.float32(0.001)
  return x
"""


class Workload:
  """A benchmark: `setup` then `stmt` (source, the names of `sizes` bound
  to their scaled values) timed per call ("time") or as the first call in
  a fresh process ("first"); `numpy`, the (setup, stmt) of NumPy's version;
  `target`: the most numba's minimum may be as a multiple of the compared
  package's (r), of NumPy's ((r, "numpy")), or for a first call, of the
  package's cold and warm ((cold, warm)); `slow`: the reference's run is
  skipped with --quick; `contraction`, the length K of the products summed
  (the check's tolerance); `ulps`, for a composition whose subtractions
  carry its functions' ulps (float32 exp and tanh, docs/backends.md) to
  results near zero, the check's absolute tolerance in ulps of the largest
  result; `work`, a function of the sizes giving (bytes,
  flops): the bytes a call must read and write at least, and its float
  operations where BLAS-like products dominate it (the machine's limit is
  the longer of their times at the measured bandwidth and sgemm rate);
  `bound`, a function of the run (`_Run`) and the sizes saying what bounds
  the workload where its target is not met, with the run's figures."""

  def __init__(self, kind, setup, stmt, sizes, numpy=None, target=1, slow=False,
               contraction=None, ulps=None, work=None, bound=None):
    self.kind, self.setup, self.stmt, self.sizes = kind, setup, stmt, sizes
    self.numpy, self.target, self.slow = numpy, target, slow
    self.contraction, self.ulps, self.work, self.bound = contraction, ulps, work, bound

  def limit(self, sizes, machine):
    """The least time the machine (`machine_limits`) allows a call, or None."""
    if self.work is None:
      return None
    moved, flops = self.work(sizes)
    return max(moved / machine["bandwidth"], flops / machine["sgemm"])


def _streamed(arrays):
  """`work` for a workload that reads and writes `arrays` float32 arrays of n elements."""
  return lambda s: (4 * arrays * s["n"], 0)


def _mlp_work(s, batch=256, inputs=784, hidden=512, outputs=10):
  """The MLP's gradient: its two products forward, the gradients of both
  weights and of the hidden layer backward; it reads the inputs and the
  parameters and writes their gradients."""
  params = inputs * hidden + hidden + hidden * outputs + outputs
  return (4 * (2 * params + batch * (inputs + outputs)),
          2 * batch * (2 * inputs * hidden + 3 * hidden * outputs))


def _eager_and_jit(op, np_op, size, label, bound=None):
  """The rows "eager OP" and "jit(OP)" (a single primitive in a compiled
  program; of 1000 elements, bound by the call's dispatch)."""
  setup, jnp_op = _INPUT.format(shape="n"), np_op.replace("np.", "jnp.")
  bound = bound or (_call_bound if size <= 1000 else None)
  work = _streamed(1 if "sum" in op else 2)
  return {
      f"eager {op} {label}": Workload("time", setup, jnp_op, {"n": size},
                                      numpy=(_NP_INPUT.format(shape="n"), np_op), target=None,
                                      work=work),
      f"jit({op}) {label}": Workload("time", setup + f"f = jax.jit(lambda x: {jnp_op})",
                                     "f(x)", {"n": size}, work=work, bound=bound),
  }


NUMBA, REFERENCE, NUMPY = "numba", "reference", "numpy"
"""The implementations this project runs (the one compared with is the command line's)."""


class _Run:
  """A run's minimums, for the bounds' texts: `min(label, impl)` (seconds, or
  None where not measured) of the report's rows, and the machine's limits."""

  def __init__(self, rows, other, machine, scale):
    self.rows, self.other, self.machine, self.scale = rows, other, machine, scale

  def sizes(self, label):
    return _sizes(WORKLOADS[label], self.scale)

  def min(self, label, impl=NUMBA):
    res = self.rows.get(label, {}).get(self.other if impl == "other" else impl) or {}
    return res.get("min")

  def per(self, label, count, impl=NUMBA, unit=1e-9):
    """`label`'s time over `count` (elements, steps) in `unit`s (ns by
    default; None where not measured)."""
    t = self.min(label, impl)
    return None if t is None else t / count / unit

  def gbs(self, label, nbytes, impl=NUMBA):
    t = self.min(label, impl)
    return None if t is None else nbytes / t / 1e9


def _figures(template, **values):
  """`template` filled with `values` (floats with 2 digits), or a note where one is missing."""
  missing = [k for k, v in values.items() if v is None]
  if missing:
    return f"(not measured in this run: {', '.join(missing)})"
  return template.format(**{k: f"{v:.2f}" if isinstance(v, float) else v
                            for k, v in values.items()})


_TRANSCENDENTAL = ("float32 exp and tanh are float32 polynomials within 1 ulp, the other float32 "
                   "transcendentals float64 polynomials whose rounding is checked, for the "
                   "reference's bits (docs/backends.md), in 512-bit vectors where threads "
                   "run the loop on a CPU with AVX-512 (else in the vectors LLVM chooses: "
                   "256-bit ones on Intel's AVX-512 cores); jit(jnp.exp) f32[1e6]: {exp} ns "
                   "an element, JAX {exp_jax}")


def _transcendental(extra=""):
  def bound(run, s):
    n = run.sizes("jit(jnp.exp) f32[1e6]")["n"]
    return _figures(_TRANSCENDENTAL + extra, exp=run.per("jit(jnp.exp) f32[1e6]", n),
                    exp_jax=run.per("jit(jnp.exp) f32[1e6]", n, "other"))
  return bound


def _sum_bound(label, elements, extra=""):
  """The bound of the sum `label` over `elements(sizes)` float32 elements."""
  def bound(run, s):
    nbytes = 4 * elements(s)
    return _figures(
        "the additions follow NumPy's pairwise order (the reference's bits){extra}; numba "
        "reads {ours} GB/s, JAX {theirs} GB/s, the machine {read} GB/s (NumPy's max of 64 "
        "MiB on every core, from the caches where they hold it; its copy moves {bandwidth} "
        "GB/s): numba reads at {share}% of the machine's rate", extra=extra,
        ours=run.gbs(label, nbytes), theirs=run.gbs(label, nbytes, "other"),
        read=run.machine["read"] / 1e9, bandwidth=run.machine["bandwidth"] / 1e9,
        share=None if run.gbs(label, nbytes) is None
        else round(100 * run.gbs(label, nbytes) * 1e9 / run.machine["read"]))
  return bound


def _call_bound(run, s):
  return _figures("a call of 1000 elements is mostly its dispatch, which runs Python: the "
                  "trivial jitted call takes {ours} us, JAX's {theirs} us",
                  ours=(run.min("trivial jitted call") or 0) * 1e6 or None,
                  theirs=(run.min("trivial jitted call", "other") or 0) * 1e6 or None)


def _first_call_bound(run, s):
  return _figures(
      "Numba's compiler: the smallest program (jit(jnp.sin) f32[1000]) takes {sin} s cold, "
      "{times}x JAX's whole cold first call of selu; a program with parallel loops takes "
      "about 0.5 s more (Numba's parfor passes), one with many loops seconds",
      sin=run.min("first call: jit(jnp.sin) f32[1000], cold cache"),
      times=(run.min("first call: jit(jnp.sin) f32[1000], cold cache") or 0)
      / (run.min("first call: jit(selu) f32[1e6], cold cache", "other") or float("inf")) or None)


def _mlp_bound(run, s):
  matmul = run.min("matmul f32[1024]^2")
  rate = matmul and 2 * run.sizes("matmul f32[1024]^2")["n"] ** 3 / matmul
  flops = _mlp_work(s)[1]
  return _figures(
      "its products (about {mflop} MFLOP) run on OpenBLAS (SciPy's, through Numba): at this "
      "run's OpenBLAS rate ({rate} GFLOP/s, from the matmul f32[1024]^2 row) they alone take "
      "{least} ms; JAX's whole call takes {jax} ms (XLA's own sgemm: matmul {mm_jax} ms "
      "against OpenBLAS's {mm} ms)",
      mflop=flops / 1e6, rate=rate and rate / 1e9, least=rate and flops / rate * 1e3,
      jax=(run.min("jit(grad) MLP 784-512-10 b256", "other") or 0) * 1e3 or None,
      mm_jax=(run.min("matmul f32[1024]^2", "other") or 0) * 1e3 or None,
      mm=matmul and matmul * 1e3)


WORKLOADS = {
    "selu f32[1e6]": Workload(
        "time", _INPUT.format(shape="n") + "f = jax.jit(jax.nn.selu)", "f(x)", {"n": 10**6},
        numpy=(_NP_INPUT.format(shape="n"),
               "np.float32(1.0507009873554805) * np.where("
               "x > 0, x, np.float32(1.6732632423543772) * np.expm1(x))"),
        work=_streamed(2), bound=_transcendental()),
    "14-op elementwise chain f32[1e7]": Workload(
        "time", _INPUT.format(shape="n") + _CHAIN + "f = jax.jit(chain)", "f(x)", {"n": 10**7},
        numpy=(_NP_INPUT.format(shape="n") + _CHAIN.replace("jnp.", "np."), "chain(x)"),
        slow=True, ulps=2, work=_streamed(2)),
    "sum axis 1 f32[4096,4096]": Workload(
        "time", _INPUT.format(shape="(n, n)") + "f = jax.jit(lambda x: jnp.sum(x, axis=1))",
        "f(x)", {"n": 4096}, numpy=(_NP_INPUT.format(shape="(n, n)"), "x.sum(axis=1)"),
        work=lambda s: (4 * s["n"] * (s["n"] + 1), 0),
        bound=_sum_bound("sum axis 1 f32[4096,4096]", lambda s: s["n"] ** 2)),
    "sum axis 0 f32[4096,4096]": Workload(
        "time", _INPUT.format(shape="(n, n)") + "f = jax.jit(lambda x: jnp.sum(x, axis=0))",
        "f(x)", {"n": 4096}, numpy=(_NP_INPUT.format(shape="(n, n)"), "x.sum(axis=0)"),
        work=lambda s: (4 * s["n"] * (s["n"] + 1), 0),
        bound=_sum_bound("sum axis 0 f32[4096,4096]", lambda s: s["n"] ** 2,
                         ", each row added into the results' row in order")),
    "logsumexp last axis f32[4096,1024]": Workload(
        "time", _INPUT.format(shape="(n, m)") + "f = jax.jit(lambda x: jax.nn.logsumexp(x, -1))",
        "f(x)", {"n": 4096, "m": 1024},
        numpy=(_NP_INPUT.format(shape="(n, m)"),
               "np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1)) + x.max(-1)"),
        work=lambda s: (4 * s["n"] * (s["m"] + 1), 0),
        bound=_transcendental("; the sum reads exp(x - max) a group of rows at a time as "
                              "the loop computes it, from the caches (docs/backends.md); "
                              "measured apart on a 2-core Intel machine, of a 1.41 ms call: the "
                              "row maxima 0.3 ms (a first pass over x), exp 0.55 ms, the sums "
                              "0.2 ms")),
    "matmul f32[1024]^2": Workload(
        "time", _INPUT.format(shape="(n, n)") + "f = jax.jit(lambda a: a @ a)", "f(x)",
        {"n": 1024}, numpy=(_NP_INPUT.format(shape="(n, n)"), "x @ x"), contraction=1024,
        target=(1.1, "numpy"), work=lambda s: (8 * s["n"] ** 2, 2 * s["n"] ** 3),
        bound=lambda run, s: _figures(
            "one sgemm of SciPy's OpenBLAS build (Numba's np.dot), where NumPy's matmul calls "
            "NumPy's own build (the two may differ in version, and each has its own threads), "
            "after a pass over each operand checking that it is finite (BLAS need not keep "
            "0 * inf = NaN; about 50 us each): {ours} ms against NumPy's {numpy} ms",
            ours=(run.min("matmul f32[1024]^2") or 0) * 1e3 or None,
            numpy=(run.min("matmul f32[1024]^2", "numpy") or 0) * 1e3 or None)),
    "jit(grad) MLP 784-512-10 b256": Workload(
        "time", _MLP_JAX, "f(params, x, y)", {}, contraction=784, work=_mlp_work,
        bound=_mlp_bound),
    "fori_loop 1e5 steps f32[16]": Workload(
        "time", _FORI, "f(x)", {"n": 10**5}, numpy=(_FORI_NP, "loop(x)"), slow=True,
        target=0.5, bound=lambda run, s: _figures(
            "{ours} ns a step (JAX {theirs}): each step runs the body's loop over the 16 "
            "elements of the carry, which stays in memory (written over, and read by the next "
            "step: a store-to-load latency plus the multiply-add's in every step); its count "
            "is read at run time (one program serves every shape); with the count 16 in its "
            "source LLVM keeps the carry in registers, but as 16 scalar multiply-adds (Numba "
            "runs no SLP vectorizer): 2.24 ns a step, measured apart on a 2-core Intel machine",
            ours=run.per("fori_loop 1e5 steps f32[16]", s["n"]),
            theirs=run.per("fori_loop 1e5 steps f32[16]", s["n"], "other"))),
    "scan RNN T=1000 H=128": Workload(
        "time", _RNN_JAX, "f(w, xs)", {"t": 1000, "n": 128}, numpy=(_RNN_NP, "rnn(w, xs)"),
        contraction=128, work=lambda s: (4 * s["n"] * (s["n"] + 2 * s["t"]),
                                         2 * s["t"] * s["n"] ** 2),
        bound=lambda run, s: _figures(
            "{ours} us a step (JAX {theirs}): a 128x128 matrix-vector product by the "
            "loop of small products (under BLAS's threshold), each sum in ascending k with "
            "its products rounded before they are added (no fused multiply-add): 16384 "
            "multiplies and 16384 adds a step in vector registers, reading the 64 KB matrix "
            "(64-byte aligned, an Array's data; beyond a core's 48 KB first-level cache) from "
            "the second-level cache, about 0.59 us of a 0.85 us step measured apart on a "
            "2-core Intel machine; then a float32 tanh over 128 elements in a serial loop "
            "(0.095 us), and the step's views, allocation and copy of y (0.16 us)",
            ours=run.per("scan RNN T=1000 H=128", s["t"], unit=1e-6),
            theirs=run.per("scan RNN T=1000 H=128", s["t"], "other", unit=1e-6))),
    "random.normal f32[1e7]": Workload(
        "time", "key = jax.random.PRNGKey(0)\n"
        "f = jax.jit(lambda key: jax.random.normal(key, (n,)))", "f(key)", {"n": 10**7},
        numpy=(_RANDOM, "rng.standard_normal(n, dtype=np.float32)"), slow=True,
        work=_streamed(1), bound=lambda run, s: _figures(
            "{ours} ns an element (JAX {theirs}): threefry2x32's bits, bit for bit JAX's, "
            "then erf_inv, in one loop; no bound established beyond the arithmetic",
            ours=run.per("random.normal f32[1e7]", s["n"]),
            theirs=run.per("random.normal f32[1e7]", s["n"], "other"))),
    "trivial jitted call": Workload(
        "time", "x = jnp.ones(8, jnp.float32)\nf = jax.jit(lambda x: x)", "f(x)", {},
        bound=lambda run, s: _figures(
            "a call runs Python (the cache key, Numba's dispatcher, the result's Array): "
            "{ours} us, where JAX's C++ dispatch takes {theirs} us; jit(x + x) f32[1000] "
            "takes {add} us",
            ours=(run.min("trivial jitted call") or 0) * 1e6 or None,
            theirs=(run.min("trivial jitted call", "other") or 0) * 1e6 or None,
            add=(run.min("jit(x + x) f32[1000]") or 0) * 1e6 or None)),
    **_eager_and_jit("jnp.sin", "np.sin(x)", 1000, "f32[1000]"),
    **_eager_and_jit("jnp.sin", "np.sin(x)", 10**6, "f32[1e6]"),
    **_eager_and_jit("jnp.exp", "np.exp(x)", 10**6, "f32[1e6]", bound=_transcendental()),
    **_eager_and_jit("x + x", "x + x", 1000, "f32[1000]"),
    **_eager_and_jit("x + x", "x + x", 10**6, "f32[1e6]"),
    **_eager_and_jit("jnp.sum", "np.sum(x)", 1000, "f32[1000]"),
    **_eager_and_jit("jnp.sum", "np.sum(x)", 10**6, "f32[1e6]",
                     bound=_sum_bound("jit(jnp.sum) f32[1e6]", lambda s: s["n"],
                                      ", the four runs of its second halving by threads")),
    "first call: jit(selu) f32[1e6]": Workload(
        "first", _INPUT.format(shape="n") + "f = jax.jit(jax.nn.selu)", "f(x)", {"n": 10**6},
        target=(3, 1), bound=_first_call_bound),
    "first call: jit(grad) MLP": Workload("first", _MLP_JAX, "f(params, x, y)", {},
                                          target=(3, 1), bound=_first_call_bound),
    "first call: jit(jnp.sin) f32[1000]": Workload(
        "first", _INPUT.format(shape="n") + "f = jax.jit(jnp.sin)", "f(x)", {"n": 1000},
        target=(3, 1), bound=_first_call_bound),
    "first call: jit(jnp.sin) f32[1000] (2nd program)": Workload(
        "first", _INPUT.format(shape="n") + "jax.jit(lambda x: x * 2)(x)\nf = jax.jit(jnp.sin)",
        "f(x)", {"n": 1000}, target=(3, 1), bound=_first_call_bound),
}



def _sizes(workload, scale):
  return {k: max(1, round(v * scale)) for k, v in workload.sizes.items()}


# --- the workers: one implementation, in its own process ----------------------------------

def _workload_namespace(impl, workload, scale):
  """The namespace of `workload` for `impl` (numba, reference, numpy or a
  package's name), with its backend chosen; (setup, stmt) to run in it, or
  None when `impl` has no version of it."""
  sizes = _sizes(workload, scale)
  if impl == NUMPY:
    if workload.numpy is None:
      return None
    import numpy as np
    return {"np": np, **sizes}, workload.numpy
  ns = namespace("refimpl" if impl in (NUMBA, REFERENCE) else impl, **sizes)
  if impl == NUMBA:
    ns["jax"].config.update("backend", "numba")
  return ns, (workload.setup, workload.stmt)


def check_against_reference(ns, stmt, contraction, ulps):
  """Asserts that `stmt` in `ns` (refimpl, backend numba) gives the reference
  backend's result: conformance's tolerances of the dtype (and `ulps` of the
  largest result), or with products of length `contraction` summed, K·eps of
  float32 times the largest result."""
  import numpy as np
  from conformance.strategies import assert_close
  actual = eval(stmt, ns)
  with ns["jax"].config.option("backend", "reference"):
    expected = eval(stmt, ns)
  for a, e in zip(leaves(actual), leaves(expected), strict=True):
    a, e = np.asarray(a), np.asarray(e)
    assert a.dtype == e.dtype, (a.dtype, e.dtype)
    if contraction is None:
      assert_close(a, e, atol=ulps and ulps * float(np.finfo(e.dtype).eps * np.abs(e).max()))
    else:
      assert_close(a, e, rtol=0,
                   atol=contraction * float(np.finfo(np.float32).eps) * float(np.abs(e).max()))


def run_timed(impl, names, scale, budget, quick):
  """{name: {median, min, noise} or {error} or {skipped}} of the timed workloads."""
  results = {}
  for name in names:
    workload = WORKLOADS[name]
    found = _workload_namespace(impl, workload, scale)
    if found is None:
      continue
    ns, (setup, stmt) = found
    slow = impl == REFERENCE and workload.slow
    if slow and quick:
      results[name] = {"skipped": "slow on the reference (--quick)"}
      continue
    try:
      exec(setup, ns)
      if impl == NUMBA:
        check_against_reference(ns, stmt, workload.contraction, workload.ulps)
      # the reference's slow workloads: fewer calls (each is seconds)
      median, minimum, noise = (time_statement(ns, stmt, budget, warmups=1, min_samples=3)
                                if slow else time_statement(ns, stmt, budget))
      results[name] = {"median": median, "min": minimum, "noise": noise}
    except Exception as err:  # a failing workload is reported, not fatal
      results[name] = {"error": f"{type(err).__name__}: {err}"}
    print(f"  {impl}: {name} done", file=sys.stderr, flush=True)
  return results


def run_first(impl, name, scale):
  """{import, setup, first}: seconds to import `impl` (and choose its
  backend), to run the workload's setup, and its first call."""
  start = time.perf_counter()
  ns, (setup, stmt) = _workload_namespace(impl, WORKLOADS[name], scale)
  imported = time.perf_counter()
  exec(setup, ns)
  ready = time.perf_counter()
  block(eval(stmt, ns))
  return {"import": imported - start, "setup": ready - imported,
          "first": time.perf_counter() - ready}


# --- the driver ---------------------------------------------------------------------------

def _first_calls(impls, compare, names, scale, repeats):
  """{impl: {name: [samples]}} of first calls in fresh processes; numba's as
  "numba cold" and "numba warm" (a new empty cache directory per repeat)."""
  samples = {}

  def record(impl, key, name, python, env=None):
    out = run_worker(python, __file__, ["--worker", impl, "--first", name,
                                        "--scale", str(scale)], f"{impl} {name}", env=env)
    samples.setdefault(key, {}).setdefault(name, []).append(
        out if out is not None else {"error": "the run failed"})

  for name in names:
    for _ in range(repeats):
      if NUMBA in impls:
        cache = tempfile.mkdtemp(prefix="refimpl-numba-bench-")
        try:
          env = dict(os.environ, REFIMPL_NUMBA_CACHE_DIR=cache)
          record(NUMBA, "numba cold", name, sys.executable, env)
          record(NUMBA, "numba warm", name, sys.executable, env)
        finally:
          shutil.rmtree(cache, ignore_errors=True)
      if REFERENCE in impls:
        record(REFERENCE, REFERENCE, name, sys.executable)
      if compare:
        record(compare[1], compare[1], name, compare[0])
    print(f"  first calls: {name} done", file=sys.stderr, flush=True)
  return samples


def _first_summary(runs):
  """{median, min, noise} of the first calls of `runs` (and of the whole
  process, imports and setup included), or {error}."""
  if any("error" in r for r in runs):
    return {"error": next(r["error"] for r in runs if "error" in r)}
  median, minimum, noise = summary([r["first"] for r in runs])
  return {"median": median, "min": minimum, "noise": noise,
          "total_min": min(r["import"] + r["setup"] + r["first"] for r in runs),
          "import_min": min(r["import"] for r in runs)}


def _columns(timed, firsts, compare):
  """The report's rows: (name, workload name, {column: result}); a
  first-call workload gives a cold and a warm row."""
  other = compare[1] if compare else None
  rows = []
  for name, workload in WORKLOADS.items():
    if workload.kind == "time" and any(name in t for t in timed.values()):
      rows.append((name, name, {impl: t.get(name) for impl, t in timed.items()}))
    elif workload.kind == "first" and any(name in f for f in firsts.values()):
      summaries = {key: _first_summary(f[name]) for key, f in firsts.items() if name in f}
      for cache in ("cold", "warm"):
        rows.append((f"{name}, {cache} cache", name,
                     {NUMBA: summaries.get(f"numba {cache}"), REFERENCE: summaries.get(REFERENCE),
                      other: summaries.get(other)}))
  return rows


def _cell(res, width=10):
  if not res:
    return f"{'-':>{width}}"
  if "error" in res:
    return f"{'error':>{width}}"
  if "skipped" in res:
    return f"{'skipped':>{width}}"
  return f"{fmt_time(res['min']):>{width}}"


def _verdict(workload, label, numba, results, other):
  """Whether the row `label` of `workload` meets its target ("" without one)."""
  target = workload.target
  if target is None:
    return ""
  if workload.kind == "first":
    target = target[0] if label.endswith("cold cache") else target[1]
  target, against = target if isinstance(target, tuple) else (target, other)
  theirs = results.get(against) or {}
  if "min" not in numba or "min" not in theirs:
    return f"target <= {target}x {against or 'the package compared with'}: not measured"
  return (f"target <= {target}x {against}: "
          f"{'met' if numba['min'] <= target * theirs['min'] else 'not met'}")


def _of_limit(limit, res):
  """The fraction of the machine's limit that the result `res` reaches (None unmeasured)."""
  return limit / res["min"] if limit and res and "min" in res else None


def report(timed, firsts, compare, scale, machine):
  """The table (text) and the JSON rows; `machine`, `machine_limits()`."""
  other = compare[1] if compare else None
  # OpenBLAS's kernels, where the environment names them
  kernels = os.environ.get("OPENBLAS_CORETYPE")
  lines = [f"machine limits: memory bandwidth {machine['bandwidth'] / 1e9:.1f} GB/s (bytes "
           f"read and written), read rate {machine['read'] / 1e9:.1f} GB/s, float32 matmul "
           f"{machine['sgemm'] / 1e9:.0f} GFLOP/s"
           + (f" (OpenBLAS's {kernels} kernels, by OPENBLAS_CORETYPE)" if kernels else ""), "",
           f"{'':58} {'numba':>10} {'':>10} {'':>6} {'reference':>10} {'numpy':>10} "
           f"{other or '':>10} {'':>7} {'machine':>9} {'numba':>6}",
           f"{'workload':58} {'min':>10} {'median':>10} {'noise':>6} {'min':>10} {'min':>10} "
           f"{'min' if other else '':>10} {'ratio':>7} {'limit':>9} {'at':>6}  target"]
  if scale != 1:
    lines.insert(0, f"(the sizes in the names scaled by {scale})")
  rows, errors = [], []
  for label, name, results in _columns(timed, firsts, compare):
    numba = results.get(NUMBA) or {}
    theirs = results.get(other) or {}
    ratio = numba["min"] / theirs["min"] if "min" in numba and "min" in theirs else None
    verdict = _verdict(WORKLOADS[name], label, numba, results, other)
    median = fmt_time(numba["median"]) if "median" in numba else "-"
    noise = f"{numba['noise']:6.0%}" if "noise" in numba else f"{'':6}"
    limit = (WORKLOADS[name].limit(_sizes(WORKLOADS[name], scale), machine)
             if WORKLOADS[name].kind == "time" else None)
    at = _of_limit(limit, numba)
    lines.append(f"{label:58} {_cell(numba)} {median:>10} {noise} "
                 f"{_cell(results.get(REFERENCE))} {_cell(results.get(NUMPY))} "
                 f"{_cell(theirs) if other else '':>10} "
                 f"{f'{ratio:.2f}x' if ratio else '-':>7} "
                 f"{fmt_time(limit) if limit else '-':>9} {f'{at:.0%}' if at else '-':>6}  "
                 f"{verdict}")
    errors += [f"{label} ({impl}): {res['error']}" for impl, res in results.items()
               if res and "error" in res]
    rows.append({"name": label, "workload": name, "kind": WORKLOADS[name].kind,
                 "results": {impl: res for impl, res in results.items() if impl},
                 "ratio": ratio, "target": verdict, "limit": limit,
                 "of_limit": {impl: _of_limit(limit, res) for impl, res in results.items()
                              if impl and _of_limit(limit, res)}})
  run = _Run({label: results for label, _, results in _columns(timed, firsts, compare)},
             other, machine, scale)
  bounds = [f"- {row['name']}: "
            f"{WORKLOADS[row['workload']].bound(run, _sizes(WORKLOADS[row['workload']], scale))}"
            for row in rows if "not met" in row["target"] and WORKLOADS[row["workload"]].bound]
  if bounds:
    lines += ["", "What bounds the targets not met, in this run's figures:", *bounds]
  wholes = [f"{label:58} {fmt_time(numba['total_min']):>10} {fmt_time(theirs['total_min']):>10}"
             for label, _, results in _columns(timed, firsts, compare)
             for numba, theirs in [(results.get(NUMBA) or {}, results.get(other) or {})]
             if "total_min" in numba and "total_min" in theirs]
  if wholes:
    lines += ["", f"{'the whole process (imports, setup, first call)':58} {'numba':>10} "
                  f"{other:>10}", *wholes]
  return "\n".join(lines + [""] + errors), rows


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--quick", action="store_true",
                      help="sizes / 10, short repeats, one first call each, the reference's "
                           "slow workloads skipped (a smoke run)")
  parser.add_argument("--scale", type=float,
                      help="factor on every workload's sizes (default 1, 0.1 with --quick)")
  parser.add_argument("--repeats", type=int,
                      help="fresh processes per first-call figure (default 3, 1 with --quick)")
  parser.add_argument("--rounds", type=int,
                      help="rounds of the timed workloads, each running the implementations "
                           "in turn; a workload keeps its round of least time, so that a slow "
                           "spell of the machine does not fall on one implementation alone "
                           "(default 2, 1 with --quick)")
  add_compare_option(parser)
  parser.add_argument("--only", help="comma-separated workload names (substrings)")
  parser.add_argument("--impls", default=f"{NUMBA},{REFERENCE},{NUMPY}",
                      help="comma-separated, of numba, reference, numpy (default: all)")
  parser.add_argument("--json", default="benchmarks/numba_results.json")
  parser.add_argument("--plot", default="benchmarks/numba_ratios.png")
  parser.add_argument("--worker", help=argparse.SUPPRESS)  # the implementation to run
  parser.add_argument("--names", help=argparse.SUPPRESS)
  parser.add_argument("--first", help=argparse.SUPPRESS)
  parser.add_argument("--budget", type=float, help=argparse.SUPPRESS)
  parser.add_argument("--limits", action="store_true", help=argparse.SUPPRESS)
  args = parser.parse_args()
  scale = args.scale or (0.1 if args.quick else 1)
  budget = args.budget or (0.1 if args.quick else 0.5)

  if args.limits:
    json.dump(machine_limits(), sys.stdout)
    return
  if args.worker:  # the subprocess side
    out = (run_first(args.worker, args.first, scale) if args.first else
           run_timed(args.worker, json.loads(args.names), scale, budget, args.quick))
    json.dump(out, sys.stdout)
    return

  impls = args.impls.split(",")
  unknown = set(impls) - {NUMBA, REFERENCE, NUMPY}
  if unknown:
    parser.error(f"unknown implementations {sorted(unknown)}; known: numba, reference, numpy")
  names = select(WORKLOADS, args.only)
  timed_names = [n for n in names if WORKLOADS[n].kind == "time"]
  first_names = [n for n in names if WORKLOADS[n].kind == "first"]
  # in a process of its own, whose BLAS threads (which spin for a while after
  # a product) are gone when the workers run
  machine = run_worker(sys.executable, __file__, ["--limits"], "machine limits")
  runs = [(impl, sys.executable) for impl in impls]
  if args.compare:
    runs.append((args.compare[1], args.compare[0]))
  timed = {impl: {} for impl, _ in runs}
  rounds = (args.rounds or (1 if args.quick else 2)) if timed_names else 0
  for _ in range(rounds):
    for impl, python in runs:
      worker_args = ["--worker", impl, "--names", json.dumps(timed_names), "--budget",
                     str(budget), "--scale", str(scale)] + (["--quick"] if args.quick else [])
      results = run_worker(python, __file__, worker_args, impl, show_progress=True) or {}
      for name, res in results.items():
        kept = timed[impl].get(name)
        if kept is None or "min" in res and ("min" not in kept or res["min"] < kept["min"]):
          timed[impl][name] = res
  firsts = _first_calls(impls, args.compare, first_names, scale,
                        args.repeats or (1 if args.quick else 3))
  table, rows = report(timed, firsts, args.compare, scale, machine)
  print(table)
  with open(args.json, "w") as f:
    json.dump({"scale": scale, "quick": args.quick, "compare": args.compare,
               "machine": machine, "rows": rows,
               "sizes": {n: _sizes(WORKLOADS[n], scale) for n in names}}, f, indent=1)
  print(f"results written to {args.json}", file=sys.stderr)
  plot_ratios(args.plot, [r["name"] for r in rows], {"numba": [r["ratio"] for r in rows]},
              f"numba backend's time / {args.compare[1] if args.compare else 'JAX'}'s "
              "(log scale)")


if __name__ == "__main__":
  main()
