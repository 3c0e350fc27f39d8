"""Cases for the shape primitives (refimpl/lax/shapes.py) and the jnp
manipulation functions built on them (refimpl/numpy/manipulation.py).

Shape functions move elements without computing new values, so results must
equal NumPy's exactly. Static arguments (shapes, axes, padding) are drawn to
fit each generated operand, negative axes included. Where lax has no NumPy
twin the expected value is a NumPy formula written independently of the
reference rule (e.g. `pad` places each element at `low + i * (interior + 1)`).
`jnp.tril`/`triu`/`diag`/`*_indices` are in `creation.py`.
"""

import math

import numpy as np
from hypothesis import strategies as st

import refimpl.numpy as jnp
from refimpl import lax
from conformance import strategies as S
from conformance.autodiff import ADCase
from conformance.cases import Case

ALL = S.ALL_DTYPES
NUMERIC = S.INT_DTYPES + S.FLOAT_DTYPES + S.COMPLEX_DTYPES
SIDES = st.integers(0, 3)


def _with(kwargs_for, min_dims=0, max_dims=3, dtype_list=ALL):
  """Inputs: one array of rank in [min_dims, max_dims] and kwargs fitted to its shape."""
  return lambda: S.array_and_kwargs(kwargs_for, dtype_list,
                                    shape=S.shapes(min_dims=min_dims, max_dims=max_dims))


def _kwargs(**strategies):
  return st.fixed_dictionaries(strategies)


def _nothing(shape):
  return st.just({})


@st.composite
def _new_shape(draw, size, max_dims=4):
  """A shape of `size` elements: its prime factors dealt out to up to
  `max_dims` dimensions, with some 1s (and a 0 for empty arrays)."""
  factors, n, p = [], size, 2
  while size and n > 1:
    while n % p == 0:
      factors.append(p)
      n //= p
    p += 1
  ndim = draw(st.integers(1 if size == 0 else 0, max_dims))
  if ndim == 0 and factors:
    ndim = 1
  dims = [1] * ndim
  for f in factors:
    dims[draw(st.integers(0, ndim - 1))] *= f
  if size == 0:
    dims[draw(st.integers(0, ndim - 1))] = 0
    dims = [d if d == 0 else draw(SIDES) for d in dims]
  return tuple(dims)


def _permutation(ndim):
  return st.permutations(range(ndim)).map(tuple)


def _size_one_axes(shape, negative=True):
  """Distinct axes of size 1 (possibly none), each maybe written negatively."""
  ones = [i for i, d in enumerate(shape) if d == 1]
  return st.lists(st.sampled_from(ones), unique=True).flatmap(
      lambda axes: st.tuples(*[st.sampled_from([a, a - len(shape)] if negative else [a])
                               for a in axes])) if ones else st.just(())


def _new_axes(ndim, min_size=0, max_size=2):
  """Distinct positions of new axes in a result of rank ndim + len(positions)."""
  return st.integers(min_size, max_size).flatmap(
      lambda k: st.just(()) if ndim + k == 0 else st.lists(
          st.integers(0, ndim + k - 1), min_size=k, max_size=k, unique=True)
      .flatmap(lambda axes: st.tuples(*[st.sampled_from([a, a - ndim - k]) for a in axes])))


# --- lax: NumPy formulas -----------------------------------------------------------------------

def _broadcast_in_dim(x, shape, broadcast_dimensions):
  missing = tuple(d for d in range(len(shape)) if d not in broadcast_dimensions)
  return np.broadcast_to(np.expand_dims(x, missing), shape)


def _pad(x, padding_value, padding_config):
  """Each element i of an axis lands at low + i * (interior + 1); the rest is
  padding_value, and positions outside [0, size) are cut off."""
  shape = [low + high + d + max(d - 1, 0) * interior
           for d, (low, high, interior) in zip(x.shape, padding_config)]
  out = np.full(shape, padding_value, x.dtype)
  sources, targets = [], []
  for d, size, (low, _, interior) in zip(x.shape, shape, padding_config):
    position = low + np.arange(d) * (interior + 1)
    inside = (position >= 0) & (position < size)
    sources.append(np.arange(d)[inside])
    targets.append(position[inside])
  out[np.ix_(*targets)] = x[np.ix_(*sources)]
  return out


