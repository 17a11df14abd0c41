"""``SimRobot``: the robot interface (``agents/robot.py``) over a ``SpotWorldEnv``.

Every behaviour is one ``env.step``; an infeasible one raises the interface's typed
error (after costing its step, as on a real robot). ``capture`` renders without a step.
"""

from __future__ import annotations

import math

import numpy as np

from agents import robot as iface
from agents.robot import (
    Frame,
    InspectResult,
    ManipulationResult,
    MotionResult,
    Point3,
    Pose2D,
    Robot,
    RobotCounters,
)
from envs.spot_world_env import ANSWER, GOTO, GRASP, INSPECT, PLACE, SpotWorldEnv

ERRORS: dict[str, type[iface.RobotError]] = {
    name: cls
    for name, cls in vars(iface).items()
    if isinstance(cls, type) and issubclass(cls, iface.RobotError)
}


class SimRobot(Robot):
    """Drives ``env`` (reset by the caller). ``vlm``: an optional VLM backend with
    ``answer(frame, question, target_px)``; by default the simulator's own VLM answers."""

    def __init__(self, env: SpotWorldEnv, vlm=None):
        self.env = env
        self.vlm = vlm
        self.counters = RobotCounters()
        self.last_step: tuple[float, bool, bool, dict] | None = None

    # ------------------------------------------------------------------ interface
    def get_pose(self) -> Pose2D:
        x, y, yaw = self.env.pose
        return Pose2D(x, y, yaw)

    def goto(
        self, pose: Pose2D, timeout_s: float = 120.0, capture_every_m: float | None = None
    ) -> MotionResult:
        result = self._step(GOTO, target=(pose.x_m, pose.y_m, 0.0), yaw=pose.yaw_rad)
        frames = (
            tuple(self.env.capture_along_last_walk(capture_every_m))
            if capture_every_m is not None
            else ()
        )
        return MotionResult(self.get_pose(), result["path_length_m"], result["duration_s"], frames)

    def capture(self, camera: str = "body", timeout_s: float = 10.0) -> Frame:
        return self.env.capture(camera)

    def inspect(self, target: Point3, question: str, timeout_s: float = 60.0) -> InspectResult:
        result = self._step(INSPECT, target=target.as_array(), text=question)
        frame: Frame = result["frame"]
        if self.vlm is None:
            answer, pt, ct = result["answer"], result["prompt_tokens"], result["completion_tokens"]
        else:
            px = tuple(result["target_px"]) if result.get("target_px") else None
            reply = self.vlm.answer(frame, question, px)
            answer, pt, ct = reply.text, reply.prompt_tokens, reply.completion_tokens
        self.counters.vlm_calls += 1
        self.counters.vlm_prompt_tokens += pt
        self.counters.vlm_completion_tokens += ct
        return InspectResult(answer, result["duration_s"], frame, pt, ct)

    def grasp(self, target: Point3, timeout_s: float = 60.0) -> ManipulationResult:
        result = self._step(GRASP, target=target.as_array())
        return ManipulationResult(result["duration_s"], Point3.of(result["position"]), "grasped")

    def place(self, location: Point3, timeout_s: float = 60.0) -> ManipulationResult:
        result = self._step(PLACE, target=location.as_array())
        return ManipulationResult(result["duration_s"], Point3.of(result["position"]), "placed")

    def stop(self) -> None:
        """Kinematic base: nothing is in motion between behaviours."""

    @property
    def holding(self) -> bool:
        return self.env.holding is not None

    def camera_intrinsics(self, camera: str = "body"):
        spec = self.env.camera_spec if camera == "body" else self.env.hand_spec
        return spec.intrinsics(self.env.renderer)

    # ------------------------------------------------------------------ sim only
    def submit_answer(self, text: str, point: Point3 | None) -> dict:
        """Give the episode's answer to the env (reward per the CLUE paper, Eq. 1)."""
        target = point.as_array() if point is not None else np.zeros(3)
        _, reward, terminated, truncated, info = self._raw_step(
            ANSWER, target=target, text=text, has_target=int(point is not None)
        )
        return {
            **info["result"],
            "reward": reward,
            "terminated": terminated,
            "truncated": truncated,
        }

    def _raw_step(
        self,
        behavior: int,
        target=(0.0, 0.0, 0.0),
        yaw: float = 0.0,
        text: str = "",
        has_target: int = 0,
    ):
        action = {
            "behavior": behavior,
            "target": np.asarray(target, dtype=np.float32),
            "yaw": np.array([math.atan2(math.sin(yaw), math.cos(yaw))], dtype=np.float32),
            "has_target": has_target,
            "text": text[:512],
        }
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.last_step = (reward, terminated, truncated, info)
        result = self.env.last_result
        self.counters.count(result["behavior"], float(result["duration_s"]))
        return obs, reward, terminated, truncated, info

    def _step(self, behavior: int, **kw) -> dict:
        self._raw_step(behavior, **kw)
        result = self.env.last_result
        if not result["ok"]:
            raise ERRORS.get(result["error"], iface.PersistentRobotError)(result["message"])
        return result
