"""Pytrees: nested containers whose leaves transformations operate on.

A *pytree* is a Python value built from *nodes* (containers) and *leaves*.
Flattening a pytree yields its leaves in a fixed order together with a
`PyTreeDef` describing the container structure; unflattening reverses this.

Node types:

* ``None`` -- a node with no children, so it contributes zero leaves.
* ``tuple`` and ``list`` -- children in order.
* ``dict`` -- children in *sorted key order*; unflattening builds a dict whose
 keys are inserted in sorted order. Keys that do not compare (``{1: x, 'a': y}``)
 raise ``ValueError``, as in JAX.
* ``collections.OrderedDict`` -- children in insertion order.
* ``collections.defaultdict`` -- like dict; ``default_factory`` is kept.
* namedtuples (any tuple subclass with ``_fields``) -- rebuilt as the same class.
* types registered with `register_pytree_node` and friends.

Every other value is a leaf, including numpy arrays. Node types are matched by
*exact* type: an unregistered subclass of ``dict`` or ``list`` is a leaf.

A registered flatten function must return a pair ``(children, aux_data)``
(``RuntimeError`` otherwise, as JAX's) with iterable children (``TypeError``).
Flattening, unflattening and comparing treedefs use explicit stacks, so trees
thousands of levels deep work.
"""

from __future__ import annotations

import collections
import functools
import operator
from typing import Any, Callable, Hashable, Iterable

__all__ = [
  "PyTreeDef",
  "tree_flatten",
  "tree_unflatten",
  "tree_leaves",
  "tree_structure",
  "tree_map",
  "tree_all",
  "tree_reduce",
  "tree_transpose",
  "treedef_tuple",
  "treedef_children",
  "treedef_is_leaf",
  "all_leaves",
  "tree_flatten_with_path",
  "tree_leaves_with_path",
  "tree_map_with_path",
  "keystr",
  "SequenceKey",
  "DictKey",
  "GetAttrKey",
  "FlattenedIndexKey",
  "register_pytree_node",
  "register_pytree_with_keys",
  "register_pytree_node_class",
  "register_dataclass",
  "Partial",
  "register_pytree_with_keys_class",
  "register_static",
  "is_tree_node",
  "flatten_one_level",
  "flatten_one_level_with_keys",
  "tree_broadcast",
  "tree_reduce_associative",
  "default_registry",
  "KeyEntry",
  "KeyPath",
]


# ---------------------------------------------------------------------------
# Path keys
# ---------------------------------------------------------------------------

class _PathKey:
  """What the path keys share: one read-only field, named in ``__slots__``;
  keys of the same class with equal fields are equal (and hash alike); the
  repr is ``SequenceKey(idx=0)``. (Plain classes, not frozen dataclasses:
  those take long to create at import.)"""
  __slots__ = ()

  def _field(self):
    return getattr(self, self.__slots__[0])

  def __setattr__(self, name, value):
    raise AttributeError(f"cannot assign to field {name!r} of {type(self).__name__}")

  def __eq__(self, other):
    if type(other) is not type(self):
      return NotImplemented
    return self._field() == other._field()

  def __hash__(self):
    return hash((type(self), self._field()))

  def __repr__(self):
    return f"{type(self).__name__}({self.__slots__[0]}={self._field()!r})"

  def __reduce__(self):
    return type(self), (self._field(),)


class SequenceKey(_PathKey):
  """Position ``idx`` in a tuple or list; prints as ``[idx]``."""
  __slots__ = __match_args__ = ("idx",)

  def __init__(self, idx: int):
    object.__setattr__(self, "idx", idx)

  def __str__(self):
    return f"[{self.idx!r}]"


class DictKey(_PathKey):
  """Key ``key`` of a dict; prints as ``[key!r]``, e.g. ``['a']``."""
  __slots__ = __match_args__ = ("key",)

  def __init__(self, key: Hashable):
    object.__setattr__(self, "key", key)

  def __str__(self):
    return f"[{self.key!r}]"


class GetAttrKey(_PathKey):
  """Attribute ``name`` (namedtuple or dataclass field); prints as ``.name``."""
  __slots__ = __match_args__ = ("name",)

  def __init__(self, name: str):
    object.__setattr__(self, "name", name)

  def __str__(self):
    return f".{self.name}"


