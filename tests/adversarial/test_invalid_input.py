"""Bad input gets JAX's error or JAX's value: gather/scatter modes, invalid
arguments, malformed pytrees, and the weak types of derivatives.

`CASES` records JAX 0.10's behaviour (CPU, x64 off) as data: a call (a
function of array arguments) and what JAX gives, a value with its dtype and
weak type, or an error class with a fragment of its message. Each row runs
eagerly, and under `jit` where the row says so. The facts come from JAX's
sources: `lax.gather` maps `mode=None` to PROMISE_IN_BOUNDS while
`GatherScatterMode.from_any(None)` (the scatters' default) is FILL_OR_DROP;
jnp indexing clamps, `.at[].set` drops, `jnp.take` fills; `lax.transpose`'s
shape rule raises TypeError for a non-permutation; `jit` checks
donate_argnums/argnames against the signature when it is called; pmap's
compile step raises when the map needs more devices than there are;
`jnp.fft` raises for a length <= 0 ("Shape should be positive."); masked
arrays have no aval; `jnp.roll` rolls by a non-integer shift truncated to
int32; the C++ pytree raises ValueError when dict keys do not sort and
RuntimeError when a custom flatten does not return a pair; `jacfwd`/`jacrev`
build their basis with `jnp.eye(n, dtype)` (strongly typed), `grad` its
cotangent with `full_like(ans, 1)` (weak when `ans` is).

`REFIMPL_CHOICES` are rows where refimpl raises a clear error where JAX 0.10
fails inside its own plumbing or silently drops data (docs/autodiff.md,
docs/errors.md say so).
"""

from functools import partial

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import jit, lax, tree_util, vmap
from conformance.facts import Fact, Raises, Value, check

I32_MIN = -2**31


_GATHER_ROWS = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
                                          start_index_map=(0,))
_SCATTER_ROWS = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                            scatter_dims_to_operand_dims=(0,))
_i4 = (np.arange(4, dtype=np.int32),)
_f4 = (np.arange(4, dtype=np.float32),)
_m23 = (np.ones((2, 3), np.float32),)
_OUT = np.array([[5]], np.int32)  # an index past the end of a length-4 axis


def _gather(x, **kw):
  return lax.gather(x, _OUT, _GATHER_ROWS, (1,), **kw)


def _scatter_add(x, **kw):
  return lax.scatter_add(x, _OUT, np.ones(1, x.dtype), _SCATTER_ROWS, **kw)


def _not_permutation(perm):
  return Raises(TypeError, "transpose permutation isn't a permutation of operand dimensions, "
                f"got permutation {perm} for operand shape (2, 3).")


_BOGUS_MODE = Raises(ValueError, 'Unknown gather mode "bogus"')
_MASKED = Raises(ValueError, "numpy masked arrays are not supported as direct inputs to JAX "
                 "functions. Use arr.filled() to convert the value to a standard numpy array.")
_masked = np.ma.masked_array(np.arange(3, dtype=np.float32), mask=[False, True, False])


class _ListFlatten:
  """A custom node whose flatten function returns a list, not a pair."""
  def __init__(self, x):
    self.x = x


class _ScalarChildren:
  """A custom node whose flatten function returns a non-iterable as children."""
  def __init__(self, x):
    self.x = x


tree_util.register_pytree_node(_ListFlatten, lambda n: [n.x], lambda aux, ch: _ListFlatten(*ch))
tree_util.register_pytree_node(_ScalarChildren, lambda n: (n.x, None),
                               lambda aux, ch: _ScalarChildren(*ch))

