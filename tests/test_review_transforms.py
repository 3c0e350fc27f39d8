"""Review of the transformations and API surface against JAX 0.10: jit's
static-argument checks and ahead-of-time stages, make_jaxpr as
`jit(...).trace`, custom_vjp with symbolic zeros, weak types of zero
cotangents."""

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from refimpl.custom_derivatives import (CustomVJPPrimal, SymbolicZero,
                                        custom_vjp_primal_tree_values)


# --- jit: static arguments are checked against the signature -------------------
# JAX (api_util._validate_argnums/_validate_argnames, argnums_partial_except):
# ValueError at jit time for an index past the positional parameters or a name
# the function does not take; ValueError naming the argument for unhashables.

def test_jit_static_argnums_past_the_signature_raise():
  with pytest.raises(ValueError, match=r"static_argnums=\(3,\), but only accepts 1 "
                                       "positional arguments"):
    jax.jit(lambda x: x, static_argnums=3)
  with pytest.raises(ValueError, match="only accepts 1 positional"):
    jax.jit(lambda x: x, static_argnums=-2)
  jax.jit(lambda *xs: xs[0], static_argnums=3)   # *args takes any position


def test_jit_static_argnames_the_function_does_not_take_raise():
  with pytest.raises(ValueError, match="invalid argnames {'y'} in static_argnames. "
                                       "Function does not take these args"):
    jax.jit(lambda x: x, static_argnames="y")
  jax.jit(lambda x, **kw: x, static_argnames="y")   # **kwargs takes any name

  def positional_only(x, /):
    return x
  with pytest.raises(ValueError, match="These are positional-only"):
    jax.jit(positional_only, static_argnames="x")


def test_jit_unhashable_static_argument_names_it():
  f = jax.jit(lambda x, n: x, static_argnums=1)
  with pytest.raises(ValueError, match=r"Static argument \(index 1\) of type <class "
                                       "'list'> for function <lambda> is non-hashable"):
    f(1., [1])
  g = jax.jit(lambda x, n: x, static_argnames="n")
  with pytest.raises(ValueError, match=r"Static argument \(name n\)"):
    g(1., n=[1])


# --- jit: ahead-of-time stages ---------------------------------------------------

def _f(x, y):
  return 2 * x + y


def test_jit_trace_lower_compile_runs_with_shape_dtype_structs():
  i32 = jax.ShapeDtypeStruct((), jnp.dtype("int32"))
  compiled = jax.jit(_f).trace(i32, i32).lower().compile()
  out = compiled(np.int32(3), np.int32(4))
  assert out.dtype == np.int32 and int(out) == 10
  assert int(jax.jit(_f).lower(i32, i32).compile()(3, 4)) == 10


def test_compiled_takes_only_the_dynamic_arguments():
  # JAX's AOT docs: jit(f, static_argnums=0).trace(7, i32).lower().compile()(5) == 19
  i32 = jax.ShapeDtypeStruct((), jnp.dtype("int32"))
  lowered = jax.jit(_f, static_argnums=0).lower(7, i32)
  assert int(lowered.compile()(5)) == 19
  assert "add" in lowered.as_text()


def test_lowered_compiler_ir_is_the_jaxpr():
  """refimpl's IR is the jaxpr; an IR it has no lowering to is None, as in
  JAX where the lowering lacks the dialect; an unknown dialect is an error."""
  lowered = jax.jit(_f).lower(1.0, 2.0)
  assert lowered.compiler_ir() is lowered.compiler_ir("jaxpr") is lowered.jaxpr
  assert str(lowered.compiler_ir()) == str(jax.make_jaxpr(_f)(1.0, 2.0))
  assert lowered.compiler_ir("stablehlo") is None and lowered.compiler_ir("hlo") is None
  with pytest.raises(ValueError, match="Unknown dialect 'llvm'"):
    lowered.compiler_ir("llvm")


def test_traced_jaxpr_out_info_and_in_avals():
  traced = jax.jit(lambda x: {"s": x.sum(), "x": x}).trace(jnp.ones((2, 3)))
  assert str(traced.jaxpr) == str(jax.make_jaxpr(lambda x: {"s": x.sum(), "x": x})(
      jnp.ones((2, 3))))
  assert traced.out_info == {"s": jax.ShapeDtypeStruct((), np.float32),
                             "x": jax.ShapeDtypeStruct((2, 3), np.float32)}
  lowered = jax.jit(_f).lower(1., y=jnp.ones(2))
  (x_aval,), kw = lowered.in_avals
  assert x_aval.weak_type and x_aval.dtype == np.float32
  assert kw["y"].shape == (2,)


