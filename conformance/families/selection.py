"""Cases for refimpl/numpy/selection.py: nonzero and its relatives, take/put,
compress, select, choose, index conversions, insert/delete.

Functions whose output size depends on the data run with a static `size`
(so they also run under jit), against NumPy's result padded as JAX pads it.
In-place NumPy functions (put, place, ...) are applied to a copy.
"""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import refimpl.numpy as jnp
from conformance import strategies as S
from conformance.cases import Case

ALL = S.ALL_DTYPES
NUMERIC = S.INT_DTYPES + S.FLOAT_DTYPES + S.COMPLEX_DTYPES


def _pad(values, size, fill=0):
  """`values` cut or padded with `fill` to `size` entries (JAX's size= rule)."""
  values = np.asarray(values)[:size]
  return np.concatenate([values, np.full(size - len(values), fill, values.dtype)])


# --- inputs ----------------------------------------------------------------------------------

@st.composite
def _nonzero_inputs(draw, min_dims=1):
  """An array and a static `size` from 0 to a little more than its size."""
  dtype = draw(st.sampled_from(ALL))
  x = draw(S.small_integer_arrays(dtype, S.shapes(min_dims=min_dims), bound=1))
  return (x,), {"size": draw(st.integers(0, x.size + 2))}


@st.composite
def _compress_inputs(draw):
  """A condition as long as the axis, an array, a static axis and size."""
  dtype = draw(st.sampled_from(ALL))
  x = draw(S.arrays(dtype, S.shapes(min_dims=1)))
  axis = draw(st.integers(-x.ndim, x.ndim - 1))
  condition = draw(hnp.arrays(np.bool_, x.shape[axis]))
  return (condition, x), {"axis": axis, "size": draw(st.integers(0, x.shape[axis]))}


@st.composite
def _select_inputs(draw):
  """Two conditions, two choices and a default, broadcasting together."""
  dtype = draw(st.sampled_from(ALL))
  shapes_ = draw(S.broadcastable_shapes(5))
  conditions = [draw(hnp.arrays(np.bool_, s)) for s in shapes_[:2]]
  values = [draw(S.arrays(dtype, s)) for s in shapes_[2:]]
  return tuple(conditions + values), {}


@st.composite
def _choose_inputs(draw):
  dtype = draw(st.sampled_from(ALL))
  shapes_ = draw(S.broadcastable_shapes(4))
  a = draw(hnp.arrays(np.int32, shapes_[0], elements=st.integers(-4, 6)))
  choices = [draw(S.arrays(dtype, s)) for s in shapes_[1:]]
  return (a, *choices), {"mode": draw(st.sampled_from(["wrap", "clip"]))}


@st.composite
def _take_inputs(draw, in_bounds=True, modes=(None,)):
  """An array with a nonempty axis, indices into it, static axis and mode."""
  dtype = draw(st.sampled_from(ALL))
  x = draw(S.arrays(dtype, S.shapes(min_dims=1, min_side=1)))
  axis = draw(st.integers(-x.ndim, x.ndim - 1))
  indices = draw(S.index_arrays(x.shape[axis], S.shapes(max_dims=2), in_bounds))
  return (x, indices), {"axis": axis, "mode": draw(st.sampled_from(modes))}


@st.composite
def _take_along_axis_inputs(draw):
  """Indices of the array's rank, each other dimension 1 or the array's."""
  dtype = draw(st.sampled_from(ALL))
  x = draw(S.arrays(dtype, S.shapes(min_dims=1, min_side=1)))
  axis = draw(st.integers(0, x.ndim - 1))
  shape = [draw(st.sampled_from([1, d])) for d in x.shape]
  shape[axis] = draw(st.integers(0, 3))
  indices = draw(S.index_arrays(x.shape[axis], tuple(shape)))
  return (x, indices), {"axis": axis - x.ndim * draw(st.booleans())}


@st.composite
def _put_inputs(draw):
  """Distinct flat indices (no position written twice), values to repeat."""
  dtype = draw(st.sampled_from(ALL))
  x = draw(S.arrays(dtype, S.shapes(min_dims=1, min_side=1)))
  positions = draw(st.lists(st.integers(0, x.size - 1), unique=True, min_size=1))
  indices = np.array(positions, np.int32) - x.size * draw(st.integers(0, 1))
  values = draw(S.arrays(dtype, draw(st.integers(1, 4))))
  return (x, indices, values), {"mode": draw(st.sampled_from(["clip", "wrap"]))}


