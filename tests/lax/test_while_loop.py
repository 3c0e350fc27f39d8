"""`lax.while_loop` and the `while` primitive (refimpl/lax/control_flow/while_loop.py):
the API (pytrees, closed-over values, weak types, JAX's errors), make_jaxpr
printing, and every transformation: jit, jvp (with the fixpoint over
nonzero tangents), linearize (partial evaluation), the reverse-mode error,
vmap with unbatched and batched predicates (masked carries), collectives,
nested loops and compositions. Loops inside scan/cond are tested with those."""

import collections
import re

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import lax
from refimpl.lax.control_flow.while_loop import while_p

F32 = np.float32

REVERSE_MODE_ERROR = ("Reverse-mode differentiation does not work for lax.while_loop or "
                      "lax.fori_loop with dynamic start/stop values. Try using lax.scan, "
                      "or using fori_loop with static start/stop.")


def python_while_loop(cond_fun, body_fun, init_val):
  val = init_val
  while cond_fun(val):
    val = body_fun(val)
  return val


def _power_until(x, bound=100.0):
  """x ** k for the least k >= 1 with x ** k >= bound (x > 1): a trip count
  that depends on x."""
  return lax.while_loop(lambda c: c[1] < bound, lambda c: (c[0] + 1, c[1] * x), (1, x))


def _while_eqns(closed):
  return [e for e in closed.jaxpr.eqns if e.primitive is while_p]


# --- the API -------------------------------------------------------------------------

def test_counting_to_ten():
  out = lax.while_loop(lambda x: x < 10, lambda x: x + 1, 0)
  assert out.dtype == np.int32 and int(out) == 10


def test_zero_iterations_returns_init():
  x = np.arange(3, dtype=F32)
  out = lax.while_loop(lambda c: c[0] > 0, lambda c: c * 2, x)
  np.testing.assert_array_equal(out, x)
  assert out.dtype == F32


def test_pytree_carry():
  Point = collections.namedtuple("Point", "x y")

  def body(c):
    return {"i": c["i"] + 1, "p": Point(c["p"].x * 2, c["p"].y + c["p"].x)}
  init = {"i": 0, "p": Point(jnp.ones(2), jnp.zeros(2))}
  out = lax.while_loop(lambda c: c["i"] < 3, body, init)
  assert isinstance(out["p"], Point)
  assert int(out["i"]) == 3
  np.testing.assert_array_equal(out["p"].x, [8, 8])
  np.testing.assert_array_equal(out["p"].y, [7, 7])


def test_closed_over_values_are_operands():
  def f(x, bound):
    return lax.while_loop(lambda c: c < bound, lambda c: c * x, 1.0)
  closed = jax.make_jaxpr(f)(np.float32(2), np.float32(50))
  eqn, = _while_eqns(closed)
  assert eqn.params["cond_nconsts"] == 1 and eqn.params["body_nconsts"] == 1
  assert eqn.invars[:2] == closed.jaxpr.invars[::-1]   # cond's bound, then body's x
  assert float(f(np.float32(2), np.float32(50))) == 64


def test_make_jaxpr_prints_as_jax():
  def f(x):
    return lax.while_loop(lambda c: c < 10., lambda c: c * x, 1.0)
  assert str(jax.make_jaxpr(f)(2.0)) == """\
{ lambda ; a:f32[]. let
    b:f32[] = while[
      body_jaxpr={ lambda ; c:f32[] d:f32[]. let e:f32[] = mul d c in (e,) }
      body_nconsts=1
      cond_jaxpr={ lambda ; f:f32[]. let g:bool[] = lt f 10.0:f32[] in (g,) }
      cond_nconsts=0
    ] a 1.0:f32[]
  in (b,) }"""


def test_weak_typed_init_takes_the_bodys_type():
  out = lax.while_loop(lambda x: x < 3, lambda x: x + 1.5, 0)
  assert out.dtype == np.float32 and not out.weak_type
  assert float(out) == 3.0
  out = lax.while_loop(lambda x: x < 3, lambda x: x + jnp.int8(1), 0)
  assert out.dtype == np.int8


