"""Tests of refimpl/numpy/utilities.py (type predicates, printing, I/O, block,
apply_along_axis, bit packing, windows, einsum_path) and of the narrow
ml_dtypes scalar types, isdtype and can_cast of refimpl/numpy/scalar_types.py."""

import io

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import dtypes, errors
from conformance import strategies as S

NARROW_NAMES = ["float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn",
                "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
                "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn",
                "int1", "int2", "int4", "uint1", "uint2", "uint4"]


# --- narrow dtypes ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", NARROW_NAMES)
def test_narrow_dtypes_make_arrays_cast_and_print(name):
  scalar_type = getattr(jnp, name)
  dtype = np.dtype(getattr(ml_dtypes, name))
  assert np.dtype(scalar_type) == dtype and scalar_type.dtype == dtype
  assert isinstance(dtype.type(1), scalar_type)
  zeros = jnp.zeros(3, scalar_type)
  assert zeros.dtype == dtype and not zeros.weak_type
  if name.startswith("float"):
    values = np.array([0.5, 1, 1.5, 2], np.float32)
    if name == "float8_e8m0fnu":  # powers of two only, and no zero
      values = np.array([0.5, 1, 2, 4], np.float32)
  else:
    values = np.array([0, 1, 1, 0] if name.startswith("u") else [0, -1, -1, 0], np.int8)
  converted = jnp.astype(values, scalar_type)
  assert converted.dtype == dtype
  np.testing.assert_array_equal(np.asarray(converted).astype(np.float32), values)
  np.testing.assert_array_equal(jnp.astype(converted, jnp.float32), values)
  assert repr(converted).endswith(f", dtype={name})")
  assert repr(converted).startswith("Array([")
  scalar = scalar_type(values[1])
  assert scalar.shape == () and scalar.dtype == dtype and float(scalar) == values[1]
  assert repr(scalar) == f"Array({int(values[1])}, dtype={name})"
  short = name.replace("float", "f").replace("uint", "u").replace("int", "i")
  jaxpr = jax.make_jaxpr(lambda x: jnp.astype(x, jnp.float32))(converted)
  assert f"a:{short}[4]" in str(jaxpr)


def test_narrow_types_promote_only_with_python_scalars():
  """JAX's lattice: a float8 meets a weak float (or an integer) as itself;
  another float type has no implicit promotion with it."""
  x = jnp.array([1.0, 2.0], jnp.float8_e4m3fn)
  assert (x + 1.0).dtype == dtypes.float8_e4m3fn and not (x + 1.0).weak_type
  assert (x * jnp.arange(2)).dtype == dtypes.float8_e4m3fn
  with pytest.raises(dtypes.TypePromotionError, match="8-bit floats do not support"):
    x + jnp.ones(2, jnp.float32)
  with pytest.raises(dtypes.TypePromotionError):
    x + jnp.ones(2, jnp.float8_e5m2)
  assert isinstance(dtypes.TypePromotionError(), ValueError)
  i4 = jnp.array([1, 2], jnp.int4)
  assert (i4 + 1).dtype == dtypes.int4
  with pytest.raises(dtypes.TypePromotionError, match="4-bit integers"):
    i4 + jnp.ones(2, jnp.int8)
  assert jnp.issubdtype(jnp.float8_e4m3fn, jnp.floating)
  assert jnp.issubdtype(jnp.int4, jnp.signedinteger)
  assert not jnp.issubdtype(jnp.uint4, jnp.signedinteger)
  assert jnp.finfo(jnp.float8_e4m3fn).max == 448 and jnp.iinfo(jnp.uint4).max == 15


