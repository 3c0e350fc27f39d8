"""Python ints out of range, results too large to allocate, and promotion details.

`CASES` records JAX 0.10's behaviour (CPU, x64 off unless a row says so) as
data: an expression (a function of array arguments, the Python ints inside
it) and what JAX gives, a value with its dtype or an error class with a
fragment of its message. Each row runs eagerly, and under `jit` and `vmap`
where the row says so. `REFIMPL_CHOICES` are rows where refimpl's error is
its own choice: JAX wraps, runs for minutes, or fails in XLA with another
text (docs/out_of_bounds.md, docs/errors.md say why).

The rules behind the rows: a Python int takes the default integer dtype
(int32, int64 with x64) wherever it enters as a value, and must fit it
(`OverflowError: Python int N too large to convert to int32`); a value in
range that meets a narrower array converts as any weak value does (wraps);
explicit casts (`lax.convert_element_type`, `jnp.array(n, dtype)`) follow
NumPy (wrap, or NumPy's own OverflowError).
"""

from functools import partial
import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import dtypes, jit, lax
from refimpl.errors import JaxRuntimeError
from conformance.facts import Fact, Raises, Value, check

I32_MIN, I32_MAX = -2**31, 2**31 - 1
I64_MIN, I64_MAX = -2**63, 2**63 - 1


# The rows of this table also run under vmap unless they say otherwise.
Case = partial(Fact, vmap=True)


def _too_large(n, dtype="int32"):
  return Raises(OverflowError, f"Python int {n} too large to convert to {dtype}")


_x3 = (np.arange(3, dtype=np.int32),)
_f3 = (np.arange(3, dtype=np.float32),)

