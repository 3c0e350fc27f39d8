"""`check_jaxpr`, the jaxpr type checker: every jaxpr that the conformance
cases, their derivatives and the documented examples produce is well typed,
and each kind of malformed jaxpr gets a `JaxprTypeError` naming the equation
and what is wrong."""

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from conformance import seeds
from conformance.autodiff import all_ad_cases
from conformance.cases import all_cases, numerical_warnings_ignored
from refimpl import backends, lax
from refimpl.api import jit_p
from refimpl.config import config
from refimpl.core import ShapedArray
from refimpl.errors import JaxprTypeError
from refimpl.jaxpr import (ClosedJaxpr, DropVar, Jaxpr, JaxprEqn, Literal, Var, check_jaxpr,
                           jaxprs_in_params)

ONE_EXAMPLE = settings(max_examples=1, database=None, deadline=None,
                       suppress_health_check=list(HealthCheck))
f32 = np.float32


# --- every jaxpr the conformance suite produces is well typed -----------------

@pytest.mark.parametrize("case", all_cases(), ids=lambda c: c.name)
@ONE_EXAMPLE
@given(data=st.data())
def test_conformance_case_traces_to_a_well_typed_jaxpr(case, data):
  with numerical_warnings_ignored():
    args, kwargs = data.draw(case.inputs())
    fn = lambda *a: case.fn(*a, **kwargs)
    check_jaxpr(jax.make_jaxpr(fn)(*args))
    # and batched: array arguments mapped along a new leading axis of size 2
    in_axes = [0 if isinstance(a, np.ndarray) else None for a in args]
    if 0 in in_axes:
      stacked = [np.stack([a, a]) if axis == 0 else a for a, axis in zip(args, in_axes)]
      check_jaxpr(jax.make_jaxpr(jax.vmap(fn, in_axes=in_axes))(*stacked))


@pytest.mark.parametrize("case", all_ad_cases(), ids=lambda c: c.name)
@ONE_EXAMPLE
@given(data=st.data())
def test_derivative_programs_are_well_typed(case, data):
  args, kwargs = data.draw(case.inputs())
  fn = lambda *a: case.fn(*a, **kwargs)
  with jax.enable_x64(), numerical_warnings_ignored():
    args = [np.asarray(a) for a in args]
    if "fwd" in case.modes:
      check_jaxpr(jax.make_jaxpr(lambda *xs: jax.jvp(fn, xs, xs))(*args))
    if "rev" in case.modes:
      check_jaxpr(jax.make_jaxpr(lambda *xs: jax.vjp(fn, *xs)[1](fn(*xs)))(*args))


@pytest.fixture
def checked_programs():
  """Turns `jax_enable_checks` on and collects what jit hands its backend."""
  handed = []

  def compile_recording(closed):
    handed.append(closed)
    return backends.compile_reference(closed)

  backends.register_backend("recording-checked", compile_recording)
  with config.option("jax_enable_checks", True), config.option("backend", "recording-checked"):
    yield handed


def test_documented_examples_run_with_checks_on(checked_programs):
  for check in seeds.CHECKS:
    check.run()
  assert len(checked_programs) > 10  # the examples jit programs, and each was checked


def test_checks_are_off_by_default_and_on_with_the_environment_variable():
  assert config.jax_enable_checks is False
  code = "import refimpl; print(refimpl.config.jax_enable_checks)"
  env = dict(os.environ, JAX_ENABLE_CHECKS="1")
  out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       check=True).stdout
  assert out.split() == ["True"]


# --- malformed jaxprs -----------------------------------------------------------

def aval(*shape, dtype=np.float32):
  return ShapedArray(shape, dtype)


def _program():
  """`{ lambda ; a:f32[3] b:f32[3]. let c = sin a; d = mul c b in (d,) }`."""
  return jax.make_jaxpr(lambda x, y: jnp.sin(x) * y)(np.ones(3, f32), np.ones(3, f32)).jaxpr


def _rebuilt(jaxpr, eqns=None, outvars=None, invars=None):
  return Jaxpr(jaxpr.constvars, jaxpr.invars if invars is None else invars,
               jaxpr.outvars if outvars is None else outvars,
               jaxpr.eqns if eqns is None else eqns)


def test_a_well_formed_jaxpr_passes():
  check_jaxpr(_program())


