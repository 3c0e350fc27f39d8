"""`refimpl.debug`: printing, logging, callbacks and breakpoints that work
inside transformations, and the display of shardings, as `jax.debug`.

`debug.print` (`debug.log`, `debug.breakpoint`) stages a `debug_callback`
equation, so the values are printed (logged, shown in the debugger) when the
program runs (every call of a jitted function), not when it is traced. The
equation has a side effect, so dead-code elimination keeps it.
"""

import cmd
import contextlib
import copy
import functools
import linecache
import logging
import os
import pprint
import string
import sys

import numpy as np

from refimpl import tree_util
from refimpl.core import Primitive
from refimpl.interpreters import ad, batching

__all__ = ["print", "callback", "log", "breakpoint", "inspect_array_sharding",
           "visualize_array_sharding", "visualize_sharding"]


class DebugCallbackPrimitive(Primitive):
  """The `debug_callback` primitive: a Python callback run for its effect."""

  multiple_results = True
  has_side_effects = True

  def __init__(self):
    super().__init__("debug_callback")
    self.def_abstract_eval(lambda *avals, callback: [])
    self.def_impl(self._call)

  @staticmethod
  def _call(*args, callback):
    """`debug_callback[callback] *args`: calls `callback(*args)` for its effect.

    No outputs. The reference rule calls `callback` with the arguments as
    Arrays (key arrays for PRNG keys, as JAX passes them), in program order.
    Shape rule: takes any arrays, returns nothing.
    """
    from refimpl.core import get_aval, make_array
    callback(*[make_array(a, get_aval(a)) for a in args])
    return []


debug_callback_p = DebugCallbackPrimitive()


def _debug_callback_jvp(primals, tangents, *, callback):
  # As JAX: the callback sees the primal values only; it has no outputs.
  return debug_callback_p.bind(*primals, callback=callback), []


ad.primitive_jvps[debug_callback_p] = _debug_callback_jvp
# As JAX: transposing drops the callback (it gives no cotangents).
ad.deftranspose(debug_callback_p, lambda cts, *args, callback: [None] * len(args))


def _debug_callback_batch(args, dims, *, callback):
  # As JAX: unrolled over the batch, one callback per member, in order (an
  # unbatched argument is passed to each as it is).
  from refimpl.lax.indexing import index_in_dim
  size = next(x.shape[d] for x, d in zip(args, dims) if d is not None)
  for i in range(size):
    member = [x if d is None else index_in_dim(x, i, d, keepdims=False)
              for x, d in zip(args, dims)]
    debug_callback_p.bind(*member, callback=callback)
  return [], []


batching.primitive_batchers[debug_callback_p] = _debug_callback_batch


def callback(callback, *args, ordered=False, partitioned=False, **kwargs):
  """Calls `callback(*args, **kwargs)` with concrete arrays when the program runs.
  `partitioned` (pass each device its local shards) changes nothing on one
  device, where the shard is the whole array."""
  leaves, tree = tree_util.tree_flatten((args, kwargs))

  def flat_callback(*flat_args):
    call_args, call_kwargs = tree_util.tree_unflatten(tree, flat_args)
    callback(*call_args, **call_kwargs)

  flat_callback.__name__ = getattr(callback, "__name__", "callback")
  debug_callback_p.bind(*leaves, callback=flat_callback)


def print(fmt=None, *args, ordered=False, partitioned=False,  # noqa: A001 (JAX's name)
          skip_format_check=False, _use_logging=False, **kwargs):
  """Prints `fmt.format(*args, **kwargs)` with the values the program runs
  with, also under jit (a format without placeholders prints `fmt` and the
  arguments separated by spaces), with NumPy's print options of the call.
  Arguments the format does not use raise ValueError (unless
  `skip_format_check`). Called without `fmt`, returns the print function
  taking the format and arguments (JAX's two-call form,
  `debug.print(ordered=True)("x={}", x)`). `ordered` and `partitioned` have
  no effect: every program runs its equations in order, on one device."""
  def debug_print(fmt, *args, **kwargs):
    if not skip_format_check:
      _check_format(fmt, args, kwargs)
    has_placeholders = bool(fmt) and next(iter(string.Formatter().parse(fmt)))[1] is not None
    printoptions = np.get_printoptions()
    record = _logging_record(logging.INFO) if _use_logging else None
    callback(lambda *a, **k: _emit(fmt, has_placeholders, printoptions, record, a, k),
             *args, **kwargs)

  if fmt is not None:
    debug_print(fmt, *args, **kwargs)
    return None
  if args or kwargs:
    raise TypeError("debug_print received unexpected arguments in the two-call form:"
                    f" {args=} {kwargs=}")
  return debug_print


