"""Cases for the indexing primitives (refimpl/lax/indexing.py) and jnp indexing
(`x[idx]`, `x.at[idx]`, refimpl/numpy/indexing.py).

In-bounds results must equal NumPy's slicing and fancy indexing. Indices and
starts are drawn out of bounds too: what happens there (clamping, filling,
dropping) is where JAX differs from NumPy, so those cases take their
expected values from the divergence table (`dynamic_slice_clamps_start`,
`gather_clamps_out_of_bounds`, `scatter_drops_out_of_bounds`, ...), whose
NumPy formulas compute every window element's position at once with fancy
indexing, independently of the reference rules' loops.

Operands are wrapped with `jnp.asarray` before indexing, so `x[idx]` is
refimpl's indexing eagerly too (not NumPy's). Not covered here: gather and
scatter with operand batching dimensions (lax.gather/scatter's
`operand_batching_dims`); vmap's rules make them from these cases when
operand and indices are both batched.
"""

import numpy as np
from hypothesis import strategies as st

import refimpl.numpy as jnp
from refimpl import dtypes, lax
from conformance import strategies as S
from conformance.autodiff import ADCase
from conformance.cases import Case
from conformance.divergences import DIVERGENCES

ALL = S.ALL_DTYPES
INEXACT = S.FLOAT_DTYPES + S.COMPLEX_DTYPES
NUMERIC = S.INT_DTYPES + INEXACT
INDEX_DTYPES = [np.int32, np.int8, np.uint8, np.int16]
MODES = [lax.GatherScatterMode.CLIP, lax.GatherScatterMode.FILL_OR_DROP,
         lax.GatherScatterMode.PROMISE_IN_BOUNDS]


def _index_elements(dtype, size):
  """Index values around [0, size): in range, and up to 3 beyond on each side."""
  low = 0 if np.dtype(dtype).kind == "u" else -size - 3
  return st.integers(low, size + 3)


# --- slice ---------------------------------------------------------------------------------

def _operands(shape, dtype_list=ALL):
  """Arrays of `shape` (a tuple or strategy) of a dtype from `dtype_list`."""
  return st.sampled_from(dtype_list).flatmap(lambda dt: S.arrays(dt, shape))


@st.composite
def _slice_inputs(draw, operands=_operands):
  x = draw(operands(S.shapes()))
  starts, limits, strides = [], [], []
  for d in x.shape:
    start = draw(st.integers(0, d))
    starts.append(start)
    limits.append(draw(st.integers(start, d)))
    strides.append(draw(st.integers(1, 3)))
  return (x,), {"start_indices": tuple(starts), "limit_indices": tuple(limits),
                "strides": draw(st.sampled_from([None, tuple(strides)]))}


def _slice(x, start_indices, limit_indices, strides):
  strides = strides or (1,) * x.ndim
  return x[tuple(slice(*bounds) for bounds in zip(start_indices, limit_indices, strides))]


@st.composite
def _slice_in_dim_inputs(draw):
  x = draw(S.arrays(draw(st.sampled_from(ALL)), S.shapes(min_dims=1)))
  axis = draw(st.integers(0, x.ndim - 1))
  d = x.shape[axis]
  start = draw(st.integers(0, d))
  limit = draw(st.integers(start, d))
  # Negative bounds count from the end; None means the whole axis.
  start = draw(st.sampled_from([start, start - d] if start else [0, None]))
  limit = draw(st.sampled_from([limit, limit - d] if limit < d else [d, None]))
  return (x,), {"start_index": start, "limit_index": limit,
                "stride": draw(st.integers(1, 3)), "axis": axis}


def _slice_in_dim(x, start_index, limit_index, stride, axis):
  return x[(slice(None),) * axis + (slice(start_index, limit_index, stride),)]


@st.composite
def _index_in_dim_inputs(draw):
  x = draw(S.arrays(draw(st.sampled_from(ALL)), S.shapes(min_dims=1, min_side=1)))
  axis = draw(st.integers(0, x.ndim - 1))
  return (x,), {"index": draw(st.integers(-x.shape[axis], x.shape[axis] - 1)),
                "axis": axis, "keepdims": draw(st.booleans())}


def _index_in_dim(x, index, axis, keepdims):
  out = x[(slice(None),) * axis + (index,)]
  return np.expand_dims(out, axis) if keepdims else out


