"""Loops over a static number of iterations: the `scan` primitive, and
`fori_loop` (static bounds), `map` and `associative_scan` built on it (or,
for `associative_scan`, on slicing and padding), as in JAX.

`scan` holds its body as a closed jaxpr `jaxpr` taking
`(*consts, *carry, *x)` and returning `(*carry, *y)`; its operands are
`(*consts, *init, *xs)`, with `num_consts` and `num_carry` saying where each
group starts. Every transformation of a scan is again a scan:

* JVP: a scan of the JVP of the body; which carries have nonzero tangents
  is a fixpoint (a carry whose tangent starts at zero may pick one up).
* Partial evaluation (what reverse mode uses): the known part of the body
  runs now as a scan that also outputs the residuals the unknown part needs,
  stacked as extra ys (residuals that depend only on known consts are
  computed once, outside the loop, and passed as consts); the unknown part
  is recorded as a scan taking the residuals. Which carries are unknown is
  a fixpoint.
* Transpose: a scan in the opposite direction of the transposed body; the
  cotangents of the linear consts accumulate in extra carries.
* Batching: a scan of the batched body; batched xs and ys keep the scan axis
  first and the batch axis second. Which carries are batched is a fixpoint.
"""


import numpy as np

from refimpl import core, dtypes, tree_util
from refimpl.config import config
from refimpl.core import Primitive
from refimpl.errors import ConcretizationTypeError
from refimpl.interpreters import ad, batching
from refimpl.interpreters import partial_eval as pe
from refimpl.interpreters.eval import eval_closed_jaxpr, run_jaxpr
from refimpl.jaxpr import ClosedJaxpr, Jaxpr
from refimpl.lax import elementwise, indexing, shapes
from refimpl.lax.control_flow.common import (check_carry_type, initial_style_jaxpr,
                                             promote_weak_typed_inputs, typematch)
from refimpl.lax.rules import const

__all__ = ['scan', 'scan_p', 'fori_loop', 'map', 'associative_scan']


def _split(seq, sizes):
  """`seq` cut into consecutive lists of the given sizes, plus the rest."""
  seq, parts = list(seq), []
  for n in sizes:
    parts.append(seq[:n])
    seq = seq[n:]
  return parts + [seq]


def _closed(jaxpr_with_consts):
  """A closed jaxpr without constants, and the values of its constants: the
  constvars become leading inputs (so a scan passes them as consts)."""
  j = jaxpr_with_consts.jaxpr
  opened = Jaxpr((), [*j.constvars, *j.invars], j.outvars, j.eqns)
  return ClosedJaxpr(opened, ()), list(jaxpr_with_consts.consts)


def _permute(closed, in_order, out_order):
  """`closed` with its inputs and outputs reordered (orders of indices)."""
  j = closed.jaxpr
  return ClosedJaxpr(Jaxpr(j.constvars, [j.invars[i] for i in in_order],
                           [j.outvars[i] for i in out_order], j.eqns), closed.consts)


def _order(groups):
  """The indices of the groups `[(start, mask), ...]`' True entries, in turn:
  how `_permute` interleaves primals and tangents."""
  return [start + i for start, mask in groups for i, m in enumerate(mask) if m]


# --- the scan primitive --------------------------------------------------------

def _scan_impl(*args, reverse, length, jaxpr, num_consts, num_carry, linear, unroll,
               _split_transpose):
  """`scan[jaxpr, length, reverse, num_consts, num_carry, linear, unroll,
  _split_transpose] *consts *init *xs`: a loop of `length` iterations.

  With `carry = init`, iteration `i` (for i = 0, ..., length-1, or
  length-1, ..., 0 when `reverse`) evaluates
  `(*carry, *y) = jaxpr(*consts, *carry, *[x[i] for x in xs])` and stores
  each `y` at index `i` of the matching output. The outputs are the final
  carry and the ys stacked along a new leading axis (index `i` holds
  iteration `i`'s y, so `reverse` reverses the leading axes of both xs and
  ys). The consts are the same in every iteration.

  Shape rule: every x has leading axis `length` and, without it, the type of
  the matching body input; the carry outputs of `jaxpr` match its carry
  inputs in shape and dtype (weak types aside); the outputs are the carry
  types of `jaxpr`'s outputs and each y type with `length` prepended. A
  zero-length scan returns `init` and empty ys (leading axis 0). `unroll`
  (iterations per rolled loop step), `linear` (which operands are linear,
  from differentiation) and `_split_transpose` do not change the values.
  """
  consts, carry, xs = _split(args, [num_consts, num_carry])
  y_avals = jaxpr.out_avals[num_carry:]
  ys = [np.empty((length, *a.shape), dtypes.numpy_dtype(a.dtype)) for a in y_avals]
  for i in (reversed(range(length)) if reverse else range(length)):
    outs = run_jaxpr(jaxpr, *consts, *carry, *[x[i] for x in xs])
    carry = outs[:num_carry]
    for y, out in zip(ys, outs[num_carry:]):
      y[i] = out
  return carry + ys


