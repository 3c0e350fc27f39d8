"""Shape primitives: broadcast, reshape, transpose, squeeze, rev, pad,
concatenate, split, stack, unstack and iota.

None of these compute new values: they move, repeat or drop elements (pad
and iota also write given values). Dtypes are kept; the result is weakly
typed when the operand is (for pad and concatenate: when every operand is).

So they are linear (pad jointly in operand and padding value): each JVP
applies the primitive to the tangents, and each transpose rule, next to its
primitive, moves cotangents back (summing where elements were repeated).
iota has no operands, hence a zero derivative.
"""

import operator

import numpy as np

from refimpl import core, dtypes
from refimpl.core import Primitive, ShapedArray
from refimpl.interpreters import ad, batching
from refimpl.lax.elementwise import convert_element_type, sub
from refimpl.lax.rules import check_same_dtypes
from refimpl.sharding import check_out_sharding

__all__ = ['broadcast_in_dim', 'broadcast', 'broadcast_like', 'broadcast_to_rank',
           'broadcasted_iota', 'collapse', 'concatenate', 'empty', 'expand_dims', 'full',
           'full_like', 'iota', 'shape_as_value',
           'pad', 'reshape', 'rev', 'split', 'squeeze', 'stack', 'transpose', 'tile',
           'unstack',
           'broadcast_shapes', 'optimization_barrier', 'dtype',
           'broadcast_in_dim_p', 'reshape_p', 'transpose_p', 'squeeze_p', 'rev_p',
           'pad_p', 'concatenate_p', 'split_p', 'stack_p', 'unstack_p', 'iota_p', 'tile_p',
           'optimization_barrier_p']


def canonicalize_axis(axis, ndim):
  """`axis` in [-ndim, ndim) as a non-negative int; ValueError otherwise."""
  axis = operator.index(axis)
  if not -ndim <= axis < ndim:
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
  return axis + ndim if axis < 0 else axis


def shape_argument(shape):
  """A shape given as an int or a sequence of ints, as a tuple of ints.

  A traced size raises TypeError (see `core.canonicalize_shape`).
  """
  if not isinstance(shape, (tuple, list)) and np.ndim(shape) == 0:
    shape = (shape,)
  return core.canonicalize_shape(shape)


def _is_array(x):
  """Arrays and tracers: values a no-op shape function may hand back unchanged."""
  return isinstance(x, (core.Tracer, core.ConcreteArray))


def _shape(x):
  return core.get_aval(x).shape


def _reduce_sum(x, axes):
  from refimpl.lax.reductions import reduce_sum  # (reductions imports this module)
  return reduce_sum(x, axes)


# --- broadcast_in_dim ---------------------------------------------------------

broadcast_in_dim_p = Primitive("broadcast_in_dim")


@broadcast_in_dim_p.def_impl
def _broadcast_in_dim_reference(operand, *, shape, broadcast_dimensions):
  """Broadcasts `operand` to `shape`; operand dim i becomes result dim
  `broadcast_dimensions[i]`.

  Shape rule: `len(broadcast_dimensions) == operand.ndim`, strictly
  increasing, and each operand dim is 1 or equal to the result dim it maps
  to. Dtype and weak type are the operand's.
  """
  expanded = [1] * len(shape)
  for i, d in enumerate(broadcast_dimensions):
    expanded[d] = operand.shape[i]
  return np.broadcast_to(operand.reshape(expanded), shape)


@broadcast_in_dim_p.def_abstract_eval
def _broadcast_in_dim_shape_rule(operand, *, shape, broadcast_dimensions):
  if len(broadcast_dimensions) != operand.ndim:
    raise TypeError(
        f"broadcast_in_dim broadcast_dimensions must have length equal to operand "
        f"ndim; got broadcast_dimensions {broadcast_dimensions} for operand ndim "
        f"{operand.ndim}.")
  if any(d < 0 for d in shape):
    raise TypeError(f"broadcast_in_dim shape must have every element be nonnegative, "
                    f"got {shape}.")
  if any(not 0 <= d < len(shape) for d in broadcast_dimensions):
    raise TypeError(f"broadcast_in_dim broadcast_dimensions {broadcast_dimensions} "
                    f"out of range for result rank {len(shape)}")
  if any(a >= b for a, b in zip(broadcast_dimensions, broadcast_dimensions[1:])):
    raise TypeError(f"broadcast_in_dim broadcast_dimensions must be strictly "
                    f"increasing; got {broadcast_dimensions}")
  for i, d in enumerate(broadcast_dimensions):
    if operand.shape[i] not in (1, shape[d]):
      raise TypeError(
          f"broadcast_in_dim operand dimension sizes must either be 1, or be equal "
          f"to their corresponding dimensions in the target broadcast shape; got "
          f"operand of shape {operand.shape}, target broadcast shape {shape}, "
          f"broadcast_dimensions {broadcast_dimensions}")
  return ShapedArray(shape, operand.dtype, operand.weak_type)