# --- dynamic_slice, dynamic_update_slice -

@st.composite
def _dynamic_slice_inputs(draw):
  """(x, *starts) with starts of one integer dtype, out of bounds too, and
  slice sizes that fit."""
  x = draw(S.arrays(draw(st.sampled_from(ALL)), S.shapes()))
  index_dtype = draw(st.sampled_from(INDEX_DTYPES))
  starts = [draw(S.arrays(index_dtype, (), elements=_index_elements(index_dtype, d)))
            for d in x.shape]
  sizes = tuple(draw(st.integers(0, d)) for d in x.shape)
  return (x, *starts), {"slice_sizes": sizes}


@st.composite
def _in_dim_inputs(draw, update=False, index=False):
  """(x, [update,] start) and `axis` (plus `slice_size`, or `keepdims` for an
  index): the _in_dim forms. An index needs a non-empty axis."""
  dtype = draw(st.sampled_from(ALL))
  x = draw(S.arrays(dtype, S.shapes(min_dims=1, min_side=1 if index else 0)))
  axis = draw(st.integers(0, x.ndim - 1))
  d = x.shape[axis]
  index_dtype = draw(st.sampled_from(INDEX_DTYPES))
  start = draw(S.arrays(index_dtype, (), elements=_index_elements(index_dtype, d)))
  if update:
    shape = list(x.shape)
    shape[axis] = 1 if index else draw(st.integers(0, d))
    if index and draw(st.booleans()):
      del shape[axis]  # dynamic_update_index_in_dim also takes the update without the axis
    return (x, draw(S.arrays(dtype, tuple(shape))), start), {"axis": axis}
  if index:
    return (x, start), {"axis": axis, "keepdims": draw(st.booleans())}
  return (x, start), {"slice_size": draw(st.integers(0, d)), "axis": axis}


@st.composite
def _dynamic_update_slice_inputs(draw):
  dtype = draw(st.sampled_from(ALL))
  x = draw(S.arrays(dtype, S.shapes()))
  update = draw(S.arrays(dtype, tuple(draw(st.integers(0, d)) for d in x.shape)))
  index_dtype = draw(st.sampled_from(INDEX_DTYPES))
  starts = [draw(S.arrays(index_dtype, (), elements=_index_elements(index_dtype, d)))
            for d in x.shape]
  return (x, update, *starts), {}


LAX_SLICE_CASES = [
    Case("lax.slice", lax.slice, _slice_inputs, _slice),
    Case("lax.slice_in_dim", lax.slice_in_dim, _slice_in_dim_inputs, _slice_in_dim),
    Case("lax.index_in_dim", lax.index_in_dim, _index_in_dim_inputs, _index_in_dim),
    Case("lax.dynamic_slice", lambda x, *starts, slice_sizes: lax.dynamic_slice(
        x, starts, slice_sizes), _dynamic_slice_inputs, divergence="dynamic_slice_clamps_start"),
    Case("lax.dynamic_slice_in_dim", lax.dynamic_slice_in_dim, _in_dim_inputs,
         divergence="dynamic_slice_clamps_start"),
    Case("lax.dynamic_index_in_dim", lax.dynamic_index_in_dim,
         lambda: _in_dim_inputs(index=True), divergence="dynamic_slice_clamps_start"),
    Case("lax.dynamic_update_slice", lambda x, update, *starts: lax.dynamic_update_slice(
        x, update, starts), _dynamic_update_slice_inputs,
         divergence="dynamic_update_slice_clamps_start"),
    Case("lax.dynamic_update_slice_in_dim", lax.dynamic_update_slice_in_dim,
         lambda: _in_dim_inputs(update=True), divergence="dynamic_update_slice_clamps_start"),
    Case("lax.dynamic_update_index_in_dim", lax.dynamic_update_index_in_dim,
         lambda: _in_dim_inputs(update=True, index=True),
         divergence="dynamic_update_slice_clamps_start"),
]


# --- gather and scatter ---------------------------------------------------------------------------

