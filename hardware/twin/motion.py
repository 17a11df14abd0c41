"""Walk playback: the twin's robot moves along the simulator's path over (scaled) time.

The simulator moves its kinematic base to the goal in one step and reports the
collision-free path it planned. The twin replays that path so that a client sees what a
real robot shows: a body that turns in place, walks each straight segment at
``Timing.walk_speed_mps`` and turns at ``Timing.turn_speed_radps``, and arrives after
the simulator's own duration, divided by ``time_scale`` in wall-clock time.

Odometry: a client measures the distance it walked by summing the distances between the
poses it reads. For that sum to equal the simulator's path length, the robot pauses at
each corner of the path until a robot-state read has reported it there, or for at most
``dwell_s`` of wall time (so a client that only polls command feedback still arrives).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def _wrap(angle_rad: float) -> float:
    return math.atan2(math.sin(angle_rad), math.cos(angle_rad))


@dataclass(frozen=True)
class Keyframe:
    t_s: float  # simulated seconds since the walk began
    x_m: float
    y_m: float
    yaw_rad: float
    corner: bool = False  # arrival at an interior path vertex (odometry must see it)


def keyframes(
    start: tuple[float, float, float],
    path: list[tuple[float, float]],
    goal: tuple[float, float, float],
    walk_speed_mps: float,
    turn_speed_radps: float,
) -> list[Keyframe]:
    """Turn-walk-turn keyframes along ``path`` (first point = start, last = goal); the
    timing mirrors ``SpotWorldEnv._goto`` so the walk lasts the simulator's duration."""
    x, y, heading = start
    out = [Keyframe(0.0, x, y, heading)]
    t = 0.0
    for i, (a, b) in enumerate(zip(path, path[1:], strict=False)):
        seg_yaw = math.atan2(b[1] - a[1], b[0] - a[0])
        turn = abs(_wrap(seg_yaw - heading))
        if turn > 0.0:
            t += turn / turn_speed_radps
            out.append(Keyframe(t, a[0], a[1], seg_yaw))
        t += math.hypot(b[0] - a[0], b[1] - a[1]) / walk_speed_mps
        last = i == len(path) - 2
        out.append(Keyframe(t, b[0], b[1], seg_yaw, corner=not last))
        heading = seg_yaw
    t += abs(_wrap(goal[2] - heading)) / turn_speed_radps
    out.append(Keyframe(t, goal[0], goal[1], goal[2]))
    return out


class Walk:
    """One walk in progress. ``advance(now_s)`` moves it on; ``pose`` is where it is."""

    def __init__(
        self, frames: list[Keyframe], now_s: float, time_scale: float, dwell_s: float = 0.5
    ):
        self.frames = frames
        self.time_scale = time_scale  # simulated seconds per wall-clock second
        self.dwell_s = dwell_s  # longest wait at an unobserved corner, wall seconds
        self.t_s = 0.0  # simulated seconds walked
        self.k = 0  # index of the last keyframe reached
        self.stalled = False  # fault injection: accepted, never progresses
        self.halted = False  # stopped before the goal (stop, E-Stop, lease lost, comms loss)
        self._last_wall_s = now_s
        self._held_since_s: float | None = None

    @property
    def done(self) -> bool:
        return self.k == len(self.frames) - 1

    @property
    def moving(self) -> bool:
        return not (self.done or self.halted)

    @property
    def duration_s(self) -> float:
        return self.frames[-1].t_s

    @property
    def pose(self) -> tuple[float, float, float]:
        a = self.frames[self.k]
        if self.done or self.t_s <= a.t_s:
            return a.x_m, a.y_m, a.yaw_rad
        b = self.frames[self.k + 1]
        f = (self.t_s - a.t_s) / (b.t_s - a.t_s)
        yaw = _wrap(a.yaw_rad + f * _wrap(b.yaw_rad - a.yaw_rad))
        return a.x_m + f * (b.x_m - a.x_m), a.y_m + f * (b.y_m - a.y_m), yaw

    def halt(self) -> None:
        self.halted = True

    def advance(self, now_s: float, observed: bool = False) -> tuple[float, float, float]:
        """Move on to wall time ``now_s``; ``observed``: this pose is being reported as
        odometry (a robot-state read), which releases a corner pause."""
        elapsed_s, self._last_wall_s = now_s - self._last_wall_s, now_s
        if not self.moving or self.stalled:
            return self.pose
        if self._held_since_s is not None:
            if observed:
                self._held_since_s = None  # report the corner now, walk on from the next read
                return self.pose
            if now_s - self._held_since_s < self.dwell_s:
                return self.pose
            self._held_since_s = None
            return self.pose
        budget_s = elapsed_s * self.time_scale
        while budget_s > 0.0 and not self.done:
            nxt = self.frames[self.k + 1]
            need_s = nxt.t_s - self.t_s
            if budget_s < need_s:
                self.t_s += budget_s
                break
            budget_s -= need_s
            self.t_s = nxt.t_s
            self.k += 1
            if nxt.corner:
                if not observed:
                    self._held_since_s = now_s
                break
        return self.pose