def _scan_abstract_eval(*avals, reverse, length, jaxpr, num_consts, num_carry, linear,
                        unroll, _split_transpose):
  in_avals = jaxpr.in_avals
  if len(avals) != len(in_avals):
    raise TypeError(f"scan body takes {len(in_avals)} inputs, got {len(avals)} operands")
  consts, init, xs = _split(avals, [num_consts, num_carry])
  x_avals = [a.update(shape=a.shape[1:]) for a in xs]
  if any(a.shape[:1] != (length,) for a in xs):
    raise TypeError(f"scan got xs of types {[str(a) for a in xs]}, which do not all "
                    f"have leading axis length={length}")
  for what, given, expected in [("consts", consts, in_avals[:num_consts]),
                                ("carry", init, in_avals[num_consts:num_consts + num_carry]),
                                ("xs", x_avals, in_avals[num_consts + num_carry:])]:
    if not all(typematch(a, b) for a, b in zip(given, expected)):
      raise TypeError(f"scan {what} operands have types {[str(a) for a in given]} but "
                      f"the body takes {[str(a) for a in expected]}")
  carry_in = in_avals[num_consts:num_consts + num_carry]
  carry_out, y_avals = _split(jaxpr.out_avals, [num_carry])
  if not all(typematch(a, b) for a, b in zip(carry_in, carry_out)):
    raise TypeError(f"scan body carry input types {[str(a) for a in carry_in]} differ "
                    f"from its carry output types {[str(a) for a in carry_out]}")
  return carry_out + [a.update(shape=(length, *a.shape)) for a in y_avals]


scan_p = Primitive("scan")
scan_p.multiple_results = True
scan_p.def_impl(_scan_impl)
scan_p.def_abstract_eval(_scan_abstract_eval)


def _bind_scan(params, jaxpr, hoisted, consts, carry, xs, linear):
  """Binds a scan of `jaxpr` (whose constants `hoisted` lead the consts)."""
  return scan_p.bind(*hoisted, *consts, *carry, *xs, **dict(
      params, jaxpr=jaxpr, num_consts=len(hoisted) + len(consts), num_carry=len(carry),
      linear=(False,) * len(hoisted) + tuple(linear)))


# --- JVP -------------------------------------------------------------------------

def _is_zero(t):
  return isinstance(t, ad.Zero) or core.get_aval(t).dtype == dtypes.float0


