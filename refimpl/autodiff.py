"""The user-facing differentiation transformations: `jvp`, `linearize`,
`vjp`, `grad`, `value_and_grad`, `jacfwd`, `jacrev`, `jacobian`, `hessian`
and `linear_transpose`, with JAX's signatures, checks and error messages.

They flatten pytrees and call the machinery of `refimpl.interpreters.ad`.
Integer and boolean values have `float0` tangents; `grad` refuses them
unless `allow_int=True`, and then returns float0 zeros for them.
"""

import functools
import operator

import numpy as np

from refimpl import core, dtypes, tree_util
from refimpl.interpreters import ad
from refimpl.jaxpr import ClosedJaxpr

__all__ = ['jvp', 'linearize', 'vjp', 'grad', 'value_and_grad', 'jacfwd', 'jacrev',
           'jacobian', 'hessian', 'linear_transpose', 'fwd_and_bwd']


# --- helpers -----------------------------------------------------------------

def _flatten_fun(fun, in_tree, has_aux=False):
  """`fun` as a function of flat leaves returning flat leaves.

  Returns (flat_fun, out_info): after a call, `out_info` holds the output
  tree (and, with `has_aux`, the aux tree and the number of aux leaves,
  which come last).
  """
  out_info = {}

  def flat_fun(*leaves):
    out = fun(*tree_util.tree_unflatten(in_tree, leaves))
    if has_aux:
      if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError("expected function with aux output to return a two-element "
                        f"tuple, but got type {type(out)} with value {out!r}")
      out, aux = out
      aux_leaves, out_info["aux_tree"] = tree_util.tree_flatten(aux)
    else:
      aux_leaves = []
    out_leaves, out_info["tree"] = tree_util.tree_flatten(out)
    out_info["num_aux"] = len(aux_leaves)
    return [*out_leaves, *aux_leaves]
  return flat_fun, out_info


def _split_aux(leaves, out_info):
  n = len(leaves) - out_info["num_aux"]
  return leaves[:n], leaves[n:]


def _to_value(x):
  """Python scalars and NumPy values as arrays of their JAX type (Python
  scalars weakly typed, as when they are passed to a traced function)."""
  if isinstance(x, (core.Tracer, core.ConcreteArray)):
    return x
  from refimpl.array import Array
  aval = core.get_aval(x)
  return Array(np.asarray(x, aval.dtype), weak_type=aval.weak_type)


def _zeros_out(t):
  """A tangent returned to the user: symbolic zeros become arrays."""
  return ad.instantiate_zeros(t)


def _check_callable(fun):
  if not callable(fun):
    raise TypeError(f"Expected a callable value, got {fun}")


def _argnums_partial(fun, args, argnums):
  """Splits `args` into the differentiated ones (at `argnums`) and the rest.

  Returns (f, dyn_args): `f(*dyn_args)` calls `fun` with the others fixed.
  """
  multiple = isinstance(argnums, (tuple, list))
  nums = tuple(argnums) if multiple else (argnums,)
  for i in nums:
    if not isinstance(i, (int, np.integer)) or isinstance(i, bool):
      raise TypeError(f"argnums must be an int or a tuple of ints, got {argnums}")
  if nums and max(nums) >= len(args):
    raise TypeError(f"differentiating with respect to argnums={argnums} requires at least "
                    f"{max(nums) + 1} positional arguments to be passed by the caller, "
                    f"but got only {len(args)} positional arguments.")
  for i in nums:
    if i < -len(args):
      raise ValueError("Positional argument indices, e.g. for `static_argnums`, must have "
                       "value greater than or equal to -len(args) and less than len(args), "
                       f"but got value {i} for len(args) == {len(args)}.")
  nums = tuple(operator.index(i) % len(args) for i in nums)
  if len(set(nums)) != len(nums):
    raise ValueError(f"argnums={argnums} names an argument more than once (after "
                     "negative indices count from the end); differentiate with respect "
                     "to each argument once.")

  def f(*dyn):
    full = list(args)
    for i, value in zip(nums, dyn):
      full[i] = value
    return fun(*full)
  return f, tuple(args[i] for i in nums)


