"""Tests for refimpl/lax/control_flow/loops.py: scan (API forms, errors,
printing, every transformation and their compositions), fori_loop, map and
associative_scan, against their Python-loop definitions."""

import re

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl
import refimpl.numpy as jnp
from refimpl import lax
from conformance import strategies as S
from conformance.autodiff import check_grads


def _np(x):
  return np.asarray(x)


def _python_scan(f, init, xs, reverse=False):
  """JAX's definition of scan, as a Python loop (xs a single array)."""
  carry, ys = init, [None] * len(xs)
  for i in (reversed(range(len(xs))) if reverse else range(len(xs))):
    carry, ys[i] = f(carry, xs[i])
  return carry, jnp.stack(ys)


def _eqns(jaxpr, name):
  return [e for e in jaxpr.eqns if e.primitive.name == name]


# --- the API ----------------------------------------------------------------------

def test_scan_running_sum():
  carry, ys = lax.scan(lambda c, x: (c + x, c), 0, jnp.arange(5))
  assert _np(carry) == 10 and carry.dtype == np.int32
  np.testing.assert_array_equal(ys, [0, 0, 1, 3, 6])


def test_scan_reverse_reverses_xs_and_ys():
  xs = jnp.arange(1., 5.)
  carry, ys = lax.scan(lambda c, x: (c * 10 + x, c), 0., xs, reverse=True)
  assert _np(carry) == 4321.
  np.testing.assert_array_equal(ys, [432., 43., 4., 0.])


def test_scan_pytree_carry_and_outputs():
  def body(c, x):
    return {"s": c["s"] + x[0], "n": c["n"] + 1}, (x[0] * x[1], [c["s"]])
  init = {"s": jnp.zeros(2), "n": 0}
  xs = (jnp.ones((3, 2)), jnp.arange(3.))
  carry, (prod, [prev]) = lax.scan(body, init, xs)
  np.testing.assert_array_equal(carry["s"], [3., 3.])
  assert _np(carry["n"]) == 3
  np.testing.assert_array_equal(prod, [[0., 0.], [1., 1.], [2., 2.]])
  np.testing.assert_array_equal(prev, [[0., 0.], [1., 1.], [2., 2.]])


def test_scan_without_xs_uses_length():
  carry, ys = lax.scan(lambda c, x: (c * 2, x), 1, None, length=4)
  assert _np(carry) == 16 and ys is None
  carry, ys = lax.scan(lambda c, _: (c + 1, c), 0, length=3)
  np.testing.assert_array_equal(ys, [0, 1, 2])


def test_zero_length_scan_returns_init_and_empty_ys():
  carry, ys = lax.scan(lambda c, x: (c + x, c * x), jnp.ones(2), jnp.zeros((0, 2)))
  np.testing.assert_array_equal(carry, [1., 1.])
  assert ys.shape == (0, 2) and ys.dtype == np.float32


def test_weak_init_is_promoted_to_the_body_type():
  carry, _ = lax.scan(lambda c, x: (c + x, None), 0, jnp.arange(3.))
  assert carry.dtype == np.float32 and _np(carry) == 3.


@pytest.mark.parametrize("unroll", [1, 2, 3, 0, True, False])
def test_unroll_does_not_change_results(unroll):
  xs = jnp.linspace(0., 1., 7)
  body = lambda c, x: (jnp.sin(c) + x, c * x)
  expected = lax.scan(body, 0.5, xs)
  actual = lax.scan(body, 0.5, xs, unroll=unroll)
  for a, e in zip(actual, expected):
    np.testing.assert_array_equal(a, e)
  jaxpr = refimpl.make_jaxpr(lambda xs: lax.scan(body, 0.5, xs, unroll=unroll))(xs)
  expected_unroll = 7 if unroll is True else (1 if unroll is False else unroll)
  assert _eqns(jaxpr, "scan")[0].params["unroll"] == expected_unroll


