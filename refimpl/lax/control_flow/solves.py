"""`custom_linear_solve` and `custom_root`: solvers whose derivatives come
from implicit differentiation at the solution instead of differentiating
through the solver's iterations, as in JAX.

`custom_linear_solve(matvec, b, solve)` binds `custom_linear_solve`
(`linear_solve_p`), a primitive holding four closed jaxprs: the linear map
`matvec`, its transpose `vecmat`, and the solvers `solve` and
`transpose_solve` of the two systems. Evaluated, it is just `solve`. Its
JVP solves for the tangent (x' = A^-1 (b' - A' x)), its transpose is a
solve of the transposed system, and its batching rule batches all four
jaxprs consistently.

`custom_root(f, x0, solve, tangent_solve)` is a `custom_jvp` function: its
value is `solve(f, x0)`, and its JVP linearizes `f` at the root and solves
the tangent system with `tangent_solve` (the implicit function theorem).
"""

import collections
import functools

from refimpl import core, tree_util
from refimpl.autodiff import linear_transpose, linearize
from refimpl.core import Primitive
from refimpl.custom_derivatives import custom_jvp
from refimpl.interpreters import ad, batching
from refimpl.interpreters.eval import eval_closed_jaxpr, run_jaxpr
from refimpl.lax.control_flow.common import initial_style_jaxpr
from refimpl.lax.elementwise import neg

__all__ = ['custom_linear_solve', 'custom_root', 'linear_solve_p']


def _check_tree(func_name, expected_name, actual_tree, expected_tree, has_aux=False):
  """`TypeError` unless the output tree of `func_name` is `expected_tree`
  (with `has_aux`, the first of a pair: `ValueError` if it is no pair)."""
  if has_aux:
    children = actual_tree.children()
    if len(children) != 2:
      raise ValueError(f"{func_name}() produced a pytree with structure {actual_tree}, "
                       "but a pytree tuple with auxiliary output was expected because "
                       "has_aux was set to True.")
    actual_tree = children[0]
  if actual_tree != expected_tree:
    raise TypeError(f"{func_name}() output pytree structure must match {expected_name}, "
                    f"got {actual_tree} and {expected_tree}.")


def _zero_tangent(x):
  """The symbolic zero tangent of the value `x`."""
  return ad.Zero(ad.tangent_aval(core.get_aval(x)))


def _split(args, lengths):
  """Splits the flat `args` into consecutive groups of the given `lengths`
  and the rest: (groups, rest)."""
  groups, start = [], 0
  for n in lengths:
    groups.append(list(args[start:start + n]))
    start += n
  return groups, list(args[start:])


# --- custom_linear_solve ------------------------------------------------------------

class _LinearSolveTuple(collections.namedtuple(
    "_LinearSolveTuple", "matvec, vecmat, solve, transpose_solve")):
  """One item per function of a linear solve (JAX's name, as printed)."""

  def transpose(self):
    """The items of the transposed system: vecmat and matvec swap, and so
    do the two solves."""
    return type(self)(self.vecmat, self.matvec, self.transpose_solve, self.solve)


def _split_linear_solve_args(args, const_lengths):
  groups, b = _split(args, const_lengths)
  return _LinearSolveTuple(*groups), b


def _check_shapes(func_name, expected_name, actual, expected):
  """`ValueError` unless the leaves of `actual` have the shapes of those of
  `expected` (JAX's check); then `TypeError` unless they have their dtypes
  (JAX does not check, and fails later, when compiling)."""
  actual = [core.get_aval(x) for x in tree_util.tree_leaves(actual)]
  expected = [core.get_aval(x) for x in tree_util.tree_leaves(expected)]
  actual_shapes, expected_shapes = [a.shape for a in actual], [a.shape for a in expected]
  if actual_shapes != expected_shapes:
    raise ValueError(f"{func_name}() output shapes must match {expected_name}, "
                     f"got {actual_shapes} and {expected_shapes}")
  actual_dtypes = [a.dtype.name for a in actual]
  expected_dtypes = [a.dtype.name for a in expected]
  if actual_dtypes != expected_dtypes:
    raise TypeError(f"{func_name}() output dtypes must match {expected_name}, "
                    f"got {actual_dtypes} and {expected_dtypes}")


