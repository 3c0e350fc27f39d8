"""Cases for `dot_general` (refimpl/lax/linalg.py) and the jnp products built
on it (refimpl/numpy/products.py).

The expected values are NumPy's products computed exactly enough to check
the reference within the dtype's tolerance: floats in float64/complex128
(dot_general sums real floats in float32 or float64, as XLA on CPU; NumPy's
own float16 loops would round every partial sum), integers in 64 bits and
then wrapped to the operands' dtype (the sum modulo 2**bits is the same
however it is accumulated).
"""

import dataclasses
import string

import numpy as np
from hypothesis import strategies as st

import refimpl.numpy as jnp
from refimpl import dtypes, lax
from refimpl.lax.rules import contraction_dtype
from conformance import strategies as S
from conformance.autodiff import ADCase
from conformance.cases import Case

ALL = S.ALL_DTYPES
SIZE = st.integers(0, 3)


def _exact(numpy_fn):
  """`numpy_fn` on widened operands; integer results wrapped back to the
  operands' dtype (bool stays bool: NumPy's boolean products are OR of ANDs).
  Floats widen to long double, which NumPy computes with its own loops: its
  BLAS-backed float64 products skip zeros, so 0 * inf would not give NaN.
  Where real products or sums overflow in the contraction dtype (float32
  for the 16-bit floats, in which dot_general computes), the reference's
  result is the infinity or NaN (inf - inf) of that arithmetic: there the
  expected value is `numpy_fn` computed in the contraction dtype. (Complex
  numbers compute in complex128, which complex64 operands cannot overflow.)"""
  def expected(*args, **kwargs):
    dtype = np.result_type(*[np.asarray(a) for a in args if isinstance(a, np.ndarray)])
    if dtypes.is_integer(dtype):
      wide = np.uint64 if dtypes.is_unsigned(dtype) else np.int64
    elif dtypes.is_inexact(dtype):
      wide = np.clongdouble if dtypes.is_complex(dtype) else np.longdouble
    else:
      wide = None

    def computed(as_dtype):
      operands = [np.asarray(a).astype(as_dtype) if as_dtype and isinstance(a, np.ndarray)
                  else a for a in args]
      with np.errstate(all="ignore"):
        return numpy_fn(*operands, **kwargs)
    result = computed(wide)
    if dtypes.is_integer(dtype):
      return result.astype(dtype)
    if dtypes.is_float(dtype):
      narrow = computed(contraction_dtype(dtype))
      return np.where(~np.isfinite(narrow) & ~np.isnan(result), narrow, result)
    return result
  return expected


def _einsum(subscripts, *operands):
  """np.einsum as `_exact` computes it, except that floats widen to float64 /
  complex128 only: NumPy 2.4's einsum of (complex) long double writes past its
  buffers and corrupts the heap (b,...->...b on complex operands of shapes
  (0,), (2, 3)). einsum's own loops, unlike BLAS, keep 0 * inf = NaN."""
  dtype = np.result_type(*operands)
  if not dtypes.is_inexact(dtype):
    return _exact(np.einsum)(subscripts, *operands)
  wide = np.complex128 if dtypes.is_complex(dtype) else np.float64
  with np.errstate(all="ignore"):
    return np.einsum(subscripts, *[np.asarray(x).astype(wide) for x in operands])


def _operands(dtype, *shapes):
  return st.tuples(*[S.arrays(dtype, s) for s in shapes])


def _bounded_operands(dtype, *shapes):
  return st.tuples(*[S.bounded_arrays(dtype, s) for s in shapes])


# --- dot_general ---------------------------------------------------------------------------------

