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
"""

import math

import numpy as np
from numba import cuda

from refimpl.lax import linalg as lax
from numba_backend.cuda import device as G
from numba_backend.cuda.kernels import block_sum, device_version
from numba_backend.cuda.lower import CUDA_RULES
from numba_backend.lower import type_source
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
      i, j = cuda.blockIdx.y * tile + y, cuda.blockIdx.x * tile + x
      for p in range(cuda.blockIdx.z, batch, cuda.gridDim.z):
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
  blocks of tile x tile threads over the tiles of each product (the third
  axis of the grid over the batch), the tile TILE or the least power of two
  covering a product of fewer rows and columns (in the simulator, where
  each thread is a Python thread, far cheaper)."""
  if out.size:
    tile = min(TILE, 1 << (int(max(m, n)) - 1).bit_length())
    grid = (-(-n // tile), -(-m // tile), min(batch, 65535))
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
  first the square root of the pairwise sum of their squared moduli
  (`squares` holds count - 1 floats)."""
  alpha = x[start]
  for i in range(count - 1):
    modulus = cpu._modulus(x[start + (i + 1) * stride])
    squares[i] = modulus * modulus
  rest = math.sqrt(0.0 + pairwise(squares, 0, count - 1, -0.0))
  if rest == 0 and alpha.imag == 0:
    return cpu._zero_like(alpha)
  modulus = cpu._modulus(alpha)
  beta = -math.copysign(math.sqrt(modulus * modulus + rest * rest), alpha.real)
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
  for i in range(n):
    for j in range(i + 1):
      element = a[i * n + j] if lower else a[(n - 1 - i) * n + n - 1 - j]
      h[i * n + j], h[j * n + i] = element, np.conj(element)
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


@cuda.jit(device=True)
def cholesky_update_matrix(r, z, n):
  """The reference's `_cholesky_update_matrix` on the flat n x n factor `r`
  and the vector `z`, in place: the same rotations, each element rounded
  as the reference's arrays round it, so its bits."""
  for k in range(n):
    x, y = r[k * n + k], z[k]
    c, s = 1.0, 0.0
    if y != 0:
      scale = max(abs(x), abs(y))
      x, y = x / scale, y / scale
      inverse = 1 / math.sqrt(x * x + y * y)
      c, s = x * inverse, -y * inverse
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