def test_a_variable_read_before_it_is_defined():
  j = _program()
  sin, mul = j.eqns
  bad = _rebuilt(j, eqns=[mul, sin])
  # names as the printout of the malformed jaxpr has them
  with pytest.raises(JaxprTypeError, match=r"Variable 'd' not defined\n\nin equation:\n\n"
                     r"  c:f32\[3\] = mul d b\n\nwhile checking jaxpr:\n\n\{ lambda ; "
                     r"a:f32\[3\] b:f32\[3\]. let c:f32\[3\] = mul d b; d:f32\[3\] = sin a"):
    check_jaxpr(bad)


def test_a_variable_defined_twice():
  j = _program()
  sin, mul = j.eqns
  twice = JaxprEqn(mul.invars, sin.outvars, mul.primitive, mul.params)
  with pytest.raises(JaxprTypeError, match="Variable 'c' already bound"):
    check_jaxpr(_rebuilt(j, eqns=[sin, twice], outvars=sin.outvars))
  with pytest.raises(JaxprTypeError, match="already bound"):
    check_jaxpr(_rebuilt(j, invars=[j.invars[0], j.invars[0]]))


def test_an_outvar_not_defined():
  j = _program()
  stray = Var(aval(3))
  with pytest.raises(JaxprTypeError, match="not defined, an output of the jaxpr"):
    check_jaxpr(_rebuilt(j, outvars=[stray]))


def test_a_dropped_output_defines_nothing():
  j = _program()
  sin, mul = j.eqns
  dropped = JaxprEqn(sin.invars, [DropVar(sin.outvars[0].aval)], sin.primitive, sin.params)
  check_jaxpr(_rebuilt(j, eqns=[dropped], outvars=[j.invars[0]]))
  with pytest.raises(JaxprTypeError, match="not defined"):
    check_jaxpr(_rebuilt(j, eqns=[dropped, mul]))


def test_a_literal_whose_value_does_not_match_its_type():
  j = jax.make_jaxpr(lambda x: x + 2.0)(np.ones(3, f32)).jaxpr
  lit = j.eqns[0].invars[1]
  assert isinstance(lit, Literal)
  lit.val = np.asarray(2, np.int32)
  with pytest.raises(JaxprTypeError, match=r"Literal value .* does not match its type "
                     r"annotation f32\[\]\n\nin equation:\n\n  b:f32\[3\] = add a 2"):
    check_jaxpr(j)


def test_an_outvar_type_that_disagrees_with_the_shape_rule():
  j = _program()
  sin, _ = j.eqns
  wrong = JaxprEqn(sin.invars, [Var(aval(3, dtype=np.int32))], sin.primitive, sin.params)
  with pytest.raises(JaxprTypeError, match=r"Value for variable 'c' inconsistently typed "
                     r"as f32\[3\] for let-binder of type i32\[3\]"):
    check_jaxpr(_rebuilt(j, eqns=[wrong], outvars=wrong.outvars))
  short = JaxprEqn(sin.invars, [Var(aval(2))], sin.primitive, sin.params)
  with pytest.raises(JaxprTypeError, match="inconsistently typed"):
    check_jaxpr(_rebuilt(j, eqns=[short], outvars=short.outvars))


def test_weak_types_are_ignored():
  j = _program()
  sin, _ = j.eqns
  weak = JaxprEqn(sin.invars, [Var(ShapedArray((3,), np.float32, weak_type=True))],
                  sin.primitive, sin.params)
  check_jaxpr(_rebuilt(j, eqns=[weak], outvars=weak.outvars))


def test_operands_the_shape_rule_rejects():
  j = _program()
  sin, mul = j.eqns
  x = Var(aval(4))
  bad = JaxprEqn([sin.outvars[0], x], mul.outvars, mul.primitive, mul.params)
  with pytest.raises(JaxprTypeError, match=r"The shape rule of mul rejects operands of "
                     r"types f32\[3\], f32\[4\]"):
    check_jaxpr(Jaxpr([], [j.invars[0], x], mul.outvars, [sin, bad]))


def test_a_wrong_number_of_results():
  j = _program()
  sin, _ = j.eqns
  two = JaxprEqn(sin.invars, [Var(aval(3)), Var(aval(3))], sin.primitive, sin.params)
  with pytest.raises(JaxprTypeError, match="sin has 1 results bound to 2 variables"):
    check_jaxpr(_rebuilt(j, eqns=[two], outvars=two.outvars[:1]))


