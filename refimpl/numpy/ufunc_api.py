"""`jnp.ufunc`, NumPy's universal function object, and `jnp.frompyfunc`.

A ufunc applies a function of `nin` scalars elementwise to broadcast arrays
and has NumPy's methods `outer`, `reduce`, `accumulate`, `at` and `reduceat`.
The jnp ufuncs (`jnp.add`, `jnp.maximum`, `jnp.logical_and`, ..., built in
refimpl/numpy/ufuncs.py) bring their own call and, where JAX has one, a fast
implementation of a method (`jnp.add.reduce` is `jnp.sum`, `jnp.add.at` is
`x.at[i].add`). Every other method folds the call over the array with
structured control flow, as JAX does: `reduce` and `reduceat` in a
`lax.fori_loop` (static bounds, so one `scan` equation), `accumulate` and
`at` in a `lax.scan`; the call is traced once, in the loop body. The call of
a `frompyfunc` ufunc maps its function over the elements with
`jnp.vectorize`, as JAX does.

As in JAX, the methods (and the call of a `frompyfunc` ufunc) are jitted with
the ufunc a static argument, so a traced program shows `jit[name=reduce]`.
"""

import math
import operator

import numpy as np

from refimpl import core, dtypes, lax
from refimpl.api import ShapeDtypeStruct, eval_shape, jit
from refimpl.lax.shapes import canonicalize_axis
from refimpl.numpy.util import check_arraylike
import refimpl.numpy as jnp  # the package, still being built: names resolve at call time

__all__ = ['ufunc', 'frompyfunc']


def _stand_in(x):
  """A scalar ShapeDtypeStruct of `x`'s dtype and weak type (for eval_shape)."""
  aval = core.get_aval(x)
  return ShapeDtypeStruct((), aval.dtype, weak_type=aval.weak_type)