CASES = [
    # lax.gather: mode=None is PROMISE_IN_BOUNDS (clamps, as on XLA); "fill" fills.
    Fact("gather_default_clamps", _gather, _f4, Value([3.0], "float32")),
    Fact("gather_none_clamps", partial(_gather, mode=None), _i4, Value([3], "int32")),
    Fact("gather_promise_clamps", partial(_gather, mode="promise_in_bounds"), _i4,
         Value([3], "int32")),
    Fact("gather_clip", partial(_gather, mode="clip"), _i4, Value([3], "int32")),
    Fact("gather_fill_nan", partial(_gather, mode="fill"), _f4, Value([np.nan], "float32")),
    Fact("gather_fill_int_min", partial(_gather, mode="fill"), _i4, Value([I32_MIN], "int32")),
    Fact("gather_fill_value", partial(_gather, mode="fill", fill_value=-1), _i4,
         Value([-1], "int32")),
    Fact("gather_bogus_mode", partial(_gather, mode="bogus"), _f4, _BOGUS_MODE),
    # lax.scatter*: mode=None is FILL_OR_DROP (drops); "clip" clamps.
    Fact("scatter_add_default_drops", _scatter_add, _f4, Value([0, 1, 2, 3], "float32")),
    Fact("scatter_add_clip", partial(_scatter_add, mode="clip"), _f4,
         Value([0, 1, 2, 4], "float32")),
    Fact("scatter_add_bogus_mode", partial(_scatter_add, mode="bogus"), _f4, _BOGUS_MODE),
    # jnp indexing clamps, .at[].get follows it, "fill" fills; updates drop.
    Fact("getitem_clamps", lambda x: x[5], _i4, Value(3, "int32")),
    Fact("getitem_array_clamps", lambda x: x[np.array([5, -9])], _i4, Value([3, 0], "int32")),
    Fact("at_get_clamps", lambda x: x.at[5].get(), _i4, Value(3, "int32")),
    Fact("at_get_fill", lambda x: x.at[5].get(mode="fill"), _f4, Value(np.nan, "float32")),
    Fact("at_get_bogus_mode", lambda x: x.at[2].get(mode="bogus"), _i4, _BOGUS_MODE),
    Fact("at_get_bogus_mode_array", lambda x: x.at[np.array([2])].get(mode="bogus"), _i4,
         _BOGUS_MODE),
    Fact("at_set_drops", lambda x: x.at[5].set(9), _i4, Value([0, 1, 2, 3], "int32")),
    Fact("at_set_bogus_mode", lambda x: x.at[2].set(9, mode="bogus"), _i4, _BOGUS_MODE),
    Fact("take_fills", lambda x: jnp.take(x, 5), _i4, Value(I32_MIN, "int32")),
    Fact("take_along_axis_fills", lambda x: jnp.take_along_axis(x, np.array([5]), axis=0), _i4,
         Value([I32_MIN], "int32")),
    Fact("take_bogus_mode", lambda x: jnp.take(x, 2, mode="bogus"), _i4,
         Raises(ValueError, "Invalid mode 'bogus' for np.take")),
    # Permutations: lax.transpose's shape rule, through every caller.
    Fact("transpose_partial", lambda x: jnp.transpose(x, (0,)), _m23, _not_permutation((0,))),
    Fact("transpose_repeated", lambda x: jnp.transpose(x, (0, 0)), _m23,
         _not_permutation((0, 0))),
    Fact("lax_transpose_partial", lambda x: lax.transpose(x, (1,)), _m23,
         _not_permutation((1,))),
    Fact("method_transpose_partial", lambda x: x.transpose((1,)), _m23, _not_permutation((1,))),
    Fact("permute_dims_partial", lambda x: jnp.permute_dims(x, (0,)), _m23,
         _not_permutation((0,))),
    Fact("moveaxis_repeated_source", lambda x: jnp.moveaxis(x, (0, 0), (1, 0)), _m23,
         _not_permutation((0, 0, 1))),
    Fact("transpose_identity", lambda x: jnp.transpose(x, (0, 1)), _m23,
         Value(np.ones((2, 3)), "float32")),
    # Arguments checked against the signature when jit is called.
    Fact("jit_donate_argnums_past_signature", lambda: jit(lambda a: a, donate_argnums=3), (),
         Raises(ValueError, "Jitted function has donate_argnums=(3,), but only accepts 1 "
                "positional arguments."), jit=False),
    Fact("jit_donate_argnames_unknown", lambda: jit(lambda a: a, donate_argnames="b"), (),
         Raises(ValueError, "Jitted function has invalid argnames {'b'} in donate_argnames. "
                "Function does not take these args."), jit=False),
    Fact("jit_static_and_donated", lambda: jit(lambda a: a, static_argnums=0, donate_argnums=0),
         (), Raises(ValueError, "static_argnames and donate_argnames cannot intersect"),
         jit=False),
    Fact("jit_static_argnums_past_signature", lambda: jit(lambda a: a, static_argnums=1), (),
         Raises(ValueError, "Jitted function has static_argnums=(1,), but only accepts 1 "
                "positional arguments."), jit=False),
    Fact("jit_donation_ignored", lambda x: jit(lambda a: a * 2, donate_argnums=0)(x), _f4,
         Value([0, 2, 4, 6], "float32")),
    Fact("grad_argnums_past_arguments", lambda x: jax.grad(lambda a, b: a * b, argnums=2)(x, x),
         (np.float32(1),), Raises(TypeError, "requires at least 3 positional arguments"),
         jit=False),
    # One device: pmap over more members raises when it compiles.
    Fact("pmap_two_members", jax.pmap(lambda a: a * 2), (np.ones((2, 3), np.float32),),
         Raises(ValueError, "compiling computation that requires 2 logical devices, but only "
                "1 XLA devices are available (num_replicas=2)"), jit=False),
    Fact("pmap_one_member", jax.pmap(lambda a: a * 2), (np.ones((1, 2), np.float32),),
         Value([[2, 2]], "float32"), jit=False),
    # FFT lengths must be positive.
    Fact("fft_n_0", lambda x: jnp.fft.fft(x, n=0), _f4,
         Raises(ValueError, "Shape should be positive.")),
    Fact("fft_n_negative", lambda x: jnp.fft.fft(x, n=-1), _f4,
         Raises(ValueError, "Shape should be positive.")),
    Fact("rfft_n_0", lambda x: jnp.fft.rfft(x, n=0), _f4,
         Raises(ValueError, "Shape should be positive.")),
    Fact("ifft_n_0", lambda x: jnp.fft.ifft(x, n=0), _f4,
         Raises(ValueError, "Shape should be positive.")),
    Fact("fftn_s_0", lambda x: jnp.fft.fftn(x, s=(0,)), _f4,
         Raises(ValueError, "Shape should be positive.")),
    Fact("fft_n_1", lambda x: jnp.fft.fft(x, n=1), _f4, Value([0], "complex64")),
    # NumPy masked arrays have no aval.
    Fact("masked_asarray", lambda: jnp.asarray(_masked), (), _MASKED, jit=False),
    Fact("masked_jnp_function", lambda: jnp.sin(_masked), (), _MASKED, jit=False),
    Fact("masked_jit_argument", lambda: jit(lambda a: a)(_masked), (), _MASKED, jit=False),
    Fact("masked_lax_function", lambda: lax.neg(_masked), (), _MASKED, jit=False),
    Fact("masked_grad_argument", lambda: jax.grad(jnp.sum)(_masked), (), _MASKED, jit=False),
    Fact("masked_filled", lambda: jnp.asarray(_masked.filled(-1)), (),
         Value([0, -1, 2], "float32"), jit=False),
    # jnp.roll: a non-integer shift is truncated to int32 (the dynamic roll).
    Fact("roll_float_shift", lambda x: jnp.roll(x, 1.5), _i4, Value([3, 0, 1, 2], "int32")),
    Fact("roll_negative_float_shift", lambda x: jnp.roll(x, -1.5), _i4,
         Value([1, 2, 3, 0], "int32")),
    Fact("roll_float_shift_list", lambda x: jnp.roll(x, [1.9], axis=0), _i4,
         Value([3, 0, 1, 2], "int32")),
    Fact("roll_float_axis", lambda x: jnp.roll(x, 1, axis=0.5), _i4, Raises(TypeError, "")),
    # Pytrees.
    Fact("dict_keys_unsortable", lambda: tree_util.tree_leaves({1: 1.0, "b": 2.0}), (),
         Raises(ValueError, "Comparator raised exception while sorting pytree dictionary keys."),
         jit=False),
    Fact("jit_dict_keys_unsortable", lambda: jit(lambda d: d)({1: 1.0, "b": 2.0}), (),
         Raises(ValueError, "Comparator raised exception while sorting pytree dictionary keys."),
         jit=False),
    Fact("dict_keys_sortable", lambda: tree_util.tree_leaves({2: "b", 1: "a"}), (),
         Value(np.array(["a", "b"]), "<U1"), jit=False),
    Fact("custom_flatten_not_a_pair", lambda: tree_util.tree_leaves(_ListFlatten(1)), (),
         Raises(RuntimeError, "PyTree custom to_iterable function should return a pair"),
         jit=False),
    Fact("custom_children_not_iterable", lambda: tree_util.tree_leaves(_ScalarChildren(1)), (),
         Raises(TypeError, "iterable"), jit=False),
    Fact("unflatten_too_few_leaves",
         lambda: tree_util.tree_unflatten(tree_util.tree_structure((1, 2)), [1]), (),
         Raises(ValueError, "Too few leaves for PyTreeDef; expected 2, got 1."), jit=False),
    Fact("unflatten_too_many_leaves",
         lambda: tree_util.tree_unflatten(tree_util.tree_structure((1, 2)), [1, 2, 3]), (),
         Raises(ValueError, "Too many leaves for PyTreeDef; expected 2, got 3."), jit=False),
    # DLPack: refimpl arrays are producers too.
    Fact("from_dlpack_refimpl", lambda x: jnp.from_dlpack(jnp.asarray(x)), _f4,
         Value([0, 1, 2, 3], "float32"), jit=False),
    Fact("from_dlpack_numpy", lambda: jnp.from_dlpack(np.arange(3, dtype=np.int32)), (),
         Value([0, 1, 2], "int32"), jit=False),
    Fact("numpy_from_dlpack_refimpl", lambda: np.from_dlpack(jnp.arange(3.0)), (),
         Value([0, 1, 2], "float32"), jit=False),
    # Weak types of derivatives (Python-float inputs are weak float32).
    Fact("grad_weak", lambda: jax.grad(lambda x: x * 2.0)(1.0), (),
         Value(2.0, "float32", weak_type=True), jit=False),
    Fact("grad_strong_input", lambda: jax.grad(lambda x: x * 2.0)(np.float32(1)), (),
         Value(2.0, "float32"), jit=False),
    # x * float32(2) converts weak x to strong float32; the transpose of that
    # convert_element_type converts the cotangent back to x's weak type.
    Fact("grad_strong_output", lambda: jax.grad(lambda x: x * np.float32(2))(1.0), (),
         Value(2.0, "float32", weak_type=True), jit=False),
    Fact("jit_grad_weak", lambda: jit(jax.grad(lambda x: x * 2.0))(1.0), (),
         Value(2.0, "float32", weak_type=True), jit=False),
    Fact("value_and_grad_weak", lambda: jax.value_and_grad(lambda x: x * 2.0)(1.0)[1], (),
         Value(2.0, "float32", weak_type=True), jit=False),
    Fact("jvp_weak_tangent", lambda: jax.jvp(lambda x: x * 2.0, (1.0,), (1.0,))[1], (),
         Value(2.0, "float32", weak_type=True), jit=False),
    Fact("jvp_strong_tangent", lambda: jax.jvp(lambda x: x * 2.0, (1.0,), (np.float32(1),))[1],
         (), Value(2.0, "float32"), jit=False),
    Fact("vjp_weak_cotangent", lambda: jax.vjp(lambda x: x * 2.0, 1.0)[1](1.0)[0], (),
         Value(2.0, "float32", weak_type=True), jit=False),
    Fact("vjp_strong_cotangent", lambda: jax.vjp(lambda x: x * 2.0, 1.0)[1](np.float32(1))[0],
         (), Value(2.0, "float32"), jit=False),
    Fact("jacfwd_eye_basis_is_strong", lambda: jax.jacfwd(lambda x: x * 2.0)(1.0), (),
         Value(2.0, "float32"), jit=False),
    Fact("jacrev_eye_basis_is_strong", lambda: jax.jacrev(lambda x: x * 2.0)(1.0), (),
         Value(2.0, "float32"), jit=False),
    Fact("hessian_strong", lambda: jax.hessian(lambda x: x * x)(1.0), (),
         Value(2.0, "float32"), jit=False),
]

