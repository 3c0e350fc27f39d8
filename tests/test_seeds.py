"""The seed documents' examples (conformance/seeds.py) and the conformance runner."""

import pytest

from conformance import promotion, seeds
from conformance.__main__ import main
from conformance.report import Check, Pending, format_report, pending_result, run_check


@pytest.mark.parametrize("check", seeds.CHECKS, ids=lambda c: c.name)
def test_seed_example(check):
  check.run()


@pytest.mark.parametrize("check", promotion.CHECKS, ids=lambda c: c.name)
def test_promotion_table(check):
  check.run()


def test_every_example_is_named_once():
  names = [c.name for c in seeds.CHECKS] + [p.name for p in seeds.PENDING]
  assert len(names) == len(set(names))
  assert all(p.topic and p.source for p in seeds.PENDING)


def test_run_example_keeps_output_namespace_and_final_value():
  ex = seeds.run_example("""
      y = jnp.arange(3)
      print("hello")
      y.sum()
      """, z=5)
  assert ex.out == "hello\n"
  assert ex.ns["z"] == 5 and ex.ns["y"].shape == (3,)
  assert int(ex.value) == 3


def test_report_lists_each_result_and_counts():
  def failing():
    raise AssertionError("printed 'x'\nsecond line")

  results = [run_check(Check("good", "doc", lambda: None)),
             run_check(Check("bad", "doc", failing)),
             pending_result(Pending("later", "doc", "vmap"))]
  assert [r.status for r in results] == ["PASS", "FAIL", "PENDING"]
  assert results[1].message == "AssertionError: printed 'x'"
  text = format_report(results)
  assert "bad" in text and "waits for vmap" in text
  assert text.endswith("1 passed, 1 failed, 1 pending (3 total)")


def test_unknown_backend_is_refused_with_the_registered_names(capsys):
  with pytest.raises(SystemExit) as exit_info:
    main(["--backend", "no-such-backend"])
  assert exit_info.value.code == 2
  err = capsys.readouterr().err
  assert "unknown backend 'no-such-backend'" in err and "reference" in err
