"""Raw pybullet scenes and a TinyRenderer camera for the mapping tests.

Independent of ``envs/`` on purpose: these tests check the map against pybullet itself
(``getCameraImage`` + ``rayTestBatch``).

TinyRenderer's pixel convention, measured against ``rayTestBatch`` (see
``test_backprojection_agrees_with_pybullet_ray_tests``): column ``i`` is sampled at
``x_ndc = i / W * 2 - 1`` and row ``j`` at ``y_ndc = 1 - (j + 1) / H * 2``, the lower-left
corner of the pixel in OpenGL window coordinates. With the frame contract's pixel
centres at ``(u + 0.5, v + 0.5)`` the principal point is therefore
``(W / 2 + 0.5, H / 2 - 0.5)``. (``(W / 2 - 0.5, ...)``, i.e. ``(i + 1) / W`` in x, is
one pixel off: depth stays exact on surfaces whose depth does not vary along image
rows, such as a level floor, but walls come out centimetres off at 160 px.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pybullet as p

from agents.robot import CameraIntrinsics, Frame

GL_FROM_CV = np.diag([1.0, -1.0, -1.0, 1.0])  # OpenCV optical axes -> OpenGL camera axes


@dataclass(frozen=True)
class Camera:
    width_px: int = 160
    height_px: int = 120
    vfov_deg: float = 60.0
    near_m: float = 0.05
    far_m: float = 20.0

    def intrinsics(self) -> CameraIntrinsics:
        f = (self.height_px / 2.0) / math.tan(math.radians(self.vfov_deg) / 2.0)
        return CameraIntrinsics(
            self.width_px,
            self.height_px,
            f,
            f,
            self.width_px / 2.0 + 0.5,
            self.height_px / 2.0 - 0.5,
        )


@dataclass
class Scene:
    """A DIRECT pybullet world; ``phrases`` maps body id -> appearance phrase."""

    client: int
    phrases: dict[int, str] = field(default_factory=dict)
    truth: dict[str, tuple[float, float, float]] = field(default_factory=dict)  # test oracle only

    @classmethod
    def empty(cls) -> Scene:
        return cls(client=p.connect(p.DIRECT))

    def close(self) -> None:
        p.disconnect(self.client)

    def box(self, name: str, centre, half_extents, phrase: str, rgba=(0.6, 0.6, 0.6, 1)) -> int:
        col = p.createCollisionShape(
            p.GEOM_BOX, halfExtents=half_extents, physicsClientId=self.client
        )
        vis = p.createVisualShape(
            p.GEOM_BOX, halfExtents=half_extents, rgbaColor=rgba, physicsClientId=self.client
        )
        body = p.createMultiBody(0, col, vis, basePosition=centre, physicsClientId=self.client)
        self.phrases[body] = phrase
        self.truth[name] = tuple(float(c) for c in centre)
        return body

    def cylinder(
        self, name: str, x: float, y: float, radius: float, height: float, phrase: str, rgba
    ) -> int:
        col = p.createCollisionShape(
            p.GEOM_CYLINDER, radius=radius, height=height, physicsClientId=self.client
        )
        vis = p.createVisualShape(
            p.GEOM_CYLINDER,
            radius=radius,
            length=height,
            rgbaColor=rgba,
            physicsClientId=self.client,
        )
        body = p.createMultiBody(
            0, col, vis, basePosition=[x, y, height / 2], physicsClientId=self.client
        )
        self.phrases[body] = phrase
        self.truth[name] = (x, y, height / 2)
        return body

    def room(self, x0: float, y0: float, x1: float, y1: float, wall_h: float = 1.5) -> None:
        """Floor slab (top at z = 0) and four walls."""
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        hx, hy = (x1 - x0) / 2 + 0.1, (y1 - y0) / 2 + 0.1
        self.box("floor", [cx, cy, -0.05], [hx, hy, 0.05], "floor", (0.5, 0.5, 0.5, 1))
        for name, c, h in (
            ("wall_s", [cx, y0 - 0.05, wall_h / 2], [hx, 0.05, wall_h / 2]),
            ("wall_n", [cx, y1 + 0.05, wall_h / 2], [hx, 0.05, wall_h / 2]),
            ("wall_w", [x0 - 0.05, cy, wall_h / 2], [0.05, hy, wall_h / 2]),
            ("wall_e", [x1 + 0.05, cy, wall_h / 2], [0.05, hy, wall_h / 2]),
        ):
            self.box(name, c, h, "wall", (0.8, 0.8, 0.75, 1))


def look_at(eye, target) -> np.ndarray:
    """``odom_T_camera`` (OpenCV optical axes) at ``eye`` looking at ``target``, z up."""
    eye = np.asarray(eye, float)
    z = np.asarray(target, float) - eye
    z /= np.linalg.norm(z)
    x = np.cross(z, [0.0, 0.0, 1.0])
    x /= np.linalg.norm(x)
    out = np.eye(4)
    out[:3, 0], out[:3, 1], out[:3, 2], out[:3, 3] = x, np.cross(z, x), z, eye
    return out


def spot_camera(x: float, y: float, yaw: float, height_m: float = 0.72, pitch_deg: float = 15.0):
    """A Spot-like front body camera pose: ``height_m`` up, pitched down ``pitch_deg``."""
    pitch = math.radians(pitch_deg)
    eye = np.array([x, y, height_m])
    fwd = np.array(
        [math.cos(yaw) * math.cos(pitch), math.sin(yaw) * math.cos(pitch), -math.sin(pitch)]
    )
    return look_at(eye, eye + fwd)


def view_matrix(odom_T_camera: np.ndarray) -> list[float]:
    """pybullet's column-major view matrix for an optical-frame pose."""
    eye = odom_T_camera[:3, 3]
    fwd, up = odom_T_camera[:3, 2], -odom_T_camera[:3, 1]
    return p.computeViewMatrix(eye.tolist(), (eye + fwd).tolist(), up.tolist())