def _check_tangent(primal, tangent):
  p_aval, t_aval = core.get_aval(primal), core.get_aval(tangent)
  if p_aval.shape != t_aval.shape:
    raise ValueError("jvp called with different primal and tangent shapes;"
                     f"Got primal shape {p_aval.shape} and tangent shape as "
                     f"{t_aval.shape}")
  expected = ad.tangent_aval(p_aval).dtype
  if t_aval.dtype != expected:
    raise TypeError("primal and tangent arguments to jax.jvp do not match; dtypes must "
                    "be equal, or in case of int/bool primal dtype the tangent dtype "
                    f"must be float0.Got primal dtype {p_aval.dtype.name} and so expected "
                    f"tangent dtype {_dtype_name(expected)}, but got tangent dtype "
                    f"{_dtype_name(t_aval.dtype)} instead.")


def _dtype_name(dtype):
  return "float0" if dtype == dtypes.float0 else dtype.name


def _tangent_in(t):
  """A user's tangent as a value, float0 tangents as symbolic zeros."""
  aval = core.get_aval(t)
  return ad.Zero(aval) if aval.dtype == dtypes.float0 else _to_value(t)


# --- forward mode ------------------------------------------------------------

def jvp(fun, primals, tangents, has_aux=False):
  """Evaluates `fun` at `primals` and its derivative along `tangents`.

  `primals` and `tangents` are tuples (or lists) of the same tree structure,
  shapes and tangent dtypes. Returns `(primals_out, tangents_out)` (and
  `aux` with `has_aux=True`).
  """
  _check_callable(fun)
  if not (isinstance(primals, (tuple, list)) and isinstance(tangents, (tuple, list))):
    raise TypeError("primal and tangent arguments to jax.jvp must be tuples or lists; "
                    f"found {type(primals).__name__} and {type(tangents).__name__}.")
  p_leaves, p_tree = tree_util.tree_flatten(primals)
  t_leaves, t_tree = tree_util.tree_flatten(tangents)
  if p_tree != t_tree:
    raise TypeError("primal and tangent arguments to jax.jvp must have the same tree "
                    f"structure; primals have tree structure {p_tree} whereas tangents "
                    f"have tree structure {t_tree}.")
  p_leaves = [_to_value(p) for p in p_leaves]
  for p, t in zip(p_leaves, t_leaves):
    _check_tangent(p, t)
  flat_fun, out_info = _flatten_fun(lambda *a: fun(*a), tree_util.tree_structure(
      tuple(primals)), has_aux)
  outs, out_tangents = ad.jvp_flat(flat_fun, p_leaves, [_tangent_in(t) for t in t_leaves])
  outs, aux = _split_aux(outs, out_info)
  out_tangents, _ = _split_aux(out_tangents, out_info)
  primals_out = tree_util.tree_unflatten(out_info["tree"], outs)
  tangents_out = tree_util.tree_unflatten(out_info["tree"], map(_zeros_out, out_tangents))
  if has_aux:
    return primals_out, tangents_out, tree_util.tree_unflatten(out_info["aux_tree"], aux)
  return primals_out, tangents_out


