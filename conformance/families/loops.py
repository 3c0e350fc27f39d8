"""Cases for refimpl/lax/control_flow/loops.py: `scan` (pytree carries and
ys, `reverse`, `xs=None`), `fori_loop` (static bounds, which scan, and
bounds passed as arrays, which under `jit` and `vmap` are traced and loop
with `while`), `map` (with and without `batch_size`) and
`associative_scan`, each against its Python-loop definition (the ones
JAX's documentation gives) written with NumPy.

Operands are bounded floats, so the loops' results stay well within the
float tolerances; the derivative cases differentiate the same loops,
forwards and backwards, against finite differences.
"""

import numpy as np
from hypothesis import strategies as st

import refimpl.numpy as jnp
from refimpl import dtypes, lax
from conformance import strategies as S
from conformance.autodiff import ADCase
from conformance.cases import Case

FLOATS = [dtypes.float32]


def _loop_inputs(dtype_list=FLOATS, n=1, bound=1.0, min_dims=1, kwargs=None):
  """`n` arrays of one float dtype and one shape (leading axis >= 0, the
  scanned one), elements in [-bound, bound], and static kwargs."""
  @st.composite
  def inputs(draw):
    dtype = draw(st.sampled_from(dtype_list))
    shape = draw(S.shapes(min_dims=min_dims, max_dims=3))
    arrays = tuple(draw(S.bounded_arrays(dtype, shape, bound)) for _ in range(n))
    return arrays, {} if kwargs is None else draw(kwargs)
  return inputs


def _np_scan(f, init, xs, length=None, reverse=False):
  """JAX's definition of scan, with NumPy (xs a list of arrays or None)."""
  n = length if xs is None else len(xs[0])
  carry, ys = init, [None] * n
  for i in (reversed(range(n)) if reverse else range(n)):
    carry, ys[i] = f(carry, None if xs is None else [x[i] for x in xs])
  return carry, ys


def _np_stack(ys, shape, dtype):
  """The ys of a NumPy loop stacked into `shape` (zero iterations included)."""
  return np.asarray(ys, dtype).reshape(shape)


# --- scan ---------------------------------------------------------------------

def _running_sum(xs, reverse):
  return lax.scan(lambda c, x: (c + x, c), jnp.zeros(xs.shape[1:], xs.dtype), xs,
                  reverse=reverse)


def _np_running_sum(xs, reverse):
  carry, ys = _np_scan(lambda c, x: (c + x[0], c), np.zeros(xs.shape[1:], xs.dtype), [xs],
                       reverse=reverse)
  return carry, _np_stack(ys, xs.shape, xs.dtype)


def _pytree_body(c, x):
  """A carry (sum, product) and ys {"prev": the previous sum, "scaled": 2 x}."""
  s, p = c
  return (s + x, p * x), {"prev": s, "scaled": 2 * x}


def _pytree_scan(xs):
  zeros = jnp.zeros(xs.shape[1:], xs.dtype)
  return lax.scan(_pytree_body, (zeros, zeros + 1), xs)


def _np_pytree_scan(xs):
  zeros = np.zeros(xs.shape[1:], xs.dtype)
  (s, p), ys = _np_scan(lambda c, x: _pytree_body(c, x[0]), (zeros, zeros + 1), [xs])
  stack = lambda k: _np_stack([y[k] for y in ys], xs.shape, xs.dtype)
  return (s, p), {"prev": stack("prev"), "scaled": stack("scaled")}


def _horner(coefficients, x):
  """The polynomial with `coefficients` (highest degree first) at `x`."""
  return lax.scan(lambda acc, a: (acc * x + a, acc), jnp.zeros_like(x), coefficients)


def _np_horner(coefficients, x):
  acc, ys = _np_scan(lambda acc, a: (acc * x + a[0], acc), np.zeros_like(x), [coefficients])
  return acc, _np_stack(ys, coefficients.shape, x.dtype)


def _doubling(x, length):
  """A scan over nothing (`xs=None`): the carry doubles and increments."""
  return lax.scan(lambda c, _: (c * 2 + 1, c), x, None, length=length)


def _np_doubling(x, length):
  carry, ys = _np_scan(lambda c, _: (c * 2 + 1, c), x, None, length=length)
  return carry, _np_stack(ys, (length, *x.shape), x.dtype)


@st.composite
def _horner_inputs(draw):
  dtype = draw(st.sampled_from(FLOATS))
  x = draw(S.bounded_arrays(dtype, S.shapes(0, 2), 1.0))
  coefficients = draw(S.bounded_arrays(dtype, (draw(st.integers(0, 5)), *x.shape), 1.0))
  return (coefficients, x), {}


# --- fori_loop ----------------------------------------------------------------

def _fori_body(i, c):
  return c * 0.5 + i


def _fori_static(x):
  return lax.fori_loop(1, 5, _fori_body, x)


def _fori_bounds(x, lower, upper):
  """Bounds as arrays: concrete when called eagerly (a scan), traced under
  jit or vmap (a while loop)."""
  return lax.fori_loop(lower, upper, _fori_body, x)


def _np_fori(x, lower, upper):
  for i in range(int(lower), int(upper)):
    x = (x * 0.5 + i).astype(x.dtype)
  return x


@st.composite
def _bounds_inputs(draw):
  x = draw(S.bounded_arrays(np.float32, S.shapes(0, 2), 1.0))
  lower = np.int32(draw(st.integers(-2, 3)))
  return (x, lower, np.int32(draw(st.integers(-2, 4)))), {}