def broadcast_in_dim(operand, shape, broadcast_dimensions, *, out_sharding=None):
  """Broadcasts `operand` into `shape`, placing its dims at `broadcast_dimensions`.

  A scalar array broadcast to shape `()` is returned unchanged, as in JAX.
  """
  check_out_sharding(out_sharding, "broadcast_in_dim")
  shape = core.canonicalize_shape(shape)
  broadcast_dimensions = tuple(operator.index(d) for d in broadcast_dimensions)
  if _is_array(operand) and operand.aval.ndim == len(shape) == 0:
    return operand
  return broadcast_in_dim_p.bind(operand, shape=shape,
                                 broadcast_dimensions=broadcast_dimensions)


def _broadcast_in_dim_transpose(ct, operand, *, shape, broadcast_dimensions):
  # Sum over the dimensions the broadcast made (new ones, and those stretched
  # from size 1), then put back the operand's size-1 dimensions.
  unit_dims = [i for i, d in enumerate(operand.aval.shape) if d == 1]
  kept = [d for i, d in enumerate(broadcast_dimensions) if i not in unit_dims]
  summed = [d for d in range(len(shape)) if d not in kept]
  return [expand_dims(_reduce_sum(ct, summed), unit_dims)]


ad.deflinear2(broadcast_in_dim_p, _broadcast_in_dim_transpose)


def _broadcast_in_dim_batch(args, dims, *, shape, broadcast_dimensions):
  # the batch axis goes first in the result, mapped from the operand's first axis
  (operand,), (d,) = args, dims
  operand = batching.moveaxis(operand, d, 0)
  return broadcast_in_dim(operand, (operand.shape[0], *shape),
                          (0, *(b + 1 for b in broadcast_dimensions))), 0


batching.primitive_batchers[broadcast_in_dim_p] = _broadcast_in_dim_batch


def broadcast(operand, sizes, *, out_sharding=None):
  """Adds leading dimensions `sizes`: the result has shape `sizes + operand.shape`."""
  check_out_sharding(out_sharding, "broadcast")
  sizes = core.canonicalize_shape(sizes)
  if not sizes and _is_array(operand):
    return operand
  ndim = len(_shape(operand))
  dims = tuple(range(len(sizes), len(sizes) + ndim))
  return broadcast_in_dim(operand, sizes + _shape(operand), dims)


def broadcast_to_rank(x, rank):
  """Adds leading size-1 dimensions until `x` has rank `rank`."""
  ndim = len(_shape(x))
  if ndim == rank:
    return x
  return broadcast(x, (1,) * (rank - ndim))


def expand_dims(array, dimensions):
  """Inserts size-1 dimensions at `dimensions` (positions in the result).

  Lowers to `broadcast_in_dim`, as JAX does.
  """
  dimensions = tuple(operator.index(d) for d in dimensions)
  if len(set(dimensions)) != len(dimensions):
    raise ValueError(f"repeated axis in lax.expand_dims: {dimensions}")
  shape = _shape(array)
  ndim_out = len(shape) + len(dimensions)
  dims = [canonicalize_axis(d, ndim_out) for d in dimensions]
  if len(set(dims)) != len(dims):
    raise ValueError(f"repeated axis in lax.expand_dims: {dims}")
  result_shape = list(shape)
  for d in sorted(dims):
    result_shape.insert(d, 1)
  kept = tuple(i for i in range(ndim_out) if i not in dims)
  return broadcast_in_dim(array, result_shape, kept)


def full(shape, fill_value, dtype=None, *, sharding=None):
  """An array of `shape` filled with the scalar `fill_value`.

  The result is weakly typed when `dtype` is None and `fill_value` is weak
  (a Python scalar). Lowers to `broadcast_in_dim` of the converted scalar.
  """
  check_out_sharding(sharding, "full", any_sharding=True)
  shape = shape_argument(shape)
  if np.shape(fill_value):
    raise TypeError(f"full must be called with scalar fill_value, got fill_value.shape "
                    f"{np.shape(fill_value)}.")
  if dtype is not None and dtypes.is_extended(dtype):
    return _full_of_keys(shape, fill_value, dtype)
  weak_type = dtype is None and dtypes.is_weakly_typed(fill_value)
  dtype = dtypes.dtype(fill_value) if dtype is None else dtypes.canonicalize_dtype(dtype)
  fill = convert_element_type(fill_value, dtype, weak_type)
  return broadcast(fill, shape)


def _full_of_keys(shape, fill_value, dtype):
  """`full` of a key dtype, as JAX: a key `fill_value` is broadcast; any
  other value fills the uint32 key data (`zeros` of keys are the keys whose
  data words are 0). Lowers to `random_wrap` of the data."""
  from refimpl import prng
  impl = dtype._impl
  data_shape = (*shape, *impl.key_shape)
  if dtypes.issubdtype(dtypes.dtype(fill_value), dtypes.prng_key):
    data = broadcast_in_dim(prng.random_unwrap(fill_value), data_shape,
                            tuple(range(len(shape), len(data_shape))))
  else:
    data = full(data_shape, fill_value, np.uint32)
  return prng.random_wrap(data, impl=impl)


