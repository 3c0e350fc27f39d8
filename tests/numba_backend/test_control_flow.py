"""The numba backend's cond/switch, while and scan lowerings agree with the
reference: one jitted program per dtype runs every construct, on the
reference and on the numba backend, and every result is compared bit for
bit (NaNs equal to NaNs, the sign of zero compared). Hypothesis varies the
trip counts (0 included), the branch index (out of range included) and the
values; the programs are compiled once per dtype and rank."""

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import dtypes, lax
from conformance import strategies as cst
from numba_backend.lower import Lowering

pytest.importorskip("numba")

SETTINGS = settings(max_examples=15, deadline=None)


@pytest.fixture(autouse=True)
def checked_float32_functions():
  """The loops here are compared bit for bit: float32 exp and tanh by the
  checked functions (the reference's bits), not the float32 ones (within an
  ulp: test_float32.py)."""
  with mock.patch.object(Lowering, "float32_functions", False):
    yield


def assert_same(reference, backend):
  for r, b in zip(reference, backend):
    r, b = np.asarray(r), np.asarray(b)
    assert (r.dtype, r.shape) == (b.dtype, b.shape)
    np.testing.assert_array_equal(b, r)
    if dtypes.is_inexact(r.dtype):
      np.testing.assert_array_equal(np.signbit(b), np.signbit(r))


def check(program, *args):
  assert_same(jax.jit(program)(*args), jax.jit(program, backend="numba")(*args))


def program(xs, y, n):
  """Every construct on one dtype: xs has a leading axis (the scan length),
  y is a scalar, n an int32 (trip count and branch index)."""
  one = lax.convert_element_type(1, xs.dtype)

  def step(carry, x):
    c, s = carry
    return (c * y + x, s + one), (c - x, x * s)

  (c, s), (ys, zs) = lax.scan(step, (xs[0] * 0, y), xs)
  (cr, _), (ysr, _) = lax.scan(step, (xs[0] * 0, y), xs, reverse=True)
  count, w = lax.while_loop(lambda s: s[0] < n, lambda s: (s[0] + 1, s[1] * y + one), (0, xs))
  f = lax.fori_loop(0, n, lambda i, a: a + y, y)
  b = lax.switch(n, [lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a - b], xs, y)
  k = lax.cond(n > 1, lambda a: (a, y), lambda a: (a * a, y + one), xs[0])
  m = jax.vmap(lambda v: lax.while_loop(lambda t: t[0] < v, lambda t: (t[0] + 1, t[1] * y),
                                        (0, y)))(lax.convert_element_type(xs[..., 0], np.int32)
                                                 if xs.ndim > 1 else n + xs.astype(np.int32) * 0)
  return c, s, ys, zs, cr, ysr, count, w, f, b, *k, *m


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16])
@SETTINGS
@given(data=st.data(), n=st.integers(-1, 4))
def test_constructs_agree(dtype, data, n):
  shape = data.draw(cst.shapes(min_dims=2, max_dims=2, min_side=1, max_side=3))
  if dtypes.is_inexact(dtype):
    xs = data.draw(cst.bounded_arrays(dtype, shape, bound=4.0))
  else:
    xs = data.draw(cst.small_integer_arrays(dtype, shape))
  y = data.draw(cst.arrays(dtype, ()))
  check(program, xs, y, np.int32(n))


@SETTINGS
@given(length=st.integers(0, 3))
def test_scan_of_rank_one_xs_and_empty_length(length):
  """x[i] of a rank-1 xs is a scalar; a zero-length scan returns init and empty ys."""
  xs = np.arange(length, dtype=np.float32) - 1.5

  def f(xs, init):
    return lax.scan(lambda c, x: (c * x, (c + x, x > c)), init, xs)

  check(f, xs, np.float32(2.0))


@SETTINGS
@given(data=st.data(), reverse=st.booleans())
def test_scan_ys_of_the_incoming_carry(data, reverse):
  """A y that is the carry the step received holds it, not the carry the step returns."""
  xs = data.draw(cst.bounded_arrays(np.float32, data.draw(cst.shapes(min_dims=1, max_dims=2,
                                                                      max_side=3)), bound=4.0))

  def f(xs):
    return lax.scan(lambda c, x: (c + x, (c, c * 2)), xs[0] * 0 if len(xs) else xs.sum(0), xs,
                    reverse=reverse)

  check(f, xs)


def test_batched_while_keeps_finished_rows():
  """A while whose predicate has axes (vmap of a loop) stops each row when its predicate fails."""
  def f(limits, x):
    return jax.vmap(lambda l, v: lax.while_loop(lambda s: s[0] < l,
                                                lambda s: (s[0] + 1, s[1] * 2.0),
                                                (0, v)))(limits, x)

  check(f, np.array([0, 3, 1, 5], np.int32), np.ones((4, 2), np.float32))


def test_bool_carries_and_branches():
  def f(p, n):
    out = lax.fori_loop(0, n, lambda i, q: ~q, p)
    return out, lax.cond(n > 2, lambda q: q, lambda q: ~q, p)

  for n in range(4):
    check(f, np.array([True, False]), np.int32(n))


