"""Cases for the linear algebra primitives (refimpl/lax/linalg.py) and
`jnp.linalg`.

Inputs are well-conditioned (see `conformance.strategies.well_conditioned_matrices`),
so float32 results stay close to NumPy's float64 ones. Decompositions whose
factors are not unique (eigenvectors, singular vectors, Q of QR, the LU
factors) are compared through what is unique: the eigenvalues and singular
values, reconstructions such as `u diag(s) v^H = a`, orthonormality, and
residuals such as `a v - v diag(w) = 0`.
"""

import numpy as np
from hypothesis import strategies as st

import refimpl.numpy as jnp
from refimpl.lax import linalg as lax_linalg
from conformance import strategies as S
from conformance.autodiff import ADCase
from conformance.cases import Case

DTYPES = S.LINALG_DTYPES
TOL = dict(rtol=1e-4, atol=1e-4)  # float32 decompositions of well-conditioned inputs


def _wide(x):
  x = np.asarray(x)
  return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def _in_wide(np_fn):
  """`np_fn` applied to float64/complex128 copies of the array arguments."""
  return lambda *args, **kwargs: np_fn(*map(_wide, args), **kwargs)


def _mH(x):
  return np.conj(_mT(x))


def _mT(x):
  return np.swapaxes(x, -1, -2)


def _eye_like(x, n):
  return np.broadcast_to(np.eye(n), x.shape[:-2] + (n, n))


# --- input strategies -----------------------------------------------------------------

@st.composite
def matrix_inputs(draw, kind="invertible", kwargs=None, shape=None, dtype_list=DTYPES):
  """`((a,), kwargs)`: one well-conditioned matrix stack of `kind`."""
  dtype = draw(st.sampled_from(dtype_list))
  a = draw(S.well_conditioned_matrices(dtype, draw(S.batch_shapes()), shape, kind))
  return (a,), ({} if kwargs is None else draw(kwargs))


@st.composite
def any_matrix_inputs(draw, square=False, kwargs=None, dtype_list=DTYPES, max_side=4):
  """`((a,), kwargs)`: a matrix stack with entries in [-1, 1], any conditioning."""
  dtype = draw(st.sampled_from(dtype_list))
  m = draw(st.integers(1, max_side))
  n = m if square else draw(st.integers(1, max_side))
  a = draw(S.bounded_arrays(dtype, draw(S.batch_shapes()) + (m, n)))
  return (a,), ({} if kwargs is None else draw(kwargs))


@st.composite
def solve_inputs(draw, vector_rhs=True, dtype_list=DTYPES):
  """`((a, b), {})`: an invertible stack and a right-hand side (a vector
  `(n,)`, or a stack `batch + (n, k)`)."""
  dtype = draw(st.sampled_from(dtype_list))
  batch = draw(S.batch_shapes())
  a = draw(S.well_conditioned_matrices(dtype, batch))
  n = a.shape[-1]
  if vector_rhs and draw(st.booleans()):
    return (a, draw(S.bounded_arrays(dtype, (n,)))), {}
  return (a, draw(S.bounded_arrays(dtype, batch + (n, draw(st.integers(1, 3)))))), {}


@st.composite
def triangular_solve_inputs(draw, dtype_list=DTYPES):
  """`((a, b), flags)` for triangular_solve: `a` diagonally dominant, so each
  triangle is well conditioned."""
  dtype = draw(st.sampled_from(dtype_list))
  batch = draw(S.batch_shapes())
  a = draw(S.well_conditioned_matrices(dtype, batch))
  flags = draw(st.fixed_dictionaries({name: st.booleans() for name in (
      "left_side", "lower", "transpose_a", "conjugate_a", "unit_diagonal")}))
  if flags["unit_diagonal"]:  # keep op(a) well conditioned with a unit diagonal
    a = (a / (2 * a.shape[-1])).astype(dtype)
  k = draw(st.integers(1, 3))
  b_shape = (a.shape[-1], k) if flags["left_side"] else (k, a.shape[-1])
  return (a, draw(S.bounded_arrays(dtype, batch + b_shape))), flags


def numpy_triangular_solve(a, b, *, left_side, lower, transpose_a, conjugate_a,
                           unit_diagonal):
  """triangular_solve from its definition: a dense solve with op(a)."""
  a, b = _wide(a), _wide(b)
  a = np.tril(a) if lower else np.triu(a)
  if unit_diagonal:
    i = np.arange(a.shape[-1])
    a[..., i, i] = 1
  if conjugate_a:
    a = np.conj(a)
  if transpose_a:
    a = np.swapaxes(a, -1, -2)
  if left_side:
    return np.linalg.solve(a, b)
  return np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)


