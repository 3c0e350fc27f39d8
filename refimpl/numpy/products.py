"""Products: dot, matmul, vdot, inner, outer, tensordot, einsum and the
batched matvec/vecmat/vecdot.

All lower to `dot_general`, whose operands may have different dtypes: the
result dtype is the promoted type of the inputs (passed as
`preferred_element_type`), weakly typed only if both inputs are.
"""

import operator

import numpy as np

from refimpl import dtypes, lax
from refimpl.lax.shapes import canonicalize_axis
from refimpl.numpy.creation import asarray, ensure_arraylike, user_dtype
from refimpl.numpy.manipulation import diagonal, moveaxis, ravel, stack
from refimpl.numpy.util import check_arraylike, promote_dtypes
from refimpl.numpy.ufuncs import conj
from refimpl.sharding import check_out_sharding

__all__ = ['dot', 'matmul', 'vdot', 'inner', 'outer', 'kron', 'tensordot', 'einsum',
           'matvec', 'vecmat', 'vecdot', 'cross']


def _result_type(name, a, b, preferred_element_type):
  """(dtype of the result, its weak type)."""
  if preferred_element_type is None:
    return dtypes.result_type_and_weak_type(a, b)
  return user_dtype(preferred_element_type, name), False


def _strengthen(x, dtype):
  """A weakly typed operand (a Python scalar) converted to the result dtype.

  dot_general computes in the wider of its operand types; without this,
  `dot(int8_array, 2)` would compute in int32 and then refuse to narrow to
  the promoted int8.
  """
  return lax.convert_element_type(x, dtype) if x.weak_type and x.dtype != dtype else x