# Rows where refimpl raises a clear error and JAX 0.10 does not: repeated argnums
# reach JAX's argument plumbing (StopIteration); jnp.array with copy=True reads a
# masked array's data through np.asarray, dropping the mask.
_REPEATED = Raises(ValueError, "names an argument more than once")
REFIMPL_CHOICES = [
    Fact("grad_repeated_argnums", lambda: jax.grad(lambda a, b: a * b, argnums=(0, 0))(1.0, 2.0),
         (), _REPEATED, jit=False),
    Fact("value_and_grad_repeated_argnums",
         lambda: jax.value_and_grad(lambda a, b: a * b, argnums=(1, -1))(1.0, 2.0), (),
         _REPEATED, jit=False),
    Fact("jacfwd_repeated_argnums",
         lambda: jax.jacfwd(lambda a, b: a * b, argnums=(0, -2))(1.0, 2.0), (), _REPEATED,
         jit=False),
    Fact("jacrev_repeated_argnums",
         lambda: jax.jacrev(lambda a, b: a * b, argnums=(1, 1))(1.0, 2.0), (), _REPEATED,
         jit=False),
    Fact("hessian_repeated_argnums",
         lambda: jax.hessian(lambda a, b: a * b, argnums=(0, 0))(1.0, 2.0), (), _REPEATED,
         jit=False),
    Fact("masked_array_copy", lambda: jnp.array(_masked), (), _MASKED, jit=False),
]


