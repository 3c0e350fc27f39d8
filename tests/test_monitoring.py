"""`refimpl.monitoring` (`jax.monitoring`): listeners of each kind are called
by their record function, and jit records JAX's compile-duration events."""

import numpy as np
import pytest

import refimpl as jax
from refimpl import monitoring


@pytest.fixture(autouse=True)
def no_listeners():
  monitoring.clear_event_listeners()
  yield
  monitoring.clear_event_listeners()


def test_each_kind_calls_its_listeners_in_order():
  seen = []
  monitoring.register_event_listener(lambda e, **k: seen.append(("event", e, k)))
  monitoring.register_event_listener(lambda e, **k: seen.append(("event2", e, k)))
  monitoring.register_event_duration_secs_listener(lambda e, d, **k: seen.append(("dur", e, d, k)))
  monitoring.register_event_time_span_listener(
      lambda e, s, t, **k: seen.append(("span", e, s, t, k)))
  monitoring.register_scalar_listener(lambda e, v, **k: seen.append(("scalar", e, v, k)))
  monitoring.record_event("/a", tag="x")
  monitoring.record_event_duration_secs("/b", 1.5, n=2)
  monitoring.record_event_time_span("/c", 1.0, 2.0)
  monitoring.record_scalar("/d", 7)
  assert seen == [("event", "/a", {"tag": "x"}), ("event2", "/a", {"tag": "x"}),
                  ("dur", "/b", 1.5, {"n": 2}), ("span", "/c", 1.0, 2.0, {}),
                  ("scalar", "/d", 7, {})]


def test_unregister_and_clear():
  seen = []
  listener = lambda e, **k: seen.append(e)  # noqa: E731
  monitoring.register_event_listener(listener)
  monitoring.unregister_event_listener(listener)
  monitoring.record_event("/a")
  assert seen == []
  for unregister in (monitoring.unregister_event_listener,
                     monitoring.unregister_event_duration_listener,
                     monitoring.unregister_event_time_span_listener,
                     monitoring.unregister_scalar_listener):
    with pytest.raises(AssertionError):
      unregister(listener)   # not registered
  monitoring.register_scalar_listener(lambda e, v, **k: seen.append(e))
  monitoring.clear_event_listeners()
  monitoring.record_scalar("/s", 1.0)
  assert seen == []


def test_jit_records_trace_and_compile_durations_once():
  durations, spans = [], []
  monitoring.register_event_duration_secs_listener(
      lambda e, d, **k: durations.append((e, d, k)))
  monitoring.register_event_time_span_listener(lambda e, s, t, **k: spans.append((e, s, t)))

  def add_one(x):
    return x + 1

  f = jax.jit(add_one)
  f(np.float32(1))
  f(np.float32(2))   # cached: no new events
  assert [(e, k) for e, _, k in durations] == [
      ("/jax/core/compile/jaxpr_trace_duration", {"fun_name": "add_one"}),
      ("/jax/core/compile/backend_compile_duration", {"fun_name": "add_one"})]
  assert all(d >= 0 for _, d, _ in durations)
  assert [e for e, _, _ in spans] == [e for e, _, _ in durations]
  assert all(s <= t for _, s, t in spans)