def linearize(fun, *primals, has_aux=False):
  """Evaluates `fun` at `primals` and returns `(primals_out, f_jvp)` (and
  `aux`), where `f_jvp(*tangents)` applies the linearization: the primal
  computation is done once, `f_jvp` only runs the recorded linear program.
  As in JAX, `f_jvp` is a `tree_util.Partial` whose leaves are the residuals,
  so it can be passed to and returned from `jit`."""
  _check_callable(fun)
  p_leaves, p_tree = tree_util.tree_flatten(primals)
  p_leaves = [_to_value(p) for p in p_leaves]
  p_avals = [core.get_aval(p) for p in p_leaves]
  flat_fun, out_info = _flatten_fun(lambda *a: fun(*a), p_tree, has_aux)
  outs, linear = ad.linearize_flat(flat_fun, p_leaves)
  outs, aux = _split_aux(outs, out_info)
  num_out = len(outs)

  def f_jvp(residuals, *tangents):
    t_leaves, t_tree = tree_util.tree_flatten(tangents)
    if t_tree != p_tree:
      raise ValueError(f"linearized function called on tangent values inconsistent with "
                       f"the original primal values: expected tree {p_tree}, got {t_tree}")
    for p_aval, t in zip(p_avals, t_leaves):
      t_aval = core.get_aval(t)
      if p_aval.shape != t_aval.shape or ad.tangent_aval(p_aval).dtype != t_aval.dtype:
        raise ValueError("linearized function called on tangent values inconsistent with "
                         "the original primal values: got tangent "
                         f"{t_aval.str_short(short_dtypes=True)} for primal "
                         f"{p_aval.str_short(short_dtypes=True)}.")
    out_tangents = ad.eval_linear(ClosedJaxpr(linear.jaxpr, residuals),
                                  [_to_value(t) for t in t_leaves])
    return tree_util.tree_unflatten(out_info["tree"], out_tangents[:num_out])

  f_jvp = tree_util.Partial(f_jvp, list(linear.consts))
  primals_out = tree_util.tree_unflatten(out_info["tree"], outs)
  if has_aux:
    return primals_out, f_jvp, tree_util.tree_unflatten(out_info["aux_tree"], aux)
  return primals_out, f_jvp


# --- reverse mode ------------------------------------------------------------

def vjp(fun, *primals, has_aux=False, reduce_axes=()):
  """Evaluates `fun` at `primals`; returns `(primals_out, vjp_fun)` (and
  `aux`), where `vjp_fun(cotangent)` maps a cotangent of the output (same
  structure, shapes and dtypes) to a tuple of cotangents of the primals.
  As in JAX, `vjp_fun` is a `tree_util.Partial` whose leaves are the
  residuals, so it can be passed to and returned from `jit`. A non-empty
  `reduce_axes` (removed from JAX) raises NotImplementedError."""
  if reduce_axes:
    raise NotImplementedError("reduce_axes argument to vjp is deprecated")
  _check_callable(fun)
  p_leaves, p_tree = tree_util.tree_flatten(primals)
  p_leaves = [_to_value(p) for p in p_leaves]
  flat_fun, out_info = _flatten_fun(lambda *a: fun(*a), p_tree, has_aux)
  outs, linear = ad.linearize_flat(flat_fun, p_leaves)
  outs, aux = _split_aux(outs, out_info)
  out_tree = out_info["tree"]
  out_avals = [core.get_aval(o) for o in outs]

  aux_cts = [ad.Zero(ad.tangent_aval(core.get_aval(a))) for a in aux]
  name = getattr(fun, "__name__", "fun")

  def vjp_fun(residuals, *args):
    if len(args) != 1:
      raise TypeError(
          f"The function returned by `jax.vjp` applied to {name} was called with "
          f"{len(args)} arguments, but functions returned by `jax.vjp` must be called "
          f"with a single argument corresponding to the single value returned by {name} "
          "(even if that returned value is a tuple or other container).")
    ct_leaves, ct_tree = tree_util.tree_flatten(args[0])
    if ct_tree != out_tree:
      raise ValueError("unexpected tree structure of argument to vjp function: got "
                       f"{ct_tree}, but expected to match {out_tree}")
    cts = []
    for aval, ct in zip(out_avals, ct_leaves):
      ct_aval, expected = core.get_aval(ct), ad.tangent_aval(aval)
      if expected.dtype == dtypes.float0 and ct_aval.shape == expected.shape:
        cts.append(ad.Zero(expected))   # any dtype is accepted where float0 is expected
        continue
      if ct_aval.shape != expected.shape or ct_aval.dtype != expected.dtype:
        raise ValueError(
            "unexpected JAX type (e.g. shape/dtype) for argument to vjp function: got "
            f"{ct_aval.str_short(short_dtypes=True)}, but expected "
            f"{expected.str_short(short_dtypes=True)} because the corresponding output "
            f"of the function had JAX type {aval.str_short(short_dtypes=True)}")
      cts.append(_to_value(ct))
    cts += aux_cts
    cts_in = ad.backward_pass(linear.jaxpr, residuals, cts)
    return tree_util.tree_unflatten(p_tree, map(_zeros_out, cts_in))

  vjp_fun = tree_util.Partial(vjp_fun, list(linear.consts))
  primals_out = tree_util.tree_unflatten(out_tree, outs)
  if has_aux:
    return primals_out, vjp_fun, tree_util.tree_unflatten(out_info["aux_tree"], aux)
  return primals_out, vjp_fun