def _shape_checked(fun, name, b_flat, has_aux):
  """`fun`, checking that its output (the first of a pair with `has_aux`)
  has the shapes of `b`."""
  def checked(x):
    out = fun(x)
    if not has_aux:
      _check_shapes(name, "b", out, b_flat)
    elif isinstance(out, (tuple, list)) and len(out) == 2:
      _check_shapes(name, "b", out[0], b_flat)
    return out  # (no pair with has_aux: the tree check explains)
  return checked


def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False,
                        has_aux=False):
  """Solves `matvec(x) == b` with `solve(matvec, b)`, with derivatives
  defined at the solution rather than through `solve`.

  `b` is any pytree of arrays; `matvec` a linear function from pytrees like
  `b` to pytrees like `b`. `solve(matvec, b)` must return `x` with
  `matvec(x) == b` (not checked); it need not be differentiable.
  `transpose_solve(vecmat, b)` solves the transposed system (`vecmat`, the
  transpose of `matvec`, is found by transposition); reverse-mode
  differentiation needs it, unless `symmetric=True` says `matvec ==
  vecmat`, when `solve` serves for both. With `has_aux`, both solvers
  return `(x, aux)`, and the result is `(x, aux)`; `aux` gets zero
  derivatives.
  """
  if transpose_solve is None and symmetric:
    transpose_solve = solve
  b_flat, in_args_tree = tree_util.tree_flatten((b,))
  b_avals = tuple(core.get_aval(x) for x in b_flat)
  tree, = tree_util.treedef_children(in_args_tree)

  matvec_jaxpr, matvec_consts, out_tree = initial_style_jaxpr(
      _shape_checked(matvec, "matvec", b_flat, False), in_args_tree, b_avals)
  _check_tree("matvec", "b", out_tree, tree)
  solve_jaxpr, solve_consts, solve_tree = initial_style_jaxpr(
      _shape_checked(functools.partial(solve, matvec), "solve", b_flat, has_aux),
      in_args_tree, b_avals)
  _check_tree("solve", "b", solve_tree, tree, has_aux)

  if transpose_solve is None:
    vecmat_jaxpr = tr_solve_jaxpr = None
    vecmat_consts = tr_solve_consts = []
  else:
    if symmetric:
      vecmat = matvec
      vecmat_jaxpr, vecmat_consts = matvec_jaxpr, matvec_consts
    else:
      transposed = linear_transpose(matvec, b)
      vecmat = lambda x: transposed(x)[0]
      vecmat_jaxpr, vecmat_consts, _ = initial_style_jaxpr(vecmat, in_args_tree, b_avals)
    tr_solve_jaxpr, tr_solve_consts, out_tree = initial_style_jaxpr(
        _shape_checked(functools.partial(transpose_solve, vecmat), "transpose_solve",
                       b_flat, has_aux), in_args_tree, b_avals)
    _check_tree("transpose_solve", "b", out_tree, tree, has_aux)

  all_consts = [matvec_consts, vecmat_consts, solve_consts, tr_solve_consts]
  outs = linear_solve_p.bind(
      *[c for consts in all_consts for c in consts], *b_flat,
      const_lengths=_LinearSolveTuple(*map(len, all_consts)),
      jaxprs=_LinearSolveTuple(matvec_jaxpr, vecmat_jaxpr, solve_jaxpr, tr_solve_jaxpr))
  return tree_util.tree_unflatten(solve_tree, outs)


linear_solve_p = Primitive("custom_linear_solve")
linear_solve_p.multiple_results = True


