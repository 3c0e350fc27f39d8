"""Cases for `refimpl.nn` (jax.nn): activations, softmax and friends,
standardize, one_hot and dot_product_attention.

Each expected value is the same formula computed by NumPy in the operand's
dtype, in JAX's order of operations, so float32 results agree to a few ulps
(exact selections such as relu on every float dtype). Inputs include NaN and
±inf unless bounded.

`AD_CASES` check the custom JVP rules of relu, relu6, softmax and log1mexp
(and log_softmax's stopped gradient) against finite differences, away from
the kinks.
"""

import math

import numpy as np
from hypothesis import strategies as st

from refimpl import nn
from conformance import strategies as S
from conformance.autodiff import ADCase
from conformance.cases import Case

FLOAT = S.FLOAT_DTYPES
F32 = [np.float32]


def _inputs(dtype_list, n=1, kwargs=None):
  return lambda: S.case_inputs(dtype_list, n, kwargs=kwargs)


def _bounded(dtype_list, n=1, low=-30.0, high=30.0, kwargs=None):
  return lambda: S.bounded_case_inputs(dtype_list, n, low, high, kwargs=kwargs)


def _c(x, v):
  return np.asarray(v, x.dtype)


def _sigmoid(x):
  return (1 / (1 + np.exp(-x.astype(np.float64)))).astype(x.dtype)


def _softplus(x):
  return np.logaddexp(x, _c(x, 0))


def _elu(x, alpha=1.0):
  return np.where(x > 0, x, _c(x, alpha) * np.expm1(np.where(x > 0, _c(x, 0), x)))


def _relu6(x):
  return np.minimum(np.maximum(x, _c(x, 0)), _c(x, 6))


def _gelu(x):
  inner = np.sqrt(2 / np.pi).astype(x.dtype) * (x + _c(x, 0.044715) * x ** 3)
  return x * (_c(x, 0.5) * (_c(x, 1) + np.tanh(inner)))


def _softmax(x, axis=-1):
  if x.size == 0:
    return x
  unnormalized = np.exp(x - np.max(x, axis=axis, keepdims=True))
  return unnormalized / np.sum(unnormalized, axis=axis, keepdims=True)


def _log_softmax(x, axis=-1):
  if x.size == 0:
    return x
  shifted = x - np.max(x, axis=axis, keepdims=True)
  return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def _standardize(x, axis=-1):
  mean = np.mean(x, axis, keepdims=True)
  variance = np.mean(np.square(x), axis, keepdims=True) - np.square(mean)
  return (x - mean) / np.sqrt(variance + _c(x, 1e-5))


def _one_hot(x, num_classes, axis):
  axis = axis % (x.ndim + 1)
  positions = np.arange(num_classes).reshape([-1 if d == axis else 1 for d in range(x.ndim + 1)])
  return (np.expand_dims(x, axis) == positions).astype(np.float32)


def _attention(q, k, v):
  scale = np.float32(1 / math.sqrt(q.shape[-1]))
  logits = np.einsum("btnh,bsnh->bnts", q, k) * scale
  return np.einsum("bnts,bsnh->btnh", _softmax(logits), v)


def _last_axis_arrays(dtype_list, low=-30.0, high=30.0):
  """One array of rank >= 1 with a non-empty last axis, bounded."""
  return lambda: st.sampled_from(dtype_list).flatmap(lambda dt: st.tuples(
      st.tuples(S.arrays(dt, S.shapes(min_dims=1, min_side=1),
                         elements=S.bounded_elements(dt, low, high))), st.just({})))


def _attention_inputs():
  shape = st.tuples(st.integers(1, 2), st.integers(1, 3), st.integers(1, 2), st.integers(1, 4))
  return shape.flatmap(lambda s: st.tuples(st.tuples(*[
      S.arrays(np.float32, s, elements=S.bounded_elements(np.float32, -3.0, 3.0))
      for _ in range(3)]), st.just({})))