class FlattenedIndexKey(_PathKey):
  """Index of a child of a custom node registered without keys; prints as ``[key]``."""
  __slots__ = __match_args__ = ("key",)

  def __init__(self, key: int):
    object.__setattr__(self, "key", key)

  def __str__(self):
    return f"[{self.key!r}]"


KeyEntry = Any
KeyPath = tuple[KeyEntry, ...]


def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
  """Render a key path, e.g. ``keystr((SequenceKey(0), DictKey('a'))) == "[0]['a']"``.

  With ``simple=True`` each key is rendered bare (``0``, ``a``, ``name``) and
  the keys are joined with ``separator``.
  """
  if not simple:
    return separator.join(str(k) for k in keys)

  def bare(key):
    for attr in ("idx", "key", "name"):
      if hasattr(key, attr):
        return str(getattr(key, attr))
    return str(key)

  return separator.join(bare(k) for k in keys)


# ---------------------------------------------------------------------------
# Node-type registry
# ---------------------------------------------------------------------------

class _NodeType:
  """How to take apart and rebuild one kind of pytree node.

  ``flatten(x) -> (children, aux_data)``;
  ``flatten_with_keys(x) -> (((key, child), ...), aux_data)``;
  ``unflatten(aux_data, children) -> x``;
  ``to_str(aux_data, child_strs) -> str`` renders the node inside a PyTreeDef repr.
  Identity is what distinguishes node types.
  """
  __slots__ = ("name", "flatten", "flatten_with_keys", "unflatten", "to_str")

  def __init__(self, name: str,
               flatten: Callable[[Any], tuple[Iterable[Any], Any]],
               flatten_with_keys: Callable[[Any], tuple[Iterable[tuple[KeyEntry, Any]], Any]],
               unflatten: Callable[[Any, tuple[Any, ...]], Any],
               to_str: Callable[[Any, list[str]], str]):
    self.name, self.flatten, self.flatten_with_keys = name, flatten, flatten_with_keys
    self.unflatten, self.to_str = unflatten, to_str


_registry: dict[type, _NodeType] = {}


def _with_index_keys(flatten):
  """Build ``flatten_with_keys`` that labels children ``FlattenedIndexKey(i)``."""
  def flatten_with_keys(x):
    children, aux = flatten(x)
    return [(FlattenedIndexKey(i), c) for i, c in enumerate(children)], aux
  return flatten_with_keys


def _custom_to_str(nodetype):
  def to_str(aux, kids):
    return f"CustomNode({nodetype.__name__}[{aux!r}], [{', '.join(kids)}])"
  return to_str


def _checked(flatten):
  """A registered flatten function (or flatten_with_keys) returning
  ``(children as a list, aux_data)``, with JAX's errors for one that does not
  return a pair, or whose children are not iterable."""
  def checked_flatten(x):
    out = flatten(x)
    if type(out) is not tuple or len(out) != 2:
      raise RuntimeError("PyTree custom to_iterable function should return a pair; the "
                         f"flatten function of {type(x)} returned {out!r}.")
    children, aux = out
    try:
      return list(children), aux
    except TypeError:
      raise TypeError(f"The children returned by the flatten function of {type(x)} must "
                      f"be iterable, got {children!r}.") from None
  return checked_flatten


def _register(nodetype: type, node: _NodeType) -> None:
  if nodetype in _registry:
    raise ValueError(f"Duplicate custom PyTreeDef type registration for {nodetype}.")
  _registry[nodetype] = node


def register_pytree_with_keys(
  nodetype: type,
  flatten_with_keys: Callable[[Any], tuple[Iterable[tuple[KeyEntry, Any]], Any]],
  unflatten_func: Callable[[Any, Iterable[Any]], Any],
  flatten_func: Callable[[Any], tuple[Iterable[Any], Any]] | None = None,
) -> None:
  """Register ``nodetype`` as a node whose children carry path keys.

  ``flatten_with_keys(x)`` returns ``(((key, child), ...), aux_data)`` and
  ``unflatten_func(aux_data, children)`` rebuilds the node. ``flatten_func``
  (returning ``(children, aux_data)``) is used for key-less flattening; by
  default it is derived from ``flatten_with_keys``. ``aux_data`` must be
  hashable and comparable with ``==``: it is part of the treedef.
  """
  flatten_with_keys = _checked(flatten_with_keys)
  if flatten_func is None:
    def flatten_func(x):
      keyed, aux = flatten_with_keys(x)
      return [child for _, child in keyed], aux
  _register(nodetype, _NodeType(nodetype.__qualname__, _checked(flatten_func),
                                flatten_with_keys, unflatten_func, _custom_to_str(nodetype)))


