"""`jax.ops`: reductions of an array's rows within segments.

`segment_X(data, segment_ids, num_segments)` is the array of shape
`(num_segments,) + data.shape[1:]` whose row `s` reduces (sums, multiplies,
takes the maximum or minimum of) the rows `data[i]` with `segment_ids[i] == s`;
a segment without rows holds the reduction's identity (0; 1; for the maximum
-inf, the least integer or False; for the minimum +inf, the greatest integer
or True). The rows are scattered into that identity array with scatter-add,
-mul, -max or -min (`x.at[segment_ids]`), so ids out of `[0, num_segments)`,
negative ones included, are dropped unless `mode` says otherwise.
"""

import operator

import numpy as np

from refimpl import dtypes
from refimpl import numpy as jnp
from refimpl.lax import GatherScatterMode
from refimpl.numpy.creation import concrete
from refimpl.numpy.util import check_arraylike
from refimpl.sharding import check_out_sharding

__all__ = ["segment_max", "segment_min", "segment_prod", "segment_sum"]


def _identity(method, dtype):
  """The value of an empty segment for the update `method` of `x.at[...]`."""
  if method == "add":
    return 0
  if method == "multiply":
    return 1
  largest = method == "min"
  if dtypes.is_bool(dtype):
    return largest
  if dtypes.is_integer(dtype):
    info = dtypes.iinfo(dtype)
    return info.max if largest else info.min
  return np.inf if largest else -np.inf


def _segment_update(name, method, reducer, data, segment_ids, num_segments,
                    indices_are_sorted, unique_indices, bucket_size, mode, out_sharding):
  """`data`'s rows combined within segments by `x.at[segment_ids].<method>`.

  With `bucket_size`, the rows are split into consecutive buckets of that
  many, each bucket reduced on its own (a row of a `(num_buckets,
  num_segments, ...)` array) and the buckets then combined by `reducer`: the
  same result, for sums and products computed in a different order.
  """
  check_arraylike(name, data, segment_ids)
  check_out_sharding(out_sharding, f"jax.ops.{name}")
  mode = GatherScatterMode.FILL_OR_DROP if mode is None else mode
  data = jnp.asarray(data)
  segment_ids = jnp.asarray(segment_ids)
  if num_segments is None:
    num_segments = np.max(segment_ids) + 1   # traced ids: `concrete` raises below
  num_segments = operator.index(concrete(num_segments, f"{name}() `num_segments` argument."))
  if num_segments < 0:
    raise ValueError("num_segments must be non-negative.")
  dtype = data.dtype
  identity = _identity(method, dtype)
  update = dict(indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                mode=mode, wrap_negative_indices=False)
  if bucket_size is None:
    out = jnp.full((num_segments,) + data.shape[1:], identity, dtype)
    return getattr(out.at[segment_ids], method)(data, **update)
  num_buckets = -(-segment_ids.size // bucket_size)
  out = jnp.full((num_buckets, num_segments) + data.shape[1:], identity, dtype)
  buckets = jnp.arange(segment_ids.shape[0]) // bucket_size
  out = getattr(out.at[buckets, segment_ids], method)(data, **update)
  return reducer(out, axis=0).astype(dtype)


def segment_sum(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
  """The sums of `data`'s rows within segments (0 for an empty segment).

  `num_segments` defaults to `max(segment_ids) + 1`, which needs concrete
  ids: under `jit` pass it as a static value. `indices_are_sorted` and
  `unique_indices` are promises about the ids; `bucket_size` sums buckets of
  that many rows separately first; `mode` (a `GatherScatterMode` or its
  name) handles ids out of range, by default dropping them.
  """
  return _segment_update("segment_sum", "add", jnp.sum, data, segment_ids, num_segments,
                         indices_are_sorted, unique_indices, bucket_size, mode, out_sharding)


def segment_prod(data, segment_ids, num_segments=None, indices_are_sorted=False,
                 unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
  """The products of `data`'s rows within segments (1 for an empty segment);
  the arguments as for `segment_sum`."""
  return _segment_update("segment_prod", "multiply", jnp.prod, data, segment_ids,
                         num_segments, indices_are_sorted, unique_indices, bucket_size, mode,
                         out_sharding)


def segment_max(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
  """The maxima of `data`'s rows within segments (-inf, the least integer or
  False for an empty segment); the arguments as for `segment_sum`."""
  return _segment_update("segment_max", "max", jnp.max, data, segment_ids, num_segments,
                         indices_are_sorted, unique_indices, bucket_size, mode, out_sharding)


def segment_min(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
  """The minima of `data`'s rows within segments (+inf, the greatest integer
  or True for an empty segment); the arguments as for `segment_sum`."""
  return _segment_update("segment_min", "min", jnp.min, data, segment_ids, num_segments,
                         indices_are_sorted, unique_indices, bucket_size, mode, out_sharding)