@pytest.mark.parametrize("case", CASES + REFIMPL_CHOICES, ids=lambda c: c.name)
def test_case(case):
  check(case)


def test_gather_default_clamps_under_vmap():
  x = np.arange(4, dtype=np.float32)
  indices = np.array([[[0]], [[5]], [[-3]]], np.int32)
  out = vmap(lambda i: lax.gather(x, i, _GATHER_ROWS, (1,)))(indices)
  np.testing.assert_array_equal(out, [[0], [3], [0]])


# --- properties --------------------------------------------------------------------------------

@given(st.integers(1, 4).flatmap(
    lambda ndim: st.tuples(st.just(ndim), st.lists(st.integers(-ndim, ndim - 1), max_size=5))))
def test_transpose_of_a_non_permutation_raises(ndim_and_axes):
  ndim, axes = ndim_and_axes
  x = np.zeros(tuple(range(2, 2 + ndim)), np.float32)
  if sorted(a % ndim for a in axes) == list(range(ndim)):
    np.testing.assert_array_equal(jnp.transpose(x, axes), np.transpose(x, axes))
    return
  with pytest.raises(TypeError, match="isn't a permutation of operand dimensions"):
    jnp.transpose(x, axes)
  with pytest.raises(TypeError, match="isn't a permutation of operand dimensions"):
    jit(lambda a: jnp.transpose(a, axes))(x)
  if all(0 <= a < ndim for a in axes):
    with pytest.raises(TypeError, match="isn't a permutation of operand dimensions"):
      lax.transpose(x, axes)


