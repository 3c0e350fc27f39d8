"""The exceptions refimpl raises, with JAX's class names and hierarchy.

Each message says what to do instead; see docs/errors.md for when each is raised.
"""


class JAXTypeError(TypeError):
  """Base of the tracer errors: a value's type (traced) forbids the operation."""


def _see_error_page(error_class):
  """The last line of JAX's message: where its documentation explains the error."""
  return f"\nSee https://docs.jax.dev/en/latest/errors.html#jax.errors.{error_class.__name__}"


class ConcretizationTypeError(JAXTypeError):
  """A concrete Python value was needed from a traced (abstract) value."""

  def __init__(self, tracer, context=""):
    super().__init__(
        f"Abstract tracer value encountered where concrete value is expected: "
        f"{tracer._short_repr()}\n{context}\n"
        "The problem arose because a value that is only known at run time was "
        "used where Python needs a concrete value. If it is a function argument, "
        "you can mark it static with `static_argnums` or `static_argnames` in "
        "`jit`; otherwise use a structured primitive such as `jnp.where`, "
        "`lax.cond` or `lax.while_loop`." + _see_error_page(type(self)))


class TracerBoolConversionError(ConcretizationTypeError):
  """`bool()` (an `if`, `while`, `and`, ...) was applied to a traced value."""

  def __init__(self, tracer):
    JAXTypeError.__init__(
        self,
        f"Attempted boolean conversion of traced array with shape "
        f"{tracer.aval.str_short()}.\n"
        "The error occurred because Python control flow (`if`, `while`, `and`, "
        "`or`, `not`) needs a concrete boolean, but the value is traced. Use "
        "`jnp.where` or `lax.select` to choose between values, `lax.cond` or "
        "`lax.switch` to choose between computations, `lax.while_loop` or "
        "`lax.fori_loop` to loop; or mark the argument static with "
        "`static_argnums`/`static_argnames` in `jit`." + _see_error_page(type(self)))


class TracerIntegerConversionError(JAXTypeError):
  """`int()`, `operator.index()` or similar was applied to a traced value."""

  def __init__(self, tracer):
    super().__init__(
        f"The __index__() method was called on traced array with shape "
        f"{tracer.aval.str_short()}.\n"
        "A Python integer is needed (for a shape, a range or a Python index) "
        "but the value is traced. Mark the argument static with "
        "`static_argnums`/`static_argnames` in `jit`, or use `lax.dynamic_slice` "
        "/ `lax.fori_loop` which take traced indices.")


class TracerArrayConversionError(JAXTypeError):
  """`np.asarray()` (or `__array__`) was applied to a traced value."""

  def __init__(self, tracer):
    super().__init__(
        f"The numpy.ndarray conversion method __array__() was called on traced "
        f"array with shape {tracer.aval.str_short()}.\n"
        "A traced value has no data to hand to NumPy. Use `refimpl.numpy` "
        "functions instead of `numpy` ones inside transformed functions.")


class JAXIndexError(IndexError):
  """An index is invalid for the array it indexes (JAX's IndexError subclass)."""


class NonConcreteBooleanIndexError(JAXIndexError):
  """A boolean mask with a traced value was used to index an array."""

  def __init__(self, tracer):
    super().__init__(
        f"Array boolean indices must be concrete; got {tracer.aval.str_short()}.\n"
        "The size of the result would depend on the values in the mask, and "
        "arrays under `jit` must have static shapes. Use the three-argument "
        "form `jnp.where(mask, x, fill)` to keep the shape, or pass "
        "`size=` to `jnp.nonzero`/`jnp.where` to bound it.")


class UnexpectedTracerError(JAXTypeError):
  """A tracer escaped the transformation that created it (a leaked tracer)."""

  def __init__(self, msg):
    super().__init__(
        msg + "\nThis usually means a traced value was stored in a global, a "
        "closure or an object attribute and used after the transformed "
        "function returned. Return it as an output instead.")


class KeyReuseError(JAXTypeError):
  """Reserved for JAX's key-reuse checker (not enabled by default)."""


class JaxprTypeError(TypeError):
  """A jaxpr is ill-typed: an equation's inputs do not match its rule."""


class InconclusiveDimensionOperation(Exception):
  """Reserved for symbolic shapes, which refimpl does not implement."""


class JaxRuntimeError(RuntimeError):
  """A backend failed while running a compiled program."""
