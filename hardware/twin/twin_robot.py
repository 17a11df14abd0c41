"""The simulated Spot behind the twin's services: a ``SpotWorldEnv`` driven through ``SimRobot``.

Every behaviour goes through ``SimRobot`` (so paths are the simulator's collision-free
paths and refusals are the simulator's), then comes back in Spot's terms:

================================  ================================================
Spot request                      simulator behaviour
================================  ================================================
synchro SE2 trajectory (odom)     ``SimRobot.goto``; the path is then played back
arm gaze at a point (odom)        ``SimRobot.inspect`` (the hand camera now aims there)
ManipulationApi pick (ray/point)  ``SimRobot.grasp`` at the ray's end point
arm Cartesian move while holding  ``SimRobot.place`` under the hand's goal
stand / sit / stop / stow / carry state only (the sim base is kinematic)
================================  ================================================

Refusals are reported through :mod:`hardware.spot_status`. State (power, E-Stop, lease,
commands, the walk in progress) is guarded by one lock; every call into pybullet runs on
one dedicated thread (:class:`SimThread`), since a pybullet client and an EGL context
must not be used from the gRPC server's worker threads at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from bosdyn.api import (
    arm_command_pb2,
    basic_command_pb2,
    gripper_command_pb2,
    image_pb2,
    manipulation_api_pb2,
    power_pb2,
    robot_command_pb2,
    robot_state_pb2,
)
from bosdyn.util import seconds_to_timestamp, timestamp_to_sec

from agents.robot import Frame, Point3, Pose2D, RobotError
from envs import SimRobot, SpotWorldEnv
from envs.robot_model import BODY_CENTRE_Z_M, hand_camera_pose
from hardware import frames, spot_status
from hardware.twin import images
from hardware.twin.estop import NONE, EstopSystem
from hardware.twin.leases import LeaseManager
from hardware.twin.motion import Walk, keyframes

STATUS = basic_command_pb2.RobotCommandFeedbackStatus
SE2 = basic_command_pb2.SE2TrajectoryCommand.Feedback
GAZE = arm_command_pb2.GazeCommand.Feedback
CARTESIAN = arm_command_pb2.ArmCartesianCommand.Feedback
NAMED = arm_command_pb2.NamedArmPositionsCommand
CLAW = gripper_command_pb2.ClawGripperCommand.Feedback
RESPONSE = robot_command_pb2.RobotCommandResponse
MANIP = manipulation_api_pb2
STOWED_HAND_IN_BODY_M = (0.45, 0.0, 0.14)  # gripper resting at the front of the body
CLAW_OPEN_RAD = 1.5708  # claw angle of a fully open gripper (sign ignored)


class SimThread:
    """Runs every call into the simulator on one thread, in order."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="twin-sim")

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return self._pool.submit(fn, *args, **kwargs).result()

    def close(self) -> None:
        self._pool.shutdown(wait=True)


@dataclass
class _Command:
    """One RobotCommand: its parts (mobility, arm, gripper, full_body) and their outcomes."""

    id: int
    parts: dict[str, str]  # part -> what it asked: se2, stand, sit, stop, gaze, cartesian ...
    status: dict[str, int] = field(default_factory=dict)  # part -> RobotCommandFeedbackStatus
    code: dict[str, int] = field(default_factory=dict)  # part -> its own feedback status
    detail: bool | None = None  # GazeCommand.Feedback.gazing_at_target
    message: str = ""  # the simulator's reason for a refusal (twin extension)
    walk: Walk | None = None
    end_time_s: float = 0.0  # robot clock; 0 = no deadline


@dataclass
class _Manipulation:
    id: int
    state: int
    message: str = ""
    point: tuple[float, float, float] | None = None  # where the pick's ray met the object


