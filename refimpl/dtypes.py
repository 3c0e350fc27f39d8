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

# Narrow types from ml_dtypes: 8-, 6- and 4-bit floats, 1-, 2- and 4-bit
# integers (one value per byte in memory). Nothing lies above them on the
# lattice: a narrow float absorbs bool, integers and Python ints and floats; a
# narrow integer only bool and Python ints. Anything else raises
# TypePromotionError (an explicit cast is needed).
(float8_e3m4, float8_e4m3, float8_e4m3b11fnuz, float8_e4m3fn, float8_e4m3fnuz,
 float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu, float6_e2m3fn, float6_e3m2fn,
 float4_e2m1fn) = (np.dtype(getattr(ml_dtypes, name)) for name in (
     "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn",
     "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
     "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn"))
int1, int2, int4 = (np.dtype(t) for t in (ml_dtypes.int1, ml_dtypes.int2, ml_dtypes.int4))
uint1, uint2, uint4 = (np.dtype(t) for t in (ml_dtypes.uint1, ml_dtypes.uint2, ml_dtypes.uint4))

NARROW_FLOAT_DTYPES = (float8_e3m4, float8_e4m3, float8_e4m3b11fnuz, float8_e4m3fn,
                       float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu,
                       float6_e2m3fn, float6_e3m2fn, float4_e2m1fn)
NARROW_SIGNED_DTYPES = (int1, int2, int4)
NARROW_UNSIGNED_DTYPES = (uint1, uint2, uint4)
NARROW_INT_DTYPES = NARROW_SIGNED_DTYPES + NARROW_UNSIGNED_DTYPES

SUPPORTED_DTYPES = (bool_, int8, int16, int32, int64, uint8, uint16, uint32,
                    uint64, bfloat16, float16, float32, float64, complex64,
                    complex128) + NARROW_INT_DTYPES + NARROW_FLOAT_DTYPES
"""Every dtype an array may have (float0 aside): the 15 standard types, then
the narrow ones."""

# --- extended dtypes -----------------------------------------------------------

class extended(np.generic):
  """The scalar type of every extended dtype: `issubdtype(dt, extended)`."""


class prng_key(extended):
  """The scalar type of the PRNG key dtypes: `issubdtype(key.dtype, prng_key)`."""


class ExtendedDType:
  """A dtype that is not one of NumPy's: an array of it holds opaque elements
  (PRNG keys, `refimpl.prng.KeyTy`) that only shape operations, indexing,
  control flow and equality may handle.

  Each element is physically an array of `element_shape` and the standard
  dtype `element_dtype` (uint32[2] for `key<fry>`), so the *physical data*
  of an array of shape S has shape (*S, *element_shape)
  (`core.physical_aval`): what compiled programs take and return. The
  reference rules hold the data as a NumPy array of shape S whose elements
  are structured values of `numpy_dtype` (one field: an element's physical
  data), so NumPy's shape operations move whole elements; `to_physical` and
  `from_physical` convert. Subclasses set `type` (the scalar type
  `issubdtype` sees), `name`, `element_shape`, `element_dtype`,
  `numpy_dtype` and `array_type` (the class of concrete arrays, built as
  `array_type(data, dtype)`).
  """

  type = extended
  name = "extended"
  element_shape = ()
  element_dtype = None
  numpy_dtype = None
  array_type = None

  @property
  def itemsize(self):
    return self.numpy_dtype.itemsize

  def to_physical(self, data):
    """The physical data (a new array of shape (*S, *element_shape)) of the
    NumPy data `data` (shape S, structured elements)."""
    return np.array(data[self.numpy_dtype.names[0]], self.element_dtype)

  def from_physical(self, data):
    """The NumPy data (shape S, structured elements) of the physical data
    `data` of shape (*S, *element_shape) and dtype `element_dtype`
    (TypeError for other data: a backend's result, say)."""
    data = np.asarray(data)
    n = len(self.element_shape)
    if data.dtype != self.element_dtype or data.shape[data.ndim - n:] != self.element_shape:
      raise TypeError(f"The physical data of {self.name} arrays is "
                      f"{self.element_dtype}[..., {', '.join(map(str, self.element_shape))}], "
                      f"got {data.dtype}{list(data.shape)}")
    elements = np.empty(data.shape[:data.ndim - len(self.element_shape)], self.numpy_dtype)
    elements[self.numpy_dtype.names[0]] = data
    return elements

  def __repr__(self):
    return self.name

  __str__ = __repr__