def test_compiled_rejects_other_argument_types():
  i32 = jax.ShapeDtypeStruct((), jnp.dtype("int32"))
  compiled = jax.jit(_f).lower(i32, i32).compile()
  with pytest.raises(TypeError, match="Argument types differ from the types for which "
                     "this computation was compiled") as info:
    compiled(jnp.arange(3), jnp.arange(3))
  assert "Argument 'x' compiled with int32[] and called with int32[3]" in str(info.value)
  with pytest.raises(TypeError, match="Argument 'y' compiled with int32"):
    compiled(np.int32(1), np.float32(72.))
  with pytest.raises(TypeError, match="Function compiled with input pytree does not "
                                      "match the input pytree it was called with"):
    jax.jit(lambda x: x).lower(1.).compile()([1.])


def test_compiled_functions_cannot_be_transformed():
  compiled = jax.jit(lambda x: x * 2).lower(1.).compile()
  with pytest.raises(TypeError, match="Cannot apply JAX transformations to a function "
                                      "lowered and compiled"):
    jax.vmap(compiled)(jnp.ones(3))


def test_jitted_eval_shape_and_clear_cache():
  f = jax.jit(lambda x: x.sum(0))
  assert f.eval_shape(jax.ShapeDtypeStruct((4, 3), np.int32)) == \
      jax.ShapeDtypeStruct((3,), np.int32)
  f(jnp.ones(2))
  assert f._cache_size() >= 1
  f.clear_cache()
  assert f._cache_size() == 0
  np.testing.assert_array_equal(f(jnp.ones((2, 2))), [2., 2.])


# --- make_jaxpr is jit(...).trace -------------------------------------------------

def test_make_jaxpr_negative_static_argnums():
  closed = jax.make_jaxpr(lambda x, n: x * n, static_argnums=-1)(1., 3)
  assert len(closed.jaxpr.invars) == 1
  assert [e.primitive.name for e in closed.jaxpr.eqns] == ["mul"]


def test_make_jaxpr_static_argument_errors_are_jits():
  with pytest.raises(ValueError, match="only accepts 1 positional arguments"):
    jax.make_jaxpr(lambda x: x, static_argnums=2)(1.)
  with pytest.raises(ValueError, match="Non-hashable static arguments"):
    jax.make_jaxpr(lambda x, n: x, static_argnums=1)(1., [1])


def test_make_jaxpr_of_an_unhashable_callable():
  class Scale:
    __hash__ = None

    def __call__(self, x):
      return x * 2.

  closed = jax.make_jaxpr(Scale())(jnp.ones(2))
  assert [e.primitive.name for e in closed.jaxpr.eqns] == ["mul"]


# --- custom_vjp with symbolic_zeros=True ------------------------------------------
# JAX (custom_derivatives._flatten_fwd): fwd receives CustomVJPPrimal(value,
# perturbed) leaves; bwd receives SymbolicZero for zero cotangents and may
# return SymbolicZeros.

def _mul_with_symbolic_zeros(seen):
  @jax.custom_vjp
  def f(x, y):
    return x * y

  def fwd(x, y):
    assert isinstance(x, CustomVJPPrimal) and isinstance(y, CustomVJPPrimal)
    seen.append((x.perturbed, y.perturbed))
    return x.value * y.value, (x.value, y.value)

  def bwd(res, g):
    x, y = res
    return g * y, g * x

  f.defvjp(fwd, bwd, symbolic_zeros=True)
  return f


