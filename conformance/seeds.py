"""The code examples of the seed documents, as conformance checks.

Each check runs one example verbatim, with `jax` replaced by `refimpl`
(`import refimpl as jax`, `import refimpl.numpy as jnp`, `from refimpl import
jit, lax, make_jaxpr`), in a fresh namespace, and asserts what the document
says current JAX does: printed output, values and dtypes, raised error classes.
As in a notebook, a final expression's value is kept (`Example.value`).

Examples that need features not built yet are listed in `PENDING` with the
feature they wait for.

Documents: "JAX - The Sharp Bits" (000), an overview of JAX and its caveats
(002), and the JAX Quick Start (004).
"""

import ast
import contextlib
import dataclasses
import io
import itertools
import linecache
import textwrap
import warnings

import numpy as np

import refimpl
from refimpl import errors
from refimpl.lax.special import fused_multiply_add
from conformance.report import Check

__all__ = ['CHECKS', 'PENDING', 'run_example']

SHARP_BITS = "000 Sharp Bits"
OVERVIEW = "002 Overview"
QUICK_START = "004 Quick Start"

PREAMBLE = """\
import numpy as np
import refimpl as jax
import refimpl.numpy as jnp
from refimpl import jit, lax, make_jaxpr
"""

CHECKS = []


def check(source):
  """Registers the decorated function as a check named after it."""
  def register(fn):
    CHECKS.append(Check(fn.__name__, source, fn))
    return fn
  return register


# --- running examples ------------------------------------------------------

@dataclasses.dataclass
class Example:
  out: str         # what the example printed
  ns: dict         # its namespace afterwards
  value: object    # the value of its final expression, if it ends with one


_example_ids = itertools.count()


def run_example(*sources, **names):
  """Runs the `sources` (each dedented, after the preamble) in a fresh namespace.

  `names` are put in the namespace first (fixed data standing in for values
  the example draws from the PRNG). Stdout is captured; exceptions propagate.
  The source is registered with linecache so that tracebacks show its lines.
  """
  source = PREAMBLE + "".join(textwrap.dedent(s) for s in sources)
  filename = f"<seed example {next(_example_ids)}>"
  linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
  tree = ast.parse(source, filename)
  last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
  ns = {"__name__": "__seed_example__", **names}
  value = None
  buffer = io.StringIO()
  with contextlib.redirect_stdout(buffer):
    exec(compile(tree, filename, "exec"), ns)
    if last is not None:
      value = eval(compile(ast.Expression(last.value), filename, "eval"), ns)
  return Example(buffer.getvalue(), ns, value)


def raises(error_class, *sources):
  """Runs `sources`, asserting they raise `error_class`; returns the exception."""
  try:
    run_example(*sources)
  except error_class as err:
    return err
  raise AssertionError(f"expected {error_class.__name__}, nothing was raised")


def assert_printed(out, expected):
  expected = textwrap.dedent(expected)
  assert out == expected, f"printed {out!r}, expected {expected!r}"


def assert_array(x, expected, dtype):
  """`x` is a refimpl Array equal to `expected` (NaNs equal) with dtype `dtype`."""
  assert isinstance(x, refimpl.Array), f"expected an Array, got {type(x).__name__}"
  assert x.dtype == np.dtype(dtype), f"dtype {x.dtype}, expected {np.dtype(dtype)}"
  expected = np.asarray(expected, dtype=dtype)
  assert x.shape == expected.shape, f"shape {x.shape}, expected {expected.shape}"
  assert np.array_equal(np.asarray(x), expected, equal_nan=x.dtype.kind in "fc"), \
      f"value {np.asarray(x)!r}, expected {expected!r}"


# --- 000 Sharp Bits: pure functions ----------------------------------------

@check(f"{SHARP_BITS} / Pure functions")
def impure_print_side_effect():
  """The trace prints; cached calls don't; a new shape/dtype retraces."""
  ex = run_example("""
      def impure_print_side_effect(x):
        print("Executing function")  # This is a side-effect
        return x

      # The side-effects appear during the first run
      print ("First call: ", jit(impure_print_side_effect)(4.))

      # Subsequent runs with parameters of same type and shape may not show the side-effect
      # This is because JAX now invokes a cached compilation of the function
      print ("Second call: ", jit(impure_print_side_effect)(5.))

      # JAX re-runs the Python function when the type or shape of the argument changes
      print ("Third call, different type: ", jit(impure_print_side_effect)(jnp.array([5.])))
      """)
  assert_printed(ex.out, """\
      Executing function
      First call:  4.0
      Second call:  5.0
      Executing function
      Third call, different type:  [5.]
      """)


