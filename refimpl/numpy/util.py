"""Argument checking and NumPy-style promotion for the jnp functions.

jnp functions accept arrays, tracers, NumPy arrays and Python scalars, but
not lists or tuples (that would silently make one traced value per element;
convert with `jnp.array` first). They promote dtypes on JAX's lattice and
broadcast ranks as NumPy does, then call lax.
"""

import warnings

import numpy as np

from refimpl import core, dtypes, lax
from refimpl.config import config


def is_arraylike(x):
  """Arrays, tracers, NumPy arrays/scalars and Python scalars."""
  return isinstance(x, _ARRAY_TYPES) or dtypes.is_python_scalar(x)


_JAX_VALUES = (core.Tracer, core.ConcreteArray)
_ARRAY_TYPES = (*_JAX_VALUES, np.ndarray, np.generic)


def check_arraylike(fun_name, *args):
  """Raises TypeError (as JAX does) for a non-array argument such as a list."""
  if all(map(is_arraylike, args)):
    return
  for pos, arg in enumerate(args):
    if not is_arraylike(arg):
      raise TypeError(f"{fun_name} requires ndarray or scalar arguments, got "
                      f"{type(arg)} at position {pos}.")


def _promoted(kind, args):
  """The arguments converted to their promoted dtype and weak type: JAX's
  lattice (`dtypes.result_type_and_weak_type`), then for `kind` "inexact"
  the default float if that is not inexact, for "numeric" the default
  integer if it is bool. A Python int operand must fit the default integer
  dtype (OverflowError otherwise): in JAX the operands of jnp functions are
  `jit` arguments.

  The promotion is a function of the operands' dtypes and weak types (of a
  Python scalar, its type), of x64 and of the promotion mode (standard or
  strict) alone, so it is remembered, with
  which operands it converts: arrays and tracers already of the result
  type are returned as they are, as lax.convert_element_type returns them.
  """
  key = _promotion_key(kind, args)
  promotion = _PROMOTIONS.get(key) if key is not None else None
  if promotion is None:
    promotion = _promotion(kind, args)
    if key is not None:
      if len(_PROMOTIONS) > 10_000:
        _PROMOTIONS.clear()
      _PROMOTIONS[key] = promotion
  to_dtype, weak, converts = promotion
  if converts is None:
    return list(args)
  return [lax.convert_element_type(x, to_dtype, weak) if convert else x
          for x, convert in zip(args, converts)]


def _promotion_key(kind, args):
  """What `_promotion(kind, args)` depends on; None for arguments other than
  arrays, tracers, NumPy values and Python scalars (not remembered)."""
  key = [kind, config.jax_enable_x64, config.jax_numpy_dtype_promotion]
  for x in args:
    if isinstance(x, _JAX_VALUES):
      aval = x.aval
      key += (aval.dtype, aval.weak_type)
    elif dtypes.is_python_scalar(x):
      key += (type(dtypes.check_python_int(x)), None)
    elif isinstance(x, (np.ndarray, np.generic)):
      key += (x.dtype, "numpy")  # converted, unlike an array of its type
    else:
      return None
  return tuple(key)


def _promotion(kind, args):
  """(dtype, weak_type, which of `args` to convert, None if none) of `_promoted`."""
  for x in args:
    dtypes.check_python_int(x)
  to_dtype, weak = dtypes.result_type_and_weak_type(*args)
  if kind == "inexact":
    to_dtype = to_inexact_dtype(to_dtype)
  elif kind == "numeric" and dtypes.is_bool(to_dtype):
    to_dtype = dtypes.default_int_dtype()
  converts = tuple(not (isinstance(x, _JAX_VALUES)
                        and (x.aval.dtype, x.aval.weak_type) == (to_dtype, weak))
                   for x in args)
  return to_dtype, weak, converts if any(converts) else None


_PROMOTIONS = {}
"""`_promotion`'s results by `_promotion_key`: operand types are few."""


def promote_dtypes(*args):
  """Converts `args` to their common dtype (JAX's lattice, weak types honoured)."""
  return _promoted(None, args)


def promote_dtypes_inexact(*args):
  """As promote_dtypes, then to the default float if the result is not inexact."""
  return _promoted("inexact", args)


def promote_dtypes_numeric(*args):
  """As promote_dtypes, but booleans become the default integer."""
  return _promoted("numeric", args)


def shape_of(x):
  return core.get_aval(x).shape


def promote_shapes(fun_name, *args):
  """NumPy rank promotion: prepends 1s so operands of different ranks broadcast.

  Scalars and equal ranks are left to lax, which broadcasts them itself.
  """
  if len(args) < 2:
    return list(args)
  shapes = [*map(shape_of, args)]
  if len(set(map(len, shapes)) - {0}) < 2:  # equal ranks, or scalars
    return list(args)
  check_rank_promotion(fun_name, shapes)
  try:
    result_rank = len(np.broadcast_shapes(*shapes))
  except ValueError:
    raise ValueError(f"{fun_name}: incompatible shapes for broadcasting: "
                     f"{', '.join(map(str, shapes))}") from None
  return [_broadcast_to_rank(a, s, result_rank) for a, s in zip(args, shapes)]


def check_rank_promotion(fun_name, shapes):
  """Applies `jax_numpy_rank_promotion`: 'allow', 'warn' or 'raise'."""
  mode = config.jax_numpy_rank_promotion
  if mode == "allow":
    return
  msg = (f"Operands could not be broadcast together for {fun_name} with shapes "
         f"{' '.join(map(str, shapes))} and with the config option "
         f"jax_numpy_rank_promotion='{mode}'.")
  if mode == "raise":
    raise ValueError(msg + " Add leading size-1 dimensions explicitly (with "
                     "`jnp.expand_dims` or `x[None]`) to broadcast on purpose.")
  warnings.warn(msg + " If this was intended, set jax_numpy_rank_promotion to 'allow'.")


def _broadcast_to_rank(x, shape, rank):
  if len(shape) == rank:
    return x
  new_shape = (1,) * (rank - len(shape)) + tuple(shape)
  return lax.broadcast_in_dim(x, new_shape, range(rank - len(shape), rank))


def promote_args(fun_name, *args):
  """check_arraylike, then promote_dtypes, then promote_shapes."""
  check_arraylike(fun_name, *args)
  return promote_shapes(fun_name, *promote_dtypes(*args))


def promote_args_inexact(fun_name, *args):
  check_arraylike(fun_name, *args)
  return promote_shapes(fun_name, *promote_dtypes_inexact(*args))


def promote_args_numeric(fun_name, *args):
  check_arraylike(fun_name, *args)
  return promote_shapes(fun_name, *promote_dtypes_numeric(*args))


def to_inexact_dtype(dtype):
  """`dtype` if it is inexact, else the default float dtype: the dtype in
  which jnp functions with inexact results take integer and bool inputs."""
  return dtype if dtypes.is_inexact(dtype) else dtypes.default_float_dtype()
