"""The twin through the unmodified Spot SDK: TLS, auth, E-Stop first, leases, time sync,
images identical to the simulator's renders, a safe close, and ``cluetwin twin``."""

from __future__ import annotations

import dataclasses
import math
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from agents import robot as iface
from agents.robot import Point3, Pose2D
from hardware.spot_robot import AuthenticationRefused, SpotConfigError, SpotRobot
from tests.contract.robot_contract import contract_scenario
from tests.hardware.conftest import CLIENT

pytestmark = pytest.mark.spot


def raw_robot(twin, authenticate: bool = True):
    """A bare SDK robot (no SpotRobot) for protocol-level checks."""
    from bosdyn.client import create_standard_sdk

    sdk = create_standard_sdk("twin-protocol-test", cert_resource_glob=str(twin.certs.ca_pem_path))
    robot = sdk.create_robot(twin.config.host)
    robot.update_secure_channel_port(twin.port)
    if authenticate:
        robot.authenticate(twin.config.username, twin.password, timeout=5)
    return sdk, robot


@pytest.fixture(autouse=True)
def fresh(spot_twin):
    spot_twin.load(contract_scenario())


def test_a_wrong_password_is_refused(spot_twin):
    args = {**spot_twin.connect_args(), "password": "not-the-password"}
    with pytest.raises(AuthenticationRefused) as info:
        SpotRobot.connect(**args, config=CLIENT)
    assert isinstance(info.value, iface.PersistentRobotError)
    assert "InvalidLogin" in str(info.value)
    assert spot_twin.robot.leases.owner is None and not spot_twin.robot.motors_on


def test_missing_credentials_say_which_variables_to_set(spot_twin, monkeypatch):
    monkeypatch.delenv("BOSDYN_CLIENT_USERNAME", raising=False)
    monkeypatch.delenv("BOSDYN_CLIENT_PASSWORD", raising=False)
    args = {**spot_twin.connect_args(), "username": None, "password": None}
    with pytest.raises(SpotConfigError, match="BOSDYN_CLIENT_USERNAME"):
        SpotRobot.connect(**args)


def test_credentials_come_from_the_environment(spot_twin, monkeypatch, connect):
    monkeypatch.setenv("BOSDYN_CLIENT_USERNAME", spot_twin.config.username)
    monkeypatch.setenv("BOSDYN_CLIENT_PASSWORD", spot_twin.password)
    robot = connect(spot_twin, username=None, password=None)
    assert robot.get_pose().distance_to(1.5, 3.0) < 1e-9


def test_rpcs_without_a_token_are_refused_but_robot_id_is_open(spot_twin):
    from bosdyn.client.exceptions import UnauthenticatedError
    from bosdyn.client.robot_state import RobotStateClient

    sdk, robot = raw_robot(spot_twin, authenticate=False)
    assert robot.get_id().serial_number == spot_twin.config.serial_number
    state = robot.ensure_client(
        RobotStateClient.default_service_name, channel=robot.ensure_secure_channel("api.spot.robot")
    )
    with pytest.raises(UnauthenticatedError):
        state.get_robot_state(timeout=5)
    sdk.clear_robots()


@pytest.mark.filterwarnings("ignore:read_binary is deprecated:DeprecationWarning")
def test_tls_needs_the_twins_ca(spot_twin):
    """With Boston Dynamics' own CA (the SDK default) the handshake fails."""
    args = {**spot_twin.connect_args(), "cert_path": None}
    t0 = time.monotonic()
    with pytest.raises(iface.RobotError):
        SpotRobot.connect(**args, config=CLIENT)
    assert time.monotonic() - t0 < 10.0


def test_estop_comes_first_power_is_refused_without_an_endpoint(spot_twin):
    from bosdyn.client.lease import LeaseClient
    from bosdyn.client.power import EstoppedError

    sdk, robot = raw_robot(spot_twin)
    robot.time_sync.wait_for_sync(timeout_sec=5)
    lease_client = robot.ensure_client(LeaseClient.default_service_name)
    lease = lease_client.acquire(timeout=5)
    with pytest.raises(EstoppedError):
        robot.power_on(timeout_sec=5, timeout=5)
    lease_client.return_lease(lease, timeout=5)
    sdk.clear_robots()


