"""Sub-jaxprs (`jaxprs_in_params`, `subjaxprs`), call primitives
(`Primitive.call_jaxpr_param`) and what params hold: every primitive with a
sub-jaxpr param is a call primitive or a known control-flow primitive, a
backend can inline any call from the marker alone, and every param holding a
Python callable or a pytree definition is a declared transformation-only
param or a callback."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from conformance.cases import all_cases, numerical_warnings_ignored
from refimpl import lax
from refimpl.interpreters.eval import eval_jaxpr
from refimpl.jaxpr import ClosedJaxpr, Jaxpr, jaxprs_in_params, subjaxprs

f32 = np.float32

CONTROL_FLOW = {"cond", "while", "scan", "custom_linear_solve", "reduce", "reduce_window",
                "scatter", "select_and_scatter"}
"""The primitives with sub-jaxprs that are not calls: each evaluates its
sub-jaxprs its own way (docs/control_flow.md, docs/primitives.md)."""

CALLBACKS = {("pure_callback", "callback"), ("io_callback", "callback"),
             ("debug_callback", "callback")}
"""The params holding a Python function that evaluation calls."""


# --- the iterator ----------------------------------------------------------------

def test_jaxprs_in_params_unwraps_closed_jaxprs_and_looks_into_tuples():
  closed = jax.make_jaxpr(lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x))(f32(1))
  cond = closed.eqns[-1]
  branches = cond.params["branches"]
  assert list(jaxprs_in_params(cond.params)) == [b.jaxpr for b in branches]
  assert all(type(j) is Jaxpr for j in jaxprs_in_params(cond.params))
  assert list(jaxprs_in_params({"n": 3, "axes": (0, 1), "f": None})) == []


def test_jaxprs_in_params_skips_the_none_of_custom_linear_solve():
  closed = jax.make_jaxpr(lambda b: lax.custom_linear_solve(lambda v: 2 * v, b,
                                                            lambda mv, b: b / 2))(
      np.ones(2, f32))
  solve = next(e for e in closed.eqns if e.primitive.name == "custom_linear_solve")
  jaxprs = solve.params["jaxprs"]
  assert None in jaxprs
  assert list(jaxprs_in_params(solve.params)) == [j.jaxpr for j in jaxprs if j is not None]


def test_subjaxprs_does_not_look_into_the_jaxprs_it_yields():
  inner = jax.jit(lambda x: jnp.sin(x))
  outer = jax.jit(lambda x: inner(x) * 2)
  closed = jax.make_jaxpr(lambda x: outer(x) + lax.cond(x > 0, jnp.cos, jnp.tan, x))(f32(1))
  found = list(subjaxprs(closed.jaxpr))
  jit_jaxpr = closed.eqns[0].params["jaxpr"].jaxpr
  cond = next(e for e in closed.eqns if e.primitive.name == "cond")
  assert found == [jit_jaxpr, *[b.jaxpr for b in cond.params["branches"]]]
  assert list(subjaxprs(jit_jaxpr)) == [jit_jaxpr.eqns[0].params["jaxpr"].jaxpr]


# --- every sub-jaxpr param, every callable param, in what the suite traces ---------

def all_eqns(jaxpr):
  """The equations of `jaxpr` and of its sub-jaxprs, recursively."""
  for eqn in jaxpr.eqns:
    yield eqn
    for sub in jaxprs_in_params(eqn.params):
      yield from all_eqns(sub)


def _custom_vjp_sin():
  f = jax.custom_vjp(jnp.sin)
  f.defvjp(lambda x: (jnp.sin(x), x), lambda x, ct: (jnp.cos(x) * ct,))
  return f


EXTRA_PROGRAMS = {  # what the conformance cases may not trace
    "custom_vjp": lambda x: _custom_vjp_sin()(x),
    "custom_vmap": jax.custom_batching.sequential_vmap(jnp.tanh),
    "checkpoint": jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)),
                                 policy=jax.checkpoint_policies.dots_saveable),
    "while": lambda x: lax.while_loop(lambda c: c.sum() < 10, lambda c: c + 1, x),
    "pure_callback": lambda x: jax.pure_callback(np.sin, jax.ShapeDtypeStruct((3,), f32), x),
    "debug_callback": lambda x: jax.debug.print("{}", x) or x,
    "custom_lin": lambda x: jax.linearize(_custom_vjp_sin(), x)[1](x),
}


def _check_params(eqn):
  prim = eqn.primitive
  if any(jaxprs_in_params(eqn.params)):
    assert prim.call_jaxpr_param is not None or prim.name in CONTROL_FLOW, (
        f"{prim.name} holds a sub-jaxpr but is neither a call primitive "
        "(Primitive.call_jaxpr_param) nor a known control-flow primitive")
  if prim.call_jaxpr_param is not None:
    assert isinstance(eqn.params[prim.call_jaxpr_param], ClosedJaxpr), prim.name
  for name, value in eqn.params.items():
    if callable(value) or type(value).__name__ == "PyTreeDef":
      assert name in prim.transformation_params or (prim.name, name) in CALLBACKS, (
          f"{prim.name}'s param {name} holds {value!r}: declare it in "
          "transformation_params if only transformations read it")
  assert prim.transformation_params <= set(eqn.params), prim.name  # no misspelt name
  assert prim.call_jaxpr_param not in prim.transformation_params


@pytest.mark.parametrize("fn", EXTRA_PROGRAMS.values(), ids=EXTRA_PROGRAMS.keys())
def test_params_of_programs_with_custom_rules_and_callbacks(fn):
  closed = jax.make_jaxpr(fn)(np.ones(3, f32))
  eqns = list(all_eqns(closed.jaxpr))
  assert eqns
  for eqn in eqns:
    _check_params(eqn)


@pytest.mark.parametrize("case", all_cases(), ids=lambda c: c.name)
@settings(max_examples=1, database=None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_params_of_every_conformance_case(case, data):
  with numerical_warnings_ignored():
    args, kwargs = data.draw(case.inputs())
    closed = jax.make_jaxpr(lambda *a: case.fn(*a, **kwargs))(*args)
  for eqn in all_eqns(closed.jaxpr):
    _check_params(eqn)


# --- a backend inlines any call primitive from the marker alone ----------------------

def eval_inlining_calls(jaxpr, consts, *args):
  """Evaluates `jaxpr` as a backend that inlines calls would: a call
  primitive's equation is its sub-jaxpr evaluated on its operands (and its
  consts), found through `call_jaxpr_param` alone; other equations bind."""
  env = dict(zip([*jaxpr.constvars, *jaxpr.invars], [*consts, *args]))
  read = lambda a: env[a] if a in env else a.val
  for eqn in jaxpr.eqns:
    operands = [read(a) for a in eqn.invars]
    prim = eqn.primitive
    if prim.call_jaxpr_param is not None:
      callee = eqn.params[prim.call_jaxpr_param]
      outs = eval_inlining_calls(callee.jaxpr, callee.consts, *operands)
    else:
      outs = prim.bind(*operands, **eqn.params)
      outs = outs if prim.multiple_results else [outs]
    env.update(zip(eqn.outvars, outs))
  return [read(a) for a in jaxpr.outvars]


W = np.array([0.5, -2.0, 3.0], f32)  # closed over: a const of the sub-jaxprs


def _custom_jvp_scaled():
  @jax.custom_jvp
  def f(x):
    return jnp.sin(x) * W
  f.defjvp(lambda p, t: (f(*p), jnp.cos(p[0]) * W * t[0]))
  return f


CALLS = {
    "jit": jax.jit(lambda x: jnp.sin(x) * W),
    "jit of jit": jax.jit(lambda x: jax.jit(lambda y: y * W)(x) + 1),
    "checkpoint": jax.checkpoint(lambda x: jnp.sin(x) * W),
    "custom_jvp": _custom_jvp_scaled(),
    "custom_vjp": _custom_vjp_sin(),
    "custom_vmap": jax.custom_batching.sequential_vmap(lambda x: jnp.tanh(x) * W),
    "relu": jax.nn.relu,
}


@pytest.mark.parametrize("fn", CALLS.values(), ids=CALLS.keys())
@settings(max_examples=10, deadline=None)
@given(st.lists(st.floats(-3, 3, width=32), min_size=3, max_size=3))
def test_evaluating_each_calls_sub_jaxpr_gives_its_result(fn, values):
  x = np.asarray(values, f32)
  # under an outer trace, so that values the call closes over are operands
  closed = jax.make_jaxpr(lambda x, y: fn(x * y))(x, f32(1))
  calls = [e for e in all_eqns(closed.jaxpr) if e.primitive.call_jaxpr_param is not None]
  assert calls
  np.testing.assert_array_equal(eval_inlining_calls(closed.jaxpr, closed.consts, x, f32(1)),
                                eval_jaxpr(closed.jaxpr, closed.consts, x, f32(1)))


def test_a_call_passes_closed_over_tracers_as_its_first_operands():
  def f(x, y):
    g = jax.checkpoint(lambda z: z * y)  # y: a tracer of the outer trace
    return g(x)

  closed = jax.make_jaxpr(f)(np.ones(3, f32), f32(2))
  call = closed.eqns[0]
  callee = call.params["jaxpr"]
  assert len(call.invars) == len(callee.jaxpr.invars) == 2
  assert call.invars[0] is closed.jaxpr.invars[1]  # y first, then x
  x, y = np.arange(3, dtype=f32), f32(2)
  np.testing.assert_array_equal(eval_inlining_calls(closed.jaxpr, [], x, y)[0], x * y)