@st.composite
def tridiagonal_inputs(draw, dtype_list=DTYPES):
  """`((dl, d, du, b), {})` with a diagonally dominant tridiagonal matrix."""
  dtype = draw(st.sampled_from(dtype_list))
  shape = draw(S.batch_shapes()) + (draw(st.integers(1, 5)),)
  dl, du = (draw(S.bounded_arrays(dtype, shape)) for _ in range(2))
  d = (draw(S.bounded_arrays(dtype, shape)) + 3).astype(dtype)
  b = draw(S.bounded_arrays(dtype, shape + (draw(st.integers(1, 3)),)))
  return (dl, d, du, b), {}


def numpy_tridiagonal_solve(dl, d, du, b):
  m = d.shape[-1]
  a = np.zeros(d.shape + (m,), _wide(b).dtype)
  i = np.arange(m)
  a[..., i, i] = d
  a[..., i[1:], i[1:] - 1] = dl[..., 1:]
  a[..., i[:-1], i[:-1] + 1] = du[..., :-1]
  return np.linalg.solve(a, _wide(b))


@st.composite
def low_rank_inputs(draw):
  """`((a,), {})`: an exact product of small-integer `m x r` and `r x n` factors."""
  dtype = draw(st.sampled_from(DTYPES))
  batch = draw(S.batch_shapes())
  m, r, n = (draw(st.integers(1, 4)) for _ in range(3))
  left = draw(S.small_integer_arrays(dtype, batch + (m, r), bound=3))
  right = draw(S.small_integer_arrays(dtype, batch + (r, n), bound=3))
  return ((_wide(left) @ _wide(right)).astype(dtype),), {}


def numpy_matrix_rank(m):
  """JAX's default tolerance: `max(s) * max(m, n) * eps` of the input's precision."""
  s = np.linalg.svd(_wide(m), compute_uv=False)
  eps = np.finfo(np.asarray(m).real.dtype).eps
  return np.sum(s > s.max(-1, keepdims=True) * max(np.shape(m)[-2:]) * eps, axis=-1)


@st.composite
def norm_inputs(draw):
  """`((x,), {ord, axis, keepdims})` with an `ord` valid for the axes."""
  dtype = draw(st.sampled_from(DTYPES))
  x = draw(S.bounded_arrays(dtype, draw(S.shapes(min_dims=1, max_dims=3, min_side=1))))
  ndim = x.ndim
  kind = draw(st.sampled_from(["flat", "vector"] + ["matrix"] * (ndim >= 2)))
  if kind == "flat":
    kwargs = {"ord": None, "axis": None}
  elif kind == "vector":
    kwargs = {"ord": draw(st.sampled_from([None, 1, 2, 3, 0.5, 0, np.inf, -np.inf])),
              "axis": draw(st.integers(-ndim, ndim - 1))}
  else:
    axes = draw(st.permutations(range(ndim)))[:2]
    kwargs = {"ord": draw(st.sampled_from([None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])),
              "axis": tuple(draw(st.sampled_from([a, a - ndim])) for a in axes)}
  return (x,), {**kwargs, "keepdims": draw(st.booleans())}


@st.composite
def multi_dot_inputs(draw):
  dtype = draw(st.sampled_from(DTYPES))
  dims = [draw(st.integers(1, 4)) for _ in range(draw(st.integers(3, 5)))]
  arrays = [draw(S.bounded_arrays(dtype, (m, n))) for m, n in zip(dims[:-1], dims[1:])]
  if draw(st.booleans()):
    arrays[0] = arrays[0][0]
  if draw(st.booleans()):
    arrays[-1] = arrays[-1][:, 0]
  return tuple(arrays), {}


@st.composite
def tensor_inputs(draw, with_rhs):
  """`((a[, b]), {})`: an invertible `n x n` matrix reshaped to `(p, q, n)`."""
  dtype = draw(st.sampled_from(DTYPES))
  p, q = draw(st.sampled_from([(1, 1), (1, 2), (2, 1), (1, 3), (2, 2)]))
  a = draw(S.well_conditioned_matrices(dtype, (), (p * q, p * q))).reshape(p, q, p * q)
  if with_rhs:
    return (a, draw(S.bounded_arrays(dtype, (p, q)))), {}
  return (a,), {"ind": 2}


@st.composite
def cross_inputs(draw):
  """`((x1, x2), {axis})`: 3-vectors along `axis` of two broadcastable arrays."""
  dtype = draw(st.sampled_from([np.float32, np.int32, np.complex64]))
  shapes = draw(S.broadcastable_shapes(2, max_dims=2))
  ndim = max(len(s) for s in shapes) + 1
  position = draw(st.integers(0, ndim - 1))
  arrays = tuple(np.moveaxis(draw(S.small_integer_arrays(
      dtype, (1,) * (ndim - 1 - len(s)) + tuple(s) + (3,))), -1, position) for s in shapes)
  return arrays, {"axis": draw(st.sampled_from([position, position - ndim]))}