def empty(shape, dtype, *, out_sharding=None):
  """An array of `shape` and `dtype` whose values are unspecified (JAX's
  depend on the backend): refimpl's are zeros. On one device
  `out_sharding` changes nothing."""
  check_out_sharding(out_sharding, "empty")
  return full(shape, 0, dtypes.canonicalize_dtype(dtype, allow_extended_dtype=True))


def broadcast_like(arr, like_arr):
  """`arr` broadcast (NumPy's rules: trailing dimensions aligned, size-1
  dimensions stretched) to the shape of `like_arr`."""
  shape, arr_shape = _shape(like_arr), _shape(arr)
  if arr_shape == shape:
    return arr
  if len(arr_shape) > len(shape) or broadcast_shapes(arr_shape, shape) != shape:
    raise ValueError(f"Incompatible shapes for broadcasting: {arr_shape} to {shape}")
  return broadcast_in_dim(arr, shape, tuple(range(len(shape) - len(arr_shape), len(shape))))


def shape_as_value(shape):
  """The dimensions of `shape` as a 1-D array of the default integer type."""
  int_dtype = dtypes.default_int_dtype()
  return concatenate([broadcast(convert_element_type(d, int_dtype), (1,)) for d in shape], 0)


def full_like(x, fill_value, dtype=None, shape=None, sharding=None):
  """An array like `x` (its shape and dtype unless given) filled with `fill_value`.

  Keeps `x`'s weak type when `dtype` is None. `x` may be any object with a
  `shape` and a `dtype` (a ShapeDtypeStruct), as in JAX.
  """
  check_out_sharding(sharding, "full_like", any_sharding=True)
  fill_shape = tuple(np.shape(x)) if shape is None else shape_argument(shape)
  weak_type = dtype is None and dtypes.is_weakly_typed(x)
  dtype = (dtypes.dtype(x) if dtype is None
           else dtypes.canonicalize_dtype(dtype, allow_extended_dtype=True))
  if dtypes.is_extended(dtype):
    return _full_of_keys(fill_shape, fill_value, dtype)
  return full(fill_shape, convert_element_type(fill_value, dtype, weak_type))


# --- reshape ------------------------------------------------------------------------

reshape_p = Primitive("reshape")


@reshape_p.def_impl
def _reshape_reference(operand, *, new_sizes, dimensions):
  """Reshapes `operand` (row-major order) to `new_sizes`.

  If `dimensions` is not None the operand is first transposed by it. Shape
  rule: the element counts must match. Dtype and weak type are kept.
  """
  if dimensions is not None:
    operand = np.transpose(operand, dimensions)
  return operand.reshape(new_sizes)


@reshape_p.def_abstract_eval
def _reshape_shape_rule(operand, *, new_sizes, dimensions):
  if any(d < 0 for d in new_sizes):
    raise TypeError(f"reshape new_sizes must all be non-negative, got {new_sizes}")
  if int(np.prod(new_sizes, dtype=np.int64)) != operand.size:
    raise TypeError(f"reshape total size must be unchanged, got new_sizes "
                    f"{new_sizes} for shape {operand.shape}.")
  if dimensions is not None and sorted(dimensions) != list(range(operand.ndim)):
    raise TypeError(f"reshape dimensions must be a permutation of operand "
                    f"dimensions, got dimensions {dimensions} for shape {operand.shape}.")
  return ShapedArray(new_sizes, operand.dtype, operand.weak_type)


def reshape(operand, new_sizes, dimensions=None, *, out_sharding=None):
  """Reshapes `operand` to `new_sizes`, after transposing by `dimensions` if given.

  Reshaping a non-scalar array to its own shape returns it unchanged; an
  identity `dimensions` is dropped.
  """
  check_out_sharding(out_sharding, "reshape")
  new_sizes = core.canonicalize_shape(new_sizes)
  shape = _shape(operand)
  dims = None if dimensions is None else tuple(operator.index(d) for d in dimensions)
  if dims == tuple(range(len(shape))):
    dims = None
  if shape and shape == new_sizes and dims is None and _is_array(operand):
    return operand
  return reshape_p.bind(operand, new_sizes=new_sizes, dimensions=dims)


def _reshape_transpose(ct, operand, *, new_sizes, dimensions):
  shape = operand.aval.shape
  if dimensions is None:
    return [reshape(ct, shape)]
  # undo the reshape, then the transposition that preceded it
  return [transpose(reshape(ct, [shape[d] for d in dimensions]), np.argsort(dimensions))]


ad.deflinear2(reshape_p, _reshape_transpose)


