"""The numba backend's dot_general and linalg lowerings agree with the reference.

dot_general: integers and bool bit for bit; floats within the bound of
docs/backends.md's Tolerances table (sums in another order: small products
by a loop, large ones by SciPy's BLAS against NumPy's), NaN and infinities
where the reference has them. The
decompositions and solvers bit for bit (NaN parts equal to NaN parts), on
any operands: empty and 1x1 matrices, empty batches, singular, indefinite,
non-finite ones; each test compiles one program per dtype and rank.
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
from refimpl import dtypes, lax
from refimpl.lax import linalg
from refimpl.lax.rules import contraction_dtype
from conformance import strategies as cst

pytest.importorskip("numba")

SETTINGS = settings(max_examples=15, deadline=None)


def _finfo(dtype):
  return dtypes.finfo(dtypes.to_real_dtype(dtype) if dtypes.is_complex(dtype) else dtype)


def assert_dot_close(reference, backend, magnitude, depth, what):
  """`backend` within the dot_general tolerance of `reference`, whose exact
  value is a sum of `depth` products of absolute sum `magnitude` (float64)."""
  reference, backend = np.asarray(reference), np.asarray(backend)
  assert backend.dtype == reference.dtype and backend.shape == reference.shape, what
  dtype = reference.dtype
  if not dtypes.is_inexact(dtype):
    assert np.array_equal(reference, backend), what
    return
  compute = contraction_dtype(dtype)
  info, out_info = _finfo(compute), _finfo(dtype)
  factor = 2 if dtypes.is_complex(dtype) else 1
  bound = factor * depth * (float(info.eps) * magnitude + float(info.smallest_subnormal))
  if out_info.eps > info.eps:   # rounded once more, to the result dtype
    bound = bound + float(out_info.eps) * np.maximum(np.abs(reference), np.abs(backend)).astype(
        np.float64) + float(out_info.smallest_subnormal)
  overflow = magnitude >= float(out_info.max) / 2   # partial sums may overflow in one order only
  # Complex: which parts a non-finite operand makes NaN depends on how the
  # products are formed (docs/backends.md), so both non-finite is enough.
  unbounded = ~np.isfinite(reference) & ~np.isfinite(backend) & dtypes.is_complex(dtype)
  parts = [(reference.real, backend.real), (reference.imag, backend.imag)] \
      if dtypes.is_complex(dtype) else [(reference, backend)]
  for r, b in parts:
    r, b = r.astype(np.float64), b.astype(np.float64)
    finite = np.isfinite(r) & np.isfinite(b)
    with np.errstate(invalid="ignore"):
      close = finite & (np.abs(r - b) <= bound)
    same = (r == b) | (np.isnan(r) & np.isnan(b))
    bad = ~(close | same | overflow | unbounded)
    assert not bad.any(), (f"{what}: {bad.sum()} of {bad.size} elements differ, e.g. "
                           f"reference {r[bad][:3]}, numba {b[bad][:3]}, bound "
                           f"{np.broadcast_to(bound, bad.shape)[bad][:3]}")


# Each output: (its dot_general, the einsum of the same contraction, its depth).
CONTRACTIONS = {
    "batched": (lambda x, y, v: lax.dot_general(x, y, (((2,), (0,)), ((0,), (1,)))),
                "bmk,kbn->bmn", lambda b, m, k, n: k),
    "two_dims": (lambda x, y, v: lax.dot_general(x, y, (((0, 2), (1, 0)), ((), ()))),
                 "bmk,kbn->mn", lambda b, m, k, n: b * k),
    "vector": (lambda x, y, v: lax.dot_general(v, v, (((0,), (0,)), ((), ()))),
               "k,k->", lambda b, m, k, n: k),
    "outer": (lambda x, y, v: lax.dot_general(v, x, (((), ()), ((), ()))),
              "k,bmj->kbmj", lambda b, m, k, n: 1),
    "matrix_vector": (lambda x, y, v: lax.dot_general(x, v, (((2,), (0,)), ((), ()))),
                      "bmk,k->bm", lambda b, m, k, n: k),
}


def _magnitude(subscripts, x, y, v):
  """The float64 sum of the products' absolute values (NaN and inf left out)."""
  operands = {"bmk,kbn->bmn": (x, y), "bmk,kbn->mn": (x, y), "k,k->": (v, v),
              "k,bmj->kbmj": (v, x), "bmk,k->bm": (x, v)}[subscripts]
  return np.einsum(subscripts, *[_abs_finite(a) for a in operands])