@given(st.lists(st.integers(-3, 2), min_size=1, max_size=4))
def test_repeated_argnums_raise(argnums):
  f = lambda a, b, c: a * b * c
  args = (1.0, 2.0, 3.0)
  positions = [i % 3 for i in argnums]
  if len(set(positions)) < len(positions):
    with pytest.raises(ValueError, match="more than once"):
      jax.grad(f, argnums=tuple(argnums))(*args)
    return
  grads = jax.grad(f, argnums=tuple(argnums))(*args)
  product = np.prod(args)
  np.testing.assert_allclose(grads, [product / args[i] for i in positions])


@given(st.lists(st.integers(-8, 8), min_size=1, max_size=5),
       st.sampled_from([None, "promise_in_bounds", "clip", "fill"]))
def test_gather_modes_against_numpy(indices, mode):
  x = np.arange(4, dtype=np.float32) + 10
  idx = np.array(indices, np.int32)[:, None]
  clamped = x[np.clip(idx[:, 0], 0, 3)]
  expected = (np.where((idx[:, 0] >= 0) & (idx[:, 0] < 4), clamped, np.nan) if mode == "fill"
              else clamped)
  gather = lambda a, i: lax.gather(a, i, _GATHER_ROWS, (1,), mode=mode)
  np.testing.assert_array_equal(gather(x, idx), expected)
  np.testing.assert_array_equal(jit(gather)(x, idx), expected)
  np.testing.assert_array_equal(vmap(gather, (None, 0))(x, idx[:, None]), expected[:, None])