def _check_input_dtype_revderiv(name, holomorphic, allow_int, x):
  dtype = core.get_aval(x).dtype
  if holomorphic and not dtypes.is_complex(dtype):
    raise TypeError(f"{name} with holomorphic=True requires inputs with complex dtype, "
                    f"but got {dtype.name}.")
  if not dtypes.is_inexact(dtype):
    if not allow_int:
      raise TypeError(f"{name} requires real- or complex-valued inputs (input dtype that "
                      f"is a sub-dtype of np.inexact), but got {dtype.name}. If you want "
                      "to use Boolean- or integer-valued inputs, use vjp or set allow_int "
                      "to True.")


def _check_output_dtype_revderiv(name, holomorphic, x):
  dtype = core.get_aval(x).dtype
  if holomorphic:
    if not dtypes.is_complex(dtype):
      raise TypeError(f"{name} with holomorphic=True requires outputs with complex "
                      f"dtype, but got {dtype.name}.")
  elif dtypes.is_complex(dtype):
    raise TypeError(f"{name} requires real-valued outputs (output dtype that is a "
                    f"sub-dtype of np.floating), but got {dtype.name}. For holomorphic "
                    "differentiation, pass holomorphic=True. For differentiation of "
                    "non-holomorphic functions involving complex outputs, use jax.vjp "
                    "directly.")
  elif not dtypes.is_float(dtype):
    raise TypeError(f"{name} requires real-valued outputs (output dtype that is a "
                    f"sub-dtype of np.floating), but got {dtype.name}. For "
                    "differentiation of functions with integer outputs, use jax.vjp "
                    "directly.")


def _check_scalar(x):
  msg = "Gradient only defined for scalar-output functions. Output {}."
  try:
    aval = core.get_aval(x)
  except TypeError as err:
    raise TypeError(msg.format(f"was {x}")) from err
  if aval.shape != ():
    raise TypeError(msg.format(f"had shape: {aval.shape}"))


def value_and_grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False,
                   reduce_axes=()):
  """Returns a function computing `(fun(*args), gradient)`: the gradient
  with respect to the arguments at `argnums` (an int, or a tuple giving a
  tuple of gradients). `fun` must return a real scalar (or, with
  `has_aux=True`, a pair `(scalar, aux)`, giving `((value, aux), grad)`)."""
  _check_callable(fun)
  if reduce_axes:
    raise NotImplementedError("reduce_axes argument to grad is deprecated")

  @functools.wraps(fun)
  def value_and_grad_f(*args, **kwargs):
    f = functools.partial(fun, **kwargs) if kwargs else fun
    f_partial, dyn_args = _argnums_partial(f, args, argnums)
    for leaf in tree_util.tree_leaves(dyn_args):
      _check_input_dtype_revderiv("grad", holomorphic, allow_int, leaf)
    if has_aux:
      ans, vjp_fun, aux = vjp(f_partial, *dyn_args, has_aux=True)
    else:
      ans, vjp_fun = vjp(f_partial, *dyn_args)
    _check_scalar(ans)
    _check_output_dtype_revderiv("grad", holomorphic, ans)
    from refimpl.lax.shapes import full_like
    g = vjp_fun(full_like(ans, 1))   # weakly typed when `ans` is
    g = g if isinstance(argnums, (tuple, list)) else g[0]
    return ((ans, aux), g) if has_aux else (ans, g)
  return value_and_grad_f


def grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False,
         reduce_axes=()):
  """Returns a function computing the gradient of scalar-valued `fun` with
  respect to the arguments at `argnums` (with `has_aux=True`, returns
  `(gradient, aux)`). See `value_and_grad`."""
  value_and_grad_f = value_and_grad(fun, argnums, has_aux=has_aux,
                                    holomorphic=holomorphic, allow_int=allow_int,
                                    reduce_axes=reduce_axes)

  @functools.wraps(fun)
  def grad_f(*args, **kwargs):
    value, g = value_and_grad_f(*args, **kwargs)
    return (g, value[1]) if has_aux else g
  return grad_f


def fwd_and_bwd(fun, argnums, has_aux=False, jitted=True):
  """Splits reverse-mode differentiation of `fun` into `fwd` and `bwd`.

  `fwd(*args)` returns `(fun(*args), residuals)` (and `aux` with
  `has_aux=True`); `bwd(residuals, cotangent)` returns the cotangents of the
  arguments at `argnums` (a tuple when `argnums` is a sequence). With
  `jitted=True` both are jitted, so `bwd` compiles once for all iterations.
  Here the residuals are the arguments themselves and `bwd` recomputes the
  forward pass (the results are those of `vjp`).
  """
  def fwd(*args):
    f_partial, dyn_args = _argnums_partial(fun, args, argnums)
    out = f_partial(*dyn_args)
    if has_aux:
      return out[0], args, out[1]
    return out, args

  def bwd(residuals, cotangent):
    f_partial, dyn_args = _argnums_partial(fun, residuals, argnums)
    _, vjp_fun = vjp(f_partial, *dyn_args, has_aux=has_aux)[:2]
    cts = vjp_fun(cotangent)
    return cts if isinstance(argnums, (tuple, list)) else cts[0]

  if jitted:
    from refimpl.api import jit
    return jit(fwd), jit(bwd)
  return fwd, bwd


# --- Jacobians -----------------------------------------------------------------

def _jacobian_tree(out_tree, in_tree, out_avals, in_avals, block):
  """Assembles a Jacobian pytree: for each output leaf, a pytree shaped like
  the inputs whose leaves are `block(i, j)`, shaped out_i.shape + in_j.shape."""
  rows = [tree_util.tree_unflatten(in_tree, [block(i, j) for j in range(len(in_avals))])
          for i in range(len(out_avals))]
  return tree_util.tree_unflatten(out_tree, rows)


def _std_basis(avals):
  """The standard basis of the flattened space of `avals`, as one stacked
  array per aval: leaf j has shape (total size,) + aval_j.shape, and row k of
  all leaves together is the k-th unit vector."""
  total = sum(a.size for a in avals)
  eye, offset, leaves = np.eye(total), 0, []
  for aval in avals:
    leaves.append(eye[:, offset:offset + aval.size].astype(aval.dtype)
                  .reshape((total,) + aval.shape))
    offset += aval.size
  return leaves


def _jacobian_block(derivative, out_aval, in_aval, offset, forward):
  """Block (i, j) of a Jacobian, shaped out_i.shape + in_j.shape, cut from a
  stacked derivative: an output tangent with the input coordinates last
  (`forward`), or an input cotangent with the output coordinates first."""
  from refimpl import numpy as jnp
  if not dtypes.is_inexact(in_aval.dtype) and not forward:
    return np.zeros(out_aval.shape + in_aval.shape, dtypes.float0)
  if forward:
    part = derivative[..., offset:offset + in_aval.size]
  else:
    part = derivative[offset:offset + out_aval.size]
  return jnp.reshape(part, out_aval.shape + in_aval.shape)


