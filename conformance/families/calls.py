"""Cases for the primitives that call a traced sub-program: `jit`,
`checkpoint` (with `name`), `custom_jvp_call` and `custom_vjp_call` (with
`custom_lin`, which only reverse mode can run), `custom_vmap_call`; for the
two primitives differentiation introduces, `add_any` and `stop_gradient`;
and for `stage` and `dce_sink`, which only mark values. Their values are
those of the program they call; their derivative cases check that
differentiation goes through them (and, for the custom ones, uses the
user's rule); the vmap property runs the custom vmap rule."""

import numpy as np

import refimpl
import refimpl.numpy as jnp
from refimpl import ad_checkpoint, lax
from conformance import strategies as S
from conformance.autodiff import ADCase
from conformance.cases import Case


def _smooth(x):
  return jnp.sin(x) * x + jnp.exp(x / 4)


def _smooth_np(x):
  return np.sin(x) * x + np.exp(x / 4)


_jitted = refimpl.jit(_smooth)


def _checkpointed(x):
  return refimpl.checkpoint(_smooth)(x)


def _checkpointed_names(x):
  policy = refimpl.checkpoint_policies.save_only_these_names("s")

  def f(x):
    s = ad_checkpoint.checkpoint_name(jnp.sin(x), "s")
    return s * jnp.cos(s)
  return refimpl.checkpoint(f, policy=policy)(x)


@refimpl.custom_jvp
def _custom_jvp_fn(x):
  return jnp.sin(x) * x


@_custom_jvp_fn.defjvp
def _custom_jvp_rule(primals, tangents):
  x, = primals
  t, = tangents
  return _custom_jvp_fn(x), (jnp.cos(x) * x + jnp.sin(x)) * t


@refimpl.custom_vjp
def _custom_vjp_fn(x, y):
  return jnp.sin(x) * y


def _custom_vjp_fwd(x, y):
  return _custom_vjp_fn(x, y), (jnp.cos(x), jnp.sin(x), y)


def _custom_vjp_bwd(res, ct):
  cos_x, sin_x, y = res
  return ct * cos_x * y, ct * sin_x


_custom_vjp_fn.defvjp(_custom_vjp_fwd, _custom_vjp_bwd)


@refimpl.custom_batching.custom_vmap
def _custom_vmap_fn(x):
  return jnp.sin(x) * x


@_custom_vmap_fn.def_vmap
def _custom_vmap_rule(axis_size, in_batched, xs):
  return xs * jnp.sin(xs), in_batched[0]


def _sunk(x):
  """`_smooth` of x, with a `dce_sink` of an intermediate that nothing else uses."""
  lax.dce_sink(jnp.cos(x))
  return _smooth(x)


def _inputs(n=1):
  return lambda: S.bounded_case_inputs([np.float64], n, low=-2.0, high=2.0)


CASES = [
    Case("add_any", lax.ad_util.add_any,
         lambda: S.same_shape_arrays(S.INT_DTYPES + [np.float32, np.complex64]),
         lambda x, y: (x + y).astype(x.dtype)),
    Case("lax.stop_gradient", lax.stop_gradient, lambda: S.case_inputs(S.ALL_DTYPES),
         lambda x: x),
    Case("checkpoint_name", lambda x: ad_checkpoint.checkpoint_name(x, "x"),
         lambda: S.case_inputs(S.ALL_DTYPES), lambda x: x),
    Case("lax.stage", lax.stage, lambda: S.case_inputs(S.ALL_DTYPES), lambda x: x),
    Case("lax.dce_sink", _sunk, lambda: S.bounded_case_inputs([np.float32], 1, -10, 10),
         _smooth_np, rtol=1e-5, atol=1e-5),
    Case("checkpoint", _checkpointed, lambda: S.bounded_case_inputs([np.float32], 1, -10, 10),
         _smooth_np, rtol=1e-5, atol=1e-5),
    Case("custom_jvp", _custom_jvp_fn, lambda: S.bounded_case_inputs([np.float32], 1, -10, 10),
         lambda x: np.sin(x) * x),
    Case("custom_vjp", _custom_vjp_fn, lambda: S.bounded_case_inputs([np.float32], 2, -10, 10),
         lambda x, y: np.sin(x) * y),
    Case("custom_vmap", _custom_vmap_fn, lambda: S.bounded_case_inputs([np.float32], 1, -10, 10),
         lambda x: np.sin(x) * x),
]

AD_CASES = [
    ADCase("jit", _jitted, _inputs(), ("jit",), order=2),
    ADCase("stage", lambda x: _smooth(lax.stage(x)), _inputs(), ("stage",), order=2),
    ADCase("dce_sink", _sunk, _inputs(), ("dce_sink",), order=2),
    ADCase("checkpoint", _checkpointed, _inputs(), ("checkpoint",), order=2),
    ADCase("checkpoint_name", _checkpointed_names, _inputs(), ("checkpoint", "name"), order=2),
    ADCase("custom_jvp", _custom_jvp_fn, _inputs(), ("custom_jvp_call",), order=2),
    ADCase("custom_vjp", lambda x: _custom_vjp_fn(x, jnp.cos(x)), _inputs(),
           ("custom_vjp_call", "custom_lin"), modes=("rev",)),
    ADCase("custom_vmap", _custom_vmap_fn, _inputs(), ("custom_vmap_call",), modes=("fwd",),
           order=2),
]
