"""The live view's 3D scene (live_view.py, channel ``/gaze4hri/live/scene``): Foxglove
scene entities in ``world`` from the geometry LiveView.geometry composes: the targets
(the current one larger), the robot tool, the camera frustum, the head band, the eye
midpoint, the ground-truth gaze ray and the live gaze estimate. Builds messages only;
the live view sends them. foxglove-sdk is imported when a scene is built (an optional
dependency: the live view checks it at start)."""
from __future__ import annotations

import numpy as np

__all__ = ["scene_entities", "arrow_orientation", "R_to_q"]


def R_to_q(R) -> tuple[float, float, float, float]:
    """Rotation matrix -> quaternion (x, y, z, w)."""
    from gaze4hri_core.transforms import matrix_to_quat_xyzw

    return tuple(float(v) for v in matrix_to_quat_xyzw(np.asarray(R, float)))


def arrow_orientation(direction) -> np.ndarray:
    """A rotation whose x axis is ``direction`` (Foxglove arrows point along +x)."""
    x = np.asarray(direction, float) / np.linalg.norm(direction)
    a = np.array([0.0, 0.0, 1.0]) if abs(x[2]) < 0.9 else np.array([0.0, 1.0, 0.0])
    y = np.cross(a, x)
    y /= np.linalg.norm(y)
    return np.column_stack([x, y, np.cross(x, y)])


class _Scene:
    """Primitives stamped ``ts`` in ``frame``; one method per entity of the scene."""

    def __init__(self, ts, frame: str):
        import foxglove.messages as fm

        self.fm, self.ts, self.frame = fm, ts, frame

    def pose(self, t, R=None):
        fm = self.fm
        q = R_to_q(R) if R is not None else (0.0, 0.0, 0.0, 1.0)
        return fm.Pose(position=fm.Vector3(x=float(t[0]), y=float(t[1]), z=float(t[2])),
                       orientation=fm.Quaternion(x=q[0], y=q[1], z=q[2], w=q[3]))

    def col(self, r, g, b, a=1.0):
        return self.fm.Color(r=r, g=g, b=b, a=a)

    def pt(self, p):
        return self.fm.Point3(x=float(p[0]), y=float(p[1]), z=float(p[2]))

    def size(self, x, y, z):
        return self.fm.Vector3(x=x, y=y, z=z)

    def entity(self, id_, **kw):
        return self.fm.SceneEntity(timestamp=self.ts, frame_id=self.frame, id=id_, frame_locked=False, **kw)

    def text(self, t, s, size=0.03):
        return self.fm.TextPrimitive(pose=self.pose(np.asarray(t) + [0, 0, 0.04]), billboard=True, font_size=size,
                                     scale_invariant=False, color=self.col(1, 1, 1), text=s)

    def lines(self, points, line_type="LineList", thickness=0.004, **kw):
        fm = self.fm
        return fm.LinePrimitive(type=getattr(fm.LinePrimitiveLineType, line_type), thickness=thickness,
                                points=[self.pt(p) for p in points], **kw)

    def axes(self, R, t, length=0.08):
        pts, cols = [], []
        for i, c in enumerate(((1, 0, 0), (0, 1, 0), (0, 0.4, 1))):
            pts += [t, t + length * R[:, i]]
            cols += [self.col(*c), self.col(*c)]
        return self.lines(pts, thickness=0.006, colors=cols)

    def targets(self, targets: dict, current: str):
        spheres, texts = [], []
        for name, p in sorted(targets.items()):
            on = name == current
            s = 0.05 if on else 0.03
            color = self.col(1.0, 0.55, 0.0) if on else self.col(0.9, 0.9, 0.2, 0.8)
            spheres.append(self.fm.SpherePrimitive(pose=self.pose(p), size=self.size(s, s, s), color=color))
            texts.append(self.text(p, name))
        return self.entity("targets", spheres=spheres, texts=texts)

    def tool(self, R, t):
        cube = self.fm.CubePrimitive(pose=self.pose(t, R), size=self.size(0.05, 0.05, 0.03),
                                     color=self.col(0.6, 0.6, 0.65, 0.9))
        return self.entity("robot_tool", lines=[self.axes(R, t)], cubes=[cube], texts=[self.text(t, "tool0")])

    def frustum(self, R, t, K, wh, depth=0.15):
        w, h = wh
        corners = [t + R @ (depth * np.array([(u - K[0, 2]) / K[0, 0], (v - K[1, 2]) / K[1, 1], 1.0]))
                   for u, v in ((0, 0), (w, 0), (w, h), (0, h))]
        pts = []
        for i, c in enumerate(corners):
            pts += [t, c, c, corners[(i + 1) % 4]]
        return self.entity("camera_frustum", lines=[self.lines(pts, color=self.col(0.2, 0.8, 1.0))],
                           texts=[self.text(t, "camera")])

    def head(self, R, t):
        cube = self.fm.CubePrimitive(pose=self.pose(t, R), size=self.size(0.18, 0.16, 0.03),
                                     color=self.col(0.55, 0.35, 0.9, 0.7))
        return self.entity("head_band", cubes=[cube], lines=[self.axes(R, t, 0.1)], texts=[self.text(t, "head_band")])

    def eye(self, e):
        sphere = self.fm.SpherePrimitive(pose=self.pose(e), size=self.size(0.025, 0.025, 0.025),
                                         color=self.col(1, 1, 1))
        return self.entity("eye_midpoint", spheres=[sphere])

    def gaze_truth(self, e, target):
        ray = self.lines([e, target], "LineStrip", 0.008, color=self.col(0.0, 0.8, 0.0))
        return self.entity("gaze_truth", lines=[ray])

    def gaze_estimate(self, e, direction_world):
        arrow = self.fm.ArrowPrimitive(pose=self.pose(e, arrow_orientation(direction_world)), shaft_length=0.4,
                                       shaft_diameter=0.01, head_length=0.06, head_diameter=0.03,
                                       color=self.col(1.0, 0.2, 0.6))
        return self.entity("gaze_estimate", arrows=[arrow])


def scene_entities(geo: dict, *, ts, frame: str, current_target: str = "", K=None, wh=None, gaze=None) -> list:
    """The scene's entities from ``geo`` (LiveView.geometry: ``targets`` and, when known,
    ``tool0``/``camera``/``head`` as (R, t), ``eye`` and ``target`` points in world);
    ``K``/``wh``: the camera intrinsics for the frustum; ``gaze``: the live estimate in
    the camera frame (drawn from the eye midpoint when the camera pose is known)."""
    sc = _Scene(ts, frame)
    ents = [sc.targets(geo["targets"], current_target)]
    if "tool0" in geo:
        ents.append(sc.tool(*geo["tool0"]))
    if "camera" in geo and K is not None:
        ents.append(sc.frustum(*geo["camera"], K, wh))
    if "head" in geo:
        ents.append(sc.head(*geo["head"]))
    if "eye" in geo:
        e = geo["eye"]
        ents.append(sc.eye(e))
        if "target" in geo:
            ents.append(sc.gaze_truth(e, geo["target"]))
        if gaze is not None and "camera" in geo:
            ents.append(sc.gaze_estimate(e, geo["camera"][0] @ (gaze / np.linalg.norm(gaze))))
    return ents
