"""Tests of refimpl/lax/parallel.py: the named-axis collectives under vmap
and pmap, against NumPy formulas across the mapped axis."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
from refimpl import lax
from conformance import strategies as S


def _eqns(jaxpr):
  return [e.primitive.name for e in jaxpr.jaxpr.eqns]


members = S.shapes(min_dims=1, max_dims=3, min_side=1, max_side=3).flatmap(
    lambda shape: S.small_integer_arrays(np.float32, shape))


@given(x=members)
def test_reductions_match_numpy(x):
  n = len(x)
  every = lambda v: np.broadcast_to(v, x.shape)
  vm = lambda f: jax.vmap(f, axis_name="i")(x)
  np.testing.assert_array_equal(vm(lambda v: lax.psum(v, "i")), every(x.sum(0)))
  np.testing.assert_allclose(vm(lambda v: lax.pmean(v, "i")), every(x.mean(0)), rtol=1e-6)
  np.testing.assert_array_equal(vm(lambda v: lax.pmax(v, "i")), every(x.max(0)))
  np.testing.assert_array_equal(vm(lambda v: lax.pmin(v, "i")), every(x.min(0)))
  np.testing.assert_array_equal(vm(lambda v: lax.axis_index("i")), np.arange(n))
  np.testing.assert_array_equal(vm(lambda v: v * lax.psum(1, "i")), x * n)
  assert vm(lambda v: lax.axis_size("i") + 0 * v).ravel()[0] == n


@given(x=members, data=st.data())
def test_gathers_and_permutations_match_numpy(x, data):
  n = len(x)
  axis = data.draw(st.integers(0, x.ndim - 1))
  vm = lambda f: jax.vmap(f, axis_name="i")(x)
  np.testing.assert_array_equal(vm(lambda v: lax.all_gather(v, "i", axis=axis)),
                                np.broadcast_to(np.stack(list(x), axis), (n,) * 1 + (
                                    np.stack(list(x), axis).shape)))
  if x.ndim > 1:
    tiled = np.concatenate(list(x), axis % (x.ndim - 1))
    np.testing.assert_array_equal(
        vm(lambda v: lax.all_gather(v, "i", axis=axis % (x.ndim - 1), tiled=True)),
        np.broadcast_to(tiled, (n,) + tiled.shape))
  perm = data.draw(st.permutations(range(n)))
  np.testing.assert_array_equal(vm(lambda v: lax.pshuffle(v, "i", perm)), x[list(perm)])
  source = data.draw(st.integers(0, n - 1))
  np.testing.assert_array_equal(vm(lambda v: lax.pbroadcast(v, "i", source)),
                                np.broadcast_to(x[source], x.shape))


def test_ppermute_sends_zeros_to_members_without_a_source():
  x = np.arange(1.0, 5.0, dtype=np.float32)
  out = jax.vmap(lambda v: lax.ppermute(v, "i", [(0, 2), (3, 0)]), axis_name="i")(x)
  np.testing.assert_array_equal(out, [4.0, 0.0, 1.0, 0.0])
  # an unbatched operand still gets zeros where nothing is sent
  out = jax.vmap(lambda v: lax.ppermute(np.float32(7), "i", [(0, 1)]), axis_name="i")(x)
  np.testing.assert_array_equal(out, [0.0, 7.0, 0.0, 0.0])


def test_psum_scatter_and_all_to_all():
  x = np.arange(16).reshape(4, 4)
  vm = lambda f: jax.vmap(f, axis_name="i")(x)
  np.testing.assert_array_equal(vm(lambda v: lax.psum_scatter(v, "i")), x.sum(0))
  np.testing.assert_array_equal(vm(lambda v: lax.psum_scatter(v, "i", tiled=True)),
                                x.sum(0)[:, None])
  np.testing.assert_array_equal(vm(lambda v: lax.all_to_all(v, "i", 0, 0)), x.T)
  np.testing.assert_array_equal(vm(lambda v: lax.pswapaxes(v, "i", 0)), x.T)
  y = np.arange(2 * 2 * 3).reshape(2, 2, 3)   # member k's block j lands at row j
  out = jax.vmap(lambda v: lax.all_to_all(v, "i", 0, 1), axis_name="i")(y)
  np.testing.assert_array_equal(out, np.stack([y[:, k].T for k in range(2)]))
  with pytest.raises(ValueError, match="requires the size of the mapped axis"):
    jax.vmap(lambda v: lax.all_to_all(v, "i", 0, 0), axis_name="i")(np.ones((3, 2)))


def test_psum_jaxpr_uses_a_positional_axis_as_jax():
  jaxpr = jax.make_jaxpr(jax.vmap(lambda v: lax.psum(v, "i"), axis_name="i"))(np.ones(3))
  assert _eqns(jaxpr) == ["psum", "broadcast_in_dim"]
  assert jaxpr.jaxpr.eqns[0].params["axes"] == (0,)


def test_psum_traced_inside_the_map_prints_its_name():
  texts = []

  def f(v):
    texts.append(str(jax.make_jaxpr(lambda u: lax.psum(u, "i"))(v)))
    return v
  jax.vmap(f, axis_name="i")(np.ones(2, np.float32))
  assert "psum[axes=('i',) axis_index_groups=None]" in texts[0]


def test_unbound_axis_names_raise_name_error():
  with pytest.raises(NameError, match="unbound axis name: i"):
    lax.psum(np.ones(3), "i")
  with pytest.raises(NameError, match="unbound axis name: i"):
    jax.jit(lambda x: lax.all_gather(x, "i"))(np.ones(3))
  with pytest.raises(NameError, match="unbound axis name: j"):
    jax.vmap(lambda x: lax.pmax(x, "j"), axis_name="i")(np.ones(3))
  with pytest.raises(NameError, match="unbound axis name: k"):
    jax.vmap(lambda x: lax.axis_index("k"), axis_name="i")(np.ones(3))
  with pytest.raises(NameError):
    lax.axis_size("i")


def test_axis_index_groups_not_supported_under_vmap():
  with pytest.raises(NotImplementedError, match="axis_index_groups"):
    jax.vmap(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1], [2, 3]]),
             axis_name="i")(np.arange(4.0))


X = np.arange(12.0, dtype=np.float32).reshape(3, 4)


def _nested(f):
  return jax.vmap(jax.vmap(f, axis_name="j"), axis_name="i")(X)


@pytest.mark.parametrize("axes, expected", [
    ("i", np.broadcast_to(X.sum(0), X.shape)),
    ("j", np.broadcast_to(X.sum(1)[:, None], X.shape)),
    (("i", "j"), np.full(X.shape, X.sum())),
    (("j", "i"), np.full(X.shape, X.sum())),
])
def test_nested_vmaps_with_two_names(axes, expected):
  np.testing.assert_array_equal(_nested(lambda v: lax.psum(v, axes)), expected)
  np.testing.assert_array_equal(_nested(jax.jit(lambda v: lax.psum(v, axes))), expected)


def test_nested_collectives_of_either_axis():
  np.testing.assert_array_equal(_nested(lambda v: lax.axis_index(("i", "j"))),
                                np.arange(12).reshape(3, 4))
  np.testing.assert_array_equal(_nested(lambda v: lax.pmax(v, "i")),
                                np.broadcast_to(X.max(0), X.shape))
  gathered = _nested(lambda v: lax.all_gather(v, "j"))
  np.testing.assert_array_equal(gathered, np.broadcast_to(X[:, None, :], (3, 4, 4)))
  gathered = _nested(lambda v: lax.all_gather(v, "i"))
  np.testing.assert_array_equal(gathered, np.broadcast_to(X.T[None], (3, 4, 3)))
  shifted = _nested(lambda v: lax.ppermute(v, "i", [(0, 1), (1, 2), (2, 0)]))
  np.testing.assert_array_equal(shifted, np.roll(X, 1, 0))
  # a vmap without a name in between passes the collective on
  out = jax.vmap(jax.vmap(lambda v: lax.psum(v, "i")), axis_name="i")(X)
  np.testing.assert_array_equal(out, np.broadcast_to(X.sum(0), X.shape))


def test_collective_inside_jit_inside_vmap():
  f = jax.jit(lambda v: v / lax.psum(v, "i"))
  x = np.arange(1.0, 5.0, dtype=np.float32)
  np.testing.assert_allclose(jax.vmap(f, axis_name="i")(x), x / x.sum())
  jaxpr = jax.make_jaxpr(jax.vmap(f, axis_name="i"))(x)
  inner = jaxpr.jaxpr.eqns[0].params["jaxpr"]
  assert "psum" in [e.primitive.name for e in inner.jaxpr.eqns]


def test_grad_of_psum_under_vmap():
  x = np.arange(1.0, 4.0, dtype=np.float32)
  # as JAX: psum transposes to psum, so each member's gradient counts every
  # member's use of the sum
  per_member = jax.vmap(jax.grad(lambda v: lax.psum(v * v, "i")), axis_name="i")(x)
  np.testing.assert_allclose(per_member, 2 * x * len(x))
  whole = jax.grad(lambda x: jax.vmap(lambda v: lax.psum(v * v, "i"), axis_name="i")(x).sum())
  np.testing.assert_allclose(whole(x), per_member)
  # the members' normalized values always sum to 1: zero total derivative
  normalized = jax.vmap(jax.grad(lambda v: v / lax.psum(v, "i")), axis_name="i")(x)
  np.testing.assert_allclose(normalized, np.zeros(3), atol=1e-7)
  with pytest.raises(NotImplementedError, match="'pmax' not implemented"):
    jax.vmap(jax.grad(lambda v: lax.pmax(v, "i")), axis_name="i")(x)


def test_transposes_of_gather_and_permute_under_vmap():
  x = np.arange(6.0, dtype=np.float32).reshape(3, 2)
  ct = np.arange(18.0, dtype=np.float32).reshape(3, 3, 2)
  vjp = lambda f: jax.vmap(lambda v, c: jax.vjp(f, v)[1](c)[0], axis_name="i")
  np.testing.assert_array_equal(vjp(lambda u: lax.all_gather(u, "i"))(x, ct), ct.sum(0))
  perm = [(0, 1), (1, 2), (2, 0)]
  np.testing.assert_array_equal(vjp(lambda u: lax.ppermute(u, "i", perm))(x, x),
                                np.roll(x, -1, 0))


# --- pmap: one device, so a map of one member; JAX's docstring examples under vmap ------------

def test_pmap_needs_one_device_per_member():
  with pytest.raises(ValueError, match="compiling computation that requires 4 logical devices, "
                     r"but only 1 XLA devices are available \(num_replicas=4\)"):
    jax.pmap(lambda x: x / lax.psum(x, "i"), axis_name="i")(np.arange(4.0))
  with pytest.raises(ValueError, match="requires 3 logical devices"):
    jax.pmap(lambda x, y: x + y, in_axes=(None, 1))(1.0, np.ones((2, 3)))
  with pytest.raises(ValueError, match="requires 2 logical devices"):
    jax.pmap(jax.pmap(lambda x: x, axis_name="cols"), axis_name="rows")(np.zeros((1, 2)))


def _normalize(x):
  return x / lax.psum(x, "i"), lax.psum(x, "i"), lax.pmean(x, "i")


def test_pmap_normalize():
  x = np.arange(4.0, dtype=np.float32)
  normed, total, mean = jax.vmap(_normalize, axis_name="i")(x)
  np.testing.assert_allclose(normed, [0.0, 1 / 6, 2 / 6, 3 / 6])
  np.testing.assert_allclose(total, 6.0)
  np.testing.assert_allclose(mean, 1.5)
  np.testing.assert_array_equal(jax.vmap(lambda x: lax.psum(x, "i"), axis_name="i")(
      np.arange(16).reshape(4, 4)), np.broadcast_to([24, 28, 32, 36], (4, 4)))
  one = np.array([[2.0, 3.0]], np.float32)
  for got, want in zip(jax.pmap(_normalize, axis_name="i")(one),
                       jax.vmap(_normalize, axis_name="i")(one)):
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got.shape, (1, 2))


def test_nested_pmap_rows_and_cols():
  f = jax.vmap(jax.vmap(lambda x: (lax.axis_index("rows"), lax.axis_index("cols")),
                        axis_name="cols"), axis_name="rows")
  rows, cols = f(np.zeros((4, 2)))
  np.testing.assert_array_equal(rows, [[0, 0], [1, 1], [2, 2], [3, 3]])
  np.testing.assert_array_equal(cols, [[0, 1], [0, 1], [0, 1], [0, 1]])

  def normalize(x):
    row_normed = x / lax.psum(x, "rows")
    col_normed = x / lax.psum(x, "cols")
    doubly_normed = x / lax.psum(x, ("rows", "cols"))
    return row_normed, col_normed, doubly_normed
  x = np.arange(8.0, dtype=np.float32).reshape((4, 2))
  a, b, c = jax.vmap(jax.vmap(normalize, axis_name="cols"), axis_name="rows")(x)
  np.testing.assert_allclose(a.sum(0), np.ones(2), rtol=1e-6)
  np.testing.assert_allclose(b.sum(1), np.ones(4), rtol=1e-6)
  np.testing.assert_allclose(c.sum(), 1.0, rtol=1e-6)
  one = np.array([[3.0]], np.float32)
  rows, cols = jax.pmap(jax.pmap(lambda x: (lax.axis_index("rows"), lax.axis_index("cols")),
                                 axis_name="cols"), axis_name="rows")(one)
  np.testing.assert_array_equal(rows, [[0]])
  np.testing.assert_array_equal(cols, [[0]])
  for out in jax.pmap(jax.pmap(normalize, axis_name="cols"), axis_name="rows")(one):
    np.testing.assert_array_equal(out, [[1.0]])


def test_pmap_static_broadcasted_argnums():
  f = jax.pmap(lambda x, n: lax.psum(x, "i") * n, axis_name="i",
               static_broadcasted_argnums=1)
  np.testing.assert_array_equal(f(np.array([3]), 2), [6])
  np.testing.assert_array_equal(f(np.array([3]), 3), [9])
  with pytest.raises(ValueError, match="requires 3 logical devices"):
    f(np.arange(3), 2)
