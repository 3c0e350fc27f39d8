"""1-D convolution and cross-correlation: jnp.convolve and jnp.correlate.

Both lower, as in JAX, to one `conv_general_dilated` of the longer input
(as a 1x1xN image) with the shorter one as the kernel.
"""

import functools

from refimpl import lax
from refimpl.api import jit
from refimpl.numpy.creation import asarray
from refimpl.numpy.manipulation import flip
from refimpl.numpy.ufuncs import conj
from refimpl.numpy.util import check_arraylike, promote_dtypes, promote_dtypes_inexact

__all__ = ['convolve', 'correlate']


@functools.partial(jit, static_argnames=("mode", "op", "precision", "preferred_element_type"))
def _conv(x, y, mode, op, precision, preferred_element_type=None):
  """`op` ('convolve' or 'correlate') of 1-D `x` and `y` in NumPy's `mode`.

  Without `preferred_element_type` the inputs are promoted to an inexact
  dtype (integers give floats, unlike NumPy); with it, to their common
  dtype, and the result has that preferred dtype. The longer input slides
  under the shorter one; convolve flips the shorter one, correlate
  conjugates `y` (and reverses its output if the inputs were swapped).
  """
  if x.ndim != 1 or y.ndim != 1:
    raise ValueError(f"{op}() only support 1-dimensional inputs.")
  if preferred_element_type is None:
    x, y = promote_dtypes_inexact(x, y)
  else:
    x, y = promote_dtypes(x, y)
  if len(x) == 0 or len(y) == 0:
    raise ValueError(f"{op}: inputs cannot be empty, got shapes {x.shape} and {y.shape}.")
  out_order = slice(None)
  if op == "correlate":
    y = conj(y)
    if len(x) < len(y):
      x, y = y, x
      out_order = slice(None, None, -1)
  else:
    if len(x) < len(y):
      x, y = y, x
    y = flip(y)
  n = y.shape[0]
  if mode == "valid":
    padding = [(0, 0)]
  elif mode == "same":
    padding = [(n // 2, n - n // 2 - 1)]
  elif mode == "full":
    padding = [(n - 1, n - 1)]
  else:
    raise ValueError("mode must be one of ['full', 'same', 'valid']")
  result = lax.conv_general_dilated(x[None, None, :], y[None, None, :], (1,), padding,
                                    precision=precision,
                                    preferred_element_type=preferred_element_type)
  return result[0, 0, out_order]


@functools.partial(jit, static_argnames=("mode", "precision", "preferred_element_type"))
def convolve(a, v, mode="full", *, precision=None, preferred_element_type=None):
  """Discrete linear convolution of 1-D `a` and `v` (modes 'full', 'same', 'valid').

  As np.convolve, except that integer inputs give a float result unless
  `preferred_element_type` is given.
  """
  check_arraylike("convolve", a, v)
  return _conv(asarray(a), asarray(v), mode=mode, op="convolve", precision=precision,
               preferred_element_type=preferred_element_type)


@functools.partial(jit, static_argnames=("mode", "precision", "preferred_element_type"))
def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
  """Cross-correlation of 1-D `a` and `v`: `out[k] = sum_n a[n + k] * conj(v[n])`
  (modes 'valid' (default), 'same', 'full'), as np.correlate; integer inputs
  give a float result unless `preferred_element_type` is given.
  """
  check_arraylike("correlate", a, v)
  return _conv(asarray(a), asarray(v), mode=mode, op="correlate", precision=precision,
               preferred_element_type=preferred_element_type)