def test_time_sync_is_established_with_a_small_skew(spot_twin):
    sdk, robot = raw_robot(spot_twin)
    robot.time_sync.wait_for_sync(timeout_sec=5)
    assert robot.time_sync.has_established_time_sync
    skew = robot.time_sync.get_robot_clock_skew()
    assert abs(skew.seconds + skew.nanos * 1e-9) < 0.05  # the same machine's clock
    sdk.clear_robots()


def test_the_directory_lists_every_served_service(spot_twin):
    sdk, robot = raw_robot(spot_twin)
    names = {e.name for e in robot.list_services()}
    assert names == {
        "robot-id", "auth", "directory", "time-sync", "robot-state", "image", "lease",
        "estop", "power", "robot-command", "manipulation",
    }  # fmt: skip
    sdk.clear_robots()


def test_a_second_client_cannot_take_a_held_lease_by_acquiring(spot_twin, connect):
    connect(spot_twin)
    with pytest.raises((iface.LeaseLost, iface.PersistentRobotError)):
        SpotRobot.connect(**spot_twin.connect_args(), config=CLIENT)


@pytest.mark.parametrize("camera", ["body", "left", "back", "hand"])
def test_frames_through_the_sdk_are_the_simulators_renders(spot_twin, connect, camera):
    robot = connect(spot_twin)
    frame = robot.capture(camera)
    env = spot_twin.robot.env
    truth = spot_twin.robot.sim(env.capture, camera)
    np.testing.assert_array_equal(frame.rgb, truth.rgb)
    np.testing.assert_array_equal(frame.segmentation, truth.segmentation)
    assert frame.segment_phrases == dict(truth.segment_phrases)
    assert frame.intrinsics == truth.intrinsics
    np.testing.assert_allclose(frame.odom_T_camera, truth.odom_T_camera, atol=1e-12)
    hit = truth.depth_m > 0
    np.testing.assert_array_equal(frame.depth_m > 0, hit)
    assert np.abs(frame.depth_m[hit] - truth.depth_m[hit]).max() <= 0.0005 + 1e-6  # mm pixels


def test_an_inspect_frame_is_the_one_the_simulator_saw(spot_twin, connect):
    robot = connect(spot_twin)
    robot.goto(Pose2D(4.4, 1.5, 0.0))
    result = robot.inspect(Point3(5.5, 1.5, 0.45), "What is this?")
    assert "red backpack" in result.answer
    target = np.array([5.5, 1.5, 0.45], dtype=np.float32).astype(float)
    truth = spot_twin.robot.sim(spot_twin.robot.env.capture, "hand", target)
    np.testing.assert_array_equal(result.frame.segmentation, truth.segmentation)
    assert spot_twin.robot.arm == "stow"  # the arm stowed after looking


def test_close_leaves_the_robot_safe(spot_twin):
    robot = SpotRobot.connect(**spot_twin.connect_args(), vlm=spot_twin.vlm(), config=CLIENT)
    robot.goto(Pose2D(4.4, 1.5, 0.0))
    robot.grasp(Point3(5.5, 1.5, 0.45))
    assert spot_twin.robot.motors_on and spot_twin.robot.standing
    robot.close()
    twin = spot_twin.robot
    assert not twin.moving and not twin.standing and not twin.motors_on
    assert twin.arm == "carry" and twin.holding  # stowing with a held object carries it
    assert twin.leases.owner is None  # the lease came back
    robot.close()  # twice is fine


def test_cluetwin_twin_serves_until_interrupted(tmp_path):
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"}
    env.pop("BOSDYN_CLIENT_PASSWORD", None)
    env.pop("BOSDYN_CLIENT_USERNAME", None)
    cmd = [sys.executable, "-m", "scenarios.cli", "twin", "jansport_bag", "--renderer", "tiny"]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    try:
        info: dict[str, str] = {}
        deadline = time.monotonic() + 60
        while "password" not in info and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            if m := re.search(r"listening on ([\d.]+):(\d+)", line):
                info["host"], info["port"] = m.group(1), m.group(2)
            for key in ("CA certificate", "username", "password"):
                if line.startswith(key + ": "):
                    info[key] = line.split(": ", 1)[1].strip()
        assert {"host", "port", "CA certificate", "username", "password"} <= set(info), info
        with SpotRobot.connect(
            info["host"],
            port=int(info["port"]),
            cert_path=info["CA certificate"],
            username=info["username"],
            password=info["password"],
            config=CLIENT,
        ) as robot:
            assert robot.get_pose().distance_to(1.0, 1.2) < 1e-6  # jansport_bag's start
        proc.send_signal(signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)  # faulthandler prints every thread's stack
            out, _ = proc.communicate(timeout=30)
            pytest.fail(f"the twin did not stop on SIGINT within 30 s; its threads:\n{out}")
        assert proc.returncode == 0 and "twin stopped" in out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# --------------------------------------------------------------------------- real-robot modes


