"""`jax.test_util`: automatic derivatives checked against finite differences.

Each check looks along one random direction only (normal entries from
`np.random.RandomState(0)`, complex ones for complex values), so that it stays
cheap for large inputs and outputs. A JVP is compared with the central
difference `(f(x + eps*t) - f(x - eps*t)) / (2*eps)`; a VJP by the identity
`<t, vjp(c)> == <jvp(t), c>` for random `t` and `c`, the JVP again by finite
differences. Tolerances default per dtype (float32: 2e-3, float64: 1e-5, ...)
and, as in JAX, are scaled by the number of elements compared. A mismatch
raises AssertionError.
"""

import functools

import numpy as np

from refimpl import dtypes, tree_util
from refimpl.autodiff import jvp, linearize, vjp
from refimpl.config import config

__all__ = ["check_grads", "check_jvp", "check_vjp"]

EPS = 1e-4
"""The default finite-difference step."""

_DEFAULT_TOLERANCE = {
    dtypes.float0: 0, dtypes.bool_: 0,
    dtypes.int2: 0, dtypes.int4: 0, dtypes.int8: 0, dtypes.int16: 0, dtypes.int32: 0,
    dtypes.int64: 0, dtypes.uint2: 0, dtypes.uint4: 0, dtypes.uint8: 0, dtypes.uint16: 0,
    dtypes.uint32: 0, dtypes.uint64: 0,
    dtypes.float4_e2m1fn: 1e0, dtypes.float8_e3m4: 1e-1, dtypes.float8_e4m3: 1e-1,
    dtypes.float8_e8m0fnu: 1e0, dtypes.float8_e4m3b11fnuz: 1e-1, dtypes.float8_e4m3fn: 1e-1,
    dtypes.float8_e4m3fnuz: 1e-1, dtypes.float8_e5m2: 1e-1, dtypes.float8_e5m2fnuz: 1e-1,
    dtypes.bfloat16: 1e-2, dtypes.float16: 1e-3, dtypes.float32: 1e-6, dtypes.float64: 1e-15,
    dtypes.complex64: 1e-6, dtypes.complex128: 1e-15,
}
"""JAX's tolerance of a value's dtype where no other is given (integers: exact)."""

_GRADIENT_TOLERANCE = {
    dtypes.float4_e2m1fn: 1e0, dtypes.float8_e3m4: 1e-1, dtypes.float8_e4m3: 1e-1,
    dtypes.float8_e8m0fnu: 1e0, dtypes.float8_e4m3b11fnuz: 1e-1, dtypes.float8_e4m3fn: 1e-1,
    dtypes.float8_e4m3fnuz: 1e-1, dtypes.float8_e5m2: 1e-1, dtypes.float8_e5m2fnuz: 1e-1,
    dtypes.bfloat16: 1e-1, dtypes.float16: 1e-2, dtypes.float32: 2e-3, dtypes.float64: 1e-5,
    dtypes.complex64: 1e-3, dtypes.complex128: 1e-5,
}
"""JAX's default tolerances (absolute and relative) of derivative checks."""


def _dtype(x):
  """`x`'s dtype, uncanonicalized: a Python float is float64."""
  return x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype


def _merge_tolerance(tol, default):
  """A tolerance argument: a number, or per-dtype values overriding `default`."""
  if tol is None:
    return default
  if not isinstance(tol, dict):
    return tol
  return {**default, **{np.dtype(k): v for k, v in tol.items()}}


def _tolerance(dtype, tol):
  """The tolerance for values of `dtype`: `tol` itself unless it is per-dtype."""
  if not isinstance(tol, dict):
    return tol
  dtype = dtypes.canonicalize_dtype(dtype)
  return tol.get(dtype, _DEFAULT_TOLERANCE[dtype])


def _upcast(x):
  """`x` in a dtype `np.testing` handles: narrow floats and bfloat16 as
  float32, narrow integers as int8 or uint8."""
  if x.dtype == dtypes.bfloat16 or x.dtype in dtypes.NARROW_FLOAT_DTYPES:
    return x.astype(np.float32)
  if x.dtype in dtypes.NARROW_INT_DTYPES:
    return x.astype(np.uint8 if dtypes.is_unsigned(x.dtype) else np.int8)
  return x