def test_a_closed_jaxpr_whose_consts_do_not_match():
  closed = jax.make_jaxpr(lambda x: x * np.arange(3, dtype=f32))(np.ones(3, f32))
  check_jaxpr(closed)
  assert len(closed.consts) == 1
  missing = ClosedJaxpr(closed.jaxpr, closed.consts)
  missing.consts = []
  with pytest.raises(JaxprTypeError, match="ClosedJaxpr has 0 consts for its 1 constvars"):
    check_jaxpr(missing)
  wrong = ClosedJaxpr(closed.jaxpr, [np.zeros(4, f32)])
  with pytest.raises(JaxprTypeError, match=r"Const of type f32\[4\] bound to constvar 'a' "
                     r"of type f32\[3\]"):
    check_jaxpr(wrong)


def _nested(fn, *args):
  """The sub-jaxpr of the first equation of `make_jaxpr(fn)(*args)`."""
  closed = jax.make_jaxpr(fn)(*args)
  return closed, next(jaxprs_in_params(closed.eqns[0].params))


def _custom_jvp(fn):
  wrapped = jax.custom_jvp(fn)
  wrapped.defjvp(lambda primals, tangents: (wrapped(*primals), tangents[0]))
  return wrapped


@pytest.mark.parametrize("wrap", [jax.jit, jax.checkpoint, _custom_jvp],
                         ids=["jit", "checkpoint", "custom_jvp"])
def test_a_malformed_sub_jaxpr_is_found_with_its_own_binders(wrap):
  fn = wrap(lambda x: jnp.sin(x) * x)
  closed, sub = _nested(lambda x: fn(x) + 1.0, np.ones(3, f32))
  check_jaxpr(closed)
  sin, mul = sub.eqns
  sub.eqns[:] = [mul, sin]  # the sub-jaxpr reads its `sin` result before defining it
  with pytest.raises(JaxprTypeError, match=r"not defined\n\nin equation:\n\n  \S+ = mul"
                     r"(.|\n)*in equation:\n\n  \S+ = " + closed.eqns[0].primitive.name):
    check_jaxpr(closed)


def test_a_sub_jaxpr_sees_no_variable_of_the_outer_jaxpr():
  closed, sub = _nested(jax.jit(lambda x: jnp.sin(x)), np.ones(3, f32))
  outer_in = closed.jaxpr.invars[0]
  sub.eqns[0].invars[0] = outer_in  # defined outside, not in the sub-jaxpr
  with pytest.raises(JaxprTypeError, match="not defined"):
    check_jaxpr(closed)


def test_a_call_whose_operands_do_not_match_its_jaxpr():
  closed = jax.make_jaxpr(jax.jit(lambda x: x * 2))(np.ones(3, f32))
  eqn = closed.eqns[0]
  x = Var(aval(3, dtype=np.int32))
  bad = JaxprEqn([x], eqn.outvars, eqn.primitive, eqn.params)
  with pytest.raises(JaxprTypeError, match=r"Call primitive jit passes operand a of type "
                     r"i32\[3\] to input 'c' of type f32\[3\]"):
    check_jaxpr(Jaxpr([], [x], closed.jaxpr.outvars, [bad]))
  extra = JaxprEqn([x, x], eqn.outvars, eqn.primitive, eqn.params)
  with pytest.raises(JaxprTypeError, match="with 2 operands cannot call a jaxpr with 1 inputs"):
    check_jaxpr(Jaxpr([], [x], closed.jaxpr.outvars, [extra]))


def test_control_flow_sub_jaxprs_are_checked():
  closed = jax.make_jaxpr(lambda x: lax.cond(x.sum() > 0, jnp.sin, jnp.cos, x))(
      np.ones(3, f32))
  check_jaxpr(closed)
  cond = next(e for e in closed.eqns if e.primitive.name == "cond")
  branch = cond.params["branches"][1].jaxpr
  branch.outvars[0] = Var(aval(3))
  with pytest.raises(JaxprTypeError, match="not defined, an output of the jaxpr"
                     r"(.|\n)*in equation:\n\n  \S+ = cond"):
    check_jaxpr(closed)


