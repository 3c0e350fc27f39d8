"""A sum over the trailing axes of the result of a fused elementwise loop,
its only reader, reads the loop's rows as the loop computes them, a group
of rows at a time (`lower.Rows`), instead of a stored array: the same sums
in the same order, so the reference's bits (float32 exp and tanh by the
checked functions, `Lowering.float32_functions`); and the loops that
threads run are compiled for wide vectors (`scalars.wide_vectors`)."""

from unittest import mock

import numba
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import lax
from numba_backend import scalars, threads
from numba_backend.lower import Lowering, lower_program

pytest.importorskip("numba")

SETTINGS = settings(max_examples=4, deadline=None, database=None)


@pytest.fixture(autouse=True)
def checked_float32_functions():
  with mock.patch.object(Lowering, "float32_functions", False):
    yield


def _logsumexp(x, b, c):
  return jax.nn.logsumexp(x, axis=(-2, -1))


def _bias_sum(x, b, c):   # an operand read along the row (a column broadcast)
  return jnp.sum(jnp.exp(x * b), axis=(-2, -1))


def _two_results(x, b, c):   # the loop stores its other result as it computes the rows
  y = x * 3 - c
  w = y * y
  return jnp.sum(y, axis=-1), w


def _partly_broadcast(x, b, c):   # c is neither constant nor contiguous along (1, 2): no rows
  return jnp.sum(x + c, axis=(1, 2))


PROGRAMS = {   # name: (program, whether its sum reads rows, of x's shape)
    "logsumexp": (_logsumexp, lambda shape: True),
    "bias": (_bias_sum, lambda shape: True),
    "two results": (_two_results, lambda shape: True),
    "partly broadcast": (_partly_broadcast, lambda shape: shape[1] == 1 or shape[2] == 1)}


def _operands(rng, shape, dtype):
  x = rng.standard_normal(shape) * 4
  if np.issubdtype(dtype, np.complexfloating):
    x = x + 1j * rng.standard_normal(shape)
  x = x.astype(dtype)
  if x.size and np.issubdtype(dtype, np.inexact):
    x.reshape(-1)[rng.integers(0, x.size, 2)] = [np.inf, np.nan]
  return x, x[0].copy(), x[:, :, :1].copy()


@pytest.mark.parametrize("name", PROGRAMS)
@SETTINGS
@given(shape=st.tuples(st.integers(2, 9), st.integers(1, 5), st.integers(0, 300)),
       seed=st.integers(0, 2**32 - 1))
def test_sums_of_a_loop_read_as_rows_are_the_references(name, shape, seed):
  program, fused = PROGRAMS[name]
  x, b, c = _operands(np.random.default_rng(seed), shape, np.float32)
  if x.size:   # (empty rows may be lowered either way)
    source = lower_program(jax.make_jaxpr(program)(x, b, c).jaxpr)[0]
    assert ("K.apart(" in source) == fused(shape)
  for r, n in zip(jax.tree.leaves(jax.jit(program)(x, b, c)),
                  jax.tree.leaves(jax.jit(program, backend="numba")(x, b, c))):
    np.testing.assert_array_equal(np.asarray(n), np.asarray(r))


@pytest.mark.parametrize("dtype", [np.int32, np.complex64, np.float64])
def test_sums_of_rows_in_other_dtypes(dtype):
  with jax.enable_x64(dtype == np.float64):
    x, b, c = _operands(np.random.default_rng(1), (5, 3, 70), dtype)
    program = jax.jit(lambda x, c: jnp.sum(x * x - c, axis=(1, 2)))
    numba_program = jax.jit(lambda x, c: jnp.sum(x * x - c, axis=(1, 2)), backend="numba")
    np.testing.assert_array_equal(np.asarray(numba_program(x, c)), np.asarray(program(x, c)))


def test_threads_sum_the_rows_of_a_large_loop():
  """Rows of exp(x - max) enough for threads (`threads.min_elements`), each
  group of them computed by the thread that sums it."""
  x = np.random.default_rng(2).standard_normal((300, 700)).astype(np.float32)
  source = lower_program(jax.make_jaxpr(lambda x: jax.nn.logsumexp(x, -1))(x).jaxpr)[0]
  assert "K.apart(" in source
  if threads.AVAILABLE:   # (the row maxima's loop is too small for threads)
    threaded = source[source.index("numba.prange"):]
    assert "K.apart(" in threaded and "row_sums(" in threaded
  np.testing.assert_array_equal(
      np.asarray(jax.jit(lambda x: jax.nn.logsumexp(x, -1), backend="numba")(x)),
      np.asarray(jax.jit(lambda x: jax.nn.logsumexp(x, -1))(x)))


def test_a_single_row_is_not_read_as_rows():
  """One row keeps the stored operand, whose sum threads split
  (`pairwise_threads`), rather than one thread computing the whole row."""
  source = lower_program(jax.make_jaxpr(lambda x: lax.reduce_sum(jnp.exp(x), (1,)))(
      np.ones((1, 10), np.float32)).jaxpr)[0]
  assert "K.apart(" not in source


def test_wide_vectors_marks_the_function_calling_it():
  @numba.njit
  def marked(x):
    scalars.wide_vectors()
    return x + 1

  marked(1.0)
  ir = marked.inspect_llvm(marked.signatures[0])
  assert '"prefer-vector-width"="512"' in ir and '"min-legal-vector-width"="512"' in ir