def _assert_close(a, b, atol, rtol, err_msg):
  """Leaves `a` and `b` agree within the larger tolerance of their dtypes,
  scaled by their size (float0 leaves: equal)."""
  a, b = np.asarray(a), np.asarray(b)
  if a.shape != b.shape:
    raise AssertionError(f"{err_msg}: shapes {a.shape} and {b.shape} differ")
  if a.dtype == b.dtype == dtypes.float0:
    np.testing.assert_array_equal(a, b, err_msg=err_msg)
    return
  atol = max(_tolerance(a.dtype, atol), _tolerance(b.dtype, atol))
  rtol = max(_tolerance(a.dtype, rtol), _tolerance(b.dtype, rtol))
  tols = {}   # a zero tolerance leaves np.testing's default, as in JAX
  if atol:
    tols["atol"] = atol * a.size
  if rtol:
    tols["rtol"] = rtol * b.size
  with np.errstate(invalid="ignore"):
    np.testing.assert_allclose(_upcast(a), _upcast(b), **tols, err_msg=err_msg)


def _check_close(xs, ys, atol, rtol, err_msg):
  tree_util.tree_map(functools.partial(_assert_close, atol=atol, rtol=rtol, err_msg=err_msg),
                     xs, ys)


def _check_dtypes_match(xs, ys, err_msg):
  """Leaves of `xs` and `ys` have equal dtypes (after canonicalization
  unless x64 is on)."""
  def check(x, y):
    dx, dy = _dtype(x), _dtype(y)
    if not config.jax_enable_x64:
      dx, dy = dtypes.canonicalize_dtype(dx), dtypes.canonicalize_dtype(dy)
    if dx != dy:
      raise AssertionError(f"{err_msg}: dtypes {dx} and {dy} differ")
  tree_util.tree_map(check, xs, ys)


def _leafwise(f):
  """`f` applied leafwise to trees, each result in the dtype of the first
  tree's leaf (a Python scalar where all the leaves are)."""
  def apply(*xs):
    out = np.array(f(*xs), dtype=_dtype(xs[0]))
    return out.item() if all(dtypes.is_python_scalar(x) for x in xs) else out
  return functools.partial(tree_util.tree_map, apply)


_add = _leafwise(np.add)
_sub = _leafwise(np.subtract)
_conj = _leafwise(np.conj)


def _scale(xs, a):
  """Each leaf times `a`, computed in the leaf's dtype."""
  return _leafwise(lambda x: np.multiply(x, np.array(a, _dtype(x)), dtype=_dtype(x)))(xs)


def _safe_sub(xs, ys):
  """`xs - ys` leafwise, with `inf - inf == 0` (equal values differ by 0)."""
  def sub(x, y):
    dtype = _dtype(x)
    x, y = np.asarray(x), np.asarray(y)
    with np.errstate(invalid="ignore"):
      return np.where(x == y, np.array(0, dtype), np.subtract(x, y, dtype=dtype))
  return tree_util.tree_map(sub, xs, ys)


def _rand_like(rng, x):
  """Normal values of `x`'s shape and dtype (complex for complex `x`)."""
  shape, dtype = np.shape(x), _dtype(x)
  out = np.asarray(rng.randn(*shape), dtype)
  if dtypes.is_complex(dtype):
    out = out + dtype.type(1j) * np.asarray(rng.randn(*shape), dtype)
  return out.item() if dtypes.is_python_scalar(x) else out


def _inner_prod(xs, ys):
  """The real part of the inner product `<xs, ys>` of two trees."""
  def contract(x, y):
    return np.real(np.dot(np.conj(x).reshape(-1), np.asarray(y).reshape(-1)))
  return tree_util.tree_reduce(np.add, tree_util.tree_map(contract, xs, ys))


def _numerical_jvp(f, primals, tangents, eps):
  """The central difference of `f` at `primals` along `tangents`."""
  delta = _scale(tangents, eps)
  f_pos = f(*_add(primals, delta))
  f_neg = f(*_sub(primals, delta))
  return _scale(_safe_sub(f_pos, f_neg), 0.5 / eps)


def _message(err_msg, what):
  return f"{err_msg} {what}" if err_msg else what