@st.composite
def _windows(draw, dtype_list, collapse_indexed=False, in_bounds=False, array_of=S.arrays):
  """An operand (`array_of(dtype, shape)`), index vectors (out of bounds too,
  unless `in_bounds`: then every window fits) and the window structure
  shared by gather and scatter: (operand, indices, index_map, collapsed,
  window sizes, positions of the window dims among the result's)."""
  dtype = draw(st.sampled_from(dtype_list))
  operand = draw(array_of(dtype, S.shapes(min_dims=1)))
  shape = operand.shape
  candidates = [d for d in range(len(shape)) if shape[d] or not collapse_indexed]
  index_map = tuple(draw(st.permutations(candidates))[:draw(st.integers(0, len(candidates)))])
  collapsible = [d for d in index_map if shape[d]]
  collapsed = tuple(sorted(collapsible if collapse_indexed else draw(
      st.lists(st.sampled_from(collapsible), unique=True)) if collapsible else []))
  sizes = tuple(1 if d in collapsed else draw(st.integers(0, n)) for d, n in enumerate(shape))
  index_dtype = draw(st.sampled_from(INDEX_DTYPES))
  batch_shape = draw(S.shapes(max_dims=2, max_side=3))
  indices = np.zeros(batch_shape + (len(index_map),), index_dtype)
  for k, d in enumerate(index_map):
    elements = (st.integers(0, shape[d] - sizes[d]) if in_bounds
                else _index_elements(index_dtype, shape[d]))
    indices[..., k] = draw(S.arrays(index_dtype, batch_shape, elements=elements))
  window_rank = len(shape) - len(collapsed)
  offset_dims = tuple(sorted(draw(st.permutations(range(len(batch_shape) + window_rank)))
                             [:window_rank]))
  return operand, indices, index_map, collapsed, sizes, offset_dims


@st.composite
def _gather_inputs(draw, modes, dtype_list=ALL, **window_kwargs):
  operand, indices, index_map, collapsed, sizes, offset_dims = draw(
      _windows(dtype_list, **window_kwargs))
  dnums = lax.GatherDimensionNumbers(offset_dims=offset_dims, collapsed_slice_dims=collapsed,
                                     start_index_map=index_map)
  kwargs = {"dimension_numbers": dnums, "slice_sizes": sizes,
            "mode": draw(st.sampled_from(modes))}
  if kwargs["mode"] == lax.GatherScatterMode.FILL_OR_DROP and draw(st.booleans()):
    kwargs["fill_value"] = draw(st.sampled_from([0, 1, -1, 2.5]))
  return (operand, indices), kwargs


@st.composite
def _scatter_inputs(draw, op, modes, dtype_list, in_bounds=False, array_of=S.arrays):
  """(operand, indices, updates) and kwargs for lax.<op>. For plain scatter,
  indexed dimensions are collapsed, so windows are equal or disjoint, and
  updates of windows that land on the same place are made equal: which one
  wins is unspecified in JAX."""
  plain = op == "scatter"
  operand, indices, index_map, collapsed, sizes, offset_dims = draw(
      _windows(dtype_list, collapse_indexed=plain, in_bounds=in_bounds, array_of=array_of))
  batch_shape = indices.shape[:-1]
  window = iter(n for d, n in enumerate(sizes) if d not in collapsed)
  batch = iter(batch_shape)
  updates_shape = tuple(next(window) if i in offset_dims else next(batch)
                        for i in range(len(batch_shape) + len(offset_dims)))
  updates = draw(array_of(operand.dtype, updates_shape))
  mode = draw(st.sampled_from(modes))
  if plain:
    updates = _equal_duplicate_updates(operand.shape, indices, index_map, updates,
                                       offset_dims, mode)
  dnums = lax.ScatterDimensionNumbers(update_window_dims=offset_dims,
                                      inserted_window_dims=collapsed,
                                      scatter_dims_to_operand_dims=index_map)
  return (operand, indices, updates), {"dimension_numbers": dnums, "mode": mode, "op": op}


def _equal_duplicate_updates(shape, indices, index_map, updates, window_dims, mode):
  """Updates whose windows start at the same (clamped) place made equal."""
  batch_shape = indices.shape[:-1]
  updates = np.moveaxis(updates, list(window_dims),
                        list(range(len(batch_shape), updates.ndim))).copy()
  first = {}
  for b in np.ndindex(*batch_shape):
    start = tuple(int(v) for v in indices[b])
    if mode == lax.GatherScatterMode.CLIP:
      start = tuple(min(max(s, 0), shape[d] - 1) for s, d in zip(start, index_map))
    updates[b] = updates[first.setdefault(start, b)]
  return np.moveaxis(updates, list(range(len(batch_shape), updates.ndim)), list(window_dims))