def test_disable_jit_runs_the_python_loop():
  calls = []

  def cond(x):
    calls.append(x)
    return x < 3
  with jax.disable_jit():
    out = lax.while_loop(cond, lambda x: x + 1, 0)
  assert out == 3 and len(calls) == 4  # a traced loop would call cond once
  with jax.disable_jit():   # a traced predicate falls back to the primitive
    out = jax.vmap(lambda n: lax.while_loop(lambda i: i < n, lambda i: i + 1, 0))(
        jnp.array([1, 3]))
  np.testing.assert_array_equal(out, [1, 3])


# --- errors --------------------------------------------------------------------------

def test_body_changing_a_dtype_names_the_leaf():
  msg = ("while_loop body function carry input and carry output must have equal types "
         "(e.g. shapes and dtypes of arrays), but they differ:\n\n"
         "The input carry x has type int32[] but the corresponding output carry component "
         "has type float32[], so the dtypes do not match.\n\n"
         "Revise the function so that all output types (e.g. shapes and dtypes) match the "
         "corresponding input types.")
  with pytest.raises(TypeError, match=re.escape(msg)):
    lax.while_loop(lambda x: x < 3, lambda x: x + 1.0, jnp.int32(0))


def test_several_mismatching_leaves_are_listed():
  def body(c):
    return c[0].astype(jnp.float16), c[1][:2], c[2]
  with pytest.raises(TypeError) as info:
    lax.while_loop(lambda c: c[2] < 1, body, (jnp.int32(0), jnp.ones(3), 0))
  assert ("  * the input carry component c[0] has type int32[] but the corresponding output "
          "carry component has type float16[], so the dtypes do not match;\n"
          "  * the input carry component c[1] has type float32[3] but the corresponding "
          "output carry component has type float32[2], so the shapes do not match.\n"
          ) in str(info.value)


def test_body_changing_the_structure():
  with pytest.raises(TypeError, match=re.escape(
      "The input carry c is a tuple of length 2 but the corresponding component of the "
      "carry output is a tuple of length 1, so the lengths do not match.")):
    lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1,), (0, 1.0))
  with pytest.raises(TypeError, match=re.escape(
      "with 1 child, so the numbers of children do not match, with the symmetric "
      "difference of key sets: {'b'}.")):
    lax.while_loop(lambda c: c["a"] < 3, lambda c: {"a": c["a"] + 1},
                   {"a": 0, "b": 1.0})


def test_cond_must_return_a_boolean_scalar():
  with pytest.raises(TypeError, match=re.escape(
      "cond_fun must return a boolean scalar, but got output type(s) "
      "[ShapedArray(int32[], weak_type=True)].")):
    lax.while_loop(lambda x: x, lambda x: x + 1, 0)
  with pytest.raises(TypeError, match=re.escape("but got output type(s) [ShapedArray(bool[2])]")):
    lax.while_loop(lambda x: x < jnp.ones(2), lambda x: x + 1, 0.0)
  with pytest.raises(TypeError, match=re.escape(
      "cond_fun must return a boolean scalar, but got pytree PyTreeDef((*, *)).")):
    lax.while_loop(lambda x: (x < 1, x < 2), lambda x: x + 1, 0.0)


def test_functions_must_be_callable():
  with pytest.raises(TypeError, match="body_fun and cond_fun arguments should be callable"):
    lax.while_loop(lambda x: x < 1, 3, 0)


# --- jit and jvp --------------------------------------------------------------------

def test_jit():
  f = jax.jit(lambda x: _power_until(x)[1])
  np.testing.assert_allclose(f(F32(3)), 243)
  np.testing.assert_allclose(f(F32(10)), 100)


