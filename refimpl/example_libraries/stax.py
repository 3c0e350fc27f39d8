"""`refimpl.example_libraries.stax`: neural-network layers as pairs of
functions, as `jax.example_libraries.stax`.

A layer is a pair `(init_fun, apply_fun)`:

- `init_fun(rng, input_shape)` -> `(output_shape, params)`, drawing the
  parameters from the PRNG key `rng` (the shapes are tuples; combinators pass
  lists of them);
- `apply_fun(params, inputs, **kwargs)` -> outputs; the keyword `rng` carries
  a key to layers that need one (`Dropout`).

Layer constructors are CamelCase (`Dense(out_dim)`, `Conv(...)`); layers
without parameters to choose are layers already (`Relu`, `Flatten`). The
combinators `serial`, `parallel` and `shape_dependent` build layers from
layers; `FanOut`, `FanInSum` and `FanInConcat` split and merge the inputs of
`parallel`. Initializers are `refimpl.nn.initializers`' (`glorot`, `randn` are
JAX's older names for `glorot_normal`, `normal`); the nonlinearities are
`refimpl.nn`'s, re-exported.
"""

import functools
import math

import refimpl.numpy as jnp
from refimpl import lax, random
from refimpl.nn import (elu, gelu, leaky_relu, log_softmax, relu, selu, sigmoid, softmax,
                        softplus, standardize)
from refimpl.nn.initializers import glorot_normal, normal, ones, zeros

glorot = glorot_normal
randn = normal
logsoftmax = log_softmax


def Dense(out_dim, W_init=glorot_normal(), b_init=normal()):  # noqa: N802, N803 (JAX's names)
  """A fully-connected layer: `inputs @ W + b`, W of shape
  `(input_shape[-1], out_dim)` and b of shape `(out_dim,)`."""
  def init_fun(rng, input_shape):
    output_shape = input_shape[:-1] + (out_dim,)
    k1, k2 = random.split(rng)
    return output_shape, (W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,)))

  def apply_fun(params, inputs, **kwargs):
    W, b = params  # noqa: N806
    return jnp.dot(inputs, W) + b

  return init_fun, apply_fun


def _kernel_and_bias_shapes(dimension_numbers, out_chan, filter_shape, input_shape):
  """The kernel shape (in `rhs_spec` order: `out_chan` at 'O', the input's
  channels at 'I', `filter_shape` at the spatial letters) and the bias shape
  (`out_chan` at the output's 'C', 1 elsewhere) of a convolution layer."""
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  spatial = iter(filter_shape)
  kernel_shape = [out_chan if c == 'O' else input_shape[lhs_spec.index('C')] if c == 'I'
                  else next(spatial) for c in rhs_spec]
  bias_shape = [out_chan if c == 'C' else 1 for c in out_spec]
  return kernel_shape, bias_shape


def _conv_layer(shape_tuple, conv, dimension_numbers, out_chan, filter_shape, strides,
                padding, W_init, b_init):  # noqa: N803
  """The layer of `GeneralConv` / `GeneralConvTranspose`: `conv(inputs, W,
  strides) + b`, its output shape given by `shape_tuple`; W_init defaults to
  glorot_normal over the kernel's 'I' and 'O' axes."""
  rhs_spec = dimension_numbers[1]
  strides = strides or (1,) * len(filter_shape)
  W_init = W_init or glorot_normal(rhs_spec.index('I'), rhs_spec.index('O'))  # noqa: N806

  def init_fun(rng, input_shape):
    kernel_shape, bias_shape = _kernel_and_bias_shapes(dimension_numbers, out_chan,
                                                       filter_shape, input_shape)
    output_shape = shape_tuple(input_shape, kernel_shape, strides, padding, dimension_numbers)
    k1, k2 = random.split(rng)
    return output_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

  def apply_fun(params, inputs, **kwargs):
    W, b = params  # noqa: N806
    return conv(inputs, W, strides) + b

  return init_fun, apply_fun


def GeneralConv(dimension_numbers, out_chan, filter_shape, strides=None,  # noqa: N802
                padding='VALID', W_init=None, b_init=normal(1e-6)):  # noqa: N803
  """A convolution layer: `lax.conv_general_dilated(inputs, W, strides,
  padding, dimension_numbers=dimension_numbers) + b`, with `out_chan` output
  channels and a kernel of spatial shape `filter_shape` (strides default to
  1, no dilation); `dimension_numbers` is `(lhs_spec, rhs_spec, out_spec)`
  as strings."""
  one = (1,) * len(filter_shape)

  def conv(inputs, W, strides):  # noqa: N803
    return lax.conv_general_dilated(inputs, W, strides, padding, one, one,
                                    dimension_numbers=dimension_numbers)

  return _conv_layer(lax.conv_general_shape_tuple, conv, dimension_numbers, out_chan,
                     filter_shape, strides, padding, W_init, b_init)


