"""Tests of refimpl/scipy/spatial/transform.py: Rotation's conversions, composition,
application, inverse, magnitude and mean, and Slerp, against scipy.spatial.transform;
round trips, dtypes, JAX's errors, and jit, vmap and grad through the NamedTuples."""

import numpy as np
import pytest
from hypothesis import given, strategies as st
from scipy.spatial.transform import Rotation as SciPyRotation, Slerp as SciPySlerp

import refimpl as jax
from refimpl.config import enable_x64
from refimpl.scipy.spatial.transform import Rotation, Slerp
from conformance import strategies as S

_SEQUENCES = ["xyz", "zyx", "xzx", "yxy", "XYZ", "ZXZ", "YZX", "XZX"]


def _quats(draw, n=4):
  """n random quaternions (Gaussian, so of random direction: no exact ties of angles
  or components, which SciPy and JAX may break differently)."""
  return np.random.default_rng(draw(st.integers(0, 2**32 - 1))).normal(size=(n, 4))


def _close(actual, expected, tol=1e-9):
  np.testing.assert_allclose(np.asarray(actual), expected, rtol=tol, atol=tol)


@given(data=st.data())
def test_conversions_match_scipy(data):
  q = _quats(data.draw)
  theirs = SciPyRotation.from_quat(q)
  with enable_x64():
    ours = Rotation.from_quat(q)
    _close(ours.as_quat(), theirs.as_quat())
    _close(ours.as_quat(canonical=True, scalar_first=True),
           theirs.as_quat(canonical=True, scalar_first=True))
    _close(ours.as_matrix(), theirs.as_matrix())
    _close(ours.as_rotvec(), theirs.as_rotvec())
    _close(ours.as_rotvec(degrees=True), theirs.as_rotvec(degrees=True), 1e-7)
    _close(ours.as_mrp(), theirs.as_mrp())
    _close(ours.magnitude(), theirs.magnitude())
    _close(Rotation.from_matrix(theirs.as_matrix()).as_matrix(), theirs.as_matrix())
    _close(Rotation.from_rotvec(theirs.as_rotvec()).as_matrix(), theirs.as_matrix())
    _close(Rotation.from_mrp(theirs.as_mrp()).as_matrix(), theirs.as_matrix())


@given(data=st.data(), seq=st.sampled_from(_SEQUENCES), degrees=st.booleans())
def test_euler_angles_match_scipy(data, seq, degrees):
  q = _quats(data.draw)
  angles = data.draw(S.arrays(np.float64, (4, len(seq)), elements=st.floats(-3, 3)))
  angles = np.rad2deg(angles) if degrees else angles
  with enable_x64():
    _close(Rotation.from_euler(seq, angles, degrees).as_matrix(),
           SciPyRotation.from_euler(seq, angles, degrees).as_matrix())
    _close(Rotation.from_quat(q).as_euler(seq, degrees),
           SciPyRotation.from_quat(q).as_euler(seq, degrees), 1e-6)
    _close(Rotation.from_euler(seq[:2], angles[:, :2], degrees).as_matrix(),
           SciPyRotation.from_euler(seq[:2], angles[:, :2], degrees).as_matrix())


@given(data=st.data(), inverse=st.booleans())
def test_composition_application_inverse_and_mean_match_scipy(data, inverse):
  p, q = _quats(data.draw), _quats(data.draw)
  vectors = data.draw(S.arrays(np.float64, (4, 3), elements=st.floats(-5, 5)))
  weights = data.draw(S.arrays(np.float64, (4,), elements=st.floats(0.1, 1)))
  theirs = SciPyRotation.from_quat(p)
  with enable_x64():
    ours = Rotation.from_quat(p)
    _close((ours * Rotation.from_quat(q)).as_matrix(),
           (theirs * SciPyRotation.from_quat(q)).as_matrix())
    _close(ours.apply(vectors, inverse), theirs.apply(vectors, inverse))
    _close(ours.apply(vectors[0], inverse), theirs.apply(vectors[0], inverse))
    _close(ours.inv().as_matrix(), theirs.inv().as_matrix())
    _close(ours.mean(weights).as_matrix(), theirs.mean(weights).as_matrix(), 1e-7)


