"""The numba-cuda backend: its programs in numba's CUDA simulator against the
reference, and its kernels compiled to PTX for compute capability 9.0."""

import ctypes
import functools
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import lax
from numba_backend.cuda import reductions as cuda_reductions
from numba_backend.lower import LoweringError
from numba_backend.rules.reductions import pairwise_plan
from conformance import strategies as cst
from tests.numba_backend.ptx import compiled_ptx, instructions, programs_ptx
from tests.numba_backend.test_elementwise import run_x64
from tests.numba_backend.test_indexing import (OPERAND_AND_INDEX_DTYPES, ROW_SCATTER, check,
                                               rank2_case, rank2_program)

_UNARY = {"tanh": jnp.tanh, "exp": jnp.exp, "sin": jnp.sin, "log1p": lambda x: jnp.log1p(x * x),
          "neg": lambda x: -x, "abs": jnp.abs, "square": lambda x: x * x}
_BINARY = {"add": jnp.add, "sub": jnp.subtract, "mul": jnp.multiply, "max": jnp.maximum,
           "where": lambda x, y: jnp.where(x > y, x, y * 0.5), "fma": lambda x, y: x * y + 1.0}


@st.composite
def _programs(draw):
  """(a function of two arrays made of elementwise and shape ops, its two
  arguments): the second broadcasts against the first, or is its transpose."""
  shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
  dtype = draw(st.sampled_from([np.float32, np.float64]))
  kind = draw(st.sampled_from(["broadcast", "transposed", "same"]))
  if kind == "broadcast":
    other = tuple(n if draw(st.booleans()) else 1 for n in shape)[draw(st.integers(0, len(shape))):]
  else:
    other = shape[::-1] if kind == "transposed" else shape
  ops = draw(st.lists(st.tuples(st.sampled_from(sorted(_UNARY)), st.sampled_from(sorted(_BINARY))),
                      min_size=1, max_size=4))

  def fun(x, y):
    y = y.T if kind == "transposed" else y
    for unary, binary in ops:
      x = _BINARY[binary](_UNARY[unary](x), y)
    return x.reshape(-1)

  rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
  args = [rng.standard_normal(s).astype(dtype) for s in (shape, other)]
  return fun, args


@settings(max_examples=25, deadline=None)
@given(_programs())
def test_elementwise_programs_match_the_reference(program):
  fun, args = program
  got = jax.jit(fun, backend="numba-cuda")(*args)
  want = jax.jit(fun, backend="reference")(*args)
  assert got.dtype == want.dtype and got.shape == want.shape
  if got.dtype == np.float32:   # float64 values rounded: the reference's bits
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
  else:   # libm's float64 functions, the reference's NumPy ones (SIMD on some CPUs)
    np.testing.assert_array_max_ulp(np.asarray(got), np.asarray(want), maxulp=2)


@st.composite
def _shape_programs(draw):
  """(a shape or indexing operation with drawn parameters, its operand)."""
  shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
  rank, ints = len(shape), st.integers(-3, 6)
  name = draw(st.sampled_from(["slice", "rev", "transpose", "pad", "concatenate", "tile",
                               "broadcast", "reshape", "dynamic_slice", "dynamic_update_slice",
                               "iota"]))
  if name == "slice":
    starts = [draw(st.integers(0, n - 1)) for n in shape]
    limits = [draw(st.integers(s, n)) for s, n in zip(starts, shape)]
    steps = [draw(st.integers(1, 3)) for _ in shape]
    fun = functools.partial(lax.slice, start_indices=starts, limit_indices=limits, strides=steps)
  elif name == "rev":
    fun = functools.partial(lax.rev, dimensions=sorted(draw(st.sets(st.integers(0, rank - 1)))))
  elif name == "transpose":
    fun = functools.partial(lax.transpose, permutation=draw(st.permutations(range(rank))))
  elif name == "pad":
    config = [(draw(st.integers(-1, 2)), draw(st.integers(-1, 2)), draw(st.integers(0, 2)))
              for _ in shape]
    config = [(low, high, interior) if low + high + n + (n - 1) * interior >= 0 else (0, 0, 0)
              for (low, high, interior), n in zip(config, shape)]
    fun = lambda x: lax.pad(x, x.dtype.type(7), config)
  elif name == "concatenate":
    axis = draw(st.integers(0, rank - 1))
    fun = lambda x: lax.concatenate([x, x[::-1], x], axis)
  elif name == "tile":
    reps = [draw(st.integers(1, 3)) for _ in shape]
    fun = lambda x: jnp.tile(x, reps)
  elif name == "broadcast":
    fun = lambda x: lax.broadcast_in_dim(x, (2, *shape), tuple(range(1, rank + 1)))
  elif name == "reshape":
    fun = lambda x: x.reshape(-1)[::-1].reshape(shape[::-1])
  elif name == "dynamic_slice":
    sizes = [draw(st.integers(1, n)) for n in shape]
    fun = lambda x, i: lax.dynamic_slice(x, [i] * rank, sizes)
  elif name == "dynamic_update_slice":
    sizes = [draw(st.integers(1, n)) for n in shape]
    fun = lambda x, i: lax.dynamic_update_slice(x, -x[tuple(slice(0, n) for n in sizes)],
                                                [i] * rank)
  else:
    fun = lambda x: lax.broadcasted_iota(x.dtype, shape, rank - 1) + x
  dtype = draw(st.sampled_from([np.float32, np.int32, np.float16, np.complex64]))
  x = np.arange(math.prod(shape)).reshape(shape).astype(dtype) - 3
  args = (x, np.int32(draw(ints))) if name.startswith("dynamic") else (x,)
  return fun, args


@settings(max_examples=40, deadline=None)
@given(_shape_programs())
def test_shape_and_slicing_programs_match_the_reference(program):
  fun, args = program
  got = jax.jit(fun, backend="numba-cuda")(*args)
  want = jax.jit(fun, backend="reference")(*args)
  assert got.dtype == want.dtype and got.shape == want.shape
  np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@settings(max_examples=15, deadline=None)
@given(st.sampled_from([np.int8, np.int32, np.uint32, np.uint8]), st.data())
def test_integer_shifts_and_ldexp_keep_their_low_bits(dtype, data):
  """Shifts whose uint64 results the kernels cast to narrower integers
  (keeping the low bits), out-of-range amounts, and ldexp built on them."""
  x = data.draw(cst.arrays(dtype, (6,)))
  y = data.draw(cst.arrays(dtype, (6,)))
  f = lambda x, y: (lax.shift_left(x, y), lax.shift_right_logical(x, y),
                    lax.shift_right_arithmetic(x, y),
                    jnp.ldexp(x.astype(jnp.float32) * 1.5, y.astype(jnp.int32) * 37))
  got, want = jax.jit(f, backend="numba-cuda")(x, y), jax.jit(f, backend="reference")(x, y)
  for g, w in zip(got, want):
    np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_rank0_values_and_literals():
  f = jax.jit(lambda x, s: jnp.exp(x * s + 2.0) - s, backend="numba-cuda")
  x = np.linspace(-2, 2, 7).astype(np.float32)
  np.testing.assert_array_equal(np.asarray(f(x, np.float32(3))),
                                np.asarray(jax.jit(f.__wrapped__)(x, np.float32(3))))