def _collapse(x, start_dimension, stop_dimension):
  stop = x.ndim if stop_dimension is None else stop_dimension
  merged = math.prod(x.shape[start_dimension:stop])
  return x.reshape(x.shape[:start_dimension] + (merged,) + x.shape[stop:])


def _split(x, sizes, axis):
  return np.split(x, np.cumsum(sizes)[:-1], axis=axis)


@st.composite
def _broadcast_in_dim_kwargs(draw, shape):
  rank = draw(st.integers(len(shape), len(shape) + 2))
  dims = tuple(sorted(draw(st.lists(st.integers(0, rank - 1), min_size=len(shape),
                                    max_size=len(shape), unique=True)))) if rank else ()
  out = [draw(SIDES) for _ in range(rank)]
  for d, size in zip(dims, shape):
    if size != 1:
      out[d] = size
  return {"shape": tuple(out), "broadcast_dimensions": dims}


@st.composite
def _reshape_kwargs(draw, shape):
  dims = draw(st.none() | _permutation(len(shape)))
  return {"new_sizes": draw(_new_shape(math.prod(shape))), "dimensions": dims}


@st.composite
def _collapse_kwargs(draw, shape):
  start = draw(st.integers(0, len(shape)))
  stop = draw(st.none() | st.integers(start, len(shape)))
  return {"start_dimension": start, "stop_dimension": stop}


@st.composite
def _pad_config(draw, shape):
  """(low, high, interior) per dimension; low and high negative too (cropping)."""
  config = []
  for d in shape:
    interior = draw(st.integers(0, 2))
    inner = d + max(d - 1, 0) * interior
    low = draw(st.integers(-min(3, inner), 3))
    high = draw(st.integers(-min(3, inner + low), 3)) if inner + low >= 0 else 0
    config.append((low, high, interior))
  return tuple(config)


@st.composite
def _pad_inputs(draw):
  dtype = draw(st.sampled_from(ALL))
  x = draw(S.arrays(dtype, S.shapes()))
  value = draw(S.arrays(dtype, ()))
  return (x, value), {"padding_config": draw(_pad_config(x.shape))}


@st.composite
def _joinable(draw, count=st.integers(1, 3), join_axis=lambda ndim: 0, min_dims=1,
              max_dims=3, dtype_list=ALL, pass_axis=True):
  """Arrays of one dtype and rank whose shapes agree except along the axis
  `join_axis(ndim)` (None: all equal), with that axis in kwargs as `axis`
  (if `pass_axis`)."""
  dtype = draw(st.sampled_from(dtype_list))
  shape = list(draw(S.shapes(min_dims=min_dims, max_dims=max_dims)))
  axis = join_axis(len(shape))
  arrays_ = []
  for _ in range(draw(count)):
    if axis is not None:
      shape[axis] = draw(SIDES)
    arrays_.append(draw(S.arrays(dtype, tuple(shape))))
  return tuple(arrays_), ({"axis": axis} if axis is not None and pass_axis else {})


@st.composite
def _concatenate_inputs(draw):
  ndim = draw(st.integers(1, 3))
  axis = draw(st.integers(0, ndim - 1))
  arrays_, _ = draw(_joinable(join_axis=lambda _: axis, min_dims=ndim, max_dims=ndim))
  return arrays_, {"dimension": axis}


@st.composite
def _split_kwargs(draw, shape):
  axis = draw(st.integers(0, len(shape) - 1))
  sizes, rest = [], shape[axis]
  for _ in range(draw(st.integers(0, 3))):
    sizes.append(draw(st.integers(0, rest)))
    rest -= sizes[-1]
  return {"sizes": tuple(sizes + [rest]), "axis": axis}


@st.composite
def _stack_inputs(draw):
  """One to three arrays of one shape and dtype, and a new axis in [-ndim - 1, ndim]."""
  arrays_, _ = draw(_joinable(join_axis=lambda _: None, min_dims=0))
  ndim = arrays_[0].ndim
  return arrays_, {"axis": draw(st.integers(-ndim - 1, ndim))}


@st.composite
def _iota_kwargs(draw):
  dtype = draw(st.sampled_from(S.INT_DTYPES + S.FLOAT_DTYPES + S.COMPLEX_DTYPES))
  shape = draw(S.shapes(min_dims=1))
  return (), {"dtype": dtype, "shape": shape, "dimension": draw(
      st.integers(-len(shape), len(shape) - 1))}


