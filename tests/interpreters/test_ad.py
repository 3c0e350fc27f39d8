"""Tests of refimpl/interpreters/ad.py: the JVP trace and its symbolic
zeros, linearize, backward_pass, jvp_jaxpr, transpose_jaxpr, and the rules
of primitives holding jaxprs (jit's in particular)."""

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import core, dtypes
from refimpl.interpreters import ad
from refimpl.interpreters import partial_eval as pe
from refimpl.interpreters.eval import eval_closed_jaxpr

F32 = core.ShapedArray((), np.float32)
F32_3 = core.ShapedArray((3,), np.float32)


def f32(x):
  return np.asarray(x, np.float32)


def prim_names(closed):
  return [e.primitive.name for e in closed.jaxpr.eqns]


# --- tangent values ---------------------------------------------------------------

def test_tangent_aval_is_float0_for_integers_and_booleans():
  assert ad.tangent_aval(F32) is F32
  c = core.ShapedArray((2,), np.complex64)
  assert ad.tangent_aval(c) is c
  for dt in (np.int32, np.uint8, np.bool_):
    t = ad.tangent_aval(core.ShapedArray((2, 3), dt))
    assert t.shape == (2, 3) and t.dtype == dtypes.float0


def test_zeros_and_add_tangents():
  z = ad.Zero(F32_3)
  assert isinstance(z, ad.Zero) and z.aval is F32_3
  zeros = ad.instantiate_zeros(z)
  assert core.get_aval(zeros) == F32_3 and not np.any(np.asarray(zeros))
  x = f32([1., 2., 3.])
  assert ad.instantiate_zeros(x) is x
  assert ad.add_tangents(z, x) is x and ad.add_tangents(x, z) is x
  np.testing.assert_array_equal(ad.add_tangents(x, x), [2., 4., 6.])
  f0 = ad.zeros_like_aval(core.ShapedArray((2,), dtypes.float0))
  assert f0.dtype == dtypes.float0 and f0.shape == (2,)


def test_add_tangents_records_add_any():
  closed = jax.make_jaxpr(lambda a, b: ad.add_tangents(a, b))(f32(1.), f32(2.))
  assert prim_names(closed) == ["add_any"]


# --- forward mode -------------------------------------------------------------------

def test_jvp_flat_ignored_input_has_symbolic_zero_tangent():
  x, y = f32(0.5), f32(2.)
  outs, tangents = ad.jvp_flat(lambda x, y: [jnp.sin(x), y * 3.], [x, y],
                               [ad.Zero(F32), f32(1.)])
  np.testing.assert_allclose(outs, [np.sin(0.5), 6.], rtol=1e-6)
  assert isinstance(tangents[0], ad.Zero) and tangents[0].aval == F32
  np.testing.assert_allclose(tangents[1], 3.)


def test_jvp_of_function_ignoring_an_input_records_no_tangent_equations():
  out_tangents = []

  def f(x, y, ty):
    outs, tangents = ad.jvp_flat(lambda x, y: [jnp.sin(x) * 2.], [x, y], [ad.Zero(F32), ty])
    out_tangents.extend(tangents)
    return outs

  closed = pe.trace_to_jaxpr(f, [F32] * 3)
  # Only the primal computation; the output tangent is a symbolic Zero and
  # the tangent input ty is never read.
  assert isinstance(out_tangents[0], ad.Zero)
  assert prim_names(closed) == ["sin", "mul"]
  assert closed.jaxpr.invars[2] not in {v for e in closed.jaxpr.eqns for v in e.invars}


def test_jvp_trace_constant_operands_have_zero_tangents():
  c = f32([1., 2., 3.])
  _, tangents = ad.jvp_flat(lambda x: [x * c, c * 2.], [f32([1., 1., 1.])],
                            [f32([1., 0., 1.])])
  np.testing.assert_array_equal(tangents[0], [1., 0., 3.])
  assert isinstance(tangents[1], ad.Zero)


def test_missing_jvp_rule_raises():
  p = core.Primitive("no_jvp_rule_for_test")
  p.def_impl(lambda x: x)
  p.def_abstract_eval(lambda a: a)
  with pytest.raises(NotImplementedError,
                     match="Differentiation rule for 'no_jvp_rule_for_test' not implemented"):
    jax.jvp(lambda x: p.bind(x), (f32(1.),), (f32(1.),))
  # With only symbolic zero tangents (a constant operand) the primitive just runs.
  c = f32(3.)
  np.testing.assert_allclose(jax.jvp(lambda x: p.bind(c) * x, (f32(2.),), (f32(1.),))[1], 3.)
  del core.PRIMITIVES["no_jvp_rule_for_test"]   # keep the registry to refimpl's own


def test_jvp_tracer_knows_its_concrete_value():
  seen = []

  def f(x):
    seen.append(bool(x > 0))
    return x

  jax.jvp(f, (f32(1.),), (f32(1.),))
  jax.grad(f)(f32(-1.))
  assert seen == [True, False]


