"""Convolution: the conv_general_dilated primitive and the lax functions built on it.

Layouts are named by `ConvDimensionNumbers(lhs_spec, rhs_spec, out_spec)`:
`lhs_spec` lists the input's (batch, feature, spatial...) dimensions,
`rhs_spec` the kernel's (output feature, input feature, spatial...) ones and
`out_spec` the output's (batch, feature, spatial...) ones. The spatial
dimensions pair up in that order; the strides, padding and dilations are
given in that order too. Strings such as `('NHWC', 'HWIO', 'NHWC')` name
the same thing: N batch, C feature, O/I kernel output/input feature, other
letters spatial dimensions (ordered as they appear in the kernel string).
"""

import math
import operator
from typing import NamedTuple, Union

import numpy as np

from refimpl import core, dtypes
from refimpl.core import Primitive, ShapedArray
from refimpl.interpreters import ad, batching
from refimpl.lax import elementwise, shapes
from refimpl.lax.linalg import canonicalize_precision, dot_general
from refimpl.lax.rules import ANY, as_dtype, check_dtype, check_same_dtypes, contraction_dtype
from refimpl.sharding import check_out_sharding
from refimpl.lax.windows import dilate_shape, stride_dim, padtype_to_pads

__all__ = ['ConvDimensionNumbers', 'ConvGeneralDilatedDimensionNumbers',
           'conv_general_dilated', 'conv_general_dilated_p', 'conv', 'conv_with_general_padding',
           'conv_transpose', 'conv_dimension_numbers', 'conv_general_permutations',
           'conv_general_shape_tuple', 'conv_shape_tuple', 'conv_transpose_shape_tuple',
           'conv_general_dilated_patches', 'conv_general_dilated_local']


class ConvDimensionNumbers(NamedTuple):
  """Where the batch, feature and spatial dimensions of a convolution are.

  lhs_spec: (batch dimension, feature dimension, spatial dimensions...).
  rhs_spec: (out feature dimension, in feature dimension, spatial dimensions...).
  out_spec: (batch dimension, feature dimension, spatial dimensions...).
  """
  lhs_spec: tuple
  rhs_spec: tuple
  out_spec: tuple


ConvGeneralDilatedDimensionNumbers = Union[tuple[str, str, str], ConvDimensionNumbers, None]


# --- dimension numbers --------------------------------------------------------------

def conv_general_permutations(dimension_numbers):
  """The (lhs, rhs, out) permutations named by three layout strings such as
  ('NCHW', 'OIHW', 'NCHW'): each puts (batch/out feature, feature/in feature,
  spatial...) first, spatial dimensions in the kernel string's order."""
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  charpairs = (("N", "C"), ("O", "I"), ("N", "C"))
  for i, (a, b) in enumerate(charpairs):
    if not dimension_numbers[i].count(a) == dimension_numbers[i].count(b) == 1:
      raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters "
                      f"'{a}' and '{b}' exactly once, got {dimension_numbers[i]}.")
    if len(dimension_numbers[i]) != len(set(dimension_numbers[i])):
      raise TypeError(f"convolution dimension_numbers[{i}] cannot have duplicate "
                      f"characters, got {dimension_numbers[i]}.")
  if not (set(lhs_spec) - {"N", "C"} == set(rhs_spec) - {"O", "I"}
          == set(out_spec) - {"N", "C"}):
    raise TypeError(f"convolution dimension_numbers elements must each have the same set "
                    f"of spatial characters, got {dimension_numbers}.")

  def permutation(spec, pair):
    spatial = sorted((i for i, c in enumerate(spec) if c not in pair),
                     key=lambda i: rhs_spec.index(spec[i]))
    return (spec.index(pair[0]), spec.index(pair[1])) + tuple(spatial)

  return tuple(permutation(spec, pair) for spec, pair in zip(dimension_numbers, charpairs))


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers):
  """`dimension_numbers` (None, three layout strings, or ConvDimensionNumbers) as
  ConvDimensionNumbers. None means ('NC...', 'OI...', 'NC...'): dimensions in order."""
  if isinstance(dimension_numbers, ConvDimensionNumbers):
    return ConvDimensionNumbers(*(tuple(operator.index(d) for d in spec)
                                  for spec in dimension_numbers))
  if len(lhs_shape) != len(rhs_shape):
    raise TypeError(f"convolution requires lhs and rhs ndim to be equal, got "
                    f"{len(lhs_shape)} and {len(rhs_shape)}.")
  if dimension_numbers is None:
    iota = tuple(range(len(lhs_shape)))
    return ConvDimensionNumbers(iota, iota, iota)
  if not isinstance(dimension_numbers, (list, tuple)):
    raise TypeError(f"convolution dimension_numbers must be tuple/list or None, got "
                    f"{type(dimension_numbers)}.")
  if len(dimension_numbers) != 3:
    raise TypeError(f"convolution dimension_numbers list/tuple must be length 3, got "
                    f"{len(dimension_numbers)}.")
  if not all(isinstance(spec, str) for spec in dimension_numbers):
    raise TypeError(f"convolution dimension_numbers elements must be strings, got "
                    f"{tuple(map(type, dimension_numbers))}.")
  for i, spec in enumerate(dimension_numbers):
    if len(spec) != len(lhs_shape):
      raise TypeError(f"convolution dimension_numbers[{i}] must have len equal to the "
                      f"ndim of lhs and rhs, got {len(spec)} for lhs and rhs shapes "
                      f"{tuple(lhs_shape)} and {tuple(rhs_shape)}.")
  return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))