def _reshape_batch(args, dims, *, new_sizes, dimensions):
  (operand,), (d,) = args, dims
  operand = batching.moveaxis(operand, d, 0)
  if dimensions is not None:
    dimensions = (0, *(i + 1 for i in dimensions))
  return reshape(operand, (operand.shape[0], *new_sizes), dimensions), 0


batching.primitive_batchers[reshape_p] = _reshape_batch


def collapse(operand, start_dimension, stop_dimension=None):
  """Merges dimensions [start_dimension, stop_dimension) into one."""
  shape = _shape(operand)
  ndim = len(shape)
  lo = canonicalize_axis(start_dimension, ndim + 1)
  hi = ndim if stop_dimension is None else canonicalize_axis(stop_dimension, ndim + 1)
  if lo > hi:
    raise ValueError(f"collapse: start_dimension {start_dimension} must not exceed "
                     f"stop_dimension {stop_dimension}")
  size = int(np.prod(shape[lo:hi], dtype=np.int64))
  return reshape(operand, shape[:lo] + (size,) + shape[hi:])


# --- transpose ----------------------------------------------------------------------

transpose_p = Primitive("transpose")


@transpose_p.def_impl
def _transpose_reference(operand, *, permutation):
  """Permutes dimensions: result dim i is operand dim `permutation[i]`.

  Shape rule: `permutation` is a permutation of range(operand.ndim).
  """
  return np.transpose(operand, permutation)


@transpose_p.def_abstract_eval
def _transpose_shape_rule(operand, *, permutation):
  if sorted(permutation) != list(range(operand.ndim)):
    raise TypeError(f"transpose permutation isn't a permutation of operand dimensions, "
                    f"got permutation {permutation} for operand shape {operand.shape}.")
  return ShapedArray(tuple(operand.shape[p] for p in permutation), operand.dtype,
                     operand.weak_type)


def transpose(operand, permutation):
  """Permutes the dimensions of `operand`; the identity permutation is a no-op."""
  permutation = tuple(operator.index(p) for p in permutation)
  if permutation == tuple(range(len(_shape(operand)))) and _is_array(operand):
    return operand
  return transpose_p.bind(operand, permutation=permutation)


ad.deflinear(transpose_p, lambda ct, permutation: [transpose(ct, np.argsort(permutation))])


def _transpose_batch(args, dims, *, permutation):
  # the batch axis stays first in the result; the others shift past it
  (operand,), (d,) = args, dims
  perm = (d, *(i if i < d else i + 1 for i in permutation))
  return transpose(operand, perm), 0


batching.primitive_batchers[transpose_p] = _transpose_batch


# --- squeeze --------------------------------------------------------------------------

squeeze_p = Primitive("squeeze")


@squeeze_p.def_impl
def _squeeze_reference(array, *, dimensions):
  """Removes the size-1 dimensions `dimensions` (sorted, distinct, in range)."""
  return np.squeeze(array, axis=tuple(dimensions))


@squeeze_p.def_abstract_eval
def _squeeze_shape_rule(array, *, dimensions):
  if any(not 0 <= d < array.ndim for d in dimensions):
    raise ValueError(f"squeeze dimensions {dimensions} out of range for operand "
                     f"shape {array.shape}")
  if len(set(dimensions)) != len(dimensions):
    raise ValueError(f"dimensions are not unique: {dimensions}")
  if any(array.shape[d] != 1 for d in dimensions):
    raise ValueError(f"cannot select an axis to squeeze out which has size not equal "
                     f"to one, got shape={array.shape} and dimensions={dimensions}")
  shape = tuple(s for i, s in enumerate(array.shape) if i not in dimensions)
  return ShapedArray(shape, array.dtype, array.weak_type)


def squeeze(array, dimensions):
  """Removes size-1 `dimensions` (negative values count from the end)."""
  ndim = len(_shape(array))
  dimensions = tuple(sorted(canonicalize_axis(d, ndim) for d in dimensions))
  if not dimensions and _is_array(array):
    return array
  return squeeze_p.bind(array, dimensions=dimensions)


ad.deflinear(squeeze_p, lambda ct, dimensions: [expand_dims(ct, dimensions)])


def _squeeze_batch(args, dims, *, dimensions):
  (operand,), (d,) = args, dims
  operand = batching.moveaxis(operand, d, 0)
  return squeeze(operand, tuple(i + 1 for i in dimensions)), 0


batching.primitive_batchers[squeeze_p] = _squeeze_batch


# --- rev ------------------------------------------------------------------------------

rev_p = Primitive("rev")


@rev_p.def_impl
def _rev_reference(operand, *, dimensions):
  """Reverses the order of elements along each of `dimensions` (distinct, in range)."""
  return np.flip(operand, axis=tuple(dimensions))


@rev_p.def_abstract_eval
def _rev_shape_rule(operand, *, dimensions):
  if len(set(dimensions)) != len(dimensions):
    raise ValueError(f"rev dimensions must be unique, got {dimensions}")
  if any(not 0 <= d < operand.ndim for d in dimensions):
    raise ValueError(f"rev dimensions must all be in the range [0, {operand.ndim}), "
                     f"got dimensions {dimensions}")
  return operand