@st.composite
def _dot_general_inputs(draw, dtype_list=ALL, operands=_operands):
  """Operands with batch, contracting and free dimensions in random order,
  and the dimension numbers that name them."""
  dtype = draw(st.sampled_from(dtype_list))
  batch = draw(st.lists(SIZE, max_size=2))
  contract = draw(st.lists(SIZE, max_size=2))
  lhs_free, rhs_free = draw(st.lists(SIZE, max_size=2)), draw(st.lists(SIZE, max_size=2))

  def layout(free):
    kinds = [("b", i) for i in range(len(batch))] + [("c", i) for i in range(len(contract))]
    kinds += [("f", i) for i in range(len(free))]
    kinds = draw(st.permutations(kinds))
    sizes = {"b": batch, "c": contract, "f": free}
    return [sizes[k][i] for k, i in kinds], kinds

  lhs_shape, lhs_kinds = layout(lhs_free)
  rhs_shape, rhs_kinds = layout(rhs_free)
  position = lambda kinds, kind: tuple(kinds.index((kind, i)) for i in range(
      len(batch if kind == "b" else contract)))
  dnums = ((position(lhs_kinds, "c"), position(rhs_kinds, "c")),
           (position(lhs_kinds, "b"), position(rhs_kinds, "b")))
  lhs, rhs = draw(operands(dtype, tuple(lhs_shape), tuple(rhs_shape)))
  wider = {np.dtype(dtypes.float16): np.float32, np.dtype(dtypes.bfloat16): np.float32,
           np.dtype(np.int8): np.int32, np.dtype(np.int16): np.int32,
           np.dtype(np.uint8): np.uint32, np.dtype(np.uint16): np.uint32}
  preferred = draw(st.sampled_from([None, wider.get(np.dtype(dtype), dtype)]))
  return (lhs, rhs), {"dimension_numbers": dnums, "preferred_element_type": preferred}


def _dot_general(lhs, rhs, dimension_numbers, preferred_element_type):
  """np.einsum: batch letters, then lhs free, then rhs free."""
  (lc, rc), (lb, rb) = dimension_numbers
  letters = iter(string.ascii_letters)
  lhs_terms, rhs_terms = [None] * lhs.ndim, [None] * rhs.ndim
  batch = []
  for i, j in zip(lb, rb):
    lhs_terms[i] = rhs_terms[j] = next(letters)
    batch.append(lhs_terms[i])
  for i, j in zip(lc, rc):
    lhs_terms[i] = rhs_terms[j] = next(letters)
  lhs_free = [lhs_terms.__setitem__(i, next(letters)) or lhs_terms[i]
              for i in range(lhs.ndim) if lhs_terms[i] is None]
  rhs_free = [rhs_terms.__setitem__(i, next(letters)) or rhs_terms[i]
              for i in range(rhs.ndim) if rhs_terms[i] is None]
  subscripts = (f"{''.join(lhs_terms)},{''.join(rhs_terms)}->"
                f"{''.join(batch + lhs_free + rhs_free)}")
  if preferred_element_type is not None:
    lhs, rhs = lhs.astype(preferred_element_type), rhs.astype(preferred_element_type)
  return _einsum(subscripts, lhs, rhs)


@st.composite
def _dot_operands(draw, lhs_ranks, rhs_ranks):
  """(lhs, rhs) of one dtype that np.dot contracts: lhs's last axis with rhs's
  only or second-to-last axis (no contraction when either is a scalar)."""
  dtype = draw(st.sampled_from(ALL))
  k = draw(SIZE)
  lhs_rank, rhs_rank = draw(st.sampled_from(lhs_ranks)), draw(st.sampled_from(rhs_ranks))
  sizes = lambda n: tuple(draw(SIZE) for _ in range(n))
  lhs_shape = sizes(lhs_rank - 1) + (k,) if lhs_rank else ()
  if rhs_rank == 0:
    rhs_shape = ()
  elif rhs_rank == 1:
    rhs_shape = (k,)
  else:
    rhs_shape = sizes(rhs_rank - 2) + (k, draw(SIZE))
  return draw(_operands(dtype, lhs_shape, rhs_shape)), {}


@st.composite
def _batch_matmul_inputs(draw):
  dtype = draw(st.sampled_from(ALL))
  batch = tuple(draw(st.lists(SIZE, max_size=2)))
  m, k, n = draw(SIZE), draw(SIZE), draw(SIZE)
  return draw(_operands(dtype, batch + (m, k), batch + (k, n))), {}


@st.composite
def _matmul_inputs(draw, lhs_min_rank=1, rhs_min_rank=1, vector=None, dtype_list=ALL,
                   operands=_operands):
  """(lhs, rhs) for np.matmul: batch dims broadcast (size 1 included); 1-D
  operands act as vectors. `vector` ("lhs" or "rhs") makes that one a
  (batch of) vector(s) for matvec/vecmat."""
  dtype = draw(st.sampled_from(dtype_list))
  m, k, n = draw(SIZE), draw(SIZE), draw(SIZE)
  lhs_batch, rhs_batch = draw(S.broadcastable_shapes(2, max_dims=2, max_side=3))
  lhs_rank = draw(st.integers(lhs_min_rank, 2))
  rhs_rank = draw(st.integers(rhs_min_rank, 2))
  lhs_shape = lhs_batch + ((m, k) if lhs_rank == 2 else (k,))
  rhs_shape = rhs_batch + ((k, n) if rhs_rank == 2 else (k,))
  if vector == "rhs":
    rhs_shape = rhs_batch + (k,)
  if vector == "lhs":
    lhs_shape = lhs_batch + (k,)
  if lhs_rank == 1 and vector != "lhs":
    lhs_shape = (k,)
  if rhs_rank == 1 and vector != "rhs":
    rhs_shape = (k,)
  return draw(operands(dtype, lhs_shape, rhs_shape)), {}


