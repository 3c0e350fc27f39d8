"""`refimpl.profiler`: tracing annotations and profiles of this process, as
`jax.profiler`.

A *trace* records what the process did between `start_trace` and
`stop_trace` (or within `with trace(...)`): each `TraceAnnotation` (and
`StepTraceAnnotation`, `annotate_function`) that ran, as a span of wall time
on its thread, and the spans of jit's tracing and compiling (the
`/jax/core/compile/...` events of `refimpl.monitoring`). Outside a trace the
annotations only run their code. refimpl has no device activity to record
and no XLA profiler: `stop_trace` writes the spans as Chrome trace events,
`<log_dir>/plugins/profile/<date_time>/<host>.trace.json.gz`, the file
TensorBoard's trace viewer reads (JAX writes its XSpace `.xplane.pb`
beside it), and with `create_perfetto_trace` also `perfetto_trace.json.gz`
for ui.perfetto.dev.

`device_memory_profile` is a snapshot of the live Arrays in `pprof` format.
"""

import contextlib
import functools
import gzip
import json
import os
import pathlib
import socket
import threading
import time

from refimpl import monitoring

__all__ = ["ProfileOptions", "StepTraceAnnotation", "TraceAnnotation", "annotate_function",
           "device_memory_profile", "save_device_memory_profile", "start_trace", "stop_trace",
           "trace"]


class ProfileOptions:
  """Options of a trace's collectors (JAX's, with its defaults). refimpl
  records host annotations at every level but 0 (`host_tracer_level=0`
  records none); the other options concern collectors it does not have."""

  def __init__(self):
    self.host_tracer_level = 2
    self.device_tracer_level = 1
    self.python_tracer_level = 0
    self.include_dataset_ops = True
    self.enable_hlo_proto = True
    self.start_timestamp_ns = 0
    self.duration_ms = 0
    self.repository_path = ""
    self.raise_error_on_start_failure = False
    self.advanced_configuration = {}


class _Session:
  """A trace being recorded: its spans as Chrome trace events."""

  def __init__(self, log_dir, create_perfetto_link, create_perfetto_trace, options):
    self.log_dir = pathlib.Path(log_dir)
    self.create_perfetto_link = create_perfetto_link
    self.create_perfetto_trace = create_perfetto_trace or create_perfetto_link
    self.recording = options.host_tracer_level > 0
    self.events = []
    self.lock = threading.Lock()

  def record(self, name, start_ns, end_ns, args):
    if not self.recording:
      return
    event = {"ph": "X", "name": name, "pid": os.getpid(), "tid": threading.get_ident(),
             "ts": start_ns / 1e3, "dur": (end_ns - start_ns) / 1e3}
    if args:
      event["args"] = {k: str(v) for k, v in args.items()}
    with self.lock:
      self.events.append(event)

  def record_span(self, event, start_time, end_time, **kwargs):
    """A monitoring time span (seconds) as a span of the trace."""
    self.record(event, int(start_time * 1e9), int(end_time * 1e9), kwargs)

  def write(self):
    """Writes the trace; returns the run's folder."""
    run = self.log_dir / "plugins" / "profile" / time.strftime("%Y_%m_%d_%H_%M_%S")
    run.mkdir(parents=True, exist_ok=True)
    trace = {"displayTimeUnit": "ns", "traceEvents": [
        {"ph": "M", "name": "process_name", "pid": os.getpid(),
         "args": {"name": "/host:CPU"}}, *self.events]}
    with gzip.open(run / f"{socket.gethostname()}.trace.json.gz", "wt") as f:
      json.dump({**trace, "metadata": {"producer": "refimpl"}}, f)
    if self.create_perfetto_trace:
      with gzip.open(run / "perfetto_trace.json.gz", "wt") as f:
        json.dump(trace, f)
    return run


_state_lock = threading.Lock()
_session = None


def start_trace(log_dir, create_perfetto_link=False, create_perfetto_trace=False,
                profiler_options=None):
  """Starts recording a trace of this process, to be written to `log_dir` by
  `stop_trace`. Only one trace may run at a time: RuntimeError otherwise, as
  in JAX. `create_perfetto_trace` (or `create_perfetto_link`) also writes
  `perfetto_trace.json.gz`; with `create_perfetto_link`, `stop_trace`
  prints where it is to open it in ui.perfetto.dev (JAX serves it and blocks
  until the browser loaded it)."""
  global _session
  with _state_lock:
    if _session is not None:
      raise RuntimeError("Profile has already been started. Only one profile may be run "
                         "at a time.")
    _session = _Session(log_dir, create_perfetto_link, create_perfetto_trace,
                        profiler_options or ProfileOptions())
    monitoring.register_event_time_span_listener(_session.record_span)