def rev(operand, dimensions):
  return rev_p.bind(operand, dimensions=tuple(operator.index(d) for d in dimensions))


ad.deflinear(rev_p, lambda ct, dimensions: [rev(ct, dimensions)])


def _rev_batch(args, dims, *, dimensions):
  (operand,), (d,) = args, dims
  return rev(operand, [i + (i >= d) for i in dimensions]), d


batching.primitive_batchers[rev_p] = _rev_batch


# --- pad --------------------------------------------------------------------------------

pad_p = Primitive("pad")


def _padded_size(size, low, high, interior):
  return low + high + size + max(size - 1, 0) * interior


@pad_p.def_impl
def _pad_reference(operand, padding_value, *, padding_config):
  """Pads `operand` with the scalar `padding_value`.

  `padding_config` holds one `(low, high, interior)` triple per dimension:
  `interior` copies of the value go between neighbouring elements, then
  `low` before and `high` after. A negative `low`/`high` removes that many
  elements from the edge instead (after interior padding). Shape rule:
  result size `low + high + d + max(d - 1, 0) * interior`, which must be
  >= 0; `interior >= 0`; operand and value share a dtype.
  """
  for axis, (low, high, interior) in enumerate(padding_config):
    size = operand.shape[axis]
    # interior padding: a fresh array of the padded size with the operand
    # written at every (interior + 1)-th position
    inner_shape = list(operand.shape)
    inner_shape[axis] = _padded_size(size, 0, 0, interior)
    inner = np.full(inner_shape, padding_value, operand.dtype)
    index = [slice(None)] * operand.ndim
    index[axis] = slice(None, None, interior + 1)
    inner[tuple(index)] = operand
    # edges: add padding for positive widths, then crop negative ones
    edge_shape = list(inner_shape)
    edge_shape[axis] = max(low, 0)
    before = np.full(edge_shape, padding_value, operand.dtype)
    edge_shape[axis] = max(high, 0)
    after = np.full(edge_shape, padding_value, operand.dtype)
    padded = np.concatenate([before, inner, after], axis=axis)
    index[axis] = slice(max(-low, 0), padded.shape[axis] - max(-high, 0))
    operand = padded[tuple(index)]
  return operand


@pad_p.def_abstract_eval
def _pad_shape_rule(operand, padding_value, *, padding_config):
  if operand.dtype != padding_value.dtype:
    raise TypeError(f"pad operand and padding_value must be same dtype: got "
                    f"{operand.dtype.name} and {padding_value.dtype.name}.")
  if padding_value.shape:
    raise TypeError(f"pad padding_value must be a scalar, got shape {padding_value.shape}")
  if len(padding_config) != operand.ndim:
    raise ValueError(f"length of padding_config must equal the number of axes of "
                     f"operand, got padding_config {padding_config} for operand shape "
                     f"{operand.shape}")
  if any(interior < 0 for _, _, interior in padding_config):
    raise ValueError(f"interior padding in padding_config must be nonnegative, got "
                     f"padding_config {padding_config}")
  shape = tuple(_padded_size(d, *cfg) for d, cfg in zip(operand.shape, padding_config))
  if any(d < 0 for d in shape):
    raise ValueError(f"Dimension size after padding is not at least 0, got result "
                     f"shape {shape}, for padding_config {padding_config} and operand "
                     f"shape {operand.shape}")
  return ShapedArray(shape, operand.dtype, operand.weak_type and padding_value.weak_type)


def pad(operand, padding_value, padding_config):
  """Pads `operand` per `padding_config`: one (low, high, interior) per dimension."""
  config = tuple(tuple(operator.index(p) for p in cfg) for cfg in padding_config)
  if any(len(cfg) != 3 for cfg in config):
    raise ValueError(f"pad: each padding_config entry must be a (low, high, interior) "
                     f"triple, got {padding_config}")
  return pad_p.bind(operand, padding_value, padding_config=config)


def _pad_transpose(ct, operand, padding_value, *, padding_config):
  # The operand's cotangent is ct at the operand's positions: undo the edges
  # (zeros where a negative edge cropped), then take every (interior + 1)-th
  # element. The padding value's is the sum of all the rest.
  from refimpl.lax import indexing  # (indexing imports this module)
  zero = np.zeros((), core.get_aval(ct).dtype)
  unpadded = pad(ct, zero, [(-low, -high, 0) for low, high, _ in padding_config])
  t_operand = indexing.slice(unpadded, [0] * len(padding_config), _shape(unpadded),
                             [interior + 1 for _, _, interior in padding_config])
  t_padding_value = None
  if ad.is_undefined_primal(padding_value):
    everything = range(len(padding_config))
    t_padding_value = sub(_reduce_sum(ct, everything), _reduce_sum(t_operand, everything))
  return [t_operand if ad.is_undefined_primal(operand) else None, t_padding_value]