# --- shape tuples -------------------------------------------------------------------

def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1):
  """The output shape of a convolution in canonical layout: lhs (N, C, spatial...),
  rhs (O, I, spatial...), output (N // batch_group_count, O, spatial...)."""
  if isinstance(pads, str):
    pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
  if len(pads) != len(lhs_shape) - 2:
    raise TypeError(f"Wrong number of explicit pads for convolution: expected "
                    f"{len(lhs_shape) - 2}, got {len(pads)}.")
  padded = [int(d) + lo + hi for d, (lo, hi) in zip(lhs_shape[2:], pads)]
  if any(d < 0 for d in padded):
    raise ValueError(f"Negative padding is larger than the size of the corresponding "
                     f"dimension: got padding={pads} for lhs_shape[2:]={lhs_shape[2:]}")
  spatial = tuple(stride_dim(d, int(k), s) for d, k, s in zip(padded, rhs_shape[2:], strides))
  return (int(lhs_shape[0]) // batch_group_count, int(rhs_shape[0])) + spatial


def _permute(shape, permutation):
  return tuple(int(shape[p]) for p in permutation)


def _unpermute(shape, permutation):
  """The inverse of `_permute`: `shape` given in canonical order, put back in layout."""
  return tuple(int(shape[i]) for i in np.argsort(permutation))


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                             dimension_numbers):
  """The output shape of a convolution with layout strings `dimension_numbers`."""
  lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
  out = conv_shape_tuple(_permute(lhs_shape, lhs_perm), _permute(rhs_shape, rhs_perm),
                         window_strides, padding)
  return _unpermute(out, out_perm)


def _conv_transpose_padding(k, s, padding):
  """The (before, after) padding of a transposed convolution's spatial dimension for
  kernel size `k`, stride `s` and the forward padding 'SAME', 'VALID' or (lo, hi)
  (which becomes `k - 1 - lo, k - 1 - hi`, as the gradient of that convolution)."""
  if isinstance(padding, tuple):
    return tuple(k - 1 - p for p in padding)
  if padding == "SAME":
    pad_len = k + s - 2
    pad_a = k - 1 if s > k - 1 else math.ceil(pad_len / 2)
  elif padding == "VALID":
    pad_len = k + s - 2 + max(k - s, 0)
    pad_a = k - 1
  else:
    raise ValueError("Padding mode must be `SAME` or `VALID`.")
  return pad_a, pad_len - pad_a


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                               dimension_numbers):
  """The output shape of `conv_transpose` with layout strings `dimension_numbers`."""
  lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
  lhs_trans, rhs_trans = _permute(lhs_shape, lhs_perm), _permute(rhs_shape, rhs_perm)
  if isinstance(padding, str):
    padding = [_conv_transpose_padding(k, s, padding)
               for k, s in zip(rhs_trans[2:], window_strides)]
  spatial = tuple((i - 1) * s - k + 2 + lo + hi for i, k, s, (lo, hi)
                  in zip(lhs_trans[2:], rhs_trans[2:], window_strides, padding))
  return _unpermute((lhs_trans[0], rhs_trans[0]) + spatial, out_perm)


# --- the primitive --------------------------------------------------------------------

conv_general_dilated_p = Primitive("conv_general_dilated")


def _conv_dtype(lhs, rhs, preferred_element_type):
  """The operands' dtype, or `preferred_element_type` when it is a compatible
  type at least as wide (integers may also become floats)."""
  check_dtype("conv_general_dilated", lhs, ANY)
  check_same_dtypes("conv_general_dilated", lhs, rhs)
  dtype = lhs.dtype
  if preferred_element_type is None:
    return dtype
  preferred = np.dtype(preferred_element_type)
  if dtypes.is_complex(dtype):
    compatible = dtypes.is_complex(preferred)
  elif dtypes.is_float(dtype):
    compatible = dtypes.is_float(preferred)
  else:  # integers and bool may accumulate as (wider) integers or as floats
    compatible = dtypes.is_integer(preferred) or dtypes.is_float(preferred)
  if not compatible:
    raise TypeError("Input type is incompatible with `preferred_element_type`. The "
                    "compatible combinations of (input_type, preferred_element_type) are "
                    "(integral, integral), (integral, floating), (floating, floating), "
                    "(complex, complex).")
  if preferred.itemsize < dtype.itemsize:
    raise TypeError("`preferred_element_type` must not be narrower than the original "
                    "type.")
  return preferred