def test_scan_argument_errors():
  with pytest.raises(TypeError, match="lax.scan: f argument should be a callable."):
    lax.scan(0, 0, jnp.arange(3))
  with pytest.raises(ValueError, match="scan got value with no leading axis to scan over: 0, 1"):
    lax.scan(lambda c, x: (c, x), 0, [0, 1])
  with pytest.raises(ValueError, match=re.escape(
      "scan got `length` argument of 4 which disagrees with leading axis sizes [3].")):
    lax.scan(lambda c, x: (c, x), 0, jnp.arange(3), length=4)
  with pytest.raises(ValueError, match="scan got values with different leading axis sizes: 3, 2."):
    lax.scan(lambda c, x: (c, x), 0, (jnp.arange(3), jnp.arange(2)))
  with pytest.raises(ValueError, match="scan got no values to scan over and `length` not "
                     "provided."):
    lax.scan(lambda c, x: (c, x), 0, None)
  with pytest.raises(ValueError, match="`unroll` must be a `bool` or a non-negative `int`."):
    lax.scan(lambda c, x: (c, x), 0, jnp.arange(3), unroll=-1)
  with pytest.raises(TypeError, match=re.escape("scan body output must be a pair, got "
                                                "float32[].")):
    lax.scan(lambda c, x: jnp.float32(0.), 0, jnp.arange(5.))


def test_traced_length_is_a_concretization_error():
  with pytest.raises(refimpl.errors.ConcretizationTypeError,
                     match="The `length` argument to `scan` expects a concrete `int`"):
    refimpl.jit(lambda n: lax.scan(lambda c, _: (c, c), 0, length=n))(3)


def test_carry_type_mismatch_names_the_leaf():
  def body(carry, x):
    return {"a": carry["a"], "b": jnp.zeros(3)}, x
  with pytest.raises(TypeError) as err:
    lax.scan(body, {"a": 0., "b": jnp.zeros(2)}, jnp.arange(2.))
  assert str(err.value) == (
      "scan body function carry input and carry output must have equal types (e.g. "
      "shapes and dtypes of arrays), but they differ:\n\n"
      "The input carry component carry['b'] has type float32[2] but the corresponding "
      "output carry component has type float32[3], so the shapes do not match.\n\n"
      "Revise the function so that all output types (e.g. shapes and dtypes) match the "
      "corresponding input types.")


def test_carry_dtype_mismatch_lists_each_leaf():
  with pytest.raises(TypeError, match=re.escape(
      "  * the input carry component c[0] has type int32[] but the corresponding output "
      "carry component has type float32[], so the dtypes do not match;\n")):
    lax.scan(lambda c, x: ((x, x * 2), x), (jnp.int32(0), jnp.zeros(2)), jnp.arange(2.))


def test_carry_structure_mismatch():
  with pytest.raises(TypeError, match="scan body function carry input and carry output must "
                     "have the same pytree structure"):
    lax.scan(lambda c, x: ((c, c), x), 0., jnp.arange(2.))


# --- printing ---------------------------------------------------------------------

def test_func11_values():
  """The seeds' example (its jaxpr is checked by the seed check
  `scan_func11_jaxpr`): the carry sums arr * ones + extra, ys are the
  carries before each step."""
  def func11(arr, extra):
    ones = jnp.ones(arr.shape)

    def body(carry, aelems):
      ae1, ae2 = aelems
      return (carry + ae1 * ae2 + extra, carry)
    return lax.scan(body, 0., (arr, ones))
  carry, ys = func11(jnp.arange(16), 5.)
  assert _np(carry) == sum(range(16)) + 16 * 5.
  np.testing.assert_array_equal(ys[:3], [0., 5., 11.])


def test_closed_over_tracer_becomes_a_const_operand():
  def f(w, xs):
    return lax.scan(lambda c, x: (c * w + x, None), 0., xs)[0]
  eqn, = _eqns(refimpl.make_jaxpr(f)(2., jnp.ones(3)), "scan")
  assert eqn.params["num_consts"] == 1 and eqn.params["num_carry"] == 1
  assert len(eqn.params["jaxpr"].jaxpr.constvars) == 0


