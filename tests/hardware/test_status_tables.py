"""The two mapping tables: behaviour failures <-> Spot statuses, SDK exceptions -> errors."""

from __future__ import annotations

import inspect
import re

import pytest

from agents import robot as iface
from envs import spot_world_env
from hardware import spot_robot, spot_status

pytestmark = pytest.mark.spot


def _env_failures() -> set[tuple[str, str]]:
    """(behaviour, error name) of every refusal the simulator can report."""
    src = inspect.getsource(spot_world_env)
    return set(re.findall(r'_fail\(\s*"(\w+)",\s*"(\w+)"', src))


def test_every_simulator_refusal_has_a_spot_status_or_is_a_checked_precondition():
    failures = _env_failures()
    assert {("goto", "GoalUnreachable"), ("grasp", "TargetOccluded"), ("place", "HandEmpty")} <= (
        failures
    )
    for behavior, error in failures:
        rows = [
            r
            for r in spot_status.BEHAVIOR_FAILURES
            if r.behavior == behavior and r.error.__name__ == error
        ]
        assert len(rows) == 1, (behavior, error)


@pytest.mark.parametrize(
    "row", [r for r in spot_status.BEHAVIOR_FAILURES if r.code is not None], ids=str
)
def test_each_status_row_reads_back_both_ways(row):
    assert spot_status.status_for(row.behavior, row.error.__name__) is row  # twin: error -> status
    assert spot_status.failure_for(row.behavior, row.code, row.detail) is row  # client: back
    assert issubclass(row.error, iface.PersistentRobotError)
    assert row.description and row.status_name.startswith(("FINAL_GOAL", "STATUS", "MANIP"))


def test_success_statuses_are_not_failures():
    assert spot_status.failure_for("goto", spot_status.SE2.FINAL_GOAL_STATUS_ACHIEVABLE) is None
    assert spot_status.failure_for("inspect", spot_status.GAZE.STATUS_TRAJECTORY_COMPLETE) is None
    assert spot_status.failure_for("grasp", spot_status.MANIP.MANIP_STATE_GRASP_SUCCEEDED) is None
    assert (
        spot_status.failure_for("place", spot_status.CARTESIAN.STATUS_TRAJECTORY_COMPLETE) is None
    )


def test_preconditions_are_the_hand_checks():
    pre = {(r.behavior, r.error) for r in spot_status.BEHAVIOR_FAILURES if r.code is None}
    assert pre == {("grasp", iface.HandOccupied), ("place", iface.HandEmpty)}


def test_every_command_end_status_maps_to_a_typed_error():
    status = spot_status.COMMAND
    ends = {v.number for v in status.Status.DESCRIPTOR.values} - {
        status.STATUS_UNKNOWN,
        status.STATUS_PROCESSING,
    }
    assert ends == set(spot_status.COMMAND_STATUS_ERRORS)
    assert spot_status.COMMAND_STATUS_ERRORS[status.STATUS_ROBOT_FROZEN] is iface.EStopped
    assert spot_status.COMMAND_STATUS_ERRORS[status.STATUS_COMMAND_TIMED_OUT] is iface.RobotTimeout


def test_rpc_error_table_keeps_retryable_and_persistent_apart():
    from bosdyn.client import exceptions as sdk

    retryable_sdk = (sdk.RetryableRpcError, sdk.TimedOutError)
    for sdk_cls, err in spot_robot.RPC_ERRORS:
        assert issubclass(err, iface.RobotError)
        if issubclass(sdk_cls, retryable_sdk) or "TimedOut" in sdk_cls.__name__:
            assert issubclass(err, iface.RetryableRobotError), sdk_cls
        else:
            assert issubclass(err, iface.PersistentRobotError), sdk_cls


def test_rpc_error_table_has_no_shadowed_rows():
    """First match wins: a row after a more general one would never be used."""
    rows = [cls for cls, _ in spot_robot.RPC_ERRORS]
    for i, general in enumerate(rows):
        for specific in rows[i + 1 :]:
            assert not issubclass(specific, general), (specific, general)


def test_sdk_errors_translate_with_from_none():
    from bosdyn.client import exceptions as sdk

    with pytest.raises(iface.ConnectionLost) as info:
        with spot_robot._translated(None):
            raise sdk.RetryableUnavailableError(None, "link down")
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert "link down" in str(info.value)