@check(f"{SHARP_BITS} / Pure functions; {OVERVIEW} / caveats")
def impure_uses_globals():
  """A global is read at trace time; cached calls keep the old value."""
  ex = run_example("""
      g = 0.
      def impure_uses_globals(x):
        return x + g

      # JAX captures the value of the global during the first run
      print ("First call: ", jit(impure_uses_globals)(4.))
      g = 10.  # Update the global

      # Subsequent runs may silently use the cached value of the globals
      print ("Second call: ", jit(impure_uses_globals)(5.))

      # JAX re-runs the Python function when the type or shape of the argument changes
      # This will end up reading the latest value of the global
      print ("Third call, different type: ", jit(impure_uses_globals)(jnp.array([4.])))
      """)
  assert_printed(ex.out, """\
      First call:  4.0
      Second call:  5.0
      Third call, different type:  [14.]
      """)


@check(f"{SHARP_BITS} / Pure functions")
def impure_saves_global():
  """A global assigned while tracing holds a tracer afterwards."""
  ex = run_example("""
      g = 0.
      def impure_saves_global(x):
        global g
        g = x
        return x

      # JAX runs once the transformed function with special Traced values for arguments
      print ("First call: ", jit(impure_saves_global)(4.))
      print ("Saved global: ", g)  # Saved global has an internal JAX value
      """)
  first, saved = ex.out.splitlines()
  assert first == "First call:  4.0", first
  assert isinstance(ex.ns["g"], refimpl.core.Tracer), type(ex.ns["g"])
  assert saved.startswith("Saved global:  ") and "Tracer" in saved \
      and "float32[]" in saved, saved


@check(f"{SHARP_BITS} / Pure functions")
def pure_uses_internal_state():
  ex = run_example("""
      def pure_uses_internal_state(x):
        state = dict(even=0, odd=0)
        for i in range(10):
          state['even' if i % 2 == 0 else 'odd'] += x
        return state['even'] + state['odd']

      print(jit(pure_uses_internal_state)(5.))
      """)
  assert_printed(ex.out, "50.0\n")


# --- 000 Sharp Bits: in-place updates --------------------------------------

@check(f"{SHARP_BITS} / In-Place Updates")
def in_place_update_error():
  """Item assignment on an Array is a TypeError pointing to `.at`."""
  err = raises(TypeError, """
      jax_array = jnp.zeros((3,3), dtype=jnp.float32)

      # In place update of JAX's array will yield an error!
      jax_array[1, :] = 1.0
      """)
  assert "does not support item assignment" in str(err), str(err)
  assert ".at[" in str(err), str(err)


@check(f"{OVERVIEW} / caveats")
def in_place_update_error_message():
  ex = run_example("""
      # JAX Device array 선언
      jax_array = jnp.zeros((3,3), dtype=jnp.float32)
      try:
        jax_array[1, :] = 1.0 # In-Place Update는 오류를 발생시킴
        # jax_array.at[1, :].set(1.0) 을 사용해야함
      except Exception as e:
        print("Exception {}".format(e))
      """)
  assert ex.out.startswith("Exception '"), ex.out
  assert "object does not support item assignment. JAX arrays are immutable." in ex.out, ex.out


@check(f"{SHARP_BITS} / In-Place Updates")
def at_set():
  """`.at[].set` returns an updated copy and leaves the original unchanged."""
  ex = run_example("""
      jax_array = jnp.zeros((3,3), dtype=jnp.float32)
      updated_array = jax_array.at[1, :].set(1.0)
      print("updated array:\\n", updated_array)
      print("original array unchanged:\\n", jax_array)
      """)
  assert_printed(ex.out, """\
      updated array:
       [[0. 0. 0.]
       [1. 1. 1.]
       [0. 0. 0.]]
      original array unchanged:
       [[0. 0. 0.]
       [0. 0. 0.]
       [0. 0. 0.]]
      """)
  assert_array(ex.ns["updated_array"], [[0, 0, 0], [1, 1, 1], [0, 0, 0]], np.float32)


@check(f"{SHARP_BITS} / In-Place Updates")
def at_add():
  ex = run_example("""
      print("original array:")
      jax_array = jnp.ones((5, 6))
      print(jax_array)

      new_jax_array = jax_array.at[::2, 3:].add(7.)
      print("new array post-addition:")
      print(new_jax_array)
      """)
  expected = np.ones((5, 6), np.float32)
  expected[::2, 3:] += 7
  assert_array(ex.ns["new_jax_array"], expected, np.float32)
  assert_printed(ex.out, f"original array:\n{np.ones((5, 6), np.float32)}\n"
                 f"new array post-addition:\n{expected}\n")


