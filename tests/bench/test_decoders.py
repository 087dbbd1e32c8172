"""Output decoding rules against hand-computed values (methods.md; GazeHub gazeto3d)."""
from __future__ import annotations

import numpy as np
import pytest
from gaze4hri_bench.decoders import DECODERS, decode, l2cs_angles_deg
from gaze4hri_core.gaze import vector_to_pitchyaw

pytestmark = pytest.mark.unit


def test_pitchyaw_and_yawpitch_orders():
    p, y = np.radians(-20.0), np.radians(30.0)
    a = decode("pitchyaw_rad", [np.array([[p, y]])])[0]
    b = decode("yawpitch_rad", [np.array([[y, p]])])[0]
    np.testing.assert_allclose(a, b, atol=1e-12)
    # Frame A by hand: (-cos p sin y, -sin p, -cos p cos y)
    np.testing.assert_allclose(a, [-np.cos(p) * np.sin(y), -np.sin(p), -np.cos(p) * np.cos(y)], atol=1e-12)
    assert a[0] < 0 and a[1] > 0  # yaw +30 looks to the camera's left (x<0); pitch -20 looks down (y>0)


def test_zero_output_is_looking_into_the_camera():
    for rule in ("pitchyaw_rad", "yawpitch_rad"):
        np.testing.assert_allclose(decode(rule, [np.zeros((1, 2))])[0], [0, 0, -1], atol=1e-12)


def test_l2cs_expectation_over_bins():
    one_hot = np.full((3, 90), -1e9)
    for i, k in enumerate((0, 45, 60)):
        one_hot[i, k] = 0.0
    np.testing.assert_allclose(l2cs_angles_deg(one_hot), [-180.0, 0.0, 60.0])
    # uniform logits: mean index 44.5 -> 44.5 * 4 - 180 = -2 deg
    np.testing.assert_allclose(l2cs_angles_deg(np.zeros((1, 90))), [-2.0])
    with pytest.raises(ValueError):
        l2cs_angles_deg(np.zeros((1, 66)))


def test_l2cs_first_head_is_yaw():
    yaw_bins = np.full((1, 90), -1e9)
    yaw_bins[0, 45 + 5] = 0  # +20 deg
    pitch_bins = np.full((1, 90), -1e9)
    pitch_bins[0, 45 - 2] = 0  # -8 deg
    py = np.degrees(vector_to_pitchyaw(decode("l2cs_bins", [yaw_bins, pitch_bins])))[0]
    np.testing.assert_allclose(py, [-8.0, 20.0], atol=1e-9)


def test_vector_b_axes():
    # Frame B: x left, y up, z away; into the camera is (0, 0, -1) in both frames
    out = decode("vector_b", [np.array([[[0, 0, -1.0], [1.0, 0, 0], [0, 2.0, 0]]])])[0]
    np.testing.assert_allclose(out, [[0, 0, -1], [-1, 0, 0], [0, -1, 0]], atol=1e-12)
    assert out.shape == (3, 3)


def test_unknown_rule():
    from gaze4hri_core.registry import UnknownName

    with pytest.raises(UnknownName) as e:
        decode("quaternion", [np.zeros((1, 4))])
    assert str(e.value).startswith("unknown output rule 'quaternion' (MethodSpec.output)")
    assert "known: pitchyaw_rad, yawpitch_rad" in str(e.value)
    # spec files add degree, Frame A and other-bins rules (output_rules.py; bins_* made on first use)
    assert {n for n in DECODERS if not n.startswith("bins_")} == {
        "pitchyaw_rad", "yawpitch_rad", "l2cs_bins", "l2cs_bins_first_as_pitch", "vector_b",
        "pitchyaw_deg", "yawpitch_deg", "vector_a"}
