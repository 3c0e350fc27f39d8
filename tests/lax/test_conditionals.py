"""Tests of refimpl/lax/control_flow/conditionals.py: `lax.cond`, `lax.switch`
(the `cond` primitive) through every transformation, and `jnp.piecewise`."""

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import lax
from refimpl.interpreters import partial_eval as pe
from refimpl.lax.control_flow.conditionals import cond_p

floats = st.floats(-3, 3, width=32)


def _prims(closed):
  return [e.primitive.name for e in closed.eqns]


# --- API forms -------------------------------------------------------------------------

def test_cond_seed_example():
  operand = jnp.array([0.])
  assert np.array_equal(lax.cond(True, lambda x: x + 1, lambda x: x - 1, operand), [1.])
  assert np.array_equal(lax.cond(False, lambda x: x + 1, lambda x: x - 1, operand), [-1.])


def test_cond_without_and_with_several_operands():
  assert float(lax.cond(True, lambda: 1., lambda: 2.)) == 1.
  out = lax.cond(False, lambda x, y: x * y, lambda x, y: x - y, 3., 4.)
  assert float(out) == -1.


def test_cond_numeric_predicates_are_compared_to_zero():
  assert float(lax.cond(2, lambda: 1., lambda: 2.)) == 1.
  assert float(lax.cond(0.0, lambda: 1., lambda: 2.)) == 2.
  assert float(lax.cond(np.uint8(0), lambda: 1., lambda: 2.)) == 2.


def test_cond_pytrees():
  ops = {"a": jnp.ones(2), "b": (jnp.arange(2.), 3.)}
  out = lax.cond(True, lambda d: [d["a"] + d["b"][0], d["b"][1]],
                 lambda d: [d["a"] - d["b"][0], -d["b"][1]], ops)
  assert isinstance(out, list)
  np.testing.assert_array_equal(out[0], [1., 2.])
  assert float(out[1]) == 3.


def test_cond_operand_keyword_and_deprecated_form():
  assert float(lax.cond(False, lambda x: x + 1, lambda x: x - 1, operand=2.)) == 1.
  assert float(lax.cond(True, 1., lambda x: x + 1, 2., lambda x: x - 1)) == 2.
  assert float(lax.cond(False, 1., lambda x: x + 1, 2., lambda x: x - 1)) == 1.
  with pytest.raises(TypeError, match="if 'operand' keyword is passed"):
    lax.cond(True, lambda x: x, lambda x: x, 1., operand=2.)


def test_switch_clamps_the_index():
  branches = [lambda x: x, lambda x: x * 2, lambda x: x * 3]
  results = [float(lax.switch(i, branches, 1.)) for i in (-5, 0, 1, 2, 3, 100)]
  assert results == [1., 1., 2., 3., 3., 3.]
  assert float(lax.switch(np.uint32(1), branches, 1.)) == 2.


def test_switch_with_one_branch_just_calls_it():
  closed = jax.make_jaxpr(lambda i, x: lax.switch(i, [jnp.sin], x))(0, 1.)
  assert _prims(closed) == ["sin"]


def test_concrete_predicate_still_builds_a_cond():
  closed = jax.make_jaxpr(lambda x: lax.cond(True, jnp.sin, jnp.cos, x))(1.)
  assert _prims(closed) == ["cond"]
  assert str(closed.eqns[0].invars[0]) == "1:i32[]"


def test_disable_jit_calls_only_the_chosen_branch():
  calls = []
  with jax.disable_jit():
    out = lax.cond(True, lambda: calls.append("t") or 1., lambda: calls.append("f") or 2.)
    assert lax.switch(7, [lambda: 1., lambda: 2.]) == 2.
  assert out == 1. and calls == ["t"]


def test_outputs_passed_through_are_not_cond_outputs():
  """As JAX prunes them: `x` comes back as it is."""
  fn = lambda x, y: lax.cond(True, lambda x, y: (x, y + 1), lambda x, y: (x, y - 1), x, y)
  closed = jax.make_jaxpr(fn)(3., jnp.ones(2))
  assert len(closed.eqns[0].outvars) == 1 and closed.jaxpr.outvars[0] is closed.jaxpr.invars[0]
  x, y = fn(3., jnp.ones(2))
  assert x.weak_type and float(x) == 3.
  np.testing.assert_array_equal(y, [2., 2.])