_EXTENDED_OF_NUMPY_DTYPE = {}
"""Each extended dtype by the NumPy dtype of its data (see `register_extended`)."""


def register_extended(dt):
  """Records the extended dtype `dt`, so that bare NumPy data of its
  `numpy_dtype` is recognized as data of `dt` (`extended_of_numpy`)."""
  _EXTENDED_OF_NUMPY_DTYPE[dt.numpy_dtype] = dt


def extended_of_numpy(np_dtype):
  """The extended dtype whose data has NumPy dtype `np_dtype`, else None."""
  return _EXTENDED_OF_NUMPY_DTYPE.get(np_dtype)


def is_extended(dt):
  """Whether `dt` is an extended dtype (a PRNG key dtype)."""
  return isinstance(dt, ExtendedDType)


def numpy_dtype(dt):
  """The NumPy dtype of the data of an array of dtype `dt`: `dt` itself, or
  an extended dtype's structured `numpy_dtype`."""
  return dt.numpy_dtype if is_extended(dt) else dt


# The three weak "types" of Python scalars: nodes of the lattice below that
# stand for "an int / float / complex of whatever width the other side has".
_WEAK_INT, _WEAK_FLOAT, _WEAK_COMPLEX = "int", "float", "complex"
_WEAK_OF_PYTHON_TYPE = {int: _WEAK_INT, float: _WEAK_FLOAT, complex: _WEAK_COMPLEX}
_DEFAULT_OF_WEAK = {_WEAK_INT: int64, _WEAK_FLOAT: float64, _WEAK_COMPLEX: complex128}

# Each node lists the nodes directly above it. Promotion of a set of types is
# their least upper bound. The narrow types have nothing above them.
_LATTICE = {
    bool_: [_WEAK_INT],
    _WEAK_INT: [uint8, int8, *NARROW_INT_DTYPES],
    uint8: [int16, uint16],
    uint16: [int32, uint32],
    uint32: [int64, uint64],
    uint64: [_WEAK_FLOAT],
    int8: [int16],
    int16: [int32],
    int32: [int64],
    int64: [_WEAK_FLOAT],
    _WEAK_FLOAT: [*NARROW_FLOAT_DTYPES, bfloat16, float16, _WEAK_COMPLEX],
    bfloat16: [float32],
    float16: [float32],
    float32: [float64, complex64],
    float64: [complex128],
    _WEAK_COMPLEX: [complex64],
    complex64: [complex128],
    complex128: [],
    **{narrow: [] for narrow in NARROW_INT_DTYPES + NARROW_FLOAT_DTYPES},
}

# With x64 off no promotion forms a 64-bit type from narrower inputs: the one
# join that would (uint32 with a signed integer, int64 above) is int32 instead.
_LATTICE_X32 = {**_LATTICE, uint32: [int32, uint64]}


def _upper_bounds(lattice, node):
  """All nodes reachable upward from `node` in `lattice`, itself included."""
  seen, todo = {node}, [node]
  while todo:
    for up in lattice[todo.pop()]:
      if up not in seen:
        seen.add(up)
        todo.append(up)
  return seen


# jax_numpy_dtype_promotion='strict': a dtype promotes only to itself; the
# weak types of Python scalars still join each other and any type of their
# kind or a wider kind (an int scalar with float16 is float16, a float scalar
# with int32 has no join).
_STRICT_LATTICE = {
    **{dt: [] for dt in SUPPORTED_DTYPES},
    _WEAK_INT: [_WEAK_FLOAT, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
                *NARROW_INT_DTYPES],
    _WEAK_FLOAT: [_WEAK_COMPLEX, bfloat16, float16, float32, float64, *NARROW_FLOAT_DTYPES],
    _WEAK_COMPLEX: [complex64, complex128],
}