# --- 000 Sharp Bits: out-of-bounds indexing --------------------------------

@check(f"{SHARP_BITS} / Out-of-Bound Indexing")
def out_of_bounds_index_clamps():
  """Retrieval clamps the index into bounds: the last element."""
  ex = run_example("""
      jnp.arange(10)[11]
      """)
  assert_array(ex.value, 9, np.int32)


# --- 000 Sharp Bits: non-array inputs --------------------------------------

@check(f"{SHARP_BITS} / Non-array inputs; {OVERVIEW} / caveats")
def sum_of_list_error():
  ex = run_example("""
      try:
        jnp.sum([1, 2, 3]) # -> jnp.sum(jnp.array([1,2,3]))
      except TypeError as e:
        print(f"TypeError: {e}")
      """)
  assert_printed(ex.out, "TypeError: sum requires ndarray or scalar arguments, "
                 "got <class 'list'> at position 0.\n")


@check(f"{SHARP_BITS} / Non-array inputs")
def permissive_sum():
  ex = run_example("""
      def permissive_sum(x):
        return jnp.sum(jnp.array(x))

      x = list(range(10))
      permissive_sum(x)
      """)
  assert_array(ex.value, 45, np.int32)


@check(f"{SHARP_BITS} / Non-array inputs")
def permissive_sum_jaxpr():
  """Each list element becomes its own input of the jaxpr."""
  ex = run_example("""
      def permissive_sum(x):
        return jnp.sum(jnp.array(x))

      x = list(range(10))
      make_jaxpr(permissive_sum)(x)
      """)
  jaxpr = ex.value.jaxpr
  assert [str(a) for a in jaxpr.in_avals] == ["~int32[]"] * 10, jaxpr.in_avals
  assert [str(a) for a in jaxpr.out_avals] == ["int32[]"], jaxpr.out_avals
  text = str(ex.value)
  assert text.startswith("{ lambda ; a:i32[] b:i32[] c:i32[] d:i32[] e:i32[] f:i32[] "
                         "g:i32[] h:i32[] i:i32[]"), text
  last = jaxpr.eqns[-1]
  assert last.primitive.name == "reduce_sum" and last.params["axes"] == (0,), text


@check(f"{SHARP_BITS} / Non-array inputs")
def sum_of_explicit_array():
  ex = run_example("""
      x = list(range(10))
      jnp.sum(jnp.array(x))
      """)
  assert_array(ex.value, 45, np.int32)


# --- 000 Sharp Bits: control flow under jit --------------------------------

@check(f"{SHARP_BITS} / Control Flow")
def jit_python_loop():
  """A Python loop over a static range unrolls under jit."""
  ex = run_example("""
      @jit
      def f(x):
        for i in range(3):
          x = 2 * x
        return x

      print(f(3))
      """)
  assert_printed(ex.out, "24\n")


@check(f"{SHARP_BITS} / Control Flow")
def jit_loop_over_shape():
  """Shapes are static under jit, so a loop over `x.shape[0]` works."""
  ex = run_example("""
      @jit
      def g(x):
        y = 0.
        for i in range(x.shape[0]):
          y = y + x[i]
        return y

      print(g(jnp.array([1., 2., 3.])))
      """)
  assert_printed(ex.out, "6.0\n")


@check(f"{SHARP_BITS} / Control Flow")
def jit_if_on_traced_value():
  """`if` on a traced value raises TracerBoolConversionError."""
  err = raises(errors.TracerBoolConversionError, """
      @jit
      def f(x):
        if x < 3:
          return 3. * x ** 2
        else:
          return -4 * x

      # This will fail!
      f(2)
      """)
  assert isinstance(err, errors.ConcretizationTypeError)
  assert isinstance(err, TypeError)


@check(f"{SHARP_BITS} / Control Flow")
def static_argnums_if():
  ex = run_example("""
      def f(x):
        if x < 3:
          return 3. * x ** 2
        else:
          return -4 * x

      f = jit(f, static_argnums=(0,))

      print(f(2.))
      """)
  assert_printed(ex.out, "12.0\n")


@check(f"{SHARP_BITS} / Control Flow")
def static_argnums_loop():
  ex = run_example("""
      def f(x, n):
        y = 0.
        for i in range(n):
          y = y + x[i]
        return y

      f = jit(f, static_argnums=(1,))

      f(jnp.array([2., 3., 4.]), 2)
      """)
  assert_array(ex.value, 5.0, np.float32)


