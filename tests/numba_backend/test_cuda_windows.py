"""The numba-cuda backend's windowed reductions, selections and convolution
(numba_backend/cuda/windows.py, convolution.py) in numba's CUDA simulator:
bit for bit the CPU backend's (the same operations in the same order; NaNs
equal NaNs, the sign of zero kept), and the reference's as the CPU tests
compare them (zeros of either sign equal; conv exactly, on small integers);
and their kernels compiled to PTX for compute capability 9.0."""

import functools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
from refimpl import dtypes, lax
from refimpl.lax import elementwise, windows
from refimpl.lax.rules import max_identity, min_identity
from conformance import strategies as cst
from numba_backend.lower import LoweringError
from tests.numba_backend.ptx import instructions, programs_ptx
from tests.numba_backend.test_elementwise import assert_same, run_x64
from tests.numba_backend.test_windows import geometry, valid, window_output_shape

DTYPES = [np.float32, np.float64, np.float16, np.int32]

# (the simulator runs the kernels' Python on NumPy scalars, which warn where
# a GPU overflows silently)
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")


def assert_bits(got, want, what):
  """The same dtype, shape and bits (NaNs, of any payload, equal NaNs)."""
  got, want = np.asarray(got), np.asarray(want)
  assert got.dtype == want.dtype and got.shape == want.shape, what
  if not dtypes.is_inexact(want.dtype):
    np.testing.assert_array_equal(got, want, err_msg=what)
    return
  parts = (lambda a: (a.real, a.imag)) if dtypes.is_complex(want.dtype) else (lambda a: (a,))
  for g, w in zip(parts(got), parts(want)):
    nan = np.isnan(w)
    assert np.array_equal(np.isnan(g), nan), what
    bits = np.dtype(f"u{w.dtype.itemsize}")
    assert np.array_equal(g[~nan].view(bits), w[~nan].view(bits)), (what, g, w)


def check(program, names, *args):
  """`program`'s results on numba-cuda: the CPU backend's bits, the reference's values."""
  device = jax.jit(program, backend="numba-cuda")(*args)
  cpu = jax.jit(program, backend="numba")(*args)
  reference = jax.jit(program, backend="reference")(*args)
  for name, d, c, r in zip(names, device, cpu, reference):
    assert_bits(d, c, name)
    assert_same(r, d, name)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@settings(max_examples=5, deadline=None)
@given(data=st.data())
def test_reduce_windows_match_the_cpu_bit_for_bit(dtype, data):
  """reduce_window_sum, max and min and the generic reduce_window (a fold
  that is not a monoid's), with padding (negative too), strides and base
  and window dilation, on NaN, infinities, -0.0 and extreme integers."""
  x = data.draw(cst.arrays(dtype, cst.shapes(min_dims=2, max_dims=2, max_side=3)))
  params = data.draw(geometry(x.shape).filter(lambda p: valid(x.shape, p)))
  zero, one = np.array(0, dtype), np.array(1, dtype)
  fns = {"sum": lambda x: lax.reduce_window(x, zero, lax.add, **params),
         "pair": lambda x: lax.reduce_window((x, x), (zero, one),
                                             lambda a, b: (a[0] + b[0], a[1] * b[1] - a[0]),
                                             **params),
         "max": lambda x: lax.reduce_window(x, np.array(max_identity(dtype), dtype), lax.max,
                                            **params),
         "min": lambda x: lax.reduce_window(x, np.array(min_identity(dtype), dtype), lax.min,
                                            **params),
         "fold": lambda x: lax.reduce_window(x, one, lambda a, b: a * b - a, **params)}
  names = ["sum", "pair sum", "pair fold", "max", "min", "fold"]
  run_x64(dtype, lambda: check(lambda x: jax.tree_util.tree_leaves([f(x) for f in fns.values()]),
                               names, x))


def test_long_windows_are_summed_pairwise_as_on_the_cpu():
  """Windows of more than 128 elements: NumPy's pairwise halves, then blocks
  of eight accumulators, as the CPU's `sum_rows`."""
  x = np.random.default_rng(0).standard_normal(300).astype(np.float32) * 1e4
  x[::37] = -0.0
  fun = lambda x: [lax.reduce_window(x, np.float32(0), lax.add, (261,), (13,), ((0, 1),)),
                   lax.reduce_window(x[:40], np.float32(0), lax.add, (9,), (4,), ((2, 2),),
                                     window_dilation=(2,))]
  check(fun, ["sum 261", "sum 9"], x)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@settings(max_examples=5, deadline=None)
@given(data=st.data())
def test_selections_match_the_cpu_bit_for_bit(dtype, data):
  """select_and_scatter_add (ge and le: overlapping windows add into one
  position in the reference's order, padding selected too), the generic
  select_and_scatter and select_and_gather_add (with dilations)."""
  x = data.draw(cst.arrays(dtype, cst.shapes(min_dims=2, max_dims=2, max_side=4)))
  params = data.draw(geometry(x.shape, dilations=False).filter(lambda p: valid(x.shape, p)))
  source = data.draw(cst.arrays(dtype, st.just(window_output_shape(x.shape, params))))
  gather_params = data.draw(geometry(x.shape).filter(lambda p: valid(x.shape, p)))
  tangents = data.draw(cst.arrays(dtype, st.just(x.shape)))
  args = (params["window_dimensions"], params["window_strides"], params["padding"])

  def program(x, source, tangents):
    return [windows.select_and_scatter_add(source, x, elementwise.ge_p, *args),
            windows.select_and_scatter_add(source, x, elementwise.le_p, *args),
            windows.select_and_scatter(x, lax.ge, *args, source, np.array(1, dtype),
                                       lambda a, b: a * b + a),
            windows.select_and_gather_add(tangents, x, elementwise.ge_p,
                                          *gather_params.values()),
            windows.select_and_gather_add(tangents, x, elementwise.le_p,
                                          *gather_params.values())]
  names = ["scatter_add ge", "scatter_add le", "select_and_scatter", "gather ge", "gather le"]
  run_x64(dtype, lambda: check(program, names, x, source, tangents))


