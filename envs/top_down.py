"""Top-down map image of a SpotWorld scene (numpy raster, no plotting library)."""

from __future__ import annotations

import math

import numpy as np

from envs.world import WALL_COLOUR
from scenarios.geometry import robot_footprint, wall_footprint

FREE = np.array([235, 235, 230], dtype=np.uint8)
BLOCKED = np.array([205, 205, 200], dtype=np.uint8)  # floor the base cannot stand on
ROBOT = np.array([242, 199, 25], dtype=np.uint8)


def draw_top_down(env, px_per_m: float = 20.0) -> np.ndarray:
    """uint8 (H, W, 3), north (+y) up. Objects are drawn lowest first, so a tarp hides
    the barrel beneath it just as it does from above."""
    x0, y0, x1, y1 = env.scenario.environment.extent
    w, h = int(math.ceil((x1 - x0) * px_per_m)), int(math.ceil((y1 - y0) * px_per_m))
    xs = x0 + (np.arange(w) + 0.5) / px_per_m
    ys = y1 - (np.arange(h) + 0.5) / px_per_m
    gx, gy = np.meshgrid(xs, ys)
    pts = np.stack([gx.ravel(), gy.ravel()], axis=1)
    img = np.empty((h * w, 3), dtype=np.uint8)
    grid = env.occupancy()
    ci = np.clip(
        ((pts[:, 1] - grid.origin_xy[1]) / grid.resolution_m).astype(int), 0, grid.shape[0] - 1
    )
    cj = np.clip(
        ((pts[:, 0] - grid.origin_xy[0]) / grid.resolution_m).astype(int), 0, grid.shape[1] - 1
    )
    img[:] = np.where(grid.free[ci, cj][:, None], FREE, BLOCKED)

    def fill(fp, colour):
        ax0, ay0, ax1, ay1 = fp.aabb()
        near = np.flatnonzero(
            (pts[:, 0] >= ax0) & (pts[:, 0] <= ax1) & (pts[:, 1] >= ay0) & (pts[:, 1] <= ay1)
        )
        if near.size:
            img[near[fp.contains(pts[near])]] = colour

    for wall in env.scenario.environment.walls:
        fill(wall_footprint(wall), (np.array(WALL_COLOUR[:3]) * 160).astype(np.uint8))
    for st in sorted(env.world.objects.values(), key=lambda s: (s.top_z, s.spec.id)):
        fill(st.footprint(), (np.array(st.spec.rgb()) * 255).astype(np.uint8))
    x, y, yaw = env.pose
    fill(robot_footprint(x, y, yaw), ROBOT)
    # heading: a dark stripe from the body centre to the front
    for t in np.linspace(0.0, 0.55, 30):
        j = int((x + t * math.cos(yaw) - x0) * px_per_m)
        i = int((y1 - (y + t * math.sin(yaw))) * px_per_m)
        if 0 <= i < h and 0 <= j < w:
            img[i * w + j] = (20, 20, 20)
    return img.reshape(h, w, 3)
