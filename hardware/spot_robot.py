"""``SpotRobot``: the robot interface (``agents/robot.py``) on a Boston Dynamics Spot.

Runs the unmodified ``bosdyn-client`` against a real Spot or the Spot-API twin
(``hardware.twin``). ``SpotRobot.connect`` authenticates, syncs clocks, sets up an
E-Stop endpoint with a keep-alive, takes the body lease with a ``LeaseKeepAlive``
(returned at exit), powers on and stands. ``close()`` (or leaving ``with``) always
leaves the robot safe: stop, stow the arm, sit, power off, return the lease, release
the E-Stop endpoint.

Behaviours in Spot API terms:

=======  ===========================================================================
goto     synchro SE2 trajectory to the goal in ``odom``; command feedback and the
         robot state are polled until at goal; path length is the odometry walked
inspect  arm gaze at the target (hand placed short of and above it), one hand-camera
         capture, then the VLM backend given to the constructor; the arm stows after
capture  RGB + depth (registered to the visual frame) of the camera's Spot sources
         (``hardware/cameras.py``); intrinsics from the response's pinhole model,
         ``odom_T_camera`` from its transforms snapshot
grasp    ManipulationApi ``PickObjectRayInWorld``: a ray straight down onto the target,
         no auto-walk; then the arm carries the object
place    arm Cartesian move of the hand over the location, open the gripper, stow
stop     full-body stop command (never raises)
=======  ===========================================================================

Errors: every SDK exception is translated through :data:`RPC_ERRORS` (retryable vs
persistent, ``raise ... from None``); a behaviour's own failure status through
:mod:`hardware.spot_status`. Any failed behaviour stops the robot before it raises.
Every blocking call is bounded by an explicit time-out.
"""

from __future__ import annotations

import contextlib
import io
import logging
import math
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from bosdyn.api import (
    estop_pb2,
    geometry_pb2,
    image_pb2,
    manipulation_api_pb2,
    robot_state_pb2,
)
from bosdyn.client import create_standard_sdk
from bosdyn.client import exceptions as sdk_errors
from bosdyn.client import lease as sdk_lease
from bosdyn.client import power as sdk_power
from bosdyn.client import robot_command as sdk_command
from bosdyn.client import time_sync as sdk_time_sync
from bosdyn.client.auth import InvalidLoginError, InvalidTokenError
from bosdyn.client.estop import EstopClient, EstopEndpoint, EstopKeepAlive
from bosdyn.client.image import ImageClient, build_image_request
from bosdyn.client.lease import LeaseClient, LeaseKeepAlive
from bosdyn.client.manipulation_api_client import ManipulationApiClient
from bosdyn.client.math_helpers import Quat
from bosdyn.client.robot_command import RobotCommandBuilder, RobotCommandClient
from bosdyn.client.robot_state import RobotStateClient
from bosdyn.util import timestamp_to_sec

from agents import robot as iface
from agents.robot import (
    CameraIntrinsics,
    Frame,
    InspectResult,
    ManipulationResult,
    MotionResult,
    Point3,
    Pose2D,
    Robot,
    RobotCounters,
)
from hardware import frames, spot_status
from hardware.cameras import SEGMENT_PHRASES_PARAM, sources_for

LOG = logging.getLogger(__name__)
USERNAME_ENV, PASSWORD_ENV = "BOSDYN_CLIENT_USERNAME", "BOSDYN_CLIENT_PASSWORD"
SE2 = spot_status.SE2
GAZE = spot_status.GAZE
CARTESIAN = spot_status.CARTESIAN
PROCESSING = spot_status.COMMAND.STATUS_PROCESSING
NAMED_COMPLETE = 1  # NamedArmPositionsCommand.Feedback.STATUS_COMPLETE
CLAW_AT_GOAL = 2  # ClawGripperCommand.Feedback.STATUS_AT_GOAL


class AuthenticationRefused(iface.PersistentRobotError):
    """The robot refused the credentials (or the token); retrying the same ones will not help."""


class SpotConfigError(iface.PersistentRobotError):
    """Something the caller must supply is missing (credentials, a VLM backend)."""


class _MotorsOff(iface.PersistentRobotError):
    """Marker in :data:`RPC_ERRORS`: resolved to ``EStopped`` when an E-Stop is engaged."""