ad.deflinear2(pad_p, _pad_transpose)


def _pad_batch(args, dims, *, padding_config):
  # The batch axis is not padded. A batched padding value (one scalar per
  # member) is written where a padded mask of the operand's places is False.
  (operand, padding_value), (d, value_d) = args, dims
  if d is None:
    operand, d = batching.broadcast(operand, _shape(padding_value)[0], 0), 0
  config = list(padding_config)
  config.insert(d, (0, 0, 0))
  if value_d is None:
    return pad(operand, padding_value, config), d
  from refimpl.lax.elementwise import select
  padded = pad(operand, full_like(operand, 0, shape=()), config)
  mask = pad(full_like(operand, True, np.bool_), np.bool_(False), config)
  return select(mask, padded, broadcast_in_dim(padding_value, _shape(padded), (d,))), d


batching.primitive_batchers[pad_p] = _pad_batch


# --- concatenate ------------------------------------------------------------------------

concatenate_p = Primitive("concatenate")


@concatenate_p.def_impl
def _concatenate_reference(*operands, dimension):
  """Joins `operands` along `dimension`.

  Shape rule: at least one operand; equal ranks and dtypes; sizes equal
  except along `dimension`, where the result size is their sum. Weakly typed
  only when every operand is.
  """
  return np.concatenate(operands, axis=dimension)


@concatenate_p.def_abstract_eval
def _concatenate_shape_rule(*operands, dimension):
  if not operands:
    raise TypeError("concatenate must have at least one operand.")
  check_same_dtypes("concatenate", *operands)
  shapes = [o.shape for o in operands]
  if len({len(s) for s in shapes}) != 1:
    raise TypeError(f"Cannot concatenate arrays with different numbers of dimensions: "
                    f"got {', '.join(map(str, shapes))}.")
  if not 0 <= dimension < len(shapes[0]):
    raise TypeError(f"concatenate dimension out of bounds: dimension {dimension} for "
                    f"shapes {', '.join(map(str, shapes))}.")
  others = {s[:dimension] + s[dimension + 1:] for s in shapes}
  if len(others) != 1:
    raise TypeError(f"Cannot concatenate arrays with shapes that differ in dimensions "
                    f"other than the one being concatenated: concatenating along "
                    f"dimension {dimension} for shapes {', '.join(map(str, shapes))}.")
  shape = list(shapes[0])
  shape[dimension] = sum(s[dimension] for s in shapes)
  return ShapedArray(shape, operands[0].dtype, all(o.weak_type for o in operands))


def concatenate(operands, dimension):
  """Concatenates `operands` (equal dtypes) along `dimension`."""
  operands = list(operands)
  if not operands:
    raise ValueError("concatenate requires a non-empty sequences of arrays")
  if len(operands) == 1 and _is_array(operands[0]):
    return operands[0]
  return concatenate_p.bind(*operands, dimension=operator.index(dimension))


def _concatenate_transpose(ct, *operands, dimension):
  sizes = [ad.primal_aval(o).shape[dimension] for o in operands]
  return split(ct, sizes, dimension)


ad.deflinear2(concatenate_p, _concatenate_transpose)


def _concatenate_batch(args, dims, *, dimension):
  # batch axes first (unbatched operands broadcast), so `dimension` moves up one
  size = next(_shape(x)[d] for x, d in zip(args, dims) if d is not None)
  return concatenate([batching.bdim_at_front(x, d, size) for x, d in zip(args, dims)],
                     dimension + 1), 0


batching.primitive_batchers[concatenate_p] = _concatenate_batch


# --- split ------------------------------------------------------------------------------

split_p = Primitive("split")
split_p.multiple_results = True


@split_p.def_impl
def _split_reference(operand, *, sizes, axis):
  """Cuts `operand` along `axis` into consecutive pieces of lengths `sizes`.

  Shape rule: sizes are non-negative and sum to `operand.shape[axis]`.
  """
  return np.split(operand, np.cumsum(sizes)[:-1], axis=axis)


@split_p.def_abstract_eval
def _split_shape_rule(operand, *, sizes, axis):
  if not 0 <= axis < operand.ndim:
    raise ValueError(f"split axis {axis} out of range for operand of shape {operand.shape}")
  if any(s < 0 for s in sizes):
    raise ValueError(f"Sizes passed to split must be nonnegative, got {list(sizes)}")
  if sum(sizes) != operand.shape[axis]:
    raise ValueError(f"Sum of sizes {sum(sizes)} must be equal to dimension {axis} of "
                     f"the operand shape {list(operand.shape)}")
  shapes = [operand.shape[:axis] + (s,) + operand.shape[axis + 1:] for s in sizes]
  return [ShapedArray(s, operand.dtype, operand.weak_type) for s in shapes]