@st.composite
def bounded_inputs(draw, shapes):
  """`(arrays, {})`: bounded arrays of one dtype with the shapes drawn from
  `shapes` (a strategy of lists of shapes)."""
  dtype = draw(st.sampled_from(DTYPES))
  return tuple(draw(S.bounded_arrays(dtype, shape)) for shape in draw(shapes)), {}


def _square_pair(batch):
  return st.integers(1, 3).map(lambda n: [batch + (n, n)] * 2)


# --- case functions: compare what is unique ----------------------------------------------------

def eigh_reconstruction(a, UPLO=None):
  w, v = jnp.linalg.eigh(a, UPLO)
  return w, (v * w.astype(v.dtype)[..., None, :]) @ jnp.conj(jnp.matrix_transpose(v)), \
      jnp.conj(jnp.matrix_transpose(v)) @ v


def numpy_eigh_reconstruction(a, UPLO=None):
  a = _wide(a)
  return np.linalg.eigvalsh(a), a, _eye_like(a, a.shape[-1])


def svd_reconstruction(a, full_matrices=True):
  u, s, vh = jnp.linalg.svd(a, full_matrices=full_matrices)
  k = s.shape[-1]
  product = (u[..., :k] * s.astype(u.dtype)[..., None, :]) @ vh[..., :k, :]
  return (s, product, jnp.conj(jnp.matrix_transpose(u)) @ u,
          vh @ jnp.conj(jnp.matrix_transpose(vh)))


def numpy_svd_reconstruction(a, full_matrices=True):
  a = _wide(a)
  m, n = a.shape[-2:]
  k = min(m, n)
  return (np.linalg.svd(a, compute_uv=False), a, _eye_like(a, m if full_matrices else k),
          _eye_like(a, n if full_matrices else k))


def qr_reconstruction(a, mode="reduced"):
  q, r = jnp.linalg.qr(a, mode=mode)
  return q @ r, jnp.conj(jnp.matrix_transpose(q)) @ q, r - jnp.triu(r)


def numpy_qr_reconstruction(a, mode="reduced"):
  a = _wide(a)
  m, n = a.shape[-2:]
  k = m if mode == "complete" else min(m, n)
  return a, _eye_like(a, k), np.zeros(a.shape[:-2] + (k, n))


def pivoted_qr_residual(a):
  """`q r - a[..., p]` and `|diag r|`'s decreases (both zero)."""
  q, r, p = lax_linalg.qr(a, pivoting=True, full_matrices=False)
  permuted = jnp.take_along_axis(a, jnp.broadcast_to(p[..., None, :], a.shape), axis=-1)
  diag = jnp.abs(jnp.diagonal(r, axis1=-2, axis2=-1))
  return q @ r - permuted, jnp.maximum(diag[..., 1:] - diag[..., :-1], 0)


def numpy_pivoted_qr_residual(a):
  k = min(a.shape[-2:])
  return np.zeros(a.shape), np.zeros(a.shape[:-2] + (k - 1,))


def lu_residual(a):
  """`L U - a[perm]` (zero)."""
  lu, _, perm = lax_linalg.lu(a)
  m, n = a.shape[-2:]
  k = min(m, n)
  lower = jnp.tril(lu[..., :k], -1) + jnp.eye(m, k, dtype=a.dtype)
  upper = jnp.triu(lu[..., :k, :])
  permuted = jnp.take_along_axis(a, jnp.broadcast_to(perm[..., None], a.shape), axis=-2)
  return lower @ upper - permuted


def numpy_lu_residual(a):
  return np.zeros(a.shape)


def _power_sums(w):
  """`sum(w**k)` for k = 1..n along the last axis: order-free, and they
  determine the multiset of eigenvalues."""
  return [(w ** k).sum(-1) for k in range(1, w.shape[-1] + 1)]


def eigvals_power_sums(a):
  return _power_sums(jnp.linalg.eigvals(a))


def numpy_eigvals_power_sums(a):
  return _power_sums(np.linalg.eigvals(_wide(a)).astype(np.complex128))


def eig_residuals(a):
  """`a vr - vr diag(w)`, `vl^H a - diag(w) vl^H` (zero) and the eigenvector norms (one)."""
  w, vl, vr = lax_linalg.eig(a)
  vlh = jnp.conj(jnp.matrix_transpose(vl))
  return (a @ vr - vr * w[..., None, :], vlh @ a - w[..., :, None] * vlh,
          jnp.linalg.vector_norm(vl, axis=-2), jnp.linalg.vector_norm(vr, axis=-2))


