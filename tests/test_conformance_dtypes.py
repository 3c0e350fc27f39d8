"""Result dtypes of a sample of conformance cases follow JAX's rules.

The conformance cases compare values only (NumPy often answers in float64 or
int64); here the dtype of each case's result is checked against JAX's rule
for the function, on the case's own generated inputs, with x64 disabled.
"""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from conformance.cases import all_cases, numerical_warnings_ignored
from refimpl import dtypes
from refimpl.tree_util import tree_leaves

CASES = {case.name: case for case in all_cases()}
F32, I32, U32, BOOL = (np.dtype(t) for t in (np.float32, np.int32, np.uint32, np.bool_))


def _arrays(args):
  return [a for a in args if isinstance(a, np.ndarray)]


def promoted(args, kwargs):
  """JAX's lattice promotion of the operands (canonicalized: x64 is off)."""
  return dtypes.result_type(*_arrays(args))


def inexact(args, kwargs):
  """Promoted, then the default float if that is not inexact."""
  dtype = promoted(args, kwargs)
  return dtype if dtypes.is_inexact(dtype) else F32


def boolean(args, kwargs):
  return BOOL


def real_part(args, kwargs):
  """complex64 -> float32; real dtypes unchanged."""
  dtype = promoted(args, kwargs)
  return F32 if dtype == np.complex64 else dtype


def default_int(args, kwargs):
  return I32


def requested(name):
  """The dtype named by keyword `name`, or the operands' dtype if it is None."""
  def rule(args, kwargs):
    return promoted(args, kwargs) if kwargs[name] is None else np.dtype(kwargs[name])
  return rule


def requested_or_default_float(args, kwargs):
  return F32 if kwargs.get("dtype") is None else np.dtype(kwargs["dtype"])


def sum_promotion(args, kwargs):
  """sum/prod: booleans and small integers accumulate in int32 (uint32)."""
  if kwargs.get("dtype") is not None:
    return np.dtype(kwargs["dtype"])
  dtype = promoted(args, kwargs)
  if dtype == BOOL:
    return I32
  if dtypes.is_integer(dtype) and dtype.itemsize < 4:
    return U32 if dtypes.is_unsigned(dtype) else I32
  return dtype


def integer_accumulation(args, kwargs):
  """cumsum/cumprod keep the integer dtype (booleans become int32); the others
  promote as sum does."""
  if kwargs["reduction"] in ("cumsum", "cumprod", "nancumsum", "nancumprod"):
    dtype = promoted(args, kwargs)
    return I32 if dtype == BOOL else dtype
  return sum_promotion(args, kwargs)


def mixed(args, kwargs):
  """The mixed-dtype ufunc case: comparisons give bool, true_divide and the
  other inexact functions a float, the rest the promoted dtype."""
  if kwargs["ufunc"] in ("equal", "not_equal", "less", "greater_equal", "logical_xor"):
    return BOOL
  if kwargs["ufunc"] in ("true_divide", "arctan2", "hypot", "logaddexp", "copysign"):
    return inexact(args, kwargs)
  return promoted(args, kwargs)


def angle(args, kwargs):
  """atan2(imag, real) in the real dtype; the default float for a rank-0 real operand."""
  (z,) = args
  return F32 if z.dtype == np.complex64 or z.ndim == 0 else z.dtype


def dot_general(args, kwargs):
  if kwargs["preferred_element_type"] is not None:
    return np.dtype(kwargs["preferred_element_type"])
  return promoted(args, kwargs)


def arange(args, kwargs):
  return I32 if all(isinstance(b, int) for b in kwargs["bounds"]) else F32


RULES = {
    "lax.add": promoted, "lax.div[int]": promoted, "lax.eq": boolean, "lax.abs": real_part,
    "lax.is_finite": boolean, "lax.convert_element_type": requested("dtype"),
    "lax.bitcast_convert_type": requested("new_dtype"), "lax.complex": lambda a, k: np.dtype(
        np.complex64), "lax.population_count": promoted, "lax.select_n": lambda a, k: a[1].dtype,
    "jnp.add": promoted, "jnp.true_divide": inexact, "jnp.floor_divide": promoted,
    "jnp.power[int]": promoted, "jnp.equal": boolean, "jnp.absolute": real_part,
    "jnp.isnan": boolean, "jnp.bitwise_count": lambda a, k: np.dtype(np.uint8),
    "jnp.frexp": lambda a, k: (promoted(a, k), I32), "jnp.angle": angle,
    "jnp.where": lambda a, k: dtypes.result_type(a[1], a[2]),
    "jnp.astype": requested("dtype"), "jnp.round[int]": promoted,
    "jnp inexact ufuncs[integer operands]": lambda a, k: F32,
    "jnp binary ufuncs[mixed dtypes]": mixed,
    "lax.gather": lambda a, k: a[0].dtype, "lax.scatter_add": lambda a, k: a[0].dtype,
    "lax.dynamic_slice": lambda a, k: a[0].dtype, "jnp getitem": lambda a, k: a[0].dtype,
    "x.at[idx].add": lambda a, k: a[0].dtype,
    "lax.reshape": promoted, "lax.pad": promoted, "jnp.concatenate": promoted,
    "jnp.pad": promoted, "jnp.repeat": promoted,
    "jnp.zeros": requested_or_default_float, "jnp.eye": requested_or_default_float,
    "jnp.arange": arange, "jnp.linspace": lambda a, k: F32, "jnp.indices": default_int,
    "jnp.tril_indices": default_int, "jnp.full": lambda a, k: np.dtype(k["dtype"] or a[0].dtype),
    "lax.dot_general": dot_general, "jnp.dot": promoted, "jnp.matmul": promoted,
    "jnp.einsum": promoted,
    "jnp.sum": sum_promotion, "jnp.sum[dtype]": sum_promotion,
    "jnp integer sums and products": integer_accumulation,
    "jnp.mean": inexact, "jnp.var": real_part, "jnp.argmax": default_int,
    "jnp.nanargmin": default_int, "jnp.count_nonzero": default_int,
    "jnp.cumsum": lambda a, k: I32 if a[0].dtype == BOOL else a[0].dtype,
    "jnp.all": boolean, "jnp.max": promoted,
}


@pytest.mark.parametrize("name", sorted(RULES))
@given(data=st.data())
def test_result_dtype_follows_jax(name, data):
  case = CASES[name]
  args, kwargs = data.draw(case.inputs())
  with numerical_warnings_ignored():
    result = case.fn(*args, **kwargs)
  expected = RULES[name](args, kwargs)
  expected = expected if isinstance(expected, tuple) else (expected,)
  leaves = tree_leaves(result)
  if len(expected) == 1:
    expected = expected * len(leaves)
  assert [np.dtype(leaf.dtype) for leaf in leaves] == [np.dtype(d) for d in expected]
