"""Top-down picture of a grounding query: relevancy, candidates, viewpoints, tour.

Uses matplotlib's object API with the Agg canvas (no pyplot, no global backend
switch), so it is safe in tests, CI and worker processes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Circle

from mapping.grid import OccupancyGrid
from mapping.grounding import GroundingResult, kappa_from_logit, relevancy_blocks
from mapping.traversability import traversability_grid
from mapping.voxel_map import VoxelMap


def relevancy_top_down(
    voxel_map: VoxelMap, result: GroundingResult, resolution_m: float | None = None
) -> tuple[np.ndarray, np.ndarray, float]:
    """Highest kappa per (x, y) column: ``(image (H, W) float, NaN where unobserved,
    origin_xy (2,) metres, resolution_m)``; row i is y, column j is x."""
    res = resolution_m or voxel_map.config.voxel_size_m
    xy, kap = [], []
    for block, rows, logit in relevancy_blocks(voxel_map, result.text_features, result.temperature):
        xy.append(block.positions_m(rows)[:, :2])
        kap.append(kappa_from_logit(logit))
    if not xy:
        return np.full((1, 1), np.nan), np.zeros(2), res
    xy, kap = np.concatenate(xy), np.concatenate(kap)
    origin = np.floor(xy.min(axis=0) / res) * res
    ij = np.floor((xy - origin) / res).astype(np.int64)
    w, h = int(ij[:, 0].max()) + 1, int(ij[:, 1].max()) + 1
    flat = np.full(h * w, -np.inf)
    np.maximum.at(flat, ij[:, 1] * w + ij[:, 0], kap)
    image = flat.reshape(h, w)
    image[~np.isfinite(image)] = np.nan
    return image, origin, res


def plot_relevancy(
    voxel_map: VoxelMap,
    result: GroundingResult,
    path: str | Path,
    *,
    grid: OccupancyGrid | None = None,
    names: Sequence[str] | None = None,
    title: str | None = None,
    size_in: float = 7.0,
    dpi: int = 110,
) -> Path:
    """Write a PNG: free space (``grid``, default the map's traversability grid) in
    grey, the concept's relevancy in colour, candidates (circles, labelled with
    ``names`` or their rank and confidence), viewpoints (triangles pointing at their
    candidate) and the tour from the robot (dashed). Returns the path written."""
    path = Path(path)
    grid = grid if grid is not None else traversability_grid(voxel_map)
    fig = Figure(figsize=(size_in, size_in), dpi=dpi)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)

    gh, gw = grid.free.shape
    g_extent = (
        grid.origin_xy[0],
        grid.origin_xy[0] + gw * grid.resolution_m,
        grid.origin_xy[1],
        grid.origin_xy[1] + gh * grid.resolution_m,
    )
    ax.imshow(
        np.where(grid.free, 0.92, 0.55),
        origin="lower",
        extent=g_extent,
        cmap="gray",
        vmin=0,
        vmax=1,
    )
    image, origin, res = relevancy_top_down(voxel_map, result)
    h, w = image.shape
    shown = ax.imshow(
        np.ma.masked_invalid(image),
        origin="lower",
        extent=(origin[0], origin[0] + w * res, origin[1], origin[1] + h * res),
        cmap="inferno",
        vmin=0.0,
        vmax=1.0,
        interpolation="nearest",
    )
    fig.colorbar(shown, ax=ax, fraction=0.046, pad=0.04, label=f"relevancy of '{result.concept}'")

    robot = np.array(result.robot_xy_m)
    ax.plot(*robot, marker="*", color="black", markersize=14, label="robot")
    for k, cand in enumerate(result.candidates):
        label = names[k] if names is not None else f"#{k + 1}"
        radius = max(cand.extent_m[0], cand.extent_m[1]) / 2 + 0.1
        ax.add_patch(Circle(tuple(cand.xy), radius, fill=False, edgecolor="tab:cyan", linewidth=2))
        ax.annotate(
            f"{label} ({cand.confidence:.2f})",
            cand.xy,
            xytext=(6, 6),
            textcoords="offset points",
            color="tab:cyan",
            fontsize=8,
            weight="bold",
        )
        vp = result.viewpoints[k]
        if vp is not None:
            ax.plot(
                *vp.xy_m,
                marker=(3, 0, math.degrees(vp.yaw_rad) - 90),
                color="tab:green",
                markersize=10,
            )
            ax.plot(*zip(vp.xy_m, cand.xy, strict=True), color="tab:green", linewidth=0.8)
    if result.tour:
        pts = [robot] + [np.array(result.viewpoints[k].xy_m) for k in result.tour]
        xs, ys = zip(*pts, strict=True)
        ax.plot(
            xs,
            ys,
            linestyle="--",
            color="tab:blue",
            linewidth=1.5,
            label=f"tour {result.tour_length_m:.1f} m",
        )
    ax.set_xlabel("x (m, odom)")
    ax.set_ylabel("y (m, odom)")
    ax.set_aspect("equal")
    ax.set_title(title or f"query '{result.concept}': {len(result.candidates)} candidates")
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path