# --- Python-loop definitions ---------------------------------------------------------

@given(S.bounded_arrays(np.float32, S.shapes(1, 3, min_side=1), 1.0), st.booleans())
def test_scan_equals_the_python_loop(xs, reverse):
  body = lambda c, x: (c * 0.5 + jnp.sin(x), c + x)
  init = jnp.zeros(xs.shape[1:])
  actual = lax.scan(body, init, xs, reverse=reverse)
  expected = _python_scan(body, init, xs, reverse)
  for a, e in zip(actual, expected):
    np.testing.assert_allclose(a, e, rtol=1e-6, atol=1e-6)


@given(st.integers(-3, 5), st.integers(-3, 8))
def test_fori_loop_equals_the_python_loop(lower, upper):
  body = lambda i, x: x * 2 + i
  expected = 1
  for i in range(lower, upper):
    expected = body(i, expected)
  assert _np(lax.fori_loop(lower, upper, body, 1)) == expected
  traced = refimpl.jit(lambda lo, hi: lax.fori_loop(lo, hi, body, 1))(lower, upper)
  assert _np(traced) == expected


# --- fori_loop ---------------------------------------------------------------------

def test_fori_loop_static_bounds_scan_over_index_and_value():
  jaxpr = refimpl.make_jaxpr(lambda x: lax.fori_loop(0, 10, lambda i, x: x + i, x))(0)
  eqn, = _eqns(jaxpr, "scan")
  assert eqn.params["length"] == 10 and eqn.params["num_carry"] == 2
  assert not _eqns(jaxpr, "while")


def test_fori_loop_traced_bounds_loop_with_while():
  f = lambda n: lax.fori_loop(0, n, lambda i, x: x + i, 0)
  jaxpr = refimpl.make_jaxpr(f)(10)
  assert _eqns(jaxpr, "while") and not _eqns(jaxpr, "scan")
  assert _np(refimpl.jit(f)(10)) == 45


def test_fori_loop_errors():
  with pytest.raises(TypeError, match="lax.fori_loop: body_fun argument should be callable."):
    lax.fori_loop(0, 3, None, 0)
  with pytest.raises(TypeError, match="lower and upper arguments to fori_loop must have equal "
                     "types, got int32 and float32"):
    lax.fori_loop(jnp.int32(0), jnp.float32(3), lambda i, x: x, 0)
  with pytest.raises(ValueError, match="Can only use `unroll` in `fori_loop` if the loop "
                     "bounds are statically known."):
    refimpl.jit(lambda n: lax.fori_loop(0, n, lambda i, x: x, 0, unroll=2))(3)


def test_fori_loop_weak_bound_takes_the_other_bounds_type():
  assert _np(lax.fori_loop(jnp.int16(1), 4, lambda i, x: x + i.astype(jnp.int32), 0)) == 6


def test_reverse_mode_of_dynamic_fori_loop_raises_jaxs_error():
  f = refimpl.jit(lambda x, n: lax.fori_loop(0, n, lambda i, c: c * x, 1.))
  _, t = refimpl.jvp(lambda x: f(x, 3), (2.,), (1.,))
  assert _np(t) == 12.
  with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for "
                     "lax.while_loop or lax.fori_loop with dynamic start/stop values."):
    refimpl.grad(lambda x: f(x, 3))(2.)


def test_grad_of_static_fori_loop():
  f = lambda x: lax.fori_loop(0, 3, lambda i, c: c * x + i, 1.)
  # c3 = x^3 + x + 2 (c1 = x, c2 = x^2 + 1, c3 = x^3 + x + 2)
  assert np.isclose(refimpl.grad(f)(2.), 3 * 4. + 1)


# --- map -----------------------------------------------------------------------------

