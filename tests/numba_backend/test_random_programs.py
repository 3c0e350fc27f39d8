"""Random programs agree on the numba backends and the reference.

Hypothesis builds a program as a small random DAG of operations drawn from
a wide menu: elementwise unary and binary primitives (comparisons too),
select, conversions and bitcasts, the shape primitives, reductions,
cumulative reductions, dot_general, convolutions, dynamic_slice,
dynamic_update_slice, gather and scatter (indices out of bounds included,
every mode), sort, and sub-blocks wrapped in cond/switch, while_loop, fori_loop, scan, vmap, jvp
and grad (of float sub-blocks). Its inputs are float16, bfloat16, float32,
int32, uint8, bool and complex64 arrays, with NaN, infinities and -0.0,
and int32 scalars and index vectors with the extremes of int32.

An operation fits its operands to one another (a conversion, a pad that
crops or extends, reshapes around it) only where their types may differ,
and computes every size-dependent parameter (slice bounds, paddings, slice
sizes) from its operands' shapes when it is traced. So a program is a
function of its inputs' dtypes and ranks alone, and each example runs it on
several instances of other shapes (empty and size-1 axes among them) and
values: the numba backend's source is generic in shape, so the instances
after the first cost no compile (test_cache.py checks that empty operands
keep the program too), unless the traced jaxpr itself depends on sizes.

Every output of every operation is compared with the reference's bit for
bit, NaNs equal to NaNs whatever their bits (docs/backends.md, "Tolerances
of the numba backend": the primitives used here are exact; dot_general's
operands are first rounded to small integers, whose sums are exact in
every order; convolutions' too). Float32 exp and tanh are within an ulp
(test_float32.py), so the programs here are compiled with the checked
functions instead (`Lowering.float32_functions`), which give their bits.

Compile budget: each example costs about one cold Numba compile (seconds),
so the default profile runs a fixed (derandomized) set of a few programs,
which the disk cache makes fast on later runs; HYPOTHESIS_PROFILE=full runs
many more, freshly random.
"""

import dataclasses
import itertools
import math
import os
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, note, settings, strategies as st

import refimpl as jax
from refimpl import dtypes, lax
from refimpl.lax import GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers
from conformance import strategies as cst
from numba_backend import threads
from numba_backend.lower import Lowering
from tests.numba_backend.test_indexing import index_arrays

pytest.importorskip("numba")

FULL = os.environ.get("HYPOTHESIS_PROFILE") == "full"
SETTINGS = settings(max_examples=200 if FULL else 5, derandomize=not FULL, database=None,
                    deadline=None)
INSTANCES = 3          # shapes and values each program runs on
MAX_RANK = 4
MAX_DEPTH = 2 if FULL else 1   # nesting of control flow and transforms

DTYPES = [np.dtype(d) for d in (np.float16, dtypes.bfloat16, np.float32, np.int32, np.uint8,
                                np.bool_, np.complex64)]
INT32, BOOL, F32 = np.dtype(np.int32), np.dtype(np.bool_), np.dtype(np.float32)


def kind(dtype):
  """'f' float, 'c' complex, 'i' signed, 'u' unsigned, 'b' bool."""
  return "c" if dtypes.is_complex(dtype) else "f" if dtypes.is_inexact(dtype) else np.dtype(
      dtype).kind


@dataclasses.dataclass(frozen=True)
class Type:
  """A value's dtype and symbolic shape: `dims` are tokens, and values of
  equal tokens have equal sizes in every instance (other tokens may or may
  not)."""
  dtype: np.dtype
  dims: tuple

  @property
  def rank(self):
    return len(self.dims)


# --- fitting a value to a type -----------------------------------------------------------------

def zero(dtype):
  return np.zeros((), dtype)


def fit(x, shape):
  """`x` cropped or zero-padded at the end of each dimension to `shape` (of its rank)."""
  return lax.pad(x, zero(x.dtype), [(0, t - n, 0) for n, t in zip(x.shape, shape)])


def convert_element_type(x, dtype):
  """lax.convert_element_type, of the real part of a complex `x` to a real dtype."""
  if kind(x.dtype) == "c" and kind(dtype) != "c":
    x = lax.real(x)
  return lax.convert_element_type(x, dtype)


def adapter(source, target):
  """A function (value of `source`, shape of `target`'s rank) -> value of
  `target`'s dtype and that shape: converted if the dtypes differ, fitted
  if the dims may differ (through a flat reshape if the ranks do)."""
  convert, refit = source.dtype != target.dtype, source.dims != target.dims

  def adapt(x, shape):
    if convert:
      x = convert_element_type(x, target.dtype)
    if refit and source.rank == target.rank:
      x = fit(x, shape)
    elif refit:
      flat = fit(lax.reshape(x, (math.prod(x.shape),)), (math.prod(shape),))
      x = lax.reshape(flat, tuple(shape))
    return x
  return adapt


def small(x):
  """Float or complex `x` rounded to integers in [-4, 4] (NaN stays NaN):
  sums of their products are exact in any order."""
  if kind(x.dtype) == "c":
    return lax.complex(small(lax.real(x)), small(lax.imag(x)))
  four = np.asarray(4, x.dtype)
  return lax.clamp(-four, lax.round(x), four)


# --- the menu ----------------------------------------------------------------------------------