def _scan_jvp(primals, tangents, *, jaxpr, num_consts, num_carry, linear, **params):
  """A scan of the body's JVP. The carries with nonzero tangents are a
  fixpoint: those whose init tangent is nonzero, and those the body gives a
  nonzero tangent from the others."""
  num_ys = len(jaxpr.out_avals) - num_carry
  nonzeros = [not _is_zero(t) for t in tangents]
  const_nz, init_nz, xs_nz = _split(nonzeros, [num_consts, num_carry])
  carry_nz = init_nz
  for _ in range(1 + num_carry):
    jvp, out_nz = ad.jvp_jaxpr(jaxpr, const_nz + carry_nz + xs_nz,
                               instantiate=carry_nz + [False] * num_ys)
    if out_nz[:num_carry] == carry_nz:
      break
    carry_nz = [a or b for a, b in zip(carry_nz, out_nz[:num_carry])]
  ys_nz = out_nz[num_carry:]

  # jvp takes (*primals, *nonzero tangents) and returns (*primal outs, *nonzero
  # tangent outs); the scan wants each group's tangents right after its primals.
  n_in, n_out = len(jaxpr.in_avals), len(jaxpr.out_avals)
  c_nz, x_nz = sum(const_nz), sum(carry_nz)
  in_groups = [(0, [True] * num_consts), (n_in, [True] * c_nz),
               (num_consts, [True] * num_carry), (n_in + c_nz, [True] * x_nz),
               (num_consts + num_carry, [True] * (n_in - num_consts - num_carry)),
               (n_in + c_nz + x_nz, [True] * sum(xs_nz))]
  out_groups = [(0, [True] * num_carry), (n_out, [True] * x_nz),
                (num_carry, [True] * num_ys), (n_out + x_nz, [True] * sum(ys_nz))]
  body, hoisted = _closed(_permute(jvp, _order(in_groups), _order(out_groups)))

  consts, init, xs = _split(primals, [num_consts, num_carry])
  consts_t, init_t, xs_t = _split(tangents, [num_consts, num_carry])
  consts_dot = [t for t, nz in zip(consts_t, const_nz) if nz]
  init_dot = [ad.instantiate_zeros(ad.Zero(ad.tangent_aval(core.get_aval(p))))
              if _is_zero(t) else t for p, t, nz in zip(init, init_t, carry_nz) if nz]
  xs_dot = [t for t, nz in zip(xs_t, xs_nz) if nz]
  lin_consts, lin_init, lin_xs = _split(linear, [num_consts, num_carry])
  outs = _bind_scan(params, body, hoisted, [*consts, *consts_dot], [*init, *init_dot],
                    [*xs, *xs_dot],
                    [*lin_consts, *[True] * len(consts_dot), *lin_init,
                     *[True] * len(init_dot), *lin_xs, *[True] * len(xs_dot)])
  carry, carry_dot, ys, ys_dot = _split(outs, [num_carry, x_nz, num_ys])
  primals_out = carry + ys
  nz_tangents = iter(carry_dot + ys_dot)
  tangents_out = [next(nz_tangents) if nz else ad.Zero(ad.tangent_aval(core.get_aval(p)))
                  for p, nz in zip(primals_out, carry_nz + ys_nz)]
  return primals_out, tangents_out


ad.primitive_jvps[scan_p] = _scan_jvp


# --- partial evaluation ------------------------------------------------------------

