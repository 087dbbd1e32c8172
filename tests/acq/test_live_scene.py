"""The live view's 3D scene from a geometry (live_scene.py): one entity per thing known,
the current target larger, the camera frustum through the image corners, the gaze
estimate's arrow along the estimate turned into the world."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("foxglove")
from gaze4hri_acq.live_scene import arrow_orientation, scene_entities  # noqa: E402


def _geo():
    Rz = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])  # camera turned 90 deg about z
    return {"targets": {"P1": np.array([1.0, 0.0, 1.0]), "P2": np.array([1.0, 0.5, 1.0])},
            "tool0": (np.eye(3), np.array([0.5, 0.0, 1.2])), "camera": (Rz, np.array([0.6, 0.0, 1.2])),
            "head": (np.eye(3), np.array([2.0, 0.0, 1.3])), "eye": np.array([1.9, 0.0, 1.2]),
            "target": np.array([1.0, 0.0, 1.0])}


def _entities(**kw) -> dict:
    """The scene as a client decodes it (the SDK's messages are opaque): id -> entity."""
    from foxglove.messages import SceneUpdate, Timestamp
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    update = SceneUpdate(entities=scene_entities(_geo(), ts=Timestamp.from_epoch_secs(1.0), frame="world", **kw))
    schema = SceneUpdate.get_schema()
    pool = descriptor_pool.DescriptorPool()
    for f in descriptor_pb2.FileDescriptorSet.FromString(schema.data).file:
        pool.Add(f)
    msg = message_factory.GetMessageClass(pool.FindMessageTypeByName(schema.name)).FromString(update.encode())
    return {e.id: e for e in msg.entities}


@pytest.mark.unit
def test_every_known_part_is_an_entity_and_the_current_target_is_larger():
    K = np.array([[100.0, 0, 80], [0, 100.0, 45], [0, 0, 1]])
    by = _entities(current_target="P2", K=K, wh=(160, 90), gaze=np.array([0.0, 0.0, 2.0]))
    assert set(by) == {"targets", "robot_tool", "camera_frustum", "head_band", "eye_midpoint", "gaze_truth",
                       "gaze_estimate"}
    sizes = {t.text: s.size.x for s, t in zip(by["targets"].spheres, by["targets"].texts, strict=True)}
    assert sizes == {"P1": 0.03, "P2": 0.05}
    assert len(by["camera_frustum"].lines[0].points) == 16  # 4 edges from the centre, 4 around the image
    assert [(p.x, p.y, p.z) for p in by["gaze_truth"].lines[0].points] == [(1.9, 0.0, 1.2), (1.0, 0.0, 1.0)]
    # the arrow: from the eye midpoint along the estimate in the world (camera z -> world z here)
    arrow = by["gaze_estimate"].arrows[0]
    assert (arrow.pose.position.x, arrow.pose.position.y, arrow.pose.position.z) == (1.9, 0.0, 1.2)
    q = arrow.pose.orientation
    np.testing.assert_allclose(_x_axis(q.x, q.y, q.z, q.w), [0.0, 0.0, 1.0], atol=1e-9)
    # without intrinsics no frustum, without an estimate no arrow
    assert set(_entities()) == {"targets", "robot_tool", "head_band", "eye_midpoint", "gaze_truth"}


def _x_axis(x, y, z, w):
    """The first column of the rotation of a unit quaternion (x, y, z, w)."""
    return [1 - 2 * (y * y + z * z), 2 * (x * y + z * w), 2 * (x * z - y * w)]


@pytest.mark.unit
@pytest.mark.parametrize("d", [(1.0, 0.0, 0.0), (0.0, 0.0, -1.0), (0.3, -0.4, 0.5)])
def test_the_arrow_points_along_the_direction(d):
    R = arrow_orientation(np.array(d))
    np.testing.assert_allclose(R[:, 0], np.array(d) / np.linalg.norm(d), atol=1e-12)
    np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-12)
    assert np.linalg.det(R) == pytest.approx(1.0)
