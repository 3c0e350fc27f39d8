"""The numba backend's indexing lowerings agree with the reference rules.

Each test jits one program of indexing primitives, on the reference and on
the numba backend, and compares the results element for element (NaN
equal to NaN). Indices are drawn with the extremes of their dtype (huge,
negative, INT_MIN/INT_MAX) next to small in- and out-of-bounds values, so
every clamp, fill and drop is exercised; gather and scatter run in every
GatherScatterMode, which the compiled code reads at run time.
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
from refimpl import dtypes, lax, random
from refimpl.lax import GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers
from conformance import strategies as cst
from tests.numba_backend.test_elementwise import assert_same, run_x64

pytest.importorskip("numba")

SETTINGS = settings(max_examples=15, deadline=None)

MODES = list(GatherScatterMode)


def check(program, *args, unwrap=lambda x: x, backend="numba"):
  reference = jax.jit(program)(*args)
  backend = jax.jit(program, backend=backend)(*args)
  assert len(reference) == len(backend)
  for k, (r, b) in enumerate(zip(reference, backend)):
    assert_same(unwrap(r), unwrap(b), f"result {k} of {len(reference)}")


def index_values(dtype):
  """Indices of `dtype`: small ones in and out of bounds, and its extremes."""
  info = np.iinfo(dtype)
  extremes = [int(info.min), int(info.min) + 1, int(info.max) - 1, int(info.max)]
  return st.one_of(st.integers(max(-3, int(info.min)), 6), st.sampled_from(extremes))


def index_arrays(dtype, shape):
  return cst.arrays(dtype, shape, elements=index_values(dtype))


def index_scalars(dtype, n):
  return st.tuples(*[index_arrays(dtype, ()) for _ in range(n)])


# Rank-2 operands: a gather of rows' windows, a scatter of them, and slices.
ROW_GATHER = GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                    start_index_map=(0, 1))
ROW_SCATTER = ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                      scatter_dims_to_operand_dims=(0, 1))


@st.composite
def rank2_case(draw, dtype, index_dtype):
  shape = (draw(st.integers(1, 4)), draw(st.integers(0, 4)))   # rows to gather: one at least
  x = draw(cst.arrays(dtype, shape))
  width = draw(st.integers(0, shape[1]))
  count = draw(st.integers(0, 4))
  indices = draw(index_arrays(index_dtype, (count, 2)))
  updates = draw(cst.arrays(dtype, (count, width)))
  block = tuple(draw(st.integers(0, n)) for n in shape)
  update = draw(cst.arrays(dtype, block))
  starts = draw(index_scalars(index_dtype, 2))
  start = [draw(st.integers(0, n)) for n in shape]
  limit = [draw(st.integers(s, n)) for s, n in zip(start, shape)]
  stride = [draw(st.integers(1, 3)) for _ in shape]
  mode = draw(st.sampled_from(MODES))
  return dict(x=x, indices=indices, updates=updates, update=update, starts=starts,
              width=width, block=block, bounds=(start, limit, stride), mode=mode)


def rank2_program(case):
  """slice, dynamic_slice, dynamic_update_slice, gather and scatter in `case`'s mode."""
  def program(x, indices, updates, update, starts):
    return [
        lax.slice(x, *case["bounds"]),
        lax.dynamic_slice(x, starts, case["block"], allow_negative_indices=False),
        lax.dynamic_update_slice(x, update, starts, allow_negative_indices=False),
        lax.dynamic_slice(x, starts, case["block"]),   # negative starts wrapped first
        lax.gather(x, indices, ROW_GATHER, (1, case["width"]), mode=case["mode"]),
        lax.scatter(x, indices, updates, ROW_SCATTER, mode=case["mode"]),
    ]
  return program


OPERAND_AND_INDEX_DTYPES = [
    (np.bool_, np.int8), (np.int8, np.uint8), (np.int16, np.int16), (np.int32, np.uint16),
    (np.uint8, np.int32), (np.uint16, np.uint32), (np.uint32, np.int32),
    (np.float16, np.int8), (dtypes.bfloat16, np.uint8), (np.float32, np.int32),
    (np.complex64, np.uint32), (np.int64, np.int64), (np.uint64, np.uint64),
    (np.float64, np.int64), (np.complex128, np.uint64),
]


@pytest.mark.parametrize("dtype,index_dtype", OPERAND_AND_INDEX_DTYPES,
                         ids=lambda d: np.dtype(d).name)