@pytest.mark.parametrize("batch_size", [None, 1, 2, 3, 5])
def test_map_matches_the_loop(batch_size):
  xs = {"a": jnp.arange(12.).reshape(4, 3), "b": jnp.arange(4.)}
  f = lambda x: jnp.sum(x["a"]) * x["b"]
  actual = lax.map(f, xs, batch_size=batch_size)
  np.testing.assert_allclose(actual, [f({"a": xs["a"][i], "b": xs["b"][i]}) for i in range(4)])


def test_map_with_batch_size_traces_the_batch_and_the_remainder():
  shapes = []

  def f(x):
    shapes.append(x.shape)
    return x + 1
  y = lax.map(f, jnp.ones((10, 3, 4)), batch_size=3)
  assert shapes == [(3, 4), (3, 4)] and y.shape == (10, 3, 4)


# --- associative_scan -------------------------------------------------------------

@given(S.bounded_arrays(np.float32, S.shapes(1, 3), 2.0), st.data())
def test_associative_scan_matches_numpy(x, data):
  axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
  reverse = data.draw(st.booleans())
  for fn, ufunc in [(lax.add, np.add), (lax.mul, np.multiply), (lax.max, np.maximum)]:
    expected = np.flip(ufunc.accumulate(np.flip(x, axis), axis), axis) if reverse else \
        ufunc.accumulate(x, axis)
    actual = lax.associative_scan(fn, x, reverse=reverse, axis=axis)
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)


def test_associative_scan_docstring_examples_and_booleans():
  np.testing.assert_array_equal(lax.associative_scan(jnp.add, jnp.arange(0, 4)), [0, 1, 3, 6])
  np.testing.assert_array_equal(lax.associative_scan(jnp.add, jnp.arange(0, 4), reverse=True),
                                [6, 6, 5, 3])
  bools = jnp.array([False, False, True, False, False])
  np.testing.assert_array_equal(lax.associative_scan(jnp.logical_or, bools),
                                [False, False, True, True, True])


def test_associative_scan_of_a_pytree():
  mats = jnp.arange(1., 17.).reshape(4, 2, 2) / 10
  prods = lax.associative_scan(jnp.matmul, mats)
  expected = [mats[0]]
  for m in mats[1:]:
    expected.append(expected[-1] @ m)
  np.testing.assert_allclose(prods, np.stack(expected), rtol=1e-6)
  a, b = lax.associative_scan(lambda x, y: (x[0] + y[0], x[1] * y[1]),
                              (jnp.arange(5.), jnp.arange(1., 6.)))
  np.testing.assert_array_equal(a, np.cumsum(np.arange(5.)))
  np.testing.assert_array_equal(b, np.cumprod(np.arange(1., 6.)))


def test_associative_scan_errors():
  with pytest.raises(TypeError, match="lax.associative_scan: fn argument should be callable."):
    lax.associative_scan(1, jnp.arange(3))
  with pytest.raises(ValueError, match="Array inputs to associative_scan must have the same "
                     "first dimension."):
    lax.associative_scan(lambda a, b: a, (jnp.arange(3), jnp.arange(4)))


def test_cumulative_jvps_differentiate_associative_scan():
  x = jnp.array([1., 2., 3., 4.])
  _, t = refimpl.jvp(lambda x: lax.cumprod(x), (x,), (jnp.ones(4),))
  np.testing.assert_allclose(t, [1., 3., 11., 50.])
  jaxpr = refimpl.make_jaxpr(lambda x: refimpl.jvp(lax.cummax, (x,), (x,)))(x)
  assert _eqns(jaxpr, "pad") and not _eqns(jaxpr, "cummax")


# --- transformations ----------------------------------------------------------------

def _recurrence(w, xs):
  def body(c, x):
    c = jnp.sin(c * w) + x * w
    return c, c * x
  carry, ys = lax.scan(body, 1.0, xs)
  return carry + jnp.sum(ys)


def _recurrence_unrolled(w, xs):
  c, total = 1.0, 0.
  for x in xs:
    c = jnp.sin(c * w) + x * w
    total = total + c * x
  return c + total


