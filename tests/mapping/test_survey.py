"""Survey stops from an occupancy grid."""

from __future__ import annotations

import numpy as np

from mapping.grid import cell_of
from mapping.survey import survey_waypoints
from tests.mapping.grids import walled_grid


def test_waypoints_cover_the_reachable_side_once_per_square_in_tour_order():
    grid = walled_grid()  # a wall at x = 4.5..5 splits the 10 x 10 m room
    stops = survey_waypoints(grid, np.array([1.2, 1.2]), spacing_m=2.5)
    assert len(stops) == 2 * 4  # squares x in [0, 5) reachable, y in [0, 10): 2 x 4
    for x, y in stops:
        i, j = cell_of(grid, np.array([x, y]))
        assert grid.free[i, j] and x < 4.5
    squares = {(int(x // 2.5), int(y // 2.5)) for x, y in stops}
    assert len(squares) == len(stops)
    assert np.hypot(*(np.array(stops[0]) - 1.2)) < 1.0  # starts next to the robot
    assert stops == survey_waypoints(grid, np.array([1.2, 1.2]), spacing_m=2.5)  # deterministic
