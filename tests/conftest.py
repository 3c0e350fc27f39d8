"""Test configuration: hypothesis profiles, and shared fixtures.

The default profile keeps CI fast; `HYPOTHESIS_PROFILE=full` runs many more
examples (opt-in, for thorough local runs).
"""

import itertools
import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("default", max_examples=30, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("full", max_examples=500, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


_backend_names = itertools.count()


@pytest.fixture
def counting_backend():
  """The list of the programs a fresh backend (the reference's, counting its
  compiles) compiles, made the one jit uses for the test."""
  from refimpl import backends
  from refimpl.config import config
  compiled = []

  def compile_counting(closed_jaxpr):
    compiled.append(closed_jaxpr)
    return backends.compile_reference(closed_jaxpr)

  name = f"compile-counting-{next(_backend_names)}"
  backends.register_backend(name, compile_counting)
  with config.option("backend", name):
    yield compiled