# --- isdtype and can_cast ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype, kind, expected", [
    (np.int32, "signed integer", True), (np.int32, "unsigned integer", False),
    (np.uint8, "integral", True), (np.bool_, "integral", False), (np.bool_, "bool", True),
    (dtypes.bfloat16, "real floating", True), (dtypes.float8_e5m2, "real floating", True),
    (dtypes.int4, "signed integer", True), (dtypes.uint2, "unsigned integer", True),
    (np.complex64, "complex floating", True), (np.complex64, "numeric", True),
    (np.bool_, "numeric", False), (np.float32, np.float32, True),
    (np.float32, np.float16, False), (np.float16, ("bool", "real floating"), True),
    (np.int8, ("bool", np.int16), False), (np.int16, ("bool", np.int16), True),
])
def test_isdtype(dtype, kind, expected):
  assert jnp.isdtype(dtype, kind) is expected


def test_isdtype_errors():
  with pytest.raises(ValueError, match="Unrecognized kind"):
    jnp.isdtype(np.int32, "integer")
  with pytest.raises(TypeError, match="Expected kind"):
    jnp.isdtype(np.int32, object())


@pytest.mark.parametrize("from_, to, casting, expected", [
    (jnp.int8, jnp.float32, "safe", True), (jnp.float32, jnp.int32, "safe", False),
    (jnp.uint8, jnp.int16, "safe", True), (jnp.int32, jnp.uint32, "safe", False),
    (jnp.bfloat16, jnp.float32, "safe", True), (jnp.float32, jnp.bfloat16, "safe", False),
    (jnp.float32, jnp.bfloat16, "same_kind", True), (jnp.float64, jnp.float32, "safe", False),
    (jnp.float64, jnp.float32, "same_kind", True), (jnp.complex64, jnp.float32, "same_kind", False),
    (jnp.int4, jnp.int8, "safe", True), (jnp.float32, jnp.int8, "unsafe", True),
])
def test_can_cast_is_numpys_rule(from_, to, casting, expected):
  """JAX's can_cast is NumPy's, with the scalar types (and ml_dtypes) accepted."""
  assert jnp.can_cast(from_, to, casting) is expected


def test_can_cast_takes_arrays():
  assert jnp.can_cast(jnp.zeros(2, jnp.int8), jnp.int16)
  assert not jnp.can_cast(jnp.zeros(2), jnp.int32)


# --- type predicates ------------------------------------------------------------------------

@given(S.dtype_and_array(S.FLOAT_DTYPES + S.COMPLEX_DTYPES + S.INT_DTYPES))
def test_iscomplex_and_isreal_match_numpy(dtype_and_array):
  _, x = dtype_and_array
  np.testing.assert_array_equal(jnp.iscomplex(x), np.iscomplex(x))
  np.testing.assert_array_equal(jnp.isreal(x), np.isreal(x))
  assert jnp.iscomplex(x).dtype == np.bool_


def test_complexobj_scalar_and_iterable():
  assert jnp.iscomplexobj(jnp.zeros(2, jnp.complex64)) and jnp.iscomplexobj(1j)
  assert not jnp.iscomplexobj(jnp.zeros(2)) and not jnp.iscomplexobj(None)
  assert jnp.isrealobj([1.0, 2.0]) and not jnp.isrealobj(np.array([1j]))
  for scalar in (1.0, 1 + 1j, True, np.int32(1), np.array(1.0), jnp.array(1), jnp.int32(1)):
    assert jnp.isscalar(scalar), scalar
  for not_scalar in (jnp.array([1]), np.array([1]), None, [1], (), slice(10)):
    assert not jnp.isscalar(not_scalar), not_scalar
  assert jax.jit(lambda x: jnp.array(jnp.isscalar(x)))(1.0)  # traced 0-d counts
  assert jnp.iterable([1]) and jnp.iterable(jnp.zeros(2)) and not jnp.iterable(1)
  assert issubclass(jnp.ComplexWarning, RuntimeWarning)


# --- printing --------------------------------------------------------------------------------

