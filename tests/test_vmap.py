"""`vmap` (refimpl/vectorize.py): in_axes and out_axes in every form JAX
accepts, axis_size, unbatched inputs and outputs, JAX's error messages, and
vmap composed with jit, grad, jacfwd/jacrev, custom_jvp/custom_vjp and
itself. The batching rules themselves are tested per lax module
(tests/lax/test_*_batching.py) and by tests/test_conformance_vmap.py."""

import re

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp

F32 = np.float32
RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _reseeded():
  """Each test draws from RNG as seeded, whatever tests ran before it (in this
  process: the order differs between runs with several workers)."""
  global RNG
  RNG = np.random.default_rng(0)


def _primitives(jaxpr):
  return [eqn.primitive.name for eqn in jaxpr.jaxpr.eqns]


def _randn(*shape):
  return RNG.normal(size=shape).astype(F32)


# --- in_axes ----------------------------------------------------------------------------

def test_in_axes_int_and_negative_int():
  x = np.arange(6, dtype=F32).reshape(2, 3)
  np.testing.assert_array_equal(jax.vmap(jnp.sum)(x), x.sum(1))
  np.testing.assert_array_equal(jax.vmap(jnp.sum, in_axes=1)(x), x.sum(0))
  np.testing.assert_array_equal(jax.vmap(jnp.sum, in_axes=-1)(x), x.sum(0))
  np.testing.assert_array_equal(jax.vmap(jnp.sum, in_axes=-2)(x), x.sum(1))


def test_in_axes_tuple_with_none_shares_an_argument():
  x, w = np.arange(6, dtype=F32).reshape(2, 3), np.array([1.0, 10.0, 100.0], F32)
  out = jax.vmap(lambda x, w: jnp.dot(x, w), in_axes=(0, None))(x, w)
  np.testing.assert_array_equal(out, x @ w)
  out = jax.vmap(lambda w, x: w * x, in_axes=[None, 1])(w, x.T)   # a list means a tuple
  np.testing.assert_array_equal(out, x * w)


def test_in_axes_nested_pytree_prefixes():
  params = {"w": np.arange(6, dtype=F32).reshape(3, 2), "b": np.array([1.0, 2.0], F32)}
  xs = [np.arange(6, dtype=F32).reshape(2, 3), np.ones(4, F32)]

  def f(params, xs):
    return xs[0] @ params["w"] + params["b"] + jnp.sum(xs[1])

  # params: w mapped along its axis 1, b shared; xs: a list, the first mapped
  # along 0, the second shared.
  out = jax.vmap(f, in_axes=({"w": 1, "b": None}, [0, None]))(
      {"w": np.stack([params["w"], 2 * params["w"]], 1), "b": params["b"]}, xs)
  expected = [f({"w": params["w"] * k, "b": params["b"]}, [xs[0][i], xs[1]])
              for i, k in enumerate([1, 2])]
  np.testing.assert_allclose(out, np.stack(expected))
  # a whole subtree mapped by one leaf of the prefix
  out = jax.vmap(lambda p: p["w"].sum() + p["b"].sum(), in_axes=({"w": 0, "b": 0},))(
      {"w": np.ones((2, 3), F32), "b": np.ones((2, 5), F32)})
  np.testing.assert_array_equal(out, [8.0, 8.0])


def test_keyword_arguments_are_mapped_along_axis_0():
  x, y = np.arange(3, dtype=F32), np.arange(6, dtype=F32).reshape(3, 2)
  out = jax.vmap(lambda x, y: x * jnp.sum(y), in_axes=(0,))(x, y=y)
  np.testing.assert_array_equal(out, x * y.sum(1))


def test_non_array_arguments_pass_through_with_in_axes_none():
  class Config:
    scale = 3.0

  out = jax.vmap(lambda x, cfg, name: x * cfg.scale if name == "scale" else x,
                 in_axes=(0, None, None))(np.arange(3, dtype=F32), Config(), "scale")
  np.testing.assert_array_equal(out, [0.0, 3.0, 6.0])