_UPPER_BOUNDS = {
    (x64, mode): {node: frozenset(_upper_bounds(lattice, node)) for node in lattice}
    for x64, mode, lattice in ((True, "standard", _LATTICE), (False, "standard", _LATTICE_X32),
                               (True, "strict", _STRICT_LATTICE),
                               (False, "strict", _STRICT_LATTICE))}


class TypePromotionError(ValueError):
  """Raised when dtypes have no implicit promotion (as `jax.dtypes.TypePromotionError`)."""


def _least_upper_bound(nodes):
  """The join of `nodes` on the lattice of the current x64 and promotion modes."""
  strict = config.jax_numpy_dtype_promotion == "strict"
  upper_bounds = _UPPER_BOUNDS[bool(config.jax_enable_x64), "strict" if strict else "standard"]
  unknown = [n for n in nodes if n not in upper_bounds]
  if unknown:   # float0 (the tangent type of integers) takes no part in promotion
    raise ValueError(f"dtype={unknown[0]!r} is not a valid dtype for JAX type promotion.")
  common = frozenset.intersection(*(upper_bounds[n] for n in nodes))
  for candidate in common:
    if upper_bounds[candidate] == common:
      return candidate
  names = tuple(str(n) for n in nodes)
  narrow = [n for n in nodes if n in NARROW_FLOAT_DTYPES + NARROW_INT_DTYPES]
  if strict:
    raise TypePromotionError(
        f"Input dtypes {names} have no available implicit dtype promotion path when "
        "jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the desired "
        "output type, or set jax_numpy_dtype_promotion=standard.")
  if narrow:
    if narrow[0] in NARROW_INT_DTYPES:
      what, target = "1-bit, 2-bit and 4-bit integers", "int32"
    else:
      what, target = f"{narrow[0].name[5]}-bit floats", "float32"
    raise TypePromotionError(
        f"Input dtypes {names} have no available implicit dtype promotion path. "
        f"To avoid unintended promotion, {what} do not support implicit "
        f"promotion. If you'd like your inputs to be promoted to another type, you "
        f"can do so explicitly using e.g. x.astype('{target}')")
  raise TypePromotionError(f"Input dtypes {names} have no available implicit dtype "
                           "promotion path. Try explicitly casting inputs to the "
                           "desired output type.")


# --- canonicalization (x64) -------------------------------------------------

_CANONICAL_32 = {int64: int32, uint64: uint32, float64: float32,
                 complex128: complex64}


def canonicalize_dtype(dtype, allow_extended_dtype=False):
  """The dtype actually used for `dtype`: 64-bit types become 32-bit unless
  x64 is on. Extended dtypes are their own canonical dtype, with
  `allow_extended_dtype` (ValueError without, as in JAX)."""
  if is_extended(dtype):
    if not allow_extended_dtype:
      raise ValueError(f"Internal: canonicalize_dtype called on extended dtype {dtype} "
                       "with allow_extended_dtype=False")
    return dtype
  x64 = config.jax_enable_x64
  try:
    return _CANONICAL_OF[dtype, x64]
  except (KeyError, TypeError):  # not seen yet, or unhashable (a structured spec)
    pass
  canonical = np.dtype(dtype)
  if not x64:
    canonical = _CANONICAL_32.get(canonical, canonical)
  try:
    _CANONICAL_OF[dtype, x64] = canonical
  except TypeError:
    pass
  return canonical


_CANONICAL_OF = {}
"""canonicalize_dtype's results by (dtype-like, x64): dtype-likes are few."""


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
  if is_extended(dtype):
    return
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
  return type(x) in _PYTHON_SCALAR_TYPES


_PYTHON_SCALAR_TYPES = frozenset({bool, int, float, complex})


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


