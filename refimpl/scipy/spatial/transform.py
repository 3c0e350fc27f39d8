"""`refimpl.scipy.spatial.transform`: 3-D rotations, as `jax.scipy.spatial.transform`.

A `Rotation` is a NamedTuple holding unit quaternions in SciPy's scalar-last
order (x, y, z, w): one of shape (4,) (a single rotation) or a stack of
shape (n, 4). Being a NamedTuple it is a pytree, so rotations pass through
jit, vmap and grad. The per-quaternion formulas are jnp.vectorize'd, so they
broadcast over stacks. As in JAX, `Rotation.random` is not implemented,
`identity` makes a single rotation only, and `Slerp` does not check that its
times increase.
"""

import functools
import re
import typing

import numpy as np

from refimpl.array import Array
from refimpl.config import numpy_rank_promotion
from refimpl.numpy import (
    absolute, argmax, arctan2, array, asarray, atleast_1d, concatenate, cos, cross, deg2rad,
    diff, dot, empty, hstack, hypot, linalg, maximum, ones, rad2deg, roll, searchsorted, sin,
    sqrt, vectorize, where, zeros)

__all__ = ["Rotation", "Slerp"]


def _check_axis_sequence(seq, n):
  """(intrinsic, extrinsic) for an axis sequence such as 'xyz' or 'ZXZ'."""
  intrinsic = re.match(r'^[XYZ]{1,3}$', seq) is not None
  extrinsic = re.match(r'^[xyz]{1,3}$', seq) is not None
  if not (intrinsic or extrinsic):
    raise ValueError("Expected axes from `seq` to be from ['x', 'y', 'z'] or ['X', 'Y', 'Z'], "
                     "got {}".format(seq))
  if any(seq[i] == seq[i + 1] for i in range(n - 1)):
    raise ValueError("Expected consecutive axes to be different, got {}".format(seq))
  return intrinsic, extrinsic


