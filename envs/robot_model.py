"""A Spot-like robot generated in code, and where its cameras sit.

Kinematic only (legged dynamics are out of scope): the base is placed with
``resetBasePositionAndOrientation``. Dimensions follow Boston Dynamics Spot: body
1.1 x 0.5 m, body top about 0.7 m above the floor, a 6-DoF arm on the front of the
body with a gripper camera, and a front RGB-D body camera.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pybullet as p

from envs.bodies import fixed_compound
from envs.rendering import look_at
from scenarios.geometry import ROBOT_LENGTH_M, ROBOT_WIDTH_M

BODY_HEIGHT_M = 0.18  # body box thickness
BODY_CENTRE_Z_M = 0.56  # body centre above the floor (standing)
LEG_LENGTH_M = 0.47
BODY_COLOUR = (0.95, 0.78, 0.10, 1.0)  # Spot yellow
DARK = (0.12, 0.12, 0.12, 1.0)


@dataclass(frozen=True)
class CameraMount:
    """Where the body camera sits in the body frame (x forward, z up), metres/degrees."""

    forward_m: float = 0.58
    height_m: float = 0.72  # above the floor
    pitch_down_deg: float = 15.0


@dataclass(frozen=True)
class ArmLimits:
    """Working ranges measured from the body centre, metres."""

    inspect_range_m: float = 3.0  # the gripper camera can be aimed this far out
    grasp_reach_m: float = 1.3  # object footprint within this distance
    place_reach_m: float = 1.6  # place point within this distance
    hand_standoff_m: float = 0.7  # gripper camera distance from an inspected target
    hand_height_above_m: float = 0.6  # gripper camera above the inspected point


def build_robot(client: int) -> int:
    """Create the robot body (base = torso; legs, arm and gripper as fixed links)."""

    def box(half, colour):
        v = p.createVisualShape(
            p.GEOM_BOX, halfExtents=half, rgbaColor=colour, physicsClientId=client
        )
        c = p.createCollisionShape(p.GEOM_BOX, halfExtents=half, physicsClientId=client)
        return c, v

    def cyl(radius, length, colour):
        v = p.createVisualShape(
            p.GEOM_CYLINDER, radius=radius, length=length, rgbaColor=colour, physicsClientId=client
        )
        c = p.createCollisionShape(
            p.GEOM_CYLINDER, radius=radius, height=length, physicsClientId=client
        )
        return c, v

    base_c, base_v = box([ROBOT_LENGTH_M / 2, ROBOT_WIDTH_M / 2, BODY_HEIGHT_M / 2], BODY_COLOUR)
    links = []  # (collision, visual, position relative to base centre)
    hx, hy = ROBOT_LENGTH_M / 2 - 0.12, ROBOT_WIDTH_M / 2 - 0.05
    for sx in (1, -1):
        for sy in (1, -1):
            c, v = cyl(0.045, LEG_LENGTH_M, DARK)
            links.append((c, v, [sx * hx, sy * hy, -BODY_HEIGHT_M / 2 - LEG_LENGTH_M / 2 + 0.04]))
    c, v = box([0.30, 0.05, 0.04], DARK)  # stowed arm along the back
    links.append((c, v, [0.15, 0.0, BODY_HEIGHT_M / 2 + 0.05]))
    c, v = box([0.08, 0.05, 0.05], DARK)  # gripper at the front
    links.append((c, v, [0.45, 0.0, BODY_HEIGHT_M / 2 + 0.05]))
    c, v = box([0.03, 0.10, 0.04], DARK)  # body camera housing
    links.append((c, v, [ROBOT_LENGTH_M / 2 + 0.02, 0.0, 0.10]))
    return fixed_compound(client, (base_c, base_v), [0, 0, BODY_CENTRE_Z_M], links)


def place_robot(
    client: int, body: int, x: float, y: float, yaw: float, z_offset_m: float = 0.0
) -> None:
    p.resetBasePositionAndOrientation(
        body,
        [x, y, BODY_CENTRE_Z_M + z_offset_m],
        p.getQuaternionFromEuler([0, 0, yaw]),
        physicsClientId=client,
    )


BODY_CAMERAS = {
    "body": 0.0,
    "front": 0.0,
    "left": math.pi / 2,
    "right": -math.pi / 2,
    "back": math.pi,
}
"""Spot's body cameras by name: heading offset from the body's +x, radians."""


def body_camera_pose(
    x: float, y: float, yaw: float, mount: CameraMount, camera: str = "body"
) -> np.ndarray:
    """``odom_T_camera`` of a body camera (front, left, right, back) for base (x, y, yaw)."""
    offset = BODY_CAMERAS[camera]
    out_m = mount.forward_m if offset == 0.0 else (0.3 if abs(offset) < 3 else 0.6)
    yaw = yaw + offset
    c, s = math.cos(yaw), math.sin(yaw)
    eye = np.array([x + out_m * c, y + out_m * s, mount.height_m])
    pitch = math.radians(mount.pitch_down_deg)
    forward = np.array([c * math.cos(pitch), s * math.cos(pitch), -math.sin(pitch)])
    return look_at(eye, eye + forward)


def hand_camera_pose(x: float, y: float, target: np.ndarray, limits: ArmLimits) -> np.ndarray:
    """``odom_T_camera`` of the gripper camera aimed at ``target`` from base (x, y):
    above and in front of the target on the robot's side, looking down at it."""
    d = np.array([target[0] - x, target[1] - y])
    dist = float(np.linalg.norm(d))
    u = d / dist if dist > 1e-6 else np.array([1.0, 0.0])
    standoff = min(limits.hand_standoff_m, dist)
    eye = np.array(
        [
            target[0] - u[0] * standoff,
            target[1] - u[1] * standoff,
            target[2] + limits.hand_height_above_m,
        ]
    )
    return look_at(eye, target)
