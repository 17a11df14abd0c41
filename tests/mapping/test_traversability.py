"""Traversability grid from the voxel map: floor, obstacles inflated by the footprint."""

from __future__ import annotations

import numpy as np

from mapping.grid import Grid2D, OccupancyGrid, cell_centres, cell_of, reachable_mask
from mapping.traversability import TraversabilityConfig, traversability_grid


def test_grid_marks_floor_obstacles_and_inflated_free_space(barrel_survey):
    cfg = TraversabilityConfig()
    grid = traversability_grid(barrel_survey.voxel_map, cfg)
    assert isinstance(grid, OccupancyGrid) and isinstance(grid, Grid2D)

    def at(xy):
        i, j = cell_of(grid, np.array(xy))
        return grid.floor[i, j], grid.obstacle[i, j], grid.free[i, j]

    assert at((5.0, 5.0)) == (True, False, True)  # open floor mid-room
    for name in ("barrel_a", "barrel_b", "barrel_c", "drum", "crate", "table"):
        x, y, _ = barrel_survey.truth[name]
        assert not at((x, y))[2], name  # the hollow inside was never seen: not free either
        near = [
            at((x + dx, y + dy))[1] for dx in np.arange(-0.6, 0.61, 0.1) for dy in (-0.3, 0, 0.3)
        ]
        assert any(near), name  # its visible surface is an obstacle
    for name in ("barrel_a", "barrel_b", "barrel_c", "drum"):  # seen from every side
        x, y, _ = barrel_survey.truth[name]
        for dx, dy in ((0.5, 0), (-0.5, 0), (0, 0.5), (0, -0.5)):  # within radius + half size
            assert not at((x + dx, y + dy))[2], name
    assert not at((5.0, 9.9))[2] and not at((9.9, 5.0))[2]  # along the walls

    # every free cell keeps the robot's radius from every obstacle cell
    free = cell_centres(grid, np.argwhere(grid.free))
    obstacle = cell_centres(grid, np.argwhere(grid.obstacle))
    nearest = np.min(np.linalg.norm(free[:, None, :] - obstacle[None, ::7, :], axis=-1), axis=1)
    assert nearest.min() >= cfg.robot_radius_m - 1e-6


def test_robot_start_reaches_most_of_the_observed_floor(barrel_survey):
    grid = traversability_grid(barrel_survey.voxel_map)
    reach = reachable_mask(grid, np.array(barrel_survey.start_xy), 0.4)
    assert reach.sum() > 0.8 * grid.free.sum()


def test_explicit_bounds_and_empty_map():
    from mapping.voxel_map import VoxelMap

    with VoxelMap() as vmap:
        grid = traversability_grid(vmap, bounds_xy=(0.0, 0.0, 2.0, 1.0))
        assert grid.free.shape == (10, 20) and not grid.free.any()
        np.testing.assert_allclose(grid.origin_xy, [0.0, 0.0])