def register_pytree_node(
  nodetype: type,
  flatten_func: Callable[[Any], tuple[Iterable[Any], Any]],
  unflatten_func: Callable[[Any, Iterable[Any]], Any],
  flatten_with_keys_func: Callable[[Any], tuple[Iterable[tuple[KeyEntry, Any]], Any]] | None = None,
) -> None:
  """Register ``nodetype`` as a pytree node.

  ``flatten_func(x)`` returns ``(children, aux_data)``;
  ``unflatten_func(aux_data, children)`` rebuilds the node. Unless
  ``flatten_with_keys_func`` is given, child paths use `FlattenedIndexKey`.
  Registering a type twice raises ``ValueError``.
  """
  if flatten_with_keys_func is None:
    flatten_with_keys_func = _with_index_keys(flatten_func)
  register_pytree_with_keys(nodetype, flatten_with_keys_func, unflatten_func, flatten_func)


def register_pytree_node_class(cls: type) -> type:
  """Class decorator: register ``cls`` using its own flatten/unflatten methods.

  ``x.tree_flatten()`` returns ``(children, aux_data)`` and the classmethod
  ``cls.tree_unflatten(aux_data, children)`` rebuilds an instance.
  """
  register_pytree_node(cls, operator.methodcaller("tree_flatten"), cls.tree_unflatten)
  return cls


def register_dataclass(
  nodetype: type,
  data_fields: Iterable[str] | None = None,
  meta_fields: Iterable[str] | None = None,
  drop_fields: Iterable[str] = (),
) -> type:
  """Register a dataclass-like type; usable as a class decorator.

  ``data_fields`` are children (leaves or subtrees); ``meta_fields`` are
  static aux data (must be hashable); ``drop_fields`` are ignored and must be
  reconstructible by the constructor's defaults. If both field lists are
  None, ``nodetype`` must be a dataclass: fields declared with
  ``metadata=dict(static=True)`` are meta, other ``init`` fields are data.
  The node is rebuilt as ``nodetype(**fields)``. Returns ``nodetype``.
  """
  import dataclasses  # here, not at import: only dataclass users need it
  if data_fields is None and meta_fields is None:
    if not dataclasses.is_dataclass(nodetype):
      raise TypeError("register_dataclass: data_fields and meta_fields are required "
              f"when {nodetype} is not a dataclass.")
    init_fields = [f for f in dataclasses.fields(nodetype) if f.init]
    meta_fields = [f.name for f in init_fields if f.metadata.get("static", False)]
    data_fields = [f.name for f in init_fields if not f.metadata.get("static", False)]
  elif data_fields is None or meta_fields is None:
    raise TypeError("register_dataclass: specify both data_fields and meta_fields, or neither.")
  data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)

  if dataclasses.is_dataclass(nodetype):
    init_names = {f.name for f in dataclasses.fields(nodetype) if f.init}
    given = set(data_fields) | set(meta_fields) | set(drop_fields)
    if given != init_names:
      raise ValueError(
        f"register_dataclass: data_fields, meta_fields and drop_fields of {nodetype} "
        f"must together name exactly its init fields {sorted(init_names)}; "
        f"got {sorted(given)}.")

  def flatten_with_keys(x):
    children = [(GetAttrKey(name), getattr(x, name)) for name in data_fields]
    return children, tuple(getattr(x, name) for name in meta_fields)

  def flatten(x):
    return ([getattr(x, name) for name in data_fields],
            tuple(getattr(x, name) for name in meta_fields))

  def unflatten(meta, children):
    return nodetype(**dict(zip(meta_fields, meta)), **dict(zip(data_fields, children)))

  register_pytree_with_keys(nodetype, flatten_with_keys, unflatten, flatten)
  return nodetype