@pytest.mark.parametrize("size", [1, 31, 32, 33, 255, 256, 257, 600])
def test_a_launch_covers_every_iteration(size, monkeypatch):
  from numba_backend.cuda import device
  launches = []
  launch_grid = device.launch_grid

  def record(kernel, blocks, threads, *args):
    launches.append((blocks, threads))
    launch_grid(kernel, blocks, threads, *args)

  monkeypatch.setattr(device, "launch_grid", record)
  x = np.arange(size, dtype=np.float32)
  np.testing.assert_array_equal(np.asarray(jax.jit(lambda x: x * 2 + 1, backend="numba-cuda")(x)),
                                x * 2 + 1)
  # fewer than 256 iterations: one block of a thread an iteration
  assert launches == [(1, size) if size < 256 else (-(-size // 256), 256)]


_REDUCTIONS = {"sum": jnp.sum, "prod": jnp.prod, "max": jnp.max, "min": jnp.min,
               "all": lambda x, axis: jnp.all(x > 0, axis=axis),
               "any": lambda x, axis: jnp.any(x > 0, axis=axis),
               "argmax": lambda x, axis: jnp.argmax(x, axis=axis[0]),
               "argmin": lambda x, axis: jnp.argmin(x, axis=axis[0])}


@st.composite
def _reductions(draw):
  """(a reduction over some axes, its operand): floats with NaNs and
  infinities, complex numbers, 16-bit floats and integers, in runs long
  enough to be summed pairwise."""
  shape = tuple(draw(st.lists(st.sampled_from([1, 2, 3, 7, 130, 300]), min_size=1, max_size=3)
                     .filter(lambda s: math.prod(s) <= 3000)))
  axes = tuple(sorted(draw(st.sets(st.integers(0, len(shape) - 1), min_size=1))))
  name = draw(st.sampled_from(sorted(_REDUCTIONS)))
  complex_ok = name in ("sum", "prod")
  dtype = draw(st.sampled_from([np.float32, np.float64, np.float16, jnp.bfloat16, np.int32]
                               + [np.complex64] * complex_ok))
  if name.startswith("arg"):
    axes = axes[:1]
  rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
  x = rng.standard_normal(shape) * (3 if name == "prod" else 100)
  if dtype == np.complex64:
    x = x + 1j * rng.standard_normal(shape)
  if draw(st.booleans()) and np.issubdtype(np.dtype(dtype), np.inexact):
    x.flat[rng.integers(0, x.size, 3)] = [np.nan, np.inf, -np.inf]
  return functools.partial(_REDUCTIONS[name], axis=axes), x.astype(dtype)


@settings(max_examples=40, deadline=None)
@given(_reductions())
def test_reductions_match_the_reference_bit_for_bit(reduction):
  fun, x = reduction
  got = jax.jit(fun, backend="numba-cuda")(x)
  want = jax.jit(fun, backend="reference")(x)
  assert got.dtype == want.dtype and got.shape == want.shape
  np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 40000), st.sampled_from([1, 2]), st.integers(0, 2**32 - 1))
def test_the_pairwise_tree_adds_as_the_plan_does(n, scale, seed):
  """`pairwise_tree` evaluated a height at a time (each addition's operands
  computed at a lower height) gives the plan's stack program's sum, bit for
  bit, on random block sums; every block and addition is a node once."""
  ops = pairwise_plan(n, scale)
  blocks = np.random.default_rng(seed).standard_normal(int(np.count_nonzero(ops[:, 2])))
  stack, block = {}, iter(blocks)
  for slot, _, size in ops:   # the plan, as `planned_sum` runs it
    stack[slot] = next(block) if size else stack[slot] + stack[slot + 1]
  nodes, root, additions, heights = cuda_reductions.pairwise_tree(ops)
  values = {k: v for k, v in enumerate(blocks)}
  assert nodes == len(blocks) + len(additions) and heights[:, 1].sum() == len(additions)
  for first, count in heights:
    level = additions[first:first + count]
    assert all(left in values and right in values for _, left, right in level)
    values.update({node: values[left] + values[right] for node, left, right in level})
  assert len(values) == nodes and values[root] == stack[0]


@settings(max_examples=25, deadline=None)
@given(_reductions())
def test_folds_split_into_chunks_match_the_reference_bit_for_bit(reduction):
  """Integer sums and products, max, min, all, any, argmax and argmin fold
  each chunk of a row by a thread first (`_CHUNK` elements: 5 here), then
  the chunks' results in order: the same bits (their results do not
  depend on the grouping; argmax keeps the first of equal values)."""
  _assert_bits_in_chunks(*reduction, 5)


def _assert_bits_in_chunks(fun, x, chunk):
  """fun(x) on numba-cuda lowered with `_CHUNK` = chunk is the reference's,
  bit for bit but for NaNs' signs and payloads (docs/backends.md's tolerances)."""
  with pytest.MonkeyPatch.context() as patch:
    patch.setattr(cuda_reductions, "_CHUNK", chunk)
    jax.clear_caches()   # (programs lowered with the usual chunks)
    got = jax.jit(fun, backend="numba-cuda")(x)
  jax.clear_caches()
  want = jax.jit(fun, backend="reference")(x)
  assert got.dtype == want.dtype and got.shape == want.shape
  got, want = np.atleast_1d(got), np.atleast_1d(want)
  nan = np.isnan(got) if got.dtype.kind in "fc" else np.zeros(got.shape, bool)
  np.testing.assert_array_equal(nan, np.isnan(want) if want.dtype.kind in "fc" else nan)
  np.testing.assert_array_equal(got[~nan].view(np.uint8), want[~nan].view(np.uint8))


def test_argmax_keeps_the_first_of_equal_values_across_chunks(monkeypatch):
  monkeypatch.setattr(cuda_reductions, "_CHUNK", 4)
  jax.clear_caches()
  x = np.array([[1, 3, 3, 7, 7, 0, 7, 2, 7, 1, 7],   # (chunks of 4: the first 7 ends one)
                [1, 1, 1, 1, 9, 9, 9, 9, np.nan, 9, np.nan]], np.float32)
  for fun in (lambda x: jnp.argmax(x, axis=1), lambda x: jnp.argmin(-x, axis=1)):
    np.testing.assert_array_equal(np.asarray(jax.jit(fun, backend="numba-cuda")(x)), [3, 8])
  jax.clear_caches()


_CUMULATIVE = {"cumsum": lax.cumsum, "cumprod": lax.cumprod, "cummax": lax.cummax,
               "cummin": lax.cummin, "cumlogsumexp": lax.cumlogsumexp}


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(sorted(_CUMULATIVE)), st.lists(st.integers(1, 6), min_size=1, max_size=3),
       st.data())