def test_custom_vjp_symbolic_zeros_fwd_sees_which_args_are_perturbed():
  seen = []
  f = _mul_with_symbolic_zeros(seen)
  assert float(jax.grad(f)(2., 3.)) == 3.
  assert seen[-1] == (True, False)
  assert float(jax.grad(f, argnums=1)(2., 3.)) == 2.
  assert seen[-1] == (False, True)
  gx, gy = jax.grad(f, argnums=(0, 1))(2., 3.)
  assert (float(gx), float(gy)) == (3., 2.) and seen[-1] == (True, True)
  np.testing.assert_array_equal(jax.vmap(jax.grad(f))(jnp.arange(3.), jnp.full(3, 5.)),
                                [5., 5., 5.])
  assert float(jax.jit(jax.grad(f))(2., 3.)) == 3.
  assert float(f(2., 3.)) == 6.


def test_custom_vjp_symbolic_zeros_bwd_gets_and_returns_symbolic_zeros():
  seen = []

  @jax.custom_vjp
  def pair(x):
    return x, 2. * x

  def bwd(_, cts):
    a, b = cts
    seen.append((isinstance(a, SymbolicZero), isinstance(b, SymbolicZero)))
    total = 0.
    if not isinstance(a, SymbolicZero):
      total = total + a
    if not isinstance(b, SymbolicZero):
      total = total + 2. * b
    return (total,)

  pair.defvjp(lambda x: (pair(x.value), None), bwd, symbolic_zeros=True)
  assert float(jax.grad(lambda x: pair(x)[1])(1.)) == 2.
  assert seen[-1] == (True, False)

  @jax.custom_vjp
  def add(x, y):
    return x + y

  add.defvjp(lambda x, y: (x.value + y.value, None),
             lambda _, g: (g, SymbolicZero(jax.typeof(g))), symbolic_zeros=True)
  gx, gy = jax.grad(add, argnums=(0, 1))(jnp.float32(1.), jnp.float32(2.))
  assert (float(gx), float(gy)) == (1., 0.)


def test_custom_vjp_primal_tree_values():
  tree = {"a": CustomVJPPrimal(1., True), "b": [CustomVJPPrimal(2., False)]}
  assert custom_vjp_primal_tree_values(tree) == {"a": 1., "b": [2.]}
  with pytest.raises(TypeError, match="unexpected leaf type"):
    custom_vjp_primal_tree_values({"a": 1.})


# --- zero cotangents keep the weak type ---------------------------------------------
# JAX's zeros_like_shaped_array converts 0 with aval.weak_type, and tangent
# avals keep the primal's weak type: the gradient with respect to an unused
# Python-float argument is a weak zero, as the gradient of a used one is weak.

def test_grad_of_unused_argument_is_zero_of_the_input_type():
  g = jax.grad(lambda x, y: y)(1., 2.)
  assert float(g) == 0. and g.dtype == np.float32 and g.weak_type
  assert g.weak_type == jax.grad(lambda x: x * x)(1.).weak_type
  strong = jax.grad(lambda x, y: y)(np.float32(1.), 2.)
  assert float(strong) == 0. and not strong.weak_type
  const = jax.grad(lambda x: 1.)(1.)
  assert float(const) == 0. and const.weak_type


# --- vjp and linearize return Partials ---------------------------------------------
# JAX (api.vjp, api.linearize): the returned function is a tree_util.Partial
# whose leaves are the residuals, so it can cross a jit boundary.

def test_vjp_function_is_a_pytree_that_crosses_jit():
  _, vjp_fun = jax.vjp(jnp.sin, 1.)
  assert isinstance(vjp_fun, jax.tree_util.Partial)
  (ct,) = jax.jit(lambda f, ct: f(ct))(vjp_fun, 2.)
  np.testing.assert_allclose(ct, 2. * np.cos(1.), rtol=1e-6)
  returned = jax.jit(lambda x: jax.vjp(jnp.sin, x)[1])(0.5)
  np.testing.assert_allclose(returned(1.)[0], np.cos(0.5), rtol=1e-6)
  leaves = jax.tree_util.tree_leaves(jax.vjp(lambda v: v * v, jnp.arange(3.))[1])
  assert leaves and all(isinstance(leaf, jax.Array) for leaf in leaves)


def test_vjp_function_takes_exactly_one_cotangent():
  _, vjp_fun = jax.vjp(lambda x: (x, x), 1.)
  with pytest.raises(TypeError, match="must be called with a single argument"):
    vjp_fun(1., 1.)
  assert len(vjp_fun((1., 2.))) == 1


