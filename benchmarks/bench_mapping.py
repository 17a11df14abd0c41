"""Mapping benchmarks: fusion rate, grounding query latency, memory per voxel.

Run from the repository root::

    .venv/bin/python benchmarks/bench_mapping.py [--quick]

Timings are the best of several passes, as wall-clock time and as this process's CPU
time (the latter hardly moves when other processes share the cores; the load average
is printed first). Figures (targets on the 2-core CI machine in brackets):
* fusion frames/s at 320x240, encoder excluded (>= 30), default settings, frames from
  the mapping tests' raw pybullet barrel scene;
* grounding query latency, similarity + threshold + DBSCAN, at 1e5 and 1e6 voxels
  (<= 100 ms at 1e6), on synthetic maps whose voxels carry real MiniLM phrase features
  (floor plus a lattice of objects, one in ten a barrel);
* resident bytes per voxel at default settings (<= 256).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mapping.encoders import HashingTextEmbedder, SimEncoderConfig, SimFeatureEncoder  # noqa: E402
from mapping.grounding import Grounder  # noqa: E402
from mapping.voxel_map import VoxelMap, VoxelMapConfig  # noqa: E402
from tests.mapping import pybullet_scene as scene_lib  # noqa: E402

OBJECT_PHRASES = (
    "blue plastic barrel",
    "wooden crate",
    "metal storage shelf",
    "grey plastic trash bin",
    "orange traffic cone",
    "cardboard box",
    "red metal toolbox",
    "wooden pallet",
    "green tarp",
    "fire extinguisher",
)  # one in ten objects is a barrel


class Best:
    """Best (smallest) wall and CPU seconds over repeated ``with`` blocks."""

    def __init__(self) -> None:
        self.wall_s = self.cpu_s = math.inf

    def __enter__(self) -> Best:
        self._t = (time.perf_counter(), time.process_time())
        return self

    def __exit__(self, *exc) -> None:
        self.wall_s = min(self.wall_s, time.perf_counter() - self._t[0])
        self.cpu_s = min(self.cpu_s, time.process_time() - self._t[1])

    def ms(self, per: int = 1) -> str:
        return f"{1e3 * self.wall_s / per:.1f} ms (CPU {1e3 * self.cpu_s / per:.1f} ms)"


def bench_fusion(frames: int, passes: int) -> None:
    cam = scene_lib.Camera(width_px=320, height_px=240)
    scene = scene_lib.barrel_scene()
    poses = scene_lib.survey_poses()
    rendered = [scene_lib.render(scene, poses[k % len(poses)], cam) for k in range(frames)]
    scene.close()
    encoder = SimFeatureEncoder(SimEncoderConfig(feature_dim=None), HashingTextEmbedder(64))
    feats = [encoder.encode_frame(f) for f in rendered]
    for label, cfg in (
        ("default (stride 1, free-space carving)", VoxelMapConfig()),
        ("no free-space carving", VoxelMapConfig(free_space_carving=False)),
        ("pixel stride 2", VoxelMapConfig(pixel_stride=2)),
    ):
        best = Best()
        for _ in range(passes):
            with VoxelMap(cfg) as vmap:
                vmap.integrate(rendered[0], feats[0])  # warm-up: ray cache, allocations
                with best:
                    for f, ff in zip(rendered, feats, strict=True):
                        vmap.integrate(f, ff)
                stats = vmap.stats()
        print(
            f"fusion 320x240, {label}: {frames / best.wall_s:.1f} frames/s wall, "
            f"{frames / best.cpu_s:.1f} frames/s CPU ({best.ms(frames)} per frame); "
            f"{stats.voxels} voxels, {stats.bytes_per_voxel:.0f} B/voxel resident"
        )


def synthetic_map(n_voxels: int, encoder: SimFeatureEncoder) -> tuple[VoxelMap, int]:
    """Floor plus a 3 m lattice of barrel-sized cylinder shells, each voxel fused once
    with its phrase's feature. Returns the map and the number of barrels."""
    vs = 0.1
    g = np.mgrid[-4:5, -4:5, 0:9].reshape(3, -1).T
    local = (g + 0.5) * vs
    radial = np.hypot(local[:, 0], local[:, 1])
    shell = local[((radial <= 0.35) & (radial >= 0.2)) | ((local[:, 2] > 0.8) & (radial <= 0.3))]
    per_cell = 900 + shell.shape[0]  # 3 m x 3 m of floor + one object
    side = int(math.ceil(math.sqrt(n_voxels / per_cell)))
    table = encoder.encode_text(["floor", *OBJECT_PHRASES])
    vmap = VoxelMap(VoxelMapConfig(free_space_carving=False))
    barrels = 0
    for row in range(side):
        pts, rows = [], []
        for col in range(side):
            k = row * side + col
            x0, y0 = 3.0 * col, 3.0 * row
            fx, fy = np.mgrid[0:30, 0:30]
            floor = np.stack(
                [x0 + (fx.ravel() + 0.5) * vs, y0 + (fy.ravel() + 0.5) * vs, np.full(900, -0.05)], 1
            )
            obj = shell + [x0 + 1.5, y0 + 1.5, 0.0]
            phrase = k % len(OBJECT_PHRASES)
            barrels += phrase == 0
            pts += [floor, obj]
            rows += [np.zeros(900, np.int32), np.full(obj.shape[0], 1 + phrase, np.int32)]
        vmap.integrate_points(
            np.concatenate(pts), np.array([0.0, 3.0 * row, 1.0]), np.concatenate(rows), table
        )
    return vmap, barrels