@given(st.floats(-1.5, 1.5), S.bounded_arrays(np.float32, st.integers(0, 5).map(lambda n: (n,)),
                                              1.0))
def test_grad_through_scan_equals_grad_through_the_unrolled_loop(w, xs):
  actual = refimpl.grad(_recurrence, (0, 1))(w, xs)
  expected = refimpl.grad(_recurrence_unrolled, (0, 1))(w, xs)
  for a, e in zip(actual, expected):
    np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5)


def test_jvp_matches_the_unrolled_loop():
  xs = jnp.arange(1., 5.) / 3
  actual = refimpl.jvp(_recurrence, (0.7, xs), (1.0, jnp.ones(4)))
  expected = refimpl.jvp(_recurrence_unrolled, (0.7, xs), (1.0, jnp.ones(4)))
  np.testing.assert_allclose(actual, expected, rtol=1e-6)


def test_carry_tangent_fixpoint():
  """The carry starts as a constant: its tangent is zero until the body adds w."""
  def f(w):
    return lax.scan(lambda c, x: ((c[0] * x + w, c[1] + c[0]), None),
                    (0., 0.), jnp.arange(1., 4.))[0]
  _, t = refimpl.jvp(f, (2.,), (1.,))
  # c0: w, 2w + w = 3w, 3(3w) + w = 10w; c1 sums c0 before each update: 0 + w + 3w
  np.testing.assert_allclose(t, (10., 4.))
  np.testing.assert_allclose(refimpl.grad(lambda w: sum(f(w)))(2.), 14.)


def test_second_order_derivatives():
  check_grads(_recurrence, [np.float64(0.7), np.linspace(0., 1., 4)], order=2)


def test_reverse_mode_saves_residuals_by_partial_evaluation():
  """grad is a forward scan that also outputs the residuals and a reverse scan
  of the transposed body; the loop-invariant residual (cos w) is computed
  once outside the loop and xs are passed as they are, not copied."""
  def f(w, xs):
    return jnp.sum(lax.scan(lambda c, x: (c * jnp.sin(w) + x, c * x), 1., xs)[1])
  jaxpr = refimpl.make_jaxpr(refimpl.grad(f))(0.5, jnp.arange(3.))
  forward, backward = _eqns(jaxpr, "scan")
  assert not forward.params["reverse"] and backward.params["reverse"]
  assert _eqns(jaxpr, "sin") and _eqns(jaxpr, "cos")   # hoisted: outside the loops
  assert not _eqns(backward.params["jaxpr"], "cos") and not _eqns(backward.params["jaxpr"], "sin")
  assert jaxpr.jaxpr.invars[1] in backward.invars     # xs forwarded as a residual
  assert backward.params["linear"][backward.params["num_consts"]:][:2] == (True, True)


def test_vjp_is_the_transpose_of_the_jvp():
  def f(w, xs):
    return lax.scan(lambda c, x: (c * w + jnp.cos(x), (c * x, w * x)), w, xs, reverse=True)
  check_grads(f, [np.float64(0.3), np.linspace(-1., 1., 5)], order=1)


def test_linear_transpose_of_a_scan():
  xs = jnp.arange(1., 4.)
  f = lambda v: lax.scan(lambda c, x: (c + x * v, c), 0., xs)
  transpose = refimpl.linear_transpose(f, 1.)
  ct, = transpose((1., jnp.ones(3)))
  # carry = 6v, ys = (0, v, 3v): d<ct, f(v)>/dv = 6 + 0 + 1 + 3
  assert np.isclose(ct, 10.)


@pytest.mark.parametrize("in_axes", [(0, None, None), (None, 0, None), (None, None, 1),
                                     (0, 0, 2), (None, None, 0), (1, None, None)])