def test_linearize_function_is_a_pytree_that_crosses_jit():
  _, f_jvp = jax.linearize(lambda x: x ** 3, 2.)
  assert isinstance(f_jvp, jax.tree_util.Partial)
  assert float(jax.jit(lambda f, t: f(t))(f_jvp, 1.)) == 12.
  returned = jax.jit(lambda x: jax.linearize(lambda v: v ** 3, x)[1])(3.)
  assert float(returned(1.)) == 27.


# --- checkpoint static_argnums -------------------------------------------------------
# JAX (ad_checkpoint._remat_static_argnums, run on each call): TypeError unless
# an int or a tuple of ints, ValueError outside [-len(args), len(args)).

def test_checkpoint_static_argnums_checks():
  with pytest.raises(ValueError, match=r"greater than or equal to `-len\(args\)` and "
                                       r"less than `len\(args\)`, but got \(2,\)"):
    jax.checkpoint(lambda x: x, static_argnums=(2,))(1.)
  bad = jax.checkpoint(lambda x: x, static_argnums=[0])   # no error until called
  with pytest.raises(TypeError, match="must be an int, tuple of ints or, bool"):
    bad(1.)
  g = jax.grad(jax.checkpoint(lambda x, n: x ** n, static_argnums=-1))(2., 3)
  assert float(g) == 12.


def test_save_from_both_policies_saves_what_either_saves():
  policies = jax.checkpoint_policies
  both = policies.save_from_both_policies(policies.save_only_these_names("a"),
                                          policies.dots_saveable)

  def f(x):
    y = jax.ad_checkpoint.checkpoint_name(jnp.sin(x), "a")
    return jnp.dot(y, y) * jnp.cos(x).sum()

  x = jnp.arange(3.)
  expected = jax.grad(f)(x)
  np.testing.assert_allclose(jax.grad(jax.checkpoint(f, policy=both))(x), expected, rtol=1e-6)

  from refimpl.ad_checkpoint import name_p
  from refimpl.lax.linalg import dot_general_p
  assert both(name_p, name="a") and both(dot_general_p)
  assert not both(name_p, name="b")


# --- argument checks of the differentiation transformations ---------------------------
# JAX: value_and_grad/jacfwd/jacrev/jvp/vjp/linearize call check_callable
# ("Expected a callable value, got ..."); a negative argnum below -len(args)
# fails api_util._ensure_inbounds with a ValueError.

@pytest.mark.parametrize("transform", [jax.grad, jax.value_and_grad, jax.jacfwd,
                                       jax.jacrev, jax.hessian])
def test_differentiating_a_non_callable_raises_at_once(transform):
  with pytest.raises(TypeError, match="Expected a callable value, got 1"):
    transform(1)


def test_jvp_vjp_linearize_of_a_non_callable():
  with pytest.raises(TypeError, match="Expected a callable value"):
    jax.jvp(1, (1.,), (1.,))
  with pytest.raises(TypeError, match="Expected a callable value"):
    jax.vjp(1, 1.)
  with pytest.raises(TypeError, match="Expected a callable value"):
    jax.linearize(1, 1.)


def test_grad_negative_argnums_out_of_range():
  with pytest.raises(ValueError, match=r"greater than or equal to -len\(args\) and less "
                                       r"than len\(args\), but got value -3 for "
                                       r"len\(args\) == 2"):
    jax.grad(lambda x, y: x * y, argnums=-3)(2., 3.)
  assert float(jax.grad(lambda x, y: x * y, argnums=-2)(2., 3.)) == 3.


def test_jit_static_values_of_different_types_trace_separately():
  # JAX compares static arguments by type as well as value (jax_jit.cc's
  # CallSignature; api_util._HashableWithStrictTypeEquality): 2 == 2.0 in
  # Python, but x * 2 is int32 and x * 2.0 is float32.
  f = jax.jit(lambda x, n: x * n, static_argnums=1)
  assert f(jnp.arange(3), 2).dtype == np.int32
  out = f(jnp.arange(3), 2.0)
  assert out.dtype == np.float32
  np.testing.assert_array_equal(out, [0., 2., 4.])
  g = jax.jit(lambda x, n: x * n, static_argnames="n")
  assert g(jnp.arange(3), n=True).dtype == np.int32   # int * bool stays int
  assert g(jnp.arange(3), n=1.0).dtype == np.float32