def test_weak_type_only_differences_take_false_funs_type():
  strong = lax.cond(True, lambda: 1., lambda: jnp.float32(2.))
  weak = lax.cond(True, lambda: jnp.float32(2.), lambda: 1.)
  assert not strong.weak_type and float(strong) == 1.
  assert weak.weak_type and float(weak) == 2.


# --- errors ----------------------------------------------------------------------------

@pytest.mark.parametrize("pred, message", [
    (jnp.array([True, False]), r"Pred must be a scalar, got \[ True False\] of shape \(2,\)."),
    ([True], "Pred must be a scalar, got \\[True\\] of type <class 'list'>"),
    (None, "cond predicate is None"),
    (1j, "Pred type must be either boolean or number, got complex64."),
])
def test_cond_predicate_errors(pred, message):
  with pytest.raises(TypeError, match=message):
    lax.cond(pred, lambda: 1., lambda: 2.)


def test_cond_needs_callables():
  with pytest.raises(TypeError, match="true_fun and false_fun arguments should be callable"):
    lax.cond(True, 1., 2.)


@pytest.mark.parametrize("index, branches, error, message", [
    (1.5, [lambda: 1.] * 2, TypeError, "Index type must be an integer, got 1.5 as float32"),
    (jnp.array([1]), [lambda: 1.] * 2, TypeError, r"Branch index must be scalar, got \[1\]"),
    (0, [], ValueError, "Empty branch sequence"),
    (0, [lambda: 1., 3], TypeError, "branches argument should be a sequence of callables"),
])
def test_switch_errors(index, branches, error, message):
  with pytest.raises(error, match=message):
    lax.switch(index, branches)


def test_branch_output_structure_mismatch():
  with pytest.raises(TypeError, match=r"(?s)cond branch outputs must have the same pytree "
                     r"structure.*true_fun is .*false_fun is "):
    lax.cond(True, lambda x: x, lambda x: (x, x), 1.)


def test_branch_output_type_mismatch_names_the_leaf():
  with pytest.raises(TypeError) as info:
    lax.cond(True, lambda x: {"a": x, "b": jnp.ones(3)}, lambda x: {"a": x, "b": jnp.ones(2)}, 1.)
  message = str(info.value)
  assert message.startswith("cond branches must have equal output types but they differ.")
  assert ("The output of true_fun at path ['b'] has type float32[3] but the corresponding "
          "output of false_fun has type float32[2], so the shapes do not match.") in message
  with pytest.raises(TypeError, match=r"output of branch 0 has type float32\[\] but the "
                     r"corresponding output of branch 2 has type int32\[\], so the dtypes"):
    lax.switch(1, [lambda: 1., lambda: 2., lambda: 3])


def test_iterator_operand_is_not_a_jax_type():
  with pytest.raises(TypeError, match="is not a valid JAX type"):
    lax.cond(True, lambda x: next(x) + 1, lambda x: next(x) - 1, iter(range(10)))


# --- the primitive and its printing -------------------------------------------------

def test_make_jaxpr_prints_the_branches_as_jax():
  fn = lambda p, x: lax.cond(p < 0, lambda x: x - 3., lambda x: x + 3., x)
  assert str(jax.make_jaxpr(fn)(1, 2.)) == """\
{ lambda ; a:i32[] b:f32[]. let
    c:bool[] = lt a 0:i32[]
    d:i32[] = convert_element_type[new_dtype=int32 weak_type=False] c
    e:f32[] = cond[
      branches=(
        { lambda ; f:f32[]. let g:f32[] = add f 3.0:f32[] in (g,) }
        { lambda ; h:f32[]. let i:f32[] = sub h 3.0:f32[] in (i,) }
      )
    ] d b
  in (e,) }"""


def test_make_jaxpr_of_switch_clamps_and_passes_closed_over_values():
  y = np.arange(3.0, dtype=np.float32)
  closed = jax.make_jaxpr(lambda i, x: lax.switch(i, [lambda x: x + y, lambda x: x], x))(
      1, jnp.ones(3))
  assert _prims(closed) == ["convert_element_type", "clamp", "cond"]
  cond = closed.eqns[-1]
  assert len(cond.invars) == 3 and cond.invars[1] is closed.jaxpr.constvars[0]
  assert all(len(b.in_avals) == 2 for b in cond.params["branches"])


