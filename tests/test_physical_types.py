"""Physical types: a backend's compiled program takes and returns arrays of
standard dtypes only. A key array `key<fry>[*S]` crosses the boundary as its
data, `uint32[*S, 2]`, and a float0 array as `bool` zeros of its shape; the
values users see are unchanged (bit for bit against JAX 0.10.2's)."""

import contextlib
import json
import pathlib

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from conformance.strategies import shapes
from refimpl import backends, core, dtypes, lax, random
from refimpl.config import config

GOLDEN = json.loads((pathlib.Path(__file__).parent / "data" / "prng.json").read_text())
PARTITIONABLE = GOLDEN["threefry_partitionable=True (default)"]
KEY = random.key_dtype()


def golden(name):
  entry = PARTITIONABLE[name]
  return np.array(entry["data"], entry["dtype"]).reshape(entry["shape"])


def key_data(keys):
  return np.asarray(random.key_data(keys))


# --- physical avals and data ------------------------------------------------------

@pytest.mark.parametrize("aval, physical", [
    (core.ShapedArray((3,), KEY), core.ShapedArray((3, 2), np.uint32)),
    (core.ShapedArray((), KEY), core.ShapedArray((2,), np.uint32)),
    (core.ShapedArray((0, 4), KEY), core.ShapedArray((0, 4, 2), np.uint32)),
    (core.ShapedArray((2, 3), dtypes.float0), core.ShapedArray((2, 3), np.bool_)),
])
def test_physical_aval_of_keys_and_float0(aval, physical):
  assert core.physical_aval(aval) == physical


@given(shapes(), st.sampled_from([np.float32, np.int32, np.uint32, np.bool_, np.complex64,
                                  dtypes.bfloat16]), st.booleans())
def test_physical_aval_of_a_standard_dtype_is_the_aval_itself(shape, dtype, weak):
  aval = core.ShapedArray(shape, dtype, weak_type=weak)
  assert core.physical_aval(aval) is aval


@given(shapes(max_dims=2), st.integers(0, 2 ** 32 - 1))
def test_key_data_round_trips_through_the_physical_form(shape, seed):
  data = np.random.default_rng(seed).integers(0, 2 ** 32, (*shape, 2), dtype=np.uint32)
  aval = core.ShapedArray(shape, KEY)
  elements = core.from_physical(data, aval)
  assert elements.shape == shape and elements.dtype == KEY.numpy_dtype
  np.testing.assert_array_equal(core.to_physical(elements, aval), data)
  keys = random.wrap_key_data(data)
  np.testing.assert_array_equal(core.to_physical(core.to_numpy(keys), aval), data)


def test_float0_is_physically_false_bools():
  aval = core.ShapedArray((2, 3), dtypes.float0)
  physical = core.to_physical(np.zeros((2, 3), dtypes.float0), aval)
  assert physical.dtype == np.bool_ and physical.shape == (2, 3) and not physical.any()
  back = core.from_physical(physical, aval)
  assert back.dtype == dtypes.float0 and back.shape == (2, 3)


def test_programs_without_keys_or_float0_are_not_wrapped():
  def program(*args):
    return list(args)
  avals = [core.ShapedArray((3,), np.float32), core.ShapedArray((), np.int32, weak_type=True)]
  assert core.from_physical_program(program, avals, avals) is program
  assert core.to_physical_program(program, avals, avals) is program


def test_the_reference_backend_takes_and_returns_physical_keys():
  closed = jax.make_jaxpr(lambda k: random.split(k, 3))(random.key(0))
  assert not closed.consts
  [out] = backends.compile_reference(closed)(golden("PRNGKey(0)"))
  assert out.dtype == np.uint32 and out.shape == (3, 2)
  np.testing.assert_array_equal(out, golden("split(PRNGKey(0), 3)"))


# --- what a backend sees -------------------------------------------------------------

CALLS = []
"""The calls (jaxpr, arguments, results) of the recording backend's programs."""


def _compile_recording(closed):
  """The reference backend's program for `closed`, recording its calls."""
  run = backends.compile_reference(closed)

  def program(*args):
    results = run(*args)
    CALLS.append((closed, args, results))
    return results
  return program


