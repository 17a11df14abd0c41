"""``SpotTwin``: a Spot-API gRPC server on 127.0.0.1, backed by the SpotWorld simulator.

The unmodified Spot SDK talks to it as to a robot: TLS with a certificate generated at
start, user-token authentication, directory, time sync, robot state, images, lease,
E-Stop, power, robot commands and the manipulation API. Faults can be injected from
tests (:mod:`hardware.twin.faults`)::

    with SpotTwin("hazard_barrels", env_kwargs={"renderer": "tiny"}) as twin:
        with SpotRobot.connect(**twin.connect_args(), vlm=twin.vlm()) as robot:
            robot.goto(Pose2D(3.0, 2.0, 0.0))
        verdict = twin.judge("the barrel", None)  # ground truth stays with the twin
"""

from __future__ import annotations

import secrets
import tempfile
import threading
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path

import grpc
from bosdyn.api import (
    auth_service_pb2_grpc,
    directory_pb2,
    directory_service_pb2_grpc,
    estop_service_pb2_grpc,
    image_service_pb2_grpc,
    lease_service_pb2_grpc,
    manipulation_api_service_pb2_grpc,
    power_service_pb2_grpc,
    robot_command_service_pb2_grpc,
    robot_id_service_pb2_grpc,
    robot_state_service_pb2_grpc,
    time_sync_service_pb2_grpc,
)

from agents.robot import Frame, Point3
from agents.vlm import VLMAnswer, VLMBackend
from hardware.twin import services as svc
from hardware.twin.certs import generate_certificates
from hardware.twin.faults import Faults
from hardware.twin.twin_robot import TwinRobot

API_AUTHORITY = "api.spot.robot"  # covered by the certificate's *.spot.robot


@dataclass(frozen=True)
class TwinConfig:
    host: str = "127.0.0.1"  # the twin is a local fixture: never bound to other interfaces
    port: int = 0  # 0: any free port (see SpotTwin.port)
    username: str = "cluetwin"
    password: str | None = None  # None: a fresh random password per twin (SpotTwin.password)
    time_scale: float = 1.0  # simulated seconds per wall second while walking
    corner_dwell_s: float = 0.5  # longest pause at an unobserved path corner, wall seconds
    max_workers: int = 16  # gRPC worker threads
    serial_number: str = "cluetwin-00001"
    nickname: str = "cluetwin"


class TwinVLM(VLMBackend):
    """The simulator's VLM for frames taken through the twin. **Twin-only**: it reads the
    twin's world in-process (which facts are visible now), so a client uses it only when
    the twin runs in the same process (``cluetwin run --robot twin``)."""

    def __init__(self, robot: TwinRobot):
        self.robot = robot

    def answer(
        self, frame: Frame, question: str, target_px: tuple[int, int] | None = None
    ) -> VLMAnswer:
        reply = self.robot.sim(lambda: self.robot.env.vlm.answer(frame, question, target_px))
        return VLMAnswer(reply.text, reply.prompt_tokens, reply.completion_tokens)