def _scatter_case(op, dtype_list):
  fn = lambda x, indices, updates, dimension_numbers, mode, op: getattr(lax, op)(
      x, indices, updates, dimension_numbers, mode=mode)
  drop = [lax.GatherScatterMode.FILL_OR_DROP, lax.GatherScatterMode.PROMISE_IN_BOUNDS]
  return [
      Case(f"lax.{op}", fn, lambda: _scatter_inputs(op, drop, dtype_list),
           divergence="scatter_drops_out_of_bounds"),
      Case(f"lax.{op}[clip]", fn,
           lambda: _scatter_inputs(op, [lax.GatherScatterMode.CLIP], dtype_list),
           divergence="scatter_clamps_out_of_bounds"),
  ]


@st.composite
def _scatter_apply_inputs(draw):
  (operand, indices, updates), kwargs = draw(_scatter_inputs(
      "scatter_add", [lax.GatherScatterMode.FILL_OR_DROP], NUMERIC))
  kwargs["update_shape"] = updates.shape
  del kwargs["op"], kwargs["mode"]
  return (operand, indices), kwargs


def _scatter_apply(x, indices, dimension_numbers, update_shape):
  """scatter_apply of `v + 1` is scatter_add of ones (each window adds 1 per hit)."""
  from conformance.divergences import DIVERGENCES
  ones = np.ones(update_shape, x.dtype)
  return DIVERGENCES["scatter_drops_out_of_bounds"].expected(
      x, indices, ones, dimension_numbers, op="scatter_add")


GATHER_SCATTER_CASES = [
    Case("lax.gather", lax.gather, lambda: _gather_inputs(
        [lax.GatherScatterMode.CLIP, lax.GatherScatterMode.PROMISE_IN_BOUNDS]),
         divergence="gather_clamps_out_of_bounds"),
    Case("lax.gather[fill]", lax.gather,
         lambda: _gather_inputs([lax.GatherScatterMode.FILL_OR_DROP]),
         divergence="gather_fills_out_of_bounds"),
    *_scatter_case("scatter", ALL),
    *_scatter_case("scatter_add", NUMERIC),
    *_scatter_case("scatter_sub", NUMERIC),
    *_scatter_case("scatter_mul", NUMERIC),
    *_scatter_case("scatter_min", ALL),
    *_scatter_case("scatter_max", ALL),
    # An elementwise function of the hit elements; v + 1 keeps v's dtype.
    Case("lax.scatter_apply", lambda x, indices, dimension_numbers, update_shape:
         lax.scatter_apply(x, indices, lambda v: v + 1, dimension_numbers,
                           update_shape=update_shape),
         _scatter_apply_inputs, _scatter_apply),
]


# --- jnp indexing ---------------------------------------------------------------------------------

@st.composite
def _getitem_inputs(draw, dtype_list=ALL, array_of=S.arrays):
  x = draw(array_of(draw(st.sampled_from(dtype_list)), S.shapes()))
  return (x,), {"idx": draw(S.index_expressions(x.shape))}


@st.composite
def _update_inputs(draw, dtype_list, scalar_values, array_of=S.arrays):
  """(x, y) and a static index; y broadcasts to x[idx] (a scalar for `set`,
  where repeated indices would make the winner unspecified)."""
  (x,), kwargs = draw(_getitem_inputs(dtype_list, array_of))
  target = x[kwargs["idx"]].shape
  shape = () if scalar_values else draw(st.sampled_from(
      [(), target, target[1:], tuple(1 for _ in target)]))
  return (x, draw(array_of(x.dtype, shape))), kwargs


@st.composite
def _out_of_bounds_inputs(draw, with_values=False):
  """x and an integer index array along one axis, out of bounds too."""
  x = draw(S.arrays(draw(st.sampled_from(NUMERIC if with_values else ALL)),
                    S.shapes(min_dims=1, min_side=1)))
  axis = draw(st.integers(0, x.ndim - 1))
  index = draw(S.arrays(np.int32, S.shapes(max_dims=2),
                        elements=_index_elements(np.int32, x.shape[axis])))
  args = (x, index)
  if with_values:
    target = x.shape[:axis] + index.shape + x.shape[axis + 1:]
    args += (draw(S.arrays(x.dtype, draw(st.sampled_from([(), target])))),)
  return args, {"axis": axis}


