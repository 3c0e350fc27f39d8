"""Cases for the named-axis collectives (refimpl/lax/parallel.py).

A collective has no NumPy twin by itself: each case maps a function over
axis 0 of its first argument with `vmap(..., axis_name='i')` (the members)
and compares with the NumPy formula of the collective across that axis.
The "(vjp under vmap)" cases differentiate inside the map, so that the
collectives' JVP and transpose rules run across the named axis; their
formulas are the transposed collectives.
"""

import numpy as np
from hypothesis import strategies as st

import refimpl
from refimpl import lax
from conformance import strategies as S
from conformance.autodiff import ADCase
from conformance.cases import Case


def _mapped(f):
  """`f` mapped over axis 0 of its arguments, that axis named 'i'."""
  return refimpl.vmap(f, axis_name="i")


def _every_member(value, n):
  """`value` (what every member gets) stacked n times along axis 0."""
  return np.broadcast_to(value, (n,) + np.shape(value)).copy()


def _sum0(x):
  wide = np.complex128 if x.dtype.kind == "c" else np.float64 if x.dtype.kind == "f" \
      else np.int64
  return x.sum(0, dtype=wide)


@st.composite
def _members(draw, dtype_list, min_dims=1, extra=None, elements=None):
  """((x,), kwargs): x of shape (n, ...) (n >= 1 members); `extra(shape)`
  draws kwargs for the member shape."""
  dtype = draw(st.sampled_from(dtype_list))
  shape = draw(S.shapes(min_dims=min_dims, min_side=1, max_side=3))
  kwargs = draw(extra(shape)) if extra is not None else {}
  make = S.small_integer_arrays if elements == "small" else S.arrays
  return (draw(make(dtype, shape)),), kwargs


_NUMBERS = S.INT_DTYPES + S.FLOAT_DTYPES
_ORDERED = S.BOOL_DTYPES + S.INT_DTYPES + S.FLOAT_DTYPES


def _psum(x):
  return _mapped(lambda v: lax.psum(v, "i"))(x)


def _psum_np(x):
  dtype = np.int32 if x.dtype == np.bool_ else x.dtype
  return _every_member(_sum0(x.astype(dtype)).astype(dtype), len(x))


def _pmean_np(x):
  return _every_member((_sum0(x) / len(x)).astype(x.dtype), len(x))


def _all_gather_kwargs(shape):
  member_ndim = len(shape) - 1
  tiled = st.booleans() if member_ndim else st.just(False)
  return tiled.flatmap(lambda tiled: st.fixed_dictionaries({
      "tiled": st.just(tiled),
      "axis": st.integers(0, member_ndim - 1) if tiled else st.integers(0, member_ndim)}))


def _all_gather(x, axis, tiled):
  return _mapped(lambda v: lax.all_gather(v, "i", axis=axis, tiled=tiled))(x)


def _all_gather_np(x, axis, tiled):
  gathered = np.concatenate(list(x), axis) if tiled else np.stack(list(x), axis)
  return _every_member(gathered, len(x))


def _ppermute_kwargs(shape):
  n = shape[0]
  return st.permutations(range(n)).flatmap(lambda dsts: st.lists(
      st.integers(0, n - 1), unique=True, max_size=n).map(
          lambda srcs: {"perm": tuple((s, dsts[s]) for s in srcs)}))


def _ppermute(x, perm):
  return _mapped(lambda v: lax.ppermute(v, "i", perm))(x)


def _ppermute_np(x, perm):
  out = np.zeros_like(x)
  for src, dst in perm:
    out[dst] = x[src]
  return out


def _pbroadcast(x, source):
  return _mapped(lambda v: lax.pbroadcast(v, "i", source))(x)


def _source_kwargs(shape):
  return st.integers(0, shape[0] - 1).map(lambda s: {"source": s})


@st.composite
def _scatter_inputs(draw, dtype_list, tiled):
  """x of shape (n, ..., n * k at scatter_dimension, ...)."""
  dtype = draw(st.sampled_from(dtype_list))
  n = draw(st.integers(1, 3))
  member = list(draw(S.shapes(min_dims=0, max_dims=2, min_side=1, max_side=3)))
  dim = draw(st.integers(0, len(member)))
  member.insert(dim, n * draw(st.integers(1, 2)) if tiled else n)
  x = draw(S.small_integer_arrays(dtype, (n, *member)))
  return (x,), {"scatter_dimension": dim, "tiled": tiled}