@check(f"{SHARP_BITS} / Control Flow (value-dependent shapes)")
def shape_from_argument_value():
  """A shape from a traced value fails; static_argnums retraces per value."""
  err = raises(TypeError, """
      def example_fun(length, val):
        return jnp.ones((length,)) * val

      bad_example_jit = jit(example_fun)
      # this will fail:
      bad_example_jit(10, 4)
      """)
  assert str(err).startswith("Shapes must be 1D sequences of concrete values of integer "
                             "type, got ("), str(err)
  ex = run_example("""
      def example_fun(length, val):
        return jnp.ones((length,)) * val
      # un-jit'd works fine
      print(example_fun(5, 4))

      # static_argnums tells JAX to recompile on changes at these argument positions:
      good_example_jit = jit(example_fun, static_argnums=(0,))
      # first compile
      print(good_example_jit(10, 4))
      # recompiles
      print(good_example_jit(5, 4))
      """)
  assert_printed(ex.out, f"{np.full(5, 4.0, np.float32)}\n"
                 f"{np.full(10, 4.0, np.float32)}\n{np.full(5, 4.0, np.float32)}\n")


@check(f"{SHARP_BITS} / Control Flow (printing under jit)")
def print_inside_jit():
  """`print` inside jit runs once, while tracing, and shows tracers."""
  ex = run_example("""
      @jit
      def f(x):
        print(x)
        y = 2 * x
        print(y)
        return y
      f(2)
      """)
  assert_array(ex.value, 4, np.int32)
  lines = ex.out.splitlines()
  assert len(lines) == 2 and all("Tracer" in l and "int32[]" in l for l in lines), ex.out
  again = io.StringIO()
  with contextlib.redirect_stdout(again):
    assert int(ex.ns["f"](3)) == 6
  assert again.getvalue() == "", again.getvalue()


# --- 000 Sharp Bits: dynamic shapes -----------------------------------------

NANSUM = """
    def nansum(x):
      mask = ~jnp.isnan(x)  # boolean mask selecting non-nan values
      x_without_nans = x[mask]
      return x_without_nans.sum()

    x = jnp.array([1, 2, jnp.nan, 3, 4])
    """


@check(f"{SHARP_BITS} / Dynamic Shapes")
def nansum_boolean_mask():
  """Boolean-mask indexing works outside jit."""
  ex = run_example(NANSUM, "print(nansum(x))")
  assert_printed(ex.out, "10.0\n")


@check(f"{SHARP_BITS} / Dynamic Shapes")
def nansum_boolean_mask_jit():
  """Under jit the mask is traced: NonConcreteBooleanIndexError."""
  raises(errors.NonConcreteBooleanIndexError, NANSUM, "jax.jit(nansum)(x)")


@check(f"{SHARP_BITS} / Dynamic Shapes")
def nansum_with_where():
  ex = run_example(NANSUM, """
      @jax.jit
      def nansum_2(x):
        mask = ~jnp.isnan(x)  # boolean mask selecting non-nan values
        return jnp.where(mask, x, 0).sum()

      print(nansum_2(x))
      """)
  assert_printed(ex.out, "10.0\n")
  assert_array(ex.ns["x"], [1, 2, np.nan, 3, 4], np.float32)


# --- 000 Sharp Bits: NaNs ----------------------------------------------------

@check(f"{SHARP_BITS} / NaNs")
def debug_nans_eager():
  """With jax_debug_nans, an operation producing a NaN raises FloatingPointError."""
  try:
    err = raises(FloatingPointError, """
        from refimpl.config import config
        config.update("jax_debug_nans", True)

        jnp.divide(0., 0.)
        """)
  finally:
    refimpl.config.update("jax_debug_nans", False)
  assert "nan" in str(err).lower(), str(err)
  assert np.isnan(run_example("jnp.divide(0., 0.)").value)  # no check when off


@check(f"{SHARP_BITS} / NaNs")
def debug_nans_jit():
  """A NaN from a jitted function re-runs it op by op, naming the `div`."""
  with refimpl.debug_nans(True):
    err = raises(FloatingPointError, """
        @jit
        def f(x, y):
            a = x * y
            b = (x + y) / (x - y)
            c = a + 2
            return a + b * c

        x = jnp.array([2., 0.])
        y = jnp.array([3., 0.])
        f(x, y)
        """)
  assert "div" in str(err), str(err)


# --- 000 Sharp Bits: double precision ----------------------------------------

@check(f"{SHARP_BITS} / Double (64bit) precision")
def x64_disabled_truncates():
  """Without x64 a requested float64 warns and becomes float32."""
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    ex = run_example("jnp.array(1., dtype=jnp.float64)")
  assert_array(ex.value, 1.0, np.float32)
  assert any("truncated to dtype float32" in str(w.message) for w in caught), \
      [str(w.message) for w in caught]