def test_vmap_of_scan_matches_the_stacked_loop(in_axes):
  """Batched consts, carries and xs (batch axis anywhere, scan axis first)."""
  def f(w, c0, xs):
    return lax.scan(lambda c, x: (jnp.sin(c) * w + x, c * x), c0, xs)
  rng = np.random.default_rng(0)
  members = [[rng.standard_normal(2).astype(np.float32),
              rng.standard_normal(2).astype(np.float32),
              rng.standard_normal((4, 2)).astype(np.float32)] for _ in range(3)]
  shared = members[0]
  for m in members:   # unbatched arguments are shared by every member
    m[:] = [a if ax is not None else s for a, s, ax in zip(m, shared, in_axes)]
  batched = [np.stack([m[i] for m in members], ax) if ax is not None else shared[i]
             for i, ax in enumerate(in_axes)]
  actual = refimpl.vmap(f, in_axes)(*batched)
  outs = [f(*m) for m in members]
  expected = [np.stack([o[k] for o in outs]) for k in range(2)]
  for a, e in zip(actual, expected):
    np.testing.assert_allclose(a, e, rtol=1e-6, atol=1e-6)


def test_vmap_carry_batching_fixpoint():
  """The carry starts unbatched and becomes batched through a batched const."""
  f = lambda w: lax.scan(lambda c, x: (c + w * x, c), 0., jnp.arange(3.))
  carry, ys = refimpl.vmap(f)(jnp.array([1., 2.]))
  np.testing.assert_array_equal(carry, [3., 6.])
  np.testing.assert_array_equal(ys, [[0., 0., 1.], [0., 0., 2.]])


def test_jit_of_scan_and_of_its_gradient():
  xs = jnp.arange(1., 5.) / 3
  np.testing.assert_allclose(refimpl.jit(_recurrence)(0.7, xs), _recurrence(0.7, xs))
  np.testing.assert_allclose(refimpl.jit(refimpl.grad(_recurrence))(0.7, xs),
                             refimpl.grad(_recurrence_unrolled)(0.7, xs), rtol=1e-6)


def test_nested_scans():
  def f(w, xss):
    def outer(c, xs):
      inner_c, ys = lax.scan(lambda d, x: (d * w + x, d), c, xs)
      return inner_c, jnp.sum(ys)
    return lax.scan(outer, 0., xss)

  def f_unrolled(w, xss):
    c, outs = 0., []
    for xs in xss:
      total = 0.
      for x in xs:
        total = total + c
        c = c * w + x
      outs.append(total)
    return c, jnp.stack(outs)
  xss = jnp.arange(6.).reshape(2, 3) / 6
  for a, e in zip(f(0.9, xss), f_unrolled(0.9, xss)):
    np.testing.assert_allclose(a, e, rtol=1e-6)
  g = lambda w: jnp.sum(f(w, xss)[1]) + f(w, xss)[0]
  g_unrolled = lambda w: jnp.sum(f_unrolled(w, xss)[1]) + f_unrolled(w, xss)[0]
  np.testing.assert_allclose(refimpl.grad(g)(0.9), refimpl.grad(g_unrolled)(0.9), rtol=1e-6)
  np.testing.assert_allclose(refimpl.vmap(refimpl.grad(g))(jnp.array([0.5, 0.9])),
                             [refimpl.grad(g_unrolled)(0.5), refimpl.grad(g_unrolled)(0.9)],
                             rtol=1e-6)


def test_scan_inside_grad_inside_vmap_and_grad_of_vmap():
  xs = jnp.arange(1., 5.) / 3
  ws = jnp.array([0.2, 0.7, 1.1])
  expected = [refimpl.grad(_recurrence_unrolled)(w, xs) for w in ws]
  np.testing.assert_allclose(refimpl.vmap(refimpl.grad(_recurrence), (0, None))(ws, xs),
                             expected, rtol=1e-5)
  total = lambda ws: jnp.sum(refimpl.vmap(_recurrence, (0, None))(ws, xs))
  np.testing.assert_allclose(refimpl.grad(total)(ws), expected, rtol=1e-5)