Conv = functools.partial(GeneralConv, ('NHWC', 'HWIO', 'NHWC'))


def GeneralConvTranspose(dimension_numbers, out_chan, filter_shape, strides=None,  # noqa: N802
                         padding='VALID', W_init=None, b_init=normal(1e-6)):  # noqa: N803
  """A transposed-convolution layer: `lax.conv_transpose(inputs, W, strides,
  padding, dimension_numbers=dimension_numbers) + b` (see `GeneralConv`)."""
  def conv(inputs, W, strides):  # noqa: N803
    return lax.conv_transpose(inputs, W, strides, padding, dimension_numbers=dimension_numbers)

  return _conv_layer(lax.conv_transpose_shape_tuple, conv, dimension_numbers, out_chan,
                     filter_shape, strides, padding, W_init, b_init)


Conv1DTranspose = functools.partial(GeneralConvTranspose, ('NHC', 'HIO', 'NHC'))
ConvTranspose = functools.partial(GeneralConvTranspose, ('NHWC', 'HWIO', 'NHWC'))


def BatchNorm(axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True,  # noqa: N802
              beta_init=zeros, gamma_init=ones):
  """Batch normalization: `nn.standardize(x, axis, epsilon=epsilon)`, times
  gamma if `scale` and plus beta if `center`, gamma and beta of the input's
  shape without the `axis` dimensions (an empty tuple where unused)."""
  axis = (axis,) if jnp.isscalar(axis) else axis

  def init_fun(rng, input_shape):
    shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
    k1, k2 = random.split(rng)
    beta = beta_init(k1, shape) if center else ()
    gamma = gamma_init(k2, shape) if scale else ()
    return input_shape, (beta, gamma)

  def apply_fun(params, x, **kwargs):
    beta, gamma = params
    expand = tuple(None if i in axis else slice(None) for i in range(jnp.ndim(x)))
    z = standardize(x, axis, epsilon=epsilon)
    if scale:
      z = gamma[expand] * z
    if center:
      z = z + beta[expand]
    return z

  return init_fun, apply_fun


def elementwise(fun, **fun_kwargs):
  """A layer without parameters applying `fun(inputs, **fun_kwargs)`."""
  def init_fun(rng, input_shape):
    return input_shape, ()

  def apply_fun(params, inputs, **kwargs):
    return fun(inputs, **fun_kwargs)

  return init_fun, apply_fun


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


def _pooling_layer(reducer, init_val, rescaler=None):
  """A pooling-layer constructor reducing windows with `reducer` from
  `init_val`, its result rescaled by `rescaler(window_shape, strides,
  padding)` where given."""
  def PoolingLayer(window_shape, strides=None, padding='VALID', spec=None):  # noqa: N802
    """A pooling layer over windows of `window_shape` (the spatial axes) with
    `strides` (default 1) and `padding`; `spec` names the input's axes
    (e.g. 'NHWC', the default layout: batch first, channels last)."""
    strides = strides or (1,) * len(window_shape)
    rescale = rescaler(window_shape, strides, padding) if rescaler else None
    non_spatial_axes = (0, len(window_shape) + 1) if spec is None else (spec.index('N'),
                                                                       spec.index('C'))
    for i in sorted(non_spatial_axes):
      window_shape = window_shape[:i] + (1,) + window_shape[i:]
      strides = strides[:i] + (1,) + strides[i:]

    def init_fun(rng, input_shape):
      pads = lax.padtype_to_pads(input_shape, window_shape, strides, padding)
      unit = (1,) * len(window_shape)   # no dilation
      return lax.reduce_window_shape_tuple(input_shape, window_shape, strides, pads, unit,
                                           unit), ()

    def apply_fun(params, inputs, **kwargs):
      out = lax.reduce_window(inputs, init_val, reducer, window_shape, strides, padding)
      return rescale(out, inputs, spec) if rescale else out

    return init_fun, apply_fun

  return PoolingLayer


MaxPool = _pooling_layer(lax.max, -jnp.inf)
SumPool = _pooling_layer(lax.add, 0.)


def _normalize_by_window_size(dims, strides, padding):
  """The rescaling of `AvgPool`: each window's sum over the number of input
  elements it covers (padding excluded)."""
  def rescale(outputs, inputs, spec):
    non_spatial_axes = ((0, inputs.ndim - 1) if spec is None
                        else (spec.index('N'), spec.index('C')))
    spatial_shape = tuple(inputs.shape[i] for i in range(inputs.ndim)
                          if i not in non_spatial_axes)
    one = jnp.ones(spatial_shape, dtype=inputs.dtype)
    window_sizes = lax.reduce_window(one, 0., lax.add, dims, strides, padding)
    for i in sorted(non_spatial_axes):
      window_sizes = jnp.expand_dims(window_sizes, i)
    return outputs / window_sizes
  return rescale