def test_cumulative_reductions_and_reduce_match_the_reference(name, shape, data):
  axis = data.draw(st.integers(0, len(shape) - 1))
  dtype = data.draw(st.sampled_from([np.float32, np.float64, np.float16, np.int32]
                                    if name != "cumlogsumexp" else [np.float32, np.float64]))
  x = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))).standard_normal(shape)
  x = (x * 4).astype(dtype)
  programs = [functools.partial(_CUMULATIVE[name], axis=axis,
                                reverse=data.draw(st.booleans())),
              lambda x: lax.reduce((x, x), (x.dtype.type(0), x.dtype.type(1)),
                                   lambda a, b: (a[0] * 2 + b[0], jnp.maximum(a[1], b[1])),
                                   (axis,))]
  for fun in programs:
    got = jax.jit(fun, backend="numba-cuda")(x)
    want = jax.jit(fun, backend="reference")(x)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
      assert g.dtype == w.dtype and g.shape == w.shape
      np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(["cumsum", "cumprod", "cummax", "cummin"]),
       st.lists(st.integers(1, 9), min_size=1, max_size=3), st.data())
def test_cumulative_folds_split_into_chunks_match_the_reference_bit_for_bit(name, shape, data):
  """Integer cumsum and cumprod, and cummax and cummin of any dtype (with
  NaNs and zeros of both signs), along axes longer than `_CHUNK` (3 here):
  each chunk's fold, then the chunks' running folds, then each chunk's
  running fold on from the fold before it: the same bits."""
  axis, reverse = data.draw(st.integers(0, len(shape) - 1)), data.draw(st.booleans())
  dtype = data.draw(st.sampled_from([np.int32, np.uint8, np.int64] if name in ("cumsum", "cumprod")
                                    else [np.float32, np.float16, np.int32, np.complex64]))
  rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
  x = rng.integers(-3, 4, shape) * rng.choice([1, 0.5, np.nan, -0.0], shape, p=[.7, .1, .1, .1])
  x = x.astype(dtype) if np.dtype(dtype).kind in "fc" else np.nan_to_num(x).astype(dtype)
  _assert_bits_in_chunks(functools.partial(_CUMULATIVE[name], axis=axis, reverse=reverse), x, 3)


def _step(x, i):
  """A loop body on the carry x at step i (a traced integer)."""
  return jnp.where(x > 0, jnp.sin(x) * x.dtype.type(2), x - i.astype(x.dtype)) + jnp.max(x)


_CONTROL_FLOW = {
    "fori": lambda x: lax.fori_loop(0, 4, lambda i, x: _step(x, i), x),
    "cond": lambda x: lax.cond(jnp.sum(x) > 0, lambda x: _step(x, np.int32(1)), jnp.cos, x),
    "switch": lambda x: lax.switch(jnp.argmax(x.reshape(-1)) % 3,
                                   [jnp.sin, lambda x: -x, lambda x: x * x], x),
    "while": lambda x: lax.while_loop(lambda c: jnp.max(c[1]) < 4, lambda c: (
        c[0] + 1, jnp.abs(c[1]) + c[1].dtype.type(0.75)), (0, x)),
    "vmapped while": jax.vmap(lambda v: lax.while_loop(   # a predicate with axes: masked rows
        lambda c: c[1] < jnp.sum(jnp.abs(v)) + 1, lambda c: (_step(c[0], np.int32(2)),
                                                          c[1] + 1), (v, 0))),
    "scan": lambda x: lax.scan(lambda c, xi: (_step(c, np.int32(3)) * xi, (c, jnp.sum(xi))),
                               x[0], x),
    "reverse scan": lambda x: lax.scan(lambda c, xi: (c + jnp.sum(xi), c * xi),
                                       x.reshape(-1)[0], x, reverse=True),
    "checkpointed grad": jax.grad(lambda x: jnp.sum(jax.checkpoint(
        lambda x: lax.fori_loop(0, 2, lambda i, x: jnp.sin(x) * x, x))(x.astype(jnp.float32)))),
    # elementwise steps: a kernel whose threads each run the loop on their elements
    "fori in threads": lambda x: lax.fori_loop(
        0, 5, lambda i, x: jnp.where(x > 0, jnp.sin(x) * 2, x - i.astype(x.dtype)), x),
    "while in threads": lambda x: lax.while_loop(lambda c: c[0] < 6, lambda c: (
        c[0] + 1, c[2] * c[1] + jnp.exp(-c[1] * c[1]), c[1]), (0, x, x * 0.5)),
    "scan in threads": lambda x: (lambda x: lax.scan(lambda c, t: (
        (c[0] * t[0] + jnp.tanh(c[1]), c[1] + t[1]), (c[0] - t[0], c[1] * 2)),
        (x[0], x[0, 0]), (x, x[:, 0]), reverse=True))(x.reshape(x.shape[0], -1)),
    "callbacks": lambda x: jax.pure_callback(
        lambda a, b: (np.cos(a) * b).astype(a.dtype), jax.ShapeDtypeStruct(x.shape, x.dtype),
        x * 2, jnp.sum(x)) + 1,
}


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(sorted(_CONTROL_FLOW)), st.lists(st.integers(1, 4), min_size=1,
                                                         max_size=3), st.data())
def test_branches_loops_and_callbacks_match_the_reference(name, shape, data):
  """The host program's branches and loops, their bodies' kernels, the
  carries written over or copied back and the masked rows of a batched
  while: the reference's bits."""
  dtype = data.draw(st.sampled_from([np.float32, np.float64, np.float16]))
  x = (np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))).standard_normal(shape)
       * 2).astype(dtype)

  def run():
    got = jax.jit(_CONTROL_FLOW[name], backend="numba-cuda")(x)
    want = jax.jit(_CONTROL_FLOW[name], backend="reference")(x)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
      assert g.dtype == w.dtype and g.shape == w.shape
      np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
  run_x64(dtype, run)


