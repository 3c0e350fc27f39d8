"""Scalar types (`jnp.float32`, ...), dtype utilities and constants.

As in JAX, `jnp.float32` is not NumPy's scalar type: calling it makes an
Array (`jnp.float32(1.5)` is a float32 Array; with x64 off, `jnp.float64(x)`
warns and gives float32), while `np.dtype(jnp.float32)`, `jnp.zeros(3,
jnp.float32)` and `isinstance(np.float32(1), jnp.float32)` work as with
NumPy's type.
"""

import ml_dtypes
import numpy as np

from refimpl import core, dtypes
from refimpl.array import Array
from refimpl.numpy.creation import asarray

__all__ = [
    'bool', 'bool_', 'int8', 'int16', 'int32', 'int64', 'int_', 'uint8', 'uint16',
    'uint32', 'uint64', 'uint', 'float16', 'bfloat16', 'float32', 'float64', 'float_',
    'single', 'double', 'complex64', 'complex128', 'complex_', 'csingle', 'cdouble',
    'float8_e3m4', 'float8_e4m3', 'float8_e4m3b11fnuz', 'float8_e4m3fn', 'float8_e4m3fnuz',
    'float8_e5m2', 'float8_e5m2fnuz', 'float8_e8m0fnu', 'float6_e2m3fn', 'float6_e3m2fn',
    'float4_e2m1fn', 'int1', 'int2', 'int4', 'uint1', 'uint2', 'uint4',
    'generic', 'number', 'integer', 'signedinteger', 'unsignedinteger', 'inexact',
    'floating', 'complexfloating', 'character', 'flexible', 'object_',
    'dtype', 'iinfo', 'finfo', 'issubdtype', 'isdtype', 'can_cast', 'ndarray',
    'inf', 'nan', 'pi', 'e', 'euler_gamma', 'newaxis',
]


class _ScalarMeta(type):
  """Metaclass of the scalar types: calling one converts to an Array of its dtype."""

  def __call__(cls, x):
    return asarray(x, dtype=cls.dtype)

  def __instancecheck__(cls, instance):
    return isinstance(instance, cls.dtype.type)

  def __eq__(cls, other):
    return cls is other or cls.dtype.type == other

  def __ne__(cls, other):
    return not cls == other

  def __hash__(cls):
    return hash(cls.dtype.type)


def _scalar_type(name, numpy_type):
  return _ScalarMeta(name, (object,), {
      "dtype": np.dtype(numpy_type), "__module__": "refimpl.numpy",
      "__doc__": f"A {name} scalar type; calling it converts to an Array of that dtype."})


bool_ = _scalar_type("bool", np.bool_)
int8 = _scalar_type("int8", np.int8)
int16 = _scalar_type("int16", np.int16)
int32 = _scalar_type("int32", np.int32)
int64 = _scalar_type("int64", np.int64)
uint8 = _scalar_type("uint8", np.uint8)
uint16 = _scalar_type("uint16", np.uint16)
uint32 = _scalar_type("uint32", np.uint32)
uint64 = _scalar_type("uint64", np.uint64)
float16 = _scalar_type("float16", np.float16)
bfloat16 = _scalar_type("bfloat16", ml_dtypes.bfloat16)
float32 = _scalar_type("float32", np.float32)
float64 = _scalar_type("float64", np.float64)
complex64 = _scalar_type("complex64", np.complex64)
complex128 = _scalar_type("complex128", np.complex128)

# The narrow ml_dtypes types. They promote only with Python scalars (and, for
# the floats, integers); see refimpl/dtypes.py.
float8_e3m4 = _scalar_type("float8_e3m4", ml_dtypes.float8_e3m4)
float8_e4m3 = _scalar_type("float8_e4m3", ml_dtypes.float8_e4m3)
float8_e4m3b11fnuz = _scalar_type("float8_e4m3b11fnuz", ml_dtypes.float8_e4m3b11fnuz)
float8_e4m3fn = _scalar_type("float8_e4m3fn", ml_dtypes.float8_e4m3fn)
float8_e4m3fnuz = _scalar_type("float8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz)
float8_e5m2 = _scalar_type("float8_e5m2", ml_dtypes.float8_e5m2)
float8_e5m2fnuz = _scalar_type("float8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz)
float8_e8m0fnu = _scalar_type("float8_e8m0fnu", ml_dtypes.float8_e8m0fnu)
float6_e2m3fn = _scalar_type("float6_e2m3fn", ml_dtypes.float6_e2m3fn)
float6_e3m2fn = _scalar_type("float6_e3m2fn", ml_dtypes.float6_e3m2fn)
float4_e2m1fn = _scalar_type("float4_e2m1fn", ml_dtypes.float4_e2m1fn)
int1 = _scalar_type("int1", ml_dtypes.int1)
int2 = _scalar_type("int2", ml_dtypes.int2)
int4 = _scalar_type("int4", ml_dtypes.int4)
uint1 = _scalar_type("uint1", ml_dtypes.uint1)
uint2 = _scalar_type("uint2", ml_dtypes.uint2)
uint4 = _scalar_type("uint4", ml_dtypes.uint4)

# Aliases, as in JAX: the "default" types are the 64-bit ones (canonicalized
# to 32 bits when x64 is off).
bool = bool_  # noqa: A001
int_, uint, float_, complex_ = int64, uint64, float64, complex128
single, double, csingle, cdouble = float32, float64, complex64, complex128

# Abstract types for issubdtype.
generic, number, integer = np.generic, np.number, np.integer
signedinteger, unsignedinteger = np.signedinteger, np.unsignedinteger
inexact, floating, complexfloating = np.inexact, np.floating, np.complexfloating
character, flexible, object_ = np.character, np.flexible, np.object_

dtype = np.dtype
iinfo = dtypes.iinfo
finfo = dtypes.finfo
isdtype = dtypes.isdtype
can_cast = np.can_cast
"""As in JAX, NumPy's own `can_cast` (casting="safe" by default); ml_dtypes
registers its types' casts with NumPy, so bfloat16 and the narrow types work."""


def issubdtype(arg1, arg2):
  """Whether `arg1` is a subtype of `arg2` in NumPy's type hierarchy, extended
  to JAX's dtypes (`jax.dtypes.issubdtype`)."""
  return dtypes.issubdtype(arg1, arg2)


class _ArrayMeta(type):
  def __instancecheck__(cls, instance):
    return isinstance(instance, (Array, core.Tracer))


class ndarray(metaclass=_ArrayMeta):
  """`isinstance(x, jnp.ndarray)` holds for Arrays and for tracers, as in JAX."""


inf, nan, pi, e, euler_gamma = np.inf, np.nan, np.pi, np.e, np.euler_gamma
newaxis = None
