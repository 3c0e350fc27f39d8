"""Tests of refimpl/ad_checkpoint.py: checkpoint (remat), its policies,
checkpoint_name and static_argnums.

What a policy saves is read off `make_jaxpr(grad(...))`: the backward pass
is one `checkpoint` equation whose operands are the saved values (the
function's inputs plus the residuals the policy saves) and the output
cotangent, and whose jaxpr recomputes the rest. JAX's "Control autodiff's
saved values with jax.checkpoint" lists the residuals each policy saves for
the three-layer network below.
"""

import functools
import inspect

import numpy as np
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from conformance.strategies import bounded_arrays
from refimpl.ad_checkpoint import checkpoint_name

policies = jax.checkpoint_policies


def f32(x):
  return np.asarray(x, np.float32)


def layer(W, x):
  return jnp.sin(jnp.dot(W, x))


def net(W1, W2, W3, x):
  return layer(W3, layer(W2, layer(W1, x)))


def named_net(W1, W2, W3, x):
  x = checkpoint_name(layer(W1, x), name="a")
  x = checkpoint_name(layer(W2, x), name="b")
  return checkpoint_name(layer(W3, x), name="c")


ARGS = (jnp.ones((5, 4)) / 4, jnp.ones((6, 5)) / 5, jnp.ones((7, 6)) / 6, jnp.ones(4))


def grad_jaxpr(fun, *args):
  """make_jaxpr of the gradient of sum(fun(*args)) w.r.t. every argument."""
  loss = lambda *a: jnp.sum(fun(*a))
  return jax.make_jaxpr(jax.grad(loss, argnums=tuple(range(len(args)))))(*args)


def backward_checkpoint(closed):
  """The one differentiated checkpoint equation (the backward pass)."""
  eqns = [e for e in closed.jaxpr.eqns
          if e.primitive.name == "checkpoint" and e.params["differentiated"]]
  assert len(eqns) == 1, str(closed)
  return eqns[0]


def saved_residuals(closed):
  """(origin, shape) of each distinct value the backward checkpoint reads
  from the forward pass, other than the cotangent (its last operand):
  origin is "argument" for an input of the function, else the primitive
  that computed it."""
  eqn = backward_checkpoint(closed)
  producer = {v: e.primitive.name for e in closed.jaxpr.eqns for v in e.outvars}
  seen, out = set(), []
  for v in eqn.invars[:-1]:
    if v in seen:
      continue
    seen.add(v)
    out.append(("argument" if v in closed.jaxpr.invars else producer[v], v.aval.shape))
  return sorted(out)


def prim_names(jaxpr):
  return [e.primitive.name for e in jaxpr.eqns]


ARGUMENTS = sorted([("argument", (5, 4)), ("argument", (6, 5)), ("argument", (7, 6)),
                    ("argument", (4,))])


# --- values and gradients ---------------------------------------------------------

@given(x=bounded_arrays(np.float32, st.sampled_from([(), (3,), (2, 2)]), bound=2.))
def test_checkpoint_same_values_and_gradients(x):
  f = lambda x: jnp.sum(jnp.sin(jnp.tanh(x) * x) * jnp.exp(x / 3))
  for policy in (None, policies.everything_saveable, policies.dots_saveable):
    g = jax.checkpoint(f, policy=policy)
    np.testing.assert_allclose(g(x), f(x), rtol=1e-6)
    np.testing.assert_allclose(jax.grad(g)(x), jax.grad(f)(x), rtol=1e-6)


def test_checkpoint_of_network_matches_plain_gradients():
  expected = jax.grad(lambda *a: jnp.sum(net(*a)), argnums=(0, 1, 2, 3))(*ARGS)
  for policy in (None, policies.dots_with_no_batch_dims_saveable,
                 policies.everything_saveable):
    f = jax.checkpoint(net, policy=policy)
    got = jax.grad(lambda *a: jnp.sum(f(*a)), argnums=(0, 1, 2, 3))(*ARGS)
    for a, b in zip(got, expected):
      np.testing.assert_allclose(a, b, rtol=1e-6)


def test_checkpoint_under_jit_jvp_and_vjp():
  f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)))
  x = f32(0.7)
  d = np.cos(np.sin(0.7)) * np.cos(0.7)
  np.testing.assert_allclose(jax.jit(f)(x), np.sin(np.sin(0.7)), rtol=1e-6)
  np.testing.assert_allclose(jax.jvp(f, (x,), (f32(1.),))[1], d, rtol=1e-6)
  np.testing.assert_allclose(jax.jit(jax.grad(f))(x), d, rtol=1e-6)
  np.testing.assert_allclose(jax.grad(jax.jit(f))(x), d, rtol=1e-6)
  _, f_vjp = jax.vjp(f, x)
  np.testing.assert_allclose(f_vjp(f32(2.))[0], 2 * d, rtol=1e-6)
  # Second derivative through the checkpoint.
  np.testing.assert_allclose(jax.grad(jax.grad(f))(x),
                             jax.grad(jax.grad(lambda x: jnp.sin(jnp.sin(x))))(x), rtol=1e-6)