def _dict_str(keys, kids):
  return "{" + ", ".join(f"{k!r}: {s}" for k, s in zip(keys, kids)) + "}"


def _tuple_str(_, kids):
  return f"({kids[0]},)" if len(kids) == 1 else f"({', '.join(kids)})"


def _sorted_keys(d):
  """The keys of dict `d`, sorted; keys that do not compare raise JAX's ValueError."""
  try:
    return tuple(sorted(d))
  except TypeError as e:
    raise ValueError("Comparator raised exception while sorting pytree dictionary keys.") from e


def _flatten_dict(d):
  keys = _sorted_keys(d)
  return [d[k] for k in keys], keys


def _flatten_defaultdict(d):
  children, keys = _flatten_dict(d)
  return children, (d.default_factory, keys)


_register(type(None), _NodeType(
  "None",
  flatten=lambda x: ((), None),
  flatten_with_keys=lambda x: ((), None),
  unflatten=lambda aux, children: None,
  to_str=lambda aux, kids: "None"))
_register(tuple, _NodeType(
  "tuple",
  flatten=lambda t: (t, None),
  flatten_with_keys=lambda t: ([(SequenceKey(i), c) for i, c in enumerate(t)], None),
  unflatten=lambda aux, children: tuple(children),
  to_str=_tuple_str))
_register(list, _NodeType(
  "list",
  flatten=lambda xs: (xs, None),
  flatten_with_keys=lambda xs: ([(SequenceKey(i), c) for i, c in enumerate(xs)], None),
  unflatten=lambda aux, children: list(children),
  to_str=lambda aux, kids: f"[{', '.join(kids)}]"))
_register(dict, _NodeType(
  "dict",
  flatten=_flatten_dict,
  flatten_with_keys=lambda d: ([(DictKey(k), d[k]) for k in _sorted_keys(d)], _sorted_keys(d)),
  unflatten=lambda keys, children: dict(zip(keys, children)),
  to_str=_dict_str))
_register(collections.OrderedDict, _NodeType(
  "OrderedDict",
  flatten=lambda d: (list(d.values()), tuple(d)),
  flatten_with_keys=lambda d: ([(DictKey(k), v) for k, v in d.items()], tuple(d)),
  unflatten=lambda keys, children: collections.OrderedDict(zip(keys, children)),
  to_str=lambda keys, kids: f"OrderedDict({_dict_str(keys, kids)})"))
_register(collections.defaultdict, _NodeType(
  "defaultdict",
  flatten=_flatten_defaultdict,
  flatten_with_keys=lambda d: ([(DictKey(k), d[k]) for k in _sorted_keys(d)],
                 (d.default_factory, _sorted_keys(d))),
  unflatten=lambda aux, children: collections.defaultdict(aux[0], zip(aux[1], children)),
  to_str=lambda aux, kids: f"defaultdict({aux[0]!r}, {_dict_str(aux[1], kids)})"))

# Namedtuples are recognised structurally rather than through the registry;
# their aux data is the namedtuple class itself.
_NAMEDTUPLE = _NodeType(
  "namedtuple",
  flatten=lambda t: (tuple(t), type(t)),
  flatten_with_keys=lambda t: ([(GetAttrKey(f), c) for f, c in zip(t._fields, t)], type(t)),
  unflatten=lambda cls, children: cls(*children),
  to_str=lambda cls, kids: f"{cls.__name__}("
                           f"{', '.join(f'{f}={s}' for f, s in zip(cls._fields, kids))})")


def _node_type_of(x: Any) -> _NodeType | None:
  """The node type of ``x``, or None if ``x`` is a leaf."""
  node_type = _registry.get(type(x))
  if node_type is None and isinstance(x, tuple) and hasattr(type(x), "_fields"):
    return _NAMEDTUPLE
  return node_type


# ---------------------------------------------------------------------------
# PyTreeDef
# ---------------------------------------------------------------------------

