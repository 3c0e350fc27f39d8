"""`refimpl.profiler` (`jax.profiler`): annotations run their code and are
recorded as spans while a trace runs; start/stop errors as JAX's; the trace
files written; the device memory profile as a pprof protocol buffer."""

import gzip
import json

import numpy as np
import pytest

import refimpl as jax
from refimpl import profiler


def _trace_events(log_dir, name):
  (path,) = (log_dir / "plugins" / "profile").glob(f"*/{name}")
  with gzip.open(path, "rt") as f:
    return json.load(f)


def test_annotations_only_run_the_code_outside_a_trace():
  with profiler.TraceAnnotation("label", k=1) as annotation:
    value = 3
  assert value == 3 and annotation.name == "label"

  @profiler.annotate_function
  def double(x):
    return 2 * x

  assert double(4) == 8 and double.__name__ == "double"
  with profiler.StepTraceAnnotation("train", step_num=2):
    pass


def test_a_trace_records_annotations_and_jit_compiles(tmp_path):
  named = profiler.annotate_function(lambda x: x + 1, name="plus_one", kind="test")
  with profiler.trace(tmp_path, create_perfetto_trace=True):
    with profiler.TraceAnnotation("outer", n=3):
      named(1)
      jax.jit(lambda x: x * 2.0)(np.float32(3))
    with profiler.StepTraceAnnotation("train", step_num=7):
      pass
  trace = _trace_events(tmp_path, "*.trace.json.gz")
  spans = {e["name"]: e for e in trace["traceEvents"] if e["ph"] == "X"}
  assert {"outer", "plus_one", "train", "/jax/core/compile/jaxpr_trace_duration",
          "/jax/core/compile/backend_compile_duration"} <= set(spans)
  assert spans["outer"]["args"] == {"n": "3"} and spans["plus_one"]["args"] == {"kind": "test"}
  assert spans["train"]["args"] == {"_r": "1", "step_num": "7"}
  outer = spans["outer"]
  assert outer["ts"] <= spans["plus_one"]["ts"] <= outer["ts"] + outer["dur"]
  perfetto = _trace_events(tmp_path, "perfetto_trace.json.gz")
  assert "metadata" not in perfetto and len(perfetto["traceEvents"]) == len(trace["traceEvents"])
  with profiler.TraceAnnotation("after"):   # no trace running: nothing recorded
    pass


def test_one_trace_at_a_time(tmp_path):
  with pytest.raises(RuntimeError, match="No profile started"):
    profiler.stop_trace()
  profiler.start_trace(tmp_path)
  with pytest.raises(RuntimeError, match="Profile has already been started"):
    profiler.start_trace(tmp_path)
  profiler.stop_trace()
  options = profiler.ProfileOptions()
  options.host_tracer_level = 0
  with profiler.trace(tmp_path / "quiet", profiler_options=options):
    with profiler.TraceAnnotation("unrecorded"):
      pass
  events = _trace_events(tmp_path / "quiet", "*.trace.json.gz")["traceEvents"]
  assert [e for e in events if e["ph"] == "X"] == []


def _fields(data):
  """The (field number, value) pairs of a protobuf message (varints and
  length-delimited fields only)."""
  i, out = 0, []

  def varint():
    nonlocal i
    n = shift = 0
    while True:
      byte = data[i]
      i += 1
      n |= (byte & 0x7F) << shift
      shift += 7
      if not byte & 0x80:
        return n

  while i < len(data):
    key = varint()
    if key & 7 == 0:
      out.append((key >> 3, varint()))
    else:
      size = varint()
      out.append((key >> 3, data[i:i + size]))
      i += size
  return out


def test_device_memory_profile_is_a_pprof_of_the_live_arrays(tmp_path):
  keep = jax.numpy.zeros(1000, np.float32)
  profile = _fields(gzip.decompress(profiler.device_memory_profile()))
  strings = [v.decode() for k, v in profile if k == 6]
  assert strings[0] == "" and {"allocations", "count", "space", "bytes"} <= set(strings)
  functions = {dict(_fields(v))[1]: strings[dict(_fields(v))[2]] for k, v in profile if k == 5}
  samples = [dict(_fields(v)) for k, v in profile if k == 2]
  sizes = [(functions[s[1][0]], s[2]) for s in samples]   # one-byte varints here
  assert ("float32[1000]", bytes([1]) + bytes([0xA0, 0x1F])) in sizes   # 1, 4000 bytes
  path = tmp_path / "memory.prof"
  profiler.save_device_memory_profile(path)
  assert gzip.decompress(path.read_bytes())
  del keep
