"""The robot-interface contract: what every :class:`agents.robot.Robot` must do.

Any implementation (``envs.SimRobot`` over pybullet, ``hardware.SpotRobot`` against a
gRPC twin of Spot or a real one) runs the very same tests. Subclass
:class:`RobotContract` in a ``test_*.py`` module and provide a ``robot_factory``
fixture: ``robot_factory(scenario) -> Robot`` returns a fresh robot standing at
``scenario.robot.pose`` in a world built from ``scenario``::

    class TestSpotRobotContract(RobotContract):
        @pytest.fixture
        def robot_factory(self, small_env_kwargs):
            twins = []

            def make(scenario):
                twin = SpotTwin(scenario, env_kwargs=small_env_kwargs).start()
                twins.append(twin)
                return SpotRobot.connect(
                    "127.0.0.1", port=twin.port, username=twin.config.username,
                    password=twin.password, cert_path=str(twin.certs.ca_pem_path),
                    vlm=TwinVLM(twin.robot),
                )

            yield make
            for twin in twins:
                twin.stop()

(this exact factory passed all the contract tests against the gRPC twin, about 27 s).

The tests use only the robot interface plus positions the scenario declares (its
regions and objects); no segmentation, no simulator internals. Tolerances are class
attributes a slower or noisier backend may widen.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from agents import robot as iface
from agents.robot import (
    Frame,
    GoalUnreachable,
    HandEmpty,
    HandOccupied,
    InspectResult,
    ManipulationResult,
    MotionResult,
    NothingThere,
    OutOfReach,
    PersistentRobotError,
    Point3,
    Pose2D,
    RetryableRobotError,
    Robot,
    RobotCounters,
    RobotError,
)
from scenarios.loader import parse_scenario
from scenarios.schema import Scenario

_WALLS = [
    {"from": [0.0, 0.0], "to": [8.0, 0.0]},
    {"from": [8.0, 0.0], "to": [8.0, 6.0]},
    {"from": [8.0, 6.0], "to": [0.0, 6.0]},
    {"from": [0.0, 6.0], "to": [0.0, 0.0]},
]

CONTRACT_SCENARIO: dict = {
    "id": "robot_contract",
    "title": "Robot interface contract arena",
    "environment": {
        "name": "lab",
        "extent": [0.0, 0.0, 8.0, 6.0],
        "walls": _WALLS,
        "regions": [
            # free floor the robot can walk to
            {"name": "free_spot", "x": 2.6, "y": 2.2},
            # where the robot stands to work on bag_1 (1.1 m from its centre)
            {"name": "bag_stand", "x": 4.4, "y": 1.5},
            # free floor within place reach of bag_stand, clear of the robot's body
            {"name": "drop_spot", "x": 4.4, "y": 2.8},
        ],
    },
    "objects": [
        {
            "id": "crate_1",
            "kind": "crate",
            "shape": "box",
            "size": [0.8, 0.8, 0.7],
            "pose": {"x": 4.0, "y": 4.5},
            "colour": "brown",
            "appearance": "wooden crate",
            "facts": [{"text": "a heavy wooden crate nailed shut"}],
        },
        {
            "id": "bag_1",
            "kind": "bag",
            "shape": "box",
            "size": [0.32, 0.22, 0.45],
            "pose": {"x": 5.5, "y": 1.5},
            "colour": "red",
            "appearance": "red backpack",
            "graspable": True,
            "movable": True,
            "facts": [{"text": "a red backpack with a white logo patch"}],
        },
    ],
    "robot": {"pose": {"x": 1.5, "y": 3.0, "yaw_deg": 0.0}},
    "task": {"text": "Bring me the red backpack.", "type": "retrieval", "budget": 50},
    "success": {"entities": ["bag_1"]},
    "oracle": [{"action": "answer", "object": "bag_1", "text": "the red backpack"}],
    "staging_notes": "An empty 8 x 6 m room, a closed crate and a red backpack on the floor.",
}


@functools.cache
def contract_scenario() -> Scenario:
    """The arena every contract test runs in (validated like any scenario file)."""
    return parse_scenario(CONTRACT_SCENARIO, "<robot contract>")


def _wrap(angle_rad: float) -> float:
    return math.atan2(math.sin(angle_rad), math.cos(angle_rad))


def assert_persistent(exc: BaseException) -> None:
    """A failure that retrying will not fix: persistent branch only."""
    assert isinstance(exc, RobotError)
    assert isinstance(exc, PersistentRobotError), type(exc).__mro__
    assert not isinstance(exc, RetryableRobotError), type(exc).__mro__
    assert str(exc), "a robot error must say what went wrong"


class RobotContract:
    """Contract tests over ``robot_factory(scenario) -> Robot`` (provided by subclasses)."""

    pose_tol_m = 0.05  # goto must end this close to the goal
    yaw_tol_rad = 0.05
    place_tol_m = 0.15  # an object placed at a point rests this close to it
    camera_range_m = 2.5  # cameras ride on the robot: within this distance of the base

    # ------------------------------------------------------------------ fixtures
    @pytest.fixture
    def scenario(self) -> Scenario:
        return contract_scenario()

    @pytest.fixture
    def robot(self, robot_factory, scenario):
        robot = robot_factory(scenario)
        try:
            yield robot
        finally:
            robot.close()

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def region(scenario: Scenario, name: str) -> Point3:
        r = scenario.region(name)
        return Point3(r.x, r.y, 0.0)

    @staticmethod
    def object_point(scenario: Scenario, oid: str) -> Point3:
        """Top centre of an object (where a gripper or a camera would aim)."""
        o = scenario.object(oid)
        return Point3(o.pose.x, o.pose.y, o.size[2])

    def stand(self, robot: Robot, scenario: Scenario, region: str, facing: str) -> Pose2D:
        """Walk to ``region`` facing object ``facing``; returns the goal pose."""
        r = self.region(scenario, region)
        o = scenario.object(facing).pose
        goal = Pose2D(r.x_m, r.y_m, math.atan2(o.y - r.y_m, o.x - r.x_m))
        robot.goto(goal)
        return goal

    def assert_pose_near(self, actual: Pose2D, expected: Pose2D) -> None:
        assert isinstance(actual, Pose2D)
        assert actual.distance_to(expected.x_m, expected.y_m) <= self.pose_tol_m, (
            actual,
            expected,
        )
        assert abs(_wrap(actual.yaw_rad - expected.yaw_rad)) <= self.yaw_tol_rad, (
            actual,
            expected,
        )

    # ------------------------------------------------------------------ the port
    def test_is_a_robot_with_fresh_counters(self, robot):
        assert isinstance(robot, Robot)
        assert isinstance(robot.counters, RobotCounters)
        assert robot.counters.actions == 0
        assert robot.counters.vlm_calls == 0
        assert robot.holding is False

    def test_get_pose_is_the_scenario_start(self, robot, scenario):
        start = scenario.robot.pose
        self.assert_pose_near(robot.get_pose(), Pose2D(start.x, start.y, start.yaw_rad))

    def test_goto_reaches_a_free_pose(self, robot, scenario):
        before = robot.get_pose()
        spot = self.region(scenario, "free_spot")
        goal = Pose2D(spot.x_m, spot.y_m, math.radians(-60.0))
        result = robot.goto(goal)
        assert isinstance(result, MotionResult)
        self.assert_pose_near(result.pose, goal)
        self.assert_pose_near(robot.get_pose(), goal)
        straight = before.distance_to(goal.x_m, goal.y_m)
        assert straight - self.pose_tol_m <= result.path_length_m < 3 * straight + 1.0
        assert result.duration_s > 0.0

    def test_goto_may_capture_frames_on_the_way(self, robot, scenario):
        """Frames asked for while walking are taken between the start and the goal (how
        many depends on the backend's timing: the simulator takes one every metre)."""
        before = robot.get_pose()
        spot = self.region(scenario, "free_spot")
        goal = Pose2D(spot.x_m, spot.y_m, math.radians(-60.0))
        result = robot.goto(goal, capture_every_m=0.5)
        self.assert_pose_near(result.pose, goal)
        assert len(result.frames) <= result.path_length_m / 0.5 + 1
        lo = np.minimum(before.xy(), goal.xy()) - (result.path_length_m + 1.0)
        hi = np.maximum(before.xy(), goal.xy()) + (result.path_length_m + 1.0)
        for frame in result.frames:
            assert isinstance(frame, Frame) and frame.camera in ("body", "front")
            assert np.all(lo <= frame.odom_T_camera[:2, 3]) and np.all(
                frame.odom_T_camera[:2, 3] <= hi
            )
        back = robot.goto(before)
        assert back.frames == ()  # only when asked

    def test_goto_into_an_object_is_unreachable(self, robot, scenario):
        before = robot.get_pose()
        crate = scenario.object("crate_1").pose
        with pytest.raises(GoalUnreachable) as info:
            robot.goto(Pose2D(crate.x, crate.y, 0.0))
        assert_persistent(info.value)
        self.assert_pose_near(robot.get_pose(), before)  # a refused goal moves nothing

    def test_goto_outside_the_world_is_unreachable(self, robot, scenario):
        x0, y0, x1, y1 = scenario.environment.extent
        with pytest.raises(GoalUnreachable) as info:
            robot.goto(Pose2D(x1 + 5.0, (y0 + y1) / 2, 0.0))
        assert_persistent(info.value)

    @pytest.mark.parametrize("camera", ["body", "hand"])
    def test_capture_is_a_consistent_rgbd_frame(self, robot, scenario, camera):
        frame = robot.capture(camera)
        assert isinstance(frame, Frame)
        assert frame.camera == camera
        h, w = frame.depth_m.shape
        assert frame.rgb.shape == (h, w, 3) and frame.rgb.dtype == np.uint8
        assert frame.depth_m.dtype == np.float32
        k = frame.intrinsics
        assert (k.width_px, k.height_px) == (w, h)
        assert k.fx_px > 0 and k.fy_px > 0
        assert -1.0 <= k.cx_px <= w + 1.0 and -1.0 <= k.cy_px <= h + 1.0
        T = frame.odom_T_camera
        assert T.shape == (4, 4) and np.all(np.isfinite(T))
        np.testing.assert_allclose(T[3], [0.0, 0.0, 0.0, 1.0], atol=1e-9)
        R = T[:3, :3]
        np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-5)
        assert np.linalg.det(R) == pytest.approx(1.0, abs=1e-5)
        depth = frame.depth_m[np.isfinite(frame.depth_m)]
        assert np.all(depth >= 0.0)
        assert np.count_nonzero(depth > 0) > 0.1 * h * w, "the camera should see the world"
        assert math.isfinite(frame.stamp_s) and frame.stamp_s >= 0.0
        # the camera rides on the robot
        pose = robot.get_pose()
        assert pose.distance_to(T[0, 3], T[1, 3]) <= self.camera_range_m
        assert 0.0 < T[2, 3] < self.camera_range_m
        if camera == "body":  # the front camera looks ahead, not behind
            heading = np.array([math.cos(pose.yaw_rad), math.sin(pose.yaw_rad)])
            assert float(T[:2, 2] @ heading) > 0.5
        # back-projected points lie in the world (metres, odom frame)
        pts, idx = frame.points_odom(stride=4)
        assert pts.shape[1] == 3 and len(pts) == len(idx) > 0
        x0, y0, x1, y1 = scenario.environment.extent
        margin = 0.3
        assert np.all((pts[:, 0] > x0 - margin) & (pts[:, 0] < x1 + margin))
        assert np.all((pts[:, 1] > y0 - margin) & (pts[:, 1] < y1 + margin))
        assert np.all((pts[:, 2] > -margin) & (pts[:, 2] < 3.0))

    def test_capture_is_not_an_action(self, robot):
        robot.capture("body")
        assert robot.counters.actions == 0

    def test_camera_intrinsics_match_capture(self, robot):
        for camera in ("body", "hand"):
            assert robot.camera_intrinsics(camera) == robot.capture(camera).intrinsics

    def test_inspect_answers_in_text_and_counts_a_vlm_call(self, robot, scenario):
        self.stand(robot, scenario, "bag_stand", facing="bag_1")
        result = robot.inspect(self.object_point(scenario, "bag_1"), "What is this object?")
        assert isinstance(result, InspectResult)
        assert isinstance(result.answer, str) and result.answer.strip()
        assert result.duration_s >= 0.0
        assert result.prompt_tokens >= 0 and result.completion_tokens >= 0
        assert result.frame is None or isinstance(result.frame, Frame)
        assert robot.counters.vlm_calls == 1
        assert robot.counters.actions == 2  # goto + inspect
        assert robot.counters.vlm_prompt_tokens >= result.prompt_tokens

    def test_inspect_beyond_range_is_out_of_reach(self, robot, scenario):
        with pytest.raises(OutOfReach) as info:
            robot.inspect(self.object_point(scenario, "bag_1"), "What is this?")
        assert_persistent(info.value)

    def test_grasp_hold_place_cycle(self, robot, scenario):
        bag = self.object_point(scenario, "bag_1")
        drop = self.region(scenario, "drop_spot")
        self.stand(robot, scenario, "bag_stand", facing="bag_1")
        assert robot.holding is False

        grasped = robot.grasp(bag)
        assert isinstance(grasped, ManipulationResult)
        assert robot.holding is True
        assert math.hypot(grasped.position.x_m - bag.x_m, grasped.position.y_m - bag.y_m) < 0.5
        assert grasped.duration_s > 0.0

        with pytest.raises(HandOccupied) as info:
            robot.grasp(bag)
        assert_persistent(info.value)
        assert robot.holding is True  # a refused grasp drops nothing

        placed = robot.place(drop)
        assert isinstance(placed, ManipulationResult)
        assert robot.holding is False
        assert math.hypot(placed.position.x_m - drop.x_m, placed.position.y_m - drop.y_m) <= (
            self.place_tol_m
        )

        with pytest.raises(HandEmpty) as info:
            robot.place(drop)
        assert_persistent(info.value)

        # the bag really moved: nothing left where it was, and it can be picked up again
        with pytest.raises(NothingThere) as info:
            robot.grasp(bag)
        assert_persistent(info.value)
        robot.grasp(Point3(placed.position.x_m, placed.position.y_m, bag.z_m))
        assert robot.holding is True

    def test_place_with_an_empty_hand(self, robot, scenario):
        with pytest.raises(HandEmpty) as info:
            robot.place(self.region(scenario, "free_spot"))
        assert_persistent(info.value)

    def test_grasp_beyond_reach_is_out_of_reach(self, robot, scenario):
        with pytest.raises(OutOfReach) as info:
            robot.grasp(self.object_point(scenario, "bag_1"))
        assert_persistent(info.value)
        assert robot.holding is False

    def test_grasp_on_empty_floor_finds_nothing(self, robot):
        here = robot.get_pose()
        ahead = Point3(
            here.x_m + 1.0 * math.cos(here.yaw_rad), here.y_m + 1.0 * math.sin(here.yaw_rad), 0.0
        )
        with pytest.raises(NothingThere) as info:
            robot.grasp(ahead)
        assert_persistent(info.value)

    def test_stop_never_raises(self, robot, scenario):
        robot.stop()
        robot.stop()
        with pytest.raises(RobotError):
            robot.goto(Pose2D(-100.0, -100.0, 0.0))
        robot.stop()
        self.stand(robot, scenario, "bag_stand", facing="bag_1")
        robot.grasp(self.object_point(scenario, "bag_1"))
        before = robot.get_pose()
        robot.stop()  # while holding
        assert robot.holding is True
        self.assert_pose_near(robot.get_pose(), before)

    def test_counters_count_every_behaviour(self, robot, scenario):
        c = robot.counters
        spot = self.region(scenario, "free_spot")
        robot.goto(Pose2D(spot.x_m, spot.y_m, 0.0))
        t1 = c.sim_time_s
        assert c.actions == 1 and t1 > 0.0
        with pytest.raises(GoalUnreachable):
            robot.goto(Pose2D(-100.0, -100.0, 0.0))
        with pytest.raises(OutOfReach):
            robot.grasp(self.object_point(scenario, "bag_1"))
        robot.capture("body")  # not a behaviour
        self.stand(robot, scenario, "bag_stand", facing="bag_1")
        robot.inspect(self.object_point(scenario, "bag_1"), "What colour is it?")
        assert c.actions == 5  # failed behaviours cost an action too
        assert c.by_behavior == {"goto": 3, "grasp": 1, "inspect": 1}
        assert c.vlm_calls == 1
        assert c.sim_time_s > t1

    def test_context_manager_closes_quietly(self, robot_factory, scenario):
        with robot_factory(scenario) as robot:
            assert isinstance(robot, Robot)
            robot.get_pose()
        robot.close()  # closing twice is safe

    def test_error_tree_has_two_branches(self):
        errors = [
            cls
            for cls in vars(iface).values()
            if isinstance(cls, type)
            and issubclass(cls, RobotError)
            and cls not in (RobotError, RetryableRobotError, PersistentRobotError)
        ]
        assert len(errors) >= 10
        for cls in errors:
            assert issubclass(cls, RetryableRobotError) != issubclass(cls, PersistentRobotError)