RPC_ERRORS: tuple[tuple[type[BaseException], type[iface.RobotError]], ...] = (
    # retryable: the same call may succeed
    (sdk_errors.TimedOutError, iface.RobotTimeout),
    (sdk_command.CommandTimedOutError, iface.RobotTimeout),
    (sdk_power.CommandTimedOutError, iface.RobotTimeout),
    (sdk_time_sync.TimedOutError, iface.RobotTimeout),
    (sdk_errors.UnableToConnectToRobotError, iface.ConnectionLost),
    (sdk_errors.ServiceUnavailableError, iface.ConnectionLost),
    (sdk_errors.TransientFailureError, iface.ConnectionLost),
    (sdk_errors.ProxyConnectionError, iface.ConnectionLost),
    (sdk_errors.RetryableRpcError, iface.RetryableRobotError),
    # persistent: something must change first
    (InvalidLoginError, AuthenticationRefused),
    (InvalidTokenError, AuthenticationRefused),
    (sdk_errors.UnauthenticatedError, AuthenticationRefused),
    (sdk_errors.PermissionDeniedError, AuthenticationRefused),
    (sdk_errors.LeaseUseError, iface.LeaseLost),
    (sdk_lease.ResourceAlreadyClaimedError, iface.LeaseLost),
    (sdk_lease.Error, iface.LeaseLost),  # the wallet no longer owns the lease
    (sdk_power.EstoppedError, iface.EStopped),
    (sdk_command.NotPoweredOnError, _MotorsOff),
    (sdk_errors.ResponseError, iface.PersistentRobotError),
    (sdk_errors.RpcError, iface.PersistentRobotError),
    (sdk_errors.Error, iface.PersistentRobotError),
)
"""SDK exception (first match, most specific first) -> interface error."""


@dataclass(frozen=True)
class SpotRobotConfig:
    """How ``SpotRobot`` drives Spot. Times in seconds, lengths in metres.

    ``estop``: ``"own"`` replaces the robot's E-Stop configuration (motors must be off)
    with one endpoint of this client and keeps it alive, so the robot cuts power if this
    process stops checking in: right for the twin, and for a robot nobody else guards.
    ``"external"`` leaves the configuration to an operator's E-Stop (the tablet,
    ``estop_gui``) and refuses to power on unless that E-Stop is set up and released.

    ``episode_start``: Spot's odometry frame starts wherever the robot booted. Given the
    pose the robot stands at *now* in the episode's frame (a scenario's start pose),
    every pose, point and camera transform crossing the interface is expressed in that
    frame. None: the episode frame is ``odom`` itself (the twin's case).
    """

    client_name: str = "cluetwin"
    rpc_timeout_s: float = 5.0  # one status RPC (state, feedback, stop)
    setup_timeout_s: float = 20.0  # each step of connect (auth, time sync, power, stand)
    poll_interval_s: float = 0.02  # feedback polling while a behaviour runs
    estop_timeout_s: float = 9.0  # the robot cuts power when our E-Stop misses this long
    lease_check_in_s: float = 2.0  # LeaseKeepAlive interval
    hand_standoff_m: float = 0.7  # inspect: hand this far short of the target, toward the robot
    hand_height_above_m: float = 0.6  # inspect: hand this high above the target
    pick_ray_height_m: float = 1.0  # grasp: the pick ray starts this high above the target
    place_hand_height_m: float = 0.25  # place: hand this high above the location on release
    arm_move_s: float = 2.0  # requested duration of an arm move
    image_timeout_s: float = 10.0  # inspect: longest wait for the hand camera's images
    behavior_timeout_cap_s: float | None = None  # bounds every behaviour's timeout_s (site limit)
    power_off_at_exit: bool = True  # sit and cut motor power when closing
    estop: str = "own"  # "own": set up this client's E-Stop endpoint; "external": see above
    episode_start: Pose2D | None = None  # where the robot stands now, in the episode's frame