class PyTreeDef:
  """The structure of a pytree: its nodes and aux data, with leaves as holes.

  Two treedefs are equal iff they have the same node types, the same aux data
  (compared with ``==``; e.g. dict keys, namedtuple class, custom aux data)
  and equal children. Leaves print as ``*``: ``PyTreeDef((*, {'a': *}))``.
  Obtain treedefs from `tree_flatten` / `tree_structure`, not the constructor.
  """

  def __init__(self, node_type: _NodeType | None, node_data: Any = None,
         children: tuple[PyTreeDef, ...] = ()):
    self._node_type = node_type  # None means "leaf".
    self._node_data = node_data
    self._children = tuple(children)
    self._nodes = None  # the traversal, once computed
    if node_type is None:
      self.num_leaves, self.num_nodes = 1, 1
    else:
      self.num_leaves = sum(c.num_leaves for c in self._children)
      self.num_nodes = 1 + sum(c.num_nodes for c in self._children)

  def children(self) -> list[PyTreeDef]:
    """Treedefs of this node's immediate children (empty for a leaf)."""
    return list(self._children)

  def unflatten(self, leaves: Iterable[Any]) -> Any:
    """Build a pytree of this structure from ``leaves`` (in flattening order)."""
    leaves = list(leaves)
    if len(leaves) != self.num_leaves:
      few_or_many = "few" if len(leaves) < self.num_leaves else "many"
      raise ValueError(f"Too {few_or_many} leaves for PyTreeDef; "
               f"expected {self.num_leaves}, got {len(leaves)}.")
    return self._build(iter(leaves))

  def _build(self, leaves: Iterable[Any]) -> Any:
    return self._fold(lambda: next(leaves),
                      lambda d, kids: d._node_type.unflatten(d._node_data, tuple(kids)))

  def _fold(self, leaf: Callable[[], Any], node: Callable[[PyTreeDef, list[Any]], Any]) -> Any:
    """Post-order: ``leaf()`` for each leaf, ``node(treedef, child_results)``
    for each node. An explicit stack (not recursion) keeps deep trees (a
    thousand levels) within Python's limits."""
    if self._node_type is None:
      return leaf()
    stack = [(self, iter(self._children), [])]
    while True:
      treedef, pending, done = stack[-1]
      child = next(pending, None)
      if child is None:
        stack.pop()
        result = node(treedef, done)
        if not stack:
          return result
        stack[-1][2].append(result)
      elif child._node_type is None:
        done.append(leaf())
      else:
        stack.append((child, iter(child._children), []))

  def _traversal(self) -> list[tuple[_NodeType | None, Any, int]]:
    """(node type, aux data, number of children) of every node, in
    pre-order: two treedefs are equal iff their traversals are."""
    if self._nodes is None:
      self._nodes, stack = [], [self]
      while stack:
        treedef = stack.pop()
        self._nodes.append((treedef._node_type, treedef._node_data, len(treedef._children))
                           if treedef._node_type is not None else _LEAF_NODE)
        stack.extend(reversed(treedef._children))
    return self._nodes

  def flatten_up_to(self, tree: Any) -> list[Any]:
    """Flatten ``tree`` only as deep as this treedef goes.

    ``tree`` must contain this structure as a prefix: every node here must
    match a node of ``tree`` (same type, aux data and arity). The returned
    list has one entry per leaf of ``self`` -- the corresponding subtree of
    ``tree``. Raises ``ValueError`` on mismatch, naming the path.
    """
    out: list[Any] = []
    stack = [(self, tree, ())]  # pre-order, with an explicit stack
    while stack:
      treedef, x, path = stack.pop()
      node_type = treedef._node_type
      if node_type is None:
        out.append(x)
        continue
      if _node_type_of(x) is not node_type:
        raise _mismatch(treedef, x, path, "type")
      keyed_children, node_data = node_type.flatten_with_keys(x)
      keyed_children = list(keyed_children)
      if len(keyed_children) != len(treedef._children):
        raise _mismatch(treedef, x, path, "arity", len(keyed_children))
      if node_data != treedef._node_data:
        raise _mismatch(treedef, x, path, "data", node_data)
      stack.extend(reversed([(child_def, child, path + (key,)) for child_def, (key, child)
                             in zip(treedef._children, keyed_children)]))
    return out

  def __repr__(self):
    return "PyTreeDef(" + self._fold(
        lambda: "*", lambda d, kids: d._node_type.to_str(d._node_data, kids)) + ")"

  def __eq__(self, other):
    if not isinstance(other, PyTreeDef):
      return NotImplemented
    return self._traversal() == other._traversal()  # node types compare by identity

  def __hash__(self):
    """As JAX's: of each node's type and number of children, not its aux data
    (which needs only `==`, so a treedef with unhashable aux data hashes)."""
    return hash(tuple((node_type, arity) for node_type, _, arity in self._traversal()))


