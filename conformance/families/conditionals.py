"""Cases for refimpl/lax/control_flow/conditionals.py: `lax.cond`,
`lax.switch` and `jnp.piecewise`, against their Python definitions
(`true_fun(x) if pred else false_fun(x)`, `branches[clamp(0, i, n - 1)](x)`)
and `np.piecewise`.

Predicates and indices are array arguments (or elements of one), so the vmap
property batches them: a batched predicate or index turns the cond into a
`select_n` over all branches, which must give each member's own branch.
Derivative cases keep the data away from the branch boundaries, where the
functions are smooth.
"""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import refimpl.numpy as jnp
from refimpl import lax
from conformance import strategies as S
from conformance.autodiff import ADCase
from conformance.cases import Case


def _true(x):
  return jnp.sin(x) * 2


def _false(x):
  return jnp.cos(x) - x


def _cond(pred, x):
  return lax.cond(pred, _true, _false, x)


def _cond_np(pred, x):
  return np.sin(x) * 2 if pred else np.cos(x) - x


def _cond_on_data(x):
  """The predicate is an element of the data (members of a batch differ)."""
  return lax.cond(x.ravel()[0] > 0, _true, _false, x)


def _cond_on_data_np(x):
  return _cond_np(x.ravel()[0] > 0, x)


_BRANCHES = [lambda x: x * 3, jnp.sin, lambda x: x - 1, jnp.exp]
_BRANCHES_NP = [lambda x: x * 3, np.sin, lambda x: x - 1, np.exp]


def _switch(index, x):
  """`index` is an int32 vector whose first element picks the branch."""
  return lax.switch(index[0], _BRANCHES, x)


def _switch_np(index, x):
  return _BRANCHES_NP[int(np.clip(index[0], 0, len(_BRANCHES_NP) - 1))](x)


def _pytree(pred, x, y):
  """Pytree operands and outputs, a closed-over value, and an output passed through."""
  scale = jnp.float32(2)
  return lax.cond(pred,
                  lambda d: {"sum": d["a"] + d["b"] * scale, "pair": (d["a"], d["b"])},
                  lambda d: {"sum": d["a"] - d["b"], "pair": (d["a"], -d["b"])},
                  {"a": x, "b": y})


def _pytree_np(pred, x, y):
  if pred:
    return {"sum": x + y * 2, "pair": (x, y)}
  return {"sum": x - y, "pair": (x, -y)}


def _piecewise(x):
  return jnp.piecewise(x, [x < -1, x > 1], [jnp.sin, lambda x: x * x, lambda x: -x])


def _piecewise_np(x):
  return np.piecewise(x, [x < -1, x > 1], [np.sin, lambda x: x * x, lambda x: -x])


def _piecewise_consts(x):
  return jnp.piecewise(x, [x < 0, x > 1], [-1.5, lambda x: x * 2])


def _piecewise_consts_np(x):
  return np.piecewise(x, [x < 0, x > 1], [-1.5, lambda x: x * 2])


# --- inputs ----------------------------------------------------------------------------------

def _floats(shape):
  return hnp.arrays(np.float32, shape, elements=S.bounded_elements(np.float32, -3, 3))


def _nonempty_shapes():
  return S.shapes(min_dims=1, min_side=1)


@st.composite
def _pred_and_array(draw):
  pred = draw(st.sampled_from([np.asarray(True), np.asarray(False),
                               np.asarray(0, np.int32), np.asarray(-2, np.int32),
                               np.asarray(0.5, np.float32)]))
  return (pred, draw(_floats(draw(S.shapes())))), {}


@st.composite
def _index_and_array(draw):
  index = draw(hnp.arrays(np.int32, draw(st.integers(1, 3)), elements=st.integers(-2, 6)))
  return (index, draw(_floats(draw(S.shapes())))), {}


@st.composite
def _pred_and_two_arrays(draw):
  shape = draw(S.shapes())
  return (np.asarray(draw(st.booleans())), draw(_floats(shape)), draw(_floats(shape))), {}


def _array():
  return st.builds(lambda x: ((x,), {}), _nonempty_shapes().flatmap(_floats))


CASES = [
    Case("lax.cond", _cond, _pred_and_array, _cond_np),
    Case("lax.cond (predicate from data)", _cond_on_data, _array, _cond_on_data_np),
    Case("lax.cond (pytrees)", _pytree, _pred_and_two_arrays, _pytree_np),
    Case("lax.switch", _switch, _index_and_array, _switch_np, rtol=1e-6),
    Case("jnp.piecewise", _piecewise, _array, _piecewise_np),
    Case("jnp.piecewise (constants)", _piecewise_consts, _array, _piecewise_consts_np),
]


# --- derivatives -------------------------------------------------------------------------------

def _away_from_zero(x):
  """`x` moved 0.25 away from 0, so a predicate `x > 0` is stable under
  the finite differences."""
  return np.where(x >= 0, x + 0.25, x - 0.25)


def _ad_inputs(n=1):
  return lambda: S.bounded_case_inputs([np.float64], n, low=-2.0, high=2.0).map(
      lambda ak: (tuple(_away_from_zero(a) for a in ak[0]), ak[1]))


def _ad_array_inputs():
  return st.builds(lambda x: ((_away_from_zero(x),), {}), _nonempty_shapes().flatmap(
      lambda shape: hnp.arrays(np.float64, shape, elements=st.floats(-2, 2))))


def _ad_cond_two(x, y):
  """Two operands, one with a zero tangent in the false branch."""
  return lax.cond(jnp.max(x, initial=-1.0) > 0, lambda a, b: (a * b, jnp.sin(b)),
                  lambda a, b: (a + b, b * b), x, y)


def _ad_switch(x, *, index):
  return lax.switch(index, _BRANCHES, x)


def _ad_piecewise(x):
  return jnp.piecewise(x, [x < 0], [jnp.sin, lambda x: x * x])


AD_CASES = [
    ADCase("lax.cond", _cond_on_data, _ad_array_inputs, ("cond",), order=2),
    ADCase("lax.cond (two operands)", _ad_cond_two, lambda: _ad_inputs(2)(), ("cond",),
           order=2),
    ADCase("lax.switch", _ad_switch,
           lambda: _ad_inputs(1)().flatmap(
               lambda ak: st.integers(-1, 4).map(lambda i: (ak[0], {"index": i}))),
           ("cond", "clamp"), order=2),
    ADCase("jnp.piecewise", _ad_piecewise, _ad_array_inputs,
           ("jit", "select_n", "cumsum", "argmax"), order=2),
]