CASES = [
    # A Python int operand of a jnp function must fit int32 (x64 off).
    Case("add_2**31", lambda x: x + 2**31, _x3, _too_large(2**31)),
    Case("radd_2**40", lambda x: 2**40 + x, _x3, _too_large(2**40)),
    Case("sub_2**31", lambda x: x - 2**31, _x3, _too_large(2**31)),
    Case("mul_2**40", lambda x: x * 2**40, _x3, _too_large(2**40)),
    Case("floordiv_2**40", lambda x: x // 2**40, _x3, _too_large(2**40)),
    # ... except a concrete integer exponent, a static parameter of integer_pow.
    Case("pow_2**40", lambda x: x ** 2**40, _x3, Value([0, 1, 0], "int32")),
    Case("add_below_int32", lambda x: x + (I32_MIN - 1), _x3, _too_large(I32_MIN - 1)),
    Case("add_2**64", lambda x: x + 2**64, _x3, _too_large(2**64)),
    Case("less_2**32", lambda x: x < 2**32, _x3, _too_large(2**32)),
    Case("equal_2**40", lambda x: x == 2**40, _x3, _too_large(2**40)),
    Case("maximum_2**40", lambda x: jnp.maximum(x, 2**40), _x3, _too_large(2**40)),
    Case("where_2**40", lambda x: jnp.where(x > 0, x, 2**40), _x3, _too_large(2**40)),
    Case("clip_2**40", lambda x: jnp.clip(x, 0, 2**40), _x3, _too_large(2**40)),
    Case("float_array_add_2**40", lambda x: x + 2**40, _f3, _too_large(2**40)),
    Case("lax_add_2**40", lambda x: lax.add(x, 2**40), _x3, _too_large(2**40)),
    Case("getitem_2**40", lambda x: x[2**40], _x3, _too_large(2**40)),
    Case("getitem_-2**40", lambda x: x[-2**40], _x3, _too_large(-2**40)),
    Case("at_set_value_2**40", lambda x: x.at[0].set(2**40), _x3, _too_large(2**40)),
    Case("at_set_index_2**40", lambda x: x.at[2**40].set(1), _x3, _too_large(2**40)),
    Case("sum_initial_2**40", lambda x: jnp.sum(x, initial=2**40), _x3, _too_large(2**40)),
    Case("max_initial_2**31", lambda x: jnp.max(x, initial=2**31), _x3, _too_large(2**31)),
    Case("array_2**40", lambda: jnp.array(2**40), (), _too_large(2**40), vmap=False),
    Case("asarray_2**40", lambda: jnp.asarray(2**40), (), _too_large(2**40), vmap=False),
    # Ints at the edges of int32 are fine; the arithmetic then wraps.
    Case("add_int32_max", lambda x: x + I32_MAX, _x3,
         Value([I32_MAX, I32_MIN, I32_MIN + 1], "int32")),
    Case("add_int32_min", lambda x: x + I32_MIN, _x3,
         Value([I32_MIN, I32_MIN + 1, I32_MIN + 2], "int32")),
    Case("getitem_int32_max_clamps", lambda x: x[I32_MAX], _x3, Value(2, "int32")),
    # In range of int32 but not of the array's dtype: the weak int converts (wraps).
    Case("uint8_add_300", lambda x: x + 300, (np.ones(3, np.uint8),), Value([45] * 3, "uint8")),
    Case("int8_add_200", lambda x: x + 200, (np.ones(3, np.int8),), Value([-55] * 3, "int8")),
    Case("int8_add_1000", lambda x: x + 1000, (np.zeros(3, np.int8),), Value([-24] * 3, "int8")),
    Case("uint8_sub_1", lambda x: x - 1, (np.zeros(3, np.uint8),), Value([255] * 3, "uint8")),
    # Floats too large for float32 become inf.
    Case("float_add_2.0**200", lambda x: x + 2.0**200, _f3, Value([np.inf] * 3, "float32")),
    Case("array_1e300", lambda: jnp.array(1e300), (), Value(np.inf, "float32", True), vmap=False),
    # Explicit conversions follow NumPy.
    Case("array_2**40_int32", lambda: jnp.array(2**40, dtype=jnp.int32), (),
         Raises(OverflowError, "Python integer 1099511627776 out of bounds for int32"), vmap=False),
    Case("array_-1_uint8", lambda: jnp.array(-1, dtype=jnp.uint8), (),
         Raises(OverflowError, "Python integer -1 out of bounds for uint8"), vmap=False),
    Case("array_list_2**40", lambda: jnp.array([2**40]), (),
         Raises(OverflowError, "Python integer 1099511627776 out of bounds for int32"), vmap=False),
    Case("convert_2**40_int32_wraps", lambda: lax.convert_element_type(2**40, jnp.int32), (),
         Value(0, "int32"), vmap=False),
    Case("convert_2**100_float32", lambda: lax.convert_element_type(2**100, jnp.float32), (),
         Value(np.float32(2.0**100), "float32"), vmap=False),
    # x64: the range is int64's.
    Case("x64_add_2**40", lambda x: x + 2**40, (np.arange(3, dtype=np.int64),),
         Value([2**40, 2**40 + 1, 2**40 + 2], "int64"), x64=True),
    Case("x64_add_2**63", lambda x: x + 2**63, (np.arange(3, dtype=np.int64),),
         _too_large(2**63, "int64"), x64=True),
    Case("x64_array_2**63", lambda: jnp.array(2**63), (), _too_large(2**63, "int64"),
         vmap=False, x64=True),
    # Results that cannot be allocated fail before any work.
    Case("zeros_2**40", lambda: jnp.zeros((2**40,)), (),
         Raises(JaxRuntimeError, "RESOURCE_EXHAUSTED: Out of memory while trying to "
                                 "allocate 4398046511104 bytes"), vmap=False),
    Case("iota_2**40", lambda: lax.iota(jnp.int32, 2**40), (),
         Raises(JaxRuntimeError, "RESOURCE_EXHAUSTED"), vmap=False),
    Case("arange_2**40", lambda: jnp.arange(2**40), (),
         Raises(JaxRuntimeError, "RESOURCE_EXHAUSTED"), jit=False, vmap=False),
    Case("full_2**40_float32", lambda: jnp.full(2, 2**40, jnp.float32), (),
         Value([2.0**40] * 2, "float32"), vmap=False),
    # Bad shapes.
    Case("zeros_negative", lambda: jnp.zeros((-1,)), (),
         Raises(TypeError, "broadcast_in_dim shape must have every element be nonnegative, "
                           "got (-1,)."), vmap=False),
    Case("iota_negative", lambda: lax.iota(jnp.int32, -1), (),
         Raises(TypeError, "iota shape must have every element be nonnegative"), vmap=False),
    Case("zeros_float_dim", lambda: jnp.zeros((2.0,)), (),
         Raises(TypeError, "Shapes must be 1D sequences of concrete values of integer type"),
         vmap=False),
    Case("zeros_none_dim", lambda: jnp.zeros((None,)), (),
         Raises(TypeError, "Shapes must be 1D sequences of concrete values of integer type"),
         vmap=False),
]

REFIMPL_CHOICES = [
    # JAX's full and full_like convert a Python int fill without checking its range.
    Case("full_2**40", lambda: jnp.full(3, 2**40), (), _too_large(2**40), vmap=False),
    Case("full_300_uint8", lambda: jnp.full(3, 300, jnp.uint8), (),
         _too_large(300, "uint8"), vmap=False),
    Case("full_like_2**40", lambda x: jnp.full_like(x, 2**40), _x3, _too_large(2**40)),
    Case("full_like_-1_uint8", lambda x: jnp.full_like(x, -1, jnp.uint8), _x3,
         _too_large(-1, "uint8")),
    # JAX under jit may fuse the broadcast into the reduction and run 10**12 steps.
    Case("jit_sum_of_zeros_2**40", lambda: jnp.zeros((2**40,)).sum(), (),
         Raises(JaxRuntimeError, "RESOURCE_EXHAUSTED"), vmap=False),
    # XLA rejects such a shape; refimpl names the int64 overflow.
    Case("zeros_int64_overflow", lambda: jnp.zeros((2**32, 2**32)), (),
         Raises(JaxRuntimeError, "overflow int64"), vmap=False),
]


@pytest.mark.parametrize("case", CASES + REFIMPL_CHOICES, ids=lambda c: c.name)
def test_case(case):
  check(case)


def test_a_python_float_too_large_for_float32_is_inf_without_a_warning():
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    out = jnp.ones(3, jnp.float32) + 2.0**200
  np.testing.assert_array_equal(out, np.full(3, np.inf, np.float32))


def test_jit_argument_out_of_range():
  """A Python int passed to jit is an int32 (int64 with x64) argument."""
  with pytest.raises(OverflowError, match="Python int 1099511627776 too large to convert to int32"):
    jit(lambda x: x)(2**40)
  with jax.enable_x64(), pytest.raises(
      OverflowError, match="Python int 18446744073709551616 too large to convert to int64"):
    jit(lambda x: x)(2**64)
  with jax.enable_x64():
    assert jit(lambda x: x)(2**40) == 2**40


def test_traced_but_not_run():
  """Tracing a program with an enormous intermediate is fine: only running it fails."""
  shape = jax.eval_shape(lambda: jnp.zeros((2**40,)).sum())
  assert shape.shape == () and shape.dtype == np.float32
  assert "f32[1099511627776]" in str(jax.make_jaxpr(lambda: jnp.zeros((2**40,)).sum())())


# --- properties --------------------------------------------------------------

_ints = st.one_of(st.integers(I32_MIN, I32_MAX), st.integers(-2**70, 2**70),
                  st.sampled_from([I32_MIN - 1, I32_MAX + 1, 2**32, 2**63, -2**63 - 1]))


def _wrap(values, dtype):
  """Python ints reduced to `dtype` modulo 2**bits (two's complement)."""
  bits = np.iinfo(dtype).bits
  values = [v % 2**bits for v in values]
  if np.issubdtype(dtype, np.signedinteger):
    values = [v - 2**bits if v >= 2**(bits - 1) else v for v in values]
  return np.array(values, dtype)


@given(st.lists(st.integers(I32_MIN, I32_MAX), min_size=1, max_size=4), _ints,
       st.sampled_from(["eager", "jit"]))
def test_int32_plus_python_int(xs, n, mode):
  """Exact (wrapped) sum when `n` fits int32, OverflowError otherwise."""
  x = jnp.asarray(np.array(xs, np.int32))
  add = (lambda a: a + n) if mode == "eager" else jit(lambda a: a + n)
  if I32_MIN <= n <= I32_MAX:
    out = add(x)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(out), _wrap([v + n for v in xs], np.int32))
  else:
    with pytest.raises(OverflowError, match=f"Python int {n} too large to convert to int32"):
      add(x)


