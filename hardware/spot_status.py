"""How behaviour failures travel through the Spot API: one table, read in both directions.

The simulator reports an infeasible behaviour by the name of an interface error
(``GoalUnreachable``, ``OutOfReach`` ...). A real Spot reports it as a status in a
command's feedback. :data:`BEHAVIOR_FAILURES` ties the two together; the twin reads it
from error to status (:func:`status_for`) to answer, ``SpotRobot`` from status to error
(:func:`failure_for`) to raise, so the two sides cannot drift apart.

=========  ===================  ===========================================================
behaviour  interface error      Spot API feedback
=========  ===================  ===========================================================
goto       GoalUnreachable      SE2TrajectoryCommand: STATUS_STOPPED, FINAL_GOAL_STATUS_BLOCKED
inspect    OutOfReach           GazeCommand: STATUS_TOOL_TRAJECTORY_STALLED, not gazing_at_target
inspect    TargetOccluded       GazeCommand: STATUS_TOOL_TRAJECTORY_STALLED, gazing_at_target
grasp      NothingThere         ManipulationFeedbackState: MANIP_STATE_GRASP_FAILED_TO_RAYCAST_INTO_MAP
grasp      OutOfReach           ManipulationFeedbackState: MANIP_STATE_GRASP_PLANNING_NO_SOLUTION
grasp      TargetOccluded       ManipulationFeedbackState: MANIP_STATE_GRASP_FAILED
place      OutOfReach           ArmCartesianCommand: STATUS_TRAJECTORY_CANCELLED
place      PlacementBlocked     ArmCartesianCommand: STATUS_TRAJECTORY_STALLED
grasp      HandOccupied         precondition: ManipulatorState.is_gripper_holding_item
place      HandEmpty            precondition: not ManipulatorState.is_gripper_holding_item
=========  ===================  ===========================================================

A whole command ends early through ``RobotCommandFeedbackStatus``
(:data:`COMMAND_STATUS_ERRORS`): overridden (by a stop, or by another client that took
the lease), timed out, or frozen by the E-Stop.

A real Spot gives no reason text with these statuses; ``SpotRobot`` then uses the row's
``description``. The twin also writes the simulator's own reason into the feedback
response's ``header.error.message`` while the code stays ``CODE_OK`` (a twin extension
the SDK ignores), and ``SpotRobot`` prefers that text, so a failure reads the same
through the twin as through ``SimRobot``.
"""

from __future__ import annotations

from dataclasses import dataclass

from bosdyn.api import arm_command_pb2, basic_command_pb2, manipulation_api_pb2

from agents import robot as iface

SE2 = basic_command_pb2.SE2TrajectoryCommand.Feedback
GAZE = arm_command_pb2.GazeCommand.Feedback
CARTESIAN = arm_command_pb2.ArmCartesianCommand.Feedback
MANIP = manipulation_api_pb2
COMMAND = basic_command_pb2.RobotCommandFeedbackStatus


@dataclass(frozen=True)
class FailureStatus:
    """One row: a behaviour's interface error and the Spot feedback that carries it."""

    behavior: str  # goto, inspect, grasp, place
    error: type[iface.RobotError]
    feedback: str  # the feedback message whose status carries it
    code: int | None  # that status's enum value; None for a precondition the adapter checks
    detail: bool | None  # a second field that tells two errors of one status apart
    description: str  # the message when the robot gives no reason

    @property
    def status_name(self) -> str:
        names = {
            "SE2TrajectoryCommand": SE2.FinalGoalStatus,
            "GazeCommand": GAZE.Status,
            "ArmCartesianCommand": CARTESIAN.Status,
            "ManipulationFeedbackState": MANIP.ManipulationFeedbackState,
        }
        return "precondition" if self.code is None else names[self.feedback].Name(self.code)


