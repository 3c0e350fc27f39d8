"""Cases for `lax.while_loop` (the `while` primitive): loops whose trip count
depends on the data, each against the Python while loop that defines it
(`val = init; while cond(val): val = body(val)`) run on NumPy values.

Under the vmap property the members of a batch are the drawn arrays
shuffled, so the loops that test one element (`count_up`) stop at different
iterations for different members: a batched predicate with masked carries.
"""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import refimpl.numpy as jnp
from refimpl import lax
from conformance import strategies as S
from conformance.autodiff import ADCase
from conformance.cases import Case


def _python_while_loop(cond_fun, body_fun, init_val):
  val = init_val
  while cond_fun(val):
    val = body_fun(val)
  return val


# Count up from x in steps of `step` (a body constant) until the first
# element reaches `bound`; the trip count depends on x[0] and step[0].

def _count_up(x, step, bound=30):
  return lax.while_loop(lambda c: c[1].ravel()[0] < bound,
                        lambda c: (c[0] + 1, c[1] + step), (0, x))


def _count_up_np(x, step, bound=30):
  return _python_while_loop(lambda c: c[1].ravel()[0] < bound,
                            lambda c: (c[0] + 1, c[1] + step), (np.int32(0), x))


def _count_up_inputs():
  shape = S.shapes(min_dims=1, max_dims=2, min_side=1)
  return shape.flatmap(lambda s: st.tuples(
      st.tuples(hnp.arrays(np.int32, s, elements=st.integers(-20, 40)),
                hnp.arrays(np.int32, s, elements=st.integers(1, 5))),
      st.just({})))


# Collatz: every element is stepped (halved if even, else 3x + 1) until all
# reach 1, counting each element's steps.

def _collatz(x):
  def body(c):
    x, steps = c
    done = x == 1
    nxt = jnp.where(x % 2 == 0, x // 2, 3 * x + 1)
    return jnp.where(done, x, nxt), steps + jnp.where(done, 0, 1)
  return lax.while_loop(lambda c: jnp.any(c[0] != 1), body, (x, jnp.zeros_like(x)))


def _collatz_np(x):
  def body(c):
    x, steps = c
    done = x == 1
    nxt = np.where(x % 2 == 0, x // 2, 3 * x + 1)
    return np.where(done, x, nxt).astype(x.dtype), steps + np.where(done, 0, 1).astype(x.dtype)
  return _python_while_loop(lambda c: np.any(c[0] != 1), body, (x, np.zeros_like(x)))


def _collatz_inputs():
  return st.tuples(st.tuples(hnp.arrays(np.int32, S.shapes(max_dims=2),
                                        elements=st.integers(1, 60))), st.just({}))


# Newton's iteration for sqrt(x), until an iteration leaves y unchanged
# (at most 50 iterations): the cond reads y from the carry and the body
# reads x, closed over.

def _newton_sqrt(x, max_iter=50):
  def cond(c):
    i, y_prev, y = c
    return (i < max_iter) & jnp.any(y != y_prev)

  def body(c):
    i, _, y = c
    return i + 1, y, (y + x / y) / 2
  _, _, y = lax.while_loop(cond, body, (0, jnp.zeros_like(x), jnp.ones_like(x) + x))
  return y


def _newton_sqrt_np(x, max_iter=50):
  def cond(c):
    i, y_prev, y = c
    return (i < max_iter) & np.any(y != y_prev)

  def body(c):
    i, _, y = c
    return i + 1, y, ((y + x / y) / 2).astype(x.dtype)
  return _python_while_loop(cond, body, (0, np.zeros_like(x), np.ones_like(x) + x))[2]


def _positive_floats(dtype, max_dims=2, min_side=0):
  shape = S.shapes(max_dims=max_dims, min_side=min_side)
  return st.tuples(st.tuples(hnp.arrays(dtype, shape,
                                        elements=S.bounded_elements(dtype, 0.25, 50.0))),
                   st.just({}))


# A smooth loop with a data-independent trip count (`n` iterations, counted
# by an integer carry), for derivatives up to order 2.

def _damped_sines(x, n=4):
  def body(c):
    i, y = c
    return i + 1, jnp.sin(y) * x + y / 2
  return lax.while_loop(lambda c: c[0] < n, body, (0, x))[1]


def _damped_sines_np(x, n=4):
  def body(c):
    i, y = c
    return i + 1, (np.sin(y) * x + y / 2).astype(x.dtype)
  return _python_while_loop(lambda c: c[0] < n, body, (0, x))[1]


# Nested loops: an outer count whose body runs an inner loop doubling y
# until some element exceeds the outer counter's square (never for an empty
# y: it is not drawn).

def _nested(x):
  def outer_body(c):
    i, y = c
    y = lax.while_loop(lambda y: jnp.all(y <= i * i), lambda y: y * 2, y)
    return i + 1, y
  return lax.while_loop(lambda c: c[0] < 4, outer_body, (1.0, x))[1]


def _nested_np(x):
  def outer_body(c):
    i, y = c
    y = _python_while_loop(lambda y: np.all(y <= i * i), lambda y: (y * 2).astype(x.dtype), y)
    return i + 1, y
  return _python_while_loop(lambda c: c[0] < 4, outer_body, (1.0, x))[1]


CASES = [
    Case("lax.while_loop.count_up", _count_up, _count_up_inputs, _count_up_np),
    Case("lax.while_loop.collatz", _collatz, _collatz_inputs, _collatz_np),
    Case("lax.while_loop.newton_sqrt", _newton_sqrt, lambda: _positive_floats(np.float32),
         _newton_sqrt_np, rtol=1e-6, atol=1e-6),
    Case("lax.while_loop.damped_sines", _damped_sines,
         lambda: S.bounded_case_inputs([np.float32], 1, -2.0, 2.0, max_dims=2),
         _damped_sines_np, rtol=1e-5, atol=1e-5),
    Case("lax.while_loop.nested", _nested,
         lambda: _positive_floats(np.float32, max_dims=1, min_side=1),
         _nested_np),
]

AD_CASES = [
    ADCase("lax.while_loop.damped_sines", _damped_sines,
           lambda: S.bounded_case_inputs([np.float64], 1, -2.0, 2.0, max_dims=2),
           ("while",), modes=("fwd",), order=2),
    ADCase("lax.while_loop.newton_sqrt", _newton_sqrt, lambda: _positive_floats(np.float64),
           ("while",), modes=("fwd",)),
]