@given(st.lists(st.integers(I32_MIN, I32_MAX), min_size=1, max_size=4), _ints,
       st.sampled_from(["less", "equal", "maximum"]))
def test_int32_compared_with_python_int(xs, n, op):
  """Comparisons and max are exact when `n` fits int32 (NumPy on Python
  ints), else OverflowError."""
  x = jnp.asarray(np.array(xs, np.int32))
  fun = getattr(jnp, op)
  if I32_MIN <= n <= I32_MAX:
    want = {"less": [v < n for v in xs], "equal": [v == n for v in xs],
            "maximum": [max(v, n) for v in xs]}[op]
    np.testing.assert_array_equal(np.asarray(fun(x, n)), np.array(want))
  else:
    with pytest.raises(OverflowError, match="too large to convert to int32"):
      fun(x, n)


@given(st.lists(st.floats(-1e6, 1e6, width=32), min_size=1, max_size=4), _ints)
def test_float32_times_python_int(xs, n):
  """The int32 range rule holds for float operands too; in range, the int
  becomes a float32 as NumPy's `np.float32(n)` does."""
  x = np.array(xs, np.float32)
  if I32_MIN <= n <= I32_MAX:
    out = jnp.asarray(x) * n
    assert out.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(out), x * np.float32(n))
  else:
    with pytest.raises(OverflowError, match="too large to convert to int32"):
      jnp.asarray(x) * n


