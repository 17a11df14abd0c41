"""The robot interface: the agents' only door to the world.

`envs.SimRobot` (pybullet) and `hardware.SpotRobot` (bosdyn-client) implement
:class:`Robot`; agent code is written against this module alone and never imports a
simulator or an SDK.

Frames and units
----------------
* ``odom`` is the fixed world frame of an episode (the simulator's world frame, or
  Spot's odometry frame). Positions are metres, angles radians.
* ``odom_T_body`` is the robot base pose, reported as a planar :class:`Pose2D`.
* ``odom_T_camera`` is a 4x4 homogeneous transform of the camera *optical* frame in
  ``odom``: +z forward along the optical axis, +x right, +y down (OpenCV convention).
* Objects are addressed by a point in ``odom`` (the way Spot's manipulation API picks
  by a ray or a pixel), never by a simulator id: an agent cannot name what it has not
  perceived.

Errors
------
Every failure is a :class:`RobotError`. :class:`RetryableRobotError` means trying the
same call again may succeed (time-out, lost connection); :class:`PersistentRobotError`
means it will not without a change (unreachable goal, target out of reach or occluded,
e-stop pressed, lease lost).
"""

from __future__ import annotations

import abc
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

# --------------------------------------------------------------------------- errors


class RobotError(Exception):
    """Root of every error raised through the robot interface."""


class RetryableRobotError(RobotError):
    """The same call may succeed if repeated (transport hiccup, time-out)."""


class PersistentRobotError(RobotError):
    """The call will keep failing until something changes (goal, target, robot state)."""


class RobotTimeout(RetryableRobotError):
    """A blocking call did not finish within its ``timeout_s``."""


class ConnectionLost(RetryableRobotError):
    """The link to the robot (or its twin) dropped."""


class GoalUnreachable(PersistentRobotError):
    """No collision-free path to the requested pose exists, or the goal is occupied."""


class OutOfReach(PersistentRobotError):
    """The target is farther than the behaviour's working range from the robot."""


class TargetOccluded(PersistentRobotError):
    """Something lies between the robot and the target or covers the target."""


class NothingThere(PersistentRobotError):
    """No object (or no graspable object) is found at the given point."""


class HandOccupied(PersistentRobotError):
    """A grasp was requested while the gripper already holds an object."""


class HandEmpty(PersistentRobotError):
    """A place was requested while the gripper holds nothing."""


class PlacementBlocked(PersistentRobotError):
    """The place location is occupied or off the traversable floor."""


class EStopped(PersistentRobotError):
    """The software or hardware e-stop is engaged; motion is cut."""


class LeaseLost(PersistentRobotError):
    """Another client took the lease, or it expired."""


# --------------------------------------------------------------------------- types


@dataclass(frozen=True)
class Pose2D:
    """Planar base pose ``odom_T_body``: x, y in metres, yaw in radians (CCW from +x)."""

    x_m: float
    y_m: float
    yaw_rad: float = 0.0

    def xy(self) -> np.ndarray:
        return np.array([self.x_m, self.y_m], dtype=float)

    def distance_to(self, x_m: float, y_m: float) -> float:
        return math.hypot(x_m - self.x_m, y_m - self.y_m)


@dataclass(frozen=True)
class Point3:
    """A point in the ``odom`` frame, metres."""

    x_m: float
    y_m: float
    z_m: float = 0.0

    def as_array(self) -> np.ndarray:
        return np.array([self.x_m, self.y_m, self.z_m], dtype=float)

    @classmethod
    def of(cls, xyz) -> Point3:
        x, y, *rest = [float(v) for v in xyz]
        return cls(x, y, rest[0] if rest else 0.0)


@dataclass(frozen=True)
class CameraIntrinsics:
    """Pinhole intrinsics in pixels for an image of ``width_px`` x ``height_px``."""

    width_px: int
    height_px: int
    fx_px: float
    fy_px: float
    cx_px: float
    cy_px: float

    def matrix(self) -> np.ndarray:
        return np.array(
            [[self.fx_px, 0.0, self.cx_px], [0.0, self.fy_px, self.cy_px], [0.0, 0.0, 1.0]]
        )


