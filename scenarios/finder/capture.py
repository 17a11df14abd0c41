"""Record a Finder stream: a scripted survey of a scene through ``envs.SimRobot``.

The robot walks a lattice of waypoints (nearest first, collision-free paths), and at
each one faces two headings 45 degrees apart and captures all four body cameras, so
every stop sees all around. TinyRenderer, a fixed seed and no depth noise make the
capture deterministic: ``cluetwin capture-finder ENV --out DIR`` rebuilds a stream
byte for byte.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scenarios.finder import ENVIRONMENTS, load_finder_set, scene_of
from scenarios.finder.streams import write_stream

BODY_CAMERAS = ("front", "left", "right", "back")


@dataclass(frozen=True)
class SurveySpec:
    """How a stream is captured (per environment, the lattice spacing differs)."""

    spacing_m: float  # waypoint lattice pitch
    margin_m: float = 1.0  # waypoints keep this far from the extent edge
    headings_deg: tuple[float, ...] = (0.0, 45.0)  # body yaw at each stop
    width_px: int = 160
    height_px: int = 120


SURVEYS = {
    "lab": SurveySpec(spacing_m=2.5),
    "office": SurveySpec(spacing_m=3.0),
    "outdoor_park": SurveySpec(spacing_m=6.0),
}


def lattice(extent, spacing_m: float, margin_m: float) -> list[tuple[float, float]]:
    """Waypoints on a centred lattice inside ``extent`` (metres)."""
    x0, y0, x1, y1 = extent
    out = []
    for axis0, axis1 in ((x0, x1), (y0, y1)):
        n = max(1, int((axis1 - axis0 - 2 * margin_m) // spacing_m) + 1)
        span = (n - 1) * spacing_m
        start = (axis0 + axis1 - span) / 2
        out.append([round(start + i * spacing_m, 3) for i in range(n)])
    return [(x, y) for x in out[0] for y in out[1]]


def nearest_first(points: list[tuple[float, float]], start: tuple[float, float]):
    left, here, order = list(points), start, []
    while left:
        nxt = min(left, key=lambda p: (math.hypot(p[0] - here[0], p[1] - here[1]), p))
        left.remove(nxt)
        order.append(nxt)
        here = nxt
    return order


def capture(environment: str, out_dir: str | Path, spec: SurveySpec | None = None) -> Path:
    """Survey the environment's Finder scene and write ``<out_dir>/<stream file>``."""
    from agents.robot import GoalUnreachable, Pose2D
    from envs import CameraSpec, SimRobot, SpotWorldEnv

    fset = load_finder_set(environment)
    scene = scene_of(fset)
    spec = spec or SURVEYS[environment]
    env = SpotWorldEnv(
        scene,
        camera=CameraSpec(spec.width_px, spec.height_px),
        renderer="tiny",
        depth_noise_std_m=0.0,
    )
    try:
        env.reset(seed=0)
        robot = SimRobot(env)
        grid = env.occupancy()
        start = robot.get_pose()
        stops = []  # lattice points, moved to the nearest free floor within 1 m
        for x, y in lattice(scene.environment.extent, spec.spacing_m, spec.margin_m):
            free = (x, y) if grid.is_free(x, y) else grid.nearest_free(x, y, max_dist_m=1.0)
            if free is not None and free not in stops:
                stops.append((round(free[0], 3), round(free[1], 3)))
        frames, poses = [], []
        for x, y in nearest_first(stops, (start.x_m, start.y_m)):
            for heading in spec.headings_deg:
                try:
                    robot.goto(Pose2D(x, y, math.radians(heading)))
                except GoalUnreachable:
                    break  # the body does not fit here, or no path: skip the stop
                pose = robot.get_pose()
                for cam in BODY_CAMERAS:
                    frames.append(robot.capture(cam))
                    poses.append((pose.x_m, pose.y_m, pose.yaw_rad))
        segments = {st.body: oid for oid, st in env.world.objects.items()}
        path = Path(out_dir) / fset.stream
        return write_stream(path, frames, poses, scene.id, segments)
    finally:
        env.close()


def add_cli(sub) -> None:
    """Register ``cluetwin capture-finder`` on an argparse subparsers object."""
    p = sub.add_parser(
        "capture-finder", help="record the Finder RGB-D stream of an environment (deterministic)"
    )
    p.add_argument("environment", choices=[*ENVIRONMENTS, "all"])
    p.add_argument("--out", required=True, help="output folder (streams/ ships with the repo)")
    p.set_defaults(func=_cmd_capture)


def _cmd_capture(args) -> int:
    from scenarios.finder.streams import load_stream

    names = ENVIRONMENTS if args.environment == "all" else (args.environment,)
    for name in names:
        path = capture(name, args.out)
        s = load_stream(path)
        mib = path.stat().st_size / 2**20
        valid = float(np.mean(s.depth_mm > 0))
        print(
            f"wrote {path}: {len(s)} frames {s.intrinsics.width_px}x{s.intrinsics.height_px}, "
            f"{mib:.2f} MiB, {valid:.0%} of pixels with depth"
        )
    return 0
