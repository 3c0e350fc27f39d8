"""Cases for the jnp creation functions (refimpl/numpy/creation.py) and the
triangle/diagonal helpers of refimpl/numpy/manipulation.py (tril, triu, diag,
diagflat, *_indices).

Sizes, dtypes and other static arguments are keyword arguments of a case;
values that may be traced (fill values, linspace's endpoints, arrays to
convert or broadcast) are its positional arguments. Without `dtype`, JAX
picks 32-bit defaults where NumPy picks 64-bit ones: the values agree, and
the dtypes are checked in tests/test_conformance_dtypes.py.
"""

import numpy as np
from hypothesis import strategies as st

import refimpl.numpy as jnp
from refimpl import dtypes
from conformance import strategies as S
from conformance.cases import Case

ALL = S.ALL_DTYPES
INT = S.INT_DTYPES
FLOAT = S.FLOAT_DTYPES
DTYPE_OR_NONE = st.none() | st.sampled_from(ALL)
SIZE = st.integers(0, 4)


def _kwargs(**strategies):
  return st.fixed_dictionaries(strategies)


def _static(**strategies):
  """Inputs with no positional arguments: everything is static."""
  return lambda: st.tuples(st.just(()), _kwargs(**strategies))


@st.composite
def _array_and(draw, kwargs_for=lambda shape: st.just({}), dtype_list=ALL, min_dims=0,
               max_dims=3):
  x = draw(S.arrays(draw(st.sampled_from(dtype_list)), S.shapes(min_dims, max_dims)))
  return (x,), draw(kwargs_for(x.shape))


# --- filled arrays ----------------------------------------------------------------------------