@check(f"{SHARP_BITS} / Double (64bit) precision")
def x64_enabled():
  """`config.update("jax_enable_x64", True)` (or `enable_x64()`) gives float64."""
  try:
    ex = run_example("""
        # again, this only works on startup!
        from refimpl.config import config
        config.update("jax_enable_x64", True)
        jnp.array(1., dtype=jnp.float64)
        """)
  finally:
    refimpl.config.update("jax_enable_x64", False)
  assert_array(ex.value, 1.0, np.float64)
  with refimpl.enable_x64():
    assert _jnp_array_float64().dtype == np.float64
  assert _jnp_array_float64().dtype == np.float32


def _jnp_array_float64():
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    return refimpl.numpy.array(1., dtype=np.float64)


@check(f"{SHARP_BITS} / Out-of-Bound Indexing")
def nanargmin_all_nan_slice():
  """The text's consequence of clamping: an all-NaN slice gives -1 (NumPy raises)."""
  ex = run_example("""
      x = jnp.array([[jnp.nan, jnp.nan], [1.0, jnp.nan]])
      """)
  x = ex.ns["x"]
  assert_array(refimpl.numpy.nanargmin(x, axis=1), [-1, 0], np.int32)
  assert_array(refimpl.numpy.nanargmax(x, axis=1), [-1, 0], np.int32)


# --- 000 Sharp Bits: divergences from NumPy ---------------------------------

@check(f"{SHARP_BITS} / Miscellaneous Divergences from NumPy")
def unsafe_cast_saturates():
  """Float to int casts saturate (NumPy wraps: [254, 255, 0, 1])."""
  ex = run_example("jnp.arange(254.0, 258.0).astype('uint8')")
  assert_array(ex.value, [254, 255, 255, 255], np.uint8)


# --- 004 Quick Start ---------------------------------------------------------

SELU = """
    def selu(x, alpha = 1.67, lmbda=1.05):
    	return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)
    """

def _selu_float32(x):
  """The expected values: the same formula in float32 NumPy."""
  alpha, lmbda = np.float32(1.67), np.float32(1.05)
  with np.errstate(over="ignore"):
    return lmbda * np.where(x > 0, x, alpha * np.exp(x) - alpha)


@check(f"{QUICK_START} / JAX NumPy")
def selu():
  ex = run_example(SELU, """
      x = jnp.arange(5.0)
      print(selu(x))
      """)
  assert_printed(ex.out, "[0.        1.05      2.1       3.1499999 4.2      ]\n")
  assert_array(ex.ns["selu"](ex.ns["x"]), _selu_float32(np.arange(5.0, dtype=np.float32)),
               np.float32)


@check(f"{QUICK_START} / JIT")
def selu_jit():
  """A typed key's million normals (mean ~0, std ~1); `jit(selu)` computes
  what `selu` does on them but with `alpha * exp(x) - alpha` rounded once,
  as XLA's compiled programs fuse a multiply-add (docs/jaxpr.md). On a
  backend other than the reference, within what an ulp of float32 exp
  (docs/backends.md, the numba backend's tolerances) and the final
  rounding allow."""
  ex = run_example(SELU, """
      from refimpl import random

      key = random.key(1701)
      x = random.normal(key, (1_000_000,))
      selu(x).block_until_ready()

      from refimpl import jit

      selu_jit = jit(selu)
      _ = selu_jit(x) # 첫 실행시 컴파일도 됨!
      selu_jit(x).block_until_ready()
      """)
  x = np.asarray(ex.ns["x"])
  assert x.shape == (1_000_000,) and x.dtype == np.float32
  assert abs(x.mean()) < 0.01 and abs(x.std() - 1) < 0.01, (x.mean(), x.std())
  np.testing.assert_allclose(np.asarray(ex.value), _selu_float32(x), rtol=1e-6, atol=1e-6)
  alpha, lmbda = np.float32(1.67), np.float32(1.05)
  exp = np.asarray(refimpl.numpy.exp(x))
  fused = fused_multiply_add(np.full_like(x, alpha), exp, np.full_like(x, -alpha))
  expected = lmbda * np.where(x > 0, x, fused)
  if refimpl.config.backend == "reference":
    assert_array(ex.value, expected, np.float32)
  else:   # a backend's float32 exp may lie within an ulp of the reference's (docs/backends.md)
    bound = (lmbda * (alpha * np.spacing(exp) + np.spacing(np.abs(fused)))
             + np.spacing(np.abs(expected)))   # (the ulp, then each side's two roundings)
    assert np.asarray(ex.value).dtype == np.float32
    assert np.all(np.abs(np.asarray(ex.value) - expected) <= np.where(x > 0, 0, bound))