def test_axis_size_when_no_argument_is_mapped():
  x = np.arange(3, dtype=F32)
  out = jax.vmap(lambda x: x * 2, in_axes=None, axis_size=4)(x)
  np.testing.assert_array_equal(out, np.tile(2 * x, (4, 1)))
  np.testing.assert_array_equal(jax.vmap(lambda: jnp.ones(2), axis_size=3)(), np.ones((3, 2)))


# --- out_axes ---------------------------------------------------------------------------

def test_out_axes_int_negative_and_pytree_prefix():
  x = np.arange(24, dtype=F32).reshape(2, 3, 4)
  ident = lambda x: x
  np.testing.assert_array_equal(jax.vmap(ident, out_axes=1)(x), np.moveaxis(x, 0, 1))
  np.testing.assert_array_equal(jax.vmap(ident, out_axes=-1)(x), np.moveaxis(x, 0, -1))
  np.testing.assert_array_equal(jax.vmap(ident, in_axes=2, out_axes=-2)(x),
                                np.moveaxis(x, 2, -2))
  out = jax.vmap(lambda x: {"a": x, "b": [x, 2 * x], "c": x.sum()},
                 out_axes={"a": 2, "b": 1, "c": -1})(x)
  np.testing.assert_array_equal(out["a"], np.moveaxis(x, 0, 2))
  np.testing.assert_array_equal(out["b"][0], np.moveaxis(x, 0, 1))
  np.testing.assert_array_equal(out["b"][1], np.moveaxis(2 * x, 0, 1))
  np.testing.assert_array_equal(out["c"], x.sum((1, 2)))   # rank 0 per member


def test_unbatched_outputs_broadcast_with_out_axes_int_and_stay_with_none():
  x = np.arange(3, dtype=F32)
  const, scaled = jax.vmap(lambda x: (F32(7), x * 2))(x)
  np.testing.assert_array_equal(const, [7.0, 7.0, 7.0])
  np.testing.assert_array_equal(scaled, 2 * x)
  w = np.ones((2, 2), F32)
  out, shared = jax.vmap(lambda x, w: (x * 2, w + 1), in_axes=(0, None),
                         out_axes=(0, None))(x, w)
  np.testing.assert_array_equal(out, 2 * x)
  np.testing.assert_array_equal(shared, w + 1)
  broadcast = jax.vmap(lambda x, w: w + 1, in_axes=(0, None), out_axes=1)(x, w)
  np.testing.assert_array_equal(broadcast, np.ones((2, 3, 2)) * 2)


# --- errors -----------------------------------------------------------------------------

def test_inconsistent_sizes_name_the_arguments():
  def f(x1, x2, a3=None):
    return x1 + x2 + a3

  with pytest.raises(ValueError) as info:
    jax.vmap(f)(np.ones(2, F32), np.ones(2, F32), a3=np.ones(1, F32))
  assert str(info.value) == (
      "vmap got inconsistent sizes for array axes to be mapped:\n"
      "  * most axes (2 of them) had size 2, e.g. axis 0 of argument x1 of type float32[2];\n"
      "  * one axis had size 1: axis 0 of kwargs['a3'] of type float32[1]")
  with pytest.raises(ValueError) as info:
    jax.vmap(lambda x, y: x + y, in_axes=(0, 1))(np.ones((2, 3), F32), np.ones((3, 3), F32))
  assert str(info.value) == (
      "vmap got inconsistent sizes for array axes to be mapped:\n"
      "  * one axis had size 2: axis 0 of argument x of type float32[2,3];\n"
      "  * one axis had size 3: axis 1 of argument y of type float32[3,3]")


def test_rank_too_small_for_the_mapped_axis():
  for axis in (1, -2):
    with pytest.raises(ValueError, match=(
        f"vmap was requested to map its argument along axis {axis}, which implies that "
        r"its rank should be at least 2, but is only 1 \(its shape is \(3,\)\)")):
      jax.vmap(jnp.sin, in_axes=axis)(np.ones(3, F32))
  with pytest.raises(ValueError, match="rank should be at least 1, but is only 0"):
    jax.vmap(jnp.sin)(1.0)