@pytest.mark.parametrize("large", [False, True])
@SETTINGS
@given(data=st.data(), n=st.integers(0, 5), reverse=st.booleans())
def test_carries_written_into_arrays_of_their_own(large, data, n, reverse):
  """Loops whose new carries are fused loops' results, the old ones read
  elsewhere too (the scan's ys), write them into arrays made before the
  loop: small carries into one array each, copied into the carries' own
  arrays after each step; large ones (over 1024 elements in all) into two
  arrays per carry by turns. Each step reads the carries of the step before
  (both of them, and in its ys), never the array it writes. (The while's
  loop alone reads its carries: it writes over them.)"""
  shape = (17, 32) if large else data.draw(cst.shapes(min_dims=1, max_dims=2, min_side=1,
                                                      max_side=3))
  xs = data.draw(cst.bounded_arrays(np.float32, (n, *shape), bound=2.0))

  def f(xs, a, b):
    def step(carry, x):
      a, b = carry
      return (a * 0.5 + b, a - b * x), (a, b, a + b)
    carries, ys = lax.scan(step, (a, b), xs, reverse=reverse)
    w = lax.while_loop(lambda s: s[0] < n, lambda s: (s[0] + 1, s[2] * 0.5 + 1.0, s[1] - s[2]),
                       (0, a, b))
    return *carries, *ys, *w

  a, b = (data.draw(cst.bounded_arrays(np.float32, shape, bound=2.0)) for _ in range(2))
  check(f, xs, a, b)


def _step(kind):
  """A scan step (carry (a, b), x) whose new carry is computed in one fused
  loop reading the old carry at each element's own index, plus, by `kind`,
  a further use of the carry a that keeps the loop from writing a's new
  value over the old (`lower.writes_over`): a reduction after the loop, a
  y that is a itself, or a costly function in the loop; or ("product") a
  read by a matrix product before a costly loop that reads b alone (by
  the identity, so that each product and each sum is exact in any order,
  subnormal numbers included: the reference's BLAS, fusing a product into
  its sum, and the backend's loop, rounding it first and adding in another
  order, give the same bits)."""
  def step(carry, x):
    a, b = carry
    if kind == "product":
      m = jnp.eye(a.shape[-1], dtype=a.dtype)
      product = lax.dot_general(a, m, (((a.ndim - 1,), (0,)), ((), ())))
      return (lax.tanh(product) + b * x, b * 0.5), ()
    new_a = a * 0.5 + b * x
    if kind == "costly":
      new_a = new_a + lax.exp(a * 0.25)
    new_b = a - b
    ys = (a,) if kind == "y" else (a.sum(),) if kind == "read after" else ()
    return (new_a, new_b), ys
  return step


# kind: (whether a's new value is written over the old in the scan, in the while; b's)
_WRITTEN_OVER = {"over": (True, True, True), "read after": (False, False, True),
                 "y": (False, True, True), "costly": (False, False, False),
                 "product": (True, True, False)}


@pytest.mark.parametrize("kind", list(_WRITTEN_OVER))
@pytest.mark.parametrize("large", [False, True])
@SETTINGS
@given(data=st.data(), n=st.integers(0, 4))
def test_carries_written_over_where_their_loop_alone_reads_them(kind, large, data, n):
  """The new carry is written over the old one exactly where one fused loop
  reads the old one, at its own index; then the loops give the reference's
  values, and elsewhere (the old carry read after the loop, as a y, or by a
  loop that computes some elements twice) the old values stay readable."""
  from numba_backend.lower import writes_over
  shape = (40, 32) if large else data.draw(cst.shapes(min_dims=1, max_dims=2, min_side=1,
                                                      max_side=3))
  xs = data.draw(cst.bounded_arrays(np.float32, (n, *shape), bound=2.0))
  a, b = (data.draw(cst.bounded_arrays(np.float32, shape, bound=2.0)) for _ in range(2))
  a.flat[0] = 400.0   # (beyond the fast exp's range: the costly loop computes its block twice)

  def f(xs, a, b):
    carries, ys = lax.scan(_step(kind), (a, b), xs)
    w = lax.while_loop(lambda s: s[0] < n, lambda s: (s[0] + 1, *_step(kind)(s[1:], 1.5)[0]),
                       (0, a, b))
    return *carries, *ys, *w

  eqns = jax.make_jaxpr(f)(xs, a, b).jaxpr.eqns
  bodies = [(e.params["jaxpr"].jaxpr, 0, e.params["num_consts"]) for e in eqns
            if e.primitive.name == "scan"]
  bodies += [(e.params["body_jaxpr"].jaxpr, 1, e.params["body_nconsts"] + 1) for e in eqns
             if e.primitive.name == "while"]   # (a, b after the while's counter)
  assert len(bodies) == 2
  a_in_scan, a_in_while, b_over = _WRITTEN_OVER[kind]
  for (body, out, first), a_over in zip(bodies, [a_in_scan, a_in_while]):
    assert writes_over(body, out + 1, first + 1) == b_over
    assert writes_over(body, out, first) == a_over
  check(f, xs, a, b)
