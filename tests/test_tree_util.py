import collections
import dataclasses
import operator

import numpy as np
import pytest
from hypothesis import given, strategies as st

from refimpl import tree_util as tu
from refimpl.tree_util import DictKey, FlattenedIndexKey, GetAttrKey, SequenceKey

Point = collections.namedtuple("Point", ["x", "y"])


def _extend(children):
  return st.one_of(
    st.lists(children, max_size=3).map(tuple),
    st.lists(children, max_size=3),
    st.dictionaries(st.text(max_size=2), children, max_size=3),
    st.builds(Point, children, children),
  )


trees = st.recursive(st.one_of(st.integers(), st.none()), _extend, max_leaves=20)


# --- flatten / unflatten -----------------------------------------------------

@given(trees)
def test_flatten_unflatten_round_trip(tree):
  leaves, treedef = tu.tree_flatten(tree)
  assert all(isinstance(x, int) for x in leaves)
  assert len(leaves) == treedef.num_leaves
  rebuilt = tu.tree_unflatten(treedef, leaves)
  assert rebuilt == tree
  # == cannot tell a namedtuple from a tuple; the structure can.
  assert tu.tree_structure(rebuilt) == treedef
  assert treedef.flatten_up_to(tree) == leaves


@given(trees)
def test_tree_map_preserves_structure(tree):
  out = tu.tree_map(lambda x: x + 1, tree)
  assert tu.tree_structure(out) == tu.tree_structure(tree)
  assert tu.tree_leaves(out) == [x + 1 for x in tu.tree_leaves(tree)]


def test_dict_children_in_sorted_key_order():
  assert tu.tree_leaves({"b": 1, "a": 2}) == [2, 1]
  rebuilt = tu.tree_unflatten(tu.tree_structure({"b": 0, "a": 0}), [10, 20])
  assert rebuilt == {"a": 10, "b": 20}
  assert list(rebuilt) == ["a", "b"]


def test_ordered_dict_keeps_insertion_order():
  od = collections.OrderedDict([("b", 1), ("a", 2)])
  leaves, treedef = tu.tree_flatten(od)
  assert leaves == [1, 2]
  rebuilt = tu.tree_unflatten(treedef, leaves)
  assert type(rebuilt) is collections.OrderedDict
  assert list(rebuilt.items()) == [("b", 1), ("a", 2)]
  assert treedef != tu.tree_structure({"b": 1, "a": 2})


def test_defaultdict_sorted_and_keeps_factory():
  dd = collections.defaultdict(list, {"b": 1, "a": 2})
  leaves, treedef = tu.tree_flatten(dd)
  assert leaves == [2, 1]
  rebuilt = tu.tree_unflatten(treedef, [3, 4])
  assert type(rebuilt) is collections.defaultdict
  assert rebuilt.default_factory is list
  assert dict(rebuilt) == {"a": 3, "b": 4}
  assert treedef != tu.tree_structure(collections.defaultdict(set, {"b": 1, "a": 2}))


def test_none_is_a_node_without_leaves():
  leaves, treedef = tu.tree_flatten(None)
  assert leaves == []
  assert treedef.num_leaves == 0
  assert treedef.num_nodes == 1
  assert tu.tree_leaves([None, 1, (None,)]) == [1]
  assert tu.tree_unflatten(treedef, []) is None
  assert tu.tree_map(lambda x: x * 2, {"a": None, "b": 3}) == {"a": None, "b": 6}


def test_namedtuple_rebuilt_as_same_class():
  leaves, treedef = tu.tree_flatten(Point(1, (2, 3)))
  assert leaves == [1, 2, 3]
  rebuilt = tu.tree_unflatten(treedef, [4, 5, 6])
  assert type(rebuilt) is Point
  assert rebuilt == Point(4, (5, 6))
  assert treedef != tu.tree_structure((1, (2, 3)))


def test_unregistered_objects_and_arrays_are_leaves():
  arr = np.arange(3)
  obj = object()

  class MyDict(dict):
    pass

  sub = MyDict(a=1)
  leaves = tu.tree_leaves([arr, obj, sub])
  assert len(leaves) == 3
  assert leaves[0] is arr and leaves[1] is obj and leaves[2] is sub


