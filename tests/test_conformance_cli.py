"""`python -m conformance` (conformance/__main__.py): a progress line per
family as it runs, each failure listed there, the expected numerical warnings
of case evaluation kept out of the output, a verdict line last, and the exit
status. The suite's own checks are replaced by small ones."""

import re
import types
import warnings

import numpy as np
import pytest
from hypothesis import strategies as st

import refimpl.numpy as jnp
import conformance.__main__ as cli
from conformance.cases import Case
from conformance.report import Check


def _inputs():
  return st.just(((np.array([1.0, -2.0], np.float32),), {}))


def _warning_negative(x):
  warnings.warn("overflow encountered in multiply", RuntimeWarning)  # as NumPy may
  return jnp.negative(x)


PASSING = Case("negative", _warning_negative, _inputs, np.negative)
FAILING = Case("negative against positive", jnp.negative, _inputs, np.positive)


def _main(monkeypatch, capsys, cases, argv=("--family", "tiling")):
  """Runs the CLI on one documented example and `cases` as the family's cases;
  returns (exit status, output lines, the warnings that got out)."""
  monkeypatch.setattr(cli.seeds, "CHECKS", [Check("an_example", "here", lambda: None)])
  monkeypatch.setattr(cli.seeds, "PENDING", [])
  monkeypatch.setattr(cli.promotion, "CHECKS", [])
  monkeypatch.setattr(cli, "family_module", lambda name: types.SimpleNamespace(CASES=cases))
  monkeypatch.setattr(cli, "load_hypothesis_profile", lambda *args: None)  # keep the tests'
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    status = cli.main(list(argv))
  return status, capsys.readouterr().out.splitlines(), caught


def test_passing_run_prints_progress_and_a_pass_verdict(monkeypatch, capsys):
  status, lines, caught = _main(monkeypatch, capsys, [PASSING])
  assert status == 0
  progress = [l for l in lines if re.fullmatch(r"  tiling +1 \.\.\. 1 passed, 0 failed in .+s", l)]
  assert len(progress) == 1
  assert lines.index(progress[0]) < lines.index("Derivative cases: 0 in 0 families")
  assert re.fullmatch(r"conformance: PASS - 1 documented examples, 1 value cases, "
                      r"0 derivative cases, 30 examples each, in \d+\.\ds", lines[-1]), lines[-1]
  assert [w for w in caught if issubclass(w.category, RuntimeWarning)] == []


def test_failing_case_is_listed_as_it_runs_and_fails_the_run(monkeypatch, capsys):
  status, lines, _ = _main(monkeypatch, capsys, [PASSING, FAILING])
  assert status == 1
  i = next(i for i, l in enumerate(lines) if l.startswith("  tiling "))
  assert "2 ... 1 passed, 1 failed in " in lines[i]
  assert lines[i + 1].startswith("      FAIL negative against positive: AssertionError")
  assert re.fullmatch(r"conformance: FAIL - 1 of 3 checks failed \(negative against positive\) "
                      r"in \d+\.\ds", lines[-1]), lines[-1]


def test_part_runs_those_parts_only(monkeypatch, capsys):
  status, lines, _ = _main(monkeypatch, capsys, [FAILING],
                           argv=("--family", "tiling", "--part", "documents"))
  assert status == 0   # the failing case is not run
  assert not any(l.startswith(("Property cases", "Derivative cases")) for l in lines)
  assert re.fullmatch(r"conformance: PASS - 1 documented examples, 0 value cases, "
                      r"0 derivative cases, .*", lines[-1]), lines[-1]
  status, lines, _ = _main(monkeypatch, capsys, [PASSING],
                           argv=("--family", "tiling", "--part", "cases"))
  assert status == 0 and "Documented examples and promotion tables" not in lines
  assert "Derivative cases: 0 in 0 families" not in lines
  assert re.fullmatch(r"conformance: PASS - 0 documented examples, 1 value cases, .*", lines[-1])


def test_examples_must_be_positive(capsys):
  with pytest.raises(SystemExit) as exit_info:
    cli.main(["--examples", "0"])
  assert exit_info.value.code == 2
  assert "--examples must be at least 1" in capsys.readouterr().err


def test_unknown_family_is_refused_with_the_choices(capsys):
  with pytest.raises(SystemExit):
    cli.main(["--family", "no_such_family"])
  err = capsys.readouterr().err
  assert "invalid choice: 'no_such_family'" in err and "elementwise" in err


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_shards_together_run_each_check_once_in_shares_of_equal_size(monkeypatch, capsys, n):
  cases = [Case(f"negative {i}", jnp.negative, _inputs, np.negative) for i in range(5)]
  ran = []
  for k in range(1, n + 1):
    status, lines, _ = _main(monkeypatch, capsys, cases,
                             argv=("--family", "tiling", "--shard", f"{k}/{n}"))
    assert status == 0 and lines[-1].startswith("conformance: PASS"), lines[-1]
    assert lines[0].endswith(f" shard={k}/{n}") == (n > 1), lines[0]
    ran.append([m[1] for m in map(re.compile(r"(an_example|negative \d) +PASS").match, lines)
                if m])
  assert sorted(sum(ran, [])) == ["an_example"] + [c.name for c in cases]
  assert max(map(len, ran)) - min(map(len, ran)) <= 1, ran


@pytest.mark.parametrize("shard", ["0/2", "3/2", "2", "1/0", "a/b", "1/2/3"])
def test_a_shard_outside_its_count_is_refused(capsys, shard):
  with pytest.raises(SystemExit) as exit_info:
    cli.main(["--shard", shard])
  assert exit_info.value.code == 2
  assert f"{shard!r} is not K/N with 1 <= K <= N" in capsys.readouterr().err
