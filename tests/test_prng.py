"""Tests of refimpl/prng.py: the threefry2x32 primitive and the raw-key functions,
bit for bit against JAX 0.10.2 (tests/data/prng.json) in both threefry modes,
and against the layouts the docstrings specify."""

import json
import pathlib

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
from refimpl import prng

GOLDEN = json.loads((pathlib.Path(__file__).parent / "data" / "prng.json").read_text())
MODES = {True: GOLDEN["threefry_partitionable=True (default)"],
         False: GOLDEN["threefry_partitionable=False (legacy)"]}
uint32s = st.integers(0, 2 ** 32 - 1)


def u32(*xs):
  return np.array(xs, np.uint32)


def golden(mode, name):
  entry = MODES[mode][name]
  return np.array(entry["data"], entry["dtype"]).reshape(entry["shape"])


def key(seed):
  return prng.threefry_seed(np.int32(seed))


# --- threefry2x32_p ----------------------------------------------------------------

@pytest.mark.parametrize("case", GOLDEN["threefry2x32 raw (key, count) -> out"])
def test_threefry2x32_golden(case):
  k, c = case["key"], case["count"]
  out = prng.threefry2x32_p.bind(*u32(*k), *u32(*c))
  assert [int(o) for o in out] == case["out"]
  assert all(o.dtype == np.uint32 and o.shape == () for o in out)


def test_threefry2x32_known_answer():
  """Random123's known answer for key 0, counter 0."""
  out = prng.threefry2x32_p.bind(*u32(0, 0, 0, 0))
  assert [int(o) for o in out] == [0x6B200159, 0x99BA4EFE]


@given(uint32s, uint32s, st.lists(st.tuples(uint32s, uint32s), min_size=1, max_size=6))
def test_threefry2x32_is_elementwise(k1, k2, pairs):
  """An array of counters hashes as each pair alone; scalars broadcast."""
  x1, x2 = u32(*(p[0] for p in pairs)), u32(*(p[1] for p in pairs))
  y1, y2 = prng.threefry2x32_p.bind(np.uint32(k1), np.uint32(k2), x1, x2)
  for i, (a, b) in enumerate(pairs):
    z1, z2 = prng.threefry2x32_p.bind(*u32(k1, k2, a, b))
    assert (int(y1[i]), int(y2[i])) == (int(z1), int(z2))


def test_threefry2x32_large_and_strided_operands():
  """Arrays spanning many of the rule's blocks, a transposed operand and a
  broadcast key hash as each element alone."""
  rng = np.random.default_rng(0)
  x1 = rng.integers(0, 2 ** 32, (300, 200), dtype=np.uint32)
  x2 = rng.integers(0, 2 ** 32, (200, 300), dtype=np.uint32).T
  k1 = rng.integers(0, 2 ** 32, (300, 1), dtype=np.uint32)
  y1, y2 = prng.threefry2x32_p.bind(k1, np.uint32(7), x1, x2)
  assert y1.shape == y2.shape == (300, 200)
  for i, j in [(0, 0), (123, 45), (299, 199), (150, 0)]:
    z1, z2 = prng.threefry2x32_p.bind(k1[i, 0], np.uint32(7), x1[i, j], x2[i, j])
    assert (int(y1[i, j]), int(y2[i, j])) == (int(z1), int(z2))


def test_threefry2x32_shape_rule_errors():
  with pytest.raises(TypeError, match="must have uint32 type"):
    prng.threefry2x32_p.bind(np.int32(0), np.uint32(0), np.uint32(0), np.uint32(0))
  with pytest.raises(TypeError, match="incompatible shapes"):
    prng.threefry2x32_p.bind(u32(0, 1), u32(0, 1), u32(0, 1, 2), u32(0, 1, 2))


def test_threefry2x32_empty():
  y1, y2 = prng.threefry2x32_p.bind(np.uint32(1), np.uint32(2), u32(), u32())
  assert y1.shape == y2.shape == (0,)


def test_threefry2x32_jaxpr_jit_vmap():
  f = lambda k, x: prng.threefry2x32_p.bind(k[0], k[1], x[0], x[1])
  jaxpr = str(jax.make_jaxpr(f)(u32(1, 2), u32(3, 4)))
  assert "threefry2x32 " in jaxpr, jaxpr
  keys = np.array([[1, 2], [3, 4], [5, 6]], np.uint32)
  xs = np.array([[7, 8], [9, 10], [11, 12]], np.uint32)
  batched = jax.vmap(f)(keys, xs)
  jitted = jax.jit(jax.vmap(f, in_axes=(0, None)))(keys, xs[0])
  for i in range(3):
    eager = f(keys[i], xs[i])
    assert [int(b[i]) for b in batched] == [int(e) for e in eager]
    assert [int(b[i]) for b in jitted] == [int(e) for e in f(keys[i], xs[0])]


