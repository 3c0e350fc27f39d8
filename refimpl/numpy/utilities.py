"""The rest of `jax.numpy`: type predicates, printing, I/O, `block`,
`apply_along_axis`, bit packing, window functions and `einsum_path`; `ufunc`
and `frompyfunc` (refimpl/numpy/ufunc_api.py) are exported from here.

Functions of values (iscomplex, packbits, the windows, ...) are built on lax,
in the order JAX builds them. The I/O and printing functions need concrete
values, as in JAX (they call NumPy). `apply_along_axis` maps the function
with `vmap`, as JAX does.
"""

import builtins

import numpy as np

from refimpl import core, dtypes, lax
from refimpl.array import Array, array_repr_text
from refimpl.lax.shapes import canonicalize_axis
from refimpl.numpy.creation import arange, asarray, concrete, ensure_arraylike
from refimpl.numpy.manipulation import concatenate, expand_dims, pad, ravel, reshape, swapaxes
from refimpl.numpy import ufuncs
from refimpl.numpy.ufunc_api import frompyfunc, ufunc  # noqa: F401 (exported from here)
from refimpl.numpy.reductions import sum as _sum
from refimpl.numpy.util import check_arraylike
from refimpl.vectorize import vmap

__all__ = [
    'ComplexWarning', 'iscomplex', 'iscomplexobj', 'isreal', 'isrealobj', 'isscalar',
    'iterable', 'array_repr', 'array_str', 'get_printoptions', 'set_printoptions',
    'printoptions', 'frombuffer', 'fromfile', 'fromiter', 'fromstring', 'from_dlpack',
    'load', 'save', 'savez', 'block', 'apply_along_axis', 'apply_over_axes', 'packbits',
    'unpackbits', 'bartlett', 'blackman', 'hamming', 'hanning', 'kaiser', 'einsum_path',
    'ufunc', 'frompyfunc',
]


# --- type predicates ------------------------------------------------------------------

ComplexWarning = np.exceptions.ComplexWarning
iterable = np.iterable


def iscomplex(x):
  """Elementwise: whether the imaginary part is nonzero (False for real dtypes)."""
  i = ufuncs.imag(x)
  return lax.ne(i, np.zeros((), i.dtype))


def isreal(x):
  """Elementwise: whether the imaginary part is zero (True for real dtypes)."""
  i = ufuncs.imag(x)
  return lax.eq(i, np.zeros((), i.dtype))


def iscomplexobj(x):
  """Whether `x` has a complex dtype (its values are not inspected)."""
  if x is None:
    return False
  dtype = x.dtype if hasattr(x, "dtype") else asarray(x).dtype
  return dtypes.issubdtype(dtype, np.complexfloating)


def isrealobj(x):
  return not iscomplexobj(x)


def isscalar(element):
  """True for scalars and for 0-d arrays (NumPy's, JAX's, and tracers).

  Unlike `np.isscalar`, a 0-d array counts: a Python scalar passed to a
  jitted function becomes one, and the answer must not change under jit.
  """
  if np.isscalar(element):
    return True
  if isinstance(element, (np.ndarray, core.ConcreteArray, core.Tracer)):
    return element.ndim == 0
  if hasattr(element, "__jax_array__"):
    return asarray(element).ndim == 0
  return False


# --- printing (concrete values) ---------------------------------------------------------

get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions
printoptions = np.printoptions


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None):
  """The Array's repr, `Array([1., 2.], dtype=float32)`, with NumPy's printing options."""
  arr = asarray(arr)
  return array_repr_text(np.asarray(arr), arr.weak_type, max_line_width, precision,
                         suppress_small)


def array_str(a, max_line_width=None, precision=None, suppress_small=None):
  """NumPy's `array_str` of the values: `[1. 2.]`."""
  return np.array_str(np.asarray(a), max_line_width, precision, suppress_small)


# --- I/O and conversion (concrete values) ---------------------------------------------

save = np.save
savez = np.savez


def load(file, *args, **kwargs):
  """`np.load`, returning an Array for a `.npy` file (bfloat16 restored).

  NumPy stores bfloat16 as the opaque 2-byte type `V2`; it is read back as
  bfloat16. `.npz` archives and unsupported dtypes come back as NumPy does.
  """
  out = np.load(file, *args, **kwargs)
  if isinstance(out, np.ndarray):
    if out.dtype == np.dtype("V2"):
      out = out.view(dtypes.bfloat16)
    try:
      out = asarray(out)
    except TypeError:
      pass
  return out


