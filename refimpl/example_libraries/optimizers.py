"""`refimpl.example_libraries.optimizers`: first-order optimizers over pytrees,
as `jax.example_libraries.optimizers`.

An optimizer is an `Optimizer` triple `(init_fn, update_fn, params_fn)`:

- `init_fn(params)` -> `opt_state`, the initial state for a pytree of
  parameters;
- `update_fn(step, grads, opt_state)` -> the next `opt_state`, where `step`
  is the integer step index (it feeds the step-size schedule and Adam's bias
  correction) and `grads` has the structure of the parameters;
- `params_fn(opt_state)` -> the parameters, so that
  `params_fn(init_fn(params))` is `params`.

Each optimizer is written for one array (the `@optimizer` decorator lifts it
to pytrees): the state is an `OptimizerState` pytree holding, for each
parameter leaf, the flattened leaves of that leaf's own state, so it can be
carried through `jit`, `scan` and friends. `unpack_optimizer_state` and
`pack_optimizer_state` convert it to and from a plain pytree (for
serialization). A step size is a number or a schedule `step -> size`
(`constant`, `exponential_decay`, `inverse_time_decay`, `polynomial_decay`,
`piecewise_constant`). The update rules are JAX's, with its defaults.
"""

from __future__ import annotations

import builtins
import functools
from collections import namedtuple
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import refimpl.numpy as jnp
from refimpl import tree_util


def _equal_length_lists(seqs):
  """The sequences as lists, asserting they have one length."""
  lists = [list(seq) for seq in seqs]
  lengths = [len(seq) for seq in lists]
  assert len(set(lengths)) <= 1, f"length mismatch: {lengths}"
  return lists


def safe_map(f, *args):
  """`list(map(f, *args))`, where the argument sequences must have one length
  (AssertionError otherwise, as JAX's `safe_map`)."""
  args = _equal_length_lists(args)
  return list(builtins.map(f, *args))


def safe_zip(*args):
  """`list(zip(*args))`, where the sequences must have one length
  (AssertionError otherwise, as JAX's `safe_zip`)."""
  return list(builtins.zip(*_equal_length_lists(args)))


def unzip2(xys):
  """Splits an iterable of pairs into a pair of tuples."""
  xs, ys = [], []
  for x, y in xys:
    xs.append(x)
    ys.append(y)
  return tuple(xs), tuple(ys)


map = safe_map  # noqa: A001 (JAX's module binds the checked versions to these names)
zip = safe_zip  # noqa: A001


OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
"""The state of an optimizer lifted to pytrees: `packed_state` lists, for each
parameter leaf, the leaves of its state (the pytree's only children);
`tree_def` is the parameters' structure and `subtree_defs` each leaf's state
structure (static)."""
tree_util.register_pytree_node(
    OptimizerState,
    lambda state: ((state.packed_state,), (state.tree_def, state.subtree_defs)),
    lambda aux, children: OptimizerState(children[0], aux[0], aux[1]))

Array = Any
Params = Any  # a pytree of arrays
State = Any   # the state of one parameter array
Updates = Params  # gradients have the structure of the parameters

InitFn = Callable[[Params], OptimizerState]
Step = int
UpdateFn = Callable[[Step, Updates, OptimizerState], OptimizerState]
ParamsFn = Callable[[OptimizerState], Params]
Schedule = Callable[[Step], float]


class Optimizer(NamedTuple):
  """An `(init_fn, update_fn, params_fn)` triple (see the module docstring)."""
  init_fn: InitFn
  update_fn: UpdateFn
  params_fn: ParamsFn


