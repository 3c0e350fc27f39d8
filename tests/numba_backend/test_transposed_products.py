"""Matrix products whose operands or result lie transposed: BLAS reads the
operands where they lie (its transpose flags), and a product that only a
transpose reads is computed as the product of its operands swapped; both
within the dot_general tolerance of the reference (docs/backends.md), by
BLAS and by the loop of small or non-finite products."""

import numpy as np
import pytest

import refimpl as jax
from refimpl import dtypes, lax
from numba_backend.lower import lower_program
from tests.numba_backend.test_linalg import _abs_finite, assert_dot_close

pytest.importorskip("numba")

# name: (the program of operands a, b, c, d, the einsum of the same product)
PRODUCTS = {
    "left transposed": (lambda a, b, c, d: lax.dot_general(a, b, (((0,), (0,)), ((), ()))),
                        "km,kn->mn", "ab"),
    "right transposed": (lambda a, b, c, d: lax.dot_general(c, d, (((1,), (1,)), ((), ()))),
                         "mk,nk->mn", "cd"),
    "both transposed": (lambda a, b, c, d: lax.dot_general(a, d, (((0,), (1,)), ((), ()))),
                        "km,nk->mn", "ad"),
    "result transposed": (lambda a, b, c, d: lax.transpose(
        lax.dot_general(c, b, (((1,), (0,)), ((), ()))), (1, 0)), "mk,kn->nm", "cb"),
    "two contracting axes": (lambda a, b, c, d: lax.dot_general(
        a.reshape(2, -1, a.shape[1]), b.reshape(2, -1, b.shape[1]),
        (((0, 1), (0, 1)), ((), ()))), "km,kn->mn", "ab"),
}


def _operands(dtype, m, k, n, special):
  rng = np.random.default_rng(m * k * n)
  shapes = {"a": (k, m), "b": (k, n), "c": (m, k), "d": (n, k)}
  out = {}
  for name, shape in shapes.items():
    x = rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)
    if dtypes.is_complex(dtype):
      x = x + 1j * rng.standard_normal(shape)
    if special is not None and name in "ad":
      x[1, 0] = special
    out[name] = x.astype(dtype)
  return out


def _program(x):
  return [f(x["a"], x["b"], x["c"], x["d"]) for f, _, _ in PRODUCTS.values()]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128, dtypes.bfloat16],
                         ids=str)
@pytest.mark.parametrize("m, k, n", [(40, 50, 60), (3, 6, 5)])   # by BLAS, by the loop
@pytest.mark.parametrize("special", [None, np.nan])
def test_transposed_products_within_the_tolerance(dtype, m, k, n, special):
  with jax.enable_x64(np.dtype(dtype).itemsize >= 8):
    x = _operands(dtype, m, k, n, special)
    reference = jax.jit(_program)(x)
    backend = jax.jit(_program, backend="numba")(x)
  for (name, (_, subscripts, operands)), r, b in zip(PRODUCTS.items(), reference, backend):
    magnitude = np.einsum(subscripts, *[_abs_finite(x[o]) for o in operands])
    assert_dot_close(r, b, magnitude, k, name)


def test_transposes_are_not_copied():
  """Of float32 operands, the programs copy no operand or result transposed:
  BLAS's flags and the swapped product stand for the copies."""
  x = _operands(np.float32, 40, 50, 60, None)
  source = lower_program(jax.make_jaxpr(_program)(x).jaxpr)[0]
  assert "strided_copy" not in source and source.count("blas_matmul_transposed") == 5
