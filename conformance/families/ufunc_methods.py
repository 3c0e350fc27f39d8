"""Cases for the methods of the jnp ufuncs (refimpl/numpy/ufunc_api.py, with
the fast paths of refimpl/numpy/ufuncs.py): `reduce`, `accumulate`, `outer`,
`at` and `reduceat` against NumPy's ufunc methods.

Floating reductions are compared with NumPy's computed in float64, as in the
jnp reductions family, except those that fold the function in the operand's
dtype one element at a time (subtract, maximum.accumulate), as NumPy does.
Integer operands are small, so that sums and products fit their dtype (JAX
accumulates `add.reduce` of int8 in int32 and `add.accumulate` in int8,
NumPy both in int64). The logical ufuncs are not given complex operands:
JAX converts those to bool by their real part.
"""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import refimpl.numpy as jnp
from refimpl import dtypes
from conformance import strategies as S
from conformance.cases import Case

BOOL = S.BOOL_DTYPES
INT = S.INT_DTYPES
FLOAT = S.FLOAT_DTYPES
REAL = BOOL + INT + FLOAT


def _wide(x):
  x = np.asarray(x)
  if dtypes.is_complex(x.dtype):
    return x.astype(np.complex128)
  return x.astype(np.float64) if dtypes.is_float(x.dtype) else x


def _small(dtype, shape):
  """Integer-valued arrays: sums and products of a few of them are exact."""
  return S.small_integer_arrays(dtype, shape, bound=2)


@st.composite
def _reduce_inputs(draw, dtype_list, single_axis=False, nonempty=False, small=False,
                   elements=None):
  """An array and reduce's `axis` (None, an int, or a tuple unless
  `single_axis`) and `keepdims`; with `nonempty`, no reduced axis is empty."""
  dtype = draw(st.sampled_from(dtype_list))
  shape = draw(S.shapes(min_side=1 if nonempty else 0, max_side=3))
  x = draw(_small(dtype, shape) if small and not dtypes.is_float(dtype)
           else S.arrays(dtype, shape, elements=elements))
  kwargs = {"axis": draw(S.axes(x.ndim, allow_tuple=not single_axis)),
            "keepdims": draw(st.booleans())}
  return (x,), kwargs


def _reduce(name):
  return lambda x, **kwargs: getattr(jnp, name).reduce(x, **kwargs)


def _np_reduce(name, wide=True):
  """np.<name>.reduce (computed wide unless not `wide`). NumPy folds subtract,
  which is not reorderable, over one axis only: over the flattened array
  when `axis` is None."""
  def expected(x, axis, keepdims):
    x = _wide(x) if wide else x
    with np.errstate(all="ignore"):
      if name == "subtract" and axis is None:
        return np.reshape(np.subtract.reduce(np.ravel(x)), (1,) * x.ndim if keepdims else ())
      return getattr(np, name).reduce(x, axis=axis, keepdims=keepdims)
  return expected


@st.composite
def _accumulate_inputs(draw, dtype_list, small=False):
  dtype = draw(st.sampled_from(dtype_list))
  shape = draw(S.shapes(min_dims=1, max_side=4))
  x = draw(_small(dtype, shape) if small and not dtypes.is_float(dtype) else S.arrays(dtype, shape))
  return (x,), {"axis": draw(st.integers(-x.ndim, x.ndim - 1))}


def _np_accumulate(name, wide=True):
  def expected(x, axis):
    with np.errstate(all="ignore"):
      return getattr(np, name).accumulate(_wide(x) if wide else x, axis=axis)
  return expected


@st.composite
def _outer_inputs(draw, dtype_list):
  dtype = draw(st.sampled_from(dtype_list))
  return tuple(draw(S.arrays(dtype, S.shapes(max_dims=2, max_side=3))) for _ in range(2)), {}


def _np_outer(name):
  def expected(a, b):
    with np.errstate(all="ignore"):
      return getattr(np, name).outer(_wide(a), _wide(b))
  return expected


@st.composite
def _at_inputs(draw, dtype_list, unary=False):
  """x, int32 indices (repeated, negative) into its first axis and, for a
  binary ufunc, values of the indices' shape (+ x's other axes) or a scalar."""
  dtype = draw(st.sampled_from(dtype_list))
  shape = draw(S.shapes(min_dims=1, min_side=1, max_side=3))
  x = draw(_small(dtype, shape))
  indices = draw(S.index_arrays(shape[0], draw(S.shapes(max_dims=1, max_side=4))))
  if unary:
    return (x, indices), {}
  values_shape = draw(st.sampled_from([(), indices.shape + shape[1:]]))
  return (x, indices, draw(_small(dtype, values_shape))), {}


def _at(name):
  return lambda x, indices, *values: getattr(jnp, name).at(x, indices, *values, inplace=False)


def _np_at(name):
  def expected(x, indices, *values):
    out = np.array(x)
    getattr(np, name).at(out, indices, *values)
    return out
  return expected


