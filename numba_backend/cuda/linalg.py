"""dot_general and the decompositions, reductions and solvers on the numba-cuda backend.

dot_general: a thread a result element, adding its products in ascending
order of the contracted index from zero, in the contraction dtype (as the
CPU's `batched_matmul`, whose bits it has; the CPU's BLAS products are
within the tolerance docs/backends.md states); a block of tile x tile
threads computes a tile of the product, reading the operands' tiles into
shared memory a tile of the contracted index at a time (`tiled_matmul`;
the tile is TILE, or the least power of two covering a smaller product).

cholesky, triangular_solve, lu, lu_pivots_to_permutation, geqrf,
householder_product and qr: the CPU's rules (`decomposition_rules`), whose
loop over the matrices of a batch is here a kernel, a thread a matrix, each
running the CPU's per-matrix function compiled for the device from the same
Python (`device_version`): the same operations in the same order, so the CPU's
bits, deterministically; the scratch arrays a thread uses are allocated on
the host, a run of them a matrix. Their pairwise sums (NumPy's, of squared
moduli) walk NumPy's recursion with a stack of the thread's (`pairwise`).

tridiagonal_solve: a thread a matrix, by LAPACK's gtsv (`tridiagonal_matrix`)
rather than the reference's gesv of the dense matrix (which the CPU calls):
within the tolerance of docs/backends.md, NaN where the reference has NaN.

hessenberg, tridiagonal, ormqr and cholesky_update: a thread a matrix, by
device functions porting the reference's per-matrix Python (which the CPU
compiles as it is, NumPy's matrix products included): the same reflectors
and rotations, the reflections' products summed in ascending order (the
CPU's `reflect_left`, and `_reflect_right`), within the tolerance of
docs/backends.md; cholesky_update's rotations the reference's bits.
symmetric_product: a a^T by `tiled_matmul`, then alpha p + beta c.

eigh and svd: a thread a matrix by Jacobi's method (`_jacobi`,
`_one_sided_jacobi`), not the reference's LAPACK: within the tolerance of
docs/backends.md, the vectors up to the choices the reference leaves
unspecified. schur: a thread a matrix by the reference's Hessenberg
reduction and QR iterations, ported to loops (`complex_schur_matrix`,
`real_schur_matrix`). eig: a thread a matrix by that Schur form and its
eigenvectors by back substitution, as LAPACK's trevc (`complex_eig_matrix`,
`real_eig_matrix`), not the reference's geev: within the tolerance of
docs/backends.md, the order of the eigenvalues and the vectors' phases
unspecified as the reference leaves them.
"""

import cmath
import math

import numpy as np
from numba import cuda

from refimpl import dtypes
from refimpl.lax import linalg as lax
from numba_backend.cuda import device as G
from numba_backend.cuda.kernels import block_sum, device_version
from numba_backend.cuda.lower import CUDA_RULES
from numba_backend.lower import LoweringError, type_source
from numba_backend.rules import linalg as cpu
from numba_backend.rules.linalg import from_compute, matmul_operands, operand
from numba_backend.rules.reductions import first_half


TILE = 16
"""The side of the square tiles of dot_general's product and operands a
block holds, for products of at least that many rows or columns."""

_TILED = {}   # (the contraction dtype, the tile's side) -> its kernel