def _scan_partial_eval(trace, args, params):
  """Splits a scan with unknown operands into a known scan, run now, and an
  unknown scan, recorded, as JAX's `_scan_partial_eval` does.

  1. Which carries are unknown is a fixpoint (a carry fed by an unknown
     value is unknown from the first iteration on).
  2. The body splits into a known body returning the known carries and ys
     plus residuals, and an unknown body taking the residuals.
  3. Residuals that depend only on the known consts are loop-invariant: they
     are computed once now and passed to the unknown scan as consts. The
     others are extra ys of the known scan (stacked, one per iteration),
     passed to the unknown scan as xs; a residual that is a known x itself
     is passed as that x, without a copy.
  """
  jaxpr, num_consts, num_carry = params["jaxpr"], params["num_consts"], params["num_carry"]
  num_ys = len(jaxpr.out_avals) - num_carry
  const_uk, init_uk, xs_uk = _split([trace.is_own(x) for x in args], [num_consts, num_carry])
  carry_uk = init_uk
  for _ in range(1 + num_carry):
    known, unknown, out_uk, num_res = pe.partial_eval_jaxpr(
        jaxpr, const_uk + carry_uk + xs_uk, instantiate=carry_uk + [False] * num_ys)
    if out_uk[:num_carry] == carry_uk:
      break
    carry_uk = [a or b for a, b in zip(carry_uk, out_uk[:num_carry])]
  unknowns = const_uk + carry_uk + xs_uk
  consts, init, xs = _split(args, [num_consts, num_carry])
  known_consts = [x for x, u in zip(consts, const_uk) if not u]
  known_init = [x for x, u in zip(init, carry_uk) if not u]
  known_xs = [x for x, u in zip(xs, xs_uk) if not u]
  num_known_outs = len(out_uk) - sum(out_uk)

  # Hoisting: split `known` again, with only its consts known. `invariant`
  # computes (from the consts) the residuals that stay known, then what the
  # loop body needs from the consts; `loop` is the known scan's body.
  invariant, loop, res_variant, num_loop_consts = pe.partial_eval_jaxpr(
      known, [False] * len(known_consts) + [True] * (len(known.in_avals) - len(known_consts)),
      instantiate=[True] * num_known_outs + [False] * num_res)
  res_variant = res_variant[num_known_outs:]
  with core.set_current_trace(trace.parent):
    invariant_outs = eval_closed_jaxpr(invariant, *known_consts)
  intensive_res, loop_consts = _split(invariant_outs, [len(invariant_outs) - num_loop_consts])

  # Extensive residuals that are known xs are forwarded instead of stacked again.
  lj = loop.jaxpr
  xs_invars = lj.invars[num_loop_consts + len(known_init):]
  ext_outvars = lj.outvars[num_known_outs:]
  forwarded = [xs_invars.index(v) if v in xs_invars else None for v in ext_outvars]
  loop = ClosedJaxpr(Jaxpr(lj.constvars, lj.invars, lj.outvars[:num_known_outs] + [
      v for v, f in zip(ext_outvars, forwarded) if f is None], lj.eqns), loop.consts)
  loop, hoisted = _closed(loop)
  if loop.out_avals:
    with core.set_current_trace(trace.parent):
      known_outs = _bind_scan(params, loop, hoisted, loop_consts, known_init, known_xs,
                              [False] * (len(loop_consts) + len(known_init) + len(known_xs)))
  else:
    known_outs = []
  known_outs, computed = _split(known_outs, [num_known_outs])
  computed = iter(computed)
  extensive_res = [known_xs[f] if f is not None else next(computed) for f in forwarded]

  # The unknown scan: (*intensive res, *unknown consts) are its consts, its
  # xs are (*unknown xs, *extensive res).
  n_uc, n_ucarry = sum(const_uk), sum(carry_uk)
  intensive = [i for i, v in enumerate(res_variant) if not v]
  extensive = [i for i, v in enumerate(res_variant) if v]
  order = (intensive + list(range(num_res, num_res + n_uc + n_ucarry + sum(xs_uk)))
           + extensive)
  body, u_hoisted = _closed(_permute(unknown, order, range(len(unknown.out_avals))))
  unknown_args = [x for x, u in zip(args, unknowns) if u]
  u_consts, u_carry, u_xs = _split(unknown_args, [n_uc, n_ucarry])
  u_linear = [l for l, u in zip(params["linear"], unknowns) if u]
  lin_consts, lin_carry, lin_xs = _split(u_linear, [n_uc, n_ucarry])
  operands = [*u_hoisted, *intensive_res, *u_consts, *u_carry, *u_xs, *extensive_res]
  unknown_outs = iter(trace.record(scan_p, operands, dict(
      params, jaxpr=body, num_consts=len(u_hoisted) + len(intensive_res) + n_uc,
      num_carry=n_ucarry,
      linear=(False,) * (len(u_hoisted) + len(intensive_res)) + tuple(
          lin_consts + lin_carry + lin_xs) + (False,) * len(extensive_res))))
  known_iter = iter(known_outs)
  return [next(unknown_outs) if u else next(known_iter) for u in out_uk]


pe.partial_eval_rules[scan_p] = _scan_partial_eval


# --- transpose ---------------------------------------------------------------------

_transpose_cache = {}


def _transpose_body(jaxpr, num_consts, num_carry, consts_lin, xs_lin, ct_ys_zero):
  """The body of the transposed scan, as a closed jaxpr taking
  `(*ires, *ct_consts, *ct_carry, *ct_ys, *eres)` and returning
  `(*ct_consts, *ct_carry, *ct_xs)`: `ires`/`eres` are the non-linear consts
  and xs, `ct_consts` the cotangents of the linear consts accumulated so
  far, `ct_ys` the nonzero cotangents of this iteration's ys."""
  key = (jaxpr, num_consts, num_carry, consts_lin, xs_lin, ct_ys_zero)
  if key in _transpose_cache:
    return _transpose_cache[key]
  consts_avals, carry_avals, xs_avals = _split(jaxpr.in_avals, [num_consts, num_carry])
  lin_mask = [*consts_lin, *[True] * num_carry, *xs_lin]
  j = jaxpr.jaxpr
  lin_vars = [v for v, lin in zip(j.invars, lin_mask) if lin]
  nonlin_vars = [v for v, lin in zip(j.invars, lin_mask) if not lin]
  forward = Jaxpr([*j.constvars, *nonlin_vars], lin_vars, j.outvars, j.eqns)
  ys_avals = jaxpr.out_avals[num_carry:]
  ires_avals = [a for a, lin in zip(consts_avals, consts_lin) if not lin]
  ct_consts_avals = [a for a, lin in zip(consts_avals, consts_lin) if lin]
  eres_avals = [a for a, lin in zip(xs_avals, xs_lin) if not lin]
  nz_ys_avals = [a for a, zero in zip(ys_avals, ct_ys_zero) if not zero]

  def transposed(*args):
    ires, ct_consts, ct_carry, ct_ys, eres = _split(
        args, [len(ires_avals), len(ct_consts_avals), num_carry, len(nz_ys_avals)])
    ct_ys = iter(ct_ys)
    cts_out = ct_carry + [ad.Zero(a) if zero else next(ct_ys)
                          for a, zero in zip(ys_avals, ct_ys_zero)]
    cts_in = ad.backward_pass(forward, [*jaxpr.consts, *ires, *eres], cts_out)
    step, new_ct_carry, ct_xs = _split(cts_in, [len(ct_consts_avals), num_carry])
    return ([ad.instantiate_zeros(ad.add_tangents(a, b)) for a, b in zip(ct_consts, step)]
            + [ad.instantiate_zeros(ct) for ct in new_ct_carry + ct_xs])

  result = pe.trace_to_jaxpr(transposed, [*ires_avals, *ct_consts_avals, *carry_avals,
                                          *nz_ys_avals, *eres_avals])
  _transpose_cache[key] = result
  return result


