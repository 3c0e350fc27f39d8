"""Activation functions, softmax, one-hot and attention, as `jax.nn`.

Each is built on jnp/lax and lowers as JAX's does (those JAX compiles with
`jit` are jitted here too, so `make_jaxpr` shows the same nested `jit`
equations). Where JAX attaches a custom derivative rule (`custom_jvp`:
relu, relu6, softmax, log1mexp) so do these, with JAX's rule, and
log_softmax stops the gradient through its shift, as JAX's does.
"""

import math
import operator
import warnings

import numpy as np

from refimpl import dtypes, lax
from refimpl.api import jit
from refimpl.custom_derivatives import custom_jvp
from refimpl.lax.shapes import canonicalize_axis
from refimpl.numpy import (abs, asarray, clip, einsum, exp, expand_dims, expm1, log, log1p,
                           logaddexp, logical_and, max, maximum, minimum, ones, reshape, split,
                           sqrt, square, sum, tril, where, zeros_like)
# Aliases for the functions that arguments named `where`, `mean` and `tanh` shadow.
from refimpl.numpy import mean as _mean, tanh as _tanh, where as _where
from refimpl.numpy.creation import ensure_arraylike
from refimpl.numpy.util import check_arraylike, promote_args_inexact
from refimpl.scipy.special import logsumexp

__all__ = [
    'celu', 'dot_product_attention', 'elu', 'gelu', 'glu', 'hard_sigmoid', 'hard_silu',
    'hard_swish', 'hard_tanh', 'identity', 'leaky_relu', 'log1mexp', 'log_sigmoid',
    'log_softmax', 'logmeanexp', 'logsumexp', 'mish', 'one_hot', 'relu', 'relu6', 'selu',
    'sigmoid', 'silu', 'soft_sign', 'softmax', 'softplus', 'sparse_plus', 'sparse_sigmoid',
    'squareplus', 'standardize', 'swish', 'tanh',
]


# --- activations ----------------------------------------------------------------------------------

@custom_jvp
@jit
def relu(x):
  """max(x, 0), as select(x >= 0, x, 0): relu(NaN) is 0 (NaN >= 0 is False).
  Custom JVP (JAX's): the derivative is 1 for x > 0 and 0 elsewhere, 0 at 0."""
  z = zeros_like(x)
  return lax.select(lax.ge(x, z), x, z)


relu.defjvps(lambda g, ans, x: lax.select(x > 0, g, lax.full_like(g, 0)))


@custom_jvp
@jit
def relu6(x):
  """min(max(x, 0), 6). Custom JVP (JAX's): derivative 1 on (0, 6), 0 elsewhere
  (0 at 0 and at 6)."""
  return minimum(maximum(x, 0), 6.)


relu6.defjvps(lambda g, ans, x: lax.select((x > 0) & (x < 6), g, lax.full_like(g, 0)))


@jit
def squareplus(x, b=4):
  """(x + sqrt(x**2 + b)) / 2."""
  x, b = ensure_arraylike("squareplus", x, b)
  return (x + sqrt(square(x) + b)) / 2


@jit
def softplus(x):
  """log(1 + exp(x)), as logaddexp(x, 0)."""
  return logaddexp(x, 0)


