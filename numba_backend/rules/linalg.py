"""Lowering rules of the linear algebra primitives (refimpl/lax/linalg.py).

`dot_general` transposes its operands to (batch, M, K) and (batch, K, N)
arrays of the contraction dtype (`refimpl.lax.rules.contraction_dtype`:
the result dtype for float32/float64, float32 for 16-bit floats, complex128
for complex, 64-bit integers for integers and bool) and multiplies them
with one blocked kernel compiled once per dtype; each sum runs over k in
ascending order (the reference's BLAS sums in another order: see the
tolerances in docs/backends.md). IEEE rules hold: 0 * inf is NaN.
"""

import math

import numpy as np

from refimpl import dtypes
from refimpl.lax import linalg as lax
from refimpl.lax.rules import contraction_dtype
from numba_backend.kernels import c_strides, kernel_jit
from numba_backend.lower import (LoweringError, cast, element_to_store, read_element, register,
                                 storage_dtype, type_source)

_ROWS, _COLUMNS = 128, 256   # the (k, j) block of the right operand kept in cache


@kernel_jit
def batched_matmul(a, b, out, sizes):
  """out[p, i, j] = sum over k (ascending) of a[p, i, k] * b[p, k, j], for
  flat row-major `a` (B, M, K), `b` (B, K, N) and zeroed `out` (B, M, N);
  `sizes` is (B, M, K, N)."""
  batch, m, depth, n = sizes[0], sizes[1], sizes[2], sizes[3]
  for p in range(batch):
    lhs, rhs = a[p * m * depth:(p + 1) * m * depth], b[p * depth * n:(p + 1) * depth * n]
    product = out[p * m * n:(p + 1) * m * n]
    for j0 in range(0, n, _COLUMNS):
      j1 = min(j0 + _COLUMNS, n)
      for k0 in range(0, depth, _ROWS):
        k1 = min(k0 + _ROWS, depth)
        for i in range(m):
          row = product[i * n + j0:i * n + j1]   # views: the inner loop vectorizes
          for k in range(k0, k1):
            x = lhs[i * depth + k]
            column = rhs[k * n + j0:k * n + j1]
            for j in range(j1 - j0):
              row[j] += x * column[j]

def operand(ctx, x, aval, permutation, compute):
  """A flat C-contiguous array of `compute` holding `x` transposed by `permutation`."""
  size = ctx.dim(math.prod(aval.shape))
  dtype = np.dtype(aval.dtype)
  source, held = ctx.flat(x, aval), storage_dtype(dtype)
  if tuple(permutation) != tuple(range(len(permutation))):
    if dtype not in (dtypes.float16, dtypes.bfloat16):
      held = compute   # strided_copy converts as it copies
    moved, strides = ctx.fresh(), c_strides(aval.shape)
    ctx.emit(f"{moved} = np.empty({size}, {type_source(held)})")
    ctx.emit(f"K.strided_copy({source}, 0, {ctx.ints([strides[i] for i in permutation])}, "
             f"{ctx.ints([aval.shape[i] for i in permutation])}, {moved})")
    source = moved
  if held == compute:
    return source
  converted, k = ctx.fresh(), ctx.fresh("k")
  ctx.emit(f"{converted} = np.empty({size}, {type_source(compute)})")
  with ctx.lowering.block(f"for {k} in range({size}):"):
    ctx.emit(f"{converted}[{k}] = {type_source(compute)}({read_element(f'{source}[{k}]', dtype)})")
  return converted


def from_compute(ctx, flat, compute, out_aval):
  """The value of `out_aval` from the flat array `flat` of the contraction
  dtype `compute`: rounded once (bool: nonzero sums are True)."""
  dtype = np.dtype(out_aval.dtype)
  if dtype != compute:
    size = ctx.dim(math.prod(out_aval.shape))
    out, k = ctx.fresh(), ctx.fresh("k")
    ctx.emit(f"{out} = np.empty({size}, {type_source(storage_dtype(dtype))})")
    with ctx.lowering.block(f"for {k} in range({size}):"):
      value = f"{flat}[{k}] > 0" if dtypes.is_bool(dtype) else cast(f"{flat}[{k}]", dtype)
      ctx.emit(f"{out}[{k}] = {element_to_store(value, dtype)}")
    flat = out
  return ctx.result(flat, out_aval)