def test_jit_checks_the_program_it_compiles_when_checks_are_on(checked_programs):
  jaxpr = _program()
  sin, mul = jaxpr.eqns
  bad = ClosedJaxpr(_rebuilt(jaxpr, eqns=[mul, sin]), [])
  x = np.ones(3, f32)
  with pytest.raises(JaxprTypeError, match="not defined"):
    jit_p.bind(x, x, jaxpr=bad, name="bad", backend=None)
  assert checked_programs == []  # it was not handed to the backend
  jit_p.bind(x, x, jaxpr=ClosedJaxpr(jaxpr, []), name="good", backend=None)
  assert len(checked_programs) == 1


def test_enable_checks_turns_the_checks_on_within_a_block():
  jaxpr = _program()
  sin, mul = jaxpr.eqns
  bad = ClosedJaxpr(_rebuilt(jaxpr, eqns=[mul, sin]), [])
  x = np.ones(3, f32)
  with jax.enable_checks():
    assert config.jax_enable_checks is True
    with pytest.raises(JaxprTypeError, match="not defined"):
      jit_p.bind(x, x, jaxpr=bad, name="bad", backend=None)
    with jax.enable_checks(False):
      assert config.jax_enable_checks is False
  assert config.jax_enable_checks is False


# --- hypothesis: mutations of well-formed jaxprs are found --------------------

PROGRAMS = [
    lambda x, y: jnp.sin(x) * y + jnp.cos(y),
    lambda x, y: jnp.tanh(x @ y.T).sum(axis=0) - x[:, 0],
    lambda x, y: jnp.where(x > y, x, y) ** 2,
]


@st.composite
def mutated(draw):
  """A well-formed jaxpr and one mutation of it that makes it ill typed."""
  fn = draw(st.sampled_from(PROGRAMS))
  j = jax.make_jaxpr(fn)(np.ones((2, 3), f32), np.ones((2, 3), f32)).jaxpr
  i = draw(st.integers(0, len(j.eqns) - 1))
  eqn = j.eqns[i]
  kind = draw(st.sampled_from(["later operand", "outvar dtype", "outvar shape", "reorder",
                               "unbound outvar"]))
  later = [v for e in j.eqns[i:] for v in e.outvars]
  eqns = list(j.eqns)
  if kind == "later operand":
    k = draw(st.integers(0, len(eqn.invars) - 1))
    invars = list(eqn.invars)
    invars[k] = draw(st.sampled_from(later))  # its own output or a later one
    eqns[i] = JaxprEqn(invars, eqn.outvars, eqn.primitive, eqn.params)
    return Jaxpr(j.constvars, j.invars, j.outvars, eqns)
  if kind in ("outvar dtype", "outvar shape"):
    old = eqn.outvars[0]
    new_aval = (old.aval.update(dtype=np.int8 if old.aval.dtype != np.int8 else np.int16)
                if kind == "outvar dtype" else old.aval.update(shape=(*old.aval.shape, 1)))
    new = Var(new_aval)
    eqns[i] = JaxprEqn(eqn.invars, [new, *eqn.outvars[1:]], eqn.primitive, eqn.params)
    swap = lambda atoms: [new if a is old else a for a in atoms]
    eqns[i + 1:] = [JaxprEqn(swap(e.invars), e.outvars, e.primitive, e.params)
                    for e in eqns[i + 1:]]
    return Jaxpr(j.constvars, j.invars, swap(j.outvars), eqns)
  if kind == "reorder":
    readers = [k for k in range(i + 1, len(eqns))
               if any(a in eqn.outvars for a in eqns[k].invars)]
    if not readers:
      return Jaxpr(j.constvars, j.invars, [*j.outvars, Var(eqn.outvars[0].aval)], eqns)
    eqns.insert(readers[0], eqns.pop(i))  # defined after its first reader
    return Jaxpr(j.constvars, j.invars, j.outvars, eqns)
  return Jaxpr(j.constvars, j.invars, [Var(j.outvars[0].aval)], eqns)


@settings(max_examples=60, deadline=None)
@given(mutated())
def test_every_mutation_is_an_ill_typed_jaxpr(jaxpr):
  with pytest.raises(JaxprTypeError, match="in equation|an output of the jaxpr"):
    check_jaxpr(jaxpr)
