"""`python -m conformance [--backend NAME] [--profile quick|full] [--family NAME] [--examples N]
[--part documents|cases|derivatives] [--shard K/N]`

Runs the conformance suite and prints its report:

1. the seed documents' examples and JAX's type promotion tables, with jit
   compiling on the chosen backend;
2. every property case (conformance/families): with the `reference` backend,
   the reference against NumPy (or the divergence table) and jit against
   eager evaluation; with another backend, its jit against the reference
   backend's; and `vmap` of the case against the loop over a batch
   (conformance/batching.py), jitted on the backend unless it is the
   reference;
3. every derivative case (the families' `AD_CASES`): JVPs against finite
   differences, VJPs against JVPs (conformance/autodiff.py); with another
   backend, also the jit of its JVP and VJP against the reference backend's;
4. a per-primitive table: a primitive passes when every case exercising it
   passes; a case exercises the primitives of the programs its checks
   handed the backend (a derivative case: those of its function).

Each part prints a progress line per family as it finishes (counts and
time, then each failure), then its table; the last line is the verdict.
`--family` runs the cases of some families only, `--examples` sets the
examples per case, `--part` (repeatable) runs some of the parts 1-3 only
(the table of part 4 covers the parts that ran). `--shard K/N` runs the
K-th of N shares of the checks, so that N processes (or machines) together
run each check once: numbering the checks of the run in order from 1 (the
documented ones, then the value cases family by family, then the
derivative cases), those numbered K, K + N, ...; its tables cover those
checks (shard 1 lists the pending examples). `--backend` takes any backend
`refimpl.backends` knows, registered or declared by an installed
distribution (loaded before the first check). Exits with status 1 if any
check failed.
"""

import argparse
import os
import sys
import time

import conformance
import refimpl
from refimpl import backends, core
from conformance import promotion, seeds
from conformance.autodiff import ad_case_key, check_backend_derivatives, run_ad_case
from conformance.batching import check_vmap
from conformance.cases import (OBSERVED_PRIMITIVES, Case, check_against_numpy, check_backend,
                               family_module, family_names, numerical_warnings_ignored)
from conformance.report import (FAIL, NO_CASE, PASS, PROFILES, Check, Result, format_counts,
                                format_duration, format_report, load_hypothesis_profile,
                                pending_result, run_check)


def _parser():
  parser = argparse.ArgumentParser(
      prog="python -m conformance",
      description="Check refimpl (and a jit backend) against JAX's documented behaviour.")
  parser.add_argument("--backend", default=refimpl.config.backend,
                      help="jit backend to run the checks on (default: %(default)s; "
                           f"known: {', '.join(backends.backend_names())})")
  parser.add_argument("--profile", choices=tuple(PROFILES), default="quick",
                      help="examples per property case: quick (30) or full (500)")
  parser.add_argument("--examples", type=int, metavar="N",
                      help="examples per property case, instead of the profile's")
  parser.add_argument("--family", action="append", choices=family_names(), metavar="NAME",
                      help="run the property and derivative cases of this family only "
                           "(repeatable; the documented examples run too); one of: "
                           + ", ".join(family_names()))
  parser.add_argument("--part", action="append", choices=PARTS, metavar="PART",
                      help="run this part only (repeatable; default: all): documents (the "
                           "documented examples and promotion tables), cases (the property "
                           "cases) or derivatives (the derivative cases)")
  parser.add_argument("--shard", type=_shard, default=(1, 1), metavar="K/N",
                      help="run the K-th of N shares of the checks (every N-th, from the K-th), "
                           "for splitting a run between N processes")
  return parser