def test_checkpoint_pytrees_and_kwargs():
  @jax.checkpoint
  def f(p, *, scale):
    return {"y": jnp.sin(p["a"]) * p["b"] * scale}

  g = jax.grad(lambda p: f(p, scale=f32(2.))["y"])({"a": f32(1.), "b": f32(3.)})
  np.testing.assert_allclose((g["a"], g["b"]), (6 * np.cos(1.), 2 * np.sin(1.)), rtol=1e-6)


def test_checkpoint_static_argnums():
  calls = []

  @functools.partial(jax.checkpoint, static_argnums=(1,))
  def f(x, n):
    calls.append(n)
    for _ in range(n):   # n is a Python int: usable in control flow
      x = jnp.sin(x)
    return x

  np.testing.assert_allclose(jax.grad(f)(f32(0.5), 2),
                             np.cos(np.sin(0.5)) * np.cos(0.5), rtol=1e-6)
  assert 2 in calls


def test_remat_is_checkpoint_without_static_argnames():
  np.testing.assert_allclose(jax.grad(jax.remat(jnp.sin))(f32(0.)), 1.)
  assert "static_argnames" not in inspect.signature(jax.remat).parameters


def test_checkpoint_name_is_identity():
  x = f32([1., 2.])
  np.testing.assert_array_equal(checkpoint_name(x, "x"), x)
  tree = checkpoint_name({"a": x, "b": (x,)}, "t")
  np.testing.assert_array_equal(tree["b"][0], x)
  np.testing.assert_allclose(jax.grad(lambda x: checkpoint_name(x * x, "y"))(f32(3.)), 6.)


# --- what is recomputed ------------------------------------------------------------------

def test_backward_pass_recomputes_inside_checkpoint():
  closed = jax.make_jaxpr(jax.grad(jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)))))(1.)
  eqn = backward_checkpoint(closed)
  inner = prim_names(eqn.params["jaxpr"].jaxpr)
  # The residuals cos(x) and cos(sin(x)) are recomputed from x: sin and
  # cos both run inside the backward checkpoint.
  assert "sin" in inner and inner.count("cos") == 2, str(closed)
  # Only the input x is saved (plus the cotangent 1.0).
  assert [str(v) for v in eqn.invars][1:] == ["1.0:f32[]"], str(closed)
  assert eqn.invars[0] is closed.jaxpr.invars[0]


def test_forward_pass_does_not_compute_unsaved_residuals():
  # Nothing is saveable: the forward pass computes the primal output only,
  # the residuals (cos) are computed in the backward pass alone.
  closed = jax.make_jaxpr(jax.grad(jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)))))(1.)
  outer = [n for n in prim_names(closed.jaxpr) if n != "checkpoint"]
  assert "cos" not in outer, str(closed)


def test_nothing_saveable_saves_only_arguments():
  for policy in (None, policies.nothing_saveable):
    closed = grad_jaxpr(jax.checkpoint(net, policy=policy), *ARGS)
    assert saved_residuals(closed) == ARGUMENTS, str(closed)


def test_everything_saveable_recomputes_nothing():
  closed = grad_jaxpr(jax.checkpoint(net, policy=policies.everything_saveable), *ARGS)
  inner = prim_names(backward_checkpoint(closed).params["jaxpr"].jaxpr)
  assert "sin" not in inner and "cos" not in inner, str(closed)
  # Only the transposed dots: two per layer (the cotangents of W and of x).
  assert inner.count("dot_general") == 6, str(closed)


def test_dots_saveable_saves_dot_outputs_only():
  expected = sorted(ARGUMENTS + [("dot_general", (5,)), ("dot_general", (6,)),
                                 ("dot_general", (7,))])
  for policy in (policies.dots_saveable, policies.dots_with_no_batch_dims_saveable,
                 policies.checkpoint_dots):
    closed = grad_jaxpr(jax.checkpoint(net, policy=policy), *ARGS)
    assert saved_residuals(closed) == expected, str(closed)
    inner = prim_names(backward_checkpoint(closed).params["jaxpr"].jaxpr)
    # cos is recomputed from the saved dots; the forward dots are not.
    assert inner.count("cos") == 3 and inner.count("dot_general") == 6, str(closed)


def test_save_only_these_names():
  policy = policies.save_only_these_names("a")
  closed = grad_jaxpr(jax.checkpoint(named_net, policy=policy), *ARGS)
  assert saved_residuals(closed) == sorted(ARGUMENTS + [("name", (5,))]), str(closed)
  # The first layer is not recomputed: its output was saved.
  inner = prim_names(backward_checkpoint(closed).params["jaxpr"].jaxpr)
  assert inner.count("sin") == 1, str(closed)   # sin of layer 2 (layer 3's isn't needed)


def test_named_policies_values_unchanged():
  expected = jax.grad(lambda *a: jnp.sum(named_net(*a)), argnums=(0, 1, 2, 3))(*ARGS)
  for policy in (policies.save_only_these_names("a", "c"),
                 policies.save_any_names_but_these("b"),
                 policies.save_anything_except_these_names("a")):
    f = jax.checkpoint(named_net, policy=policy)
    got = jax.grad(lambda *a: jnp.sum(f(*a)), argnums=(0, 1, 2, 3))(*ARGS)
    for a, b in zip(got, expected):
      np.testing.assert_allclose(a, b, rtol=1e-6)