@check(f"{QUICK_START} / Auto-vectorization")
def manually_batched_apply_matrix():
  """Stacking per-example products equals one batched `jnp.dot` (atol=rtol=1e-4)."""
  ex = run_example("""
      from refimpl import random

      key = random.key(1701)
      key1, key2 = random.split(key)
      mat = random.normal(key1, (150, 100)) # 150 x 100
      batched_x = random.normal(key2, (10, 100)) # 길이 100인 벡터 10개

      def apply_matrix(x): # (150 x 100) x (100 x 1) 계산
            return jnp.dot(mat, x)

      def naively_batched_apply_matrix(v_batched):
          return jnp.stack([apply_matrix(v) for v in v_batched])

      naively_batched_apply_matrix(batched_x).block_until_ready()

      import numpy as np

      @jit
      def batched_apply_matrix(batched_x): # (10 x 100) x (100 x 150) 계산
          return jnp.dot(batched_x, mat.T)

      np.testing.assert_allclose(naively_batched_apply_matrix(batched_x),
                                 batched_apply_matrix(batched_x), atol=1E-4, rtol=1E-4)
      batched_apply_matrix(batched_x).block_until_ready()
      """)
  assert isinstance(ex.value, refimpl.Array) and ex.value.dtype == np.float32, repr(ex.value)
  assert ex.value.shape == (10, 150), ex.value.shape
  mat, batched_x = np.asarray(ex.ns["mat"]), np.asarray(ex.ns["batched_x"])
  np.testing.assert_allclose(np.asarray(ex.value), batched_x @ mat.T, atol=1e-4, rtol=1e-4)


@check(f"{QUICK_START} / Auto-vectorization")
def vmap_batched_apply_matrix():
  """`vmap(apply_matrix)` under `jit` equals the naive stack (atol=rtol=1e-4)."""
  ex = run_example("""
      from refimpl import random

      key = random.key(1701)
      key1, key2 = random.split(key)
      mat = random.normal(key1, (150, 100)) # 150 x 100
      batched_x = random.normal(key2, (10, 100)) # 길이 100인 벡터 10개

      def apply_matrix(x): # (150 x 100) x (100 x 1) 계산
            return jnp.dot(mat, x)

      def naively_batched_apply_matrix(v_batched):
          return jnp.stack([apply_matrix(v) for v in v_batched])

      import numpy as np
      from refimpl import vmap

      @jit
      def vmap_batched_apply_matrix(batched_x):
          return vmap(apply_matrix)(batched_x)

      np.testing.assert_allclose(naively_batched_apply_matrix(batched_x),
                                 vmap_batched_apply_matrix(batched_x), atol=1E-4, rtol=1E-4)
      vmap_batched_apply_matrix(batched_x).block_until_ready()
      """)
  assert isinstance(ex.value, refimpl.Array) and ex.value.dtype == np.float32, repr(ex.value)
  assert ex.value.shape == (10, 150), ex.value.shape
  mat, batched_x = np.asarray(ex.ns["mat"]), np.asarray(ex.ns["batched_x"])
  np.testing.assert_allclose(np.asarray(ex.value), batched_x @ mat.T, atol=1e-4, rtol=1e-4)


# --- autodiff: 000 Sharp Bits (control flow) and 004 Quick Start (derivatives) -

@check(f"{SHARP_BITS} / Control Flow")
def grad_python_control_flow():
  """grad works through Python control flow on concrete values: 12.0 and -4.0."""
  ex = run_example("""
      from refimpl import grad

      def f(x):
        if x < 3:
          return 3. * x ** 2
        else:
          return -4 * x

      print(grad(f)(2.))  # ok!
      print(grad(f)(4.))  # ok!
      """)
  assert_printed(ex.out, "12.0\n-4.0\n")


SUM_LOGISTIC = """
    from refimpl import grad

    def sum_logistic(x):
        return jnp.sum(1.0 / (1.0 + jnp.exp(-x)))

    x_small = jnp.arange(3.)
    """


@check(f"{QUICK_START} / Derivatives")
def grad_sum_logistic():
  """grad(sum_logistic)(arange(3.)) prints [0.25 0.19661197 0.10499357]."""
  ex = run_example(SUM_LOGISTIC, """
      derivative_fn = grad(sum_logistic)
      print(derivative_fn(x_small))
      """)
  assert_printed(ex.out, "[0.25       0.19661197 0.10499357]\n")