def test_unflatten_wrong_leaf_count():
  treedef = tu.tree_structure((1, 2))
  with pytest.raises(ValueError, match="expected 2, got 1"):
    tu.tree_unflatten(treedef, [1])
  with pytest.raises(ValueError, match="expected 2, got 3"):
    tu.tree_unflatten(treedef, [1, 2, 3])


def test_is_leaf_stops_descent():
  tree = [(1, 2), {"a": (3, 4)}, None]
  leaves = tu.tree_leaves(tree, is_leaf=lambda x: isinstance(x, tuple))
  assert leaves == [(1, 2), (3, 4)]
  assert tu.tree_leaves(tree, is_leaf=lambda x: x is None) == [1, 2, 3, 4, None]
  doubled = tu.tree_map(lambda t: t * 2, tree, is_leaf=lambda x: isinstance(x, tuple))
  assert doubled == [(1, 2, 1, 2), {"a": (3, 4, 3, 4)}, None]


# --- tree_map and reductions ---------------------------------------------------

def test_tree_map_over_several_trees():
  a = {"x": 1, "y": (2, 3)}
  b = {"x": 10, "y": (20, 30)}
  c = {"x": 100, "y": (200, 300)}
  assert tu.tree_map(lambda p, q, r: p + q + r, a, b, c) == {"x": 111, "y": (222, 333)}


def test_tree_map_rest_may_be_deeper_than_tree():
  # Each leaf of the first tree pairs with a whole subtree of the second.
  out = tu.tree_map(lambda x, sub: (x, sub), [1, 2], [(3, 4), {"k": 5}])
  assert out == [(1, (3, 4)), (2, {"k": 5})]


def test_tree_map_structure_mismatch_raises():
  with pytest.raises(ValueError, match=r"^Expected tuple, got \[1, 2\] \(at the root\)\.$"):
    tu.tree_map(operator.add, (1, 2), [1, 2])


def test_tree_all_and_reduce():
  assert tu.tree_all([True, (1, {"a": "x"})])
  assert not tu.tree_all([True, (0,)])
  assert tu.tree_all(None)
  assert tu.tree_reduce(operator.add, [1, (2, 3)]) == 6
  assert tu.tree_reduce(operator.add, [1, (2, 3)], 10) == 16
  assert tu.tree_reduce(operator.add, [], initializer=7) == 7


def test_all_leaves():
  assert tu.all_leaves([1, "a", np.zeros(2)])
  assert not tu.all_leaves([1, (2,)])
  assert not tu.all_leaves([None])
  assert tu.all_leaves([1, (2,)], is_leaf=lambda x: isinstance(x, tuple))


def test_tree_transpose():
  outer = tu.tree_structure([0, 0, 0])
  inner = tu.tree_structure((0, {"a": 0}))
  tree = [(1, {"a": 2}), (3, {"a": 4}), (5, {"a": 6})]
  expected = ([1, 3, 5], {"a": [2, 4, 6]})
  assert tu.tree_transpose(outer, inner, tree) == expected
  assert tu.tree_transpose(outer, None, tree) == expected
  with pytest.raises(TypeError, match="3 \\* 2 leaves"):
    tu.tree_transpose(outer, inner, [(1, {"a": 2})] * 2)


# --- PyTreeDef -------------------------------------------------------------------

def test_treedef_repr():
  assert repr(tu.tree_structure((1, {"a": 2}))) == "PyTreeDef((*, {'a': *}))"
  assert repr(tu.tree_structure([None, (1,)])) == "PyTreeDef([None, (*,)])"
  assert repr(tu.tree_structure(Point(1, 2))) == "PyTreeDef(Point(x=*, y=*))"
  assert repr(tu.tree_structure(5)) == "PyTreeDef(*)"


