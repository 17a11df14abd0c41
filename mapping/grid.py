"""2-D grids of where the robot's base centre may stand, and reachability on them.

Any object with ``origin_xy``, ``resolution_m`` and a boolean ``free`` array satisfies
:class:`OccupancyGrid`: the env's navigation grid (``envs.navigation.OccupancyGrid``)
and the map's own :class:`Grid2D` (from :mod:`mapping.traversability`) are
interchangeable wherever a grid is injected.

Convention (shared with ``envs.navigation``): ``free[i, j]`` is the cell in row
``i`` (y) and column ``j`` (x); its centre is ``origin_xy + ((j + 0.5), (i + 0.5)) *
resolution_m`` in ``odom``, metres. Obstacles are already inflated by the robot's
radius, so a free cell is a pose the base centre may occupy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
from scipy import ndimage


@runtime_checkable
class OccupancyGrid(Protocol):
    """A planar free-space grid; see the module docstring for the cell convention."""

    origin_xy: np.ndarray  # (2,) metres, corner of cell (0, 0)
    resolution_m: float  # cell edge
    free: np.ndarray  # (H, W) bool, True where the base centre may stand


@dataclass(frozen=True, eq=False)
class Grid2D:
    """A concrete :class:`OccupancyGrid`, with the evidence it was derived from."""

    origin_xy: np.ndarray  # (2,) metres, corner of cell (0, 0)
    resolution_m: float
    free: np.ndarray  # (H, W) bool: observed floor, clear of inflated obstacles
    floor: np.ndarray  # (H, W) bool: floor observed in the cell
    obstacle: np.ndarray  # (H, W) bool: something occupied in the body's height band


def cell_of(grid: OccupancyGrid, xy: np.ndarray) -> np.ndarray:
    """Integer (row i, column j) of each point; shape (..., 2). May lie outside the grid."""
    xy = np.asarray(xy, dtype=float)
    j = np.floor((xy[..., 0] - grid.origin_xy[0]) / grid.resolution_m)
    i = np.floor((xy[..., 1] - grid.origin_xy[1]) / grid.resolution_m)
    return np.stack([i, j], axis=-1).astype(np.int64)


def cell_centres(grid: OccupancyGrid, ij: np.ndarray) -> np.ndarray:
    """Centres (x, y) in metres of cells given as (row i, column j); shape (..., 2)."""
    ij = np.asarray(ij)
    x = grid.origin_xy[0] + (ij[..., 1] + 0.5) * grid.resolution_m
    y = grid.origin_xy[1] + (ij[..., 0] + 0.5) * grid.resolution_m
    return np.stack([x, y], axis=-1)


def reachable_mask(grid: OccupancyGrid, start_xy: np.ndarray, start_radius_m: float) -> np.ndarray:
    """Free cells 8-connected to the robot at ``start_xy``.

    The disk of ``start_radius_m`` around the robot counts as free: the robot stands
    there, even where its own camera never saw the floor. Returns (H, W) bool; all
    False when the robot is outside the grid.
    """
    free = np.asarray(grid.free, dtype=bool)
    h, w = free.shape
    si, sj = (int(v) for v in cell_of(grid, start_xy))
    if not (0 <= si < h and 0 <= sj < w):
        return np.zeros_like(free)
    r = int(math.ceil(start_radius_m / grid.resolution_m))
    i0, i1, j0, j1 = max(si - r, 0), min(si + r + 1, h), max(sj - r, 0), min(sj + r + 1, w)
    ii, jj = np.mgrid[i0:i1, j0:j1]
    disk = (ii - si) ** 2 + (jj - sj) ** 2 <= r * r
    passable = free.copy()
    passable[i0:i1, j0:j1] |= disk
    labels, _ = ndimage.label(passable, structure=np.ones((3, 3), dtype=bool))
    return labels == labels[si, sj]
