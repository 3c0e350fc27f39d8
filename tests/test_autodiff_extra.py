"""`jax.ad_checkpoint`'s Recompute, Saveable, Offloadable and
print_saved_residuals, and `jax.custom_derivatives.zero_from_primal`."""

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import ad_checkpoint as ac
from refimpl import dtypes
from refimpl.custom_derivatives import SymbolicZero, zero_from_primal


def _saved(f, *args):
  return [(aval.str_short(short_dtypes=True), where)
          for aval, where in ac.saved_residuals(f, *args)]


def twice_sin(x):
  return jnp.sin(jnp.sin(x))


@pytest.mark.parametrize("decision, saves_intermediates", [
    (True, True), (ac.Saveable, True), (ac.Offloadable("device", "pinned_host"), True),
    (False, False), (ac.Recompute, False)])
def test_policy_decisions(decision, saves_intermediates):
  f = jax.checkpoint(twice_sin, policy=lambda *_, **__: decision)
  saved = _saved(f, 1.0)
  assert ("f32[]", "from the argument x") in saved
  assert any(where.startswith("output of") for _, where in saved) == saves_intermediates
  np.testing.assert_allclose(jax.grad(f)(1.0), jax.grad(twice_sin)(1.0), rtol=1e-6)


def test_a_policy_returning_something_else_raises():
  f = jax.checkpoint(twice_sin, policy=lambda *_, **__: "yes")
  with pytest.raises(TypeError, match="Value returned by a remat policy"):
    jax.grad(f)(1.0)


def test_offloadable_fields():
  o = ac.Offloadable(src="device", dst="pinned_host")
  assert (o.src, o.dst) == ("device", "pinned_host") and o == ("device", "pinned_host")
  assert repr(ac.Recompute) == "Recompute" and repr(ac.Saveable) == "Saveable"


def test_print_saved_residuals(capsys):
  def f(x, params):
    return jnp.sin(jnp.sin(x) * params["w"])
  ac.print_saved_residuals(f, jnp.ones(3), {"w": 2.0})
  assert capsys.readouterr().out.splitlines() == [
      "f32[3] output of sin", "f32[3] output of cos", "f32[] output of convert_element_type",
      "f32[3] output of cos"]
  named = jax.checkpoint(lambda x: jnp.sin(ac.checkpoint_name(jnp.sin(x), "a")),
                         policy=jax.checkpoint_policies.save_only_these_names("a"))
  ac.print_saved_residuals(named, jnp.ones(3))
  assert capsys.readouterr().out.splitlines() == ["f32[3] from the argument x",
                                                  "f32[3] named 'a'"]
  ac.print_saved_residuals(lambda x: jax.jit(jnp.sin)(x) * x, 1.0)
  assert capsys.readouterr().out.splitlines() == [   # sin x and the residual cos x
      "f32[] from the argument x", "f32[] output of jitted function 'sin'",
      "f32[] output of jitted function 'sin'"]


def test_saved_residuals_of_a_pytree_argument_name_its_path():
  saved = _saved(lambda p: p["a"] * p["b"], {"a": 1.0, "b": 2.0})
  assert saved == [("f32[]", "from the argument p['a']"), ("f32[]", "from the argument p['b']")]


def test_zero_from_primal():
  zeros = zero_from_primal({"a": jnp.ones(2), "i": jnp.arange(3), "s": 2.0})
  np.testing.assert_array_equal(zeros["a"], [0, 0])
  assert zeros["a"].dtype == jnp.float32
  assert zeros["i"].dtype == dtypes.float0 and zeros["i"].shape == (3,)
  assert zeros["s"].dtype == jnp.float32 and zeros["s"].weak_type
  symbolic, = zero_from_primal([jnp.ones((2, 2), jnp.bfloat16)], symbolic_zeros=True)
  assert isinstance(symbolic, SymbolicZero)
  assert symbolic.shape == (2, 2) and symbolic.dtype == jnp.bfloat16


def test_zero_from_primal_in_a_custom_jvp_rule():
  @jax.custom_jvp
  def f(x, n):
    return x * 2, n

  @f.defjvp
  def f_jvp(primals, tangents):
    (x, n), (dx, _) = primals, tangents
    return f(x, n), (dx * 2, zero_from_primal(n))
  assert jax.jvp(f, (1.0, 3), (1.0, np.zeros((), dtypes.float0)))[1][0] == 2.0