@jit
def sparse_plus(x):
  """0 for x <= -1, (x + 1)**2 / 4 for -1 < x < 1, x for x >= 1."""
  x = ensure_arraylike("sparse_plus", x)
  return where(x <= -1.0, 0.0, where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


@jit
def soft_sign(x):
  """x / (|x| + 1)."""
  x = ensure_arraylike("soft_sign", x)
  return x / (abs(x) + 1)


def sigmoid(x):
  """1 / (1 + exp(-x)) (the `logistic` primitive)."""
  return lax.logistic(x)


@jit
def sparse_sigmoid(x):
  """0 for x <= -1, (x + 1) / 2 for -1 < x < 1, 1 for x >= 1."""
  return 0.5 * clip(x + 1.0, 0.0, 2.0)


@jit
def silu(x):
  """x * sigmoid(x) (also called swish)."""
  x = ensure_arraylike("silu", x)
  return x * sigmoid(x)


swish = silu


@jit
def mish(x):
  """x * tanh(softplus(x))."""
  x = ensure_arraylike("mish", x)
  return x * _tanh(softplus(x))


@jit
def log_sigmoid(x):
  """log(sigmoid(x)) = -softplus(-x)."""
  x = ensure_arraylike("log_sigmoid", x)
  return -softplus(-x)


@jit
def elu(x, alpha=1.0):
  """x for x > 0, alpha * (exp(x) - 1) otherwise."""
  x = ensure_arraylike("elu", x)
  return where(x > 0, x, alpha * expm1(where(x > 0, 0., x)))


@jit
def leaky_relu(x, negative_slope=1e-2):
  """x for x >= 0, negative_slope * x otherwise."""
  x = ensure_arraylike("leaky_relu", x)
  return where(x >= 0, x, negative_slope * x)


@jit
def hard_tanh(x):
  """x clipped to [-1, 1] (NaN stays NaN)."""
  x = ensure_arraylike("hard_tanh", x)
  return where(x > 1, 1, where(x < -1, -1, x))


@jit
def celu(x, alpha=1.0):
  """max(x, 0) + alpha * expm1(min(x, 0) / alpha)."""
  return maximum(x, 0.0) + alpha * expm1(minimum(x, 0.0) / alpha)


@jit
def selu(x):
  """scale * elu(x, alpha) with alpha = 1.6732632..., scale = 1.0507009..."""
  alpha = 1.6732632423543772848170429916717
  scale = 1.0507009873554804934193349852946
  return scale * elu(x, alpha)


def gelu(x, approximate=True):
  """The Gaussian error linear unit x * Phi(x): with `approximate` (the
  default), x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x**3))); otherwise
  x/2 erfc(-x / sqrt 2)."""
  x, = promote_args_inexact("gelu", x)
  if approximate:
    cdf = 0.5 * (1.0 + _tanh(np.sqrt(2 / np.pi).astype(x.dtype) * (x + 0.044715 * (x ** 3))))
    return x * cdf
  return asarray(0.5 * x * lax.erfc(-x * np.sqrt(0.5).astype(x.dtype)), dtype=x.dtype)


@jit(static_argnames=("axis",))
def glu(x, axis=-1):
  """The gated linear unit: with x split in halves a, b along `axis` (whose
  size must be even), a * sigmoid(b)."""
  x = ensure_arraylike("glu", x)
  if x.shape[axis] % 2 != 0:
    raise AssertionError("axis size must be divisible by 2")
  x1, x2 = split(x, 2, axis)
  return x1 * sigmoid(x2)


@jit
def hard_sigmoid(x):
  """relu6(x + 3) / 6."""
  return relu6(x + 3.) / 6.


@jit
def hard_silu(x):
  """x * hard_sigmoid(x) (also called hard_swish)."""
  x = ensure_arraylike("hard_silu", x)
  return x * hard_sigmoid(x)


hard_swish = hard_silu


def tanh(x, /):
  """Hyperbolic tangent (jnp.tanh)."""
  return _tanh(x)


def identity(x):
  """The identity activation: x, as an array."""
  check_arraylike("identity", x)
  return asarray(x)


@custom_jvp
@jit
def log1mexp(x):
  """log(1 - exp(-x)), accurately: log(-expm1(-x)) for x < log 2, else
  log1p(-exp(-x)). Undefined (NaN) for x < 0. Custom JVP (JAX's): the
  derivative is 1 / expm1(x) (the branches' own derivatives would give NaN)."""
  x = ensure_arraylike("log1mexp", x)
  return where(x < math.log(2.0), log(-expm1(-x)), log1p(-exp(-x)))


log1mexp.defjvps(lambda g, ans, x: g / expm1(x))


# --- softmax and normalization -----------------------------------------------------------------

@jit(static_argnames=("axis",))
def log_softmax(x, axis=-1, where=None):
  """x - log(sum(exp(x))) over `axis` (an int or tuple), shifted by the max;
  elements masked out by `where` give -inf. An input +inf gives NaN. The
  gradient is stopped through the shift (it cancels), as in JAX."""
  x = ensure_arraylike("log_softmax", x)
  x_max = max(x, axis, where=where, initial=-np.inf, keepdims=True)
  x_safe = x if where is None else _where(where, x, -np.inf)
  shifted = x_safe - lax.stop_gradient(x_max)
  shifted_logsumexp = log(sum(exp(shifted), axis, where=where, keepdims=True))
  result = shifted - shifted_logsumexp
  if where is not None:
    return _where(where, result, -np.inf)
  return result


def softmax(x, axis=-1, where=None):
  """exp(x - max) / sum(exp(x - max)) over `axis` (an int or tuple); elements
  masked out by `where` give 0. An input +inf gives NaN. Custom JVP (JAX's
  `_softmax`): y * (t - sum(y * t)) for y = softmax(x)."""
  x = ensure_arraylike("softmax", x)
  return _softmax(x, axis, where)


def _softmax_fn(x, axis=-1, where=None, initial=-np.inf):
  x_max = max(x, axis, where=where, initial=initial, keepdims=True)
  x_safe = x if where is None else _where(where, x, initial)
  unnormalized = exp(x_safe - x_max)
  result = unnormalized / sum(unnormalized, axis, where=where, keepdims=True)
  if where is not None:
    result = _where(where, result, 0)
  return result


_softmax = custom_jvp(_softmax_fn, nondiff_argnums=(1,))


@_softmax.defjvp
def _softmax_jvp(axis, primals, tangents):
  (x, where, initial), (x_dot, _, _) = primals, tangents
  y = _softmax(x, axis, where, initial)
  return y, y * (x_dot - sum(y * x_dot, axis, where=where, keepdims=True))


def logmeanexp(x, axis=None, where=None, keepdims=False):
  """log(mean(exp(x))) over `axis`: logsumexp minus the log of the number of
  elements reduced (those selected by `where`)."""
  x = ensure_arraylike("logmeanexp", x)
  lse = logsumexp(x, axis, keepdims=keepdims, where=where)
  if where is not None:
    count = sum(where, axis=axis, keepdims=keepdims, dtype=lse.dtype)
  else:
    axes = range(x.ndim) if axis is None else ((axis,) if np.ndim(axis) == 0 else axis)
    count = math.prod(x.shape[canonicalize_axis(a, x.ndim)] for a in axes)
  return lse - log(count)


@jit(static_argnames=("axis", "algorithm"))
def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None, *,
                algorithm="fast"):
  """(x - mean) / sqrt(variance + epsilon), with the mean and variance over
  `axis` unless given: with `algorithm` "fast" the variance is mean(x**2) -
  mean**2 (one pass), with "safe" mean((x - mean)**2) (no cancellation)."""
  check_arraylike("standardize", x)
  if algorithm not in ("fast", "safe"):
    raise ValueError(f"algorithm must be 'fast' or 'safe', got {algorithm!r}")
  if mean is None:
    mean = _mean(x, axis, keepdims=True, where=where)
  if variance is None and algorithm == "fast":
    variance = _mean(square(x), axis, keepdims=True, where=where) - square(mean)
  elif variance is None:
    variance = _mean(square(x - mean), axis, keepdims=True, where=where)
  return (x - asarray(mean)) * lax.rsqrt(asarray(variance) + epsilon)


