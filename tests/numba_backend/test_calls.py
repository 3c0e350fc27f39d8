"""The numba backend inlines call primitives (jit, checkpoint, custom_jvp,
custom_vjp, custom_vmap: any primitive with `call_jaxpr_param`), passing
their consts at run time, and lowers the primitives transformations leave
in programs (name, stop_gradient, add_any, custom_linear_solve,
random_clone); custom_lin raises as the reference does. Loops fuse
across inlined calls, and equations whose results nothing reads get no
loop. Results are compared with the reference bit for bit on
hypothesis-generated inputs."""

import numpy as np
import pytest
from hypothesis import given, settings

import refimpl as jax
from refimpl import ad_checkpoint, lax, random
import refimpl.numpy as jnp
from refimpl.custom_batching import custom_vmap
from refimpl.lax.control_flow.solves import custom_linear_solve
from conformance import strategies as cst

pytest.importorskip("numba")

SETTINGS = settings(max_examples=15, deadline=None)


def assert_same(reference, backend):
  for r, b in zip(reference, backend):
    r, b = np.asarray(r), np.asarray(b)
    assert (r.dtype, r.shape) == (b.dtype, b.shape)
    np.testing.assert_array_equal(b, r)
    np.testing.assert_array_equal(np.signbit(b), np.signbit(r))


def check(program, *args):
  assert_same(jax.jit(program)(*args), jax.jit(program, backend="numba")(*args))


@jax.custom_jvp
def cube(x):
  return x * x * x


cube.defjvp(lambda primals, tangents: (cube(primals[0]), 3.0 * primals[0] * tangents[0]))


@jax.custom_vjp
def double(x):
  return x + x


double.defvjp(lambda x: (double(x), None), lambda _, g: (g + g,))


@custom_vmap
def twice(x):
  return x * 2.0


twice.def_vmap(lambda size, in_batched, x: (x * 2.0, in_batched[0]))


CONST = np.array([1.5, -0.0, np.inf], np.float32)


def calls(x, y):
  inner = jax.jit(lambda a, b: (a * b + CONST[0], a - b))
  p, q = inner(x, y)
  r = jax.jit(lambda a: a * 3.0)(p)
  c = jax.checkpoint(lambda a: a * a + a)(x)
  named = ad_checkpoint.checkpoint_name(x * y, "xy")
  stopped = lax.stop_gradient(x * 2.0)
  solved = custom_linear_solve(lambda v: v * 4.0, y, lambda mv, b: b / 4.0)
  return p, q, r, c, named, stopped, cube(x), double(y), twice(x), solved


@SETTINGS
@given(inputs=cst.same_shape_arrays(dtype_list=[np.float32]))
def test_calls_agree(inputs):
  check(calls, *inputs[0])


def test_sub_jaxpr_consts_passed_at_run_time():
  """A call whose ClosedJaxpr has consts (an array an inner function closes
  over) reads them from the program's arguments."""
  def f(x):
    return jax.jit(lambda a: a * jnp.asarray(CONST))(x)

  x = np.array([2.0, 3.0, -1.0], np.float32)
  (eqn,) = jax.make_jaxpr(f)(x).jaxpr.eqns
  assert eqn.params["jaxpr"].consts
  check(f, x)


@SETTINGS
@given(inputs=cst.same_shape_arrays(dtype_list=[np.float32]))
def test_differentiated_programs_agree(inputs):
  """add_any, custom_jvp/custom_vjp calls and checkpoints in derivative programs."""
  (x, y), _ = inputs
  check(lambda a, t: jax.jvp(lambda v: cube(v) + jax.checkpoint(lambda w: w * v)(v), (a,), (t,)),
        x, y)
  check(lambda a, t: jax.vjp(lambda v: double(v) * v + cube(v), a)[1](t), x, y)


def test_random_clone_is_the_identity():
  check(lambda k: random.key_data(random.clone(random.wrap_key_data(k))),
        np.array([3, 4], np.uint32))


def test_custom_lin_raises_as_the_reference():
  _, linear = jax.linearize(double, np.float32(1.0))
  with pytest.raises(TypeError, match="forward-mode"):
    linear(np.float32(1.0))
  with pytest.raises(TypeError, match="forward-mode"):
    jax.jit(lambda t: jax.jvp(double, (np.float32(1.0),), (t,)), backend="numba")(np.float32(1.0))


def test_loops_fuse_across_calls():
  """selu, a jit of a jit of elementwise work, becomes one loop storing one
  array: the calls are inlined before loops form."""
  from numba_backend.lower import lower_program
  closed = jax.make_jaxpr(jax.jit(jax.nn.selu))(np.ones(8, np.float32))
  source, _, _ = lower_program(closed.jaxpr)
  assert source.count("np.empty(") == 1, source
  check(lambda x: [jax.nn.selu(x)], np.linspace(-3, 3, 8, dtype=np.float32))


def test_equations_nothing_reads():
  """A jaxpr as make_jaxpr leaves it, with elementwise equations (a broadcast
  alone, a product) whose results nothing reads: no loop for them."""
  from numba_backend.backend import compile as compile_program

  def f(x):
    jnp.full(x.shape, 1.0)
    return x.sum()

  x = np.arange(3.0, dtype=np.float32)
  for program in (f, lambda x: (x * 2.0, f(x))[1]):
    closed = jax.make_jaxpr(program)(x)
    assert any(e.primitive.name == "broadcast_in_dim" for e in closed.jaxpr.eqns)
    assert_same([program(x)], compile_program(closed)(x))


def test_results_own_their_data():
  """A result that is an argument, a view of one or a const is a copy: writing
  the NumPy arguments afterwards leaves it as it was. Every result is
  read-only, new ones too."""
  const = np.arange(4.0, dtype=np.float32)
  f = jax.jit(lambda x: (x, x.reshape(2, 3), x[1:], jnp.asarray(const), x * 2.0),
              backend="numba")
  x = np.arange(6.0, dtype=np.float32)
  results = f(x)
  before = [np.array(r) for r in results]
  x[:] = -1.0
  const[:] = -1.0
  for r, b in zip(results, before):
    np.testing.assert_array_equal(np.asarray(r), b)
    assert not np.asarray(r).flags.writeable