def optimizer(opt_maker: Callable[..., tuple[Callable[[Params], State],
                                             Callable[[Step, Updates, Params], Params],
                                             Callable[[State], Params]]]
              ) -> Callable[..., Optimizer]:
  """Decorator lifting an optimizer written for single arrays to pytrees.

  `opt_maker(*args, **kwargs)` returns `(init, update, get_params)` acting on
  one array and its state (any pytree); the decorated maker returns an
  `Optimizer` whose functions map them over the leaves of a parameter pytree,
  the state being an `OptimizerState`. `update_fn` raises TypeError when the
  gradient tree's structure is not the parameters', or when `update` returns
  a state of another structure than it was given.
  """

  @functools.wraps(opt_maker)
  def tree_opt_maker(*args, **kwargs):
    init, update, get_params = opt_maker(*args, **kwargs)

    @functools.wraps(init)
    def tree_init(x0_tree):
      x0_flat, tree = tree_util.tree_flatten(x0_tree)
      states_flat, subtrees = unzip2(map(tree_util.tree_flatten, [init(x0) for x0 in x0_flat]))
      return OptimizerState(states_flat, tree, subtrees)

    @functools.wraps(update)
    def tree_update(i, grad_tree, opt_state):
      states_flat, tree, subtrees = opt_state
      grad_flat, grad_tree_def = tree_util.tree_flatten(grad_tree)
      if grad_tree_def != tree:
        raise TypeError("optimizer update function was passed a gradient tree that did not "
                        "match the parameter tree structure with which it was initialized: "
                        f"parameter tree {tree} and grad tree {grad_tree_def}.")
      states = map(tree_util.tree_unflatten, subtrees, states_flat)
      new_states = map(partial(update, i), grad_flat, states)
      new_states_flat, new_subtrees = unzip2(map(tree_util.tree_flatten, new_states))
      for subtree, new_subtree in zip(subtrees, new_subtrees):
        if new_subtree != subtree:
          raise TypeError("optimizer update function produced an output structure that did "
                          f"not match its input structure: input {subtree} and output "
                          f"{new_subtree}.")
      return OptimizerState(new_states_flat, tree, subtrees)

    @functools.wraps(get_params)
    def tree_get_params(opt_state):
      states_flat, tree, subtrees = opt_state
      states = map(tree_util.tree_unflatten, subtrees, states_flat)
      return tree_util.tree_unflatten(tree, map(get_params, states))

    return Optimizer(tree_init, tree_update, tree_get_params)

  return tree_opt_maker


def _first(state):
  """The parameter of a `(x, *statistics)` state."""
  return state[0]


def _with_zeros(count):
  """The `init` of a `(x, *statistics)` state: `count` statistics, zeros like x."""
  def init(x0):
    return (x0, *[jnp.zeros_like(x0) for _ in range(count)])
  return init


@optimizer
def sgd(step_size):
  """Stochastic gradient descent: `x <- x - step_size(i) * g`."""
  step_size = make_schedule(step_size)

  def init(x0):
    return x0

  def update(i, g, x):
    return x - step_size(i) * g

  def get_params(x):
    return x

  return Optimizer(init, update, get_params)


@optimizer
def momentum(step_size: Schedule, mass: float):
  """SGD with momentum: `v <- mass * v + g`, `x <- x - step_size(i) * v`
  (v starts at zero)."""
  step_size = make_schedule(step_size)

  init = _with_zeros(1)

  def update(i, g, state):
    x, velocity = state
    velocity = mass * velocity + g
    return x - step_size(i) * velocity, velocity

  return init, update, _first


@optimizer
def nesterov(step_size: Schedule, mass: float):
  """SGD with Nesterov momentum: `v <- mass * v + g`,
  `x <- x - step_size(i) * (mass * v + g)`."""
  step_size = make_schedule(step_size)

  init = _with_zeros(1)

  def update(i, g, state):
    x, velocity = state
    velocity = mass * velocity + g
    return x - step_size(i) * (mass * velocity + g), velocity

  return init, update, _first