def test_a_host_loops_rank1_xs_and_ys_cross_between_host_and_device_once(monkeypatch):
  """A scan whose body is not elementwise (a transpose and a max: the host
  runs its loop) reads its xs of rank 1 from a host copy and writes its ys
  of rank 1 into a host array, each copied once: as many copies for 3
  steps as 9."""
  from numba_backend.cuda import device
  copies = []
  for name in ("to_host", "to_device"):
    monkeypatch.setattr(device, name, lambda x, copy=getattr(device, name), name=name: (
        copies.append(name), copy(x))[1])
  program = lambda c, xs: lax.scan(lambda c, t: (c.T * 0.5 + t, jnp.max(c) * t), c, xs)
  counts = []
  for length in (3, 9):
    c, xs = np.arange(9, dtype=np.float32).reshape(3, 3), np.arange(length, dtype=np.float32)
    copies.clear()
    got = jax.jit(program, backend="numba-cuda")(c, xs)
    counts.append((copies.count("to_host"), copies.count("to_device")))
    for g, w in zip(got, jax.jit(program)(c, xs)):
      np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
  assert counts[0] == counts[1] and counts[0][0] == 1


def test_a_loop_body_calling_a_jit_with_a_const_passes_it_to_the_program_once():
  """A loop whose body calls a jit with a const (whose loop, not
  elementwise, the host runs) passes the const to the program once: the
  attempt at a loop in the threads, which inlines the call, binds none."""
  from numba_backend.cuda.lower import KernelLowering
  from numba_backend.lower import lower_program
  table = np.arange(4, dtype=np.float32) + 0.5
  f = lambda x: lax.fori_loop(0, 3, lambda i, c: jax.jit(lambda c: c * table)(c) + 1, x)
  x = np.ones(4, np.float32)
  _, _, constants = lower_program(jax.make_jaxpr(f)(x).jaxpr, KernelLowering())
  passed = [c for c in constants if c.shape == table.shape]
  assert len(passed) == 1 and np.array_equal(passed[0], table)
  np.testing.assert_array_equal(np.asarray(jax.jit(f, backend="numba-cuda")(x)), f(x))


def test_debug_print_is_called_in_program_order(capsys):
  def f(x):
    jax.debug.print("x={}", x)
    y = lax.fori_loop(0, 2, lambda i, y: y * 2, x)
    jax.debug.print("y={} sum={}", y, jnp.sum(y))
    return y
  x = np.arange(3, dtype=np.float32)
  jax.jit(f, backend="reference")(x)
  want = capsys.readouterr().out
  jax.jit(f, backend="numba-cuda")(x)
  assert capsys.readouterr().out == want == "x=[0. 1. 2.]\ny=[0. 4. 8.] sum=12.0\n"


@settings(max_examples=15, deadline=None)
@given(st.data())
def test_dot_general_matches_the_cpu_backend_bit_for_bit(data):
  """Products small enough for the CPU's loop (no BLAS): the same sums, in
  the same order, on both."""
  batch = data.draw(st.integers(0, 2))
  sizes = [data.draw(st.integers(1, 6)) for _ in range(batch + 3)]   # batch dims, m, k, n
  *b, m, k, n = sizes
  dtype = data.draw(st.sampled_from([np.float32, np.float64, np.int32, np.complex64,
                                     np.float16]))
  rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
  lhs = (rng.standard_normal((*b, m, k)) * 3).astype(dtype)
  rhs = (rng.standard_normal((*b, n, k)) * 3).astype(dtype)
  batch_dims = tuple(range(batch))
  fun = functools.partial(lax.dot_general, dimension_numbers=(((batch + 1,), (batch + 1,)),
                                                              (batch_dims, batch_dims)))
  got = jax.jit(fun, backend="numba-cuda")(lhs, rhs)
  want = jax.jit(fun, backend="numba")(lhs, rhs)
  assert got.dtype == want.dtype and got.shape == want.shape
  np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("sizes", [(1, 17, 33, 18), (2, 16, 16, 16), (3, 1, 40, 2),
                                   (2, 3, 20, 5), (1, 1, 7, 1)])
def test_tiled_products_add_in_ascending_order(sizes):
  """Products across several tiles of TILE = 16, or of the least power of
  two covering a smaller product (8, 2, 1 here), and a batch: each result
  element adds its products in ascending k from zero, rounding each product
  and each sum to float32 (NumPy, step by step), -0.0, inf and NaN included."""
  _check_tiled_product(sizes)


def test_tiled_products_cover_rows_and_batches_beyond_the_grid(monkeypatch):
  """With the grid's second and third axes limited to 2 blocks (CUDA's limit
  is 65535), its blocks take the further rows of tiles (5 here) and
  products of the batch (3) a grid-stride on."""
  from numba_backend.cuda import device
  monkeypatch.setattr(device, "GRID_LIMITS", (2**31 - 1, 2, 2))
  _check_tiled_product((3, 70, 20, 5))


def test_a_launch_beyond_cudas_limits_is_refused():
  """Rather than run in the simulator and fail on a GPU."""
  from numba_backend.cuda import control_flow, device
  for blocks, threads in [((1, 65536), (16, 16)), ((1, 1, 65536), 1), (2**31, 1), (0, 1),
                          (1, 1025), (1, (32, 33)), (1, (1, 1, 65)), (1, 0)]:
    with pytest.raises(ValueError, match="beyond CUDA's limits"):
      device.launch_grid(control_flow._store_row, blocks, threads)


def _check_tiled_product(sizes):
  batch, m, depth, n = sizes
  rng = np.random.default_rng(depth)
  a = (rng.standard_normal((batch, m, depth)) * 1e3).astype(np.float32)
  b = (rng.standard_normal((batch, depth, n)) * 1e3).astype(np.float32)
  a[..., 0], b[0, -1, 0], a[0, 0, -1] = -0.0, np.inf, 3e38
  want = np.zeros((batch, m, n), np.float32)
  for k in range(depth):
    want = (want + a[:, :, k:k + 1] * b[:, k:k + 1, :]).astype(np.float32)
  got = jax.jit(jnp.matmul, backend="numba-cuda")(a, b)
  np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("dtype,index_dtype", OPERAND_AND_INDEX_DTYPES[::2],
                         ids=lambda d: np.dtype(d).name)
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_gather_scatter_and_slices_agree_with_the_reference(dtype, index_dtype, data):
  """gather and scatter in every mode, with indices out of bounds and at
  their dtype's extremes, next to the slices (the test_indexing programs)."""
  def run():
    case = data.draw(rank2_case(dtype, index_dtype))
    check(rank2_program(case), case["x"], case["indices"], case["updates"], case["update"],
          case["starts"], backend="numba-cuda")
  run_x64(dtype, run)