same = lambda dtype: dtype
UNARY = {   # name: (function, kinds accepted, result dtype)
    "neg": (lax.neg, "fciu", same), "abs": (lax.abs, "fci", dtypes.to_real_dtype),
    "sign": (lax.sign, "fciu", same), "floor": (lax.floor, "f", same),
    "ceil": (lax.ceil, "f", same), "round": (lax.round, "f", same),
    "is_finite": (lax.is_finite, "f", lambda d: BOOL), "exp": (lax.exp, "fc", same),
    "log": (lax.log, "fc", same), "sin": (lax.sin, "fc", same), "tanh": (lax.tanh, "fc", same),
    "sqrt": (lax.sqrt, "fc", same), "logistic": (lax.logistic, "fc", same),
    "expm1": (lax.expm1, "fc", same), "log1p": (lax.log1p, "fc", same),
    "atan": (lax.atan, "f", same), "cosh": (lax.cosh, "f", same),
    "square": (lax.square, "fciu", same),
    "pow3": (lambda x: lax.integer_pow(x, 3), "fciu", same),
    "pow-1": (lambda x: lax.integer_pow(x, -1), "fc", same),
    "not": (lax.bitwise_not, "iub", same), "population_count": (lax.population_count, "iu", same),
    "clz": (lax.clz, "iu", same), "real": (lax.real, "c", lambda d: F32),
    "imag": (lax.imag, "c", lambda d: F32), "conj": (lax.conj, "c", same),
    "reduce_precision": (lambda x: lax.reduce_precision(x, 4, 3), "f", same),
}
BINARY = {  # name: (function, kinds accepted, whether the result is bool)
    "add": (lax.add, "fciu", False), "sub": (lax.sub, "fciu", False),
    "mul": (lax.mul, "fciu", False), "div": (lax.div, "fciu", False),
    "rem": (lax.rem, "fiu", False), "max": (lax.max, "fciub", False),
    "min": (lax.min, "fciub", False), "pow": (lax.pow, "fc", False),
    "atan2": (lax.atan2, "f", False), "nextafter": (lax.nextafter, "f", False),
    "and": (lax.bitwise_and, "iub", False), "or": (lax.bitwise_or, "iub", False),
    "xor": (lax.bitwise_xor, "iub", False), "shift_left": (lax.shift_left, "iu", False),
    "shift_right_logical": (lax.shift_right_logical, "iu", False),
    "shift_right_arithmetic": (lax.shift_right_arithmetic, "iu", False),
    "eq": (lax.eq, "fciub", True), "ne": (lax.ne, "fciub", True), "lt": (lax.lt, "fiub", True),
    "le": (lax.le, "fiub", True), "gt": (lax.gt, "fiub", True), "ge": (lax.ge, "fiub", True),
}
NOT_DIFFERENTIABLE = {"nextafter", "scatter_mul"}   # refimpl (as JAX) cannot transpose these
# (and scatter_mul has no JVP for indices not known to be unique)
REDUCTIONS = {"sum": (lax.reduce_sum, "fciu"), "prod": (lax.reduce_prod, "fciu"),
              "max": (lax.reduce_max, "fciub"), "min": (lax.reduce_min, "fciub"),
              "and": (lax.reduce_and, "iub"), "or": (lax.reduce_or, "iub")}
CUMULATIVE = {"cumsum": (lax.cumsum, "fciu"), "cumprod": (lax.cumprod, "fciu"),
              "cummax": (lax.cummax, "fiu"), "cummin": (lax.cummin, "fiu"),
              "cumlogsumexp": (lax.cumlogsumexp, "f")}
SCATTERS = {"scatter": (lax.scatter, "fciub"), "scatter_add": (lax.scatter_add, "fciu"),
            "scatter_mul": (lax.scatter_mul, "fciu"), "scatter_min": (lax.scatter_min, "fiub"),
            "scatter_max": (lax.scatter_max, "fiub")}
MODES = list(GatherScatterMode)
BITCASTS = {np.dtype(np.float32): INT32, INT32: np.dtype(np.float32),
            np.dtype(np.float16): np.dtype(dtypes.bfloat16),
            np.dtype(dtypes.bfloat16): np.dtype(np.float16)}


@dataclasses.dataclass
class Op:
  """A drawn operation: operand positions, result types, and `apply`
  (operand values -> result values)."""
  args: list
  outs: list
  apply: object
  name: str


class Builder:
  """Draws operations from `operations` (and, below MAX_DEPTH, from
  `control`) and blocks of them. An operation drawer is a function
  (builder, env: the types of the values so far, depth, differentiable)
  -> Op, or None where it does not apply; `differentiable` restricts the
  menu to what jvp ("jvp": no scatter_mul, whose JVP needs unique indices,
  as JAX's) or grad ("grad": nor while loops, nextafter or bitcasts) can
  differentiate."""

  def __init__(self, data, operations=None, control=None):
    self.data = data
    self.operations = OPERATIONS if operations is None else operations
    self.control = CONTROL if control is None else control
    self.tokens = itertools.count()
    self.log = []   # the operations drawn, for the report of a failing example

  def draw(self, strategy):
    return self.data.draw(strategy)

  def new_dim(self):
    return ("new", next(self.tokens))

  def pick(self, env, accept=lambda t: True):
    """The position of a value of `env` that `accept`s, or None."""
    candidates = [i for i, t in enumerate(env) if accept(t)]
    return self.draw(st.sampled_from(candidates)) if candidates else None

  def partner(self, env, t):
    """The position of a second operand for a value of type `t`: often one of
    that type (no fitting needed), else any."""
    alike = [i for i, u in enumerate(env) if u == t]
    if alike and self.draw(st.booleans()):
      return self.draw(st.sampled_from(alike))
    return self.pick(env)

  def fraction(self):
    """A size-dependent parameter: the numerator of a fraction of a size, in quarters."""
    return self.draw(st.integers(0, 4))

  def block(self, in_types, n_ops, depth, differentiable=False, n_outs=None, first=None):
    """(fn, out types): `n_ops` random operations (the first from `first`,
    if given) on values of `in_types`; fn returns the values of the last
    `n_outs` of them (all, if None)."""
    env, ops = list(in_types), []
    menu = self.operations + (self.control if depth < MAX_DEPTH else [])
    for n in range(n_ops):
      op = None
      while op is None:
        make = self.draw(st.sampled_from(first if first and not n else menu))
        if not (differentiable == "grad" and make in (while_loop, fori_dynamic)):
          op = make(self, env, depth, differentiable)
        if op is not None and any(t.rank > MAX_RANK for t in op.outs):
          op = None
      ops.append(op)
      self.log.append(f"{'  ' * depth}v{len(env)}.. = {op.name}{tuple(op.args)}: "
                      + ", ".join(f"{t.dtype}{list(t.dims)}" for t in op.outs))
      env.extend(op.outs)
    start = len(env) - sum(len(op.outs) for op in ops[-n_outs:]) if n_outs else len(in_types)

    def fn(*values):
      values = list(values)
      for op in ops:
        values.extend(op.apply(*[values[a] for a in op.args]))
      return values[start:]
    return fn, env[start:]


