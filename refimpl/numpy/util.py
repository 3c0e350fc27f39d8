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
  return (isinstance(x, (core.Tracer, core.ConcreteArray, np.ndarray, np.generic))
          or dtypes.is_python_scalar(x))


def check_arraylike(fun_name, *args):
  """Raises TypeError (as JAX does) for a non-array argument such as a list."""
  for pos, arg in enumerate(args):
    if not is_arraylike(arg):
      raise TypeError(f"{fun_name} requires ndarray or scalar arguments, got "
                      f"{type(arg)} at position {pos}.")


def _operands_result_type(args):
  """The promoted (dtype, weak_type) of a jnp function's operands. A Python
  int operand must fit the default integer dtype (OverflowError otherwise):
  in JAX the operands of jnp functions are `jit` arguments."""
  if args and all(isinstance(x, (core.Tracer, core.ConcreteArray)) for x in args):
    # Fast path: arrays of one canonical dtype and weak type promote to it.
    aval = args[0].aval
    if (all(x.aval.dtype == aval.dtype and x.aval.weak_type == aval.weak_type
            for x in args[1:]) and not dtypes.is_extended(aval.dtype)
        and dtypes.canonicalize_dtype(aval.dtype) == aval.dtype
        and not (aval.weak_type and aval.dtype == dtypes.bool_)):
      return aval.dtype, aval.weak_type
  for x in args:
    dtypes.check_python_int(x)
  return dtypes.result_type_and_weak_type(*args)


def promote_dtypes(*args):
  """Converts `args` to their common dtype (JAX's lattice, weak types honoured)."""
  to_dtype, weak = _operands_result_type(args)
  return [lax.convert_element_type(x, to_dtype, weak) for x in args]


def promote_dtypes_inexact(*args):
  """As promote_dtypes, then to the default float if the result is not inexact."""
  to_dtype, weak = _operands_result_type(args)
  return [lax.convert_element_type(x, to_inexact_dtype(to_dtype), weak) for x in args]


def promote_dtypes_numeric(*args):
  """As promote_dtypes, but booleans become the default integer."""
  to_dtype, weak = _operands_result_type(args)
  if dtypes.is_bool(to_dtype):
    to_dtype = dtypes.default_int_dtype()
  return [lax.convert_element_type(x, to_dtype, weak) for x in args]


def shape_of(x):
  return core.get_aval(x).shape


def promote_shapes(fun_name, *args):
  """NumPy rank promotion: prepends 1s so operands of different ranks broadcast.

  Scalars and equal ranks are left to lax, which broadcasts them itself.
  """
  shapes = [shape_of(a) for a in args]
  if len(args) < 2 or all(len(s) == len(shapes[0]) for s in shapes):
    return list(args)
  if len({len(s) for s in shapes if s}) < 2:
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
