"""Lowering rules of the linear algebra primitives (refimpl/lax/linalg.py).

`dot_general` transposes its operands to (batch, M, K) and (batch, K, N)
arrays of the contraction dtype (`refimpl.lax.rules.contraction_dtype`:
the result dtype for float32/float64, float32 for 16-bit floats, complex128
for complex, 64-bit integers for integers and bool) and multiplies them
with a kernel compiled once per dtype: for finite floats and complex
numbers in products of at least _BLAS_WORK multiply-adds, BLAS's gemm
(Numba's np.dot, SciPy's BLAS), summing in its own order, as the
reference's BLAS does in its (see the tolerances in docs/backends.md);
otherwise (integers, bool, smaller products, and operands with NaN or
infinities: BLAS kernels need not keep 0 * inf = NaN, and the reference
then uses NumPy's loops too) a blocked loop, each sum over k in ascending
order. IEEE rules hold: 0 * inf is NaN.
"""

import math
import types as pytypes

import numpy as np
from llvmlite import binding as llvm, ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload
from numba.np.linalg import _LAPACK, _compute_singular_values, _dummy_liveness_func

from refimpl import dtypes
from refimpl.lax import linalg as lax
from refimpl.lax.rules import contraction_dtype
from numba_backend import scalars as S
from numba_backend.kernels import c_strides, kernel_jit
from numba_backend.lower import (LoweringError, cast, element_to_store, read_element, register,
                                 storage_dtype, type_source)
from numba_backend.rules.elementwise import complex_abs, numpy_complex_div, numpy_complex_mul
from numba_backend.rules.reductions import pairwise

_ROWS, _COLUMNS = 128, 256   # the (k, j) block of the right operand kept in cache
_BLAS_WORK = 2**16
"""Multiply-adds per product (M * K * N) from which BLAS's call and the
operands' finiteness check cost less than they save."""


_VECTORS = 8
_VECTOR_BYTES = 64 if "+avx512f" in llvm.get_host_cpu_features().flatten() else 32
"""`_column_block`'s accumulators: `_VECTORS` vectors of the host's widest registers."""

_AHEAD_ROWS = 4
"""How many rows of b ahead of the one it reads `_column_block` asks the CPU
to fetch: a right operand beyond the nearest cache (128 x 128 float32,
64 KiB) streams from the next one faster (a product with a vector: 0.70
to 0.61 us)."""


@intrinsic
def _column_block(typingctx, a, b, out, x, y, z, count, n):
  """out[z + c] += a[x + k] * b[y + k * n + c] for k = 0, 1, ..., count - 1
  in turn, for the `_VECTORS` * `lanes` columns c of a block (`lanes` the
  elements of a vector of `_VECTOR_BYTES`; flat C-contiguous float arrays of one
  dtype), the columns' sums held in vector registers through the k loop
  (read from `out` once, written once): each lane multiplies and adds in
  the order of the scalar loop, so the roundings are the same. Each row of
  b read, the row _AHEAD_ROWS further is fetched (`scalars.emit_prefetch`)."""
  if not (all(isinstance(t, types.Array) and t.ndim == 1 and t.layout == "C"
              and isinstance(t.dtype, types.Float) for t in (a, b, out))
          and a.dtype == b.dtype == out.dtype):
    return None

  def codegen(context, builder, signature, args):
    arrays = [context.make_array(t)(context, builder, v).data
              for t, v in zip(signature.args[:3], args[:3])]
    x, y, z, count, n = [context.cast(builder, v, t, types.intp)
                         for v, t in zip(args[3:], signature.args[3:])]
    element = context.get_data_type(a.dtype)
    lanes = _VECTOR_BYTES // context.get_abi_sizeof(element)
    vector = ir.VectorType(element, lanes)

    def pointer(data, i):
      return builder.bitcast(builder.gep(data, [i]), vector.as_pointer())

    def at(i, v):   # element i + v * lanes
      return builder.add(i, ir.Constant(i.type, v * lanes))

    sums = [cgutils.alloca_once_value(builder, builder.load(pointer(arrays[2], at(z, v)), align=1))
            for v in range(_VECTORS)]
    with cgutils.for_range(builder, count) as loop:
      k = loop.index
      factor = builder.load(builder.gep(arrays[0], [builder.add(x, k)]))
      splat = builder.insert_element(ir.Constant(vector, None), factor,
                                     ir.Constant(ir.IntType(32), 0))
      splat = builder.shuffle_vector(splat, ir.Constant(vector, None),
                                     ir.Constant(ir.VectorType(ir.IntType(32), lanes), [0] * lanes))
      row = builder.add(y, builder.mul(k, n))
      ahead = builder.add(row, builder.mul(n, ir.Constant(n.type, _AHEAD_ROWS)))
      for v in range(_VECTORS):
        product = builder.fmul(splat, builder.load(pointer(arrays[1], at(row, v)), align=1))
        builder.store(builder.fadd(builder.load(sums[v]), product), sums[v])
        if v * _VECTOR_BYTES % 64 == 0:   # (one fetch for each cache line)
          S.emit_prefetch(builder, pointer(arrays[1], at(ahead, v)))
    for v in range(_VECTORS):
      builder.store(builder.load(sums[v]), pointer(arrays[2], at(z, v)), align=1)
    return context.get_dummy_value()

  return types.none(a, b, out, x, y, z, count, n), codegen


@kernel_jit
def batched_matmul(a, b, out, sizes):
  """out[p, i, j] = sum over k (ascending) of a[p, i, k] * b[p, k, j], for
  flat row-major `a` (B, M, K), `b` (B, K, N) and zeroed `out` (B, M, N);
  `sizes` is (B, M, K, N), in blocks of 128 k by 256 j. The leading
  columns of a block add in vector registers (`_vector_columns`, real
  floats); in each pass over the others, a row of `out` adds the products
  of four rows of `b` in turn (read and written once for four k), by
  unsigned indices, so that LLVM vectorizes it."""
  batch, m, depth, n = sizes[0], sizes[1], sizes[2], sizes[3]
  for p in range(batch):
    for j0 in range(0, n, _COLUMNS):
      width = min(_COLUMNS, n - j0)
      for k0 in range(0, depth, _ROWS):
        k1 = min(k0 + _ROWS, depth)
        top = p * depth * n + j0   # b[p, 0, j0]
        for i in range(m):
          row, x = (p * m + i) * n + j0, (p * m + i) * depth   # out[p, i, j0], a[p, i, 0]
          done = _vector_columns(a, b, out, x + k0, top + k0 * n, row, k1 - k0, n, width)
          k, o, rest = k0, np.uint64(row + done), np.uint64(width - done)   # out[p, i, j0 + done]
          while k < k1:
            b0 = np.uint64(top + k * n + done)   # b[p, k, j0 + done]
            if k + 4 <= k1:
              x0, x1, x2, x3 = a[x + k], a[x + k + 1], a[x + k + 2], a[x + k + 3]
              b1 = b0 + np.uint64(n)
              b2 = b1 + np.uint64(n)
              b3 = b2 + np.uint64(n)
              for j in range(np.uint64(0), rest):
                out[o + j] = (((out[o + j] + x0 * b[b0 + j]) + x1 * b[b1 + j])
                              + x2 * b[b2 + j]) + x3 * b[b3 + j]
              k += 4
            else:
              x0 = a[x + k]
              for j in range(np.uint64(0), rest):
                out[o + j] += x0 * b[b0 + j]
              k += 1


def _vector_columns(a, b, out, x, y, z, count, n, width):
  """`_column_block` over the leading columns [0, c) of `width`, c the most
  a multiple of its block (of real floats; 0 for other dtypes); returns c."""