def unary(b, env, depth, differentiable):
  i = b.pick(env)
  t = env[i]
  name = b.draw(st.sampled_from([n for n, (_, kinds, _) in UNARY.items()
                                 if kind(t.dtype) in kinds]))
  f, _, result = UNARY[name]
  return Op([i], [Type(np.dtype(result(t.dtype)), t.dims)], lambda x: [f(x)], name)


def binary(b, env, depth, differentiable):
  i = b.pick(env)
  t = env[i]
  j = b.partner(env, t)
  names = [n for n, (_, kinds, _) in BINARY.items() if kind(t.dtype) in kinds
           and not (differentiable == "grad" and n in NOT_DIFFERENTIABLE)]
  if not names:
    return None
  name = b.draw(st.sampled_from(names))
  f, _, to_bool = BINARY[name]
  adapt = adapter(env[j], t)
  return Op([i, j], [Type(BOOL if to_bool else t.dtype, t.dims)],
            lambda x, y: [f(x, adapt(y, x.shape))], name)


def select(b, env, depth, differentiable):
  i = b.pick(env)
  t = env[i]
  p, j = b.partner(env, Type(BOOL, t.dims)), b.partner(env, t)
  to_pred, adapt = adapter(env[p], Type(BOOL, t.dims)), adapter(env[j], t)
  return Op([p, i, j], [t], lambda p, x, y: [lax.select(to_pred(p, x.shape), x,
                                                         adapt(y, x.shape))], "select")


def convert(b, env, depth, differentiable):
  i = b.pick(env)
  t = env[i]
  bitcast = t.dtype in BITCASTS and differentiable != "grad" and b.draw(st.booleans())
  dtype = BITCASTS[t.dtype] if bitcast else b.draw(st.sampled_from(DTYPES))
  f = lax.bitcast_convert_type if bitcast else convert_element_type
  return Op([i], [Type(dtype, t.dims)], lambda x: [f(x, dtype)],
            "bitcast" if bitcast else "convert")


def broadcast(b, env, depth, differentiable):
  i = b.pick(env)
  t = env[i]
  at = b.draw(st.integers(0, t.rank))
  copy = b.draw(st.integers(-1, t.rank - 1))   # the size of one of x's dims, or a constant
  size = b.draw(st.integers(0, 3))
  token = t.dims[copy] if copy >= 0 else ("const", size)
  dims = tuple(k for k in range(t.rank + 1) if k != at)

  def apply(x):
    shape = list(x.shape)
    shape.insert(at, x.shape[copy] if copy >= 0 else size)
    return [lax.broadcast_in_dim(x, tuple(shape), dims)]
  return Op([i], [Type(t.dtype, t.dims[:at] + (token,) + t.dims[at:])], apply, "broadcast_in_dim")


def reshape(b, env, depth, differentiable):
  """Merge two adjacent dims, insert a dim of size 1, or flatten."""
  i = b.pick(env)
  t = env[i]
  how = b.draw(st.sampled_from(["insert"] + ["merge", "flatten"] * (t.rank >= 2)))
  if how == "insert":
    at = b.draw(st.integers(0, t.rank))
    dims = t.dims[:at] + (("const", 1),) + t.dims[at:]
    new_shape = lambda s: s[:at] + (1,) + s[at:]
  elif how == "merge":
    at = b.draw(st.integers(0, t.rank - 2))
    dims = t.dims[:at] + (("*",) + t.dims[at:at + 2],) + t.dims[at + 2:]
    new_shape = lambda s: s[:at] + (s[at] * s[at + 1],) + s[at + 2:]
  else:
    dims = (("*",) + t.dims,)
    new_shape = lambda s: (math.prod(s),)
  return Op([i], [Type(t.dtype, dims)], lambda x: [lax.reshape(x, new_shape(tuple(x.shape)))],
            f"reshape ({how})")


def transpose(b, env, depth, differentiable):
  i = b.pick(env, lambda t: t.rank >= 2)
  if i is None:
    return None
  t = env[i]
  perm = tuple(b.draw(st.permutations(range(t.rank))))
  return Op([i], [Type(t.dtype, tuple(t.dims[p] for p in perm))],
            lambda x: [lax.transpose(x, perm)], "transpose")


def rev(b, env, depth, differentiable):
  i = b.pick(env, lambda t: t.rank >= 1)
  if i is None:
    return None
  t = env[i]
  axes = tuple(b.draw(st.sets(st.integers(0, t.rank - 1), min_size=1)))
  return Op([i], [t], lambda x: [lax.rev(x, axes)], "rev")


