"""What a map-based policy knows: the voxel map it builds, the observation graph it
reads, and the grounding of named entities into robot commands.

Everything here is built from the robot's own frames (through the robot interface):
no simulator state, no scenario. Entity names are the graph's (``barrel_2``,
``near_barrel_2``, ``free_spot_1``); the robot is commanded with their coordinates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import ndimage

from agents.robot import Frame, GoalUnreachable, MotionResult, Point3, Pose2D, Robot
from mapping.encoders import FeatureEncoder
from mapping.grid import Grid2D, cell_centres, cell_of, reachable_mask
from mapping.grounding import Grounder, GroundingConfig, GroundingResult
from mapping.observation_graph import GraphConfig, ObservationGraph, slug
from mapping.traversability import TraversabilityConfig
from mapping.tsp import solve_tour
from mapping.voxel_map import VoxelMap, VoxelMapConfig

BODY_CAMERAS = ("body", "left", "right", "back")


@dataclass(frozen=True)
class WorldModelConfig:
    """Ranges the grounding layer enforces before commanding the robot (metres)."""

    cameras: tuple[str, ...] = BODY_CAMERAS  # fused after every move
    # the front camera is fused about every this many metres while walking (None: only
    # at stops); the map grows along the way, as the CLUE paper's online map does
    map_every_m: float | None = 1.0
    inspect_range_m: float = 2.8  # robot-to-object distance allowed for inspect
    grasp_range_m: float = 1.7  # robot-to-object-centre distance allowed for grasp
    place_range_m: float = 1.5  # robot-to-region distance allowed for place
    free_spot_distance_m: float = 1.2  # where free_spot regions are sought
    free_spot_clearance_m: float = 0.9  # from every object node
    frontier_min_cells: int = 6  # smaller frontier fragments are ignored
    max_frontiers: int = 3  # frontier regions offered at once
    stood_radius_m: float = 1.2  # floor around where the robot stood counts as seen and free
    body_radius_m: float = 0.65  # obstacles are inflated by this for planning and viewpoints


class WorldModel:
    """The map, the observation graph and entity grounding for one episode."""

    def __init__(
        self,
        robot: Robot,
        encoder: FeatureEncoder,
        *,
        config: WorldModelConfig = WorldModelConfig(),
        map_config: VoxelMapConfig | None = None,
        grounding: GroundingConfig | None = None,
    ):
        self.robot = robot
        self.config = config
        self.map = VoxelMap(map_config or VoxelMapConfig(feature_dim=encoder.dim))
        # the map plans for the body the robot really has: the disc it sweeps turning in place
        self.grounder = Grounder(
            self.map, encoder, grounding, TraversabilityConfig(robot_radius_m=config.body_radius_m)
        )
        # nodes the policy has interacted with must not vanish when a re-query misses them
        self.graph = ObservationGraph(GraphConfig(prune_missing=False))
        self.last_tour: list[str] = []
        self.queried: list[str] = []  # concepts grounded so far, most recent last
        self._counters: dict[str, int] = {}
        self.frames = 0
        self.stood: list[tuple[float, float]] = []  # base positions the robot has occupied
        self._grid_key: tuple[int, int] | None = None
        self._grid: Grid2D | None = None

    # ------------------------------------------------------------------ perception
    def observe(self) -> int:
        """Capture every configured camera and fuse the frames into the map."""
        self.stood.append(tuple(self.robot.get_pose().xy()))
        for cam in self.config.cameras:
            self._fuse(self.robot.capture(cam))
        return len(self.config.cameras)

    def _fuse(self, frame: Frame) -> None:
        self.map.integrate(frame, self.grounder.encoder.encode_frame(frame))
        self.frames += 1

    def walk(self, pose: Pose2D) -> MotionResult:
        """Walk to ``pose``, fusing the frames captured on the way (``map_every_m``) and
        then every configured camera at the goal (:meth:`observe`)."""
        result = self.robot.goto(pose, capture_every_m=self.config.map_every_m)
        for frame in result.frames:
            self._fuse(frame)
        self.observe()
        return result

    def close(self) -> None:
        self.map.close()

    def grid(self) -> Grid2D:
        """The map's traversability grid, plus the floor the robot has stood on.

        The body cameras cannot see the floor right around the legs, yet the robot stood
        there: those cells count as seen floor, and as free unless an obstacle is near.
        """
        key = (self.map.revision, len(self.stood))
        if self._grid is not None and self._grid_key == key:
            return self._grid
        base = self.grounder.map_grid()
        if not self.stood:
            return base
        h, w = base.free.shape
        centres = cell_centres(base, np.argwhere(np.ones((h, w), bool))).reshape(h, w, 2)
        stood = np.zeros((h, w), bool)
        for x, y in self.stood:
            stood |= (
                np.hypot(centres[..., 0] - x, centres[..., 1] - y) <= self.config.stood_radius_m
            )
        r = self.grounder.traversability.robot_radius_m
        k = int(math.ceil(r / base.resolution_m))
        yy, xx = np.mgrid[-k : k + 1, -k : k + 1]
        disk = (xx * xx + yy * yy) * base.resolution_m**2 <= r * r
        blocked = (
            ndimage.binary_dilation(base.obstacle, structure=disk)
            if base.obstacle.any()
            else base.obstacle
        )
        self._grid = Grid2D(
            origin_xy=base.origin_xy,
            resolution_m=base.resolution_m,
            free=base.free | (stood & ~blocked),
            floor=base.floor | stood,
            obstacle=base.obstacle,
        )
        self._grid_key = key
        return self._grid

    # ------------------------------------------------------------------ graph access
    def nodes(self) -> dict[str, dict]:
        return dict(self.graph.graph.nodes(data=True))

    def has(self, name: str, kind: str | None = None) -> bool:
        g = self.graph.graph
        return name in g and (kind is None or g.nodes[name]["kind"] == kind)

    def xy(self, name: str) -> tuple[float, float]:
        x, y = self.graph.graph.nodes[name]["xy"]
        return float(x), float(y)

    def point(self, name: str) -> Point3:
        """Where to aim at an object node: its centroid, raised toward the top."""
        a = self.graph.graph.nodes[name]
        z = float(a.get("z", 0.5))
        return Point3(*self.xy(name), z)

    def distance(self, name: str) -> float:
        return self.robot.get_pose().distance_to(*self.xy(name))

    def set_description(self, name: str, description: str) -> str | None:
        a = self.graph.graph.nodes[name]
        return self.graph.set_node(name, a["kind"], a["xy"], description)

    def forget(self, name: str) -> int:
        """The robot took object ``name`` away: free the map's voxels that made it (its
        concept's cluster at the node), so that queries stop finding it there. Returns
        the voxels freed."""
        a = self.graph.graph.nodes[name]
        concept = a.get("concept")
        if not concept:
            return 0
        positions, kappa, _ = self.grounder.relevant_voxels(concept)
        clusters = self.grounder.cluster(positions, kappa)
        xy = np.asarray(a.get("exact_xy", a["xy"]), float)
        near = [c for c in clusters if np.hypot(*(c.xy - xy)) <= 0.5]
        if not near:
            return 0
        c = min(near, key=lambda c: float(np.hypot(*(c.xy - xy))))
        half = np.asarray(c.extent_m[:2]) / 2 + self.map.config.voxel_size_m
        inside = np.all(np.abs(positions[:, :2] - c.xy) <= half, axis=1)
        return self.map.forget(positions[inside])

    def move_node(self, name: str, xy: tuple[float, float], description: str) -> str | None:
        a = self.graph.graph.nodes[name]
        a["exact_xy"] = tuple(xy)
        return self.graph.set_node(name, a["kind"], xy, description)

    def _new_region(self, stem: str, xy, description: str) -> tuple[str, str]:
        k = self._counters.get(stem, 0) + 1
        self._counters[stem] = k
        name = f"{stem}_{k}"
        line = self.graph.set_node(name, "region", xy, description)
        return name, line or ""

    # ------------------------------------------------------------------ grounding
    def query(self, concept: str) -> tuple[list[str], GroundingResult]:
        """Ground ``concept``; merge candidates and viewpoints into the graph."""
        if concept in self.queried:
            self.queried.remove(concept)
        self.queried.append(concept)
        pose = self.robot.get_pose()
        result = self.grounder.query(concept, pose.xy(), self.grid())
        ops = self.graph.apply(result)
        for cand in result.candidates:  # remember heights to aim the arm camera
            node = self.graph.graph.nodes[self.node_for(concept, cand)]
            node["z"] = cand.centroid_m[2] + cand.extent_m[2] / 4
        self.last_tour = [
            v.removeprefix("near_")
            for v in self.graph.graph.graph.get("tours", {}).get(concept, [])
        ]
        if not result.candidates:
            ops.append(f"no_candidates(concept={slug(concept)})")
        return ops, result

    def requery(self) -> tuple[list[str], list[tuple[str, int]]]:
        """Ground again every concept queried so far, against the map as it has grown
        (an online map keeps its standing queries current as the robot moves). Returns
        the ops that add nodes and edges (descriptions of known nodes are updated
        quietly) and (concept, candidates found) per concept; the tour hint stays the
        most recent concept's."""
        ops: list[str] = []
        counts: list[tuple[str, int]] = []
        for concept in list(self.queried):
            new_ops, result = self.query(concept)
            ops += [op for op in new_ops if op.startswith(("add_node", "add_edge"))]
            counts.append((concept, len(result.candidates)))
        return ops, counts

    def node_for(self, concept: str, candidate) -> str:
        """The graph node a query's candidate became."""
        for name, a in self.graph.graph.nodes(data=True):
            if a.get("concept") == concept and np.allclose(
                a.get("exact_xy", (1e9, 1e9)), candidate.xy
            ):
                return name
        raise KeyError(f"no node for a {concept!r} candidate at {candidate.xy}")

    def add_instances(self, max_extent_m: float = 2.5) -> tuple[list[str], list[str]]:
        """Object instances (a scene graph's nodes) from the map's occupied voxels
        between floor and head height that carry a feature, split by geometry and
        appearance (:meth:`Grounder.instances`); walls, floor and anything wider than
        ``max_extent_m`` are left out. Returns (node names, op lines)."""
        tcfg = self.grounder.traversability
        pts, feats = [], []
        for block in self.map.blocks():
            rows = np.flatnonzero(block.occupied() & (block.feature_weight > 0))
            if rows.size:
                pos = block.positions_m(rows)
                h = pos[:, 2] - tcfg.floor_z_m
                keep = (h > tcfg.floor_tolerance_m) & (h < 2.0)
                pts.append(pos[keep])
                feats.append(block.directions(rows[keep]))
        positions = np.concatenate(pts) if pts else np.zeros((0, 3))
        features = np.concatenate(feats) if feats else np.zeros((0, self.map.config.feature_dim))
        clusters = self.grounder.instances(positions, features)
        clusters = [c for c in clusters if max(c.extent_m[:2]) <= max_extent_m]
        pose = self.robot.get_pose()
        views = self.grounder.viewpoints(clusters, pose.xy(), self.grid()) if clusters else []
        result = GroundingResult(
            concept="object",
            robot_xy_m=(pose.x_m, pose.y_m),
            candidates=tuple(clusters),
            viewpoints=tuple(views),
            tour=(),
            tour_length_m=0.0,
            kept_voxels=len(positions),
            text_features=np.zeros((1, 1), np.float32),
            temperature=1.0,
        )
        ops = self.graph.apply(result)
        for c in clusters:
            self.graph.graph.nodes[self.node_for("object", c)]["z"] = (
                c.centroid_m[2] + c.extent_m[2] / 4
            )
        return [self.node_for("object", c) for c in clusters], ops

    def tour_over(self, names: list[str]) -> list[str]:
        """``names`` in a shortest visiting order from the robot (by node position)."""
        if not names:
            return []
        pts = np.array([self.xy(n) for n in names])
        return [names[k] for k in solve_tour(self.robot.get_pose().xy(), pts).order]

    def viewpoint_pose(self, region: str) -> Pose2D:
        """Base pose at a region node, facing the object it views (if any)."""
        x, y = self.xy(region)
        yaw = self.robot.get_pose().yaw_rad
        for nb in self.graph.graph.neighbors(region):
            ox, oy = self.xy(nb)
            yaw = math.atan2(oy - y, ox - x)
        return Pose2D(x, y, yaw)

    def free_spot(self) -> tuple[str | None, str]:
        """A free floor region within reach for putting something down (op line)."""
        grid = self.grid()
        pose = self.robot.get_pose()
        objects = np.array(
            [self.xy(n) for n, a in self.nodes().items() if a["kind"] == "object"]
        ).reshape(-1, 2)
        r = self.config.free_spot_distance_m
        for k in range(16):
            a = pose.yaw_rad + math.pi / 2 + (1 if k % 2 else -1) * (k // 2) * 2 * math.pi / 16
            x, y = pose.x_m + r * math.cos(a), pose.y_m + r * math.sin(a)
            i, j = (int(v) for v in cell_of(grid, np.array([x, y])))
            if (
                not (0 <= i < grid.free.shape[0] and 0 <= j < grid.free.shape[1])
                or not grid.free[i, j]
            ):
                continue
            if (
                objects.size
                and np.min(np.hypot(*(objects - [x, y]).T)) < self.config.free_spot_clearance_m
            ):
                continue
            return self._new_region(
                "free_spot", (x, y), "free floor within arm's reach for putting things down"
            )
        return None, ""

    def frontier_points(self) -> list[tuple[float, float]]:
        """Centres of the reachable frontier fragments (mapped floor beside unmapped
        space, the map's edge included), nearest to the robot first. Metres, odom."""
        grid = self.grid()
        pose = self.robot.get_pose()
        known = grid.floor | grid.obstacle
        unknown = np.pad(~known, 1, constant_values=True)  # beyond the map is unmapped too
        unknown_near = ndimage.binary_dilation(unknown, structure=np.ones((3, 3), bool))[1:-1, 1:-1]
        reach = reachable_mask(grid, pose.xy(), 0.5)
        frontier = reach & unknown_near
        labels, n = ndimage.label(frontier, structure=np.ones((3, 3), bool))
        found = []
        for lab in range(1, n + 1):
            cells = np.argwhere(labels == lab)
            if len(cells) < self.config.frontier_min_cells:
                continue
            centre = cells[np.argmin(np.linalg.norm(cells - cells.mean(axis=0), axis=1))]
            xy = cell_centres(grid, centre)
            found.append((float(np.hypot(*(xy - pose.xy()))), (float(xy[0]), float(xy[1]))))
        return [xy for _, xy in sorted(found)]

    def frontiers(self) -> list[str]:
        """Add region nodes at the edge of the mapped floor (unexplored beyond)."""
        ops = []
        existing = [self.xy(n) for n in self.nodes() if n.startswith("frontier_")]
        for xy in self.frontier_points()[: self.config.max_frontiers]:
            if any(math.hypot(xy[0] - ex, xy[1] - ey) < 1.0 for ex, ey in existing):
                continue
            _, line = self._new_region(
                "frontier", xy, "edge of the mapped area; unexplored space beyond"
            )
            ops.append(line)
        return ops

    def explore(self, max_stops: int = 60, revisit_m: float = 1.5, on_stop=None) -> tuple[int, int]:
        """Map the surroundings before a task, as a pre-built map would have: walk to
        the nearest reachable frontier, look with every body camera, and repeat until
        no frontier is left that is more than ``revisit_m`` from a spot already tried
        (or ``max_stops`` walks were tried). Uses the robot's own frames only.
        ``on_stop()`` runs where the robot starts and after every stop's frames are
        fused. Returns (stops made, walks the robot refused)."""
        tried: list[tuple[float, float]] = []
        stops = refused = 0
        if on_stop is not None:
            on_stop()
        while stops + refused < max_stops:
            todo = [
                xy
                for xy in self.frontier_points()
                if all(math.hypot(xy[0] - tx, xy[1] - ty) >= revisit_m for tx, ty in tried)
            ]
            if not todo:
                break
            x, y = todo[0]
            tried.append((x, y))
            pose = self.robot.get_pose()
            try:
                self.walk(Pose2D(x, y, math.atan2(y - pose.y_m, x - pose.x_m)))
            except GoalUnreachable:
                refused += 1
                continue
            stops += 1
            if on_stop is not None:
                on_stop()
        return stops, refused
