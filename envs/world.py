"""The physical scene of a scenario in one pybullet client: bodies and their state.

Every object is one static pybullet body built from primitives (so a segmentation
pixel names exactly one object). Objects move only when the robot grasps and places
them. Occlusion is physical: a tarp is a drape body over a barrel, so a camera cannot
see the sign beneath it until the tarp has been taken away.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pybullet as p

from envs.bodies import fixed_compound
from scenarios.geometry import (
    Footprint,
    base_heights,
    footprints_overlap,
    object_footprint,
    wall_footprint,
)
from scenarios.schema import Scenario, SceneObject, Shape, resolve_colour

DRAPE_SHEET_M = 0.02  # tarp thickness
DRAPE_DROP_FRACTION = 0.6  # tarp sides hang down this fraction of its height
FLOOR_COLOUR = (0.62, 0.62, 0.60, 1.0)
OUTDOOR_FLOOR_COLOUR = (0.42, 0.50, 0.36, 1.0)
WALL_COLOUR = (0.85, 0.84, 0.80, 1.0)
FLOOR_PHRASE = "floor"
WALL_PHRASE = "wall"


@dataclass
class ObjectState:
    """Where an object is now (base centre on its support, yaw) and who holds it."""

    spec: SceneObject
    body: int
    x: float
    y: float
    z: float  # base height, metres
    yaw: float
    held: bool = False
    start: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def footprint(self) -> Footprint:
        return object_footprint(self.spec, self.x, self.y)

    @property
    def top_z(self) -> float:
        return self.z + self.spec.size[2]

    def centre(self) -> np.ndarray:
        return np.array([self.x, self.y, self.z + self.spec.size[2] / 2])


@dataclass
class World:
    """Bodies of one scenario and the queries the behaviours need."""

    client: int
    scenario: Scenario
    objects: dict[str, ObjectState] = field(default_factory=dict)
    by_body: dict[int, str] = field(default_factory=dict)
    floor_body: int = -1
    wall_bodies: list[int] = field(default_factory=list)

    # ------------------------------------------------------------------ building
    @classmethod
    def build(cls, client: int, scenario: Scenario) -> World:
        w = cls(client=client, scenario=scenario)
        env = scenario.environment
        x0, y0, x1, y1 = env.extent
        colour = OUTDOOR_FLOOR_COLOUR if env.outdoor else FLOOR_COLOUR
        w.floor_body = w._box(
            [(x1 - x0) / 2 + 1, (y1 - y0) / 2 + 1, 0.05],
            [(x0 + x1) / 2, (y0 + y1) / 2, -0.05],
            0.0,
            colour,
        )
        for wall in env.walls:
            fp = wall_footprint(wall)
            w.wall_bodies.append(
                w._box(
                    [fp.half_m[0], fp.half_m[1], wall.height / 2],
                    [*fp.centre, wall.height / 2],
                    fp.yaw_rad,
                    WALL_COLOUR,
                )
            )
        heights = base_heights(scenario)
        for o in scenario.objects:
            body = w._object_body(o)
            st = ObjectState(o, body, o.pose.x, o.pose.y, heights[o.id], o.pose.yaw_rad)
            st.start = (st.x, st.y, st.z)
            w.objects[o.id] = st
            w.by_body[body] = o.id
            w.sync(o.id)
        return w

    def _box(self, half, pos, yaw, rgba) -> int:
        c = p.createCollisionShape(p.GEOM_BOX, halfExtents=half, physicsClientId=self.client)
        v = p.createVisualShape(
            p.GEOM_BOX, halfExtents=half, rgbaColor=rgba, physicsClientId=self.client
        )
        return p.createMultiBody(
            0, c, v, pos, p.getQuaternionFromEuler([0, 0, yaw]), physicsClientId=self.client
        )

    def _object_body(self, o: SceneObject) -> int:
        """One body per object; the base frame sits at the object's base centre."""
        rgb = o.rgb()
        prims: list[tuple[str, tuple, tuple, tuple]] = []  # shape, size, offset, colour
        sx, sy, sz = o.size
        if o.parts:
            for part in o.parts:
                prims.append((part.shape, part.size, part.offset, resolve_colour(part.colour, rgb)))
        elif o.shape is Shape.drape:
            t, drop = DRAPE_SHEET_M, DRAPE_DROP_FRACTION * sz
            prims.append(("box", (sx, sy, t), (0, 0, sz - t / 2), rgb))
            for side in (1, -1):
                prims.append(("box", (t, sy, drop), (side * (sx - t) / 2, 0, sz - drop / 2), rgb))
                prims.append(("box", (sx, t, drop), (0, side * (sy - t) / 2, sz - drop / 2), rgb))
        else:
            prims.append((o.shape.value, o.size, (0, 0, sz / 2), rgb))
        shapes = []  # (collision, visual) per primitive, offsets in the shapes' frames
        for shape, size, offset, colour in prims:
            if shape == "box":
                geom, dims = p.GEOM_BOX, {"halfExtents": [size[0] / 2, size[1] / 2, size[2] / 2]}
            elif shape == "cylinder":
                geom, dims = p.GEOM_CYLINDER, {"radius": max(size[0], size[1]) / 2}
            else:
                geom, dims = p.GEOM_SPHERE, {"radius": max(size) / 2}
            # pybullet names a cylinder's length "length" for visuals, "height" for collisions
            along = {"length": size[2]} if geom == p.GEOM_CYLINDER else {}
            height = {"height": size[2]} if geom == p.GEOM_CYLINDER else {}
            visual = p.createVisualShape(
                geom,
                rgbaColor=[*colour, 1.0],
                visualFramePosition=offset,
                physicsClientId=self.client,
                **dims,
                **along,
            )
            collision = p.createCollisionShape(
                geom, collisionFramePosition=offset, physicsClientId=self.client, **dims, **height
            )
            shapes.append((collision, visual))
        # Base = first primitive; the rest are fixed links so each keeps its colour.
        return fixed_compound(
            self.client,
            shapes[0],
            [o.pose.x, o.pose.y, 0.0],
            [(c, v, (0, 0, 0)) for c, v in shapes[1:]],
        )

    def sync(self, oid: str) -> None:
        st = self.objects[oid]
        p.resetBasePositionAndOrientation(
            st.body,
            [st.x, st.y, st.z],
            p.getQuaternionFromEuler([0, 0, st.yaw]),
            physicsClientId=self.client,
        )

    # ------------------------------------------------------------------ queries
    def covering(self, oid: str) -> list[str]:
        """Objects that physically cover ``oid`` now: resting (not held) over its centre,
        reaching at least as high as its top and starting below it."""
        me = self.objects[oid]
        out = []
        for other_id, o in self.objects.items():
            is_cover = o.spec.shape is Shape.drape or o.spec.kind.value == "lid"
            if other_id == oid or o.held or not is_cover:
                continue
            if not o.footprint().contains(np.array([[me.x, me.y]]))[0]:
                continue
            if o.spec.shape is Shape.drape:
                if o.z <= me.top_z and o.top_z >= me.top_z - 0.02:
                    out.append(other_id)
            elif abs(o.z - me.top_z) < 0.05:  # a lid resting on the rim
                out.append(other_id)
        return sorted(out)

    def covered_chain(self, oid: str) -> list[str]:
        """Coverers of ``oid`` or of anything it rests on/in (a sign on a covered barrel)."""
        chain, cur = [], oid
        while cur is not None and cur in self.objects and cur not in chain:
            chain.append(cur)
            cur = self.support_of(cur)
        # a lid resting on its box covers the box, not itself
        return sorted({c for cur in chain for c in self.covering(cur) if c not in chain})

    def support_of(self, oid: str) -> str | None:
        """The object ``oid`` still rests on/in (its declared support, if not moved)."""
        st = self.objects[oid]
        if st.held or (st.x, st.y, st.z) != st.start:
            return None
        return st.spec.on or st.spec.inside

    def is_opened(self, container: str) -> bool:
        return not any(self.objects[c].spec.kind.value == "lid" for c in self.covering(container))

    def condition_holds(self, fact_condition) -> bool:
        if fact_condition is None:
            return True
        if fact_condition.not_covered_by is not None:
            coverer = fact_condition.not_covered_by
            # the declared coverer no longer covers the object the fact belongs to
            return all(coverer not in self.covering(t) for t in self.objects)
        return self.is_opened(fact_condition.opened)

    def nearest_object(
        self, point: np.ndarray, max_dist_m: float, only=None
    ) -> tuple[str | None, float]:
        """Object whose box (footprint x height) is closest to ``point``, within reach.

        Ties (a point inside both a tarp and the barrel it covers) go to the outermost,
        highest-topped object: the one a gripper reaching for that point meets first.
        """
        best, best_key = None, (math.inf, 0.0)
        for oid, st in self.objects.items():
            if st.held or (only is not None and not only(st)):
                continue
            dxy = st.footprint().distance_to(float(point[0]), float(point[1]))
            dz = max(st.z - point[2], point[2] - st.top_z, 0.0)
            key = (round(math.hypot(dxy, dz), 3), -st.top_z)
            if key < best_key:
                best, best_key = oid, key
        return (best, best_key[0]) if best_key[0] <= max_dist_m else (None, best_key[0])

    def obstruction(self, a, b, margin_m: float = 0.0, step_m: float = 0.02) -> str | None:
        """The first object (or "wall") whose solid box, footprint x height grown by
        ``margin_m``, the straight segment from ``a`` to ``b`` (world points, metres)
        passes through; None if clear. Held objects travel with the robot and do not
        obstruct."""
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        n = max(2, int(math.ceil(np.linalg.norm(b - a) / step_m)) + 1)
        pts = a + np.linspace(0.0, 1.0, n)[:, None] * (b - a)
        solids = [
            (wall_footprint(w), 0.0, w.height, "wall") for w in self.scenario.environment.walls
        ]
        solids += [
            (st.footprint(), st.z, st.top_z, oid) for oid, st in self.objects.items() if not st.held
        ]
        first, name = n, None
        for fp, z0, z1, label in solids:
            hit = (
                fp.contains(pts[:, :2], margin_m)
                & (pts[:, 2] >= z0 - margin_m)
                & (pts[:, 2] <= z1 + margin_m)
            )
            if hit.any() and int(np.argmax(hit)) < first:
                first, name = int(np.argmax(hit)), label
        return name

    def blocking_footprints(self, exclude: set[str] = frozenset(), max_base_z_m: float = 0.7):
        """Footprints that block the robot: walls and objects standing on the floor."""
        fps = [wall_footprint(wall) for wall in self.scenario.environment.walls]
        for oid, st in self.objects.items():
            if oid in exclude or st.held or st.z > max_base_z_m:
                continue
            fps.append(st.footprint())
        return fps

    def placement_clear(self, oid: str, x: float, y: float) -> str | None:
        """None if ``oid`` can rest on the floor at (x, y); else the reason."""
        st = self.objects[oid]
        x0, y0, x1, y1 = self.scenario.environment.extent
        fp = Footprint(
            (x, y),
            st.yaw,
            (st.spec.size[0] / 2, st.spec.size[1] / 2),
            radius_m=st.footprint().radius_m,
        )
        bx0, by0, bx1, by1 = fp.aabb()
        if bx0 < x0 or by0 < y0 or bx1 > x1 or by1 > y1:
            return "the location lies outside the area"
        for other in self.blocking_footprints(exclude={oid}):
            if footprints_overlap(fp, other, tol_m=0.0):
                return "the location is occupied"
        return None
