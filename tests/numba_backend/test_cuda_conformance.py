"""`python -m conformance --backend numba-cuda` in numba's CUDA simulator:
every property and derivative case of each family, one example a case
(about a minute and a half of the simulator in all; the documented examples'
million-element arrays would take it hours); and (opt-in, `-m numba_full`:
thousands of kernels, a quarter of an hour) every kernel those cases launch
compiled to PTX for compute capability 9.0."""

import os

import pytest
from hypothesis import settings

import conformance.__main__ as cli
from conformance.cases import family_names
from numba_backend.cuda import device
from tests.numba_backend.ptx import recorded_ptx


def _run(families, capsys):
  """The conformance cases of `families` on numba-cuda, one example a case: its verdict."""
  try:
    status = cli.main(["--backend", "numba-cuda", "--examples", "1", "--part", "cases",
                       "--part", "derivatives", *(a for f in families for a in ("--family", f))])
  finally:   # (the suite's profile, which the run replaced, for the tests after it)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
  verdict = capsys.readouterr().out.strip().splitlines()[-1]
  assert status == 0 and verdict.startswith("conformance: PASS"), verdict


@pytest.mark.parametrize("family", family_names())
def test_the_conformance_cases_pass_on_numba_cuda(family, capsys):
  _run([family], capsys)


@pytest.mark.numba_full
def test_every_kernel_the_conformance_cases_launch_compiles_to_ptx(capsys, tmp_path):
  """Each kernel at each signature it was launched with: compiled for
  compute capability 9.0, calling no function outside itself, its blocks
  and static shared memory within the architecture's limits (1024 threads,
  48 KiB)."""
  with device.recording_launches() as launches:
    _run(family_names(), capsys)
  found = recorded_ptx(launches, tmp_path, timeout=3600)
  assert found["compiled"] == len(launches) and not found["failed"], found["failed"][:5]
  assert not found["externs"], found["externs"][:5]
  assert found["threads"] <= 1024 and found["shared"] <= 48 * 1024