@linear_solve_p.def_impl
def _linear_solve_impl(*args, const_lengths, jaxprs):
  """`custom_linear_solve[const_lengths, jaxprs] *consts *b`: solves
  `matvec(x) == b` by running the `solve` jaxpr.

  `jaxprs` holds four closed jaxprs (a `_LinearSolveTuple`): `matvec` (the
  linear map A), `vecmat` (its transpose A^T), `solve` (b -> x with
  A x = b, then any auxiliary outputs) and `transpose_solve` (the same for
  A^T); `vecmat` and `transpose_solve` are None when no transpose solver
  was given. Each takes its own constants first: the operands are the
  constants of the four, in that order (`const_lengths` of each), then the
  leaves of `b`. Only `solve` runs here: the result is
  `solve(*solve_consts, *b)`, whether or not it really solves the system
  (a singular system gives whatever `solve` gives).

  Shape rule: the outputs have the types of the `b` operands, followed by
  `solve`'s auxiliary outputs. Derivatives never differentiate `solve`:
  the JVP is x' = A^-1 (b' - A' x) (a second solve, of the tangents), the
  transpose solves A^T with `transpose_solve`, and auxiliary outputs have
  zero derivatives.
  """
  params, b = _split_linear_solve_args(args, const_lengths)
  return run_jaxpr(jaxprs.solve, *params.solve, *b)


@linear_solve_p.def_abstract_eval
def _linear_solve_abstract_eval(*avals, const_lengths, jaxprs):
  num_aux = len(jaxprs.solve.out_avals) - len(jaxprs.matvec.out_avals)
  aux = jaxprs.solve.out_avals[len(jaxprs.solve.out_avals) - num_aux:]
  return [*avals[sum(const_lengths):], *aux]


def _linear_solve_jvp(primals, tangents, *, const_lengths, jaxprs):
  # A x = b, so A' x + A x' = b': x' = A^-1 (b' - A' x), a solve with the
  # same jaxprs. Tangents of the solvers' constants do not matter.
  params_kw = dict(const_lengths=const_lengths, jaxprs=jaxprs)
  x_and_aux = linear_solve_p.bind(*primals, **params_kw)
  params, _ = _split_linear_solve_args(primals, const_lengths)
  params_dot, b_dot = _split_linear_solve_args(tangents, const_lengths)
  x = x_and_aux[:len(b_dot)]
  rhs = b_dot
  if any(not isinstance(t, ad.Zero) for t in params_dot.matvec):
    # A' x: the tangent of matvec(*consts, *x) with x held fixed.
    _, matvec_dot = ad.jvp_flat(lambda *a: eval_closed_jaxpr(jaxprs.matvec, *a),
                                [*params.matvec, *x],
                                [*params_dot.matvec, *map(_zero_tangent, x)])
    rhs = [t if isinstance(m, ad.Zero) else ad.add_tangents(t, neg(m))
           for t, m in zip(rhs, matvec_dot)]
  aux_dot = [_zero_tangent(a) for a in x_and_aux[len(x):]]
  if all(isinstance(t, ad.Zero) for t in rhs):
    return x_and_aux, [*map(_zero_tangent, x), *aux_dot]
  rhs = [ad.instantiate_zeros(t) for t in rhs]
  x_dot = linear_solve_p.bind(*[p for group in params for p in group], *rhs, **params_kw)
  return x_and_aux, [*x_dot[:len(x)], *aux_dot]


def _linear_solve_transpose(cts, *args, const_lengths, jaxprs):
  # x = A^-1 b is linear in b; its transpose maps ct to A^-T ct, a solve of
  # the transposed system.
  if jaxprs.transpose_solve is None:
    raise TypeError("transpose_solve required for backwards mode automatic "
                    "differentiation of custom_linear_solve")
  params, b = _split_linear_solve_args(args, const_lengths)
  assert all(map(ad.is_undefined_primal, b)) and not any(
      ad.is_undefined_primal(p) for group in params for p in group)
  x_cts = [ad.instantiate_zeros(ct) for ct in cts[:len(b)]]
  transposed = params.transpose()
  ct_b = linear_solve_p.bind(*[p for group in transposed for p in group], *x_cts,
                             const_lengths=const_lengths.transpose(),
                             jaxprs=jaxprs.transpose())
  return [None] * sum(const_lengths) + ct_b[:len(b)]


