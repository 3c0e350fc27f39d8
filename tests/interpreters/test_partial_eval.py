"""Tests of refimpl/interpreters/partial_eval.py: tracing to jaxprs,
partial evaluation with a parent trace, split_tracer_consts and
partial_eval_jaxpr."""

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import core
from refimpl.interpreters import partial_eval as pe
from refimpl.interpreters.eval import eval_closed_jaxpr

F32 = core.ShapedArray((), np.float32)
F32_2 = core.ShapedArray((2,), np.float32)


def f32(x):
  return np.asarray(x, np.float32)


def prim_names(closed):
  return [e.primitive.name for e in closed.jaxpr.eqns]


# --- tracing -----------------------------------------------------------------------

def test_trace_to_jaxpr_records_every_application():
  closed = pe.trace_to_jaxpr(lambda x, y: [jnp.sin(x) * y], [F32, F32])
  assert prim_names(closed) == ["sin", "mul"]
  assert closed.in_avals == [F32, F32] and closed.out_avals == [F32]
  np.testing.assert_allclose(eval_closed_jaxpr(closed, f32(1.), f32(2.)),
                             [2 * np.sin(1.)], rtol=1e-6)


def test_constants_become_literals_or_constvars():
  arr = f32([1., 2.])
  closed = pe.trace_to_jaxpr(lambda x: [x * arr + 3.], [F32_2])
  assert len(closed.consts) == len(closed.jaxpr.constvars) == 1
  np.testing.assert_array_equal(closed.consts[0], arr)
  assert "3.0" in str(closed)   # a scalar constant is inlined
  # Each constant (an Array) is captured once, however often it is used.
  arr = jnp.asarray(arr)
  closed = pe.trace_to_jaxpr(lambda x: [x * arr + arr], [F32_2])
  assert len(closed.consts) == 1


# --- partial evaluation with a parent trace ----------------------------------------------

def test_known_values_run_in_the_parent_trace():
  trace = pe.JaxprTrace(parent=core.current_trace())
  x = trace.new_arg(F32)
  with core.set_current_trace(trace):
    k = jnp.sin(f32(1.)) * 2.           # known: computed now
    u = k * x                           # unknown: recorded
  assert not isinstance(k, core.Tracer)
  np.testing.assert_allclose(k, 2 * np.sin(1.), rtol=1e-6)
  assert trace.is_own(u) and not trace.is_own(k)
  closed = trace.to_closed_jaxpr([u])
  assert prim_names(closed) == ["mul"]
  np.testing.assert_allclose(eval_closed_jaxpr(closed, f32(3.)), [6 * np.sin(1.)], rtol=1e-6)


def test_parent_trace_that_is_itself_tracing():
  # Known values are tracers of the enclosing trace: they become constvars,
  # which split_tracer_consts turns into leading inputs.
  def outer(a):
    trace = pe.JaxprTrace(parent=core.current_trace())
    x = trace.new_arg(F32)
    with core.set_current_trace(trace):
      known = jnp.cos(a)
      out = known * x
    closed = trace.to_closed_jaxpr([out])
    assert prim_names(closed) == ["mul"]
    assert len(closed.consts) == 1 and isinstance(closed.consts[0], core.Tracer)
    split, tracer_consts = pe.split_tracer_consts(closed)
    assert split.consts == [] and len(tracer_consts) == 1
    assert split.in_avals == [F32, F32]
    return eval_closed_jaxpr(split, *tracer_consts, f32(2.))

  outer_jaxpr = jax.make_jaxpr(outer)(f32(1.))
  assert prim_names(outer_jaxpr) == ["cos", "mul"]
  np.testing.assert_allclose(eval_closed_jaxpr(outer_jaxpr, f32(1.)), [2 * np.cos(1.)],
                             rtol=1e-6)


def test_without_parent_everything_is_recorded():
  closed = pe.trace_to_jaxpr(lambda x: [jnp.sin(f32(1.)) * x], [F32])
  assert prim_names(closed) == ["sin", "mul"]


# --- partial_eval_jaxpr -------------------------------------------------------------------

def _example():
  return pe.trace_to_jaxpr(lambda x, y: [jnp.sin(x) * y, jnp.cos(x)], [F32, F32])


