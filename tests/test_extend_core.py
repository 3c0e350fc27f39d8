"""`refimpl.extend.core` (`jax.extend.core`): refimpl's core classes under
JAX's names, a primitive defined through them, and the trace queries."""

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import core, dtypes, lax
from refimpl.extend import core as jex
from refimpl.jaxpr import ClosedJaxpr, Jaxpr

f32 = np.float32


def test_the_classes_are_refimpls():
  assert jex.Primitive is core.Primitive and jex.ClosedJaxpr is ClosedJaxpr
  assert jex.Jaxpr is Jaxpr and jex.valid_jaxtype(np.ones(2)) and not jex.valid_jaxtype("a")
  assert np.ndarray in jex.array_types and np.float32 in jex.array_types
  assert jex.primitives.add_p is lax.add_p and jex.primitives.pjit_p is jex.primitives.jit_p
  assert jex.primitives.add_jaxvals_p.name == "add_any"


def test_a_primitive_defined_through_extend_core():
  """JAX's "How primitives work" example: multiply-add as a new primitive."""
  multiply_add_p = jex.Primitive("multiply_add_for_test")
  multiply_add_p.def_impl(lambda x, y, z: np.add(np.multiply(x, y), z))
  multiply_add_p.def_abstract_eval(lambda x, y, z: core.ShapedArray(x.shape, x.dtype))
  try:
    x = np.arange(3, dtype=f32)
    np.testing.assert_array_equal(multiply_add_p.bind(x, x, x), x * x + x)
    np.testing.assert_array_equal(jax.jit(lambda a: multiply_add_p.bind(a, a, a))(x), x * x + x)
    closed = jax.make_jaxpr(lambda a: multiply_add_p.bind(a, 2.0, a))(x)
    assert [e.primitive for e in closed.jaxpr.eqns] == [multiply_add_p]
  finally:
    del core.PRIMITIVES["multiply_add_for_test"]   # keep the registry to refimpl's own


def test_jaxpr_functions():
  closed = jax.make_jaxpr(lambda x: jnp.sin(x) * 2)(f32(1))
  (out,) = jex.jaxpr_as_fun(closed)(f32(0.5))
  assert np.isclose(out, np.sin(0.5) * 2)
  jex.check_jaxpr(closed.jaxpr)
  eqn = closed.jaxpr.eqns[0]
  new = jex.new_jaxpr_eqn(eqn.invars, [jex.gensym()(eqn.outvars[0].aval)], eqn.primitive,
                          eqn.params, set())
  assert isinstance(new, jex.JaxprEqn) and isinstance(new.outvars[0], jex.Var)
  nested = jax.make_jaxpr(lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x))(f32(1))
  cond = nested.jaxpr.eqns[-1]
  assert list(jex.jaxprs_in_params(cond.params)) == list(jex.subjaxprs(nested.jaxpr))


def test_avals_and_dtypes():
  aval = core.ShapedArray((2, 3), f32)
  assert jex.mapped_aval(3, 1, aval).shape == (2,)
  assert jex.unmapped_aval(4, 0, aval).shape == (4, 2, 3)
  assert jex.unmapped_aval(4, None, aval) is aval
  with pytest.raises(ValueError):
    jex.mapped_aval(5, 0, aval)
  assert jex.primal_dtype_to_tangent_dtype(np.dtype(f32)) == np.float32
  assert jex.primal_dtype_to_tangent_dtype(np.dtype(np.int32)) == dtypes.float0


def test_concrete_or_error():
  assert jex.concrete_or_error(None, 3) == 3
  assert jex.concrete_or_error(int, np.float32(2.5)) == 2
  with pytest.raises(jax.errors.ConcretizationTypeError, match="needed here"):
    jax.jit(lambda x: jex.concrete_or_error(None, x, "needed here"))(1.0)


def test_trace_queries():
  seen = {}

  def probe(x):
    seen["jit"] = jex.unsafe_am_i_under_a_jit_DO_NOT_USE()
    seen["vmap"] = jex.unsafe_am_i_under_a_vmap_DO_NOT_USE()
    seen["axes"] = jex.unsafe_get_axis_names_DO_NOT_USE()
    seen["nonempty"] = jex.nonempty_axis_env_DO_NOT_USE()
    return x

  probe(1.0)
  assert seen == {"jit": False, "vmap": False, "axes": [], "nonempty": False}
  jax.jit(jax.vmap(probe, axis_name="i"))(np.ones(2, f32))
  assert seen == {"jit": True, "vmap": True, "axes": ["i"], "nonempty": True}
  assert jex.get_opaque_trace_state() == jex.get_opaque_trace_state()
  states = []
  jax.jit(lambda x: states.append(jex.get_opaque_trace_state()) or x)(1.0)
  assert states[0] != jex.get_opaque_trace_state()
  assert jex.find_top_trace(()) is core.current_trace()


def test_taking_and_setting_the_current_trace():
  outer = core.current_trace()
  with jex.take_current_trace() as trace:
    assert trace is outer
    with pytest.raises(RuntimeError, match="no trace is current"):
      lax.add(f32(1), f32(2))
    with jex.set_current_trace(trace):
      assert lax.add(f32(1), f32(2)) == 3