class SpotRobot(Robot):
    """The robot interface on Spot (or its twin). Build with :meth:`connect`."""

    def __init__(self, sdk_robot, *, vlm=None, config: SpotRobotConfig = SpotRobotConfig()):
        self.config = config
        self.vlm = vlm  # answer(frame, question, target_px) -> .text, .prompt_tokens, ...
        self.counters = RobotCounters()
        self._robot = sdk_robot
        self._sdk = None
        self._closed = False
        self._lease_keepalive: LeaseKeepAlive | None = None
        self._estop_keepalive: EstopKeepAlive | None = None
        self._estop_endpoint: EstopEndpoint | None = None
        self._sources: dict[str, image_pb2.ImageSource] = {}
        self._t0_robot_s = 0.0
        self._episode_T_odom: np.ndarray | None = None  # planar; None = identity
        self.state_client: RobotStateClient = sdk_robot.ensure_client(
            RobotStateClient.default_service_name
        )
        self.command_client: RobotCommandClient = sdk_robot.ensure_client(
            RobotCommandClient.default_service_name
        )
        self.image_client: ImageClient = sdk_robot.ensure_client(ImageClient.default_service_name)
        self.lease_client: LeaseClient = sdk_robot.ensure_client(LeaseClient.default_service_name)
        self.manipulation_client: ManipulationApiClient = sdk_robot.ensure_client(
            ManipulationApiClient.default_service_name
        )
        self.estop_client: EstopClient = sdk_robot.ensure_client(EstopClient.default_service_name)

    # ------------------------------------------------------------------ connect
    @classmethod
    def connect(
        cls,
        hostname: str,
        *,
        port: int | None = None,
        username: str | None = None,
        password: str | None = None,
        cert_path: str | None = None,
        vlm=None,
        config: SpotRobotConfig = SpotRobotConfig(),
    ) -> SpotRobot:
        """Authenticate, sync time, E-Stop, lease, power on, stand.

        Credentials default to ``$BOSDYN_CLIENT_USERNAME`` / ``$BOSDYN_CLIENT_PASSWORD``.
        ``cert_path`` is the CA the robot's certificate chains to (the twin's; None for
        Boston Dynamics' own, bundled with the SDK); ``port``: the robot's secure port if
        not 443. Each step is bounded by ``config.setup_timeout_s``.
        """
        username = username or os.environ.get(USERNAME_ENV)
        password = password or os.environ.get(PASSWORD_ENV)
        if not username or not password:
            raise SpotConfigError(
                f"no Spot credentials: set {USERNAME_ENV} and {PASSWORD_ENV} "
                "(or pass username= and password=)"
            )
        timeout = config.setup_timeout_s
        with _translated(None):
            sdk = create_standard_sdk(config.client_name, cert_resource_glob=cert_path)
            sdk_robot = sdk.create_robot(hostname)
            if port is not None:
                sdk_robot.update_secure_channel_port(port)
            sdk_robot.authenticate(username, password, timeout=timeout)
            sdk_robot.time_sync.wait_for_sync(timeout_sec=timeout)
            robot = cls(sdk_robot, vlm=vlm, config=config)
        robot._sdk = sdk
        try:
            with robot._rpc():
                robot._setup(timeout)
        except BaseException:
            robot.close()
            raise
        return robot

    def _setup(self, timeout_s: float) -> None:
        cfg = self.config
        t = cfg.rpc_timeout_s
        if cfg.estop == "own":  # E-Stop first: nothing powers on without it
            self._estop_endpoint = self._own_estop(t)
            self._estop_keepalive = EstopKeepAlive(self._estop_endpoint, rpc_timeout_seconds=t)
        elif cfg.estop == "external":
            level = self.estop_client.get_status(timeout=cfg.rpc_timeout_s).stop_level
            if level != estop_pb2.ESTOP_LEVEL_NONE:
                raise iface.EStopped(
                    "the robot's E-Stop is engaged or none is set up: start the operator's "
                    "E-Stop (tablet or estop_gui), release it, then connect"
                )
        else:
            raise SpotConfigError(f"estop must be 'own' or 'external', not {cfg.estop!r}")
        self.lease_client.acquire(timeout=t)  # the keep-alive then finds it in the wallet
        self._lease_keepalive = LeaseKeepAlive(
            self.lease_client,
            must_acquire=True,
            return_at_exit=True,
            rpc_interval_seconds=cfg.lease_check_in_s,
        )
        self._robot.power_on(timeout_sec=timeout_s, update_frequency=20.0, timeout=timeout_s)
        sdk_command.blocking_stand(
            self.command_client, timeout_sec=timeout_s, update_frequency=20.0
        )
        self._sources = {
            s.name: s for s in self.image_client.list_image_sources(timeout=cfg.rpc_timeout_s)
        }
        state = self._state()
        self._t0_robot_s = timestamp_to_sec(state.kinematic_state.acquisition_timestamp)
        if cfg.episode_start is not None:
            here = frames.pose2d_from_snapshot(state.kinematic_state.transforms_snapshot)
            start = cfg.episode_start
            episode_T_body = frames.planar_matrix(start.x_m, start.y_m, start.yaw_rad)
            odom_T_body = frames.planar_matrix(here.x_m, here.y_m, here.yaw_rad)
            self._episode_T_odom = episode_T_body @ np.linalg.inv(odom_T_body)

    def _own_estop(self, timeout_s: float) -> EstopEndpoint:
        """``EstopEndpoint.force_simple_setup`` with every RPC bounded by ``timeout_s``:
        a configuration of this one endpoint, registered, its challenge seeded."""
        client = self.estop_client
        endpoint = EstopEndpoint(client, self.config.client_name, self.config.estop_timeout_s)
        config = estop_pb2.EstopConfig()
        config.endpoints.add().CopyFrom(endpoint.to_proto())
        active = client.set_config(
            config, client.get_config(timeout=timeout_s).unique_id, timeout=timeout_s
        )
        endpoint.from_proto(active.endpoints[0])
        endpoint.from_proto(client.register(active.unique_id, endpoint, timeout=timeout_s))
        endpoint.stop(timeout=timeout_s)  # the first check-in only fetches a challenge
        return endpoint

    # ------------------------------------------------------------------ errors
    @contextlib.contextmanager
    def _rpc(self) -> Iterator[None]:
        with _translated(self):
            yield

    @contextlib.contextmanager
    def _behavior(self, name: str) -> Iterator[None]:
        """Count the behaviour, translate SDK errors, and stop the robot if it fails."""
        t0 = time.monotonic()
        try:
            with self._rpc():
                yield
        except iface.RobotError:
            self.stop()
            raise
        finally:
            self.counters.count(name, time.monotonic() - t0)

    def _estopped(self) -> bool:
        try:
            state = self.state_client.get_robot_state(timeout=self.config.rpc_timeout_s)
        except Exception:  # noqa: BLE001 - a question asked while resolving another error
            return False
        stopped = robot_state_pb2.EStopState.STATE_ESTOPPED
        return any(s.state == stopped for s in state.estop_states)

    def _lease_lost(self) -> bool:
        try:
            ours = self.lease_client.lease_wallet.get_lease()
            current = self.lease_client.list_leases(timeout=self.config.rpc_timeout_s)
        except sdk_lease.Error:
            return True
        except Exception:  # noqa: BLE001 - a question asked while resolving another error
            return False
        body = next((r for r in current if r.resource == "body"), None)
        if body is None or not body.HasField("lease"):
            return True
        held = (
            sdk_lease.Lease.CompareResult.SAME,
            sdk_lease.Lease.CompareResult.SUB_LEASE,
            sdk_lease.Lease.CompareResult.NEWER,
        )
        return ours.compare(sdk_lease.Lease(body.lease)) not in held

    def _command_status(self, status: int, what: str) -> None:
        """Raise if a command part ended early (overridden, timed out, frozen)."""
        if status == PROCESSING:
            return
        name = spot_status.COMMAND.Status.Name(status)
        error = spot_status.COMMAND_STATUS_ERRORS.get(status, iface.PersistentRobotError)
        if status == spot_status.COMMAND.STATUS_COMMAND_OVERRIDDEN and self._lease_lost():
            raise iface.LeaseLost(f"{what}: another client took the lease ({name})")
        raise error(f"{what} ended early: {name}")

    def _bounded(self, timeout_s: float) -> float:
        cap = self.config.behavior_timeout_cap_s
        return timeout_s if cap is None else min(timeout_s, cap)

    # ------------------------------------------------------------------ state
    def _state(self) -> robot_state_pb2.RobotState:
        return self.state_client.get_robot_state(timeout=self.config.rpc_timeout_s)

    def _odom_pose(self) -> Pose2D:
        return frames.pose2d_from_snapshot(self._state().kinematic_state.transforms_snapshot)

    def get_pose(self) -> Pose2D:
        with self._rpc():
            return self._to_episode_pose(self._odom_pose())

    # episode frame <-> odom: identity, untouched, unless config.episode_start is set
    def _to_episode_pose(self, p: Pose2D, inverse: bool = False) -> Pose2D:
        m = self._episode_T_odom
        if m is None:
            return p
        m = np.linalg.inv(m) if inverse else m
        x, y, _, _ = m @ np.array([p.x_m, p.y_m, 0.0, 1.0])
        yaw = p.yaw_rad + math.atan2(m[1, 0], m[0, 0])
        return Pose2D(float(x), float(y), math.atan2(math.sin(yaw), math.cos(yaw)))

    def _to_odom_pose(self, p: Pose2D) -> Pose2D:
        return self._to_episode_pose(p, inverse=True)

    def _to_episode_point(self, p: Point3, inverse: bool = False) -> Point3:
        m = self._episode_T_odom
        if m is None:
            return p
        m = np.linalg.inv(m) if inverse else m
        return Point3.of((m @ np.array([*p.as_array(), 1.0]))[:3])

    def _to_odom_point(self, p: Point3) -> Point3:
        return self._to_episode_point(p, inverse=True)

    @property
    def holding(self) -> bool:
        with self._rpc():
            return bool(self._state().manipulator_state.is_gripper_holding_item)

    # ------------------------------------------------------------------ commands
    def _send(self, command, timeout_s: float) -> int:
        return self.command_client.robot_command(
            command, end_time_secs=time.time() + timeout_s, timeout=self.config.rpc_timeout_s
        )

    def _feedback(self, command_id: int):
        return self.command_client.robot_command_feedback(
            command_id, timeout=self.config.rpc_timeout_s
        )

    def _wait(self, deadline_s: float, what: str) -> None:
        if time.monotonic() > deadline_s:
            raise iface.RobotTimeout(f"{what} did not finish in time")
        time.sleep(self.config.poll_interval_s)

    def _wait_arm(self, command_id: int, deadline_s: float, what: str, behavior: str = ""):
        """Poll an arm command to completion; a behaviour's failure status raises its error."""
        while True:
            resp = self._feedback(command_id)
            arm = resp.feedback.synchronized_feedback.arm_command_feedback
            self._command_status(arm.status, what)
            kind = arm.WhichOneof("feedback")
            if kind == "arm_gaze_feedback":
                fb = arm.arm_gaze_feedback
                if fb.status == GAZE.STATUS_TRAJECTORY_COMPLETE:
                    return resp
                row = spot_status.failure_for(behavior, fb.status, fb.gazing_at_target)
            elif kind == "arm_cartesian_feedback":
                fb = arm.arm_cartesian_feedback
                if fb.status == CARTESIAN.STATUS_TRAJECTORY_COMPLETE:
                    return resp
                row = spot_status.failure_for(behavior, fb.status)
            elif kind == "named_arm_position_feedback":
                status = arm.named_arm_position_feedback.status
                if status == NAMED_COMPLETE:
                    return resp
                if status == 3:  # STATUS_STALLED_HOLDING_ITEM
                    raise iface.PersistentRobotError(
                        resp.header.error.message or f"{what}: the arm stalled holding an item"
                    )
                row = None
            else:
                row = None
            if row is not None:
                raise row.error(resp.header.error.message or row.description)
            self._wait(deadline_s, what)

    def _arm_to(self, position: str, deadline_s: float) -> None:
        """Stow the arm, or carry when the gripper holds something."""
        build = (
            RobotCommandBuilder.arm_carry_command
            if position == "carry"
            else (RobotCommandBuilder.arm_stow_command)
        )
        cid = self._send(build(), max(0.1, deadline_s - time.monotonic()))
        self._wait_arm(cid, deadline_s, f"arm {position}")

    def goto(
        self, pose: Pose2D, timeout_s: float = 120.0, capture_every_m: float | None = None
    ) -> MotionResult:
        timeout_s = self._bounded(timeout_s)
        on_the_way: list[Frame] = []  # (``frames`` is bosdyn's frame-helpers module)
        capture_at = capture_every_m
        t0 = time.monotonic()
        deadline = t0 + timeout_s
        with self._behavior("goto"):
            here = self._odom_pose()  # odometry starts before the robot moves
            goal = self._to_odom_pose(pose)
            command = RobotCommandBuilder.synchro_se2_trajectory_point_command(
                goal.x_m, goal.y_m, goal.yaw_rad, frame_name=frames.ODOM
            )
            cid = self._send(command, timeout_s)
            walked = 0.0
            while True:
                resp = self._feedback(cid)
                now = self._odom_pose()
                walked += here.distance_to(now.x_m, now.y_m)
                here = now
                mobility = resp.feedback.synchronized_feedback.mobility_command_feedback
                self._command_status(mobility.status, "goto")
                se2 = mobility.se2_trajectory_feedback
                row = spot_status.failure_for("goto", se2.final_goal_status)
                if row is not None and se2.status == SE2.STATUS_STOPPED:
                    raise row.error(resp.header.error.message or row.description)
                if se2.status == SE2.STATUS_AT_GOAL:
                    break
                if capture_at is not None and walked >= capture_at:
                    # the image carries its own transforms snapshot: the frame's pose is
                    # where the robot was when it was taken, mid-stride
                    on_the_way.append(self.capture("body"))
                    capture_at = walked + capture_every_m
                self._wait(deadline, f"goto ({pose.x_m:.2f}, {pose.y_m:.2f})")
            return MotionResult(
                self._to_episode_pose(here), walked, time.monotonic() - t0, tuple(on_the_way)
            )

    def capture(self, camera: str = "body", timeout_s: float = 10.0) -> Frame:
        sources = sources_for(camera)
        with self._rpc():
            fmt = image_pb2.Image
            requests = [
                build_image_request(
                    sources.visual,
                    image_format=fmt.FORMAT_RAW,
                    pixel_format=fmt.PIXEL_FORMAT_RGB_U8,
                ),
                build_image_request(
                    sources.depth,
                    image_format=fmt.FORMAT_RAW,
                    pixel_format=fmt.PIXEL_FORMAT_DEPTH_U16,
                ),
            ]
            if sources.segmentation in self._sources:  # twin-only source
                requests.append(
                    build_image_request(
                        sources.segmentation,
                        image_format=fmt.FORMAT_RAW,
                        pixel_format=fmt.PIXEL_FORMAT_GREYSCALE_U16,
                    )
                )
            responses = self.image_client.get_image(requests, timeout=timeout_s)
        return self._frame(camera, responses)

    def _frame(self, camera: str, responses) -> Frame:
        for r in responses:
            if r.status != image_pb2.ImageResponse.STATUS_OK:
                status = image_pb2.ImageResponse.Status.Name(r.status)
                raise iface.PersistentRobotError(f"image source {r.source.name}: {status}")
        visual, depth = responses[0], responses[1]
        rgb = _pixels(visual.shot.image)
        if rgb.ndim == 2:
            rgb = np.repeat(rgb[..., None], 3, axis=2)
        rgb = np.ascontiguousarray(rgb[..., :3], dtype=np.uint8)
        scale = depth.source.depth_scale or 1000.0
        depth_m = (_pixels(depth.shot.image).astype(np.float32) / np.float32(scale)).astype(
            np.float32
        )
        segmentation, phrases = None, None
        if len(responses) > 2:
            seg = responses[2].shot
            segmentation = _pixels(seg.image).astype(np.int32) - 1
            table = seg.capture_params.custom_params.values[SEGMENT_PHRASES_PARAM].dict_value
            phrases = {int(k) - 1: v.string_value.value for k, v in table.values.items()}
        shot = visual.shot
        odom_T_camera = frames.a_T_b(
            shot.transforms_snapshot, frames.ODOM, shot.frame_name_image_sensor
        )
        if self._episode_T_odom is not None:  # then "odom" of the interface is the episode's
            odom_T_camera = self._episode_T_odom @ odom_T_camera
        return Frame(
            rgb=rgb,
            depth_m=depth_m,
            intrinsics=self._intrinsics(visual.source),
            odom_T_camera=odom_T_camera,
            stamp_s=max(0.0, timestamp_to_sec(shot.acquisition_time) - self._t0_robot_s),
            camera=camera,
            segmentation=segmentation,
            segment_phrases=phrases,
        )

    @staticmethod
    def _intrinsics(source: image_pb2.ImageSource) -> CameraIntrinsics:
        return frames.intrinsics_from_pinhole(source.pinhole, source.cols, source.rows)

    def camera_intrinsics(self, camera: str = "body") -> CameraIntrinsics:
        visual = sources_for(camera).visual
        if visual not in self._sources:
            raise iface.PersistentRobotError(f"the robot lists no image source {visual!r}")
        return self._intrinsics(self._sources[visual])

    def inspect(self, target: Point3, question: str, timeout_s: float = 60.0) -> InspectResult:
        if self.vlm is None:
            raise SpotConfigError("inspect needs a VLM backend: SpotRobot.connect(..., vlm=...)")
        timeout_s = self._bounded(timeout_s)
        t0 = time.monotonic()
        deadline = t0 + timeout_s
        with self._behavior("inspect"):
            here = self._odom_pose()
            t = self._to_odom_point(target).as_array()
            d = t[:2] - here.xy()
            dist = float(np.linalg.norm(d))
            u = d / dist if dist > 1e-6 else np.array([1.0, 0.0])
            standoff = min(self.config.hand_standoff_m, dist)
            hand = geometry_pb2.SE3Pose(
                position=geometry_pb2.Vec3(
                    x=t[0] - u[0] * standoff,
                    y=t[1] - u[1] * standoff,
                    z=t[2] + self.config.hand_height_above_m,
                ),
                rotation=geometry_pb2.Quaternion(w=1.0),
            )
            command = RobotCommandBuilder.arm_gaze_command(
                t[0],
                t[1],
                t[2],
                frames.ODOM,
                frame2_tform_desired_hand=hand,
                frame2_name=frames.ODOM,
            )
            cid = self._send(command, timeout_s)
            self._wait_arm(cid, deadline, "inspect (gaze)", behavior="inspect")
            wait_s = min(self.config.image_timeout_s, deadline - time.monotonic())
            frame = self.capture("hand", timeout_s=max(0.1, wait_s))
            reply = self.vlm.answer(frame, question, _project(frame, target.as_array()))
            self._arm_to("stow", deadline)
            pt, ct = int(reply.prompt_tokens), int(reply.completion_tokens)
            self.counters.vlm_calls += 1
            self.counters.vlm_prompt_tokens += pt
            self.counters.vlm_completion_tokens += ct
            return InspectResult(reply.text, time.monotonic() - t0, frame, pt, ct)

    def grasp(self, target: Point3, timeout_s: float = 60.0) -> ManipulationResult:
        timeout_s = self._bounded(timeout_s)
        t0 = time.monotonic()
        deadline = t0 + timeout_s
        with self._behavior("grasp"):
            if self._state().manipulator_state.is_gripper_holding_item:
                raise iface.HandOccupied(
                    spot_status.precondition("grasp", iface.HandOccupied).description
                )
            aim = self._to_odom_point(target)
            pick = manipulation_api_pb2.PickObjectRayInWorld(
                ray_start_rt_frame=geometry_pb2.Vec3(
                    x=aim.x_m, y=aim.y_m, z=aim.z_m + self.config.pick_ray_height_m
                ),
                ray_end_rt_frame=geometry_pb2.Vec3(x=aim.x_m, y=aim.y_m, z=aim.z_m),
                frame_name=frames.ODOM,
                walk_gaze_mode=manipulation_api_pb2.PICK_NO_AUTO_WALK_OR_GAZE,
            )
            request = manipulation_api_pb2.ManipulationApiRequest(pick_object_ray_in_world=pick)
            cid = self.manipulation_client.manipulation_api_command(
                request, timeout=self.config.rpc_timeout_s
            ).manipulation_cmd_id
            while True:
                fb = self.manipulation_client.manipulation_api_feedback_command(
                    manipulation_api_pb2.ManipulationApiFeedbackRequest(manipulation_cmd_id=cid),
                    timeout=self.config.rpc_timeout_s,
                )
                if fb.current_state == manipulation_api_pb2.MANIP_STATE_GRASP_SUCCEEDED:
                    break
                row = spot_status.failure_for("grasp", fb.current_state)
                if row is not None:
                    raise row.error(fb.header.error.message or row.description)
                self._wait(deadline, "grasp")
            position = target
            tree = fb.transforms_snapshot_manipulation_data
            if frames.GRASP_POINT in tree.child_to_parent_edge_map:
                at = frames.a_T_b(tree, frames.ODOM, frames.GRASP_POINT)[:3, 3]
                position = self._to_episode_point(Point3.of(at))
            self._arm_to("carry", deadline)
            return ManipulationResult(time.monotonic() - t0, position, "grasped")

    def place(self, location: Point3, timeout_s: float = 60.0) -> ManipulationResult:
        timeout_s = self._bounded(timeout_s)
        t0 = time.monotonic()
        deadline = t0 + timeout_s
        with self._behavior("place"):
            if not self._state().manipulator_state.is_gripper_holding_item:
                raise iface.HandEmpty(
                    spot_status.precondition("place", iface.HandEmpty).description
                )
            down = Quat.from_pitch(math.pi / 2)  # gripper pointing at the floor
            at = self._to_odom_point(location)
            command = RobotCommandBuilder.arm_pose_command(
                at.x_m,
                at.y_m,
                at.z_m + self.config.place_hand_height_m,
                down.w,
                down.x,
                down.y,
                down.z,
                frames.ODOM,
                seconds=self.config.arm_move_s,
            )
            cid = self._send(command, timeout_s)
            self._wait_arm(cid, deadline, "place (arm move)", behavior="place")
            cid = self._send(RobotCommandBuilder.claw_gripper_open_command(), timeout_s)
            while True:
                gripper = self._feedback(
                    cid
                ).feedback.synchronized_feedback.gripper_command_feedback
                self._command_status(gripper.status, "place (open gripper)")
                if gripper.claw_gripper_feedback.status == CLAW_AT_GOAL:
                    break
                self._wait(deadline, "place (open gripper)")
            self._arm_to("stow", deadline)
            return ManipulationResult(time.monotonic() - t0, location, "placed")

    def stop(self) -> None:
        """Full-body stop, now. Never raises (a lost link is logged)."""
        try:
            self.command_client.robot_command(
                RobotCommandBuilder.stop_command(), timeout=self.config.rpc_timeout_s
            )
        except Exception as exc:  # noqa: BLE001 - stop must never raise
            LOG.warning("stop command failed: %s", exc)

    # ------------------------------------------------------------------ shutdown
    def close(self) -> None:
        """Leave the robot safe: stop, stow (or carry), sit, power off, return the lease,
        release the E-Stop endpoint. Every step is bounded and best effort; safe twice."""
        if self._closed:
            return
        self._closed = True
        timeout = self.config.setup_timeout_s

        def step(what: str, fn) -> None:
            try:
                fn()
            except Exception as exc:  # noqa: BLE001 - shutting down: log and go on
                LOG.warning("closing SpotRobot: %s failed: %s", what, exc)

        self.stop()
        step("stow", lambda: self._arm_to(self._stow_or_carry(), time.monotonic() + timeout))
        step("sit", lambda: sdk_command.blocking_sit(self.command_client, timeout, 20.0))
        if self.config.power_off_at_exit:
            step(
                "power off",
                lambda: sdk_power.safe_power_off_motors(
                    self.command_client,
                    self.state_client,
                    timeout,
                    20.0,
                    timeout=self.config.rpc_timeout_s,
                ),
            )
        if self._lease_keepalive is not None:
            step("return lease", self._lease_keepalive.shutdown)
        if self._estop_keepalive is not None:
            step("stop E-Stop keep-alive", self._estop_keepalive.shutdown)
        if self._estop_endpoint is not None and self.config.power_off_at_exit:
            step("release E-Stop endpoint", self._release_estop)
        if self._sdk is not None:
            step("stop time sync", self._sdk.clear_robots)
        step("close channels", self._robot.shutdown)

    def _release_estop(self) -> None:
        t = self.config.rpc_timeout_s
        config_id = self.estop_client.get_config(timeout=t).unique_id
        self.estop_client.deregister(config_id, self._estop_endpoint, timeout=t)

    def _stow_or_carry(self) -> str:
        return "carry" if self._state().manipulator_state.is_gripper_holding_item else "stow"