class TwinRobot:
    """A Spot-like robot in a ``SpotWorldEnv``, in Spot API terms. Thread-safe."""

    def __init__(
        self,
        scenario,
        *,
        seed: int = 0,
        env_kwargs: dict | None = None,
        time_scale: float = 1.0,
        corner_dwell_s: float = 0.5,
        clock: Callable[[], float] = time.time,
    ):
        self.time_scale = time_scale  # simulated seconds per wall second while walking
        self.corner_dwell_s = corner_dwell_s
        self.clock = clock  # the robot's clock, seconds (time-synced by clients)
        self._lock = threading.RLock()
        self._sim = SimThread()
        self.env: SpotWorldEnv = self._sim.call(SpotWorldEnv, scenario, **(env_kwargs or {}))
        self.stall_walks = False  # fault: walks are accepted but never progress
        self.on_walk: Callable[[], None] | None = None  # fault hook, run as a walk starts
        self.load(None, seed)

    # ------------------------------------------------------------------ lifecycle
    def load(self, scenario=None, seed: int = 0) -> None:
        """A fresh robot in a fresh world (optionally another scenario): sitting, motors off,
        no lease holder, no E-Stop endpoint."""
        with self._lock:
            opts = {"scenario": scenario} if scenario is not None else None
            self._sim.call(self.env.reset, seed=seed, options=opts)
            self.sim_robot = SimRobot(self.env)
            self.estop = EstopSystem()
            self.leases = LeaseManager()
            self.motors_on = False
            self.standing = False
            self.arm = "stow"  # stow, gaze, pose, carry, ready
            self.hand_target: np.ndarray | None = None
            self.hand_goal: np.ndarray | None = None  # odom_T_hand of a Cartesian move
            self.gripper_open = 0.0  # fraction
            self._commands: dict[int, _Command] = {}
            self._current: dict[str, int] = {}  # part -> id of the command driving it
            self._manipulations: dict[int, _Manipulation] = {}
            self._next_id = 1
            self._walk: _Command | None = None

    def close(self) -> None:
        with self._lock:
            self._sim.call(self.env.close)
        self._sim.close()

    def sim(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``fn`` on the simulator thread (for judges, VLMs and tests)."""
        with self._lock:
            return self._sim.call(fn, *args, **kwargs)

    # ------------------------------------------------------------------ state
    @property
    def pose(self) -> tuple[float, float, float]:
        with self._lock:
            self._tick()
            return self.env.pose

    @property
    def moving(self) -> bool:
        with self._lock:
            self._tick()
            return self._walk is not None and self._walk.walk.moving

    @property
    def holding(self) -> bool:
        return self.env.holding is not None

    def odom_T_body(self) -> np.ndarray:
        x, y, yaw = self.env.pose
        return frames.planar_matrix(x, y, yaw, BODY_CENTRE_Z_M)

    def _odom_T_hand(self) -> np.ndarray:
        x, y, _ = self.env.pose
        if self.arm == "gaze" and self.hand_target is not None:
            return hand_camera_pose(x, y, self.hand_target, self.env.arm)
        if self.arm == "pose" and self.hand_goal is not None:
            return self.hand_goal
        body_T_hand = np.eye(4)
        body_T_hand[:3, 3] = STOWED_HAND_IN_BODY_M
        return self.odom_T_body() @ body_T_hand

    def _snapshot(self):
        odom_T_body = self.odom_T_body()
        body_T_hand = np.linalg.inv(odom_T_body) @ self._odom_T_hand()
        x, y, yaw = self.env.pose
        identity = frames.se3_from_matrix(np.eye(4))
        return frames.snapshot(
            {
                frames.ODOM: ("", identity),
                frames.VISION: (frames.ODOM, identity),
                frames.BODY: (frames.ODOM, frames.planar_se3(x, y, yaw, BODY_CENTRE_Z_M)),
                frames.FLAT_BODY: (frames.BODY, identity),
                frames.HAND: (frames.BODY, frames.se3_from_matrix(body_T_hand)),
            }
        )

    def robot_state(self) -> robot_state_pb2.RobotState:
        """``RobotState`` now; reading it is the client's odometry (see ``motion.py``)."""
        with self._lock:
            self._tick(observed=True)
            now = self.clock()
            stamp = seconds_to_timestamp(now)
            state = robot_state_pb2.RobotState()
            power = state.power_state
            power.timestamp.CopyFrom(stamp)
            on = robot_state_pb2.PowerState
            power.motor_power_state = on.MOTOR_POWER_STATE_ON if self.motors_on else on.STATE_OFF
            power.robot_power_state = on.ROBOT_POWER_STATE_ON
            power.shore_power_state = on.SHORE_POWER_STATE_OFF
            power.locomotion_charge_percentage.value = 100.0
            state.estop_states.extend(self.estop.states(now))
            state.kinematic_state.acquisition_timestamp.CopyFrom(stamp)
            state.kinematic_state.transforms_snapshot.CopyFrom(self._snapshot())
            manip = state.manipulator_state
            manip.is_gripper_holding_item = self.holding
            manip.gripper_open_percentage = 100.0 * self.gripper_open
            manip.stow_state = (
                manip.STOWSTATE_STOWED if self.arm == "stow" else manip.STOWSTATE_DEPLOYED
            )
            manip.carry_state = manip.CARRY_STATE_CARRIABLE_AND_STOWABLE
            return state

    # ------------------------------------------------------------------ time passes
    def _tick(self, observed: bool = False) -> None:
        """Advance the walk in progress, expire it at its deadline, obey the E-Stop."""
        now = self.clock()
        if self.motors_on and self.estop.stop_level(now) != NONE:
            self._cut_power(STATUS.STATUS_ROBOT_FROZEN)
        cmd = self._walk
        if cmd is None or cmd.walk is None:
            return
        walk = cmd.walk
        if walk.moving and cmd.end_time_s and now > cmd.end_time_s:
            self._halt_part("mobility", STATUS.STATUS_COMMAND_TIMED_OUT)
            return
        was_done = walk.done
        x, y, yaw = walk.advance(now, observed=observed)
        if not was_done:
            self._sim.call(self.env.teleport, x, y, yaw)

    def _halt_part(self, part: str, status: int) -> None:
        """End the command driving ``part`` with ``status``; a walk stops where it is."""
        cid = self._current.pop(part, None)
        if cid is None:
            return
        cmd = self._commands[cid]
        if cmd.status.get(part) == STATUS.STATUS_PROCESSING:
            cmd.status[part] = status
        if part == "mobility" and cmd.walk is not None and cmd.walk.moving:
            cmd.walk.halt()
            self._sim.call(self.env.teleport, *cmd.walk.pose)
        if self._walk is cmd and part == "mobility":
            self._walk = None

    def halt_all(self, status: int = STATUS.STATUS_COMMAND_OVERRIDDEN) -> None:
        """Stop everything now (a stop command, a lease change, lost comms)."""
        with self._lock:
            self._tick()
            for part in ("mobility", "arm", "gripper", "full_body"):
                self._halt_part(part, status)

    def _cut_power(self, status: int) -> None:
        for part in ("mobility", "arm", "gripper", "full_body"):
            self._halt_part(part, status)
        self.motors_on = False
        self.standing = False

    def stall_walk_in_progress(self) -> None:
        """Fault: the walk under way stops progressing (it still reports "going to goal")."""
        with self._lock:
            if self._walk is not None and self._walk.walk is not None:
                self._walk.walk.stalled = True

    def press_estop(self) -> None:
        with self._lock:
            self.estop.button_pressed = True
            self._cut_power(STATUS.STATUS_ROBOT_FROZEN)

    def release_estop(self) -> None:
        with self._lock:
            self.estop.button_pressed = False

    # ------------------------------------------------------------------ power
    def power_command(self, request: int) -> tuple[int, str]:
        req = power_pb2.PowerCommandRequest
        with self._lock:
            self._tick()
            if request == req.REQUEST_ON_MOTORS:
                if self.estop.stop_level(self.clock()) != NONE:
                    return power_pb2.STATUS_ESTOPPED, "an E-Stop is engaged (or none is set up)"
                self.motors_on = True
                return power_pb2.STATUS_SUCCESS, ""
            if request == req.REQUEST_OFF_MOTORS:
                self._cut_power(STATUS.STATUS_COMMAND_OVERRIDDEN)
                return power_pb2.STATUS_SUCCESS, ""
            return power_pb2.STATUS_INTERNAL_ERROR, "the twin powers only the motors on and off"

    # ------------------------------------------------------------------ commands
    def command(self, command: robot_command_pb2.RobotCommand) -> tuple[int, str, int]:
        """Accept or refuse a RobotCommand: ``(RobotCommandResponse.Status, message, id)``."""
        with self._lock:
            self._tick()
            if command.HasField("full_body_command"):
                return self._full_body(command.full_body_command)
            if not command.HasField("synchronized_command"):
                return RESPONSE.STATUS_INVALID_REQUEST, "empty command", 0
            return self._synchronized(command.synchronized_command)

    def _new_command(self, parts: dict[str, str]) -> _Command:
        cmd = _Command(self._next_id, parts)
        self._next_id += 1
        self._commands[cmd.id] = cmd
        for part in parts:
            self._halt_part(part, STATUS.STATUS_COMMAND_OVERRIDDEN)
            self._current[part] = cmd.id
            cmd.status[part] = STATUS.STATUS_PROCESSING
        return cmd

    def _full_body(self, req) -> tuple[int, str, int]:
        kind = req.WhichOneof("command")
        if kind not in ("stop_request", "safe_power_off_request"):
            return RESPONSE.STATUS_UNSUPPORTED, f"the twin does not do {kind}", 0
        if kind == "stop_request" and not self.motors_on:
            return RESPONSE.STATUS_NOT_POWERED_ON, "motors are off", 0
        for part in ("mobility", "arm", "gripper"):
            self._halt_part(part, STATUS.STATUS_COMMAND_OVERRIDDEN)
        cmd = self._new_command({"full_body": kind.removesuffix("_request")})
        if kind == "safe_power_off_request":
            self.standing = False
            self.motors_on = False
        return RESPONSE.STATUS_OK, "", cmd.id

    def _synchronized(self, req) -> tuple[int, str, int]:
        if not self.motors_on:
            return RESPONSE.STATUS_NOT_POWERED_ON, "motors are off", 0
        parts: dict[str, str] = {}
        if req.HasField("mobility_command"):
            kind = req.mobility_command.WhichOneof("command") or ""
            parts["mobility"] = kind.removesuffix("_request")
        if req.HasField("arm_command"):
            kind = req.arm_command.WhichOneof("command") or ""
            parts["arm"] = kind.removeprefix("arm_").removesuffix("_command")
        if req.HasField("gripper_command"):
            parts["gripper"] = req.gripper_command.WhichOneof("command") or ""
        supported = {
            "mobility": {"se2_trajectory", "stand", "sit", "stop"},
            "arm": {"gaze", "cartesian", "named_arm_position", "stop"},
            "gripper": {"claw_gripper_command"},
        }
        for part, kind in parts.items():
            if kind not in supported[part]:
                return RESPONSE.STATUS_UNSUPPORTED, f"the twin does not do {part} {kind!r}", 0
        if "mobility" in parts and parts["mobility"] == "se2_trajectory":
            frame = req.mobility_command.se2_trajectory_request.se2_frame_name
            if frame not in frames.WORLD_FRAMES:
                return RESPONSE.STATUS_UNKNOWN_FRAME, f"trajectories go in odom, not {frame!r}", 0
        if (
            parts.get("arm") == "gaze"
            and req.arm_command.arm_gaze_command.frame1_name not in frames.WORLD_FRAMES
        ):
            return RESPONSE.STATUS_UNKNOWN_FRAME, "gaze targets go in odom", 0
        cmd = self._new_command(parts)
        if "mobility" in parts:
            self._mobility(cmd, req.mobility_command)
        if "arm" in parts:
            self._arm(cmd, req.arm_command)
        if "gripper" in parts:
            traj = req.gripper_command.claw_gripper_command.trajectory
            if traj.points:
                self.gripper_open = min(1.0, abs(traj.points[-1].point) / CLAW_OPEN_RAD)
            cmd.code["gripper"] = CLAW.STATUS_AT_GOAL
        if cmd.walk is not None and self.on_walk is not None:
            self.on_walk()
        return RESPONSE.STATUS_OK, "", cmd.id

    def _mobility(self, cmd: _Command, req) -> None:
        kind = cmd.parts["mobility"]
        if kind == "stand":
            self.standing = True
        elif kind == "sit":
            self.standing = False
        elif kind == "se2_trajectory":
            self.standing = True
            self._goto(cmd, req.se2_trajectory_request)

    def _goto(self, cmd: _Command, req) -> None:
        goal = req.trajectory.points[-1].pose
        start = self.env.pose
        try:
            self._sim.call(
                self.sim_robot.goto, Pose2D(goal.position.x, goal.position.y, goal.angle)
            )
        except RobotError as exc:
            cmd.code["mobility"] = spot_status.status_for("goto", type(exc).__name__).code
            cmd.message = str(exc)
            return
        path = [tuple(p) for p in self.env.last_result["path"]]
        final = self.env.pose
        timing = self.env.timing
        plan = keyframes(start, path, final, timing.walk_speed_mps, timing.turn_speed_radps)
        self._sim.call(self.env.teleport, *start)  # the walk plays back from here
        cmd.walk = Walk(plan, self.clock(), self.time_scale, self.corner_dwell_s)
        cmd.walk.stalled = self.stall_walks
        cmd.code["mobility"] = SE2.FINAL_GOAL_STATUS_ACHIEVABLE
        if req.HasField("end_time"):
            cmd.end_time_s = timestamp_to_sec(req.end_time)
        self._walk = cmd

    def _arm(self, cmd: _Command, req) -> None:
        kind = cmd.parts["arm"]
        if kind == "gaze":
            self._gaze(cmd, req.arm_gaze_command)
        elif kind == "cartesian":
            self._cartesian(cmd, req.arm_cartesian_command)
        elif kind == "named_arm_position":
            position = req.named_arm_position_command.position
            if position == NAMED.POSITIONS_STOW and self.holding:
                cmd.code["arm"] = NAMED.Feedback.STATUS_STALLED_HOLDING_ITEM
                cmd.message = "the arm cannot stow while the gripper holds an object; carry it"
                return
            self.arm = {
                NAMED.POSITIONS_STOW: "stow",
                NAMED.POSITIONS_CARRY: "carry",
                NAMED.POSITIONS_READY: "ready",
            }.get(position, self.arm)
            self.hand_target = self.hand_goal = None
            cmd.code["arm"] = NAMED.Feedback.STATUS_COMPLETE

    def _gaze(self, cmd: _Command, req) -> None:
        p = req.target_trajectory_in_frame1.points[-1].point
        target = np.array([p.x, p.y, p.z], dtype=float)
        try:
            self._sim.call(self.sim_robot.inspect, Point3(*target), "")
        except RobotError as exc:
            row = _refusal("inspect", exc)
            cmd.code["arm"], cmd.detail, cmd.message = row.code, row.detail, str(exc)
            return
        self.arm = "gaze"
        # the simulator's actions are float32: aim the hand camera exactly where it did
        self.hand_target = target.astype(np.float32).astype(np.float64)
        cmd.code["arm"], cmd.detail = GAZE.STATUS_TRAJECTORY_COMPLETE, True

    def _cartesian(self, cmd: _Command, req) -> None:
        root = req.root_frame_name
        if root in frames.WORLD_FRAMES:
            odom_T_root = np.eye(4)
        elif root in (frames.BODY, frames.FLAT_BODY):
            odom_T_root = self.odom_T_body()
        else:
            cmd.code["arm"] = CARTESIAN.STATUS_TRAJECTORY_CANCELLED
            cmd.message = f"the twin takes arm poses in odom or body, not {root!r}"
            return
        root_T_task = (
            frames.matrix_from_se3(req.root_tform_task)
            if req.HasField("root_tform_task")
            else np.eye(4)
        )
        task_T_hand = frames.matrix_from_se3(req.pose_trajectory_in_task.points[-1].pose)
        odom_T_hand = odom_T_root @ root_T_task @ task_T_hand
        if self.holding:
            x, y = float(odom_T_hand[0, 3]), float(odom_T_hand[1, 3])
            try:
                self._sim.call(self.sim_robot.place, Point3(x, y, 0.0))
            except RobotError as exc:
                row = _refusal("place", exc)
                cmd.code["arm"], cmd.message = row.code, str(exc)
                return
        self.arm, self.hand_goal, self.hand_target = "pose", odom_T_hand, None
        cmd.code["arm"] = CARTESIAN.STATUS_TRAJECTORY_COMPLETE

    def command_feedback(
        self, command_id: int
    ) -> tuple[robot_command_pb2.RobotCommandFeedback, str] | None:
        """Feedback of a command (None if unknown) and the simulator's reason, if any."""
        with self._lock:
            self._tick()
            cmd = self._commands.get(command_id)
            if cmd is None:
                return None
            fb = robot_command_pb2.RobotCommandFeedback()
            if "full_body" in cmd.parts:
                body = fb.full_body_feedback
                body.status = cmd.status["full_body"]
                if cmd.parts["full_body"] == "safe_power_off":
                    body.safe_power_off_feedback.status = (
                        basic_command_pb2.SafePowerOffCommand.Feedback.STATUS_POWERED_OFF
                    )
                else:
                    body.stop_feedback.SetInParent()
                return fb, cmd.message
            sync = fb.synchronized_feedback
            if "mobility" in cmd.parts:
                self._mobility_feedback(cmd, sync.mobility_command_feedback)
            if "arm" in cmd.parts:
                self._arm_feedback(cmd, sync.arm_command_feedback)
            if "gripper" in cmd.parts:
                sync.gripper_command_feedback.status = cmd.status["gripper"]
                sync.gripper_command_feedback.claw_gripper_feedback.status = cmd.code["gripper"]
            return fb, cmd.message

    def _mobility_feedback(self, cmd: _Command, fb) -> None:
        fb.status = cmd.status["mobility"]
        kind = cmd.parts["mobility"]
        if kind == "stand":
            fb.stand_feedback.status = basic_command_pb2.StandCommand.Feedback.STATUS_IS_STANDING
            fb.stand_feedback.standing_state = (
                basic_command_pb2.StandCommand.Feedback.STANDING_CONTROLLED
            )
        elif kind == "sit":
            fb.sit_feedback.status = basic_command_pb2.SitCommand.Feedback.STATUS_IS_SITTING
        elif kind == "stop":
            fb.stop_feedback.SetInParent()
        else:
            se2 = fb.se2_trajectory_feedback
            se2.final_goal_status = cmd.code["mobility"]
            walk = cmd.walk
            if walk is not None and walk.moving:
                se2.status = SE2.STATUS_GOING_TO_GOAL
                se2.body_movement_status = SE2.BODY_STATUS_MOVING
            else:
                se2.status = SE2.STATUS_STOPPED  # = STATUS_AT_GOAL when the walk is done
                se2.body_movement_status = SE2.BODY_STATUS_SETTLED

    def _arm_feedback(self, cmd: _Command, fb) -> None:
        fb.status = cmd.status["arm"]
        kind = cmd.parts["arm"]
        if kind == "gaze":
            ok = cmd.code["arm"] == GAZE.STATUS_TRAJECTORY_COMPLETE
            fb.arm_gaze_feedback.status = cmd.code["arm"]
            fb.arm_gaze_feedback.gazing_at_target = bool(cmd.detail)
            fb.arm_gaze_feedback.hand_position_at_goal = ok
        elif kind == "cartesian":
            fb.arm_cartesian_feedback.status = cmd.code["arm"]
        elif kind == "named_arm_position":
            fb.named_arm_position_feedback.status = cmd.code["arm"]
        else:
            fb.arm_stop_feedback.SetInParent()

    # ------------------------------------------------------------------ manipulation
    def manipulate(self, request: manipulation_api_pb2.ManipulationApiRequest) -> tuple[int, str]:
        """Start a pick: ``(command id, "")`` or ``(0, why the request is invalid)``."""
        with self._lock:
            self._tick()
            if not self.motors_on:
                return 0, "motors are off"
            kind = request.WhichOneof("manipulation_cmd")
            if kind == "pick_object_ray_in_world":
                frame, p = (
                    request.pick_object_ray_in_world.frame_name,
                    request.pick_object_ray_in_world.ray_end_rt_frame,
                )
            elif kind == "pick_object":
                frame, p = request.pick_object.frame_name, request.pick_object.object_rt_frame
            else:
                return 0, f"the twin picks by a ray in the world or a point, not {kind}"
            if frame not in frames.WORLD_FRAMES:
                return 0, f"pick targets go in odom, not {frame!r}"
            manip = _Manipulation(self._next_id, MANIP.MANIP_STATE_GRASP_SUCCEEDED)
            self._next_id += 1
            self._manipulations[manip.id] = manip
            try:
                result = self._sim.call(self.sim_robot.grasp, Point3(p.x, p.y, p.z))
            except RobotError as exc:
                manip.state, manip.message = _refusal("grasp", exc).code, str(exc)
            else:
                manip.point = (result.position.x_m, result.position.y_m, result.position.z_m)
                self.arm, self.hand_target, self.gripper_open = "pose", None, 0.0
                hand = np.eye(4)
                hand[:3, 3] = manip.point
                self.hand_goal = hand
            return manip.id, ""

    def manipulation_feedback(self, manipulation_id: int) -> _Manipulation | None:
        with self._lock:
            self._tick()
            return self._manipulations.get(manipulation_id)

    # ------------------------------------------------------------------ images
    def image_sources(self) -> list[image_pb2.ImageSource]:
        with self._lock:
            return [
                images.describe(s, self._intrinsics(s.camera))
                for s in images.source_table().values()
            ]

    def _intrinsics(self, camera: str):
        spec = self.env.hand_spec if camera == "hand" else self.env.camera_spec
        return spec.intrinsics(self.env.renderer)

    def render(self, cameras: set[str]) -> tuple[dict[str, Frame], np.ndarray, float]:
        """Render each camera once: ``(frames, odom_T_body, robot time of the render)``."""
        with self._lock:
            self._tick()
            target = self.hand_target if self.arm == "gaze" else None

            def capture_all() -> dict[str, Frame]:
                return {
                    c: self.env.capture(c, target if c == "hand" else None) for c in sorted(cameras)
                }

            return self._sim.call(capture_all), self.odom_T_body(), self.clock()


def _refusal(behavior: str, exc: RobotError) -> spot_status.FailureStatus:
    """The table row for a simulator refusal; preconditions a client skipped (grasping with
    a full hand, placing with an empty one) come back as that feedback's generic failure."""
    try:
        return spot_status.status_for(behavior, type(exc).__name__)
    except KeyError:
        generic = {
            "grasp": MANIP.MANIP_STATE_GRASP_FAILED,
            "place": CARTESIAN.STATUS_TRAJECTORY_STALLED,
            "inspect": GAZE.STATUS_TOOL_TRAJECTORY_STALLED,
            "goto": SE2.FINAL_GOAL_STATUS_BLOCKED,
        }
        return spot_status.FailureStatus(behavior, type(exc), "", generic[behavior], None, str(exc))
