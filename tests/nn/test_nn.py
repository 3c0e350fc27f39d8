"""Tests of refimpl/nn: each activation against its NumPy formula (float64),
softmax and friends with `where`, one_hot, standardize, and
dot_product_attention against a direct NumPy implementation."""

import math
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import nn
from refimpl.config import enable_x64
from conformance import strategies as S

F64 = np.float64


def _close(actual, expected, rtol=1e-13, atol=1e-15):
  np.testing.assert_allclose(np.asarray(actual, F64), expected, rtol=rtol, atol=atol)


def _erf(x):
  return np.vectorize(math.erf)(x)


_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

ACTIVATIONS = {
    "relu": lambda x: np.where(x >= 0, x, 0),
    "relu6": lambda x: np.minimum(np.maximum(x, 0), 6),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "softplus": lambda x: np.logaddexp(x, 0),
    "sparse_plus": lambda x: np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1) ** 2 / 4)),
    "soft_sign": lambda x: x / (np.abs(x) + 1),
    "sparse_sigmoid": lambda x: 0.5 * np.clip(x + 1, 0, 2),
    "silu": lambda x: x / (1 + np.exp(-x)),
    "swish": lambda x: x / (1 + np.exp(-x)),
    "mish": lambda x: x * np.tanh(np.logaddexp(x, 0)),
    "log_sigmoid": lambda x: -np.logaddexp(-x, 0),
    "elu": lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
    "leaky_relu": lambda x: np.where(x >= 0, x, 0.01 * x),
    "hard_tanh": lambda x: np.clip(x, -1, 1),
    "celu": lambda x: np.maximum(x, 0) + np.expm1(np.minimum(x, 0)),
    "selu": lambda x: _SELU_SCALE * np.where(x > 0, x, _SELU_ALPHA * np.expm1(np.minimum(x, 0))),
    "gelu": lambda x: x / 2 * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
    "hard_sigmoid": lambda x: np.clip(x + 3, 0, 6) / 6,
    "hard_silu": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "hard_swish": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "squareplus": lambda x: (x + np.sqrt(x * x + 4)) / 2,
    "tanh": np.tanh,
    "identity": lambda x: x,
}


def test_the_names_of_jax_nn():
  functions = set(nn.__all__)
  assert len(functions) + 1 == 36
  assert all(callable(getattr(nn, name)) for name in functions)
  assert callable(nn.initializers.glorot_normal)   # the 36th name: a submodule


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
@given(x=S.arrays(F64, S.shapes(max_dims=2), elements=st.floats(-30, 30)))
def test_activation_matches_its_formula(name, x):
  with enable_x64():
    out = getattr(nn, name)(x)
  assert out.shape == x.shape
  _close(out, ACTIVATIONS[name](x), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float32])
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_keeps_the_dtype(name, dtype):
  x = np.linspace(-4, 4, 9).astype(dtype)
  out = getattr(nn, name)(x)
  assert out.dtype == dtype
  tolerance = 2e-6 if dtype == np.float32 else 3e-2
  _close(out, ACTIVATIONS[name](x.astype(F64)), rtol=tolerance, atol=tolerance)


def test_activation_edge_cases():
  x = np.float32([np.nan, np.inf, -np.inf, 0.0])
  np.testing.assert_array_equal(nn.relu(x), [0, np.inf, 0, 0])   # NaN >= 0 is False
  np.testing.assert_array_equal(nn.sigmoid(x)[1:], [1, 0, 0.5])
  np.testing.assert_array_equal(nn.softplus(x)[1:], [np.inf, 0, np.log(np.float32(2))])
  np.testing.assert_array_equal(nn.hard_tanh(x), [np.nan, 1, -1, 0])
  np.testing.assert_array_equal(nn.log_sigmoid(np.float32([-200, 200])), [-200, -0.0])
  _close(nn.gelu(np.float32([-1, 1, 3]), approximate=False),
         [-0.5 * (1 - math.erf(1 / math.sqrt(2))), 0.5 * (1 + math.erf(1 / math.sqrt(2))),
          1.5 * (1 + math.erf(3 / math.sqrt(2)))], rtol=1e-6)
  _close(nn.elu(np.float32(-2), alpha=0.5), 0.5 * math.expm1(-2), rtol=1e-6)
  _close(nn.celu(np.float32(-2), alpha=0.5), 0.5 * math.expm1(-4), rtol=1e-6)
  _close(nn.leaky_relu(np.float32(-2), negative_slope=0.2), -0.4, rtol=1e-6)
  _close(nn.squareplus(np.float32(0), b=9), 1.5, rtol=1e-6)


@given(S.arrays(F64, (7,), elements=st.floats(1e-6, 40)))
def test_log1mexp(x):
  with enable_x64():
    _close(nn.log1mexp(x), [math.log(-math.expm1(-v)) for v in x], rtol=1e-14)
  assert np.isnan(nn.log1mexp(np.float32(-1)))


def test_glu():
  x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
  _close(nn.glu(x), x[:, :2] / (1 + np.exp(-x[:, 2:].astype(F64))), rtol=1e-6)
  _close(nn.glu(x[:2], axis=0), x[:1] / (1 + np.exp(-x[1:2].astype(F64))), rtol=1e-6)
  with pytest.raises(AssertionError, match="divisible by 2"):
    nn.glu(x[:, :3])


