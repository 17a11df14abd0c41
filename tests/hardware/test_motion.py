"""Walk playback: durations mirror the simulator's, odometry sums to its path length."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agents.robot import Pose2D
from envs import SimRobot, SpotWorldEnv
from hardware.twin.motion import Walk, keyframes

pytestmark = pytest.mark.spot

PATH = [(1.0, 1.0), (3.0, 1.0), (3.0, 4.0), (5.5, 4.5)]
START = (1.0, 1.0, math.pi / 2)
GOAL = (5.5, 4.5, -0.3)


def walk(time_scale: float = 10.0, dwell_s: float = 0.5) -> Walk:
    return Walk(
        keyframes(START, PATH, GOAL, 1.0, 1.0), now_s=0.0, time_scale=time_scale, dwell_s=dwell_s
    )


def path_length(path) -> float:
    return sum(math.dist(a, b) for a, b in zip(path, path[1:], strict=False))


def test_keyframes_last_as_long_as_the_simulators_goto(small_env_kwargs):
    env = SpotWorldEnv("hazard_barrels", **small_env_kwargs)
    try:
        env.reset(seed=0)
        start = env.pose
        robot = SimRobot(env)
        robot.goto(Pose2D(5.4, 6.6, 0.8))
        result = env.last_result
        frames = keyframes(start, [tuple(p) for p in result["path"]], env.pose, 1.0, 1.0)
        assert frames[-1].t_s == pytest.approx(result["duration_s"], abs=1e-9)
        assert (frames[-1].x_m, frames[-1].y_m, frames[-1].yaw_rad) == env.pose
    finally:
        env.close()


@pytest.mark.parametrize("poll_s", [0.003, 0.05, 0.4, 2.0])
def test_odometry_read_at_any_rate_sums_to_the_path_length(poll_s):
    w, t = walk(), 0.0
    here = w.pose
    walked = 0.0
    while w.moving:
        t += poll_s
        w.advance(t)  # a feedback read: does not report the pose
        now = w.advance(t, observed=True)  # a robot-state read: the client's odometry
        walked += math.dist(here[:2], now[:2])
        here = now
    assert walked == pytest.approx(path_length(PATH), abs=1e-9)
    assert w.pose == GOAL  # exactly the simulator's final pose


def test_a_client_polling_only_feedback_still_arrives():
    w, t = walk(dwell_s=0.2), 0.0
    while w.moving and t < 60.0:
        t += 0.05
        w.advance(t)
    assert w.done and w.pose == GOAL
    assert t < w.duration_s / w.time_scale + 3 * 0.2 + 0.5  # at most a dwell per corner


def test_a_stalled_walk_reports_no_progress_and_a_halted_one_stays_put():
    stalled = walk()
    stalled.stalled = True
    assert stalled.advance(100.0, observed=True) == START
    assert stalled.moving

    w = walk()
    w.advance(0.3, observed=True)
    w.halt()
    where = w.pose
    assert not w.moving and not w.done
    assert w.advance(50.0, observed=True) == where
    assert np.hypot(where[0] - START[0], where[1] - START[1]) > 0.0


def test_frames_asked_for_while_walking_are_taken_mid_walk(small_env_kwargs):
    """Through the SDK, SpotRobot captures the front camera whenever the odometry it
    polls has moved ``capture_every_m`` on: at a near-real-time pace the frames are
    taken at different places on the way from the start to the goal."""
    from hardware.spot_robot import SpotRobot
    from hardware.twin.server import SpotTwin, TwinConfig
    from tests.hardware.conftest import CLIENT, contract_scenario

    scenario = contract_scenario()
    spot = scenario.region("free_spot")
    with SpotTwin(scenario, env_kwargs=small_env_kwargs, config=TwinConfig(time_scale=5.0)) as twin:
        with SpotRobot.connect(**twin.connect_args(), vlm=twin.vlm(), config=CLIENT) as robot:
            start = robot.get_pose()
            goal = Pose2D(spot.x, spot.y, -1.0)
            result = robot.goto(goal, capture_every_m=0.5)
    # one frame per 0.5 m mark passed before the goal, none at the start or the goal; a
    # slow capture can push the next mark on by up to a poll's walk, so one may be lost
    marks = math.floor(result.path_length_m / 0.5 - 1e-9)
    assert marks >= 2, "the walk must pass at least two capture marks"
    assert marks - 1 <= len(result.frames) <= marks, (len(result.frames), result.path_length_m)
    cams = [f.odom_T_camera[:2, 3] for f in result.frames]
    # on a walk of length L every point is within L of start and goal together (plus
    # the front camera's offset from the base, under 0.6 m)
    slack = result.path_length_m + 1.2
    assert all(math.dist(c, start.xy()) + math.dist(c, goal.xy()) <= slack for c in cams)
    assert all(math.dist(a, b) > 0.2 for a, b in zip(cams, cams[1:], strict=False))
