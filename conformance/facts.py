"""JAX's behaviour recorded as data, and the check that an implementation agrees.

A `Fact` is a call (a function of array arguments) and what JAX 0.10 gives for
it (CPU, x64 off unless the fact says so): a `Value` with its dtype and weak
type, or `Raises`, an error class with a fragment of its message. `check`
runs the call eagerly and, where the fact says so, under `jit` and batched
under `vmap` (over a leading axis of 2, every argument stacked twice).
"""

from dataclasses import dataclass

import numpy as np

import refimpl as jax
import refimpl.numpy as jnp


@dataclass
class Value:
  """The result JAX gives: `value` (as NumPy data) of dtype `dtype`."""
  value: object
  dtype: str
  weak_type: bool = False


@dataclass
class Raises:
  """The error JAX raises: its class and a fragment of its message."""
  error: type
  fragment: str


@dataclass
class Fact:
  name: str
  fun: object         # called with `args` as Arrays
  args: tuple
  expected: object    # Value or Raises
  jit: bool = True    # also as jit(fun)(*args)
  vmap: bool = False  # also as vmap(fun) over the arguments stacked twice
  x64: bool = False   # with jax_enable_x64 on


def _modes(fact):
  """(mode, function, arguments, whether batched) for each way to run `fact`."""
  args = tuple(jnp.asarray(a) for a in fact.args)
  yield "eager", fact.fun, args, False
  if fact.jit:
    yield "jit", jax.jit(fact.fun), args, False
  if fact.vmap and fact.args:
    yield "vmap", jax.vmap(fact.fun), tuple(jnp.stack([a, a]) for a in args), True


def _agrees(fun, args, expected, batched):
  if isinstance(expected, Raises):
    try:
      fun(*args)
    except expected.error as err:
      assert expected.fragment in str(err), f"message {str(err)!r}"
      return
    raise AssertionError(f"no {expected.error.__name__} raised")
  out = fun(*args)
  got, want = np.asarray(out), np.asarray(expected.value, dtype=expected.dtype)
  if batched:
    want = np.stack([want, want])
  assert got.dtype == want.dtype, (got.dtype, want.dtype)
  np.testing.assert_array_equal(got, want)
  if not batched and isinstance(out, jax.Array):
    assert out.weak_type == expected.weak_type, f"weak_type {out.weak_type}"


def check(fact):
  """Raises AssertionError naming the fact and the mode where refimpl disagrees."""
  with jax.enable_x64(fact.x64):
    for mode, fun, args, batched in _modes(fact):
      try:
        _agrees(fun, args, fact.expected, batched)
      except AssertionError as err:
        raise AssertionError(f"{fact.name} ({mode}): {err}") from None
