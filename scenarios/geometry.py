"""Footprints, heights and overlap tests for scenario objects (metres, radians).

Shared by the scenario validator and the simulator, so that what validation accepts is
exactly what the engine builds. Footprints are oriented rectangles, or discs for round
shapes; vertical extents come from resolving support relations (on / in).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from scenarios.schema import Scenario, SceneObject

ROBOT_LENGTH_M = 1.1  # Spot body, front to back
ROBOT_WIDTH_M = 0.5
ROBOT_HEIGHT_M = 0.75  # top of the body above the floor (arm stowed)
OVERLAP_TOLERANCE_M = 0.01  # interpenetration below this is touching, not overlap
INSIDE_FLOOR_M = 0.03  # an object 'in' a container rests this far above its base


@dataclass(frozen=True)
class Footprint:
    """Planar footprint: a disc (``radius_m``) or an oriented rectangle (``half_m``)."""

    centre: tuple[float, float]
    yaw_rad: float
    half_m: tuple[float, float]
    radius_m: float | None = None

    def corners(self) -> np.ndarray:
        c, s = math.cos(self.yaw_rad), math.sin(self.yaw_rad)
        hx, hy = self.half_m
        local = np.array([[hx, hy], [-hx, hy], [-hx, -hy], [hx, -hy]])
        rot = np.array([[c, -s], [s, c]])
        return local @ rot.T + np.asarray(self.centre)

    def aabb(self) -> tuple[float, float, float, float]:
        if self.radius_m is not None:
            r = self.radius_m
            return (self.centre[0] - r, self.centre[1] - r, self.centre[0] + r, self.centre[1] + r)
        pts = self.corners()
        return (*pts.min(axis=0), *pts.max(axis=0))

    def contains(self, xy: np.ndarray, margin_m: float = 0.0) -> np.ndarray:
        """Boolean mask of which points (N, 2) lie inside, grown by ``margin_m``."""
        d = np.atleast_2d(xy) - np.asarray(self.centre)
        if self.radius_m is not None:
            return np.hypot(d[:, 0], d[:, 1]) <= self.radius_m + margin_m
        c, s = math.cos(self.yaw_rad), math.sin(self.yaw_rad)
        lx = d[:, 0] * c + d[:, 1] * s
        ly = -d[:, 0] * s + d[:, 1] * c
        return (np.abs(lx) <= self.half_m[0] + margin_m) & (np.abs(ly) <= self.half_m[1] + margin_m)

    def distance_to(self, x: float, y: float) -> float:
        """Distance from a point to the footprint's boundary (0 inside)."""
        d = np.array([x, y]) - np.asarray(self.centre)
        if self.radius_m is not None:
            return max(0.0, float(np.hypot(*d)) - self.radius_m)
        c, s = math.cos(self.yaw_rad), math.sin(self.yaw_rad)
        lx, ly = d[0] * c + d[1] * s, -d[0] * s + d[1] * c
        ex = max(abs(lx) - self.half_m[0], 0.0)
        ey = max(abs(ly) - self.half_m[1], 0.0)
        return math.hypot(ex, ey)


def footprint_of(shape: str, size, x: float, y: float, yaw_rad: float) -> Footprint:
    if shape in ("cylinder", "sphere"):
        r = max(size[0], size[1]) / 2.0
        return Footprint((x, y), 0.0, (r, r), radius_m=r)
    return Footprint((x, y), yaw_rad, (size[0] / 2.0, size[1] / 2.0))


def object_footprint(obj: SceneObject, x: float | None = None, y: float | None = None) -> Footprint:
    return footprint_of(
        obj.shape.value,
        obj.size,
        obj.pose.x if x is None else x,
        obj.pose.y if y is None else y,
        obj.pose.yaw_rad,
    )


def robot_footprint(x: float, y: float, yaw_rad: float) -> Footprint:
    return Footprint((x, y), yaw_rad, (ROBOT_LENGTH_M / 2, ROBOT_WIDTH_M / 2))


def wall_footprint(wall) -> Footprint:
    (x0, y0), (x1, y1) = wall.start, wall.end
    length = math.hypot(x1 - x0, y1 - y0)
    return Footprint(
        ((x0 + x1) / 2, (y0 + y1) / 2),
        math.atan2(y1 - y0, x1 - x0),
        (length / 2 + wall.thickness / 2, wall.thickness / 2),
    )