@st.composite
def _full_inputs(draw):
  """A fill value (a scalar, or an array that broadcasts to the shape) and a
  dtype: None or the value's own (other casts are astype's cases)."""
  dtype = draw(st.sampled_from(ALL))
  shape = draw(S.shapes())
  value_shape = draw(st.sampled_from([(), shape[len(shape) // 2:], tuple(1 for _ in shape)]))
  return ((draw(S.arrays(dtype, value_shape)),),
          {"shape": shape, "dtype": draw(st.sampled_from([None, dtype]))})


@st.composite
def _like_inputs(draw, with_value=False):
  dtype = draw(st.sampled_from(ALL))
  x = draw(S.arrays(dtype, S.shapes()))
  kwargs = {"shape": draw(st.none() | S.shapes())}
  if not with_value:
    kwargs["dtype"] = draw(DTYPE_OR_NONE)
    return (x,), kwargs
  kwargs["dtype"] = draw(st.sampled_from([None, dtype]))
  return (x, draw(S.arrays(dtype, ()))), kwargs


# --- ranges -------------------------------------------------------------------------------------

# Dyadic values are exact in every float type: NumPy's float32 arange uses a
# float32 recurrence that rounds differently from JAX's float64 one.
_RANGE_VALUES = st.integers(-6, 6) | st.sampled_from([-2.5, -0.75, 0.0, 0.25, 1.5, 3.5])
_STEPS = st.sampled_from([1, 2, 3, -1, -2, 0.5, -0.25, 1.5])


@st.composite
def _arange_kwargs(draw):
  """`bounds`: (stop,), (start, stop) or (start, stop, step)."""
  return (), {"bounds": tuple(draw(st.lists(_RANGE_VALUES, min_size=1, max_size=2))) + tuple(
      draw(st.lists(_STEPS, max_size=1)))}


@st.composite
def _space_inputs(draw, positive=False):
  """(start, stop) as float32 arrays that broadcast together, and num,
  endpoint, axis. Endpoints are bounded: values near zero have an absolute
  error of a few ulp of the endpoints (start * (1 - t) + stop * t). Integer
  dtypes are left out: they floor that float32 value, which can be one below
  NumPy's float64 one at an exact integer."""
  shape_start, shape_stop = draw(S.broadcastable_shapes(2, max_dims=2))
  low = 0.5 if positive else -10
  elements = st.floats(low, 10, width=32)
  start, stop = (draw(S.arrays(np.float32, shape, elements=elements))
                 for shape in (shape_start, shape_stop))
  if positive and draw(st.booleans()):
    start, stop = -start, -stop  # geomspace: both negative works too
  rank = len(np.broadcast_shapes(start.shape, stop.shape))
  return (start, stop), {"num": draw(st.integers(0, 6)), "endpoint": draw(st.booleans()),
                         "axis": draw(st.integers(-rank - 1, rank))}


# --- eye, tri, grids, broadcasting ---------------------------------------------------------------

@st.composite
def _meshgrid_inputs(draw):
  dtype = draw(st.sampled_from(ALL))
  count = draw(st.integers(0, 3))
  arrays_ = tuple(draw(S.arrays(dtype, (draw(SIZE),))) for _ in range(count))
  return arrays_, {"sparse": draw(st.booleans()), "indexing": draw(st.sampled_from(["xy", "ij"]))}


@st.composite
def _broadcast_to_inputs(draw):
  x = draw(S.arrays(draw(st.sampled_from(ALL)), S.shapes()))
  lead = draw(S.shapes(max_dims=2))
  shape = tuple(draw(SIZE) if d == 1 else d for d in x.shape)
  return (x,), {"shape": lead + shape}


@st.composite
def _broadcast_arrays_inputs(draw):
  dtype = draw(st.sampled_from(ALL))
  shapes = draw(S.broadcastable_shapes(draw(st.integers(1, 3))))
  return tuple(draw(S.arrays(dtype, s)) for s in shapes), {}


@st.composite
def _array_inputs(draw):
  """An array and a target dtype NumPy converts as convert_element_type does:
  not inexact to integer, where JAX saturates (see `astype`'s cases), nor
  complex to bool, which convert_element_type decides by the real part (an
  eager NumPy operand, as in JAX, is converted by NumPy: 1j is True eagerly,
  False under jit)."""
  x = draw(S.arrays(draw(st.sampled_from(ALL)), S.shapes()))
  targets = [None] + [d for d in ALL
                      if not (dtypes.is_inexact(x.dtype) and dtypes.is_integer(d))
                      and not (dtypes.is_complex(x.dtype) and np.dtype(d) == np.bool_)]
  return (x,), {"dtype": draw(st.sampled_from(targets)), "ndmin": draw(st.integers(0, 3))}


# --- triangles and diagonals -

_K = st.integers(-4, 4)


@st.composite
def _square_inputs(draw):
  n, ndim = draw(SIZE), draw(st.integers(2, 3))
  return (draw(S.arrays(draw(st.sampled_from(ALL)), (n,) * ndim)),), {}


def _triangle_index_kwargs():
  return _static(n=SIZE, k=_K, m=st.none() | SIZE)


CASES = [
    Case("jnp.zeros", jnp.zeros, _static(shape=S.shapes(), dtype=DTYPE_OR_NONE),
         np.zeros),
    Case("jnp.ones", jnp.ones, _static(shape=S.shapes(), dtype=DTYPE_OR_NONE),
         np.ones),
    # NumPy leaves `empty` uninitialized (any values conform); JAX's are zeros.
    Case("jnp.empty", jnp.empty, _static(shape=S.shapes(), dtype=DTYPE_OR_NONE),
         np.zeros),
    Case("jnp.full", lambda value, shape, dtype: jnp.full(shape, value, dtype), _full_inputs,
         lambda value, shape, dtype: np.full(shape, value, dtype)),
    Case("jnp.zeros_like", jnp.zeros_like, _like_inputs, np.zeros_like),
    Case("jnp.ones_like", jnp.ones_like, _like_inputs, np.ones_like),
    Case("jnp.empty_like", jnp.empty_like, _like_inputs, np.zeros_like),
    Case("jnp.full_like", jnp.full_like, lambda: _like_inputs(with_value=True),
         np.full_like),
    Case("jnp.arange", lambda bounds: jnp.arange(*bounds), _arange_kwargs,
         lambda bounds: np.arange(*bounds)),
    Case("jnp.arange[dtype]", jnp.arange, _static(
        start=st.integers(0, 6), stop=st.integers(0, 6), step=st.sampled_from([1, 2, -1]),
        dtype=st.sampled_from(INT + FLOAT)), np.arange),
    Case("jnp.linspace", jnp.linspace, _space_inputs, np.linspace,
         atol=1e-5),
    Case("jnp.linspace[retstep]", lambda start, stop, num, endpoint, axis: jnp.linspace(
        start, stop, num, endpoint, retstep=True, axis=axis), _space_inputs,
         lambda start, stop, num, endpoint, axis: np.linspace(
             start, stop, num, endpoint, retstep=True, axis=axis),
         atol=1e-5),
    Case("jnp.logspace", jnp.logspace, _space_inputs, np.logspace,
         rtol=1e-5, atol=1e-5),
    Case("jnp.geomspace", jnp.geomspace, lambda: _space_inputs(positive=True), np.geomspace,
         rtol=1e-5, atol=1e-5),
    Case("jnp.eye", jnp.eye, _static(N=SIZE, M=st.none() | SIZE, k=_K, dtype=DTYPE_OR_NONE),
         np.eye),
    Case("jnp.identity", jnp.identity, _static(n=SIZE, dtype=DTYPE_OR_NONE), np.identity),
    Case("jnp.tri", jnp.tri, _static(N=SIZE, M=st.none() | SIZE, k=_K, dtype=DTYPE_OR_NONE),
         np.tri),
    Case("jnp.meshgrid", lambda *xs, sparse, indexing: jnp.meshgrid(
        *xs, sparse=sparse, indexing=indexing), _meshgrid_inputs,
         lambda *xs, sparse, indexing: np.meshgrid(*xs, sparse=sparse, indexing=indexing)),
    Case("jnp.indices", jnp.indices, _static(dimensions=S.shapes(), sparse=st.booleans()),
         np.indices),
    Case("jnp.fromfunction", lambda shape: jnp.fromfunction(lambda i, *rest: i * 2 - sum(
        rest), shape, dtype=np.int32), _static(shape=S.shapes(min_dims=1)),
         lambda shape: np.fromfunction(lambda i, *rest: i * 2 - sum(rest), shape, dtype=int)),
    Case("jnp.broadcast_to", jnp.broadcast_to, _broadcast_to_inputs, np.broadcast_to),
    Case("jnp.broadcast_arrays", jnp.broadcast_arrays, _broadcast_arrays_inputs,
         np.broadcast_arrays),
    Case("jnp.array", jnp.array, _array_inputs,
         lambda x, dtype, ndmin: np.array(x, dtype, ndmin=ndmin)),
    Case("jnp.asarray", jnp.asarray, lambda: _array_and(lambda shape: _kwargs(
        dtype=st.none())), np.asarray),
    Case("jnp.copy", jnp.copy, _array_and, np.copy),
    Case("jnp.tril", jnp.tril, lambda: _array_and(lambda shape: _kwargs(k=_K), min_dims=2),
         np.tril),
    Case("jnp.triu", jnp.triu, lambda: _array_and(lambda shape: _kwargs(k=_K), min_dims=2),
         np.triu),
    Case("jnp.diag", jnp.diag, lambda: _array_and(lambda shape: _kwargs(k=_K), min_dims=1,
                                                  max_dims=2), np.diag),
    Case("jnp.diagflat", jnp.diagflat, lambda: _array_and(lambda shape: _kwargs(k=_K)),
         np.diagflat),
    Case("jnp.tril_indices", jnp.tril_indices, _triangle_index_kwargs(), np.tril_indices),
    Case("jnp.triu_indices", jnp.triu_indices, _triangle_index_kwargs(), np.triu_indices),
    Case("jnp.tril_indices_from", jnp.tril_indices_from, lambda: _array_and(
        lambda shape: _kwargs(k=_K), min_dims=2, max_dims=2), np.tril_indices_from),
    Case("jnp.triu_indices_from", jnp.triu_indices_from, lambda: _array_and(
        lambda shape: _kwargs(k=_K), min_dims=2, max_dims=2), np.triu_indices_from),
    Case("jnp.diag_indices", jnp.diag_indices, _static(n=SIZE, ndim=st.integers(0, 3)),
         np.diag_indices),
    Case("jnp.diag_indices_from", jnp.diag_indices_from, _square_inputs,
         np.diag_indices_from),
]