def _linear_solve_batch(axis_data, args, dims, *, const_lengths, jaxprs):
  # Which of x and b are batched must agree between all four jaxprs (solve
  # and vecmat map b to x, matvec and transpose_solve x to b): iterate to a
  # fixpoint, starting from the batched operands. The auxiliary outputs of
  # the solvers are batched whenever there is a vecmat.
  params, b = _split_linear_solve_args(args, const_lengths)
  params_dims, b_dims = _split_linear_solve_args(dims, const_lengths)
  params_bat = _LinearSolveTuple(*([d is not batching.not_mapped for d in group]
                                   for group in params_dims))
  orig_b_bat = [d is not batching.not_mapped for d in b_dims]
  matvec, vecmat, solve, solve_t = jaxprs
  num_x = len(matvec.out_avals)
  num_aux = len(solve.out_avals) - num_x

  b_bat, x_bat = orig_b_bat, [False] * len(solve.out_avals)
  for _ in range(1 + len(orig_b_bat) + len(solve.out_avals)):
    solve_batched, solve_x_bat = batching.batch_jaxpr(
        solve, axis_data, params_bat.solve + b_bat, x_bat)
    if vecmat is None:
      vecmat_batched, x_bat_out = None, solve_x_bat
    else:
      vecmat_batched, vecmat_x_bat = batching.batch_jaxpr(
          vecmat, axis_data, params_bat.vecmat + b_bat, b_bat)
      x_bat_out = [v or s for v, s in zip(vecmat_x_bat + [True] * num_aux, solve_x_bat)]
    x_bat_noaux = x_bat_out[:num_x]
    matvec_batched, matvec_b_bat = batching.batch_jaxpr(
        matvec, axis_data, params_bat.matvec + x_bat_noaux, b_bat)
    if solve_t is None:
      solve_t_batched = None
      b_bat_out = [m or o for m, o in zip(matvec_b_bat, orig_b_bat)]
    else:
      solve_t_batched, solve_t_bat = batching.batch_jaxpr(
          solve_t, axis_data, params_bat.transpose_solve + x_bat_noaux, x_bat_out)
      b_bat_out = [m or s or o for m, s, o in zip(matvec_b_bat, solve_t_bat, orig_b_bat)]
    if x_bat_out == x_bat and b_bat_out == b_bat:
      break
    x_bat, b_bat = x_bat_out, b_bat_out
  else:
    raise AssertionError("custom_linear_solve batching: no fixpoint reached")

  new_params = [batching.moveaxis(x, d, 0) if d is not batching.not_mapped else x
                for group, group_dims in zip(params, params_dims)
                for x, d in zip(group, group_dims)]
  new_b = [batching.bdim_at_front(x, d, axis_data.size) if now else x
           for x, d, now in zip(b, b_dims, b_bat)]
  outs = linear_solve_p.bind(
      *new_params, *new_b, const_lengths=const_lengths,
      jaxprs=_LinearSolveTuple(matvec_batched, vecmat_batched, solve_batched,
                               solve_t_batched))
  return outs, [0 if bat else batching.not_mapped for bat in solve_x_bat]


ad.primitive_jvps[linear_solve_p] = _linear_solve_jvp
ad.deftranspose(linear_solve_p, _linear_solve_transpose)
batching.axis_primitive_batchers[linear_solve_p] = _linear_solve_batch


# --- custom_root --------------------------------------------------------------------

_RootTuple = collections.namedtuple("_RootTuple", "f, solve, l_and_s")


