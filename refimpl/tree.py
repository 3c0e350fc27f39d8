"""`refimpl.tree`: short names for the pytree utilities, as `jax.tree`."""

import dataclasses

from refimpl.tree_util import (tree_all as all, tree_flatten as flatten,  # noqa: F401
                               tree_broadcast as broadcast,
                               tree_flatten_with_path as flatten_with_path,
                               tree_leaves as leaves,
                               tree_leaves_with_path as leaves_with_path,
                               tree_map as map, tree_map_with_path as map_with_path,
                               tree_reduce as reduce,
                               tree_reduce_associative as reduce_associative,
                               tree_structure as structure,
                               tree_transpose as transpose,
                               tree_unflatten as unflatten)


def static(**kwargs):
  """A static field of a dataclass registered with
  `tree_util.register_dataclass`: `dataclasses.field(**kwargs)` with
  `static=True` added to its metadata, so that the field is part of the
  treedef (hashable metadata) rather than a child."""
  metadata = dict(kwargs.pop("metadata", None) or {})
  metadata["static"] = True
  return dataclasses.field(metadata=metadata, **kwargs)
