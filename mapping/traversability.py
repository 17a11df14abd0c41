"""A 2-D traversability grid for the robot's footprint, from the voxel map's occupancy.

Each occupied voxel is classified by the height of its centre above ``floor_z_m``:
within ``floor_tolerance_m`` it is floor, between that and ``body_height_m`` it blocks
the body, above it is overhead and ignored. A cell is free when floor was seen in it
(small gaps closed) and no blocking voxel lies within ``robot_radius_m`` (obstacles are
inflated by the footprint, so the base centre can be treated as a point). Unobserved
cells are not free: the robot plans only over floor it has seen.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import ndimage

from mapping.grid import Grid2D
from mapping.voxel_map import VoxelMap


@dataclass(frozen=True)
class TraversabilityConfig:
    """Height bands and footprint for the traversability grid."""

    resolution_m: float = 0.1  # grid cell edge
    floor_z_m: float = 0.0  # floor height in odom
    floor_tolerance_m: float = 0.12  # voxel centres within this of the floor are floor
    body_height_m: float = 1.0  # voxels up to this height above the floor block the body
    robot_radius_m: float = 0.4  # obstacles are inflated by this (half the body width + margin)
    close_gaps_cells: int = 1  # floor holes up to this many cells wide are closed
    margin_m: float = 1.0  # grid extends this far beyond the observed voxels


def traversability_grid(
    voxel_map: VoxelMap,
    config: TraversabilityConfig | None = None,
    bounds_xy: tuple[float, float, float, float] | None = None,
) -> Grid2D:
    """Floor / obstacle / free grid over ``bounds_xy`` (x0, y0, x1, y1 metres) or over
    every observed voxel (plus ``margin_m``). Streams spilled submaps from disk."""
    cfg = config or TraversabilityConfig()
    floor_xy, obstacle_xy = [], []
    for block in voxel_map.blocks():
        occ = np.flatnonzero(block.occupied())
        if occ.size == 0:
            continue
        pos = block.positions_m(occ)
        height = pos[:, 2] - cfg.floor_z_m
        floor_xy.append(pos[np.abs(height) <= cfg.floor_tolerance_m, :2])
        blocking = (height > cfg.floor_tolerance_m) & (height <= cfg.body_height_m)
        obstacle_xy.append(pos[blocking, :2])
    floor_pts = np.concatenate(floor_xy) if floor_xy else np.zeros((0, 2))
    obstacle_pts = np.concatenate(obstacle_xy) if obstacle_xy else np.zeros((0, 2))

    res = cfg.resolution_m
    if bounds_xy is None:
        every = np.concatenate([floor_pts, obstacle_pts])
        if every.shape[0] == 0:
            every = np.zeros((1, 2))
        lo = every.min(axis=0) - cfg.margin_m
        hi = every.max(axis=0) + cfg.margin_m
    else:
        lo, hi = np.array(bounds_xy[:2], float), np.array(bounds_xy[2:], float)
    origin = np.floor(lo / res) * res
    w = max(1, int(math.ceil((hi[0] - origin[0]) / res)))
    h = max(1, int(math.ceil((hi[1] - origin[1]) / res)))

    def rasterise(pts: np.ndarray) -> np.ndarray:
        out = np.zeros((h, w), dtype=bool)
        j = np.floor((pts[:, 0] - origin[0]) / res).astype(np.int64)
        i = np.floor((pts[:, 1] - origin[1]) / res).astype(np.int64)
        ok = (i >= 0) & (i < h) & (j >= 0) & (j < w)
        out[i[ok], j[ok]] = True
        return out

    floor = rasterise(floor_pts)
    obstacle = rasterise(obstacle_pts)
    if cfg.close_gaps_cells > 0:
        k = 2 * cfg.close_gaps_cells + 1
        floor = ndimage.binary_closing(floor, structure=np.ones((k, k), bool), border_value=0)
        floor |= rasterise(floor_pts)  # closing must never remove observed floor at the border
    r = int(math.ceil(cfg.robot_radius_m / res))
    yy, xx = np.mgrid[-r : r + 1, -r : r + 1]
    disk = (xx * xx + yy * yy) * res * res <= cfg.robot_radius_m**2
    blocked = ndimage.binary_dilation(obstacle, structure=disk) if obstacle.any() else obstacle
    return Grid2D(
        origin_xy=origin, resolution_m=res, free=floor & ~blocked, floor=floor, obstacle=obstacle
    )