@jit(static_argnames=("num_classes", "dtype", "axis"))
def _one_hot(x, num_classes, *, dtype, axis):
  output_axis = canonicalize_axis(axis, x.ndim + 1)
  lhs = expand_dims(x, (output_axis,))
  rhs_shape = [1] * x.ndim
  rhs_shape.insert(output_axis, num_classes)
  rhs = lax.broadcasted_iota(x.dtype, rhs_shape, output_axis)
  return (lhs == rhs).astype(dtype)


def one_hot(x, num_classes, *, dtype=None, axis=-1):
  """One-hot encoding along a new axis `axis` of size `num_classes`: 1 where
  the index equals the position, else 0 (indices outside [0, num_classes)
  give all zeros). `dtype` defaults to the default float. A non-integer `x`
  warns (DeprecationWarning), as JAX. Named axes are not supported."""
  num_classes = operator.index(num_classes)
  x = ensure_arraylike("one_hot", x)
  if not dtypes.is_integer(x.dtype):
    warnings.warn(f"jax.nn.one_hot input should be integer-typed; got dtype={x.dtype}",
                  DeprecationWarning, stacklevel=2)
  dtype = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(
      np.dtype(dtype))
  return _one_hot(x, num_classes, dtype=dtype, axis=operator.index(axis))