# --- linearize -------------------------------------------------------------------------

def test_linearize_flat_records_only_tangent_equations():
  x = f32([0.1, 0.2, 0.3])
  outs, linear = ad.linearize_flat(lambda x, y: [jnp.sin(x) * y], [x, f32(2.)])
  np.testing.assert_allclose(outs[0], np.sin(x) * 2., rtol=1e-6)
  names = prim_names(linear)
  assert "sin" not in names          # the primal ran now
  assert "cos" not in names          # ...and so did the JVP's coefficient
  assert set(names) <= {"mul", "add_any", "broadcast_in_dim"}, str(linear)
  # Its constants are the residuals: cos(x), sin(x), y.
  t = ad.eval_linear(linear, [f32([1., 0., 0.]), f32(1.)])
  np.testing.assert_allclose(t[0], [np.cos(0.1) * 2. + np.sin(0.1), np.sin(0.2),
                                    np.sin(0.3)], rtol=1e-6)


def test_linearize_flat_of_ignored_input():
  outs, linear = ad.linearize_flat(lambda x, y: [jnp.sin(x)], [f32(1.), f32(2.)])
  y_var = linear.jaxpr.invars[1]
  assert all(y_var not in e.invars for e in linear.jaxpr.eqns)
  assert len(linear.jaxpr.eqns) == 1   # mul t cos(x)


def test_linearize_flat_integer_input_has_float0_tangent_input():
  _, linear = ad.linearize_flat(lambda x, n: [x * 2.], [f32(1.), np.int32(3)])
  assert linear.jaxpr.invars[1].aval.dtype == dtypes.float0


# --- transpose -------------------------------------------------------------------------

def test_backward_pass_accumulates_with_add_any():
  # t is read twice: its cotangents are summed with add_any.
  lin = pe.trace_to_jaxpr(lambda t: [t * 3. + jnp.sin(f32(1.)) * t], [F32])

  def transpose(ct):
    return ad.backward_pass(lin.jaxpr, lin.consts, [ct])

  closed = jax.make_jaxpr(transpose)(f32(1.))
  assert "add_any" in prim_names(closed), str(closed)
  (ct,) = transpose(f32(2.))
  np.testing.assert_allclose(ct, 2. * (3. + np.sin(1.)), rtol=1e-6)


def test_backward_pass_evaluates_nonlinear_equations_forward():
  # The equations not touching the linear input (sin of a constant) run
  # forwards, so their results are available to the transpose rules.
  c = f32([0.5, 1.])
  lin = pe.trace_to_jaxpr(lambda t: [jnp.sin(c) * t], [core.ShapedArray((2,), np.float32)])
  (ct,) = ad.backward_pass(lin.jaxpr, lin.consts, [f32([1., 1.])])
  np.testing.assert_allclose(ct, np.sin(c), rtol=1e-6)


def test_backward_pass_zero_and_unused_inputs():
  lin = pe.trace_to_jaxpr(lambda a, b: [a * 2.], [F32, F32])
  ct_a, ct_b = ad.backward_pass(lin.jaxpr, lin.consts, [f32(1.)])
  np.testing.assert_allclose(ct_a, 2.)
  assert isinstance(ct_b, ad.Zero)
  cts = ad.backward_pass(lin.jaxpr, lin.consts, [ad.Zero(F32)])
  assert all(isinstance(c, ad.Zero) for c in cts)


def test_missing_transpose_rule_raises():
  lin = pe.trace_to_jaxpr(lambda t: [jnp.sin(t)], [F32])
  with pytest.raises(NotImplementedError, match="Transpose rule \\(for reverse-mode "
                     "differentiation\\) for 'sin' not implemented"):
    ad.backward_pass(lin.jaxpr, lin.consts, [f32(1.)])


def test_transpose_jaxpr():
  closed = pe.trace_to_jaxpr(lambda t: [t * 3.], [F32])
  transposed = ad.transpose_jaxpr(closed, [True])
  assert transposed.in_avals == [F32] and transposed.out_avals == [F32]
  np.testing.assert_allclose(eval_closed_jaxpr(transposed, f32(2.)), [6.])


def test_transpose_jaxpr_with_nonlinear_inputs():
  # Linear in t only: the transpose takes a first, then the cotangent.
  closed = pe.trace_to_jaxpr(lambda a, t: [a * t, t], [F32, F32_3])
  transposed = ad.transpose_jaxpr(closed, [False, True])
  assert transposed.in_avals == [F32, F32_3, F32_3]
  assert transposed.out_avals == [F32_3]
  (ct_t,) = eval_closed_jaxpr(transposed, f32(2.), f32([1., 2., 3.]), f32([1., 1., 1.]))
  np.testing.assert_allclose(ct_t, [3., 5., 7.])