@st.composite
def _full_inputs(draw):
  """A scalar fill value (traced) and a shape; dtype None or the value's own."""
  dtype = draw(st.sampled_from(ALL))
  value = draw(S.arrays(dtype, ()))
  return (value,), {"shape": draw(S.shapes()), "dtype": draw(st.sampled_from([None, dtype]))}


@st.composite
def _full_like_inputs(draw):
  dtype = draw(st.sampled_from(ALL))
  x = draw(S.arrays(dtype, S.shapes()))
  value = draw(S.arrays(dtype, ()))
  return (x, value), {"shape": draw(st.none() | S.shapes())}


def _iota(dtype, shape, dimension):
  return np.indices(shape)[dimension].astype(dtype)


LAX_CASES = [
    Case("lax.broadcast_in_dim", lax.broadcast_in_dim, _with(_broadcast_in_dim_kwargs),
         _broadcast_in_dim),
    Case("lax.broadcast", lax.broadcast,
         _with(lambda shape: _kwargs(sizes=S.shapes(max_dims=2))),
         lambda x, sizes: np.broadcast_to(x, tuple(sizes) + x.shape)),
    Case("lax.broadcast_to_rank", lax.broadcast_to_rank,
         _with(lambda shape: _kwargs(rank=st.integers(len(shape), len(shape) + 2))),
         lambda x, rank: x.reshape((1,) * (rank - x.ndim) + x.shape)),
    Case("lax.reshape", lax.reshape, _with(_reshape_kwargs),
         lambda x, new_sizes, dimensions: np.reshape(
             x if dimensions is None else np.transpose(x, dimensions), new_sizes)),
    Case("lax.collapse", lax.collapse, _with(_collapse_kwargs), _collapse),
    Case("lax.transpose", lax.transpose,
         _with(lambda shape: _kwargs(permutation=_permutation(len(shape)))),
         lambda x, permutation: np.transpose(x, permutation)),
    Case("lax.squeeze", lax.squeeze, _with(lambda shape: _kwargs(dimensions=_size_one_axes(shape))),
         lambda x, dimensions: np.squeeze(x, axis=dimensions)),
    Case("lax.expand_dims", lax.expand_dims,
         _with(lambda shape: _kwargs(dimensions=_new_axes(len(shape)))),
         lambda x, dimensions: np.expand_dims(x, dimensions)),
    Case("lax.rev", lax.rev, _with(lambda shape: _kwargs(dimensions=st.lists(
        st.integers(0, len(shape) - 1), unique=True, max_size=len(shape)) if shape else st.just(
        []))), lambda x, dimensions: np.flip(x, axis=tuple(dimensions))),
    Case("lax.pad", lax.pad, _pad_inputs, _pad),
    Case("lax.concatenate", lambda *xs, dimension: lax.concatenate(xs, dimension),
         _concatenate_inputs, lambda *xs, dimension: np.concatenate(xs, dimension)),
    Case("lax.split", lax.split, _with(_split_kwargs, min_dims=1), _split),
    Case("lax.stack", lambda *xs, axis: lax.stack(xs, axis), _stack_inputs,
         lambda *xs, axis: np.stack(xs, axis)),
    Case("lax.unstack", lax.unstack,
         _with(lambda shape: _kwargs(axis=st.integers(-len(shape), len(shape) - 1)), min_dims=1),
         lambda x, axis: tuple(np.moveaxis(x, axis, 0))),
    Case("lax.iota", lax.iota, lambda: st.tuples(st.just(()), _kwargs(
        dtype=st.sampled_from(NUMERIC), size=st.integers(0, 6))),
         lambda dtype, size: np.arange(size).astype(dtype)),
    Case("lax.broadcasted_iota", lax.broadcasted_iota, _iota_kwargs, _iota),
    Case("lax.full", lambda value, shape, dtype: lax.full(shape, value, dtype), _full_inputs,
         lambda value, shape, dtype: np.full(shape, value, dtype)),
    Case("lax.full_like", lambda x, value, shape: lax.full_like(x, value, shape=shape),
         _full_like_inputs, lambda x, value, shape: np.full_like(x, value, shape=shape)),
]


# --- jnp -----------------------------------------------------------------------------------------

def _axis(ndim):
  return st.integers(-ndim, ndim - 1)