def test_jvp_of_a_data_dependent_trip_count():
  for x in [3.0, 1.5, 10.0]:
    (k, y), (k_dot, y_dot) = jax.jvp(_power_until, (F32(x),), (F32(1),))
    k = int(k)
    np.testing.assert_allclose(y, x ** k, rtol=1e-6)
    np.testing.assert_allclose(y_dot, k * x ** (k - 1), rtol=1e-5)
    assert k_dot.dtype == jax.dtypes.float0


def test_jvp_fixpoint_gives_a_zero_initial_tangent_a_tangent():
  """b starts as a constant (zero tangent) but the body adds a to it."""
  def f(x):
    return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * x, c[2] + c[1]),
                          (0, x, 0.0))
  _, (_, a_dot, b_dot) = jax.jvp(f, (F32(2),), (F32(1),))
  # a = x**4, b = x + x**2 + x**3
  np.testing.assert_allclose(a_dot, 4 * 8)
  np.testing.assert_allclose(b_dot, 1 + 2 * 2 + 3 * 4)
  eqn, = _while_eqns(jax.make_jaxpr(lambda x: jax.jvp(f, (x,), (1.0,)))(F32(2)))
  assert len(eqn.outvars) == 5   # three primal carries, two tangents (not the counter's)


def test_jvp_of_a_body_constant_only():
  """The carry starts with a zero tangent; x's tangent reaches it through the body."""
  def f(x):
    return lax.while_loop(lambda c: c < 100, lambda c: c * x, 1.0)
  y, y_dot = jax.jvp(f, (F32(3),), (F32(1),))
  np.testing.assert_allclose(y, 243)
  np.testing.assert_allclose(y_dot, 5 * 81, rtol=1e-6)


def test_second_order_forward_mode():
  def f(x):
    return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * x), (0, 1.0))[1]
  d2 = jax.jacfwd(jax.jacfwd(f))(F32(2))
  np.testing.assert_allclose(d2, 6 * 2)


def test_cond_does_not_see_tangents():
  """The JVP loop's cond takes the primal carries and ignores the tangents."""
  closed = jax.make_jaxpr(lambda x: jax.jvp(_power_until, (x,), (1.0,)))(F32(3))
  eqn, = _while_eqns(closed)
  cond = eqn.params["cond_jaxpr"].jaxpr
  assert len(cond.invars) == 3 and cond.invars[2] not in {
      v for e in cond.eqns for v in e.invars}


# --- partial evaluation and reverse mode ------------------------------------------------

def test_linearize():
  y, f_lin = jax.linearize(lambda x: _power_until(x)[1], F32(3))
  np.testing.assert_allclose(y, 243)
  np.testing.assert_allclose(f_lin(F32(1)), 5 * 81, rtol=1e-6)
  np.testing.assert_allclose(f_lin(F32(2)), 2 * 5 * 81, rtol=1e-6)


def test_partial_eval_computes_known_carries_with_a_known_loop():
  """Under linearize the counter (no tangent) comes out of a loop of the
  known half; the recorded loop recomputes it with the tangents."""
  closed = jax.make_jaxpr(lambda x: jax.linearize(_power_until, x)[0])(F32(3))
  eqns = _while_eqns(closed)
  assert len(eqns) == 1 and len(eqns[0].outvars) == 2   # the primal loop only


def test_reverse_mode_raises_jax_error():
  f = lambda x: _power_until(x)[1]
  for grad_f in [jax.grad(f), jax.jit(jax.grad(f)), jax.grad(jax.jit(f))]:
    with pytest.raises(ValueError, match=re.escape(REVERSE_MODE_ERROR)):
      grad_f(F32(3))
  with pytest.raises(ValueError, match=re.escape(REVERSE_MODE_ERROR)):
    jax.vjp(lambda x: _power_until(x)[1], F32(3))[1](F32(1))


def test_grad_through_a_loop_that_does_not_depend_on_the_input():
  """Only a loop on the differentiated path needs transposing."""
  def f(x):
    n = lax.while_loop(lambda i: i < 4, lambda i: i + 1, 0)
    return x * n
  np.testing.assert_allclose(jax.grad(f)(F32(2)), 4)


