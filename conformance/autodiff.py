"""Derivative checks: each differentiable primitive's rules checked numerically.

An `ADCase` names a function of float64 (or complex128) arrays and a
strategy for inputs where the function is smooth. With x64 on:

* `check_jvp`: the JVP along a random tangent `v` agrees with the central
  finite difference `(f(x + eps v) - f(x - eps v)) / (2 eps)`;
* `check_vjp`: the VJP is the transpose of the JVP,
  `<J v, u> == <v, J^T u>` for random `u`, `v`;
* `check_grads(order=2)` repeats both on the JVP (and the VJP) of the
  function, which checks the rules' own derivatives.

Family modules (`conformance/families/<family>.py`) export their cases as
`AD_CASES`; `all_ad_cases()` collects them.
"""

import dataclasses
from typing import Callable

import numpy as np

import refimpl
from refimpl import tree_util
from conformance.cases import (OBSERVED_PRIMITIVES, family_module, family_names,
                               program_primitives, run_jitted)

__all__ = ["ADCase", "all_ad_cases", "check_jvp", "check_vjp", "check_grads",
           "run_ad_case", "case_primitives", "check_backend_derivatives"]

EPS = 1e-4
RTOL = ATOL = 1e-5   # for float64 central differences with EPS


@dataclasses.dataclass(frozen=True)
class ADCase:
  """A function whose derivatives are checked on generated inputs.

  `inputs()` returns a strategy of `(args, kwargs)`: args are float64 or
  complex128 NumPy arrays (the differentiated inputs), kwargs static Python
  values. `modes` is a subset of ("fwd", "rev"); `order` 1 or 2.
  `primitives` names the primitives whose differentiation rules the case
  exercises, those only reached under another transformation included (a
  collective's under vmap, `add_any` in derivative programs): what the
  rule-coverage tests count (tests/test_conformance_autodiff.py).
  """

  name: str
  fn: Callable
  inputs: Callable
  primitives: tuple = ()
  modes: tuple = ("fwd", "rev")
  order: int = 1
  rtol: float | None = None
  atol: float | None = None
  eps: float | None = None


def _rng(args):
  """A generator seeded by the inputs, so a failure reproduces."""
  data = b"".join(np.ascontiguousarray(a).tobytes() for a in tree_util.tree_leaves(args))
  return np.random.default_rng(list(data[:64]) or [0])


def _random_like(rng, x):
  x = np.asarray(x)
  if np.iscomplexobj(x):
    return rng.standard_normal(x.shape) + 1j * rng.standard_normal(x.shape)
  return rng.standard_normal(x.shape).astype(x.dtype)


def _inner(xs, ys):
  """The real inner product `Re(sum(conj(x) * y))` of two lists of arrays."""
  return sum(float(np.real(np.vdot(np.asarray(x), np.asarray(y)))) for x, y in zip(xs, ys))


def _assert_close(actual, expected, rtol, atol, what):
  for a, e in zip(tree_util.tree_leaves(actual), tree_util.tree_leaves(expected)):
    a, e = np.asarray(a), np.asarray(e)
    assert a.shape == e.shape, f"{what}: shape {a.shape}, expected {e.shape}"
    np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, err_msg=what)


def _numerical_jvp(fn, args, tangents, eps):
  plus = fn(*[a + eps * t for a, t in zip(args, tangents)])
  minus = fn(*[a - eps * t for a, t in zip(args, tangents)])
  return tree_util.tree_map(lambda p, m: (np.asarray(p) - np.asarray(m)) / (2 * eps),
                            plus, minus)


def check_jvp(fn, args, rtol=RTOL, atol=ATOL, eps=EPS):
  """The JVP of `fn` (flat args, one output pytree) against central differences."""
  rng = _rng(args)
  tangents = [_random_like(rng, a) for a in args]
  _, out_tangent = refimpl.jvp(fn, tuple(args), tuple(tangents))
  _assert_close(out_tangent, _numerical_jvp(fn, args, tangents, eps), rtol, atol,
                "JVP vs finite differences")