def test_treedef_equality_and_hash():
  t1 = tu.tree_structure({"a": 1, "b": (2, 3)})
  t2 = tu.tree_structure({"b": ("x", "y"), "a": "z"})
  assert t1 == t2
  assert hash(t1) == hash(t2)
  assert len({t1, t2}) == 1
  assert t1 != tu.tree_structure({"a": 1, "c": (2, 3)})
  assert t1 != tu.tree_structure({"a": 1, "b": [2, 3]})
  assert tu.tree_structure((1, 2)) != tu.tree_structure((1, 2, 3))
  assert tu.tree_structure(None) != tu.tree_structure(1)


def test_treedef_hash_ignores_aux_data_as_jaxs():
  """JAX hashes a node's type and arity only: aux data needs `==`, not a hash."""
  @tu.register_pytree_node_class
  class Tagged:
    def __init__(self, tags, x):
      self.tags, self.x = tags, x

    def tree_flatten(self):
      return (self.x,), list(self.tags)   # unhashable aux data

    @classmethod
    def tree_unflatten(cls, tags, children):
      return cls(tags, *children)

  t1, t2 = tu.tree_structure(Tagged("ab", 1)), tu.tree_structure(Tagged("cd", 1))
  assert t1 != t2 and hash(t1) == hash(t2)
  assert len({t1, t2, tu.tree_structure(Tagged("ab", 5))}) == 2
  assert hash(tu.tree_structure({"a": 1})) == hash(tu.tree_structure({"b": 1}))


def test_treedef_counts_and_children():
  treedef = tu.tree_structure((1, [2, None], {"a": 3}))
  assert treedef.num_leaves == 3
  # tuple, 1, list, 2, None, dict, 3
  assert treedef.num_nodes == 7
  kids = treedef.children()
  assert kids == [tu.tree_structure(0), tu.tree_structure([0, None]), tu.tree_structure({"a": 0})]
  assert tu.treedef_children(treedef) == kids
  assert tu.treedef_tuple(kids) == treedef
  assert tu.tree_structure(1).children() == []


def test_treedef_is_leaf():
  assert tu.treedef_is_leaf(tu.tree_structure(1))
  assert tu.treedef_is_leaf(tu.tree_structure(None))
  assert not tu.treedef_is_leaf(tu.tree_structure((1,)))


def test_treedef_unflatten_method():
  treedef = tu.tree_structure({"a": [0, 0]})
  assert treedef.unflatten(iter([1, 2])) == {"a": [1, 2]}


def test_flatten_up_to():
  treedef = tu.tree_structure([0, {"a": 0}])
  assert treedef.flatten_up_to([(1, 2), {"a": [3]}]) == [(1, 2), [3]]


@pytest.mark.parametrize("tree, message", [   # JAX's messages, then where
  ((1, {"a": 2}), r"^Expected list, got \(1, \{'a': 2\}\) \(at the root\)\.$"),
  ([1, {"a": 2}, 3], r"^List arity mismatch: 3 != 2; value: \[1, \{'a': 2\}, 3\]"),
  ([1, {"b": 2}], r"^Dict key mismatch; expected keys: \['a'\]; dict: \{'b': 2\} "
                  r"\(at key path '\[1\]'\)\.$"),
  ([1, {"a": 2, "b": 3}], r"^Dict key mismatch; expected keys: \['a'\]; dict: "),
  ([1, None], r"^Expected dict, got None \(at key path '\[1\]'\)\.$"),
])
def test_flatten_up_to_mismatch(tree, message):
  treedef = tu.tree_structure([0, {"a": 0}])
  with pytest.raises(ValueError, match=message):
    treedef.flatten_up_to(tree)


# --- key paths -------------------------------------------------------------------

def test_key_str_forms():
  assert str(SequenceKey(0)) == "[0]"
  assert str(DictKey("a")) == "['a']"
  assert str(GetAttrKey("name")) == ".name"
  assert str(FlattenedIndexKey(2)) == "[2]"
  assert tu.keystr((SequenceKey(0), DictKey("a"))) == "[0]['a']"
  assert tu.keystr((SequenceKey(0), DictKey("a"), GetAttrKey("b")),
           simple=True, separator="/") == "0/a/b"