_LEAF = PyTreeDef(None)
_LEAF_NODE = (None, None, 0)  # a leaf's entry in a traversal


def _where(path: KeyPath) -> str:
  return f"at key path {keystr(path)!r}" if path else "at the root"


_BUILTIN_NAMES = {"None": "None", "tuple": "tuple", "list": "list", "dict": "dict",
                  "namedtuple": "named tuple"}
_ARITY_NAMES = {"tuple": "Tuple", "list": "List", "namedtuple": "Named tuple"}


def _mismatch(treedef: "PyTreeDef", x: Any, path: KeyPath, what: str, got: Any = None):
  """The ValueError of `flatten_up_to` for a node `x` that does not match
  `treedef`'s (`what`: its "type", its "arity" `got`, or its aux "data"
  `got`): JAX's message (`Dict key mismatch; ...`, `Tuple arity mismatch:
  ...`), then where in the tree it is."""
  name, data = treedef._node_type.name, treedef._node_data
  if name == "dict" and what != "type":
    text = f"Dict key mismatch; expected keys: {list(data)}; dict: {x!r}"
  elif what == "type":
    text = (f"Expected {_BUILTIN_NAMES[name]}, got {x!r}" if name in _BUILTIN_NAMES
            else f"Custom node type mismatch; expected type: {name}; value: {x!r}")
  elif what == "arity":
    text = (f"{_ARITY_NAMES.get(name, 'Custom type')} arity mismatch: {got} != "
            f"{len(treedef._children)}; value: {x!r}")
  elif name == "namedtuple":
    text = f"Named tuple type mismatch: expected type: {data!r}, tuple: {x!r}"
  else:
    text = f"Mismatch custom node data: {got!r} != {data!r}; value: {x!r}"
  return ValueError(f"{text} ({_where(path)}).")


# ---------------------------------------------------------------------------
# Flattening and friends
# ---------------------------------------------------------------------------

def _flatten(tree: Any, is_leaf: Callable[..., bool] | None, with_path: bool,
             is_leaf_takes_path: bool = False):
  """Depth-first flatten; leaves are ``(path, leaf)`` pairs when ``with_path``
  (and ``is_leaf`` is called as ``is_leaf(path, x)`` when ``is_leaf_takes_path``).

  The nodes are visited with an explicit stack (not recursion), so deep
  trees (a thousand levels) stay within Python's limits; the treedef is then
  assembled from the pre-order traversal.
  """
  leaves: list[Any] = []
  traversal: list[Any] = []  # pre-order (node type, aux data, arity), as PyTreeDef._traversal
  stack = [((), tree)] if with_path else [tree]
  while stack:
    if with_path:
      path, x = stack.pop()
    else:
      x = stack.pop()
    stop = is_leaf is not None and (is_leaf(path, x) if is_leaf_takes_path else is_leaf(x))
    node_type = None if stop else _node_type_of(x)
    if node_type is None:
      leaves.append((path, x) if with_path else x)
      traversal.append(_LEAF_NODE)
      continue
    if with_path:
      keyed_children, node_data = node_type.flatten_with_keys(x)
      children = [(path + (k,), c) for k, c in keyed_children]
    else:
      children, node_data = node_type.flatten(x)
    traversal.append((node_type, node_data, len(children)))
    stack.extend(reversed(children))
  # Read backwards, the traversal meets each node just after its children,
  # whose treedefs are then the last `arity` built, last child first.
  built: list[PyTreeDef] = []
  for node_type, node_data, arity in reversed(traversal):
    if node_type is None:
      built.append(_LEAF)
      continue
    first = len(built) - arity
    children = tuple(reversed(built[first:]))
    del built[first:]
    built.append(PyTreeDef(node_type, node_data, children))
  treedef, = built
  treedef._nodes = traversal
  return leaves, treedef


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None
         ) -> tuple[list[Any], PyTreeDef]:
  """Return ``(leaves, treedef)``. ``is_leaf(x)`` true stops descent at ``x``."""
  return _flatten(tree, is_leaf, with_path=False)


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
  """Inverse of `tree_flatten`: rebuild a pytree from ``treedef`` and ``leaves``."""
  return treedef.unflatten(leaves)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
  """The leaves of ``tree`` in flattening order."""
  return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
  """The treedef of ``tree``."""
  return tree_flatten(tree, is_leaf)[1]


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any,
       is_leaf: Callable[[Any], bool] | None = None) -> Any:
  """Apply ``f`` leaf-wise: result has ``tree``'s structure.

  Each tree in ``rest`` must have ``tree``'s structure as a prefix; ``f``
  receives each leaf of ``tree`` plus the corresponding subtree of each of
  ``rest``.
  """
  leaves, treedef = tree_flatten(tree, is_leaf)
  others = [treedef.flatten_up_to(r) for r in rest]
  return treedef.unflatten(f(*xs) for xs in zip(leaves, *others))


