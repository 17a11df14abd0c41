"""Injected faults: each gives a typed interface error, leaves the robot stopped, and an
episode that meets it still ends with an intact log."""

from __future__ import annotations

import dataclasses
import functools
import time

import pytest

from agents import robot as iface
from agents.episode_log import read_log
from agents.robot import Pose2D
from hardware.sessions import twin_session
from hardware.twin import Fault, SpotTwin
from scenarios.loader import find_scenario, load_scenario
from scenarios.runner import run_episode
from tests.contract.robot_contract import contract_scenario
from tests.hardware.conftest import CLIENT, FAST_TWIN

pytestmark = pytest.mark.spot

FAR_GOAL = Pose2D(6.5, 4.0, 0.0)  # a walk of several metres across the contract arena
EXPECTED = {
    Fault.DROPPED_CONNECTION: iface.ConnectionLost,
    Fault.LEASE_REVOKED: iface.LeaseLost,
    Fault.ESTOP_PRESSED: iface.EStopped,
    Fault.STALLED_WALK: iface.RobotTimeout,
}


@pytest.fixture
def twin(spot_twin):
    spot_twin.load(contract_scenario())
    yield spot_twin
    spot_twin.faults.clear()


def assert_stopped(twin: SpotTwin) -> tuple[float, float, float]:
    """Not moving, and still in the same place a moment later."""
    assert not twin.robot.moving
    before = twin.robot.pose
    time.sleep(0.1)
    assert twin.robot.pose == before and not twin.robot.moving
    return before


@pytest.mark.parametrize("fault", list(EXPECTED), ids=str)
def test_a_fault_mid_walk_raises_its_typed_error_and_the_robot_stops(twin, connect, fault):
    robot = connect(twin)
    start = robot.get_pose()
    twin.faults.arm(fault)
    with pytest.raises(EXPECTED[fault]) as info:
        robot.goto(FAR_GOAL, timeout_s=1.0)
    error = info.value
    assert str(error)
    retryable = fault in (Fault.DROPPED_CONNECTION, Fault.STALLED_WALK)
    assert isinstance(error, iface.RetryableRobotError if retryable else iface.PersistentRobotError)
    where = assert_stopped(twin)
    assert abs(where[0] - FAR_GOAL.x_m) > 1.0  # it did not get there
    assert start.distance_to(where[0], where[1]) < 1.0  # it stopped near where the fault struck


def test_persistent_faults_keep_failing_until_cleared(twin, connect):
    robot = connect(twin)
    twin.faults.press_estop()
    for _ in range(2):
        with pytest.raises(iface.EStopped):
            robot.goto(FAR_GOAL, timeout_s=1.0)
    assert not twin.robot.motors_on


def test_lease_taken_by_another_client_is_lost_for_good(twin, connect):
    robot = connect(twin)
    twin.faults.revoke_lease()
    for _ in range(2):
        with pytest.raises(iface.LeaseLost):
            robot.goto(FAR_GOAL, timeout_s=1.0)
    assert twin.robot.leases.owner.client_name == "another-operator"


def test_a_dropped_connection_is_retryable_once_the_link_is_back(twin, connect):
    robot = connect(twin)
    twin.faults.drop_connection()
    with pytest.raises(iface.ConnectionLost):
        robot.get_pose()
    robot.stop()  # never raises, even with no link
    twin.faults.restore_connection()
    deadline = time.monotonic() + 10.0
    while True:  # gRPC reconnects with back-off
        try:
            pose = robot.get_pose()
            break
        except iface.ConnectionLost:
            assert time.monotonic() < deadline
            time.sleep(0.2)
    assert pose.distance_to(1.5, 3.0) < 1e-9


def test_slow_images_time_out_and_the_robot_stays_put(twin, connect):
    robot = connect(twin)
    twin.faults.slow_images(2.0)
    t0 = time.monotonic()
    with pytest.raises(iface.RobotTimeout):
        robot.capture("body", timeout_s=0.3)
    assert time.monotonic() - t0 < 1.5
    assert_stopped(twin)


# --------------------------------------------------------------------------- episodes


@pytest.fixture(scope="module")
def hazard_twin(small_env_kwargs):
    scenario = load_scenario(find_scenario("hazard_barrels"))
    with SpotTwin(scenario, env_kwargs=small_env_kwargs, config=FAST_TWIN) as twin:
        yield twin


EPISODE_FAULTS = {
    # fault -> (how to inject, the error the failed action logs)
    Fault.DROPPED_CONNECTION: ("arm", "ConnectionLost"),
    Fault.LEASE_REVOKED: ("arm", "LeaseLost"),
    Fault.ESTOP_PRESSED: ("arm", "EStopped"),
    Fault.STALLED_WALK: ("arm", "RobotTimeout"),
    Fault.SLOW_IMAGES: ("apply", "RobotTimeout"),  # the inspect's hand images time out
}


@pytest.mark.parametrize("fault", list(EPISODE_FAULTS), ids=str)
def test_an_episode_meeting_a_fault_ends_with_an_intact_log(hazard_twin, tmp_path, fault):
    scenario = hazard_twin.robot.env.scenario
    hazard_twin.load(scenario)
    how, error_name = EPISODE_FAULTS[fault]
    if how == "arm":
        hazard_twin.faults.arm(fault)
    else:
        hazard_twin.faults.apply(fault, delay_s=2.0)
    client = dataclasses.replace(CLIENT, image_timeout_s=0.3, behavior_timeout_cap_s=2.0)
    opener = functools.partial(twin_session, twin=hazard_twin, client=client)
    try:
        result = run_episode(
            scenario,
            "oracle",
            tmp_path,
            robot=lambda scn: opener(scn),
        )
        assert_stopped(hazard_twin)
    finally:
        hazard_twin.faults.clear()

    records = read_log(result.log)
    kinds = [r["type"] for r in records]
    assert kinds[0] == "episode" and kinds[-1] == "result"
    assert records[-1]["scenario"] == "hazard_barrels" and result.error is None
    failed = [r for r in records if r["type"] == "action" and not r["ok"]]
    assert failed and failed[0]["observation"].startswith(error_name), failed
    with open(result.log, encoding="utf-8") as fh:  # every line is whole JSON
        assert len(fh.read().splitlines()) == len(records)