@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_scatter_combiners_agree_with_the_reference(data):
  """Repeated indices combined in the reference's order."""
  x = data.draw(cst.arrays(np.float32, (3, 2)))
  count = data.draw(st.integers(0, 6))
  indices = data.draw(cst.arrays(np.int32, (count, 2), elements=st.integers(-1, 3)))
  updates = data.draw(cst.arrays(np.float32, (count, 2)))
  mode = data.draw(st.sampled_from(list(lax.GatherScatterMode)))
  scatters = [lax.scatter_add, lax.scatter_sub, lax.scatter_mul, lax.scatter_min,
              lax.scatter_max]
  check(lambda x, i, u: [s(x, i, u, ROW_SCATTER, mode=mode) for s in scatters],
        x, indices, updates, backend="numba-cuda")


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 120), st.integers(0, 2**32 - 1))
def test_scatters_apply_each_positions_updates_in_order(count, seed):
  """Up to 120 scalar updates on 5 positions (long runs of each, and
  indices out of bounds dropped or clipped): float sums and products round
  in the reference's order, and a plain scatter keeps the last update."""
  rng = np.random.default_rng(seed)
  x = rng.standard_normal(5).astype(np.float32)
  indices = rng.integers(-2, 7, count).astype(np.int32)
  updates = (rng.standard_normal(count) * 10.0 ** rng.integers(-3, 4, count)).astype(np.float32)
  check(lambda x, i, u: [x.at[i].add(u, mode="drop"), x.at[i].multiply(u, mode="clip"),
                         x.at[i].set(u, mode="drop"), x.at[i].min(u, mode="drop")],
        x, indices, updates, backend="numba-cuda")


def test_a_primitive_not_lowered_yet_is_a_clear_error():
  from numba_backend.cuda.lower import CUDA_RULES
  with pytest.MonkeyPatch.context() as patch:
    patch.delitem(CUDA_RULES, lax.cumsum_p)
    jax.clear_caches()   # (a program compiled before, by another test, would be reused)
    with pytest.raises(LoweringError, match="numba-cuda backend has no lowering for primitive "
                                            "'cumsum' yet.*numba backend \\(CPU\\) lowers it"):
      jax.jit(jnp.cumsum, backend="numba-cuda")(np.ones(3, np.float32))


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                   np.uint32, np.uint64])
def test_integer_division_at_the_extremes(dtype):
  """div and rem (and jnp's floor_divide, divmod, lcm) where a quotient
  leaves the dtype (MIN / -1 wraps) or the divisor is zero: the
  reference's values, which the 64-bit word narrowed gives."""
  info = np.iinfo(dtype)
  x = np.array([info.min, info.min, info.max, 7, -7 if info.min else 7, 0], dtype)
  y = np.array([-1 if info.min else 1, 0, 0, 2, 2, 0], dtype)
  run_x64(dtype, lambda: check(lambda x, y: [lax.div(x, y), lax.rem(x, y), x // y,
                                             *jnp.divmod(x, y), jnp.lcm(x, y)],
                               x, y, backend="numba-cuda"))


@pytest.mark.parametrize("dtype", [np.float16, jnp.bfloat16])
def test_16_bit_powers_of_zero(dtype):
  """A 16-bit float's negative integer powers of zero are infinities (the
  rounding functions' results divided by zero)."""
  x = np.array([0.0, -0.0, 2.0, np.inf], dtype)
  check(lambda x: [lax.integer_pow(x, -2), lax.integer_pow(x, -3), 1 / x], x,
        backend="numba-cuda")


_SPECIAL_PARTS = [0.0, -0.0, 1.0, -4.0, 1e-310, -3e-320, 1e308, -1e-200, np.inf, -np.inf, np.nan,
                  1100.0, -1100.0, np.pi / 2, -np.pi]
_ON_DEVICE_COMPLEX = (jnp.sqrt, lax.rsqrt, jnp.log, jnp.exp2, lax.logistic, jnp.sin, jnp.cos,
                      jnp.tan, jnp.sinh, jnp.cosh, jnp.tanh, jnp.arcsin, jnp.arccos, jnp.arctan,
                      jnp.arcsinh, jnp.arccosh, jnp.arctanh, lax.pow, lax.atan2)


def _assert_complex_kernels_close(z, dtype):
  """Each function of `_ON_DEVICE_COMPLEX` of `z` (pow and atan2 of z and
  z reversed) run in kernels (csqrt, clog, cexp and the C library's other
  complex functions written for the device): the reference's NaN and
  infinities and signed zeros (C99's special values), each finite part
  within 8 ulps of the dtype of the reference's (the C library's) plus 4
  of its least subnormal (for rsqrt times |rsqrt|², as 1 / s scales an
  error of s: the C library rounds a subnormal part of csqrt less
  closely), and as well:
  - log's real part and atan2's imaginary part within 2 ulps of one (log|z|
    near |z| = 1, where its terms cancel);
  - logistic's parts within 8 ulps of |exp(-z)| |logistic|² (1 / (1 + e)
    scales an error of e so);
  - pow's parts within 16 ulps of (1 + |y log x|) |x ** y| (an error of y
    log x, the C library's cpow's too, scaled by the exp), and not compared
    where |y log x| > 2**20, whose rounding leaves the phase undetermined;
  - atan2's real part modulo 2 pi (on its branch cut the sign of pi follows
    a rounding)."""
  info = np.finfo(dtype)
  z = z.astype(dtype)
  wide = z.astype(np.complex128)

  def run():
    for f in _ON_DEVICE_COMPLEX:
      binary = f in (lax.pow, lax.atan2)
      operands = (z, z[::-1]) if binary else (z,)
      got, want = (np.asarray(jax.jit(f, backend=b)(*operands))
                   for b in ("numba-cuda", "reference"))
      assert got.dtype == want.dtype
      with np.errstate(all="ignore"):
        modulus = np.abs(want.astype(np.complex128))
        square = modulus ** 2
        scale = np.maximum(1, square) if f is lax.rsqrt else 1
        relative = np.where(square > 0, np.abs(np.exp(-wide)) * square, 0) \
            if f is lax.logistic else np.zeros(z.shape)
        exponent = np.abs(wide[::-1] * np.log(wide)) if f is lax.pow else np.zeros(z.shape)
        phase = np.where(exponent <= 2**20, 16 * (1 + exponent) * modulus, 0) \
            if f is lax.pow else np.zeros(z.shape)
        phase = np.where(np.isnan(phase), 0, phase)
        if f is lax.atan2:
          turns = np.round((got.real - want.real) / (2 * np.pi))
          got = got - np.where(np.isfinite(turns), turns, 0) * (2 * np.pi)
      compared = ~(exponent > 2**20)
      for g, w, part in ((got.real, want.real, "real"), (got.imag, want.imag, "imag")):
        g, w = g[compared], w[compared]
        exact, zeros = ~np.isfinite(w), (w == 0) & (g == 0)
        np.testing.assert_array_equal(g[exact], w[exact])
        np.testing.assert_array_equal(np.signbit(g[zeros]), np.signbit(w[zeros]))
        near_one = (f is jnp.log and part == "real") or (f is lax.atan2 and part == "imag")
        bound = 8 * info.eps * np.abs(w) + 4 * info.smallest_subnormal * scale
        bound = bound + 2 * info.eps * near_one + info.eps * (8 * relative + phase)[compared]
        assert np.all((np.abs(g - w) <= bound)[~exact]), (f, z, got, want)
  run_x64(dtype, run)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([np.complex64, np.complex128]), st.data())
