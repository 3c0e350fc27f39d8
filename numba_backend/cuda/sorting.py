"""sort, top_k and approx_top_k on the numba-cuda backend: the CPU rules'
steps (numba_backend/rules/sorting.py's `sorting_rules`) as kernels.

The keys are a kernel a thread an element (the CPU's loop over elements,
its key functions compiled for the device); the permutation is a kernel a
thread a line, each sorting its line by the CPU's `sort_line` (a stable
bottom-up merge sort, compiled for the device) in scratch the host
allocates; the values and indices are a kernel a thread an element of the
result, reading its element through the permutation. Each line's order is
the CPU's (and the reference's) stable order whatever the threads' order,
so the results are the reference's bit for bit, deterministically."""

from numba import cuda

from numba_backend.cuda.kernels import device_version
from numba_backend.cuda.lower import CUDA_RULES
from numba_backend.rules import sorting as cpu

_sort_line = device_version(cpu.sort_line, __name__)


@cuda.jit(device=True)
def sort_line(keys, t, n, inner, scratch, perm):
  """The CPU's `sort_line` of line t of `perm` (outer, n, inner): the line
  (t // inner, :, t % inner), in the scratch scratch[2 * n * t:2 * n * (t + 1)]."""
  start = 2 * n * t
  _sort_line(keys, (t // inner) * n * inner + t % inner, n, inner, scratch[start:start + n],
             scratch[start + n:start + 2 * n], perm)


def _named(ctx, source):
  """A name for the array `source` (a view made on the host: kernels take arrays)."""
  name = ctx.fresh("f")
  ctx.emit(f"{name} = {source}")
  return name


def _permutation(ctx, keys, along, perm):
  """A kernel a thread a line, sorting it by `sort_line`."""
  outer, n, inner = along
  scratch = _named(ctx, ctx.lowering.allocation(ctx.dim(2 * outer * n * inner), "np.int64"))
  t = ctx.fresh("t")
  with ctx.lowering.elements(t, ctx.dim(outer * inner)):
    ctx.emit(f"{ctx.function(sort_line)}({keys}, {t}, {ctx.dim(n)}, {ctx.dim(inner)}, "
             f"{scratch}, {perm})")


def _over_result(ctx, perm, along, m, out, element):
  """A kernel a thread an element t of the flat result `out` (outer, m,
  inner), writing `element(index, position)`: the sources of the index
  along its line of the element it takes in the order `perm` (outer, n,
  inner), and of that element's flat position."""
  outer, n, inner = along
  out = _named(ctx, out)
  t, o, j, k, i = (ctx.fresh(x) for x in "tojki")
  position = ctx.function(cpu.line_position)
  count, m, n, inner = ctx.dim(outer * m * inner), ctx.dim(m), ctx.dim(n), ctx.dim(inner)
  with ctx.lowering.elements(t, count):
    ctx.emit(f"{o}, {j}, {k} = {t} // ({m} * {inner}), ({t} // {inner}) % {m}, {t} % {inner}")
    ctx.emit(f"{i} = {perm}[{position}({o}, {j}, {k}, {n}, {inner})]")
    ctx.emit(f"{out}[{t}] = {element(i, f'{position}({o}, {i}, {k}, {n}, {inner})')}")


def _take(ctx, x, perm, along, m, out):
  """`take_lines`' elements."""
  x = _named(ctx, x)
  _over_result(ctx, perm, along, m, out, lambda index, position: f"{x}[{position}]")


def _first(ctx, perm, along, m, out):
  """`first_indices`' indices."""
  _over_result(ctx, perm, along, m, out, lambda index, position: f"np.int32({index})")


CUDA_RULES.update(zip(cpu.PRIMITIVES, cpu.sorting_rules(_permutation, _take, _first)))