def test_out_of_range_index_of_the_primitive_is_clamped():
  branches = tuple(jax.make_jaxpr(lambda x, k=k: x * k)(1.) for k in (1., 2.))
  for index, expected in [(-1, 1.), (0, 1.), (1, 2.), (5, 2.)]:
    out, = cond_p.bind(np.int32(index), 1., branches=branches)
    assert float(out) == expected


# --- transformations ------------------------------------------------------------------

def _f(x):
  return lax.cond(x > 0, lambda x: jnp.sin(x) * x, jnp.cos, x)


def _f_np(x):
  return np.sin(x) * x if x > 0 else np.cos(x)


def _df_np(x):
  return np.cos(x) * x + np.sin(x) if x > 0 else -np.sin(x)


@pytest.mark.parametrize("x", [1.0, -1.0])
def test_jvp_grad_and_second_derivative(x):
  y, t = jax.jvp(_f, (x,), (2.,))
  np.testing.assert_allclose([y, t], [_f_np(x), 2 * _df_np(x)], rtol=1e-6)
  np.testing.assert_allclose(jax.grad(_f)(x), _df_np(x), rtol=1e-6)
  np.testing.assert_allclose(jax.jit(jax.grad(_f))(x), _df_np(x), rtol=1e-6)
  d2 = 2 * np.cos(x) - x * np.sin(x) if x > 0 else -np.cos(x)
  np.testing.assert_allclose(jax.grad(jax.grad(_f))(x), d2, rtol=1e-5)


def test_grad_with_respect_to_a_closed_over_value():
  def f(x, y):
    return lax.cond(x > 0, lambda: x * y, lambda: y - x)
  assert [float(g) for g in jax.grad(f, argnums=(0, 1))(2., 3.)] == [3., 2.]
  assert [float(g) for g in jax.grad(f, argnums=(0, 1))(-2., 3.)] == [-1., 1.]


def test_linearize_saves_the_residuals_of_both_branches():
  """The known cond outputs the joined residuals, zeros where a branch has none;
  the recorded cond of the tangents takes them all."""
  closed = jax.make_jaxpr(jax.grad(_f))(1.)
  conds = [e for e in closed.eqns if e.primitive is cond_p]
  assert len(conds) == 2
  known, linear = conds
  assert len(known.outvars) == 4   # the output, then three residual slots
  assert [len(b.in_avals) for b in linear.params["branches"]] == [4, 4]


def test_partial_eval_with_an_unknown_index_records_the_whole_cond():
  closed = jax.make_jaxpr(lambda i, x: lax.switch(i, [jnp.sin, jnp.cos], x))(0, 1.)
  known, unknown, out_unknowns, num_res = pe.partial_eval_jaxpr(closed, [True, False])
  assert out_unknowns == [True]
  assert "cond" in _prims(unknown) and "cond" not in _prims(known)


def test_vjp_is_the_transpose_of_the_jvp():
  def f(x, y):
    return lax.switch(jnp.int32(1), [lambda a, b: a * b, lambda a, b: (a + 2 * b) * a], x, y)
  x, y = jnp.array([1., 2.]), jnp.array([3., -1.])
  _, vjp = jax.vjp(f, x, y)
  ct = jnp.array([1., 0.5])
  gx, gy = vjp(ct)
  np.testing.assert_allclose(gx, ct * (2 * x + 2 * y))
  np.testing.assert_allclose(gy, ct * 2 * x)


def test_vmap_with_batched_predicate_selects():
  xs = jnp.array([1., -1., 2.])
  np.testing.assert_allclose(jax.vmap(_f)(xs), [_f_np(x) for x in [1., -1., 2.]], rtol=1e-6)
  closed = jax.make_jaxpr(jax.vmap(_f))(xs)
  assert "cond" not in _prims(closed) and _prims(closed)[-1] == "select_n"