class Rotation(typing.NamedTuple):
  """Rotations in 3 dimensions, stored as unit quaternions `quat` (x, y, z, w)."""

  quat: Array

  @classmethod
  def concatenate(cls, rotations: typing.Sequence):
    """One stack of the given stacks of rotations."""
    return cls(concatenate([rotation.quat for rotation in rotations]))

  @classmethod
  def from_euler(cls, seq: str, angles: Array, degrees: bool = False):
    """Rotations from 1-3 Euler angles about the axes `seq`: lower case for extrinsic
    (fixed-frame) rotations, upper case for intrinsic (rotating-frame) ones."""
    num_axes = len(seq)
    if num_axes < 1 or num_axes > 3:
      raise ValueError("Expected axis specification to be a non-empty "
                       "string of upto 3 characters, got {}".format(seq))
    intrinsic, _ = _check_axis_sequence(seq, num_axes)
    angles = atleast_1d(angles)
    axes = array([_elementary_basis_index(x) for x in seq.lower()])
    return cls(_elementary_quat_compose(angles, axes, intrinsic, degrees))

  @classmethod
  def from_matrix(cls, matrix: Array):
    """Rotations from 3x3 rotation matrices (Shepperd's method: the largest of the
    trace and the diagonal entries picks the stable formula)."""
    return cls(_from_matrix(matrix))

  @classmethod
  def from_mrp(cls, mrp: Array):
    """Rotations from modified Rodrigues parameters (axis times tan(angle / 4))."""
    return cls(_from_mrp(mrp))

  @classmethod
  def from_quat(cls, quat: Array):
    """Rotations from quaternions (x, y, z, w), normalized."""
    return cls(_normalize_quaternion(quat))

  @classmethod
  def from_rotvec(cls, rotvec: Array, degrees: bool = False):
    """Rotations from rotation vectors (axis times angle)."""
    return cls(_from_rotvec(rotvec, degrees))

  @classmethod
  def identity(cls, num: int | None = None, dtype=float):
    """The identity rotation (a single one: `num` must be None)."""
    assert num is None
    return cls(array([0., 0., 0., 1.], dtype=dtype))

  @classmethod
  def random(cls, random_key: Array, num: int | None = None):
    """Not implemented in JAX (it would need special_ortho_group): NotImplementedError."""
    raise NotImplementedError()

  def __getitem__(self, indexer):
    """The rotations of the stack at `indexer` (TypeError for a single rotation)."""
    if self.single:
      raise TypeError("Single rotation is not subscriptable.")
    return Rotation(self.quat[indexer])

  def __len__(self):
    """The number of rotations in the stack (TypeError for a single rotation)."""
    if self.single:
      raise TypeError('Single rotation has no len().')
    return self.quat.shape[0]

  def __mul__(self, other) -> "Rotation":
    """The composition: `self` applied after `other`."""
    return Rotation.from_quat(_compose_quat(self.quat, other.quat))

  def apply(self, vectors: Array, inverse: bool = False) -> Array:
    """The rotated vectors (rotated by the inverse with `inverse`)."""
    return _apply(self.as_matrix(), vectors, inverse)

  def as_euler(self, seq: str, degrees: bool = False):
    """Three Euler angles about the axes `seq` (as `from_euler`), in (-pi, pi]
    (the middle one in [0, pi] or [-pi/2, pi/2]); in gimbal lock the third is 0."""
    if len(seq) != 3:
      raise ValueError(f"Expected 3 axes, got {seq}.")
    _, extrinsic = _check_axis_sequence(seq, 3)
    axes = array([_elementary_basis_index(x) for x in seq.lower()])
    with numpy_rank_promotion('allow'):
      return _compute_euler_from_quat(self.quat, axes, extrinsic, degrees)

  def as_matrix(self) -> Array:
    """The 3x3 rotation matrices."""
    return _as_matrix(self.quat)

  def as_mrp(self) -> Array:
    """The modified Rodrigues parameters (of the quaternion with w >= 0)."""
    return _as_mrp(self.quat)

  def as_rotvec(self, degrees: bool = False) -> Array:
    """The rotation vectors (axis times angle, the angle in [0, pi])."""
    return _as_rotvec(self.quat, degrees)

  def as_quat(self, canonical: bool = False, scalar_first: bool = False) -> Array:
    """The quaternions; `canonical` picks the sign with w > 0 (ties broken by the first
    nonzero of x, y, z), `scalar_first` orders them (w, x, y, z)."""
    quat = _make_canonical(self.quat) if canonical else self.quat
    if scalar_first:
      return roll(quat, shift=1, axis=-1)
    return quat

  def inv(self):
    """The inverse rotations (the conjugate quaternions)."""
    return Rotation(_inv(self.quat))

  def magnitude(self) -> Array:
    """The rotation angles, in [0, pi]."""
    return _magnitude(self.quat)

  def mean(self, weights: Array | None = None):
    """The (weighted) mean rotation of the stack: the eigenvector of the largest
    eigenvalue of sum_i w_i q_i q_i' (Markley et al.)."""
    w = (ones(self.quat.shape[0], dtype=self.quat.dtype) if weights is None
         else asarray(weights, dtype=self.quat.dtype))
    if w.ndim != 1:
      raise ValueError("Expected `weights` to be 1 dimensional, got shape {}.".format(w.shape))
    if w.shape[0] != len(self):
      raise ValueError("Expected `weights` to have number of values equal to number of "
                       "rotations, got {} values and {} rotations.".format(w.shape[0], len(self)))
    K = dot(w[np.newaxis, :] * self.quat.T, self.quat)
    _, v = linalg.eigh(K)
    return Rotation(v[:, -1])

  @property
  def single(self) -> bool:
    """Whether this is a single rotation (quat of shape (4,)) rather than a stack."""
    return self.quat.ndim == 1


class Slerp(typing.NamedTuple):
  """Spherical linear interpolation between successive key rotations at increasing
  `times`; build one with `Slerp.init(times, rotations)`."""

  times: Array
  timedelta: Array
  rotations: Rotation
  rotvecs: Array

  @classmethod
  def init(cls, times: Array, rotations: Rotation):
    """The interpolator of the key `rotations` (a stack of at least 2) at `times`."""
    if not isinstance(rotations, Rotation):
      raise TypeError("`rotations` must be a `Rotation` instance.")
    if rotations.single or len(rotations) == 1:
      raise ValueError("`rotations` must be a sequence of at least 2 rotations.")
    times = asarray(times, dtype=rotations.quat.dtype)
    if times.ndim != 1:
      raise ValueError("Expected times to be specified in a 1 dimensional array, got {} "
                       "dimensions.".format(times.ndim))
    if times.shape[0] != len(rotations):
      raise ValueError("Expected number of rotations to be equal to number of timestamps "
                       "given, got {} rotations and {} timestamps.".format(
                           len(rotations), times.shape[0]))
    starts = Rotation(rotations.as_quat()[:-1])
    return cls(times=times, timedelta=diff(times), rotations=starts,
               rotvecs=(starts.inv() * Rotation(rotations.as_quat()[1:])).as_rotvec())

  def __call__(self, times: Array):
    """The interpolated rotations at `times` (a scalar gives a single rotation); times
    before the first key extrapolate the first interval."""
    compute_times = asarray(times, dtype=self.times.dtype)
    if compute_times.ndim > 1:
      raise ValueError("`times` must be at most 1-dimensional.")
    single_time = compute_times.ndim == 0
    compute_times = atleast_1d(compute_times)
    ind = maximum(searchsorted(self.times, compute_times) - 1, 0)
    alpha = (compute_times - self.times[ind]) / self.timedelta[ind]
    result = self.rotations[ind] * Rotation.from_rotvec(self.rotvecs[ind] * alpha[:, None])
    return result[0] if single_time else result