@st.composite
def _reshape_jnp_kwargs(draw, shape):
  new_shape = list(draw(_new_shape(math.prod(shape))))
  if new_shape and math.prod(shape) and draw(st.booleans()):
    new_shape[draw(st.integers(0, len(new_shape) - 1))] = -1
  return {"shape": tuple(new_shape), "order": draw(st.sampled_from(["C", "F"]))}


@st.composite
def _moveaxis_kwargs(draw, shape):
  ndim = len(shape)
  if not ndim:
    return {"source": (), "destination": ()}
  k = draw(st.integers(0, ndim))
  source = draw(st.lists(st.integers(0, ndim - 1), min_size=k, max_size=k, unique=True))
  destination = draw(st.lists(st.integers(0, ndim - 1), min_size=k, max_size=k, unique=True))
  if k == 1 and draw(st.booleans()):
    return {"source": source[0], "destination": destination[0] - ndim}
  return {"source": tuple(source), "destination": tuple(destination)}


@st.composite
def _split_jnp_kwargs(draw, shape, axis=None, divisible_only=False):
  """indices_or_sections: a number of sections (dividing the axis unless
  array_split) or a sorted list of split points in [0, length] (JAX's
  contract: its jnp.split raises for unsorted or out-of-range points, which
  NumPy accepts). `axis` is drawn, and passed, unless given."""
  kwargs = {}
  if axis is None:
    axis = kwargs["axis"] = draw(_axis(len(shape)))
  length = shape[axis]
  if draw(st.booleans()):
    kwargs["indices_or_sections"] = draw(st.sampled_from(
        [k for k in range(1, 5) if length % k == 0] if divisible_only else [1, 2, 3, 4]))
  else:
    kwargs["indices_or_sections"] = sorted(draw(st.lists(st.integers(0, length), max_size=3)))
  return kwargs


@st.composite
def _pad_jnp_kwargs(draw, shape, dtype_kind):
  mode = draw(st.sampled_from(["constant", "edge", "wrap", "reflect", "symmetric"]))
  width = st.integers(0, 5) if mode == "constant" or all(shape) else st.just(0)
  pair = st.tuples(width, width)
  # One pair per axis, or one pair or one width for all (NumPy's broadcasting).
  forms = [width, pair] + ([st.tuples(*[pair if d or mode == "constant" else
                                        st.just((0, 0)) for d in shape])] if shape else [])
  kwargs = {"pad_width": draw(st.one_of(forms)), "mode": mode}
  if mode == "constant" and draw(st.booleans()):
    kwargs["constant_values"] = draw(st.integers(0, 1))
  if mode in ("reflect", "symmetric") and dtype_kind in "iufc":
    kwargs["reflect_type"] = draw(st.sampled_from(["even", "odd"]))
  return kwargs


@st.composite
def _pad_jnp_inputs(draw):
  dtype = np.dtype(draw(st.sampled_from(ALL)))
  x = draw(S.arrays(dtype, S.shapes()))
  return (x,), draw(_pad_jnp_kwargs(x.shape, dtype.kind))


@st.composite
def _roll_inputs(draw):
  """(a, shift) with a traced int32 shift (so jit takes the dynamic path) and
  a static axis (None: the flattened array)."""
  x = draw(S.arrays(draw(st.sampled_from(ALL)), S.shapes()))
  axis = draw(st.none() | _axis(x.ndim)) if x.ndim else None
  shift = draw(S.arrays(np.int32, (), elements=st.integers(-9, 9)))
  return (x, shift), {"axis": axis}


@st.composite
def _roll_static_kwargs(draw, shape):
  ndim = len(shape)
  axes = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim))
  return {"shift": tuple(draw(st.integers(-9, 9)) for _ in axes), "axis": tuple(axes)}


@st.composite
def _repeat_kwargs(draw, shape):
  axis = draw(st.none() | _axis(len(shape))) if shape else None
  length = math.prod(shape) if axis is None else shape[axis]
  per_element = st.lists(st.integers(0, 3), min_size=length, max_size=length).map(
      lambda r: np.array(r, np.int32))
  repeats = draw(st.integers(0, 3) | per_element)
  return {"repeats": repeats, "axis": axis}


@st.composite
def _diagonal_kwargs(draw, shape):
  axis1, axis2 = draw(st.lists(_axis(len(shape)), min_size=2, max_size=2).filter(
      lambda a: a[0] % len(shape) != a[1] % len(shape)))
  return {"offset": draw(st.integers(-4, 4)), "axis1": axis1, "axis2": axis2}