def _psum_scatter(x, scatter_dimension, tiled):
  return _mapped(lambda v: lax.psum_scatter(v, "i", scatter_dimension=scatter_dimension,
                                            tiled=tiled))(x)


def _psum_scatter_np(x, scatter_dimension, tiled):
  total = _sum0(x).astype(x.dtype)
  return np.stack(np.split(total, len(x), scatter_dimension) if tiled
                  else [np.take(total, k, scatter_dimension) for k in range(len(x))])


@st.composite
def _all_to_all_inputs(draw, dtype_list):
  """x of shape (n, ...) whose member axis `split_axis` has size n."""
  dtype = draw(st.sampled_from(dtype_list))
  n = draw(st.integers(1, 3))
  member = list(draw(S.shapes(min_dims=0, max_dims=2, min_side=1, max_side=3)))
  split = draw(st.integers(0, len(member)))
  member.insert(split, n)
  concat = draw(st.integers(0, len(member) - 1))
  x = draw(S.arrays(dtype, (n, *member)))
  return (x,), {"split_axis": split, "concat_axis": concat}


def _all_to_all(x, split_axis, concat_axis):
  return _mapped(lambda v: lax.all_to_all(v, "i", split_axis, concat_axis))(x)


def _all_to_all_np(x, split_axis, concat_axis):
  # member k receives block k of every member j, stacked in member order
  return np.stack([np.stack([np.take(x[j], k, split_axis) for j in range(len(x))],
                            concat_axis) for k in range(len(x))])


def _axis_index(x):
  return _mapped(lambda v: lax.axis_index("i"))(x)


# --- the transposed collectives: vjp inside the map ------------------------------------------

def _vjp_mapped(collective):
  """(x, ct) -> the vjp of `collective` at each member's x, applied to its ct."""
  def vjp(v, ct):
    return refimpl.vjp(collective, v)[1](ct)[0]
  return lambda x, ct: _mapped(vjp)(x, ct)


def _pairs(out_shape, in_shape=lambda n, m: (m,), arrays=S.small_integer_arrays,
           dtype=np.float32):
  """Inputs ((x, ct), {}) for n members: x of shape (n, *in_shape(n, m)) and
  ct of shape (n, *out_shape(n, m)) (the collective's output per member)."""
  @st.composite
  def inputs(draw):
    n, m = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    make = lambda shape: draw(arrays(dtype, shape))
    return (make((n, *in_shape(n, m))), make((n, *out_shape(n, m)))), {}
  return inputs


_PSUM_VJP = _vjp_mapped(lambda u: lax.psum(u, "i"))
_ALL_GATHER_VJP = _vjp_mapped(lambda u: lax.all_gather(u, "i"))
_SCATTER_VJP = _vjp_mapped(lambda u: lax.psum_scatter(u, "i", scatter_dimension=1))
_SCATTER_SHAPES = dict(in_shape=lambda n, m: (m, n), out_shape=lambda n, m: (m,))
_SHIFT = lambda n: [(j, (j + 1) % n) for j in range(n)]
_PPERMUTE_VJP = lambda x, ct: _vjp_mapped(lambda u: lax.ppermute(u, "i", _SHIFT(len(x))))(x, ct)
_PBROADCAST_VJP = _vjp_mapped(lambda u: lax.pbroadcast(u, "i", 0))
_ALL_TO_ALL_VJP = _vjp_mapped(lambda u: lax.all_to_all(u, "i", 0, 0, tiled=True))


def _all_to_all_tiled_np(x):
  n = len(x)
  blocks = [np.split(row, n) for row in x]   # blocks[j][k]: member j's block k
  return np.stack([np.concatenate([blocks[j][k] for j in range(n)]) for k in range(n)])


def _pbroadcast_vjp_np(x, ct):
  out = np.zeros_like(ct)
  out[0] = ct.sum(0)
  return out