def _check_input_dtype_jacfwd(holomorphic, x):
  dtype = core.get_aval(x).dtype
  if holomorphic:
    if not dtypes.is_complex(dtype):
      raise TypeError("jacfwd with holomorphic=True requires inputs with complex "
                      f"dtype, but got {dtype.name}.")
  elif not dtypes.is_float(dtype):
    raise TypeError("jacfwd requires real-valued inputs (input dtype that is a "
                    f"sub-dtype of np.floating), but got {dtype.name}. For holomorphic "
                    "differentiation, pass holomorphic=True. For differentiation of "
                    "non-holomorphic functions involving complex inputs or integer "
                    "inputs, use jax.jvp directly.")


def _jacobian(fun, argnums, has_aux, check_input, check_output, derivatives):
  """A Jacobian transformation: linearizes `fun` at the arguments at
  `argnums` (checking each input and output leaf) and assembles the blocks
  `derivatives(linear, in_avals, out_avals, aux)(i, j)`."""
  _check_callable(fun)

  @functools.wraps(fun)
  def jacfun(*args, **kwargs):
    f = functools.partial(fun, **kwargs) if kwargs else fun
    f_partial, dyn_args = _argnums_partial(f, args, argnums)
    leaves, in_tree = tree_util.tree_flatten(dyn_args)
    leaves = [_to_value(x) for x in leaves]
    for leaf in leaves:
      check_input(leaf)
    flat_fun, out_info = _flatten_fun(lambda *a: f_partial(*a), in_tree, has_aux)
    outs, linear = ad.linearize_flat(flat_fun, leaves)
    outs, aux = _split_aux(outs, out_info)
    for o in outs:
      check_output(o)
    in_avals = [core.get_aval(x) for x in leaves]
    out_avals = [core.get_aval(o) for o in outs]
    block = derivatives(linear, in_avals, out_avals, aux)
    in_tree_1 = in_tree if isinstance(argnums, (tuple, list)) else \
        tree_util.tree_structure(dyn_args[0])
    jac = _jacobian_tree(out_info["tree"], in_tree_1, out_avals, in_avals, block)
    if has_aux:
      return jac, tree_util.tree_unflatten(out_info["aux_tree"], aux)
    return jac
  return jacfun


def _forward_derivatives(linear, in_avals, out_avals, aux):
  """The blocks from the linearization applied, under `vmap`, to the basis of
  the inputs: output tangents with the input coordinates last."""
  from refimpl.vectorize import vmap
  tangents = vmap(lambda *basis: ad.eval_linear(linear, basis)[:len(out_avals)],
                  out_axes=-1)(*_std_basis(in_avals))
  offsets = np.cumsum([0] + [a.size for a in in_avals])
  return lambda i, j: _jacobian_block(tangents[i], out_avals[i], in_avals[j], offsets[j],
                                      forward=True)


def _reverse_derivatives(linear, in_avals, out_avals, aux):
  """The blocks from the transposed linearization applied, under `vmap`, to
  the basis of the outputs: input cotangents with the output coordinates
  first (float0 blocks for integer inputs)."""
  from refimpl.vectorize import vmap
  aux_cts = [ad.Zero(ad.tangent_aval(core.get_aval(a))) for a in aux]
  inexact = [dtypes.is_inexact(a.dtype) for a in in_avals]

  def pullback(*cts):
    cts_in = ad.backward_pass(linear.jaxpr, linear.consts, [*cts, *aux_cts])
    return [_zeros_out(ct) for ct, keep in zip(cts_in, inexact) if keep]

  kept = iter(vmap(pullback)(*_std_basis(out_avals)))
  cotangents = [next(kept) if keep else None for keep in inexact]
  offsets = np.cumsum([0] + [a.size for a in out_avals])
  return lambda i, j: _jacobian_block(cotangents[j], out_avals[i], in_avals[j], offsets[i],
                                      forward=False)