def test_threefry2x32_has_zero_tangents():
  from refimpl.interpreters import ad
  assert prng.threefry2x32_p in ad.non_differentiable


def test_iota_2x32_shape():
  hi, lo = prng.iota_2x32_shape((2, 3))
  np.testing.assert_array_equal(np.asarray(lo), np.arange(6).reshape(2, 3))
  np.testing.assert_array_equal(np.asarray(hi), np.zeros((2, 3)))
  assert [np.asarray(x).shape for x in prng.iota_2x32_shape(())] == [(), ()]


# --- keys ------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 42, 123456789])
def test_seed_golden(mode, seed):
  with jax.threefry_partitionable(mode):
    out = key(seed)
  np.testing.assert_array_equal(np.asarray(out), golden(mode, f"PRNGKey({seed})"))
  assert out.dtype == np.uint32


def test_seed_negative_and_64_bit():
  """32-bit seeds give [0, seed mod 2**32]; 64-bit seeds (x64) both words."""
  np.testing.assert_array_equal(np.asarray(key(-1)), [0, 2 ** 32 - 1])
  with jax.enable_x64():
    np.testing.assert_array_equal(np.asarray(prng.threefry_seed(np.int64(2 ** 40 + 7))),
                                  [256, 7])
    np.testing.assert_array_equal(np.asarray(prng.threefry_seed(np.int64(-1))),
                                  [2 ** 32 - 1, 2 ** 32 - 1])


def test_seed_errors():
  with pytest.raises(TypeError, match="must be a scalar"):
    prng.threefry_seed(np.array([1, 2], np.int32))
  with pytest.raises(TypeError, match="must be an integer"):
    prng.threefry_seed(np.float32(1))


@pytest.mark.parametrize("mode", [True, False])
def test_split_fold_in_golden(mode):
  with jax.threefry_partitionable(mode):
    np.testing.assert_array_equal(np.asarray(prng.threefry_split(key(0), (2,))),
                                  golden(mode, "split(PRNGKey(0))"))
    np.testing.assert_array_equal(np.asarray(prng.threefry_split(key(0), (3,))),
                                  golden(mode, "split(PRNGKey(0), 3)"))
    np.testing.assert_array_equal(np.asarray(prng.threefry_fold_in(key(0), np.uint32(7))),
                                  golden(mode, "fold_in(PRNGKey(0), 7)"))
    np.testing.assert_array_equal(np.asarray(prng.threefry_random_bits(key(1), 32, (8,))),
                                  golden(mode, "bits(PRNGKey(1), (8,), uint32)"))


@pytest.mark.parametrize("mode", [True, False])
def test_split_shapes(mode):
  with jax.threefry_partitionable(mode):
    keys = prng.threefry_split(key(3), (2, 3))
    assert keys.shape == (2, 3, 2) and keys.dtype == np.uint32
    flat = prng.threefry_split(key(3), (6,))
    np.testing.assert_array_equal(np.asarray(keys).reshape(6, 2), np.asarray(flat))
    assert prng.threefry_split(key(3), (0,)).shape == (0, 2)


def test_split_partitionable_is_the_hash_of_positions():
  keys = np.asarray(prng.threefry_split(key(5), (4,)))
  for j in range(4):
    y = prng.threefry2x32_p.bind(*u32(0, 5, 0, j))
    assert list(keys[j]) == [int(v) for v in y]


@given(uint32s)
def test_fold_in_hashes_zero_and_data(data):
  """fold_in(key, d) is threefry_2x32(key, [0, d]): the hash of the pair (0, d)."""
  out = np.asarray(prng.threefry_fold_in(key(9), np.uint32(data)))
  y = prng.threefry2x32_p.bind(*u32(0, 9, 0, data))
  assert list(out) == [int(v) for v in y]


# --- random bits -----------------------------------------------------------------------