def bench_query(n_voxels: int, encoder: SimFeatureEncoder, repeats: int) -> None:
    t0 = time.perf_counter()
    vmap, barrels = synthetic_map(n_voxels, encoder)
    build_s = time.perf_counter() - t0
    grounder = Grounder(vmap, encoder)
    stats = vmap.stats()
    t0 = time.perf_counter()
    grounder.relevant_voxels("barrel")  # fills the background cache
    cold_ms = 1e3 * (time.perf_counter() - t0)
    sim, dbscan, total = Best(), Best(), Best()
    for _ in range(repeats):
        with total:
            with sim:
                pos, kappa, _ = grounder.relevant_voxels("barrel")
            with dbscan:
                cands = grounder.cluster(pos, kappa)
    print(
        f"query 'barrel' at {stats.voxels:.2e} voxels: {total.ms()} = similarity+threshold "
        f"{sim.ms()} + DBSCAN {dbscan.ms()} on {pos.shape[0]} kept voxels; {len(cands)} "
        f"candidates (max {grounder.config.max_candidates}) for {barrels} barrels; cold "
        f"background cache {cold_ms:.0f} ms; built in {build_s:.1f} s; "
        f"{stats.bytes_per_voxel:.0f} B/voxel resident"
    )
    rng = np.random.default_rng(0)
    for n_kept in (2_000, 10_000, 30_000):
        if n_kept > pos.shape[0]:
            break
        sel = np.sort(rng.choice(pos.shape[0], n_kept, replace=False))
        step = Best()
        for _ in range(repeats):
            with step:
                grounder.cluster(pos[sel], kappa[sel])
        print(f"  DBSCAN step alone on {n_kept} kept voxels: {step.ms()}")
    vmap.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer frames and repeats")
    args = parser.parse_args()
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"load average (1, 5, 15 min): {load} on {os.cpu_count()} CPUs")
    bench_fusion(frames=36 if args.quick else 72, passes=2 if args.quick else 5)
    encoder = SimFeatureEncoder()  # real MiniLM features, projected to 64 dims
    for n in (100_000, 1_000_000):
        bench_query(n, encoder, repeats=3 if args.quick else 7)


if __name__ == "__main__":
    main()