def _scan_transpose(cts, *args, reverse, length, jaxpr, num_consts, num_carry, linear,
                    unroll, _split_transpose):
  """A scan in the opposite direction of the transposed body (as JAX's
  `_scan_transpose`). The consts split into non-linear ones (residuals,
  passed as consts) and linear ones, whose cotangents are summed over the
  iterations in extra carries starting at zero; the xs split into linear
  ones, whose cotangents are the ys of the transposed scan, and non-linear
  ones (residuals, passed as xs). The carry is linear: its cotangent is the
  transposed scan's carry."""
  consts, init, xs = _split(args, [num_consts, num_carry])
  consts_lin = tuple(ad.is_undefined_primal(c) for c in consts)
  xs_lin = tuple(ad.is_undefined_primal(x) for x in xs)
  ct_carry, ct_ys = _split(cts, [num_carry])
  ct_ys_zero = tuple(isinstance(ct, ad.Zero) for ct in ct_ys)
  body, hoisted = _closed(_transpose_body(jaxpr, num_consts, num_carry, consts_lin,
                                          xs_lin, ct_ys_zero))
  ires = [c for c, lin in zip(consts, consts_lin) if not lin]
  eres = [x for x, lin in zip(xs, xs_lin) if not lin]
  ct_consts = [ad.zeros_like_aval(c.aval) for c, lin in zip(consts, consts_lin) if lin]
  ct_carry = [ad.instantiate_zeros(ct) for ct in ct_carry]
  ct_ys = [ct for ct in ct_ys if not isinstance(ct, ad.Zero)]
  params = dict(reverse=not reverse, length=length, unroll=unroll,
                _split_transpose=_split_transpose)
  outs = _bind_scan(params, body, hoisted, ires, [*ct_consts, *ct_carry], [*ct_ys, *eres],
                    [False] * len(ires) + [True] * (len(ct_consts) + num_carry + len(ct_ys))
                    + [False] * len(eres))
  ct_consts, ct_init, ct_xs = _split(outs, [len(ct_consts), num_carry])
  ct_consts, ct_xs = iter(ct_consts), iter(ct_xs)
  return ([next(ct_consts) if lin else None for lin in consts_lin]
          + [ct if ad.is_undefined_primal(x) else None for x, ct in zip(init, ct_init)]
          + [next(ct_xs) if lin else None for lin in xs_lin])


ad.deftranspose(scan_p, _scan_transpose)


# --- batching ----------------------------------------------------------------------

def _scan_batch(axis_data, args, dims, *, jaxpr, num_consts, num_carry, linear, **params):
  """A scan of the batched body. Batched consts and carries have their batch
  axis first; batched xs and ys have it second (the scan axis stays first).
  The batched carries are a fixpoint: those batched initially, and those the
  body batches from the others (their init is then broadcast)."""
  num_ys = len(jaxpr.out_avals) - num_carry
  batched = [d is not batching.not_mapped for d in dims]
  const_b, init_b, xs_b = _split(batched, [num_consts, num_carry])
  carry_b = init_b
  for _ in range(1 + num_carry):
    body, out_b = batching.batch_jaxpr(jaxpr, axis_data, const_b + carry_b + xs_b,
                                       instantiate=carry_b + [False] * num_ys)
    if out_b[:num_carry] == carry_b:
      break
    carry_b = [a or b for a, b in zip(carry_b, out_b[:num_carry])]
  body, hoisted = _closed(body)
  consts, init, xs = _split(args, [num_consts, num_carry])
  const_d, init_d, xs_d = _split(dims, [num_consts, num_carry])
  consts = [x if d is batching.not_mapped else batching.moveaxis(x, d, 0)
            for x, d in zip(consts, const_d)]
  init = [batching.bdim_at_front(x, d, axis_data.size) if b else x
          for x, d, b in zip(init, init_d, carry_b)]
  xs = [x if d is batching.not_mapped else batching.moveaxis(x, d, 1)
        for x, d in zip(xs, xs_d)]
  outs = _bind_scan(params, body, hoisted, consts, init, xs, linear)
  return outs, ([0 if b else batching.not_mapped for b in carry_b]
                + [1 if b else batching.not_mapped for b in out_b[num_carry:]])


