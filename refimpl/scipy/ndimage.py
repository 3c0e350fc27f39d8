"""`refimpl.scipy.ndimage`: interpolation at arbitrary coordinates, as `jax.scipy.ndimage`.

`map_coordinates` supports JAX's orders 0 (nearest, rounding halves away from
zero) and 1 (linear) and its boundary modes 'constant', 'nearest', 'wrap',
'mirror' and 'reflect', interpreted as SciPy documents them rather than as
SciPy implements them: JAX's 'constant' is SciPy's 'grid-constant' (the
input is cval outside [0, size), each neighbour outside weighs cval) and its
'wrap' is SciPy's 'grid-wrap' (period size).
"""

import functools
import itertools
import operator

import numpy as np

from refimpl import dtypes, lax
from refimpl.api import jit
from refimpl.numpy import absolute, asarray, clip, floor, floor_divide, where

__all__ = ["map_coordinates"]


def _mirror_index(index, size):
  """Indices reflected about the first and last samples (period 2 (size - 1))."""
  s = size - 1
  return absolute((index + s) % (2 * s) - s)


def _reflect_index(index, size):
  """Indices reflected about the outer edges of the first and last samples (period 2 size)."""
  return floor_divide(_mirror_index(2 * index + 1, 2 * size + 1) - 1, 2)


_INDEX_FIXERS = {
    'constant': lambda index, size: index,
    'nearest': lambda index, size: clip(index, 0, size - 1),
    'wrap': lambda index, size: index % size,
    'mirror': _mirror_index,
    'reflect': _reflect_index,
}


def _round_half_away_from_zero(a):
  return a if dtypes.issubdtype(a.dtype, np.integer) else lax.round(a)


def _nearest_indices_and_weights(coordinate):
  index = _round_half_away_from_zero(coordinate).astype(np.int32)
  return [(index, coordinate.dtype.type(1))]


def _linear_indices_and_weights(coordinate):
  lower = floor(coordinate)
  upper_weight = coordinate - lower
  index = lower.astype(np.int32)
  return [(index, 1 - upper_weight), (index + 1, upper_weight)]


@functools.partial(jit, static_argnums=(2, 3, 4))
def _map_coordinates(input, coordinates, order, mode, cval):
  input_arr = asarray(input)
  coordinate_arrs = [asarray(c) for c in coordinates]
  cval = asarray(cval, input_arr.dtype)
  if len(coordinates) != input_arr.ndim:
    raise ValueError('coordinates must be a sequence of length input.ndim, but '
                     '{} != {}'.format(len(coordinates), input_arr.ndim))
  index_fixer = _INDEX_FIXERS.get(mode)
  if index_fixer is None:
    raise NotImplementedError(
        'jax.scipy.ndimage.map_coordinates does not yet support mode {}. '
        'Currently supported modes are {}.'.format(mode, set(_INDEX_FIXERS)))
  if order == 0:
    interp_fun = _nearest_indices_and_weights
  elif order == 1:
    interp_fun = _linear_indices_and_weights
  else:
    raise NotImplementedError('jax.scipy.ndimage.map_coordinates currently requires order<=1')

  # Per axis: (index into the input, whether it is inside, weight) of each neighbour.
  nodes_per_axis = []
  for coordinate, size in zip(coordinate_arrs, input_arr.shape):
    nodes = []
    for index, weight in interp_fun(coordinate):
      valid = (0 <= index) & (index < size) if mode == 'constant' else True
      nodes.append((index_fixer(index, size), valid, weight))
    nodes_per_axis.append(nodes)

  outputs = []
  for items in itertools.product(*nodes_per_axis):
    indices, validities, weights = zip(*items)
    contribution = input_arr[indices]
    if mode == 'constant':
      contribution = where(functools.reduce(operator.and_, validities), contribution, cval)
    outputs.append(functools.reduce(operator.mul, weights) * contribution)
  result = sum(outputs[1:], outputs[0])
  if dtypes.issubdtype(input_arr.dtype, np.integer):
    result = _round_half_away_from_zero(result)
  return result.astype(input_arr.dtype)


def map_coordinates(input, coordinates, order, mode='constant', cval=0.0):
  """The values of `input` at the points `coordinates` (a sequence of input.ndim
  arrays of indices) by interpolation of order 0 or 1, points outside handled by
  `mode` (constant with `cval`, which must be hashable: it is a static argument).
  Integer inputs give results rounded half away from zero, in the input's dtype."""
  return _map_coordinates(input, coordinates, order, mode, cval)