def slice_(b, env, depth, differentiable):
  i = b.pick(env, lambda t: t.rank >= 1)
  if i is None:
    return None
  t = env[i]
  params = [(b.fraction(), b.fraction(), b.draw(st.integers(1, 3))) for _ in t.dims]
  dims = tuple(d if p == (0, 4, 1) else b.new_dim() for d, p in zip(t.dims, params))

  def apply(x):
    starts = [n * s // 4 for n, (s, _, _) in zip(x.shape, params)]
    limits = [a + (n - a) * l // 4 for a, n, (_, l, _) in zip(starts, x.shape, params)]
    return [lax.slice(x, starts, limits, [s for _, _, s in params])]
  return Op([i], [Type(t.dtype, dims)], apply, "slice")


def pad(b, env, depth, differentiable):
  i = b.pick(env, lambda t: t.rank >= 1)
  if i is None:
    return None
  t = env[i]
  config = [(b.draw(st.integers(-2, 2)), b.draw(st.integers(-2, 2)), b.draw(st.integers(0, 2)))
            for _ in t.dims]
  value = b.draw(cst.arrays(t.dtype, ()))
  dims = tuple(d if c == (0, 0, 0) else b.new_dim() for d, c in zip(t.dims, config))

  def apply(x):
    padding = []
    for n, (lo, hi, interior) in zip(x.shape, config):
      dilated = n + max(n - 1, 0) * interior
      lo = max(lo, -dilated)
      padding.append((lo, max(hi, -dilated - lo), interior))
    return [lax.pad(x, value, padding)]
  return Op([i], [Type(t.dtype, dims)], apply, "pad")


def concatenate(b, env, depth, differentiable):
  i = b.pick(env, lambda t: t.rank >= 1)
  if i is None:
    return None
  t = env[i]
  j = b.partner(env, t)
  u = env[j]
  axis = b.draw(st.integers(0, t.rank - 1))
  keep = u.rank == t.rank   # y keeps its size along the axis
  target = Type(t.dtype, t.dims[:axis] + (u.dims[axis] if keep else t.dims[axis],)
                + t.dims[axis + 1:])
  adapt = adapter(u, target)

  def apply(x, y):
    shape = list(x.shape)
    if keep:
      shape[axis] = y.shape[axis]
    return [lax.concatenate([x, adapt(y, shape)], axis)]
  return Op([i, j], [Type(t.dtype, t.dims[:axis] + (b.new_dim(),) + t.dims[axis + 1:])],
            apply, "concatenate")


def reduce(b, env, depth, differentiable):
  i = b.pick(env)
  t = env[i]
  names = [n for n, (_, kinds) in REDUCTIONS.items() if kind(t.dtype) in kinds]
  names += ["argmax", "argmin"] * (t.rank >= 1)
  name = b.draw(st.sampled_from(names))
  if name in ("argmax", "argmin"):
    axis = b.draw(st.integers(0, t.rank - 1))
    f = lax.argmax if name == "argmax" else lax.argmin

    def apply(x):   # an empty axis padded to one element (argmax needs one)
      padding = [(0, max(0, 1 - n) if d == axis else 0, 0) for d, n in enumerate(x.shape)]
      return [f(lax.pad(x, zero(x.dtype), padding), axis, np.int32)]
    return Op([i], [Type(INT32, t.dims[:axis] + t.dims[axis + 1:])], apply, name)
  axes = tuple(sorted(b.draw(st.sets(st.integers(0, t.rank - 1))))) if t.rank else ()
  f = REDUCTIONS[name][0]
  return Op([i], [Type(t.dtype, tuple(d for k, d in enumerate(t.dims) if k not in axes))],
            lambda x: [f(x, axes)], f"reduce_{name}")


def cumulative(b, env, depth, differentiable):
  i = b.pick(env, lambda t: t.rank >= 1 and t.dtype != BOOL)
  if i is None:
    return None
  t = env[i]
  name = b.draw(st.sampled_from([n for n, (_, kinds) in CUMULATIVE.items()
                                 if kind(t.dtype) in kinds]))
  axis, reverse = b.draw(st.integers(0, t.rank - 1)), b.draw(st.booleans())
  f = CUMULATIVE[name][0]
  return Op([i], [t], lambda x: [f(x, axis, reverse=reverse)], name)


def dot_general(b, env, depth, differentiable):
  i = b.pick(env)
  t = env[i]
  j = b.partner(env, t)
  u = env[j]
  pairs = b.draw(st.integers(0, min(t.rank, u.rank)))
  x_dims = b.draw(st.permutations(range(t.rank)))[:pairs]
  y_dims = b.draw(st.permutations(range(u.rank)))[:pairs]
  n_batch = b.draw(st.integers(0, pairs))
  batch = (tuple(x_dims[:n_batch]), tuple(y_dims[:n_batch]))
  contract = (tuple(x_dims[n_batch:]), tuple(y_dims[n_batch:]))
  target_dims = list(u.dims)
  for xd, yd in zip(x_dims, y_dims):
    target_dims[yd] = t.dims[xd]
  adapt = adapter(u, Type(t.dtype, tuple(target_dims)))
  free = lambda dims, used: [d for k, d in enumerate(dims) if k not in used]
  dims = (tuple(t.dims[k] for k in batch[0]) + tuple(free(t.dims, x_dims))
          + tuple(free(u.dims, y_dims)))

  def apply(x, y):
    shape = list(y.shape)
    for xd, yd in zip(x_dims, y_dims):
      shape[yd] = x.shape[xd]
    y = adapt(y, shape)
    if kind(t.dtype) in "fc":
      x, y = small(x), small(y)
    return [lax.dot_general(x, y, (contract, batch))]
  return Op([i, j], [Type(t.dtype, dims)], apply, "dot_general")


CONV_LAYOUTS = {(1, "first"): ("NCH", "OIH", "NCH"), (1, "last"): ("NHC", "HIO", "NHC"),
                (2, "first"): ("NCHW", "OIHW", "NCHW"), (2, "last"): ("NHWC", "HWIO", "NHWC")}


def conv(b, env, depth, differentiable):
  """conv_general_dilated with 1 or 2 spatial dims, channels first or last,
  strides, paddings, dilations, and feature or batch groups, of a value
  (reshaped to the rank if it has another) and a kernel fitted from another;
  float operands rounded to small integers, as dot_general's."""
  i = b.pick(env, lambda t: kind(t.dtype) in "fciu")
  if i is None:
    return None
  t = env[i]
  j = b.pick(env)
  spatial = b.draw(st.integers(1, 2))
  layout = CONV_LAYOUTS[spatial, b.draw(st.sampled_from(["first", "last"]))]
  rank = spatial + 2
  kernel = [b.draw(st.integers(1, 3)) for _ in range(spatial)]
  strides, lhs_dilation, rhs_dilation = ([b.draw(st.integers(1, 2)) for _ in range(spatial)]
                                         for _ in range(3))
  padding = [(b.draw(st.integers(0, 2)), b.draw(st.integers(0, 2))) for _ in range(spatial)]
  groups, multiplier = b.draw(st.sampled_from(["none", "feature", "batch"])), b.draw(
      st.integers(1, 2))
  adapt = adapter(env[j], Type(t.dtype, ("kernel",) * rank))   # always fitted

  def apply(x, y):
    if x.ndim != rank:
      x = lax.reshape(x, (1,) * (rank - 1) + (math.prod(x.shape),))
    by_letter = dict(zip(layout[0], x.shape))
    n, c = by_letter["N"], by_letter["C"]
    features = c if groups == "feature" and c else 1
    batches = n if groups == "batch" and n else 1
    sizes = dict(O=features * batches * multiplier, I=c // features,
                 **dict(zip("HW", kernel)))
    w = adapt(y, [sizes[letter] for letter in layout[1]])
    pads = []
    for d, (lo, hi) in enumerate(padding):   # at least one output position
      size = x.shape[layout[0].index("HW"[d])]
      dilated = (size - 1) * lhs_dilation[d] + 1 if size else 0
      pads.append((lo, max(hi, (kernel[d] - 1) * rhs_dilation[d] + 1 - dilated - lo)))
    if kind(t.dtype) in "fc":
      x, w = small(x), small(w)
    return [lax.conv_general_dilated(x, w, strides, pads, lhs_dilation, rhs_dilation, layout,
                                     feature_group_count=features, batch_group_count=batches)]
  return Op([i, j], [Type(t.dtype, tuple(b.new_dim() for _ in range(rank)))], apply,
            f"conv {layout[0]} ({groups} groups)")


def index_operand(b, env, rank):
  """(position, adapt): a value of `env` as an int32 index of `rank` (0 or 1:
  rank-1 values are flattened to their own size)."""
  j = b.pick(env, lambda t: t.dtype == INT32 and t.rank == rank)
  if j is None:
    j = b.pick(env)
  source = env[j]
  if rank == 0:
    adapt = adapter(source, Type(INT32, ()))
    return j, lambda v: adapt(v, ())
  flat = Type(INT32, source.dims if source.rank == 1 else (("*",) + source.dims,))
  adapt = adapter(source, flat)
  return j, lambda v: adapt(v, (math.prod(v.shape),))


def dynamic_slice(b, env, depth, differentiable):
  i = b.pick(env, lambda t: t.rank >= 1)
  if i is None:
    return None
  t = env[i]
  starts = [index_operand(b, env, 0) for _ in t.dims]
  sizes = [b.fraction() for _ in t.dims]
  negative = b.draw(st.booleans())
  dims = tuple(d if s == 4 else b.new_dim() for d, s in zip(t.dims, sizes))

  def apply(x, *ks):
    starts_ = [adapt(k) for k, (_, adapt) in zip(ks, starts)]
    return [lax.dynamic_slice(x, starts_, [n * s // 4 for n, s in zip(x.shape, sizes)],
                              allow_negative_indices=negative)]
  return Op([i] + [j for j, _ in starts], [Type(t.dtype, dims)], apply, "dynamic_slice")


def dynamic_update_slice(b, env, depth, differentiable):
  i = b.pick(env, lambda t: t.rank >= 1)
  if i is None:
    return None
  j = b.pick(env)
  t = env[i]
  starts = [index_operand(b, env, 0) for _ in t.dims]
  sizes = [b.fraction() for _ in t.dims]
  negative = b.draw(st.booleans())
  adapt = adapter(env[j], Type(t.dtype, ("update",) * t.rank))   # always fitted

  def apply(x, y, *ks):
    update = adapt(y, [n * s // 4 for n, s in zip(x.shape, sizes)])
    starts_ = [adapt_k(k) for k, (_, adapt_k) in zip(ks, starts)]
    return [lax.dynamic_update_slice(x, update, starts_, allow_negative_indices=negative)]
  return Op([i, j] + [k for k, _ in starts], [t], apply, "dynamic_update_slice")


def gather_scatter_params(b, env, t):
  """(index position, its adapt, axis, window fractions, mode, dims of the
  window) of a gather or scatter of windows of a value of type `t` at
  indices along one axis (the window is min(1, size) along it)."""
  j, adapt = index_operand(b, env, 1)
  axis = b.draw(st.integers(0, t.rank - 1))
  window = [b.fraction() for _ in range(t.rank)]
  window_dims = tuple(d if window[k] == 4 and k != axis else b.new_dim()
                      for k, d in enumerate(t.dims))
  return j, adapt, axis, window, b.draw(st.sampled_from(MODES)), window_dims


def window_sizes(shape, axis, window):
  return [min(1, n) if d == axis else n * window[d] // 4 for d, n in enumerate(shape)]


def as_index_column(k):
  return lax.reshape(k, (k.shape[0], 1))


def gather(b, env, depth, differentiable):
  i = b.pick(env, lambda t: t.rank >= 1)
  if i is None:
    return None
  t = env[i]
  j, adapt, axis, window, mode, window_dims = gather_scatter_params(b, env, t)
  index_token = env[j].dims[0] if env[j].rank == 1 else ("*",) + env[j].dims
  dnums = GatherDimensionNumbers(offset_dims=tuple(range(1, t.rank + 1)), collapsed_slice_dims=(),
                                 start_index_map=(axis,))

  def apply(x, k):
    return [lax.gather(x, as_index_column(adapt(k)), dnums, window_sizes(x.shape, axis, window),
                       mode=mode)]
  return Op([i, j], [Type(t.dtype, (index_token,) + window_dims)], apply, f"gather ({mode.name})")


def scatter(b, env, depth, differentiable):
  i = b.pick(env, lambda t: t.rank >= 1)
  if i is None:
    return None
  t = env[i]
  j, adapt, axis, window, mode, _ = gather_scatter_params(b, env, t)
  u = b.pick(env)
  name = b.draw(st.sampled_from([n for n, (_, kinds) in SCATTERS.items() if kind(t.dtype) in kinds
                                 and not (differentiable and n in NOT_DIFFERENTIABLE)]))
  adapt_updates = adapter(env[u], Type(t.dtype, ("updates",) * (t.rank + 1)))   # always fitted
  dnums = ScatterDimensionNumbers(update_window_dims=tuple(range(1, t.rank + 1)),
                                  inserted_window_dims=(), scatter_dims_to_operand_dims=(axis,))

  def apply(x, k, y):
    k = adapt(k)
    updates = adapt_updates(y, [k.shape[0]] + window_sizes(x.shape, axis, window))
    return [SCATTERS[name][0](x, as_index_column(k), updates, dnums, mode=mode)]
  return Op([i, j, u], [t], apply, f"{name} ({mode.name})")


def sort(b, env, depth, differentiable):
  i = b.pick(env, lambda t: t.rank >= 1)
  if i is None:
    return None
  t = env[i]
  axis = b.draw(st.integers(0, t.rank - 1))
  if b.draw(st.booleans()):
    return Op([i], [t], lambda x: [lax.sort(x, dimension=axis)], "sort")
  j = b.pick(env)
  u = env[j]
  adapt = adapter(u, Type(u.dtype, t.dims))
  return Op([i, j], [t, Type(u.dtype, t.dims)],
            lambda x, y: list(lax.sort((x, adapt(y, x.shape)), dimension=axis, num_keys=1)),
            "sort (two operands)")


OPERATIONS = [unary, unary, binary, binary, select, convert, broadcast, reshape, transpose, rev,
              slice_, pad, concatenate, reduce, cumulative, dot_general, conv, dynamic_slice,
              dynamic_update_slice, gather, scatter, sort]


# --- control flow and transforms wrapping sub-blocks -------------------------------------------

def operands(b, env, accept=lambda t: True, most=2):
  """1 to `most` positions of values of `env` that `accept`s (None if none does)."""
  first = b.pick(env, accept)
  if first is None:
    return None
  return [first] + [b.pick(env, accept) for _ in range(b.draw(st.integers(0, most - 1)))]


def sub_block(b, in_types, depth, differentiable, n_outs=None):
  return b.block(in_types, b.draw(st.integers(1, 2)), depth + 1, differentiable,
                 n_outs=b.draw(st.integers(1, 2)) if n_outs is None else n_outs)


def to_types(sources, targets):
  """fn(values, like) fitting `values` (of types `sources`, cycled) to
  `targets`, shaped as the values `like`."""
  adapts = [adapter(sources[k % len(sources)], t) for k, t in enumerate(targets)]

  def fn(values, like):
    return [adapt(values[k % len(values)], v.shape)
            for k, (adapt, v) in enumerate(zip(adapts, like))]
  return fn


def shapes_of(fn, *args):
  return [jax.ShapeDtypeStruct(o.shape, o.dtype)
          for o in jax.eval_shape(fn, *[jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args])]


def switch(b, env, depth, differentiable):
  """lax.cond on a bool scalar, or lax.switch on an int32 one (out of range
  clamped), of 2 or 3 random branches."""
  args = operands(b, env)
  types = [env[a] for a in args]
  first, outs = sub_block(b, types, depth, differentiable)
  branches = [first]
  for _ in range(b.draw(st.integers(1, 2))):
    fn, out_types = sub_block(b, types, depth, differentiable)
    fitted = to_types(out_types, outs)
    branches.append(lambda *a, fn=fn, fitted=fitted: fitted(fn(*a), shapes_of(first, *a)))
  use_cond = len(branches) == 2 and b.draw(st.booleans())
  k, adapt = index_operand(b, env, 0)
  to_pred = adapter(env[k], Type(BOOL, ()))

  def apply(k, *xs):
    if use_cond:
      return list(lax.cond(to_pred(k, ()), *branches, *xs))
    return list(lax.switch(adapt(k), branches, *xs))
  return Op([k] + args, outs, apply, "cond" if use_cond else "switch")


def loop_body(b, env, depth, differentiable):
  """(carry positions, their types, body: carry values -> new carry values)."""
  args = operands(b, env)
  types = [env[a] for a in args]
  fn, outs = sub_block(b, types, depth, differentiable)
  fitted = to_types(outs, types)
  return args, types, lambda *c: fitted(fn(*c), c)


def while_loop(b, env, depth, differentiable):
  """A while loop of a trip count in [0, 3]: min(max(k, -1), 3) for an int32 scalar k."""
  args, types, body = loop_body(b, env, depth, differentiable)
  k, adapt = index_operand(b, env, 0)

  def apply(k, *xs):
    limit = lax.clamp(np.int32(-1), adapt(k), np.int32(3))
    out = lax.while_loop(lambda c: c[0] < limit, lambda c: (c[0] + 1, *body(*c[1:])),
                         (np.int32(0), *xs))
    return list(out[1:])
  return Op([k] + args, types, apply, "while_loop")


def fori_dynamic(b, env, depth, differentiable):
  """fori_loop to a traced bound (a while loop), the index fed to the body."""
  args, types, body = loop_body(b, env, depth, differentiable)
  k, adapt = index_operand(b, env, 0)

  def apply(k, *xs):
    upper = lax.clamp(np.int32(-2), adapt(k), np.int32(2))
    return list(lax.fori_loop(np.int32(-1), upper, lambda i, c: tuple(body(*c)), tuple(xs)))
  return Op([k] + args, types, apply, "fori_loop (traced bound)")


def fori_static(b, env, depth, differentiable):
  """fori_loop of a static trip count in [0, 3] (a scan)."""
  args, types, body = loop_body(b, env, depth, differentiable)
  trips = b.draw(st.integers(0, 3))
  return Op(args, types, lambda *xs: list(lax.fori_loop(0, trips, lambda i, c: tuple(body(*c)),
                                                          tuple(xs))),
            "fori_loop (static bound)")


def scan(b, env, depth, differentiable):
  xs = b.pick(env, lambda t: t.rank >= 1)
  if xs is None:
    return None
  carry = b.draw(st.sampled_from([[], *[[a] for a in range(len(env))]]))
  x_type = env[xs]
  slice_type = Type(x_type.dtype, x_type.dims[1:])
  carry_types = [env[a] for a in carry]
  fn, outs = sub_block(b, carry_types + [slice_type], depth, differentiable)
  fitted = to_types(outs, carry_types)
  reverse = b.draw(st.booleans())

  def step(c, x):
    values = fn(*c, x)
    return tuple(fitted(values, c)), values[-1]

  def apply(xs, *init):
    c, ys = lax.scan(step, tuple(init), xs, reverse=reverse)
    return [*c, ys]
  ys_type = Type(outs[-1].dtype, (x_type.dims[0],) + outs[-1].dims)
  return Op([xs] + carry, carry_types + [ys_type], apply, "scan")


def vmap(b, env, depth, differentiable):
  """vmap of a sub-block over an axis of 1 or 2 operands (fitted to one batch
  size), and maybe one operand unbatched."""
  batched = operands(b, env, lambda t: t.rank >= 1)
  if batched is None:
    return None
  axes = [b.draw(st.integers(0, env[a].rank - 1)) for a in batched]
  batch = env[batched[0]].dims[axes[0]]
  fits = []
  for a, axis in zip(batched, axes):
    t = env[a]
    target = Type(t.dtype, t.dims[:axis] + (batch,) + t.dims[axis + 1:])
    fits.append((adapter(t, target), axis))
  unbatched = [b.pick(env)] if b.draw(st.booleans()) else []
  inner = [Type(env[a].dtype, env[a].dims[:x] + env[a].dims[x + 1:]) for a, x in zip(batched, axes)]
  fn, outs = sub_block(b, inner + [env[a] for a in unbatched], depth, differentiable)
  in_axes = tuple(axes) + (None,) * len(unbatched)

  def apply(*xs):
    size = xs[0].shape[axes[0]]
    fitted = []
    for x, (adapt, axis) in zip(xs, fits):
      shape = list(x.shape)
      shape[axis] = size
      fitted.append(adapt(x, shape))
    return list(jax.vmap(fn, in_axes=in_axes)(*fitted, *xs[len(fits):]))
  return Op(batched + unbatched, [Type(t.dtype, (batch,) + t.dims) for t in outs], apply, "vmap")


def float_operands(b, env):
  return operands(b, env, lambda t: kind(t.dtype) == "f")


def jvp(b, env, depth, differentiable):
  """jvp of a float sub-block, tangents fitted from other values; the
  inexact outputs and their tangents."""
  args = float_operands(b, env)
  if args is None:
    return None
  types = [env[a] for a in args]
  fn, outs = sub_block(b, types, depth, differentiable or "jvp")
  inexact = [k for k, t in enumerate(outs) if kind(t.dtype) in "fc"]
  if not inexact:
    return None
  tangents = [b.pick(env) for _ in args]
  fits = [adapter(env[s], t) for s, t in zip(tangents, types)]

  def apply(*xs):
    primals, sources = xs[:len(args)], xs[len(args):]
    ts = [adapt(s, p.shape) for adapt, s, p in zip(fits, sources, primals)]
    ys, dys = jax.jvp(lambda *p: [fn(*p)[k] for k in inexact], tuple(primals), tuple(ts))
    return [*ys, *dys]
  kept = [outs[k] for k in inexact]
  return Op(args + tangents, kept + kept, apply, "jvp")


def grad(b, env, depth, differentiable):
  """grad of the sum of a float sub-block's first output (its real part, as float32 if
  it is not a float), with respect to every operand."""
  args = float_operands(b, env)
  if args is None:
    return None
  types = [env[a] for a in args]
  fn, outs = sub_block(b, types, depth, "grad", n_outs=1)

  def loss(*xs):
    y = fn(*xs)[0]
    if kind(y.dtype) == "c":
      y = lax.real(y)
    if kind(y.dtype) != "f":
      y = lax.convert_element_type(y, np.float32)
    return lax.reduce_sum(y, tuple(range(y.ndim)))
  return Op(args, types, lambda *xs: list(jax.grad(loss, argnums=tuple(range(len(xs))))(*xs)),
            "grad")


CONTROL = [switch, while_loop, fori_dynamic, fori_static, scan, vmap, jvp, grad]


# --- programs and their instances -------------------------------------------------------------

INDEX_VALUES = dict(k0=Type(INT32, ()), k1=Type(INT32, ()), ix=Type(INT32, (("pool", 0),)))


def draw_program(b, first=None):
  """(program, input types): random arrays, then int32 scalars k0, k1 and an
  int32 index vector (indices of every size, out of bounds ones included);
  the first operation from `first`, if given."""
  arrays = [Type(b.draw(st.sampled_from(DTYPES)),
                 tuple(("pool", b.draw(st.integers(0, 2)))
                       for _ in range(b.draw(st.integers(0, 3)))))
            for _ in range(b.draw(st.integers(1, 3)))]
  types = arrays + list(INDEX_VALUES.values())
  fn, _ = b.block(types, b.draw(st.integers(2, 5)), 0, first=first)
  return fn, types


def draw_instance(data, types):
  """Inputs of `types`: each pool token a size in [0, 4], values of their dtype."""
  sizes = data.draw(st.lists(st.integers(0, 4), min_size=3, max_size=3), label="pool sizes")
  n_arrays = len(types) - len(INDEX_VALUES)
  inputs = []
  for k, t in enumerate(types):
    shape = tuple(sizes[d[1]] for d in t.dims)
    strategy = cst.arrays(t.dtype, shape) if k < n_arrays else index_arrays(np.int32, shape)
    inputs.append(data.draw(strategy))
  return inputs


def bits(x):
  """x's bits (as unsigned integers, complex parts side by side), NaNs as one pattern."""
  x = np.asarray(x)
  if kind(x.dtype) == "c":
    x = np.stack([x.real, x.imag], axis=-1)
  if kind(x.dtype) == "f":
    x = np.where(np.isnan(x), np.asarray(np.nan, x.dtype), x)
    return x.view(f"u{x.dtype.itemsize}")
  return x


def assert_identical(reference, backend, what):
  reference, backend = np.asarray(reference), np.asarray(backend)
  assert (backend.dtype, backend.shape) == (reference.dtype, reference.shape), what
  bad = bits(reference) != bits(backend)
  assert not bad.any(), (f"{what}: {bad.sum()} of {bad.size} differ, e.g. at "
                         f"{np.argwhere(bad)[0].tolist() if bad.ndim else ()}: reference "
                         f"{reference.ravel()[:8]}, numba {backend.ravel()[:8]}")


def run_instances(data, builder, program, types, backend="numba"):
  """Runs `program` on INSTANCES inputs of `types` with jit on the reference
  and on `backend` (with the checked float32 functions), and compares every output."""
  note("\n".join(builder.log))
  for n in range(INSTANCES):
    inputs = draw_instance(data, types)
    reference = jax.jit(program)(*inputs)
    with mock.patch.object(Lowering, "float32_functions", False):
      backend_outputs = jax.jit(program, backend=backend)(*inputs)
    assert len(reference) == len(backend_outputs)
    try:
      for k, (r, b) in enumerate(zip(reference, backend_outputs)):
        assert_identical(r, b, f"instance {n}, output {k}")
    except AssertionError:
      note(str(jax.make_jaxpr(program)(*inputs)))
      raise


@pytest.mark.parametrize("flavour", ["dataflow", "control", "threads"])
@SETTINGS
@given(data=st.data())
def test_random_programs_agree(flavour, data):
  """Programs of operations only, and programs starting with control flow
  or a transform (tests of their own, so that pytest-xdist runs them side
  by side); and programs of operations and control flow whose every loop
  is run by threads (numba_backend/threads.py's threshold at one element)."""
  builder = Builder(data, control=[]) if flavour == "dataflow" else Builder(data)
  program, types = draw_program(builder, first=CONTROL if flavour == "control" else None)
  if flavour != "threads":
    run_instances(data, builder, program, types)
    return
  with mock.patch.object(threads, "AVAILABLE", True), \
       mock.patch.object(threads, "MIN_ELEMENTS", 1), \
       mock.patch.object(threads, "MIN_PLAIN_ELEMENTS", 1):
    run_instances(data, builder, program, types)


@pytest.mark.parametrize("flavour", ["dataflow", "control"])
@SETTINGS
@given(data=st.data())
def test_random_programs_agree_on_numba_cuda(flavour, data):
  """Programs of operations only, and programs starting with control flow
  or a transform (loops with elementwise steps run in the threads of one
  kernel, the others by the host), run in numba's CUDA simulator."""
  builder = Builder(data, control=[]) if flavour == "dataflow" else Builder(data)
  program, types = draw_program(builder, first=CONTROL if flavour == "control" else None)
  run_instances(data, builder, program, types, backend="numba-cuda")


INDEXING = [dynamic_slice, dynamic_update_slice, gather, scatter]


@settings(max_examples=2, derandomize=True, database=None, deadline=None)
@given(data=st.data())
def fuzz_indexing_programs(data):
  """Random programs of indexing operations (dynamic_slice,
  dynamic_update_slice, gather, scatter, under vmap and scan too), for the
  bounds-checked process of test_indexing_bounds.py."""
  builder = Builder(data, operations=INDEXING, control=[vmap, scan])
  program, types = draw_program(builder)
  run_instances(data, builder, program, types)