batching.axis_primitive_batchers[scan_p] = _scan_batch


# --- lax.scan ----------------------------------------------------------------------

def _stack(arrays):
  return shapes.concatenate([shapes.expand_dims(a, (0,)) for a in arrays], 0)


def scan(f, init, xs=None, length=None, reverse=False, unroll=1, _split_transpose=False):
  """Scans `f` over the leading axes of `xs`, carrying state: as

      carry = init; ys = []
      for x in xs:               # reversed(xs) when `reverse`
        carry, y = f(carry, x)
        ys.append(y)
      return carry, stack(ys)    # ys in the order of xs

  with pytrees for `init` (the carry), `xs` and the ys (`xs=None` with
  `length` scans over nothing). `f` is traced once; the carry it returns
  must have the structure and types of `init`. `unroll` (an int, or a bool:
  True unrolls fully) does not change the results.
  """
  if not callable(f):
    raise TypeError("lax.scan: f argument should be a callable.")
  xs_flat, xs_tree = tree_util.tree_flatten(xs)
  try:
    lengths = [x.shape[0] for x in xs_flat]
  except AttributeError:
    raise ValueError("scan got value with no leading axis to scan over: {}.".format(
        ', '.join(str(x) for x in xs_flat if not hasattr(x, 'shape')))) from None
  if length is not None:
    try:
      length = int(length)
    except ConcretizationTypeError:
      raise ConcretizationTypeError(
          length, "The `length` argument to `scan` expects a concrete `int` value. For "
          "scan-like iteration with a dynamic length, use `while_loop` or "
          "`fori_loop`.") from None
    if not all(length == n for n in lengths):
      raise ValueError(f"scan got `length` argument of {length} which disagrees with "
                       f"leading axis sizes {lengths}.")
  else:
    if len(set(lengths)) > 1:
      raise ValueError("scan got values with different leading axis sizes: "
                       f"{', '.join(str(n) for n in lengths)}.")
    if not lengths:
      raise ValueError("scan got no values to scan over and `length` not provided.")
    length = lengths[0]

  if config.jax_disable_jit:
    if length == 0:
      raise ValueError("zero-length scan is not supported in disable_jit() mode because "
                       "the output type is unknown.")
    carry, ys = init, []
    for i in (reversed(range(length)) if reverse else range(length)):
      x = [indexing.index_in_dim(x, i, keepdims=False) for x in xs_flat]
      carry, y = f(carry, tree_util.tree_unflatten(xs_tree, x))
      ys.append(y)
    return carry, tree_util.tree_map(lambda *y: _stack(y), *(ys[::-1] if reverse else ys))

  x_avals = [core.get_aval(x).update(shape=core.get_aval(x).shape[1:]) for x in xs_flat]

  def trace_body(init):
    init_flat = tree_util.tree_leaves(init)
    in_tree = tree_util.tree_structure((init, xs))
    carry_avals = [core.get_aval(c) for c in init_flat]
    jaxpr, consts, out_tree = initial_style_jaxpr(f, in_tree, [*carry_avals, *x_avals])
    children = tree_util.treedef_children(out_tree)
    if len(children) != 2:
      raise TypeError("scan body output must be a pair, got {}.".format(
          tree_util.tree_unflatten(out_tree, jaxpr.out_avals)))
    carry_out = jaxpr.out_avals[:children[0].num_leaves]
    return init_flat, carry_avals, carry_out, jaxpr, consts, out_tree, children

  init_flat, carry_avals, carry_out, *rest = trace_body(init)
  init_flat, changed = promote_weak_typed_inputs(init_flat, carry_avals, carry_out)
  if changed:
    init = tree_util.tree_unflatten(tree_util.tree_structure(init), init_flat)
    init_flat, carry_avals, carry_out, *rest = trace_body(init)
  jaxpr, consts, out_tree, children = rest
  check_carry_type('scan body', f, init, children[0], carry_out)

  if isinstance(unroll, core.Tracer):
    raise ConcretizationTypeError(
        unroll, "The `unroll` argument to `scan` expects a concrete `int` or `bool` value.")
  if isinstance(unroll, (bool, np.bool_)):
    unroll = max(length, 1) if unroll else 1
  unroll = int(unroll)
  if unroll < 0:
    raise ValueError("`unroll` must be a `bool` or a non-negative `int`.")
  operands = [*consts, *init_flat, *xs_flat]
  outs = scan_p.bind(*operands, reverse=bool(reverse), length=length, jaxpr=jaxpr,
                     num_consts=len(consts), num_carry=len(init_flat),
                     linear=(False,) * len(operands), unroll=unroll,
                     _split_transpose=bool(_split_transpose))
  return tree_util.tree_unflatten(out_tree, outs)


