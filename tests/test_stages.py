"""`refimpl.stages` (`jax.stages`): the stage classes, ArgInfo, and the cost
and memory models of `Lowered.cost_analysis`, `Compiled.cost_analysis` and
`Compiled.memory_analysis`."""

import numpy as np
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import lax, stages

f32 = np.float32


def test_the_stages_are_the_classes_jit_returns():
  f = jax.jit(lambda x, y: x * y)
  traced = f.trace(np.ones(3, f32), f32(2))
  lowered = traced.lower()
  compiled = lowered.compile()
  assert isinstance(traced, stages.Traced) and isinstance(lowered, stages.Lowered)
  assert isinstance(compiled, stages.Compiled)
  np.testing.assert_array_equal(compiled(np.ones(3, f32), f32(2)), 2 * np.ones(3))
  assert lowered.compile(compiler_options={}) is not None
  assert stages.CompilerOptions.__origin__ is dict
  assert set(dir(stages.Wrapped)) >= {"trace", "lower", "__call__"}


def test_args_info():
  f = jax.jit(lambda x, y, *, z: x + y["a"] + z)
  args_info = f.lower(np.ones(2, f32), {"a": np.ones(2, f32)}, z=np.int32(1)).args_info
  (x, y), kwargs = args_info
  assert isinstance(x, stages.ArgInfo) and x.shape == (2,) and x.dtype == np.float32
  assert not x.donated and y["a"].shape == (2,) and kwargs["z"].dtype == np.int32


@given(st.integers(1, 6), st.integers(1, 6), st.integers(1, 6))
def test_dot_costs_two_flops_per_multiply_add(m, k, n):
  compiled = jax.jit(jnp.dot).lower(np.ones((m, k), f32), np.ones((k, n), f32)).compile()
  cost = compiled.cost_analysis()
  assert cost["flops"] == 2 * m * n * k and cost["transcendentals"] == 0
  assert cost["bytes accessed"] == 4 * (m * k + k * n + m * n)


def test_elementwise_transcendental_and_reduction_counts():
  x = np.ones((3, 4), f32)
  cost = jax.jit(lambda x: jnp.exp(x) + 1.0).lower(x).cost_analysis()
  assert cost == {"flops": 12.0, "transcendentals": 12.0, "bytes accessed": 4 * 12 * 4 + 4}
  cost = jax.jit(lambda x: x.sum(axis=0)).lower(x).cost_analysis()
  assert cost["flops"] == 12 and cost["bytes accessed"] == 4 * (12 + 4)
  cost = jax.jit(lambda x: x.reshape(4, 3).T).lower(x).cost_analysis()   # data movement
  assert cost["flops"] == 0 and cost["bytes accessed"] == 4 * 12 * 4


def test_control_flow_and_calls():
  x = np.ones(5, f32)
  body = jax.jit(lambda x: x * 2.0)
  assert jax.jit(lambda x: body(body(x))).lower(x).cost_analysis()["flops"] == 10
  scan = jax.jit(lambda x: lax.scan(lambda c, _: (c * 2.0, None), x, None, length=7)[0])
  assert scan.lower(x).cost_analysis()["flops"] == 35
  cond = jax.jit(lambda p, x: lax.cond(p, lambda x: x * x * x, lambda x: -x, x))
  # the costlier branch, and the predicate's conversion to the branch index
  assert cond.lower(True, x).cost_analysis()["flops"] == 10 + 1
  loop = jax.jit(lambda x: lax.while_loop(lambda c: c.sum() < 10, lambda c: c + 1, x))
  assert loop.lower(x).cost_analysis()["flops"] == 5 + 5 + 1   # sum, add, lt: once


def test_memory_analysis():
  f = jax.jit(lambda a, b: jnp.exp(a @ b).sum())
  stats = f.lower(np.ones((2, 3), f32), np.ones((3, 4), f32)).compile().memory_analysis()
  assert stats.argument_size_in_bytes == 4 * (6 + 12)
  assert stats.output_size_in_bytes == 4
  assert stats.temp_size_in_bytes == 2 * 4 * 8   # the product and its exp, alive together
  assert stats.alias_size_in_bytes == 0 and stats.generated_code_size_in_bytes == 0