@check(f"{QUICK_START} / Derivatives")
def grad_jit_grad_jit_grad():
  """The third derivative through nested jit: -0.0353256."""
  ex = run_example(SUM_LOGISTIC, """
      grad(jit(grad(jit(grad(sum_logistic)))))(1.0)
      """)
  # JAX prints -0.0353256; float32 rounding differs in the last bits here.
  np.testing.assert_allclose(float(ex.value), -0.0353256, rtol=2e-6)


@check(f"{QUICK_START} / Derivatives")
def jacobian_exp():
  """jacobian(jnp.exp) at [0, 1, 2] is diag(1, 2.7182817, 7.389056)."""
  ex = run_example("""
      from refimpl import jacobian
      x = np.array([0, 1.0, 2.0])
      J = jacobian(jnp.exp)(x)
      print("JAX Jacobian:\\n", J)
      """)
  assert_printed(ex.out, "JAX Jacobian:\n [[1.        0.        0.       ]\n"
                 " [0.        2.7182817 0.       ]\n [0.        0.        7.389056 ]]\n")


@check(f"{QUICK_START} / Derivatives")
def hessian_jacfwd_jacrev():
  """jit(jacfwd(jacrev(sum_logistic))) at arange(3.) prints JAX's Hessian."""
  ex = run_example(SUM_LOGISTIC, """
      from refimpl import jacfwd, jacrev
      def hessian(fun):
          return jit(jacfwd(jacrev(fun)))

      print(hessian(sum_logistic)(x_small))
      """)
  assert_printed(ex.out, "[[-0.         -0.         -0.        ]\n"
                 " [-0.         -0.09085776 -0.        ]\n"
                 " [-0.         -0.         -0.07996249]]\n")


@check(f"{SHARP_BITS} / Structured control flow")
def lax_while_loop():
  """while_loop counting from 0 while x < 10 gives 10 (int32)."""
  ex = run_example("""
      init_val = 0
      cond_fun = lambda x: x<10
      body_fun = lambda x: x+1
      lax.while_loop(cond_fun, body_fun, init_val)
      """)
  assert_array(ex.value, 10, np.int32)


@check(f"{SHARP_BITS} / Structured control flow")
def lax_cond():
  """lax.cond with True / False on [0.] gives [1.] / [-1.] (float32)."""
  ex = run_example("""
      operand = jnp.array([0.])
      true_result = lax.cond(True, lambda x: x+1, lambda x: x-1, operand)
      lax.cond(False, lambda x: x+1, lambda x: x-1, operand)
      """)
  assert_array(ex.ns["true_result"], [1.], np.float32)
  assert_array(ex.value, [-1.], np.float32)


@check(f"{SHARP_BITS} / Pure functions")
def cond_iterator_operand():
  """cond on an array operand gives [1.]; an iterator is not a valid operand
  (TypeError: it is not a JAX type), as the document's commented line says."""
  ex = run_example("""
      array_operand = jnp.array([0.])
      lax.cond(True, lambda x: x+1, lambda x: x-1, array_operand)
      """)
  assert_array(ex.value, [1.], np.float32)
  err = raises(TypeError, """
      iter_operand = iter(range(10))
      lax.cond(True, lambda x: next(x)+1, lambda x: next(x)-1, iter_operand)
      """)
  assert "is not a valid JAX type" in str(err), str(err)


@check(f"{SHARP_BITS} / Pure functions; {OVERVIEW}")
def fori_loop_array_and_iterator():
  """fori_loop summing array[i] prints 45; with an iterator the body is traced
  once (next() gives 0 at trace time), so it prints 0, as the document says."""
  ex = run_example("""
      array = jnp.arange(10)
      print(lax.fori_loop(0, 10, lambda i,x: x+array[i], 0)) # expected result 45
      iterator = iter(range(10))
      print(lax.fori_loop(0, 10, lambda i,x: x+next(iterator), 0)) # unexpected result 0
      """)
  assert_printed(ex.out, "45\n0\n")


FUNC11_JAXPR = """\
{ lambda ; a:i32[16] b:f32[]. let
    c:f32[16] = broadcast_in_dim[broadcast_dimensions=() shape=(16,)] 1.0:f32[]
    d:f32[] e:f32[16] = scan[
      _split_transpose=False
      jaxpr={ lambda ; f:f32[] g:f32[] h:i32[] i:f32[]. let
          j:f32[] = convert_element_type[new_dtype=float32 weak_type=False] h
          k:f32[] = mul j i
          l:f32[] = convert_element_type[new_dtype=float32 weak_type=False] g
          m:f32[] = add l k
          n:f32[] = convert_element_type[new_dtype=float32 weak_type=False] f
          o:f32[] = add m n
        in (o, g) }
      length=16
      linear=(False, False, False, False)
      num_carry=1
      num_consts=1
      reverse=False
      unroll=1
    ] b 0.0:f32[] a c
  in (d, e) }"""
