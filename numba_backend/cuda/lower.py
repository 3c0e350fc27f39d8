"""The numba-cuda lowering: the CPU backend's lowering interpreter
(numba_backend/lower.py) and its rules, with a program that runs on the host
and launches kernels.

The program is the CPU backend's source, run by Python rather than compiled:
each loop over independent elements that is not inside another becomes a
CUDA kernel, a grid-stride loop over those elements, compiled by numba-cuda
(the scalar rules' functions of scalars.py and checked.py compile for the
device as they do for the CPU); the program launches it with the arrays,
static integers and literals its body names. Arrays live on the device; the
statements between kernels (allocations, views, rank-0 values) run on the
host. Float32 transcendentals are libm's float64 functions rounded (the
device's libdevice), not the CPU's checked fast functions.

A primitive is lowered here only where this target has a rule for it
(`CUDA_RULES`, `CUDA_KEY_RULES` on key arrays: a CPU rule that runs here as
it is, or one of this target's own) or it is elementwise; any other raises
LoweringError naming it.
"""

import ast
import builtins
import contextlib
import re

from numba_backend import lower

CUDA_RULES = {}
"""primitive -> lowering rule of this target (a CPU rule that runs here, or its own)."""
CUDA_KEY_RULES = {}
"""primitive -> its rule of this target on key arrays (`lower.KEY_RULES`' counterpart)."""
HOST_FUNCTIONS = {}
"""A CPU rule's Numba function that its program calls between loops -> the
host function of this target doing the same on device arrays (launching
kernels): a CPU rule calling only such functions runs here as it is."""
DEVICE_FUNCTIONS = {}
"""A CPU rule's Numba function that its kernels call but device code cannot
compile as it is (it allocates) -> this target's device function computing
the same: a CPU rule calling it runs here as it is."""

_MODULES = {"np", "math", "numba", "cuda", "S", "K", "G"}
"""The module aliases of a program's module: names a kernel does not take as arguments."""


class KernelLowering(lower.Lowering):
  """A program for the host whose independent loops over elements are kernels."""

  checks_rounding = False

  def __init__(self):
    super().__init__()
    self.kernels = []   # the kernels' sources
    self._in_kernel = False

  def threads(self, count, elements, costly=False):
    return False   # no CPU threads: the kernels are the parallel loops

  rules, key_rules = CUDA_RULES, CUDA_KEY_RULES
  row_rules = {}   # (a reduction's operand is stored whole: its kernels read it there)

  def rule(self, eqn):
    rule = super().rule(eqn)
    if rule is None and lower._rule(eqn) is not None:
      raise lower.LoweringError(
          f"the numba-cuda backend has no lowering for primitive '{eqn.primitive.name}' yet "
          f"(in equation: {eqn}); the numba backend (CPU) lowers it")
    return rule

  def function(self, fn):
    return super().function(HOST_FUNCTIONS.get(fn, DEVICE_FUNCTIONS.get(fn, fn)))

  def scalar(self, expr, dtype):
    # (Python runs the host program, and the simulator the kernels: NumPy's
    # .item() and Numba functions give Python scalars, of other types)
    return f"{lower.type_source(lower.scalar_dtype(dtype))}({expr})"

  def allocation(self, shape, dtype):
    return f"G.empty({shape}, {dtype})"

  @contextlib.contextmanager
  def loop(self, index, count, elements, costly=False):
    with self.elements(index, self.dim(count)):
      yield

  @contextlib.contextmanager
  def elements(self, index, count):
    """A kernel whose threads run the iterations (grid-stride), where not in
    another kernel (there: one thread's loop)."""
    if self._in_kernel:   # (marked, for `_flattened`)
      with self.block(f"for {index} in range({count}):  {_INDEPENDENT}"):
        yield
      return
    start, depth = len(self.lines), self.depth
    self._in_kernel = True
    try:
      with self.block(f"for {index} in range(cuda.grid(1), {count}, cuda.gridsize(1)):"):
        yield
    finally:
      self._in_kernel = False
    body = [line[4 * depth:] for line in self.lines[start:]]
    del self.lines[start:]
    body, count = _flattened(body, index, count)
    for view in _views(body):   # (made on the host: device code has no reshape of its own)
      name = named(self, view)
      body = [line.replace(view, name) for line in body]
    params = _free_names(body, set(self.imports.values()))
    name = f"kernel{len(self.kernels)}"
    self.kernels.append("\n".join(["@cuda.jit(cache=True)", f"def {name}({', '.join(params)}):",
                                   *("    " + line for line in body), ""]))
    arguments = ", ".join(self._on_device(p) for p in params)
    self.emit(f"G.launch({name}, {count}, {arguments})")

  def copy(self, array):
    return f"G.copy_array({array})"

  def host_copy(self, array):
    return f"G.to_host({array})"

  def host_allocation(self, shape, dtype):
    return f"np.empty({shape}, {dtype})"

  def from_host(self, array):
    return f"G.to_device({array})"

  def full(self, shape, value, dtype):
    return f"G.full({shape}, {value}, {dtype})"

  def strided_copy(self, source, offset, strides, shape, out):
    self._strided(source, offset, strides, shape, out, "0", None, f"{out}.size")

  def strided_assign(self, out, offset, strides, shape, source):
    self._strided(source, "0", None, shape, out, offset, strides, f"{source}.size")

  def strided_move(self, source, offset, strides, shape, out, out_offset, out_strides):
    self._strided(source, offset, strides, shape, out, out_offset, out_strides,
                  f"G.size({shape})")

  def _strided(self, source, offset, strides, shape, out, out_offset, out_strides, count):
    """A kernel writing, for each row-major multi-index i over `shape`, the
    element of `source` at `offset + sum_j i_j * strides[j]` to `out` at
    `out_offset + sum_j i_j * out_strides[j]` (strides None: the flat index
    itself); `count` the source of the number of elements."""
    names = {role: named(self, value) for role, value in (
        ("source", source), ("out", out), ("count", count), ("offset", offset),
        ("out_offset", out_offset))}
    index, rest, axis = self.fresh("i"), self.fresh("q"), self.fresh("j")
    read, write = self.fresh("p"), self.fresh("p")
    with self.elements(index, names["count"]):
      self.emit(f"{rest}, {read}, {write} = {index}, {names['offset'] if strides else index}, "
                f"{names['out_offset'] if out_strides else index}")
      with self.block(f"for {axis} in range({shape}.size - 1, -1, -1):"):
        if strides:
          self.emit(f"{read} += ({rest} % {shape}[{axis}]) * {strides}[{axis}]")
        if out_strides:
          self.emit(f"{write} += ({rest} % {shape}[{axis}]) * {out_strides}[{axis}]")
        self.emit(f"{rest} //= {shape}[{axis}]")
      self.emit(f"{names['out']}[{write}] = {names['source']}[{read}]")

  def source(self, signature):
    imports = [f"import {module} as {alias}" for module, alias in self.imports.items()]
    devices = ", ".join(self._on_device(p) for p in signature.split(", ")
                        if self._on_device(p) != p)
    return "\n".join([*imports, "", "", *("\n" + k for k in self.kernels), "",
                      f"def program({devices}, {signature}):", *self.lines, ""])

  def _on_device(self, name):
    """The program's name for the device copy of the static integers `d`, a
    literal array `c_<dtype>` or an array constant `k<i>`; other names as they are."""
    constant = name[:1] == "k" and name[1:].isdigit() and int(name[1:]) < len(self.arrays)
    return f"{name}_dev" if name == "d" or name.startswith("c_") or constant else name


