"""`refimpl.monitoring`: instrumentation events and their listeners, as
`jax.monitoring`.

Code marks a point as a named event (`record_event`), a duration
(`record_event_duration_secs`), a time span (`record_event_time_span`) or a
scalar value (`record_scalar`); each call invokes the listeners registered
for that kind, in order of registration, with the event's name, values and
keyword metadata. With no listener registered, recording does nothing.

`jit` records, as JAX does, the duration and time span of tracing a function
("/jax/core/compile/jaxpr_trace_duration") and of a backend compiling a
program ("/jax/core/compile/backend_compile_duration"), with the function's
name as metadata `fun_name`, each time it traces or compiles (not when a
cached trace or program is reused).
"""

import contextlib
import time

__all__ = ["clear_event_listeners", "record_event", "record_event_duration_secs",
           "record_event_time_span", "record_scalar", "register_event_duration_secs_listener",
           "register_event_listener", "register_event_time_span_listener",
           "register_scalar_listener", "unregister_event_duration_listener",
           "unregister_event_listener", "unregister_event_time_span_listener",
           "unregister_scalar_listener"]

JAXPR_TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"

_event_listeners = []
_event_duration_secs_listeners = []
_event_time_span_listeners = []
_scalar_listeners = []


def record_event(event, **kwargs):
  """Calls each event listener with `(event, **kwargs)`."""
  for callback in list(_event_listeners):
    callback(event, **kwargs)


def record_event_duration_secs(event, duration, **kwargs):
  """Calls each duration listener with `(event, duration, **kwargs)`: the
  event took `duration` seconds."""
  for callback in list(_event_duration_secs_listeners):
    callback(event, duration, **kwargs)


def record_event_time_span(event, start_time, end_time, **kwargs):
  """Calls each time span listener with `(event, start_time, end_time,
  **kwargs)`: the event ran between those times (seconds)."""
  for callback in list(_event_time_span_listeners):
    callback(event, start_time, end_time, **kwargs)


def record_scalar(event, value, **kwargs):
  """Calls each scalar listener with `(event, value, **kwargs)`."""
  for callback in list(_scalar_listeners):
    callback(event, value, **kwargs)


def register_event_listener(callback):
  """Makes `record_event` call `callback(event, **kwargs)`."""
  _event_listeners.append(callback)


def register_event_duration_secs_listener(callback):
  """Makes `record_event_duration_secs` call `callback(event, duration, **kwargs)`."""
  _event_duration_secs_listeners.append(callback)


def register_event_time_span_listener(callback):
  """Makes `record_event_time_span` call `callback(event, start_time, end_time, **kwargs)`."""
  _event_time_span_listeners.append(callback)


def register_scalar_listener(callback):
  """Makes `record_scalar` call `callback(event, value, **kwargs)`."""
  _scalar_listeners.append(callback)


def _unregister(listeners, callback):
  """Removes `callback` from `listeners`; AssertionError, as in JAX, if it is
  not registered there."""
  if callback not in listeners:
    raise AssertionError(f"{callback!r} is not a registered listener")
  listeners.remove(callback)


def unregister_event_listener(callback):
  """Stops `record_event` calling `callback` (AssertionError if it does not)."""
  _unregister(_event_listeners, callback)


def unregister_event_duration_listener(callback):
  """Stops `record_event_duration_secs` calling `callback` (AssertionError if
  it does not)."""
  _unregister(_event_duration_secs_listeners, callback)


def unregister_event_time_span_listener(callback):
  """Stops `record_event_time_span` calling `callback` (AssertionError if it
  does not)."""
  _unregister(_event_time_span_listeners, callback)


def unregister_scalar_listener(callback):
  """Stops `record_scalar` calling `callback` (AssertionError if it does not)."""
  _unregister(_scalar_listeners, callback)


def clear_event_listeners():
  """Unregisters every listener of every kind."""
  for listeners in (_event_listeners, _event_duration_secs_listeners,
                    _event_time_span_listeners, _scalar_listeners):
    listeners.clear()


@contextlib.contextmanager
def timed(event, **kwargs):
  """Records the block's duration and time span as `event` (JAX's
  `log_elapsed_time` for its compile events)."""
  start = time.time()
  try:
    yield
  finally:
    end = time.time()
    record_event_duration_secs(event, end - start, **kwargs)
    record_event_time_span(event, start, end, **kwargs)
