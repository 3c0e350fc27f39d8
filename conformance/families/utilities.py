"""Cases for refimpl/numpy/utilities.py: type predicates, block, apply_along_axis,
apply_over_axes, bit packing and the window functions (kaiser included)."""

import numpy as np
from hypothesis import strategies as st

import refimpl.numpy as jnp
from conformance import strategies as S
from conformance.cases import Case

REAL_AND_COMPLEX = S.FLOAT_DTYPES + S.COMPLEX_DTYPES
BITORDER = st.sampled_from(["big", "little"])


def _axis_kwargs(shape, **more):
  """kwargs {"axis": None or an axis of `shape`, **more}."""
  return st.fixed_dictionaries({"axis": S.axes(len(shape), allow_tuple=False), **more})


def _packbits_inputs():
  return S.array_and_kwargs(lambda shape: _axis_kwargs(shape, bitorder=BITORDER),
                            S.BOOL_DTYPES + S.INT_DTYPES)


def _unpackbits_kwargs(shape):
  """axis, bitorder and a count: None, or from minus the bits there are (NumPy
  raises below that; JAX gives an empty axis) to beyond them (zero padding).
  With no bits, only count 0: NumPy pads an empty axis with garbage."""
  def with_count(kwargs):
    axis = kwargs["axis"]
    bits = 8 * (int(np.prod(shape)) if axis is None else shape[axis])
    count = st.integers(-bits, bits + 10) if bits else st.just(0)
    return st.fixed_dictionaries({**{k: st.just(v) for k, v in kwargs.items()},
                                  "count": st.none() | count})
  return _axis_kwargs(shape, bitorder=BITORDER).flatmap(with_count)


def _unpackbits_inputs():
  return S.array_and_kwargs(_unpackbits_kwargs, [np.uint8])


def _along_axis_inputs():
  """A float array with no empty axis (NumPy's apply_along_axis needs slices) and an axis."""
  return S.array_and_kwargs(
      lambda shape: st.fixed_dictionaries({"axis": st.integers(-len(shape), len(shape) - 1)}),
      S.FLOAT_DTYPES, shape=S.shapes(min_dims=1, min_side=1))


def _over_axes_inputs():
  return S.array_and_kwargs(
      lambda shape: st.fixed_dictionaries({"axes": st.lists(
          st.integers(-len(shape), len(shape) - 1), max_size=3)}),
      S.INT_DTYPES + S.FLOAT_DTYPES, shape=S.shapes(min_dims=1, min_side=1))


def _window_inputs():
  return st.tuples(st.just(()), st.fixed_dictionaries({"M": st.integers(0, 20)}))


def _window_case(name):
  # float32 against NumPy's float64: cancellation near the window's zeros
  # leaves absolute errors of a few float32 ulps of 1.
  return Case(f"jnp.{name}", getattr(jnp, name), _window_inputs, getattr(np, name),
              atol=1e-6)


def _kaiser_inputs():
  """beta (a float32 scalar, traced under jit) and the window size M."""
  return st.tuples(st.floats(0, 30, width=32).map(lambda b: (np.float32(b),)),
                   st.fixed_dictionaries({"M": st.integers(0, 20)}))


CASES = [
    Case("jnp.iscomplex", jnp.iscomplex, lambda: S.case_inputs(REAL_AND_COMPLEX),
         np.iscomplex),
    Case("jnp.isreal", jnp.isreal, lambda: S.case_inputs(REAL_AND_COMPLEX),
         np.isreal),
    Case("jnp.packbits", jnp.packbits, _packbits_inputs, np.packbits),
    Case("jnp.unpackbits", jnp.unpackbits, _unpackbits_inputs, np.unpackbits),
    Case("jnp.block", lambda a, b: jnp.block([[a, b], [b, a]]),
         lambda: S.same_shape_arrays(), lambda a, b: np.block([[a, b], [b, a]])),
    Case("jnp.apply_along_axis",
         lambda a, axis: jnp.apply_along_axis(lambda v: jnp.stack([v[-1], v[0]]), axis, a),
         _along_axis_inputs,
         lambda a, axis: np.apply_along_axis(lambda v: np.stack([v[-1], v[0]]), axis, a)),
    Case("jnp.apply_over_axes", lambda a, axes: jnp.apply_over_axes(jnp.max, a, axes),
         _over_axes_inputs, lambda a, axes: np.apply_over_axes(np.max, a, axes)),
    *(_window_case(name) for name in ("bartlett", "blackman", "hamming", "hanning")),
    Case("jnp.kaiser", lambda beta, M: jnp.kaiser(M, beta), _kaiser_inputs,
         lambda beta, M: np.kaiser(M, beta), rtol=1e-5, atol=1e-6),
]