def _abs_finite(a):
  """|a| in float64, NaN and inf as 0."""
  a = a.astype(np.complex128 if dtypes.is_complex(a.dtype) else np.float64)
  return np.where(np.isfinite(a), np.abs(a), 0.0)


def check_contractions(x, y, v):
  program = lambda x, y, v: [f(x, y, v) for f, _, _ in CONTRACTIONS.values()]
  reference = jax.jit(program)(x, y, v)
  backend = jax.jit(program, backend="numba")(x, y, v)
  (b, m, k), n = x.shape, y.shape[2]
  for (name, (_, subscripts, depth)), r, o in zip(CONTRACTIONS.items(), reference, backend):
    assert_dot_close(r, o, _magnitude(subscripts, x, y, v), depth(b, m, k, n), name)


def contraction_operands(dtype, elements=None):
  return st.tuples(*[st.integers(0, 4)] * 4).flatmap(lambda s: st.tuples(
      cst.arrays(dtype, (s[0], s[1], s[2]), elements=elements),
      cst.arrays(dtype, (s[2], s[0], s[3]), elements=elements),
      cst.arrays(dtype, (s[2],), elements=elements)))


@pytest.mark.parametrize("dtype", cst.ALL_DTYPES, ids=str)
@SETTINGS
@given(data=st.data())
def test_dot_general(dtype, data):
  check_contractions(*data.draw(contraction_operands(dtype)))


@pytest.mark.parametrize("dtype", [np.int32, np.uint32], ids=str)
@SETTINGS
@given(data=st.data())
def test_dot_general_wraps(dtype, data):
  """Extreme integers: exact sums wrapped once."""
  info = np.iinfo(dtype)
  extremes = st.sampled_from([int(info.min), int(info.max), 0, 1, -1 if info.min else 2])
  check_contractions(*data.draw(contraction_operands(dtype, elements=extremes)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128,
                                   dtypes.bfloat16], ids=str)
@pytest.mark.parametrize("special", [None, np.inf, np.nan])
def test_dot_general_by_blas(dtype, special):
  """Products large enough for BLAS (M * K * N >= 2**16), with finite
  operands, and with one infinity or NaN (then by the loop, keeping 0 * inf
  = NaN): within the tolerance, NaN and infinities where the reference has
  them."""
  rng = np.random.default_rng(0)
  x = rng.standard_normal((2, 40, 50)) * 10.0 ** rng.integers(-3, 4, (2, 40, 50))
  y = rng.standard_normal((50, 2, 40))
  if dtypes.is_complex(dtype):
    x, y = x + 1j * rng.standard_normal(x.shape), y - 1j * rng.standard_normal(y.shape)
  if special is not None:
    x[1, 3, 7] = special
    y[7, 1, :5] = 0
  with jax.enable_x64(dtype in (np.float64, np.complex128)):
    x, y = x.astype(dtype), y.astype(dtype)
    program = lambda x, y: lax.dot_general(x, y, (((2,), (0,)), ((0,), (1,))))
    assert_dot_close(jax.jit(program)(x, y), jax.jit(program, backend="numba")(x, y),
                     np.einsum("bmk,kbn->bmn", _abs_finite(x), _abs_finite(y)), 50, "blas")


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=str)
@pytest.mark.parametrize("batch, m, depth, n", [(2, 1, 128, 128), (2, 3, 263, 258), (2, 2, 7, 3),
                                                (2, 2, 5, 130), (2, 1, 300, 600)])
