"""`jax.example_libraries.optimizers` and `stax`: each optimizer's update rule
against the same rule written in NumPy over a few steps, the schedules, the
pytree state and its serialization, stax layers' shapes and values against
NumPy, and a small network trained under jit."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl.example_libraries import optimizers, stax

_RNG = np.random.RandomState(0)
_X0 = _RNG.randn(3, 2)
_GRADS = [_RNG.randn(3, 2) for _ in range(4)]


@pytest.fixture(autouse=True)
def _reseeded():
  """Each test draws from _RNG as seeded, whatever tests ran before it (in this
  process: the order differs between runs with several workers)."""
  global _RNG
  _RNG = np.random.RandomState(0)


def _numpy_sgd(x, gs, lr):
  for g in gs:
    x = x - lr * g
  return x


def _numpy_momentum(x, gs, lr, mass, nesterov=False):
  v = np.zeros_like(x)
  for g in gs:
    v = mass * v + g
    x = x - lr * (mass * v + g if nesterov else v)
  return x


def _numpy_adagrad(x, gs, lr, mom):
  g_sq, m = np.zeros_like(x), np.zeros_like(x)
  for g in gs:
    g_sq = g_sq + g ** 2
    m = (1 - mom) * g / np.sqrt(g_sq) + mom * m
    x = x - lr * m
  return x


def _numpy_rmsprop(x, gs, lr, gamma, eps, mom=None):
  a, m = np.zeros_like(x), np.zeros_like(x)
  for g in gs:
    a = gamma * a + (1 - gamma) * g ** 2
    if mom is None:
      x = x - lr * g / np.sqrt(a + eps)
    else:
      m = mom * m + lr * g / np.sqrt(a + eps)
      x = x - m
  return x


def _numpy_adam(x, gs, lr, b1, b2, eps):
  m, v = np.zeros_like(x), np.zeros_like(x)
  for i, g in enumerate(gs):
    m = (1 - b1) * g + b1 * m
    v = (1 - b2) * g ** 2 + b2 * v
    mhat, vhat = m / (1 - b1 ** (i + 1)), v / (1 - b2 ** (i + 1))
    x = x - lr * mhat / (np.sqrt(vhat) + eps)
  return x


def _numpy_adamax(x, gs, lr, b1, b2, eps):
  m, u = np.zeros_like(x), np.zeros_like(x)
  for i, g in enumerate(gs):
    m = (1 - b1) * g + b1 * m
    u = np.maximum(b2 * u, np.abs(g))
    x = x - lr / (1 - b1 ** (i + 1)) * m / (u + eps)
  return x


def _numpy_sm3(x, gs, lr, mom):
  rows, cols, m = np.zeros(x.shape[0]), np.zeros(x.shape[1]), np.zeros_like(x)
  for g in gs:
    accum = np.minimum(rows[:, None], cols[None, :]) + g ** 2
    m = (1 - mom) * g / np.sqrt(accum) + mom * m
    x = x - lr * m
    rows, cols = accum.max(1), accum.max(0)
  return x


_CASES = [
    (optimizers.sgd(0.1), lambda x, gs: _numpy_sgd(x, gs, 0.1)),
    (optimizers.momentum(0.1, 0.9), lambda x, gs: _numpy_momentum(x, gs, 0.1, 0.9)),
    (optimizers.nesterov(0.1, 0.8), lambda x, gs: _numpy_momentum(x, gs, 0.1, 0.8, True)),
    (optimizers.adagrad(0.1), lambda x, gs: _numpy_adagrad(x, gs, 0.1, 0.9)),
    (optimizers.rmsprop(0.1), lambda x, gs: _numpy_rmsprop(x, gs, 0.1, 0.9, 1e-8)),
    (optimizers.rmsprop_momentum(0.1, gamma=0.8),
     lambda x, gs: _numpy_rmsprop(x, gs, 0.1, 0.8, 1e-8, mom=0.9)),
    (optimizers.adam(0.1), lambda x, gs: _numpy_adam(x, gs, 0.1, 0.9, 0.999, 1e-8)),
    (optimizers.adam(0.05, b1=0.5, b2=0.9, eps=1e-3),
     lambda x, gs: _numpy_adam(x, gs, 0.05, 0.5, 0.9, 1e-3)),
    (optimizers.adamax(0.1), lambda x, gs: _numpy_adamax(x, gs, 0.1, 0.9, 0.999, 1e-8)),
    (optimizers.sm3(0.1), lambda x, gs: _numpy_sm3(x, gs, 0.1, 0.9)),
]


@pytest.mark.parametrize("opt, expected", _CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_update_rules_match_numpy_over_four_steps(opt, expected):
  init_fn, update_fn, params_fn = opt
  state = init_fn(jnp.asarray(_X0, jnp.float32))
  for i, g in enumerate(_GRADS):
    state = update_fn(i, jnp.asarray(g, jnp.float32), state)
  np.testing.assert_allclose(params_fn(state), expected(_X0, _GRADS), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("opt, expected", _CASES[::3], ids=lambda c: getattr(c, "__name__", ""))
def test_updates_under_jit_with_a_traced_step_match_eager(opt, expected):
  init_fn, update_fn, params_fn = opt
  step = jax.jit(update_fn)
  state = init_fn({"w": jnp.asarray(_X0, jnp.float32)})
  for i, g in enumerate(_GRADS):
    state = step(i, {"w": jnp.asarray(g, jnp.float32)}, state)
  np.testing.assert_allclose(params_fn(state)["w"], expected(_X0, _GRADS), rtol=2e-5, atol=2e-6)


def test_a_scalar_parameter_keeps_its_shape_under_sm3():
  init_fn, update_fn, params_fn = optimizers.sm3(0.5)
  state = update_fn(0, jnp.float32(2.0), init_fn(jnp.float32(1.0)))
  assert params_fn(state).shape == ()
  np.testing.assert_allclose(params_fn(state), 1.0 - 0.5 * 0.1 * 2.0 / 2.0, rtol=1e-6)


def test_state_is_a_pytree_with_one_list_of_leaves_per_parameter():
  params = {"a": jnp.ones((2,)), "b": (jnp.zeros(()), jnp.ones((1, 3)))}
  init_fn, update_fn, params_fn = optimizers.adam(0.1)
  state = init_fn(params)
  assert isinstance(state, optimizers.OptimizerState)
  assert len(state.packed_state) == 3 and all(len(s) == 3 for s in state.packed_state)
  assert len(jax.tree_util.tree_leaves(state)) == 9
  assert jax.tree_util.tree_structure(params_fn(state)) == jax.tree_util.tree_structure(params)
  doubled = jax.tree_util.tree_map(lambda x: 2 * x, state)   # maps over the leaves only
  assert isinstance(doubled, optimizers.OptimizerState)
  np.testing.assert_array_equal(params_fn(doubled)["b"][1], 2 * np.ones((1, 3)))


def test_unpack_and_pack_round_trip_the_state():
  params = {"a": jnp.arange(3.0), "b": [jnp.ones((2, 2))]}
  init_fn, update_fn, params_fn = optimizers.momentum(0.1, 0.9)
  state = update_fn(0, jax.tree_util.tree_map(jnp.ones_like, params), init_fn(params))
  marked = optimizers.unpack_optimizer_state(state)
  assert isinstance(marked["a"], optimizers.JoinPoint)
  x, velocity = marked["b"][0].subtree
  np.testing.assert_allclose(velocity, np.ones((2, 2)))
  packed = optimizers.pack_optimizer_state(marked)
  assert packed.tree_def == state.tree_def and packed.subtree_defs == state.subtree_defs
  for got, want in zip(jax.tree_util.tree_leaves(packed), jax.tree_util.tree_leaves(state)):
    np.testing.assert_array_equal(got, want)


def test_a_gradient_tree_of_another_structure_is_a_type_error():
  init_fn, update_fn, _ = optimizers.sgd(0.1)
  state = init_fn({"a": jnp.ones(2)})
  with pytest.raises(TypeError, match="did not match the parameter tree structure"):
    update_fn(0, {"b": jnp.ones(2)}, state)


def test_the_optimizer_decorator_lifts_a_per_array_optimizer():
  @optimizers.optimizer
  def halve():
    return (lambda x: (x, 0.0), lambda i, g, s: (s[0] / 2, s[1] + 1.0), lambda s: s[0])
  init_fn, update_fn, params_fn = halve()
  state = update_fn(0, [1.0, 1.0], init_fn([jnp.float32(4.0), jnp.float32(2.0)]))
  np.testing.assert_allclose(params_fn(state), [2.0, 1.0])


@settings(max_examples=20, deadline=None)
@given(i=st.integers(0, 40))
def test_schedules_match_their_formulas(i):
  np.testing.assert_allclose(optimizers.exponential_decay(0.5, 10, 0.3)(i), 0.5 * 0.3 ** (i / 10),
                             rtol=1e-6)
  np.testing.assert_allclose(optimizers.inverse_time_decay(0.5, 10, 2.0)(i), 0.5 / (1 + 0.2 * i),
                             rtol=1e-6)
  np.testing.assert_allclose(optimizers.inverse_time_decay(0.5, 10, 2.0, staircase=True)(i),
                             0.5 / (1 + 2.0 * (i // 10)), rtol=1e-6)
  np.testing.assert_allclose(optimizers.polynomial_decay(1.0, 20, 0.1, power=2.0)(i),
                             (1 - min(i, 20) / 20) ** 2 * 0.9 + 0.1, rtol=1e-6)
  np.testing.assert_allclose(optimizers.piecewise_constant([5, 20], [1.0, 0.5, 0.1])(i),
                             1.0 if i <= 5 else 0.5 if i <= 20 else 0.1)
  assert optimizers.constant(0.25)(i) == 0.25


def test_make_schedule_accepts_scalars_and_callables_only():
  assert optimizers.make_schedule(0.3)(7) == 0.3
  schedule = optimizers.exponential_decay(1.0, 1, 0.5)
  assert optimizers.make_schedule(schedule) is schedule
  with pytest.raises(TypeError):
    optimizers.make_schedule(jnp.ones(2))
  with pytest.raises(ValueError, match="one shorter"):
    optimizers.piecewise_constant([1, 2], [0.1, 0.2])


def test_l2_norm_and_clip_grads():
  tree = {"a": jnp.asarray([3.0, 0.0]), "b": jnp.asarray([[4.0]])}
  np.testing.assert_allclose(optimizers.l2_norm(tree), 5.0)
  clipped = optimizers.clip_grads(tree, 1.0)
  np.testing.assert_allclose(clipped["a"], [0.6, 0.0], rtol=1e-6)
  np.testing.assert_allclose(optimizers.clip_grads(tree, 10.0)["b"], [[4.0]])


def test_safe_map_and_zip_check_lengths():
  assert optimizers.safe_map(lambda a, b: a + b, [1, 2], (3, 4)) == [4, 6]
  assert optimizers.safe_zip("ab", [1, 2]) == [("a", 1), ("b", 2)]
  assert optimizers.unzip2([(1, "a"), (2, "b")]) == ((1, 2), ("a", "b"))
  with pytest.raises(AssertionError):
    optimizers.safe_zip([1], [1, 2])


# --- stax ------------------------------------------------------------------------------

_KEY = jax.random.PRNGKey(0)


def test_dense_shapes_and_values():
  init_fun, apply_fun = stax.Dense(5)
  out_shape, (W, b) = init_fun(_KEY, (7, 3))  # noqa: N806
  assert out_shape == (7, 5) and W.shape == (3, 5) and b.shape == (5,)
  x = _RNG.randn(7, 3).astype(np.float32)
  np.testing.assert_allclose(apply_fun((W, b), x), x @ np.asarray(W) + np.asarray(b), rtol=1e-5,
                             atol=1e-6)


def test_conv_output_shape_matches_apply_and_a_numpy_correlation():
  init_fun, apply_fun = stax.Conv(4, (3, 2), strides=(1, 2))
  out_shape, (W, b) = init_fun(_KEY, (2, 6, 7, 3))  # noqa: N806
  assert W.shape == (3, 2, 3, 4) and b.shape == (1, 1, 1, 4)
  x = _RNG.randn(2, 6, 7, 3).astype(np.float32)
  y = apply_fun((W, b), x)
  assert y.shape == out_shape == (2, 4, 3, 4)
  Wn = np.asarray(W)  # noqa: N806
  expected = np.stack([np.stack([np.einsum("nhwc,hwco->no", x[:, i:i + 3, 2 * j:2 * j + 2], Wn)
                                 for j in range(3)], 1) for i in range(4)], 1) + np.asarray(b)
  np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-5)


def test_conv_transpose_output_shapes_match_apply():
  for layer, in_shape in [(stax.ConvTranspose(2, (3, 3), strides=(2, 2)), (1, 4, 5, 3)),
                          (stax.Conv1DTranspose(3, (2,), padding="SAME"), (2, 5, 4))]:
    out_shape, params = layer[0](_KEY, in_shape)
    assert layer[1](params, jnp.ones(in_shape)).shape == tuple(out_shape)


@pytest.mark.parametrize("pool, reduce", [(stax.MaxPool, np.max), (stax.SumPool, np.sum),
                                          (stax.AvgPool, np.mean)])
def test_pooling_layers_match_numpy_windows(pool, reduce):
  init_fun, apply_fun = pool((2, 2), strides=(2, 1))
  x = _RNG.randn(2, 4, 3, 5).astype(np.float32)
  out_shape, params = init_fun(_KEY, x.shape)
  y = apply_fun(params, x)
  assert y.shape == out_shape == (2, 2, 2, 5)
  expected = np.stack([np.stack([reduce(x[:, 2 * i:2 * i + 2, j:j + 2], axis=(1, 2))
                                 for j in range(2)], 1) for i in range(2)], 1)
  np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


def test_avg_pool_with_same_padding_divides_by_the_covered_elements():
  _, apply_fun = stax.AvgPool((2,), padding="SAME", spec="NWC")
  x = np.arange(3.0, dtype=np.float32).reshape(1, 3, 1)
  np.testing.assert_allclose(apply_fun((), x)[0, :, 0], [0.5, 1.5, 2.0])


def test_batch_norm_standardizes_over_its_axes():
  init_fun, apply_fun = stax.BatchNorm(axis=(0, 1))
  x = _RNG.randn(8, 3, 2).astype(np.float32)
  out_shape, (beta, gamma) = init_fun(_KEY, x.shape)
  assert out_shape == x.shape and beta.shape == gamma.shape == (2,)
  beta, gamma = jnp.asarray([1.0, -1.0]), jnp.asarray([2.0, 0.5])
  expected = (x - x.mean((0, 1))) / np.sqrt(x.var((0, 1)) + 1e-5) * [2.0, 0.5] + [1.0, -1.0]
  np.testing.assert_allclose(apply_fun((beta, gamma), x), expected, rtol=1e-4, atol=1e-5)
  _, (beta, gamma) = stax.BatchNorm(center=False, scale=False)[0](_KEY, (2, 2, 2, 2))
  assert beta == () and gamma == ()


def test_elementwise_layers_apply_their_functions():
  x = jnp.asarray([-1.0, 0.5, 2.0])
  for layer, fun in [(stax.Relu, lambda v: np.maximum(v, 0)), (stax.Tanh, np.tanh),
                     (stax.Exp, np.exp), (stax.Identity, lambda v: v),
                     (stax.Softplus, lambda v: np.log1p(np.exp(v))),
                     (stax.LogSoftmax, lambda v: v - np.log(np.sum(np.exp(v))))]:
    assert layer[0](_KEY, (3,)) == ((3,), ())
    np.testing.assert_allclose(layer[1]((), x), fun(np.asarray(x)), rtol=1e-5, atol=1e-6)


def test_flatten_fan_out_parallel_and_fan_in():
  assert stax.Flatten[0](_KEY, (4, 2, 3)) == ((4, 6), ())
  assert stax.Flatten[1]((), jnp.ones((4, 2, 3))).shape == (4, 6)
  init_fun, apply_fun = stax.serial(stax.FanOut(2), stax.parallel(stax.Dense(3), stax.Identity),
                                    stax.FanInConcat())
  out_shape, params = init_fun(_KEY, (5, 2))
  assert out_shape == (5, 5)
  x = _RNG.randn(5, 2).astype(np.float32)
  y = apply_fun(params, x)
  (W, b), _ = params[1]  # noqa: N806
  np.testing.assert_allclose(y, np.concatenate([x @ np.asarray(W) + np.asarray(b), x], 1),
                             rtol=1e-5, atol=1e-6)
  init_fun, apply_fun = stax.serial(stax.FanOut(3), stax.parallel(*[stax.Identity] * 3),
                                    stax.FanInSum)
  assert init_fun(_KEY, (2,))[0] == (2,)
  np.testing.assert_allclose(apply_fun(init_fun(_KEY, (2,))[1], x[0]), 3 * x[0])


def test_shape_dependent_builds_the_layer_from_the_input_shape():
  init_fun, apply_fun = stax.shape_dependent(lambda shape: stax.Dense(shape[-1] * 2))
  out_shape, params = init_fun(_KEY, (1, 3))
  assert out_shape == (1, 6)
  assert apply_fun(params, jnp.ones((1, 3))).shape == (1, 6)


def test_dropout_keeps_elements_at_rate_and_needs_a_key():
  init_fun, apply_fun = stax.Dropout(0.75)
  x = jnp.ones((4000,))
  y = np.asarray(apply_fun((), x, rng=jax.random.PRNGKey(3)))
  assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.75)}
  assert abs((y != 0).mean() - 0.75) < 0.03
  with pytest.raises(ValueError, match="requires apply_fun to be called with a PRNG key"):
    apply_fun((), x)
  np.testing.assert_array_equal(stax.Dropout(0.5, mode="test")[1]((), x), x)
  with pytest.raises(ValueError, match="mode"):
    stax.Dropout(0.5, mode="eval")[1]((), x, rng=_KEY)


def test_serial_splits_its_key_for_each_layer():
  init_fun, apply_fun = stax.serial(stax.Dropout(0.5), stax.Dropout(0.5))
  _, params = init_fun(_KEY, (100,))
  y = apply_fun(params, jnp.ones(100), rng=jax.random.PRNGKey(1))
  assert set(np.unique(np.asarray(y))) <= {0.0, 4.0}


def test_a_small_network_trained_under_jit_lowers_its_loss():
  init_fun, apply_fun = stax.serial(stax.Dense(16), stax.Tanh, stax.Dense(3), stax.LogSoftmax)
  _, params = init_fun(_KEY, (-1, 4))
  x = _RNG.randn(32, 4).astype(np.float32)
  labels = np.eye(3, dtype=np.float32)[np.argmax(x[:, :3], 1)]

  def loss(params):
    return -jnp.mean(jnp.sum(apply_fun(params, x) * labels, -1))

  opt_init, opt_update, get_params = optimizers.adam(optimizers.exponential_decay(0.05, 10, 0.9))

  @jax.jit
  def step(i, state):
    value, grads = jax.value_and_grad(loss)(get_params(state))
    return value, opt_update(i, grads, state)

  state = opt_init(params)
  losses = []
  for i in range(20):
    value, state = step(i, state)
    losses.append(float(value))
  assert losses[-1] < 0.6 * losses[0]
  assert all(b < a for a, b in zip(losses[:5], losses[1:6]))