@st.composite
def _traced_set_inputs(draw):
  """x, an integer index array along one axis (in [-n, n), so NumPy takes it
  too) and a scalar value: the index and value are arguments, so they can be
  traced and batched (repeated indices all write the same value)."""
  x = draw(S.arrays(draw(st.sampled_from(ALL)), S.shapes(min_dims=1, min_side=1)))
  axis = draw(st.integers(0, x.ndim - 1))
  n = x.shape[axis]
  index = draw(S.arrays(np.int32, S.shapes(max_dims=2), elements=st.integers(-n, n - 1)))
  return (x, index, draw(S.arrays(x.dtype, ()))), {"axis": axis}


def _numpy_set_along(x, index, y, axis):
  out = x.copy()
  out[_axis_index(axis, index)] = y
  return out


def _at(method):
  """`jnp.asarray(x).at[idx].<method>(y)`, idx static."""
  return lambda x, y, idx: getattr(jnp.asarray(x).at[idx], method)(y)


def _numpy_update(ufunc):
  """x after `x[idx] op= y` with repeated indices accumulating: ufunc applied
  one element at a time, in order, rounded to x's dtype each time (inexact
  values combined in float64/complex128, as the reference does)."""
  def update(x, y, idx):
    positions = np.arange(x.size).reshape(x.shape)[idx]
    values = np.broadcast_to(y, positions.shape)
    out = x.copy().reshape(-1)
    wide = _wide if dtypes.is_inexact(x.dtype) else (lambda v: v)
    with np.errstate(all="ignore"):
      for position, value in zip(positions.ravel(), values.ravel()):
        out[position] = np.asarray(ufunc(wide(out[position]), wide(value))).astype(x.dtype)
    return out.reshape(x.shape)
  return update


def _wide(v):
  v = np.asarray(v)
  return v.astype(np.complex128 if dtypes.is_complex(v.dtype) else np.float64)


def _numpy_set(x, y, idx):
  out = x.copy()
  out[idx] = y
  return out


def _numpy_divide(x, y, idx):
  """x / d, where d is ones of x's dtype with the divisors multiplied in at idx
  (JAX's definition: repeated indices divide by the product of their values),
  complex numbers divided as XLA divides them."""
  divisors = _numpy_update(np.multiply)(np.ones_like(x), y, idx)
  return DIVERGENCES["complex_division_follows_xla"].expected(x, divisors)


def _getitem_inputs_numeric():
  return _getitem_inputs(NUMERIC)


def _axis_index(axis, index):
  return (slice(None),) * axis + (index,)


JNP_CASES = [
    Case("jnp getitem", lambda x, idx: jnp.asarray(x)[idx], _getitem_inputs,
         lambda x, idx: x[idx]),
    Case("jnp getitem[out of bounds]", lambda x, index, axis: jnp.asarray(x)[
        _axis_index(axis, index)], _out_of_bounds_inputs,
         divergence="getitem_clamps_out_of_bounds"),
    Case("x.at[idx].get", lambda x, idx: jnp.asarray(x).at[idx].get(), _getitem_inputs,
         lambda x, idx: x[idx]),
    Case("x.at[idx].set", _at("set"), lambda: _update_inputs(ALL, True), _numpy_set),
    Case("x.at[idx].add", _at("add"), lambda: _update_inputs(NUMERIC, False),
         _numpy_update(np.add)),
    Case("x.at[idx].subtract", _at("subtract"), lambda: _update_inputs(NUMERIC, False),
         _numpy_update(np.subtract)),
    Case("x.at[idx].mul", _at("mul"), lambda: _update_inputs(NUMERIC, False),
         _numpy_update(np.multiply)),
    Case("x.at[idx].min", _at("min"), lambda: _update_inputs(ALL, False),
         _numpy_update(np.minimum)),
    Case("x.at[idx].max", _at("max"), lambda: _update_inputs(ALL, False),
         _numpy_update(np.maximum)),
    Case("x.at[idx].divide", _at("divide"), lambda: _update_inputs(INEXACT, False),
         _numpy_divide),
    Case("x.at[idx].apply", lambda x, idx: jnp.asarray(x).at[idx].apply(lambda v: v + 1),
         _getitem_inputs_numeric,
         lambda x, idx: _numpy_update(np.add)(x, np.ones((), x.dtype), idx)),
    Case("x.at[index].set[traced index]", lambda x, index, y, axis: jnp.asarray(x).at[
        _axis_index(axis, index)].set(y), _traced_set_inputs, _numpy_set_along),
    Case("x.at[idx].add[out of bounds]", lambda x, index, y, axis: jnp.asarray(x).at[
        _axis_index(axis, index)].add(y), lambda: _out_of_bounds_inputs(with_values=True),
         divergence="index_update_drops_out_of_bounds"),
]

