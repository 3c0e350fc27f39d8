"""The numba backend's host calls: pure_callback and debug_callback
(debug.print) are called from the compiled program, in program order, with
the arguments the reference passes (NumPy arrays; Arrays for
debug_callback; key arrays for keys), and their results read back with the
declared types; errors in the results are the reference's."""

import numpy as np
import pytest
from hypothesis import given, settings

import refimpl as jax
from refimpl import dtypes, lax, random
from conformance import strategies as cst

pytest.importorskip("numba")

SETTINGS = settings(max_examples=10, deadline=None)


def run_both(program, *args):
  """(reference results, numba results, the callbacks' records of each)."""
  results, records = [], []
  for backend in (None, "numba"):
    log = []
    results.append(jax.jit(program(log), backend=backend)(*args))
    records.append(log)
  return results, records


def recording(log):
  def program(x, y, k):
    jax.debug.print("x={} y={}", x, y)
    a, b = jax.pure_callback(
        lambda u, v, key: (log.append(("pure", type(u), type(key), u.dtype)) or np.sin(u),
                           (v * 2).astype(np.int32)),
        (jax.ShapeDtypeStruct(x.shape, x.dtype), jax.ShapeDtypeStruct((), np.int32)), x, y, k)
    jax.debug.callback(lambda key, v: log.append(("debug", random.key_data(key).tolist(),
                                                  type(v).__name__, np.asarray(v).tolist())),
                       k, a)
    c = lax.fori_loop(0, 2, lambda i, s: s + jax.pure_callback(
        lambda j: log.append(("loop", int(j))) or j * 10, jax.ShapeDtypeStruct((), np.int32), i), y)
    return a, b, c
  return program


@pytest.mark.parametrize("dtype", [np.float32, np.float16, dtypes.bfloat16])
@SETTINGS
@given(data=cst.same_shape_arrays(dtype_list=[np.float32], n=1))
def test_callbacks_agree(dtype, data):
  ((x,), _) = data
  x = x.astype(dtype)
  args = (x, np.int32(3), random.key(7))
  (reference, backend), (ref_log, numba_log) = run_both(recording, *args)
  for r, b in zip(reference, backend):
    r, b = np.asarray(r), np.asarray(b)
    assert b.dtype == r.dtype
    np.testing.assert_array_equal(b.astype(np.float64), r.astype(np.float64))   # (NaN == NaN)
  assert [str(e) for e in numba_log] == [str(e) for e in ref_log]


def test_debug_print_output(capsys):
  def f(x):
    jax.debug.print("value {v}", v=x)
    return x * 2

  x = np.array([1.5, -0.0], np.float32)
  jax.jit(f)(x)
  expected = capsys.readouterr().out
  jax.jit(f, backend="numba")(x)
  assert capsys.readouterr().out == expected


def test_wrong_result_type_raises_as_the_reference():
  f = lambda x: jax.pure_callback(lambda v: v.astype(np.float64),
                                  jax.ShapeDtypeStruct((2,), np.float32), x)
  with pytest.raises(RuntimeError, match="Incorrect output dtype"):
    jax.jit(f, backend="numba")(np.ones(2, np.float32))


def test_source_does_not_depend_on_the_callback():
  """Two callbacks give one compiled program (the callback is a run-time token)."""
  from numba_backend import cache
  programs = len(cache._memory)
  outs = [jax.jit(lambda x, c=c: jax.pure_callback(lambda v: v + c,
                                                   jax.ShapeDtypeStruct((), np.float32), x),
                  backend="numba")(np.float32(1.0)) for c in (np.float32(1.0), np.float32(2.0))]
  assert [float(o) for o in outs] == [2.0, 3.0]
  assert len(cache._memory) - programs <= 1
