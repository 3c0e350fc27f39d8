"""Test configuration: hypothesis profiles.

The default profile keeps CI fast; `HYPOTHESIS_PROFILE=full` runs many more
examples (opt-in, for thorough local runs).
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("default", max_examples=30, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("full", max_examples=500, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