@optimizer
def adagrad(step_size, momentum=0.9):
  """Adagrad (Duchi et al. 2011) with momentum: `G <- G + g**2`,
  `m <- (1 - momentum) * g / sqrt(G) + momentum * m` (0 where G is 0),
  `x <- x - step_size(i) * m`."""
  step_size = make_schedule(step_size)

  init = _with_zeros(2)

  def update(i, g, state):
    x, g_sq, m = state
    g_sq = g_sq + jnp.square(g)
    g_sq_inv_sqrt = jnp.where(g_sq > 0, 1. / jnp.sqrt(g_sq), 0.0)
    m = (1. - momentum) * (g * g_sq_inv_sqrt) + momentum * m
    return x - step_size(i) * m, g_sq, m

  return init, update, _first


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
  """RMSProp: `a <- gamma * a + (1 - gamma) * g**2`,
  `x <- x - step_size(i) * g / sqrt(a + eps)`."""
  step_size = make_schedule(step_size)

  init = _with_zeros(1)

  def update(i, g, state):
    x, avg_sq_grad = state
    avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1. - gamma)
    return x - step_size(i) * g / jnp.sqrt(avg_sq_grad + eps), avg_sq_grad

  return init, update, _first


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
  """RMSProp with momentum: `a` as in `rmsprop`,
  `m <- momentum * m + step_size(i) * g / sqrt(a + eps)`, `x <- x - m`."""
  step_size = make_schedule(step_size)

  init = _with_zeros(2)

  def update(i, g, state):
    x, avg_sq_grad, mom = state
    avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1. - gamma)
    mom = momentum * mom + step_size(i) * g / jnp.sqrt(avg_sq_grad + eps)
    return x - mom, avg_sq_grad, mom

  return init, update, _first


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
  """Adam (Kingma & Ba): moments `m <- (1 - b1) * g + b1 * m`,
  `v <- (1 - b2) * g**2 + b2 * v`, bias-corrected by `1 - b**(i + 1)` (the
  powers in the state's dtype), `x <- x - step_size(i) * mhat / (sqrt(vhat) + eps)`."""
  step_size = make_schedule(step_size)

  init = _with_zeros(2)

  def update(i, g, state):
    x, m, v = state
    m = (1 - b1) * g + b1 * m
    v = (1 - b2) * jnp.square(g) + b2 * v
    mhat = m / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))
    vhat = v / (1 - jnp.asarray(b2, m.dtype) ** (i + 1))
    return x - step_size(i) * mhat / (jnp.sqrt(vhat) + eps), m, v

  return init, update, _first


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
  """AdaMax (Adam with the infinity norm): `m` as in `adam`,
  `u <- max(b2 * u, |g|)`, `x <- x - step_size(i) / (1 - b1**(i + 1)) * m / (u + eps)`."""
  step_size = make_schedule(step_size)

  init = _with_zeros(2)

  def update(i, g, state):
    x, m, u = state
    m = (1 - b1) * g + b1 * m
    u = jnp.maximum(b2 * u, jnp.abs(g))
    x = x - (step_size(i) / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))) * m / (u + eps)
    return x, m, u

  return init, update, _first


@optimizer
def sm3(step_size, momentum=0.9):
  """SM3 (Anil et al. 2019) with momentum: one accumulator vector per axis of
  the parameter (scalars are treated as shape (1,)); the accumulated `g**2`
  is the minimum of the accumulators broadcast along their axes plus `g**2`,
  each accumulator becomes its maximum over the other axes, and
  `m <- (1 - momentum) * g / sqrt(accum) + momentum * m` (0 where accum is 0),
  `x <- x - step_size(i) * m`."""
  step_size = make_schedule(step_size)

  def others(ndim, axis):
    return tuple(d for d in range(ndim) if d != axis)

  def init(x0):
    x_shape = x0.shape
    x0 = jnp.atleast_1d(x0)
    vs = [jnp.zeros(size, dtype=x0.dtype) for size in x0.shape]
    return x0, jnp.zeros_like(x0), vs, x_shape

  def update(i, g, state):
    x, m, vs, x_shape = state
    vs = [jnp.expand_dims(v, others(g.ndim, axis)) for axis, v in enumerate(vs)]
    accum = functools.reduce(jnp.minimum, vs) + jnp.square(g)
    accum_inv_sqrt = jnp.where(accum > 0, 1. / jnp.sqrt(accum), 0)
    m = (1. - momentum) * (g * accum_inv_sqrt) + momentum * m
    x = x - step_size(i) * m
    vs = [accum.max(others(x.ndim, axis)) for axis in range(x.ndim)]
    return x, m, vs, x_shape

  def get_params(state):
    x, _, _, x_shape = state
    return x.reshape(x_shape)

  return init, update, get_params


