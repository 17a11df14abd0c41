"""The twin's E-Stop system: endpoints, challenge/response check-ins, a hardware button.

As on Spot, motors may run only while every required endpoint checks in at
``ESTOP_LEVEL_NONE`` within its timeout and no button is pressed. With no endpoint
registered the robot counts as stopped, so a client must set up its E-Stop first.
"""

from __future__ import annotations

import ctypes
import secrets
import threading
from dataclasses import dataclass

from bosdyn.api import estop_pb2, robot_state_pb2
from bosdyn.util import seconds_to_duration, seconds_to_timestamp

REQUIRED_ROLE = "PDB_rooted"
CUT = estop_pb2.ESTOP_LEVEL_CUT
NONE = estop_pb2.ESTOP_LEVEL_NONE
HARDWARE_NAME = "hardware_estop"  # the button on the robot (the twin's "press" fault)


def _response_to(challenge: int) -> int:
    return ctypes.c_ulonglong(~challenge).value


@dataclass
class _Endpoint:
    proto: estop_pb2.EstopEndpoint
    level: int = CUT
    last_valid_s: float | None = None
    challenge: int | None = None

    def effective_level(self, now_s: float) -> int:
        timeout_s = self.proto.timeout.seconds + self.proto.timeout.nanos * 1e-9
        if self.last_valid_s is None or now_s - self.last_valid_s > timeout_s:
            return CUT
        return self.level


class EstopSystem:
    """Configuration, endpoints and the resulting stop level (lower value = stronger stop)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._config_counter = 0
        self._config = self._make_config([estop_pb2.EstopEndpoint(role=REQUIRED_ROLE)])
        self._endpoints: dict[str, _Endpoint] = {}
        self.button_pressed = False

    def _make_config(self, endpoints) -> estop_pb2.EstopConfig:
        self._config_counter += 1
        return estop_pb2.EstopConfig(endpoints=endpoints, unique_id=str(self._config_counter))

    @property
    def config(self) -> estop_pb2.EstopConfig:
        with self._lock:
            return self._config

    def set_config(
        self, config: estop_pb2.EstopConfig, target_config_id: str, motors_on: bool
    ) -> estop_pb2.SetEstopConfigResponse:
        resp = estop_pb2.SetEstopConfigResponse()
        with self._lock:
            if target_config_id != self._config.unique_id:
                resp.status = resp.STATUS_INVALID_ID
            elif motors_on:
                resp.status = resp.STATUS_MOTORS_ON
            else:
                endpoints = []
                for requested in config.endpoints:
                    e = estop_pb2.EstopEndpoint()
                    e.CopyFrom(requested)
                    e.unique_id = secrets.token_hex(6)
                    endpoints.append(e)
                self._config = self._make_config(endpoints)
                self._endpoints = {}
                resp.status = resp.STATUS_SUCCESS
            resp.active_config.CopyFrom(self._config)
        return resp

    def register(
        self,
        target_config_id: str,
        target: estop_pb2.EstopEndpoint,
        new: estop_pb2.EstopEndpoint,
    ) -> estop_pb2.RegisterEstopEndpointResponse:
        resp = estop_pb2.RegisterEstopEndpointResponse()
        with self._lock:
            slot = next(
                (
                    e
                    for e in self._config.endpoints
                    if e.role == target.role
                    and (not target.unique_id or e.unique_id == target.unique_id)
                ),
                None,
            )
            if target_config_id != self._config.unique_id:
                resp.status = resp.STATUS_CONFIG_MISMATCH
            elif slot is None:
                resp.status = resp.STATUS_ENDPOINT_MISMATCH
            elif new.role != slot.role or new.timeout.ToNanoseconds() <= 0:
                resp.status = resp.STATUS_INVALID_ENDPOINT
            else:
                endpoint = estop_pb2.EstopEndpoint()
                endpoint.CopyFrom(new)
                endpoint.unique_id = slot.unique_id or secrets.token_hex(6)
                slot.CopyFrom(endpoint)
                self._endpoints[endpoint.unique_id] = _Endpoint(endpoint)
                resp.new_endpoint.CopyFrom(endpoint)
                resp.status = resp.STATUS_SUCCESS
        return resp

    def deregister(
        self, target_config_id: str, target: estop_pb2.EstopEndpoint, motors_on: bool
    ) -> int:
        status = estop_pb2.DeregisterEstopEndpointResponse
        with self._lock:
            if target_config_id != self._config.unique_id:
                return status.STATUS_CONFIG_MISMATCH
            if target.unique_id not in self._endpoints:
                return status.STATUS_ENDPOINT_MISMATCH
            if motors_on:
                return status.STATUS_MOTORS_ON
            del self._endpoints[target.unique_id]
            return status.STATUS_SUCCESS

    def check_in(
        self, request: estop_pb2.EstopCheckInRequest, now_s: float
    ) -> estop_pb2.EstopCheckInResponse:
        resp = estop_pb2.EstopCheckInResponse()
        with self._lock:
            ep = self._endpoints.get(request.endpoint.unique_id)
            if ep is None:
                resp.status = resp.STATUS_ENDPOINT_UNKNOWN
                return resp
            if ep.challenge is not None and request.response == _response_to(ep.challenge):
                ep.level, ep.last_valid_s = request.stop_level, now_s
                resp.status = resp.STATUS_OK
            else:
                resp.status = resp.STATUS_INCORRECT_CHALLENGE_RESPONSE
            ep.challenge = secrets.randbits(63)
            resp.challenge = ep.challenge
        return resp

    def stop_level(self, now_s: float) -> int:
        """The strongest stop in force: ``ESTOP_LEVEL_NONE`` only if motors may run."""
        with self._lock:
            if self.button_pressed or not self._endpoints:
                return CUT
            return min(ep.effective_level(now_s) for ep in self._endpoints.values())

    def system_status(self, now_s: float) -> estop_pb2.EstopSystemStatus:
        with self._lock:
            status = estop_pb2.EstopSystemStatus()
            for ep in self._endpoints.values():
                e = status.endpoints.add()
                e.endpoint.CopyFrom(ep.proto)
                e.stop_level = ep.effective_level(now_s)
                if ep.last_valid_s is not None:
                    e.time_since_valid_response.CopyFrom(
                        seconds_to_duration(max(0.0, now_s - ep.last_valid_s))
                    )
            button = self.button_pressed
        status.stop_level = self.stop_level(now_s)
        if button:
            status.stop_level_details = "the hardware E-Stop is pressed"
        return status

    def states(self, now_s: float) -> list[robot_state_pb2.EStopState]:
        """``RobotState.estop_states``: the button and every software endpoint."""
        stamp = seconds_to_timestamp(now_s)
        out = [
            robot_state_pb2.EStopState(
                timestamp=stamp,
                name=HARDWARE_NAME,
                type=robot_state_pb2.EStopState.TYPE_HARDWARE,
                state=(
                    robot_state_pb2.EStopState.STATE_ESTOPPED
                    if self.button_pressed
                    else robot_state_pb2.EStopState.STATE_NOT_ESTOPPED
                ),
            )
        ]
        with self._lock:
            for ep in self._endpoints.values():
                stopped = ep.effective_level(now_s) != NONE
                out.append(
                    robot_state_pb2.EStopState(
                        timestamp=stamp,
                        name=ep.proto.name,
                        type=robot_state_pb2.EStopState.TYPE_SOFTWARE,
                        state=(
                            robot_state_pb2.EStopState.STATE_ESTOPPED
                            if stopped
                            else robot_state_pb2.EStopState.STATE_NOT_ESTOPPED
                        ),
                    )
                )
        return out
