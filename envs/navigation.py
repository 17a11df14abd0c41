"""Occupancy grid and collision-free base paths (kinematic, no legged dynamics).

The grid marks cells covered by walls and floor-standing objects, then inflates them by
the robot's clearance radius so that the base centre can be planned as a point.
Shortest paths over the 8-connected free cells come from scipy's Dijkstra; a straight
segment that stays in free space is taken directly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import ndimage
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import dijkstra

from scenarios.geometry import Footprint


@dataclass(frozen=True)
class GridSpec:
    resolution_m: float = 0.1  # cell edge
    clearance_m: float = 0.65  # base centre keeps this far from obstacles: the disc the body
    # (1.1 x 0.5 m) and its front camera sweep when turning in place


@dataclass
class OccupancyGrid:
    """``free[i, j]`` is cell (row i = y, column j = x); cell centres at
    ``origin + (j + 0.5, i + 0.5) * resolution``."""

    origin_xy: np.ndarray  # metres, corner of cell (0, 0)
    resolution_m: float
    occupied: np.ndarray  # bool (H, W): an obstacle covers the cell
    free: np.ndarray  # bool (H, W): the base centre may stand here (inflated)

    @classmethod
    def from_footprints(cls, extent, footprints: list[Footprint], spec: GridSpec) -> OccupancyGrid:
        x0, y0, x1, y1 = extent
        res = spec.resolution_m
        w, h = int(math.ceil((x1 - x0) / res)), int(math.ceil((y1 - y0) / res))
        xs = x0 + (np.arange(w) + 0.5) * res
        ys = y0 + (np.arange(h) + 0.5) * res
        gx, gy = np.meshgrid(xs, ys)
        pts = np.stack([gx.ravel(), gy.ravel()], axis=1)
        occ = np.zeros(h * w, dtype=bool)
        for fp in footprints:
            ax0, ay0, ax1, ay1 = fp.aabb()
            near = (
                (pts[:, 0] >= ax0 - res)
                & (pts[:, 0] <= ax1 + res)
                & (pts[:, 1] >= ay0 - res)
                & (pts[:, 1] <= ay1 + res)
            )
            idx = np.flatnonzero(near)
            if idx.size:
                occ[idx[fp.contains(pts[idx], margin_m=res / 2)]] = True
        occ = occ.reshape(h, w)
        r = int(math.ceil(spec.clearance_m / res))
        yy, xx = np.mgrid[-r : r + 1, -r : r + 1]
        disk = (xx * xx + yy * yy) * res * res <= spec.clearance_m**2
        blocked = ndimage.binary_dilation(occ, structure=disk)
        blocked[:r, :] = blocked[-r:, :] = True  # keep the body inside the extent
        blocked[:, :r] = blocked[:, -r:] = True
        return cls(np.array([x0, y0], dtype=float), res, occ, ~blocked)

    @property
    def shape(self) -> tuple[int, int]:
        return self.free.shape

    def cell_of(self, x: float, y: float) -> tuple[int, int]:
        j = int(math.floor((x - self.origin_xy[0]) / self.resolution_m))
        i = int(math.floor((y - self.origin_xy[1]) / self.resolution_m))
        return i, j

    def centre_of(self, i: int, j: int) -> tuple[float, float]:
        return (
            float(self.origin_xy[0] + (j + 0.5) * self.resolution_m),
            float(self.origin_xy[1] + (i + 0.5) * self.resolution_m),
        )

    def inside(self, i: int, j: int) -> bool:
        return 0 <= i < self.free.shape[0] and 0 <= j < self.free.shape[1]

    def is_free(self, x: float, y: float) -> bool:
        i, j = self.cell_of(x, y)
        return self.inside(i, j) and bool(self.free[i, j])

    def nearest_free(
        self, x: float, y: float, max_dist_m: float = 1.0
    ) -> tuple[float, float] | None:
        """Centre of the free cell nearest (x, y) within ``max_dist_m``, else None."""
        i, j = self.cell_of(x, y)
        r = int(math.ceil(max_dist_m / self.resolution_m))
        h, w = self.free.shape
        i0, i1, j0, j1 = max(i - r, 0), min(i + r + 1, h), max(j - r, 0), min(j + r + 1, w)
        if i0 >= i1 or j0 >= j1:
            return None
        ii, jj = np.nonzero(self.free[i0:i1, j0:j1])
        if ii.size == 0:
            return None
        d = (ii + i0 - i) ** 2 + (jj + j0 - j) ** 2
        k = int(np.argmin(d))
        if d[k] * self.resolution_m**2 > max_dist_m**2:
            return None
        return self.centre_of(int(ii[k] + i0), int(jj[k] + j0))

    def segment_free(self, a: tuple[float, float], b: tuple[float, float]) -> bool:
        n = max(2, int(math.hypot(b[0] - a[0], b[1] - a[1]) / (self.resolution_m / 2)) + 1)
        xs = np.linspace(a[0], b[0], n)
        ys = np.linspace(a[1], b[1], n)
        jj = np.floor((xs - self.origin_xy[0]) / self.resolution_m).astype(int)
        ii = np.floor((ys - self.origin_xy[1]) / self.resolution_m).astype(int)
        h, w = self.free.shape
        if (ii < 0).any() or (jj < 0).any() or (ii >= h).any() or (jj >= w).any():
            return False
        return bool(self.free[ii, jj].all())

    def plan(
        self, start: tuple[float, float], goal: tuple[float, float]
    ) -> list[tuple[float, float]] | None:
        """Shortest collision-free polyline from ``start`` to ``goal``; None if none.

        The start cell may be blocked (the robot may already stand close to an object);
        the goal cell must be free.
        """
        if not self.is_free(*goal):
            return None
        if self.segment_free(start, goal):
            return [tuple(start), tuple(goal)]
        si, sj = self.cell_of(*start)
        gi, gj = self.cell_of(*goal)
        if not self.inside(si, sj):
            return None
        free = self.free.copy()
        free[si, sj] = True
        h, w = free.shape
        idx = np.arange(h * w).reshape(h, w)
        rows, cols, wts = [], [], []
        for di, dj in ((0, 1), (1, 0), (1, 1), (1, -1)):
            j0, j1 = max(0, -dj), w - max(0, dj)  # columns of the first cell of each pair
            a, ia = free[: h - di, j0:j1], idx[: h - di, j0:j1]
            b, ib = free[di:, j0 + dj : j1 + dj], idx[di:, j0 + dj : j1 + dj]
            ok = a & b
            rows.append(ia[ok])
            cols.append(ib[ok])
            wts.append(np.full(int(ok.sum()), math.hypot(di, dj)))
        r, c, wt = np.concatenate(rows), np.concatenate(cols), np.concatenate(wts)
        graph = coo_matrix((wt, (r, c)), shape=(h * w, h * w)).tocsr()
        dist, pred = dijkstra(
            graph, directed=False, indices=int(idx[si, sj]), return_predecessors=True
        )
        target = int(idx[gi, gj])
        if not np.isfinite(dist[target]):
            return None
        cells = [target]
        while cells[-1] != idx[si, sj]:
            cells.append(int(pred[cells[-1]]))
        cells.reverse()
        pts = [self.centre_of(c // w, c % w) for c in cells]
        pts[0], pts[-1] = tuple(start), tuple(goal)
        return _shortcut(pts, self)


def _shortcut(pts: list[tuple[float, float]], grid: OccupancyGrid) -> list[tuple[float, float]]:
    """Drop waypoints that a straight free segment can skip (string pulling)."""
    out = [pts[0]]
    k = 0
    while k < len(pts) - 1:
        nxt = len(pts) - 1
        while nxt > k + 1 and not grid.segment_free(pts[k], pts[nxt]):
            nxt -= 1
        out.append(pts[nxt])
        k = nxt
    return out


def path_length(path: list[tuple[float, float]]) -> float:
    return float(
        sum(math.hypot(b[0] - a[0], b[1] - a[1]) for a, b in zip(path, path[1:], strict=False))
    )


def poses_along(
    path: list[tuple[float, float]], every_m: float
) -> list[tuple[float, float, float]]:
    """Poses (x, y, heading) every ``every_m`` metres along ``path``, facing along it,
    from ``every_m`` after the start to before the end (where a walker looks on its way)."""
    if every_m <= 0:
        raise ValueError(f"every_m must be positive, got {every_m}")
    out: list[tuple[float, float, float]] = []
    total = path_length(path)
    at = every_m
    walked = 0.0
    for a, b in zip(path, path[1:], strict=False):
        seg = math.hypot(b[0] - a[0], b[1] - a[1])
        heading = math.atan2(b[1] - a[1], b[0] - a[0])
        while seg > 0 and at <= walked + seg and at < total - 1e-9:
            f = (at - walked) / seg
            out.append((a[0] + f * (b[0] - a[0]), a[1] + f * (b[1] - a[1]), heading))
            at += every_m
        walked += seg
    return out