@st.composite
def _rot90_kwargs(draw, shape):
  axes = draw(st.lists(_axis(len(shape)), min_size=2, max_size=2).filter(
      lambda a: a[0] % len(shape) != a[1] % len(shape)))
  return {"k": draw(st.integers(-5, 5)), "axes": tuple(axes)}


@st.composite
def _diff_inputs(draw):
  dtype = draw(st.sampled_from(S.INT_DTYPES + S.FLOAT_DTYPES + S.COMPLEX_DTYPES + ALL[:1]))
  x = draw(S.arrays(dtype, S.shapes(min_dims=1)))
  axis = draw(_axis(x.ndim))
  kwargs = {"n": draw(st.integers(0, 3)), "axis": axis}
  if draw(st.booleans()):
    kwargs["prepend"] = draw(S.arrays(dtype, ()))
  if draw(st.booleans()):
    edge = list(x.shape)
    edge[axis] = draw(SIDES)
    kwargs["append"] = draw(S.arrays(dtype, tuple(edge)))
  return (x,), kwargs


def _flip_axis(shape):
  return _kwargs(axis=st.none() | S.axes(len(shape), allow_none=False)) if shape else \
      _kwargs(axis=st.none())


def _diff(x, n, axis, prepend=None, append=None):
  """np.diff, passing on only the given `prepend`/`append` (booleans differ by `!=`)."""
  kwargs = {k: v for k, v in (("prepend", prepend), ("append", append)) if v is not None}
  return np.diff(x, n, axis, **kwargs)


def _same_shapes(min_dims=0, max_dims=3, count=st.integers(1, 3)):
  return lambda: _joinable(count=count, join_axis=lambda _: None, min_dims=min_dims,
                           max_dims=max_dims)


def _join_last_or_first(axis_if_2d):
  """hstack's rule: the join axis is 1 for arrays of rank >= 2, else 0."""
  return lambda ndim: axis_if_2d if ndim >= 2 else 0