def _tiled_kernel(dtype, tile):
  """The kernel of `tiled_matmul` for operands of the NumPy dtype `dtype`
  and tiles of `tile` x `tile`."""
  if (dtype, tile) not in _TILED:
    scalar = dtype.type

    @cuda.jit
    def tiled(a, b, out, batch, m, depth, n, zero):
      left = cuda.shared.array((tile, tile), dtype)
      right = cuda.shared.array((tile, tile), dtype)
      y, x = cuda.threadIdx.y, cuda.threadIdx.x
      j = cuda.blockIdx.x * tile + x
      for p in range(cuda.blockIdx.z, batch, cuda.gridDim.z):
        for row_tile in range(cuda.blockIdx.y, (m + tile - 1) // tile, cuda.gridDim.y):
          i = row_tile * tile + y
          acc = zero
          for start in range(0, depth, tile):
            k = start + x   # (this thread's element of the left tile, then of the right)
            left[y, x] = a[(p * m + i) * depth + k] if i < m and k < depth else zero
            k = start + y
            right[y, x] = b[(p * depth + k) * n + j] if k < depth and j < n else zero
            cuda.syncthreads()
            for t in range(min(tile, depth - start)):
              acc = scalar(acc + scalar(left[y, t] * right[t, x]))
            cuda.syncthreads()
          if i < m and j < n:
            out[(p * m + i) * n + j] = acc

    tiled.made_by = (_tiled_kernel, (dtype, tile))   # (for `device.recording_launches`)
    _TILED[dtype, tile] = tiled
  return _TILED[dtype, tile]


def tiled_matmul(a, b, out, batch, m, depth, n, zero):
  """out[p, i, j] = the sum over k of a[p, i, k] * b[p, k, j] (flat arrays
  of one dtype, (batch, m, depth), (batch, depth, n), (batch, m, n)), added
  in ascending k from `zero`, each product and sum rounded to the dtype:
  blocks of tile x tile threads over the tiles of each product (the grid's
  first axis over its columns of tiles, the second over its rows of tiles
  and the third over the batch, each block taking the rows and products a
  grid-stride beyond CUDA's limits), the tile TILE or the least power of
  two covering a product of fewer rows and columns (in the simulator,
  where each thread is a Python thread, far cheaper)."""
  if out.size:
    tile = min(TILE, 1 << (int(max(m, n)) - 1).bit_length())
    _, rows, batches = G.GRID_LIMITS
    grid = (-(-n // tile), min(-(-m // tile), rows), min(batch, batches))
    G.launch_grid(_tiled_kernel(out.dtype, tile), grid, (tile, tile), a, b, out, batch, m, depth,
                  n, zero)


def _dot_general(ctx, lhs, rhs, *, dimension_numbers, precision, preferred_element_type):
  (out_aval,) = ctx.avals_out
  a, b, sizes, compute = matmul_operands(ctx, lhs, rhs, dimension_numbers)
  out, size = ctx.fresh(), ctx.dim(math.prod(out_aval.shape))
  ctx.emit(f"{out} = {ctx.lowering.allocation(size, type_source(compute))}")
  ctx.emit(f"{ctx.function(tiled_matmul)}({a}, {b}, {out}, {', '.join(map(ctx.dim, sizes))}, "
           f"{ctx.lowering.const(0, compute)})")
  return from_compute(ctx, out, compute, out_aval)


CUDA_RULES[lax.dot_general_p] = _dot_general


def _symmetric_product(ctx, a, c, *, alpha, beta):
  """alpha a a^T + beta c in float64: a a^T by `tiled_matmul` (a and its
  transpose), then each element alpha p + beta c, rounded as the reference's
  arrays (whose a a^T its BLAS sums in its own order: the tolerance of
  docs/backends.md)."""
  (a_aval, c_aval), (out_aval,) = ctx.avals_in, ctx.avals_out
  *_, m, n = a_aval.shape
  float64, batch, rank = np.dtype(np.float64), cpu._batch(a_aval), a_aval.ndim
  lhs = operand(ctx, a, a_aval, range(rank), float64)
  rhs = operand(ctx, a, a_aval, [*range(rank - 2), rank - 1, rank - 2], float64)
  addend = operand(ctx, c, c_aval, range(rank), float64)
  out, size = cpu._new(ctx, batch * m * m, float64), ctx.dim(batch * m * m)
  zero, alpha, beta = (ctx.lowering.const(value, float64) for value in (0, alpha, beta))
  ctx.emit(f"{ctx.function(tiled_matmul)}({lhs}, {rhs}, {out}, "
           f"{', '.join(map(ctx.dim, (batch, m, n, m)))}, {zero})")
  k = ctx.fresh("k")
  with ctx.lowering.elements(k, size):
    ctx.emit(f"{out}[{k}] = {alpha} * {out}[{k}] + {beta} * {addend}[{k}]")
  return from_compute(ctx, out, float64, out_aval)


CUDA_RULES[lax.symmetric_product_p] = _symmetric_product


# --- the decompositions --------------------------------------------------------------------

_STACK = 64
"""The partial sums `pairwise` holds at once: more than the depth of
NumPy's recursion for any length (each level halves the run)."""


@cuda.jit(device=True)
def pairwise(x, start, n, zero):
  """NumPy's pairwise_sum of the float64 x[start:start + n] from `zero`, as
  the CPU's `reductions.pairwise`: blocks of at most 128 (`block_sum`) from
  the first, each found from the whole run down (a run longer than 128
  split at `first_half`); a block that ends right halves adds each to the
  sum of its left half, waiting on the stack."""
  if n <= 128:
    return block_sum(x, start, n, zero)
  stack = cuda.local.array(_STACK, np.float64)
  top, first = 0, 0
  while first < n:
    low, size, path = 0, n, 0   # path: a bit a level, 1 where the block is in the right half
    while size > 128:
      half = first_half(size)
      if first >= low + half:
        low, size, path = low + half, size - half, 2 * path + 1
      else:
        size, path = half, 2 * path
    total = block_sum(x, start + low, size, zero)
    while path % 2:
      top -= 1
      total = stack[top] + total
      path //= 2
    stack[top] = total
    top += 1
    first = low + size
  return stack[0]


_conj_dot = device_version(cpu._conj_dot, __name__)
_reflector_dot = device_version(cpu._reflector_dot, __name__)
reflect_left = device_version(cpu.reflect_left, __name__, _reflector_dot=_reflector_dot)
_norm = device_version(cpu._norm, __name__, pairwise=pairwise)
cholesky_matrix = device_version(cpu.cholesky_matrix, __name__, pairwise=pairwise,
                                 _conj_dot=_conj_dot)
triangular_solve_matrix = device_version(cpu.triangular_solve_matrix, __name__)
lu_matrix = device_version(cpu.lu_matrix, __name__)
permutation_matrix = device_version(cpu.permutation_matrix, __name__)
householder_matrix = device_version(cpu.householder_matrix, __name__, _norm=_norm,
                                    reflect_left=reflect_left)
householder_product_matrix = device_version(cpu.householder_product_matrix, __name__,
                                            reflect_left=reflect_left)

_ON_DEVICE = {cpu.cholesky_matrix: cholesky_matrix,
              cpu.triangular_solve_matrix: triangular_solve_matrix, cpu.lu_matrix: lu_matrix,
              cpu.permutation_matrix: permutation_matrix,
              cpu.householder_matrix: householder_matrix,
              cpu.householder_product_matrix: householder_product_matrix}

CUDA_RULES.update(cpu.decomposition_rules(_ON_DEVICE.__getitem__))


# --- tridiagonal_solve ---------------------------------------------------------------------

@cuda.jit(device=True)
def _magnitude(z):
  """|Re z| + |Im z|: how getrf and gtsv compare pivots."""
  return abs(z.real) + abs(z.imag)


@cuda.jit(device=True)
def tridiagonal_matrix(dl, d, du, b, x, m, n, diagonal, upper, lower):
  """x (m x n, flat) with A x = b for the tridiagonal A of the diagonals dl
  (from its second element), d and du (to its last but one), by LAPACK's
  gtsv: Gaussian elimination with partial pivoting (rows i and i + 1 swap
  where the entry of i + 1 is the larger by `_magnitude`, as getrf
  chooses), b's rows eliminated alongside, then back substitution; all NaN
  where a pivot is zero (A singular) or an entry read is not finite.
  `diagonal`, `upper` and `lower` (m elements each) hold U's diagonal, its
  first superdiagonal and the rows' entries below the diagonal, then its
  second superdiagonal (gtsv's d, du and dl)."""
  finite = True
  for i in range(m):
    diagonal[i] = d[i]
    upper[i] = du[i] if i < m - 1 else 0
    lower[i] = dl[i + 1] if i < m - 1 else 0
    for z in (diagonal[i], upper[i], lower[i]):
      finite = finite and math.isfinite(z.real) and math.isfinite(z.imag)
  for k in range(m * n):
    x[k] = b[k]
    finite = finite and math.isfinite(b[k].real) and math.isfinite(b[k].imag)
  singular = not finite
  for i in range(m - 1):
    if singular:
      break
    if _magnitude(diagonal[i]) >= _magnitude(lower[i]):
      if diagonal[i] == 0:
        singular = True
        break
      factor = cpu._quotient(lower[i], diagonal[i])
      diagonal[i + 1] -= cpu._times(factor, upper[i])
      for c in range(n):
        x[(i + 1) * n + c] -= cpu._times(factor, x[i * n + c])
      lower[i] = 0
    else:   # rows i and i + 1 swap
      factor = cpu._quotient(diagonal[i], lower[i])
      diagonal[i], below = lower[i], diagonal[i + 1]
      diagonal[i + 1] = upper[i] - cpu._times(factor, below)
      lower[i] = upper[i + 1]
      upper[i + 1] = -cpu._times(factor, lower[i])
      upper[i] = below
      for c in range(n):
        top = x[i * n + c]
        x[i * n + c] = x[(i + 1) * n + c]
        x[(i + 1) * n + c] = top - cpu._times(factor, x[i * n + c])
  if singular or (m > 0 and diagonal[m - 1] == 0):
    if m * n > 0:
      x[:] = cpu._nan_like(x[0])
    return
  for c in range(n):
    for i in range(m - 1, -1, -1):
      value = x[i * n + c]
      if i + 1 < m:
        value -= cpu._times(upper[i], x[(i + 1) * n + c])
      if i + 2 < m:
        value -= cpu._times(lower[i], x[(i + 2) * n + c])
      x[i * n + c] = cpu._quotient(value, diagonal[i])


def _tridiagonal_solve(ctx, dl, d, du, b):
  avals, (out_aval,) = ctx.avals_in, ctx.avals_out
  *_, m, n = avals[3].shape
  wide, batch = lax._wide(out_aval.dtype), cpu._batch(out_aval)
  operands = [cpu._wide_operand(ctx, y, a) for y, a in zip((dl, d, du, b), avals)]
  out = cpu._new(ctx, math.prod(out_aval.shape), wide)
  scratch = [(cpu._new(ctx, batch * m, wide), m) for _ in range(3)]
  cpu.each_matrix(ctx, tridiagonal_matrix, batch, *((y, m) for y in operands[:3]),
                  (operands[3], m * n), (out, m * n), ctx.dim(m), ctx.dim(n), *scratch)
  return from_compute(ctx, out, wide, out_aval)


CUDA_RULES[lax.tridiagonal_solve_p] = _tridiagonal_solve


# --- hessenberg, tridiagonal, ormqr and cholesky_update ------------------------------------

@cuda.jit(device=True)
def _finite(x, count):
  """Whether each of x[:count] (each part of a complex one) is finite."""
  for k in range(count):
    if not (math.isfinite(x[k].real) and math.isfinite(x[k].imag)):
      return False
  return True


@cuda.jit(device=True)
def _larfg(x, start, stride, count, squares):
  """The reference's `_larfg` (LAPACK's larfg) on x[start::stride][:count]
  (count >= 1), in place, returning tau: the norm of the elements after the
  first is `_norm`'s (`squares` holds count - 1 floats)."""
  alpha = x[start]
  rest = _norm(x, start + stride, stride, count - 1, squares, True)
  if rest == 0 and alpha.imag == 0:
    return alpha * 0   # (NaN for a NaN alpha, as the reference's)
  beta = -math.copysign(math.hypot(cpu._modulus(alpha), rest), alpha.real)
  scale = alpha - beta
  for i in range(1, count):
    x[start + i * stride] = cpu._quotient(x[start + i * stride], scale)
  x[start] = beta
  return cpu._quotient(beta - alpha, beta)


@cuda.jit(device=True)
def _reflect_right(v, v_start, v_stride, tau, x, x_start, x_stride, rows, columns, products):
  """x := x (I - tau v v^H) for the reflector v (`columns` elements, as
  `reflect_left`) and the rows x columns matrix x[x_start + r x_stride + c]:
  x[r, c] -= (tau (x v)[r]) conj(v[c]), (x v)[r] added in ascending c;
  `products` holds `rows` elements."""
  one = cpu._zero_like(tau) + 1
  for r in range(rows):
    row = x_start + r * x_stride
    total = x[row] * one
    for c in range(1, columns):
      total += x[row + c] * v[v_start + c * v_stride]
    products[r] = cpu._times(tau, total)
  for r in range(rows):
    for c in range(columns):
      vc = v[v_start + c * v_stride] if c else one
      x[x_start + r * x_stride + c] -= cpu._times(products[r], np.conj(vc))


@cuda.jit(device=True)
def hessenberg_matrix(a, taus, n, squares, products):
  """The reference's Hessenberg reduction (`_hessenberg_matrix`, LAPACK's
  gehrd) of the flat n x n matrix `a`, in place, the reflectors' factors
  into `taus` (n - 1): for each j, `_larfg` of a[j + 1:, j], then a :=
  H_j^H a H_j, its products summed in ascending order (the reference's
  BLAS in its own: the tolerance of docs/backends.md); all NaN for a matrix
  with a non-finite entry. `squares` and `products` hold n elements."""
  if not _finite(a, n * n):
    a[:] = cpu._nan_like(a[0])
    taus[:] = cpu._nan_like(a[0])
    return
  for j in range(n - 1):
    below = (j + 1) * n + j   # the reflector's first element
    taus[j] = _larfg(a, below, n, n - j - 1, squares)
    reflect_left(a, below, n, np.conj(taus[j]), a, below + 1, n, n - j - 1, n - j - 1, products)
    _reflect_right(a, below, n, taus[j], a, j + 1, n, n, n - j - 1, products)


@cuda.jit(device=True)
def tridiagonal_form_matrix(a, out, d, e, taus, n, lower, h, squares, products):
  """The reference's tridiagonal reduction of the flat n x n matrix `a`
  (n >= 1): `hessenberg_matrix` of the Hermitian matrix `h` (n x n scratch)
  of its read triangle (rows and columns in reverse order when upper), into
  `out` (`a`, that triangle replaced), d (n), e and taus (n - 1); NaN in
  the triangle and the vectors for a triangle with a non-finite entry.
  `squares` and `products` hold n elements."""
  for t in range(n * n):
    out[t] = a[t]
  zero = cpu._zero_like(a[0])
  for i in range(n):
    for j in range(i + 1):   # (plus zero, as the reference's: no -0.0 parts)
      element = a[i * n + j] if lower else a[(n - 1 - i) * n + n - 1 - j]
      h[i * n + j], h[j * n + i] = element + np.conj(zero), zero + np.conj(element)
    h[i * n + i] = h[i * n + i].real
  hessenberg_matrix(h, taus, n, squares, products)
  for i in range(n):
    h[i * n + i] = h[i * n + i].real
    for j in range(i + 1):
      if lower:
        out[i * n + j] = h[i * n + j]
      else:
        out[(n - 1 - i) * n + n - 1 - j] = h[i * n + j]
    d[i if lower else n - 1 - i] = h[i * n + i].real
    if i < n - 1:
      e[i if lower else n - 2 - i] = h[(i + 1) * n + i].real
  if not lower:
    for i in range((n - 1) // 2):
      taus[i], taus[n - 2 - i] = taus[n - 2 - i], taus[i]


@cuda.jit(device=True)
def ormqr_matrix(a, taus, c, m, n, k, rows, columns, left, transpose, products):
  """The reference's ormqr (`_ormqr_matrix`) of one matrix: the flat rows x
  columns `c` times op(Q) in place (`left`: op(Q) c), Q = H_0 ... H_{k-1}
  held below the diagonal of the flat m x n `a` and in `taus`, op(Q) = Q^H
  with `transpose`; its products summed in ascending order. `products`
  holds max(rows, columns) elements."""
  for step in range(k):
    i = step if left == transpose else k - 1 - step
    tau = np.conj(taus[i]) if transpose else taus[i]
    if left:
      reflect_left(a, i * n + i, n, tau, c, i * columns, columns, m - i, columns, products)
    else:
      _reflect_right(a, i * n + i, n, tau, c, i, columns, rows, m - i, products)


_update_rotation = cpu._REFERENCE["_update_rotation"]


@cuda.jit(device=True)
def cholesky_update_matrix(r, z, n):
  """The reference's `_cholesky_update_matrix` on the flat n x n factor `r`
  and the vector `z`, in place: the same rotations, each element rounded
  as the reference's arrays round it, so its bits."""
  for k in range(n):
    c, s = _update_rotation(r[k * n + k], z[k])
    for t in range(n):
      row = r[k * n + t]
      r[k * n + t] = c * row - s * z[t]
      z[t] = c * z[t] + s * row


def _hessenberg(ctx, x):
  (aval,), (a_aval, taus_aval) = ctx.avals_in, ctx.avals_out
  n, batch, wide = aval.shape[-1], cpu._batch(aval), lax._wide(aval.dtype)
  a = cpu._copy(ctx, cpu._wide_operand(ctx, x, aval))
  k = max(n - 1, 0)
  taus, squares = cpu._new(ctx, batch * k, wide), cpu._new(ctx, batch * n, np.float64)
  products = cpu._new(ctx, batch * n, wide)
  cpu.each_matrix(ctx, hessenberg_matrix, batch, (a, n * n), (taus, k), ctx.dim(n), (squares, n),
                  (products, n))
  return [from_compute(ctx, a, wide, a_aval), from_compute(ctx, taus, wide, taus_aval)]


def _tridiagonal(ctx, x, *, lower):
  (aval,), out_avals = ctx.avals_in, ctx.avals_out
  n, batch, wide = aval.shape[-1], cpu._batch(aval), lax._wide(aval.dtype)
  out, h = cpu._new(ctx, batch * n * n, wide), cpu._new(ctx, batch * n * n, wide)
  d, e = cpu._new(ctx, batch * n, np.float64), cpu._new(ctx, batch * (n - 1), np.float64)
  taus, products = cpu._new(ctx, batch * (n - 1), wide), cpu._new(ctx, batch * n, wide)
  squares = cpu._new(ctx, batch * n, np.float64)
  cpu.each_matrix(ctx, tridiagonal_form_matrix, batch, (cpu._wide_operand(ctx, x, aval), n * n),
                  (out, n * n), (d, n), (e, n - 1), (taus, n - 1), ctx.dim(n), ctx.dim(lower),
                  (h, n * n), (squares, n), (products, n))
  return [from_compute(ctx, y, dtype, a) for y, dtype, a in
          zip((out, d, e, taus), (wide, np.float64, np.float64, wide), out_avals)]


def _ormqr(ctx, a, taus, c, *, left, transpose):
  (a_aval, taus_aval, c_aval), (out_aval,) = ctx.avals_in, ctx.avals_out
  (m, n), k, (rows, columns) = a_aval.shape[-2:], taus_aval.shape[-1], c_aval.shape[-2:]
  wide, batch = lax._wide(c_aval.dtype), cpu._batch(c_aval)
  out = cpu._copy(ctx, cpu._wide_operand(ctx, c, c_aval))
  products = cpu._new(ctx, batch * max(rows, columns), wide)
  cpu.each_matrix(ctx, ormqr_matrix, batch, (cpu._wide_operand(ctx, a, a_aval), m * n),
                  (cpu._wide_operand(ctx, taus, taus_aval), k), (out, rows * columns),
                  *map(ctx.dim, (m, n, k, rows, columns, left, transpose)),
                  (products, max(rows, columns)))
  return from_compute(ctx, out, wide, out_aval)


def _cholesky_update(ctx, r, w):
  (r_aval, w_aval), (out_aval,) = ctx.avals_in, ctx.avals_out
  n, float64 = r_aval.shape[-1], np.dtype(np.float64)
  out = cpu._copy(ctx, operand(ctx, r, r_aval, range(r_aval.ndim), float64))
  vector = cpu._copy(ctx, operand(ctx, w, w_aval, range(w_aval.ndim), float64))
  cpu.each_matrix(ctx, cholesky_update_matrix, cpu._batch(r_aval), (out, n * n), (vector, n),
                  ctx.dim(n))
  return from_compute(ctx, out, float64, out_aval)


CUDA_RULES.update({lax.hessenberg_p: _hessenberg, lax.tridiagonal_p: _tridiagonal,
                   lax.ormqr_p: _ormqr, lax.cholesky_update_p: _cholesky_update})


# --- eigh and svd: Jacobi's method ------------------------------------------------------------

SWEEPS = 64
"""The most sweeps of Jacobi rotations eigh and svd make before they give up on a
matrix (NaN results, as the reference's LAPACK failing to converge): far
more than it takes (quadratic convergence: about ten sweeps for n = 100)."""

_EPS = float(np.finfo(np.float64).eps)


@cuda.jit(device=True)
def _exponent(x, count):
  """The exponent e of the largest modulus among the parts of x[:count]
  (math.frexp's: 2**-e times it lies in [0.5, 1)); 0 for zeros."""
  largest = 0.0
  for k in range(count):
    largest = max(largest, abs(x[k].real), abs(x[k].imag))
  return math.frexp(largest)[1] if largest > 0 else 0


@cuda.jit(device=True)
def _frobenius(x, count):
  """The square root of the sum of the squared moduli of x[:count] (in order)."""
  total = 0.0
  for k in range(count):
    total += x[k].real * x[k].real + x[k].imag * x[k].imag
  return math.sqrt(total)


@cuda.jit(device=True)
def _identity(x, n):
  """x (n x n) := the identity."""
  for t in range(n * n):
    x[t] = 0
  for i in range(n):
    x[i * n + i] = 1


@cuda.jit(device=True)
def _rotation(app, aqq, g):
  """(c, s) of the Jacobi rotation that zeroes the entry of modulus g > 0
  off the diagonal (app, aqq) of a Hermitian 2 x 2 matrix: s = t c, c = 1 /
  sqrt(1 + t^2), t = sign(theta) / (|theta| + hypot(theta, 1)), theta =
  (aqq - app) / 2g (the smaller angle)."""
  theta = (aqq - app) / (2 * g)
  t = math.copysign(1.0, theta) / (abs(theta) + math.hypot(theta, 1.0))
  c = 1 / math.sqrt(1 + t * t)
  return c, t * c


@cuda.jit(device=True)
def _rotate_columns(x, stride, rows, p, q, c, s, e):
  """x := x J for the rows x stride `x` and the rotation J of the plane
  (p, q) with J[p, p] = J[q, q] = c, J[p, q] = s e, J[q, p] = -s conj(e)."""
  for r in range(rows):
    xp, xq = x[r * stride + p], x[r * stride + q]
    x[r * stride + p] = c * xp - s * np.conj(e) * xq
    x[r * stride + q] = s * e * xp + c * xq


@cuda.jit(device=True)
def _rotate(h, vectors, n, p, q, c, s, e):
  """h := J^H h J and vectors := vectors J for `_rotate_columns`' J: h[p, q]
  then zero (set exactly), h[p, p] and h[q, q] real."""
  _rotate_columns(h, n, n, p, q, c, s, e)
  _rotate_columns(vectors, n, n, p, q, c, s, e)
  for k in range(n):   # the rows p and q
    hp, hq = h[p * n + k], h[q * n + k]
    h[p * n + k] = c * hp - s * e * hq
    h[q * n + k] = s * np.conj(e) * hp + c * hq
  h[p * n + q] = h[q * n + p] = 0
  h[p * n + p], h[q * n + q] = h[p * n + p].real, h[q * n + q].real


@cuda.jit(device=True)
def _jacobi(h, vectors, n):
  """Diagonalizes the Hermitian n x n `h` in place by cyclic Jacobi
  rotations, their product into `vectors` (the identity first): each sweep
  rotates every pair p < q in order whose h[p, q] is above eps
  sqrt(|h[p, p] h[q, q]|) (the relative criterion of Demmel and Veselic)
  and above eps ‖h‖ / n (those below, left as they are, move the
  eigenvalues by less than eps ‖h‖ all together, as LAPACK's own error), by
  the angle that zeroes it (`_rotation`); until a sweep rotates none.
  Whether it converged within SWEEPS sweeps."""
  negligible = _EPS * _frobenius(h, n * n) / max(n, 1)
  _identity(vectors, n)
  for _ in range(SWEEPS):
    rotated = False
    for p in range(n - 1):
      for q in range(p + 1, n):
        apq = h[p * n + q]
        g = cpu._modulus(apq)
        app, aqq = h[p * n + p].real, h[q * n + q].real
        if g <= negligible or g <= _EPS * math.sqrt(abs(app)) * math.sqrt(abs(aqq)):
          continue
        rotated = True
        c, s = _rotation(app, aqq, g)
        _rotate(h, vectors, n, p, q, c, s, apq / g)
    if not rotated:
      return True
  return False


@cuda.jit(device=True)
def _ascending(values, order, n):
  """order[:n] := the indices of values[:n] in ascending order of value,
  equal ones in index order (an insertion sort)."""
  for i in range(n):
    j = i
    while j > 0 and values[order[j - 1]] > values[i]:
      order[j] = order[j - 1]
      j -= 1
    order[j] = i


@cuda.jit(device=True)
def eigh_matrix(x, v, w, n, lo, hi, lower, h, vectors, values, order):
  """The eigenpairs lo..hi-1 (ascending eigenvalues) of the Hermitian matrix
  of the read triangle of the flat n x n `x` (as the reference's
  `_hermitian_from_triangle` builds it), into v (n x (hi - lo), the
  eigenvectors as columns) and w (hi - lo), by `_jacobi` on the matrix
  scaled by a power of two (its largest modulus in [0.5, 1), exactly);
  all NaN for a triangle with a non-finite entry or without convergence.
  `h` and `vectors` hold n x n elements, `values` and `order` n."""
  if n == 0:
    return
  d = hi - lo
  for i in range(n):   # the triangle plus the conjugate transpose of its strict part
    for k in range(n):
      if (i >= k) == bool(lower) or i == k:
        h[i * n + k] = x[i * n + k]
      else:
        h[i * n + k] = np.conj(x[k * n + i])
    h[i * n + i] = h[i * n + i].real
  finite, exponent = _finite(h, n * n), 0
  if finite:
    exponent = _exponent(h, n * n)
    for t in range(n * n):
      h[t] = cpu._times_power_of_two(h[t], -exponent)
  if not (finite and _jacobi(h, vectors, n)):
    v[:] = cpu._nan_like(x[0])
    w[:] = np.nan
    return
  for i in range(n):
    values[i] = h[i * n + i].real
  _ascending(values, order, n)
  for c in range(d):
    w[c] = cpu._times_power_of_two(values[order[lo + c]], exponent)
    for r in range(n):
      v[r * d + c] = vectors[r * n + order[lo + c]]


def _eigh(ctx, x, *, lower, sort_eigenvalues, subset_by_index):
  (aval,), (v_aval, w_aval) = ctx.avals_in, ctx.avals_out
  n, batch, wide = aval.shape[-1], cpu._batch(aval), lax._wide(aval.dtype)
  lo, hi = lax._index_range(subset_by_index, n)
  v, w = cpu._new(ctx, batch * n * (hi - lo), wide), cpu._new(ctx, batch * (hi - lo), np.float64)
  h, vectors = cpu._new(ctx, batch * n * n, wide), cpu._new(ctx, batch * n * n, wide)
  values, order = cpu._new(ctx, batch * n, np.float64), cpu._new(ctx, batch * n, np.int64)
  cpu.each_matrix(ctx, eigh_matrix, batch, (cpu._wide_operand(ctx, x, aval), n * n),
                  (v, n * (hi - lo)), (w, hi - lo), *map(ctx.dim, (n, lo, hi, lower)),
                  (h, n * n), (vectors, n * n), (values, n), (order, n))
  return [from_compute(ctx, v, wide, v_aval), from_compute(ctx, w, np.float64, w_aval)]


CUDA_RULES[lax.eigh_p] = _eigh


@cuda.jit(device=True)
def _column_dot(w, stride, rows, p, q):
  """The sum over i of conj(w[i, p]) w[i, q] (ascending), for the rows x
  stride matrix `w`."""
  total = w[p] * 0
  for i in range(rows):
    total += np.conj(w[i * stride + p]) * w[i * stride + q]
  return total


@cuda.jit(device=True)
def _one_sided_jacobi(w, v, rows, columns, negligible):
  """Orthogonalizes the columns of the rows x columns `w` (rows >= columns)
  in place by cyclic Jacobi rotations of pairs of columns (Hestenes's
  method: `_jacobi`'s rotations of w^H w, applied to w's columns), their
  product into the columns x columns `v` (the identity first): a pair
  p < q is rotated while |w_p^H w_q| > eps ‖w_p‖ ‖w_q‖ and both squared
  norms are above `negligible` (a column below it is rounding noise of a
  zero singular value, which rotations would shrink without end); until a
  sweep rotates none. Whether it converged within SWEEPS sweeps."""
  _identity(v, columns)
  for _ in range(SWEEPS):
    rotated = False
    for p in range(columns - 1):
      for q in range(p + 1, columns):
        gamma = _column_dot(w, columns, rows, p, q)
        g = cpu._modulus(gamma)
        alpha = _column_dot(w, columns, rows, p, p).real
        beta = _column_dot(w, columns, rows, q, q).real
        if (g == 0 or g <= _EPS * math.sqrt(alpha) * math.sqrt(beta)
            or min(alpha, beta) <= negligible):
          continue
        rotated = True
        c, s = _rotation(alpha, beta, g)
        _rotate_columns(w, columns, rows, p, q, c, s, gamma / g)
        _rotate_columns(v, columns, columns, p, q, c, s, gamma / g)
    if not rotated:
      return True
  return False


@cuda.jit(device=True)
def _complete(q, size, present, count):
  """Columns present..count-1 of the size x size `q`, whose first `present`
  columns are orthonormal: orthonormal to them and to each other, each the
  first unit vector e_i (after the last one taken) whose part orthogonal to
  the columns before it (two passes of Gram-Schmidt) has a squared norm of
  at least 1 / 2size, normalized (some e_i always has: their parts' squared
  norms add up to more than 1/2)."""
  i = 0
  for j in range(present, count):
    while i < size:
      for r in range(size):
        q[r * size + j] = 1.0 if r == i else 0.0
      i += 1
      for _ in range(2):
        for col in range(j):
          projection = _column_dot(q, size, size, col, j)
          for r in range(size):
            q[r * size + j] -= projection * q[r * size + col]
      norm = math.sqrt(_column_dot(q, size, size, j, j).real)
      if norm * norm >= 0.5 / size:
        for r in range(size):
          q[r * size + j] = q[r * size + j] / norm
        break


@cuda.jit(device=True)
def svd_matrix(x, s, u, vt, m, n, lo, d, full, vectors, w, v, q, norms, order):
  """The singular triplets lo..lo+d-1 (descending singular values) of the
  flat m x n `x` into s (d), and with `vectors` into u (m x m when `full`,
  else m x d) and vt (n x n, else d x n), by `_one_sided_jacobi` on x (x^H
  when m < n) scaled by a power of two: the singular values are the norms
  of the orthogonalized columns, the vectors on that side the columns
  normalized (`_complete`d where a norm is within eps ‖x‖ of zero, and to
  a square matrix when `full`), on the other the rotations' product; identities for an
  empty matrix, all NaN for a matrix with a non-finite entry or without
  convergence. Scratch: w max(m, n) x min(m, n), v min(m, n)^2, q max(m, n)^2
  elements, norms and order min(m, n)."""
  rows, columns = max(m, n), min(m, n)
  u_columns, vt_rows = (m, n) if full else (d, d)
  if columns == 0 and vectors:
    for t in range(m * u_columns):
      u[t] = 1 if t // u_columns == t % u_columns else 0
    for t in range(vt_rows * n):
      vt[t] = 1 if t // n == t % n else 0
  if columns == 0:
    return
  for i in range(rows):   # w = x, or x^H
    for j in range(columns):
      w[i * columns + j] = x[i * n + j] if m >= n else np.conj(x[j * n + i])
  finite, exponent = _finite(w, rows * columns), 0
  if finite:
    exponent = _exponent(w, rows * columns)
    for t in range(rows * columns):
      w[t] = cpu._times_power_of_two(w[t], -exponent)
  negligible = (_EPS * _frobenius(w, rows * columns)) ** 2 if finite else 0.0
  if not (finite and _one_sided_jacobi(w, v, rows, columns, negligible)):
    s[:] = np.nan
    if vectors:
      u[:] = cpu._nan_like(x[0])
      vt[:] = cpu._nan_like(x[0])
    return
  for j in range(columns):
    norms[j] = math.sqrt(_column_dot(w, columns, rows, j, j).real)
  for i in range(columns):   # descending, equal ones in index order
    k = i
    while k > 0 and norms[order[k - 1]] < norms[i]:
      order[k] = order[k - 1]
      k -= 1
    order[k] = i
  for c in range(d):
    s[c] = cpu._times_power_of_two(norms[order[lo + c]], exponent)
  if not vectors:
    return
  present = 0   # q: w's columns, normalized, in descending order of norm
  for j in range(columns):
    norm = norms[order[j]]
    kept = norm * norm > negligible   # (a smaller one's direction is noise)
    present += kept
    for r in range(rows):
      q[r * rows + j] = w[r * columns + order[j]] / norm if kept else 0
  _complete(q, rows, present, rows if full else columns)
  first = 0 if full else lo
  if m >= n:   # u: q's columns; vt: v's columns, conjugated, as rows
    for r in range(m):
      for c in range(u_columns):
        u[r * u_columns + c] = q[r * rows + first + c]
    for r in range(vt_rows):
      for c in range(n):
        vt[r * n + c] = np.conj(v[c * columns + order[first + r]])
  else:   # u: v's columns; vt: q's columns, conjugated, as rows
    for r in range(m):
      for c in range(u_columns):
        u[r * u_columns + c] = v[r * columns + order[first + c]]
    for r in range(vt_rows):
      for c in range(n):
        vt[r * n + c] = np.conj(q[c * rows + first + r])


def _svd(ctx, x, *, full_matrices, compute_uv, subset_by_index, algorithm):
  (aval,), (s_aval, *uv_avals) = ctx.avals_in, ctx.avals_out
  *_, m, n = aval.shape
  wide, batch, k = lax._wide(aval.dtype), cpu._batch(aval), min(m, n)
  lo, _ = lax._index_range(subset_by_index, k)
  d = s_aval.shape[-1]
  if lo + d > k:
    raise LoweringError(f"the numba-cuda backend lowers 'svd' with subset_by_index within "
                        f"[0, min(m, n)] only (got {subset_by_index} for min(m, n) = {k})")
  s = cpu._new(ctx, batch * d, np.float64)
  sizes = [math.prod(a.shape[-2:]) for a in uv_avals] or [0, 0]
  u, vt = (cpu._new(ctx, batch * size, wide) for size in sizes)
  w, v = cpu._new(ctx, batch * max(m, n) * k, wide), cpu._new(ctx, batch * k * k, wide)
  q = cpu._new(ctx, batch * max(m, n) ** 2 if compute_uv else 0, wide)
  norms, order = cpu._new(ctx, batch * k, np.float64), cpu._new(ctx, batch * k, np.int64)
  cpu.each_matrix(ctx, svd_matrix, batch, (cpu._wide_operand(ctx, x, aval), m * n), (s, d),
                  (u, sizes[0]), (vt, sizes[1]), *map(ctx.dim, (m, n, lo, d, full_matrices,
                                                                compute_uv)),
                  (w, max(m, n) * k), (v, k * k), (q, max(m, n) ** 2 if compute_uv else 0),
                  (norms, k), (order, k))
  outs = [from_compute(ctx, s, np.float64, s_aval)]
  return outs + [from_compute(ctx, y, wide, a) for y, a in zip((u, vt), uv_avals)]


CUDA_RULES[lax.svd_p] = _svd


# --- schur: the reference's QR iterations ------------------------------------------------

_givens = cpu._REFERENCE["_givens"]
_standard_block = cpu._REFERENCE["_standard_block"]
_francis_shifts = cpu._REFERENCE["_francis_shifts"]
_double_shift_column = cpu._REFERENCE["_double_shift_column"]


@cuda.jit(device=True)
def _deflation_start(h, n, hi, norm):
  """The reference's `_deflation_start` on the flat n x n Hessenberg `h`."""
  lo = hi
  while lo > 0:
    scale = abs(h[(lo - 1) * n + lo - 1]) + abs(h[lo * n + lo])
    if abs(h[lo * n + lo - 1]) <= _EPS * (scale if scale > 0 else norm):
      h[lo * n + lo - 1] = 0
      return lo
    lo -= 1
  return 0


@cuda.jit(device=True)
def _givens_rows(m, n, k, c, s, start, stop):
  """The reference's `_rotate_rows` on the flat n x n `m`: rows k, k + 1 of
  m[:, start:stop] := [[c, s], [-conj(s), c]] times them."""
  for j in range(start, stop):
    top, bottom = m[k * n + j], m[(k + 1) * n + j]
    m[k * n + j] = c * top + s * bottom
    m[(k + 1) * n + j] = c * bottom - np.conj(s) * top


@cuda.jit(device=True)
def _givens_columns(m, n, k, c, s, start, stop):
  """The reference's `_rotate_columns` on the flat n x n `m`: columns k,
  k + 1 of m[start:stop] := them times [[c, s], [-conj(s), c]]^H."""
  for i in range(start, stop):
    left, right = m[i * n + k], m[i * n + k + 1]
    m[i * n + k] = c * left + np.conj(s) * right
    m[i * n + k + 1] = c * right - s * left


@cuda.jit(device=True)
def _complex_schur(h, z, n):
  """The reference's `_complex_schur_matrix` (zlahqr's single-shift QR
  steps) on the flat n x n Hessenberg `h` and `z`; whether it converged."""
  norm = _frobenius(h, n * n)
  hi, steps, total = n - 1, 0, 0
  while hi > 0:
    lo = _deflation_start(h, n, hi, norm)
    if lo == hi:
      hi, steps = hi - 1, 0
      continue
    if total == 30 * n:
      return False
    steps, total = steps + 1, total + 1
    a, b = h[(hi - 1) * n + hi - 1], h[(hi - 1) * n + hi]
    c, d = h[hi * n + hi - 1], h[hi * n + hi]
    if steps % 10 == 0:
      shift = d + 0.75 * abs(c)
    else:   # the eigenvalue of the trailing 2 x 2 block nearer to d
      half = (a - d) / 2
      root = cmath.sqrt(half * half + b * c)
      shift = (a + d) / 2 + root
      if abs(shift - d) > abs((a + d) / 2 - root - d):
        shift = (a + d) / 2 - root
    x, y = h[lo * n + lo] - shift, h[(lo + 1) * n + lo]
    for k in range(lo, hi):
      if k > lo:
        x, y = h[k * n + k - 1], h[(k + 1) * n + k - 1]
      cos, sin = _givens(x, y)
      _givens_rows(h, n, k, cos, sin, max(lo, k - 1), n)
      if k > lo:
        h[(k + 1) * n + k - 1] = 0
      _givens_columns(h, n, k, cos, sin, 0, min(k + 3, hi + 1))
      _givens_columns(z, n, k, cos, sin, 0, n)
  return True


@cuda.jit(device=True)
def _reflect3(m, n, k, v, beta, start, stop, rows):
  """(I - beta v v^T) applied to rows k..k+2 of m[:, start:stop] (`rows`
  False: m[start:stop, k:k + 3] times it), for the flat n x n `m` and the
  3-vector `v`: each element less beta (v_r p), p its line's product with
  v (the reference's `_reflect_left` and `_reflect_right`)."""
  for line in range(start, stop):
    first, step = (k * n + line, n) if rows else (line * n + k, 1)
    p = v[0] * m[first] + v[1] * m[first + step] + v[2] * m[first + 2 * step]
    for r in range(3):
      m[first + r * step] -= beta * (v[r] * p)


@cuda.jit(device=True)
def _real_schur(h, z, n):
  """The reference's `_real_schur_matrix` (dlahqr's double-shift QR steps,
  2 x 2 blocks in standard form) on the flat n x n real Hessenberg `h` and
  `z`; whether it converged."""
  v = cuda.local.array(3, np.float64)
  norm = _frobenius(h, n * n)
  hi, steps, total = n - 1, 0, 0
  while hi >= 0:
    lo = _deflation_start(h, n, hi, norm)
    if lo == hi:
      hi, steps = hi - 1, 0
      continue
    if lo == hi - 1:
      k = lo
      cs, sn, a, b, c, d = _standard_block(h[k * n + k], h[k * n + k + 1], h[(k + 1) * n + k],
                                           h[(k + 1) * n + k + 1])
      _givens_rows(h, n, k, cs, sn, k, n)
      _givens_columns(h, n, k, cs, sn, 0, k + 2)
      _givens_columns(z, n, k, cs, sn, 0, n)
      h[k * n + k], h[k * n + k + 1], h[(k + 1) * n + k], h[(k + 1) * n + k + 1] = a, b, c, d
      hi, steps = hi - 2, 0
      continue
    if total == 30 * n:
      return False
    steps, total = steps + 1, total + 1
    if steps % 10 == 0:
      if steps % 20 == 10:
        s, center = abs(h[(lo + 1) * n + lo]) + abs(h[(lo + 2) * n + lo + 1]), h[lo * n + lo]
      else:
        s, center = abs(h[hi * n + hi - 1]) + abs(h[(hi - 1) * n + hi - 2]), h[hi * n + hi]
      re, im = center + 0.75 * s, math.sqrt(0.4375) * s
    else:
      re, im = _francis_shifts(h[(hi - 1) * n + hi - 1], h[(hi - 1) * n + hi],
                               h[hi * n + hi - 1], h[hi * n + hi])
    x, y, w = _double_shift_column(h[lo * n + lo], h[lo * n + lo + 1], h[(lo + 1) * n + lo],
                                   h[(lo + 1) * n + lo + 1], h[(lo + 2) * n + lo + 1], re, im)
    for k in range(lo, hi - 1):
      v[0], v[1], v[2] = x, y, w   # the reference's `_house` of (x, y, w)
      norm3 = math.sqrt(x * x + y * y + w * w)
      beta = 0.0
      if norm3 != 0:
        v[0] += math.copysign(norm3, x)
        beta = 2 / (v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
      _reflect3(h, n, k, v, beta, max(lo, k - 1), n, True)
      if k > lo:
        h[(k + 1) * n + k - 1] = 0
        h[(k + 2) * n + k - 1] = 0
      _reflect3(h, n, k, v, beta, 0, min(k + 4, hi + 1), False)
      _reflect3(z, n, k, v, beta, 0, n, False)
      x, y = h[(k + 1) * n + k], h[(k + 2) * n + k]
      if k < hi - 2:
        w = h[(k + 3) * n + k]
    cos, sin = _givens(x, y)
    _givens_rows(h, n, hi - 1, cos, sin, hi - 2, n)
    h[hi * n + hi - 2] = 0
    _givens_columns(h, n, hi - 1, cos, sin, 0, hi + 1)
    _givens_columns(z, n, hi - 1, cos, sin, 0, n)
  return True


@cuda.jit(device=True)
def _hessenberg_with_q(t, z, n, taus, squares, products):
  """The reference's `_hessenberg_with_q` of the flat n x n `t`:
  `hessenberg_matrix`, then Q into zeroed `z` from its reflectors, t's
  entries below the first subdiagonal zeroed; whether t is finite (else
  nothing done). `taus` holds n - 1 elements, `squares` and `products` n."""
  if not _finite(t, n * n):
    return False
  hessenberg_matrix(t, taus, n, squares, products)
  for j in range(n):
    z[j * n + j] = 1
  for j in range(n - 2, -1, -1):   # z := H_0 ... H_{n-2}
    below = (j + 1) * n + j
    reflect_left(t, below, n, taus[j], z, below + 1, n, n - j - 1, n - j - 1, products)
  for j in range(n - 2):
    for i in range(j + 2, n):
      t[i * n + j] = 0
  return True


@cuda.jit(device=True)
def _to_unit_scale(t, count):
  """The reference's `_to_unit_scale` of the finite t[:count] (its largest
  modulus into [0.5, 1) by a power of two); the exponent that scales it back
  (0, t unchanged, where t is not finite)."""
  if not _finite(t, count):
    return 0
  largest = 0.0
  for k in range(count):
    largest = max(largest, cpu._modulus(t[k]))
  exponent = math.frexp(largest)[1] if largest > 0 else 0
  for k in range(count):
    t[k] = cpu._times_power_of_two(t[k], -exponent)
  return exponent


@cuda.jit(device=True)
def _schur_result(t, z, n, exponent, converged):
  """T scaled back by 2**exponent, or T and Z all NaN where not `converged`."""
  for k in range(n * n):
    if converged:
      t[k] = cpu._times_power_of_two(t[k], exponent)
    else:
      t[k] = z[k] = cpu._nan_like(t[0])


@cuda.jit(device=True)
def complex_schur_matrix(t, z, n, taus, squares, products):
  """The reference's Schur decomposition of the flat n x n complex `t`: T in
  place, Z into zeroed `z` (`_to_unit_scale`, `_hessenberg_with_q`, then
  `_complex_schur`); NaN for a matrix with a non-finite entry or on which
  it does not converge."""
  exponent = _to_unit_scale(t, n * n)
  _schur_result(t, z, n, exponent, _hessenberg_with_q(t, z, n, taus, squares, products)
                and _complex_schur(t, z, n))


@cuda.jit(device=True)
def real_schur_matrix(t, z, n, taus, squares, products):
  """`complex_schur_matrix` for a real `t`, by `_real_schur`."""
  exponent = _to_unit_scale(t, n * n)
  _schur_result(t, z, n, exponent, _hessenberg_with_q(t, z, n, taus, squares, products)
                and _real_schur(t, z, n))


def _schur(ctx, x, *, compute_schur_vectors, sort_eig_vals, select_callable):
  if sort_eig_vals:
    raise NotImplementedError("The sort feature of LAPACK's gees routine is not implemented.")
  (aval,), out_avals = ctx.avals_in, ctx.avals_out
  n, batch, wide = aval.shape[-1], cpu._batch(aval), lax._wide(aval.dtype)
  t = cpu._copy(ctx, cpu._wide_operand(ctx, x, aval))
  z, taus = cpu._new(ctx, batch * n * n, wide, 0), cpu._new(ctx, batch * max(n - 1, 0), wide)
  squares, products = cpu._new(ctx, batch * n, np.float64), cpu._new(ctx, batch * n, wide)
  core = complex_schur_matrix if dtypes.is_complex(wide) else real_schur_matrix
  cpu.each_matrix(ctx, core, batch, (t, n * n), (z, n * n), ctx.dim(n),
                  (taus, max(n - 1, 0)), (squares, n), (products, n))
  return [from_compute(ctx, y, wide, a) for y, a in zip((t, z), out_avals)]


CUDA_RULES[lax.schur_p] = _schur


# --- eig: eigenvectors of the Schur form -------------------------------------------------------

_RESCALE = 2.0 ** 500
"""Above this modulus an eigenvector's back substitution scales the entries
found so far down by it (exactly): the next steps cannot then overflow."""

_TINY = float(np.finfo(np.float64).tiny)
"""The least normal float64: the least pivot (`_pivot`), for a zero matrix."""


@cuda.jit(device=True)
def _entry(t, n, i, j, flipped):
  """t[i, j] of the flat n x n `t`, or (`flipped`) of its transpose with
  the order of rows and columns reversed (an upper quasi-triangular t stays one)."""
  return t[(n - 1 - j) * n + n - 1 - i] if flipped else t[i * n + j]


@cuda.jit(device=True)
def _pivot(d, smin):
  """The pivot d, or smin where |d| is below it (LAPACK's trevc's
  perturbation of a singular pivot, whose error is within eps ‖t‖)."""
  return d if cpu._modulus(d) >= smin else d * 0 + smin   # (of d's type)


@cuda.jit(device=True)
def _solve2(p, q, r, s, u, v, smin):
  """(x1, x2) solving [[p, q], [r, s]] (x1, x2) = (u, v) by Gaussian
  elimination with complete pivoting, pivots `_pivot`ed (LAPACK's laln2
  without its scaling)."""
  big = max(cpu._modulus(p), cpu._modulus(q), cpu._modulus(r), cpu._modulus(s))
  swap_columns = cpu._modulus(p) < big and cpu._modulus(r) < big
  if swap_columns:
    p, q, r, s = q, p, s, r
  if cpu._modulus(p) < big:   # the largest now in the first column: on top
    p, q, r, s, u, v = r, s, p, q, v, u
  p = _pivot(p, smin)
  factor = r / p
  second = (v - factor * u) / _pivot(s - factor * q, smin)
  first = (u - q * second) / p
  return (second, first) if swap_columns else (first, second)


@cuda.jit(device=True)
def _null_vector(t, n, s, e, w, y, smin, flipped):
  """y[:e + 1] := a null vector of (t' - w I)[:e + 1, :e + 1] (t' the flat
  n x n upper quasi-triangular `t`, or its `_entry` flipped), for the
  eigenvalue w of its diagonal block s..e (a 1 x 1 block, or a real 2 x 2
  one): one at s (or at e, whichever makes the block's two equations'
  larger coefficient the divisor), then back substitution by the diagonal
  blocks above (`_pivot`ed, `_solve2`), rescaled where it grows (`_RESCALE`)."""
  if s == e:
    y[s] = 1
  elif cpu._modulus(_entry(t, n, s, e, flipped)) >= cpu._modulus(_entry(t, n, e, s, flipped)):
    y[s], y[e] = 1, -(_entry(t, n, s, s, flipped) - w) / _entry(t, n, s, e, flipped)
  else:
    y[s], y[e] = -(_entry(t, n, e, e, flipped) - w) / _entry(t, n, e, s, flipped), 1
  k = s - 1
  while k >= 0:
    top = k - 1 if k > 0 and _entry(t, n, k, k - 1, flipped) != 0 else k
    for i in range(top, k + 1):   # minus the products with the entries found
      total = 0j
      for m in range(k + 1, e + 1):
        total += _entry(t, n, i, m, flipped) * y[m]
      y[i] = -total
    if top == k:
      y[k] = y[k] / _pivot(_entry(t, n, k, k, flipped) - w, smin)
    else:
      y[top], y[k] = _solve2(_entry(t, n, top, top, flipped) - w, _entry(t, n, top, k, flipped),
                             _entry(t, n, k, top, flipped), _entry(t, n, k, k, flipped) - w,
                             y[top], y[k], smin)
    if max(cpu._modulus(y[top]), cpu._modulus(y[k])) > _RESCALE:
      for m in range(top, e + 1):
        y[m] = y[m] / _RESCALE
    k = top - 1


@cuda.jit(device=True)
def _normalize(v, n, j):
  """Column j of the flat n x n `v` scaled to unit 2-norm (its squares
  scaled by its largest modulus first), its first largest-modulus entry
  made real and positive."""
  largest, at = 0.0, 0
  for r in range(n):
    if cpu._modulus(v[r * n + j]) > largest:
      largest, at = cpu._modulus(v[r * n + j]), r
  total = 0.0
  for r in range(n):
    part = v[r * n + j] / largest
    total += part.real * part.real + part.imag * part.imag
  phase = np.conj(v[at * n + j]) / largest / (largest * math.sqrt(total))
  for r in range(n):
    v[r * n + j] = v[r * n + j] * phase
  v[at * n + j] = 1 / math.sqrt(total)


@cuda.jit(device=True)
def _eig_result(t, z, w, vl, vr, n, left, right, y, exponent, converged):
  """The eigenvalues w (n) of the Schur form t Z^H = Z^H x of x / 2**exponent
  (`t`, `z` flat n x n; a 2 x 2 block's pair a ± i sqrt(|b|) sqrt(|c|),
  positive imaginary part first), scaled back; with `left` and `right` the
  eigenvectors into the columns of vl and vr (n x n): Z times t's null
  vectors (`_null_vector`; a left one is the conjugate of the null vector
  of the flipped t), `_normalize`d, and for a conjugate pair the second the
  conjugate of the first. All NaN where not `converged`. `y` holds n elements."""
  if not converged:
    w[:] = vl[:] = vr[:] = cpu._nan_like(0j)
    return
  smin = max(_EPS * _frobenius(t, n * n), _TINY)
  k = 0
  while k < n:
    e = k + 1 if k + 1 < n and t[(k + 1) * n + k] != 0 else k
    w[k] = t[k * n + k]
    if e > k:
      root = math.sqrt(cpu._modulus(t[k * n + e])) * math.sqrt(cpu._modulus(t[e * n + k]))
      w[k], w[e] = t[k * n + k] + 1j * root, t[k * n + k] - 1j * root
    for side in range(2):
      flipped = side == 0
      if not (left if flipped else right):
        continue
      v = vl if flipped else vr
      _null_vector(t, n, n - 1 - e if flipped else k, n - 1 - k if flipped else e, w[k], y, smin,
                   flipped)
      lo, hi = (k, n) if flipped else (0, e + 1)   # y's nonzero entries
      for r in range(n):   # Z y, or Z conj(y reversed) for a left vector
        total = 0j
        for m in range(lo, hi):
          total += z[r * n + m] * (np.conj(y[n - 1 - m]) if flipped else y[m])
        v[r * n + k] = total
      _normalize(v, n, k)
      if e > k:
        for r in range(n):
          v[r * n + e] = np.conj(v[r * n + k])
    k = e + 1
  for k in range(n):
    w[k] = cpu._times_power_of_two(w[k], exponent)


@cuda.jit(device=True)
def complex_eig_matrix(t, z, w, vl, vr, n, left, right, taus, squares, products, y):
  """The eigendecomposition of the flat n x n complex `t` (overwritten by
  its Schur form): `complex_schur_matrix`'s steps on t, then `_eig_result`;
  `z` zeroed, scratch as theirs."""
  exponent = _to_unit_scale(t, n * n)
  _eig_result(t, z, w, vl, vr, n, left, right, y, exponent,
              _hessenberg_with_q(t, z, n, taus, squares, products) and _complex_schur(t, z, n))


@cuda.jit(device=True)
def real_eig_matrix(t, z, w, vl, vr, n, left, right, taus, squares, products, y):
  """`complex_eig_matrix` for a real `t`, by `_real_schur`."""
  exponent = _to_unit_scale(t, n * n)
  _eig_result(t, z, w, vl, vr, n, left, right, y, exponent,
              _hessenberg_with_q(t, z, n, taus, squares, products) and _real_schur(t, z, n))


def _eig(ctx, x, *, compute_left_eigenvectors, compute_right_eigenvectors):
  (aval,), out_avals = ctx.avals_in, ctx.avals_out
  n, batch, wide = aval.shape[-1], cpu._batch(aval), lax._wide(aval.dtype)
  wanted = (compute_left_eigenvectors, compute_right_eigenvectors)
  t = cpu._copy(ctx, cpu._wide_operand(ctx, x, aval))
  z, taus = cpu._new(ctx, batch * n * n, wide, 0), cpu._new(ctx, batch * max(n - 1, 0), wide)
  squares, products = cpu._new(ctx, batch * n, np.float64), cpu._new(ctx, batch * n, wide)
  w, y = cpu._new(ctx, batch * n, np.complex128), cpu._new(ctx, batch * n, np.complex128)
  sizes = [n * n if asked else 0 for asked in wanted]
  vl, vr = (cpu._new(ctx, batch * size, np.complex128) for size in sizes)
  core = complex_eig_matrix if dtypes.is_complex(wide) else real_eig_matrix
  cpu.each_matrix(ctx, core, batch, (t, n * n), (z, n * n), (w, n), (vl, sizes[0]),
                  (vr, sizes[1]), *map(ctx.dim, (n, *wanted)), (taus, max(n - 1, 0)),
                  (squares, n), (products, n), (y, n))
  outs = [w] + [v for v, asked in zip((vl, vr), wanted) if asked]
  return [from_compute(ctx, o, np.complex128, a) for o, a in zip(outs, out_avals)]


CUDA_RULES[lax.eig_p] = _eig