def split(operand, sizes, axis=0):
  """Splits `operand` along `axis` into pieces of the given `sizes`."""
  axis = canonicalize_axis(axis, len(_shape(operand)))
  return split_p.bind(operand, sizes=tuple(operator.index(s) for s in sizes), axis=axis)


ad.deflinear(split_p, lambda cts, sizes, axis: [
    concatenate([ad.instantiate_zeros(ct) for ct in cts], axis)])


def _split_batch(args, dims, *, sizes, axis):
  (operand,), (d,) = args, dims
  return split(operand, sizes, axis + (axis >= d)), [d] * len(sizes)


batching.primitive_batchers[split_p] = _split_batch


# --- stack and unstack ------------------------------------------------------------------

stack_p = Primitive("stack")


@stack_p.def_impl
def _stack_reference(*operands, axis):
  """Stacks the operands (equal shapes and dtypes) along a new axis `axis`
  of the result, whose size is the number of operands. Weakly typed only
  when every operand is."""
  return np.stack(operands, axis=axis)


@stack_p.def_abstract_eval
def _stack_shape_rule(*operands, axis):
  if not operands:
    raise TypeError("stack must have at least one operand.")
  check_same_dtypes("stack", *operands)
  shapes = {o.shape for o in operands}
  if len(shapes) != 1:
    raise TypeError(f"stack operands must have equal shapes, got "
                    f"{', '.join(str(o.shape) for o in operands)}.")
  shape = operands[0].shape
  if not 0 <= axis <= len(shape):
    raise TypeError(f"stack axis {axis} out of bounds for operands of shape {shape}.")
  return ShapedArray(shape[:axis] + (len(operands),) + shape[axis:], operands[0].dtype,
                     all(o.weak_type for o in operands))


def stack(operands, axis=0):
  """Stacks `operands` (arrays of one shape and dtype) along a new axis
  `axis` (in [-ndim - 1, ndim]), the inverse of `unstack`."""
  operands = list(operands)
  if not operands:
    raise ValueError("stack requires a non-empty sequence of arrays")
  axis = canonicalize_axis(axis, len(_shape(operands[0])) + 1)
  return stack_p.bind(*operands, axis=axis)


ad.deflinear2(stack_p, lambda ct, *operands, axis: unstack(ct, axis))


def _stack_batch(args, dims, *, axis):
  size = next(_shape(x)[d] for x, d in zip(args, dims) if d is not None)
  return stack([batching.bdim_at_front(x, d, size) for x, d in zip(args, dims)], axis + 1), 0


batching.primitive_batchers[stack_p] = _stack_batch

unstack_p = Primitive("unstack")
unstack_p.multiple_results = True


@unstack_p.def_impl
def _unstack_reference(operand, *, axis):
  """The slices of `operand` along `axis`, in order, that axis removed: as
  many results as `operand.shape[axis]`."""
  return list(np.moveaxis(operand, axis, 0))


@unstack_p.def_abstract_eval
def _unstack_shape_rule(operand, *, axis):
  if not 0 <= axis < operand.ndim:
    raise ValueError(f"unstack axis {axis} out of range for operand of shape {operand.shape}")
  shape = operand.shape[:axis] + operand.shape[axis + 1:]
  return [ShapedArray(shape, operand.dtype, operand.weak_type)] * operand.shape[axis]


def unstack(x, axis=0):
  """The slices of `x` along `axis` as a tuple of arrays, that axis removed:
  `stack(unstack(x, axis), axis)` is `x`."""
  axis = canonicalize_axis(axis, len(_shape(x)))
  return tuple(unstack_p.bind(x, axis=axis))


ad.deflinear(unstack_p, lambda cts, axis: [stack([ad.instantiate_zeros(ct) for ct in cts], axis)])


def _unstack_batch(args, dims, *, axis):
  (operand,), (d,) = args, dims
  moved = axis + (axis >= d)
  return unstack(operand, moved), [d if d < moved else d - 1] * _shape(operand)[moved]


batching.primitive_batchers[unstack_p] = _unstack_batch


# --- tile -------------------------------------------------------------------------------

tile_p = Primitive("tile")


@tile_p.def_impl
def _tile_reference(operand, *, reps):
  """Repeats the whole operand `reps[i]` times along dimension i (as np.tile
  with `len(reps) == operand.ndim`).

  Shape rule: one non-negative repetition count per dimension; dimension i of
  the result is `operand.shape[i] * reps[i]`. Dtype and weak type are kept.
  """
  return np.tile(operand, reps)


@tile_p.def_abstract_eval
def _tile_shape_rule(operand, *, reps):
  if len(reps) != operand.ndim:
    raise ValueError(f"tile: reps must have one entry per operand dimension; got "
                     f"reps={reps} for shape {operand.shape}")
  if any(r < 0 for r in reps):
    raise ValueError(f"tile: reps must be non-negative, got {reps}")
  return ShapedArray(tuple(d * r for d, r in zip(operand.shape, reps)), operand.dtype,
                     operand.weak_type)