@overload(_vector_columns, inline="always")
def _vector_columns_impl(a, b, out, x, y, z, count, n, width):
  if not isinstance(out.dtype, types.Float):
    return lambda a, b, out, x, y, z, count, n, width: 0
  block = _VECTORS * (_VECTOR_BYTES * 8 // out.dtype.bitwidth)   # columns

  def columns(a, b, out, x, y, z, count, n, width):
    done = 0
    while done + block <= width:
      _column_block(a, b, out, x, y + done, z + done, count, n)
      done += block
    return done

  return columns


def _exponents(x):
  """(x's flat data as unsigned integers, the mask of a float's exponent bits)."""


@overload(_exponents)
def _exponents_impl(x):
  if x.dtype in (types.float32, types.complex64):
    return lambda x: (x.view(np.uint32), np.uint32(0x7F800000))
  return lambda x: (x.view(np.uint64), np.uint64(0x7FF0000000000000))


@kernel_jit
def _finite(x):
  """Whether every element (each part of a complex one) of the C-contiguous
  float or complex `x` is finite: no exponent of all ones (a loop that
  vectorizes)."""
  bits, mask = _exponents(x.reshape(x.size))
  special = False
  for k in range(bits.size):
    special |= (bits[k] & mask) == mask
  return not special


@kernel_jit
def blas_matmul(a, b, out, sizes):
  """batched_matmul's product into `out` (not zeroed: gemm writes every
  element), by BLAS's gemm where the operands are finite and the product
  large (floats and complex numbers)."""
  batch, m, depth, n = sizes[0], sizes[1], sizes[2], sizes[3]
  if m * depth * n < _BLAS_WORK or not (_finite(a) and _finite(b)):
    out[:] = 0   # (an empty sum, depth 0, stays zero)
    batched_matmul(a, b, out, sizes)
    return
  for p in range(batch):
    np.dot(a[p * m * depth:(p + 1) * m * depth].reshape((m, depth)),
           b[p * depth * n:(p + 1) * depth * n].reshape((depth, n)),
           out[p * m * n:(p + 1) * m * n].reshape((m, n)))


@kernel_jit
def _untransposed(x, rows, columns):
  """The flat C-contiguous (columns, rows) transpose of the flat (rows, columns) x."""
  return np.ascontiguousarray(x.reshape((rows, columns)).T).reshape(rows * columns)


@kernel_jit
def blas_matmul_transposed(a, b, out, sizes, flags):
  """blas_matmul's product of one pair of matrices (B = 1) whose operands
  may lie transposed: `a` holds the (K, M) transpose of the left matrix
  where flags[0], `b` the (N, K) transpose of the right one where flags[1].
  BLAS's gemm reads them so (its transpose flags: Numba's np.dot of
  Fortran-ordered views); a product that blas_matmul would compute by its
  loop gets contiguous copies."""
  m, depth, n = sizes[1], sizes[2], sizes[3]
  left, right = flags[0], flags[1]
  if m * depth * n < _BLAS_WORK or not (_finite(a) and _finite(b)):
    blas_matmul(_untransposed(a, depth, m) if left else a,
                _untransposed(b, n, depth) if right else b, out, sizes)
    return
  product = out.reshape((m, n))
  if left and right:
    np.dot(a.reshape((depth, m)).T, b.reshape((n, depth)).T, product)
  elif left:
    np.dot(a.reshape((depth, m)).T, b.reshape((depth, n)), product)
  else:
    np.dot(a.reshape((m, depth)), b.reshape((n, depth)).T, product)


def _transposed_operands(ctx, dimension_numbers):
  """(left, right): whether each operand of the product lies transposed in
  memory (the left one's contracting axes first, the right one's last),
  where one does at least and the other lies either so or as
  batched_matmul reads it; for a product of one pair of matrices (no batch
  axes, one free axis in each operand) whose operands are of the
  contraction dtype. Else None."""
  (lc, rc), (lb, rb) = dimension_numbers
  (lhs, rhs), (out,) = ctx.avals_in, ctx.avals_out
  compute = contraction_dtype(np.dtype(out.dtype))
  if (lb or rb or lhs.ndim - len(lc) != 1 or rhs.ndim - len(rc) != 1
      or np.dtype(lhs.dtype) != compute or np.dtype(rhs.dtype) != compute
      or not dtypes.is_inexact(compute)):
    return None
  lhs_free, rhs_free = lax._free_dims(lhs.ndim, lc, lb), lax._free_dims(rhs.ndim, rc, rb)
  in_order = lambda dims: list(dims) == list(range(len(dims)))
  left, right = in_order([*lc, *lhs_free]), in_order([*rhs_free, *rc])
  if not (left or in_order([*lhs_free, *lc])) or not (right or in_order([*rc, *rhs_free])):
    return None
  return (left, right) if left or right else None


def operand(ctx, x, aval, permutation, compute):
  """A flat C-contiguous array of `compute` holding `x` transposed by `permutation`."""
  size = ctx.dim(math.prod(aval.shape))
  dtype = np.dtype(aval.dtype)
  source, held = ctx.fresh("f"), storage_dtype(dtype)
  ctx.emit(f"{source} = {ctx.flat(x, aval)}")
  if tuple(permutation) != tuple(range(len(permutation))):
    if dtype not in (dtypes.float16, dtypes.bfloat16):
      held = compute   # strided_copy converts as it copies
    moved, strides = ctx.fresh(), c_strides(aval.shape)
    ctx.emit(f"{moved} = {ctx.lowering.allocation(size, type_source(held))}")
    ctx.lowering.strided_copy(source, "0", ctx.ints([strides[i] for i in permutation]),
                              ctx.ints([aval.shape[i] for i in permutation]), moved)
    source = moved
  if held == compute:
    return source
  converted, k = ctx.fresh(), ctx.fresh("k")
  ctx.emit(f"{converted} = {ctx.lowering.allocation(size, type_source(compute))}")
  with ctx.lowering.elements(k, size):
    ctx.emit(f"{converted}[{k}] = {type_source(compute)}({read_element(f'{source}[{k}]', dtype)})")
  return converted


def from_compute(ctx, flat, compute, out_aval):
  """The value of `out_aval` from the flat array `flat` of the contraction
  dtype `compute`: rounded once (bool: nonzero sums are True)."""
  dtype = np.dtype(out_aval.dtype)
  if dtype != compute:
    size = ctx.dim(math.prod(out_aval.shape))
    out, k = ctx.fresh(), ctx.fresh("k")
    ctx.emit(f"{out} = {ctx.lowering.allocation(size, type_source(storage_dtype(dtype)))}")
    with ctx.lowering.elements(k, size):
      value = f"{flat}[{k}] > 0" if dtypes.is_bool(dtype) else cast(f"{flat}[{k}]", dtype)
      ctx.emit(f"{out}[{k}] = {element_to_store(value, dtype)}")
    flat = out
  return ctx.result(flat, out_aval)


def matmul_operands(ctx, lhs, rhs, dimension_numbers):
  """dot_general's operands as batched_matmul takes them: (a, b, the sizes
  (B, M, K, N), the contraction dtype)."""
  (lc, rc), (lb, rb) = dimension_numbers
  (lhs_aval, rhs_aval), (out_aval,) = ctx.avals_in, ctx.avals_out
  compute = contraction_dtype(np.dtype(out_aval.dtype))
  lhs_free = lax._free_dims(lhs_aval.ndim, lc, lb)
  rhs_free = lax._free_dims(rhs_aval.ndim, rc, rb)
  size = lambda aval, dims: math.prod(aval.shape[d] for d in dims)
  sizes = [size(lhs_aval, lb), size(lhs_aval, lhs_free), size(lhs_aval, lc),
           size(rhs_aval, rhs_free)]
  a = operand(ctx, lhs, lhs_aval, [*lb, *lhs_free, *lc], compute)
  b = operand(ctx, rhs, rhs_aval, [*rb, *rc, *rhs_free], compute)
  return a, b, sizes, compute


@register(lax.dot_general_p)
def _dot_general(ctx, lhs, rhs, *, dimension_numbers, precision, preferred_element_type):
  (out_aval,) = ctx.avals_out
  transposed = _transposed_operands(ctx, dimension_numbers)
  if transposed is not None:   # BLAS reads the operands where they lie
    (lc, _), _ = dimension_numbers
    (lhs_aval, rhs_aval), (m, n) = ctx.avals_in, out_aval.shape
    out, compute = ctx.fresh(), np.dtype(out_aval.dtype)
    sizes = [1, m, math.prod(lhs_aval.shape[d] for d in lc), n]
    ctx.emit(f"{out} = np.empty({ctx.dim(math.prod(out_aval.shape))}, {type_source(compute)})")
    ctx.emit(f"{ctx.function(blas_matmul_transposed)}({ctx.flat(lhs, lhs_aval)}, "
             f"{ctx.flat(rhs, rhs_aval)}, {out}, {ctx.ints(sizes)}, {ctx.ints(transposed)})")
    return from_compute(ctx, out, compute, out_aval)
  a, b, sizes, compute = matmul_operands(ctx, lhs, rhs, dimension_numbers)
  out, size, sizes_source = ctx.fresh(), ctx.dim(math.prod(out_aval.shape)), ctx.ints(sizes)

  def loops():
    ctx.emit(f"{out} = np.zeros({size}, {type_source(compute)})")
    ctx.emit(f"{ctx.function(batched_matmul)}({a}, {b}, {out}, {sizes_source})")

  if not dtypes.is_inexact(compute):
    loops()
    return from_compute(ctx, out, compute, out_aval)
  # (a product too small for BLAS calls batched_matmul itself: by way of
  # blas_matmul, a product with a vector of 128 x 128 floats took 0.05 us longer)
  with ctx.lowering.block(f"if {ctx.dim(math.prod(sizes[1:]) < _BLAS_WORK)}:"):
    loops()
  with ctx.lowering.block("else:"):
    ctx.emit(f"{out} = np.empty({size}, {type_source(compute)})")
    ctx.emit(f"{ctx.function(blas_matmul)}({a}, {b}, {out}, {sizes_source})")
  return from_compute(ctx, out, compute, out_aval)


# --- the decompositions and solvers ------------------------------------------------------
#
# Each reference rule computes in float64 (complex128) and rounds its
# results once: a rule converts the operands to that dtype, Numba functions
# (compiled once per dtype, generic in shape) write the results in it, and
# `from_compute` rounds them. The project's own algorithms (cholesky,
# triangular_solve, lu, lu_pivots_to_permutation, geqrf,
# householder_product, qr) are ported operation for operation: the same
# divisions, products (NumPy's complex rounding) and sums as the reference,
# where its sums by np.sum (its norms too, `_norms`) keep NumPy's pairwise order
# and its einsum sums add in ascending order. Each is a function of one
# matrix (`*_matrix`, its scratch arrays passed in), which the rules call
# for each matrix of the batch in a loop of independent iterations
# (`each_matrix`): a loop of the program here, a kernel (a thread a matrix)
# on numba-cuda, which compiles the same Python for the device
# (numba_backend/cuda/linalg.py). eigh, svd, eig and tridiagonal_solve
# call the LAPACK routines the reference calls through NumPy (syevd/heevd,
# gesdd, geev, gesv), by Numba's np.linalg (SciPy's LAPACK), on the
# matrices the reference builds. A batch element on which LAPACK reports a
# failure, or whose read operand is not finite, gets the reference's
# all-NaN results.
#
# The scalar helpers of the per-matrix functions are Numba functions that
# tell complex numbers by `isinstance` (which Numba decides when it
# compiles), so that they run as Python too (numba's CUDA simulator runs
# the device's functions as Python).


@kernel_jit
def _times(x, y):
  """x * y as NumPy multiplies arrays of x's dtype."""
  if isinstance(x, complex):
    return numpy_complex_mul(x, np.complex128(y))
  return x * y


@kernel_jit
def _quotient(x, y):
  """x / y as NumPy divides arrays of x's dtype."""
  if isinstance(x, complex):
    return numpy_complex_div(x, np.complex128(y))
  return x / y


@kernel_jit
def _modulus(x):
  """|x| as np.abs computes it."""
  if isinstance(x, complex):
    return complex_abs(x)
  return abs(x)


@kernel_jit
def _zero_like(x):
  """Zero of x's type (complex128 or float64)."""
  if isinstance(x, complex):
    return np.complex128(0)
  return 0.0


@kernel_jit
def _nan_like(x):
  """NaN of x's type (NaN + NaN·j when complex)."""
  if isinstance(x, complex):
    return S.make_complex(np.nan, np.nan)
  return np.nan


def _zero_of(a):
  """Zero of the array `a`'s dtype."""


@overload(_zero_of)
def _zero_of_impl(a):
  if isinstance(a.dtype, types.Complex):
    return lambda a: np.complex128(0)
  return lambda a: 0.0


def _nan_of(a):
  """NaN of the array `a`'s dtype (NaN + NaN·j when complex)."""


@overload(_nan_of)
def _nan_of_impl(a):
  return lambda a: _nan_like(_zero_of(a))


def _geev(a):
  """(info, w, v) of LAPACK's geev (jobvl 'N', jobvr 'V', as np.linalg.eig)
  on the square matrix `a`: complex eigenvalues and right eigenvectors
  (columns), real ones made complex as NumPy does (conjugate pairs from
  dgeev's real and imaginary columns); info nonzero on failure."""


_DGEEV = _LAPACK().numba_ez_rgeev(types.float64)


@overload(_geev)
def _geev_impl(a):
  if isinstance(a.dtype, types.Complex):
    def complex_geev(a):
      try:
        w, v = np.linalg.eig(a)
      except Exception:   # no convergence
        return 1, np.empty(0, np.complex128), np.empty((0, 0), np.complex128)
      return 0, w, np.ascontiguousarray(v)
    return complex_geev

  def real_geev(a):
    n = a.shape[0]
    fortran = np.ascontiguousarray(a.T)   # column-major a, as LAPACK reads it
    wr, wi = np.empty(n), np.empty(n)
    vl, vr = np.empty((n, 1)), np.empty((n, n))
    info = _DGEEV(ord("d"), ord("N"), ord("V"), n, fortran.ctypes, n, wr.ctypes, wi.ctypes,
                  vl.ctypes, 1, vr.ctypes, n)
    _dummy_liveness_func([fortran.size, wr.size, wi.size, vl.size, vr.size])
    w, v = np.empty(n, np.complex128), np.empty((n, n), np.complex128)
    j = 0
    while j < n:   # vr's row j (column j of column-major vr) is the vector of w[j]
      w[j] = S.make_complex(wr[j], wi[j])
      if wi[j] == 0 or j == n - 1:
        for r in range(n):
          v[r, j] = S.make_complex(vr[j, r], 0.0)
        j += 1
        continue
      w[j + 1] = S.make_complex(wr[j + 1], wi[j + 1])
      for r in range(n):
        v[r, j] = S.make_complex(vr[j, r], vr[j + 1, r])
        v[r, j + 1] = S.make_complex(vr[j, r], -vr[j + 1, r])
      j += 2
    return info, w, v
  return real_geev


@kernel_jit
def _conj_dot(x, x_start, y_start, count):
  """The sum of x[x_start + i] * conj(x[y_start + i]) (ascending i, from 0;
  plain products, as np.einsum sums them; x[y_start] exists)."""
  total = _zero_like(x[y_start])
  for i in range(count):
    total += x[x_start + i] * np.conj(x[y_start + i])
  return total


@kernel_jit
def _reflector_dot(v, v_start, v_stride, x, x_start, x_stride, count):
  """v^H x for the reflector v = (1, v[v_start + v_stride], v[v_start + 2
  v_stride], ...) and x = x[x_start::x_stride] (`count` elements each),
  summed as np.einsum: ascending, plain products."""
  zero = _zero_like(x[x_start])
  total = zero + np.conj(zero + 1) * x[x_start]
  for r in range(1, count):
    total += np.conj(v[v_start + r * v_stride]) * x[x_start + r * x_stride]
  return total


@kernel_jit
def reflect_left(v, v_start, v_stride, tau, x, x_start, x_stride, rows, columns, products):
  """x := (I - tau v v^H) x for the reflector v (`rows` elements, as
  `_reflector_dot`) and the rows x columns matrix x[x_start + r x_stride
  + c]: x[r, c] -= (tau v[r]) (v^H x)[c], the einsum order; `products`
  holds `columns` elements."""
  for c in range(columns):
    products[c] = _reflector_dot(v, v_start, v_stride, x, x_start + c, x_stride, rows)
  for r in range(rows):
    scaled = _times(tau, v[v_start + r * v_stride] if r else _zero_like(tau) + 1)
    for c in range(columns):
      x[x_start + r * x_stride + c] -= _times(scaled, products[c])


@kernel_jit
def _norm(a, start, stride, count, squares, pairwise_order):
  """The reference's `_norms` of a[start::stride][:count]: the largest
  modulus times the square root of the sum of the squares of the moduli
  divided by it (NumPy's pairwise sum, or in order unless `pairwise_order`);
  the largest itself where it is 0, inf or NaN (`squares` holds at least
  `count`)."""
  largest = 0.0
  for i in range(count):
    modulus = _modulus(a[start + i * stride])
    if not modulus <= largest:   # larger, or NaN
      largest = modulus
      if modulus != modulus:
        break
  if not 0 < largest < math.inf:
    return largest
  for i in range(count):
    scaled = _modulus(a[start + i * stride]) / largest
    squares[i] = scaled * scaled
  if pairwise_order:
    return largest * math.sqrt(0.0 + pairwise(squares, 0, count, -0.0))
  total = 0.0
  for i in range(count):
    total += squares[i]
  return largest * math.sqrt(total)


@kernel_jit
def cholesky_matrix(a, factor, n, squares):
  """The lower Cholesky factor of the lower triangle of the n x n matrix `a`
  into zeroed `factor` (both flat), column by column as the reference (all
  NaN where a pivot is not > 0); `squares` holds n floats."""
  for j in range(n):
    for k in range(j):
      modulus = _modulus(factor[j * n + k])
      squares[k] = modulus * modulus
    d = a[j * n + j].real - (0.0 + pairwise(squares, 0, j, -0.0))
    if not d > 0:   # not positive definite (or NaN)
      factor[:] = _nan_like(a[0])
      return
    factor[j * n + j] = math.sqrt(d)
    for i in range(j + 1, n):
      below = a[i * n + j] - _conj_dot(factor, i * n, j * n, j)
      factor[i * n + j] = _quotient(below, factor[j * n + j])


@kernel_jit
def triangular_solve_matrix(t, rhs, x, m, rows, columns, flags):
  """x with op(t) x = rhs (`left_side`) or x op(t) = rhs, by substitution as
  the reference, for the m x m matrix `t` and the rows x columns matrix
  `rhs`, into `x` (all flat); `flags` is (left_side, lower, transpose_a,
  conjugate_a, unit_diagonal)."""
  left, lower, transpose, conjugate, unit = flags[0], flags[1], flags[2], flags[3], flags[4]
  swap = transpose != (not left)   # the system solved is A x = b' with A[i, k] = op(t)[k, i]
  forward = (lower != transpose) == bool(left)
  count = rows * columns // m if m else 0   # the right-hand sides
  for step in range(m):
    i = step if forward else m - 1 - step
    known = range(i) if forward else range(i + 1, m)
    diagonal = _zero_like(t[i * m + i]) + 1 if unit else t[i * m + i]
    if conjugate:
      diagonal = np.conj(diagonal)
    for c in range(count):
      partial = _zero_like(diagonal)
      for k in known:
        entry = t[k * m + i] if swap else t[i * m + k]
        if conjugate:
          entry = np.conj(entry)
        partial += entry * (x[k * columns + c] if left else x[c * columns + k])
      element = i * columns + c if left else c * columns + i
      x[element] = _quotient(rhs[element] - partial, diagonal)


@kernel_jit
def lu_matrix(a, swaps, m, n):
  """LU with partial pivoting (unblocked getrf, as the reference) of the
  flat m x n matrix `a`, in place, its row swaps into `swaps` (min(m, n))."""
  for i in range(min(m, n)):
    r, best = i, -2.0
    for row in range(i, m):   # the first largest |Re| + |Im| (NaN: never preferred)
      magnitude = abs(a[row * n + i].real) + abs(a[row * n + i].imag)
      if magnitude != magnitude:
        magnitude = -1.0
      if magnitude > best:
        r, best = row, magnitude
    swaps[i] = r
    for c in range(n):
      a[i * n + c], a[r * n + c] = a[r * n + c], a[i * n + c]
    pivot = a[i * n + i]
    if pivot != 0:
      for row in range(i + 1, m):
        a[row * n + i] = _quotient(a[row * n + i], pivot)
    for row in range(i + 1, m):
      factor = a[row * n + i]
      for c in range(i + 1, n):
        a[row * n + c] -= _times(factor, a[i * n + c])


@kernel_jit
def permutation_matrix(pivots, perm, k, size):
  """The row swaps i <-> pivots[i] (k of them; the reference's out-of-range
  rule) applied in order to arange(size), into `perm`."""
  for i in range(size):
    perm[i] = i
  for i in range(k):
    j = np.int64(pivots[i])
    if j < 0:
      j += size
    value = perm[min(max(j, 0), size - 1)]
    if 0 <= j < size:
      perm[j] = perm[i]
    perm[i] = value


@kernel_jit
def householder_matrix(x, tau, order, m, n, pivoting, squares, products):
  """The reference's Householder QR (`_householder_qr`: geqrf, or geqp3 with
  `pivoting`) of the flat m x n matrix `x`, in place: R in its upper
  triangle, the reflectors below; `tau` (min(m, n)), the column order into
  `order` (n; zeros when m = 0, as JAX); `squares` holds m floats and
  `products` n elements."""
  for c in range(n):
    order[c] = c if m else 0
  for j in range(min(m, n)):
    if pivoting:   # the remaining column of largest norm (rows j:) first
      best, q = -2.0, j
      for c in range(j, n):
        # (NumPy adds the rows in order, a single column pairwise)
        norm = _norm(x, j * n + c, n, m - j, squares, j == n - 1)
        if norm != norm:
          norm = -1.0
        if norm > best:
          best, q = norm, c
      for r in range(m):
        x[r * n + j], x[r * n + q] = x[r * n + q], x[r * n + j]
      order[j], order[q] = order[q], order[j]
    alpha = x[j * n + j]
    reflect = _norm(x, (j + 1) * n + j, n, m - j - 1, squares, True) != 0 or alpha.imag != 0
    beta = -math.copysign(_norm(x, j * n + j, n, m - j, squares, True), alpha.real)
    if reflect:
      tau[j] = _quotient(beta - alpha, beta)
      scale = alpha - beta
      for r in range(j + 1, m):
        x[r * n + j] = _quotient(x[r * n + j], scale)
      x[j * n + j] = beta
    else:
      tau[j] = 0
    # x[j:, j + 1:] -= conj(tau) v (v^H x[j:, j + 1:]), v = (1, x[j + 1:, j])
    reflect_left(x, j * n + j, n, np.conj(tau[j]), x, j * n + j + 1, n, m - j, n - j - 1,
                 products)


@kernel_jit
def householder_product_matrix(v, tau, x, m, width, columns, k, products):
  """x (m x columns, zeroed) = the first columns of H_0 ... H_{k-1} (the
  reference's `_householder_product`), the reflectors' vectors below the
  diagonal of the m x width matrix `v`, `tau` (k; all flat); `products`
  holds `columns` elements."""
  for i in range(min(m, columns)):
    x[i * columns + i] = 1
  for j in range(k - 1, -1, -1):   # x[j:] -= tau v (v^H x[j:])
    reflect_left(v, j * width + j, width, tau[j], x, j * columns, columns, m - j, columns,
                 products)


@kernel_jit
def _unflatten(flat, start, matrix):
  """matrix[r, c] = flat[start + r * columns + c]."""
  rows, columns = matrix.shape
  for r in range(rows):
    for c in range(columns):
      matrix[r, c] = flat[start + r * columns + c]


@kernel_jit
def _flatten(matrix, flat):
  """flat[r * columns + c] = matrix[r, c] (any layout of `matrix`)."""
  rows, columns = matrix.shape
  for r in range(rows):
    for c in range(columns):
      flat[r * columns + c] = matrix[r, c]


@kernel_jit
def eigh(x, v, w, sizes, lower):
  """The reference's eigh (syevd/heevd of the Hermitian matrix of the read
  triangle, as `_hermitian_from_triangle` builds it) of the (B, n, n) stack
  `x`: eigenpairs lo..hi-1 into v (B, n, hi - lo) and w (B, hi - lo);
  `sizes` is (B, n, lo, hi)."""
  batch, n, lo, hi = sizes[0], sizes[1], sizes[2], sizes[3]
  d = hi - lo
  h = np.empty((n, n), x.dtype)
  zero = _zero_of(x)
  for p in range(batch):
    a = x[p * n * n:(p + 1) * n * n]
    for i in range(n):   # the triangle plus the conjugate transpose of its strict part
      for k in range(n):
        if (i >= k) == bool(lower) or i == k:
          h[i, k] = a[i * n + k] + np.conj(zero)
        else:
          h[i, k] = zero + np.conj(a[k * n + i])
      h[i, i] = h[i, i].real
    v[p * n * d:(p + 1) * n * d] = _nan_of(v)
    w[p * d:(p + 1) * d] = np.nan
    if n and _finite(h):
      try:
        values, vectors = np.linalg.eigh(h)
        for c in range(d):
          w[p * d + c] = values[lo + c]
          for r in range(n):
            v[(p * n + r) * d + c] = vectors[r, lo + c]
      except Exception:   # no convergence: NaN
        pass


@kernel_jit
def svd(x, s, u, vt, sizes, full_matrices):
  """The reference's svd with vectors (gesdd, jobz 'A' or 'S') of the
  (B, m, n) stack `x`: s (B, d), u (B, m, m or d), vt (B, n or d, n) of the
  triplets lo..lo+d-1 (all of them when `full_matrices`); identities for
  an empty matrix; `sizes` is (B, m, n, lo, d)."""
  batch, m, n, lo, d = sizes[0], sizes[1], sizes[2], sizes[3], sizes[4]
  k = min(m, n)
  u_columns, vt_rows = (m, n) if full_matrices else (d, d)
  a = np.empty((m, n), x.dtype)
  for p in range(batch):
    s_p, u_p = s[p * d:(p + 1) * d], u[p * m * u_columns:(p + 1) * m * u_columns]
    vt_p = vt[p * vt_rows * n:(p + 1) * vt_rows * n]
    if k == 0:
      u_p[:] = 0
      vt_p[:] = 0
      for i in range(min(m, u_columns)):
        u_p[i * u_columns + i] = 1
      for i in range(min(vt_rows, n)):
        vt_p[i * n + i] = 1
      continue
    s_p[:] = np.nan
    u_p[:] = _nan_of(u)
    vt_p[:] = _nan_of(vt)
    _unflatten(x, p * m * n, a)
    if _finite(a):
      try:
        left, values, right = np.linalg.svd(a, full_matrices)
        for c in range(d):
          s_p[c] = values[lo + c]
        for r in range(m):
          for c in range(u_columns):
            u_p[r * u_columns + c] = left[r, c if full_matrices else lo + c]
        for r in range(vt_rows):
          for c in range(n):
            vt_p[r * n + c] = right[r if full_matrices else lo + r, c]
      except Exception:   # no convergence: NaN
        pass


@kernel_jit
def singular_values(x, s, sizes):
  """The reference's singular values alone (gesdd, jobz 'N') of the (B, m, n)
  stack `x`: s (B, d), values lo..lo+d-1; `sizes` is (B, m, n, lo, d)."""
  batch, m, n, lo, d = sizes[0], sizes[1], sizes[2], sizes[3], sizes[4]
  a = np.empty((m, n), x.dtype)
  for p in range(batch):
    s[p * d:(p + 1) * d] = np.nan
    _unflatten(x, p * m * n, a)
    if min(m, n) and _finite(a):
      try:
        values = _compute_singular_values(a)
        for c in range(d):
          s[p * d + c] = values[lo + c]
      except Exception:   # no convergence: NaN
        pass


@kernel_jit
def eig(x, w, vl, vr, sizes, flags):
  """The reference's eig (`_eig_matrix`: geev, and each left vector the last
  right singular vector of (x - w_j)^H, its largest component made real and
  positive) of the (B, n, n) stack `x`: w (B, n), and vl, vr (B, n, n) when
  `flags` (left, right) asks; all complex128; `sizes` is (B, n)."""
  batch, n = sizes[0], sizes[1]
  left, right = flags[0], flags[1]
  a = np.empty((n, n), x.dtype)
  shifted = np.empty((n, n), np.complex128)
  nan = S.make_complex(np.nan, np.nan)
  for p in range(batch):
    w_p = w[p * n:(p + 1) * n]
    vl_p, vr_p = vl[p * n * n:(p + 1) * n * n], vr[p * n * n:(p + 1) * n * n]
    w_p[:] = nan
    vl_p[:] = nan
    vr_p[:] = nan
    _unflatten(x, p * n * n, a)
    if n == 0 or not _finite(a):
      continue
    largest = 0.0
    for value in a.flat:
      largest = max(largest, abs(value))
    exponent = 0   # SciPy's geev leaves the eigenvalues of a matrix it rescales scaled:
    if largest > 1e130 or 0 < largest < 1e-130:   # rescale it by a power of two here
      exponent = -math.frexp(largest)[1]
    info, values, vectors = _geev(_times_power_of_two(a, exponent))
    if info:
      continue
    values = _times_power_of_two(values, -exponent)
    try:
      if left:
        for j in range(n):
          for r in range(n):   # ((a - w_j I)^H)[r, c] = conj(a[c, r] - w_j I[c, r])
            for c in range(n):
              shifted[r, c] = np.conj(np.complex128(a[c, r]) - numpy_complex_mul(
                  values[j], np.complex128(1.0 if r == c else 0.0)))
          null = np.linalg.svd(shifted, True)[2]
          largest, modulus = 0, -1.0
          for r in range(n):
            size = complex_abs(null[n - 1, r])
            if size > modulus:
              largest, modulus = r, size
          top = np.conj(null[n - 1, largest])
          phase = numpy_complex_div(np.complex128(complex_abs(top)), top) if top != 0 else 1
          for r in range(n):
            vl_p[r * n + j] = numpy_complex_mul(np.conj(null[n - 1, r]), np.complex128(phase))
      w_p[:] = values
      if right:
        _flatten(vectors, vr_p)
    except Exception:   # no convergence: NaN
      vl_p[:] = nan


@kernel_jit
def tridiagonal_solve(dl, d, du, b, out, sizes):
  """The reference's tridiagonal solve (gesv of the dense matrix, as
  np.linalg.solve) of the (B, m) diagonals and the (B, m, n) stack `b`
  into `out`, all NaN where the matrix is singular or an input not
  finite; `sizes` is (B, m, n)."""
  batch, m, n = sizes[0], sizes[1], sizes[2]
  a, rhs = np.zeros((m, m), b.dtype), np.empty((m, n), b.dtype)
  for p in range(batch):
    x = out[p * m * n:(p + 1) * m * n]
    x[:] = _nan_of(out)
    for i in range(m):
      a[i, i] = d[p * m + i]
      if i:
        a[i, i - 1] = dl[p * m + i]
        a[i - 1, i] = du[p * m + i - 1]
    _unflatten(b, p * m * n, rhs)
    if m and n and _finite(a) and _finite(rhs):
      try:
        _flatten(np.linalg.solve(a, rhs), x)
      except Exception:   # singular
        pass


# hessenberg, tridiagonal, ormqr, schur and cholesky_update run the
# reference's own per-matrix Python (refimpl/lax/linalg.py: `_hessenberg_matrix`
# and the others), compiled by Numba (`_compiled`), on each matrix of the batch.

def _compiled(fn, calls):
  """The reference's Python function `fn` compiled as a kernel, the functions
  it calls by the names in `calls` replaced by their compiled versions."""
  function = pytypes.FunctionType(fn.__code__, dict(fn.__globals__, **calls), fn.__name__,
                                  fn.__defaults__, fn.__closure__)
  return kernel_jit(function)


@kernel_jit
def _vector_norm(x, axis):
  """The reference's `_norms` of the vector `x` (axis 0), for its
  per-matrix Python compiled here (`_larfg`)."""
  return _norm(x, 0, 1, x.size, np.empty(x.size), True)


_REFERENCE = {"_norms": _vector_norm}
for _name in ("_larfg", "_reflect_left", "_reflect_right", "_reflector", "_hessenberg_matrix",
              "_hessenberg_with_q", "_ormqr_matrix", "_deflation_start", "_givens",
              "_rotate_rows", "_rotate_columns", "_complex_schur_matrix", "_house",
              "_standard_block", "_francis_shifts", "_double_shift_column",
              "_real_schur_matrix", "_update_rotation",
              "_cholesky_update_matrix", "_times_power_of_two", "_to_unit_scale"):
  _REFERENCE[_name] = _compiled(getattr(lax, _name), _REFERENCE)

_hessenberg_matrix = _REFERENCE["_hessenberg_matrix"]
_hessenberg_with_q = _REFERENCE["_hessenberg_with_q"]
_ormqr_matrix = _REFERENCE["_ormqr_matrix"]
_cholesky_update_matrix = _REFERENCE["_cholesky_update_matrix"]
_complex_schur_matrix = _REFERENCE["_complex_schur_matrix"]
_real_schur_matrix = _REFERENCE["_real_schur_matrix"]
_times_power_of_two = _REFERENCE["_times_power_of_two"]
_to_unit_scale = _REFERENCE["_to_unit_scale"]


def _schur_iteration(t, z):
  """The reference's QR iteration from Hessenberg to Schur form: complex or real."""


@overload(_schur_iteration)
def _schur_iteration_impl(t, z):
  if isinstance(t.dtype, types.Complex):
    return lambda t, z: _complex_schur_matrix(t, z)
  return lambda t, z: _real_schur_matrix(t, z)


@kernel_jit
def hessenberg(x, taus, sizes):
  """The reference's Hessenberg reduction of each n x n matrix of the flat
  (B, n, n) stack `x`, in place, the reflectors' factors into `taus` (B, k),
  k = max(n - 1, 0); NaN for a matrix with a non-finite entry. `sizes` is
  (B, n)."""
  batch, n = sizes[0], sizes[1]
  k = max(n - 1, 0)
  for p in range(batch):
    a, t = x[p * n * n:(p + 1) * n * n].reshape((n, n)), taus[p * k:(p + 1) * k]
    if _finite(a):
      _hessenberg_matrix(a, t)
    else:
      a[:] = _nan_of(x)
      t[:] = _nan_of(x)


@kernel_jit
def tridiagonal(x, out, d, e, taus, sizes):
  """The reference's tridiagonal reduction of each n x n matrix of the flat
  (B, n, n) stack `x` (n >= 1): the Hessenberg reduction of the Hermitian
  matrix of its read triangle (`sizes` (B, n, lower); rows and columns in
  reverse order when upper), into `out` (a copy of `x`, that triangle
  replaced), d (B, n), e and taus (B, n - 1); NaN in the triangle and the
  vectors for a triangle with a non-finite entry."""
  batch, n, lower = sizes[0], sizes[1], sizes[2]
  h, nan, zero = np.empty((n, n), x.dtype), _nan_of(x), _zero_of(x)
  for p in range(batch):
    a = x[p * n * n:(p + 1) * n * n].reshape((n, n))
    o = out[p * n * n:(p + 1) * n * n].reshape((n, n))
    d_p, e_p = d[p * n:(p + 1) * n], e[p * (n - 1):(p + 1) * (n - 1)]
    t = taus[p * (n - 1):(p + 1) * (n - 1)]
    o[:] = a
    for i in range(n):   # h[i, j], j <= i: a's element, in reverse order when upper
      for j in range(i + 1):   # (plus zero, as `_hermitian_from_triangle` adds: no -0.0 parts)
        element = a[i, j] if lower else a[n - 1 - i, n - 1 - j]
        h[i, j], h[j, i] = element + np.conj(zero), zero + np.conj(element)
      h[i, i] = h[i, i].real
    finite = _finite(h)
    if finite:
      _hessenberg_matrix(h, t)
    for i in range(n):
      h[i, i] = h[i, i].real
      for j in range(i + 1):
        value = h[i, j] if finite else nan
        if lower:
          o[i, j] = value
        else:
          o[n - 1 - i, n - 1 - j] = value
      d_p[i if lower else n - 1 - i] = h[i, i].real if finite else np.nan
      if i < n - 1:
        e_p[i if lower else n - 2 - i] = h[i + 1, i].real if finite else np.nan
        if not finite:
          t[i] = nan
    if not lower:
      t[:] = t[::-1].copy()


@kernel_jit
def ormqr(a, taus, c, sizes, flags):
  """The reference's ormqr: each matrix of the flat (B, rows, columns) stack
  `c` times op(Q) in place, Q held by (B, m, n) `a` and (B, k) `taus`;
  `sizes` is (B, m, n, k, rows, columns), `flags` (left, transpose)."""
  batch, m, n, k, rows, columns = sizes[0], sizes[1], sizes[2], sizes[3], sizes[4], sizes[5]
  for p in range(batch):
    _ormqr_matrix(a[p * m * n:(p + 1) * m * n].reshape((m, n)), taus[p * k:(p + 1) * k],
                  c[p * rows * columns:(p + 1) * rows * columns].reshape((rows, columns)),
                  flags[0], flags[1])


@kernel_jit
def schur(x, z, taus, sizes):
  """The reference's Schur decomposition of each n x n matrix of the flat
  (B, n, n) stack `x`: T in place, Z into zeroed `z`; NaN for a matrix
  with a non-finite entry or on which the iteration does not converge.
  `taus` (n - 1 elements) is scratch; `sizes` is (B, n)."""
  batch, n = sizes[0], sizes[1]
  for p in range(batch):
    t, q = (x[p * n * n:(p + 1) * n * n].reshape((n, n)),
            z[p * n * n:(p + 1) * n * n].reshape((n, n)))
    ok = _finite(t)
    if ok:   # (the reference's `decompose`)
      exponent = _to_unit_scale(t)
      _hessenberg_with_q(t, q, taus)
      ok = _schur_iteration(t, q)
      t[:] = _times_power_of_two(t, exponent)
    if not ok:
      t[:] = _nan_of(x)
      q[:] = _nan_of(x)


@kernel_jit
def cholesky_update(r, w, sizes):
  """The reference's rank-1 update of each n x n factor of the flat (B, n, n)
  stack `r` by the (B, n) vectors `w`, in place; `sizes` is (B, n)."""
  batch, n = sizes[0], sizes[1]
  for p in range(batch):
    _cholesky_update_matrix(r[p * n * n:(p + 1) * n * n].reshape((n, n)), w[p * n:(p + 1) * n])


@kernel_jit
def symmetric_product(a, c, out, sizes, alpha, beta):
  """alpha a a^T + beta c for each matrix of the flat (B, m, n) stack `a` and
  (B, m, m) stack `c` (float64), into `out`; `sizes` is (B, m, n)."""
  batch, m, n = sizes[0], sizes[1], sizes[2]
  for p in range(batch):
    a_p = a[p * m * n:(p + 1) * m * n].reshape((m, n))
    product = np.dot(a_p, np.ascontiguousarray(a_p.T)) if m and n else np.zeros((m, m))
    out[p * m * m:(p + 1) * m * m] = (alpha * product).reshape(m * m) \
        + beta * c[p * m * m:(p + 1) * m * m]


# --- their lowering rules ----------------------------------------------------------------

def _batch(aval, core=2):
  """The number of matrices (vectors, for core=1) in a stack of `aval`."""
  return math.prod(aval.shape[:aval.ndim - core])


def _wide_operand(ctx, x, aval):
  """`x` as a flat array of the dtype the reference rule computes in."""
  return operand(ctx, x, aval, range(aval.ndim), lax._wide(aval.dtype))


def _new(ctx, size, dtype, fill=None):
  """The name of a new flat array of `size` elements of `dtype`, each `fill` (unless None)."""
  name, shape, dtype = ctx.fresh(), ctx.dim(size), type_source(dtype)
  new = ctx.lowering.allocation(shape, dtype) if fill is None else \
      ctx.lowering.full(shape, fill, dtype)
  ctx.emit(f"{name} = {new}")
  return name


def _copy(ctx, array):
  """The name of a new array holding the elements of the array named `array`."""
  name = ctx.fresh()
  ctx.emit(f"{name} = {ctx.lowering.copy(array)}")
  return name


def each_matrix(ctx, core, count, *arguments):
  """Writes the loop over the `count` matrices of a batch calling the
  per-matrix function `core` on each, in independent iterations (a kernel,
  a thread a matrix, on numba-cuda): an argument (array, size) passes the
  matrix's `size` elements of the flat array named `array` (the p-th run of
  them), any other argument its source as it is."""
  p = ctx.fresh("p")
  runs = [(a[0], ctx.dim(a[1])) if isinstance(a, tuple) else a for a in arguments]
  with ctx.lowering.elements(p, ctx.dim(count)):
    parts = [f"{a[0]}[{p} * {a[1]}:({p} + 1) * {a[1]}]" if isinstance(a, tuple) else a
             for a in runs]
    ctx.emit(f"{ctx.function(core)}({', '.join(parts)})")


def decomposition_rules(target):
  """The rules of cholesky, triangular_solve, lu, lu_pivots_to_permutation,
  geqrf, householder_product and qr (primitive -> rule), calling
  `target(f)` for each per-matrix function f above: f itself on the CPU,
  its device function on numba-cuda."""

  def cholesky(ctx, x):
    (aval,), (out_aval,) = ctx.avals_in, ctx.avals_out
    n, batch, wide = aval.shape[-1], _batch(aval), lax._wide(aval.dtype)
    a = _wide_operand(ctx, x, aval)
    out, squares = _new(ctx, math.prod(aval.shape), wide, 0), _new(ctx, batch * n, np.float64)
    each_matrix(ctx, target(cholesky_matrix), batch, (a, n * n), (out, n * n), ctx.dim(n),
                (squares, n))
    return from_compute(ctx, out, wide, out_aval)

  def triangular_solve(ctx, a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    (a_aval, b_aval), (out_aval,) = ctx.avals_in, ctx.avals_out
    m, (rows, columns) = a_aval.shape[-1], b_aval.shape[-2:]
    wide = lax._wide(b_aval.dtype)
    t, rhs = _wide_operand(ctx, a, a_aval), _wide_operand(ctx, b, b_aval)
    out = _new(ctx, math.prod(b_aval.shape), wide)
    flags = ctx.ints([left_side, lower, transpose_a, conjugate_a, unit_diagonal])
    each_matrix(ctx, target(triangular_solve_matrix), _batch(a_aval), (t, m * m),
                (rhs, rows * columns), (out, rows * columns), ctx.dim(m), ctx.dim(rows),
                ctx.dim(columns), flags)
    return from_compute(ctx, out, wide, out_aval)

  def lu(ctx, x):
    (aval,), (lu_aval, pivots_aval, permutation_aval) = ctx.avals_in, ctx.avals_out
    *_, m, n = aval.shape
    wide, batch, k = lax._wide(aval.dtype), _batch(aval), min(m, n)
    out = _copy(ctx, _wide_operand(ctx, x, aval))
    pivots, permutation = _new(ctx, batch * k, np.int32), _new(ctx, batch * m, np.int32)
    each_matrix(ctx, target(lu_matrix), batch, (out, m * n), (pivots, k), ctx.dim(m), ctx.dim(n))
    each_matrix(ctx, target(permutation_matrix), batch, (pivots, k), (permutation, m), ctx.dim(k),
                ctx.dim(m))
    return [from_compute(ctx, out, wide, lu_aval), ctx.result(pivots, pivots_aval),
            ctx.result(permutation, permutation_aval)]

  def lu_pivots_to_permutation(ctx, pivots, *, permutation_size):
    (aval,), (out_aval,) = ctx.avals_in, ctx.avals_out
    batch, k = _batch(aval, 1), aval.shape[-1]
    flat = ctx.fresh("f")
    ctx.emit(f"{flat} = {ctx.flat(pivots, aval)}")
    out = _new(ctx, batch * permutation_size, np.int32)
    each_matrix(ctx, target(permutation_matrix), batch, (flat, k), (out, permutation_size),
                ctx.dim(k), ctx.dim(permutation_size))
    return ctx.result(out, out_aval)

  def householder(ctx, x, aval, pivoting):
    """The flat (a, taus, columns) of the reference's `_householder_qr` of `x`."""
    *_, m, n = aval.shape
    wide, batch, k = lax._wide(aval.dtype), _batch(aval), min(m, n)
    a = _copy(ctx, _wide_operand(ctx, x, aval))
    taus, columns = _new(ctx, batch * k, wide), _new(ctx, batch * n, np.int32)
    squares, products = _new(ctx, batch * m, np.float64), _new(ctx, batch * n, wide)
    each_matrix(ctx, target(householder_matrix), batch, (a, m * n), (taus, k), (columns, n),
                ctx.dim(m), ctx.dim(n), ctx.dim(pivoting), (squares, m), (products, n))
    return a, taus, columns

  def product_of(ctx, a, taus, aval, columns, k):
    """The flat first `columns` columns of the product of the `k` reflectors
    of the flat (a, taus) of a stack of `aval`."""
    *_, m, n = aval.shape
    wide, batch = lax._wide(aval.dtype), _batch(aval)
    q, products = _new(ctx, batch * m * columns, wide, 0), _new(ctx, batch * columns, wide)
    each_matrix(ctx, target(householder_product_matrix), batch, (a, m * n), (taus, k),
                (q, m * columns), ctx.dim(m), ctx.dim(n), ctx.dim(columns), ctx.dim(k),
                (products, columns))
    return q

  def geqrf(ctx, x):
    (aval,), (a_aval, taus_aval) = ctx.avals_in, ctx.avals_out
    a, taus, _ = householder(ctx, x, aval, False)
    wide = lax._wide(aval.dtype)
    return [from_compute(ctx, a, wide, a_aval), from_compute(ctx, taus, wide, taus_aval)]

  def householder_product(ctx, a, taus):
    (a_aval, taus_aval), (out_aval,) = ctx.avals_in, ctx.avals_out
    q = product_of(ctx, _wide_operand(ctx, a, a_aval), _wide_operand(ctx, taus, taus_aval),
                   a_aval, a_aval.shape[-1], taus_aval.shape[-1])
    return from_compute(ctx, q, lax._wide(a_aval.dtype), out_aval)

  def qr(ctx, x, *, full_matrices, pivoting):
    (aval,), (q_aval, r_aval, *p_aval) = ctx.avals_in, ctx.avals_out
    *_, m, n = aval.shape
    wide, batch = lax._wide(aval.dtype), _batch(aval)
    a, taus, columns = householder(ctx, x, aval, pivoting)
    q = product_of(ctx, a, taus, aval, m if m < n or full_matrices else n, min(m, n))
    rows = m if full_matrices else min(m, n)
    r, t, i, c = _new(ctx, batch * rows * n, wide), ctx.fresh("t"), ctx.fresh("i"), ctx.fresh("c")
    m, n, rows = ctx.dim(m), ctx.dim(n), ctx.dim(rows)
    with ctx.lowering.elements(t, ctx.dim(batch * r_aval.shape[-2] * r_aval.shape[-1])):
      # R: the upper triangle of the first rows of a
      ctx.emit(f"{i}, {c} = ({t} // {n}) % {rows}, {t} % {n}")
      ctx.emit(f"{r}[{t}] = {a}[(({t} // ({rows} * {n})) * {m} + {i}) * {n} + {c}] "
               f"if {c} >= {i} else 0")
    outs = [from_compute(ctx, q, wide, q_aval), from_compute(ctx, r, wide, r_aval)]
    return outs + [ctx.result(columns, p_aval[0])] if pivoting else outs

  return {lax.cholesky_p: cholesky, lax.triangular_solve_p: triangular_solve, lax.lu_p: lu,
          lax.lu_pivots_to_permutation_p: lu_pivots_to_permutation, lax.geqrf_p: geqrf,
          lax.householder_product_p: householder_product, lax.qr_p: qr}


for _primitive, _rule in decomposition_rules(lambda fn: fn).items():
  register(_primitive)(_rule)


@register(lax.eigh_p)
def _eigh(ctx, x, *, lower, sort_eigenvalues, subset_by_index):
  (aval,), (v_aval, w_aval) = ctx.avals_in, ctx.avals_out
  n, batch = aval.shape[-1], _batch(aval)
  lo, hi = lax._index_range(subset_by_index, n)
  wide = lax._wide(aval.dtype)
  v, w = _new(ctx, batch * n * (hi - lo), wide), _new(ctx, batch * (hi - lo), np.float64)
  ctx.emit(f"{ctx.function(eigh)}({_wide_operand(ctx, x, aval)}, {v}, {w}, "
           f"{ctx.ints([batch, n, lo, hi])}, {ctx.dim(lower)})")
  return [from_compute(ctx, v, wide, v_aval), from_compute(ctx, w, np.float64, w_aval)]


@register(lax.svd_p)
def _svd(ctx, x, *, full_matrices, compute_uv, subset_by_index, algorithm):
  (aval,), (s_aval, *uv_avals) = ctx.avals_in, ctx.avals_out
  *_, m, n = aval.shape
  wide, batch, k = lax._wide(aval.dtype), _batch(aval), min(m, n)
  lo, _ = lax._index_range(subset_by_index, k)
  d = s_aval.shape[-1]
  if lo + d > k:
    raise LoweringError(f"the numba backend lowers 'svd' with subset_by_index within "
                        f"[0, min(m, n)] only (got {subset_by_index} for min(m, n) = {k})")
  s = _new(ctx, batch * d, np.float64)
  sizes = ctx.ints([batch, m, n, lo, d])
  if not compute_uv:
    ctx.emit(f"{ctx.function(singular_values)}({_wide_operand(ctx, x, aval)}, {s}, {sizes})")
    return [from_compute(ctx, s, np.float64, s_aval)]
  u, vt = (_new(ctx, math.prod(a.shape), wide) for a in uv_avals)
  ctx.emit(f"{ctx.function(svd)}({_wide_operand(ctx, x, aval)}, {s}, {u}, {vt}, {sizes}, "
           f"{ctx.dim(full_matrices)})")
  return [from_compute(ctx, s, np.float64, s_aval),
          *(from_compute(ctx, y, wide, a) for y, a in zip((u, vt), uv_avals))]


@register(lax.eig_p)
def _eig(ctx, x, *, compute_left_eigenvectors, compute_right_eigenvectors):
  (aval,), out_avals = ctx.avals_in, ctx.avals_out
  n, batch = aval.shape[-1], _batch(aval)
  complex128 = np.dtype(np.complex128)
  w = _new(ctx, batch * n, complex128)
  vl, vr = (_new(ctx, batch * n * n if wanted else 0, complex128)
            for wanted in (compute_left_eigenvectors, compute_right_eigenvectors))
  ctx.emit(f"{ctx.function(eig)}({_wide_operand(ctx, x, aval)}, {w}, {vl}, {vr}, "
           f"{ctx.ints([batch, n])}, "
           f"{ctx.ints([compute_left_eigenvectors, compute_right_eigenvectors])})")
  outs = [w] + [v for v, wanted in ((vl, compute_left_eigenvectors),
                                    (vr, compute_right_eigenvectors)) if wanted]
  return [from_compute(ctx, y, complex128, a) for y, a in zip(outs, out_avals)]


@register(lax.tridiagonal_solve_p)
def _tridiagonal_solve(ctx, dl, d, du, b):
  avals, (out_aval,) = ctx.avals_in, ctx.avals_out
  b_aval = avals[3]
  wide = lax._wide(b_aval.dtype)
  out = _new(ctx, math.prod(b_aval.shape), wide)
  operands = ", ".join(_wide_operand(ctx, y, a) for y, a in zip((dl, d, du, b), avals))
  ctx.emit(f"{ctx.function(tridiagonal_solve)}({operands}, {out}, "
           f"{ctx.ints([_batch(b_aval), *b_aval.shape[-2:]])})")
  return from_compute(ctx, out, wide, out_aval)


@register(lax.hessenberg_p)
def _hessenberg(ctx, x):
  (aval,), (a_aval, taus_aval) = ctx.avals_in, ctx.avals_out
  n, batch, wide = aval.shape[-1], _batch(aval), lax._wide(aval.dtype)
  a = _copy(ctx, _wide_operand(ctx, x, aval))
  taus = _new(ctx, batch * max(n - 1, 0), wide)
  ctx.emit(f"{ctx.function(hessenberg)}({a}, {taus}, {ctx.ints([batch, n])})")
  return [from_compute(ctx, a, wide, a_aval), from_compute(ctx, taus, wide, taus_aval)]


@register(lax.tridiagonal_p)
def _tridiagonal(ctx, x, *, lower):
  (aval,), out_avals = ctx.avals_in, ctx.avals_out
  n, batch, wide = aval.shape[-1], _batch(aval), lax._wide(aval.dtype)
  out = _new(ctx, batch * n * n, wide)
  d, e = _new(ctx, batch * n, np.float64), _new(ctx, batch * (n - 1), np.float64)
  taus = _new(ctx, batch * (n - 1), wide)
  ctx.emit(f"{ctx.function(tridiagonal)}({_wide_operand(ctx, x, aval)}, {out}, {d}, {e}, "
           f"{taus}, {ctx.ints([batch, n, lower])})")
  return [from_compute(ctx, y, dtype, a) for y, dtype, a in
          zip((out, d, e, taus), (wide, np.float64, np.float64, wide), out_avals)]


@register(lax.ormqr_p)
def _ormqr(ctx, a, taus, c, *, left, transpose):
  (a_aval, taus_aval, c_aval), (out_aval,) = ctx.avals_in, ctx.avals_out
  wide = lax._wide(c_aval.dtype)
  out = _copy(ctx, _wide_operand(ctx, c, c_aval))
  sizes = [_batch(c_aval), *a_aval.shape[-2:], taus_aval.shape[-1], *c_aval.shape[-2:]]
  ctx.emit(f"{ctx.function(ormqr)}({_wide_operand(ctx, a, a_aval)}, "
           f"{_wide_operand(ctx, taus, taus_aval)}, {out}, {ctx.ints(sizes)}, "
           f"{ctx.ints([left, transpose])})")
  return from_compute(ctx, out, wide, out_aval)


@register(lax.schur_p)
def _schur(ctx, x, *, compute_schur_vectors, sort_eig_vals, select_callable):
  if sort_eig_vals:
    raise NotImplementedError("The sort feature of LAPACK's gees routine is not implemented.")
  (aval,), out_avals = ctx.avals_in, ctx.avals_out
  n, batch, wide = aval.shape[-1], _batch(aval), lax._wide(aval.dtype)
  t = _copy(ctx, _wide_operand(ctx, x, aval))
  z, taus = _new(ctx, batch * n * n, wide, 0), _new(ctx, max(n - 1, 0), wide)
  ctx.emit(f"{ctx.function(schur)}({t}, {z}, {taus}, {ctx.ints([batch, n])})")
  return [from_compute(ctx, y, wide, a) for y, a in zip((t, z), out_avals)]


@register(lax.cholesky_update_p)
def _cholesky_update(ctx, r, w):
  (r_aval, w_aval), (out_aval,) = ctx.avals_in, ctx.avals_out
  out = _copy(ctx, operand(ctx, r, r_aval, range(r_aval.ndim), np.dtype(np.float64)))
  vector = _copy(ctx, operand(ctx, w, w_aval, range(w_aval.ndim), np.dtype(np.float64)))
  ctx.emit(f"{ctx.function(cholesky_update)}({out}, {vector}, "
           f"{ctx.ints([_batch(r_aval), r_aval.shape[-1]])})")
  return from_compute(ctx, out, np.dtype(np.float64), out_aval)


@register(lax.symmetric_product_p)
def _symmetric_product(ctx, a, c, *, alpha, beta):
  (a_aval, c_aval), (out_aval,) = ctx.avals_in, ctx.avals_out
  float64 = np.dtype(np.float64)
  out = _new(ctx, math.prod(c_aval.shape), float64)
  scalars = [ctx.lowering.const(value, float64) for value in (alpha, beta)]
  ctx.emit(f"{ctx.function(symmetric_product)}("
           f"{operand(ctx, a, a_aval, range(a_aval.ndim), float64)}, "
           f"{operand(ctx, c, c_aval, range(c_aval.ndim), float64)}, {out}, "
           f"{ctx.ints([_batch(a_aval), *a_aval.shape[-2:]])}, {', '.join(scalars)})")
  return from_compute(ctx, out, float64, out_aval)