def jacfwd(fun, argnums=0, has_aux=False, holomorphic=False):
  """The Jacobian of `fun` with respect to the arguments at `argnums`, by
  forward mode: the linearization mapped (`vmap`) over the input basis.

  For output leaf `o` and input leaf `x` the block has shape
  `o.shape + x.shape`; blocks are nested as the outputs, then the inputs.
  """
  def check_output(o):
    if holomorphic:
      _check_output_dtype_revderiv("jacfwd", True, o)
  return _jacobian(fun, argnums, has_aux,
                   functools.partial(_check_input_dtype_jacfwd, holomorphic), check_output,
                   _forward_derivatives)


def jacrev(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
  """The Jacobian of `fun` with respect to the arguments at `argnums`, by
  reverse mode: the transposed linearization mapped over the output basis.
  Blocks are nested as for `jacfwd`."""
  return _jacobian(
      fun, argnums, has_aux,
      functools.partial(_check_input_dtype_revderiv, "jacrev", holomorphic, allow_int),
      functools.partial(_check_output_dtype_revderiv, "jacrev", holomorphic),
      _reverse_derivatives)


jacobian = jacrev


def hessian(fun, argnums=0, has_aux=False, holomorphic=False):
  """The Hessian of scalar-valued `fun`: `jacfwd(jacrev(fun))`."""
  return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic),
                argnums, has_aux=has_aux, holomorphic=holomorphic)


# --- linear_transpose ------------------------------------------------------------

def linear_transpose(fun, *primals, reduce_axes=()):
  """The transpose of the linear function `fun`, whose inputs look like
  `primals` (only their shapes and dtypes matter). Returns
  `transposed(out_cotangent) -> tuple of input cotangents`."""
  from refimpl.interpreters import partial_eval as pe
  leaves, in_tree = tree_util.tree_flatten(primals)
  in_avals = [core.ShapedArray(np.shape(x), dtypes.dtype(x)) if hasattr(x, "dtype")
              else core.get_aval(x) for x in leaves]
  in_dtypes = [a.dtype for a in in_avals]
  flat_fun, out_info = _flatten_fun(lambda *a: fun(*a), in_tree)
  closed = pe.trace_to_jaxpr(flat_fun, in_avals)
  out_avals = closed.out_avals
  out_dtypes = [a.dtype for a in out_avals]
  if not (all(dtypes.is_inexact(d) for d in in_dtypes + out_dtypes)
          or all(dtypes.issubdtype(d, np.integer) for d in in_dtypes + out_dtypes)):
    raise TypeError("linear_transpose only supports [float or complex] -> [float or "
                    "complex], and integer -> integer functions, but got "
                    f"{in_dtypes} -> {out_dtypes}.")

  def transposed(out_cotangent):
    ct_leaves, ct_tree = tree_util.tree_flatten(out_cotangent)
    if ct_tree != out_info["tree"]:
      raise TypeError("cotangent tree does not match function output, expected "
                      f"{out_info['tree']} but got {ct_tree}")
    for aval, ct in zip(out_avals, ct_leaves):
      ct_aval = core.get_aval(ct)
      if ct_aval.shape != aval.shape or ct_aval.dtype != aval.dtype:
        raise TypeError("cotangent type does not match function output, expected "
                        f"{aval.str_short()} but got {ct_aval.str_short()}")
    cts = ad.backward_pass(closed.jaxpr, closed.consts, [_to_value(c) for c in ct_leaves])
    return tree_util.tree_unflatten(in_tree, map(_zeros_out, cts))
  return transposed