def check_python_int(x, dt=None):
  """Returns `x`; raises OverflowError, as JAX does, if `x` is a Python int
  that the integer dtype `dt` cannot hold.

  `dt` defaults to the default integer dtype (int32, int64 with x64): the
  dtype a Python int takes wherever it enters as a value (a `jit`
  argument, an operand of a primitive or of a jnp function, `jnp.array`),
  so `arange(3) + 2**31` raises rather than wrapping. A value in range
  that then meets a narrower array converts to it as any weak value does
  (`uint8(1) + 300` is 45). Other values, and a non-integer `dt` (floats,
  bool, key dtypes), pass.
  """
  if type(x) is int:
    dt = default_int_dtype() if dt is None else dt
    if is_integer(dt) and not iinfo(dt).min <= x <= iinfo(dt).max:
      raise OverflowError(f"Python int {x} too large to convert to {np.dtype(dt).name}")
  return x


def dtype(x):
  """The (canonical) dtype of a value or dtype-like `x`, as `jnp.dtype` does."""
  if is_python_scalar(x):
    return python_scalar_dtype(x)
  if is_extended(x):
    return x
  if isinstance(x, type) and x in (bool, int, float, complex):
    return python_scalar_dtype(x(0))
  if isinstance(x, type) and issubclass(x, np.generic):
    return canonicalize_dtype(np.dtype(x))
  if hasattr(x, "dtype") and not isinstance(x, (str, np.dtype)):
    return canonicalize_dtype(x.dtype, allow_extended_dtype=True)
  return canonicalize_dtype(np.dtype(x))


def _lattice_node(dt, weak):
  if weak and dt != bool_:
    return _WEAK_OF_PYTHON_TYPE[type(dt.type(0).item())]
  return dt


def promote_types(a, b):
  """The promoted dtype of two dtypes, as `jnp.promote_types`: the lattice
  join, not canonicalized (int64 with int32 is int64 even with x64 off).

  It differs from NumPy's: uint64 with int64 is float64; int8 with uint32 is
  int64, but int32 with x64 off (that lattice forms no 64-bit type from
  narrower ones). The Python types `int`, `float` and `complex` are weak
  (uint8 with int is uint8); a weak join is the 64-bit type of its kind.
  An extended dtype promotes only with itself (ValueError otherwise).
  """
  if is_extended(a) or is_extended(b):
    return _promote_extended([a, b])
  lub = _least_upper_bound({_WEAK_OF_PYTHON_TYPE[t] if isinstance(t, type) and t in
                            _WEAK_OF_PYTHON_TYPE else np.dtype(t) for t in (a, b)})
  return _DEFAULT_OF_WEAK.get(lub, lub)


def result_type_and_weak_type(*args):
  """Promotes the dtypes of `args` (values or dtypes) to (dtype, weak_type).

  Python scalars and weak-typed values take part as weak nodes. When every
  argument is weak the result is the promotion of the weak arrays' own
  dtypes and the Python scalars' kinds, still weak. The result is
  canonicalized (x64).
  """
  if not args:
    raise ValueError("at least one array or dtype is required")
  dts, weaks, scalars = [], [], []   # (scalars: which are Python scalars or types)
  for x in args:
    if is_python_scalar(x) or (isinstance(x, type) and x in (bool, int, float, complex)):
      value = x if not isinstance(x, type) else x(0)
      dts.append(np.dtype(type(value)) if type(value) is not int else int64)
      weaks.append(type(value) is not bool)
      scalars.append(True)
    elif hasattr(x, "dtype") and not isinstance(x, type):
      dts.append(x.dtype if is_extended(x.dtype) else np.dtype(x.dtype))
      weaks.append(is_weakly_typed(x))
      scalars.append(False)
    else:
      dts.append(x if is_extended(x) else np.dtype(x))
      weaks.append(False)
      scalars.append(False)
  if any(is_extended(d) for d in dts):
    return _promote_extended(dts), False
  if len(dts) == 1:
    out, out_weak = dts[0], weaks[0]
  elif len(set(dts)) == 1 and not all(weaks):
    out, out_weak = dts[0], False
  elif all(weaks):   # weak arrays by their own dtypes, Python scalars by their kinds
    out = _least_upper_bound({_lattice_node(d, scalar) for d, scalar in zip(dts, scalars)})
    out_weak = True
  else:
    out = _least_upper_bound({_lattice_node(d, w) for d, w in zip(dts, weaks)})
    out_weak = out in _DEFAULT_OF_WEAK
  out = _DEFAULT_OF_WEAK.get(out, out)
  return canonicalize_dtype(out), bool(out_weak and out != bool_)