@functools.partial(vectorize, signature='(m,m),(m),()->(m)')
def _apply(matrix, vector, inverse):
  return where(inverse, matrix.T, matrix) @ vector


@functools.partial(vectorize, signature='(m)->(n,n)')
def _as_matrix(quat):
  x, y, z, w = quat[0], quat[1], quat[2], quat[3]
  x2, y2, z2, w2 = x * x, y * y, z * z, w * w
  xy, zw, xz, yw, yz, xw = x * y, z * w, x * z, y * w, y * z, x * w
  return array([[+ x2 - y2 - z2 + w2, 2 * (xy - zw), 2 * (xz + yw)],
                [2 * (xy + zw), - x2 + y2 - z2 + w2, 2 * (yz - xw)],
                [2 * (xz - yw), 2 * (yz + xw), - x2 - y2 + z2 + w2]])


@functools.partial(vectorize, signature='(m)->(n)')
def _as_mrp(quat):
  sign = where(quat[3] < 0, -1., 1.)
  return sign * quat[:3] / (1. + sign * quat[3])


@functools.partial(vectorize, signature='(m),()->(n)')
def _as_rotvec(quat, degrees):
  quat = where(quat[3] < 0, -quat, quat)  # w >= 0, so the angle is in [0, pi]
  angle = 2. * arctan2(_vector_norm(quat[:3]), quat[3])
  angle2 = angle * angle
  small_scale = 2 + angle2 / 12 + 7 * angle2 * angle2 / 2880
  large_scale = angle / sin(angle / 2)
  scale = where(angle <= 1e-3, small_scale, large_scale)
  scale = where(degrees, rad2deg(scale), scale)
  return scale * quat[:3]


@functools.partial(vectorize, signature='(n),(n)->(n)')
def _compose_quat(p, q):
  c = cross(p[:3], q[:3])
  return array([p[3] * q[0] + q[3] * p[0] + c[0],
                p[3] * q[1] + q[3] * p[1] + c[1],
                p[3] * q[2] + q[3] * p[2] + c[2],
                p[3] * q[3] - p[0] * q[0] - p[1] * q[1] - p[2] * q[2]])