def numpy_eig_residuals(a):
  zeros = np.zeros(a.shape, np.complex128)
  return zeros, zeros, np.ones(a.shape[:-1]), np.ones(a.shape[:-1])


def _np_lstsq(a, b):
  x, _, rank, s = np.linalg.lstsq(_wide(a), _wide(b))
  return x, rank, s


def _lstsq(a, b):
  x, _, rank, s = jnp.linalg.lstsq(a, b)
  return x, rank, s


@st.composite
def lstsq_inputs(draw):
  dtype = draw(st.sampled_from(DTYPES))
  a = draw(S.well_conditioned_matrices(dtype, (), kind="full_rank"))
  b_shape = (a.shape[0],) if draw(st.booleans()) else (a.shape[0], draw(st.integers(1, 3)))
  return (a, draw(S.bounded_arrays(dtype, b_shape))), {}


def _kwargs(**choices):
  return st.fixed_dictionaries({k: st.sampled_from(v) for k, v in choices.items()})


CASES = [
    # primitives (lax.linalg)
    Case("lax.linalg.cholesky", lambda a: lax_linalg.cholesky(a),
         lambda: matrix_inputs("positive_definite"), _in_wide(np.linalg.cholesky),
         **TOL),
    Case("lax.linalg.triangular_solve", lax_linalg.triangular_solve, triangular_solve_inputs,
         numpy_triangular_solve, **TOL),
    Case("lax.linalg.lu", lu_residual, any_matrix_inputs, numpy_lu_residual, **TOL),
    Case("lax.linalg.qr(pivoting=True)", pivoted_qr_residual,
         lambda: matrix_inputs("full_rank"), numpy_pivoted_qr_residual, **TOL),
    Case("lax.linalg.eigh(symmetrize_input=False)",
         lambda a, lower: lax_linalg.eigh(a, lower=lower, symmetrize_input=False)[1],
         lambda: any_matrix_inputs(square=True, kwargs=_kwargs(lower=[True, False])),
         lambda a, lower: np.linalg.eigvalsh(_wide(a), UPLO="L" if lower else "U"),
         **TOL),
    Case("lax.linalg.eig", eig_residuals, matrix_inputs, numpy_eig_residuals, rtol=1e-4, atol=1e-3),
    Case("lax.linalg.tridiagonal_solve", lax_linalg.tridiagonal_solve, tridiagonal_inputs,
         numpy_tridiagonal_solve, **TOL),
    # jnp.linalg
    Case("jnp.linalg.cholesky", jnp.linalg.cholesky,
         lambda: matrix_inputs("positive_definite", _kwargs(upper=[False, True])),
         _in_wide(np.linalg.cholesky), **TOL),
    Case("jnp.linalg.det", jnp.linalg.det, matrix_inputs, _in_wide(np.linalg.det), **TOL),
    Case("jnp.linalg.slogdet", lambda a: tuple(jnp.linalg.slogdet(a)), matrix_inputs,
         lambda a: tuple(np.linalg.slogdet(_wide(a))), **TOL),
    Case("jnp.linalg.slogdet(method='qr')",
         lambda a: tuple(jnp.linalg.slogdet(a, method="qr")),
         lambda: matrix_inputs(dtype_list=[np.float32]),
         lambda a: tuple(np.linalg.slogdet(_wide(a))), **TOL),
    Case("jnp.linalg.solve", jnp.linalg.solve, solve_inputs, _in_wide(np.linalg.solve),
         **TOL),
    Case("jnp.linalg.inv", jnp.linalg.inv, matrix_inputs, _in_wide(np.linalg.inv),
         **TOL),
    Case("jnp.linalg.eigh", eigh_reconstruction,
         lambda: matrix_inputs("hermitian", _kwargs(UPLO=[None, "L", "U"])),
         numpy_eigh_reconstruction, **TOL),
    Case("jnp.linalg.eigvalsh", jnp.linalg.eigvalsh,
         lambda: matrix_inputs("hermitian", _kwargs(UPLO=["L", "U"])),
         _in_wide(np.linalg.eigvalsh), **TOL),
    Case("jnp.linalg.svd", svd_reconstruction,
         lambda: matrix_inputs("full_rank", _kwargs(full_matrices=[True, False])),
         numpy_svd_reconstruction, **TOL),
    Case("jnp.linalg.svdvals", jnp.linalg.svdvals, any_matrix_inputs,
         _in_wide(np.linalg.svdvals), **TOL),
    Case("jnp.linalg.qr", qr_reconstruction,
         lambda: matrix_inputs("full_rank", _kwargs(mode=["reduced", "complete"])),
         numpy_qr_reconstruction, **TOL),
    Case("jnp.linalg.eigvals", eigvals_power_sums, matrix_inputs, numpy_eigvals_power_sums,
         rtol=1e-4, atol=1e-3),
    Case("jnp.linalg.pinv", jnp.linalg.pinv, lambda: matrix_inputs("full_rank"),
         _in_wide(np.linalg.pinv), **TOL),
    Case("jnp.linalg.lstsq", _lstsq, lstsq_inputs, _np_lstsq, **TOL),
    Case("jnp.linalg.matrix_rank", jnp.linalg.matrix_rank, low_rank_inputs, numpy_matrix_rank),
    Case("jnp.linalg.matrix_power", jnp.linalg.matrix_power,
         lambda: matrix_inputs(kwargs=_kwargs(n=[-2, -1, 0, 1, 2, 3, 5])),
         _in_wide(np.linalg.matrix_power), **TOL),
    Case("jnp.linalg.cond", jnp.linalg.cond,
         lambda: matrix_inputs(kwargs=_kwargs(p=[None, 1, -1, 2, -2, np.inf, -np.inf, "fro"])),
         _in_wide(np.linalg.cond), **TOL),
    Case("jnp.linalg.norm", jnp.linalg.norm, norm_inputs, _in_wide(np.linalg.norm),
         **TOL),
    Case("jnp.linalg.vector_norm", jnp.linalg.vector_norm,
         lambda: any_matrix_inputs(kwargs=st.fixed_dictionaries({
             "axis": st.sampled_from([None, 0, -1, (0, 2), (-1, -2)]),
             "keepdims": st.booleans(),
             "ord": st.sampled_from([1, 2, 3, 0, np.inf, -np.inf])})).filter(
                 lambda inputs: inputs[0][0].ndim == 3 or inputs[1]["axis"] in (None, 0, -1)),
         _in_wide(np.linalg.vector_norm), **TOL),
    Case("jnp.linalg.matrix_norm", jnp.linalg.matrix_norm,
         lambda: any_matrix_inputs(kwargs=st.fixed_dictionaries({
             "keepdims": st.booleans(),
             "ord": st.sampled_from(["fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])})),
         _in_wide(np.linalg.matrix_norm), **TOL),
    # the arrays are passed one by one, so that vmap can batch each
    Case("jnp.linalg.multi_dot", lambda *arrays: jnp.linalg.multi_dot(arrays), multi_dot_inputs,
         lambda *arrays: np.linalg.multi_dot([_wide(a) for a in arrays]), **TOL),
    Case("jnp.linalg.tensorinv", jnp.linalg.tensorinv, lambda: tensor_inputs(False),
         _in_wide(np.linalg.tensorinv), **TOL),
    Case("jnp.linalg.tensorsolve", jnp.linalg.tensorsolve, lambda: tensor_inputs(True),
         _in_wide(np.linalg.tensorsolve), **TOL),
    Case("jnp.linalg.cross", jnp.linalg.cross, cross_inputs, np.linalg.cross),
    Case("jnp.linalg.outer", jnp.linalg.outer,
         lambda: bounded_inputs(st.lists(st.integers(0, 4).map(lambda n: (n,)),
                                         min_size=2, max_size=2)),
         _in_wide(np.linalg.outer), **TOL),
    Case("jnp.linalg.trace", jnp.linalg.trace,
         lambda: any_matrix_inputs(kwargs=_kwargs(offset=[-2, -1, 0, 1, 3])),
         lambda a, offset: np.linalg.trace(_wide(a), offset=offset), **TOL),
    Case("jnp.linalg.diagonal", jnp.linalg.diagonal,
         lambda: any_matrix_inputs(kwargs=_kwargs(offset=[-2, -1, 0, 1, 3])),
         np.linalg.diagonal),
    Case("jnp.linalg.matrix_transpose", jnp.linalg.matrix_transpose, any_matrix_inputs,
         np.linalg.matrix_transpose),
    Case("jnp.linalg.matmul", jnp.linalg.matmul, lambda: bounded_inputs(_square_pair((2,))),
         _in_wide(np.linalg.matmul), **TOL),
    Case("jnp.linalg.tensordot", jnp.linalg.tensordot, lambda: bounded_inputs(_square_pair(())),
         _in_wide(np.linalg.tensordot), **TOL),
    Case("jnp.linalg.vecdot", jnp.linalg.vecdot,
         lambda: bounded_inputs(S.shapes(min_dims=1, min_side=1).map(lambda s: [s, s])),
         _in_wide(np.linalg.vecdot), **TOL),
]


@st.composite
def _pivots(draw):
  """LAPACK-style pivots: row i was swapped with row pivots[i] >= i."""
  n = draw(st.integers(1, 6))
  k = draw(st.integers(0, n))
  pivots = np.array([draw(st.integers(i, n - 1)) for i in range(k)], np.int32)
  return (pivots,), {"permutation_size": n}


def _np_pivots_to_permutation(pivots, permutation_size):
  perm = np.arange(permutation_size)
  for i, p in enumerate(pivots):
    perm[i], perm[p] = perm[p], perm[i]
  return perm.astype(np.int32)


@st.composite
def _reflectors(draw):
  """A matrix holding Householder vectors below its diagonal, and their taus."""
  m = draw(st.integers(1, 4))
  n = draw(st.integers(1, m))
  elements = st.floats(-2, 2, width=32)
  a = draw(S.arrays(np.float32, (m, n), elements=elements))
  taus = draw(S.arrays(np.float32, (n,), elements=st.floats(0, 2, width=32)))
  return (a, taus), {}


def _np_householder_product(a, taus):
  """Q = H_0 H_1 ... H_{k-1}, H_i = I - tau_i v_i v_i^T, v_i = (0, .., 1, a[i+1:, i])."""
  m, n = a.shape
  q = np.eye(m)
  for i, tau in enumerate(taus.astype(np.float64)):
    v = np.zeros(m)
    v[i] = 1.0
    v[i + 1:] = a[i + 1:, i]
    q = q @ (np.eye(m) - tau * np.outer(v, v))
  return q[:, :n]


CASES += [
    Case("lax.linalg.lu_pivots_to_permutation", lax_linalg.lu_pivots_to_permutation, _pivots,
         _np_pivots_to_permutation),
    Case("lax.linalg.householder_product", lax_linalg.householder_product, _reflectors,
         _np_householder_product, rtol=1e-4, atol=1e-5),
]


# --- derivatives -------------------------------------------------------------------------
# float64/complex128 inputs where each decomposition is a smooth function of
# its input: eigen- and singular values well apart, LU and pivoted-QR pivots
# well ahead of the other candidates. Where factors are unique only up to the
# phase (sign) of each vector, the checked function does not depend on it.

AD_DTYPES = [np.float64, np.complex128]


def _abs2(x):
  """`|x|^2`, smooth (unlike `|x|` at 0)."""
  return jnp.real(x * jnp.conj(x))


@st.composite
def _spectrum_inputs(draw, kind, kwargs=None):
  dtype = draw(st.sampled_from(AD_DTYPES))
  a = draw(S.separated_spectrum_matrices(dtype, draw(S.batch_shapes()), kind=kind))
  return (a,), ({} if kwargs is None else draw(kwargs))


@st.composite
def _lu_inputs(draw):
  """A diagonally dominant matrix cut to `m x n`, its rows shuffled: every
  column stays dominated by its pivot during elimination, so partial pivoting
  undoes the shuffle, each pivot far ahead of the other candidates."""
  dtype = draw(st.sampled_from(AD_DTYPES))
  m, n = draw(st.integers(1, 4)), draw(st.integers(1, 4))
  a = draw(S.well_conditioned_matrices(dtype, draw(S.batch_shapes()), (max(m, n),) * 2))
  return (a[..., :m, :n][..., draw(st.permutations(range(m))), :],), {}


@st.composite
def _qr_inputs(draw):
  """`Q R` (`m >= n`, square with `full_matrices`) with its columns shuffled:
  `Q` has orthonormal columns, `R` is upper triangular with diagonal entries
  `4^(n-1-j)` times [1, 2] and the others in [-1/4, 1/4], so the column norms
  column pivoting compares stay at least twice apart."""
  dtype = draw(st.sampled_from(AD_DTYPES))
  kwargs = {"pivoting": draw(st.booleans()), "full_matrices": draw(st.booleans())}
  n = draw(st.integers(1, 3))
  m = n if kwargs["full_matrices"] else draw(st.integers(n, 4))
  batch = draw(S.batch_shapes())
  q = np.linalg.qr(draw(S.well_conditioned_matrices(dtype, batch, (m, n), "full_rank")))[0]
  diag = 4.0 ** np.arange(n - 1, -1, -1) * draw(
      S.arrays(np.float64, batch + (n,), elements=st.floats(1, 2)))
  r = np.triu(draw(S.bounded_arrays(dtype, batch + (n, n), bound=0.25)), 1)
  r = r + diag[..., None] * np.eye(n)
  return ((q @ r)[..., draw(st.permutations(range(n)))].astype(dtype),), kwargs


def _qr_invariants(x, pivoting, full_matrices):
  """`|r|^2` and each column of `q` times the conjugate of `r`'s diagonal entry:
  free of the phase of each column of `q` (row of `r`)."""
  q, r, *_ = lax_linalg.qr(x, pivoting=pivoting, full_matrices=full_matrices)
  return _abs2(r), q * jnp.conj(jnp.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


def _eigh_invariants(a):
  """Eigenvalues and `|v|^2` (free of each eigenvector's phase)."""
  v, w = lax_linalg.eigh(a)
  return w, _abs2(v)


def _svd_invariants(a, compute_uv, full_matrices):
  """Singular values, `|u|^2`, `|vh|^2` and `u vh` (free of the phase shared
  by each pair of singular vectors)."""
  if not compute_uv:
    return lax_linalg.svd(a, compute_uv=False, full_matrices=full_matrices)
  u, s, vh = lax_linalg.svd(a, full_matrices=False)
  return s, _abs2(u), _abs2(vh), u @ vh


def _eigenvalue_power_sums(a):
  w, = lax_linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)
  return _power_sums(w)


_SVD_KWARGS = st.sampled_from([dict(compute_uv=True, full_matrices=False),
                               dict(compute_uv=False, full_matrices=False),
                               dict(compute_uv=False, full_matrices=True)])

AD_CASES = [
    ADCase("lax.linalg.cholesky", lambda a: lax_linalg.cholesky(a),
           lambda: matrix_inputs("positive_definite", dtype_list=AD_DTYPES), ("cholesky",),
           order=2),
    ADCase("lax.linalg.triangular_solve", lax_linalg.triangular_solve,
           lambda: triangular_solve_inputs(AD_DTYPES), ("triangular_solve",), order=2),
    ADCase("lax.linalg.lu", lambda a: lax_linalg.lu(a)[0], _lu_inputs, ("lu",), order=2),
    # |r|^2 reaches ~1e3 (diagonal up to 32): an entry near 0 meets a central
    # difference whose eps^2 term is ~1e-5, so the absolute tolerance scales up
    ADCase("lax.linalg.qr", _qr_invariants, _qr_inputs, ("qr",), order=2, atol=1e-4),
    ADCase("lax.linalg.eigh", _eigh_invariants, lambda: _spectrum_inputs("hermitian"),
           ("eigh",), order=2),
    ADCase("lax.linalg.svd", _svd_invariants, lambda: _spectrum_inputs("full_rank", _SVD_KWARGS),
           ("svd",), order=2),
    ADCase("lax.linalg.eig (eigenvalues)", _eigenvalue_power_sums,
           lambda: _spectrum_inputs("diagonalizable"), ("eig",)),
    ADCase("lax.linalg.tridiagonal_solve", lax_linalg.tridiagonal_solve,
           lambda: tridiagonal_inputs(AD_DTYPES), ("tridiagonal_solve",), order=2),
    ADCase("jnp.linalg.solve", jnp.linalg.solve, lambda: solve_inputs(dtype_list=AD_DTYPES),
           ("lu", "triangular_solve")),
    ADCase("jnp.linalg.det", jnp.linalg.det, lambda: matrix_inputs(dtype_list=AD_DTYPES),
           ("lu",)),
    ADCase("jnp.linalg.slogdet", lambda a: tuple(jnp.linalg.slogdet(a)),
           lambda: matrix_inputs(dtype_list=AD_DTYPES), ("lu",)),
]


# --- the reductions to condensed forms, ormqr, cholesky_update, symmetric_product ----------

REAL_DTYPES = [d for d in DTYPES if d.kind == "f"]


def _with_leading_one(q):
  """The identity's first row and column around `q` (`[..., k, k]` to `[..., k+1, k+1]`)."""
  ndim = q.ndim
  padded = jnp.pad(q, [(0, 0)] * (ndim - 2) + [(1, 0), (1, 0)])
  return padded.at[..., 0, 0].set(1)


def hessenberg_invariants(a):
  """`Q H Q^H` and `Q^H Q` (a, I), `H` the upper Hessenberg part of the
  result and `Q` the product of the reflectors."""
  out, taus = lax_linalg.hessenberg(a)
  q = _with_leading_one(lax_linalg.householder_product(out[..., 1:, :-1], taus))
  h = jnp.triu(out, -1)
  qh = jnp.conj(jnp.matrix_transpose(q))
  return q @ h @ qh, qh @ q


def numpy_hessenberg_invariants(a):
  return _wide(a), _eye_like(a, a.shape[-1])


def tridiagonal_invariants(a, lower):
  """The eigenvalues of the tridiagonal `T` (those of the Hermitian matrix of
  the read triangle), `Q T Q^H` for the lower storage, and the triangle
  not read, returned as given."""
  out, d, e, taus = lax_linalg.tridiagonal(a, lower=lower)
  t = (jnp.vectorize(jnp.diag, signature="(n)->(n,n)")(d)
       + jnp.vectorize(lambda e: jnp.diag(e, 1) + jnp.diag(e, -1), signature="(k)->(n,n)")(e))
  kept = jnp.triu(out, 1) if lower else jnp.tril(out, -1)
  return jnp.linalg.eigvalsh(t), kept


def numpy_tridiagonal_invariants(a, lower):
  return (np.linalg.eigvalsh(_wide(a), UPLO="L" if lower else "U"),
          np.triu(a, 1) if lower else np.tril(a, -1))


def ormqr_of_qr(a, c, left, transpose):
  """ormqr with the reflectors of `a`'s QR factorization (geqrf)."""
  reflectors, taus = lax_linalg.geqrf(a)
  return lax_linalg.ormqr(reflectors, taus, c, left=left, transpose=transpose)


def numpy_ormqr_of_qr(a, c, left, transpose):
  q = np.linalg.qr(_wide(a), mode="complete")[0]   # LAPACK's reflectors, as geqrf's
  q = _mH(q) if transpose else q
  return q @ _wide(c) if left else _wide(c) @ q


@st.composite
def ormqr_inputs(draw):
  dtype = draw(st.sampled_from(DTYPES))
  batch = draw(S.batch_shapes())
  a = draw(S.well_conditioned_matrices(dtype, batch, kind="full_rank"))
  kwargs = {"left": draw(st.booleans()), "transpose": draw(st.booleans())}
  m, p = a.shape[-2], draw(st.integers(1, 3))
  c = draw(S.bounded_arrays(dtype, batch + ((m, p) if kwargs["left"] else (p, m))))
  return (a, c), kwargs


def schur_invariants(a):
  """`Z T Z^H`, `Z^H Z` and `T`'s entries that must be zero: below the
  diagonal (complex), below the first subdiagonal (real)."""
  t, z = lax_linalg.schur(a)
  zh = jnp.conj(jnp.matrix_transpose(z))
  below = jnp.tril(t, -1 if jnp.iscomplexobj(t) else -2)
  return z @ t @ zh, zh @ z, below


def numpy_schur_invariants(a):
  return _wide(a), _eye_like(a, a.shape[-1]), np.zeros(a.shape)


@st.composite
def cholesky_update_inputs(draw):
  """`((r, w), {})`: the upper Cholesky factor of a positive-definite matrix,
  and a vector."""
  dtype = draw(st.sampled_from(REAL_DTYPES))
  a = draw(S.well_conditioned_matrices(dtype, (), kind="positive_definite"))
  r = np.linalg.cholesky(_wide(a)).T.astype(dtype)
  return (r, draw(S.bounded_arrays(dtype, (a.shape[-1],)))), {}


def numpy_cholesky_update(r, w):
  r, w = _wide(r), _wide(w)
  return np.linalg.cholesky(r.T @ r + np.outer(w, w)).T


@st.composite
def symmetric_product_inputs(draw):
  dtype = draw(st.sampled_from(REAL_DTYPES))
  batch = draw(S.batch_shapes())
  m, n = draw(st.integers(1, 4)), draw(st.integers(1, 4))
  c = draw(S.bounded_arrays(dtype, batch + (m, m)))
  kwargs = {"alpha": draw(st.sampled_from([1.0, -0.5, 2.0])),
            "beta": draw(st.sampled_from([0.0, 1.0, 3.0]))}
  return (draw(S.bounded_arrays(dtype, batch + (m, n))), (c + _mT(c)).astype(dtype)), kwargs


def numpy_symmetric_product(a, c, alpha, beta):
  a = _wide(a)
  return alpha * (a @ _mT(a)) + beta * _wide(c)


CASES += [
    Case("lax.linalg.hessenberg", hessenberg_invariants,
         lambda: any_matrix_inputs(square=True), numpy_hessenberg_invariants, **TOL),
    Case("lax.linalg.tridiagonal", tridiagonal_invariants,
         lambda: any_matrix_inputs(square=True, kwargs=_kwargs(lower=[True, False])),
         numpy_tridiagonal_invariants, **TOL),
    Case("lax.linalg.ormqr", ormqr_of_qr, ormqr_inputs, numpy_ormqr_of_qr, **TOL),
    Case("lax.linalg.schur", schur_invariants, lambda: any_matrix_inputs(square=True),
         numpy_schur_invariants, **TOL),
    Case("lax.linalg.cholesky_update", lax_linalg.cholesky_update, cholesky_update_inputs,
         numpy_cholesky_update, **TOL),
    Case("lax.linalg.symmetric_product",
         lambda a, c, alpha, beta: lax_linalg.symmetric_product(a, c, alpha=alpha, beta=beta),
         symmetric_product_inputs, numpy_symmetric_product, **TOL),
]