def _promote_extended(dts):
  """Extended dtypes take no part in promotion: all of `dts` must be the same
  extended dtype (ValueError otherwise, as JAX)."""
  ext = next(d for d in dts if is_extended(d))
  if any(d != ext for d in dts):
    raise ValueError(f"dtype={ext} is not a valid dtype for JAX type promotion.")
  return ext


def result_type(*args, return_weak_type_flag=False):
  """`jnp.result_type`: the promoted canonical dtype of `args`; with
  `return_weak_type_flag`, the pair (dtype, whether it is weakly typed)."""
  dtype, weak_type = result_type_and_weak_type(*args)
  return (dtype, weak_type) if return_weak_type_flag else dtype


# --- categories ------------------------------------------------------------

_CUSTOM_FLOAT_TYPES = frozenset(d.type for d in (bfloat16,) + NARROW_FLOAT_DTYPES)
_NARROW_SIGNED_TYPES = frozenset(d.type for d in NARROW_SIGNED_DTYPES)
_NARROW_UNSIGNED_TYPES = frozenset(d.type for d in NARROW_UNSIGNED_DTYPES)


def _scalar_type(x):
  if isinstance(x, type) and issubclass(x, np.generic):
    return x
  if hasattr(x, "dtype") and not isinstance(x, np.dtype) and is_extended(x.dtype):
    raise TypeError(f"Cannot interpret '{x!r}' as a data type")   # an array, not a dtype
  return np.dtype(x).type


def issubdtype(a, b):
  """NumPy's issubdtype, extended to the ml_dtypes types: bfloat16 and the
  narrow floats are floating, int1/int2/int4 signed and uint1/uint2/uint4
  unsigned integers (NumPy sees them all as void types). An extended dtype
  is a subdtype of itself and of its scalar types (`prng_key`, `extended`,
  `np.generic`), of nothing numeric."""
  try:
    return _ISSUBDTYPE[a, b]
  except (KeyError, TypeError):  # not asked yet, or of a value (arrays are unhashable)
    pass
  result = _issubdtype(a, b)
  if isinstance(a, _DTYPE_LIKE) and isinstance(b, _DTYPE_LIKE):  # values are not cached
    _ISSUBDTYPE[a, b] = result
  return result


# (a, b) -> issubdtype(a, b) of dtypes, scalar types and names: asked often of few
_ISSUBDTYPE = {}
_DTYPE_LIKE = (np.dtype, type, str, ExtendedDType)


def _issubdtype(a, b):
  if is_extended(a):
    return a == b or (isinstance(b, type) and issubclass(a.type, b))
  if is_extended(b):
    return False
  a, b = _scalar_type(a), _scalar_type(b)
  if a in _CUSTOM_FLOAT_TYPES:
    return b in (a, np.floating, np.inexact, np.number, np.generic)
  if a in _NARROW_SIGNED_TYPES:
    return b in (a, np.signedinteger, np.integer, np.number, np.generic)
  if a in _NARROW_UNSIGNED_TYPES:
    return b in (a, np.unsignedinteger, np.integer, np.number, np.generic)
  return bool(np.issubdtype(a, b))


_SIGNED = (int8, int16, int32, int64) + NARROW_SIGNED_DTYPES
_UNSIGNED = (uint8, uint16, uint32, uint64) + NARROW_UNSIGNED_DTYPES
_REAL_FLOATING = (bfloat16, float16, float32, float64) + NARROW_FLOAT_DTYPES
_COMPLEX_FLOATING = (complex64, complex128)
_DTYPE_KINDS = {
    "bool": (bool_,),
    "signed integer": _SIGNED,
    "unsigned integer": _UNSIGNED,
    "integral": _SIGNED + _UNSIGNED,
    "real floating": _REAL_FLOATING,
    "complex floating": _COMPLEX_FLOATING,
    "numeric": _SIGNED + _UNSIGNED + _REAL_FLOATING + _COMPLEX_FLOATING,
}