def _emit(fmt, has_placeholders, printoptions, record, args, kwargs):
  """Formats and writes the message of a `print` (or `log`) call."""
  if has_placeholders:
    with np.printoptions(**printoptions):
      message = fmt.format(*args, **kwargs)
  else:
    message = " ".join((fmt, *map(str, args)))
  if record is None:
    sys.stdout.write(message + "\n")
  else:
    logged = copy.copy(record)
    logged.msg = message
    _logger.handle(logged)


def log(fmt=None, *args, ordered=False, partitioned=False, skip_format_check=False,
        _use_logging=True, **kwargs):
  """`print`, whose message goes to logger `refimpl.debug` at INFO level (the
  record naming the file and line of the call) rather than to stdout."""
  return print(fmt, *args, ordered=ordered, partitioned=partitioned,
               skip_format_check=skip_format_check, _use_logging=_use_logging, **kwargs)


def _check_format(fmt, args, kwargs):
  """Raises ValueError, as JAX, for arguments the format does not use."""
  used = set()

  class Recorder(string.Formatter):
    def get_value(self, key, args, kwargs):
      used.add(key)
      return super().get_value(key, args, kwargs)
  Recorder().format(fmt, *args, **kwargs)
  unused_args = [arg for i, arg in enumerate(args) if i not in used]
  unused_kwargs = [k for k in kwargs if k not in used]
  if unused_args and next(iter(string.Formatter().parse(fmt)))[1] is not None:
    raise ValueError(f"Unused positional arguments to `jax.debug.print`: {unused_args}")
  if unused_kwargs:
    raise ValueError(
        f"Unused keyword arguments to `jax.debug.print`: {unused_kwargs}. You may be "
        "passing an f-string (i.e, `f\"{x}\"`) into `jax.debug.print` and instead should "
        "pass in a regular string.")


def _user_frames():
  """The calling frames outside refimpl (and the standard library's
  contextlib and functools), innermost first."""
  frame, frames = sys._getframe(1), []
  while frame is not None:
    name = frame.f_code.co_filename
    if not (name.startswith(_PACKAGE_DIR) or name.startswith(_STDLIB_WRAPPERS)):
      frames.append(frame)
    frame = frame.f_back
  return frames


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_STDLIB_WRAPPERS = tuple(os.path.abspath(m.__file__) for m in (contextlib, functools))


def _logging_record(level):
  frames = _user_frames()
  where = (frames[0].f_code.co_filename, frames[0].f_lineno) if frames else \
      ("(unknown file)", 0)
  return _logger.makeRecord(_logger.name, level, *where, "", (), None)


_logger = logging.getLogger(__name__)


# --- sharding -------------------------------------------------------------------

def inspect_array_sharding(value, *, callback):
  """Calls `callback(sharding)` for each array of pytree `value`, as soon as
  its sharding is known: eagerly its `sharding`; while tracing (under jit,
  where JAX calls it when compiling) the sharding a program's value has on
  one device, `SingleDeviceSharding` of the default device, once per trace."""
  from refimpl import api, core
  from refimpl.sharding import SingleDeviceSharding
  for leaf in tree_util.tree_leaves(value):
    if isinstance(leaf, core.Tracer):
      callback(SingleDeviceSharding(api.devices()[0]))
    else:
      callback(leaf.sharding)


