"""Operators and methods shared by concrete arrays and tracers.

Every operator is the `refimpl.numpy` function of the same meaning, so
`x + y` traces exactly as `jnp.add(x, y)` does. Both `Array` and `Tracer`
inherit from `ArrayMethods`; each provides `aval`.
"""

import functools


@functools.cache  # an import statement costs more than a cached call, on every operator
def _jnp():
  import refimpl.numpy as jnp  # imported late: refimpl.numpy builds on this module
  return jnp


def _binary(name, reflected=False):
  def method(self, other):
    jnp = _jnp()
    if not jnp.is_arraylike(other):
      return NotImplemented
    fn = getattr(jnp, name)
    return fn(other, self) if reflected else fn(self, other)
  method.__name__ = name
  return method


def _unary(name):
  def method(self):
    return getattr(_jnp(), name)(self)
  method.__name__ = name
  return method


def _forward(name):
  """A method `x.name(*args, **kwargs)` that calls `jnp.name(x, *args, **kwargs)`."""
  def method(self, *args, **kwargs):
    return getattr(_jnp(), name)(self, *args, **kwargs)
  method.__name__ = name
  return method


class ArrayMethods:
  """The array interface: properties, operators and NumPy-style methods."""

  __slots__ = ()

  # -- properties -----------------------------------------------------------
  @property
  def shape(self):
    return self.aval.shape

  @property
  def dtype(self):
    return self.aval.dtype

  @property
  def ndim(self):
    return self.aval.ndim

  @property
  def size(self):
    return self.aval.size

  @property
  def weak_type(self):
    return self.aval.weak_type

  @property
  def itemsize(self):
    return self.aval.dtype.itemsize

  @property
  def nbytes(self):
    """size * itemsize (8 bytes per threefry key for key arrays)."""
    return self.size * self.itemsize

  @property
  def T(self):
    return _jnp().transpose(self)

  @property
  def mT(self):
    return _jnp().matrix_transpose(self)

  @property
  def real(self):
    return _jnp().real(self)

  @property
  def imag(self):
    return _jnp().imag(self)

  @property
  def at(self):
    """Functional updates: `x.at[idx].set(y)` returns a new array."""
    from refimpl.numpy.indexing import IndexUpdateHelper
    return IndexUpdateHelper(self)

  def __getitem__(self, index):
    from refimpl.numpy.indexing import getitem
    return getitem(self, index)

  # -- operators ------------------------------------------------------------
  __add__ = _binary("add")
  __radd__ = _binary("add", reflected=True)
  __sub__ = _binary("subtract")
  __rsub__ = _binary("subtract", reflected=True)
  __mul__ = _binary("multiply")
  __rmul__ = _binary("multiply", reflected=True)
  __truediv__ = _binary("true_divide")
  __rtruediv__ = _binary("true_divide", reflected=True)
  __floordiv__ = _binary("floor_divide")
  __rfloordiv__ = _binary("floor_divide", reflected=True)
  __mod__ = _binary("remainder")
  __rmod__ = _binary("remainder", reflected=True)
  __pow__ = _binary("power")
  __rpow__ = _binary("power", reflected=True)
  __matmul__ = _binary("matmul")
  __rmatmul__ = _binary("matmul", reflected=True)
  __and__ = _binary("bitwise_and")
  __rand__ = _binary("bitwise_and", reflected=True)
  __or__ = _binary("bitwise_or")
  __ror__ = _binary("bitwise_or", reflected=True)
  __xor__ = _binary("bitwise_xor")
  __rxor__ = _binary("bitwise_xor", reflected=True)
  __lshift__ = _binary("left_shift")
  __rlshift__ = _binary("left_shift", reflected=True)
  __rshift__ = _binary("right_shift")
  __rrshift__ = _binary("right_shift", reflected=True)
  __eq__ = _binary("equal")
  __ne__ = _binary("not_equal")
  __lt__ = _binary("less")
  __le__ = _binary("less_equal")
  __gt__ = _binary("greater")
  __ge__ = _binary("greater_equal")
  __neg__ = _unary("negative")
  __pos__ = _unary("positive")
  __abs__ = _unary("abs")
  __invert__ = _unary("invert")

  def __divmod__(self, other):
    return _jnp().divmod(self, other)

  def __rdivmod__(self, other):
    return _jnp().divmod(other, self)

  def __round__(self, ndigits=None):
    """`round(x)` is an integer array (as `round` of a float is an int);
    `round(x, n)` keeps the dtype."""
    out = _jnp().round(self, ndigits or 0)
    return out.astype(int) if ndigits is None else out

  # -- methods --------------------------------------------------------------
  def item(self, *args):
    """The element as a Python scalar; a traced value has none
    (ConcretizationTypeError). Concrete arrays override this."""
    return self._concrete_numpy("item").item(*args)

  def tolist(self):
    return self._concrete_numpy("tolist").tolist()

  def _concrete_numpy(self, method):
    import numpy as np
    from refimpl.numpy.creation import concrete
    return np.asarray(concrete(self, f"This occurred in the {method}() method of jax.Array"))

  def astype(self, dtype, copy=False, device=None):
    return _jnp().astype(self, dtype)

  def __array_namespace__(self, /, *, api_version=None):
    """The Python array API namespace of arrays: `refimpl.numpy`."""
    from refimpl.numpy.array_api import array_namespace
    return array_namespace(api_version)

  def reshape(self, *shape, order="C"):
    if len(shape) == 1 and not isinstance(shape[0], int):
      shape = shape[0]
    return _jnp().reshape(self, shape, order=order)

  def transpose(self, *axes):
    if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], int)):
      axes = axes[0]
    return _jnp().transpose(self, axes or None)

  def flatten(self, order="C"):
    return _jnp().ravel(self, order=order)

  @property
  def flat(self):
    raise NotImplementedError("JAX Arrays do not implement the arr.flat property: "
                              "consider arr.flatten() instead.")

  def compress(self, condition, axis=None, *, out=None, size=None, fill_value=0):
    return _jnp().compress(condition, self, axis=axis, out=out, size=size,
                           fill_value=fill_value)

  def view(self, dtype=None, type=None):
    """The bits of the array reinterpreted as `dtype` (`lax.bitcast_convert_type`).

    A narrower dtype multiplies the last axis by the width ratio, a wider one
    divides it (it must divide evenly); bool counts as 8 bits and complex as
    two floats. A 0-d array keeps its width.
    """
    import numpy as np
    from refimpl import dtypes, lax
    from refimpl.numpy.creation import user_dtype
    jnp = _jnp()
    if type is not None:
      raise NotImplementedError("`type` argument of array.view() is not supported.")
    if dtype is None:
      return self
    dtype = user_dtype(dtype, "view")
    bits_in, bits_out = self.dtype.itemsize * 8, dtype.itemsize * 8
    if self.ndim == 0:
      if bits_in != bits_out:
        raise ValueError("view() of a 0d array is only supported if the itemsize is "
                         "unchanged.")
      return lax.expand_dims(self, (0,)).view(dtype).squeeze()
    if (self.shape[-1] * bits_in) % bits_out:
      raise ValueError("When changing to a larger dtype, its size must be a divisor of the "
                       "total size in bytes of the last axis of the array.")
    if self.dtype == dtype:
      return self
    if self.dtype == np.bool_:
      return self.astype(np.uint8).view(dtype)
    if dtypes.is_complex(self.dtype):
      parts = jnp.stack([self.real, self.imag], axis=-1)
      return parts.reshape(*self.shape[:-1], 2 * self.shape[-1]).view(dtype)
    if dtype == np.bool_:
      return self.view(np.uint8).astype(bool)
    if dtypes.is_complex(dtype):
      out = self.view(jnp.finfo(dtype).dtype)
      return lax.complex(out[..., 0::2], out[..., 1::2])
    if bits_in < bits_out:
      ratio = bits_out // bits_in
      return lax.bitcast_convert_type(
          self.reshape(*self.shape[:-1], self.shape[-1] // ratio, ratio), dtype)
    out = lax.bitcast_convert_type(self, dtype)
    return out.reshape(*self.shape[:-1], -1) if bits_in > bits_out else out

  all = _forward("all")
  any = _forward("any")
  argmax = _forward("argmax")
  argmin = _forward("argmin")
  argpartition = _forward("argpartition")
  argsort = _forward("argsort")
  choose = _forward("choose")
  clip = _forward("clip")
  conj = _forward("conj")
  conjugate = _forward("conjugate")
  copy = _forward("copy")
  cumprod = _forward("cumprod")
  cumsum = _forward("cumsum")
  diagonal = _forward("diagonal")
  dot = _forward("dot")
  max = _forward("max")
  mean = _forward("mean")
  min = _forward("min")
  nonzero = _forward("nonzero")
  prod = _forward("prod")
  ptp = _forward("ptp")
  ravel = _forward("ravel")
  repeat = _forward("repeat")
  round = _forward("round")
  searchsorted = _forward("searchsorted")
  sort = _forward("sort")
  squeeze = _forward("squeeze")
  std = _forward("std")
  sum = _forward("sum")
  swapaxes = _forward("swapaxes")
  take = _forward("take")
  trace = _forward("trace")
  var = _forward("var")