def footprints_overlap(a: Footprint, b: Footprint, tol_m: float = OVERLAP_TOLERANCE_M) -> bool:
    """True when the two footprints interpenetrate by more than ``tol_m``."""
    if a.radius_m is not None and b.radius_m is not None:
        gap = math.hypot(a.centre[0] - b.centre[0], a.centre[1] - b.centre[1])
        return gap < a.radius_m + b.radius_m - tol_m
    if a.radius_m is not None or b.radius_m is not None:
        disc, rect = (a, b) if a.radius_m is not None else (b, a)
        return rect.distance_to(*disc.centre) < disc.radius_m - tol_m
    # Separating-axis test for two oriented rectangles, with a tolerance on each axis.
    pa, pb = a.corners(), b.corners()
    for rect in (a, b):
        c, s = math.cos(rect.yaw_rad), math.sin(rect.yaw_rad)
        for axis in (np.array([c, s]), np.array([-s, c])):
            ia, ib = pa @ axis, pb @ axis
            if ia.max() - tol_m <= ib.min() or ib.max() - tol_m <= ia.min():
                return False
    return True


def base_heights(scn: Scenario) -> dict[str, float]:
    """Base z of every object (metres), resolving 'on' and 'in' chains."""
    objs = {o.id: o for o in scn.objects}
    out: dict[str, float] = {}

    def resolve(oid: str, depth: int = 0) -> float:
        if oid in out:
            return out[oid]
        o = objs[oid]
        if depth > len(objs):
            raise ValueError("support relations form a cycle")
        if o.pose.z is not None:
            z = o.pose.z
        elif o.on and o.on in objs:
            z = resolve(o.on, depth + 1) + objs[o.on].size[2]
        elif o.inside and o.inside in objs:
            z = resolve(o.inside, depth + 1) + INSIDE_FLOOR_M
        else:
            z = 0.0
        out[oid] = z
        return z

    for oid in objs:
        resolve(oid)
    return out


def related(scn: Scenario) -> set[frozenset[str]]:
    """Pairs allowed to overlap: support (on/in) chains and covering (tarp, lid)."""
    objs = {o.id: o for o in scn.objects}
    parent = {o.id: (o.on or o.inside) for o in scn.objects}

    def ancestors(oid: str) -> list[str]:
        chain, seen = [], set()
        while parent.get(oid) and parent[oid] in objs and oid not in seen:
            seen.add(oid)
            oid = parent[oid]
            chain.append(oid)
        return chain

    pairs: set[frozenset[str]] = set()
    for o in scn.objects:
        for a in ancestors(o.id):
            pairs.add(frozenset((o.id, a)))
    for o in scn.objects:
        for c in o.covers:
            pairs.add(frozenset((o.id, c)))
            # whatever rests on or in a covered object is covered too
            for other in scn.objects:
                if c in ancestors(other.id):
                    pairs.add(frozenset((o.id, other.id)))
    # siblings resting inside one container may touch each other
    return pairs


class ScenarioIssues(ValueError):
    """Cross-field problems, each with its path inside the file."""

    def __init__(self, issues: list[tuple[str, str]]):
        self.issues = issues
        super().__init__("; ".join(f"{p}: {m}" for p, m in issues))