def visualize_array_sharding(arr, **kwargs):
  """`visualize_sharding(arr.shape, sharding of arr, **kwargs)`."""
  inspect_array_sharding(arr, callback=lambda s: visualize_sharding(arr.shape, s, **kwargs))


def visualize_sharding(shape, sharding, *, use_color=True, scale=1.0, min_width=9,
                       max_width=80, color_map=None):
  """Prints the layout of an array of `shape` (1 or 2 dimensions, ValueError
  otherwise) laid out by `sharding`, as JAX's table: on one device a single
  box naming it ("CPU 0"), `int(10 * scale)` lines high for 2 dimensions
  (one line for 1), as wide as the array's aspect ratio gives (clipped to
  [`min_width`, `max_width`]). JAX draws it with the `rich` library, with
  colors; refimpl prints the box as plain text (`use_color` and `color_map`
  have no effect)."""
  if not 1 <= len(shape) <= 2:
    raise ValueError("`visualize_sharding` only works for shapes with 1 and 2 dimensions.")
  base_height = int(10 * scale)
  base_width = int(base_height * (shape[1] if len(shape) == 2 else 1) / shape[0])
  (device, _), = sharding.devices_indices_map(tuple(shape)).items()
  entry = f"{device.platform.upper()} {device.id}"
  width = min(max(int(base_width * 2.5), min_width), max_width)
  height = int(base_height) if len(shape) == 2 else 1
  left, extra = divmod(width - len(entry) - 2, 2)
  top, extra_rows = divmod(height - 2, 2)
  inner = max(left, 0) + len(entry) + max(left + extra, 0)
  blank = "\u2502" + " " * inner + "\u2502"
  lines = (["\u250c" + "\u2500" * inner + "\u2510"] + [blank] * max(top, 0)
           + ["\u2502" + " " * max(left, 0) + entry + " " * max(left + extra, 0) + "\u2502"]
           + [blank] * max(top + extra_rows, 0) + ["\u2514" + "\u2500" * inner + "\u2518"])
  sys.stdout.write("\n".join(lines) + "\n\n")


# --- breakpoint -----------------------------------------------------------------

class DebuggerFrame:
  """A frame of the program at a breakpoint: its `filename`, `function`,
  `lineno`, and `locals` (the frame's local variables, arrays with the values
  the program runs with)."""

  def __init__(self, filename, function, lineno, locals):  # noqa: A002 (JAX's field)
    self.filename, self.function, self.lineno, self.locals = filename, function, lineno, locals

  def source_lines(self):
    """The lines of the frame's source file ([] when it has none)."""
    return linecache.getlines(self.filename)


def breakpoint(*, backend=None, filter_frames=True, num_frames=None,  # noqa: A001 (JAX's name)
               ordered=False, token=None, **kwargs):
  """Enters a debugger when the program reaches this point (also under jit, on
  the values it runs with; under vmap once per member). The debugger sees
  the calling frames (those outside refimpl with `filter_frames`, at most
  `num_frames`), with their local variables. `backend` names it (only "cli",
  the default, JAX's command-line debugger reading `stdin` and writing
  `stdout`, given in `kwargs`, else sys's: `p expr`, `pp expr`, `u`/`up`,
  `d`/`down`, `l`/`list`, `ll`/`longlist`, `w`/`where`, `c`/`continue`,
  `q`/`quit`). `ordered` and `token` have no effect: programs run their
  equations in order."""
  from refimpl import core
  if backend not in (None, "cli"):
    raise ValueError(f"Debugger backend {backend!r} is not available; use 'cli'")
  frames = _user_frames() if filter_frames else _all_frames()
  frames = frames[:num_frames] if num_frames is not None else frames
  arrays, static = [], []
  for frame in frames:
    names = {}
    for name, value in frame.f_locals.items():
      if isinstance(value, (core.Tracer, core.ConcreteArray)):
        names[name] = len(arrays)
        arrays.append(value)
      else:
        names[name] = _Static(value)
    static.append((frame.f_code.co_filename, frame.f_code.co_name, frame.f_lineno, names))

  def enter(*values):
    debugger_frames = [
        DebuggerFrame(filename, function, lineno,
                      {name: v.value if isinstance(v, _Static) else values[v]
                       for name, v in names.items()})
        for filename, function, lineno, names in static]
    _CliDebugger(debugger_frames, **kwargs).run()
  enter.__name__ = "breakpoint"
  debug_callback_p.bind(*arrays, callback=enter)