def test_malformed_in_axes_and_out_axes():
  with pytest.raises(TypeError, match=r"vmap in_axes must be an int, None, or a tuple of "
                     r"entries corresponding to the positional arguments passed to the "
                     r"function, but got 1.0."):
    jax.vmap(jnp.sin, in_axes=1.0)
  with pytest.raises(TypeError, match=r"vmap in_axes must be an int, None, or \(nested\) "
                     r"container with those types as leaves, but got \(0, 'a'\)."):
    jax.vmap(jnp.add, in_axes=(0, "a"))
  with pytest.raises(TypeError, match=r"vmap out_axes must be an int, None, or \(nested\) "
                     r"container with those types as leaves, but got 1.5."):
    jax.vmap(jnp.sin, out_axes=1.5)
  with pytest.raises(ValueError, match=r"but got len\(in_axes\)=2, len\(args\)=1"):
    jax.vmap(jnp.sin, in_axes=(0, 0))(np.ones(3, F32))
  with pytest.raises(ValueError, match=re.escape(
      "vmap in_axes specification must be a tree prefix of the corresponding value, got "
      "specification ({'a': 0},) for value tree PyTreeDef((*,)).")):
    jax.vmap(jnp.sin, in_axes=({"a": 0},))(np.ones(3, F32))
  with pytest.raises(TypeError, match="vmap requires a callable argument"):
    jax.vmap(3)


def test_batched_output_with_out_axes_none():
  x = np.ones(3, F32)
  with pytest.raises(ValueError, match=r"^at vmap out_axes, got axis spec None but output "
                     r"was batched on axis 0$"):
    jax.vmap(jnp.sin, out_axes=None)(x)
  with pytest.raises(ValueError, match=r"^at vmap out_axes\['b'\]\[1\], got axis spec None "
                     r"but output was batched on axis 0$"):
    jax.vmap(lambda x: {"a": x, "b": [x, x]}, out_axes={"a": 0, "b": [0, None]})(x)
  with pytest.raises(ValueError, match=r"vmap has mapped output \(axis_name='i'\) but "
                     r"out_axes is None"):
    jax.vmap(jnp.sin, axis_name="i", out_axes=None)(x)


def test_no_mapped_argument():
  with pytest.raises(ValueError, match="^vmap must have at least one non-None value in "
                     "in_axes$"):
    jax.vmap(jnp.sin, in_axes=None)(np.ones(3, F32))
  with pytest.raises(ValueError, match="vmap must have at least one non-None value"):
    jax.vmap(lambda x, y: x, in_axes=(None, None))(np.ones(3, F32), 2.0)


# --- composition ------------------------------------------------------------------------

def test_nested_vmap_with_different_axes_is_an_outer_product():
  x, y = np.arange(3, dtype=F32), np.arange(4, dtype=F32)
  outer = jax.vmap(jax.vmap(lambda a, b: a * b, (None, 0)), (0, None))
  np.testing.assert_array_equal(outer(x, y), np.outer(x, y))
  m = np.arange(12, dtype=F32).reshape(3, 4)
  np.testing.assert_allclose(jax.vmap(jax.vmap(jnp.sin), in_axes=1)(m), np.sin(m).T,
                             rtol=1e-6)


def test_vmap_of_jit_and_jit_of_vmap():
  f = lambda x: jnp.sin(x) @ x
  xs = _randn(4, 3)
  expected = np.stack([np.sin(x) @ x for x in xs])
  np.testing.assert_allclose(jax.vmap(jax.jit(f))(xs), expected, rtol=1e-6)
  np.testing.assert_allclose(jax.jit(jax.vmap(f))(xs), expected, rtol=1e-6)
  np.testing.assert_allclose(jax.jit(jax.vmap(jax.jit(f), in_axes=1))(xs.T), expected,
                             rtol=1e-6)


def _loss(w, x, y):
  return (jnp.tanh(jnp.dot(x, w)) - y) ** 2