class ufunc:
  """A universal function: `func` of `nin` scalars (giving `nout` values)
  applied elementwise to broadcast arrays, with NumPy's ufunc methods.

  `call`, `reduce`, `accumulate`, `at` and `reduceat` optionally replace the
  generic implementations (a fast path giving the same values); they are not
  part of the ufunc's identity (`==`, `hash`). The properties are read-only,
  so that a ufunc can be a static (hashed) argument of `jit`.
  `jnp.frompyfunc` makes a ufunc of any scalar function.
  """

  def __init__(self, func, /, nin, nout, *, name=None, nargs=None, identity=None,
               call=None, reduce=None, accumulate=None, at=None, reduceat=None):
    self.__name__ = name or func.__name__
    self.__doc__ = func.__doc__
    self.__props = dict(func=func, nin=operator.index(nin), nout=operator.index(nout),
                        nargs=operator.index(nargs or nin), identity=identity,
                        call=call, reduce=reduce, accumulate=accumulate, at=at,
                        reduceat=reduceat)

  _func = property(lambda self: self.__props["func"])
  nin = property(lambda self: self.__props["nin"])
  nout = property(lambda self: self.__props["nout"])
  nargs = property(lambda self: self.__props["nargs"])
  identity = property(lambda self: self.__props["identity"])

  def _fast(self, method):
    """The fast implementation of `method` given to the constructor, or None."""
    return self.__props[method]

  def _key(self):
    return (self._func, self.__name__, self.identity, self.nin, self.nout, self.nargs)

  def __hash__(self):
    return hash(self._key())

  def __eq__(self, other):
    return isinstance(other, ufunc) and self._key() == other._key()

  def __repr__(self):
    return f"<jnp.ufunc '{self.__name__}'>"

  def __call__(self, *args, out=None, where=None):
    check_arraylike(self.__name__, *args)
    if out is not None:
      raise NotImplementedError(f"out argument of {self}")
    if where is not None:
      raise NotImplementedError(f"where argument of {self}")
    return (self._fast("call") or self._call_vectorized)(*args)

  @jit(static_argnames=("self",))
  def _call_vectorized(self, *args):
    """`func` applied to each element of the broadcast `args` (`jnp.vectorize`)."""
    return jnp.vectorize(self._func)(*args)

  def _check_binary(self, method):
    if self.nin != 2:
      raise ValueError(f"{method} only supported for binary ufuncs")
    if self.nout != 1:
      raise ValueError(f"{method} only supported for functions returning a single value")

  def _result_dtype(self, *args):
    """The dtype of `func` applied to elements of `args`."""
    return eval_shape(self._func, *map(_stand_in, args)).dtype

  # --- outer ----------------------------------------------------------------------------

  @jit(static_argnums=(0,))
  def outer(self, A, B, /):
    """`func(a, b)` for every pair: the result has shape `A.shape + B.shape`."""
    self._check_binary("outer")
    check_arraylike(f"{self.__name__}.outer", A, B)
    A, B = jnp.asarray(A), jnp.asarray(B)
    return self(lax.expand_dims(A, range(A.ndim, A.ndim + B.ndim)), B)

  # --- reduce ---------------------------------------------------------------------------

  @jit(static_argnames=("self", "axis", "dtype", "out", "keepdims"))
  def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False, initial=None,
             where=None):
    """Folds `func` over `axis` (None: all axes) as `np.ufunc.reduce`, from the
    first element, or from `initial` (else the identity) when there is one.

    `where` (boolean, broadcast to `a`) skips elements; it needs an identity
    or `initial`. An empty axis gives `initial` (or the identity), and is a
    ValueError when there is neither. A tuple of axes needs a fast path
    (`jnp.add.reduce` has one; folding does not support it).
    """
    check_arraylike(f"{self.__name__}.reduce", a)
    self._check_binary("reduce")
    if out is not None:
      raise NotImplementedError(f"out argument of {self.__name__}.reduce()")
    if initial is not None:
      check_arraylike(f"{self.__name__}.reduce", initial)
    if where is not None:
      check_arraylike(f"{self.__name__}.reduce", where)
      if self.identity is None and initial is None:
        raise ValueError(f"reduction operation {self.__name__!r} does not have an "
                         "identity, so to use a where mask one has to specify 'initial'.")
      if dtypes.dtype(where) != dtypes.bool_:
        raise ValueError(f"where argument must have dtype=bool; got dtype={dtypes.dtype(where)}")
    reduce = self._fast("reduce") or self._reduce_by_folding
    return reduce(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)

  def _reduce_by_folding(self, a, *, axis, dtype, keepdims, initial, where):
    arr = jnp.asarray(a)
    initial = self.identity if initial is None else initial
    dtype = self._result_dtype(arr, arr) if dtype is None else dtypes.canonicalize_dtype(dtype)
    if where is not None:
      where = jnp.broadcast_to(where, arr.shape)
    if isinstance(axis, tuple):
      raise NotImplementedError("tuple of axes")
    if axis is None:
      final_shape = (1,) * arr.ndim if keepdims else ()
      arr = jnp.ravel(arr)
      where = None if where is None else jnp.ravel(where)
      axis = 0
    else:
      axis = canonicalize_axis(axis, arr.ndim)
      final_shape = arr.shape[:axis] + (1,) * keepdims + arr.shape[axis + 1:]
    arr = jnp.moveaxis(arr, axis, 0)
    where = None if where is None else jnp.moveaxis(where, axis, 0)
    if arr.shape[0] == 0:  # JAX traces the loop body here, which fails to index the axis
      if initial is None:
        raise ValueError(f"zero-size array to reduction operation {self.__name__} "
                         "which has no identity")
      return lax.full(final_shape, initial, dtype)

    def body(i, result):
      step = self(result, arr[i].astype(dtype))
      return step if where is None else jnp.where(where[i], step, result)

    start, result = (1, arr[0]) if initial is None else (0, initial)
    result = jnp.broadcast_to(jnp.asarray(result).astype(dtype), arr.shape[1:])
    result = lax.fori_loop(start, arr.shape[0], body, result)
    return jnp.reshape(result, final_shape) if keepdims else result

  # --- accumulate -----------------------------------------------------------------------

  @jit(static_argnames=("self", "axis", "dtype"))
  def accumulate(self, a, axis=0, dtype=None, out=None):
    """The running fold of `func` along `axis`: `out[0] = a[0]`,
    `out[i] = func(out[i-1], a[i])`, as `np.ufunc.accumulate`."""
    self._check_binary("accumulate")
    if out is not None:
      raise NotImplementedError(f"out argument of {self.__name__}.accumulate()")
    accumulate = self._fast("accumulate") or self._accumulate_by_folding
    return accumulate(a, axis=axis, dtype=dtype)

  def _accumulate_by_folding(self, a, *, axis, dtype):
    check_arraylike(f"{self.__name__}.accumulate", a)
    arr = jnp.asarray(a)
    dtype = self._result_dtype(arr, arr) if dtype is None else dtypes.canonicalize_dtype(dtype)
    if axis is None or isinstance(axis, tuple):
      raise ValueError("accumulate does not allow multiple axes")
    axis = canonicalize_axis(axis, arr.ndim)
    if arr.size == 0:
      return lax.full(arr.shape, 0, dtype)
    arr = jnp.moveaxis(arr, axis, 0)

    def step(carry, _):  # as JAX: step 0 computes and discards func(arr[0], arr[0])
      i, x = carry
      y = jnp.where(i == 0, arr[0].astype(dtype), self(x, arr[i].astype(dtype)))
      return (i + 1, y), y

    _, result = lax.scan(step, (0, arr[0].astype(dtype)), None, length=arr.shape[0])
    return jnp.moveaxis(result, 0, axis)

  # --- at -------------------------------------------------------------------------------

  @jit(static_argnums=(0,), static_argnames=("inplace",))
  def at(self, a, indices, b=None, /, *, inplace=True):
    """A copy of `a` with `func` applied at `indices` (with values `b` for a
    binary ufunc); repeated indices apply it repeatedly, in order.

    JAX arrays are immutable: pass `inplace=False` to get the updated copy.
    The indices are traced (as in JAX), so they are arrays or integers.
    """
    if inplace:
      raise NotImplementedError(
          "Because JAX arrays are immutable, jnp.ufunc.at() cannot operate inplace "
          "like np.ufunc.at(). Instead, you can pass inplace=False and capture the "
          "result; e.g.\n>>> arr = jnp.add.at(arr, ind, val, inplace=False)")
    at = self._fast("at") or self._at_by_folding
    return at(a, indices) if b is None else at(a, indices, b)

  def _at_by_folding(self, a, indices, *args):
    check_arraylike(f"{self.__name__}.at", a, *args)
    dtype = self._result_dtype(a, *args)
    a = jnp.asarray(a).astype(dtype)
    args = tuple(jnp.asarray(x).astype(dtype) for x in args)
    indices = indices if isinstance(indices, tuple) else (indices,)
    if not indices:
      return a
    index_shapes = [np.shape(i) for i in indices if not isinstance(i, slice)]
    shape = np.broadcast_shapes(*index_shapes) if index_shapes else ()
    if not shape:
      return a.at[indices].set(self(a.at[indices].get(), *args))
    if math.prod(shape) == 0:  # no updates; JAX traces the loop body, which fails to index
      return a
    if args:
      value_shape = args[0].shape[len(shape):]
      args = (jnp.reshape(jnp.broadcast_to(args[0], shape + value_shape),
                          (math.prod(shape),) + value_shape),)
    indices = [i if isinstance(i, slice) else jnp.ravel(jnp.broadcast_to(i, shape))
               for i in indices]

    def step(carry, _):
      k, a = carry
      idx = tuple(i if isinstance(i, slice) else i[k] for i in indices)
      return (k + 1, a.at[idx].set(self(a.at[idx].get(), *(x[k] for x in args)))), None

    (_, a), _ = lax.scan(step, (0, a), None, length=math.prod(shape))
    return a

  # --- reduceat -------------------------------------------------------------------------

  @jit(static_argnames=("self", "axis", "dtype"))
  def reduceat(self, a, indices, axis=0, dtype=None, out=None):
    """Folds `func` over the segments `a[indices[j]:indices[j+1]]` along
    `axis` (the last to the end); where `indices[j] >= indices[j+1]` the
    result is `a[indices[j]]`, as `np.ufunc.reduceat`."""
    self._check_binary("reduceat")
    if out is not None:
      raise NotImplementedError(f"out argument of {self.__name__}.reduceat()")
    reduceat = self._fast("reduceat") or self._reduceat_by_folding
    return reduceat(a, indices, axis=axis, dtype=dtype)

  def _reduceat_by_folding(self, a, indices, *, axis, dtype):
    check_arraylike(f"{self.__name__}.reduceat", a, indices)
    a, indices = jnp.asarray(a), jnp.asarray(indices)
    if a.ndim == 0:
      raise ValueError(f"reduceat: a must have 1 or more dimension, got a.shape={a.shape}")
    if indices.ndim != 1:
      raise ValueError(f"reduceat: indices must be one-dimensional, got "
                       f"indices.shape={indices.shape}")
    if dtype is not None:
      a = a.astype(dtype)
    if axis is None or isinstance(axis, (tuple, list)):
      raise ValueError("reduceat requires a single integer axis.")
    axis = canonicalize_axis(axis, a.ndim)
    result = jnp.take(a, indices, axis=axis)
    bounds = lax.expand_dims(jnp.append(indices, a.shape[axis]),
                             [d for d in range(a.ndim) if d != axis])
    starts = lax.slice_in_dim(bounds, 0, bounds.shape[axis] - 1, axis=axis)
    ends = lax.slice_in_dim(bounds, 1, bounds.shape[axis], axis=axis)

    def body(i, result):  # element i joins each segment with start < i < end
      step = self(result, jnp.take(a, lax.expand_dims(i, (0,)), axis=axis))
      return jnp.where((i > starts) & (i < ends), step, result)

    return lax.fori_loop(0, a.shape[axis], body, result)


def frompyfunc(func, /, nin, nout, *, identity=None):
  """A `ufunc` from `func`, a function of `nin` scalars returning `nout` values."""
  return ufunc(func, nin, nout, identity=identity)