def tile(operand, reps):
  """Tiles `operand` `reps[i]` times along each dimension i."""
  return tile_p.bind(operand, reps=tuple(operator.index(r) for r in reps))


def _tile_transpose(ct, operand, *, reps):
  # Viewed as shape (reps[0], d0, reps[1], d1, ...), ct sums over the copies.
  shape = operand.aval.shape
  copies = reshape(ct, [n for r, d in zip(reps, shape) for n in (r, d)])
  return [_reduce_sum(copies, range(0, 2 * len(shape), 2))]


ad.deflinear2(tile_p, _tile_transpose)


def _tile_batch(args, dims, *, reps):
  (operand,), (d,) = args, dims
  return tile(operand, (*reps[:d], 1, *reps[d:])), d   # the batch axis is not repeated


batching.primitive_batchers[tile_p] = _tile_batch


def dtype(x):
  """The canonical dtype of a value or dtype-like `x` (as `jnp.dtype`)."""
  return dtypes.dtype(x)


def broadcast_shapes(*shapes):
  """The NumPy broadcast of `shapes` (equal ranks not required); ValueError if none."""
  try:
    return tuple(np.broadcast_shapes(*(core.canonicalize_shape(s) for s in shapes)))
  except ValueError:
    raise ValueError(f"Incompatible shapes for broadcasting: shapes={list(shapes)}") from None


# --- optimization_barrier ----------------------------------------------------------------

optimization_barrier_p = Primitive("optimization_barrier")
optimization_barrier_p.multiple_results = True


@optimization_barrier_p.def_impl
def _optimization_barrier_reference(*operands):
  """The identity on any number of operands. A compiler must not move
  computation across it; the reference has nothing to move."""
  return list(operands)


optimization_barrier_p.def_abstract_eval(lambda *avals: list(avals))


def optimization_barrier(operand, /):
  """Returns the pytree `operand` unchanged, through an optimization barrier."""
  from refimpl import tree_util
  leaves, tree = tree_util.tree_flatten(operand)
  return tree_util.tree_unflatten(tree, optimization_barrier_p.bind(*leaves))


def _optimization_barrier_jvp(primals, tangents):
  # The tangents of the floating operands go through a barrier of their own;
  # integer operands keep their (float0) zero tangents.
  inexact = [i for i, p in enumerate(primals) if dtypes.is_inexact(core.get_aval(p).dtype)]
  tangents_out = list(tangents)
  barred = optimization_barrier_p.bind(*[ad.instantiate_zeros(tangents[i]) for i in inexact])
  for i, t in zip(inexact, barred):
    tangents_out[i] = t
  return optimization_barrier_p.bind(*primals), tangents_out


ad.primitive_jvps[optimization_barrier_p] = _optimization_barrier_jvp
ad.deftranspose(optimization_barrier_p, lambda cts, *args: optimization_barrier_p.bind(
    *map(ad.instantiate_zeros, cts)))
batching.primitive_batchers[optimization_barrier_p] = lambda args, dims: (
    optimization_barrier_p.bind(*args), list(dims))


# --- iota -------------------------------------------------------------------------------

iota_p = Primitive("iota")


@iota_p.def_impl
def _iota_reference(*, dtype, shape, dimension):
  """An array of `shape` whose value at each index is its position along `dimension`.

  Shape rule: `dimension` in [0, len(shape)); dtype integer, float or complex.
  """
  positions = np.arange(shape[dimension]).astype(dtype)
  expanded = [1] * len(shape)
  expanded[dimension] = shape[dimension]
  return np.broadcast_to(positions.reshape(expanded), shape)


@iota_p.def_abstract_eval
def _iota_shape_rule(*, dtype, shape, dimension):
  if dtypes.is_bool(dtype):
    raise TypeError("iota does not accept dtype bool")
  if any(d < 0 for d in shape):
    raise TypeError(f"iota shape must have every element be nonnegative, got {shape}.")
  if not 0 <= dimension < len(shape):
    raise ValueError(f"iota dimension must be between 0 and len(shape), got "
                     f"dimension={dimension} for shape {shape}")
  return ShapedArray(shape, dtype)


ad.defjvp_zero(iota_p)  # no operands: nothing to differentiate


def broadcasted_iota(dtype, shape, dimension, *, out_sharding=None):
  """Positions along `dimension`, broadcast to `shape`."""
  check_out_sharding(out_sharding, "broadcasted_iota")
  dtype = dtypes.canonicalize_dtype(np.dtype(dtype))
  shape = core.canonicalize_shape(shape)
  dimension = canonicalize_axis(dimension, len(shape))
  return iota_p.bind(dtype=dtype, shape=shape, dimension=dimension)


def iota(dtype, size):
  """`[0, 1, ..., size - 1]` of `dtype` (the `iota` primitive)."""
  return broadcasted_iota(dtype, (size,), 0)