@given(data=st.data())
def test_slerp_matches_scipy(data):
  q = _quats(data.draw)
  steps = data.draw(S.arrays(np.float64, (3,), elements=st.floats(0.5, 2)))
  times = np.concatenate([[0.0], np.cumsum(steps)])
  query = data.draw(S.arrays(np.float64, (5,), elements=st.floats(0, float(times[-1]))))
  expected = SciPySlerp(times, SciPyRotation.from_quat(q))(query)
  with enable_x64():
    _close(Slerp.init(times, Rotation.from_quat(q))(query).as_matrix(), expected.as_matrix(),
           1e-8)


def test_structure_dtypes_and_small_angles():
  q = np.array([[0.0, 0.0, 0.0, 2.0], [1.0, 0.0, 0.0, 1.0]], np.float32)
  r = Rotation.from_quat(q)
  assert r.quat.dtype == np.float32 and len(r) == 2 and not r.single and r[1].single
  np.testing.assert_allclose(r[1].as_matrix(), [[1, 0, 0], [0, 0, -1], [0, 1, 0]], atol=1e-6)
  assert Rotation.concatenate([r, r[:1]]).quat.shape == (3, 4)
  np.testing.assert_array_equal(Rotation.identity().as_matrix(), np.eye(3))
  single = Rotation.from_euler("z", 0.25)
  assert single.single and Slerp.init(np.arange(2.0), r)(0.5).single
  # Below 1e-3 rad the series expansions are used; they agree with SciPy.
  small = np.array([[1e-5, -2e-4, 3e-4]])
  with enable_x64():
    _close(Rotation.from_rotvec(small).as_quat(), SciPyRotation.from_rotvec(small).as_quat(),
           1e-15)
    _close(Rotation.from_rotvec(small).as_rotvec(), small, 1e-15)


def test_errors():
  r = Rotation.from_quat(np.array([0.0, 0.0, 0.0, 1.0]))
  with pytest.raises(TypeError, match="Single rotation is not subscriptable"):
    r[0]
  with pytest.raises(TypeError, match="Single rotation has no len"):
    len(r)
  with pytest.raises(ValueError, match="Expected consecutive axes to be different"):
    Rotation.from_euler("xxz", np.zeros(3))
  with pytest.raises(ValueError, match="Expected axes from `seq`"):
    Rotation.from_euler("xYz", np.zeros(3))
  with pytest.raises(ValueError, match="non-empty string of upto 3 characters"):
    Rotation.from_euler("xyzx", np.zeros(4))
  with pytest.raises(ValueError, match="Expected 3 axes"):
    r.as_euler("xy")
  with pytest.raises(NotImplementedError):
    Rotation.random(jax.random.key(0))
  with pytest.raises(TypeError, match="must be a `Rotation` instance"):
    Slerp.init(np.arange(2.0), np.zeros((2, 4)))
  with pytest.raises(ValueError, match="at least 2 rotations"):
    Slerp.init(np.arange(1.0), r)
  two = Rotation.from_quat(np.eye(4)[:2])
  with pytest.raises(ValueError, match="number of rotations to be equal to number of timestamps"):
    Slerp.init(np.arange(3.0), two)
  with pytest.raises(ValueError, match="Expected `weights` to have number of values"):
    two.mean(np.ones(3))


def test_jit_vmap_and_grad():
  q = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
  np.testing.assert_allclose(jax.jit(lambda r: r.as_matrix())(Rotation.from_quat(q)),
                             Rotation.from_quat(q).as_matrix(), rtol=1e-6)
  np.testing.assert_allclose(jax.vmap(lambda v: Rotation.from_quat(v).as_rotvec())(q),
                             Rotation.from_quat(q).as_rotvec(), rtol=1e-5, atol=1e-6)
  # A rotation about z by t moves (1, 0, 0) to (cos t, sin t, 0): d/dt of the y part is cos t.
  y = lambda t: Rotation.from_rotvec(np.array([0.0, 0.0, 1.0], np.float32) * t).apply(
      np.array([1.0, 0.0, 0.0], np.float32))[1]
  np.testing.assert_allclose(jax.grad(y)(np.float32(0.3)), np.cos(0.3), rtol=1e-6)