@register(lax.dot_general_p)
def _dot_general(ctx, lhs, rhs, *, dimension_numbers, precision, preferred_element_type):
  (lc, rc), (lb, rb) = dimension_numbers
  (lhs_aval, rhs_aval), (out_aval,) = ctx.avals_in, ctx.avals_out
  compute = contraction_dtype(np.dtype(out_aval.dtype))
  lhs_free = lax._free_dims(lhs_aval.ndim, lc, lb)
  rhs_free = lax._free_dims(rhs_aval.ndim, rc, rb)
  size = lambda aval, dims: math.prod(aval.shape[d] for d in dims)
  sizes = [size(lhs_aval, lb), size(lhs_aval, lhs_free), size(lhs_aval, lc), size(rhs_aval, rhs_free)]
  a = operand(ctx, lhs, lhs_aval, [*lb, *lhs_free, *lc], compute)
  b = operand(ctx, rhs, rhs_aval, [*rb, *rc, *rhs_free], compute)
  out = ctx.fresh()
  ctx.emit(f"{out} = np.zeros({ctx.dim(math.prod(out_aval.shape))}, {type_source(compute)})")
  ctx.emit(f"{ctx.function(batched_matmul)}({a}, {b}, {out}, {ctx.ints(sizes)})")
  return from_compute(ctx, out, compute, out_aval)


# --- the decompositions: a host call (interim) -------------------------------------------
#
# The matrix decompositions and solvers run the reference rule on the host,
# from the compiled program (`numba.objmode`): their results are the
# reference's exactly. This is an interim lowering until they are ported to
# Numba (numba's own np.linalg would need SciPy's LAPACK, which the project
# does not depend on); docs/backends.md lists them.

_HOST = (lax.cholesky_p, lax.eig_p, lax.eigh_p, lax.geqrf_p, lax.householder_product_p,
         lax.lu_p, lax.lu_pivots_to_permutation_p, lax.qr_p, lax.svd_p,
         lax.triangular_solve_p, lax.tridiagonal_solve_p)

_host_calls = []   # (primitive, params, dtypes in, dtypes out), by the index a program passes
_host_indices = {}   # the source of an entry of _host_calls -> its index


def host_call(index, *args):
  """The results of the equation registered at `index` on the arrays `args`
  (storage dtypes, as the program holds them), by its reference rule; as
  C-contiguous arrays of their storage dtypes."""
  primitive, params, dtypes_in, dtypes_out = _host_calls[int(index)]
  outs = primitive.impl(*[np.asarray(x).view(t) for x, t in zip(args, dtypes_in)], **params)
  if not primitive.multiple_results:
    outs = [outs]
  return tuple(np.ascontiguousarray(np.asarray(out, t)).view(storage_dtype(t))
               for out, t in zip(outs, dtypes_out))


def _array_type(aval):
  """The Numba type of an array value of `aval` in a program, as source."""
  dtype = storage_dtype(dtypes.numpy_dtype(aval.dtype))
  name = "boolean" if dtype == np.bool_ else dtype.name
  return f"{name}[{', '.join([':'] * (aval.ndim - 1) + ['::1'])}]"


@register(*_HOST)
def _host(ctx, *operands, **params):
  primitive = ctx.eqn.primitive
  for aval in [*ctx.avals_in, *ctx.avals_out]:
    if not aval.shape:
      raise LoweringError(f"the numba backend lowers '{primitive.name}' for arrays only")
  call = (primitive, params, [dtypes.numpy_dtype(a.dtype) for a in ctx.avals_in],
          [dtypes.numpy_dtype(a.dtype) for a in ctx.avals_out])
  index = _host_indices.setdefault(repr(call), len(_host_calls))
  if index == len(_host_calls):
    _host_calls.append(call)
  index = ctx.dim(index)
  results, outs = ctx.fresh(), [ctx.fresh() for _ in ctx.avals_out]
  types = ", ".join(_array_type(a) for a in ctx.avals_out)
  with ctx.lowering.block(f'with numba.objmode({results}="Tuple(({types},))"):'):
    ctx.emit(f"{results} = {ctx.function(host_call)}({index}, {', '.join(operands)})")
  ctx.emit(f"{', '.join(outs)}, = {results}")   # read after the block, as objmode requires
  return outs if primitive.multiple_results else outs[0]