@functools.partial(vectorize, signature='(m),(l),(),()->(n)')
def _compute_euler_from_quat(quat, axes, extrinsic, degrees):
  """Euler angles from a quaternion (Bernardes and Viollet, 2022), with SciPy's
  handling of the degenerate middle angles 0 and pi."""
  angle_first = where(extrinsic, 0, 2)
  angle_third = where(extrinsic, 2, 0)
  axes = where(extrinsic, axes, axes[::-1])
  i, j, k = axes[0], axes[1], axes[2]
  symmetric = i == k
  k = where(symmetric, 3 - i - j, k)
  sign = array((i - j) * (j - k) * (k - i) // 2, dtype=quat.dtype)
  eps = 1e-7
  a = where(symmetric, quat[3], quat[3] - quat[j])
  b = where(symmetric, quat[i], quat[i] + quat[k] * sign)
  c = where(symmetric, quat[j], quat[j] + quat[3])
  d = where(symmetric, quat[k] * sign, quat[k] * sign - quat[i])
  angles = empty(3, dtype=quat.dtype)
  angles = angles.at[1].set(2 * arctan2(hypot(c, d), hypot(a, b)))
  case = where(absolute(angles[1] - np.pi) <= eps, 2, 0)
  case = where(absolute(angles[1]) <= eps, 1, case)
  half_sum = arctan2(b, a)
  half_diff = arctan2(d, c)
  angles = angles.at[0].set(where(case == 1, 2 * half_sum,
                                  2 * half_diff * where(extrinsic, -1, 1)))
  angles = angles.at[angle_first].set(where(case == 0, half_sum - half_diff,
                                            angles[angle_first]))
  angles = angles.at[angle_third].set(where(case == 0, half_sum + half_diff,
                                            angles[angle_third]))
  angles = angles.at[angle_third].set(where(symmetric, angles[angle_third],
                                            angles[angle_third] * sign))
  angles = angles.at[1].set(where(symmetric, angles[1], angles[1] - np.pi / 2))
  angles = (angles + np.pi) % (2 * np.pi) - np.pi
  return where(degrees, rad2deg(angles), angles)


def _elementary_basis_index(axis):
  if axis == 'x':
    return 0
  if axis == 'y':
    return 1
  if axis == 'z':
    return 2
  raise ValueError(f"Expected axis to be from ['x', 'y', 'z'], got {axis}")


@functools.partial(vectorize, signature='(m),(m),(),()->(n)')
def _elementary_quat_compose(angles, axes, intrinsic, degrees):
  angles = where(degrees, deg2rad(angles), angles)
  result = _make_elementary_quat(axes[0], angles[0])
  for idx in range(1, len(axes)):
    quat = _make_elementary_quat(axes[idx], angles[idx])
    result = where(intrinsic, _compose_quat(result, quat), _compose_quat(quat, result))
  return result


@functools.partial(vectorize, signature='(m),()->(n)')
def _from_rotvec(rotvec, degrees):
  rotvec = where(degrees, deg2rad(rotvec), rotvec)
  angle = _vector_norm(rotvec)
  angle2 = angle * angle
  small_scale = 0.5 - angle2 / 48 + angle2 * angle2 / 3840
  large_scale = sin(angle / 2) / angle
  scale = where(angle <= 1e-3, small_scale, large_scale)
  return hstack([scale * rotvec, cos(angle / 2)])


@functools.partial(vectorize, signature='(m,m)->(n)')
def _from_matrix(matrix):
  trace = matrix[0, 0] + matrix[1, 1] + matrix[2, 2]
  decision = array([matrix[0, 0], matrix[1, 1], matrix[2, 2], trace], dtype=matrix.dtype)
  choice = argmax(decision)
  i = choice
  j = (i + 1) % 3
  k = (j + 1) % 3
  quat_ijk = empty(4, dtype=matrix.dtype)
  quat_ijk = quat_ijk.at[i].set(1 - decision[3] + 2 * matrix[i, i])
  quat_ijk = quat_ijk.at[j].set(matrix[j, i] + matrix[i, j])
  quat_ijk = quat_ijk.at[k].set(matrix[k, i] + matrix[i, k])
  quat_ijk = quat_ijk.at[3].set(matrix[k, j] - matrix[j, k])
  quat_w = array([matrix[2, 1] - matrix[1, 2], matrix[0, 2] - matrix[2, 0],
                  matrix[1, 0] - matrix[0, 1], 1 + decision[3]], dtype=matrix.dtype)
  return _normalize_quaternion(where(choice != 3, quat_ijk, quat_w))


@functools.partial(vectorize, signature='(m)->(n)')
def _from_mrp(mrp):
  mrp_squared_plus_1 = dot(mrp, mrp) + 1
  return hstack([2 * mrp[:3], (2 - mrp_squared_plus_1)]) / mrp_squared_plus_1


@functools.partial(vectorize, signature='(n)->(n)')
def _inv(quat):
  return quat * array([-1, -1, -1, 1], dtype=quat.dtype)


@functools.partial(vectorize, signature='(n)->()')
def _magnitude(quat):
  return 2. * arctan2(_vector_norm(quat[:3]), absolute(quat[3]))


@functools.partial(vectorize, signature='(),()->(n)')
def _make_elementary_quat(axis, angle):
  quat = zeros(4, dtype=angle.dtype)
  quat = quat.at[3].set(cos(angle / 2.))
  return quat.at[axis].set(sin(angle / 2.))


@functools.partial(vectorize, signature='(n)->(n)')
def _normalize_quaternion(quat):
  return quat / _vector_norm(quat)


@functools.partial(vectorize, signature='(n)->()')
def _vector_norm(vector):
  return sqrt(dot(vector, vector))


@functools.partial(vectorize, signature='(n)->(n)')
def _make_canonical(quat):
  is_neg = quat < 0
  is_zero = quat == 0
  neg = (is_neg[3]
         | (is_zero[3] & is_neg[0])
         | (is_zero[3] & is_zero[0] & is_neg[1])
         | (is_zero[3] & is_zero[0] & is_zero[1] & is_neg[2]))
  return where(neg, -quat, quat)