backends.register_backend("physical-types-recording", _compile_recording)


@contextlib.contextmanager
def recorded_calls():
  """Selects the recording backend within the block; yields its calls."""
  CALLS.clear()
  with config.option("backend", "physical-types-recording"):
    yield CALLS


@pytest.fixture
def recording():
  with recorded_calls() as calls:
    yield calls


def expected_physical(aval):
  """(shape, dtype) of the array a backend exchanges for a value of `aval`."""
  if aval.dtype == KEY:
    return (*aval.shape, 2), np.dtype(np.uint32)
  if aval.dtype == dtypes.float0:
    return aval.shape, np.dtype(np.bool_)
  return aval.shape, aval.dtype


def assert_all_physical(calls):
  """Every array that the backend received and returned is a NumPy array of
  the physical type of its jaxpr variable: none is structured."""
  assert calls
  for closed, args, results in calls:
    for values, avals in ((args, closed.in_avals), (results, closed.out_avals)):
      assert len(values) == len(avals)
      for value, aval in zip(values, avals):
        assert isinstance(value, np.ndarray) and value.dtype.fields is None, (aval, value)
        assert (value.shape, value.dtype) == expected_physical(aval), (aval, value)


def key_avals_seen(calls):
  return sum(a.dtype == KEY for c, _, _ in calls for a in c.in_avals + c.out_avals)


def test_a_key_passes_as_its_data(recording):
  k = random.key(42)
  out = jax.jit(lambda k: k)(k)
  assert_all_physical(recording)
  [(_, [arg], [result])] = recording
  np.testing.assert_array_equal(arg, golden("PRNGKey(42)"))
  np.testing.assert_array_equal(result, golden("PRNGKey(42)"))
  assert out.dtype == KEY
  np.testing.assert_array_equal(key_data(out), golden("PRNGKey(42)"))


@pytest.mark.parametrize("fun, seed, expected", [
    (lambda k: random.split(k), 0, "split(PRNGKey(0))"),
    (lambda k: random.split(k, 3), 0, "split(PRNGKey(0), 3)"),
    (lambda k: random.fold_in(k, 7), 0, "fold_in(PRNGKey(0), 7)"),
    (lambda k: random.bits(k, (8,)), 1, "bits(PRNGKey(1), (8,), uint32)"),
    (lambda k: random.normal(k, (5,)), 1, "normal(PRNGKey(1), (5,))"),
    (lambda k: random.uniform(k, (5,)), 1, "uniform(PRNGKey(1), (5,))"),
    (lambda k: random.randint(k, (6,), 0, 10), 1, "randint(PRNGKey(1), (6,), 0, 10)"),
])
@pytest.mark.parametrize("typed", [True, False])
def test_jitted_key_functions_see_physical_keys_and_give_jax_values(
    recording, fun, seed, expected, typed):
  k = random.key(seed) if typed else random.PRNGKey(seed)
  out = jax.jit(fun)(k)
  assert_all_physical(recording)
  if typed:
    assert key_avals_seen(recording)
  if dtypes.issubdtype(out.dtype, dtypes.prng_key):
    out = random.key_data(out)
  np.testing.assert_array_equal(np.asarray(out), golden(expected))


def test_wrapping_and_unwrapping(recording):
  data = golden("split(PRNGKey(0), 3)")
  keys = jax.jit(random.wrap_key_data)(data)
  unwrapped = jax.jit(random.key_data)(keys)
  assert_all_physical(recording)
  [(_, [wrap_in], [wrap_out]), (_, [unwrap_in], [unwrap_out])] = recording
  for physical in (wrap_in, wrap_out, unwrap_in, unwrap_out):
    np.testing.assert_array_equal(physical, data)
  assert keys.dtype == KEY and keys.shape == (3,)
  np.testing.assert_array_equal(np.asarray(unwrapped), data)


