"""Batching rules of the elementwise primitives not made by `naryop`
(refimpl/lax/elementwise.py): mul, clamp, select_n, convert_element_type,
bitcast_convert_type, reduce_precision. Every layout of batched, unbatched,
per-member-scalar and scalar operands against a loop over the members, the
batched programs' structure (`make_jaxpr`), and vmap with grad. The
conformance property (tests/test_conformance_vmap.py) runs the value cases."""

import numpy as np
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import lax
from conformance.batching import loop_over_batch

F32 = np.float32


def _primitives(jaxpr):
  return [eqn.primitive.name for eqn in jaxpr.jaxpr.eqns]


@st.composite
def _operand(draw, kind, shape, size, dtype=F32, bound=3):
  """An operand of one `kind`: 'scalar' (unbatched), 'full' (unbatched, of
  `shape`), 'bscalar' (one scalar per member) or 'bfull' (a batch of `shape`,
  batch axis drawn). Returns (value, in_axis)."""
  member = shape if kind in ("full", "bfull") else ()
  batched = kind.startswith("b")
  full = (size, *member) if batched else member
  values = draw(st.lists(st.integers(-bound, bound), min_size=int(np.prod(full)),
                         max_size=int(np.prod(full))))
  value = np.array(values).reshape(full).astype(dtype)
  if not batched:
    return value, None
  axis = draw(st.integers(0, len(member)))
  return np.moveaxis(value, 0, axis), axis


_BOUND_KINDS = st.sampled_from(["scalar", "full", "bscalar", "bfull"])


# --- clamp ------------------------------------------------------------------------------

@given(st.data())
def test_clamp_batched_in_any_layout_matches_loop(data):
  shape = data.draw(st.sampled_from([(), (2,), (2, 3)]))
  size = data.draw(st.integers(1, 3))
  kinds = data.draw(st.tuples(_BOUND_KINDS, st.sampled_from(["full", "bfull"]), _BOUND_KINDS))
  if not any(k.startswith("b") for k in kinds):
    kinds = (kinds[0], "bfull", kinds[2])
  (lo, lo_ax), (x, x_ax), (hi, hi_ax) = [data.draw(_operand(k, shape, size)) for k in kinds]
  axes = (lo_ax, x_ax, hi_ax)
  out = jax.vmap(lax.clamp, axes)(lo, x, hi)
  expected = loop_over_batch(lambda lo, x, hi: np.minimum(np.maximum(x, lo), hi), axes, lo, x, hi)
  np.testing.assert_array_equal(out, expected)


def test_clamp_with_scalar_bounds_keeps_the_batch_axis_in_place():
  x = np.arange(12, dtype=F32).reshape(3, 4)
  f = jax.vmap(lambda x: lax.clamp(F32(2), x, F32(8)), in_axes=1, out_axes=1)
  jaxpr = jax.make_jaxpr(f)(x)
  assert _primitives(jaxpr) == ["clamp"]
  np.testing.assert_array_equal(f(x), np.clip(x, 2, 8))


def test_clamp_with_per_member_bounds_broadcasts_them_along_the_batch_axis():
  x = np.arange(12, dtype=F32).reshape(3, 4)
  lo, hi = np.array([0, 5, 9], F32), np.array([3, 6, 10], F32)
  f = jax.vmap(lax.clamp)
  assert _primitives(jax.make_jaxpr(f)(lo, x, hi)) == [
      "broadcast_in_dim", "broadcast_in_dim", "clamp"]
  np.testing.assert_array_equal(f(lo, x, hi), np.clip(x, lo[:, None], hi[:, None]))


def test_per_example_gradients_through_clamp():
  xs = np.array([-2.0, 0.5, 3.0], F32)
  his = np.array([1.0, 1.0, 2.0], F32)
  grads = jax.vmap(jax.grad(lambda x, hi: lax.clamp(F32(0), x, hi) * x), (0, 0))(xs, his)
  # d/dx of clamp(0, x, hi) * x: 0 below 0, 2x inside, hi above
  np.testing.assert_allclose(grads, [0.0, 1.0, 2.0])
  total = jax.grad(lambda xs: jnp.sum(jax.vmap(lambda x, hi: lax.clamp(F32(0), x, hi) * x)(
      xs, his)))(xs)
  np.testing.assert_allclose(total, grads)


# --- select_n ---------------------------------------------------------------------------

@given(st.data())
def test_select_n_batched_in_any_layout_matches_loop(data):
  shape = data.draw(st.sampled_from([(), (2,), (2, 3)]))
  size = data.draw(st.integers(1, 3))
  n = data.draw(st.integers(1, 3))
  which_kind = data.draw(_BOUND_KINDS)
  case_kinds = data.draw(st.lists(st.sampled_from(["full", "bfull"]), min_size=n, max_size=n))
  if which_kind[0] != "b" and "bfull" not in case_kinds:
    case_kinds[0] = "bfull"
  boolean = n == 2 and data.draw(st.booleans())
  which, which_ax = data.draw(_operand(which_kind, shape, size, np.int32, bound=n - 1).map(
      lambda w: (abs(w[0]), w[1])))
  if boolean:
    which = which.astype(bool)
  cases = [data.draw(_operand(k, shape, size, F32, bound=100)) for k in case_kinds]
  axes = (which_ax, *(ax for _, ax in cases))
  args = (which, *(c for c, _ in cases))
  out = jax.vmap(lax.select_n, axes)(*args)
  expected = loop_over_batch(
      lambda w, *cs: np.choose(np.broadcast_to(w, cs[0].shape).astype(int), cs), axes, *args)
  np.testing.assert_array_equal(out, expected)