def test_array_repr_and_str():
  x = jnp.array([1.5, 2.0, 3.0])
  assert jnp.array_repr(x) == "Array([1.5, 2. , 3. ], dtype=float32)" == repr(x)
  assert jnp.array_repr(jnp.zeros(2, jnp.bfloat16)) == "Array([0, 0], dtype=bfloat16)"
  assert jnp.array_str(x) == "[1.5 2.  3. ]" == str(x)
  assert jnp.array_repr(jnp.array([1 / 3]), precision=2) == "Array([0.33], dtype=float32)"
  assert jnp.array_str(jnp.arange(30), max_line_width=20).count("\n") > 1


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint32", "float16", "bfloat16", "float32",
                                   "complex64", "float8_e4m3fn", "float8_e5m2", "int4"])
def test_array_repr_names_the_dtype(dtype):
  # The same text whatever repr NumPy or ml_dtypes give the dtype object itself.
  x = jnp.zeros(2, dtype)
  assert jnp.array_repr(x) == repr(x)
  assert repr(x).endswith(f", dtype={dtype})")


def test_printoptions():
  before = jnp.get_printoptions()
  with jnp.printoptions(precision=2, suppress=True):
    assert jnp.get_printoptions()["precision"] == 2
    assert str(jnp.array([1 / 3, 1e-9])) == "[0.33 0.  ]"
  assert jnp.get_printoptions() == before
  jnp.set_printoptions(precision=3)
  try:
    assert str(jnp.array([1 / 3])) == "[0.333]"
  finally:
    jnp.set_printoptions(**before)


# --- I/O ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.int8, dtypes.bfloat16, np.bool_])
def test_save_load_round_trip(dtype):
  x = jnp.arange(6).reshape(2, 3).astype(dtype)
  f = io.BytesIO()
  jnp.save(f, x)
  f.seek(0)
  y = jnp.load(f)
  assert isinstance(y, jax.Array) and y.dtype == x.dtype
  np.testing.assert_array_equal(y, x)


def test_savez_loads_as_numpy():
  f = io.BytesIO()
  jnp.savez(f, a=jnp.arange(3), b=jnp.ones(2))
  f.seek(0)
  loaded = jnp.load(f)
  np.testing.assert_array_equal(loaded["a"], [0, 1, 2])
  assert isinstance(loaded["b"], np.ndarray)


def test_frombuffer_fromstring_from_dlpack():
  out = jnp.frombuffer(b"\x01\x02\x03\x04", dtype=jnp.uint8)
  assert out.dtype == np.uint8 and out.tolist() == [1, 2, 3, 4]
  out = jnp.frombuffer(np.arange(3, dtype=np.float64).tobytes())
  assert out.dtype == np.float32 and out.tolist() == [0, 1, 2]  # float means float64, canonicalized
  out = jnp.frombuffer(np.arange(4, dtype=np.int16).tobytes(), dtype=np.int16, count=2, offset=2)
  assert out.tolist() == [1, 2]
  out = jnp.fromstring("1, 2, 3", dtype=int, sep=",")
  assert out.dtype == np.int32 and out.tolist() == [1, 2, 3]
  out = jnp.from_dlpack(np.arange(4, dtype=np.int8).reshape(2, 2))
  assert isinstance(out, jax.Array) and out.dtype == np.int8 and out.shape == (2, 2)


def test_fromfile_and_fromiter_are_not_implemented_as_in_jax():
  with pytest.raises(NotImplementedError, match="non-pure"):
    jnp.fromiter(iter([1, 2]), dtype=int)
  with pytest.raises(NotImplementedError, match=r"np.fromfile\(\.\.\.\)"):
    jnp.fromfile("x.bin")


# --- block ---------------------------------------------------------------------------------

def test_block_examples():
  a, b = np.ones((2, 2)), np.zeros((2, 3))
  nested = [[a, b], [np.full((1, 5), 7.0)]]
  np.testing.assert_array_equal(jnp.block(nested), np.block(nested))
  np.testing.assert_array_equal(jnp.block([1, 2, 3]), [1, 2, 3])
  np.testing.assert_array_equal(jnp.block([[1], [2]]), [[1], [2]])
  assert jnp.block(np.float32(2)).shape == ()
  assert jnp.block([[[np.zeros(2)]]]).shape == (1, 1, 2)
  with pytest.raises(ValueError, match="does not allow tuples"):
    jnp.block((a, b))
  with pytest.raises(ValueError, match="empty list"):
    jnp.block([[]])
  with pytest.raises(ValueError, match="Mismatched list depths"):
    jnp.block([[a], b])