# --- step-size schedules ------------------------------------------------------------------

def constant(step_size) -> Schedule:
  """The schedule `i -> step_size`."""
  def schedule(i):
    return step_size
  return schedule


def exponential_decay(step_size, decay_steps, decay_rate):
  """The schedule `i -> step_size * decay_rate ** (i / decay_steps)`."""
  def schedule(i):
    return step_size * decay_rate ** (i / decay_steps)
  return schedule


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False):
  """The schedule `i -> step_size / (1 + decay_rate * i / decay_steps)`, with
  `floor(i / decay_steps)` in place of `i / decay_steps` if `staircase`."""
  if staircase:
    def schedule(i):
      return step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
  else:
    def schedule(i):
      return step_size / (1 + decay_rate * i / decay_steps)
  return schedule


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0):
  """The schedule from `step_size` at step 0 to `final_step_size` at step
  `decay_steps` (and after) along `(1 - i / decay_steps) ** power`."""
  def schedule(step_num):
    step_num = jnp.minimum(step_num, decay_steps)
    step_mult = (1 - step_num / decay_steps) ** power
    return step_mult * (step_size - final_step_size) + final_step_size
  return schedule


def piecewise_constant(boundaries: Any, values: Any):
  """The schedule `i -> values[k]`, k the number of boundaries below `i`
  (`values` has one more element than `boundaries`; ValueError otherwise)."""
  boundaries = jnp.array(boundaries)
  values = jnp.array(values)
  if not boundaries.ndim == values.ndim == 1:
    raise ValueError("boundaries and values must be sequences")
  if not boundaries.shape[0] == values.shape[0] - 1:
    raise ValueError("boundaries length must be one shorter than values length")

  def schedule(i):
    return values[jnp.sum(i > boundaries)]
  return schedule


def make_schedule(scalar_or_schedule: float | Schedule) -> Schedule:
  """A callable as it is, a scalar as `constant(scalar)`; TypeError (with the
  argument's type as message) for anything else."""
  if callable(scalar_or_schedule):
    return scalar_or_schedule
  if jnp.ndim(scalar_or_schedule) == 0:
    return constant(scalar_or_schedule)
  raise TypeError(type(scalar_or_schedule))


# --- utilities --------------------------------------------------------------------------

def l2_norm(tree):
  """The l2 norm of all the leaves of a pytree of arrays, as one vector."""
  leaves = tree_util.tree_leaves(tree)
  return jnp.sqrt(sum(jnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree, max_norm):
  """`grad_tree` scaled by `max_norm / l2_norm(grad_tree)` where that norm is
  at least `max_norm`, unchanged otherwise."""
  norm = l2_norm(grad_tree)
  return tree_util.tree_map(lambda g: jnp.where(norm < max_norm, g, g * (max_norm / norm)),
                            grad_tree)


# --- serialization ----------------------------------------------------------------------

class JoinPoint:
  """A leaf of an unpacked optimizer state: holds one parameter's state
  pytree (`subtree`), so the outer and inner pytrees stay apart."""

  def __init__(self, subtree):
    self.subtree = subtree

  def __iter__(self):
    yield self.subtree


def unpack_optimizer_state(opt_state):
  """An `OptimizerState` as a pytree of the parameters' structure whose leaves
  are `JoinPoint`s holding each parameter's state pytree (for serialization)."""
  states_flat, tree_def, subtree_defs = opt_state
  subtrees = map(tree_util.tree_unflatten, subtree_defs, states_flat)
  return tree_util.tree_unflatten(tree_def, [JoinPoint(subtree) for subtree in subtrees])


def pack_optimizer_state(marked_pytree):
  """The inverse of `unpack_optimizer_state`: the `OptimizerState` of a pytree
  whose leaves are `JoinPoint`s (AssertionError for other leaves)."""
  sentinels, tree_def = tree_util.tree_flatten(marked_pytree)
  assert all(isinstance(s, JoinPoint) for s in sentinels)
  states_flat, subtree_defs = unzip2(map(tree_util.tree_flatten,
                                         [s.subtree for s in sentinels]))
  return OptimizerState(states_flat, tree_def, subtree_defs)
