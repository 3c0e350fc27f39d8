"""Conformance checks, their results, and the printed report.

A check is a named function that raises (an `AssertionError`, or the error
the behaviour under test raised) when refimpl does not behave as documented.
A pending entry names a documented behaviour whose feature is not built yet.
"""

import dataclasses
from typing import Callable

__all__ = ['PASS', 'FAIL', 'PENDING', 'NO_CASE', 'Check', 'Pending', 'Result', 'run_check',
           'pending_result', 'format_report', 'format_counts', 'format_duration',
           'load_hypothesis_profile']

PASS, FAIL, PENDING, NO_CASE = "PASS", "FAIL", "PENDING", "NO CASE"
_SUMMARY_WORDS = {PASS: "passed", FAIL: "failed", PENDING: "pending", NO_CASE: "without a case"}


@dataclasses.dataclass(frozen=True)
class Check:
  name: str
  source: str  # where the documented behaviour comes from
  run: Callable[[], None]


@dataclasses.dataclass(frozen=True)
class Pending:
  name: str
  source: str
  topic: str  # the feature it waits for


@dataclasses.dataclass(frozen=True)
class Result:
  name: str
  status: str  # PASS, FAIL or PENDING
  message: str


def run_check(check):
  """Runs one check; any exception is a failure, reported by class and first line."""
  try:
    check.run()
  except Exception as err:  # noqa: BLE001 -- every failure is reported, none stops the run
    first_line = (str(err).strip().splitlines() or [""])[0]
    return Result(check.name, FAIL, f"{type(err).__name__}: {first_line}".rstrip(": "))
  return Result(check.name, PASS, "")


def pending_result(pending):
  return Result(pending.name, PENDING, f"waits for {pending.topic}")


def format_report(results, width=120):
  """A table (name, status, message) followed by a summary line."""
  name_w = max([len("name")] + [len(r.name) for r in results])
  status_w = max(len(s) for s in _SUMMARY_WORDS)
  msg_w = max(20, width - name_w - status_w - 4)

  def row(name, status, message):
    if len(message) > msg_w:
      message = message[:msg_w - 3] + "..."
    return f"{name:<{name_w}}  {status:<{status_w}}  {message}".rstrip()

  lines = [row("name", "status", "message"), row("-" * name_w, "-" * status_w, "-" * 7)]
  lines += [row(r.name, r.status, r.message) for r in results]
  lines.append("")
  lines.append(f"{format_counts(results)} ({len(results)} total)")
  return "\n".join(lines)


def format_counts(results):
  """'47 passed, 1 failed, 1 pending': passed and failed always, the others if any."""
  counts = {s: sum(r.status == s for r in results) for s in _SUMMARY_WORDS}
  shown = [s for s in _SUMMARY_WORDS if s in (PASS, FAIL) or counts[s]]
  return ", ".join(f"{counts[s]} {_SUMMARY_WORDS[s]}" for s in shown)


def format_duration(seconds):
  """'4.2s', '3m07s' or '1h02m05s'."""
  if seconds < 60:
    return f"{seconds:.1f}s"
  minutes, secs = divmod(round(seconds), 60)
  hours, minutes = divmod(minutes, 60)
  return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


PROFILES = {"quick": 30, "full": 500}


def load_hypothesis_profile(name, max_examples=None):
  """Makes the property cases use the profile's example count (or `max_examples`)."""
  from hypothesis import HealthCheck, settings
  settings.register_profile(f"conformance-{name}", max_examples=max_examples or PROFILES[name],
                            deadline=None, suppress_health_check=[HealthCheck.too_slow])
  settings.load_profile(f"conformance-{name}")