JNP_CASES = [
    Case("jnp.reshape", jnp.reshape, _with(_reshape_jnp_kwargs),
         lambda a, shape, order: np.reshape(a, shape, order=order)),
    Case("jnp.ravel", jnp.ravel, _with(lambda shape: _kwargs(order=st.sampled_from("CF"))),
         np.ravel),
    Case("jnp.transpose", jnp.transpose,
         _with(lambda shape: _kwargs(axes=st.none() | _permutation(len(shape)))),
         np.transpose),
    Case("jnp.permute_dims", jnp.permute_dims,
         _with(lambda shape: _kwargs(axes=_permutation(len(shape)))),
         np.permute_dims),
    Case("jnp.matrix_transpose", jnp.matrix_transpose, _with(_nothing, min_dims=2),
         np.matrix_transpose),
    Case("jnp.swapaxes", jnp.swapaxes, _with(lambda shape: _kwargs(
        axis1=_axis(len(shape)), axis2=_axis(len(shape))), min_dims=1),
         np.swapaxes),
    Case("jnp.moveaxis", jnp.moveaxis, _with(_moveaxis_kwargs), np.moveaxis),
    Case("jnp.rollaxis", jnp.rollaxis, _with(lambda shape: _kwargs(
        axis=_axis(len(shape)), start=st.integers(-len(shape), len(shape))), min_dims=1),
         np.rollaxis),
    Case("jnp.squeeze", jnp.squeeze,
         _with(lambda shape: _kwargs(axis=st.none() | _size_one_axes(shape))),
         np.squeeze),
    Case("jnp.expand_dims", jnp.expand_dims,
         _with(lambda shape: _kwargs(axis=_new_axes(len(shape), min_size=1))),
         np.expand_dims),
    Case("jnp.concatenate", lambda *xs, axis: jnp.concatenate(xs, axis),
         lambda: _joinable(join_axis=lambda ndim: ndim - 1),
         lambda *xs, axis: np.concatenate(xs, axis)),
    Case("jnp.concatenate[axis=None]", lambda *xs: jnp.concatenate(xs, axis=None),
         lambda: S.numpy_case_inputs(ALL, 2).filter(lambda i: all(x.ndim for x in i[0])),
         lambda *xs: np.concatenate(xs, axis=None)),
    Case("jnp.concat", lambda *xs, axis: jnp.concat(xs, axis=axis),
         lambda: _joinable(join_axis=lambda ndim: 0),
         lambda *xs, axis: np.concat(xs, axis=axis)),
    Case("jnp.append", lambda x, y, axis: jnp.append(x, y, axis),
         lambda: _joinable(count=st.just(2), join_axis=lambda ndim: ndim - 1),
         lambda x, y, axis: np.append(x, y, axis)),
    Case("jnp.stack", lambda *xs, axis: jnp.stack(xs, axis), lambda: st.tuples(
        _same_shapes()().map(lambda i: i[0]),
        st.integers(-1, 0).map(lambda a: {"axis": a})),
         lambda *xs, axis: np.stack(xs, axis)),
    Case("jnp.unstack", jnp.unstack, _with(lambda shape: _kwargs(axis=_axis(len(shape))),
                                           min_dims=1),
         np.unstack),
    Case("jnp.hstack", lambda *xs: jnp.hstack(xs), lambda: _joinable(
        join_axis=_join_last_or_first(1), pass_axis=False),
         lambda *xs: np.hstack(xs)),
    Case("jnp.vstack", lambda *xs: jnp.vstack(xs), _same_shapes(),
         lambda *xs: np.vstack(xs)),
    Case("jnp.dstack", lambda *xs: jnp.dstack(xs), _same_shapes(),
         lambda *xs: np.dstack(xs)),
    Case("jnp.column_stack", lambda *xs: jnp.column_stack(xs), _same_shapes(max_dims=2),
         lambda *xs: np.column_stack(xs)),
    Case("jnp.split", jnp.split, _with(lambda shape: _split_jnp_kwargs(
        shape, divisible_only=True), min_dims=1), np.split),
    Case("jnp.array_split", jnp.array_split, _with(_split_jnp_kwargs, min_dims=1),
         np.array_split),
    Case("jnp.hsplit", jnp.hsplit, _with(lambda shape: _split_jnp_kwargs(
        shape, axis=0 if len(shape) == 1 else 1, divisible_only=True), min_dims=1),
         np.hsplit),
    Case("jnp.vsplit", jnp.vsplit, _with(lambda shape: _split_jnp_kwargs(
        shape, axis=0, divisible_only=True), min_dims=2),
         np.vsplit),
    Case("jnp.dsplit", jnp.dsplit, _with(lambda shape: _split_jnp_kwargs(
        shape, axis=2, divisible_only=True), min_dims=3),
         np.dsplit),
    Case("jnp.tile", jnp.tile, _with(lambda shape: _kwargs(reps=st.integers(0, 3) | st.lists(
        st.integers(0, 3), max_size=4).map(tuple))), np.tile),
    Case("jnp.repeat", jnp.repeat, _with(_repeat_kwargs), np.repeat),
    Case("jnp.resize", jnp.resize, _with(lambda shape: _kwargs(new_shape=S.shapes())),
         np.resize),
    Case("jnp.flip", jnp.flip, _with(_flip_axis), np.flip),
    Case("jnp.fliplr", jnp.fliplr, _with(_nothing, min_dims=2), np.fliplr),
    Case("jnp.flipud", jnp.flipud, _with(_nothing, min_dims=1), np.flipud),
    Case("jnp.rot90", jnp.rot90, _with(_rot90_kwargs, min_dims=2), np.rot90),
    Case("jnp.roll", lambda a, shift, axis: jnp.roll(a, shift, axis), _roll_inputs,
         lambda a, shift, axis: np.roll(a, int(shift), axis)),
    Case("jnp.roll[several axes]", jnp.roll, _with(_roll_static_kwargs, min_dims=1), np.roll),
    Case("jnp.pad", jnp.pad, _pad_jnp_inputs, np.pad,
         divergence="pad_odd_reflection_chunks"),
    Case("jnp.atleast_1d", jnp.atleast_1d, _with(_nothing), np.atleast_1d),
    Case("jnp.atleast_2d", jnp.atleast_2d, _with(_nothing), np.atleast_2d),
    Case("jnp.atleast_3d", jnp.atleast_3d, _with(_nothing), np.atleast_3d),
    Case("jnp.diagonal", jnp.diagonal, _with(_diagonal_kwargs, min_dims=2), np.diagonal),
    Case("jnp.diff", jnp.diff, _diff_inputs, _diff),
]

CASES = LAX_CASES + JNP_CASES


# --- derivatives ---------------------------------------------------------------------------------
# Every shape primitive is linear: "fwd" checks its JVP (the primitive applied
# to the tangent) against finite differences, "rev" its transpose rule.