AvgPool = _pooling_layer(lax.add, 0., _normalize_by_window_size)


def _flatten():
  """Flattens all but the leading (batch) dimension."""
  def init_fun(rng, input_shape):
    return (input_shape[0], math.prod(input_shape[1:])), ()

  def apply_fun(params, inputs, **kwargs):
    return jnp.reshape(inputs, (inputs.shape[0], -1))

  return init_fun, apply_fun


Flatten = _flatten()
Identity = elementwise(lambda x: x)


def FanOut(num):  # noqa: N802
  """A layer copying its input into a list of `num` inputs."""
  def init_fun(rng, input_shape):
    return [input_shape] * num, ()

  def apply_fun(params, inputs, **kwargs):
    return [inputs] * num

  return init_fun, apply_fun


def _fan_in_sum():
  """The sum of a list of inputs of one shape."""
  def init_fun(rng, input_shape):
    return input_shape[0], ()

  def apply_fun(params, inputs, **kwargs):
    return sum(inputs)

  return init_fun, apply_fun


FanInSum = _fan_in_sum()


def FanInConcat(axis=-1):  # noqa: N802
  """A layer concatenating a list of inputs along `axis`."""
  def init_fun(rng, input_shape):
    ax = axis % len(input_shape[0])
    concat_size = sum(shape[ax] for shape in input_shape)
    return input_shape[0][:ax] + (concat_size,) + input_shape[0][ax + 1:], ()

  def apply_fun(params, inputs, **kwargs):
    return jnp.concatenate(inputs, axis)

  return init_fun, apply_fun


def Dropout(rate, mode='train'):  # noqa: N802
  """Dropout. In mode 'train' each element is kept with probability `rate`
  (JAX's convention: `rate` is the keep rate) and divided by `rate`, the
  others set to 0, which needs the `rng` keyword of `apply_fun` (ValueError
  without it); in mode 'test' the inputs pass unchanged. Another mode is a
  ValueError when applied."""
  def init_fun(rng, input_shape):
    return input_shape, ()

  def apply_fun(params, inputs, **kwargs):
    rng = kwargs.get('rng', None)
    if mode == 'train':
      if rng is None:
        raise ValueError("Dropout layer requires apply_fun to be called with a PRNG key "
                         "argument. That is, instead of `apply_fun(params, inputs)`, call "
                         "it like `apply_fun(params, inputs, rng)` where `rng` is a "
                         "PRNG key (e.g. from `jax.random.key`).")
      keep = random.bernoulli(rng, rate, inputs.shape)
      return jnp.where(keep, inputs / rate, 0)
    if mode == 'test':
      return inputs
    raise ValueError("Dropout layer requires `mode` argument to be either `'train'` or"
                     "`'test'`")

  return init_fun, apply_fun


def _split_rng(rng, nlayers):
  """One key per layer from the `rng` keyword (None for each without one)."""
  return random.split(rng, nlayers) if rng is not None else (None,) * nlayers


def serial(*layers):
  """The composition of `layers` in order: parameters are a list, one entry
  per layer, and an `rng` keyword is split into one key per layer."""
  init_funs, apply_funs = zip(*layers)

  def init_fun(rng, input_shape):
    params = []
    for init in init_funs:
      rng, layer_rng = random.split(rng)
      input_shape, param = init(layer_rng, input_shape)
      params.append(param)
    return input_shape, params

  def apply_fun(params, inputs, **kwargs):
    rngs = _split_rng(kwargs.pop('rng', None), len(layers))
    for fun, param, rng in zip(apply_funs, params, rngs):
      inputs = fun(param, inputs, rng=rng, **kwargs)
    return inputs

  return init_fun, apply_fun


def parallel(*layers):
  """The layers side by side: takes a sequence of inputs (and of input
  shapes), one per layer, and returns the sequence of their outputs (often
  between `FanOut` and `FanInSum` / `FanInConcat`)."""
  init_funs, apply_funs = zip(*layers)

  def init_fun(rng, input_shape):
    rngs = random.split(rng, len(layers))
    return zip(*[init(r, shape) for init, r, shape in zip(init_funs, rngs, input_shape)])

  def apply_fun(params, inputs, **kwargs):
    rngs = _split_rng(kwargs.pop('rng', None), len(layers))
    return [f(p, x, rng=r, **kwargs) for f, p, x, r in zip(apply_funs, params, inputs, rngs)]

  return init_fun, apply_fun


def shape_dependent(make_layer):
  """A layer built by `make_layer(input_shape)` once the input shape is known
  (at `init_fun`, and at `apply_fun` from the inputs' shape)."""
  def init_fun(rng, input_shape):
    return make_layer(input_shape)[0](rng, input_shape)

  def apply_fun(params, inputs, **kwargs):
    return make_layer(inputs.shape)[1](params, inputs, **kwargs)

  return init_fun, apply_fun