@SETTINGS
@given(data=st.data())
def test_every_dtype(dtype, index_dtype, data):
  """Every operand dtype and every index dtype (64-bit ones under enable_x64)."""
  def run():
    case = data.draw(rank2_case(dtype, index_dtype))
    check(rank2_program(case), case["x"], case["indices"], case["updates"], case["update"],
          case["starts"])
  run_x64(dtype, run)


COMBINER_DTYPES = [np.float16, dtypes.bfloat16, np.float32, np.float64, np.int8, np.uint32,
                   np.int64, np.complex64, np.bool_]


@pytest.mark.parametrize("dtype", COMBINER_DTYPES, ids=lambda d: np.dtype(d).name)
@SETTINGS
@given(data=st.data())
def test_scatter_combiners(dtype, data):
  """scatter-add/-sub/-mul/-min/-max, repeated indices combined in order."""
  def run():
    shape = data.draw(cst.shapes(min_dims=2, max_dims=2, min_side=1, max_side=3))
    x = data.draw(cst.arrays(dtype, shape))
    width = data.draw(st.integers(0, shape[1]))
    count = data.draw(st.integers(0, 6))
    indices = data.draw(cst.arrays(np.int32, (count, 2), elements=st.integers(-1, 3)))
    updates = data.draw(cst.arrays(dtype, (count, width)))
    mode = data.draw(st.sampled_from(MODES))
    number = np.dtype(dtype) != np.bool_
    scatters = ([lax.scatter_add, lax.scatter_sub, lax.scatter_mul] if number else []) + [
        lax.scatter_min, lax.scatter_max]
    check(lambda x, i, u: [s(x, i, u, ROW_SCATTER, mode=mode) for s in scatters],
          x, indices, updates)
  run_x64(dtype, run)


@SETTINGS
@given(data=st.data())
def test_batching_dims(data):
  """operand_batching_dims / start_indices_batching_dims, offset dims not last,
  a window over several dimensions, and scatter_apply's update_jaxpr."""
  batch, n, k = (data.draw(st.integers(0, 3)), data.draw(st.integers(1, 3)),
                 data.draw(st.integers(0, 3)))
  x = data.draw(cst.arrays(np.float32, (batch, n, k)))
  m = data.draw(st.integers(0, 3))
  w = data.draw(st.integers(0, k))
  indices = data.draw(index_arrays(np.int32, (m, batch, 1)))
  updates = data.draw(cst.arrays(np.float32, (w, m, batch)))
  mode = data.draw(st.sampled_from(MODES))
  gather_dnums = GatherDimensionNumbers(
      offset_dims=(0,), collapsed_slice_dims=(1,), start_index_map=(1,),
      operand_batching_dims=(0,), start_indices_batching_dims=(1,))
  scatter_dnums = ScatterDimensionNumbers(
      update_window_dims=(0,), inserted_window_dims=(1,), scatter_dims_to_operand_dims=(1,),
      operand_batching_dims=(0,), scatter_indices_batching_dims=(1,))
  corner = data.draw(index_arrays(np.int32, (m, 2)))
  block_dnums = GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(0,),
                                       start_index_map=(2, 1))
  block = (min(batch, 1), min(n, 2), w)

  def program(x, indices, updates, corner):
    return [
        lax.gather(x, indices, gather_dnums, (min(batch, 1), 1, w), mode=mode),
        lax.scatter_add(x, indices, updates, scatter_dnums, mode=mode),
        lax.scatter(x, indices, updates, scatter_dnums, mode=mode),
        lax.gather(x, corner, block_dnums, block, mode=mode) if batch else x,
        lax.scatter_apply(x, indices, lambda v: v * 2.0 - 1.0, scatter_dnums,
                          update_shape=updates.shape, mode=mode),
    ]
  check(program, x, indices, updates, corner)


@SETTINGS
@given(data=st.data())
def test_keys(data):
  """Key arrays: whole keys (their uint32[2] data) gathered, scattered and sliced."""
  case = data.draw(rank2_case(np.uint32, np.int32))
  keys = lambda words: random.wrap_key_data(data.draw(cst.arrays(np.uint32, (*words.shape, 2))))
  args = [keys(case["x"]), case["indices"], keys(case["updates"]), keys(case["update"]),
          case["starts"]]
  check(rank2_program(case), *args, unwrap=random.key_data)