@conv_general_dilated_p.def_impl
def _conv_general_dilated_reference(lhs, rhs, *, window_strides, padding, lhs_dilation,
                                    rhs_dilation, dimension_numbers, feature_group_count,
                                    batch_group_count, precision, preferred_element_type):
  """N-dimensional convolution (a cross-correlation: the kernel is not flipped).

  In canonical layout (lhs `x[n, c, p...]`, kernel `w[o, i, k...]`; see
  ConvDimensionNumbers), let `xd` be `x` with `lhs_dilation - 1` holes
  between neighbouring spatial elements, then padded by `padding` ((lo, hi)
  per spatial dimension; negative crops). Then, per spatial dimension,

      out[n, o, y] = sum over i, k of xd[n', c, y * stride + k * rhs_dilation] * w[o, i, k]

  where only positions holding an element of `x` contribute: holes and
  padding are skipped, so they never form 0 * inf = NaN.

  Groups (at most one count > 1). With `feature_group_count = G`, the input
  features and the kernel's output features split into G contiguous
  groups; output feature o (group g = o // (O / G)) reads input features
  c = g * (C / G) + i, so the kernel has I = C / G. With
  `batch_group_count = B`, the lhs batch splits into B contiguous groups and
  output feature o (group b = o // (O / B)) reads batch n' = b * (N / B) + n
  for output batch n < N / B; otherwise n' = n and c = i with I = C.

  Shape rule: output batch N / B, features O, spatial sizes
  `max(0, (padded - dilated kernel) // stride + 1)`, laid out by `out_spec`.
  Dtype: lhs and rhs share a dtype; the result has it, or
  `preferred_element_type` (same kind and not narrower; integers may
  become floats). Values, as dot_general's: real floats are multiplied and
  summed in the result dtype (16-bit floats in float32, the sum rounded
  once), in an unspecified order, so the last bits of a float result
  depend on the implementation (as XLA on CPU); complex numbers are
  computed in complex128 and rounded, and which parts of a result an
  infinite or NaN operand makes NaN depends on the implementation too, as
  dot_general's; integers wrap; bool gives the OR of ANDs. An empty sum is
  0. `precision` has no effect.
  """
  out_dtype = _conv_dtype(lhs, rhs, preferred_element_type)
  compute = contraction_dtype(out_dtype)
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  x = np.transpose(lhs, lhs_spec).astype(compute)   # (N, C, spatial...)
  w = np.transpose(rhs, rhs_spec).astype(compute)   # (O, I, kernel spatial...)
  config = tuple((lo, hi, d - 1) for (lo, hi), d in zip(padding, lhs_dilation))
  x = shapes.pad_p.impl(x, np.zeros((), compute), padding_config=((0, 0, 0),) * 2 + config)
  n, c = x.shape[:2]
  o, i = w.shape[:2]
  groups, batch_groups = feature_group_count, batch_group_count
  spatial = tuple(range(x.ndim - 2))
  # x as (batch group, group, n, spatial..., i); w as (batch group, group, kernel..., i, o)
  x = x.reshape((batch_groups, n // batch_groups, groups, c // groups) + x.shape[2:])
  x = np.ascontiguousarray(x.transpose((0, 2, 1) + tuple(4 + d for d in spatial) + (3,)))
  w = w.reshape((batch_groups, groups, o // (groups * batch_groups), i) + w.shape[2:])
  w = w.transpose((0, 1) + tuple(4 + d for d in spatial) + (3, 2))
  out_spatial = tuple(stride_dim(d, k, s) for d, k, s in zip(
      x.shape[3:-1], dilate_shape(w.shape[2:-2], rhs_dilation), window_strides))
  out_shape = (batch_groups, groups, n // batch_groups) + out_spatial + (w.shape[-1],)
  kernel_taps = list(np.ndindex(*w.shape[2:-2]))
  # for each kernel tap, the lhs positions it reads, for every output position
  reads = [tuple(slice(kd * r, kd * r + (size - 1) * s + 1, s) for kd, r, size, s
                 in zip(k, rhs_dilation, out_spatial, window_strides)) for k in kernel_taps]
  rows = 1 + len(out_spatial)   # n and the output positions

  def matrix(a, rows):   # a batch (batch group, group) of matrices: leading dims as rows
    return a.reshape(a.shape[:2] + (math.prod(a.shape[2:2 + rows]), math.prod(a.shape[2 + rows:])))

  if not (all(out_spatial) and kernel_taps and i):
    out = np.zeros(out_shape, compute)
  elif np.isfinite(w).all():
    # Holes and padding hold zeros, and so do their products with a finite
    # kernel: one matrix product over all (tap, input feature) pairs.
    patches = np.stack([x[(..., *taps, slice(None))] for taps in reads], axis=-2)
    out = np.matmul(matrix(patches, rows), matrix(w, w.ndim - 3)).reshape(out_shape)
  else:
    # An infinity or NaN of the kernel meets elements only: tap by tap, masked.
    is_element = shapes.pad_p.impl(np.ones(_permute(lhs.shape, lhs_spec[2:]), bool),
                                   np.False_, padding_config=config)
    out = np.zeros(out_shape, compute)
    for k, taps in zip(kernel_taps, reads):
      product = np.matmul(matrix(x[(..., *taps, slice(None))], rows),
                          w[(slice(None), slice(None), *k)])
      out += np.where(is_element[taps][..., None], product.reshape(out_shape), 0)
  # (batch group, group, n, spatial..., o) -> (n, batch group, group, o, spatial...)
  out = out.transpose((2, 0, 1, out.ndim - 1) + tuple(3 + d for d in spatial))
  out = out.reshape((n // batch_groups, o) + out_spatial)
  if dtypes.is_bool(out_dtype):
    out = out > 0
  return as_dtype(np.transpose(out, np.argsort(out_spec)), out_dtype)


@conv_general_dilated_p.def_abstract_eval
def _conv_general_dilated_shape_rule(lhs, rhs, *, window_strides, padding, lhs_dilation,
                                     rhs_dilation, dimension_numbers, feature_group_count,
                                     batch_group_count, precision, preferred_element_type):
  dtype = _conv_dtype(lhs, rhs, preferred_element_type)
  if lhs.ndim != rhs.ndim:
    raise ValueError(f"conv_general_dilated lhs and rhs must have the same number of "
                     f"dimensions, but got {lhs.shape} and {rhs.shape}.")
  if lhs.ndim < 2:
    raise ValueError(f"conv_general_dilated operands must have rank at least 2, got "
                     f"{lhs.shape} and {rhs.shape}.")
  for name, spec in zip(("lhs_spec", "rhs_spec", "out_spec"), dimension_numbers):
    if sorted(spec) != list(range(lhs.ndim)):
      raise ValueError(f"conv_general_dilated dimension_numbers.{name} must be a "
                       f"permutation of range({lhs.ndim}), got {spec}.")
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  if not feature_group_count > 0:
    raise ValueError(f"conv_general_dilated feature_group_count must be a positive "
                     f"integer, got {feature_group_count}.")
  lhs_features = lhs.shape[lhs_spec[1]]
  quot, rem = divmod(lhs_features, feature_group_count)
  if rem:
    raise ValueError(f"conv_general_dilated feature_group_count must divide lhs feature "
                     f"dimension size, but {feature_group_count} does not divide "
                     f"{lhs_features}.")
  if quot != rhs.shape[rhs_spec[1]]:
    raise ValueError(f"conv_general_dilated lhs feature dimension size divided by "
                     f"feature_group_count must equal the rhs input feature dimension "
                     f"size, but {lhs_features} // {feature_group_count} != "
                     f"{rhs.shape[rhs_spec[1]]}.")
  out_features = rhs.shape[rhs_spec[0]]
  if out_features % feature_group_count:
    raise ValueError(f"conv_general_dilated rhs output feature dimension size must be a "
                     f"multiple of feature_group_count, but {out_features} is not a "
                     f"multiple of {feature_group_count}.")
  if not batch_group_count > 0:
    raise ValueError(f"conv_general_dilated batch_group_count must be a positive integer, "
                     f"got {batch_group_count}.")
  lhs_batch = lhs.shape[lhs_spec[0]]
  if batch_group_count > 1 and lhs_batch % batch_group_count:
    raise ValueError(f"conv_general_dilated batch_group_count must divide lhs batch "
                     f"dimension size, but {batch_group_count} does not divide {lhs_batch}.")
  if out_features % batch_group_count:
    raise ValueError(f"conv_general_dilated rhs output feature dimension size must be a "
                     f"multiple of batch_group_count, but {out_features} is not a "
                     f"multiple of {batch_group_count}.")
  if batch_group_count > 1 and feature_group_count > 1:
    raise ValueError(f"At most one of batch_group_count and feature_group_count may be > "
                     f"1, got batch_group_count={batch_group_count} and "
                     f"feature_group_count={feature_group_count}")
  n_spatial = lhs.ndim - 2
  for name, value in (("window_strides", window_strides), ("padding", padding),
                      ("lhs_dilation", lhs_dilation), ("rhs_dilation", rhs_dilation)):
    if len(value) != n_spatial:
      raise ValueError(f"conv_general_dilated window and {name} must have the same "
                       f"number of dimensions, but got {n_spatial} and {len(value)}")
  if not all(s > 0 for s in window_strides):
    raise ValueError(f"conv_general_dilated window_strides must be positive, got "
                     f"{window_strides}.")
  lhs_trans = dilate_shape(_permute(lhs.shape, lhs_spec), lhs_dilation)
  rhs_trans = dilate_shape(_permute(rhs.shape, rhs_spec), rhs_dilation)
  out = conv_shape_tuple(lhs_trans, rhs_trans, window_strides, padding, batch_group_count)
  return ShapedArray(_unpermute(out, out_spec), dtype, lhs.weak_type and rhs.weak_type)


# --- lax functions --------------------------------------------------------------------

def _ints(values):
  return tuple(operator.index(v) for v in values)


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None,
                         rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                         batch_group_count=1, precision=None, preferred_element_type=None,
                         out_sharding=None):
  """General n-dimensional convolution with dilations and groups.

  `padding` is 'SAME', 'SAME_LOWER', 'VALID' (resolved for the
  rhs-dilated kernel; not allowed with lhs dilation) or (lo, hi) pairs.
  `dimension_numbers` is None (NCHW/OIHW/NCHW-like order), a
  ConvDimensionNumbers, or three layout strings. See the
  `conv_general_dilated` primitive for the semantics.
  """
  check_out_sharding(out_sharding, "conv_general_dilated")
  lhs_shape, rhs_shape = core.get_aval(lhs).shape, core.get_aval(rhs).shape
  dnums = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
  if lhs_dilation is None:
    lhs_dilation = (1,) * (len(lhs_shape) - 2)
  elif isinstance(padding, str) and any(d != 1 for d in lhs_dilation):
    raise ValueError("String padding is not implemented for transposed convolution using "
                     "this op. Please either exactly specify the required padding or use "
                     "conv_transpose.")
  if rhs_dilation is None:
    rhs_dilation = (1,) * (len(rhs_shape) - 2)
  if isinstance(padding, str):
    kernel = dilate_shape(_permute(rhs_shape, dnums.rhs_spec)[2:], rhs_dilation)
    padding = padtype_to_pads(_permute(lhs_shape, dnums.lhs_spec)[2:], kernel,
                              window_strides, padding)
  try:
    padding = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
  except (ValueError, TypeError) as err:
    raise ValueError(f"padding argument to conv_general_dilated should be a string or a "
                     f"sequence of (low, high) pairs, got {padding}") from err
  if preferred_element_type is not None:
    preferred_element_type = dtypes.canonicalize_dtype(preferred_element_type)
  return conv_general_dilated_p.bind(
      lhs, rhs, window_strides=_ints(window_strides), padding=padding,
      lhs_dilation=_ints(lhs_dilation), rhs_dilation=_ints(rhs_dilation),
      dimension_numbers=dnums, feature_group_count=operator.index(feature_group_count),
      batch_group_count=operator.index(batch_group_count),
      precision=canonicalize_precision(precision),
      preferred_element_type=preferred_element_type)


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
  """conv_general_dilated in NCHW/OIHW layout without dilation."""
  return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                              preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None):
  """conv_general_dilated in NCHW/OIHW layout."""
  return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                              rhs_dilation=rhs_dilation, precision=precision,
                              preferred_element_type=preferred_element_type)


_TRANSPOSE_DEFAULT_LAYOUTS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                              4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel=False, precision=None, preferred_element_type=None,
                   use_consistent_padding=False):
  """A transposed ("fractionally strided") convolution: conv_general_dilated with
  `lhs_dilation=strides`, unit window strides and padding that undoes a forward
  convolution's 'SAME' or 'VALID' padding (or explicit (lo, hi) pairs).

  Layout defaults to TensorFlow's (NHWC, HWIO, NHWC and its 1-3D kin).
  `transpose_kernel` flips the kernel's spatial axes and swaps its in/out
  feature axes, giving the gradient of the forward convolution. With
  `use_consistent_padding`, (lo, hi) pairs too are the forward convolution's
  padding (PyTorch's convention); without, they pad the transposed one.
  """
  lhs_shape, rhs_shape = core.get_aval(lhs).shape, core.get_aval(rhs).shape
  ndim = len(lhs_shape)
  if dimension_numbers is None:
    if ndim not in _TRANSPOSE_DEFAULT_LAYOUTS:
      raise ValueError("No 4+ dimensional dimension_number defaults.")
    dimension_numbers = _TRANSPOSE_DEFAULT_LAYOUTS[ndim]
  dnums = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
  if use_consistent_padding or isinstance(padding, str) and padding in ("SAME", "VALID"):
    if rhs_dilation is None:
      rhs_dilation = (1,) * (ndim - 2)
    kernel = dilate_shape(_permute(rhs_shape, dnums.rhs_spec)[2:], rhs_dilation)
    forward = [padding] * len(strides) if isinstance(padding, str) else map(tuple, padding)
    padding = [_conv_transpose_padding(k, s, p) for k, s, p in zip(kernel, strides, forward)]
  if transpose_kernel:
    for axis in dnums.rhs_spec[2:]:
      rhs = shapes.rev(rhs, (axis,))
    permutation = list(range(ndim))
    o, i = dnums.rhs_spec[:2]
    permutation[o], permutation[i] = i, o
    rhs = shapes.transpose(rhs, permutation)
  return conv_general_dilated(lhs, rhs, (1,) * (ndim - 2), padding, strides, rhs_dilation,
                              dnums, precision=precision,
                              preferred_element_type=preferred_element_type)


def _moveaxis(x, source, destination):
  """`x` with axes `source` moved to `destination` (as jnp.moveaxis), via transpose."""
  ndim = core.get_aval(x).ndim
  source = [s % ndim for s in source]
  destination = [d % ndim for d in destination]
  permutation = [d for d in range(ndim) if d not in source]
  for dst, src in sorted(zip(destination, source)):
    permutation.insert(dst, src)
  return shapes.transpose(x, permutation)


def conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation=None,
                                 rhs_dilation=None, dimension_numbers=None, precision=None,
                                 preferred_element_type=None):
  """The patches a convolution with a kernel of spatial shape `filter_shape` sees.

  Output feature `c * prod(filter_shape) + k` holds input feature `c` at
  (row-major) filter position `k`: a convolution with a one-hot kernel and
  `feature_group_count` = the number of input features, as JAX computes it.
  """
  lhs_shape = core.get_aval(lhs).shape
  dtype = core.get_aval(lhs).dtype
  filter_shape = tuple(filter_shape)
  dnums = conv_dimension_numbers(lhs_shape, (1, 1) + filter_shape, dimension_numbers)
  lhs_spec, rhs_spec, _ = dnums
  size = math.prod(filter_shape)
  channels = lhs_shape[lhs_spec[1]]
  eye = elementwise.convert_element_type(
      elementwise.eq(shapes.broadcasted_iota(np.int32, (size, size), 0),
                     shapes.broadcasted_iota(np.int32, (size, size), 1)), dtype)
  rhs = shapes.broadcast_in_dim(eye, (channels, size, size), (1, 2))
  rhs = shapes.reshape(rhs, (channels * size, 1) + filter_shape)
  rhs = _moveaxis(rhs, (0, 1), (rhs_spec[0], rhs_spec[1]))
  return conv_general_dilated(
      lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, dnums,
      feature_group_count=channels,
      precision=None if precision is None else (precision, "DEFAULT"),
      preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs, rhs, window_strides, padding, filter_shape,
                               lhs_dilation=None, rhs_dilation=None, dimension_numbers=None,
                               precision=None):
  """A convolution whose kernel is not shared: each output position has its own.

  `rhs` has the output's spatial dimensions at the kernel layout's spatial
  positions, and its `I` dimension fuses the input feature with the filter
  position (feature-major, as conv_general_dilated_patches orders them).
  Computed as JAX does: the patches, contracted with `rhs` by dot_general.
  """
  canonical = canonicalize_precision(precision)
  patches = conv_general_dilated_patches(
      lhs, filter_shape, window_strides, padding, lhs_dilation, rhs_dilation,
      dimension_numbers, precision=None if canonical is None else canonical[0])
  lhs_spec, rhs_spec, out_spec = conv_dimension_numbers(
      core.get_aval(lhs).shape, (1, 1) + tuple(filter_shape), dimension_numbers)
  lhs_batch, rhs_batch = out_spec[2:], rhs_spec[2:]
  rhs_batch = tuple(rhs_batch[i] for i in sorted(range(len(rhs_batch)),
                                                 key=lambda k: lhs_batch[k]))
  lhs_batch = tuple(sorted(lhs_batch))
  dnums = (((out_spec[1],), (rhs_spec[1],)), (lhs_batch, rhs_batch))
  out = dot_general(patches, rhs, dimension_numbers=dnums, precision=precision)
  return _moveaxis(out, (-2, -1), (out_spec[0], out_spec[1]))


# --- differentiation rules ---
# conv_general_dilated is bilinear. Each transpose is another convolution, as
# for a matmul (ignoring spatial dims, with batch m, input feature j and output
# feature k, the forward [m, j] [j, k] -> [m, k] transposes to
# [m, k] [k, j] -> [m, j] for the lhs and [j, m] [m, k] -> [j, k] for the rhs):
# the spatial dims are dilated/strided/padded so that every product of the
# forward convolution appears once. Feature groups of the forward become
# feature groups of the lhs transpose (the group moved into the kernel's
# output features) and batch groups of the rhs transpose, and vice versa.

def _conv_spec_transpose(spec):
  return (spec[1], spec[0]) + tuple(spec[2:])


def _reshape_axis_into(src, dst, x):
  """Merges axis `src` of `x` into axis `dst` (numbered without `src`), as
  its major part."""
  shape = core.get_aval(x).shape
  perm = [i for i in range(len(shape)) if i != src]
  perm.insert(dst, src)
  new_shape = [shape[i] for i in range(len(shape)) if i != src]
  new_shape[dst] *= shape[src]
  return shapes.reshape(x, new_shape, perm)


def _reshape_axis_out_of(src, size1, x):
  """Splits axis `src` of `x` into (size1, the rest)."""
  shape = list(core.get_aval(x).shape)
  size2, ragged = divmod(shape[src], size1)
  assert not ragged
  shape[src:src + 1] = [size1, size2]
  return shapes.reshape(x, shape)


def _conv_general_vjp_lhs_padding(in_shape, window_dimensions, window_strides, out_shape,
                                  padding, lhs_dilation, rhs_dilation):
  lhs_dilated = dilate_shape(in_shape, lhs_dilation)
  rhs_dilated = dilate_shape(window_dimensions, rhs_dilation)
  out_dilated = dilate_shape(out_shape, window_strides)
  before = [r - lo - 1 for r, (lo, _) in zip(rhs_dilated, padding)]
  after = [l + r - 1 - o - b for l, r, o, b in zip(lhs_dilated, rhs_dilated, out_dilated, before)]
  return list(zip(before, after))


def _conv_general_vjp_rhs_padding(in_shape, window_dimensions, window_strides, out_shape,
                                  padding, lhs_dilation, rhs_dilation):
  lhs_dilated = dilate_shape(in_shape, lhs_dilation)
  rhs_dilated = dilate_shape(window_dimensions, rhs_dilation)
  out_dilated = dilate_shape(out_shape, window_strides)
  lows = [lo for lo, _ in padding]
  highs = [o - l + r - lo - 1 for o, l, r, lo in zip(out_dilated, lhs_dilated, rhs_dilated, lows)]
  return list(zip(lows, highs))


def _conv_general_dilated_transpose_lhs(
    g, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
    feature_group_count, batch_group_count, precision, preferred_element_type):
  assert batch_group_count == 1 or feature_group_count == 1
  lhs_aval, rhs_shape = lhs.aval, core.get_aval(rhs).shape
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  if feature_group_count > 1 or batch_group_count > 1:
    # move the group axis from the kernel's output into its input features
    groups = max(feature_group_count, batch_group_count)
    rhs = _reshape_axis_out_of(rhs_spec[0], groups, rhs)
    rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
    feature_group_count = groups
  trans_dimension_numbers = ConvDimensionNumbers(out_spec, _conv_spec_transpose(rhs_spec),
                                                 lhs_spec)
  padding = _conv_general_vjp_lhs_padding(
      _permute(lhs_aval.shape, lhs_spec[2:]), _permute(rhs_shape, rhs_spec[2:]),
      window_strides, _permute(core.get_aval(g).shape, out_spec[2:]), padding, lhs_dilation,
      rhs_dilation)
  revd_weights = shapes.rev(rhs, rhs_spec[2:])
  if dtypes.dtype(g) != dtypes.dtype(revd_weights):
    revd_weights = elementwise.convert_element_type(revd_weights, dtypes.dtype(g))
  out = conv_general_dilated(
      g, revd_weights, window_strides=lhs_dilation, padding=padding,
      lhs_dilation=window_strides, rhs_dilation=rhs_dilation,
      dimension_numbers=trans_dimension_numbers, feature_group_count=feature_group_count,
      batch_group_count=1, precision=precision, preferred_element_type=preferred_element_type)
  if dtypes.dtype(out) != lhs_aval.dtype:
    out = elementwise.convert_element_type(out, lhs_aval.dtype)
  if batch_group_count > 1:
    out = _reshape_axis_out_of(lhs_spec[1], batch_group_count, out)
    out = _reshape_axis_into(lhs_spec[1], lhs_spec[0], out)
  return out


def _conv_general_dilated_transpose_rhs(
    g, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
    feature_group_count, batch_group_count, precision, preferred_element_type):
  assert batch_group_count == 1 or feature_group_count == 1
  g_shape, rhs_aval = core.get_aval(g).shape, rhs.aval
  if math.prod(g_shape) == 0:  # avoids a degenerate convolution with an empty kernel
    return ad.Zero(rhs_aval)
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  # feature groups become batch groups, and vice versa
  feature_group_count, batch_group_count = batch_group_count, feature_group_count
  trans_dimension_numbers = ConvDimensionNumbers(*map(_conv_spec_transpose,
                                                      (lhs_spec, out_spec, rhs_spec)))
  padding = _conv_general_vjp_rhs_padding(
      _permute(core.get_aval(lhs).shape, lhs_spec[2:]), _permute(rhs_aval.shape, rhs_spec[2:]),
      window_strides, _permute(g_shape, out_spec[2:]), padding, lhs_dilation, rhs_dilation)
  if dtypes.dtype(g) != dtypes.dtype(lhs):
    lhs = elementwise.convert_element_type(lhs, dtypes.dtype(g))
  out = conv_general_dilated(
      lhs, g, window_strides=rhs_dilation, padding=padding, lhs_dilation=lhs_dilation,
      rhs_dilation=window_strides, dimension_numbers=trans_dimension_numbers,
      feature_group_count=feature_group_count, batch_group_count=batch_group_count,
      precision=precision, preferred_element_type=preferred_element_type)
  if dtypes.dtype(out) != rhs_aval.dtype:
    out = elementwise.convert_element_type(out, rhs_aval.dtype)
  return out


ad.defbilinear(conv_general_dilated_p, _conv_general_dilated_transpose_lhs,
               _conv_general_dilated_transpose_rhs)


def _unbatched_aval(x, dim):
  """The aval of one member of the batch `x` (batch axis at `dim`, or None)."""
  aval = core.get_aval(x)
  if dim is None:
    return aval
  return aval.update(shape=aval.shape[:dim] + aval.shape[dim + 1:])


def _conv_general_dilated_batch(args, dims, *, dimension_numbers, feature_group_count,
                                batch_group_count, **params):
  """As JAX's rule: the vmapped axis is merged into a dimension of the
  convolution (the lhs batch, a feature dimension, or the groups) and split
  out of the result again."""
  (lhs, rhs), (lhs_bdim, rhs_bdim) = args, dims
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  size = (core.get_aval(lhs).shape[lhs_bdim] if lhs_bdim is not None
          else core.get_aval(rhs).shape[rhs_bdim])

  def conv(lhs, rhs, feature_group_count=feature_group_count,
           batch_group_count=batch_group_count):
    return conv_general_dilated_p.bind(lhs, rhs, dimension_numbers=dimension_numbers,
                                       feature_group_count=feature_group_count,
                                       batch_group_count=batch_group_count, **params)

  if size == 0:  # the reshapes below cannot split an empty axis
    member = _conv_general_dilated_shape_rule(
        *(_unbatched_aval(x, d) for x, d in zip(args, dims)),
        dimension_numbers=dimension_numbers, feature_group_count=feature_group_count,
        batch_group_count=batch_group_count, **params)
    return shapes.full((0,) + member.shape, 0, member.dtype), 0
  if lhs_bdim is not None and rhs_bdim is not None:
    # each member becomes its own groups (of batch groups when those are in
    # use, else of feature groups): its lhs only meets its own kernels
    if batch_group_count > 1:
      lhs = _reshape_axis_into(lhs_bdim, lhs_spec[0], lhs)
      batch_group_count *= size
    else:
      lhs = _reshape_axis_into(lhs_bdim, lhs_spec[1], lhs)
      feature_group_count *= size
    out = conv(lhs, _reshape_axis_into(rhs_bdim, rhs_spec[0], rhs),
               feature_group_count, batch_group_count)
    return _reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
  if lhs_bdim is not None:
    if batch_group_count == 1:  # the members are more images
      out = conv(_reshape_axis_into(lhs_bdim, lhs_spec[0], lhs), rhs)
      return _reshape_axis_out_of(out_spec[0], size, out), out_spec[0]
    # batch groups must stay outermost in the lhs batch dim: split them out,
    # merge the members into what is left, then merge the groups back
    lhs = _reshape_axis_out_of(lhs_spec[0] + (lhs_bdim <= lhs_spec[0]), batch_group_count, lhs)
    lhs = _reshape_axis_into(lhs_bdim + (lhs_spec[0] < lhs_bdim), lhs_spec[0] + 1, lhs)
    lhs = _reshape_axis_into(lhs_spec[0], lhs_spec[0], lhs)
    out = conv(lhs, rhs)
    return _reshape_axis_out_of(out_spec[0], size, out), out_spec[0]
  if feature_group_count == 1 and batch_group_count == 1:  # the members are more kernels
    out = conv(lhs, _reshape_axis_into(rhs_bdim, rhs_spec[0], rhs))
    return _reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
  # groups must stay outermost in the kernel's output features: split them
  # out, merge the members into what is left, then merge the groups back; the
  # output's features are (groups, members, features) and become (members, ...)
  groups = max(feature_group_count, batch_group_count)
  rhs = _reshape_axis_out_of(rhs_spec[0] + (rhs_bdim <= rhs_spec[0]), groups, rhs)
  rhs = _reshape_axis_into(rhs_bdim + (rhs_spec[0] < rhs_bdim), rhs_spec[0] + 1, rhs)
  rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[0], rhs)
  out = conv(lhs, rhs)
  out = _reshape_axis_out_of(out_spec[1], groups, out)
  out = _reshape_axis_out_of(out_spec[1] + 1, size, out)
  return _reshape_axis_into(out_spec[1], out_spec[1] + 1, out), out_spec[1]


batching.primitive_batchers[conv_general_dilated_p] = _conv_general_dilated_batch
