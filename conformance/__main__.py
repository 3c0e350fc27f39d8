"""`python -m conformance [--backend NAME] [--profile quick|full]`

Runs the conformance checks (the seed documents' examples and the type
promotion table) with jit compiling on the chosen backend, prints a table of
results and a summary, and exits with status 1 if any check failed.
"""

import argparse
import sys

import refimpl
from refimpl import backends
from conformance import promotion, seeds
from conformance.report import (format_report, load_hypothesis_profile,
                                pending_result, run_check)


def _parser():
  parser = argparse.ArgumentParser(
      prog="python -m conformance",
      description="Check refimpl (and a jit backend) against JAX's documented behaviour.")
  parser.add_argument("--backend", default=refimpl.config.backend,
                      help="jit backend to run the checks on (default: %(default)s; "
                           f"registered: {', '.join(backends.backend_names())})")
  parser.add_argument("--profile", choices=("quick", "full"), default="quick",
                      help="example count for property checks: quick (30) or full (500)")
  return parser


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
  print(format_report(results))
  return 1 if any(r.status == "FAIL" for r in results) else 0


if __name__ == "__main__":
  sys.exit(main())
