"""UR5/UR5e forward kinematics against published numbers, and analytic IK."""
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gaze4hri_core import kinematics

pytestmark = pytest.mark.unit


def test_ur5_zero_pose_matches_dh_table():
    # All joints at zero: the arm lies along -x of Base. From the DH table:
    # x = a2 + a3, y = -(d4 + d6), z = d1 - d5; tool z axis along -y.
    T = kinematics.forward(np.zeros(6), "ur5")
    np.testing.assert_allclose(T[:3, 3], [-0.425 - 0.39225, -(0.10915 + 0.0823), 0.089159 - 0.09465], atol=1e-12)
    np.testing.assert_allclose(T[:3, 2], [0, -1, 0], atol=1e-12)


def test_ur5e_zero_pose():
    T = kinematics.forward(np.zeros(6), "ur5e")
    np.testing.assert_allclose(T[:3, 3], [-0.425 - 0.3922, -(0.1333 + 0.0996), 0.1625 - 0.0997], atol=1e-12)


def test_ur5_upright_pose_hand_worked():
    # q2 = -pi/2 (upper arm vertical), q4 = -pi/2: the forearm points up too and the
    # wrist points along -y... verify against an independent chain built from
    # rotation/translation primitives.
    q = np.array([0.3, -np.pi / 2, 0.0, -np.pi / 2, 0.2, -0.4])
    p = kinematics.MODELS["ur5"]

    def rz(t):
        c, s = np.cos(t), np.sin(t)
        return np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]])

    def rx(t):
        c, s = np.cos(t), np.sin(t)
        return np.array([[1, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1.0]])

    def tr(x, z):
        T = np.eye(4)
        T[0, 3], T[2, 3] = x, z
        return T

    T = np.eye(4)
    for i in range(6):
        T = T @ rz(q[i]) @ tr(0, p.d[i]) @ tr(p.a[i], 0) @ rx(p.alpha[i])
    np.testing.assert_allclose(kinematics.forward(q, "ur5"), T, atol=1e-12)


def test_base_link_is_base_rotated_pi():
    q = np.array([0.1, -1.0, 1.2, -0.5, 0.7, 0.0])
    Tb = kinematics.forward(q, "ur5")
    Tbl = kinematics.forward(q, "ur5", frame="base_link")
    np.testing.assert_allclose(Tbl[:2, 3], -Tb[:2, 3])
    np.testing.assert_allclose(Tbl[2, 3], Tb[2, 3])


joint = st.floats(-np.pi + 1e-3, np.pi - 1e-3, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(st.tuples(*[joint] * 6), st.sampled_from(["ur5", "ur5e"]))
@example((0.0, -1.4375, 0.0, 3.0, -3.138671875, 0.0), "ur5")  # elbow singularity (found by hypothesis)
@example((1.0, 0.0, 0.0, -1.0, 0.0, 0.0), "ur5")  # wrist singularity
def test_fk_of_ik_round_trip(q, model):
    q = np.array(q)
    T = kinematics.forward(q, model)
    sols = kinematics.inverse(T, model, q_near=q)
    assert sols, "reachable pose without IK solution"
    for s in sols:
        np.testing.assert_allclose(kinematics.forward(s, model), T, atol=1e-6)
    # wrist singularity (sin q5 ~ 0) leaves q6 free: then only the pose must match.
    # Near the elbow singularity (q3 ~ 0) theta3 = arccos(c3) is ill-conditioned: a
    # 1e-12 error in c3 moves theta3 by ~sqrt(2e-12) ~ 1e-6, while the pose still matches.
    if abs(np.sin(q[4])) > 1e-3:
        tol = 1e-5 if abs(np.sin(q[2])) < 1e-3 else 1e-6
        np.testing.assert_allclose(sols[0], q, atol=tol)


def test_ik_generic_pose_has_eight_solutions_sorted():
    q = np.array([0.4, -1.2, 1.5, -0.9, 1.1, 0.3])
    sols = kinematics.inverse(kinematics.forward(q), q_near=q)
    assert len(sols) == 8
    d = [np.linalg.norm(s - q) for s in sols]
    assert d == sorted(d)


def test_ik_unreachable_returns_empty():
    T = np.eye(4)
    T[:3, 3] = [2.0, 0, 0]
    assert kinematics.inverse(T) == []


def test_unknown_model_is_the_registry_line():
    from gaze4hri_core.registry import UnknownName

    with pytest.raises(UnknownName) as e:
        kinematics.forward(np.zeros(6), "ur5x")
    assert str(e.value) == "unknown robot model 'ur5x' (model parameter): did you mean ur5 or ur5e? known: ur5, ur5e"
    assert kinematics.forward(np.zeros(6), "UR5E").shape == (4, 4)  # case-insensitive (registry.py)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(*[joint] * 6), min_size=1, max_size=12), st.sampled_from(["ur5", "ur5e"]))
@example([(0.4, -1.2, 1.5, -0.9, 1.1, 0.3), (1.0, 0.0, 0.0, -1.0, 0.0, 0.0)], "ur5")  # generic, wrist singular
def test_ik_of_many_poses_at_once_is_the_analytic_ik_of_each(qs, model):
    """inverse_many (a preview's poses at once) finds the branches inverse finds, pose by
    pose, and flags the wrist singularity, which inverse solves on its own."""
    qs = np.array(qs)
    T = kinematics.forward_many(qs, model)
    sols, singular = kinematics.inverse_many(T, model)
    assert sols.shape == (len(qs), 8, 6)
    for i, q in enumerate(qs):
        np.testing.assert_allclose(T[i], kinematics.forward(q, model), atol=1e-12)
        ref = kinematics.inverse(T[i], model)
        got = [s for s in sols[i] if np.isfinite(s).all()]
        if singular[i]:
            assert abs(np.sin(q[4])) < 1e-3
            continue
        for s in got:
            np.testing.assert_allclose(kinematics.forward(s, model), T[i], atol=1e-6)
        def same(a, b):
            return np.allclose((a - b + np.pi) % (2 * np.pi) - np.pi, 0.0, atol=1e-6)  # inverse merges closer ones
        assert all(any(same(r, g) for g in got) for r in ref) and all(any(same(g, r) for r in ref) for g in got)


def test_ik_of_many_poses_out_of_reach_is_nan():
    T = np.tile(np.eye(4), (3, 1, 1))
    T[1, :3, 3] = [2.0, 0, 0]
    T[:, :3, 3] += [[0.3, 0.2, 0.3], [0, 0, 0], [0.0, 0.0, 0.0]]
    sols, _ = kinematics.inverse_many(T)
    assert np.isnan(sols[1]).all() and np.isfinite(sols[0]).any()