@dataclass(frozen=True, eq=False)
class Frame:
    """One RGB-D capture, aligned: ``depth_m[v, u]`` is the depth of ``rgb[v, u]``.

    ``depth_m`` is metric z along the optical axis (not ray length); 0 or non-finite
    means no return. Pixel (u, v) has its centre at (u + 0.5, v + 0.5) in the
    intrinsics' convention.
    """

    rgb: np.ndarray  # (H, W, 3) uint8
    depth_m: np.ndarray  # (H, W) float32, metres along the optical axis
    intrinsics: CameraIntrinsics
    odom_T_camera: np.ndarray  # (4, 4) float64, optical frame in odom
    stamp_s: float  # episode clock, seconds
    camera: str = "body"
    # Simulation only: per-pixel segment id, and for each id the appearance phrase a
    # camera-feature model would associate with that surface. Real robots leave these
    # None; nothing that decides an action may rely on them.
    segmentation: np.ndarray | None = None
    segment_phrases: Mapping[int, str] | None = None

    def points_odom(self, stride: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """Back-project valid pixels to ``odom``.

        Returns ``(points (N, 3) metres, pixel_index (N,) flat index into the image)``.
        """
        depth = self.depth_m[::stride, ::stride]
        h, w = depth.shape
        vs, us = np.mgrid[0:h, 0:w]
        us = us * stride + 0.5
        vs = vs * stride + 0.5
        valid = np.isfinite(depth) & (depth > 0)
        z = depth[valid]
        k = self.intrinsics
        x = (us[valid] - k.cx_px) / k.fx_px * z
        y = (vs[valid] - k.cy_px) / k.fy_px * z
        cam = np.stack([x, y, z, np.ones_like(z)], axis=0)
        pts = (self.odom_T_camera @ cam)[:3].T
        full_w = self.depth_m.shape[1]
        rows = (vs[valid] - 0.5).astype(np.int64)
        cols = (us[valid] - 0.5).astype(np.int64)
        return pts, rows * full_w + cols


@dataclass(frozen=True)
class MotionResult:
    """Outcome of :meth:`Robot.goto`."""

    pose: Pose2D  # where the robot ended up
    path_length_m: float
    duration_s: float
    # body-camera frames captured on the way, when ``goto`` was asked for them
    frames: tuple[Frame, ...] = ()


@dataclass(frozen=True)
class InspectResult:
    """Outcome of :meth:`Robot.inspect`: the VLM's answer about what the camera saw."""

    answer: str
    duration_s: float
    frame: Frame | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class ManipulationResult:
    """Outcome of :meth:`Robot.grasp` / :meth:`Robot.place`."""

    duration_s: float
    position: Point3  # where the object was grasped / where it now rests
    message: str = ""


@dataclass
class RobotCounters:
    """Bookkeeping every implementation keeps: behaviours executed and VLM usage."""

    actions: int = 0
    vlm_calls: int = 0
    vlm_prompt_tokens: int = 0
    vlm_completion_tokens: int = 0
    sim_time_s: float = 0.0
    by_behavior: dict[str, int] = field(default_factory=dict)

    def count(self, behavior: str, duration_s: float) -> None:
        self.actions += 1
        self.sim_time_s += duration_s
        self.by_behavior[behavior] = self.by_behavior.get(behavior, 0) + 1


# --------------------------------------------------------------------------- port


class Robot(abc.ABC):
    """What an agent may ask of a robot. Implementations must be safe to ``stop()``
    at any time and must raise only :class:`RobotError` subclasses."""

    counters: RobotCounters

    @abc.abstractmethod
    def get_pose(self) -> Pose2D:
        """Current ``odom_T_body``."""

    @abc.abstractmethod
    def goto(
        self, pose: Pose2D, timeout_s: float = 120.0, capture_every_m: float | None = None
    ) -> MotionResult:
        """Walk to ``pose`` along a collision-free path; blocks until there.

        With ``capture_every_m``, the front body camera ("body") is captured about every
        that many metres walked, and the frames come back in :attr:`MotionResult.frames`
        (each with the pose it was taken from), so a map can grow while the robot walks;
        the start and the end pose are not included.

        Raises :class:`GoalUnreachable` if no path exists, :class:`RobotTimeout` if it
        does not arrive within ``timeout_s``.
        """

    @abc.abstractmethod
    def capture(self, camera: str = "body", timeout_s: float = 10.0) -> Frame:
        """One RGB-D frame from ``camera`` with its pose. Spot's cameras: "body" (= "front"),
        "left", "right", "back" around the body, and "hand" in the gripper."""

    @abc.abstractmethod
    def inspect(self, target: Point3, question: str, timeout_s: float = 60.0) -> InspectResult:
        """Point the hand camera at ``target`` and ask a VLM ``question`` about the view.

        Raises :class:`OutOfReach` when ``target`` is beyond inspection range.
        """

    @abc.abstractmethod
    def grasp(self, target: Point3, timeout_s: float = 60.0) -> ManipulationResult:
        """Pick up the object at ``target`` (odom)."""

    @abc.abstractmethod
    def place(self, location: Point3, timeout_s: float = 60.0) -> ManipulationResult:
        """Put the held object down at ``location`` (odom, on the floor or a surface)."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Halt all motion now. Never raises."""

    @property
    @abc.abstractmethod
    def holding(self) -> bool:
        """Whether the gripper holds an object."""

    # Sensible defaults an implementation may refine.
    def camera_intrinsics(self, camera: str = "body") -> CameraIntrinsics:
        return self.capture(camera).intrinsics

    def close(self) -> None:
        """Release resources (connections, leases). Safe to call twice."""
        self.stop()

    def __enter__(self) -> Robot:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


BEHAVIORS = ("goto", "inspect", "grasp", "place", "answer")
"""The physical behaviours (and the final answer) every backend executes."""
