"""Ragged matrix products: `ragged_dot` and `ragged_dot_general`, as
`jax.lax`'s, built on `dot_general`.

A ragged dimension of `lhs` is cut into consecutive groups whose sizes are
`group_sizes` (rows past their sum belong to no group). As JAX computes them
without a kernel of its own, each operand's ragged dimension is expanded to
a dense group axis (the elements outside a group zeroed) and one
`dot_general` contracts the result:

- ragged non-contracting dimension (`ragged_dot`'s `m` of `lhs[m, k]`): each
  group of rows is multiplied by its own matrix of `rhs[g, k, n]`, the
  group dimension of `rhs` contracted with the expanded group axis;
- ragged contracting dimension: each group of the contracted dimension gives
  its own product, stacked along a new leading group axis of the result;
- ragged batch dimension: the plain `dot_general`.
"""

import dataclasses
import enum
import functools

import numpy as np

from refimpl import core, dtypes
from refimpl.lax.elementwise import bitwise_and, le, lt, select
from refimpl.lax.linalg import dot_general
from refimpl.lax.reductions import cumsum
from refimpl.lax.shapes import (broadcast, broadcast_in_dim, broadcasted_iota, concatenate,
                                full_like, transpose)

__all__ = ['RaggedDotDimensionNumbers', 'ragged_dot', 'ragged_dot_general']


@dataclasses.dataclass(frozen=True, init=False)
class RaggedDotDimensionNumbers:
  """The layout of a `ragged_dot_general`: `dot_dimension_numbers` as
  `dot_general`'s, the ragged dimension of `lhs` (`lhs_ragged_dimensions`,
  one), and the group dimension of `rhs` (`rhs_group_dimensions`: one for a
  ragged non-contracting dimension, none otherwise)."""

  dot_dimension_numbers: tuple
  lhs_ragged_dimensions: tuple
  rhs_group_dimensions: tuple

  def __init__(self, dot_dimension_numbers, lhs_ragged_dimensions, rhs_group_dimensions):
    (lc, rc), (lb, rb) = dot_dimension_numbers
    object.__setattr__(self, "dot_dimension_numbers",
                       ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb))))
    object.__setattr__(self, "lhs_ragged_dimensions", tuple(lhs_ragged_dimensions))
    object.__setattr__(self, "rhs_group_dimensions", tuple(rhs_group_dimensions))


_BASIC_DIMENSION_NUMBERS = RaggedDotDimensionNumbers(
    dot_dimension_numbers=(((1,), (1,)), ((), ())), lhs_ragged_dimensions=(0,),
    rhs_group_dimensions=(0,))
"""`ragged_dot`'s: lhs[m, k] ragged along m, rhs[g, k, n] with its groups first."""


class _Mode(enum.Enum):
  NONCONTRACTING = enum.auto()
  CONTRACTING = enum.auto()
  BATCH = enum.auto()


def _remaining(dims, *removed):
  removed = set().union(*removed)
  return [d for d in dims if d not in removed]


def _mode_and_dim(lhs_rank, dimension_numbers):
  """Which kind of dimension of `lhs` is ragged, and which one it is."""
  if len(dimension_numbers.lhs_ragged_dimensions) != 1:
    raise TypeError(f"ragged_dot_general takes one lhs ragged dimension, got "
                    f"{list(dimension_numbers.lhs_ragged_dimensions)}")
  ragged, = dimension_numbers.lhs_ragged_dimensions
  (contracting, _), (batch, _) = dimension_numbers.dot_dimension_numbers
  noncontracting = _remaining(range(lhs_rank), contracting, batch)
  if ragged in noncontracting:
    return _Mode.NONCONTRACTING, ragged
  if ragged in contracting:
    return _Mode.CONTRACTING, ragged
  if ragged in batch:
    return _Mode.BATCH, ragged
  raise TypeError(f"lhs_ragged_dim {ragged} not found in lhs_noncontracting "
                  f"{noncontracting}, lhs_contracting {list(contracting)}, or lhs_batch "
                  f"{list(batch)}.")


def _prefix_dims(mode, rank, ragged, batch, contract):
  """The dimensions that index `group_sizes` before its group axis: the batch
  dimensions, and those of the ragged dimension's kind before it."""
  batch, contract = list(batch), list(contract)
  noncontract = _remaining(range(rank), contract, batch)
  if mode is _Mode.NONCONTRACTING:
    return batch + noncontract[:noncontract.index(ragged)]
  if mode is _Mode.CONTRACTING:
    return batch + contract[:contract.index(ragged)]
  return batch[:batch.index(ragged)]


def _ragged_to_dense(x, group_sizes, dim):
  """x with a new leading group axis: slice i keeps the elements of group i
  along `dim` (the others zero)."""
  shape = group_sizes.shape + x.shape
  x = broadcast_in_dim(x, shape, tuple(range(1, len(shape))))
  iota = broadcasted_iota(group_sizes.dtype, shape, dim + 1)
  ends = cumsum(group_sizes)
  starts = concatenate([full_like(group_sizes, 0)[:1], ends[:-1]], 0)
  ends, starts = (broadcast_in_dim(v, shape, (0,)) for v in (ends, starts))
  return select(bitwise_and(le(starts, iota), lt(iota, ends)), x, full_like(x, 0))


