"""Dtypes and JAX's type promotion.

JAX promotes types on a lattice rather than by NumPy's value-based tables, and
treats Python scalars as *weakly typed*: a Python ``1.0`` adopts the float type
of the array it meets instead of forcing float64. With x64 disabled (the
default) every 64-bit type is *canonicalized* to its 32-bit counterpart.
See docs/type_promotion.md.
"""

import warnings

import ml_dtypes
import numpy as np

from refimpl.config import config

bfloat16 = np.dtype(ml_dtypes.bfloat16)
float0 = np.dtype([("float0", np.void, 0)])
"""The dtype of tangents of integer and boolean values (no data)."""

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)

SUPPORTED_DTYPES = (bool_, int8, int16, int32, int64, uint8, uint16, uint32,
                    uint64, bfloat16, float16, float32, float64, complex64,
                    complex128)

# The three weak "types" of Python scalars: nodes of the lattice below that
# stand for "an int / float / complex of whatever width the other side has".
_WEAK_INT, _WEAK_FLOAT, _WEAK_COMPLEX = "int", "float", "complex"
_WEAK_OF_PYTHON_TYPE = {int: _WEAK_INT, float: _WEAK_FLOAT, complex: _WEAK_COMPLEX}
_DEFAULT_OF_WEAK = {_WEAK_INT: int64, _WEAK_FLOAT: float64, _WEAK_COMPLEX: complex128}

# Each node lists the nodes directly above it. Promotion of a set of types is
# their least upper bound.
_LATTICE = {
    bool_: [_WEAK_INT],
    _WEAK_INT: [uint8, int8],
    uint8: [int16, uint16],
    uint16: [int32, uint32],
    uint32: [int64, uint64],
    uint64: [_WEAK_FLOAT],
    int8: [int16],
    int16: [int32],
    int32: [int64],
    int64: [_WEAK_FLOAT],
    _WEAK_FLOAT: [bfloat16, float16, _WEAK_COMPLEX],
    bfloat16: [float32],
    float16: [float32],
    float32: [float64, complex64],
    float64: [complex128],
    _WEAK_COMPLEX: [complex64],
    complex64: [complex128],
    complex128: [],
}


def _upper_bounds(node):
  """All nodes reachable upward from `node`, itself included."""
  seen, todo = {node}, [node]
  while todo:
    for up in _LATTICE[todo.pop()]:
      if up not in seen:
        seen.add(up)
        todo.append(up)
  return seen


_UPPER_BOUNDS = {node: frozenset(_upper_bounds(node)) for node in _LATTICE}


def _least_upper_bound(nodes):
  common = frozenset.intersection(*(_UPPER_BOUNDS[n] for n in nodes))
  for candidate in common:
    if _UPPER_BOUNDS[candidate] == common:
      return candidate
  raise TypeError(f"no promotion path for types {sorted(map(str, nodes))}")


# --- canonicalization (x64) -------------------------------------------------

_CANONICAL_32 = {int64: int32, uint64: uint32, float64: float32,
                 complex128: complex64}


def canonicalize_dtype(dtype):
  """The dtype actually used for `dtype`: 64-bit types become 32-bit unless x64 is on."""
  dtype = np.dtype(dtype)
  if not config.jax_enable_x64:
    return _CANONICAL_32.get(dtype, dtype)
  return dtype


def default_int_dtype():
  return canonicalize_dtype(int64)


def default_float_dtype():
  return canonicalize_dtype(float64)


def default_complex_dtype():
  return canonicalize_dtype(complex128)


def check_user_dtype_supported(dtype, fun_name=None):
  """Warns, as JAX does, when a requested 64-bit dtype will be truncated."""
  if dtype is None:
    return
  if isinstance(dtype, type) and dtype in (int, float, complex, bool):
    return  # Python types mean "the default type", never a warning.
  requested = np.dtype(dtype)
  if requested not in SUPPORTED_DTYPES and requested != float0:
    raise TypeError(f"JAX only supports number and bool dtypes, got dtype {requested}")
  truncated = canonicalize_dtype(requested)
  if truncated != requested:
    where = f" requested in {fun_name}" if fun_name else ""
    warnings.warn(
        f"Explicitly requested dtype {requested.name}{where} is not available, "
        f"and will be truncated to dtype {truncated.name}. To enable more dtypes, "
        "set the jax_enable_x64 configuration option or the JAX_ENABLE_X64 "
        "shell environment variable.", UserWarning, stacklevel=3)


# --- dtypes of values ------------------------------------------------------

def is_python_scalar(x):
  return type(x) in (bool, int, float, complex)


def is_weakly_typed(x):
  """Python ints, floats and complexes are weak; so are values marked weak."""
  if type(x) in _WEAK_OF_PYTHON_TYPE:
    return True
  aval = getattr(x, "aval", None)
  return bool(aval is not None and aval.weak_type)