def test_matmul_loop_sums_in_ascending_order(dtype, batch, m, depth, n):
  """The loop of small products (and of non-finite operands) adds the
  rounded products of each sum in ascending k, across its blocks (128 k by
  256 j), its blocks of columns in vector registers and its passes over
  four rows of the right operand: bit for bit NumPy's sum in that order."""
  from numba_backend.rules.linalg import batched_matmul
  rng = np.random.default_rng(0)
  a = rng.standard_normal((batch, m, depth)).astype(dtype)
  b = rng.standard_normal((batch, depth, n)).astype(dtype)
  a[1, 0, depth // 2] = np.inf   # 0 * inf is NaN: the loop keeps IEEE's rules
  b[1, depth // 2, :2] = 0
  a[0, 0, :2] = np.finfo(dtype).max   # overflow to inf, then inf - inf
  b[0, :2, :3] = [[1, 1, 1], [-1, -1, 1]][:min(2, depth)]
  b[0, 2:, n // 2] = -0.0   # -0.0 products: the sum of -0.0 and 0.0
  expected = np.zeros((batch, m, n), dtype)
  with np.errstate(invalid="ignore", over="ignore"):
    for k in range(depth):
      expected += a[:, :, k, None] * b[:, k, None, :]
  out = np.zeros(batch * m * n, dtype)
  batched_matmul(a.reshape(-1), b.reshape(-1), out, np.array([batch, m, depth, n]))
  np.testing.assert_array_equal(out.reshape(expected.shape), expected)


MIXED = [(np.int8, np.int8, np.int32), (dtypes.bfloat16, dtypes.bfloat16, np.float32),
         (np.float16, np.float32, None), (np.int8, np.float32, None), (np.bool_, np.int16, None),
         (np.uint8, np.int8, np.float32), (np.float32, np.complex64, None)]


@pytest.mark.parametrize("lhs_dtype,rhs_dtype,preferred", MIXED, ids=str)
@SETTINGS
@given(data=st.data())
def test_dot_general_mixed_and_preferred(lhs_dtype, rhs_dtype, preferred, data):
  b, m, k, n = data.draw(st.tuples(*[st.integers(0, 4)] * 4))
  x = data.draw(cst.arrays(lhs_dtype, (b, m, k)))
  y = data.draw(cst.arrays(rhs_dtype, (k, b, n)))
  program = lambda x, y: lax.dot_general(x, y, (((2,), (0,)), ((0,), (1,))),
                                         preferred_element_type=preferred)
  assert_dot_close(jax.jit(program)(x, y), jax.jit(program, backend="numba")(x, y),
                   np.einsum("bmk,kbn->bmn", _abs_finite(x), _abs_finite(y)), k, "mixed")


def assert_same(reference, backend, what):
  """Bit-for-bit equal values, each NaN part (of a complex number) matched by a NaN part."""
  reference, backend = np.asarray(reference), np.asarray(backend)
  assert backend.dtype == reference.dtype and backend.shape == reference.shape, what
  parts = [(reference.real, backend.real), (reference.imag, backend.imag)] \
      if dtypes.is_complex(reference.dtype) else [(reference, backend)]
  for r, b in parts:
    same = (r == b) | (np.isnan(r) & np.isnan(b)) if dtypes.is_inexact(r.dtype) else r == b
    bad = ~np.asarray(same)
    assert not bad.any(), (f"{what}: {bad.sum()} of {bad.size} elements differ, e.g. "
                           f"reference {r[bad][:3]}, numba {b[bad][:3]}")


LINALG_DTYPES = [np.dtype(np.float16), dtypes.float32, np.dtype(np.float64), dtypes.complex64,
                 np.dtype(np.complex128)]


def _wide(dtype):
  return np.dtype(np.complex128 if dtypes.is_complex(dtype) else np.float64)


LAPACK = {"eigh", "svd", "singular_values", "eig", "eigenvalues", "tridiagonal_solve"}
"""The programs whose primitives call LAPACK: SciPy's in the backend, NumPy's in the reference."""


def rescaled(*operands):
  """Whether an operand has a finite nonzero magnitude outside about
  [1e-130, 1e130], where LAPACK rescales a float64 matrix (its norm beyond
  sqrt(safe minimum) / eps or its reciprocal) and the two builds' rescaling
  may round differently."""
  for x in operands:
    magnitude = np.abs(np.asarray(x).astype(np.complex128))
    finite = magnitude[np.isfinite(magnitude) & (magnitude > 0)]
    if finite.size and (finite.max() > 1e130 or finite.min() < 1e-130):
      return True
  return False


def assert_lapack_close(reference, backend, n, what, largest):
  """NaN where the reference has NaN, and otherwise moduli within 64 n ε of
  float64 times ‖x‖ (docs/backends.md), bounded by n times the operand's
  largest finite modulus `largest`, or by the reference's largest finite
  modulus where that is larger (moduli: the phase of a vector is LAPACK's
  unspecified choice). (‖x‖ itself may overflow where the results do.)"""
  reference, backend = np.asarray(reference), np.asarray(backend)
  assert backend.dtype == reference.dtype and backend.shape == reference.shape, what
  r, b = np.abs(reference.astype(np.complex128)), np.abs(backend.astype(np.complex128))
  assert np.array_equal(np.isnan(r), np.isnan(b)), what
  finite = np.isfinite(r)
  n, eps = max(n, 1), np.finfo(np.float64).eps
  bound = max(64 * n * eps * np.abs(r[finite]).max(initial=0.0), 64 * n * n * eps * largest)
  assert np.all(np.abs(r[finite] - b[finite]) <= bound), what


def check_programs(dtype, programs, *operands):
  """Each of `programs` (name -> function of `operands` returning a list of
  arrays) gives the reference's results bit for bit, jitted as one program
  (where LAPACK rescales an operand, those of LAPACK as docs/backends.md
  says: sorted values within its bound, vectors NaN where the reference's are)."""
  def program(*operands):
    return [out for f in programs.values() for out in f(*operands)]

  def run():
    reference = jax.jit(program)(*operands)
    backend = jax.jit(program, backend="numba")(*operands)
    names = [name for name, f in programs.items() for _ in f(*operands)]
    assert len(reference) == len(backend) == len(names)
    tolerant = rescaled(*operands)
    n = max(max(np.shape(x)[-2:], default=0) for x in operands)
    moduli = np.abs(np.asarray(operands[0]).astype(np.complex128))
    largest = moduli[np.isfinite(moduli)].max(initial=0.0)
    for name, r, b in zip(names, reference, backend):
      if name in LAPACK and tolerant and np.ndim(r) == np.ndim(operands[0]) - 1:   # values
        assert_lapack_close(np.sort(np.abs(r), -1), np.sort(np.abs(b), -1), n, name, largest)
      elif name in LAPACK and tolerant:   # vectors: LAPACK's choice within eigenspaces
        assert np.array_equal(np.isnan(np.asarray(r)), np.isnan(np.asarray(b))), name
      else:
        assert_same(r, b, name)

  if np.dtype(dtype) in (np.float64, np.complex128):
    with jax.enable_x64():
      run()
  else:
    run()


def batches():
  """Batch shapes: none, one batch dimension, an empty batch."""
  return st.one_of(cst.batch_shapes(max_dims=1), st.just((0,)))


@st.composite
def matrices(draw, dtype, batch, shape):
  """Stacks of `dtype` and `batch + shape`: any values (NaN and infinities
  too), bounded ones, or bounded ones made singular (a row repeated, or a
  zero column)."""
  kind = draw(st.sampled_from(["any", "bounded", "singular"]))
  if kind == "any":
    return draw(cst.arrays(dtype, batch + shape))
  x = draw(cst.bounded_arrays(_wide(dtype), batch + shape)).astype(dtype)
  if kind == "singular" and shape[0] >= 2:
    x[..., -1, :] = x[..., 0, :]
  elif kind == "singular" and shape[1]:
    x[..., draw(st.integers(0, shape[1] - 1))] = 0
  return x


@st.composite
def square_matrices(draw, dtype, batch, n):
  """Square stacks: those of `matrices`, or Hermitian ones (positive
  definite, or indefinite) that are well conditioned."""
  kind = draw(st.sampled_from(["matrices", "positive_definite", "hermitian"]))
  if kind == "matrices" or n == 0 or 0 in batch:
    return draw(matrices(dtype, batch, (n, n)))
  return draw(cst.well_conditioned_matrices(_wide(dtype), batch, (n, n), kind=kind)).astype(dtype)


def index_ranges(size):
  """None, or a subset_by_index (lo, hi) with 0 <= lo <= hi <= size."""
  return st.one_of(st.none(), st.integers(0, size).flatmap(
      lambda lo: st.tuples(st.just(lo), st.integers(lo, size))))


@pytest.mark.parametrize("dtype", LINALG_DTYPES, ids=str)
@SETTINGS
@given(data=st.data())
def test_factorizations(dtype, data):
  """lu, lu_pivots_to_permutation, qr (with and without pivoting), geqrf,
  householder_product and svd (with and without vectors) of rectangular
  stacks."""
  batch = data.draw(batches())
  m, n = data.draw(st.integers(0, 4)), data.draw(st.integers(0, 4))
  k = min(m, n)
  x = data.draw(matrices(dtype, batch, (m, n)))
  size = data.draw(st.integers(max(k, 1), 6))
  pivots = data.draw(cst.arrays(np.int32, batch + (k,), elements=st.integers(-size - 2, size + 2)))
  full = data.draw(st.booleans())
  subset = None if full else data.draw(index_ranges(k))
  programs = {
      "lu": lambda x, p: list(linalg.lu(x)),
      "lu_pivots_to_permutation": lambda x, p: [linalg.lu_pivots_to_permutation(p, size)],
      "qr": lambda x, p: list(linalg.qr(x, full_matrices=full)),
      "qr_pivoting": lambda x, p: list(linalg.qr(x, full_matrices=full, pivoting=True)),
      "geqrf": lambda x, p: list(linalg.geqrf(x)),
      "svd": lambda x, p: list(linalg.svd(x, full_matrices=full, subset_by_index=subset)),
      "singular_values": lambda x, p: [linalg.svd(x, full_matrices=False, compute_uv=False,
                                                  subset_by_index=subset)],
  }
  if m >= n:   # householder_product needs m >= n
    programs["householder_product"] = lambda x, p: [linalg.householder_product(
        *linalg.geqrf(x))]
  check_programs(dtype, programs, x, pivots)


@pytest.mark.parametrize("x", [np.array([[np.finfo(np.float64).max]]), np.full((2, 2), 2.0**1023),
                               np.array([[5e-324, -1e-320], [0.0, 2e-310]])], ids=str)
def test_eig_of_the_largest_and_smallest_floats(x):
  """eig rescales a matrix whose largest modulus is beyond LAPACK's range
  by a power of two, exactly (the largest float's, 2**-1024, is not 0), and
  agrees with the reference as LAPACK's rescaling does."""
  check_programs(np.float64, {"eig": lambda x: list(linalg.eig(x)),
                              "eigenvalues": lambda x: list(linalg.eig(
                                  x, compute_left_eigenvectors=False,
                                  compute_right_eigenvectors=False))}, x)


@pytest.mark.parametrize("dtype", LINALG_DTYPES, ids=str)
@SETTINGS
@given(data=st.data())
def test_square_decompositions(dtype, data):
  """cholesky, eigh (either triangle, a subset of eigenpairs) and eig (all
  its outputs, or the eigenvalues alone) of square stacks."""
  batch = data.draw(batches())
  n = data.draw(st.integers(0, 4))
  x = data.draw(square_matrices(dtype, batch, n))
  lower, symmetrize = data.draw(st.booleans()), data.draw(st.booleans())
  subset = data.draw(index_ranges(n))
  programs = {
      "cholesky": lambda x: [linalg.cholesky(x, symmetrize_input=symmetrize)],
      "eigh": lambda x: list(linalg.eigh(x, lower=lower, symmetrize_input=symmetrize,
                                         subset_by_index=subset)),
      "eig": lambda x: list(linalg.eig(x)),
      "eigenvalues": lambda x: list(linalg.eig(x, compute_left_eigenvectors=False,
                                               compute_right_eigenvectors=False)),
  }
  check_programs(dtype, programs, x)


@pytest.mark.parametrize("dtype", LINALG_DTYPES, ids=str)
@SETTINGS
@given(data=st.data())
def test_solves(dtype, data):
  """triangular_solve (every flag, either side) and tridiagonal_solve."""
  batch = data.draw(batches())
  m, n = data.draw(st.integers(0, 4)), data.draw(st.integers(0, 3))
  a = data.draw(matrices(dtype, batch, (m, m)))
  if data.draw(st.booleans()):   # well conditioned: a dominant diagonal
    a = (a.astype(_wide(dtype)) + 2 * m * np.eye(m)).astype(dtype)
  b = data.draw(matrices(dtype, batch, (m, n)))
  diagonals = [data.draw(cst.arrays(dtype, batch + (m,))) for _ in range(3)]
  flags = dict(zip(["lower", "transpose_a", "conjugate_a", "unit_diagonal"],
                   data.draw(st.tuples(*[st.booleans()] * 4))))
  programs = {
      "triangular_solve_left": lambda a, b, bt, *d: [linalg.triangular_solve(
          a, b, left_side=True, **flags)],
      "triangular_solve_right": lambda a, b, bt, *d: [linalg.triangular_solve(
          a, bt, left_side=False, **flags)],
      "tridiagonal_solve": lambda a, b, bt, *d: [linalg.tridiagonal_solve(*d, b)],
  }
  check_programs(dtype, programs, a, b, np.ascontiguousarray(np.swapaxes(b, -1, -2)), *diagonals)


def test_decompositions_lower_to_native_code():
  """No decomposition leaves the compiled program (no objmode block)."""
  from numba_backend.lower import lower_program

  def program(a, b, v, p):
    return [*linalg.lu(a), linalg.lu_pivots_to_permutation(p, 3), *linalg.qr(a, pivoting=True),
            *linalg.geqrf(a), linalg.householder_product(*linalg.geqrf(a)), linalg.cholesky(a),
            *linalg.eigh(a), *linalg.svd(a), linalg.svd(a, compute_uv=False), *linalg.eig(a),
            linalg.triangular_solve(a, b, left_side=True), linalg.tridiagonal_solve(v, v, v, b)]

  a, b, v = np.eye(3, dtype=np.float32), np.ones((3, 2), np.float32), np.ones(3, np.float32)
  closed = jax.make_jaxpr(program)(a, b, v, np.zeros(3, np.int32))
  source, _, _ = lower_program(closed.jaxpr)
  assert "objmode" not in source
