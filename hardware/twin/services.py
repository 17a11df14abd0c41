"""The twin's gRPC servicers: Spot's service interfaces over a :class:`TwinRobot`.

Each servicer subclasses the base class bosdyn-api generates, fills the response header
the way the SDK expects (request header echoed, receive / response timestamps,
``CODE_OK`` unless something is malformed), checks the lease where Spot does, and
leaves the behaviour to :class:`~hardware.twin.twin_robot.TwinRobot`.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import grpc
from bosdyn.api import (
    auth_pb2,
    auth_service_pb2_grpc,
    directory_pb2,
    directory_service_pb2_grpc,
    estop_pb2,
    estop_service_pb2_grpc,
    header_pb2,
    image_pb2,
    image_service_pb2_grpc,
    lease_pb2,
    lease_service_pb2_grpc,
    manipulation_api_pb2,
    manipulation_api_service_pb2_grpc,
    power_pb2,
    power_service_pb2_grpc,
    robot_command_pb2,
    robot_command_service_pb2_grpc,
    robot_id_pb2,
    robot_id_service_pb2_grpc,
    robot_state_pb2,
    robot_state_service_pb2_grpc,
    time_sync_pb2,
    time_sync_service_pb2_grpc,
)
from bosdyn.util import now_nsec, now_timestamp

from hardware import frames
from hardware.twin import images
from hardware.twin.twin_robot import TwinRobot

OK = header_pb2.CommonError.CODE_OK
INVALID = header_pb2.CommonError.CODE_INVALID_REQUEST


def _header(resp, req, received, *, code: int = OK, message: str = ""):
    """Fill ``resp.header`` as Spot does; ``message`` may accompany CODE_OK (a twin
    extension carrying the simulator's reason for a refused behaviour)."""
    h = resp.header
    h.request_header.CopyFrom(req.header)
    h.request_received_timestamp.CopyFrom(received)
    h.error.code = code
    if message:
        h.error.message = message
    h.response_timestamp.CopyFrom(now_timestamp())
    return resp


def _owner(req, credentials: Credentials, context) -> lease_pb2.LeaseOwner:
    return lease_pb2.LeaseOwner(
        client_name=req.header.client_name, user_name=credentials.user_of(_token(context)) or ""
    )


def _token(context) -> str:
    for key, value in context.invocation_metadata() or ():
        if key == "authorization" and value.startswith("Bearer "):
            return value[len("Bearer ") :]
    return ""


# --------------------------------------------------------------------------- auth


class Credentials:
    """One user and password; tokens are random strings valid for the twin's life."""

    def __init__(self, username: str, password: str):
        self.username = username
        self._password = password
        self._tokens: dict[str, str] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Credentials(username={self.username!r})"

    def login(self, username: str, password: str) -> str | None:
        ok = hmac.compare_digest(username.encode(), self.username.encode()) & hmac.compare_digest(
            password.encode(), self._password.encode()
        )
        return self._issue(username) if ok else None

    def refresh(self, token: str) -> str | None:
        user = self.user_of(token)
        return self._issue(user) if user else None

    def _issue(self, user: str) -> str:
        token = "twin." + secrets.token_urlsafe(24)
        with self._lock:
            self._tokens[token] = user
        return token

    def user_of(self, token: str) -> str | None:
        with self._lock:
            return self._tokens.get(token)


class AuthInterceptor(grpc.ServerInterceptor):
    """Refuses every RPC without a valid user token, except RobotId and Auth (as Spot does)."""

    OPEN = (
        "/bosdyn.api.RobotIdService/GetRobotId",
        "/bosdyn.api.AuthService/GetAuthToken",
    )

    def __init__(self, credentials: Credentials):
        self.credentials = credentials

        def deny(request, context):
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "no valid user token; authenticate")

        self._deny = grpc.unary_unary_rpc_method_handler(deny)

    def intercept_service(self, continuation, handler_call_details):
        if handler_call_details.method in self.OPEN:
            return continuation(handler_call_details)
        for key, value in handler_call_details.invocation_metadata or ():
            if key == "authorization" and value.startswith("Bearer "):
                if self.credentials.user_of(value[len("Bearer ") :]) is not None:
                    return continuation(handler_call_details)
        return self._deny