AD_DTYPES = [np.float64, np.complex128]


def _ad_operand(shape):
  """A float64 or complex128 array of `shape` (a tuple or strategy) in [-1, 1]."""
  return st.sampled_from(AD_DTYPES).flatmap(lambda dt: S.bounded_arrays(dt, shape))


def _ad_with(kwargs_for, min_dims=0, max_dims=3):
  """One operand (small shape) and kwargs fitted to its shape."""
  @st.composite
  def inputs(draw):
    x = draw(_ad_operand(S.shapes(min_dims=min_dims, max_dims=max_dims, max_side=3)))
    return (x,), draw(kwargs_for(x.shape))
  return inputs


@st.composite
def _ad_pad_inputs(draw):
  """Operand and padding value, both differentiated."""
  dtype = draw(st.sampled_from(AD_DTYPES))
  x = draw(S.bounded_arrays(dtype, S.shapes(max_side=3)))
  value = draw(S.bounded_arrays(dtype, ()))
  return (x, value), {"padding_config": draw(_pad_config(x.shape))}


@st.composite
def _ad_stack_inputs(draw):
  dtype = draw(st.sampled_from(AD_DTYPES))
  shape = draw(S.shapes(max_side=3))
  operands = tuple(draw(S.bounded_arrays(dtype, shape)) for _ in range(draw(st.integers(1, 3))))
  return operands, {"axis": draw(st.integers(0, len(shape)))}


@st.composite
def _ad_concatenate_inputs(draw):
  dtype = draw(st.sampled_from(AD_DTYPES))
  shape = list(draw(S.shapes(min_dims=1, max_side=3)))
  axis = draw(st.integers(0, len(shape) - 1))
  operands = []
  for _ in range(draw(st.integers(1, 3))):
    shape[axis] = draw(SIDES)
    operands.append(draw(S.bounded_arrays(dtype, tuple(shape))))
  return tuple(operands), {"dimension": axis}


def _barrier(x, y):
  """Both operands through one barrier, with an integer operand (zero tangent) between."""
  return lax.optimization_barrier((x, np.arange(3, dtype=np.int32), y))[::2]


AD_CASES = [
    ADCase("broadcast_in_dim", lax.broadcast_in_dim, _ad_with(_broadcast_in_dim_kwargs),
           ("broadcast_in_dim",)),
    ADCase("reshape", lax.reshape, _ad_with(_reshape_kwargs), ("reshape",)),
    ADCase("transpose", lax.transpose,
           _ad_with(lambda shape: _kwargs(permutation=_permutation(len(shape)))),
           ("transpose",)),
    ADCase("squeeze", lax.squeeze,
           _ad_with(lambda shape: _kwargs(dimensions=_size_one_axes(shape))), ("squeeze",)),
    ADCase("rev", lax.rev, _ad_with(lambda shape: _kwargs(dimensions=st.lists(
        st.integers(0, max(len(shape) - 1, 0)), unique=True, max_size=len(shape)))),
           ("rev",)),
    ADCase("pad", lax.pad, _ad_pad_inputs, ("pad",)),
    ADCase("concatenate", lambda *xs, dimension: lax.concatenate(xs, dimension),
           _ad_concatenate_inputs, ("concatenate",)),
    ADCase("split", lax.split, _ad_with(_split_kwargs, min_dims=1), ("split",)),
    ADCase("stack", lambda *xs, axis: lax.stack(xs, axis), _ad_stack_inputs, ("stack",)),
    ADCase("unstack", lax.unstack, _ad_with(
        lambda shape: _kwargs(axis=st.integers(0, len(shape) - 1)), min_dims=1), ("unstack",)),
    ADCase("optimization_barrier", _barrier, lambda: st.tuples(
        st.tuples(_ad_operand(S.shapes(max_side=3)), _ad_operand(S.shapes(max_side=3))),
        st.just({})), ("optimization_barrier",)),
    ADCase("jnp.pad", jnp.pad, _ad_with(lambda shape: _pad_jnp_kwargs(shape, "f")),
           ("pad", "concatenate", "rev", "slice")),
    ADCase("jnp.tile", jnp.tile, _ad_with(lambda shape: _kwargs(reps=st.lists(
        st.integers(0, 2), max_size=3).map(tuple))), ("broadcast_in_dim", "reshape")),
]