def test_keys_with_other_inputs_and_outputs(recording):
  def f(x, k, n):
    k1, k2 = random.split(random.fold_in(k, n))
    return x * 2, k1, random.bits(k2, (3,))
  args = (jnp.arange(3.0), random.key(0), jnp.uint32(5))
  x, k1, bits = jax.jit(f)(*args)
  assert_all_physical(recording)
  with jax.disable_jit():
    x_eager, k1_eager, bits_eager = f(*args)
  np.testing.assert_array_equal(np.asarray(x), np.asarray(x_eager))
  np.testing.assert_array_equal(key_data(k1), key_data(k1_eager))
  np.testing.assert_array_equal(np.asarray(bits), np.asarray(bits_eager))


def test_a_closed_over_key_is_a_physical_input(recording):
  k = random.split(random.key(0), 3)
  out = jax.jit(lambda i: k[i])(1)
  assert_all_physical(recording)
  assert key_avals_seen(recording)
  np.testing.assert_array_equal(key_data(out), golden("split(PRNGKey(0), 3)")[1])


@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 4), st.integers(0, 3))
def test_vmapped_key_programs_see_batched_physical_keys(seed, n, parts):
  keys = random.split(random.key(seed), n)

  def f(k):
    return random.split(k, parts), random.bits(random.fold_in(k, 3), (2,))

  with jax.disable_jit():
    expected_keys, expected_bits = zip(*(f(k) for k in keys))
  for g in (jax.jit(jax.vmap(f)), jax.vmap(jax.jit(f))):
    with recorded_calls() as calls:
      split, bits = g(keys)
    assert_all_physical(calls)
    assert any(a.dtype == KEY and a.shape == (n,) for c, _, _ in calls for a in c.in_avals)
    np.testing.assert_array_equal(key_data(split), np.stack([key_data(k) for k in expected_keys]))
    np.testing.assert_array_equal(np.asarray(bits), np.stack(expected_bits))


def test_keys_through_a_scan(recording):
  def f(k):
    def step(k, _):
      k, sub = random.split(k)
      return k, random.bits(sub, (2,))
    return lax.scan(step, k, None, length=3)

  k, bits = jax.jit(f)(random.key(7))
  assert_all_physical(recording)
  with jax.disable_jit():
    k_eager, bits_eager = f(random.key(7))
  np.testing.assert_array_equal(key_data(k), key_data(k_eager))
  np.testing.assert_array_equal(np.asarray(bits), np.asarray(bits_eager))


def _compile_structured(closed):
  """A wrong backend: its programs return key data as structured arrays."""
  return lambda *args: [core.from_physical(x, a) for x, a in zip(args, closed.in_avals)]


backends.register_backend("physical-types-structured", _compile_structured)


def test_a_backend_returning_structured_keys_is_an_error():
  with pytest.raises(TypeError, match=r"physical data of key<fry> arrays is uint32\[\.\.\., 2\]"):
    jax.jit(lambda k: k, backend="physical-types-structured")(random.key(0))


# --- float0 ------------------------------------------------------------------

def test_a_float0_gradient_leaves_the_backend_as_false_bools(recording):
  g = jax.jit(jax.grad(lambda x: (x * 2).astype(np.float32), allow_int=True))(3)
  assert_all_physical(recording)
  [(_, _, [result])] = recording
  assert result.dtype == np.bool_ and result.shape == () and not result
  assert g.dtype == dtypes.float0 and g.shape == ()


def test_a_float0_input_enters_the_backend_as_false_bools(recording):
  t = jax.jit(lambda t: t)(np.zeros((2, 3), dtypes.float0))
  assert_all_physical(recording)
  [(_, [arg], [result])] = recording
  assert arg.dtype == np.bool_ and arg.shape == (2, 3) and not arg.any()
  assert t.dtype == dtypes.float0 and t.shape == (2, 3)


def test_float0_jvp_outputs(recording):
  def f(x):
    return jax.jvp(lambda y: y * 2, (x,), (np.zeros((), dtypes.float0),))
  y, t = jax.jit(f)(jnp.int32(3))
  assert_all_physical(recording)
  assert int(y) == 6 and t.dtype == dtypes.float0 and t.shape == ()