def check_vjp(fn, args, rtol=RTOL, atol=ATOL, eps=EPS, numerical=False):
  """The VJP of `fn` is the transpose of its JVP: `<J v, u> == <v, w>` with
  `w = conj(vjp(conj(u)))`, for random `u` and `v` (JAX's convention for
  complex cotangents; for real values `w` is just `J^T u`). With
  `numerical`, `J v` comes from central differences (for functions that
  only have reverse-mode rules)."""
  rng = _rng(args)
  tangents = [_random_like(rng, a) for a in args]
  if numerical:
    out = fn(*args)
    out_tangent = _numerical_jvp(fn, args, tangents, eps)
  else:
    out, out_tangent = refimpl.jvp(fn, tuple(args), tuple(tangents))
  out_leaves, out_tree = tree_util.tree_flatten(out)
  cts = [_random_like(rng, o) for o in out_leaves]
  _, vjp_fun = refimpl.vjp(fn, *args)
  in_cts = vjp_fun(tree_util.tree_unflatten(out_tree, [np.conj(c) for c in cts]))
  in_cts = [np.conj(np.asarray(c)) for c in tree_util.tree_leaves(in_cts)]
  lhs = _inner(tree_util.tree_leaves(out_tangent), cts)
  rhs = _inner(tangents, in_cts)
  scale = max(1.0, abs(lhs), abs(rhs))
  assert abs(lhs - rhs) <= atol + rtol * scale, \
      f"<J v, u> = {lhs} but <v, J^T u> = {rhs}: the VJP is not the JVP's transpose"


def check_grads(fn, args, order=1, modes=("fwd", "rev"), rtol=RTOL, atol=ATOL, eps=EPS):
  """Checks `fn`'s derivatives up to `order` in the given modes (x64 on)."""
  with refimpl.enable_x64():
    args = [np.asarray(a) for a in args]
    if "fwd" in modes:
      check_jvp(fn, args, rtol, atol, eps)
    if "rev" in modes:
      check_vjp(fn, args, rtol, atol, eps, numerical="fwd" not in modes)
    if order > 1:
      rng = np.random.default_rng(1)
      tangents = [_random_like(rng, a) for a in args]
      if "fwd" in modes:
        check_grads(lambda *xs: refimpl.jvp(fn, xs, tuple(tangents))[1], args,
                    order - 1, modes, rtol, atol, eps)
      if "rev" in modes:
        out = fn(*args)
        cts = tree_util.tree_map(lambda o: _random_like(rng, o), out)
        check_grads(lambda *xs: refimpl.vjp(fn, *xs)[1](cts), args,
                    order - 1, modes, rtol, atol, eps)


def ad_case_key(case):
  """The key of a derivative case in OBSERVED_PRIMITIVES."""
  return f"{case.name} (derivatives)"


def case_primitives(case, args, kwargs):
  """The primitives of the derivative case's function at an input (x64 on):
  those whose differentiation rules its checks exercise."""
  with refimpl.enable_x64():
    traced = refimpl.jit(lambda *a: case.fn(*a, **kwargs)).trace(*[np.asarray(a) for a in args])
  return program_primitives(traced.jaxpr.jaxpr)


def run_ad_case(case, args, kwargs):
  """Runs `check_grads` for one drawn input of `case`, recording the
  primitives of its function (whose derivative rules are checked)."""
  fn = lambda *a: case.fn(*a, **kwargs)
  OBSERVED_PRIMITIVES[ad_case_key(case)] |= case_primitives(case, args, kwargs)
  check_grads(fn, args, case.order, case.modes,
              rtol=case.rtol or RTOL, atol=case.atol or ATOL, eps=case.eps or EPS)


def check_backend_derivatives(case, backend, args, kwargs):
  """The jit of the case's JVP ("fwd" mode) and VJP ("rev") on `backend`
  agree with the reference backend's, at one drawn input (x64 on)."""
  fn = lambda *a: case.fn(*a, **kwargs)
  rtol, atol = case.rtol or RTOL, case.atol or ATOL
  with refimpl.enable_x64():
    args = [np.asarray(a) for a in args]
    rng = _rng(args)
    programs = []
    if "fwd" in case.modes:
      tangents = tuple(_random_like(rng, a) for a in args)
      programs.append(("JVP", lambda *xs: refimpl.jvp(fn, xs, tangents)))
    if "rev" in case.modes:
      cts = tree_util.tree_map(lambda o: _random_like(rng, o), fn(*args))
      programs.append(("VJP", lambda *xs: refimpl.vjp(fn, *xs)[1](cts)))
    for what, program in programs:
      actual = run_jitted(program, backend, args, ad_case_key(case))
      expected = refimpl.jit(program, backend="reference")(*args)
      _assert_close(actual, expected, rtol, atol, f"the {what} on {backend}")


def all_ad_cases():
  """Every `AD_CASES` entry of the family modules in `conformance.families`."""
  return [case for name in family_names() for case in getattr(family_module(name), "AD_CASES", [])]