CASES = [
    Case("lax.psum", _psum, lambda: _members(_NUMBERS + S.BOOL_DTYPES, elements="small"),
         _psum_np),
    Case("lax.psum (constant)", lambda x: _mapped(lambda v: v * lax.psum(1, "i"))(x),
         lambda: _members(S.INT_DTYPES), lambda x: x * np.asarray(len(x), x.dtype)),
    Case("lax.pmean", lambda x: _mapped(lambda v: lax.pmean(v, "i"))(x),
         lambda: _members([np.float32], elements="small"), _pmean_np),
    Case("lax.pmax", lambda x: _mapped(lambda v: lax.pmax(v, "i"))(x),
         lambda: _members(_ORDERED), lambda x: _every_member(x.max(0), len(x))),
    Case("lax.pmin", lambda x: _mapped(lambda v: lax.pmin(v, "i"))(x),
         lambda: _members(_ORDERED), lambda x: _every_member(x.min(0), len(x))),
    Case("lax.all_gather", _all_gather, lambda: _members(S.ALL_DTYPES, extra=_all_gather_kwargs),
         _all_gather_np),
    Case("lax.psum_scatter", _psum_scatter, lambda: _scatter_inputs(_NUMBERS, False),
         _psum_scatter_np),
    Case("lax.psum_scatter (tiled)", _psum_scatter, lambda: _scatter_inputs(_NUMBERS, True),
         _psum_scatter_np),
    Case("lax.ppermute", _ppermute, lambda: _members(S.ALL_DTYPES, extra=_ppermute_kwargs),
         _ppermute_np),
    Case("lax.pbroadcast", _pbroadcast, lambda: _members(S.ALL_DTYPES, extra=_source_kwargs),
         lambda x, source: _every_member(x[source], len(x))),
    Case("lax.all_to_all", _all_to_all, lambda: _all_to_all_inputs(S.ALL_DTYPES),
         _all_to_all_np),
    Case("lax.axis_index", _axis_index, lambda: _members([np.int32]),
         lambda x: np.arange(len(x), dtype=np.int32)),
    Case("lax.psum (vjp under vmap)", _PSUM_VJP, _pairs(lambda n, m: (m,)),
         lambda x, ct: _every_member(ct.sum(0), len(x))),
    Case("lax.all_gather (vjp under vmap)", _ALL_GATHER_VJP, _pairs(lambda n, m: (n, m)),
         lambda x, ct: ct.sum(0)),
    Case("lax.psum_scatter (vjp under vmap)", _SCATTER_VJP, _pairs(**_SCATTER_SHAPES),
         lambda x, ct: _every_member(ct.T, len(x))),
    Case("lax.ppermute (vjp under vmap)", _PPERMUTE_VJP, _pairs(lambda n, m: (m,)),
         lambda x, ct: np.roll(ct, -1, 0)),
    Case("lax.pbroadcast (vjp under vmap)", _PBROADCAST_VJP, _pairs(lambda n, m: (m,)),
         _pbroadcast_vjp_np),
    Case("lax.all_to_all (vjp under vmap)", _ALL_TO_ALL_VJP,
         _pairs(lambda n, m: (n * m,), lambda n, m: (n * m,)),
         lambda x, ct: _all_to_all_tiled_np(ct)),
]


# --- derivatives --------------------------------------------------------------------------
# Differentiating the "(vjp under vmap)" functions runs the collectives'
# JVP and transpose rules inside the map (and those of what their batching
# rules bind); their values are checked by the cases above.

def _ad_pairs(out_shape, in_shape=lambda n, m: (m,)):
  return _pairs(out_shape, in_shape, S.bounded_arrays, np.float64)


AD_CASES = [
    ADCase("lax.psum", _PSUM_VJP, _ad_pairs(lambda n, m: (m,)), ("psum",)),
    ADCase("lax.psum (of a vmapped function)", lambda x, y: _psum(x * y),
           _ad_pairs(lambda n, m: (m,)), ("psum",)),
    ADCase("lax.all_gather", _ALL_GATHER_VJP, _ad_pairs(lambda n, m: (n, m)),
           ("all_gather", "reduce_scatter")),
    ADCase("lax.psum_scatter", _SCATTER_VJP, _ad_pairs(**_SCATTER_SHAPES),
           ("reduce_scatter", "all_gather")),
    ADCase("lax.ppermute", _PPERMUTE_VJP, _ad_pairs(lambda n, m: (m,)), ("ppermute",)),
    ADCase("lax.pbroadcast", _PBROADCAST_VJP, _ad_pairs(lambda n, m: (m,)),
           ("pbroadcast", "psum")),
    ADCase("lax.all_to_all", _ALL_TO_ALL_VJP, _ad_pairs(lambda n, m: (n * m,),
                                                        lambda n, m: (n * m,)),
           ("all_to_all",)),
]