class AuthServicer(auth_service_pb2_grpc.AuthServiceServicer):
    def __init__(self, credentials: Credentials):
        self.credentials = credentials

    def GetAuthToken(self, request, context):
        received = now_timestamp()
        resp = auth_pb2.GetAuthTokenResponse()
        if request.token:
            token = self.credentials.refresh(request.token)
            bad = resp.STATUS_INVALID_TOKEN
        else:
            token = self.credentials.login(request.username, request.password)
            bad = resp.STATUS_INVALID_LOGIN
        resp.status = resp.STATUS_OK if token else bad
        resp.token = token or ""
        return _header(resp, request, received)


# --------------------------------------------------------------------------- identity


@dataclass(frozen=True)
class Identity:
    serial_number: str
    nickname: str


class RobotIdServicer(robot_id_service_pb2_grpc.RobotIdServiceServicer):
    def __init__(self, identity: Identity):
        self.identity = identity

    def GetRobotId(self, request, context):
        received = now_timestamp()
        resp = robot_id_pb2.RobotIdResponse()
        rid = resp.robot_id
        rid.serial_number = self.identity.serial_number
        rid.species = "spot"
        rid.version = "cluetwin"
        rid.nickname = self.identity.nickname
        rid.software_release.version.major_version = 5
        rid.software_release.version.minor_version = 2
        rid.software_release.name = "CLUE Twin (simulated Spot)"
        return _header(resp, request, received)


class DirectoryServicer(directory_service_pb2_grpc.DirectoryServiceServicer):
    def __init__(self, entries: list[directory_pb2.ServiceEntry]):
        self.entries = entries

    def ListServiceEntries(self, request, context):
        received = now_timestamp()
        resp = directory_pb2.ListServiceEntriesResponse(service_entries=self.entries)
        return _header(resp, request, received)

    def GetServiceEntry(self, request, context):
        received = now_timestamp()
        resp = directory_pb2.GetServiceEntryResponse()
        entry = next((e for e in self.entries if e.name == request.service_name), None)
        if entry is None:
            resp.status = resp.STATUS_NONEXISTENT_SERVICE
        else:
            resp.status = resp.STATUS_OK
            resp.service_entry.CopyFrom(entry)
        return _header(resp, request, received)