class SpotTwin:
    """A twin of one Spot in one scenario. ``start()`` (or ``with``) serves it."""

    def __init__(
        self,
        scenario,
        *,
        seed: int = 0,
        env_kwargs: dict | None = None,
        config: TwinConfig = TwinConfig(),
        cert_dir: str | Path | None = None,
    ):
        self.config = config
        self.password = config.password or secrets.token_urlsafe(16)
        self.credentials = svc.Credentials(config.username, self.password)
        self._tmp = None
        if cert_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="cluetwin-certs-")
            cert_dir = self._tmp.name
        self.certs = generate_certificates(Path(cert_dir))
        self.robot = TwinRobot(
            scenario,
            seed=seed,
            env_kwargs=env_kwargs,
            time_scale=config.time_scale,
            corner_dwell_s=config.corner_dwell_s,
        )
        self.faults = Faults(self)
        self.port = config.port
        self._stopping = threading.Event()
        self._server: grpc.Server | None = None
        self._server_lock = threading.Lock()

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> SpotTwin:
        self._start_server()
        return self

    def stop(self) -> None:
        """Stop serving and free the simulator. Safe to call twice."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        self._stop_server()
        self.robot.close()
        if self._tmp is not None:
            self._tmp.cleanup()

    def __enter__(self) -> SpotTwin:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _start_server(self) -> None:
        with self._server_lock:
            if self._server is not None:
                return
            server = grpc.server(
                futures.ThreadPoolExecutor(
                    max_workers=self.config.max_workers, thread_name_prefix="twin-rpc"
                ),
                interceptors=[svc.AuthInterceptor(self.credentials)],
            )
            for add, servicer in self._servicers():
                add(servicer, server)
            creds = grpc.ssl_server_credentials(
                [(self.certs.server_key_pem, self.certs.server_chain_pem)]
            )
            port = server.add_secure_port(f"{self.config.host}:{self.port}", creds)
            if port == 0:
                raise OSError(f"the twin cannot listen on {self.config.host}:{self.port}")
            self.port = port
            server.start()
            self._server = server

    def _stop_server(self) -> None:
        with self._server_lock:
            if self._server is not None:
                self._server.stop(grace=None).wait(5.0)
                self._server = None

    def _servicers(self):
        robot, identity = self.robot, svc.Identity(self.config.serial_number, self.config.nickname)
        pb = {
            "robot-id": (robot_id_service_pb2_grpc, "RobotIdService", "id.spot.robot"),
            "auth": (auth_service_pb2_grpc, "AuthService", "auth.spot.robot"),
            "directory": (directory_service_pb2_grpc, "DirectoryService", API_AUTHORITY),
            "time-sync": (time_sync_service_pb2_grpc, "TimeSyncService", API_AUTHORITY),
            "robot-state": (robot_state_service_pb2_grpc, "RobotStateService", API_AUTHORITY),
            "image": (image_service_pb2_grpc, "ImageService", API_AUTHORITY),
            "lease": (lease_service_pb2_grpc, "LeaseService", API_AUTHORITY),
            "estop": (estop_service_pb2_grpc, "EstopService", API_AUTHORITY),
            "power": (power_service_pb2_grpc, "PowerService", API_AUTHORITY),
            "robot-command": (robot_command_service_pb2_grpc, "RobotCommandService", API_AUTHORITY),
            "manipulation": (
                manipulation_api_service_pb2_grpc,
                "ManipulationApiService",
                API_AUTHORITY,
            ),
        }
        entries = [
            directory_pb2.ServiceEntry(
                name=name,
                type=f"bosdyn.api.{service}",
                authority=authority,
                user_token_required=name not in ("robot-id", "auth"),
            )
            for name, (_, service, authority) in pb.items()
        ]
        servicers = {
            "robot-id": svc.RobotIdServicer(identity),
            "auth": svc.AuthServicer(self.credentials),
            "directory": svc.DirectoryServicer(entries),
            "time-sync": svc.TimeSyncServicer(),
            "robot-state": svc.RobotStateServicer(robot),
            "image": svc.ImageServicer(robot, lambda: self.faults.image_delay_s, self._stopping),
            "lease": svc.LeaseServicer(robot, self.credentials),
            "estop": svc.EstopServicer(robot),
            "power": svc.PowerServicer(robot),
            "robot-command": svc.RobotCommandServicer(robot),
            "manipulation": svc.ManipulationApiServicer(robot),
        }
        for name, (module, service, _) in pb.items():
            yield getattr(module, f"add_{service}Servicer_to_server"), servicers[name]

    # ------------------------------------------------------------------ for clients and tests
    @property
    def address(self) -> str:
        return f"{self.config.host}:{self.port}"

    @property
    def serving(self) -> bool:
        return self._server is not None

    def connect_args(self) -> dict:
        """Keyword arguments of ``SpotRobot.connect`` for this twin."""
        return {
            "hostname": self.config.host,
            "port": self.port,
            "cert_path": str(self.certs.ca_pem_path),
            "username": self.config.username,
            "password": self.password,
        }

    def load(self, scenario=None, seed: int = 0) -> None:
        """A fresh world (optionally another scenario), faults cleared, the robot sitting."""
        self.faults.clear()
        self.robot.load(scenario, seed)

    def vlm(self) -> TwinVLM:
        return TwinVLM(self.robot)

    def judge(self, text: str, point: Point3 | None) -> dict:
        """The simulator's verdict on an answer (reward per the CLUE paper, Eq. 1)."""
        return self.robot.sim(self.robot.sim_robot.submit_answer, text, point)