def check_scenario(scn: Scenario) -> None:
    """Raise :class:`ScenarioIssues` listing every cross-field problem."""
    issues: list[tuple[str, str]] = []
    ids: dict[str, int] = {}
    for i, o in enumerate(scn.objects):
        if o.id in ids:
            issues.append(
                (f"objects[{i}].id", f"duplicate id {o.id!r} (first at objects[{ids[o.id]}])")
            )
        else:
            ids[o.id] = i
    region_names = {r.name for r in scn.environment.regions}

    def ref(path: str, oid: str | None, what: str = "object") -> None:
        if oid is not None and oid not in ids:
            issues.append(
                (path, f"unknown {what} {oid!r}; known objects: {', '.join(sorted(ids)) or 'none'}")
            )

    for i, o in enumerate(scn.objects):
        p = f"objects[{i}]"
        ref(f"{p}.on", o.on)
        ref(f"{p}.in", o.inside)
        if o.on == o.id or o.inside == o.id:
            issues.append((p, "an object cannot rest on or in itself"))
        for j, c in enumerate(o.covers):
            ref(f"{p}.covers[{j}]", c)
        for j, f in enumerate(o.facts):
            if f.visible_when is not None:
                cond = f.visible_when
                ref(f"{p}.facts[{j}].visible_when", cond.referenced())
                if cond.opened and cond.opened in ids:
                    lids = [x for x in scn.objects if x.on == cond.opened and x.kind.value == "lid"]
                    if not lids:
                        issues.append(
                            (
                                f"{p}.facts[{j}].visible_when.opened",
                                f"{cond.opened!r} has no lid (an object of kind 'lid' on it) to open",
                            )
                        )
    for j, e in enumerate(scn.success.entities):
        ref(f"success.entities[{j}]", e)
    if scn.success.final_state is not None:
        fs = scn.success.final_state
        ref("success.final_state.object", fs.object)
        if isinstance(fs.near, str) and fs.near not in ids and fs.near not in region_names:
            issues.append(("success.final_state.near", f"unknown object or region {fs.near!r}"))
    for j, step in enumerate(scn.oracle):
        ref(f"oracle[{j}].object", step.object)
        if step.region is not None and step.region not in region_names:
            issues.append(
                (
                    f"oracle[{j}].region",
                    f"unknown region {step.region!r}; known regions: {', '.join(sorted(region_names)) or 'none'}",
                )
            )
    if issues:  # geometry below needs sound references
        raise ScenarioIssues(issues)

    try:
        heights = base_heights(scn)
    except ValueError as exc:
        raise ScenarioIssues([("objects", str(exc))]) from None
    x0, y0, x1, y1 = scn.environment.extent
    fps = [object_footprint(o) for o in scn.objects]
    for i, (o, fp) in enumerate(zip(scn.objects, fps, strict=True)):
        bx0, by0, bx1, by1 = fp.aabb()
        if bx0 < x0 or by0 < y0 or bx1 > x1 or by1 > y1:
            issues.append(
                (
                    f"objects[{i}].pose",
                    f"{o.id!r} at ({o.pose.x:g}, {o.pose.y:g}) with size {o.size[0]:g} x {o.size[1]:g} m "
                    f"leaves the environment extent {list(scn.environment.extent)}",
                )
            )
    allowed = related(scn)
    walls = [wall_footprint(w) for w in scn.environment.walls]
    for i, a in enumerate(scn.objects):
        za = (heights[a.id], heights[a.id] + a.size[2])
        for j in range(i + 1, len(scn.objects)):
            b = scn.objects[j]
            if frozenset((a.id, b.id)) in allowed:
                continue
            if a.inside and a.inside == b.inside:
                continue
            zb = (heights[b.id], heights[b.id] + b.size[2])
            if min(za[1], zb[1]) - max(za[0], zb[0]) <= OVERLAP_TOLERANCE_M:
                continue
            if footprints_overlap(fps[i], fps[j]):
                issues.append(
                    (
                        f"objects[{j}].pose",
                        f"{b.id!r} overlaps {a.id!r} (objects[{i}]); move it or declare a relation (on / in / covers)",
                    )
                )
        for k, w in enumerate(walls):
            if footprints_overlap(fps[i], w) and heights[a.id] < scn.environment.walls[k].height:
                issues.append((f"objects[{i}].pose", f"{a.id!r} overlaps environment.walls[{k}]"))
    rp = scn.robot.pose
    rfp = robot_footprint(rp.x, rp.y, rp.yaw_rad)
    bx0, by0, bx1, by1 = rfp.aabb()
    if bx0 < x0 or by0 < y0 or bx1 > x1 or by1 > y1:
        issues.append(("robot.pose", "the robot's start footprint leaves the environment extent"))
    for i, (o, fp) in enumerate(zip(scn.objects, fps, strict=True)):
        if heights[o.id] < ROBOT_HEIGHT_M and footprints_overlap(rfp, fp):
            issues.append(("robot.pose", f"the robot starts inside {o.id!r} (objects[{i}])"))
    for k, w in enumerate(walls):
        if footprints_overlap(rfp, w):
            issues.append(("robot.pose", f"the robot starts inside environment.walls[{k}]"))
    for k, r in enumerate(scn.environment.regions):
        if not (x0 <= r.x <= x1 and y0 <= r.y <= y1):
            issues.append(
                (f"environment.regions[{k}]", f"region {r.name!r} lies outside the extent")
            )
    if issues:
        raise ScenarioIssues(issues)