# --- vmap ------------------------------------------------------------------------------

def test_vmap_unbatched_predicate():
  """Only a body constant is batched: the predicate stays a scalar."""
  def f(x):
    return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * x), (0, 1.0))[1]
  xs = np.array([1.0, 2.0, -3.0], F32)
  np.testing.assert_allclose(jax.vmap(f)(xs), xs ** 3)
  eqn, = _while_eqns(jax.make_jaxpr(jax.vmap(f))(xs))
  assert eqn.params["cond_jaxpr"].out_avals[0].shape == ()


def test_vmap_batched_predicate_masks_finished_members():
  xs = np.array([3.0, 1.5, 10.0, 100.5], F32)
  ks, ys = jax.vmap(_power_until)(xs)
  expected = [python_while_loop(lambda c: c[1] < 100, lambda c: (c[0] + 1, c[1] * x), (1, x))
              for x in xs]
  np.testing.assert_array_equal(ks, [k for k, _ in expected])
  np.testing.assert_allclose(ys, [y for _, y in expected], rtol=1e-6)
  eqn, = _while_eqns(jax.make_jaxpr(jax.vmap(_power_until))(xs))
  assert eqn.params["cond_jaxpr"].out_avals[0].shape == (4,)


def test_vmap_batched_predicate_broadcasts_unbatched_carries():
  def f(n):
    return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] + c[0]),
                          (0, jnp.zeros(2, jnp.int32)))
  ns = np.array([0, 3, 5], np.int32)
  i, acc = jax.vmap(f)(ns)
  np.testing.assert_array_equal(i, ns)
  np.testing.assert_array_equal(acc, [[n * (n - 1) // 2] * 2 for n in ns])


def test_vmap_in_axes_and_nested_vmaps():
  def f(x, n):
    return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, jnp.sin(c[1]) * x),
                          (0, x))[1]
  xs, ns = np.array([1.0, 2.0, 0.5], F32), np.array([0, 2, 5], np.int32)
  loop = np.array([[f(x, n) for n in ns] for x in xs])
  # inner vmap over n: a batched predicate; outer over x: unbatched there, of rank 1
  np.testing.assert_allclose(jax.vmap(jax.vmap(f, (None, 0)), (0, None))(xs, ns), loop,
                             rtol=1e-6)
  np.testing.assert_allclose(jax.vmap(jax.vmap(f, (0, None)), (None, 0))(xs, ns), loop.T,
                             rtol=1e-6)
  np.testing.assert_allclose(jax.vmap(f, (1, 0))(np.stack([xs] * 3, axis=1), ns),
                             [[f(x, n) for x in xs] for n in ns], rtol=1e-6)


def test_vmap_collectives_in_cond_and_body():
  def f(x):
    return lax.while_loop(lambda c: lax.psum(c, "i") < 10,
                          lambda c: c + 1 + lax.axis_index("i") * 0, x)
  # the sum over the batch goes 3, 6, 9, 12: three iterations for every member
  np.testing.assert_array_equal(jax.vmap(f, axis_name="i")(jnp.arange(3)), [3, 4, 5])

  def g(x):
    return lax.while_loop(lambda c: c < 10, lambda c: c + 1 + lax.axis_index("i"), x)
  # member i adds 1 + i: from 0 to 10, 10 and 12; from 1 to 10, 11 and 10
  np.testing.assert_array_equal(jax.vmap(g, axis_name="i")(jnp.zeros(3, jnp.int32)),
                                [10, 10, 12])
  np.testing.assert_array_equal(jax.vmap(g, axis_name="i")(jnp.ones(3, jnp.int32)),
                                [10, 11, 10])


def test_vmap_of_jvp_and_jvp_of_vmap():
  xs = np.array([3.0, 1.5, 10.0], F32)
  f = lambda x: _power_until(x)[1]
  ys, dots = jax.vmap(lambda x: jax.jvp(f, (x,), (F32(1),)))(xs)
  ys2, dots2 = jax.jvp(jax.vmap(f), (xs,), (np.ones(3, F32),))
  ks = np.array([python_while_loop(lambda c: c[1] < 100, lambda c: (c[0] + 1, c[1] * x),
                                   (1, x))[0] for x in xs])
  for y, d in [(ys, dots), (ys2, dots2)]:
    np.testing.assert_allclose(y, xs ** ks, rtol=1e-6)
    np.testing.assert_allclose(d, ks * xs ** (ks - 1), rtol=1e-5)
  with pytest.raises(ValueError, match=re.escape(REVERSE_MODE_ERROR)):
    jax.grad(lambda xs: jnp.sum(jax.vmap(f)(xs)))(xs)


# --- nested loops -----------------------------------------------------------------------

def _nested(x, n):
  """For i in 1..n: double y until it exceeds i * x."""
  def outer_body(c):
    i, y = c
    y = lax.while_loop(lambda y: y <= i * x, lambda y: y * 2, y)
    return i + 1, y
  return lax.while_loop(lambda c: c[0] <= n, outer_body, (1.0, x / 8))[1]


def _nested_py(x, n):
  i, y = 1.0, x / 8
  while i <= n:
    while y <= i * x:
      y = y * 2
    i += 1
  return y


def test_nested_loops_with_transformations():
  xs, ns = np.array([1.0, 3.0, 0.5], F32), np.array([1, 4, 9], np.int32)
  for x, n in zip(xs, ns):
    np.testing.assert_allclose(_nested(x, n), _nested_py(float(x), int(n)), rtol=1e-6)
    np.testing.assert_allclose(jax.jit(_nested)(x, n), _nested_py(float(x), int(n)),
                               rtol=1e-6)
  np.testing.assert_allclose(jax.vmap(_nested)(xs, ns),
                             [_nested_py(float(x), int(n)) for x, n in zip(xs, ns)],
                             rtol=1e-6)
  # y is x / 8 times a power of two fixed near x: dy/dx = y / x
  y, y_dot = jax.jvp(lambda x: _nested(x, 4), (F32(3),), (F32(1),))
  np.testing.assert_allclose(y_dot, y / 3, rtol=1e-6)


# --- properties ---------------------------------------------------------------------------

@given(st.integers(-50, 50), st.integers(-50, 50), st.integers(1, 7))
def test_count_up_matches_python(start, stop, step):
  out = lax.while_loop(lambda c: c[1] < stop, lambda c: (c[0] + 1, c[1] + step),
                       (0, np.int32(start)))
  expected = python_while_loop(lambda c: c[1] < stop, lambda c: (c[0] + 1, c[1] + step),
                               (0, start))
  assert (int(out[0]), int(out[1])) == expected


@given(st.lists(st.integers(1, 40), min_size=1, max_size=5))
def test_vmap_collatz_matches_stacked_results(starts):
  def steps(x):
    return lax.while_loop(lambda c: c[0] != 1,
                          lambda c: (jnp.where(c[0] % 2 == 0, c[0] // 2, 3 * c[0] + 1),
                                     c[1] + 1), (x, 0))[1]

  def steps_py(x):
    return python_while_loop(lambda c: c[0] != 1,
                             lambda c: (c[0] // 2 if c[0] % 2 == 0 else 3 * c[0] + 1,
                                        c[1] + 1), (x, 0))[1]
  np.testing.assert_array_equal(jax.vmap(steps)(np.array(starts, np.int32)),
                                [steps_py(x) for x in starts])


def test_partial_eval_of_a_carry_the_body_resets():
  """The first carry starts unknown (it has a tangent) though the body
  computes it from known values only; the known loop still computes the
  second."""
  def f(x):
    return lax.while_loop(lambda c: c[1] < 3, lambda c: (c[1] * 2.0, c[1] + 1), (x, 0))
  (a, n), f_lin = jax.linearize(f, F32(5))
  assert float(a) == 4.0 and int(n) == 3
  np.testing.assert_allclose(f_lin(F32(1))[0], 0.0)