def test_partial_eval_jaxpr_splits_known_and_unknown():
  known, unknown, out_unknowns, num_res = pe.partial_eval_jaxpr(_example(), [False, True])
  assert out_unknowns == [True, False]
  assert num_res == 1                       # sin(x), needed by the unknown mul
  assert known.in_avals == [F32] and len(known.out_avals) == 1 + num_res
  assert prim_names(unknown) == ["mul"]
  assert unknown.in_avals == [F32] * (num_res + 1)
  x, y = f32(0.5), f32(3.)
  *known_outs, res = eval_closed_jaxpr(known, x)
  np.testing.assert_allclose(known_outs, [np.cos(.5)], rtol=1e-6)
  np.testing.assert_allclose(eval_closed_jaxpr(unknown, res, y), [np.sin(.5) * 3], rtol=1e-6)


def test_partial_eval_jaxpr_instantiate_makes_known_outputs_unknown():
  known, unknown, out_unknowns, num_res = pe.partial_eval_jaxpr(
      _example(), [False, True], instantiate=True)
  assert out_unknowns == [True, True]
  assert len(known.out_avals) == num_res == 2
  x, y = f32(0.5), f32(3.)
  res = eval_closed_jaxpr(known, x)
  np.testing.assert_allclose(eval_closed_jaxpr(unknown, *res, y),
                             [np.sin(.5) * 3, np.cos(.5)], rtol=1e-6)
  # instantiate per output
  _, _, out_unknowns, _ = pe.partial_eval_jaxpr(_example(), [False, True],
                                                instantiate=[False, True])
  assert out_unknowns == [True, True]


def test_partial_eval_jaxpr_all_known_and_all_unknown():
  known, unknown, out_unknowns, num_res = pe.partial_eval_jaxpr(_example(), [False, False])
  assert out_unknowns == [False, False] and num_res == 0
  assert unknown.eqns == [] and unknown.out_avals == []
  np.testing.assert_allclose(eval_closed_jaxpr(known, f32(0.5), f32(3.)),
                             [np.sin(.5) * 3, np.cos(.5)], rtol=1e-6)
  known, unknown, out_unknowns, num_res = pe.partial_eval_jaxpr(_example(), [True, True])
  assert out_unknowns == [True, True] and num_res == 0 and known.eqns == []
  assert prim_names(unknown) == ["sin", "mul", "cos"]


def test_partial_eval_jaxpr_unknown_x():
  # Everything depends on x: nothing is known but y, which is a residual.
  known, unknown, out_unknowns, num_res = pe.partial_eval_jaxpr(_example(), [True, False])
  assert out_unknowns == [True, True]
  assert num_res == 1 and known.eqns == []
  (res,) = eval_closed_jaxpr(known, f32(3.))
  np.testing.assert_allclose(eval_closed_jaxpr(unknown, res, f32(0.5)),
                             [np.sin(.5) * 3, np.cos(.5)], rtol=1e-6)


def test_partial_eval_of_jit_rule_runs_known_half_now():
  f = jax.jit(lambda x, y: (jnp.sin(x) * y, jnp.cos(x)))
  trace = pe.JaxprTrace(parent=core.current_trace())
  y = trace.new_arg(F32)
  with core.set_current_trace(trace):
    a, b = f(f32(0.5), y)
  assert trace.is_own(a) and not trace.is_own(b)
  np.testing.assert_allclose(b, np.cos(.5), rtol=1e-6)
  closed = trace.to_closed_jaxpr([a])
  assert prim_names(closed) == ["jit"]
  assert prim_names(closed.jaxpr.eqns[0].params["jaxpr"]) == ["mul"]
  np.testing.assert_allclose(eval_closed_jaxpr(closed, f32(3.)), [np.sin(.5) * 3], rtol=1e-6)


@pytest.mark.parametrize("unknowns", [[False, True], [True, False], [True, True],
                                      [False, False]])
def test_partial_eval_jaxpr_recombines_to_the_original(unknowns):
  closed = pe.trace_to_jaxpr(
      lambda x, y: [jnp.exp(x) * jnp.sin(y) + x, y * 2., jnp.tanh(x)], [F32, F32])
  args = [f32(0.3), f32(-1.2)]
  known, unknown, out_unknowns, num_res = pe.partial_eval_jaxpr(closed, unknowns)
  k_outs = eval_closed_jaxpr(known, *[a for a, u in zip(args, unknowns) if not u])
  n_known = len(k_outs) - num_res
  u_outs = iter(eval_closed_jaxpr(unknown, *k_outs[n_known:],
                                  *[a for a, u in zip(args, unknowns) if u]))
  k_iter = iter(k_outs[:n_known])
  got = [next(u_outs) if u else next(k_iter) for u in out_unknowns]
  np.testing.assert_allclose(got, eval_closed_jaxpr(closed, *args), rtol=1e-6)
