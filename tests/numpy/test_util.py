"""Tests of refimpl/numpy/util.py: the promotion of jnp operands, which is
remembered per operand types, against the lattice rule it remembers
(`dtypes.result_type_and_weak_type`), whatever the order in which operand
types and x64 settings are met."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import dtypes, lax
from refimpl.config import enable_x64
from refimpl.numpy import util
from conformance import strategies as S

_PROMOTERS = {None: util.promote_dtypes, "inexact": util.promote_dtypes_inexact,
              "numeric": util.promote_dtypes_numeric}


def _expected(kind, args):
  """The (dtype, weak_type) that the lattice rule gives `kind`'s promotion."""
  dtype, weak = dtypes.result_type_and_weak_type(*args)
  if kind == "inexact" and not dtypes.is_inexact(dtype):
    dtype = dtypes.default_float_dtype()
  if kind == "numeric" and dtypes.is_bool(dtype):
    dtype = dtypes.default_int_dtype()
  return dtype, weak


_DTYPES = S.ALL_DTYPES + [np.dtype(t) for t in (np.int64, np.uint64, np.float64, np.complex128)]


def _operand(draw):
  """An array (strong or weak), a NumPy array or scalar, or a Python scalar."""
  form = draw(st.sampled_from(["array", "weak array", "numpy", "numpy scalar", "python"]))
  if form == "python":
    return draw(st.sampled_from([True, 3, -2.5, 1 + 2j]))
  dtype = draw(st.sampled_from(_DTYPES))
  value = np.zeros(draw(st.sampled_from([(), (2,)])), dtype)
  if form == "numpy":
    return value
  if form == "numpy scalar":
    return np.zeros((), dtype)[()]
  with enable_x64():  # a 64-bit array stays 64-bit, whatever x64 is when it is promoted
    return lax.convert_element_type(value, dtype, form == "weak array")


@given(st.data())
def test_remembered_promotion_is_the_lattice_rule(data):
  """For any operands, kind and x64 setting, asked twice: the converted
  operands have the rule's dtype and weak type, and an array already of it
  is returned as it is."""
  kind = data.draw(st.sampled_from(list(_PROMOTERS)))
  args = [_operand(data.draw) for _ in range(data.draw(st.integers(1, 3)))]
  with enable_x64(data.draw(st.booleans())):
    want = _expected(kind, args)
    for _ in range(2):
      outs = _PROMOTERS[kind](*args)
      assert [(o.dtype, o.weak_type) for o in outs] == [want] * len(args)
      for x, out in zip(args, outs):
        if isinstance(x, jax.Array) and (x.dtype, x.weak_type) == want:
          assert out is x


def test_promotion_follows_x64_each_time():
  """The same operand types promote to 64 bits with x64 and to 32 without,
  in either order."""
  x = np.ones(2, np.float64)
  with enable_x64():
    y = jnp.ones(2, np.float64)
  for x64, want in [(False, np.float32), (True, np.float64), (False, np.float32)]:
    with enable_x64(x64):
      assert jnp.add(x, 1.5).dtype == want
      assert jnp.sin(y).dtype == want


def test_weak_and_strong_arrays_of_one_dtype_promote_apart():
  half = np.ones(2, np.float16)
  weak, strong = jnp.asarray(2.0), jnp.asarray(np.float32(2.0))
  for _ in range(2):
    assert (jnp.add(weak, half).dtype, jnp.add(strong, half).dtype) == (np.float16, np.float32)


def test_python_int_range_is_checked_every_time():
  x = jnp.arange(3)
  assert jnp.add(x, 2).dtype == np.int32
  for _ in range(2):
    with pytest.raises(OverflowError, match="Python int 1099511627776 too large"):
      jnp.add(x, 2**40)


def test_python_bool_and_int_promote_apart():
  x = jnp.zeros(2, np.bool_)
  assert (jnp.add(x, True).dtype, jnp.add(x, 1).dtype) == (np.bool_, np.int32)


def test_numpy_operands_become_arrays_as_arrays_of_their_type_stay():
  """A NumPy value and an array of the same type are told apart, in either order."""
  x, y = np.ones(2, np.float32), jnp.ones(2, np.float32)
  for args in [(x, y), (y, x), (x,), (y,)]:
    outs = util.promote_dtypes(*args)
    assert all(isinstance(o, jax.Array) for o in outs)
    assert all(o is a for o, a in zip(outs, args) if a is y)