# --- fori_loop -----------------------------------------------------------------------

def _concrete_int(x):
  """`int(x)` if `x` is concrete (a value, or a tracer whose trace knows its
  value), else None."""
  value = x.to_concrete_value() if isinstance(x, core.Tracer) else x
  return None if value is None else int(value)


def fori_loop(lower, upper, body_fun, init_val, *, unroll=None):
  """`for i in range(lower, upper): init_val = body_fun(i, init_val)`;
  returns the final value (no iterations when upper <= lower).

  With concrete bounds (Python ints, or values the trace knows) the loop is
  a `scan` of `upper - lower` iterations over the carry `(i, val)`, so it
  is reverse-mode differentiable; with traced bounds it is a `while_loop`
  over `(i, upper, val)`, which is not, and `unroll` must then be None.
  """
  if not callable(body_fun):
    raise TypeError("lax.fori_loop: body_fun argument should be callable.")
  lower_dtype, upper_dtype = dtypes.dtype(lower), dtypes.dtype(upper)
  dtype = lower_dtype if lower_dtype == upper_dtype else None
  if dtype is None and all(np.issubdtype(d, np.signedinteger)
                           for d in (lower_dtype, upper_dtype)):
    lower_weak, upper_weak = dtypes.is_weakly_typed(lower), dtypes.is_weakly_typed(upper)
    if lower_weak and not upper_weak:
      dtype = upper_dtype
    elif upper_weak and not lower_weak:
      dtype = lower_dtype
  if dtype is None:
    raise TypeError("lower and upper arguments to fori_loop must have equal types, got "
                    f"{lower_dtype.name} and {upper_dtype.name}")

  lower_, upper_ = _concrete_int(lower), _concrete_int(upper)
  if lower_ is not None and upper_ is not None:
    def scan_body(carry, _):
      i, x = carry
      return (i + 1, body_fun(i, x)), None

    (_, result), _ = scan(scan_body, (lower_, init_val), None,
                          length=max(upper_ - lower_, 0),
                          unroll=False if unroll is None else unroll)
    return result
  if unroll is not None:
    raise ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are "
                     "statically known.")
  from refimpl.lax.control_flow.while_loop import while_loop
  if lower_dtype != dtype:
    lower = elementwise.convert_element_type(lower, dtype)
  if upper_dtype != dtype:
    upper = elementwise.convert_element_type(upper, dtype)

  def while_body(carry):
    i, stop, x = carry
    return elementwise.add(i, const(i, 1)), stop, body_fun(i, x)

  _, _, result = while_loop(lambda carry: elementwise.lt(carry[0], carry[1]), while_body,
                            (lower, upper, init_val))
  return result


# --- map -----------------------------------------------------------------------------

def _batch_and_remainder(xs, batch_size):
  """`xs` cut into whole batches (leaves of shape (n // b, b, ...)) and the
  remainder (the last n % b members)."""
  leaves, tree = tree_util.tree_flatten(xs)
  batched, remainder = [], []
  for leaf in leaves:
    num_batches = leaf.shape[0] // batch_size
    whole = num_batches * batch_size
    batched.append(leaf[:whole].reshape(num_batches, batch_size, *leaf.shape[1:]))
    remainder.append(leaf[whole:])
  return tree_util.tree_unflatten(tree, batched), tree_util.tree_unflatten(tree, remainder)