BEHAVIOR_FAILURES: tuple[FailureStatus, ...] = (
    FailureStatus(
        "goto",
        iface.GoalUnreachable,
        "SE2TrajectoryCommand",
        SE2.FINAL_GOAL_STATUS_BLOCKED,
        None,
        "the robot reports its goal as blocked",
    ),
    FailureStatus(
        "inspect",
        iface.OutOfReach,
        "GazeCommand",
        GAZE.STATUS_TOOL_TRAJECTORY_STALLED,
        False,
        "the arm cannot aim the gripper camera at a target that far",
    ),
    FailureStatus(
        "inspect",
        iface.TargetOccluded,
        "GazeCommand",
        GAZE.STATUS_TOOL_TRAJECTORY_STALLED,
        True,
        "something blocks the arm on its way over the target",
    ),
    FailureStatus(
        "grasp",
        iface.NothingThere,
        "ManipulationFeedbackState",
        MANIP.MANIP_STATE_GRASP_FAILED_TO_RAYCAST_INTO_MAP,
        None,
        "no graspable object along the pick ray",
    ),
    FailureStatus(
        "grasp",
        iface.OutOfReach,
        "ManipulationFeedbackState",
        MANIP.MANIP_STATE_GRASP_PLANNING_NO_SOLUTION,
        None,
        "no grasp within the arm's reach from where the robot stands",
    ),
    FailureStatus(
        "grasp",
        iface.TargetOccluded,
        "ManipulationFeedbackState",
        MANIP.MANIP_STATE_GRASP_FAILED,
        None,
        "the grasp failed: the object is covered",
    ),
    FailureStatus(
        "place",
        iface.OutOfReach,
        "ArmCartesianCommand",
        CARTESIAN.STATUS_TRAJECTORY_CANCELLED,
        None,
        "the place pose lies outside the arm's workspace",
    ),
    FailureStatus(
        "place",
        iface.PlacementBlocked,
        "ArmCartesianCommand",
        CARTESIAN.STATUS_TRAJECTORY_STALLED,
        None,
        "the hand stalled against something at the place location",
    ),
    FailureStatus(
        "grasp",
        iface.HandOccupied,
        "ManipulatorState",
        None,
        None,
        "the gripper already holds an object",
    ),
    FailureStatus(
        "place", iface.HandEmpty, "ManipulatorState", None, None, "the gripper holds nothing"
    ),
)

COMMAND_STATUS_ERRORS: dict[int, type[iface.RobotError]] = {
    COMMAND.STATUS_COMMAND_OVERRIDDEN: iface.PersistentRobotError,  # LeaseLost if the lease went
    COMMAND.STATUS_COMMAND_TIMED_OUT: iface.RobotTimeout,
    COMMAND.STATUS_ROBOT_FROZEN: iface.EStopped,
    COMMAND.STATUS_INCOMPATIBLE_HARDWARE: iface.PersistentRobotError,
}
"""``RobotCommandFeedbackStatus`` (other than PROCESSING) -> interface error."""


def status_for(behavior: str, error_name: str) -> FailureStatus:
    """The row the twin answers with when the simulator refuses ``behavior`` with ``error_name``."""
    for row in BEHAVIOR_FAILURES:
        if row.behavior == behavior and row.error.__name__ == error_name and row.code is not None:
            return row
    raise KeyError(f"no Spot status carries {error_name} for {behavior}")


def failure_for(behavior: str, code: int, detail: bool | None = None) -> FailureStatus | None:
    """The row whose status ``SpotRobot`` has just read; None if the status is not a failure."""
    for row in BEHAVIOR_FAILURES:
        if row.behavior == behavior and row.code == code and row.detail in (None, detail):
            return row
    return None


def precondition(behavior: str, error: type[iface.RobotError]) -> FailureStatus:
    """The precondition row ``SpotRobot`` checks itself before commanding ``behavior``."""
    for row in BEHAVIOR_FAILURES:
        if row.behavior == behavior and row.error is error and row.code is None:
            return row
    raise KeyError(f"{error.__name__} is not a precondition of {behavior}")