"""JAX's printout of `make_jaxpr(func11)(jnp.arange(16), 5.)` (refimpl prints
literals with their type and omits the sharding param of broadcast_in_dim,
as current JAX prints them)."""


@check(f"{SHARP_BITS} / Pure functions")
def scan_func11_jaxpr():
  """make_jaxpr(func11) is one scan: `extra` (b) a const, the 0. init a
  literal carry, (arr, ones) the xs; its body is JAX's. The iterator version
  raises TypeError (an iterator is not a JAX type), as the comment says."""
  func11 = """
      def func11(arr, extra):
          ones = jnp.ones(arr.shape)
          def body(carry, aelems):
              ae1, ae2 = aelems
              return (carry + ae1 * ae2 + extra, carry)
          return lax.scan(body, 0., (arr, ones))
      """
  ex = run_example(func11, "make_jaxpr(func11)(jnp.arange(16), 5.)\n")
  assert str(ex.value) == FUNC11_JAXPR, str(ex.value)
  raises(TypeError, func11, "make_jaxpr(func11)(iter(range(16)), 5.)\n")


@check(f"{SHARP_BITS} / Structured control flow")
def lax_fori_loop():
  """fori_loop(0, 10, lambda i,x: x+i, 0) gives 45 (int32)."""
  ex = run_example("""
      init_val = 0
      start = 0
      stop = 10
      body_fun = lambda i,x: x+i
      lax.fori_loop(start, stop, body_fun, init_val)
      """)
  assert_array(ex.value, 45, np.int32)


# --- 000 Sharp Bits: random numbers -------------------------------------------

@check(f"{SHARP_BITS} / Random Numbers")
def prng_key_reuse():
  """A key is two uint32 ([0 0] for seed 0); the same key gives the same
  numbers and is not changed by use."""
  ex = run_example("""
      from refimpl import random
      key = random.PRNGKey(0)
      key
      """)
  assert_array(ex.value, [0, 0], np.uint32)
  ex = run_example("""
      from refimpl import random
      key = random.PRNGKey(0)
      print(random.normal(key, shape=(1,)))
      print(key)
      # No no no!
      print(random.normal(key, shape=(1,)))
      print(key)
      """)
  lines = ex.out.splitlines()
  assert len(lines) == 4 and lines[0] == lines[2] and lines[0].startswith("["), lines
  assert lines[1] == lines[3] == "[0 0]", lines


@check(f"{SHARP_BITS} / Random Numbers")
def prng_split():
  """split gives JAX's keys (partitionable threefry); normal of a subkey is
  float32[1]; split(key, 4) gives 4 keys whose normals differ. (The
  document's invalid escapes `"\\-"` are written `"\\\\-"`: the same output.)"""
  ex = run_example(r"""
      from refimpl import random
      key = random.PRNGKey(0)
      print("old key", key)
      key, subkey = random.split(key)
      normal_pseudorandom = random.normal(subkey, shape=(1,))
      print("    \\---SPLIT --> new key   ", key)
      print("             \\--> new subkey", subkey, "--> normal", normal_pseudorandom)
      key, *subkeys = random.split(key, 4)
      for subkey in subkeys:
        print(random.normal(subkey, shape=(1,)))
      """)
  lines = ex.out.splitlines()
  assert lines[0] == "old key [0 0]", lines
  assert lines[1] == "    \\---SPLIT --> new key    [1797259609 2579123966]", lines
  assert lines[2].startswith(
      "             \\--> new subkey [ 928981903 3453687069] --> normal ["), lines
  assert ex.ns["normal_pseudorandom"].dtype == np.float32
  assert len(lines) == 6 and len(set(lines[3:])) == 3, lines


@check(f"{SHARP_BITS} / Double (64bit) precision")
def x64_random_uniform():
  """uniform(dtype=jnp.float64) warns and gives float32 without x64, float64 with."""
  source = "x = random.uniform(random.PRNGKey(0), (1000,), dtype=jnp.float64)\nx.dtype\n"
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    ex = run_example("from refimpl import random\n", source)
  assert ex.value == np.float32, ex.value
  assert any("truncated to dtype float32" in str(w.message) for w in caught)
  with refimpl.enable_x64():
    ex = run_example("from refimpl import random\n", source)
  assert ex.value == np.float64, ex.value
  x = np.asarray(ex.ns["x"])
  assert x.shape == (1000,) and 0 <= x.min() and x.max() < 1


# --- pending -----------------------------------------------------------------

PENDING = [
]