def check_jvp(f, f_jvp, args, atol=None, rtol=None, eps=EPS, err_msg=''):
  """Checks `f_jvp` (usually `functools.partial(jax.jvp, f)`) at `f(*args)`.

  `f_jvp(args, tangents)` must return `f(*args)` and, in matching dtypes,
  a tangent close to the central difference of `f` with step `eps`. `atol`
  and `rtol` are numbers or `{dtype: tolerance}` dicts. AssertionError (its
  message starting with `err_msg`) otherwise.
  """
  atol = _merge_tolerance(atol, _GRADIENT_TOLERANCE)
  rtol = _merge_tolerance(rtol, _GRADIENT_TOLERANCE)
  rng = np.random.RandomState(0)
  tangent = tree_util.tree_map(functools.partial(_rand_like, rng), args)
  v_out, t_out = f_jvp(args, tangent)
  _check_dtypes_match(v_out, t_out, _message(err_msg, "tangent"))
  v_out_expected = f(*args)
  _check_dtypes_match(v_out, v_out_expected, _message(err_msg, "primal"))
  t_out_expected = _numerical_jvp(f, args, tangent, eps)
  _check_close(v_out, v_out_expected, atol, rtol, _message(err_msg, "primal"))
  _check_close(t_out, t_out_expected, atol, rtol, _message(err_msg, "tangent"))


def check_vjp(f, f_vjp, args, atol=None, rtol=None, eps=EPS, err_msg=''):
  """Checks `f_vjp` (usually `functools.partial(jax.vjp, f)`) at `f(*args)`.

  `f_vjp(*args)` must return `f(*args)` and a function `vjp` with
  `<t, vjp(c)> == <jvp(t), c>` for a random tangent `t` and cotangent `c`,
  `jvp(t)` the central difference of `f` with step `eps`. Tolerances and
  errors as for `check_jvp`.
  """
  atol = _merge_tolerance(atol, _GRADIENT_TOLERANCE)
  rtol = _merge_tolerance(rtol, _GRADIENT_TOLERANCE)
  rand_like = functools.partial(_rand_like, np.random.RandomState(0))
  v_out, vjp_fun = f_vjp(*args)
  v_out_expected = f(*args)
  _check_close(v_out, v_out_expected, atol, rtol, _message(err_msg, "primal"))
  tangent = tree_util.tree_map(rand_like, args)
  tangent_out = _numerical_jvp(f, args, tangent, eps)
  cotangent = tree_util.tree_map(rand_like, v_out)
  cotangent_out = _conj(vjp_fun(_conj(cotangent)))
  _check_close(_inner_prod(tangent, cotangent_out), _inner_prod(tangent_out, cotangent),
               atol, rtol, _message(err_msg, "cotangent projection"))


def _linearized_jvp(f, primals, tangents):
  """`jvp(f, primals, tangents)` computed through `linearize`."""
  out, f_lin = linearize(f, *primals)
  return out, f_lin(*tangents)


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
  """Checks `f`'s derivatives at `args` up to `order`.

  For each of `modes`: "fwd" checks `jax.jvp` (`check_jvp`), "rev"
  `jax.vjp` (`check_vjp`), "lin" `jax.linearize`; for `order > 1` the same
  checks then apply, one order lower, to the function computing that
  derivative (the JVP as a function of primals and tangents; the VJP applied
  to `f`'s own output). `eps` defaults to 1e-4. AssertionError on a mismatch.
  """
  args = tuple(args)
  eps = eps or EPS

  def check(f, args, order, err_msg):
    if "fwd" in modes:
      msg = f"JVP of {err_msg}" if err_msg else "JVP"
      check_jvp(f, functools.partial(jvp, f), args, atol, rtol, eps, msg)
      if order > 1:
        check(functools.partial(jvp, f), (args, args), order - 1, msg)
    if "rev" in modes:
      msg = f"VJP of {err_msg}" if err_msg else "VJP"
      check_vjp(f, functools.partial(vjp, f), args, atol, rtol, eps, msg)
      if order > 1:
        def f_vjp(*args):
          out, vjp_fun = vjp(f, *args)
          return vjp_fun(out)
        check(f_vjp, args, order - 1, msg)
    if "lin" in modes:
      msg = f"LIN of {err_msg}" if err_msg else "LIN"
      check_jvp(f, functools.partial(_linearized_jvp, f), args, atol, rtol, eps, msg)
      if order > 1:
        check(functools.partial(_linearized_jvp, f), (args, args), order - 1, msg)

  check(f, args, order, "")
