"""Cases for conv_general_dilated and jnp.convolve/correlate.

`numpy_conv_general_dilated` is the convolution written out from its
definition (loops over every output element and kernel tap), the formula
the reference must agree with; the tests use it too.
"""

import itertools

import numpy as np
from hypothesis import strategies as st

import refimpl.numpy as jnp
from refimpl import dtypes, lax
from conformance import strategies as S
from conformance.autodiff import ADCase
from conformance.cases import Case

NUMERIC = S.INT_DTYPES + S.FLOAT_DTYPES + S.COMPLEX_DTYPES


def _layout_permutations(dimension_numbers, ndim):
  """(lhs, rhs, out) permutations to canonical (batch/out, feature/in, spatial...)
  order, from layout strings (spatial letters ordered by the kernel string) or None."""
  if dimension_numbers is None:
    return [tuple(range(ndim))] * 3
  lhs, rhs, out = dimension_numbers
  spatial = [c for c in rhs if c not in "OI"]
  return [tuple(spec.index(c) for c in pair + "".join(spatial))
          for spec, pair in ((lhs, "NC"), (rhs, "OI"), (out, "NC"))]


def numpy_conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None,
                               rhs_dilation=None, dimension_numbers=None,
                               feature_group_count=1, batch_group_count=1):
  """conv_general_dilated from its definition, for explicit (lo, hi) padding.

  out[n, o, y] = sum over i and kernel positions k of
  lhs[b * N/B + n, g * I + i, p] * rhs[o, i, k], where g = o // (O/G),
  b = o // (O/B), and p is the lhs position that dilated-and-padded position
  y * stride + k * rhs_dilation holds (terms at holes and padding are skipped).
  Sums in float64/complex128/int64, then cast to the operands' dtype.
  """
  lhs, rhs = np.asarray(lhs), np.asarray(rhs)
  dtype = lhs.dtype
  lhs_perm, rhs_perm, out_perm = _layout_permutations(dimension_numbers, lhs.ndim)
  acc = np.complex128 if dtype.kind == "c" else np.float64 if dtypes.is_float(dtype) \
      else np.int64
  x = np.transpose(lhs, lhs_perm).astype(acc)
  w = np.transpose(rhs, rhs_perm).astype(acc)
  n_spatial = lhs.ndim - 2
  lhs_dilation = lhs_dilation or (1,) * n_spatial
  rhs_dilation = rhs_dilation or (1,) * n_spatial
  batch, _, *in_sizes = x.shape
  out_features, in_features, *kernel = w.shape
  dilated = [1 + d * (s - 1) if s else 0 for s, d in zip(in_sizes, lhs_dilation)]
  out_sizes = [max(0, (dd + lo + hi - (1 + r * (k - 1))) // s + 1)
               for dd, (lo, hi), k, r, s in zip(dilated, padding, kernel, rhs_dilation,
                                                window_strides)]
  out = np.zeros((batch // batch_group_count, out_features, *out_sizes), acc)
  per_group = out_features // feature_group_count
  per_batch_group = out_features // batch_group_count
  for n, o, *y in itertools.product(*map(range, out.shape)):
    g, b = o // per_group, o // per_batch_group
    total = 0
    for i, *k in itertools.product(range(in_features), *map(range, kernel)):
      position = []
      for yd, kd, s, r, (lo, _), ld, dd in zip(y, k, window_strides, rhs_dilation,
                                               padding, lhs_dilation, dilated):
        q = yd * s + kd * r - lo   # position in the dilated lhs
        if not (0 <= q < dd and q % ld == 0):
          break
        position.append(q // ld)
      else:
        total += (x[(b * (batch // batch_group_count) + n, g * in_features + i, *position)]
                  * w[(o, i, *k)])
    out[(n, o, *y)] = total
  out = np.transpose(out, np.argsort(out_perm))
  if dtype == np.bool_:
    return out != 0
  return out.astype(dtype)


def _conv_1d(np_fn):
  """np.convolve/np.correlate computed in double precision, cast to the input dtype."""
  def expected(a, v, mode):
    wide = np.complex128 if a.dtype.kind == "c" else np.float64
    return np_fn(a.astype(wide), v.astype(wide), mode).astype(a.dtype)
  return expected


def _conv_1d_inputs(dtype_list=S.FLOAT_DTYPES + S.COMPLEX_DTYPES):
  vectors = st.sampled_from(dtype_list).flatmap(
      lambda dtype: st.tuples(*[S.small_integer_arrays(dtype, st.integers(1, 6).map(
          lambda n: (n,))) for _ in range(2)]))
  return st.tuples(vectors, st.fixed_dictionaries(
      {"mode": st.sampled_from(["full", "same", "valid"])}))


CASES = [
    Case("lax.conv_general_dilated", lax.conv_general_dilated,
         lambda: S.conv_inputs(NUMERIC), numpy_conv_general_dilated),
    Case("jnp.convolve", jnp.convolve, _conv_1d_inputs, _conv_1d(np.convolve)),
    Case("jnp.correlate", jnp.correlate, _conv_1d_inputs, _conv_1d(np.correlate)),
]


# conv_general_dilated is bilinear: the reverse-mode checks cover both transposes
# (with feature and batch groups, dilations, strides, negative padding, layouts).
AD_DTYPES = [np.float64, np.complex128]

AD_CASES = [
    ADCase("lax.conv_general_dilated", lax.conv_general_dilated,
           lambda: S.conv_inputs(AD_DTYPES), ("conv_general_dilated",), order=2),
    ADCase("jnp.convolve", jnp.convolve, lambda: _conv_1d_inputs(AD_DTYPES),
           ("conv_general_dilated",)),
    ADCase("jnp.correlate", jnp.correlate, lambda: _conv_1d_inputs(AD_DTYPES),
           ("conv_general_dilated",)),
]