def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
  """The root of `f` found by `solve(f, initial_guess)`, differentiable by
  the implicit function theorem with respect to the values `f` closes over.

  `f` maps a pytree like `initial_guess` to one of the same structure.
  `solve(f, initial_guess)` returns `x` with `f(x) == 0` (assumed, not
  checked); it is never differentiated. `tangent_solve(g, y)` solves the
  linear system `g(x) == y`, `g` being `f` linearized at the root (for a
  scalar, `lambda g, y: y / g(1.0)`). With `has_aux`, `solve` returns
  `(x, aux)`, and so does `custom_root`; `aux` gets zero derivatives.

  If p are the values `f` closes over and x*(p) the root, f(p, x*(p)) = 0
  gives the derivative x*' = -(d_x f)^-1 (d_p f) p'.
  """
  guess_flat, in_args_tree = tree_util.tree_flatten((initial_guess,))
  guess_avals = tuple(core.get_aval(x) for x in guess_flat)
  f_jaxpr, f_consts, out_tree = initial_style_jaxpr(f, in_args_tree, guess_avals)
  in_tree, = tree_util.treedef_children(in_args_tree)
  _check_tree("f", "initial_guess", out_tree, in_tree)

  solve_jaxpr, solve_consts, solution_tree = initial_style_jaxpr(
      functools.partial(solve, f), in_args_tree, guess_avals)
  _check_tree("solve", "initial_guess", solution_tree, in_tree, has_aux)

  def linearize_and_solve(x, b):
    _, f_jvp = linearize(f, x)
    return tangent_solve(f_jvp, b)

  l_and_s_jaxpr, l_and_s_consts, out_tree = initial_style_jaxpr(
      linearize_and_solve, tree_util.treedef_tuple((in_tree,) * 2), guess_avals * 2)
  _check_tree("tangent_solve", "x", out_tree, in_tree)

  all_consts = [f_consts, solve_consts, l_and_s_consts]
  solution_flat = _custom_root(
      _RootTuple(*map(len, all_consts)), _RootTuple(f_jaxpr, solve_jaxpr, l_and_s_jaxpr),
      *[c for consts in all_consts for c in consts], *guess_flat)
  return tree_util.tree_unflatten(solution_tree, solution_flat)


@functools.partial(custom_jvp, nondiff_argnums=(0, 1))
def _custom_root(const_lengths, jaxprs, *args):
  """The `solve` jaxpr on its constants and the initial guess."""
  groups, guess = _split(args, const_lengths)
  return eval_closed_jaxpr(jaxprs.solve, *_RootTuple(*groups).solve, *guess)


@_custom_root.defjvp
def _custom_root_jvp(const_lengths, jaxprs, primals, tangents):
  # F(p, x*(p)) = 0 for the root x*(p), so d_p F p' + d_x F x*' = 0 and
  # x*' = -(d_x F)^-1 (d_p F p'): the JVP of f in its constants at the root,
  # then a tangent solve with f linearized at the root.
  groups, _ = _split(primals, const_lengths)
  params = _RootTuple(*groups)
  dot_groups, _ = _split(tangents, const_lengths)
  solution_and_aux = _custom_root(const_lengths, jaxprs, *primals)
  n = len(jaxprs.f.out_avals)
  solution, aux = solution_and_aux[:n], solution_and_aux[n:]
  _, rhs = ad.jvp_flat(lambda *p: eval_closed_jaxpr(jaxprs.f, *p, *solution),
                       params.f, _RootTuple(*dot_groups).f)
  rhs = [ad.instantiate_zeros(t) for t in rhs]
  solution_dot = [neg(t) for t in eval_closed_jaxpr(jaxprs.l_and_s, *params.l_and_s,
                                                    *solution, *rhs)]
  aux_dot = [_zero_tangent(a) for a in aux]
  return [*solution, *aux], [*solution_dot, *aux_dot]