CASES = LAX_SLICE_CASES + GATHER_SCATTER_CASES + JNP_CASES


# --- derivatives ----------------------------------------------------------------------------------
# Indices and starts are static (kwargs); only operands and updates are
# differentiated. For fixed indices every function here is linear in them
# (scatter: the winning update of a repeated index is fixed), except
# scatter-mul (bilinear) and scatter-min/max, whose values are made pairwise
# distinct so that no tie makes them non-smooth. Out-of-bounds indices are
# drawn for CLIP and FILL_OR_DROP, whose derivative rules agree with the
# primal's windows; PROMISE_IN_BOUNDS only gets indices in bounds (out of
# bounds, its gather clamps while its transpose, a scatter-add, drops: JAX's
# gradients are documented as wrong there).

AD_DTYPES = [np.float64, np.complex128]
CLIP_OR_FILL = [lax.GatherScatterMode.CLIP, lax.GatherScatterMode.FILL_OR_DROP]
PROMISE = [lax.GatherScatterMode.PROMISE_IN_BOUNDS]


def _ad_operands(shape):
  return st.sampled_from(AD_DTYPES).flatmap(lambda dt: S.bounded_arrays(dt, shape))


@st.composite
def _ad_dynamic_slice_inputs(draw, update=False):
  """x (and an update) with static starts, negative (counting from the end) and
  out of bounds (clamped) too."""
  x = draw(_ad_operands(S.shapes()))
  kwargs = {"start_indices": tuple(draw(st.integers(-d - 2, d + 2)) for d in x.shape)}
  sizes = tuple(draw(st.integers(0, d)) for d in x.shape)
  if update:
    return (x, draw(S.bounded_arrays(x.dtype, sizes))), kwargs
  return (x,), {**kwargs, "slice_sizes": sizes}


def _static_indices(inputs):
  """`inputs` (of the Cases above: operand, indices[, updates]) with the
  indices moved into kwargs, and with the other `static` arguments (names,
  in order after the indices) too."""
  def move(case_inputs, static=()):
    (operand, indices, *rest), kwargs = case_inputs
    moved = dict(zip(static, rest))
    return (operand, *rest[len(static):]), {**kwargs, "indices": indices, **moved}
  return lambda static=(): inputs().map(lambda ci: move(ci, static))


def _modes(inputs_of_modes):
  """Inputs in CLIP or FILL_OR_DROP mode (out of bounds too), or in
  PROMISE_IN_BOUNDS mode with windows in bounds."""
  return lambda: st.one_of(inputs_of_modes(CLIP_OR_FILL, False),
                           inputs_of_modes(PROMISE, True))


def _ad_gather(x, indices, dimension_numbers, slice_sizes, mode, fill_value=0.5):
  """A finite `fill_value` (default 0.5 here), so that finite differences are defined."""
  return lax.gather(x, indices, dimension_numbers, slice_sizes, mode=mode,
                    fill_value=fill_value)


def _ad_scatter(x, updates, indices, dimension_numbers, mode, op, unique_indices=False):
  return getattr(lax, op)(x, indices, updates, dimension_numbers, mode=mode,
                          unique_indices=unique_indices)


def _ad_scatter_inputs(op, dtype_list=AD_DTYPES):
  return _static_indices(_modes(lambda modes, in_bounds: _scatter_inputs(
      op, modes, dtype_list, in_bounds=in_bounds, array_of=S.bounded_arrays)))()