def test_complex_functions_are_kernels_within_the_tolerance(dtype, data):
  """`_assert_complex_kernels_close` on any complex numbers."""
  parts = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(_SPECIAL_PARTS)
  z = data.draw(cst.arrays(np.complex128, (6,), elements=st.builds(complex, parts, parts)))
  _assert_complex_kernels_close(z, dtype)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_functions_of_every_pair_of_special_parts(dtype):
  """`_assert_complex_kernels_close` on each pair of zeros of either sign,
  infinities, NaN, subnormal, huge and overflowing parts (C99's special
  values, and exp's steps where exp(x) overflows but a part does not), and
  parts near the inverse functions' branch points (where |z ± 1| cancels)."""
  parts = np.array(_SPECIAL_PARTS + [710.0, 1000.0, -1000.0, 1 - 2.0**-30, 3e-9])
  z = np.zeros((parts.size, parts.size), np.complex128)
  z.real, z.imag = parts[:, None], parts[None, :]   # (not parts + 1j parts: 1j inf has a NaN)
  _assert_complex_kernels_close(z.ravel(), dtype)


@settings(max_examples=10, deadline=None)
@given(st.sampled_from([np.complex64, np.complex128]), st.data())
def test_complex_functions_in_a_scalar_program_and_a_device_loop(dtype, data):
  """A complex function of a rank-0 operand (the host program's) and one in a
  loop the device runs: the reference's values within the tolerance."""
  z = data.draw(cst.arrays(np.complex128, (3,), elements=st.complex_numbers(max_magnitude=1)))
  programs = (lambda z: jnp.cosh(z[0]) + z,
              lambda z: lax.fori_loop(0, 3, lambda i, z: jnp.tanh(z) * 0.5, z))

  def run():
    for f in programs:
      got, want = (np.asarray(jax.jit(f, backend=b)(z.astype(dtype)))
                   for b in ("numba-cuda", "reference"))
      assert got.dtype == want.dtype
      np.testing.assert_allclose(got, want, rtol=64 * np.finfo(dtype).eps,
                                 atol=64 * np.finfo(dtype).eps)
  run_x64(dtype, run)


def _shifted_moduli(x, q):
  """The sum of |q + k| ** -x for k < ceil(-q) (zeta's terms that shift a
  negative q past zero; none for q >= 0 or more than 10^6 of them)."""
  shift = np.where((q < 0) & (q > -1e6), np.ceil(-np.where(q < 0, q, 0)), 0).astype(int)
  with np.errstate(all="ignore"):
    return np.array([np.sum(np.abs(qi + np.arange(n)) ** -xi) for xi, qi, n in zip(x, q, shift)])


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_zeta_and_polygamma_are_kernels_within_the_tolerance(data):
  """zeta and polygamma run on the device, their terms that shift a negative
  q past zero summed in order with compensation (the CPU keeps them in an
  array for NumPy's pairwise sum): NaN and infinities where the reference
  has them, elsewhere within 16 eps of the reference's value plus (times m!
  for polygamma) the sum of those terms' moduli, the condition of their sum."""
  x = data.draw(cst.arrays(np.float64, (4,), elements=st.integers(-1, 14).map(float)
                           | st.floats(-3, 40) | st.sampled_from([np.inf, np.nan, 1.0])))
  q = data.draw(cst.arrays(np.float64, (4,), elements=st.floats(-3000, 60)
                           | st.integers(-40, 3).map(lambda k: k + 0.5)
                           | st.sampled_from([0.0, -3.0, np.inf, -np.inf, np.nan])))
  with jax.enable_x64(True):
    for name, f, order in (("zeta", jax.scipy.special.zeta, x),
                           ("polygamma", lax.polygamma, x - 1)):
      got, want = (np.asarray(jax.jit(f, backend=b)(order, q)) for b in ("numba-cuda", "reference"))
      assert got.dtype == want.dtype
      exact = ~np.isfinite(want)
      np.testing.assert_array_equal(got[exact], want[exact], err_msg=name)
      factor = np.array([math.factorial(int(m)) if name == "polygamma" and 0 <= m <= 170
                         and m == int(m) else 1.0 for m in order])
      bound = 16 * np.finfo(np.float64).eps * (np.abs(want) + factor * _shifted_moduli(x, q))
      assert np.all(np.abs(got - want)[~exact] <= bound[~exact]), (name, order, q, got, want)