@given(st.lists(st.integers(0, 255), min_size=1, max_size=4), _ints)
def test_uint8_plus_python_int(xs, n):
  """The range rule is int32's even for a uint8 array; in range, the int wraps into uint8."""
  x = np.array(xs, np.uint8)
  if I32_MIN <= n <= I32_MAX:
    out = jnp.asarray(x) + n
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(np.asarray(out), _wrap([v + n for v in xs], np.uint8))
  else:
    with pytest.raises(OverflowError, match="too large to convert to int32"):
      jnp.asarray(x) + n


@given(st.lists(st.integers(I64_MIN, I64_MAX), min_size=1, max_size=4), _ints)
def test_int64_plus_python_int_with_x64(xs, n):
  with jax.enable_x64():
    x = np.array(xs, np.int64)
    if I64_MIN <= n <= I64_MAX:
      np.testing.assert_array_equal(np.asarray(jnp.asarray(x) + n),
                                    _wrap([v + n for v in xs], np.int64))
    else:
      with pytest.raises(OverflowError, match="too large to convert to int64"):
        jnp.asarray(x) + n


@given(_ints)
def test_array_of_python_int(n):
  if I32_MIN <= n <= I32_MAX:
    out = jnp.array(n)
    assert (int(out), out.dtype, out.weak_type) == (n, np.int32, True)
  else:
    with pytest.raises(OverflowError, match=f"Python int {n} too large to convert to int32"):
      jnp.array(n)