@st.composite
def _ad_unique_scatter_inputs(draw, op):
  """Updates of distinct rows of x (unique_indices=True)."""
  dtype = draw(st.sampled_from(AD_DTYPES))
  x = draw(S.bounded_arrays(dtype, S.shapes(min_dims=1, min_side=1, max_side=3)))
  rows = draw(st.permutations(range(x.shape[0])))[:draw(st.integers(0, x.shape[0]))]
  updates = draw(S.bounded_arrays(dtype, (len(rows),) + x.shape[1:]))
  dnums = lax.ScatterDimensionNumbers(update_window_dims=tuple(range(1, x.ndim)),
                                      inserted_window_dims=(0,),
                                      scatter_dims_to_operand_dims=(0,))
  return (x, updates), {"indices": np.array(rows, np.int32).reshape(-1, 1),
                        "dimension_numbers": dnums, "mode": draw(st.sampled_from(MODES)),
                        "op": op, "unique_indices": True}


@st.composite
def _distinct_values(draw, inputs):
  """`inputs` (float64 arrays) with their values replaced by pairwise distinct ones."""
  args, kwargs = draw(inputs)
  values = iter(draw(S.distinct_arrays((sum(a.size for a in args),))))
  return tuple(np.fromiter(values, np.float64, a.size).reshape(a.shape) for a in args), kwargs


def _getitem(x, idx):
  return jnp.asarray(x)[idx]


def _ad_update_inputs(dtype_list=AD_DTYPES):
  return _update_inputs(dtype_list, False, S.bounded_arrays)


AD_CASES = [
    ADCase("slice", lax.slice, lambda: _slice_inputs(_ad_operands), ("slice",)),
    ADCase("dynamic_slice", lax.dynamic_slice, _ad_dynamic_slice_inputs, ("dynamic_slice",)),
    ADCase("dynamic_update_slice", lax.dynamic_update_slice,
           lambda: _ad_dynamic_slice_inputs(update=True), ("dynamic_update_slice",)),
    ADCase("gather", _ad_gather, _static_indices(_modes(lambda modes, in_bounds: _gather_inputs(
        modes, AD_DTYPES, in_bounds=in_bounds, array_of=S.bounded_arrays))), ("gather",)),
    ADCase("scatter", _ad_scatter, lambda: _ad_scatter_inputs("scatter"), ("scatter",)),
    ADCase("scatter[unique_indices]", _ad_scatter,
           lambda: _ad_unique_scatter_inputs("scatter"), ("scatter",)),
    ADCase("scatter-add", _ad_scatter, lambda: _ad_scatter_inputs("scatter_add"),
           ("scatter-add",)),
    ADCase("scatter-sub", _ad_scatter, lambda: _ad_scatter_inputs("scatter_sub"),
           ("scatter-sub",)),
    ADCase("scatter-mul[unique_indices]", _ad_scatter,
           lambda: _ad_unique_scatter_inputs("scatter_mul"), ("scatter-mul",), order=2),
    # Repeated indices: only the operand is differentiated (as in JAX, the
    # updates' derivative needs unique indices).
    ADCase("scatter-mul[operand]", lambda x, updates, **kwargs: _ad_scatter(x, updates, **kwargs),
           lambda: _static_indices(_modes(lambda modes, in_bounds: _scatter_inputs(
               "scatter_mul", modes, AD_DTYPES, in_bounds=in_bounds,
               array_of=S.bounded_arrays)))(static=("updates",)), ("scatter-mul",)),
    ADCase("scatter-min", _ad_scatter,
           lambda: _distinct_values(_ad_scatter_inputs("scatter_min", [np.float64])),
           ("scatter-min",)),
    ADCase("scatter-max", _ad_scatter,
           lambda: _distinct_values(_ad_scatter_inputs("scatter_max", [np.float64])),
           ("scatter-max",)),
    ADCase("jnp getitem", _getitem, lambda: _getitem_inputs(AD_DTYPES, S.bounded_arrays),
           ("slice", "dynamic_slice", "gather", "squeeze", "rev")),
    ADCase("x.at[idx].set", _at("set"), _ad_update_inputs, ("scatter",)),
    ADCase("x.at[idx].add", _at("add"), _ad_update_inputs, ("scatter-add",)),
    ADCase("x.at[idx].subtract", _at("subtract"), _ad_update_inputs, ("scatter-sub",)),
    ADCase("x.at[idx].max", _at("max"),
           lambda: _distinct_values(_ad_update_inputs([np.float64])), ("scatter-max",)),
    ADCase("x.at[idx].min", _at("min"),
           lambda: _distinct_values(_ad_update_inputs([np.float64])), ("scatter-min",)),
]