# --- attention --------------------------------------------------------------------------------

def _ensure_4d(t):
  t = asarray(t)
  return expand_dims(t, tuple(range(4 - t.ndim))) if t.ndim < 4 else t


def _check_shape_and_dtype(t, shape, dtype, name):
  if t is None:
    return
  if t.ndim != len(shape):
    raise ValueError(f"{name} ndim should be {len(shape)}, but got {t.ndim}")
  if dtype is not None and t.dtype != dtype:
    raise ValueError(f"{name} dtype should be {dtype}, but got {t.dtype}")
  for i in range(t.ndim):
    if shape[i] != -1 and t.shape[i] != shape[i]:
      raise ValueError(f"{name} shape should be {shape}: but got {t.shape}")


def _grouped(t, num_kv_heads, group):
  """A (B|1, N|1, T|1, S|1) bias or mask as (B|1, K|1, G|1, T|1, S|1), with the
  N query heads split into K groups of G."""
  if t is None:
    return None
  b, n, tt, s = t.shape
  if n == 1:
    return reshape(t, (b, 1, 1, tt, s))
  return reshape(t, (b, num_kv_heads, group, tt, s))


def _attention_mask(shape, mask, is_causal, q_seqlen, kv_seqlen, local_window_size):
  """The boolean mask (broadcastable to the (B, K, G, T, S) logits) of the
  positions that take part in attention, or None."""
  T, S = shape[-2], shape[-1]
  combined = None

  def combine(m):
    return m if combined is None else logical_and(combined, m)

  if mask is not None:
    combined = combine(mask)
  if is_causal:
    combined = combine(tril(ones((T, S), dtype=bool)))
  if local_window_size is not None:
    left, right = local_window_size
    query_pos = lax.broadcasted_iota(np.int32, (T, S), 0)
    key_pos = lax.broadcasted_iota(np.int32, (T, S), 1)
    combined = combine(logical_and(query_pos <= key_pos + left, query_pos >= key_pos - right))
  if q_seqlen is not None or kv_seqlen is not None:
    padding = True
    if q_seqlen is not None:
      padding = lax.broadcasted_iota(np.int32, (1, T, 1), 1) < q_seqlen[:, None, None]
    if kv_seqlen is not None:
      padding = logical_and(padding,
                            lax.broadcasted_iota(np.int32, (1, 1, S), 2) < kv_seqlen[:, None, None])
    combined = combine(padding[:, None, None, :, :])
  return combined


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
                          is_causal=False, query_seq_lengths=None,
                          key_value_seq_lengths=None, local_window_size=None,
                          implementation=None, return_residual=False):
  """Scaled dot-product attention softmax(Q K^T * scale + bias, masked) V, as
  JAX's 'xla' implementation.

  Layouts: query (B, T, N, H) or (T, N, H); key and value (B, S, K, H) or
  (S, K, H), with N a multiple of K (grouped-query attention); bias and mask
  broadcastable to (B, N, T, S) (mask is boolean, True = attend). `scale`
  defaults to 1/sqrt(H). Masked logits become -0.7 * the dtype's max; the
  softmax is computed in float32. `is_causal`, per-batch sequence lengths
  (int32, shape (B,)) and `local_window_size` (an int or (left, right)) add
  masks; with both sequence lengths, padded query rows give 0. With
  `return_residual`, also returns the float32 logsumexp of each query's
  (masked, scaled) logits, shaped (B, T, N) (or (T, N)).
  `implementation='cudnn'` raises RuntimeError("cuDNN is not detected."),
  as JAX does on a machine without cuDNN (after checking that a
  `local_window_size` has no right window unless the mask is causal without
  sequence lengths).
  """
  output_shape = asarray(query).shape
  query, key, value = _ensure_4d(query), _ensure_4d(key), _ensure_4d(value)
  bias = _ensure_4d(bias) if bias is not None else None
  mask = _ensure_4d(mask) if mask is not None else None
  if query_seq_lengths is not None:
    query_seq_lengths = asarray(query_seq_lengths)
  if key_value_seq_lengths is not None:
    key_value_seq_lengths = asarray(key_value_seq_lengths)
  if isinstance(local_window_size, int):
    local_window_size = (local_window_size, local_window_size)
  B, S, K, H = key.shape
  _check_shape_and_dtype(value, [B, S, K, H], key.dtype, 'value')
  _check_shape_and_dtype(query, [B, -1, -1, H], key.dtype, 'query')
  _check_shape_and_dtype(mask, [-1] * 4, np.dtype(bool), 'mask')
  _check_shape_and_dtype(bias, [-1] * 4, None, 'bias')
  _check_shape_and_dtype(query_seq_lengths, [B], np.dtype(np.int32), 'query_seq_lengths')
  _check_shape_and_dtype(key_value_seq_lengths, [B], np.dtype(np.int32),
                         'key_value_seq_lengths')
  if query.shape[-2] % K != 0:
    raise ValueError(f"The number of query heads must be a multiple of "
                     f"key/value heads, but got {query.shape[-2]} vs {K}")
  if implementation not in (None, 'xla', 'cudnn'):
    raise ValueError(f"Unsupported implementation option: {implementation}")
  if implementation == 'cudnn':
    right_window = 0 if local_window_size is None else local_window_size[1]
    causal_mask = is_causal and query_seq_lengths is None and key_value_seq_lengths is None
    if right_window != 0 and not causal_mask:
      raise ValueError(f"cuDNN doesn't support right window: {right_window} "
                       "when causal mask is not used.")
    raise RuntimeError("cuDNN is not detected.")   # as JAX on a machine without cuDNN
  scale = 1.0 / np.sqrt(H) if scale is None else scale

  T, N = query.shape[1], query.shape[2]
  G = N // K
  grouped_query = reshape(query, (B, T, K, G, H))
  logits_dtype = dtypes.promote_types(query.dtype, np.float32)
  logits = einsum("BTKGH,BSKH->BKGTS", grouped_query, key, preferred_element_type=logits_dtype)
  logits = logits * np.array(scale, logits.dtype)
  if bias is not None:
    logits = (logits + _grouped(bias, K, G)).astype(logits.dtype)
  combined = _attention_mask(logits.shape, _grouped(mask, K, G), is_causal, query_seq_lengths,
                             key_value_seq_lengths, local_window_size)
  if combined is not None:
    large_negative = np.array(-0.7 * dtypes.finfo(logits.dtype).max, logits.dtype)
    logits = where(combined, logits, large_negative)
  logits = logits.astype(np.float32)
  probs = softmax(logits, axis=-1).astype(key.dtype)
  encoded = einsum("BKGTS,BSKH->BTKGH", probs, value)
  if query_seq_lengths is not None and key_value_seq_lengths is not None:
    rows = lax.broadcasted_iota(np.int32, (1, T), 1) < query_seq_lengths[:, None]
    encoded = encoded * rows[:, :, None, None, None].astype(encoded.dtype)
  encoded = reshape(encoded, output_shape)
  if not return_residual:
    return encoded
  residual = lax.transpose(logsumexp(logits, axis=-1), (0, 3, 1, 2))   # (B, T, K, G)
  return encoded, reshape(residual, output_shape[:-1])