_PTX_SETUP = """
import refimpl.numpy as jnp
x = np.ones((3, 4), np.float32)
programs = {"arithmetic": lambda x, y: jnp.where(x > 0.5, x * 2 + y.T, -x) - y.T,
            "transcendental": lambda x, y: jnp.tanh(x) + jnp.exp(y).T,
            "zeta and polygamma": lambda x, y: (jax.lax.zeta(x + 1, y.T - 2.5),
                                                jax.lax.polygamma(x, y.T)),
            "uncontracted": lambda x, y: (lambda p: (p + y.T, p))(x * y.T),
            "reductions": lambda x, y: (jax.nn.softmax(x, axis=0), jnp.argmax(y, axis=1),
                                        jnp.prod(y.astype(jnp.float16), axis=0),
                                        jnp.sum(x.astype(jnp.complex64)), jnp.any(x > y.T)),
            **{f"{kind} rows": lambda x, y, n=n: (
                jnp.max(jnp.tile(x, n)), jnp.argmax(jnp.tile(x, n), 1),
                jnp.sum(jnp.tile(x, n).astype(jnp.int32), 1),
                jnp.cumsum(jnp.tile(x, n).astype(jnp.int32), 1)) for kind, n in [("long", 600),
                                                                                  ("short", 2)]},
            **{f"{kind} sum": lambda x, y, n=n: jnp.sum(jnp.tile(x, n), 1)
               for kind, n in [("pairwise", 100), ("one block", 1)]},
            "cumulative": lambda x, y: (jax.lax.cumlogsumexp(x, axis=1), jnp.cumsum(y, axis=0),
                                        jax.lax.reduce(x, np.float32(0), lambda a, b: a * b + 1,
                                                       (0,))),
            "matmul": lambda x, y: (x @ y, jnp.einsum("ij,kj->ik", x, x.astype(jnp.int32))),
            "shapes": lambda x, y: (jnp.concatenate([x, y.T], 0)[::-1, 1:],
                                    jnp.pad(jnp.tile(x, 2), ((1, 0), (2, 1))),
                                    jax.lax.dynamic_update_slice(x, y[:2].T, (1, 1)),
                                    jax.lax.broadcasted_iota(jnp.int32, (3, 4), 1) + x),
            "control flow": lambda x, y: (
                jax.lax.fori_loop(0, 3, lambda i, c: c * 0.5 + jnp.max(y), x),
                jax.lax.scan(lambda c, r: (c + jnp.max(r), c * r), x[0], x)),
            "loops in threads": lambda x, y: (
                (lambda t: jax.lax.fori_loop(0, 3, lambda i, c: c * 0.5 + t, x))(y.T),
                jax.lax.scan(lambda c, r: (c + r, c * r), x[0], x)),
            "indexing": lambda x, y: (x[jnp.array([2, 0, 5])], x.at[jnp.array([1, 1])].add(y.T[:2]),
                                      x.at[:, jnp.array([0, 3])].set(-1.0))}
"""
_PTX_THEN = """
# (a batched while's predicate reads False while compiling: its kernels, directly)
from numba import cuda, types
from numba_backend.cuda import control_flow
flags, floats = types.bool_[::1], types.float32[::1]
found["masks"] = [(k.py_func.__name__, cuda.compile_ptx(k.py_func, sig, cc=(9, 0))[0])
                  for k, sig in ((control_flow._mask_rows, (flags, floats, floats, floats)),
                                 (control_flow._mark_any, (flags, flags)))]
"""


_PTX_SWEEP = """
import json, numpy as np
import refimpl as jax
from refimpl import dtypes
from numba_backend.lower import ELEMENTWISE_RULES
from numba_backend.cuda import device
from numba_backend.lower import LoweringError
from numba_backend.rules.reductions import pairwise_plan
params = {"conj": lambda dt: dict(input_dtype=dt), "round": lambda dt: dict(rounding_method=0),
          "convert_element_type": lambda dt: dict(new_dtype=np.dtype(np.float64),
                                                  weak_type=False, sharding=None),
          "integer_pow": lambda dt: dict(y=3),
          "reduce_precision": lambda dt: dict(exponent_bits=5, mantissa_bits=2)}
compiled, failed, f64, externs, refused, kernels = [], {}, {}, {}, [], {}
for prim in ELEMENTWISE_RULES:
  if not hasattr(prim, "bind"):
    continue   # (fused_multiply_add: the contraction's)
  for dt in (np.float32, np.float64, np.int32, np.complex64, np.float16, np.bool_):
    kw = params.get(prim.name, lambda dt: {})(np.dtype(dt))
    x = np.ones(3, dt)
    for n in (1, 2, 3):
      try:
        jax.make_jaxpr(lambda *a: prim.bind(*a, **kw))(*[x] * n)
      except Exception:
        continue
      try:
        with device.compiling_to_ptx() as ptx:
          jax.jit(lambda *a: prim.bind(*a, **kw), backend="numba-cuda")(*[x] * n)
        compiled.append(f"{prim.name}/{np.dtype(dt).name}")
        f64[compiled[-1]] = any(".f64" in line and not line.lstrip().startswith((".", "//"))
                                for _, text in ptx for line in text.splitlines())
        externs[compiled[-1]] = [line for _, text in ptx for line in text.splitlines()
                                 if line.startswith(".extern .func")]
        kernels[compiled[-1]] = len(ptx)
      except LoweringError:
        refused.append(f"{prim.name}/{np.dtype(dt).name}")
      except Exception as err:
        failed[f"{prim.name}/{np.dtype(dt).name}"] = f"{type(err).__name__}: {err}"[:300]
      break
print(json.dumps({"compiled": compiled, "failed": failed, "f64": f64, "externs": externs,
                  "refused": refused, "kernels": kernels}))
"""


def test_every_elementwise_primitive_compiles_to_ptx():
  found = compiled_ptx(_PTX_SWEEP, timeout=900)
  assert not found["failed"], found["failed"]
  # every kernel links on a device: it calls no function outside itself (a
  # host library's); the primitives that would are refused, on complex numbers
  assert not any(found["externs"].values()), found["externs"]
  assert not found["refused"]
  # the C library's complex functions, written for the device, are kernels
  assert all(found["kernels"][f"{name}/complex64"] == 1
             for name in ("sqrt", "rsqrt", "log", "exp2", "logistic", "sin", "cos", "tan",
                          "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
                          "atanh", "pow", "atan2"))
  names = {c.split("/")[0] for c in found["compiled"]}
  assert {"add", "tanh", "atan2", "rem", "pow", "nextafter", "lgamma", "erf_inv", "sqrt",
          "is_finite", "round", "population_count", "shift_right_logical", "zeta",
          "polygamma"} <= names
  # float32 arithmetic, comparisons and rounding hold no float64 instruction
  for name in ("add", "sub", "mul", "div", "neg", "abs", "eq", "lt", "ne", "floor", "ceil"):
    assert found["f64"].get(f"{name}/float32") is False, name



