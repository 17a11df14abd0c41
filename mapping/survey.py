"""Build a map by driving a robot through waypoints and looking around at each.

Works through the robot interface only (:class:`agents.robot.Robot`), so the same
survey runs on ``envs.SimRobot`` and on Spot.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from agents.robot import GoalUnreachable, Pose2D, Robot
from mapping.encoders import FeatureEncoder
from mapping.grid import OccupancyGrid, cell_centres, reachable_mask
from mapping.tsp import solve_tour
from mapping.voxel_map import VoxelMap


def survey_waypoints(
    grid: OccupancyGrid, start_xy: np.ndarray, spacing_m: float = 3.5, start_radius_m: float = 0.4
) -> list[tuple[float, float]]:
    """Stops for a survey: one free cell reachable from ``start_xy`` per square of
    ``spacing_m`` (the cell nearest the square's centre), in a short visiting order
    starting at the robot. Metres, odom."""
    reach = reachable_mask(grid, np.asarray(start_xy, float), start_radius_m) & np.asarray(
        grid.free
    )
    cells = np.argwhere(reach)
    if cells.size == 0:
        return []
    xy = cell_centres(grid, cells)
    square = np.floor(xy / spacing_m).astype(np.int64)
    centre_dist = np.linalg.norm(xy - (square + 0.5) * spacing_m, axis=1)
    order = np.lexsort((centre_dist, square[:, 1], square[:, 0]))
    first = np.ones(order.size, bool)
    first[1:] = (np.diff(square[order], axis=0) != 0).any(axis=1)
    stops = xy[order[first]]
    tour = solve_tour(np.asarray(start_xy, float), stops)
    return [(float(stops[k, 0]), float(stops[k, 1])) for k in tour.order]


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