# --- softmax family ------------------------------------------------------------------------------

def _softmax(x, axis):
  e = np.exp(x - np.max(x, axis=axis, keepdims=True))
  return e / np.sum(e, axis=axis, keepdims=True)


@given(S.arrays(F64, (3, 4), elements=st.floats(-100, 100)),
       st.sampled_from([-1, 0, 1, (0, 1), None]))
def test_softmax_log_softmax_logsumexp(x, axis):
  with enable_x64():
    _close(nn.softmax(x, axis=axis), _softmax(x, axis), rtol=1e-12)
    _close(nn.log_softmax(x, axis=axis), np.log(_softmax(x, axis)), rtol=1e-12, atol=1e-13)
    m = np.max(x, axis=axis, keepdims=True)
    lse = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    _close(nn.logsumexp(x, axis=axis, keepdims=True), lse, rtol=1e-13, atol=1e-14)
    n = x.size if axis is None else np.prod([x.shape[a] for a in np.atleast_1d(axis)])
    _close(nn.logmeanexp(x, axis=axis, keepdims=True), lse - np.log(n), rtol=1e-13, atol=1e-14)


def test_softmax_with_where():
  x = np.float32([[1, 2, 3], [4, 5, 6]])
  where = np.array([[True, False, True], [False, False, True]])
  expected = np.where(where, np.exp(x) / np.sum(np.exp(x) * where, axis=1, keepdims=True), 0)
  _close(nn.softmax(x, where=where), expected, rtol=1e-6)
  log_expected = np.where(where, np.log(np.where(where, expected, 1)), -np.inf)
  np.testing.assert_allclose(nn.log_softmax(x, where=where), log_expected, rtol=1e-6)
  _close(nn.logmeanexp(x, axis=1, where=where),
         [np.log((np.exp(1) + np.exp(3)) / 2), 6.0], rtol=1e-6)
  assert np.all(np.isnan(nn.softmax(np.float32([1, np.inf]))))


def test_standardize():
  x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
  mean = x.mean(-1, keepdims=True)
  var = (x * x).mean(-1, keepdims=True) - mean ** 2
  _close(nn.standardize(x), (x - mean) / np.sqrt(var + 1e-5), rtol=1e-5)
  _close(nn.standardize(x, axis=0, mean=0.0, variance=1.0, epsilon=0.0), x, rtol=1e-6)
  where = x < 6
  m = np.sum(x * where, axis=1, keepdims=True) / np.maximum(where.sum(1, keepdims=True), 1)
  variance = (x * x * where).sum(1, keepdims=True)[0] / 4 - m[0] ** 2   # row 0: 4 selected
  _close(np.asarray(nn.standardize(x, where=where))[0], (x[0] - m[0]) / np.sqrt(variance + 1e-5),
         rtol=1e-5)


def test_one_hot():
  out = nn.one_hot(np.array([0, 2, -1, 3]), 3)
  assert out.dtype == np.float32
  np.testing.assert_array_equal(out, [[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]])
  x = np.array([[1, 0], [2, 1]])
  out = nn.one_hot(x, 3, axis=0, dtype=np.int32)
  assert out.shape == (3, 2, 2) and out.dtype == np.int32
  np.testing.assert_array_equal(out, np.moveaxis(np.eye(3, dtype=np.int32)[x], -1, 0))
  assert nn.one_hot(x, 4, axis=1).shape == (2, 4, 2)
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    np.testing.assert_array_equal(nn.one_hot(np.float32([1.0]), 2), [[0, 1]])
  assert any(issubclass(w.category, DeprecationWarning) for w in caught)


# --- attention -----------------------------------------------------------------------------------

