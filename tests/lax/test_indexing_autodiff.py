"""Derivative rules of the indexing primitives (refimpl/lax/indexing.py), and
of jnp indexing built on them (`x[idx]`, `x.at[idx]`): exact examples, the
out-of-bounds modes, repeated indices, ties of scatter-min/max, what JAX
does not implement, and the primitives that differentiated programs contain.
The numerical checks of every rule are the AD_CASES of
conformance/families/indexing.py."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import dtypes, lax
from conformance import strategies as S

ROWS = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                   scatter_dims_to_operand_dims=(0,))
GATHER_ROWS = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                         start_index_map=(0,))
CLIP, FILL = lax.GatherScatterMode.CLIP, lax.GatherScatterMode.FILL_OR_DROP


def _eqns(fn, *args):
  return jax.make_jaxpr(fn)(*args).jaxpr.eqns


def _primitives(fn, *args):
  return [eqn.primitive.name for eqn in _eqns(fn, *args)]


def _params(fn, *args, name):
  return [eqn.params for eqn in _eqns(fn, *args) if eqn.primitive.name == name]


# --- slice, dynamic_slice, dynamic_update_slice ------------------------------------------------

def test_strided_slice_gradient_lands_on_the_elements_read():
  x = np.arange(7.0, dtype=np.float32)
  grad = jax.grad(lambda x: jnp.sum(lax.slice(x, (1,), (6,), (2,)) * np.float32(3)))(x)
  np.testing.assert_array_equal(grad, [0, 3, 0, 3, 0, 3, 0])
  params = _params(jax.grad(lambda x: jnp.sum(lax.slice(x, (1,), (6,), (2,)))), x,
                   name="pad")
  assert params == [{"padding_config": ((1, 1, 1),)}]   # zeros around and between


@given(st.integers(-12, 12))
def test_dynamic_slice_gradient_follows_the_clamped_start(start):
  x = np.arange(6.0, dtype=np.float32)
  grad = jax.grad(lambda x: jnp.sum(lax.dynamic_slice(x, (start,), (2,))))(x)
  clamped = min(max(start + 6 if start < 0 else start, 0), 4)
  expected = np.zeros(6)
  expected[clamped:clamped + 2] = 1
  np.testing.assert_array_equal(grad, expected)


def test_dynamic_slice_transposes_to_dynamic_update_slice():
  x = np.arange(6.0, dtype=np.float32)
  f = lambda x, i: jnp.sum(lax.dynamic_slice(x, (i,), (2,)))
  assert "dynamic_update_slice" in _primitives(jax.grad(f), x, np.int32(1))


def test_dynamic_update_slice_gradients():
  x, update = np.ones((3, 4), np.float32), np.ones((2, 2), np.float32)
  ct = np.arange(12.0, dtype=np.float32).reshape(3, 4)
  # start (2, 3) is clamped to (1, 2) so that the update fits
  _, pullback = jax.vjp(lambda x, u: lax.dynamic_update_slice(x, u, (2, 3)), x, update)
  t_x, t_update = pullback(ct)
  expected_x = ct.copy()
  expected_x[1:3, 2:4] = 0
  np.testing.assert_array_equal(t_x, expected_x)
  np.testing.assert_array_equal(t_update, ct[1:3, 2:4])


# --- gather -------------------------------------------------------------------------------------

def test_gather_gradient_accumulates_repeated_indices():
  x = np.arange(4.0, dtype=np.float32)
  grad = jax.grad(lambda x: jnp.sum(x[np.array([0, 0, 3, 0])]))(x)
  np.testing.assert_array_equal(grad, [3, 0, 0, 1])
  assert _primitives(jax.grad(lambda x: jnp.sum(x[np.array([0, 2])])), x)[-1] == "scatter-add"


@pytest.mark.parametrize("mode", [CLIP, FILL])
def test_gather_modes_carry_to_the_tangent_and_the_transpose(mode):
  x = np.arange(8.0, dtype=np.float32).reshape(4, 2)
  indices = np.array([[1], [9], [-3]], np.int32)      # two out of bounds
  f = lambda x: lax.gather(x, indices, GATHER_ROWS, (1, 2), mode=mode)
  out, tangent = jax.jvp(f, (x,), (np.ones_like(x),))
  if mode == CLIP:   # windows clamped to rows 3 and 0
    np.testing.assert_array_equal(out, x[[1, 3, 0]])
    np.testing.assert_array_equal(tangent, np.ones((3, 2)))
  else:              # filled windows (NaN) have a zero tangent
    assert np.isnan(out[1:]).all()
    np.testing.assert_array_equal(tangent, [[1, 1], [0, 0], [0, 0]])
  grad = jax.grad(lambda x: jnp.sum(jnp.where(jnp.isnan(f(x)), 0.0, f(x))))(x)
  rows_read = [1, 3, 0] if mode == CLIP else [1]
  np.testing.assert_array_equal(grad, np.isin(np.arange(4), rows_read)[:, None] * np.ones(2))
  scatters = _params(jax.grad(lambda x: jnp.sum(lax.gather(x, indices, GATHER_ROWS, (1, 2),
                                                           mode=mode, fill_value=0.0))),
                     x, name="scatter-add")
  assert [p["mode"] for p in scatters] == [mode]


def test_gather_jvp_fills_with_zero():
  x = np.arange(4.0, dtype=np.float32)
  jaxpr_params = _params(lambda x, t: jax.jvp(
      lambda x: lax.gather(x, np.array([[7]], np.int32), lax.GatherDimensionNumbers(
          (), (0,), (0,)), (1,), mode=FILL, fill_value=5.0), (x,), (t,)), x, x, name="gather")
  assert [p["fill_value"] for p in jaxpr_params] == [5.0, 0]


def test_integer_gather_has_a_float0_tangent():
  x = np.arange(4, dtype=np.int32)
  _, tangent = jax.jvp(lambda x: x[np.array([1, 1])], (x,), (np.zeros(4, dtypes.float0),))
  assert tangent.dtype == dtypes.float0 and tangent.shape == (2,)


# --- scatter-add, scatter-sub, scatter-mul --------------------------------------------------------

@pytest.mark.parametrize("op, sign", [(lax.scatter_add, 1), (lax.scatter_sub, -1)])
def test_scatter_add_sub_gradients(op, sign):
  x = np.zeros((3, 2), np.float32)
  updates = np.ones((3, 2), np.float32)
  indices = np.array([[2], [0], [5]], np.int32)        # the last window is dropped
  ct = np.arange(6.0, dtype=np.float32).reshape(3, 2)
  _, pullback = jax.vjp(lambda x, u: op(x, indices, u, ROWS), x, updates)
  t_x, t_updates = pullback(ct)
  np.testing.assert_array_equal(t_x, ct)
  np.testing.assert_array_equal(t_updates, sign * np.array([ct[2], ct[0], [0, 0]]))


def test_scatter_add_clip_gradient_reads_the_clamped_window():
  x, updates = np.zeros((3, 2), np.float32), np.ones((1, 2), np.float32)
  ct = np.arange(6.0, dtype=np.float32).reshape(3, 2)
  f = lambda u: lax.scatter_add(x, np.array([[7]], np.int32), u, ROWS, mode="clip")
  np.testing.assert_array_equal(jax.vjp(f, updates)[1](ct)[0], ct[2:])


def test_scatter_mul_gradients():
  x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
  updates = np.array([[5.0, 6.0]], np.float32)
  indices = np.array([[1]], np.int32)
  f = lambda x, u, unique: lax.scatter_mul(x, indices, u, ROWS, unique_indices=unique)
  # the operand's derivative: multiplied by the updates where they land
  np.testing.assert_array_equal(jax.grad(lambda x: jnp.sum(f(x, updates, False)))(x),
                                [[1, 1], [5, 6]])
  # the updates': the operand where they land (only with unique indices, as in JAX)
  np.testing.assert_array_equal(jax.grad(lambda u: jnp.sum(f(x, u, True)))(updates),
                                [[3, 4]])
  with pytest.raises(NotImplementedError, match="unique_indices=True"):
    jax.grad(lambda u: jnp.sum(f(x, u, False)))(updates)


# --- scatter --------------------------------------------------------------------------------------

def test_scatter_with_repeated_indices_differentiates_the_winner():
  x = np.arange(4.0, dtype=np.float32)
  y = np.array([10.0, 20.0, 30.0], np.float32)
  f = lambda x, y: jnp.asarray(x).at[np.array([1, 1, 3])].set(y)
  out, tangent = jax.jvp(f, (x, y), (np.ones(4, np.float32), np.array([1., 2., 3.],
                                                                        np.float32)))
  np.testing.assert_array_equal(out, [0, 20, 2, 30])   # the last update wins here
  np.testing.assert_array_equal(tangent, [1, 2, 1, 3])
  t_x, t_y = jax.grad(lambda x, y: jnp.sum(f(x, y) * np.arange(4.0)), argnums=(0, 1))(x, y)
  np.testing.assert_array_equal(t_x, [0, 0, 2, 0])
  np.testing.assert_array_equal(t_y, [0, 1, 3])
  # ids are scattered to find the winners; the values are then scatter-added
  primitives = _primitives(jax.grad(lambda y: jnp.sum(f(x, y))), y)
  assert "scatter" in primitives and "scatter-add" in primitives


def test_scatter_with_unique_indices_is_linear():
  x, y = np.arange(5.0, dtype=np.float32), np.ones(2, np.float32)
  f = lambda x, y: jnp.sum(jnp.asarray(x).at[1:3].set(y) * np.arange(5.0))  # unique indices
  t_x, t_y = jax.grad(f, argnums=(0, 1))(x, y)
  np.testing.assert_array_equal(t_x, [0, 0, 0, 3, 4])
  np.testing.assert_array_equal(t_y, [1, 2])
  primitives = _primitives(jax.grad(f, argnums=(0, 1)), x, y)
  assert "scatter" in primitives and "gather" in primitives and "scatter-add" not in primitives


@pytest.mark.parametrize("mode", [CLIP, FILL])
def test_scatter_primal_of_the_jvp_matches_the_scatter(mode):
  x = np.arange(8.0, dtype=np.float32).reshape(4, 2)
  indices = np.array([[1], [7], [-2], [1]], np.int32)
  updates = np.arange(8.0, dtype=np.float32).reshape(4, 2) + 100
  f = lambda x, u: lax.scatter(x, indices, u, ROWS, mode=mode)
  out, _ = jax.jvp(f, (x, updates), (x, updates))
  np.testing.assert_array_equal(out, f(x, updates))


def test_scatter_apply_is_not_differentiable():
  with pytest.raises(NotImplementedError, match="scatter_apply JVP not implemented"):
    jax.grad(lambda x: jnp.sum(x.at[0].apply(jnp.sin)))(np.ones(3, np.float32))


# --- scatter-min, scatter-max ---------------------------------------------------------------------

def test_scatter_max_tangent_goes_to_the_winner():
  x = np.array([1.0, 5.0], np.float32)
  _, tangent = jax.jvp(lambda x, y: jnp.asarray(x).at[np.array([0, 1])].max(y),
                       (x, np.array([3.0, 2.0], np.float32)),
                       (np.array([10.0, 20.0], np.float32), np.array([1.0, 2.0], np.float32)))
  np.testing.assert_array_equal(tangent, [1.0, 20.0])


def test_scatter_max_ties_share_the_tangent_equally():
  x = np.array([1.0, 5.0], np.float32)
  # the operand and one update tie: halves
  _, tangent = jax.jvp(lambda x, y: x.at[0].max(y), (x, np.float32(1.0)),
                       (np.array([1.0, 1.0], np.float32), np.float32(3.0)))
  np.testing.assert_array_equal(tangent, [2.0, 1.0])
  # two updates tie above the operand: halves between them
  _, tangent = jax.jvp(lambda x, y: x.at[np.array([0, 0])].max(y),
                       (x, np.array([3.0, 3.0], np.float32)),
                       (np.array([1.0, 1.0], np.float32), np.array([2.0, 4.0], np.float32)))
  np.testing.assert_array_equal(tangent, [3.0, 1.0])
  # all three tie: thirds
  _, tangent = jax.jvp(lambda x, y: x.at[np.array([0, 0])].min(y),
                       (x, np.array([1.0, 1.0], np.float32)),
                       (np.array([3.0, 0.0], np.float32), np.array([6.0, 9.0], np.float32)))
  np.testing.assert_array_equal(tangent, [6.0, 0.0])


def test_scatter_max_gradient_of_a_dropped_update_is_zero():
  x = np.zeros(3, np.float32)
  grad = jax.grad(lambda y: jnp.sum(lax.scatter_max(
      x, np.array([[1], [4]], np.int32), y, lax.ScatterDimensionNumbers((), (0,), (0,)))))(
      np.array([2.0, 3.0], np.float32))
  np.testing.assert_array_equal(grad, [1.0, 0.0])


# --- jnp indexing end to end ----------------------------------------------------------------------

@given(S.shapes(min_dims=1, max_side=3).flatmap(
    lambda shape: st.tuples(st.just(shape), S.index_expressions(shape))))
def test_grad_of_getitem_counts_how_often_each_element_is_read(shape_and_index):
  shape, idx = shape_and_index
  x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
  grad = jax.grad(lambda x: jnp.sum(jnp.asarray(x)[idx]))(x)
  expected = np.zeros(shape)
  np.add.at(expected, idx, 1)
  np.testing.assert_array_equal(grad, expected)


def test_grad_of_at_add_and_hessian_of_getitem():
  x, y = np.zeros(4, np.float32), np.array([1.0, 2.0, 3.0], np.float32)
  idx = np.array([0, 0, 2])
  t_x, t_y = jax.grad(lambda x, y: jnp.sum(x.at[idx].add(y) * np.arange(4.0)),
                      argnums=(0, 1))(x, y)
  np.testing.assert_array_equal(t_x, [0, 1, 2, 3])
  np.testing.assert_array_equal(t_y, [0, 0, 2])
  hessian = jax.hessian(lambda x: jnp.sum(jnp.asarray(x)[idx] ** 2))(y)
  np.testing.assert_array_equal(hessian, np.diag([4.0, 0.0, 2.0]))
