"""dot_general and the decompositions and solvers on the numba-cuda backend.

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
from numba_backend.rules.linalg import from_compute, matmul_operands
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
_norm = device_version(cpu._norm, __name__, pairwise=pairwise)
cholesky_matrix = device_version(cpu.cholesky_matrix, __name__, pairwise=pairwise,
                                 _conj_dot=_conj_dot)
triangular_solve_matrix = device_version(cpu.triangular_solve_matrix, __name__)
lu_matrix = device_version(cpu.lu_matrix, __name__)
permutation_matrix = device_version(cpu.permutation_matrix, __name__)
householder_matrix = device_version(cpu.householder_matrix, __name__, _norm=_norm,
                                    _reflector_dot=_reflector_dot)
householder_product_matrix = device_version(cpu.householder_product_matrix, __name__,
                                            _reflector_dot=_reflector_dot)

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