def map(f, xs, *, batch_size=None):  # noqa: A001 (JAX's name)
  """`stack([f(x) for x in xs])` over the leading axis of (pytree) `xs`, as
  a `scan`. With `batch_size`, the scan runs over batches of that many
  members, each mapped with `vmap`, and the remainder (when the axis is not
  a multiple of `batch_size`) is mapped with `vmap` separately."""
  if batch_size is not None:
    from refimpl.vectorize import vmap
    scan_xs, remainder_xs = _batch_and_remainder(xs, batch_size)
    _, scan_ys = scan(lambda _, x: ((), vmap(f)(x)), (), scan_xs)
    remainder_ys = vmap(f)(remainder_xs)
    return tree_util.tree_map(
        lambda x, y: shapes.concatenate([x.reshape(x.shape[0] * x.shape[1], *x.shape[2:]), y], 0),
        scan_ys, remainder_ys)
  _, ys = scan(lambda _, x: ((), f(x)), (), xs)
  return ys


# --- associative_scan ---------------------------------------------------------------

def associative_scan(fn, elems, reverse=False, axis=0):
  """The running combination of `elems` (a pytree of arrays of equal length
  along `axis`) by the associative `fn`: element k of the result is
  `fn(...fn(fn(e0, e1), e2)..., ek)` (from the end when `reverse`).

  `fn(a, b)` takes and returns pytrees like `elems` and must apply
  elementwise along `axis`. It is evaluated by JAX's parallel prefix
  algorithm (Blelloch 1990): combine adjacent pairs, scan those pairs
  recursively (giving the odd-indexed results), combine them with the
  remaining elements (the even-indexed results), and interleave.
  """
  if not callable(fn):
    raise TypeError("lax.associative_scan: fn argument should be callable.")
  elems_flat, tree = tree_util.tree_flatten(elems)
  axis = shapes.canonicalize_axis(axis, core.get_aval(elems_flat[0]).ndim)
  if reverse:
    elems_flat = [shapes.rev(e, (axis,)) for e in elems_flat]

  def combine(a_flat, b_flat):
    c = fn(tree_util.tree_unflatten(tree, a_flat), tree_util.tree_unflatten(tree, b_flat))
    return tree_util.tree_leaves(c)

  num_elems = core.get_aval(elems_flat[0]).shape[axis]
  if not all(core.get_aval(e).shape[axis] == num_elems for e in elems_flat[1:]):
    raise ValueError('Array inputs to associative_scan must have the same first dimension. '
                     f'(saw: {[core.get_aval(e).shape for e in elems_flat]})')

  def slice_(e, start, stop, stride=1):
    return indexing.slice_in_dim(e, start, stop, stride=stride, axis=axis)

  def prefix_scan(elems):
    n = core.get_aval(elems[0]).shape[axis]
    if n < 2:
      return elems
    odd = prefix_scan(combine([slice_(e, 0, -1, 2) for e in elems],
                              [slice_(e, 1, None, 2) for e in elems]))
    if n % 2 == 0:
      even = combine([slice_(e, 0, -1) for e in odd], [slice_(e, 2, None, 2) for e in elems])
    else:
      even = combine(odd, [slice_(e, 2, None, 2) for e in elems])
    even = [shapes.concatenate([slice_(e, 0, 1), r], axis) for e, r in zip(elems, even)]
    return [_interleave(a, b, axis) for a, b in zip(even, odd)]

  scans = prefix_scan(elems_flat)
  if reverse:
    scans = [shapes.rev(s, (axis,)) for s in scans]
  return tree_util.tree_unflatten(tree, scans)


def _interleave(a, b, axis):
  """a[0], b[0], a[1], b[1], ... along `axis` (`a` as long as `b` or one
  longer): each padded with zeros in the other's places, then added (or'ed,
  for booleans)."""
  a_aval, b_aval = core.get_aval(a), core.get_aval(b)
  same_length = a_aval.shape[axis] == b_aval.shape[axis]
  a_pad = [(0, 0, 0)] * a_aval.ndim
  b_pad = [(0, 0, 0)] * b_aval.ndim
  a_pad[axis] = (0, 1 if same_length else 0, 1)
  b_pad[axis] = (1, 0 if same_length else 1, 1)
  op = elementwise.bitwise_or if a_aval.dtype == np.bool_ else elementwise.add
  return op(shapes.pad(a, const(a, 0), a_pad), shapes.pad(b, const(b, 0), b_pad))