@st.composite
def _reduceat_inputs(draw, dtype_list):
  dtype = draw(st.sampled_from(dtype_list))
  shape = draw(S.shapes(min_dims=1, min_side=1, max_side=4))
  x = draw(_small(dtype, shape))
  axis = draw(st.integers(-x.ndim, x.ndim - 1))
  indices = draw(hnp.arrays(np.int32, draw(st.integers(0, 5)),
                            elements=st.integers(0, shape[axis] - 1)))
  return (x, indices), {"axis": axis}


def _reduceat(name):
  return lambda x, indices, axis: getattr(jnp, name).reduceat(x, indices, axis=axis)


def _np_reduceat(name):
  return lambda x, indices, axis: getattr(np, name).reduceat(x, indices, axis=axis)


_LOG_ELEMENTS = st.floats(-20, 20, width=32) | st.sampled_from([np.inf, -np.inf, np.nan])

CASES = [
    # reduce: the fast paths (one reduction primitive) and folding (subtract)
    Case("jnp.add.reduce", _reduce("add"),
         lambda: _reduce_inputs(REAL + S.COMPLEX_DTYPES, small=True), _np_reduce("add")),
    Case("jnp.multiply.reduce", _reduce("multiply"),
         lambda: _reduce_inputs(REAL, small=True), _np_reduce("multiply")),
    Case("jnp.maximum.reduce", _reduce("maximum"),
         lambda: _reduce_inputs(REAL, nonempty=True), _np_reduce("maximum")),
    Case("jnp.minimum.reduce", _reduce("minimum"),
         lambda: _reduce_inputs(REAL, nonempty=True), _np_reduce("minimum")),
    Case("jnp.logical_and.reduce", _reduce("logical_and"), lambda: _reduce_inputs(REAL),
         _np_reduce("logical_and")),
    Case("jnp.logical_or.reduce", _reduce("logical_or"), lambda: _reduce_inputs(REAL),
         _np_reduce("logical_or")),
    Case("jnp.logical_xor.reduce", _reduce("logical_xor"), lambda: _reduce_inputs(REAL),
         _np_reduce("logical_xor")),
    Case("jnp.bitwise_and.reduce", _reduce("bitwise_and"), lambda: _reduce_inputs(BOOL + INT),
         _np_reduce("bitwise_and")),
    Case("jnp.bitwise_or.reduce", _reduce("bitwise_or"), lambda: _reduce_inputs(BOOL + INT),
         _np_reduce("bitwise_or")),
    Case("jnp.bitwise_xor.reduce", _reduce("bitwise_xor"), lambda: _reduce_inputs(BOOL + INT),
         _np_reduce("bitwise_xor")),
    # computed in float32: the log of the sum loses a few ulps of its magnitude
    Case("jnp.logaddexp.reduce", _reduce("logaddexp"),
         lambda: _reduce_inputs([np.float32], elements=_LOG_ELEMENTS), _np_reduce("logaddexp"),
         rtol=5e-5, atol=5e-5),
    Case("jnp.subtract.reduce", _reduce("subtract"),
         lambda: _reduce_inputs(INT + FLOAT, single_axis=True, nonempty=True, small=True),
         _np_reduce("subtract", wide=False)),
    # accumulate: cumsum and cumprod, else folding
    Case("jnp.add.accumulate", lambda x, axis: jnp.add.accumulate(x, axis=axis),
         lambda: _accumulate_inputs(REAL, small=True), _np_accumulate("add")),
    Case("jnp.multiply.accumulate", lambda x, axis: jnp.multiply.accumulate(x, axis=axis),
         lambda: _accumulate_inputs(REAL, small=True), _np_accumulate("multiply")),
    Case("jnp.maximum.accumulate", lambda x, axis: jnp.maximum.accumulate(x, axis=axis),
         lambda: _accumulate_inputs(INT + FLOAT), _np_accumulate("maximum", wide=False)),
    # outer
    Case("jnp.add.outer", lambda a, b: jnp.add.outer(a, b), lambda: _outer_inputs(FLOAT),
         _np_outer("add")),
    Case("jnp.logical_and.outer", lambda a, b: jnp.logical_and.outer(a, b),
         lambda: _outer_inputs(REAL), _np_outer("logical_and")),
    # at: scatters for add, subtract and multiply; folding for the others
    Case("jnp.add.at", _at("add"), lambda: _at_inputs(REAL), _np_at("add")),
    Case("jnp.subtract.at", _at("subtract"), lambda: _at_inputs(INT + FLOAT),
         _np_at("subtract")),
    Case("jnp.multiply.at", _at("multiply"), lambda: _at_inputs(REAL), _np_at("multiply")),
    Case("jnp.maximum.at", _at("maximum"), lambda: _at_inputs(INT + FLOAT), _np_at("maximum")),
    Case("jnp.negative.at", _at("negative"), lambda: _at_inputs(S.SIGNED_DTYPES + FLOAT, True),
         _np_at("negative")),
    # reduceat folds
    Case("jnp.add.reduceat", _reduceat("add"), lambda: _reduceat_inputs(INT + FLOAT),
         _np_reduceat("add")),
]
