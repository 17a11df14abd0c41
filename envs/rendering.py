"""Cameras in pybullet: renderer choice, pinhole intrinsics, metric depth, poses.

Frames follow the robot interface (``agents/robot.py``): ``odom_T_camera`` is the
optical frame (+z forward, +x right, +y down) in the world frame, metres.

Renderers: the EGL plugin (OpenGL on Mesa llvmpipe here, about 1.5x faster) is used
when it loads; it must be loaded before any body exists, otherwise frames come back
blank. TinyRenderer is the fallback. The two sample pixels differently (EGL at pixel
centres, Tiny at column ``i`` and row ``j + 1``), so the intrinsics depend on the
renderer and are exact for both (checked against ``rayTestBatch`` in
``tests/envs/test_geometry_nav.py``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import os
import sys
from dataclasses import dataclass

import numpy as np
import pybullet as p

from agents.robot import CameraIntrinsics

EGL = "egl"
TINY = "tiny"
_EGL_FRAMES: dict[int, int] = {}  # EGL frames rendered per client since (re)start
_EGL_NOISY_FRAMES = 2  # Mesa prints a banner during a client's first two EGL frames


@dataclass(frozen=True)
class CameraSpec:
    """A pinhole camera: image size in pixels, vertical field of view, clip planes."""

    width_px: int = 320
    height_px: int = 240
    vfov_deg: float = 60.0  # vertical field of view
    near_m: float = 0.05
    far_m: float = 30.0  # depth beyond this reads as no return (0)

    def intrinsics(self, renderer: str) -> CameraIntrinsics:
        fy = (self.height_px / 2.0) / math.tan(math.radians(self.vfov_deg) / 2.0)
        # Tiny samples column i at continuous coordinate i (x_ndc = i / W * 2 - 1) and row j
        # at j + 1 (y_ndc = 1 - (j + 1) / H * 2); shifting the principal point by half a
        # pixel makes the pixel centre (i + 0.5, j + 0.5) hit the same ray.
        shift = 0.5 if renderer == TINY else 0.0
        return CameraIntrinsics(
            width_px=self.width_px,
            height_px=self.height_px,
            fx_px=fy,
            fy_px=fy,
            cx_px=self.width_px / 2.0 + shift,
            cy_px=self.height_px / 2.0 - shift,
        )

    def projection(self) -> list[float]:
        return p.computeProjectionMatrixFOV(
            self.vfov_deg, self.width_px / self.height_px, self.near_m, self.far_m
        )


@contextlib.contextmanager
def quiet_native_output():
    """Silence C-level stdout and stderr (the EGL plugin prints its GL banner there)."""
    fds = []
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
            fds.append(stream.fileno())
        except (AttributeError, OSError, ValueError):
            continue
    saved = [os.dup(fd) for fd in fds]
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in fds:
            os.dup2(devnull, fd)
        yield
    finally:
        for fd, keep in zip(fds, saved, strict=True):
            os.dup2(keep, fd)
            os.close(keep)
        os.close(devnull)


def connect(renderer: str = "auto") -> tuple[int, str]:
    """A new DIRECT client with the best available renderer loaded before any body.

    ``renderer``: "auto" (EGL if it loads, else Tiny), "egl" (error if unavailable) or
    "tiny". Returns ``(client_id, renderer_used)``.
    """
    if renderer not in ("auto", EGL, TINY):
        raise ValueError(f"renderer must be 'auto', 'egl' or 'tiny', not {renderer!r}")
    client = p.connect(p.DIRECT)
    if renderer == TINY:
        return client, TINY
    _preload_torchvision()
    spec = importlib.util.find_spec("eglRenderer")
    plugin = -1
    if spec is not None and spec.origin:
        with quiet_native_output():
            plugin = p.loadPlugin(spec.origin, "_eglRendererPlugin", physicsClientId=client)
    _EGL_FRAMES.pop(client, None)  # client ids are reused after a disconnect
    if plugin < 0:
        if renderer == EGL:
            p.disconnect(client)
            raise RuntimeError("the pybullet EGL renderer plugin did not load on this machine")
        return client, TINY
    return client, EGL


def reset_simulation(client: int) -> None:
    """``p.resetSimulation`` without the EGL banner it causes on the next frame."""
    with quiet_native_output():
        p.resetSimulation(physicsClientId=client)
    _EGL_FRAMES.pop(client, None)


def _preload_torchvision() -> None:
    """Import torchvision (when installed) before the EGL plugin loads.

    Measured here: importing torchvision after an EGL context exists segfaults the
    process (its bundled image libraries clash with Mesa's), and sentence-transformers
    imports torchvision whenever it is installed. Loaded first, both coexist.
    """
    if "torchvision" not in sys.modules and importlib.util.find_spec("torchvision") is not None:
        importlib.import_module("torchvision")


def _cross3(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.cross`` for two 3-vectors, without its generic-axis overhead (~30 us a call)."""
    return np.array(
        [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
    )


def look_at(eye, target, up=(0.0, 0.0, 1.0)) -> np.ndarray:
    """``odom_T_camera`` (4x4) for an optical frame at ``eye`` looking at ``target``."""
    eye = np.asarray(eye, dtype=float)
    z = np.asarray(target, dtype=float) - eye
    z /= np.linalg.norm(z)
    x = _cross3(z, np.asarray(up, dtype=float))
    if np.linalg.norm(x) < 1e-6:  # looking straight up or down
        x = _cross3(z, np.array([1.0, 0.0, 0.0]))
    x /= np.linalg.norm(x)
    y = _cross3(z, x)
    out = np.eye(4)
    out[:3, 0], out[:3, 1], out[:3, 2], out[:3, 3] = x, y, z, eye
    return out


def render(
    client: int, odom_T_camera: np.ndarray, spec: CameraSpec, renderer: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Render ``(rgb uint8 HxWx3, depth_m float32 HxW, body_id int32 HxW)``.

    Depth is metric z along the optical axis; 0 where nothing is hit within ``far_m``.
    ``body_id`` is -1 where nothing is hit.
    """
    eye = odom_T_camera[:3, 3]
    forward = odom_T_camera[:3, 2]
    up = -odom_T_camera[:3, 1]
    view = p.computeViewMatrix(eye.tolist(), (eye + forward).tolist(), up.tolist())
    args = dict(
        width=spec.width_px,
        height=spec.height_px,
        viewMatrix=view,
        projectionMatrix=spec.projection(),
        renderer=p.ER_BULLET_HARDWARE_OPENGL if renderer == EGL else p.ER_TINY_RENDERER,
        physicsClientId=client,
    )
    if renderer == EGL and _EGL_FRAMES.get(client, 0) < _EGL_NOISY_FRAMES:
        with quiet_native_output():
            _, _, rgba, zbuf, seg = p.getCameraImage(**args)
        _EGL_FRAMES[client] = _EGL_FRAMES.get(client, 0) + 1
    else:
        _, _, rgba, zbuf, seg = p.getCameraImage(**args)
    h, w = spec.height_px, spec.width_px
    rgba = np.asarray(rgba, dtype=np.uint8).reshape(h, w, 4)
    # stacking the three planes is 4-8x faster than a contiguous copy of rgba[..., :3]
    rgb = np.stack((rgba[..., 0], rgba[..., 1], rgba[..., 2]), axis=-1)
    zbuf = np.asarray(zbuf, dtype=np.float64).reshape(h, w)
    near, far = spec.near_m, spec.far_m
    depth = (far * near / (far - (far - near) * zbuf)).astype(np.float32)
    depth[zbuf >= 1.0 - 1e-7] = 0.0
    # without the link-index flag pybullet's mask holds the body unique id, -1 for none
    body = np.asarray(seg, dtype=np.int32).reshape(h, w)
    return rgb, depth, body