def _attention_reference(q, k, v, bias=None, mask=None, causal=False, scale=None,
                         q_len=None, kv_len=None, window=None):
  """Direct NumPy attention, per batch and head, in float64 (layout BTNH)."""
  B, T, N, H = q.shape
  _, S_, K, _ = k.shape
  G = N // K
  scale = 1 / math.sqrt(H) if scale is None else scale
  out = np.zeros((B, T, N, H))
  for b in range(B):
    for n in range(N):
      logits = q[b, :, n, :] @ k[b, :, n // G, :].T * scale
      if bias is not None:
        logits = logits + np.broadcast_to(bias, (B, N, T, S_))[b, n]
      keep = np.ones((T, S_), bool)
      if mask is not None:
        keep &= np.broadcast_to(mask, (B, N, T, S_))[b, n]
      t, s = np.meshgrid(np.arange(T), np.arange(S_), indexing="ij")
      if causal:
        keep &= s <= t
      if window is not None:
        keep &= (t <= s + window[0]) & (t >= s - window[1])
      if q_len is not None:
        keep &= t < q_len[b]
      if kv_len is not None:
        keep &= s < kv_len[b]
      logits = np.where(keep, logits, -0.7 * np.finfo(np.float32).max)
      out[b, :, n, :] = _softmax(logits, -1) @ v[b, :, n // G, :]
      if q_len is not None and kv_len is not None:
        out[b, q_len[b]:, n, :] = 0
  return out


def test_dot_product_attention_matches_a_direct_computation():
  rng = np.random.default_rng(0)
  B, T, S_, N, K, H = 2, 3, 5, 4, 2, 8
  q = rng.normal(size=(B, T, N, H)).astype(np.float32)
  k = rng.normal(size=(B, S_, K, H)).astype(np.float32)
  v = rng.normal(size=(B, S_, K, H)).astype(np.float32)
  bias = rng.normal(size=(1, N, T, S_)).astype(np.float32)
  mask = rng.random((B, 1, T, S_)) < 0.8
  mask[..., 0] = True
  lengths = np.array([3, 2], np.int32), np.array([4, 5], np.int32)
  for kwargs in [{}, {"bias": bias}, {"mask": mask}, {"is_causal": True}, {"scale": 0.3},
                 {"local_window_size": (1, 0)}, {"local_window_size": 1},
                 {"query_seq_lengths": lengths[0], "key_value_seq_lengths": lengths[1]}]:
    out = nn.dot_product_attention(q, k, v, **kwargs)
    assert out.shape == q.shape and out.dtype == np.float32
    window = kwargs.get("local_window_size")
    window = (window, window) if isinstance(window, int) else window
    expected = _attention_reference(
        q, k, v, bias=kwargs.get("bias"), mask=kwargs.get("mask"),
        causal=kwargs.get("is_causal", False), scale=kwargs.get("scale"),
        q_len=kwargs.get("query_seq_lengths"), kv_len=kwargs.get("key_value_seq_lengths"),
        window=window)
    _close(out, expected, rtol=2e-5, atol=2e-6)
  out, residual = nn.dot_product_attention(q, k, v, bias=bias, return_residual=True)
  logits = (np.einsum("btkgh,bskh->btkgs", q.reshape(B, T, K, N // K, H).astype(F64), k)
            / math.sqrt(H))
  logits = logits + np.moveaxis(bias.reshape(1, K, N // K, T, S_), 3, 1)
  m = logits.max(-1)
  _close(residual, (m + np.log(np.exp(logits - m[..., None]).sum(-1))).reshape(B, T, N), rtol=1e-5)
  # 3-D inputs (TNH) and bfloat16
  out3 = nn.dot_product_attention(q[0], k[0], v[0])
  _close(out3, _attention_reference(q[:1], k[:1], v[:1])[0], rtol=2e-5, atol=2e-6)
  bf = lambda a: a.astype(ml_dtypes.bfloat16)
  out_bf = nn.dot_product_attention(bf(q), bf(k), bf(v))
  assert out_bf.dtype == ml_dtypes.bfloat16
  _close(out_bf, _attention_reference(q, k, v), rtol=5e-2, atol=5e-2)


def test_dot_product_attention_errors():
  q = np.ones((1, 2, 3, 4), np.float32)
  kv = np.ones((1, 2, 2, 4), np.float32)
  with pytest.raises(ValueError, match="must be a multiple of key/value heads"):
    nn.dot_product_attention(q, kv, kv)
  with pytest.raises(ValueError, match="value shape should be"):
    nn.dot_product_attention(q, q, kv)
  with pytest.raises(ValueError, match="mask dtype should be bool"):
    nn.dot_product_attention(q, q, q, mask=np.ones((1, 1, 2, 2), np.float32))
  with pytest.raises(ValueError, match="Unsupported implementation"):
    nn.dot_product_attention(q, q, q, implementation="flash")


def test_dot_product_attention_cudnn_raises_as_jax_without_cudnn():
  q = np.ones((1, 2, 3, 4), np.float32)
  for kwargs in ({}, {"is_causal": True, "local_window_size": (1, 1)},
                 {"local_window_size": (2, 0)}):
    with pytest.raises(RuntimeError, match=r"^cuDNN is not detected\.$"):
      nn.dot_product_attention(q, q, q, implementation="cudnn", **kwargs)
  lengths = np.array([2], np.int32)
  for kwargs in ({"local_window_size": 1},
                 {"is_causal": True, "query_seq_lengths": lengths, "local_window_size": (0, 1)}):
    with pytest.raises(ValueError, match="cuDNN doesn't support right window: 1"):
      nn.dot_product_attention(q, q, q, implementation="cudnn", **kwargs)


def test_jaxprs_show_the_nested_jits_as_jax():
  x = np.ones(3, np.float32)
  assert "name=relu" in str(jax.make_jaxpr(nn.relu)(x))
  assert "logistic" in str(jax.make_jaxpr(nn.sigmoid)(x))
  jaxpr = str(jax.make_jaxpr(nn.gelu)(x))
  assert "integer_pow[y=3]" in jaxpr and "tanh" in jaxpr
  assert "name=_one_hot" in str(jax.make_jaxpr(lambda i: nn.one_hot(i, 3))(np.arange(2)))
  np.testing.assert_allclose(jax.jit(nn.softmax)(x), nn.softmax(x))
  assert jnp.allclose(nn.tanh(x), jnp.tanh(x))