@st.composite
def _put_along_axis_inputs(draw):
  """Indices along `axis` that are a prefix of one permutation (no position
  written twice), broadcast over the other axes, and scalar values."""
  dtype = draw(st.sampled_from(ALL))
  x = draw(S.arrays(dtype, S.shapes(min_dims=1, min_side=1)))
  axis = draw(st.integers(0, x.ndim - 1))
  order = np.array(draw(st.permutations(range(x.shape[axis]))), np.int32)
  order = order[:draw(st.integers(1, x.shape[axis]))]
  shape = [1] * x.ndim
  shape[axis] = len(order)
  indices = np.broadcast_to(order.reshape(shape), x.shape[:axis] + (len(order),)
                            + x.shape[axis + 1:]).copy()
  return (x, indices, draw(S.arrays(dtype, ()))), {"axis": axis}


@st.composite
def _place_inputs(draw):
  dtype = draw(st.sampled_from(ALL))
  x = draw(S.arrays(dtype, S.shapes()))
  mask = draw(hnp.arrays(np.bool_, x.shape))
  return (x, mask, draw(S.arrays(dtype, draw(st.integers(1, 4))))), {}


@st.composite
def _fill_diagonal_inputs(draw):
  dtype = draw(st.sampled_from(ALL))
  shape = draw(st.one_of(st.tuples(st.integers(1, 4), st.integers(1, 4)),
                         st.integers(1, 3).map(lambda n: (n,) * 3)))
  val_shape = draw(st.sampled_from([(), (1,), (2,), (2, 2)]))
  return (draw(S.arrays(dtype, shape)), draw(S.arrays(dtype, val_shape))), {}


@st.composite
def _ravel_multi_index_inputs(draw):
  dims = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
  shape = draw(S.shapes(max_dims=2))
  multi = tuple(draw(hnp.arrays(np.int32, shape, elements=st.integers(-9, 9))) for _ in dims)
  return multi, {"dims": dims, "mode": draw(st.sampled_from(["clip", "wrap"])),
                 "order": draw(st.sampled_from(["C", "F"]))}


@st.composite
def _unravel_index_inputs(draw):
  shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
  size = int(np.prod(shape))
  return (draw(hnp.arrays(np.int32, S.shapes(max_dims=2), elements=st.integers(0, size - 1))),
          ), {"shape": shape}


@st.composite
def _delete_inputs(draw):
  """An array, and a static int, slice or tuple of indices along a static axis."""
  dtype = draw(st.sampled_from(ALL))
  x = draw(S.arrays(dtype, S.shapes(min_dims=1, min_side=1)))
  axis = draw(st.integers(-x.ndim, x.ndim - 1))
  n = x.shape[axis]
  obj = draw(st.one_of(
      st.integers(-n, n - 1),
      st.builds(slice, st.none() | st.integers(-n, n), st.none() | st.integers(-n, n),
                st.none() | st.sampled_from([1, 2, -1])),
      st.lists(st.integers(-n, n - 1), max_size=4).map(tuple)))
  return (x,), {"obj": obj, "axis": axis}


@st.composite
def _insert_inputs(draw):
  """An array, a static position and values along a static axis."""
  dtype = draw(st.sampled_from(ALL))
  x = draw(S.arrays(dtype, S.shapes(min_dims=1)))
  axis = draw(st.integers(-x.ndim, x.ndim - 1))
  index = draw(st.integers(-x.shape[axis], x.shape[axis]))
  return (x, draw(S.arrays(dtype, ()))), {"obj": index, "axis": axis}


# --- NumPy twins -----------------------------------------------------------------------------

def _np_nonzero(x, size):
  return tuple(_pad(i, size) for i in np.nonzero(x))


def _np_compress(condition, x, axis, size):
  """NumPy's compress, then padded with zeros (JAX's fill_value) along `axis`."""
  selected = np.moveaxis(np.compress(condition, x, axis=axis), axis, 0)
  padded = np.zeros((size,) + selected.shape[1:], x.dtype)
  padded[:min(size, len(selected))] = selected[:size]
  return np.moveaxis(padded, 0, axis)