@st.composite
def _same_last_axis(draw, min_rank=0, equal_size=False):
  """(a, b) of one dtype; for inner: equal last axes (or a scalar); for
  vdot: equal sizes (any shapes)."""
  dtype = draw(st.sampled_from(ALL))
  if equal_size:
    a = draw(S.arrays(dtype, S.shapes()))
    size = a.size
    shape = (size,) if draw(st.booleans()) or size == 0 else (1, size)
    return (a, draw(S.arrays(dtype, shape))), {}
  k = draw(SIZE)
  shapes = []
  for _ in range(2):
    rank = draw(st.integers(min_rank, 3))
    shapes.append(tuple(draw(SIZE) for _ in range(rank - 1)) + (k,) if rank else ())
  return draw(_operands(dtype, *shapes)), {}


@st.composite
def _two_arrays(draw, max_dims=3, dtype_list=ALL):
  dtype = draw(st.sampled_from(dtype_list))
  return (draw(S.arrays(dtype, S.shapes(max_dims=max_dims, max_side=3))),
          draw(S.arrays(dtype, S.shapes(max_dims=max_dims, max_side=3)))), {}


@st.composite
def _tensordot_inputs(draw):
  """Operands and `axes`: an int (the last n of a with the first n of b) or
  a pair of axis sequences (negative too)."""
  dtype = draw(st.sampled_from(ALL))
  contract = draw(st.lists(SIZE, max_size=2))
  a_free, b_free = draw(st.lists(SIZE, max_size=2)), draw(st.lists(SIZE, max_size=2))
  if draw(st.booleans()):
    a_shape, b_shape = tuple(a_free + contract), tuple(contract + b_free)
    axes = len(contract)
  else:
    a_order = draw(st.permutations(range(len(a_free) + len(contract))))
    b_order = draw(st.permutations(range(len(b_free) + len(contract))))
    a_sizes, b_sizes = contract + a_free, contract + b_free
    a_shape = tuple(a_sizes[i] for i in a_order)
    b_shape = tuple(b_sizes[i] for i in b_order)
    a_axes = [a_order.index(i) - draw(st.sampled_from([0, len(a_shape)]))
              for i in range(len(contract))]
    b_axes = [b_order.index(i) - draw(st.sampled_from([0, len(b_shape)]))
              for i in range(len(contract))]
    axes = (tuple(a_axes), tuple(b_axes))
  return draw(_operands(dtype, a_shape, b_shape)), {"axes": axes}


@st.composite
def _vecdot_inputs(draw):
  dtype = draw(st.sampled_from(ALL))
  a_shape, b_shape = draw(S.broadcastable_shapes(2, max_dims=2, max_side=3))
  k = draw(SIZE)
  ndim = max(len(a_shape), len(b_shape)) + 1
  axis = draw(st.integers(-min(len(a_shape), len(b_shape)) - 1, -1))
  insert = lambda shape: shape[:len(shape) + 1 + axis] + (k,) + shape[len(shape) + 1 + axis:]
  del ndim
  return draw(_operands(dtype, insert(a_shape), insert(b_shape))), {"axis": axis}


def _einsum_operand(dtype, shape):
  """An array of `dtype`; float and complex values are integers in [-2, 2]."""
  if dtypes.is_inexact(dtype):
    return S.small_integer_arrays(dtype, shape, bound=2)
  return S.arrays(dtype, shape)


