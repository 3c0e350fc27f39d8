"""sort, top_k and approx_top_k on the numba-cuda backend: the CPU rules'
steps (numba_backend/rules/sorting.py's `sorting_rules`) as kernels.

The keys are a kernel a thread an element (the CPU's loop over elements,
its key functions compiled for the device); the permutation is the CPU's
`sort_line` (a stable bottom-up merge sort) with each pass a kernel of a
thread an element, which finds its place in the merged runs by binary
search; the values and indices are a kernel a thread an element of the
result, reading its element through the permutation. Each line's order is
the CPU's (and the reference's) stable order whatever the threads' order,
so the results are the reference's bit for bit, deterministically."""

from numba import cuda

from numba_backend.cuda.lower import CUDA_RULES, named
from numba_backend.rules import sorting as cpu


@cuda.jit(device=True)
def _before(keys, p, q):
  """Whether the element whose keys are at flat position p comes before q's:
  the key rows `keys` compared lexicographically (False where they are equal)."""
  for r in range(keys.shape[0]):
    if keys[r, p] != keys[r, q]:
      return keys[r, p] < keys[r, q]
  return False


@cuda.jit(device=True)
def merge_step(keys, line, other, t, n, inner, width):
  """Pass `width` of the CPU's `sort_line` for the element at flat position
  t of `line` (outer, n, inner: the indices of each line's elements, each
  run of `width` in order): writes it to `other` where the merge of its run
  with its neighbour puts it, after its own run's elements before it and
  after the other run's elements that the merge takes before it (the left
  run's when their keys are not greater, the right run's when less: a tie
  is taken from the left run), found by binary search."""
  o, j, k = t // (n * inner), (t // inner) % n, t % inner
  base = o * n * inner + k
  lo = j - j % (2 * width)
  mid, hi = min(lo + width, n), min(lo + 2 * width, n)
  item = line[t]
  own = base + item * inner
  if j < mid:   # the right run's elements before it: those whose keys are less
    a, b = mid, hi
    while a < b:
      c = (a + b) // 2
      if _before(keys, base + line[base + c * inner] * inner, own):
        a = c + 1
      else:
        b = c
    place = j + a - mid
  else:   # the left run's elements before it: those whose keys are not greater
    a, b = lo, mid
    while a < b:
      c = (a + b) // 2
      if _before(keys, own, base + line[base + c * inner] * inner):
        b = c
      else:
        a = c + 1
    place = j - mid + a
  other[base + place * inner] = item


def merge_sort(ctx, keys, along, perm):
  """The CPU's bottom-up merge sort of every line, a kernel a pass: the
  identity, then for each width 1, 2, 4, ... below n a thread an element
  moving it to its place in its merged runs (`merge_step`), between `perm`
  and a scratch array by turns, the first chosen so that the last pass
  writes `perm`."""
  outer, n, inner = along
  passes = max(n - 1, 0).bit_length()
  scratch = named(ctx, ctx.lowering.allocation(ctx.dim(outer * n * inner), "np.int64"))
  line, other, e, t = ctx.fresh("f"), ctx.fresh("f"), ctx.fresh("e"), ctx.fresh("t")
  passes = ctx.dim(passes)
  ctx.emit(f"{line}, {other} = ({perm}, {scratch}) if {passes} % 2 == 0 else ({scratch}, {perm})")
  count, size, step = ctx.dim(outer * n * inner), ctx.dim(n), ctx.dim(inner)
  with ctx.lowering.elements(t, count):
    ctx.emit(f"{line}[{t}] = ({t} // {step}) % {size}")
  with ctx.lowering.block(f"for {e} in range({passes}):"):
    with ctx.lowering.elements(t, count):
      ctx.emit(f"{ctx.function(merge_step)}({keys}, {line}, {other}, {t}, {size}, {step}, "
               f"1 << {e})")
    ctx.emit(f"{line}, {other} = {other}, {line}")


def _over_result(ctx, perm, along, m, out, element):
  """A kernel a thread an element t of the flat result `out` (outer, m,
  inner), writing `element(index, position)`: the sources of the index
  along its line of the element it takes in the order `perm` (outer, n,
  inner), and of that element's flat position."""
  outer, n, inner = along
  out = named(ctx, out)
  t, o, j, k, i = (ctx.fresh(x) for x in "tojki")
  position = ctx.function(cpu.line_position)
  count, m, n, inner = ctx.dim(outer * m * inner), ctx.dim(m), ctx.dim(n), ctx.dim(inner)
  with ctx.lowering.elements(t, count):
    ctx.emit(f"{o}, {j}, {k} = {t} // ({m} * {inner}), ({t} // {inner}) % {m}, {t} % {inner}")
    ctx.emit(f"{i} = {perm}[{position}({o}, {j}, {k}, {n}, {inner})]")
    ctx.emit(f"{out}[{t}] = {element(i, f'{position}({o}, {i}, {k}, {n}, {inner})')}")


def _take(ctx, x, perm, along, m, out):
  """`take_lines`' elements."""
  x = named(ctx, x)
  _over_result(ctx, perm, along, m, out, lambda index, position: f"{x}[{position}]")


def _first(ctx, perm, along, m, out):
  """`first_indices`' indices."""
  _over_result(ctx, perm, along, m, out, lambda index, position: f"np.int32({index})")


CUDA_RULES.update(zip(cpu.PRIMITIVES, cpu.sorting_rules(merge_sort, _take, _first)))