def test_flatten_with_path():
  tree = {"b": [1, Point(2, None)], "a": (3,)}
  path_leaves, treedef = tu.tree_flatten_with_path(tree)
  assert path_leaves == [
    ((DictKey("a"), SequenceKey(0)), 3),
    ((DictKey("b"), SequenceKey(0)), 1),
    ((DictKey("b"), SequenceKey(1), GetAttrKey("x")), 2),
  ]
  assert treedef == tu.tree_structure(tree)
  assert tu.tree_leaves_with_path(tree) == path_leaves
  assert [tu.keystr(p) for p, _ in path_leaves] == ["['a'][0]", "['b'][0]", "['b'][1].x"]


def test_tree_map_with_path():
  out = tu.tree_map_with_path(lambda p, x, y: (tu.keystr(p), x + y),
                {"a": 1, "b": [2]}, {"a": 10, "b": [20]})
  assert out == {"a": ("['a']", 11), "b": [("['b'][0]", 22)]}


# --- registration ------------------------------------------------------------------

def test_register_pytree_node():
  class Box:
    def __init__(self, label, items):
      self.label = label
      self.items = items

  tu.register_pytree_node(
    Box,
    lambda b: (b.items, b.label),
    lambda label, items: Box(label, list(items)),
  )
  leaves, treedef = tu.tree_flatten(Box("L", [1, (2, 3)]))
  assert leaves == [1, 2, 3]
  rebuilt = tu.tree_unflatten(treedef, [4, 5, 6])
  assert isinstance(rebuilt, Box)
  assert rebuilt.label == "L"
  assert rebuilt.items == [4, (5, 6)]
  # aux data takes part in equality.
  assert treedef == tu.tree_structure(Box("L", [0, (0, 0)]))
  assert treedef != tu.tree_structure(Box("M", [0, (0, 0)]))
  assert hash(treedef) == hash(tu.tree_structure(Box("L", [0, (0, 0)])))
  assert repr(treedef) == "PyTreeDef(CustomNode(Box['L'], [*, (*, *)]))"
  paths = [p for p, _ in tu.tree_leaves_with_path(Box("L", [1, 2]))]
  assert paths == [(FlattenedIndexKey(0),), (FlattenedIndexKey(1),)]


def test_register_pytree_with_keys():
  class Pair:
    def __init__(self, left, right):
      self.left, self.right = left, right

  tu.register_pytree_with_keys(
    Pair,
    lambda p: (((GetAttrKey("left"), p.left), (GetAttrKey("right"), p.right)), None),
    lambda _, children: Pair(*children),
  )
  pair = Pair(1, [2])
  assert tu.tree_leaves(pair) == [1, 2]
  assert [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(pair)] == [".left", ".right[0]"]
  doubled = tu.tree_map(lambda x: 2 * x, pair)
  assert (doubled.left, doubled.right) == (2, [4])


def test_register_pytree_node_class():
  @tu.register_pytree_node_class
  class Scaled:
    def __init__(self, value, scale):
      self.value, self.scale = value, scale

    def tree_flatten(self):
      return (self.value,), self.scale

    @classmethod
    def tree_unflatten(cls, scale, children):
      return cls(children[0], scale)

  assert isinstance(Scaled(1, 2), Scaled)  # the decorator returns the class
  out = tu.tree_map(lambda v: v + 1, Scaled({"a": 1}, 3))
  assert isinstance(out, Scaled)
  assert (out.value, out.scale) == ({"a": 2}, 3)


def test_register_dataclass_infers_static_fields():
  @tu.register_dataclass
  @dataclasses.dataclass
  class Params:
    w: object
    b: object
    name: str = dataclasses.field(default="p", metadata=dict(static=True))

  p = Params(w=1, b=(2, 3), name="layer")
  leaves, treedef = tu.tree_flatten(p)
  assert leaves == [1, 2, 3]
  rebuilt = tu.tree_unflatten(treedef, [4, 5, 6])
  assert rebuilt == Params(w=4, b=(5, 6), name="layer")
  assert treedef != tu.tree_structure(Params(w=1, b=(2, 3), name="other"))
  assert [tu.keystr(k) for k, _ in tu.tree_leaves_with_path(p)] == [".w", ".b[0]", ".b[1]"]