def test_transpose_jaxpr_instantiates_zero_cotangents():
  closed = pe.trace_to_jaxpr(lambda a, b: [a * 2.], [F32, F32])
  (ct_a, ct_b) = eval_closed_jaxpr(ad.transpose_jaxpr(closed, [True, True]), f32(1.))
  assert float(ct_a) == 2. and float(ct_b) == 0. and np.asarray(ct_b).dtype == np.float32


# --- jvp_jaxpr --------------------------------------------------------------------------

def test_jvp_jaxpr():
  closed = pe.trace_to_jaxpr(lambda x, y: [jnp.sin(x) * y, y * 2.], [F32, F32])
  jvp_closed, out_nz = ad.jvp_jaxpr(closed, [True, False], instantiate=False)
  # Primals, then the tangent of x only; the second output's tangent is zero.
  assert jvp_closed.in_avals == [F32, F32, F32]
  assert out_nz == [True, False]
  assert len(jvp_closed.out_avals) == 3
  p1, p2, t1 = eval_closed_jaxpr(jvp_closed, f32(0.5), f32(3.), f32(1.))
  np.testing.assert_allclose((p1, p2, t1), (np.sin(.5) * 3, 6., np.cos(.5) * 3), rtol=1e-6)
  jvp_inst, out_nz = ad.jvp_jaxpr(closed, [True, False], instantiate=True)
  assert out_nz == [True, True] and len(jvp_inst.out_avals) == 4
  *_, t2 = eval_closed_jaxpr(jvp_inst, f32(0.5), f32(3.), f32(1.))
  assert float(t2) == 0.


def test_jvp_jaxpr_is_cached():
  closed = pe.trace_to_jaxpr(lambda x: [jnp.sin(x)], [F32])
  first = ad.jvp_jaxpr(closed, [True], False)
  assert ad.jvp_jaxpr(closed, [True], False) is first
  # A structurally identical jaxpr hits the same entry.
  again = pe.trace_to_jaxpr(lambda x: [jnp.sin(x)], [F32])
  assert ad.jvp_jaxpr(again, [True], False) is first
  assert ad.jvp_jaxpr(closed, [True], True) is not first
  assert ad.jvp_jaxpr(closed, [False], False) is not first


# --- jit's rules ---------------------------------------------------------------------------

def test_jvp_of_jit_is_one_jit_call():
  f = jax.jit(lambda x: jnp.sin(x) * x)
  closed = jax.make_jaxpr(lambda x, t: jax.jvp(f, (x,), (t,)))(f32(1.), f32(1.))
  assert prim_names(closed) == ["jit"]
  inner = closed.jaxpr.eqns[0].params["jaxpr"]
  assert "cos" in prim_names(inner) and len(inner.out_avals) == 2


def test_grad_of_jit_shows_known_and_unknown_jit_calls():
  f = jax.jit(lambda x: jnp.sin(x) * x)
  closed = jax.make_jaxpr(jax.grad(f))(f32(1.))
  # As JAX's two pjit calls: the known half (primal and residuals), then the
  # transposed unknown half (the backward pass).
  assert prim_names(closed) == ["jit", "jit"], str(closed)
  known, backward = closed.jaxpr.eqns
  assert "sin" in prim_names(known.params["jaxpr"])
  assert "sin" not in prim_names(backward.params["jaxpr"])
  assert "add_any" in prim_names(backward.params["jaxpr"])
  np.testing.assert_allclose(jax.grad(f)(f32(1.)), np.cos(1.) + np.sin(1.), rtol=1e-6)


def test_known_jit_half_does_not_return_its_inputs_as_residuals():
  # JAX forwards a residual that is a known input of the call directly to
  # the unknown half, instead of returning it from the known call.
  f = jax.jit(lambda x: jnp.sin(x) * x)
  closed = jax.make_jaxpr(jax.grad(f))(f32(1.))
  known, backward = closed.jaxpr.eqns
  inner = known.params["jaxpr"].jaxpr
  assert not set(inner.invars) & set(inner.outvars), str(closed)
  assert closed.jaxpr.invars[0] in backward.invars, str(closed)


def test_linearize_of_jit_splits_the_call():
  f = jax.jit(lambda x: jnp.sin(x) * 2.)
  outs, linear = ad.linearize_flat(lambda x: [f(x)], [f32(0.5)])
  np.testing.assert_allclose(outs[0], 2 * np.sin(.5), rtol=1e-6)
  # The known half ran; the linear program is one call of the unknown half.
  assert prim_names(linear) == ["jit"]
  # It multiplies by the residual cos(0.5) and by 2.
  assert prim_names(linear.jaxpr.eqns[0].params["jaxpr"]) == ["mul", "mul"], str(linear)
  np.testing.assert_allclose(ad.eval_linear(linear, [f32(1.)])[0], 2 * np.cos(.5), rtol=1e-6)
