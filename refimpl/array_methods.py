"""Operators and methods shared by concrete arrays and tracers.

Every operator is the `refimpl.numpy` function of the same meaning, so
`x + y` traces exactly as `jnp.add(x, y)` does. Both `Array` and `Tracer`
inherit from `ArrayMethods`; each provides `aval`.
"""


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
    return _jnp().round(self, ndigits or 0)

  # -- methods --------------------------------------------------------------
  def astype(self, dtype, copy=False, device=None):
    return _jnp().astype(self, dtype)

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

  all = _forward("all")
  any = _forward("any")
  argmax = _forward("argmax")
  argmin = _forward("argmin")
  argsort = _forward("argsort")
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
  ravel = _forward("ravel")
  repeat = _forward("repeat")
  round = _forward("round")
  sort = _forward("sort")
  squeeze = _forward("squeeze")
  std = _forward("std")
  sum = _forward("sum")
  swapaxes = _forward("swapaxes")
  take = _forward("take")
  trace = _forward("trace")
  var = _forward("var")