@given(S.same_shape_arrays(n=4))
def test_block_matches_numpy(inputs):
  """Three levels of nesting: blocks of rank < 3 get leading axes."""
  (a, b, c, d), _ = inputs
  nested = [[[a, b]], [[c, d]]]
  out = jnp.block(nested)
  assert out.dtype == a.dtype
  S.assert_close(out, np.block(nested))  # exact but for NaNs (bfloat16 too)


# --- apply_along_axis / apply_over_axes -----------------------------------------------------

@given(st.data())
def test_apply_along_axis_matches_numpy(data):
  shape = data.draw(S.shapes(min_dims=1, max_dims=3, min_side=1))
  x = data.draw(S.arrays(np.float32, shape, allow_nan=False, allow_inf=False,
                         elements=st.floats(-10, 10, width=32)))
  axis = data.draw(st.integers(-len(shape), len(shape) - 1))
  kind = data.draw(st.sampled_from(["scalar", "vector", "matrix"]))
  jfun, nfun = {
      "scalar": (lambda v: v[0] - v[-1], lambda v: v[0] - v[-1]),
      "vector": (lambda v: v[::-1] * 2, lambda v: v[::-1] * 2),
      "matrix": (lambda v: jnp.outer(v, v[:2]), lambda v: np.outer(v, v[:2])),
  }[kind]
  expected = np.apply_along_axis(nfun, axis, x)
  for f in (jnp.apply_along_axis, jax.jit(jnp.apply_along_axis, static_argnums=(0, 1))):
    out = f(jfun, axis, x)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_apply_along_axis_extra_arguments_and_empty_batch():
  x = np.arange(6.0).reshape(2, 3)
  out = jnp.apply_along_axis(lambda v, k, scale: v[k] * scale, 1, x, 2, scale=10.0)
  np.testing.assert_array_equal(out, [20.0, 50.0])
  out = jnp.apply_along_axis(lambda v: jnp.stack([v.sum(), v.max()]), 1, np.zeros((0, 3), np.int8))
  assert out.shape == (0, 2) and out.dtype == np.int32


def test_apply_over_axes():
  x = np.arange(24.0).reshape(2, 3, 4)
  np.testing.assert_array_equal(jnp.apply_over_axes(jnp.sum, x, [0, 2]),
                                np.apply_over_axes(np.sum, x, [0, 2]))
  np.testing.assert_array_equal(jnp.apply_over_axes(lambda a, ax: jnp.cumsum(a, ax), x, [1]),
                                np.cumsum(x, 1))
  with pytest.raises(ValueError, match="correct shape"):
    jnp.apply_over_axes(lambda a, ax: jnp.sum(a), x, [0])


# --- packbits / unpackbits --------------------------------------------------------------------

def test_packbits_examples():
  bits = jnp.array([0, 0, 0, 0, 0, 1, 1, 1])
  assert jnp.packbits(bits).tolist() == [7]
  assert jnp.packbits(bits, bitorder="little").tolist() == [224]
  assert jnp.packbits(jnp.array([1, 0, 1])).tolist() == [160]
  a = jnp.array([[1, 1, 0, 1, 0, 1, 0, 0, 1, 0, 0, 1, 0, 1, 1, 0],
                 [0, 1, 0, 0, 0, 1, 0, 1, 1, 1, 0, 0, 1, 1, 1, 1]])
  packed = jnp.packbits(a, axis=1)
  assert packed.dtype == np.uint8 and packed.tolist() == [[212, 150], [69, 207]]
  np.testing.assert_array_equal(jnp.unpackbits(packed, axis=1), a)
  assert jnp.packbits(jnp.array([True, False, True, 2, -1])).tolist() == [0b10111000]