def dot(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
  """Dot product: for scalars a product, for vectors/matrices the matrix product,
  in general a contraction of a's last axis with b's second-to-last (or only) axis.
  """
  check_out_sharding(out_sharding, "jnp.dot")
  a, b = ensure_arraylike("dot", a, b)
  out_dtype, weak = _result_type("dot", a, b, preferred_element_type)
  a, b = _strengthen(a, out_dtype), _strengthen(b, out_dtype)
  if a.ndim == 0 or b.ndim == 0:
    contract = ((), ())
  else:
    contract = ((a.ndim - 1,), (0 if b.ndim == 1 else b.ndim - 2,))
  result = lax.dot_general(a, b, (contract, ((), ())), precision=precision,
                           preferred_element_type=out_dtype)
  return lax.convert_element_type(result, out_dtype, weak)


def matmul(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
  """Matrix product with NumPy's rules: 1-D operands act as vectors (the added
  axis is removed again) and leading batch axes broadcast.

  Lowers as JAX does: size-1 batch axes are squeezed, the rest become
  dot_general batch or free dims, followed by a transpose (dropped when it
  is the identity) and broadcasting of squeezed axes.
  """
  check_out_sharding(out_sharding, "jnp.matmul")
  a, b = ensure_arraylike("matmul", a, b)
  for i, x in enumerate((a, b)):
    if x.ndim < 1:
      raise ValueError(f"matmul input operand {i} must have ndim at least 1, but it has "
                       f"ndim {x.ndim}")
  out_dtype, weak = _result_type("matmul", a, b, preferred_element_type)
  a, b = _strengthen(a, out_dtype), _strengthen(b, out_dtype)
  a_is_mat, b_is_mat = a.ndim > 1, b.ndim > 1
  a_batch = a.shape[:-2] if a_is_mat else ()
  b_batch = b.shape[:-2] if b_is_mat else ()
  n_batch = max(len(a_batch), len(b_batch))
  a_batch = (None,) * (n_batch - len(a_batch)) + a_batch
  b_batch = (None,) * (n_batch - len(b_batch)) + b_batch

  a_squeeze, b_squeeze, both_squeeze = [], [], []   # dims to drop
  a_batch_dims, b_batch_dims = [], []               # dot_general batch dims
  idx_batch, idx_a_free, idx_b_free = [], [], []    # result position of each kind
  for i, (da, db) in enumerate(zip(a_batch, b_batch)):
    if da is None:
      idx_b_free.append(i)
    elif db is None:
      idx_a_free.append(i)
    elif da == 1 and db == 1:
      a_squeeze.append(len(idx_batch) + len(idx_a_free) + len(a_squeeze))
      b_squeeze.append(len(idx_batch) + len(idx_b_free) + len(b_squeeze))
      both_squeeze.append(i)
    elif da == 1:
      idx_b_free.append(i)
      a_squeeze.append(len(idx_batch) + len(idx_a_free) + len(a_squeeze))
    elif db == 1:
      idx_a_free.append(i)
      b_squeeze.append(len(idx_batch) + len(idx_b_free) + len(b_squeeze))
    elif da == db:
      a_batch_dims.append(len(idx_batch) + len(idx_a_free))
      b_batch_dims.append(len(idx_batch) + len(idx_b_free))
      idx_batch.append(i)
    else:
      raise ValueError(f"Incompatible types for matmul arguments: {a.aval} and {b.aval}")
  if a_is_mat:
    idx_a_free.append(n_batch)
  if b_is_mat:
    idx_b_free.append(n_batch + a_is_mat)
  perm = np.argsort(np.concatenate([idx_batch, idx_a_free, idx_b_free]).astype(int))

  a = lax.squeeze(a, a_squeeze)
  b = lax.squeeze(b, b_squeeze)
  out = lax.dot_general(
      a, b, (((a.ndim - 1,), (b.ndim - 1 - b_is_mat,)), (a_batch_dims, b_batch_dims)),
      precision=precision, preferred_element_type=out_dtype)
  result = lax.transpose(out, tuple(int(p) for p in perm))
  if both_squeeze:
    result = lax.expand_dims(result, both_squeeze)
  return lax.convert_element_type(result, out_dtype, weak)


def vdot(a, b, *, precision=None, preferred_element_type=None):
  """Dot product of the flattened arrays, conjugating `a` if complex."""
  a, b = ensure_arraylike("vdot", a, b)
  if dtypes.is_complex(a.dtype):
    a = conj(a)
  return dot(ravel(a), ravel(b), precision=precision,
             preferred_element_type=preferred_element_type)


def inner(a, b, *, precision=None, preferred_element_type=None):
  """Contraction of the last axes of `a` and `b` (a product if either is a scalar)."""
  a, b = ensure_arraylike("inner", a, b)
  if a.ndim == 0 or b.ndim == 0:
    a = asarray(a, dtype=preferred_element_type)
    b = asarray(b, dtype=preferred_element_type)
    return a * b
  return tensordot(a, b, (-1, -1), precision=precision,
                   preferred_element_type=preferred_element_type)


def outer(a, b, out=None):
  """`ravel(a)[:, None] * ravel(b)[None, :]`."""
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.outer is not supported.")
  check_arraylike("outer", a, b)
  a, b = promote_dtypes(a, b)
  return lax.expand_dims(ravel(a), (1,)) * lax.expand_dims(ravel(b), (0,))


def kron(a, b):
  """Kronecker product: every element of `a` times the whole of `b`."""
  check_arraylike("kron", a, b)
  a, b = promote_dtypes(a, b)
  ndim = max(np.ndim(a), np.ndim(b))
  a = lax.expand_dims(a, range(ndim - np.ndim(a)))
  b = lax.expand_dims(b, range(ndim - np.ndim(b)))
  out_shape = tuple(int(m) * int(n) for m, n in zip(a.shape, b.shape))
  product = lax.mul(lax.expand_dims(a, range(1, 2 * ndim, 2)),
                    lax.expand_dims(b, range(0, 2 * ndim, 2)))
  return lax.reshape(product, out_shape)


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None, out_sharding=None):
  """Contracts the last `axes` axes of `a` with the first of `b`, or the axes
  given as a pair of ints or of sequences."""
  check_out_sharding(out_sharding, "jnp.tensordot")
  a, b = ensure_arraylike("tensordot", a, b)
  out_dtype, weak = _result_type("tensordot", a, b, preferred_element_type)
  a, b = _strengthen(a, out_dtype), _strengthen(b, out_dtype)
  if type(axes) is int:
    if axes > min(a.ndim, b.ndim):
      raise TypeError(f"Number of tensordot axes (axes {axes}) exceeds input ranks "
                      f"({a.shape} and {b.shape})")
    contracting = (tuple(range(a.ndim - axes, a.ndim)), tuple(range(axes)))
  elif isinstance(axes, (tuple, list)) and len(axes) == 2:
    ax1, ax2 = axes
    if type(ax1) is int and type(ax2) is int:
      contracting = ((canonicalize_axis(ax1, a.ndim),), (canonicalize_axis(ax2, b.ndim),))
    elif isinstance(ax1, (tuple, list)) and isinstance(ax2, (tuple, list)):
      if len(ax1) != len(ax2):
        raise TypeError(f"tensordot requires axes lists to have equal length, got {ax1} "
                        f"and {ax2}.")
      contracting = (tuple(canonicalize_axis(i, a.ndim) for i in ax1),
                     tuple(canonicalize_axis(i, b.ndim) for i in ax2))
    else:
      raise TypeError(f"tensordot requires both axes lists to be either ints, tuples or "
                      f"lists, got {ax1} and {ax2}")
  else:
    raise TypeError("tensordot axes argument must be an int, a pair of ints, or a pair "
                    "of lists/tuples of ints.")
  result = lax.dot_general(a, b, (contracting, ((), ())), precision=precision,
                           preferred_element_type=out_dtype)
  return lax.convert_element_type(result, out_dtype, weak)


# --- batched vector products --------------------------------------------------------------

def matvec(x1, x2, /):
  """Batched matrix-vector product: (..., m, n) times (..., n) gives (..., m)."""
  x1, x2 = ensure_arraylike("matvec", x1, x2)
  if x1.ndim < 2 or x2.ndim < 1:
    raise ValueError(f"matvec requires operands of ndim >= 2 and >= 1, got shapes "
                     f"{x1.shape} and {x2.shape}")
  return lax.squeeze(matmul(x1, lax.expand_dims(x2, (-1,))), (-1,))


def vecmat(x1, x2, /):
  """Batched conjugate-vector-matrix product: (..., m) times (..., m, n) gives (..., n)."""
  x1, x2 = ensure_arraylike("vecmat", x1, x2)
  if x1.ndim < 1 or x2.ndim < 2:
    raise ValueError(f"vecmat requires operands of ndim >= 1 and >= 2, got shapes "
                     f"{x1.shape} and {x2.shape}")
  return lax.squeeze(matmul(lax.expand_dims(conj(x1), (-2,)), x2), (-2,))


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
  """Batched conjugate dot product along `axis`; other axes broadcast."""
  x1, x2 = ensure_arraylike("vecdot", x1, x2)
  if x1.shape[axis] != x2.shape[axis]:
    raise ValueError(f"axes must match; got shapes {x1.shape} and {x2.shape} with "
                     f"axis={axis}")
  x1 = lax.expand_dims(moveaxis(conj(x1), axis, -1), (-2,))
  x2 = lax.expand_dims(moveaxis(x2, axis, -1), (-1,))
  out = matmul(x1, x2, precision=precision, preferred_element_type=preferred_element_type)
  return lax.squeeze(out, (-2, -1))


# --- einsum ---------------------------------------------------------------------------------

def _interleaved_subscripts(args):
  """(subscripts string, operands) of `(op0, sublist0, op1, sublist1, ..., [out])`.

  Index k becomes 'A'..'Z' for k < 26, then 'a'..'z' (NumPy's letters, whose
  alphabetical order is the numeric order used by the implicit output).
  """
  import string  # here, not at import: string compiles a regex when imported

  def term(sublist):
    letters = []
    for k in sublist:
      if k is Ellipsis:
        letters.append("...")
        continue
      k = operator.index(k)
      if not 0 <= k < 52:
        raise ValueError(f"einsum: subscript {k} in the interleaved form is not in [0, 52)")
      letters.append(string.ascii_uppercase[k] if k < 26 else string.ascii_lowercase[k - 26])
    return "".join(letters)

  pairs = args[:len(args) - len(args) % 2]   # an odd count ends with the output sublist
  subscripts = ",".join(term(s) for s in pairs[1::2])
  if len(args) % 2:
    subscripts += "->" + term(args[-1])
  return subscripts, list(pairs[0::2])


def _parse_subscripts(subscripts, shapes):
  """Input and output index letters per operand, with '...' expanded to fresh letters."""
  import string  # here, not at import: string compiles a regex when imported
  subscripts = subscripts.replace(" ", "")
  inputs, arrow, output = subscripts.partition("->")
  inputs = inputs.split(",")
  if len(inputs) != len(shapes):
    raise ValueError(f"einsum: {len(inputs)} operand subscripts given for "
                     f"{len(shapes)} operands")
  used = set(subscripts) - {".", ",", "-", ">"}
  fresh = [c for c in string.ascii_letters if c not in used]
  ellipsis_rank = max([len(s) - len(term.replace("...", ""))
                       for term, s in zip(inputs, shapes) if "..." in term] or [0])
  ellipsis = "".join(fresh[:ellipsis_rank])
  terms = []
  for term, s in zip(inputs, shapes):
    if "..." in term:
      n = len(s) - len(term.replace("...", ""))
      term = term.replace("...", ellipsis[ellipsis_rank - n:])
    if len(term) != len(s) or (term and not term.isalpha()):
      raise ValueError(f"einsum: subscripts {term!r} do not match an operand of shape {s}")
    terms.append(term)
  if not arrow:
    counts = {c: "".join(terms).count(c) for c in set("".join(terms))}
    output = ellipsis + "".join(sorted(c for c, n in counts.items()
                                       if n == 1 and c not in ellipsis))
  else:
    output = output.replace("...", ellipsis)
  for c in output:
    if not any(c in t for t in terms):
      raise ValueError(f"einsum: output subscript {c!r} does not appear in the inputs")
  return terms, output


def _sum_axes(x, axes):
  if not axes:
    return x
  return lax.reduce_or(x, axes) if dtypes.is_bool(x.dtype) else lax.reduce_sum(x, axes)


def einsum(subscripts, /, *operands, out=None, optimize="auto", precision=None,
           preferred_element_type=None, _dot_general=lax.dot_general, out_sharding=None):
  """Einstein summation, as `np.einsum` (explicit and implicit output, '...').

  Also the interleaved form `einsum(op0, sublist0, op1, sublist1, ...,
  [sublist_out])`, whose sublists hold ints in [0, 52) (and `...`).
  Operands are contracted left to right with `dot_general`; repeated indices
  within an operand take its diagonal and indices needed nowhere else are
  summed first (with `_dot_general`, `lax.dot_general` by default, as JAX's
  hook for another contraction). `optimize` is accepted and ignored (values
  are the same).
  """
  check_out_sharding(out_sharding, "jnp.einsum")
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.einsum is not supported.")
  if not isinstance(subscripts, str):
    subscripts, operands = _interleaved_subscripts((subscripts, *operands))
  check_arraylike("einsum", *operands)
  out_dtype, weak = (dtypes.result_type_and_weak_type(*operands)
                     if preferred_element_type is None
                     else (user_dtype(preferred_element_type, "einsum"), False))
  operands = [asarray(x) for x in promote_dtypes(*operands)]
  terms, output = _parse_subscripts(subscripts, [x.shape for x in operands])
  sizes = {}
  for term, x in zip(terms, operands):
    for c, d in zip(term, x.shape):
      if sizes.get(c, 1) not in (1, d) and d != 1:
        raise ValueError(f"einsum: size of index {c!r} differs between operands: "
                         f"{sizes[c]} and {d}")
      if d != 1:  # a size-1 axis broadcasts against the others (0 included)
        sizes[c] = d
      sizes.setdefault(c, 1)

  prepared = []
  for k, (term, x) in enumerate(zip(terms, operands)):
    while len(set(term)) != len(term):  # repeated index: take the diagonal
      c = next(c for c in term if term.count(c) > 1)
      i, j = term.index(c), term.index(c, term.index(c) + 1)
      x = diagonal(x, 0, i, j)
      term = term[:i] + term[i + 1:j] + term[j + 1:] + c
    elsewhere = output + "".join(t for m, t in enumerate(terms) if m != k)
    unique = tuple(i for i, c in enumerate(term) if c not in elsewhere)
    x = _sum_axes(x, unique)
    term = "".join(c for c in term if c in elsewhere)
    shape = tuple(sizes[c] for c in term)
    if x.shape != shape:  # broadcast size-1 axes that other operands give a size
      x = lax.broadcast_in_dim(x, shape, tuple(range(len(shape))))
    prepared.append((term, x))

  acc_term, acc = prepared[0]
  for k, (term, x) in enumerate(prepared[1:], start=1):
    later = output + "".join(t for t, _ in prepared[k + 1:])
    shared = [c for c in acc_term if c in term]
    batch = [c for c in shared if c in later]
    contract = [c for c in shared if c not in later]
    acc = _dot_general(
        acc, x, (([acc_term.index(c) for c in contract], [term.index(c) for c in contract]),
                 ([acc_term.index(c) for c in batch], [term.index(c) for c in batch])),
        precision=precision, preferred_element_type=out_dtype)
    acc_term = ("".join(batch) + "".join(c for c in acc_term if c not in shared)
                + "".join(c for c in term if c not in shared))
  acc = _sum_axes(acc, tuple(i for i, c in enumerate(acc_term) if c not in output))
  acc_term = "".join(c for c in acc_term if c in output)
  acc = lax.transpose(acc, tuple(acc_term.index(c) for c in output))
  return lax.convert_element_type(acc, out_dtype, weak)


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
  """Cross product of 2- or 3-vectors along `axisa`/`axisb` (or `axis`).

  Two 2-vectors give the scalar z component; a 2-vector meeting a 3-vector
  counts as having z = 0. Other axes broadcast; the result's vector axis is
  `axisc`.
  """
  a, b = promote_dtypes(*ensure_arraylike("cross", a, b))
  if axis is not None:
    axisa = axisb = axisc = axis
  a, b = moveaxis(a, axisa, -1), moveaxis(b, axisb, -1)
  if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
    raise ValueError("Dimension must be either 2 or 3 for cross product")
  if a.shape[-1] == 2 and b.shape[-1] == 2:
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
  a0, a1 = a[..., 0], a[..., 1]
  b0, b1 = b[..., 0], b[..., 1]
  a2 = a[..., 2] if a.shape[-1] == 3 else lax.full_like(a0, 0)
  b2 = b[..., 2] if b.shape[-1] == 3 else lax.full_like(b0, 0)
  c = stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0])
  return moveaxis(c, 0, axisc)