def tree_all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
  """True iff every leaf of ``tree`` is truthy (True for a tree with no leaves)."""
  return all(tree_leaves(tree, is_leaf))


_NO_INITIALIZER = object()


def tree_reduce(function: Callable[[Any, Any], Any], tree: Any,
        initializer: Any = _NO_INITIALIZER,
        is_leaf: Callable[[Any], bool] | None = None) -> Any:
  """``functools.reduce(function, tree_leaves(tree), initializer)``."""
  leaves = tree_leaves(tree, is_leaf)
  if initializer is _NO_INITIALIZER:
    return functools.reduce(function, leaves)
  return functools.reduce(function, leaves, initializer)


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None,
          pytree_to_transpose: Any) -> Any:
  """Turn an outer-of-inner pytree into an inner-of-outer pytree.

  E.g. outer ``[*, *]``, inner ``(*, *)``: ``[(1, 2), (3, 4)] -> ([1, 3], [2, 4])``.
  If ``inner_treedef`` is None it is taken from the first outer leaf's subtree.
  """
  if inner_treedef is None:
    inner_treedef = tree_structure(outer_treedef.flatten_up_to(pytree_to_transpose)[0])
  flat, treedef = tree_flatten(pytree_to_transpose)
  inner_size, outer_size = inner_treedef.num_leaves, outer_treedef.num_leaves
  if treedef.num_leaves != inner_size * outer_size:
    raise TypeError(f"tree_transpose: expected {outer_size} * {inner_size} leaves "
            f"(outer {outer_treedef} of inner {inner_treedef}), "
            f"got {treedef.num_leaves} in {treedef}.")
  rows = [flat[i * inner_size:(i + 1) * inner_size] for i in range(outer_size)]
  subtrees = [outer_treedef.unflatten(column) for column in zip(*rows)]
  return inner_treedef.unflatten(subtrees)


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
  """The treedef of a tuple whose children have the given treedefs."""
  return PyTreeDef(_registry[tuple], None, tuple(treedefs))


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
  """Treedefs of the immediate children of ``treedef``'s root."""
  return treedef.children()


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
  """True iff ``treedef`` is a single node (a leaf, or a childless node such as None)."""
  return treedef.num_nodes == 1


def all_leaves(iterable: Iterable[Any], is_leaf: Callable[[Any], bool] | None = None) -> bool:
  """True iff every element is a leaf (under ``is_leaf`` if given); None is not a leaf."""
  return all((is_leaf is not None and is_leaf(x)) or _node_type_of(x) is None
        for x in iterable)


# ---------------------------------------------------------------------------
# Key paths
# ---------------------------------------------------------------------------

def tree_flatten_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                           is_leaf_takes_path: bool = False
                           ) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
  """Like `tree_flatten`, but each leaf comes as ``(key_path, leaf)``; with
  ``is_leaf_takes_path``, ``is_leaf`` is called as ``is_leaf(key_path, x)``."""
  return _flatten(tree, is_leaf, with_path=True, is_leaf_takes_path=is_leaf_takes_path)


