"""SE(3), quaternions, UR rotation vectors, interpolation and the Motive conversion."""
import numpy as np
import pytest
from gaze4hri_core.transforms import (
    SE3,
    interpolate_poses,
    look_at,
    matrix_to_quat_xyzw,
    motive_yup_to_zup,
    quat_xyzw_to_matrix,
    se3_to_ur_pose,
    ur_pose_to_se3,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

pytestmark = pytest.mark.unit

finite = st.floats(-10, 10, allow_nan=False)
vec3 = st.tuples(finite, finite, finite).map(np.array)
quat = st.tuples(*[st.floats(-1, 1, allow_nan=False)] * 4).filter(lambda q: np.linalg.norm(q) > 0.1).map(np.array)


@st.composite
def se3s(draw):
    return SE3.from_quat(draw(vec3), draw(quat))


@given(se3s(), se3s())
def test_compose_matches_matrices(a, b):
    np.testing.assert_allclose((a @ b).matrix, a.matrix @ b.matrix, atol=1e-9)


@given(se3s(), vec3)
def test_inverse_round_trip(T, p):
    np.testing.assert_allclose(T.inv().apply(T.apply(p)), p, atol=1e-9)
    assert (T @ T.inv()).almost_equal(SE3.identity(), 1e-9, 1e-9)


def test_hand_worked_transform():
    # 90 deg about z then translate x by 1: (1, 0, 0) -> (1, 1, 0)
    T = SE3.from_quat([1, 0, 0], [0, 0, np.sin(np.pi / 4), np.cos(np.pi / 4)])
    np.testing.assert_allclose(T.apply([1, 0, 0]), [1, 1, 0], atol=1e-12)
    np.testing.assert_allclose(T.rotate([1, 0, 0]), [0, 1, 0], atol=1e-12)


def test_quaternion_is_ros_order_and_canonical():
    R = quat_xyzw_to_matrix([0, 0, 1, 0])  # 180 deg about z, (x, y, z, w)
    np.testing.assert_allclose(R, np.diag([-1, -1, 1]), atol=1e-12)
    q = matrix_to_quat_xyzw(Rotation.from_euler("x", 30, degrees=True).as_matrix())
    assert q[3] > 0 and np.isclose(q[0], np.sin(np.radians(15)))
    with pytest.raises(ValueError, match="non-zero"):
        quat_xyzw_to_matrix([0, 0, 0, 0])


def test_rejects_improper_rotation():
    with pytest.raises(ValueError, match="proper rotation"):
        SE3(np.diag([1, 1, -1]), np.zeros(3))


@given(vec3, st.tuples(*[st.floats(-3, 3, allow_nan=False)] * 3).map(np.array))
def test_ur_pose_round_trip(t, rv):
    pose = np.concatenate([t, rv])
    T = ur_pose_to_se3(pose)
    back = ur_pose_to_se3(se3_to_ur_pose(T))
    assert back.almost_equal(T, 1e-9, 1e-9)


def test_ur_pose_hand_worked():
    # UR rotation vector [0, 0, pi/2]: 90 deg about Base z
    T = ur_pose_to_se3([0.1, 0.2, 0.3, 0, 0, np.pi / 2])
    np.testing.assert_allclose(T.rotate([1, 0, 0]), [0, 1, 0], atol=1e-12)
    np.testing.assert_allclose(T.t, [0.1, 0.2, 0.3])


@settings(max_examples=50)
@given(st.lists(st.floats(0.001, 0.02), min_size=3, max_size=20), st.integers(0, 10_000))
def test_interpolation_returns_samples_at_sample_times(dts, seed):
    rng = np.random.default_rng(seed)
    t = np.cumsum(dts)
    P = rng.normal(size=(len(t), 3))
    Q = Rotation.random(len(t), random_state=seed).as_quat()
    p, q, ok = interpolate_poses(t, P, Q, t, max_gap=1.0)
    assert ok.all()
    np.testing.assert_allclose(p, P, atol=1e-12)
    ang = (Rotation.from_quat(q).inv() * Rotation.from_quat(Q)).magnitude()
    assert np.all(ang < 1e-9)


def test_interpolation_midpoint_and_gaps():
    t = np.array([0.0, 1.0, 3.0])
    P = np.array([[0, 0, 0], [2, 0, 0], [4, 0, 0]], float)
    Q = np.array([[0, 0, 0, 1], [0, 0, np.sin(np.pi / 4), np.cos(np.pi / 4)], [0, 0, 0, 1]])
    p, q, ok = interpolate_poses(t, P, Q, [0.5, 2.0, -1.0, 4.0], max_gap=1.5)
    assert ok.tolist() == [True, False, False, False]
    np.testing.assert_allclose(p[0], [1, 0, 0])
    np.testing.assert_allclose(Rotation.from_quat(q[0]).as_euler("xyz", degrees=True), [0, 0, 45], atol=1e-9)
    assert np.isnan(p[1]).all()


def test_interpolation_rejects_unsorted():
    with pytest.raises(ValueError, match="increasing"):
        interpolate_poses([0, 0], np.zeros((2, 3)), [[0, 0, 0, 1]] * 2, [0], 1.0)


def test_motive_yup_to_zup():
    # Motive Y-up: up is +y; a point 1 m above the origin must land at z = 1.
    p, q = motive_yup_to_zup([0, 1, 0], [0, 0, 0, 1])
    np.testing.assert_allclose(p, [0, 0, 1])
    np.testing.assert_allclose(q, [0, 0, 0, 1], atol=1e-12)
    # Motive +z (towards the viewer) maps to -y; x is kept.
    p, _ = motive_yup_to_zup([1, 0, 1], [0, 0, 0, 1])
    np.testing.assert_allclose(p, [1, -1, 0])
    # A body yawed 90 deg about Motive's up axis is yawed 90 deg about REP-103 z.
    q_m = Rotation.from_euler("y", 90, degrees=True).as_quat()
    _, q = motive_yup_to_zup([0, 0, 0], q_m)
    np.testing.assert_allclose(Rotation.from_quat(q).as_euler("zyx", degrees=True), [90, 0, 0], atol=1e-9)


def test_look_at_axes():
    T = look_at([1, 0, 0], [0, 0, 0])
    np.testing.assert_allclose(T.R[:, 2], [-1, 0, 0], atol=1e-12)  # optical axis at the target
    np.testing.assert_allclose(T.R[:, 1], [0, 0, -1], atol=1e-12)  # image down = world down
    np.testing.assert_allclose(T.R[:, 0], [0, 1, 0], atol=1e-12)  # image right


def test_quaternion_rows_to_matrices_equal_one_by_one():
    """quats_xyzw_to_matrices: the batch form of quat_xyzw_to_matrix, NaN for a gap row,
    a finite zero row rejected."""
    import numpy as np
    import pytest
    from gaze4hri_core.transforms import quat_xyzw_to_matrix, quats_xyzw_to_matrices

    q = np.random.default_rng(3).normal(size=(20, 4))
    q[5] = np.nan
    R = quats_xyzw_to_matrices(q)
    assert R.shape == (20, 3, 3) and np.isnan(R[5]).all()
    for i in (0, 1, 7, 19):
        np.testing.assert_allclose(R[i], quat_xyzw_to_matrix(q[i]), rtol=0, atol=1e-15)
    q[2] = 0.0
    with pytest.raises(ValueError):
        quats_xyzw_to_matrices(q)


def test_quaternion_to_matrix_in_closed_form_is_scipys():
    """Any non-zero quaternion, normalised or not, gives scipy's rotation of the unit quaternion."""
    rng = np.random.default_rng(7)
    for q in rng.normal(size=(500, 4)) * rng.uniform(1e-4, 1e3, (500, 1)):
        np.testing.assert_allclose(quat_xyzw_to_matrix(q), Rotation.from_quat(q / np.linalg.norm(q)).as_matrix(),
                                   atol=1e-12)
    for bad in ([np.nan, 0, 0, 1], [np.inf, 0, 0, 1], [0, 0, 0, 1e-12]):
        with pytest.raises(ValueError):
            quat_xyzw_to_matrix(bad)


def test_se3_quaternion_in_closed_form_is_scipys_canonical_one():
    """SE3.quat_xyzw (Shepperd's closed form) equals scipy's quaternion with w >= 0, also
    near half turns, where the closed form takes its other branches."""
    rng = np.random.default_rng(11)
    Rs = list(Rotation.random(300, random_state=3).as_matrix())
    Rs += [Rotation.from_rotvec(a * np.pi * (1 - 1e-9)).as_matrix() for a in np.eye(3)]
    for R in Rs:
        q = Rotation.from_matrix(R).as_quat()
        q = -q if q[3] < 0 else q
        np.testing.assert_allclose(SE3(R, rng.normal(size=3)).quat_xyzw, q, atol=1e-9)