def test_register_dataclass_explicit_fields():
  @dataclasses.dataclass
  class Layer:
    weight: object
    size: int
    cache: object = None

  tu.register_dataclass(Layer, data_fields=["weight"], meta_fields=["size"], drop_fields=["cache"])
  leaves, treedef = tu.tree_flatten(Layer(weight=[1, 2], size=4, cache="dropped"))
  assert leaves == [1, 2]
  assert tu.tree_unflatten(treedef, [7, 8]) == Layer(weight=[7, 8], size=4, cache=None)


def test_register_dataclass_rejects_incomplete_fields():
  @dataclasses.dataclass
  class Two:
    a: int
    b: int

  with pytest.raises(ValueError, match="init fields"):
    tu.register_dataclass(Two, data_fields=["a"], meta_fields=[])
  with pytest.raises(TypeError, match="both"):
    tu.register_dataclass(Two, data_fields=["a", "b"])


def test_duplicate_registration_raises():
  class Thing:
    pass

  tu.register_pytree_node(Thing, lambda t: ((), None), lambda aux, children: Thing())
  with pytest.raises(ValueError, match="Duplicate custom PyTreeDef type registration"):
    tu.register_pytree_node(Thing, lambda t: ((), None), lambda aux, children: Thing())
  with pytest.raises(ValueError, match="Duplicate custom PyTreeDef type registration"):
    tu.register_pytree_node(tuple, lambda t: (t, None), lambda aux, children: tuple(children))


# --- Partial ------------------------------------------------------------------------

def test_partial_is_a_pytree():
  def f(x, y, *, scale):
    return (x + y) * scale

  p = tu.Partial(f, 1, scale=10)
  assert p(2) == 30
  leaves, treedef = tu.tree_flatten(p)
  assert leaves == [1, 10]
  q = tu.tree_map(lambda v: v + 1, p)
  assert isinstance(q, tu.Partial)
  assert q.func is f
  assert q.args == (2,) and q.keywords == {"scale": 11}
  assert q(3) == 55
  # The function is aux data: different functions give different treedefs.
  assert treedef != tu.tree_structure(tu.Partial(lambda x, y, *, scale: 0, 1, scale=10))


def test_register_static_makes_a_childless_node():
  @tu.register_static
  class Config:
    def __init__(self, n):
      self.n = n

    def __eq__(self, other):
      return isinstance(other, Config) and other.n == self.n

    def __hash__(self):
      return hash(self.n)

  leaves, treedef = tu.tree_flatten({"c": Config(3), "x": 1})
  assert leaves == [1]
  assert tu.tree_unflatten(treedef, [2])["c"] == Config(3)


def test_one_level_utilities():
  assert tu.flatten_one_level({"b": 1, "a": (2, 3)}) == ([(2, 3), 1], ("a", "b"))
  keyed, _ = tu.flatten_one_level_with_keys([4, 5])
  assert [tu.keystr((k,)) for k, _ in keyed] == ["[0]", "[1]"]
  with pytest.raises(ValueError, match="requires a pytree node"):
    tu.flatten_one_level(1.0)
  Point = collections.namedtuple("Point", "x y")
  assert tu.is_tree_node(type(None)) and tu.is_tree_node(tuple) and tu.is_tree_node(Point)
  assert not tu.is_tree_node(float) and not tu.is_tree_node((1,))


def test_tree_broadcast_and_associative_reduce():
  assert tu.tree_broadcast((1, 2), ((0, 0), [0])) == ((1, 1), [2])
  assert tu.tree_reduce_associative(lambda a, b: a + b, [1, (2, 3), {"x": 4}]) == 10
  assert tu.tree_reduce_associative(lambda a, b: a + b, [], identity=0) == 0
  with pytest.raises(ValueError):
    tu.tree_reduce_associative(lambda a, b: a + b, [])
