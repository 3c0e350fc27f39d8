"""The reductions of the numba-cuda backend: the CPU rules' orders, as
kernels. A thread computes one result element (one row of the operand, its
reduced axes moved last as on the CPU): float sums in NumPy's order (runs
summed pairwise, then added in order; one element at a time where NumPy
adds them so), the other folds in order. A pairwise sum's blocks are summed
first, a thread a block of every run, then the recursion's additions of
each height by a kernel, a thread an addition of a run (`pairwise_tree`),
then each row's thread adds its runs' sums in order.
The folds whose result does not depend on their grouping (integer sums and
products; max and min, which of equal values and NaNs they keep depending
on the values' order alone; the bitwise ones; argmax and argmin) fold each
chunk of a long row by a thread first (`_fold`, `_arg_extremum`): the same
bits."""

import math

import numpy as np

from refimpl import dtypes
from refimpl.lax import reductions as lax
from refimpl.lax.rules import accumulation_dtype, max_identity, min_identity
from numba_backend import scalars as S
from numba_backend.cuda import kernels
from numba_backend.cuda.lower import CUDA_RULES
from numba_backend.lower import RULES, read_element, scalar_dtype, type_source
from numba_backend.rules import reductions as cpu
from numba_backend.rules.reductions import _SIXTEEN_BIT, new_flat, pairwise_plan, pairwise_run

_CHUNK = 2048
"""The elements of a row a thread folds, where a fold is split (`_fold`, `_arg_extremum`)."""


def _values(ctx, x, aval, axes):
  """(a flat array of x's values with `axes` moved last, a row's length):
  16-bit floats widened to float32, by a kernel."""
  rows, size = cpu._rows(ctx, x, aval, axes)
  if np.dtype(aval.dtype) not in _SIXTEEN_BIT:
    return rows, size
  count = math.prod(aval.shape)
  values, k = new_flat(ctx, count, np.float32), ctx.fresh("k")
  with ctx.lowering.elements(k, ctx.dim(count)):
    ctx.emit(f"{values}[{k}] = {read_element(f'{rows}[{k}]', aval.dtype)}")
  return values, size


def _over_rows(ctx, acc, body):
  """A kernel over the result elements: `body(row)` writes the statements
  computing acc[row] (`row` its index's name)."""
  row = ctx.fresh("i")
  with ctx.lowering.elements(row, ctx.dim(math.prod(ctx.avals_out[0].shape))):
    body(row)