# --- map and associative_scan ---------------------------------------------------

def _mapped(x):
  return jnp.sin(x) * jnp.sum(x)


def _np_mapped(xs):
  return _np_stack([np.sin(x) * np.sum(x) for x in xs], xs.shape, xs.dtype)


_COMBINE = {"add": (lax.add, np.add), "mul": (lax.mul, np.multiply),
            "max": (lax.max, np.maximum)}


def _associative(x, op, axis, reverse):
  return lax.associative_scan(_COMBINE[op][0], x, reverse=reverse, axis=axis)


def _np_associative(x, op, axis, reverse):
  """`np.cumsum`, `np.cumprod`, `np.maximum.accumulate`, reversed if asked."""
  ufunc = _COMBINE[op][1]
  if reverse:
    return np.flip(ufunc.accumulate(np.flip(x, axis), axis=axis), axis)
  return ufunc.accumulate(x, axis=axis)


@st.composite
def _associative_inputs(draw):
  x = draw(S.bounded_arrays(np.float32, S.shapes(1, 3), 1.0))
  return (x,), {"op": draw(st.sampled_from(sorted(_COMBINE))),
                "axis": draw(st.integers(-x.ndim, x.ndim - 1)),
                "reverse": draw(st.booleans())}


def _pair_scan(a, b):
  """associative_scan of a pytree: the composition of affine maps x -> a x + b."""
  return lax.associative_scan(lambda f, g: (f[0] * g[0], f[1] * g[0] + g[1]), (a, b))


def _np_pair_scan(a, b):
  if not len(a):
    return a, b
  out_a, out_b = [a[0]], [b[0]]
  for i in range(1, len(a)):
    out_a.append(out_a[-1] * a[i])
    out_b.append(out_b[-1] * a[i] + b[i])
  return np.stack(out_a), np.stack(out_b)


CASES = [
    Case("lax.scan", _running_sum, _loop_inputs(kwargs=st.fixed_dictionaries(
        {"reverse": st.booleans()})), _np_running_sum, rtol=1e-5, atol=1e-6),
    Case("lax.scan_pytree", _pytree_scan, _loop_inputs(), _np_pytree_scan, rtol=1e-5, atol=1e-6),
    Case("lax.scan_horner", _horner, _horner_inputs, _np_horner, rtol=1e-5, atol=1e-6),
    Case("lax.scan_no_xs", _doubling, _loop_inputs(min_dims=0, kwargs=st.fixed_dictionaries(
        {"length": st.integers(0, 4)})), _np_doubling),
    Case("lax.fori_loop", _fori_static, _loop_inputs(min_dims=0),
         lambda x: _np_fori(x, 1, 5), rtol=1e-5, atol=1e-6),
    Case("lax.fori_loop_bounds", _fori_bounds, _bounds_inputs, _np_fori, rtol=1e-5, atol=1e-6),
    Case("lax.map", lambda x: lax.map(_mapped, x), _loop_inputs(), _np_mapped,
         rtol=1e-5, atol=1e-6),
    Case("lax.map_batch_size", lambda x, batch_size: lax.map(_mapped, x, batch_size=batch_size),
         _loop_inputs(kwargs=st.fixed_dictionaries({"batch_size": st.integers(1, 3)})),
         lambda x, batch_size: _np_mapped(x), rtol=1e-5, atol=1e-6),
    Case("lax.associative_scan", _associative, _associative_inputs, _np_associative,
         rtol=1e-5, atol=1e-6),
    Case("lax.associative_scan_pytree", _pair_scan, _loop_inputs(n=2), _np_pair_scan,
         rtol=1e-5, atol=1e-6),
]


# --- derivatives -----------------------------------------------------------------

def _ad_inputs(n=1, min_dims=1, max_side=3):
  shape = S.shapes(min_dims=min_dims, max_dims=2, min_side=1, max_side=max_side)
  return lambda: shape.flatmap(lambda s: st.tuples(
      st.tuples(*[S.bounded_arrays(np.float64, s, 1.0) for _ in range(n)]), st.just({})))


def _smooth_scan(w, xs):
  """A nonlinear recurrence whose carry and ys depend on a const `w` and on xs."""
  def body(c, x):
    c = jnp.sin(c * w) + x * w
    return c, c * x
  carry, ys = lax.scan(body, jnp.ones_like(w), xs)
  return carry, ys


def _zero_init_scan(w, xs):
  """The carry starts as a constant (zero tangent) and picks up a tangent
  from `w` in the first iteration: the JVP's fixpoint over carries."""
  return lax.scan(lambda c, x: (c * x + w, jnp.cos(c)), jnp.zeros_like(w), xs, reverse=True)


AD_CASES = [
    ADCase("lax.scan", _smooth_scan, _ad_inputs(2), ("scan",), order=2),
    ADCase("lax.scan_zero_init", _zero_init_scan, _ad_inputs(2), ("scan",)),
    ADCase("lax.fori_loop", lambda x: lax.fori_loop(0, 3, lambda i, c: jnp.sin(c) * i + c, x),
           _ad_inputs(min_dims=0), ("scan",)),
    ADCase("lax.map", lambda x: lax.map(_mapped, x, batch_size=2), _ad_inputs(), ("scan",)),
    ADCase("lax.associative_scan",
           lambda x: lax.associative_scan(lambda a, b: a * jnp.cos(b) + b, x, axis=-1),
           _ad_inputs(), ("mul", "add", "cos", "pad")),
]
