"""The Oracle baseline: follows the scenario's step-by-step instructions.

As in the CLUE paper, the Oracle is told what to do, so it may read the scenario (ground
truth): object positions to walk to, grasp and point at. It still acts only through the
robot interface, and walks where a robot could stand, so it pays the same action and
time costs as any other policy. It does not count as an LLM policy: no LLM calls.
"""

from __future__ import annotations

import math
import time

from agents.base import Agent, Answer
from agents.episode_log import EpisodeLog
from agents.robot import GoalUnreachable, OutOfReach, Point3, Pose2D, Robot, RobotError
from scenarios.geometry import (
    Footprint,
    base_heights,
    footprints_overlap,
    object_footprint,
    wall_footprint,
)
from scenarios.schema import OracleStep, Scenario

CLEARANCE_M = 0.7  # keep the base this far from anything (the robot sweeps a 0.65 m disc)
INSPECT_RANGE_M = 2.5  # walk closer than this before inspecting (robot allows 3 m)
PLACE_RANGE_M = 1.4  # walk closer than this before placing (robot allows 1.6 m)


class OracleAgent(Agent):
    name = "oracle"

    def __init__(self, scenario: Scenario):
        super().__init__()
        self.scenario = scenario
        self.heights = base_heights(scenario)
        self.positions = {o.id: (o.pose.x, o.pose.y) for o in scenario.objects}
        self.held: str | None = None

    # ------------------------------------------------------------------ geometry
    def _obstacles(self, exclude: str | None = None):
        fps = [wall_footprint(w) for w in self.scenario.environment.walls]
        for o in self.scenario.objects:
            if o.id in (exclude, self.held) or self.heights[o.id] > 0.7:
                continue
            x, y = self.positions[o.id]
            fps.append(object_footprint(o, x, y))
        return fps

    def _stand_poses(self, tx: float, ty: float, standoff_m: float, robot: Robot) -> list[Pose2D]:
        """Free base poses facing (tx, ty) about ``standoff_m`` away, nearest first."""
        here = robot.get_pose()
        x0, y0, x1, y1 = self.scenario.environment.extent
        obstacles = self._obstacles()
        out = []
        for k in range(24):
            a = 2 * math.pi * k / 24
            for d in (standoff_m, standoff_m + 0.3, standoff_m + 0.6):
                x, y = tx + d * math.cos(a), ty + d * math.sin(a)
                yaw = math.atan2(ty - y, tx - x)
                if not (
                    x0 + CLEARANCE_M <= x <= x1 - CLEARANCE_M
                    and y0 + CLEARANCE_M <= y <= y1 - CLEARANCE_M
                ):
                    continue
                swept = Footprint((x, y), 0.0, (CLEARANCE_M, CLEARANCE_M), radius_m=CLEARANCE_M)
                if any(footprints_overlap(swept, fp, tol_m=0.0) for fp in obstacles):
                    continue
                out.append(Pose2D(x, y, yaw))
                break
        out.sort(key=lambda q: here.distance_to(q.x_m, q.y_m))
        return out

    def _object_point(self, oid: str, top: bool = True) -> Point3:
        o = self.scenario.object(oid)
        x, y = self.positions[oid]
        z = self.heights[oid] + (o.size[2] if top else o.size[2] / 2)
        return Point3(x, y, z)

    def _approach(
        self, tx: float, ty: float, reach_m: float, radius_m: float, robot: Robot, log: EpisodeLog
    ):
        """Walk next to (tx, ty) unless already within ``reach_m``; returns actions used."""
        if robot.get_pose().distance_to(tx, ty) <= reach_m:
            return 0
        used = 0
        for pose in self._stand_poses(tx, ty, radius_m + 0.85, robot)[:4]:
            used += 1
            try:
                res = robot.goto(pose)
            except GoalUnreachable as exc:
                log.write(
                    "action",
                    behavior="goto",
                    args=[pose.x_m, pose.y_m],
                    ok=False,
                    observation=str(exc),
                )
                continue
            log.write(
                "action",
                behavior="goto",
                args=[pose.x_m, pose.y_m, pose.yaw_rad],
                ok=True,
                observation=f"arrived after {res.path_length_m:.1f} m",
            )
            return used
        raise GoalUnreachable(f"no reachable pose next to ({tx:.1f}, {ty:.1f})")

    def _radius(self, oid: str) -> float:
        o = self.scenario.object(oid)
        return math.hypot(o.size[0], o.size[1]) / 2

    # ------------------------------------------------------------------ policy
    def run(self, task: str, robot: Robot, budget: int, log: EpisodeLog) -> Answer | None:
        steps = 0
        for i, step in enumerate(self.scenario.oracle):
            if steps >= budget:
                return None
            t0 = time.monotonic()
            try:
                steps += self._do(step, robot, log)
            except RobotError as exc:
                log.write(
                    "action",
                    behavior=step.action,
                    instruction=i,
                    ok=False,
                    observation=f"{type(exc).__name__}: {exc}",
                    wall_s=time.monotonic() - t0,
                )
                steps += 1
                continue
            if step.action == "answer":
                self.usage.steps = steps
                pt = self._object_point(step.object, top=False) if step.object else None
                return Answer(step.text or "", pt, step.object)
        self.usage.steps = steps
        return None

    def _do(self, step: OracleStep, robot: Robot, log: EpisodeLog) -> int:
        """Execute one instruction; returns the number of robot actions it used."""
        if step.action == "answer":
            return 1
        if step.action == "goto":
            if step.object:
                x, y = self.positions[step.object]
                return self._approach(x, y, 0.0, self._radius(step.object), robot, log)
            x, y = self._xy(step)
            return self._approach(x, y, 0.0, 0.0, robot, log)
        if step.action == "inspect":
            x, y = self.positions[step.object]
            used = self._approach(x, y, INSPECT_RANGE_M, self._radius(step.object), robot, log)
            res = robot.inspect(self._object_point(step.object), step.question or "")
            log.write(
                "action",
                behavior="inspect",
                args=[step.object, step.question],
                ok=True,
                observation=res.answer,
            )
            return used + 1
        if step.action == "grasp":
            x, y = self.positions[step.object]
            used = 0
            if robot.get_pose().distance_to(x, y) > self._radius(step.object) + 1.2:
                used = self._approach(x, y, 0.0, self._radius(step.object), robot, log)
            res = robot.grasp(self._object_point(step.object))
            self.held = step.object
            log.write(
                "action", behavior="grasp", args=[step.object], ok=True, observation=res.message
            )
            return used + 1
        # place
        x, y = self._xy(step)
        used = self._approach(
            x, y, PLACE_RANGE_M, self._radius(self.held or "") if self.held else 0.5, robot, log
        )
        try:
            res = robot.place(Point3(x, y, 0.0))
        except OutOfReach:
            used += self._approach(x, y, 0.0, 0.5, robot, log)
            res = robot.place(Point3(x, y, 0.0))
        if self.held:
            self.positions[self.held] = (x, y)
            self.heights[self.held] = 0.0
        self.held = None
        log.write("action", behavior="place", args=[x, y], ok=True, observation=res.message)
        return used + 1

    def _xy(self, step: OracleStep) -> tuple[float, float]:
        if step.xy is not None:
            return step.xy
        r = self.scenario.region(step.region)
        return (r.x, r.y)