CASES = [
    Case("nn.relu", nn.relu, _inputs(FLOAT), lambda x: np.where(x >= 0, x, _c(x, 0))),
    Case("nn.relu6", nn.relu6, _inputs(FLOAT), _relu6),
    Case("nn.sigmoid", nn.sigmoid, _inputs(FLOAT), _sigmoid),
    Case("nn.softplus", nn.softplus, _inputs(F32), _softplus),
    Case("nn.log_sigmoid", nn.log_sigmoid, _inputs(F32), lambda x: -_softplus(-x)),
    Case("nn.silu", nn.silu, _inputs(F32), lambda x: x * _sigmoid(x)),
    Case("nn.mish", nn.mish, _inputs(F32), lambda x: x * np.tanh(_softplus(x))),
    Case("nn.elu", nn.elu, _inputs(F32), _elu),
    Case("nn.selu", nn.selu, _inputs(F32),
         lambda x: _c(x, 1.0507009873554804934193349852946) * _elu(
             x, 1.6732632423543772848170429916717)),
    Case("nn.celu", nn.celu, _inputs(F32),
         lambda x: np.maximum(x, _c(x, 0)) + np.expm1(np.minimum(x, _c(x, 0)))),
    Case("nn.leaky_relu", nn.leaky_relu, _inputs(F32),
         lambda x: np.where(x >= 0, x, _c(x, 0.01) * x)),
    Case("nn.hard_tanh", nn.hard_tanh, _inputs(FLOAT),
         lambda x: np.where(x > 1, _c(x, 1), np.where(x < -1, _c(x, -1), x))),
    Case("nn.hard_sigmoid", nn.hard_sigmoid, _inputs(F32),
         lambda x: _relu6(x + _c(x, 3)) / _c(x, 6)),
    Case("nn.hard_silu", nn.hard_silu, _inputs(F32),
         lambda x: x * (_relu6(x + _c(x, 3)) / _c(x, 6))),
    Case("nn.soft_sign", nn.soft_sign, _inputs(F32), lambda x: x / (np.abs(x) + _c(x, 1))),
    Case("nn.sparse_plus", nn.sparse_plus, _inputs(F32),
         lambda x: np.where(x <= -1, _c(x, 0), np.where(x >= 1, x, (x + _c(x, 1)) ** 2 / 4))),
    Case("nn.sparse_sigmoid", nn.sparse_sigmoid, _inputs(FLOAT),
         lambda x: _c(x, 0.5) * np.clip(x + _c(x, 1), _c(x, 0), _c(x, 2))),
    Case("nn.squareplus", nn.squareplus, _inputs(F32),
         lambda x: (x + np.sqrt(np.square(x) + _c(x, 4))) / _c(x, 2)),
    # 1 + tanh(...) cancels for x < 0: an ulp of tanh becomes an absolute error
    Case("nn.gelu", nn.gelu, _inputs(F32), _gelu, atol=1e-6),
    Case("nn.log1mexp", nn.log1mexp, _bounded(F32, 1, 0.0, 50.0),
         lambda x: np.where(x < np.log(2), np.log(-np.expm1(-x)), np.log1p(-np.exp(-x)))),
    Case("nn.tanh", nn.tanh, _inputs(FLOAT), np.tanh),
    Case("nn.identity", nn.identity, _inputs(S.ALL_DTYPES), lambda x: x),
    Case("nn.softmax", nn.softmax, _last_axis_arrays(F32), _softmax,
         rtol=1e-5),
    Case("nn.log_softmax", nn.log_softmax, _last_axis_arrays(F32), _log_softmax,
         rtol=1e-5, atol=1e-6),
    Case("nn.standardize", nn.standardize, _last_axis_arrays(F32, -10.0, 10.0), _standardize,
         rtol=1e-4, atol=1e-4),
    Case("nn.one_hot", nn.one_hot, lambda: S.array_and_kwargs(
        lambda shape: st.fixed_dictionaries({"num_classes": st.integers(0, 4),
                                             "axis": st.integers(-len(shape) - 1, len(shape))}),
        [np.int8, np.int32], elements=st.integers(-2, 5)), _one_hot),
    Case("nn.dot_product_attention", nn.dot_product_attention, _attention_inputs, _attention,
         rtol=1e-4, atol=1e-5),
]


# --- derivatives --------------------------------------------------------------------------------

def _ad_pieces(*intervals, min_dims=0):
  """One float64 array (small shape) with elements drawn from the intervals."""
  elements = st.one_of(*(st.floats(low, high) for low, high in intervals))
  return lambda: st.tuples(
      st.tuples(S.arrays(np.float64, S.shapes(min_dims=min_dims, max_dims=2, min_side=1,
                                              max_side=4), elements=elements)),
      st.just({}))


AD_CASES = [
    ADCase("nn.relu", nn.relu, _ad_pieces((-5.0, -0.1), (0.1, 5.0)), ("custom_jvp_call",),
           order=2),
    ADCase("nn.relu6", nn.relu6, _ad_pieces((-5.0, -0.1), (0.1, 5.9), (6.1, 10.0)),
           ("custom_jvp_call",), order=2),
    # from 0.25: nearer 0 the third derivative (~2/x**3) makes the order-2
    # central difference too inexact for the tolerance
    ADCase("nn.log1mexp", nn.log1mexp, _ad_pieces((0.25, 10.0)), ("custom_jvp_call",),
           order=2),
    ADCase("nn.softmax", nn.softmax, _ad_pieces((-5.0, 5.0), min_dims=1),
           ("custom_jvp_call",), order=2),
    ADCase("nn.log_softmax", nn.log_softmax, _ad_pieces((-5.0, 5.0), min_dims=1),
           ("stop_gradient",), order=2),
]