def _expand(x, dim, group_sizes, *axes):
  """`_ragged_to_dense` of x whose group sizes vary along its `axes` (the
  leading axes of `group_sizes`): the group axis first, then x's axes."""
  from refimpl.vectorize import vmap

  def batched(dim, *axes):
    if not axes:
      return functools.partial(_ragged_to_dense, dim=dim)
    axis, *rest = axes
    lower = lambda d: d - 1 if d >= axis else d   # noqa: E731
    return vmap(batched(lower(dim), *map(lower, rest)), in_axes=(axis, 0))
  expanded = batched(dim, *axes)(x, group_sizes)
  order = [a + 1 for a in axes] + [0] + [d + 1 for d in _remaining(range(x.ndim), axes)]
  return transpose(expanded, tuple(np.argsort(order)))


def ragged_dot_general(lhs, rhs, group_sizes, ragged_dot_dimension_numbers, precision=None,
                       preferred_element_type=None, group_offset=None, out_sharding=None):
  """The `dot_general` of `lhs` and `rhs` whose ragged `lhs` dimension is cut
  into groups of `group_sizes` (integers; one axis of groups, or the prefix
  dimensions of `lhs` followed by it): see the module docstring for the
  three kinds of ragged dimension. Dtypes, `precision` and
  `preferred_element_type` are `dot_general`'s. `group_offset` is not
  supported (NotImplementedError, as in JAX)."""
  if group_offset is not None:
    raise NotImplementedError("Unimplemented group_offset support.")
  lhs_aval, rhs_aval, gs_aval = map(core.get_aval, (lhs, rhs, group_sizes))
  if not dtypes.is_integer(gs_aval.dtype):
    raise TypeError(f"ragged_dot_general requires that group_sizes.dtype is an integer "
                    f"type, got {gs_aval.dtype}.")
  dimension_numbers = ragged_dot_dimension_numbers
  mode, ragged = _mode_and_dim(lhs_aval.ndim, dimension_numbers)
  (l_contract, r_contract), (l_batch, r_batch) = dimension_numbers.dot_dimension_numbers
  l_prefix = _prefix_dims(mode, lhs_aval.ndim, ragged, l_batch, l_contract)
  dot = functools.partial(dot_general, precision=precision,
                          preferred_element_type=preferred_element_type)
  if gs_aval.ndim == 1:
    group_sizes = broadcast(group_sizes, [lhs_aval.shape[i] for i in l_prefix])
  incr = lambda dims: [d + 1 for d in dims]   # noqa: E731
  if mode is _Mode.NONCONTRACTING:
    if len(dimension_numbers.rhs_group_dimensions) != 1:
      raise TypeError("ragged_dot_general with a ragged non-contracting dimension requires "
                      "one rhs group dimension, got "
                      f"{list(dimension_numbers.rhs_group_dimensions)}")
    group_dim, = dimension_numbers.rhs_group_dimensions
    if rhs_aval.shape[group_dim] != core.get_aval(group_sizes).shape[-1]:
      raise TypeError(f"rhs group dimension size {rhs_aval.shape[group_dim]} differs from the "
                      f"number of groups {core.get_aval(group_sizes).shape[-1]}.")
    return dot(_expand(lhs, ragged, group_sizes, *l_prefix), rhs,
               ((tuple(incr(l_contract) + [0]), tuple(r_contract) + (group_dim,)),
                (tuple(incr(l_batch)), tuple(r_batch))))
  if mode is _Mode.CONTRACTING:
    rhs_ragged = r_contract[list(l_contract).index(ragged)]
    r_prefix = _prefix_dims(mode, rhs_aval.ndim, rhs_ragged, r_batch, r_contract)
    return dot(_expand(lhs, ragged, group_sizes, *l_prefix),
               _expand(rhs, rhs_ragged, group_sizes, *r_prefix),
               ((tuple(incr(l_contract)), tuple(incr(r_contract))),
                ((0, *incr(l_batch)), (0, *incr(r_batch)))))
  return dot(lhs, rhs, dimension_numbers.dot_dimension_numbers)


def ragged_dot(lhs, rhs, group_sizes, precision=None, preferred_element_type=None,
               group_offset=None, out_sharding=None):
  """The product of `lhs[m, k]`, its rows cut into consecutive groups of
  `group_sizes[g]`, with `rhs[g, k, n]`: rows of group i are multiplied by
  `rhs[i]` (rows past `sum(group_sizes)` give zeros). Returns `[m, n]`."""
  return ragged_dot_general(lhs, rhs, group_sizes, _BASIC_DIMENSION_NUMBERS, precision,
                            preferred_element_type, group_offset, out_sharding)
