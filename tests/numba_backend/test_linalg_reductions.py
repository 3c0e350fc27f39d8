"""The numba backend's hessenberg, tridiagonal, schur, ormqr, cholesky_update
and symmetric_product run the reference's per-matrix Python compiled by
Numba: bit for bit from real operands, within a few ulps from complex ones
(Numba's complex products and quotients round as C's, NumPy's arrays as NumPy's),
NaN where the reference has NaN; batches, 1x1 and empty batches included."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
from refimpl.lax import linalg
from conformance import strategies as cst

pytest.importorskip("numba")

SETTINGS = settings(max_examples=10, deadline=None)


def _assert_agree(program, *operands):
  with jax.enable_x64(True):
    want = jax.tree_util.tree_leaves(jax.jit(program)(*operands))
    got = jax.tree_util.tree_leaves(jax.jit(program, backend="numba")(*operands))
  exact = not any(np.iscomplexobj(x) for x in operands)
  for w, g in zip(want, got):
    w, g = np.asarray(w), np.asarray(g)
    assert w.dtype == g.dtype and w.shape == g.shape
    if exact:
      np.testing.assert_array_equal(g, w)
    else:
      np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


@st.composite
def stacks(draw, dtypes=(np.float64, np.complex128), batch=None, nan=False):
  dtype = draw(st.sampled_from(dtypes))
  shape = (draw(st.sampled_from([(), (0,), (2,)])) if batch is None else batch) \
      + (draw(st.integers(1, 4)),) * 2
  a = draw(cst.bounded_arrays(dtype, shape))
  if nan and a.size and draw(st.booleans()):
    a.flat[0] = np.nan
  return a


@SETTINGS
@given(stacks(nan=True))
def test_hessenberg_and_schur(a):
  _assert_agree(lambda a: (linalg.hessenberg(a), linalg.schur(a)), a)


@SETTINGS
@given(stacks(nan=True), st.booleans())
def test_tridiagonal(a, lower):
  _assert_agree(lambda a: linalg.tridiagonal(a, lower=lower), a)


@SETTINGS
@given(stacks(batch=(2,)), st.booleans(), st.booleans())
def test_ormqr(a, left, transpose):
  c = np.ones(a.shape[:-1] + (3,), a.dtype)
  _assert_agree(lambda a, c: linalg.ormqr(*linalg.geqrf(a), c if left else np.swapaxes(c, 1, 2),
                                          left=left, transpose=transpose), a, c)


@SETTINGS
@given(stacks(dtypes=(np.float64,), batch=(2,)), st.floats(-2, 2), st.floats(-2, 2))
def test_cholesky_update_and_symmetric_product(a, alpha, beta):
  r = np.triu(a) + 4 * np.eye(a.shape[-1])
  _assert_agree(lambda r, w: jax.vmap(linalg.cholesky_update)(r, w), r, a[..., 0])
  _assert_agree(lambda a: linalg.symmetric_product(a, a, alpha=alpha, beta=beta), a)

