"""lax.stack/unstack, empty, broadcast_like, shape_as_value, index_take, scaled_dot,
ragged_dot(_general), stage, dce_sink, composite, platform_dependent and
with_sharding_constraint."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import lax
from conformance import strategies as S



# --- stack and unstack ---------------------------------------------------------------------

@given(data=st.data())
def test_stack_and_unstack_agree_with_numpy(data):
  shape = data.draw(S.shapes(max_dims=3, max_side=3))
  count = data.draw(st.integers(1, 3))
  xs = [data.draw(S.arrays(np.float32, shape)) for _ in range(count)]
  axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
  stacked = lax.stack(xs, axis)
  np.testing.assert_array_equal(stacked, np.stack(xs, axis))
  parts = lax.unstack(stacked, axis)
  assert isinstance(parts, tuple) and len(parts) == count
  for part, x in zip(parts, xs):
    np.testing.assert_array_equal(part, x)


def test_stack_and_unstack_under_jit_vmap_and_grad():
  x = jnp.arange(6.0).reshape(2, 3)
  assert "stack[axis=1]" in str(jax.make_jaxpr(lambda a, b: lax.stack([a, b], 1))(x, x))
  np.testing.assert_array_equal(jax.jit(lambda a: lax.stack([a, 2 * a], -1))(x),
                                np.stack([x, 2 * x], -1))
  batched = jax.vmap(lambda a, b: lax.stack([a, b], 0), in_axes=(1, None))(x, x[:, 0])
  np.testing.assert_array_equal(batched, np.stack([np.asarray(x).T, np.tile(x[:, 0], (3, 1))], 1))
  parts = jax.vmap(lambda a: lax.unstack(a, 1), in_axes=1)(jnp.arange(24.0).reshape(2, 3, 4))
  np.testing.assert_array_equal(parts[2], np.arange(24.0).reshape(2, 3, 4)[:, :, 2].T)
  np.testing.assert_array_equal(jax.grad(lambda a: (lax.stack([a, 3 * a], 1) ** 2).sum())(x),
                                20 * np.asarray(x))
  weights = np.arange(3.0)
  np.testing.assert_array_equal(
      jax.grad(lambda a: sum(w * p.sum() for w, p in zip(weights, lax.unstack(a, 1))))(x),
      np.tile(weights, (2, 1)))


def test_stack_errors_and_weak_types():
  with pytest.raises(ValueError, match="non-empty"):
    lax.stack([])
  with pytest.raises(TypeError, match="equal shapes"):
    lax.stack([jnp.ones(2), jnp.ones(3)])
  with pytest.raises(TypeError):
    lax.stack([jnp.ones(2), jnp.ones(2, jnp.int32)])
  with pytest.raises(ValueError):
    lax.stack([jnp.ones(2)], axis=2)
  with pytest.raises(ValueError):
    lax.unstack(jnp.ones(()))
  assert lax.stack([lax.stage(1.0), lax.stage(2.0)]).weak_type
  assert not lax.stack([jnp.float32(1), lax.stage(2.0)]).weak_type


# --- shapes and indexing -------------------------------------------------------------------

def test_empty_broadcast_like_shape_as_value():
  e = lax.empty((2, 3), jnp.float16)
  assert e.shape == (2, 3) and e.dtype == jnp.float16
  assert lax.empty(4, np.int64).dtype == jnp.int32   # canonicalized (x64 off)
  np.testing.assert_array_equal(lax.broadcast_like(jnp.arange(3), jnp.zeros((2, 3))),
                                [[0, 1, 2], [0, 1, 2]])
  assert lax.broadcast_like(jnp.ones((2, 1)), jnp.zeros((4, 2, 5))).shape == (4, 2, 5)
  with pytest.raises(ValueError, match="Incompatible shapes"):
    lax.broadcast_like(jnp.ones(3), jnp.zeros((2, 4)))
  value = lax.shape_as_value((2, 5, 1))
  np.testing.assert_array_equal(value, [2, 5, 1])
  assert value.dtype == jnp.int32


@given(data=st.data())
def test_index_take_agrees_with_numpy_indexing(data):
  shape = data.draw(S.shapes(min_dims=2, max_dims=3, min_side=1, max_side=4))
  src = data.draw(S.arrays(np.float32, shape))
  axes = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1,
                                        max_size=2))))
  n = data.draw(st.integers(0, 4))
  idxs = [np.asarray(data.draw(st.lists(st.integers(-2 * shape[a], 2 * shape[a]),
                                        min_size=n, max_size=n)), np.int32) for a in axes]
  out = lax.index_take(src, idxs, axes)
  wrapped = [i % shape[a] for i, a in zip(idxs, axes)]
  rest = [d for d in range(len(shape)) if d not in axes]
  expected = np.moveaxis(src, axes + tuple(rest), range(len(shape)))[tuple(wrapped)]
  np.testing.assert_array_equal(out, expected)


# --- ragged dot ------------------------------------------------------------------------------

def _ragged_dot_loop(lhs, rhs, group_sizes):
  out, start = np.zeros((lhs.shape[0], rhs.shape[2]), np.float64), 0
  for i, size in enumerate(group_sizes):
    out[start:start + size] = lhs[start:start + size].astype(np.float64) @ rhs[i]
    start += size
  return out


@given(data=st.data())
def test_ragged_dot_multiplies_each_group_by_its_matrix(data):
  m, k, n = (data.draw(st.integers(0, 4)) for _ in range(3))
  g = data.draw(st.integers(1, 3))
  cuts = sorted(data.draw(st.lists(st.integers(0, m), min_size=g, max_size=g)))
  sizes = np.diff([0, *cuts])   # summing to at most m: the rows past the sum give zeros
  rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
  lhs = rng.normal(size=(m, k)).astype(np.float32)
  rhs = rng.normal(size=(g, k, n)).astype(np.float32)
  out = lax.ragged_dot(lhs, rhs, np.asarray(sizes, np.int32))
  assert out.shape == (m, n) and out.dtype == jnp.float32
  np.testing.assert_allclose(out, _ragged_dot_loop(lhs, rhs, sizes), rtol=1e-5, atol=1e-5)


def test_ragged_dot_general_modes():
  rng = np.random.default_rng(1)
  lhs = rng.normal(size=(5, 4)).astype(np.float32)
  rhs = rng.normal(size=(4, 3)).astype(np.float32)
  sizes = np.array([1, 3], np.int32)
  contracting = lax.RaggedDotDimensionNumbers((([1], [0]), ([], [])), [1], [])
  out = lax.ragged_dot_general(lhs, rhs, sizes, contracting)
  np.testing.assert_allclose(out, np.stack([lhs[:, :1] @ rhs[:1], lhs[:, 1:] @ rhs[1:]]),
                             rtol=1e-5, atol=1e-6)
  lb = rng.normal(size=(2, 5, 4)).astype(np.float32)
  rb = rng.normal(size=(2, 3, 4, 3)).astype(np.float32)
  batched_sizes = np.array([[1, 4, 0], [2, 2, 1]], np.int32)
  batched = lax.RaggedDotDimensionNumbers((([2], [2]), ([0], [0])), [1], [1])
  out = lax.ragged_dot_general(lb, rb, batched_sizes, batched)
  for b in range(2):
    np.testing.assert_allclose(out[b], _ragged_dot_loop(lb[b], rb[b], batched_sizes[b]),
                               rtol=1e-5, atol=1e-6)
  batch_ragged = lax.RaggedDotDimensionNumbers((([2], [1]), ([0], [0])), [0], [])
  np.testing.assert_allclose(lax.ragged_dot_general(lb, rb[:, 0], np.array([2], np.int32),
                                                    batch_ragged),
                             np.einsum("bmk,bkn->bmn", lb, rb[:, 0]), rtol=1e-5, atol=1e-6)


def test_ragged_dot_transforms_and_errors():
  rng = np.random.default_rng(2)
  lhs = rng.normal(size=(6, 3)).astype(np.float32)
  rhs = rng.normal(size=(2, 3, 2)).astype(np.float32)
  sizes = np.array([4, 2], np.int32)
  np.testing.assert_allclose(jax.jit(lax.ragged_dot)(lhs, rhs, sizes),
                             _ragged_dot_loop(lhs, rhs, sizes), rtol=1e-5, atol=1e-6)
  grad = jax.grad(lambda a: lax.ragged_dot(a, rhs, sizes).sum())(lhs)
  np.testing.assert_allclose(grad[:4], np.tile(rhs[0].sum(1), (4, 1)), rtol=1e-5)
  np.testing.assert_allclose(grad[4:], np.tile(rhs[1].sum(1), (2, 1)), rtol=1e-5)
  assert lax.ragged_dot(lhs, rhs, sizes, preferred_element_type=jnp.float16).dtype == \
      jnp.float16
  with pytest.raises(NotImplementedError, match="group_offset"):
    lax.ragged_dot(lhs, rhs, sizes, group_offset=np.zeros(1, np.int32))
  with pytest.raises(TypeError, match="integer"):
    lax.ragged_dot(lhs, rhs, sizes.astype(np.float32))
  with pytest.raises(TypeError, match="number of groups"):
    lax.ragged_dot(lhs, rhs, np.array([6], np.int32))


# --- staging -------------------------------------------------------------------------------

def test_stage_lifts_values_into_the_trace():
  assert isinstance(lax.stage(np.ones(2)), jax.Array)
  assert lax.stage(2.0).weak_type
  assert "stage" in str(jax.make_jaxpr(lambda x: lax.stage(x) + lax.stage(1))(1.0))
  assert jax.grad(lambda x: lax.stage(x) ** 2)(3.0) == 6.0
  np.testing.assert_array_equal(jax.vmap(lax.stage)(jnp.arange(3)), [0, 1, 2])


def test_dce_sink_keeps_its_operands_computation():
  def f(x):
    lax.dce_sink({"a": jnp.sin(x), "b": [jnp.cos(x)]})
    return x * 2
  text = str(jax.make_jaxpr(f)(1.0))
  assert "sin" in text and "cos" in text and text.count("dce_sink") == 2
  assert f(1.0) == 2.0 and jax.jit(f)(1.0) == 2.0 and jax.grad(f)(1.0) == 2.0
  np.testing.assert_array_equal(jax.vmap(f)(jnp.arange(2.0)), [0, 2])


def test_composite_calls_its_decomposition():
  scale = lax.composite(lambda x, *, factor: x * factor, "my.scale", version=2)
  assert scale(3.0, factor=2) == 6.0 and jax.jit(lambda x: scale(x, factor=2))(3.0) == 6.0
  assert (scale.composite_name, scale.composite_version) == ("my.scale", 2)
  assert jax.grad(lambda x: scale(x, factor=5))(1.0) == 5.0


def test_platform_dependent_takes_the_cpu_branch():
  assert lax.platform_dependent(2.0, cpu=lambda x: x + 1, default=lambda x: x - 1) == 3.0
  assert lax.platform_dependent(2.0, cuda=lambda x: x + 1, default=lambda x: x - 1) == 1.0
  assert jax.jit(lambda x: lax.platform_dependent(x, cpu=jnp.sin, tpu=jnp.cos))(0.0) == 0.0
  with pytest.raises(NotImplementedError, match="no branch for platform 'cpu'"):
    lax.platform_dependent(1.0, tpu=lambda x: x)


def test_with_sharding_constraint_is_the_identity_on_one_device():
  x = jnp.ones((2, 2))
  mesh = jax.make_mesh((1,), ("x",))
  assert lax.with_sharding_constraint(x, jax.NamedSharding(mesh, jax.P("x"))) is x
  assert lax.with_sharding_constraint({"a": x}, x.sharding)["a"] is x
  with jax.set_mesh(mesh):
    assert jax.jit(lambda v: lax.with_sharding_constraint(v, jax.P(None, "x")))(x).shape == (2, 2)
  with pytest.raises(ValueError, match="mesh context"):
    lax.with_sharding_constraint(x, jax.P("x"))
  with pytest.raises(ValueError, match="rank at least 3"):
    lax.with_sharding_constraint(x, jax.NamedSharding(mesh, jax.P("x", None, None)))


# --- scaled_dot ------------------------------------------------------------------------------

def _dequantized(x, scale, axis):
  return x.astype(np.float64) * np.repeat(scale.astype(np.float64),
                                          x.shape[axis] // scale.shape[axis], axis)


def test_scaled_dot_is_the_dot_of_the_scaled_operands():
  rng = np.random.default_rng(3)
  from refimpl import dtypes
  lhs = rng.normal(size=(2, 4, 8)).astype(dtypes.float8_e4m3fn)
  rhs = rng.normal(size=(2, 8, 3)).astype(dtypes.float8_e4m3fn)
  lhs_scale = (2.0 ** rng.integers(-2, 3, size=(2, 4, 2))).astype(dtypes.float8_e8m0fnu)
  rhs_scale = (2.0 ** rng.integers(-2, 3, size=(2, 2, 3))).astype(dtypes.float8_e8m0fnu)
  expected = np.einsum("bmk,bkn->bmn", _dequantized(lhs, lhs_scale, 2),
                       _dequantized(rhs, rhs_scale, 1))
  out = lax.scaled_dot(lhs, rhs, lhs_scale=lhs_scale, rhs_scale=rhs_scale)
  assert out.dtype == jnp.bfloat16 and out.shape == (2, 4, 3)
  np.testing.assert_allclose(np.asarray(out, np.float32), expected, rtol=2e-2, atol=2e-2)
  out = jax.jit(lambda *a: lax.scaled_dot(a[0], a[1], lhs_scale=a[2], rhs_scale=a[3],
                                          preferred_element_type=jnp.float32))(
      lhs, rhs, lhs_scale, rhs_scale)
  assert out.dtype == jnp.float32
  np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)   # bf16 products are exact
  plain = lax.scaled_dot(lhs[0], rhs[0], preferred_element_type=jnp.float32)   # scales of ones
  np.testing.assert_allclose(plain, lhs[0].astype(np.float64) @ rhs[0].astype(np.float64),
                             rtol=1e-5, atol=1e-5)


def test_scaled_dot_checks_its_shapes():
  x, scale = jnp.ones((4, 8)), jnp.ones((4, 2))
  with pytest.raises(TypeError, match="same rank"):
    lax.scaled_dot(x, jnp.ones((8,)))
  with pytest.raises(TypeError, match="must be at least 2"):
    lax.scaled_dot(x, jnp.ones((8, 3)), lhs_scale=jnp.ones((4, 8)))
  with pytest.raises(TypeError, match="divisible"):
    lax.scaled_dot(x, jnp.ones((8, 3)), lhs_scale=jnp.ones((4, 3)))
  with pytest.raises(TypeError, match="does not match scale dim"):
    lax.scaled_dot(x, jnp.ones((8, 3)), lhs_scale=jnp.ones((2, 2)))
  with pytest.raises(TypeError, match="does not match RHS"):
    lax.scaled_dot(x, jnp.ones((6, 3)), lhs_scale=scale)