@st.composite
def _einsum_inputs(draw):
  """Operands and `subscripts`: 1-3 operands (scalars too), letters shared
  between them, repeated within one (a diagonal), an optional '...'
  (broadcast batch dims) and an implicit or explicit (any order) output.

  Float and complex values are small integers (ints keep their whole range:
  their wrapping is exact in any order). einsum's contraction order is
  unspecified (NumPy's and JAX's `optimize` reorder it, and refimpl sums an
  operand's own indices first) and JAX rounds each pairwise contraction to
  the operands' dtype, so with general floats the result depends on the
  order: through cancellation after a rounded intermediate (in bfloat16 the
  error is then far beyond the dtype's tolerance), through an intermediate
  overflow or NaN (inf * 0), or through rounding in the subnormal range. With
  |x| <= 2, a sum of at most 3**4 products of 3 operands is at most 648 and
  every intermediate is exact in each dtype, except for one rounding in
  bfloat16 (exact only up to 256), so the result is within the tolerance
  whatever the order."""
  dtype = draw(st.sampled_from(ALL))
  letters = "abcd"
  sizes = {c: draw(SIZE) for c in letters}
  ellipsis = draw(st.booleans())
  ellipsis_shapes = draw(S.broadcastable_shapes(3, max_dims=2, max_side=3))
  terms, operands = [], []
  for i in range(draw(st.integers(1, 3))):
    term = draw(st.lists(st.sampled_from(letters), max_size=3))
    shape = [sizes[c] for c in term]
    if ellipsis and draw(st.booleans()):
      at = draw(st.integers(0, len(term)))
      term = term[:at] + ["..."] + term[at:]
      shape = shape[:at] + list(ellipsis_shapes[i]) + shape[at:]
    terms.append("".join(term))
    operands.append(draw(_einsum_operand(dtype, tuple(shape))))
  used = sorted(set("".join(terms).replace(".", "")))
  if draw(st.booleans()):
    output = draw(st.permutations(used))[:draw(st.integers(0, len(used)))]
    dots = "..." if any("..." in t for t in terms) else ""
    subscripts = ",".join(terms) + "->" + dots + "".join(output)
  else:
    subscripts = ",".join(terms)
  return tuple(operands), {"subscripts": subscripts}


JNP_CASES = [
    Case("jnp.dot", jnp.dot, lambda: _dot_operands([0, 1, 2, 3], [0, 1, 2, 3]),
         _exact(np.dot)),
    Case("jnp.matmul", jnp.matmul, _matmul_inputs, _exact(np.matmul)),
    Case("jnp.vdot", jnp.vdot, lambda: _same_last_axis(equal_size=True), _exact(np.vdot)),
    Case("jnp.inner", jnp.inner, _same_last_axis, _exact(np.inner)),
    Case("jnp.outer", jnp.outer, _two_arrays, _exact(np.outer)),
    # kron multiplies with lax.mul, which rejects booleans (as in JAX).
    Case("jnp.kron", jnp.kron, lambda: _two_arrays(dtype_list=ALL[1:]), _exact(np.kron)),
    Case("jnp.tensordot", jnp.tensordot, _tensordot_inputs, _exact(np.tensordot)),
    Case("jnp.einsum", lambda *operands, subscripts: jnp.einsum(subscripts, *operands),
         _einsum_inputs, lambda *operands, subscripts: _einsum(subscripts, *operands)),
    Case("jnp.matvec", jnp.matvec, lambda: _matmul_inputs(2, 1, vector="rhs"),
         _exact(np.matvec)),
    Case("jnp.vecmat", jnp.vecmat, lambda: _matmul_inputs(1, 2, vector="lhs"),
         _exact(np.vecmat)),
    Case("jnp.vecdot", jnp.vecdot, _vecdot_inputs, _exact(np.vecdot)),
]

LAX_CASES = [
    Case("lax.dot_general", lax.dot_general, _dot_general_inputs, _dot_general),
    Case("lax.dot", lax.dot, lambda: _dot_operands([1, 2], [1, 2]), _exact(np.dot)),
    Case("lax.batch_matmul", lax.batch_matmul, _batch_matmul_inputs, _exact(np.matmul)),
]

CASES = [dataclasses.replace(case, any_order=True) for case in LAX_CASES + JNP_CASES]
"""(Their sums' order is unspecified: where they overflow, `Case.any_order`.)"""


# --- derivatives: dot_general is bilinear (both transposes checked in reverse mode) ---

AD_DTYPES = [np.float64, np.complex128]

AD_CASES = [
    ADCase("lax.dot_general", lax.dot_general,
           lambda: _dot_general_inputs(AD_DTYPES, _bounded_operands), ("dot_general",),
           order=2),
    ADCase("jnp.matmul", jnp.matmul, lambda: _matmul_inputs(
        dtype_list=AD_DTYPES, operands=_bounded_operands), ("dot_general",)),
]