def pose_from_view(view: list[float]) -> np.ndarray:
    """``odom_T_camera`` (OpenCV optical) recovered from a pybullet view matrix."""
    gl_T_world = np.asarray(view, dtype=float).reshape(4, 4).T
    return np.linalg.inv(GL_FROM_CV @ gl_T_world)


def render(scene: Scene, odom_T_camera: np.ndarray, cam: Camera, stamp_s: float = 0.0) -> Frame:
    """TinyRenderer RGB-D + body-id segmentation as a :class:`Frame` (pose from the view matrix)."""
    view = view_matrix(odom_T_camera)
    proj = p.computeProjectionMatrixFOV(
        cam.vfov_deg, cam.width_px / cam.height_px, cam.near_m, cam.far_m
    )
    _, _, rgba, zbuf, seg = p.getCameraImage(
        cam.width_px,
        cam.height_px,
        view,
        proj,
        renderer=p.ER_TINY_RENDERER,
        physicsClientId=scene.client,
    )
    h, w = cam.height_px, cam.width_px
    zbuf = np.asarray(zbuf, float).reshape(h, w)
    depth = cam.far_m * cam.near_m / (cam.far_m - (cam.far_m - cam.near_m) * zbuf)
    depth[zbuf >= 1.0 - 1e-7] = 0.0
    return Frame(
        rgb=np.asarray(rgba, np.uint8).reshape(h, w, 4)[..., :3].copy(),
        depth_m=depth.astype(np.float32),
        intrinsics=cam.intrinsics(),
        odom_T_camera=pose_from_view(view),
        stamp_s=stamp_s,
        segmentation=np.asarray(seg, np.int32).reshape(h, w),
        segment_phrases=dict(scene.phrases),
    )


def barrel_scene() -> Scene:
    """A 10 x 10 m room: three barrels, a barrel-like distractor, unrelated objects."""
    s = Scene.empty()
    s.room(0.0, 0.0, 10.0, 10.0)
    blue, rust, yellow = (0.1, 0.3, 0.8, 1), (0.6, 0.3, 0.1, 1), (0.9, 0.8, 0.1, 1)
    s.cylinder("barrel_a", 7.2, 3.4, 0.29, 0.88, "blue plastic barrel", blue)
    s.cylinder("barrel_b", 6.4, 7.6, 0.29, 0.88, "rusty oil barrel", rust)
    s.cylinder("barrel_c", 2.4, 7.2, 0.29, 0.88, "yellow chemical barrel", yellow)
    s.cylinder("drum", 3.0, 4.4, 0.29, 0.88, "steel drum", (0.7, 0.7, 0.7, 1))
    s.box("crate", [5.0, 1.8, 0.3], [0.4, 0.3, 0.3], "wooden crate", (0.7, 0.5, 0.3, 1))
    s.cylinder("cone", 8.6, 8.6, 0.15, 0.5, "orange traffic cone", (1.0, 0.5, 0.0, 1))
    s.box("table", [8.8, 5.5, 0.37], [0.4, 0.8, 0.37], "wooden lab table", (0.8, 0.7, 0.5, 1))
    return s


def survey_poses() -> list[np.ndarray]:
    """A scripted survey: a loop through the room looking around at each stop."""
    stops = [(1.2, 1.2), (5.0, 5.0), (8.6, 1.4), (8.0, 6.2), (4.4, 8.6), (1.4, 5.5)]
    poses = []
    for x, y in stops:
        for k in range(6):
            poses.append(spot_camera(x, y, k * math.pi / 3))
    return poses
