"""`jax.flatten_util`: a pytree of arrays as one flat vector, and back."""

import warnings

import numpy as np

from refimpl import dtypes, lax, tree_util

__all__ = ["ravel_pytree"]


def ravel_pytree(pytree):
  """Ravels the leaves of `pytree` (arrays and scalars) into one 1-D array.

  Returns `(flat, unravel)`: `flat` concatenates the raveled leaves in
  flattening order, in the dtype their dtypes promote to (an empty
  float32 array for a pytree without leaves); `unravel(v)` rebuilds a
  pytree of the same structure from a vector `v` of flat's length, each
  leaf reshaped and cast back to its dtype. Where the leaves all have one
  dtype, `unravel` keeps the dtype of `v`; otherwise `v` must have flat's
  dtype (TypeError). Two unravel functions of the same structure, shapes
  and dtypes are equal (and hash alike), so one can be a static argument.
  """
  leaves, treedef = tree_util.tree_flatten(pytree)
  if not leaves:
    return lax.full([0], 0, np.float32), _Unravel(treedef, (), (), None, None)
  from_dtypes = tuple(dtypes.dtype(leaf) for leaf in leaves)
  to_dtype = dtypes.result_type(*from_dtypes)
  sizes = tuple(int(np.size(leaf)) for leaf in leaves)
  shapes = tuple(np.shape(leaf) for leaf in leaves)
  if all(d == to_dtype for d in from_dtypes):
    flat = lax.concatenate([lax.reshape(leaf, (size,)) for leaf, size in zip(leaves, sizes)], 0)
    return flat, _Unravel(treedef, sizes, shapes, None, None)
  flat = lax.concatenate([lax.reshape(lax.convert_element_type(leaf, to_dtype), (size,))
                          for leaf, size in zip(leaves, sizes)], 0)
  return flat, _Unravel(treedef, sizes, shapes, from_dtypes, to_dtype)


class _Unravel:
  """The `unravel` of `ravel_pytree`: the leaves' sizes, shapes and (where
  they differ from the flat dtype) dtypes, compared by value."""

  def __init__(self, treedef, sizes, shapes, from_dtypes, to_dtype):
    self._key = (treedef, sizes, shapes, from_dtypes, to_dtype)

  def __eq__(self, other):
    return isinstance(other, _Unravel) and self._key == other._key

  def __hash__(self):
    return hash(self._key)

  def __call__(self, flat):
    treedef, sizes, shapes, from_dtypes, to_dtype = self._key
    if not sizes:
      if np.shape(flat) != (0,):
        raise ValueError(f"The unravel function expected an array of shape (0,), "
                         f"got shape {np.shape(flat)}.")
      return tree_util.tree_unflatten(treedef, [])
    if to_dtype is not None and dtypes.dtype(flat) != to_dtype:
      raise TypeError(f"unravel function given array of dtype {dtypes.dtype(flat)}, "
                      f"but expected dtype {to_dtype}")
    chunks = lax.split(flat, sizes)
    leaves = [lax.reshape(chunk, shape) for chunk, shape in zip(chunks, shapes)]
    if from_dtypes is not None:
      with warnings.catch_warnings():   # (real leaves of a complex vector: no ComplexWarning)
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        leaves = [lax.convert_element_type(leaf, d) for leaf, d in zip(leaves, from_dtypes)]
    return tree_util.tree_unflatten(treedef, leaves)