def test_vmap_with_unbatched_predicate_keeps_the_cond():
  fn = lambda p, x: lax.cond(p, jnp.sin, jnp.cos, x)
  xs = jnp.array([1., 2.])
  np.testing.assert_allclose(jax.vmap(fn, in_axes=(None, 0))(False, xs), np.cos([1., 2.]),
                             rtol=1e-6)
  assert "cond" in _prims(jax.make_jaxpr(jax.vmap(fn, in_axes=(None, 0)))(False, xs))


def test_vmap_of_switch_with_batched_index():
  branches = [lambda x: x, lambda x: x * 2, lambda x: x * 3]
  out = jax.vmap(lambda i, x: lax.switch(i, branches, x))(jnp.array([-3, 0, 1, 2, 7]),
                                                         jnp.ones(5))
  np.testing.assert_array_equal(out, [1., 1., 2., 3., 3.])


def test_vmap_and_grad_compose():
  f = lambda x: lax.cond(x > 0, lambda x: x ** 3, lambda x: -x, x)
  xs = jnp.array([1., 2., -1.])
  np.testing.assert_allclose(jax.vmap(jax.grad(f))(xs), [3., 12., -1.])
  np.testing.assert_allclose(jax.grad(lambda xs: jax.vmap(f)(xs).sum())(xs), [3., 12., -1.])
  np.testing.assert_allclose(jax.jit(jax.vmap(jax.grad(f)))(xs), [3., 12., -1.])


def test_nested_conds():
  def f(x):
    return lax.cond(x > 0, lambda x: lax.cond(x > 1, lambda y: y * 10, lambda y: y * 5, x),
                    lambda x: -x, x)
  xs = jnp.array([2., .5, -1.])
  np.testing.assert_allclose(jax.vmap(f)(xs), [20., 2.5, 1.])
  np.testing.assert_allclose(jax.vmap(jax.grad(f))(xs), [10., 5., -1.])


def test_collective_in_a_branch_with_batched_predicate():
  """As in JAX, every branch runs on the whole batch, so a psum sums all members."""
  f = lambda x: lax.cond(x > 0, lambda x: lax.psum(x, "i"), lambda x: x * 0., x)
  np.testing.assert_allclose(jax.vmap(f, axis_name="i")(jnp.array([1., 2., -1.])), [2., 2., 0.])
  g = lambda x: lax.cond(True, lambda: lax.axis_index("i"), lambda: 0)
  np.testing.assert_array_equal(jax.vmap(g, axis_name="i")(jnp.ones(3)), [0, 1, 2])


# --- properties against the Python definitions -----------------------------------------

@given(st.booleans(), hnp.arrays(np.float32, st.integers(0, 4), elements=floats))
def test_cond_is_python_if(pred, x):
  out = lax.cond(pred, lambda x: x * 2, lambda x: x - 1, x)
  np.testing.assert_array_equal(out, x * 2 if pred else x - 1)


@given(st.integers(-5, 8), floats)
def test_switch_is_clamped_indexing(index, x):
  fns = [lambda x: x + 1, lambda x: x * 3, lambda x: -x]
  expected = fns[min(max(index, 0), 2)](np.float32(x))
  assert float(lax.switch(index, fns, np.float32(x))) == float(expected)


@given(hnp.arrays(np.float32, st.integers(1, 5), elements=floats))
def test_vmap_of_cond_is_the_stacked_results(xs):
  expected = [float(_f(x)) for x in xs]
  np.testing.assert_allclose(jax.vmap(_f)(xs), expected, rtol=1e-6)


# --- jnp.piecewise ----------------------------------------------------------------------

@given(hnp.arrays(np.float32, st.integers(0, 6), elements=floats))
def test_piecewise_matches_numpy(x):
  condlist = lambda x: [x < -1, x > 1]
  funclist = [lambda x: x * 2, 0.5, lambda x: -x]
  np.testing.assert_allclose(jnp.piecewise(x, condlist(x), funclist),
                             np.piecewise(x, condlist(x), funclist), rtol=1e-6)


def test_piecewise_takes_n_or_n_plus_one_functions():
  with pytest.raises(ValueError, match="with 2 condition"):
    jnp.piecewise(jnp.ones(3), [True, False], [1, 2, 3, 4])