def _shard(text):
  """`--shard K/N` as (K, N): 1 <= K <= N."""
  k, slash, n = text.partition("/")
  if not (slash and k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
    raise argparse.ArgumentTypeError(f"{text!r} is not K/N with 1 <= K <= N (e.g. 2/8)")
  return int(k), int(n)


class _Share:
  """The checks one shard runs: counting each list `take` is given on from
  the last, the items numbered K, K + N, ... (from 1)."""

  def __init__(self, shard):
    self.k, self.n = shard
    self.counted = 0

  def take(self, items):
    taken = [x for i, x in enumerate(items, self.counted) if i % self.n == self.k - 1]
    self.counted += len(items)
    return taken


PARTS = ("documents", "cases", "derivatives")


def _say(*args, **kwargs):
  print(*args, **kwargs, flush=True)


def _property_check(case, backend):
  """A Check running `case` as a hypothesis property for `backend`."""
  from hypothesis import given, strategies as st

  @given(data=st.data())
  def prop(data):
    with numerical_warnings_ignored():
      args, kwargs = data.draw(case.inputs())
      if backend == "reference" and (case.numpy_fn or case.divergence):
        check_against_numpy(case, args, kwargs)
      check_backend(case, backend, args, kwargs)
      check_vmap(case, data, backend)

  return Check(case.name, "conformance/families", prop)


def _derivative_check(case, backend):
  """A Check running the derivative case `case` as a hypothesis property
  (and its JVP and VJP jitted on `backend`, unless that is the reference)."""
  from hypothesis import given, strategies as st

  @given(data=st.data())
  def prop(data):
    with numerical_warnings_ignored():
      args, kwargs = data.draw(case.inputs())
      run_ad_case(case, args, kwargs)
      if backend != "reference":
        check_backend_derivatives(case, backend, args, kwargs)

  return Check(f"{case.name} (derivatives)", "conformance/autodiff", prop)


def _run_group(label, checks, label_width):
  """Runs `checks`, printing one progress line: the group's label, its counts
  and time, then a line per failure."""
  _say(f"  {label:<{label_width}}  {len(checks):>3} ...", end="")
  start = time.monotonic()
  results = [run_check(c) for c in checks]
  _say(f" {format_counts(results)} in {format_duration(time.monotonic() - start)}")
  for r in results:
    if r.status == FAIL:
      _say(f"      FAIL {r.name}: {r.message}")
  return results


def _run_families(title, families, make_check, share):
  """Runs the checks `make_check` gives for each family's cases ({family:
  cases}) that `share` takes, a progress line per family; returns the
  (case, result) pairs."""
  families = {name: share.take(cases) for name, cases in families.items()}
  families = {name: cases for name, cases in families.items() if cases}
  plural = "family" if len(families) == 1 else "families"
  _say(f"{title}: {sum(map(len, families.values()))} in {len(families)} {plural}\n")
  width = max(map(len, families), default=0)
  checked = []
  for name, cases in families.items():
    checked += zip(cases, _run_group(name, [make_check(c) for c in cases], width))
  return checked


def _primitive_results(checked, covered_only):
  """One row per primitive: PASS if all the cases exercising it pass, FAIL if
  any fails. `checked` pairs each case (value and derivative cases) with its
  result; a case exercises the primitives of the programs its checks traced
  (OBSERVED_PRIMITIVES). With `covered_only` (a subset of the families
  ran), primitives that no case ran are left out."""
  rows = []
  observed = {id(c): OBSERVED_PRIMITIVES[c.name if isinstance(c, Case) else ad_case_key(c)]
              for c, _ in checked}
  for name in sorted(core.PRIMITIVES):
    covering = [(c, r) for c, r in checked if name in observed[id(c)]]
    failed = [r.name for _, r in covering if r.status == FAIL]
    if not covering:
      if not covered_only:
        rows.append(Result(name, NO_CASE, "no property case exercises it"))
    elif failed:
      rows.append(Result(name, FAIL, "failing: " + ", ".join(failed)))
    else:
      rows.append(Result(name, PASS, f"{len(covering)} case(s)"))
  return rows


def _verdict(documented, case_results, ad_results, examples, seconds):
  """The last line: PASS or FAIL, what ran, and how long it took."""
  results = documented + case_results + ad_results
  failed = [r.name for r in results if r.status == FAIL]
  took = format_duration(seconds)
  if failed:
    names = ", ".join(failed[:5]) + (", ..." if len(failed) > 5 else "")
    return f"conformance: FAIL - {len(failed)} of {len(results)} checks failed ({names}) in {took}"
  return (f"conformance: PASS - {len(documented)} documented examples, {len(case_results)} "
          f"value cases, {len(ad_results)} derivative cases, {examples} examples each, "
          f"in {took}")


def main(argv=None):
  parser = _parser()
  args = parser.parse_args(argv)
  if not __debug__:
    parser.error("the checks are assert statements: run without python -O")
  if args.backend not in backends.backend_names():
    parser.error(f"unknown backend {args.backend!r}; known backends (registered, or "
                 f"declared by installed distributions): {', '.join(backends.backend_names())}")
  try:
    backends.get_backend(args.backend)  # a declared backend loads here, before any check runs
  except RuntimeError as err:
    parser.error(str(err))
  if args.examples is not None and args.examples < 1:
    parser.error("--examples must be at least 1")
  start = time.monotonic()
  examples = args.examples or PROFILES[args.profile]
  load_hypothesis_profile(args.profile, examples)
  family_list = args.family or family_names()
  share = _Share(args.shard)
  _say(f"refimpl conformance: backend={args.backend} profile={args.profile} "
       f"examples={examples}"
       + (f" families={','.join(args.family)}" if args.family else "")
       + (f" shard={share.k}/{share.n}" if share.n > 1 else ""))
  _say(f"checking {os.path.dirname(refimpl.__file__)} "
       f"with {os.path.dirname(conformance.__file__)}\n")

  parts = args.part or PARTS
  documented, case_checked, ad_checked = [], [], []
  if "documents" in parts:
    with refimpl.config.option("backend", args.backend):
      _say("Documented examples and promotion tables\n")
      documented = _run_group("seed documents", share.take(seeds.CHECKS), 16)
      documented += _run_group("promotion tables", share.take(promotion.CHECKS), 16)
    documented += [pending_result(p) for p in seeds.PENDING if share.k == 1]
    _say()
    _say(format_report(documented))

  modules = {name: family_module(name) for name in family_list}
  if "cases" in parts:
    _say()
    case_checked = _run_families("Property cases", {n: m.CASES for n, m in modules.items()},
                                 lambda c: _property_check(c, args.backend), share)
    _say()
    _say(format_report([r for _, r in case_checked]))

  if "derivatives" in parts:
    _say()
    ad_checked = _run_families(
        "Derivative cases", {n: getattr(m, "AD_CASES", []) for n, m in modules.items()},
        lambda c: _derivative_check(c, args.backend), share)
    _say()
    _say(format_report([r for _, r in ad_checked]))
  case_results, ad_results = [r for _, r in case_checked], [r for _, r in ad_checked]

  _say("\nPrimitives\n")
  _say(format_report(_primitive_results(case_checked + ad_checked,
                                        bool(args.family) or share.n > 1
                                        or "cases" not in parts or "derivatives" not in parts)))
  _say()
  _say(_verdict(documented, case_results, ad_results, examples, time.monotonic() - start))
  return 1 if any(r.status == FAIL for r in documented + case_results + ad_results) else 0


if __name__ == "__main__":
  sys.exit(main())