def test_select_n_with_scalar_predicate_and_cases_on_one_axis_is_one_select():
  x, y = np.ones((3, 4), F32), np.zeros((3, 4), F32)
  f = jax.vmap(lambda x, y: lax.select(True, x, y), in_axes=1, out_axes=1)
  assert _primitives(jax.make_jaxpr(f)(x, y)) == ["select_n"]
  np.testing.assert_array_equal(f(x, y), x)


def test_select_n_moves_cases_batched_elsewhere_to_the_first_case_axis():
  x, y = np.arange(12, dtype=F32).reshape(3, 4), -np.arange(12, dtype=F32).reshape(4, 3)
  f = jax.vmap(lambda x, y: lax.select_n(np.bool_(True), x, y), in_axes=(1, 0), out_axes=1)
  assert _primitives(jax.make_jaxpr(f)(x, y)) == ["transpose", "select_n"]
  np.testing.assert_array_equal(f(x, y), y.T)


def test_select_n_with_per_member_predicate_broadcasts_only_it():
  pred = np.array([True, False, True])
  x, y = np.ones((3, 4), F32), np.zeros((3, 4), F32)
  f = jax.vmap(lax.select)
  assert _primitives(jax.make_jaxpr(f)(pred, x, y)) == ["broadcast_in_dim", "select_n"]
  np.testing.assert_array_equal(f(pred, x, y), np.where(pred[:, None], x, y))


def test_nested_vmap_of_where_with_different_in_axes():
  x = np.arange(6, dtype=F32).reshape(2, 3)
  y = np.arange(6, dtype=F32).reshape(3, 2) * 10
  f = jax.vmap(jax.vmap(lambda x, y: jnp.where(x > 2, x, y), (0, 0)), (1, 0))
  expected = np.array([[np.where(x[j, i] > 2, x[j, i], y[i, j]) for j in range(2)]
                       for i in range(3)])
  np.testing.assert_array_equal(f(x, y), expected)


def test_per_example_gradients_through_where():
  xs = np.array([-1.0, 2.0, 3.0], F32)
  loss = lambda x: jnp.where(x > 0, x ** 2, -x)
  np.testing.assert_allclose(jax.vmap(jax.grad(loss))(xs), [-1.0, 4.0, 6.0])
  np.testing.assert_allclose(jax.grad(lambda xs: jnp.sum(jax.vmap(loss)(xs)))(xs),
                             [-1.0, 4.0, 6.0])


# --- mul --------------------------------------------------------------------------------

def test_mul_broadcasts_like_the_other_binary_ops_and_keeps_out_dtype():
  x = np.arange(12, dtype=np.int32).reshape(3, 4)
  y = np.arange(3, dtype=np.int32)
  f = jax.vmap(lambda x, y: lax.mul(x, y, out_dtype=np.float32), (1, None))
  out = f(x, y)
  assert out.dtype == np.float32
  np.testing.assert_array_equal(out, (x * y[:, None]).T)
  np.testing.assert_array_equal(jax.vmap(lax.mul, (1, 1), 1)(x, x), x * x)
  assert _primitives(jax.make_jaxpr(jax.vmap(lax.mul, (1, 1), 1))(x, x)) == ["mul"]


def test_per_example_gradients_of_a_product():
  xs, ys = np.array([1.0, 2.0], F32), np.array([3.0, 5.0], F32)
  np.testing.assert_allclose(jax.vmap(jax.grad(lax.mul))(xs, ys), ys)
  np.testing.assert_allclose(jax.vmap(jax.grad(lax.mul, argnums=1), (0, None))(xs, F32(4)),
                             xs)


# --- casts ------------------------------------------------------------------------------

def test_casts_keep_the_batch_axis_in_place():
  x = np.array([[1.5, -2.5, 300.0], [0.1, 65504.0, 1e-8]], F32)
  for f, expected in [
      (lambda x: lax.convert_element_type(x, np.int8), np.array(
          [[lax.convert_element_type(v, np.int8) for v in row] for row in x])),
      (lambda x: lax.reduce_precision(x, 5, 10), x.astype(np.float16).astype(F32))]:
    g = jax.vmap(f, in_axes=1, out_axes=1)
    assert len(_primitives(jax.make_jaxpr(g)(x))) == 1
    np.testing.assert_array_equal(g(x), expected)


def test_bitcast_to_a_narrower_dtype_appends_each_members_pieces():
  x = np.array([[1.0, -2.0], [0.5, 3.0], [7.0, 8.0]], F32)
  out = jax.vmap(lambda x: lax.bitcast_convert_type(x, np.uint16), in_axes=1)(x)
  np.testing.assert_array_equal(out, np.ascontiguousarray(x.T).view(np.uint16).reshape(2, 3, 2))


def test_bitcast_to_a_wider_dtype_when_the_batch_axis_is_last():
  # each member is (2, 2) int16 -> (2,) int32; the batch axis (last) moves away
  x = np.arange(12, dtype=np.int16).reshape(2, 2, 3)
  f = jax.vmap(lambda m: lax.bitcast_convert_type(m, np.int32), in_axes=2)
  expected = np.stack([np.ascontiguousarray(x[..., i]).view(np.int32)[:, 0]
                       for i in range(3)])
  np.testing.assert_array_equal(f(x), expected)
  assert _primitives(jax.make_jaxpr(f)(x)) == ["transpose", "bitcast_convert_type"]
  g = jax.vmap(lambda m: lax.bitcast_convert_type(m, np.int32), in_axes=0)
  np.testing.assert_array_equal(g(np.moveaxis(x, 2, 0)), expected)
  assert _primitives(jax.make_jaxpr(g)(np.moveaxis(x, 2, 0))) == ["bitcast_convert_type"]