def test_per_example_gradients_with_vmap_of_grad():
  w, xs, ys = _randn(3), _randn(5, 3), _randn(5)
  grads = jax.vmap(jax.grad(_loss), in_axes=(None, 0, 0))(w, xs, ys)
  expected = np.stack([jax.grad(_loss)(w, x, y) for x, y in zip(xs, ys)])
  np.testing.assert_allclose(grads, expected, rtol=1e-6, atol=1e-7)
  # by hand: 2 (tanh(x.w) - y) (1 - tanh(x.w)^2) x
  t = np.tanh(xs @ w)
  np.testing.assert_allclose(grads, (2 * (t - ys) * (1 - t ** 2))[:, None] * xs, rtol=1e-5,
                             atol=1e-6)


def test_grad_of_vmap_is_the_sum_of_per_example_gradients():
  w, xs, ys = _randn(3), _randn(5, 3), _randn(5)
  total = jax.grad(lambda w: jnp.sum(jax.vmap(_loss, (None, 0, 0))(w, xs, ys)))(w)
  per_example = jax.vmap(jax.grad(_loss), (None, 0, 0))(w, xs, ys)
  np.testing.assert_allclose(total, per_example.sum(0), rtol=1e-5, atol=1e-6)


def test_jacobians_through_vmap():
  f = lambda x: jnp.sin(x) * x
  xs = _randn(4, 3)
  diag = np.cos(xs) * xs + np.sin(xs)
  per_member = np.stack([np.diag(d) for d in diag])
  np.testing.assert_allclose(jax.vmap(jax.jacfwd(f))(xs), per_member, rtol=1e-6)
  np.testing.assert_allclose(jax.vmap(jax.jacrev(f))(xs), per_member, rtol=1e-6)
  whole = np.einsum("ij,ik,jl->ijkl", diag, np.eye(4), np.eye(3))
  np.testing.assert_allclose(jax.jacfwd(jax.vmap(f))(xs), whole, rtol=1e-6)
  np.testing.assert_allclose(jax.jacrev(jax.vmap(f))(xs), whole, rtol=1e-6)


def test_batched_matvec_is_one_dot_general():
  a, xs = _randn(5, 4), _randn(3, 4)
  f = jax.vmap(lambda x: jnp.dot(a, x))
  np.testing.assert_allclose(f(xs), xs @ a.T, rtol=1e-5, atol=1e-6)
  # the batch axis becomes a free dimension of the product (no loop, no broadcast)
  assert _primitives(jax.make_jaxpr(f)(xs)) in (["dot_general"], ["dot_general", "transpose"])


# --- custom derivatives under vmap ------------------------------------------------------

@jax.custom_jvp
def _sin_doubled_jvp(x):
  return jnp.sin(x)


@_sin_doubled_jvp.defjvp
def _sin_doubled_jvp_rule(primals, tangents):
  (x,), (t,) = primals, tangents
  return jnp.sin(x), 2.0 * jnp.cos(x) * t


@jax.custom_vjp
def _sin_tripled_vjp(x):
  return jnp.sin(x)


_sin_tripled_vjp.defvjp(lambda x: (jnp.sin(x), jnp.cos(x)),
                        lambda cos_x, g: (3.0 * cos_x * g,))


@pytest.mark.parametrize("fn, factor", [(_sin_doubled_jvp, 2.0), (_sin_tripled_vjp, 3.0)],
                         ids=["custom_jvp", "custom_vjp"])
def test_custom_derivatives_under_vmap(fn, factor):
  xs = _randn(2, 3)
  np.testing.assert_allclose(jax.vmap(fn)(xs), np.sin(xs), rtol=1e-6)
  np.testing.assert_allclose(jax.vmap(fn, in_axes=1, out_axes=1)(xs), np.sin(xs), rtol=1e-6)
  # the custom rule (not sin's own derivative) is used, per example and summed
  expected = factor * np.cos(xs[0])
  np.testing.assert_allclose(jax.vmap(jax.grad(fn))(xs[0]), expected, rtol=1e-6)
  np.testing.assert_allclose(jax.grad(lambda x: jnp.sum(jax.vmap(fn)(x)))(xs[0]), expected,
                             rtol=1e-6)
  np.testing.assert_allclose(jax.vmap(jax.vmap(jax.grad(fn)))(xs), factor * np.cos(xs),
                             rtol=1e-6)