def test_overlapping_windows_add_in_the_reference_order():
  """Three windows select x[1]: their sources are added in window order,
  (((0 + 1) + 1e16) - 1e16) = 0, where the reverse order gives 1."""
  x = np.array([0, 5, 0, 0], np.float64)
  source = np.array([1.0, 1e16, -1e16, 3.0])
  fun = lambda s, x: windows.select_and_scatter_add(s, x, elementwise.ge_p, (3,), (1,),
                                                     ((1, 1),))
  with jax.enable_x64():
    got = jax.jit(fun, backend="numba-cuda")(source, x)
    assert_bits(got, np.array([0.0, 0.0, 3.0, 0.0]), "select_and_scatter_add")
    assert_bits(got, jax.jit(fun, backend="reference")(source, x), "select_and_scatter_add")


def test_a_computation_a_kernel_cannot_run_is_a_clear_error():
  fold = lambda x: lax.reduce_window(x, np.float32(0), lambda a, b: lax.cond(a > b, lambda: a,
                                                                             lambda: b),
                                     (2,), (1,), ((0, 0),))
  with pytest.raises(LoweringError, match="reduce_window only with a computation of "
                                          "elementwise operations, not 'cond'"):
    jax.jit(fold, backend="numba-cuda")(np.ones(3, np.float32))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@settings(max_examples=4, deadline=None)
@given(data=st.data())
def test_conv_matches_the_reference_and_the_cpu_bit_for_bit(dtype, data):
  """0 to 2 spatial dimensions, strides, padding (negative too), lhs and rhs
  dilation, feature and batch groups: on small integers (exact sums) in a
  random layout, the reference's values; on any values (NaN, infinities,
  -0.0, extremes) in the canonical layout, the CPU's bits (its sums, in
  its order)."""
  (lhs, rhs), kwargs = data.draw(cst.conv_inputs([dtype]))
  program = functools.partial(lax.conv_general_dilated, **kwargs)
  lhs_spec, rhs_spec, _ = kwargs["dimension_numbers"]
  spatial = "".join(c for c in rhs_spec if c not in "OI")
  canonical = dict(kwargs, dimension_numbers=("NC" + spatial, "OI" + spatial, "NC" + spatial))
  x, w = (data.draw(cst.arrays(dtype, tuple(a.shape[spec.index(c)] for c in axes)))
          for a, spec, axes in ((lhs, lhs_spec, "NC" + spatial), (rhs, rhs_spec, "OI" + spatial)))
  convolve = functools.partial(lax.conv_general_dilated, **canonical)

  def run():
    device = jax.jit(program, backend="numba-cuda")(lhs, rhs)
    assert_same(jax.jit(program, backend="reference")(lhs, rhs), device, "conv, small integers")
    device = jax.jit(convolve, backend="numba-cuda")(x, w)
    assert_bits(device, jax.jit(convolve, backend="numba")(x, w), "conv")
  run_x64(dtype, run)


_PTX_SETUP = """
from refimpl import lax
from refimpl.lax import elementwise, windows
from refimpl.lax.rules import max_identity, min_identity
x, s = np.ones((4, 5), np.float32), np.ones((3, 2), np.float32)
geometry = ((2, 3), (1, 2), ((0, 0), (1, 0)))
dilated = dict(base_dilation=(2, 1), window_dilation=(1, 2))
programs = {
    "sum": lambda x, s: lax.reduce_window(x, np.float32(0), lax.add, *geometry, **dilated),
    "max": lambda x, s: lax.reduce_window(x, -np.inf, lax.max, *geometry, **dilated),
    "fold": lambda x, s: lax.reduce_window(x, np.float32(0), lambda a, b: a - b, *geometry),
    "scatter_add": lambda x, s: windows.select_and_scatter_add(s, x, elementwise.ge_p,
                                                                *geometry),
    "select_and_scatter": lambda x, s: windows.select_and_scatter(x, lax.ge, *geometry, s,
                                                                  np.float32(0), lax.add),
    "gather": lambda x, s: windows.select_and_gather_add(x, x, elementwise.le_p, *geometry,
                                                         **dilated),
    "conv": lambda x, s: lax.conv_general_dilated(x.reshape(2, 2, 5, 1), s.reshape(2, 1, 3, 1),
                                                  (2, 1), ((1, 0), (0, 1)), (1, 2), (2, 1),
                                                  feature_group_count=2)}
"""



def test_every_kernel_compiles_to_ptx_for_compute_capability_9():
  found = programs_ptx(_PTX_SETUP, "x, s")
  for name, kernels in found.items():
    assert kernels, name
    for kernel, ptx in kernels:
      assert ".target sm_90" in ptx and ".entry" in ptx, (name, kernel)
      assert ".extern .func" not in ptx, (name, kernel)   # nothing called outside the kernel
  # float32 selections, folds by float32 operations and convolutions stay
  # float32; sums and scatter-adds accumulate in float64, as the reference
  for name in ("fold", "select_and_scatter", "gather", "conv"):
    assert not any(instructions(ptx, ".f64") for _, ptx in found[name]), name
  for name in ("sum", "scatter_add"):
    assert any(instructions(ptx, ".f64") for _, ptx in found[name]), name