def isdtype(dtype, kind):
  """Whether `dtype` is of `kind` (the array API's `isdtype`, as `jnp.isdtype`).

  `kind` is a dtype (equality), one of the names "bool", "signed integer",
  "unsigned integer", "integral", "real floating", "complex floating",
  "numeric", or a tuple of these (any matches). The narrow ml_dtypes types
  count as integral / real floating.
  """
  dtype = np.dtype(dtype)
  options = set()
  for k in kind if isinstance(kind, tuple) else (kind,):
    if isinstance(k, str) and k in _DTYPE_KINDS:
      options.update(_DTYPE_KINDS[k])
      continue
    try:
      options.add(np.dtype(k))
    except TypeError as e:
      if isinstance(k, str):
        raise ValueError(f"Unrecognized kind={k!r}: expected one of "
                         f"{list(_DTYPE_KINDS)}, or a compatible input for "
                         "jnp.dtype()") from None
      raise TypeError(f"Expected kind to be a dtype, string, or tuple; got kind={k!r}") from e
  return dtype in options


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
  return not is_extended(dt) and np.dtype(dt) == bool_


def to_complex_dtype(dt):
  """The complex dtype `dt` converts to (as `jax.dtypes.to_complex_dtype`):
  complex dtypes unchanged, float64 to complex128, other floats to
  complex64; integers and bool go by way of float64 (complex128). Not
  canonicalized."""
  dt = np.dtype(dt)
  if is_complex(dt):
    return dt
  inexact = dt if is_inexact(dt) else promote_types(dt, float64)
  return complex128 if inexact == float64 else complex64


def to_real_dtype(dt):
  """The real dtype of the same precision: float32 for complex64, float64
  for complex128; real dtypes unchanged."""
  dt = np.dtype(dt)
  return {complex64: float32, complex128: float64}.get(dt, dt)


def finfo(dtype):
  """Machine limits of a float type (bfloat16 and the narrow floats included)."""
  return ml_dtypes.finfo(np.dtype(dtype))


def iinfo(int_type):
  """Machine limits of an integer type (int4 and the other narrow ones included)."""
  return ml_dtypes.iinfo(np.dtype(int_type))


def itemsize_bits(dtype):
  """The number of bits of an element of `dtype`: its width for numbers (4 for
  int4 and float4_e2m1fn, whose NumPy itemsize is a byte), 8 for bool."""
  if dtype is None:
    raise ValueError("dtype cannot be None.")
  dt = np.dtype(dtype)
  if dt == bool_:
    return 8
  if is_integer(dt):
    return iinfo(dt).bits
  if is_float(dt):
    return finfo(dt).bits
  if is_complex(dt):
    return 2 * finfo(dt).bits
  raise ValueError(f"unexpected input: dtype={dt!r}")


def scalar_type_of(x):
  """The Python scalar type of a value's dtype: bool, int (every integer
  type), float (every real float type) or complex; TypeError otherwise."""
  dt = dtype(x)
  if not is_extended(dt):
    for kind, scalar_type in ((is_bool, bool), (is_integer, int), (is_float, float),
                              (is_complex, complex)):
      if kind(dt):
        return scalar_type
  raise TypeError(f"Invalid scalar value {x}")


def short_name(dt):
  """The short name used in jaxprs: f32, i32, u8, bf16, bool, c64, f8_e4m3fn, i4,
  ..., and an extended dtype's name (key<fry>)."""
  if is_extended(dt):
    return dt.name
  dt = np.dtype(dt)
  if dt == float0:
    return "float0"
  return (dt.name.replace("float", "f").replace("uint", "u").replace("int", "i")
          .replace("complex", "c"))
