"""Hand-made occupancy grids for the grounding and survey tests."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class FakeGrid:
    """An injected grid (the env's kind): 0.1 m cells over [0, 10] x [0, 10]."""

    origin_xy: np.ndarray
    resolution_m: float
    free: np.ndarray


def walled_grid() -> FakeGrid:
    free = np.ones((100, 100), bool)
    free[:, 45:50] = False  # a wall at x = 4.5..5.0 across the whole room
    free[70:100, 80:100] = False  # an unreachable pocket: closed room in the north-east
    free[75:95, 85:95] = True
    return FakeGrid(np.zeros(2), 0.1, free)