def python_scalar_dtype(x):
  """The dtype a Python scalar becomes: the canonical default of its kind."""
  if type(x) is bool:
    return bool_
  return canonicalize_dtype(_DEFAULT_OF_WEAK[_WEAK_OF_PYTHON_TYPE[type(x)]])


def dtype(x):
  """The (canonical) dtype of a value or dtype-like `x`, as `jnp.dtype` does."""
  if is_python_scalar(x):
    return python_scalar_dtype(x)
  if isinstance(x, type) and x in (bool, int, float, complex):
    return python_scalar_dtype(x(0))
  if isinstance(x, type) and issubclass(x, np.generic):
    return canonicalize_dtype(np.dtype(x))
  if hasattr(x, "dtype") and not isinstance(x, (str, np.dtype)):
    return canonicalize_dtype(x.dtype)
  return canonicalize_dtype(np.dtype(x))


def _lattice_node(dt, weak):
  if weak and dt != bool_:
    return _WEAK_OF_PYTHON_TYPE[type(dt.type(0).item())]
  return dt


def promote_types(a, b):
  """The promoted dtype of two dtypes (no weak types, no canonicalization).

  This is the lattice join; it differs from NumPy's: e.g. int8 with uint32 is
  int64 and uint64 with int64 is float64 (as in `jnp.promote_types`).
  """
  a, b = np.dtype(a), np.dtype(b)
  lub = _least_upper_bound({a, b})
  return _DEFAULT_OF_WEAK.get(lub, lub)


def result_type_and_weak_type(*args):
  """Promotes the dtypes of `args` (values or dtypes) to (dtype, weak_type).

  Python scalars and weak-typed values take part as weak nodes. When every
  argument is weak the result is the promotion of their strong types, still
  weak. The result is canonicalized (x64).
  """
  if not args:
    raise ValueError("at least one array or dtype is required")
  dts, weaks = [], []
  for x in args:
    if is_python_scalar(x) or (isinstance(x, type) and x in (bool, int, float, complex)):
      value = x if not isinstance(x, type) else x(0)
      dts.append(np.dtype(type(value)) if type(value) is not int else int64)
      weaks.append(type(value) is not bool)
    elif hasattr(x, "dtype"):
      dts.append(np.dtype(x.dtype))
      weaks.append(is_weakly_typed(x))
    else:
      dts.append(np.dtype(x))
      weaks.append(False)
  if len(dts) == 1:
    out, out_weak = dts[0], weaks[0]
  elif len(set(dts)) == 1 and not all(weaks):
    out, out_weak = dts[0], False
  elif all(weaks):
    out = _least_upper_bound({_lattice_node(d, False) for d in dts})
    out_weak = True
  else:
    out = _least_upper_bound({_lattice_node(d, w) for d, w in zip(dts, weaks)})
    out_weak = out in _DEFAULT_OF_WEAK
  out = _DEFAULT_OF_WEAK.get(out, out)
  return canonicalize_dtype(out), bool(out_weak and out != bool_)


def result_type(*args):
  """`jnp.result_type`: the promoted canonical dtype of `args`."""
  return result_type_and_weak_type(*args)[0]


# --- categories ------------------------------------------------------------

def issubdtype(a, b):
  """NumPy's issubdtype, extended so bfloat16 counts as a floating type."""
  a = np.dtype(a) if not (isinstance(a, type) and issubclass(a, np.generic)) else a
  if a == bfloat16 or (isinstance(a, type) and a is ml_dtypes.bfloat16):
    return b in (np.floating, np.inexact, np.number, np.generic, ml_dtypes.bfloat16) or (
        not isinstance(b, type) and np.dtype(b) == bfloat16)
  return np.issubdtype(a, b)


def is_float(dt):
  return issubdtype(dt, np.floating)


def is_inexact(dt):
  return issubdtype(dt, np.inexact)


def is_complex(dt):
  return issubdtype(dt, np.complexfloating)


def is_integer(dt):
  return issubdtype(dt, np.integer)


def is_unsigned(dt):
  return issubdtype(dt, np.unsignedinteger)


def is_bool(dt):
  return np.dtype(dt) == bool_


def finfo(dt):
  """Machine limits of a float type (bfloat16 included)."""
  return ml_dtypes.finfo(np.dtype(dt))


def iinfo(dt):
  return np.iinfo(np.dtype(dt))


def short_name(dt):
  """The short name used in jaxprs: f32, i32, u8, bf16, bool, c64, ..."""
  dt = np.dtype(dt)
  if dt == float0:
    return "float0"
  if dt == bool_:
    return "bool"
  if dt == bfloat16:
    return "bf16"
  return f"{dt.kind}{dt.itemsize * 8}"