def test_packbits_errors():
  with pytest.raises(TypeError, match="integer or boolean"):
    jnp.packbits(jnp.ones(3))
  with pytest.raises(ValueError, match="'order' must be"):
    jnp.packbits(jnp.ones(3, jnp.int8), bitorder="middle")
  with pytest.raises(TypeError, match="unsigned byte"):
    jnp.unpackbits(jnp.ones(3, jnp.int8))


@given(S.array_and_kwargs(lambda shape: st.fixed_dictionaries({
    "axis": S.axes(len(shape), allow_tuple=False),
    "bitorder": st.sampled_from(["big", "little"])}), S.BOOL_DTYPES + S.INT_DTYPES))
def test_unpackbits_inverts_packbits(inputs):
  (x,), kwargs = inputs
  packed = jnp.packbits(x, **kwargs)
  np.testing.assert_array_equal(packed, np.packbits(x, **kwargs))
  axis = kwargs["axis"]
  count = x.size if axis is None else x.shape[axis]
  unpacked = jnp.unpackbits(packed, count=count, **kwargs)
  expected = (x != 0).astype(np.uint8)
  np.testing.assert_array_equal(unpacked, expected.ravel() if axis is None else expected)


# --- window functions -----------------------------------------------------------------------

@pytest.mark.parametrize("name, expected", [
    ("bartlett", [0.0, 0.67, 0.67, 0.0]), ("blackman", [0.0, 0.63, 0.63, 0.0]),
    ("hamming", [0.08, 0.77, 0.77, 0.08]), ("hanning", [0.0, 0.75, 0.75, 0.0]),
])
def test_windows(name, expected):
  fn = getattr(jnp, name)
  out = fn(4)
  assert out.dtype == np.float32 and not out.weak_type
  np.testing.assert_allclose(out, expected, atol=5e-3)
  for M in (0, 1, 2, 5, 32):
    np.testing.assert_allclose(fn(M), getattr(np, name)(M), atol=1e-6)
  assert fn(1).tolist() == [1.0] and fn(0).shape == (0,)
  with jax.enable_x64():
    assert fn(5).dtype == np.float64
    np.testing.assert_allclose(fn(9), getattr(np, name)(9), atol=1e-15)
  with pytest.raises(errors.ConcretizationTypeError):
    jax.jit(fn)(4)


def test_window_lowering():
  jaxpr = str(jax.make_jaxpr(lambda: jnp.hanning(4))())
  assert "iota[dimension=0 dtype=float32 shape=(4,)]" in jaxpr
  assert "cos" in jaxpr


def test_kaiser():
  out = jnp.kaiser(4, 1.5)
  np.testing.assert_allclose(out, [0.61, 0.95, 0.95, 0.61], atol=5e-3)
  for M, beta in ((1, 3.0), (5, 0.0), (12, 8.6), (7, 14.0)):
    np.testing.assert_allclose(jnp.kaiser(M, beta), np.kaiser(M, beta), rtol=1e-5, atol=1e-6)


# --- einsum_path ----------------------------------------------------------------------------

def test_einsum_path_is_numpys_for_the_shapes():
  a, b, c = np.ones((2, 30)), np.ones((30, 4)), np.ones((4, 50))
  path, description = jnp.einsum_path("ij,jk,kl->il", a, b, c)
  expected = np.einsum_path("ij,jk,kl->il", a, b, c, optimize="optimal")
  assert path == expected[0] and path[0] == "einsum_path"
  assert "Complete contraction" in description
  assert jnp.einsum_path("ij,jk,kl->il", a, b, c, optimize=False)[0] == ["einsum_path", (0, 1, 2)]
  assert jnp.einsum_path("ij,jk->ik", jnp.asarray(a), jnp.asarray(b), optimize=True)[0] == \
      ["einsum_path", (0, 1)]
  traced = []
  jax.make_jaxpr(lambda x, y: traced.append(jnp.einsum_path("ij,jk", x, y)[0]) or x)(a, b)
  assert traced == [["einsum_path", (0, 1)]]

