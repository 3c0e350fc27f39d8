"""`python -m conformance --backend numba-cuda` in numba's CUDA simulator:
every property and derivative case of each family, one example a case
(about three minutes of the simulator in all; the documented examples'
million-element arrays would take it hours)."""

import os

import pytest
from hypothesis import settings

import conformance.__main__ as cli
from conformance.cases import family_names


@pytest.mark.parametrize("family", family_names())
def test_the_conformance_cases_pass_on_numba_cuda(family, capsys):
  try:
    status = cli.main(["--backend", "numba-cuda", "--examples", "1", "--part", "cases",
                       "--part", "derivatives", "--family", family])
  finally:   # (the suite's profile, which the run replaced, for the tests after it)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
  verdict = capsys.readouterr().out.strip().splitlines()[-1]
  assert status == 0 and verdict.startswith("conformance: PASS"), verdict
