"""`jax.debug.print`'s forms and checks, `log`, `breakpoint` (driven through
its command-line debugger's stdin), `inspect_array_sharding` and the
sharding displays."""

import io
import logging

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from refimpl.sharding import NamedSharding, PartitionSpec as P, SingleDeviceSharding


def test_print_forms(capsys):
  jax.debug.print("x={x}", x=jnp.arange(3.0))
  jax.debug.print("values", 1, jnp.ones(2))           # no placeholders: joined by spaces
  jax.jit(lambda x: jax.debug.print(ordered=True)("y {}", x * 2))(3.0)   # two-call form
  with np.printoptions(precision=2):
    jax.debug.print("{}", jnp.array([1 / 3]))
  assert capsys.readouterr().out == "x=[0. 1. 2.]\nvalues 1 [1. 1.]\ny 6.0\n[0.33]\n"


def test_print_checks_its_arguments():
  with pytest.raises(ValueError, match=r"Unused positional arguments to `jax.debug.print`: \[2\]"):
    jax.debug.print("{}", 1, 2)
  with pytest.raises(ValueError, match="Unused keyword arguments .* f-string"):
    jax.debug.print("a {}", 1, x=2)
  with pytest.raises(TypeError, match="two-call form"):
    jax.debug.print(None, 1)
  jax.debug.print("{}", 1, 2, skip_format_check=True)


def test_log_goes_to_the_logger_with_the_callers_line(caplog, capsys):
  def f(x):
    jax.debug.log("logged {}", x)
    return x
  with caplog.at_level(logging.INFO, logger="refimpl.debug"):
    jax.jit(f)(3.0)
    jax.vmap(f)(jnp.arange(2.0))
  assert [r.getMessage() for r in caplog.records] == ["logged 3.0", "logged 0.0", "logged 1.0"]
  assert caplog.records[0].pathname == __file__ and caplog.records[0].levelno == logging.INFO
  assert capsys.readouterr().out == ""


def test_breakpoint_under_jit_sees_the_runtime_values():
  stdin, stdout = io.StringIO("p y\npp label\nw\nu\np y\nd\nzz\nc\n"), io.StringIO()

  def f(x):
    y = jnp.sin(x) * 2
    label = "here"
    jax.debug.breakpoint(stdin=stdin, stdout=stdout)
    return y + len(label)
  result = jax.jit(f)(jnp.arange(3.0))
  out = stdout.getvalue()
  assert out.startswith("Entering jdb:\n(jdb) ")
  assert "Array([0.       , 1.6829419, 1.8185948], dtype=float32)" in out
  assert "'here'" in out
  assert f"> {__file__}(" in out and ")f()" in out
  assert "*** NameError" in out              # y is no local of the caller's frame
  assert "*** Unknown command: zz" in out
  np.testing.assert_allclose(result, 2 * np.sin(np.arange(3.0)) + 4, rtol=1e-6)


def test_breakpoint_under_vmap_stops_once_per_member():
  stdin, stdout = io.StringIO("p x\nc\np x\nc\n"), io.StringIO()

  def f(x):
    jax.debug.breakpoint(stdin=stdin, stdout=stdout, num_frames=1)
    return x
  jax.vmap(f)(jnp.array([5.0, 7.0]))
  assert "Array(5., dtype=float32)" in stdout.getvalue()
  assert "Array(7., dtype=float32)" in stdout.getvalue()


def test_breakpoint_quit_and_backends():
  with pytest.raises(SystemExit):
    jax.debug.breakpoint(stdin=io.StringIO("q\n"), stdout=io.StringIO())
  with pytest.raises(ValueError, match="backend"):
    jax.debug.breakpoint(backend="web")


def test_inspect_array_sharding():
  seen = []
  x = jnp.ones(4)
  jax.debug.inspect_array_sharding({"a": x, "b": [x]}, callback=seen.append)
  assert seen == [x.sharding, x.sharding]
  seen.clear()
  f = jax.jit(lambda x: (jax.debug.inspect_array_sharding(x, callback=seen.append), x)[1])
  f(x)
  f(x)   # traced once: one call
  assert seen == [SingleDeviceSharding(jax.devices()[0])]


def test_visualize_sharding(capsys):
  jax.debug.visualize_array_sharding(jnp.ones((4, 2)))
  box = capsys.readouterr().out.splitlines()
  assert box[0] == "\u250c" + "\u2500" * 10 + "\u2510" and len(box) == 12 and box[-1] == ""
  assert box[5] == "\u2502  CPU 0   \u2502"
  jax.debug.visualize_sharding((8,), NamedSharding(jax.make_mesh((1,), ("x",)), P("x")))
  assert capsys.readouterr().out == ("\u250c" + "\u2500" * 7 + "\u2510\n\u2502 CPU 0 \u2502\n"
                                     "\u2514" + "\u2500" * 7 + "\u2518\n\n")
  with pytest.raises(ValueError, match="1 and 2 dimensions"):
    jax.debug.visualize_sharding((2, 2, 2), jnp.ones(2).sharding)
