"""`refimpl.scipy.integrate`: numerical integration of sampled functions, as
`jax.scipy.integrate`.

`trapezoid(y, x=None, dx=1.0, axis=-1)` is the trapezoidal rule along `axis`,
at the sample points `x` (1-D, or of the shape of `y`) or with the constant
spacing `dx`; integer and boolean inputs are promoted to the default float.
It is the function `jnp.trapezoid` is.
"""

from refimpl.numpy import trapezoid

__all__ = ["trapezoid"]
