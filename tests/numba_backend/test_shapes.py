"""The numba backend's shape lowerings agree with the reference rules.

Each test jits one program applying every shape primitive to one operand,
on the reference and on the numba backend, and compares the results
element for element (NaN equal to NaN): the primitives only move data.
Programs are compiled once per dtype and rank; the sizes (empty and size-1
axes included) and the static params that are integers come from
hypothesis and reuse them.
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
from refimpl import lax, random
from conformance import strategies as cst
from tests.numba_backend.test_elementwise import assert_same, run_x64

pytest.importorskip("numba")

SETTINGS = settings(max_examples=15, deadline=None)

DTYPES = cst.ALL_DTYPES + [np.int64, np.uint64, np.float64, np.complex128]


def check(program, *args):
  reference = jax.jit(program)(*args)
  backend = jax.jit(program, backend="numba")(*args)
  assert len(reference) == len(backend)
  for k, (r, b) in enumerate(zip(reference, backend)):
    assert_same(r, b, f"result {k} of {len(reference)}")


@st.composite
def shape_params(draw, shape):
  """Params for every shape primitive on an operand of `shape` (rank >= 1)."""
  rank = len(shape)
  sides = st.integers(0, 3)
  axis = draw(st.integers(0, rank - 1))
  first = draw(st.integers(0, shape[axis]))
  config = [(draw(st.integers(-3, 3)), draw(st.integers(-3, 3)), draw(st.integers(0, 2)))
            for _ in shape]
  config = [(low, max(high, -(low + n + max(n - 1, 0) * interior)), interior)
            for (low, high, interior), n in zip(config, shape)]   # sizes >= 0
  return dict(
      new=draw(sides), axis=axis, split=(first, shape[axis] - first), config=config,
      reps=tuple(draw(sides) for _ in shape),
      permutation=tuple(draw(st.permutations(range(rank)))),
      flip=tuple(sorted(draw(st.sets(st.integers(0, rank - 1))))))


def shape_program(params, iota_dtype):
  """Every shape primitive on x (padded with p); the static ints from `params`."""
  def program(x, p):
    rank = x.ndim
    axis = params["axis"]
    outs = [
        lax.broadcast_in_dim(x, (params["new"], *x.shape[:axis + 1], 2, *x.shape[axis + 1:]),
                             (*range(1, axis + 2), *range(axis + 3, rank + 2))),
        lax.broadcast_in_dim(lax.slice_in_dim(x, 0, min(1, x.shape[axis]), axis=axis),
                             (*x.shape[:axis], 3 * min(1, x.shape[axis]), *x.shape[axis + 1:]),
                             tuple(range(rank))),   # size-1 axis stretched
        lax.reshape(x, (x.size,)),
        lax.reshape(x, tuple(x.shape[d] for d in params["permutation"])[::-1],
                    params["permutation"]),
        lax.transpose(x, params["permutation"]),
        lax.rev(x, params["flip"]),
        lax.pad(x, p, params["config"]),
        lax.concatenate([x, lax.rev(x, (axis,)), x], axis),
        *lax.split(x, params["split"], axis),
        lax.stack([x, lax.rev(x, (axis,))], axis + params["new"] % 2),
        *lax.unstack(x, axis),
        lax.squeeze(lax.expand_dims(x, (axis, rank + 1)), (axis, rank + 1)),
        lax.tile(x, params["reps"]),
        *lax.optimization_barrier((x, p)),
    ]
    if iota_dtype is not None:
      outs.append(lax.broadcasted_iota(iota_dtype, x.shape, axis))
    return outs
  return program


def iota_dtype(dtype):
  return None if np.dtype(dtype) == np.bool_ else dtype


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@SETTINGS
@given(data=st.data())
def test_every_dtype(dtype, data):
  """Rank 2, every dtype (64-bit ones under enable_x64)."""
  def run():
    shape = data.draw(cst.shapes(min_dims=2, max_dims=2, max_side=3))
    x = data.draw(cst.arrays(dtype, shape))
    p = data.draw(cst.arrays(dtype, ()))
    check(shape_program(data.draw(shape_params(shape)), iota_dtype(dtype)), x, p)
  run_x64(dtype, run)


@pytest.mark.parametrize("rank", [1, 3, 4])
@SETTINGS
@given(data=st.data())
def test_every_rank(rank, data):
  shape = data.draw(cst.shapes(min_dims=rank, max_dims=rank, max_side=3))
  x = data.draw(cst.arrays(np.float32, shape))
  p = data.draw(cst.arrays(np.float32, ()))
  check(shape_program(data.draw(shape_params(shape)), np.int32), x, p)


@SETTINGS
@given(data=st.data())
def test_rank_0(data):
  def program(x):
    return [lax.broadcast_in_dim(x, (2, 3), ()), lax.reshape(x, (1, 1)),
            lax.reshape(lax.reshape(x, (1, 1, 1)), ()), lax.transpose(x, ()), lax.rev(x, ()),
            lax.pad(x, x, []), lax.tile(x, ()), lax.squeeze(lax.expand_dims(x, (0,)), (0,)),
            *lax.optimization_barrier((x,))]
  check(program, data.draw(cst.arrays(data.draw(st.sampled_from(cst.FLOAT_DTYPES)), ())))


@SETTINGS
@given(data=st.data())
def test_keys(data):
  """Key arrays: the primitives move whole keys (their uint32[2] data)."""
  shape = data.draw(cst.shapes(min_dims=2, max_dims=2, max_side=3))
  params = data.draw(shape_params(shape))
  seeds = data.draw(cst.arrays(np.uint32, (*shape, 2)))
  keys = random.wrap_key_data(seeds)
  pad_key = random.wrap_key_data(data.draw(cst.arrays(np.uint32, (2,))))
  program = shape_program(params, None)
  reference = jax.jit(program)(keys, pad_key)
  backend = jax.jit(program, backend="numba")(keys, pad_key)
  for k, (r, b) in enumerate(zip(reference, backend)):
    assert r.dtype == b.dtype, k
    assert_same(random.key_data(r), random.key_data(b), f"result {k}")