def named(ctx, source):
  """A name that the host program (`ctx`: a lowering or a rule's context)
  gives the value of `source`, a view, a new array or a count: made there,
  a kernel takes it as an argument."""
  name = ctx.fresh("f")
  ctx.emit(f"{name} = {source}")
  return name


_INDEPENDENT = "# independent iterations"
_INNER = re.compile(r"    for (\w+) in range\((d\[\d+\])\):  " + _INDEPENDENT + "$")


def _flattened(body, index, count):
  """The kernel `body` (its grid-stride loop over `count` iterations), where
  it is a loop over rows of simple statements then a loop of independent
  iterations over the row's elements (`_lower_rows`' form), as one loop over
  every element of every row, each element's thread computing its row's
  statements: (the kernel's lines, the count of its iterations)."""
  inner = next((k for k, line in enumerate(body) if _INNER.match(line)), None)
  if inner is None or any(line.startswith("     ") or line.endswith(":")
                          for line in body[1:inner]) \
      or not all(line.startswith("        ") for line in body[inner + 1:]):
    return body, count
  element, size = _INNER.match(body[inner]).groups()
  flat = f"{index}_{element}"
  return ([f"for {flat} in range(cuda.grid(1), {count} * {size}, cuda.gridsize(1)):",
           f"    {index}, {element} = {flat} // {size}, {flat} % {size}",
           *body[1:inner], *(line[4:] for line in body[inner + 1:])], f"{count} * {size}")


def _views(lines):
  """The sources of the views `array.reshape(shape)` that the statements
  `lines` take of arrays they do not assign, with shapes of names they do
  not assign either (a view's source before those it contains)."""
  source = "\n".join(lines)
  tree = ast.parse(source)
  assigned = {node.id for node in ast.walk(tree)
              if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
  views = []
  for node in ast.walk(tree):
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
        and node.func.attr == "reshape" and not any(
            isinstance(n, ast.Name) and n.id in assigned for n in ast.walk(node)):
      view = ast.get_source_segment(source, node)
      if view not in views:
        views.append(view)
  return views


def _free_names(lines, aliases):
  """The names the statements `lines` read without assigning them first
  (sorted), less modules and builtins."""
  tree = ast.parse("\n".join(lines))
  assigned, read = set(), set()
  for node in ast.walk(tree):
    if isinstance(node, ast.Name):
      (assigned if isinstance(node.ctx, ast.Store) else read).add(node.id)
  return sorted(read - assigned - _MODULES - aliases - set(dir(builtins)))