class OperatorEstop:
    """Another client's E-Stop (the tablet or estop_gui on a real robot)."""

    def __init__(self, twin):
        from bosdyn.client.estop import EstopClient, EstopEndpoint, EstopKeepAlive

        self.sdk, robot = raw_robot(twin)
        client = robot.ensure_client(EstopClient.default_service_name)
        self.endpoint = EstopEndpoint(client, "operator", estop_timeout=9.0)
        self.endpoint.force_simple_setup()
        self.keepalive = EstopKeepAlive(self.endpoint)

    def press(self) -> None:
        self.keepalive.stop()

    def close(self) -> None:
        self.keepalive.shutdown()
        self.sdk.clear_robots()


def test_external_estop_mode_refuses_to_power_on_without_the_operators_estop(spot_twin):
    config = dataclasses.replace(CLIENT, estop="external")
    with pytest.raises(iface.EStopped, match="operator"):
        SpotRobot.connect(**spot_twin.connect_args(), config=config)
    assert not spot_twin.robot.motors_on


def test_external_estop_mode_runs_under_the_operators_estop_and_stops_with_it(spot_twin, connect):
    operator = OperatorEstop(spot_twin)
    try:
        robot = connect(spot_twin, config=dataclasses.replace(CLIENT, estop="external"))
        robot.goto(Pose2D(2.6, 2.2, 0.0))
        operator.press()
        with pytest.raises(iface.EStopped):
            robot.goto(Pose2D(4.4, 1.5, 0.0))
        assert not spot_twin.robot.motors_on and not spot_twin.robot.moving
    finally:
        operator.close()


def test_episode_start_anchors_the_episode_frame_anywhere_in_odom(spot_twin, connect):
    """A real Spot's odom starts where it booted: declaring the start pose maps the
    scenario's frame onto it. Here the twin's odom is the arena's frame, so the episode
    frame is the arena turned by 90 deg and moved by (10, 20) m."""
    start = Pose2D(10.0, 20.0, math.pi / 2)  # what the robot, at (1.5, 3.0, 0) in odom, is told
    robot = connect(spot_twin, config=dataclasses.replace(CLIENT, episode_start=start))

    def episode(x: float, y: float) -> tuple[float, float]:  # arena (= odom) -> episode
        dx, dy = x - 1.5, y - 3.0
        return 10.0 - dy, 20.0 + dx

    here = robot.get_pose()
    assert here.distance_to(10.0, 20.0) < 1e-9 and here.yaw_rad == pytest.approx(math.pi / 2)
    stand = episode(4.4, 1.5)
    result = robot.goto(Pose2D(*stand, math.pi / 2))  # facing arena +x, toward the bag
    assert result.pose.distance_to(*stand) < 1e-6
    x, y, yaw = spot_twin.robot.pose
    assert math.hypot(x - 4.4, y - 1.5) < 1e-6 and abs(yaw) < 1e-6
    frame = robot.capture("body")
    ahead = frame.odom_T_camera[:3, 2]  # optical axis, in the episode frame
    assert ahead[1] > 0.9 and math.dist(frame.odom_T_camera[:2, 3], stand) < 1.0
    bag = episode(5.5, 1.5)
    grasped = robot.grasp(Point3(*bag, 0.45))
    assert math.dist((grasped.position.x_m, grasped.position.y_m), bag) < 0.1
    drop = episode(4.4, 2.8)
    robot.place(Point3(*drop, 0.0))
    bag_state = spot_twin.robot.env.world.objects["bag_1"]
    assert math.hypot(bag_state.x - 4.4, bag_state.y - 2.8) < 1e-5
