"""faces.mesh_graph: the landmark list read from its serialized bytes equals protobuf's
parse, in the packed layout (x, y, z only) and in any other (visibility set)."""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.unit


def _list(points, visibility=False) -> bytes:
    from mediapipe.framework.formats import landmark_pb2

    msg = landmark_pb2.NormalizedLandmarkList()
    for x, y, z in points:
        p = msg.landmark.add(x=x, y=y, z=z)
        if visibility:
            p.visibility = 0.5
    return msg.SerializeToString()


@pytest.mark.parametrize("visibility", [False, True])
def test_parse_equals_protobuf(visibility):
    pytest.importorskip("mediapipe")
    from gaze4hri_bench.faces.mesh_graph import parse_landmark_list

    pts = np.random.default_rng(0).uniform(-1, 1, (468, 3)).astype(np.float32)
    out = parse_landmark_list(_list(pts.tolist(), visibility))
    assert out.shape == (468, 3) and out.dtype == float
    np.testing.assert_array_equal(out, pts.astype(float))


def test_parse_a_zero_coordinate():
    """protobuf leaves a 0.0 field out: the packed view does not apply and protobuf parses it."""
    pytest.importorskip("mediapipe")
    from gaze4hri_bench.faces.mesh_graph import parse_landmark_list

    pts = [(0.25, 0.0, -0.5), (0.5, 0.75, 0.125)]
    np.testing.assert_array_equal(parse_landmark_list(_list(pts)), np.array(pts))