def test_every_kernel_compiles_to_ptx_for_compute_capability_9():
  found = programs_ptx(_PTX_SETUP, "x, x.T.copy()", _PTX_THEN)
  for name, kernels in found.items():
    assert kernels, name   # each program launched kernels, each compiled
    for kernel, ptx in kernels:
      assert ".target sm_90" in ptx and ".entry" in ptx, (name, kernel)
      # nothing called outside the kernel (a CPU rule's flat view, as iota's, made on the host)
      assert ".extern .func" not in ptx, (name, kernel)
  # float32 arithmetic stays float32; float32 transcendentals are float64
  # functions rounded (the reference's bits), as are max and min (exactly)
  assert not any(instructions(ptx, ".f64") for _, ptx in found["arithmetic"])
  assert any(instructions(ptx, ".f64") for _, ptx in found["transcendental"])
  # a product that the reference rounds before adding (it is also an
  # output) is not fused into an fma by NVVM (whose default fuses it)
  kernels = [ptx for _, ptx in found["uncontracted"]]
  assert any(instructions(ptx, "mul.rn.f32") for ptx in kernels)
  assert not any(instructions(ptx, "fma") for ptx in kernels)
  # gather and scatter index on the device with nothing called outside the kernel
  assert not any(".extern .func" in ptx for _, ptx in found["indexing"])
  # the loops' bodies, and the copies of the carries and ys (store_row)
  assert {"_store_row", "kernel0"} <= {kernel for kernel, _ in found["control flow"]}
  # elementwise loops: a kernel each, launched once (beside y.T's and x[0]'s)
  launched = [kernel for kernel, _ in found["loops in threads"]]
  assert len(launched) == len(set(launched)) == 4 and "_store_row" not in launched
  # folds of rows longer than _CHUNK: a kernel for the chunks, another for the rows; a
  # running fold: a kernel for the chunks' folds, another running them in order
  assert len(found["long rows"]) == len(found["short rows"]) + 5
  # sums of runs longer than a block (400 here): beside the tile's kernel and
  # those of a one-block sum (its blocks, its rows), a kernel launched once a
  # height of the recursion's additions (two heights here)
  launched = [kernel for kernel, _ in found["pairwise sum"]]
  assert len(launched) == len(found["one block sum"]) + 3
  assert sorted(launched.count(kernel) for kernel in set(launched))[-2:] == [1, 2]
  # products by tiles in shared memory
  tiled = [ptx for kernel, ptx in found["matmul"] if kernel == "tiled"]
  assert len(tiled) == 2 and all(".shared" in ptx and "bar.sync" in ptx for ptx in tiled)
  assert not any(instructions(ptx, ".f64") for _, ptx in
                 found["control flow"] + found["loops in threads"] + found["masks"])


# --- device arrays -------------------------------------------------------------------------

def _on_device(x):
  """Whether the Array `x` holds a device buffer not yet copied to the host."""
  return x._buffer is not None and x._host is None


def test_results_stay_on_the_device_between_calls():
  f = jax.jit(lambda x, y: jnp.tanh(x) * y, backend="numba-cuda")
  x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
  y = np.float32(2) + np.zeros(4, np.float32)
  first = f(x, y)
  assert _on_device(first) and first.shape == (3, 4) and first.dtype == np.float32
  second = f(first, y)
  assert _on_device(second) and _on_device(first)   # the buffer went in as it is
  assert second.block_until_ready() is second
  want = np.tanh(np.tanh(x) * y) * y
  np.testing.assert_array_equal(np.asarray(second), jax.jit(f.__wrapped__)(
      jax.jit(f.__wrapped__)(x, y), y))
  np.testing.assert_allclose(np.asarray(second), want, rtol=1e-6)
  assert not _on_device(second)   # now copied to the host, once
  assert str(second) == str(np.asarray(second))


def test_devices_and_device_put():
  with jax.config.option("backend", "numba-cuda"):
    (gpu,) = jax.devices()
    assert gpu.platform == "gpu" and jax.default_backend() == "gpu"
    assert jax.devices("gpu") == [gpu] and jax.device_count() == 1
    x = jax.device_put(np.arange(6, dtype=np.float16).reshape(2, 3))
    assert _on_device(x) and x.device is gpu and x.devices() == {gpu}
    assert x.dtype == np.float16
    doubled = jax.jit(lambda a: a * 2)(x)
    assert _on_device(doubled)
    np.testing.assert_array_equal(np.asarray(doubled), np.arange(6).reshape(2, 3) * 2)
  (cpu,) = jax.devices("cpu")
  assert jax.devices() == [cpu] and jax.default_backend() == "cpu"
  back = jax.device_put(doubled, cpu)
  assert back._buffer is None and back.device is cpu
  np.testing.assert_array_equal(np.asarray(back), np.asarray(doubled))
  assert isinstance(jax.device_get(doubled), np.ndarray)


def test_cuda_array_interface_exposes_the_device_memory():
  x = jax.jit(lambda a: a + 1, backend="numba-cuda")(np.arange(5, dtype=np.float32))
  interface = x.__cuda_array_interface__
  assert interface["version"] == 3 and interface["shape"] == (5,)
  assert interface["typestr"] == "<f4"
  pointer = interface["data"][0]
  # the buffer's own memory (in the simulator, the host memory standing for
  # the device's), read by a consumer through the interface alone
  assert pointer == x._buffer.array._ary.ctypes.data
  view = np.ctypeslib.as_array(ctypes.cast(pointer, ctypes.POINTER(ctypes.c_float)), shape=(5,))
  np.testing.assert_array_equal(view, np.arange(5) + 1)
  assert _on_device(x)   # reading through the interface copied nothing
  with pytest.raises(AttributeError, match="not in a CUDA device's memory"):
    jnp.arange(3).__cuda_array_interface__
  assert not hasattr(jnp.arange(3), "__cuda_array_interface__")


def test_the_numba_backend_does_not_import_numba_cuda():
  """Nor this target (so that its programs' cache key, backend.VERSION,
  can leave its source out)."""
  code = ("import sys\nimport refimpl as jax, refimpl.numpy as jnp\n"
          "jax.jit(lambda x: x + 1, backend='numba')(jnp.ones(3))\n"
          "print('numba.cuda' in sys.modules, 'numba_backend.cuda' in sys.modules)")
  done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
  assert done.returncode == 0, done.stderr[-2000:]
  assert done.stdout.split() == ["False", "False"]


def test_the_gpu_check_script_runs_in_the_simulator(tmp_path, monkeypatch):
  """benchmarks/gpu_check.py, for a machine with a GPU, run at tiny sizes in
  the simulator: the conformance cases of two families split between two
  processes, every workload checked against the CPU (or reported as not
  lowered yet), timed, and reported; the process's backend is left as it was."""
  monkeypatch.syspath_prepend(os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
  import gpu_check
  report = tmp_path / "gpu.md"
  before = jax.config.backend
  assert gpu_check.main(["--simulate", "--report", str(report), "--scale", "1e-6",
                         "--conformance", "1", "--family", "calls", "--family", "callbacks",
                         "--jobs", "2"]) == 0
  assert jax.config.backend == before
  verdicts = json.loads((tmp_path / "gpu.json").read_text())["conformance"]
  assert len(verdicts) == 2 and all(v.startswith("conformance: PASS") for v in verdicts)
  assert "Conformance, in 2 processes" in report.read_text()
  rows = json.loads((tmp_path / "gpu.json").read_text())["rows"]
  assert {row["workload"] for row in rows} == set(gpu_check.WORKLOADS)
  for row in rows:
    assert row["check"].startswith(("bit for bit", "within", "not lowered yet")), row
    assert row["check"].startswith("not lowered") or row["min s"] > 0
  assert "| matmul f32[n]^2" in report.read_text()