@pytest.mark.parametrize("mode", [True, False])
@pytest.mark.parametrize("width", [8, 16, 32, 64])
@pytest.mark.parametrize("shape", [(), (5,), (2, 3), (0,)])
def test_random_bits_shapes_dtypes(mode, width, shape):
  with jax.threefry_partitionable(mode), jax.enable_x64(width == 64):
    out = prng.threefry_random_bits(key(1), width, shape)
  assert out.shape == shape and out.dtype == np.dtype(f"uint{width}")


def test_random_bits_partitionable_layout():
  """8/16-bit values are the low bits of the 32-bit ones; the 64-bit value
  holds the hash pair (y1, y2) whose xor is the 32-bit value; elements do
  not depend on the size of the result."""
  b32 = np.asarray(prng.threefry_random_bits(key(1), 32, (7,)))
  b8 = np.asarray(prng.threefry_random_bits(key(1), 8, (7,)))
  b16 = np.asarray(prng.threefry_random_bits(key(1), 16, (7,)))
  np.testing.assert_array_equal(b8, b32.astype(np.uint8))
  np.testing.assert_array_equal(b16, b32.astype(np.uint16))
  with jax.enable_x64():
    b64 = np.asarray(prng.threefry_random_bits(key(1), 64, (7,)))
  np.testing.assert_array_equal(((b64 >> 32) ^ b64).astype(np.uint32), b32)
  np.testing.assert_array_equal(
      np.asarray(prng.threefry_random_bits(key(1), 32, (3,))), b32[:3])
  np.testing.assert_array_equal(
      np.asarray(prng.threefry_random_bits(key(1), 32, (2, 5))).ravel(),
      np.asarray(prng.threefry_random_bits(key(1), 32, (10,))))


def test_random_bits_legacy_layout():
  """Legacy: 32-bit values are threefry_2x32 of the counters 0..n-1; 8/16-bit
  ones the little-endian pieces of ceil(n*w/32) such words; 64-bit ones
  (first half << 32) | second half of 2n words."""
  with jax.threefry_partitionable(False):
    words = np.asarray(prng.threefry_2x32(key(1), np.arange(4, dtype=np.uint32)))
    np.testing.assert_array_equal(
        np.asarray(prng.threefry_random_bits(key(1), 32, (4,))), words)
    np.testing.assert_array_equal(
        np.asarray(prng.threefry_random_bits(key(1), 8, (13,))),
        words.view(np.uint8)[:13])
    np.testing.assert_array_equal(
        np.asarray(prng.threefry_random_bits(key(1), 16, (7,))),
        words.view(np.uint16)[:7])
    with jax.enable_x64():
      b64 = np.asarray(prng.threefry_random_bits(key(1), 64, (2,)))
    expected = (words[:2].astype(np.uint64) << np.uint64(32)) | words[2:].astype(np.uint64)
    np.testing.assert_array_equal(b64, expected)


def test_threefry_2x32_odd_count_pads():
  """An odd count is padded with one 0 before halving; the pad's hash is dropped."""
  out = np.asarray(prng.threefry_2x32(key(2), u32(10, 11, 12)))
  y1, y2 = prng.threefry2x32_p.bind(np.uint32(0), np.uint32(2), u32(10, 11), u32(12, 0))
  np.testing.assert_array_equal(out, np.concatenate([np.asarray(y1), np.asarray(y2)])[:3])


def test_random_bits_errors():
  with pytest.raises(TypeError, match="invalid prng key"):
    prng.threefry_random_bits(np.zeros(3, np.uint32), 32, (2,))
  with pytest.raises(TypeError, match="field width"):
    prng.threefry_random_bits(key(0), 12, (2,))
  with pytest.raises(TypeError, match="uint32 arguments"):
    prng.threefry_2x32(key(0), np.arange(3, dtype=np.int32))


@pytest.mark.parametrize("mode", [True, False])
def test_key_functions_jit_and_vmap_equal_eager(mode):
  with jax.threefry_partitionable(mode):
    k = key(11)
    split = lambda k: prng.threefry_split(k, (3,))
    bits = lambda k: prng.threefry_random_bits(k, 32, (5,))
    np.testing.assert_array_equal(np.asarray(jax.jit(split)(k)), np.asarray(split(k)))
    np.testing.assert_array_equal(np.asarray(jax.jit(bits)(k)), np.asarray(bits(k)))
    keys = split(k)
    batched = np.asarray(jax.vmap(bits)(keys))
    for i in range(3):
      np.testing.assert_array_equal(batched[i], np.asarray(bits(keys[i])))