@contextlib.contextmanager
def _translated(robot: SpotRobot | None) -> Iterator[None]:
    """Translate SDK exceptions through :data:`RPC_ERRORS` (``raise ... from None``)."""
    try:
        yield
    except iface.RobotError:
        raise
    except (sdk_errors.Error, sdk_lease.Error) as exc:
        error = next(err for cls, err in RPC_ERRORS if isinstance(exc, cls))
        message = f"{type(exc).__name__}: {exc}"
        if error is _MotorsOff:
            engaged = robot is not None and robot._estopped()
            error = iface.EStopped if engaged else iface.PersistentRobotError
            message = ("an E-Stop cut the motors; " if engaged else "motors are off; ") + message
        raise error(message) from None


def _pixels(image: image_pb2.Image) -> np.ndarray:
    """An image's pixels: (rows, cols[, channels]) uint8 or uint16."""
    fmt = image_pb2.Image
    if image.format == fmt.FORMAT_JPEG:
        from PIL import Image

        return np.asarray(Image.open(io.BytesIO(image.data)))
    if image.format != fmt.FORMAT_RAW:
        raise iface.PersistentRobotError(
            f"unsupported image format {fmt.Format.Name(image.format)}"
        )
    layout = {
        fmt.PIXEL_FORMAT_RGB_U8: (np.uint8, 3),
        fmt.PIXEL_FORMAT_RGBA_U8: (np.uint8, 4),
        fmt.PIXEL_FORMAT_GREYSCALE_U8: (np.uint8, 1),
        fmt.PIXEL_FORMAT_DEPTH_U16: (np.dtype("<u2"), 1),
        fmt.PIXEL_FORMAT_GREYSCALE_U16: (np.dtype("<u2"), 1),
    }
    if image.pixel_format not in layout:
        name = fmt.PixelFormat.Name(image.pixel_format)
        raise iface.PersistentRobotError(f"unsupported pixel format {name}")
    dtype, channels = layout[image.pixel_format]
    data = np.frombuffer(image.data, dtype=dtype)
    shape = (image.rows, image.cols) if channels == 1 else (image.rows, image.cols, channels)
    return data.reshape(shape)


def _project(frame: Frame, point: np.ndarray) -> tuple[int, int] | None:
    """Pixel (u, v) of an ``odom`` point in ``frame``; None if behind the camera."""
    cam = np.linalg.inv(frame.odom_T_camera) @ np.array([*point[:3], 1.0])
    if cam[2] <= 1e-6:
        return None
    k = frame.intrinsics
    return (
        int(math.floor(k.fx_px * cam[0] / cam[2] + k.cx_px)),
        int(math.floor(k.fy_px * cam[1] / cam[2] + k.cy_px)),
    )