class _Static:
  """A frame's local that is not an array: kept as it was when traced."""

  def __init__(self, value):
    self.value = value


def _all_frames():
  frame, frames = sys._getframe(2), []
  while frame is not None:
    frames.append(frame)
    frame = frame.f_back
  return frames


class _CliDebugger(cmd.Cmd):
  """JAX's command-line debugger, over the frames of a breakpoint."""

  prompt = "(jdb) "

  def __init__(self, frames, stdin=None, stdout=None):
    super().__init__(stdin=stdin, stdout=stdout)
    self.use_rawinput = stdin is None
    self.frames, self.index = frames, 0
    self.intro = "Entering jdb:"

  @property
  def _frame(self):
    return self.frames[self.index]

  def _evaluate(self, expression):
    return eval(expression, {}, dict(self._frame.locals))

  def _print(self, text):
    self.stdout.write(f"{text}\n")

  def run(self):
    self.cmdloop()

  def default(self, line):
    self._print(f"*** Unknown command: {line}")

  def do_p(self, arg):
    """Prints the value of an expression of the frame's locals. Usage: p expression"""
    try:
      self._print(repr(self._evaluate(arg)))
    except Exception as err:  # (an error in the user's expression is shown, as pdb does)
      self._print(f"*** {type(err).__name__}: {err}")

  def do_pp(self, arg):
    """Pretty-prints the value of an expression. Usage: pp expression"""
    try:
      self._print(pprint.pformat(self._evaluate(arg)))
    except Exception as err:  # (as do_p)
      self._print(f"*** {type(err).__name__}: {err}")

  def do_up(self, _):
    """Moves to the calling frame. Usage: u(p)"""
    if self.index == len(self.frames) - 1:
      self._print("At topmost frame.")
    else:
      self.index += 1
    self._print_location()

  def do_down(self, _):
    """Moves to the called frame. Usage: d(own)"""
    if self.index == 0:
      self._print("At bottommost frame.")
    else:
      self.index -= 1
    self._print_location()

  def do_list(self, _):
    """Lists the source around the current line. Usage: l(ist)"""
    self._print_source(max(self._frame.lineno - 5, 1), self._frame.lineno + 5)

  def do_longlist(self, _):
    """Lists the source of the whole file. Usage: ll | longlist"""
    self._print_source(1, len(self._frame.source_lines()))

  def do_where(self, _):
    """Prints the frames, innermost last. Usage: w(here)"""
    for i in reversed(range(len(self.frames))):
      frame = self.frames[i]
      marker = "> " if i == self.index else "  "
      self._print(f"{marker}{frame.filename}({frame.lineno}){frame.function}()")

  def do_continue(self, _):
    """Leaves the debugger; the program continues. Usage: c(ont(inue))"""
    return True

  def do_quit(self, _):
    """Leaves the debugger and the program. Usage: q(uit)"""
    sys.exit(0)

  do_EOF = do_continue  # noqa: N815 (cmd's name for the end of input)
  do_u, do_d, do_l, do_ll, do_w = do_up, do_down, do_list, do_longlist, do_where
  do_c = do_cont = do_continue
  do_q = do_exit = do_quit

  def _print_location(self):
    frame = self._frame
    self._print(f"> {frame.filename}({frame.lineno}){frame.function}()")

  def _print_source(self, first, last):
    lines = self._frame.source_lines()
    for number in range(first, min(last, len(lines)) + 1):
      marker = "->" if number == self._frame.lineno else "  "
      self._print(f"{number:4d} {marker} {lines[number - 1].rstrip()}")
