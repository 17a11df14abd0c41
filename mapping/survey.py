"""Build a map by driving a robot through waypoints and looking around at each.

Works through the robot interface only (:class:`agents.robot.Robot`), so the same
survey runs on ``envs.SimRobot`` and on Spot.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from agents.robot import GoalUnreachable, Pose2D, Robot
from mapping.encoders import FeatureEncoder
from mapping.voxel_map import VoxelMap


def survey(
    robot: Robot,
    voxel_map: VoxelMap,
    encoder: FeatureEncoder | None,
    waypoints_xy: Iterable[tuple[float, float]],
    views_per_stop: int = 6,
    camera: str = "body",
) -> int:
    """Visit each waypoint (odom, metres), turn through ``views_per_stop`` evenly spaced
    headings, and fuse a frame at each. Unreachable waypoints are skipped. Returns the
    number of frames fused."""
    frames = 0
    for x, y in waypoints_xy:
        for k in range(views_per_stop):
            yaw = 2.0 * math.pi * k / views_per_stop
            try:
                robot.goto(Pose2D(float(x), float(y), yaw))
            except GoalUnreachable:
                break
            frame = robot.capture(camera)
            voxel_map.integrate(frame, encoder.encode_frame(frame) if encoder is not None else None)
            frames += 1
    return frames