class TimeSyncServicer(time_sync_service_pb2_grpc.TimeSyncServiceServicer):
    """Estimates the client's clock skew from the previous round trip (NTP-style)."""

    def __init__(self) -> None:
        self.clock_identifier = "twin-" + secrets.token_hex(4)

    def TimeSyncUpdate(self, request, context):
        received = now_timestamp()
        resp = time_sync_pb2.TimeSyncUpdateResponse(clock_identifier=self.clock_identifier)
        rt = request.previous_round_trip
        if request.clock_identifier == self.clock_identifier and rt.HasField("client_rx"):
            c_tx, s_rx = rt.client_tx.ToNanoseconds(), rt.server_rx.ToNanoseconds()
            s_tx, c_rx = rt.server_tx.ToNanoseconds(), rt.client_rx.ToNanoseconds()
            est = resp.state.best_estimate
            est.round_trip_time.FromNanoseconds(max(0, (c_rx - c_tx) - (s_tx - s_rx)))
            est.clock_skew.FromNanoseconds(((s_rx - c_tx) + (s_tx - c_rx)) // 2)
            resp.previous_estimate.CopyFrom(est)
            resp.state.status = resp.state.STATUS_OK
        else:
            resp.state.status = resp.state.STATUS_MORE_SAMPLES_NEEDED
        resp.state.measurement_time.FromNanoseconds(now_nsec())
        return _header(resp, request, received)


# --------------------------------------------------------------------------- state, images


class RobotStateServicer(robot_state_service_pb2_grpc.RobotStateServiceServicer):
    def __init__(self, robot: TwinRobot):
        self.robot = robot

    def GetRobotState(self, request, context):
        received = now_timestamp()
        resp = robot_state_pb2.RobotStateResponse()
        resp.robot_state.CopyFrom(self.robot.robot_state())
        return _header(resp, request, received)

    def GetRobotMetrics(self, request, context):
        received = now_timestamp()
        return _header(robot_state_pb2.RobotMetricsResponse(), request, received)

    def GetRobotHardwareConfiguration(self, request, context):
        received = now_timestamp()
        resp = robot_state_pb2.RobotHardwareConfigurationResponse()
        for name in ("body", "arm0.link_sh0", "arm0.link_wr1"):
            resp.hardware_configuration.skeleton.links.add(name=name)
        return _header(resp, request, received)


class ImageServicer(image_service_pb2_grpc.ImageServiceServicer):
    """Sim renders as Spot image responses; ``delay_s()`` is the slow-image fault."""

    def __init__(self, robot: TwinRobot, delay_s: Callable[[], float], stopping):
        self.robot = robot
        self.delay_s = delay_s
        self.stopping = stopping  # threading.Event set when the twin shuts down
        self.table = images.source_table()

    def ListImageSources(self, request, context):
        received = now_timestamp()
        resp = image_pb2.ListImageSourcesResponse(image_sources=self.robot.image_sources())
        return _header(resp, request, received)

    def GetImage(self, request, context):
        received = now_timestamp()
        delay = self.delay_s()
        if delay > 0:
            self.stopping.wait(delay)
        resp = image_pb2.GetImageResponse()
        wanted = [self.table.get(r.image_source_name) for r in request.image_requests]
        cameras = {s.camera for s in wanted if s is not None}
        shots, odom_T_body, stamp_s = self.robot.render(cameras) if cameras else ({}, None, 0.0)
        for req, source in zip(request.image_requests, wanted, strict=True):
            if source is None:
                out = resp.image_responses.add(status=image_pb2.ImageResponse.STATUS_UNKNOWN_CAMERA)
                out.source.name = req.image_source_name
                continue
            resp.image_responses.append(
                images.respond(req, source, shots[source.camera], odom_T_body, stamp_s)
            )
        return _header(resp, request, received)


# --------------------------------------------------------------------------- lease, estop, power


class LeaseServicer(lease_service_pb2_grpc.LeaseServiceServicer):
    def __init__(self, robot: TwinRobot, credentials: Credentials):
        self.robot = robot
        self.credentials = credentials

    def AcquireLease(self, request, context):
        received = now_timestamp()
        owner = _owner(request, self.credentials, context)
        resp = self.robot.leases.acquire(request.resource, owner)
        return _header(resp, request, received)

    def TakeLease(self, request, context):
        received = now_timestamp()
        robot = self.robot
        resp = robot.leases.take(request.resource, _owner(request, self.credentials, context))
        robot.halt_all()  # a new lease holder: whatever ran stops
        return _header(resp, request, received)

    def ReturnLease(self, request, context):
        received = now_timestamp()
        resp = lease_pb2.ReturnLeaseResponse(status=self.robot.leases.give_back(request.lease))
        return _header(resp, request, received)

    def RetainLease(self, request, context):
        received = now_timestamp()
        resp = lease_pb2.RetainLeaseResponse()
        resp.lease_use_result.CopyFrom(self.robot.leases.use(request.lease))
        return _header(resp, request, received)

    def ListLeases(self, request, context):
        received = now_timestamp()
        resp = lease_pb2.ListLeasesResponse(resources=self.robot.leases.resources())
        return _header(resp, request, received)


class EstopServicer(estop_service_pb2_grpc.EstopServiceServicer):
    def __init__(self, robot: TwinRobot):
        self.robot = robot

    def GetEstopConfig(self, request, context):
        received = now_timestamp()
        resp = estop_pb2.GetEstopConfigResponse()
        resp.active_config.CopyFrom(self.robot.estop.config)
        return _header(resp, request, received)

    def SetEstopConfig(self, request, context):
        received = now_timestamp()
        robot = self.robot
        resp = robot.estop.set_config(request.config, request.target_config_id, robot.motors_on)
        return _header(resp, request, received)

    def RegisterEstopEndpoint(self, request, context):
        received = now_timestamp()
        resp = self.robot.estop.register(
            request.target_config_id, request.target_endpoint, request.new_endpoint
        )
        return _header(resp, request, received)

    def DeregisterEstopEndpoint(self, request, context):
        received = now_timestamp()
        robot = self.robot
        status = robot.estop.deregister(
            request.target_config_id, request.target_endpoint, robot.motors_on
        )
        return _header(estop_pb2.DeregisterEstopEndpointResponse(status=status), request, received)

    def EstopCheckIn(self, request, context):
        received = now_timestamp()
        resp = self.robot.estop.check_in(request, time.time())
        resp.request.CopyFrom(request)
        return _header(resp, request, received)

    def GetEstopSystemStatus(self, request, context):
        received = now_timestamp()
        resp = estop_pb2.GetEstopSystemStatusResponse()
        resp.status.CopyFrom(self.robot.estop.system_status(time.time()))
        return _header(resp, request, received)


class PowerServicer(power_service_pb2_grpc.PowerServiceServicer):
    def __init__(self, robot: TwinRobot):
        self.robot = robot
        self._done: dict[int, int] = {}
        self._next = 1

    def PowerCommand(self, request, context):
        received = now_timestamp()
        robot = self.robot
        resp = power_pb2.PowerCommandResponse()
        resp.lease_use_result.CopyFrom(robot.leases.use(request.lease))
        if resp.lease_use_result.status != lease_pb2.LeaseUseResult.STATUS_OK:
            resp.status = power_pb2.STATUS_UNKNOWN
            return _header(resp, request, received)
        status, message = robot.power_command(request.request)
        resp.status, resp.power_command_id = status, self._next
        self._done[self._next] = status
        self._next += 1
        return _header(resp, request, received, message=message)

    def PowerCommandFeedback(self, request, context):
        received = now_timestamp()
        status = self._done.get(request.power_command_id, power_pb2.STATUS_INTERNAL_ERROR)
        return _header(power_pb2.PowerCommandFeedbackResponse(status=status), request, received)


# --------------------------------------------------------------------------- commands


class RobotCommandServicer(robot_command_service_pb2_grpc.RobotCommandServiceServicer):
    def __init__(self, robot: TwinRobot):
        self.robot = robot

    def RobotCommand(self, request, context):
        received = now_timestamp()
        robot = self.robot
        resp = robot_command_pb2.RobotCommandResponse()
        resp.lease_use_result.CopyFrom(robot.leases.use(request.lease))
        if resp.lease_use_result.status != lease_pb2.LeaseUseResult.STATUS_OK:
            return _header(resp, request, received)
        status, message, command_id = robot.command(request.command)
        resp.status, resp.message, resp.robot_command_id = status, message, command_id
        return _header(resp, request, received)

    def RobotCommandFeedback(self, request, context):
        received = now_timestamp()
        resp = robot_command_pb2.RobotCommandFeedbackResponse()
        found = self.robot.command_feedback(request.robot_command_id)
        if found is None:
            return _header(resp, request, received, code=INVALID, message="unknown command id")
        feedback, message = found
        resp.feedback.CopyFrom(feedback)
        return _header(resp, request, received, message=message)

    def ClearBehaviorFault(self, request, context):
        received = now_timestamp()
        resp = robot_command_pb2.ClearBehaviorFaultResponse(
            status=robot_command_pb2.ClearBehaviorFaultResponse.STATUS_CLEARED
        )
        return _header(resp, request, received)


class ManipulationApiServicer(manipulation_api_service_pb2_grpc.ManipulationApiServiceServicer):
    def __init__(self, robot: TwinRobot):
        self.robot = robot

    def ManipulationApi(self, request, context):
        received = now_timestamp()
        robot = self.robot
        resp = manipulation_api_pb2.ManipulationApiResponse()
        resp.lease_use_result.CopyFrom(robot.leases.use(request.lease))
        if resp.lease_use_result.status != lease_pb2.LeaseUseResult.STATUS_OK:
            return _header(resp, request, received)
        command_id, problem = robot.manipulate(request)
        if problem:
            return _header(resp, request, received, code=INVALID, message=problem)
        resp.manipulation_cmd_id = command_id
        return _header(resp, request, received)

    def ManipulationApiFeedback(self, request, context):
        received = now_timestamp()
        resp = manipulation_api_pb2.ManipulationApiFeedbackResponse(
            manipulation_cmd_id=request.manipulation_cmd_id
        )
        manip = self.robot.manipulation_feedback(request.manipulation_cmd_id)
        if manip is None:
            return _header(resp, request, received, code=INVALID, message="unknown command id")
        resp.current_state = manip.state
        if manip.point is not None:
            identity = frames.se3_from_matrix(frames.planar_matrix(0.0, 0.0, 0.0))
            point = frames.se3_from_matrix(
                frames.planar_matrix(manip.point[0], manip.point[1], 0.0, manip.point[2])
            )
            resp.transforms_snapshot_manipulation_data.CopyFrom(
                frames.snapshot(
                    {
                        frames.ODOM: ("", identity),
                        frames.GRASP_POINT: (frames.ODOM, point),
                    }
                )
            )
        return _header(resp, request, received, message=manip.message)

    def OverrideGrasp(self, request, context):
        received = now_timestamp()
        resp = manipulation_api_pb2.ApiGraspOverrideResponse()
        return _header(resp, request, received)