def _in_copy(np_fn):
  """A NumPy function that changes its first argument in place, applied to a copy."""
  def twin(x, *args, **kwargs):
    x = np.array(x)
    np_fn(x, *args, **kwargs)
    return x
  return twin


CASES = [
    Case("jnp.nonzero", lambda x, size: jnp.nonzero(x, size=size), _nonzero_inputs,
         _np_nonzero),
    Case("jnp.where (one argument)", lambda x, size: jnp.where(x, size=size),
         _nonzero_inputs, _np_nonzero),
    Case("jnp.flatnonzero", lambda x, size: jnp.flatnonzero(x, size=size, fill_value=-1),
         lambda: _nonzero_inputs(min_dims=0),
         lambda x, size: _pad(np.flatnonzero(x), size, -1 if x.size else 0)),
    Case("jnp.argwhere", lambda x, size: jnp.argwhere(x, size=size), _nonzero_inputs,
         lambda x, size: np.stack(_np_nonzero(x, size), -1)),
    Case("jnp.compress", lambda c, x, axis, size: jnp.compress(c, x, axis, size=size),
         _compress_inputs, _np_compress),
    Case("jnp.select", lambda c0, c1, x0, x1, default: jnp.select([c0, c1], [x0, x1], default),
         _select_inputs,
         lambda c0, c1, x0, x1, default: np.select([c0, c1], [x0, x1], default)),
    Case("jnp.choose", lambda a, *choices, mode: jnp.choose(a, choices, mode=mode),
         _choose_inputs, lambda a, *choices, mode: np.choose(a, choices, mode=mode)),
    Case("jnp.take", lambda x, i, axis, mode: jnp.take(x, i, axis, mode=mode),
         _take_inputs, lambda x, i, axis, mode: np.take(x, i, axis)),
    Case("jnp.take (clip, wrap)", lambda x, i, axis, mode: jnp.take(x, i, axis, mode=mode),
         lambda: _take_inputs(False, ("clip", "wrap")),
         lambda x, i, axis, mode: np.take(x, i, axis, mode=mode)),
    Case("jnp.take (out of bounds)", lambda x, i, axis, mode: jnp.take(x, i, axis, mode=mode),
         lambda: _take_inputs(False), divergence="take_out_of_bounds_fills"),
    Case("jnp.take_along_axis", lambda x, i, axis: jnp.take_along_axis(x, i, axis),
         _take_along_axis_inputs, np.take_along_axis),
    Case("jnp.put", lambda x, i, v, mode: jnp.put(x, i, v, mode, inplace=False),
         _put_inputs, _in_copy(np.put)),
    Case("jnp.put_along_axis",
         lambda x, i, v, axis: jnp.put_along_axis(x, i, v, axis, inplace=False),
         _put_along_axis_inputs, _in_copy(np.put_along_axis)),
    Case("jnp.place", lambda x, mask, v: jnp.place(x, mask, v, inplace=False), _place_inputs,
         _in_copy(np.place)),
    Case("jnp.fill_diagonal", lambda x, v: jnp.fill_diagonal(x, v, inplace=False),
         _fill_diagonal_inputs, _in_copy(np.fill_diagonal)),
    Case("jnp.ravel_multi_index", lambda *m, dims, mode, order: jnp.ravel_multi_index(
        m, dims, mode, order), _ravel_multi_index_inputs,
         lambda *m, dims, mode, order: np.ravel_multi_index(m, dims, mode, order)),
    Case("jnp.unravel_index", jnp.unravel_index, _unravel_index_inputs, np.unravel_index),
    Case("jnp.delete", lambda x, obj, axis: jnp.delete(
        x, np.array(obj, np.int32) if isinstance(obj, tuple) else obj, axis),
         _delete_inputs, lambda x, obj, axis: np.delete(
             x, np.array(obj, int) if isinstance(obj, tuple) else obj, axis)),
    Case("jnp.insert", lambda x, v, obj, axis: jnp.insert(x, obj, v, axis), _insert_inputs,
         lambda x, v, obj, axis: np.insert(x, obj, v, axis)),
]