@given(st.integers(1, 5), _ints)
def test_getitem_python_int(size, n):
  """In int32 range an integer index clamps (JAX's gather); out of it, OverflowError."""
  x = jnp.arange(size)
  if I32_MIN <= n <= I32_MAX:
    position = n + size if n < 0 else n
    assert int(x[n]) == min(max(position, 0), size - 1)
  else:
    with pytest.raises(OverflowError):
      x[n]


@given(st.lists(st.integers(2**23, 2**40), min_size=2, max_size=3),
       st.sampled_from(["eager", "jit"]))
def test_unallocatable_results_fail_fast(dims, mode):
  """A result of 2**48 bytes or more (beyond any machine's memory) raises
  before work starts; 2**63 elements or more is an int64 overflow."""
  size = int(np.prod(dims, dtype=object))
  expected = ("overflow int64" if size >= 2**63
              else f"RESOURCE_EXHAUSTED: Out of memory while trying to allocate {size * 4} bytes")
  for make in (lambda: jnp.zeros(dims), lambda: jnp.ones(dims, jnp.int32),
               lambda: lax.broadcast_in_dim(1.0, dims, ()), lambda: jnp.zeros(dims).sum()):
    with pytest.raises(JaxRuntimeError, match=expected):
      make() if mode == "eager" else jit(make)()


# --- promotion ------------------------------------------------------------------

_NAMES = {dt.name: dt for dt in dtypes.SUPPORTED_DTYPES}


def _golden_promote_types():
  import json
  from importlib import resources
  table = json.loads((resources.files("conformance") / "data" / "promotion.json").read_text())
  return table["promote_types (x64 enabled)"]


_X32_EXCEPTIONS = {frozenset(("uint32", s)): "int32" for s in ("int8", "int16", "int32")}
"""Where JAX's x64-off lattice differs from the recorded x64 table: uint32 with
a signed integer of at most 32 bits joins at int32 (no 64-bit type formed)."""


@pytest.mark.parametrize("x64", [True, False])
def test_promote_types_against_golden_table(x64):
  """promote_types never canonicalizes; only the lattice depends on x64."""
  mismatches = []
  with jax.enable_x64(x64):
    for case, want in _golden_promote_types().items():
      a, b = case.split(",")
      if not x64:
        want = _X32_EXCEPTIONS.get(frozenset((a, b)), want)
      got = jnp.promote_types(_NAMES[a], _NAMES[b]).name
      if got != want:
        mismatches.append(f"{case}: {got}, JAX {want}")
  assert not mismatches, mismatches


@pytest.mark.parametrize("a, b, x64_off, x64_on", [
    ("uint32", "int32", "int32", "int64"),
    ("uint32", "int8", "int32", "int64"),
    ("uint32", "int64", "int64", "int64"),
    ("uint64", "int64", "float64", "float64"),
    ("uint64", "int32", "float64", "float64"),
    ("int32", "int64", "int64", "int64"),
    ("uint8", int, "uint8", "uint8"),
    ("float16", float, "float16", "float16"),
    (int, float, "float64", "float64"),
])
def test_promote_types_neighbours(a, b, x64_off, x64_on):
  for x64, want in ((False, x64_off), (True, x64_on)):
    with jax.enable_x64(x64):
      assert jnp.promote_types(a, b) == np.dtype(want)
      assert jnp.promote_types(b, a) == np.dtype(want)


@pytest.mark.parametrize("a, b, x64_off, x64_on", [
    ("uint32", "int32", "int32", "int64"),
    ("uint64", "int64", "float32", "float64"),
    ("int32", "int64", "int32", "int64"),
])
def test_result_type_canonicalizes(a, b, x64_off, x64_on):
  for x64, want in ((False, x64_off), (True, x64_on)):
    with jax.enable_x64(x64):
      assert jnp.result_type(a, b) == np.dtype(want)