def _reduce_sum(ctx, x, *, axes):
  (aval,), (out_aval,) = ctx.avals_in, ctx.avals_out
  acc_dtype = accumulation_dtype(aval.dtype)
  run = pairwise_run(aval.shape, axes)
  pairwise = run and dtypes.is_inexact(aval.dtype)
  if not pairwise:   # integers (in any order: the same sum), or floats one at a time
    return _fold(ctx, x, axes, acc_dtype, 0, lambda acc, value: f"{acc} + {value}",
                 split=not dtypes.is_inexact(aval.dtype))
  rows, size = _values(ctx, x, aval, axes)
  acc = new_flat(ctx, math.prod(out_aval.shape), acc_dtype)
  zero = ctx.lowering.const(0, acc_dtype)
  complex_ = dtypes.is_complex(aval.dtype)
  ops = pairwise_plan(run, 2 if complex_ else 1)
  nodes, root, additions, heights = pairwise_tree(ops)
  runs = math.prod(aval.shape) // run
  values = _block_sums(ctx, rows, ops, runs, run, nodes, complex_, zero)
  # each height's additions, by a kernel of a thread an addition of a run
  triples, starts, counts = ctx.ints(additions.ravel()), ctx.ints(heights[:, 0]), \
      ctx.ints(heights[:, 1])
  h, count, first = ctx.fresh("h"), ctx.fresh("n"), ctx.fresh("a")
  t, g, a = ctx.fresh("t"), ctx.fresh("g"), ctx.fresh("b")
  with ctx.lowering.block(f"for {h} in range({ctx.dim(len(heights))}):"):
    ctx.emit(f"{count}, {first} = {counts}[{h}], {starts}[{h}]")
    with ctx.lowering.elements(t, f"{ctx.dim(runs)} * {count}"):
      ctx.emit(f"{g}, {a} = {t} // {count}, 3 * ({first} + {t} % {count})")
      base = f"{g} * {ctx.dim(nodes)}"
      ctx.emit(f"{values}[{base} + {triples}[{a}]] = {values}[{base} + {triples}[{a} + 1]] + "
               f"{values}[{base} + {triples}[{a} + 2]]")
  per_row, stride = ctx.dim(size // run), ctx.dim(nodes)

  def body(row):   # the row's runs' sums, added in order from zero
    total, j = ctx.fresh("t"), ctx.fresh("j")
    ctx.emit(f"{total} = {zero}")
    with ctx.lowering.block(f"for {j} in range({row} * {per_row}, ({row} + 1) * {per_row}):"):
      ctx.emit(f"{total} += {values}[{j} * {stride} + {ctx.dim(root)}]")
    ctx.emit(f"{acc}[{row}] = {total}")

  _over_rows(ctx, acc, body)
  return cpu.stored(ctx, acc, acc_dtype, out_aval)


def pairwise_tree(ops):
  """The pairwise recursion of `pairwise_plan`'s operations `ops` as a tree
  whose nodes are its blocks (0, 1, ... in the plan's order), then its
  additions: (the number of nodes, the root, the additions' rows (node,
  left, right) ordered by height (the longest path down to a block), the
  heights' rows (first addition, count)). The additions of a height are
  independent of each other and need only those of lower heights."""
  blocks = int(np.count_nonzero(ops[:, 2]))
  stack, height, additions, block = {}, [0] * blocks, [], 0
  for slot, _, size in ops:
    if size:
      stack[slot], block = block, block + 1
    else:
      node, left, right = len(height), stack[slot], stack[slot + 1]
      height.append(1 + max(height[left], height[right]))
      additions.append((height[node], node, left, right))
      stack[slot] = node
  table = np.array(sorted(additions), np.int64).reshape(-1, 4)
  _, counts = np.unique(table[:, 0], return_counts=True)
  return len(height), stack[0], table[:, 1:], np.stack([np.cumsum(counts) - counts, counts], 1)


def _block_sums(ctx, rows, ops, runs, run, stride, complex_, zero):
  """A flat array of `stride` values a run for each of the `runs` runs of
  `run` elements of `rows`, run after run, the first of each run's values
  the sums (from `zero`, the name of the accumulator type's zero) of the
  blocks of the plan `ops` (rows (slot, start, size), a block where size >
  0) in the plan's order: a kernel, a thread a block."""
  leaves = ops[ops[:, 2] > 0]
  starts, sizes, count = ctx.ints(leaves[:, 1]), ctx.ints(leaves[:, 2]), ctx.dim(len(leaves))
  out = new_flat(ctx, runs * stride, accumulation_dtype(ctx.avals_in[0].dtype))
  t, g, b = ctx.fresh("t"), ctx.fresh("g"), ctx.fresh("b")
  block_sum = ctx.function(kernels.complex_block_sum if complex_ else kernels.block_sum)
  with ctx.lowering.elements(t, ctx.dim(runs * len(leaves))):
    ctx.emit(f"{g}, {b} = {t} // {count}, {t} % {count}")
    ctx.emit(f"{out}[{g} * {ctx.dim(stride)} + {b}] = {block_sum}({rows}, {g} * {ctx.dim(run)} "
             f"+ {starts}[{b}], {sizes}[{b}], {zero})")
  return out


def _fold(ctx, x, axes, acc_dtype, init, combine, split):
  """The reduction folding each row from `init` by `combine(acc, value)`
  (sources): in order, a thread a row; where `split` (a fold whose result
  does not depend on how it is grouped) and the rows are longer than
  _CHUNK, each _CHUNK elements of a row by a thread of their own first,
  then their results in order by a thread a row."""
  (aval,), (out_aval,) = ctx.avals_in, ctx.avals_out
  rows, size = _values(ctx, x, aval, axes)
  count, first = math.prod(out_aval.shape), ctx.lowering.const(init, acc_dtype)
  acc = new_flat(ctx, count, acc_dtype)
  chunks = -(-size // _CHUNK) if split else 1
  if chunks > 1:
    parts, length, chunk, per_row = new_flat(ctx, count * chunks, acc_dtype), *map(
        ctx.dim, (size, _CHUNK, chunks))
    _fold_ranges(ctx, rows, parts, count * chunks, first, combine, lambda t: (
        f"({t} // {per_row}) * {length} + ({t} % {per_row}) * {chunk}",
        f"min(({t} // {per_row}) * {length} + ({t} % {per_row} + 1) * {chunk}, "
        f"({t} // {per_row} + 1) * {length})"))
    rows, size = parts, chunks
  length = ctx.dim(size)
  _fold_ranges(ctx, rows, acc, count, first, combine,
               lambda t: (f"{t} * {length}", f"({t} + 1) * {length}"))
  return cpu.stored(ctx, acc, acc_dtype, out_aval)


def _fold_ranges(ctx, source, out, count, first, combine, bounds):
  """A kernel, a thread for each t < count: out[t] = the fold from `first`
  by `combine` of source[j] for j in range(*bounds(t)) (sources), in order."""
  t, value, j = ctx.fresh("i"), ctx.fresh("t"), ctx.fresh("j")
  with ctx.lowering.elements(t, ctx.dim(count)):
    ctx.emit(f"{value} = {first}")
    with ctx.lowering.block(f"for {j} in range({', '.join(bounds(t))}):"):
      ctx.emit(f"{value} = {combine(value, f'{source}[{j}]')}")
    ctx.emit(f"{out}[{t}] = {value}")


def _calling(ctx, fn):
  name = ctx.function(fn)
  return lambda acc, value: f"{name}({acc}, {value})"


def _reduce_prod(ctx, x, *, axes):
  acc_dtype = accumulation_dtype(ctx.avals_in[0].dtype)
  return _fold(ctx, x, axes, acc_dtype, 1,
               lambda acc, value: f"{type_source(acc_dtype)}({acc} * {value})",
               split=not dtypes.is_inexact(acc_dtype))


def _extremum(largest):
  def rule(ctx, x, *, axes):
    dtype = ctx.avals_in[0].dtype
    complex_ = dtypes.is_complex(dtype)
    combine = (S.complex_max if complex_ else S.nan_max) if largest else \
        (S.complex_min if complex_ else S.nan_min)
    init = (max_identity if largest else min_identity)(dtype)
    return _fold(ctx, x, axes, scalar_dtype(dtype), init, _calling(ctx, combine), split=True)
  return rule


def _bitwise(combine, identity):
  def rule(ctx, x, *, axes):
    dtype = ctx.avals_in[0].dtype
    return _fold(ctx, x, axes, dtype, np.array(identity).astype(dtype), _calling(ctx, combine),
                 split=True)
  return rule


def _arg_extremum(largest):
  def rule(ctx, x, *, axes, index_dtype):
    (aval,), (out_aval,) = ctx.avals_in, ctx.avals_out
    values, _ = _values(ctx, x, aval, ())
    complex_ = dtypes.is_complex(aval.dtype)
    beats = ctx.function((cpu.complex_greater if complex_ else cpu.greater) if largest else
                         (cpu.complex_less if complex_ else cpu.less))
    _, size, after = cpu._along(aval, axes[0])
    n, inner = ctx.dim(size), ctx.dim(after)
    count = math.prod(out_aval.shape)
    out = new_flat(ctx, count, np.int64)
    chunks = -(-size // _CHUNK)

    def best_of(start, stop, at, value_at):
      """Statements leaving in (best, value) the first position in [start,
      stop) (sources; not empty) of the candidates `at(j)` (its index in
      the row) whose value `value_at(j)` no later one beats."""
      best, value, j = ctx.fresh("w"), ctx.fresh("t"), ctx.fresh("j")
      ctx.emit(f"{best}, {value} = {at(start)}, {value_at(start)}")
      with ctx.lowering.block(f"for {j} in range({start} + 1, {stop}):"):
        with ctx.lowering.block(f"if {beats}({value_at(j)}, {value}):"):
          ctx.emit(f"{best}, {value} = {at(j)}, {value_at(j)}")
      return best, value

    def base(row):   # row: o * inner + k
      name = ctx.fresh("b")
      ctx.emit(f"{name} = ({row} // {inner}) * {n} * {inner} + {row} % {inner}")
      return name

    if chunks > 1:   # each _CHUNK positions of a row first, then their bests in order
      per_row, chunk = ctx.dim(chunks), ctx.dim(_CHUNK)
      value_dtype = np.float32 if np.dtype(aval.dtype) in _SIXTEEN_BIT else aval.dtype
      indices, bests = new_flat(ctx, count * chunks, np.int64), new_flat(ctx, count * chunks,
                                                                         value_dtype)
      t = ctx.fresh("i")
      with ctx.lowering.elements(t, ctx.dim(count * chunks)):
        start = f"({t} % {per_row}) * {chunk}"
        first = base(f"({t} // {per_row})")
        best, value = best_of(start, f"min({start} + {chunk}, {n})", lambda j: j,
                              lambda j: f"{values}[{first} + ({j}) * {inner}]")
        ctx.emit(f"{indices}[{t}], {bests}[{t}] = {best}, {value}")
      row = ctx.fresh("i")
      with ctx.lowering.elements(row, ctx.dim(count)):
        best, _ = best_of(f"{row} * {per_row}", f"({row} + 1) * {per_row}",
                          lambda j: f"{indices}[{j}]", lambda j: f"{bests}[{j}]")
        ctx.emit(f"{out}[{row}] = {best}")
    else:
      row = ctx.fresh("i")
      with ctx.lowering.elements(row, ctx.dim(count)):
        first = base(row)
        best, _ = best_of("0", n, lambda j: j,
                          lambda j: f"{values}[{first} + ({j}) * {inner}]")
        ctx.emit(f"{out}[{row}] = {best}")
    return cpu.stored(ctx, out, np.int64, out_aval)
  return rule


def _integral(dtype):
  """Whether sums and products of `dtype` are exact, in any grouping (integers and bools)."""
  return not dtypes.is_inexact(dtype)


def _cumulative(acc_dtype, combine, exact):
  """The running fold along `axis` (`cumulative`'s): a thread for each
  position of the other axes; where `exact(dtype)` (a fold whose result
  does not depend on how it is grouped) and the axis is longer than
  _CHUNK, each _CHUNK steps of a line by a thread of their own: their fold
  first, then each line's chunk folds running in order (a thread a line),
  then each chunk's running fold on from the fold of the chunks before it."""
  def rule(ctx, x, *, axis, reverse):
    (aval,), (out_aval,) = ctx.avals_in, ctx.avals_out
    values, _ = _values(ctx, x, aval, ())
    dtype = acc_dtype(aval.dtype)
    size, (outer, n, inner) = math.prod(aval.shape), cpu._along(aval, axis)
    out, fn, to = new_flat(ctx, size, dtype), ctx.function(combine(aval.dtype)), type_source(dtype)
    chunks = -(-n // _CHUNK) if exact(aval.dtype) else 1
    length, step, per_line = ctx.dim(n), ctx.dim(inner), ctx.dim(chunks)
    chunk = ctx.dim(_CHUNK if chunks > 1 else n)
    parts = new_flat(ctx, outer * inner * chunks, dtype) if chunks > 1 else None
    zero = ctx.lowering.const(0, dtype)   # (the accumulator's type before its first step)

    def over_chunks(body):
      """A kernel, a thread a chunk: body(part, acc, steps, value, first)
      writes its statements, given the names of the chunk's index, the
      accumulator, the range of its steps, its step's value, and whether
      the step is its first."""
      part, line, c, t, acc = (ctx.fresh(k) for k in "plcta")
      with ctx.lowering.elements(part, ctx.dim(outer * inner * chunks)):
        ctx.emit(f"{line}, {c}, {acc} = {part} // {per_line}, {part} % {per_line}, {zero}")
        steps = f"range({c} * {chunk}, min(({c} + 1) * {chunk}, {length}))"
        position = (f"({line} // {step}) * {length} * {step} + {line} % {step} + "
                    f"({f'{length} - 1 - {t}' if reverse else t}) * {step}")
        body(part, c, acc, t, steps, position, f"{t} == {c} * {chunk}")

    if chunks > 1:
      def chunk_fold(part, c, acc, t, steps, position, first):
        with ctx.lowering.block(f"for {t} in {steps}:"):
          ctx.emit(f"{acc} = {to}({values}[{position}]) if {first} else "
                   f"{to}({fn}({acc}, {values}[{position}]))")
        ctx.emit(f"{parts}[{part}] = {acc}")

      over_chunks(chunk_fold)
      r, j = ctx.fresh("r"), ctx.fresh("j")
      with ctx.lowering.elements(r, ctx.dim(outer * inner)):   # running, in order
        with ctx.lowering.block(f"for {j} in range({r} * {per_line} + 1, "
                                f"({r} + 1) * {per_line}):"):
          ctx.emit(f"{parts}[{j}] = {to}({fn}({parts}[{j} - 1], {parts}[{j}]))")

    def running(part, c, acc, t, steps, position, first):
      before = f"({parts}[{part} - 1] if {first} else {acc})" if chunks > 1 else acc
      with ctx.lowering.block(f"for {t} in {steps}:"):
        ctx.emit(f"{acc} = {to}({values}[{position}]) if {first} and {c} == 0 else "
                 f"{to}({fn}({before}, {values}[{position}]))")
        ctx.emit(f"{out}[{position}] = {acc}")

    over_chunks(running)
    return cpu.stored(ctx, out, dtype, out_aval)
  return rule


CUDA_RULES.update({
    lax.reduce_sum_p: _reduce_sum, lax.reduce_prod_p: _reduce_prod,
    lax.reduce_max_p: _extremum(True), lax.reduce_min_p: _extremum(False),
    lax.reduce_and_p: _bitwise(cpu.bitwise_and, -1), lax.reduce_or_p: _bitwise(cpu.bitwise_or, 0),
    lax.reduce_xor_p: _bitwise(cpu.bitwise_xor, 0),
    lax.argmax_p: _arg_extremum(True), lax.argmin_p: _arg_extremum(False),
    lax.cumsum_p: _cumulative(accumulation_dtype, lambda dtype: cpu.add, _integral),
    lax.cumprod_p: _cumulative(accumulation_dtype, lambda dtype: cpu.multiply, _integral),
    lax.cummax_p: _cumulative(
        scalar_dtype, lambda dtype: S.complex_max if dtypes.is_complex(dtype) else S.nan_max,
        lambda dtype: True),
    lax.cummin_p: _cumulative(
        scalar_dtype, lambda dtype: S.complex_min if dtypes.is_complex(dtype) else S.nan_min,
        lambda dtype: True),
    lax.cumlogsumexp_p: _cumulative(lambda dtype: np.dtype(np.float64),
                                    lambda dtype: cpu.logaddexp, lambda dtype: False),
    lax.reduce_p: RULES[lax.reduce_p]})   # (the CPU's: a kernel over the result elements)