def stop_trace():
  """Stops the trace and writes it (see the module docstring); RuntimeError
  if none was started."""
  global _session
  with _state_lock:
    if _session is None:
      raise RuntimeError("No profile started")
    session, _session = _session, None
    monitoring.unregister_event_time_span_listener(session.record_span)
  run = session.write()
  if session.create_perfetto_link:
    print(f"Perfetto trace written to {run / 'perfetto_trace.json.gz'}: open it at "
          "https://ui.perfetto.dev (Open trace file).")


@contextlib.contextmanager
def trace(log_dir, create_perfetto_link=False, create_perfetto_trace=False,
          profiler_options=None):
  """Records a trace of the block (`start_trace` ... `stop_trace`)."""
  start_trace(log_dir, create_perfetto_link, create_perfetto_trace, profiler_options)
  try:
    yield
  finally:
    stop_trace()


class TraceAnnotation:
  """A context manager whose block shows as the span `name` on its thread's
  timeline if it runs while a trace is recorded (its keyword arguments as
  the span's arguments). Otherwise it only runs the block."""

  def __init__(self, name, **kwargs):
    self.name, self.kwargs = name, kwargs

  def __enter__(self):
    self._start = time.time_ns()
    return self

  def __exit__(self, *exc):
    session = _session
    if session is not None:
      session.record(self.name, self._start, time.time_ns(), self.kwargs)
    return False


class StepTraceAnnotation(TraceAnnotation):
  """A `TraceAnnotation` marking a step (of training, say): pass its number
  as `step_num`."""

  def __init__(self, name, **kwargs):
    super().__init__(name, _r=1, **kwargs)


def annotate_function(func, name=None, **decorator_kwargs):
  """`func` with each call in a `TraceAnnotation` named `name` (by default
  the function's qualified name), with `decorator_kwargs` as its arguments."""
  name = name or getattr(func, "__qualname__", None) or func.__name__

  @functools.wraps(func)
  def wrapper(*args, **kwargs):
    with TraceAnnotation(name, **decorator_kwargs):
      return func(*args, **kwargs)
  return wrapper


# --- device memory profiles ----------------------------------------------------------------

def _varint(n):
  out = bytearray()
  while True:
    byte, n = n & 0x7F, n >> 7
    out.append(byte | (0x80 if n else 0))
    if not n:
      return bytes(out)


def _field(number, value):
  """A protobuf field: an int (varint) or bytes (length-delimited)."""
  if isinstance(value, int):
    return _varint(number << 3) + _varint(value)
  return _varint(number << 3 | 2) + _varint(len(value)) + value


def _pprof(samples):
  """A pprof `Profile` message of `samples`, each ((type name, unit name) ...)
  values per sample type, a location name and labels {key: str}."""
  strings = {"": 0}

  def s(text):
    return strings.setdefault(text, len(strings))

  sample_types = [("allocations", "count"), ("space", "bytes")]
  body = b"".join(_field(1, _field(1, s(t)) + _field(2, s(u))) for t, u in sample_types)
  functions = {}
  for values, where, labels in samples:
    fid = functions.setdefault(where, len(functions) + 1)
    body += _field(2, _field(1, _varint(fid)) + _field(2, b"".join(map(_varint, values)))
                   + b"".join(_field(3, _field(1, s(k)) + _field(2, s(v)))
                              for k, v in labels.items()))
  for where, fid in functions.items():
    body += _field(4, _field(1, fid) + _field(4, _field(1, fid)))
    body += _field(5, _field(1, fid) + _field(2, s(where)) + _field(3, s(where)))
  body += b"".join(_field(6, text.encode()) for text in strings)
  return body + _field(9, time.time_ns())


def device_memory_profile(backend=None):
  """A snapshot of the memory of the live Arrays (of `backend`'s devices, or
  of all), as a gzipped `pprof` protocol buffer (`pprof` reads it).

  Each Array is a sample of one allocation and its size in bytes, labelled
  with its device and kind "buffer"; JAX attributes a buffer to the Python
  stack that allocated it, which refimpl does not record, so a sample's
  location is the Array's type (`float32[1000]`).
  """
  from refimpl.array import live_arrays
  samples = [((1, x.nbytes), x.aval.str_short(), {"kind": "buffer", "device": str(x.device)})
             for x in live_arrays(backend)]
  return gzip.compress(_pprof(samples))


def save_device_memory_profile(filename, backend=None):
  """Writes `device_memory_profile(backend)` to the file `filename`."""
  with open(filename, "wb") as f:
    f.write(device_memory_profile(backend))
