"""`python -m conformance [--backend NAME] [--profile quick|full]`

Runs the conformance suite and prints its report:

1. the seed documents' examples and JAX's type promotion tables, with jit
   compiling on the chosen backend;
2. every property case (conformance/families): with the `reference` backend,
   the reference against NumPy (or the divergence table) and jit against
   eager evaluation; with another backend, that backend against the
   reference; and `vmap` of the case against the loop over a batch
   (conformance/batching.py);
3. every derivative case (the families' `AD_CASES`): JVPs against finite
   differences, VJPs against JVPs (conformance/autodiff.py);
4. a per-primitive table: a primitive passes when every case exercising it
   passes.

Exits with status 1 if any check failed.
"""

import argparse
import sys

import refimpl
from refimpl import backends, core
from conformance import promotion, seeds
from conformance.autodiff import all_ad_cases, run_ad_case
from conformance.batching import check_vmap
from conformance.cases import Case, all_cases, check_against_numpy, check_backend
from conformance.report import (FAIL, NO_CASE, PASS, Check, Result, format_report,
                                load_hypothesis_profile, pending_result, run_check)


def _parser():
  parser = argparse.ArgumentParser(
      prog="python -m conformance",
      description="Check refimpl (and a jit backend) against JAX's documented behaviour.")
  parser.add_argument("--backend", default=refimpl.config.backend,
                      help="jit backend to run the checks on (default: %(default)s; "
                           f"registered: {', '.join(backends.backend_names())})")
  parser.add_argument("--profile", choices=("quick", "full"), default="quick",
                      help="examples per property case: quick (30) or full (500)")
  return parser


def _property_check(case, backend):
  """A Check running `case` as a hypothesis property for `backend`."""
  from hypothesis import given, strategies as st

  @given(data=st.data())
  def prop(data):
    args, kwargs = data.draw(case.inputs())
    if backend == "reference" and (case.numpy_fn or case.divergence):
      check_against_numpy(case, args, kwargs)
    check_backend(case, backend, args, kwargs)
    check_vmap(case, data)

  return Check(case.name, "conformance/families", prop)


def _derivative_check(case):
  """A Check running the derivative case `case` as a hypothesis property."""
  from hypothesis import given, strategies as st

  @given(data=st.data())
  def prop(data):
    args, kwargs = data.draw(case.inputs())
    run_ad_case(case, args, kwargs)

  return Check(case.name, "conformance/autodiff", prop)


def _primitive_results(checked):
  """One row per primitive: PASS if all the cases exercising it (value and
  derivative cases: `checked` pairs each case with its result) pass, FAIL if
  any fails."""
  rows = []
  for name in sorted(core.PRIMITIVES):
    # Every value case's backend check goes through the jit primitive.
    covering = [(c, r) for c, r in checked
                if name in c.primitives or (name == "jit" and isinstance(c, Case))]
    failed = [r.name for _, r in covering if r.status == FAIL]
    if not covering:
      rows.append(Result(name, NO_CASE, "no property case exercises it"))
    elif failed:
      rows.append(Result(name, FAIL, "failing: " + ", ".join(failed)))
    else:
      rows.append(Result(name, PASS, f"{len(covering)} case(s)"))
  return rows


def main(argv=None):
  parser = _parser()
  args = parser.parse_args(argv)
  if not __debug__:
    parser.error("the checks are assert statements: run without python -O")
  if args.backend not in backends.backend_names():
    parser.error(f"unknown backend {args.backend!r}; registered backends: "
                 f"{', '.join(backends.backend_names())}")
  load_hypothesis_profile(args.profile)
  print(f"refimpl conformance: backend={args.backend} profile={args.profile}\n")
  with refimpl.config.option("backend", args.backend):
    results = [run_check(c) for c in seeds.CHECKS + promotion.CHECKS]
  results += [pending_result(p) for p in seeds.PENDING]
  print("Documented examples\n")
  print(format_report(results))
  cases = all_cases()
  case_results = [run_check(_property_check(c, args.backend)) for c in cases]
  print("\nProperty cases\n")
  print(format_report(case_results))
  ad_cases = all_ad_cases()
  ad_results = [Result(f"{r.name} (derivatives)", r.status, r.message) for r in
                (run_check(_derivative_check(c)) for c in ad_cases)]
  print("\nDerivative cases\n")
  print(format_report(ad_results))
  print("\nPrimitives\n")
  checked = list(zip(cases, case_results)) + list(zip(ad_cases, ad_results))
  print(format_report(_primitive_results(checked)))
  failed = any(r.status == FAIL for r in results + case_results + ad_results)
  return 1 if failed else 0


if __name__ == "__main__":
  sys.exit(main())