@given(st.lists(st.one_of(st.integers(-3, 3), st.text("ab", min_size=1, max_size=2)),
                min_size=1, max_size=5, unique=True))
def test_dict_keys_sort_or_raise(keys):
  tree = {k: i for i, k in enumerate(keys)}
  if len({type(k) for k in keys}) > 1:
    with pytest.raises(ValueError, match="sorting pytree dictionary keys"):
      tree_util.tree_flatten(tree)
    return
  leaves, treedef = tree_util.tree_flatten(tree)
  assert leaves == [tree[k] for k in sorted(keys)]
  assert tree_util.tree_unflatten(treedef, leaves) == tree


def _nest(leaf, depth, kinds):
  for i in range(depth):
    kind = kinds[i % len(kinds)]
    leaf = [leaf] if kind == "list" else (leaf,) if kind == "tuple" else {"k": leaf}
  return leaf


def _unnest(tree, depth):
  for _ in range(depth):
    tree = tree["k"] if isinstance(tree, dict) else tree[0]
  return tree


@given(st.integers(0, 1500), st.lists(st.sampled_from(["list", "tuple", "dict"]), min_size=1,
                                      max_size=3))
def test_deep_trees_flatten_unflatten_map(depth, kinds):
  tree = _nest(1.0, depth, kinds)
  leaves, treedef = tree_util.tree_flatten(tree)
  assert leaves == [1.0] and treedef.num_nodes == depth + 1
  assert treedef == tree_util.tree_structure(_nest(2.0, depth, kinds))
  assert hash(treedef) == hash(tree_util.tree_structure(_nest(2.0, depth, kinds)))
  rebuilt = tree_util.tree_unflatten(treedef, [3.0])
  assert _unnest(rebuilt, depth) == 3.0
  assert tree_util.tree_structure(rebuilt) == treedef
  doubled = tree_util.tree_map(lambda a, b: a + b, tree, _nest(2.0, depth, kinds))
  assert _unnest(doubled, depth) == 3.0
  (path, _), = tree_util.tree_leaves_with_path(tree)
  assert len(path) == depth


def test_deep_trees_through_transformations():
  depth = 1000
  tree = _nest(np.float32(2), depth, ["list", "dict"])
  assert float(jit(lambda t: tree_util.tree_leaves(t)[0] * 3)(tree)) == 6.0
  grads = jax.grad(lambda t: tree_util.tree_leaves(t)[0] ** 2)(tree)
  assert float(_unnest(grads, depth)) == 4.0
  assert repr(tree_util.tree_structure(tree)).startswith("PyTreeDef({'k': [{'k': [")


@given(st.integers(-3, 0), st.sampled_from(["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]))
def test_fft_lengths_must_be_positive(n, name):
  with pytest.raises(ValueError, match="Shape should be positive"):
    getattr(jnp.fft, name)(np.ones(4, np.float32), n=n)


@given(st.integers(1, 4))
def test_pmap_needs_a_device_per_member(size):
  x = np.arange(size * 2, dtype=np.float32).reshape(size, 2)
  f = lambda a: a - lax.pmean(a, "i")
  if size > jax.device_count():
    with pytest.raises(ValueError, match=f"requires {size} logical devices, but only 1"):
      jax.pmap(f, axis_name="i")(x)
  else:
    np.testing.assert_array_equal(jax.pmap(f, axis_name="i")(x),
                                  vmap(f, axis_name="i")(x))


def test_legacy_dlpack_consumers_get_a_copy():
  x = jnp.arange(3.0)
  assert x.__dlpack_device__() == (1, 0)
  capsule = x.__dlpack__()  # no max_version: a DLPack < 1.0 consumer
  assert type(capsule).__name__ == "PyCapsule"