def tree_leaves_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                          is_leaf_takes_path: bool = False) -> list[tuple[KeyPath, Any]]:
  """``(key_path, leaf)`` pairs of ``tree`` in flattening order."""
  return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_map_with_path(f: Callable[..., Any], tree: Any, *rest: Any,
                       is_leaf: Callable[..., bool] | None = None,
                       is_leaf_takes_path: bool = False) -> Any:
  """Like `tree_map`, but ``f`` is called as ``f(key_path, leaf, *others)``."""
  path_leaves, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
  others = [treedef.flatten_up_to(r) for r in rest]
  return treedef.unflatten(f(path, x, *xs)
               for (path, x), *xs in zip(path_leaves, *others))


# ---------------------------------------------------------------------------
# More registration and one-level utilities
# ---------------------------------------------------------------------------

def register_pytree_with_keys_class(cls: type) -> type:
  """Class decorator: like `register_pytree_node_class`, with
  ``x.tree_flatten_with_keys()`` giving ``(((key, child), ...), aux_data)``."""
  register_pytree_with_keys(cls, operator.methodcaller("tree_flatten_with_keys"),
               cls.tree_unflatten)
  return cls


def register_static(cls: type) -> type:
  """Class decorator: instances of ``cls`` are nodes with no children.

  The instance itself is the aux data, so it must be hashable; it passes
  through transformations as a static value rather than a leaf.
  """
  register_pytree_node(cls, lambda x: ((), x), lambda x, _: x)
  return cls


def is_tree_node(typ: type) -> bool:
  """True iff ``typ`` is a registered pytree node type (built in, such as
  ``tuple`` and ``NoneType``, or custom) or a namedtuple class."""
  return (isinstance(typ, type)
          and (typ in _registry or issubclass(typ, tuple) and hasattr(typ, "_fields")))


def flatten_one_level(tree: Any) -> tuple[list[Any], Any]:
  """The immediate children of a node and its aux data; ValueError for a leaf."""
  node_type = _node_type_of(tree)
  if node_type is None:
    raise ValueError(f"flatten_one_level requires a pytree node, got leaf {tree!r}.")
  children, aux = node_type.flatten(tree)
  return list(children), aux


def flatten_one_level_with_keys(tree: Any) -> tuple[list[tuple[KeyEntry, Any]], Any]:
  """Like `flatten_one_level`, with each child as ``(key, child)``."""
  node_type = _node_type_of(tree)
  if node_type is None:
    raise ValueError(f"flatten_one_level requires a pytree node, got leaf {tree!r}.")
  children, aux = node_type.flatten_with_keys(tree)
  return list(children), aux


def tree_broadcast(prefix_tree: Any, full_tree: Any,
          is_leaf: Callable[[Any], bool] | None = None) -> Any:
  """Copies each leaf of ``prefix_tree`` over the matching subtree of ``full_tree``."""
  leaves, treedef = tree_flatten(prefix_tree, is_leaf)
  subtrees = treedef.flatten_up_to(full_tree)
  return treedef.unflatten(tree_map(lambda _, leaf=leaf: leaf, sub)
               for leaf, sub in zip(leaves, subtrees))


def tree_reduce_associative(operation: Callable[[Any, Any], Any], tree: Any, *,
              identity: Any = _NO_INITIALIZER,
              is_leaf: Callable[[Any], bool] | None = None) -> Any:
  """Reduces the leaves with an associative ``operation`` (pairwise, as a tree).

  With no leaves, returns ``identity`` (ValueError if none was given).
  """
  leaves = tree_leaves(tree, is_leaf)
  if not leaves:
    if identity is _NO_INITIALIZER:
      raise ValueError("tree_reduce_associative of an empty tree needs an identity.")
    return identity
  while len(leaves) > 1:
    pairs = [operation(a, b) for a, b in zip(leaves[::2], leaves[1::2])]
    leaves = pairs + ([leaves[-1]] if len(leaves) % 2 else [])
  return leaves[0]


default_registry = _registry
"""The registry of node types (read-only by convention)."""


# ---------------------------------------------------------------------------
# Partial
# ---------------------------------------------------------------------------

class Partial(functools.partial):
  """A `functools.partial` that is a pytree.

  The wrapped function is aux data (static); ``args`` and ``keywords`` are
  children, so they can hold traced values and be mapped over.
  """


register_pytree_node(
  Partial,
  lambda p: ((p.args, p.keywords), p.func),
  lambda func, children: Partial(func, *children[0], **children[1]),
)