def frombuffer(buffer, dtype=float, count=-1, offset=0):
  """An Array of the data in `buffer` (bytes-like), read as `np.frombuffer` does."""
  return asarray(np.frombuffer(buffer=buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string, dtype=float, count=-1, *, sep):
  """An Array of the numbers in text `string`, separated by `sep`."""
  return asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


_DLPACK_CPU = 1   # DLDeviceType kDLCPU


def from_dlpack(x, /, *, device=None, copy=None):
  """An Array of the data of `x`, an object with `__dlpack__` (NumPy, PyTorch,
  ...) whose data is in host memory; an Array whose data is on a device
  (`__dlpack_device__` other than the CPU's) stays there, as it is. Other
  device data is a BufferError."""
  device = x.__dlpack_device__() if hasattr(x, "__dlpack_device__") else (_DLPACK_CPU, 0)
  if device[0] != _DLPACK_CPU and isinstance(x, Array):
    return x
  if device[0] != _DLPACK_CPU:
    raise BufferError(f"jnp.from_dlpack: the data is on DLPack device {device}; "
                      "refimpl imports host data only: copy it to the host first (e.g. "
                      "torch's .cpu(), CuPy's .get()), then jax.device_put it on a device")
  return asarray(np.from_dlpack(x))


def _impure(name, what):
  def fun(*args, **kwargs):
    raise NotImplementedError(
        f"jnp.{name}() is not implemented because it may be non-pure and thus unsafe "
        f"for use with JIT and other JAX transformations (it consumes the {what}). "
        f"Consider using jnp.asarray(np.{name}(...)) instead, outside of "
        "transformations.")
  fun.__name__ = name
  fun.__doc__ = (f"Left unimplemented, as in JAX: reading a {what} is a side effect. "
                 f"Use `jnp.asarray(np.{name}(...))`.")
  return fun


fromfile = _impure("fromfile", "file object")
fromiter = _impure("fromiter", "iterable object")


# --- block, apply_along_axis, apply_over_axes --------------------------------------------

def _at_least_rank(x, rank):
  ndim = np.ndim(x)
  return lax.broadcast(x, (1,) * (rank - ndim)) if ndim < rank else x


def _block(xs):
  """(array, depth) of a nested list; lists at depth d join along axis -d."""
  if isinstance(xs, tuple):
    raise ValueError(f"jax.numpy.block does not allow tuples, got {xs}")
  if not isinstance(xs, list):
    return asarray(xs), 1
  if not xs:
    raise ValueError("jax.numpy.block does not allow empty list arguments")
  parts, depths = zip(*(_block(x) for x in xs))
  if any(d != depths[0] for d in depths[1:]):
    raise ValueError("Mismatched list depths in jax.numpy.block")
  rank = builtins.max(depths[0], builtins.max(np.ndim(x) for x in parts))
  parts = [_at_least_rank(x, rank) for x in parts]
  return concatenate(parts, axis=-depths[0]), depths[0] + 1


def block(arrays):
  """An array assembled from nested lists of blocks, as `np.block`.

  The innermost lists join along the last axis, the next ones along the
  second-to-last, and so on; blocks get leading size-1 axes until all have the
  rank of the deepest nesting (or of the largest block). Tuples are rejected.
  """
  return _block(arrays)[0]


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
  """`func1d(v, *args, **kwargs)` for every 1-D slice `v` along `axis`, by
  `vmap` over the other axes (as JAX).

  The result has shape `arr.shape[:axis] + out.shape + arr.shape[axis+1:]`,
  where `out` is what `func1d` returns.
  """
  check_arraylike("apply_along_axis", arr)
  arr = asarray(arr)
  axis = canonicalize_axis(axis, arr.ndim)
  func = lambda v: func1d(v, *args, **kwargs)
  for i in range(1, arr.ndim - axis):   # axes after `axis`: mapped, kept last
    func = vmap(func, in_axes=i, out_axes=-1)
  for _ in range(axis):                 # axes before `axis`: mapped, kept first
    func = vmap(func, in_axes=0, out_axes=0)
  return func(arr)


def apply_over_axes(func, a, axes):
  """`a = func(a, axis)` for each axis in turn; a result with one axis fewer
  gets it back (size 1), as `np.apply_over_axes`."""
  a = asarray(a)
  for axis in axes:
    b = func(a, axis)
    if b.ndim == a.ndim:
      a = b
    elif b.ndim == a.ndim - 1:
      a = expand_dims(b, axis)
    else:
      raise ValueError("function is not returning an array of the correct shape")
  return a


# --- bit packing ----------------------------------------------------------------------

def packbits(a, axis=None, bitorder="big"):
  """Packs the truth values of `a` into the bits of uint8 values, 8 per byte.

  Along `axis` (the flattened array if None), groups of 8 elements become
  one byte, the first element in the most significant bit ("big") or the
  least significant ("little"). A last incomplete group is padded with 0s.
  """
  arr = ensure_arraylike("packbits", a)
  if not (dtypes.is_integer(arr.dtype) or dtypes.is_bool(arr.dtype)):
    raise TypeError("Expected an input array of integer or boolean data type")
  if bitorder not in ("little", "big"):
    raise ValueError("'order' must be either 'little' or 'big'")
  arr = lax.convert_element_type(lax.ne(arr, np.zeros((), arr.dtype)), np.uint8)
  bits = arange(8, dtype=np.uint8)
  if bitorder == "big":
    bits = bits[::-1]
  if axis is None:
    arr = ravel(arr)
    axis = 0
  arr = swapaxes(arr, axis, -1)
  remainder = arr.shape[-1] % 8
  if remainder:
    arr = lax.pad(arr, np.uint8(0), [(0, 0, 0)] * (arr.ndim - 1) + [(0, 8 - remainder, 0)])
  arr = reshape(arr, arr.shape[:-1] + (arr.shape[-1] // 8, 8))
  bits = expand_dims(bits, tuple(range(arr.ndim - 1)))
  packed = _sum(arr << bits, axis=-1).astype(np.uint8)
  return swapaxes(packed, axis, -1)


def unpackbits(a, axis=None, count=None, bitorder="big"):
  """Unpacks each uint8 of `a` into 8 elements (0 or 1, uint8) along `axis`.

  The inverse of `packbits` (the flattened array if `axis` is None). `count`
  keeps that many bits along the axis (a negative count drops that many
  from the end; a count past the end pads with 0s).
  """
  arr = ensure_arraylike("unpackbits", a)
  if arr.dtype != np.uint8:
    raise TypeError("Expected an input array of unsigned byte data type")
  if bitorder not in ("little", "big"):
    raise ValueError("'order' must be either 'little' or 'big'")
  bits = asarray(1) << arange(8, dtype=np.uint8)
  if bitorder == "big":
    bits = bits[::-1]
  if axis is None:
    arr = ravel(arr)
    axis = 0
  arr = swapaxes(arr, axis, -1)
  masked = expand_dims(arr, -1) & expand_dims(bits, tuple(range(arr.ndim)))
  unpacked = (masked > 0).astype(np.uint8)
  unpacked = reshape(unpacked, unpacked.shape[:-2] + (unpacked.shape[-2] * 8,))
  if count is not None:
    if count > unpacked.shape[-1]:
      widths = [(0, 0)] * (unpacked.ndim - 1) + [(0, count - unpacked.shape[-1])]
      unpacked = pad(unpacked, widths)
    else:
      unpacked = unpacked[..., :count]
  return swapaxes(unpacked, axis, -1)


# --- window functions -------------------------------------------------------------------

def _window(M, name):
  """(M, n): the window size (concrete) and `iota` of it in the default float
  type, or (M, None) for M <= 1, whose window is all ones."""
  M = int(concrete(M, f"M argument of jnp.{name}"))
  if M <= 1:
    return M, None
  return M, lax.iota(dtypes.default_float_dtype(), M)


def _ones_window(M):
  return lax.full((M,), 1, dtypes.default_float_dtype())


def bartlett(M):
  """The triangular window `1 - |2n + 1 - M| / (M - 1)` of size M (float32)."""
  M, n = _window(M, "bartlett")
  if n is None:
    return _ones_window(M)
  return 1 - ufuncs.abs(2 * n + 1 - M) / (M - 1)


def blackman(M):
  """The Blackman window `0.42 - 0.5 cos(2πn/(M-1)) + 0.08 cos(4πn/(M-1))`."""
  M, n = _window(M, "blackman")
  if n is None:
    return _ones_window(M)
  return (0.42 - 0.5 * ufuncs.cos(2 * np.pi * n / (M - 1))
          + 0.08 * ufuncs.cos(4 * np.pi * n / (M - 1)))


def hamming(M):
  """The Hamming window `0.54 - 0.46 cos(2πn/(M-1))`."""
  M, n = _window(M, "hamming")
  if n is None:
    return _ones_window(M)
  return 0.54 - 0.46 * ufuncs.cos(2 * np.pi * n / (M - 1))


def hanning(M):
  """The Hann window `0.5 (1 - cos(2πn/(M-1)))`."""
  M, n = _window(M, "hanning")
  if n is None:
    return _ones_window(M)
  return 0.5 * (1 - ufuncs.cos(2 * np.pi * n / (M - 1)))


def kaiser(M, beta):
  """The Kaiser window `i0(beta sqrt(1 - ((n - α)/α)²)) / i0(beta)`, α = (M-1)/2."""
  from refimpl.scipy.special import i0  # refimpl.scipy builds on this package
  M, n = _window(M, "kaiser")
  if n is None:
    return _ones_window(M)
  alpha = 0.5 * (M - 1)
  return i0(beta * ufuncs.sqrt(1 - ((n - alpha) / alpha) ** 2)) / i0(beta)


# --- einsum_path ----------------------------------------------------------------------

def einsum_path(subscripts, /, *operands, optimize="auto"):
  """The contraction order `np.einsum_path` finds for operands of these shapes.

  Returns NumPy's `(path, description)`, where `path` is
  `['einsum_path', (i, j), ...]`. Only shapes matter, so operands may be
  traced. `optimize`: True means "optimal", False no reordering, "auto"
  "optimal" for up to 4 operands and "greedy" beyond, and "greedy",
  "optimal" or an explicit path as NumPy takes them. (JAX answers with
  opt_einsum's `contract_path`, a list of pairs and a `PathInfo`.)
  """
  if isinstance(optimize, bool):
    optimize = "optimal" if optimize else False
  elif optimize == "auto":
    optimize = "optimal" if len(operands) <= 4 else "greedy"
  shapes = [x.shape if hasattr(x, "shape") else np.shape(x) for x in operands]
  stand_ins = [np.broadcast_to(np.float32(0), shape) for shape in shapes]  # no data
  return np.einsum_path(subscripts, *stand_ins, optimize=optimize)

