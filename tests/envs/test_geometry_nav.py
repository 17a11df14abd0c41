"""Camera geometry against pybullet's own ray caster; base navigation; reach and placement."""

from __future__ import annotations

import functools
import math

import numpy as np
import pybullet as p
import pytest

from agents.robot import (
    GoalUnreachable,
    OutOfReach,
    PlacementBlocked,
    Point3,
    Pose2D,
    TargetOccluded,
)
from envs import SimRobot, rendering
from envs.robot_model import BODY_CAMERAS, body_camera_pose

RAY_BATCH = 8000  # below pybullet's per-call limit


@functools.cache
def _egl_available() -> bool:
    """Probed when a test needs it, not at collection (loading EGL imports torchvision)."""
    try:
        client, _ = rendering.connect("egl")
    except RuntimeError:
        return False
    with rendering.quiet_native_output():
        p.disconnect(client)
    return True


RENDERERS = ["tiny", "egl"]


def _ray_hits(client: int, eye: np.ndarray, points: np.ndarray):
    """First hit (body id, position) along eye -> point, continued 0.5 m beyond."""
    d = points - eye
    dist = np.linalg.norm(d, axis=1, keepdims=True)
    to = eye + d / dist * (dist + 0.5)
    bodies, where = [], []
    for k in range(0, len(points), RAY_BATCH):
        chunk = to[k : k + RAY_BATCH]
        for hit in p.rayTestBatch(
            [eye.tolist()] * len(chunk), chunk.tolist(), physicsClientId=client
        ):
            bodies.append(hit[0])
            where.append(hit[3])
    return np.array(bodies), np.array(where, dtype=float)


@pytest.mark.parametrize("renderer", RENDERERS)
def test_back_projection_matches_ray_casting(env_factory, renderer):
    """Every pixel of a capture, back-projected with the frame's intrinsics and pose,
    lands where pybullet's ray through that pixel hits the same body (the intrinsics are
    exact for the renderer's pixel convention, depth is metric z)."""
    if renderer == "egl" and not _egl_available():
        pytest.skip("the pybullet EGL plugin does not load on this machine")
    env = env_factory("hazard_barrels", renderer=renderer)
    assert env.renderer == renderer
    robot = SimRobot(env)
    frames = [robot.capture("body"), robot.capture("hand")]
    robot.goto(Pose2D(4.6, 6.2, math.radians(40)))  # barrels, tarps and walls in view
    frames += [robot.capture("body"), env.capture("hand", np.array([6.4, 7.6, 0.9]))]
    for frame in frames:
        pts, idx = frame.points_odom(stride=2)
        seg = frame.segmentation.ravel()[idx]
        # the robot's own thin links (3 cm camera housing) are thinner than Bullet's 4 cm
        # collision margin, so rays miss them; compare the world only
        world = seg != env.robot_body
        pts, seg = pts[world], seg[world]
        assert len(pts) > 1000
        eye = frame.odom_T_camera[:3, 3]
        bodies, hits = _ray_hits(env.client, eye, pts)
        same = bodies == seg
        assert same.mean() > 0.97, (frame.camera, same.mean())  # edges may differ
        err = np.linalg.norm(hits[same] - pts[same], axis=1)
        assert np.median(err) < 0.01, (frame.camera, np.median(err))
        assert np.percentile(err, 95) < 0.03, (frame.camera, np.percentile(err, 95))


def test_intrinsics_depend_on_the_renderer_only_by_the_sampling_offset():
    spec = rendering.CameraSpec(160, 120, vfov_deg=60.0)
    tiny, egl = spec.intrinsics("tiny"), spec.intrinsics("egl")
    assert tiny.fx_px == egl.fx_px == pytest.approx(60.0 / math.tan(math.radians(30.0)))
    assert (egl.cx_px, egl.cy_px) == (80.0, 60.0)
    assert abs(tiny.cx_px - egl.cx_px) == 0.5 and abs(tiny.cy_px - egl.cy_px) == 0.5


def _free_points(env, rng, n):
    grid = env.occupancy()
    x0, y0, x1, y1 = env.scenario.environment.extent
    out = []
    while len(out) < n:
        x, y = float(rng.uniform(x0, x1)), float(rng.uniform(y0, y1))
        if grid.is_free(x, y):
            out.append((x, y))
    return out


@pytest.mark.parametrize("scenario", ["hazard_barrels", "field_cart", "jansport_bag"])
def test_planned_paths_stay_in_free_space(env_factory, scenario):
    env = env_factory(scenario)
    grid = env.occupancy()
    obstacles = env.world.blocking_footprints()
    rng = np.random.default_rng(7)
    points = _free_points(env, rng, 24)
    planned = 0
    for start, goal in zip(points[::2], points[1::2], strict=True):
        path = grid.plan(start, goal)
        if path is None:
            continue
        planned += 1
        assert path[0] == pytest.approx(start) and path[-1] == pytest.approx(goal)
        for a, b in zip(path, path[1:], strict=False):
            assert grid.segment_free(a, b)
            # independent of the grid: dense samples keep the base centre off obstacles
            for t in np.linspace(0.0, 1.0, max(2, int(math.dist(a, b) / 0.02))):
                x, y = a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])
                clearance = min(fp.distance_to(x, y) for fp in obstacles)
                assert clearance > env.grid_spec.clearance_m - 0.15, (x, y, clearance)
    assert planned >= 10


def test_path_between_rooms_goes_through_the_doorway(env_factory):
    env = env_factory("jansport_bag")  # wall at x = 6 with a doorway for 3 < y < 5
    robot = SimRobot(env)
    robot.goto(Pose2D(9.0, 6.8, 0.0))
    path = env.last_result["path"]
    crossings = [
        a[1] + (6.0 - a[0]) * (b[1] - a[1]) / (b[0] - a[0])
        for a, b in zip(path, path[1:], strict=False)
        if (a[0] - 6.0) * (b[0] - 6.0) < 0
    ]
    assert len(crossings) == 1 and 3.0 < crossings[0] < 5.0, path


def test_poses_along_a_path_every_metre():
    from envs.navigation import poses_along

    path = [(0.0, 0.0), (2.5, 0.0), (2.5, 2.0)]  # 4.5 m, turning left at (2.5, 0)
    poses = poses_along(path, 1.0)
    assert [p[:2] for p in poses] == [
        pytest.approx(xy) for xy in [(1.0, 0.0), (2.0, 0.0), (2.5, 0.5), (2.5, 1.5)]
    ]
    assert [p[2] for p in poses] == pytest.approx([0.0, 0.0, math.pi / 2, math.pi / 2])
    assert poses_along(path, 5.0) == [] and poses_along([(0.0, 0.0)], 1.0) == []
    with pytest.raises(ValueError, match="positive"):
        poses_along(path, 0.0)


def test_goto_captures_the_front_camera_along_the_path(holding_tarp):
    env, robot = holding_tarp
    held = env.world.objects[env.holding]
    goal = Pose2D(9.0, 6.8, 0.0)
    result = robot.goto(goal, capture_every_m=1.0)
    path = env.last_result["path"]
    length = result.path_length_m
    assert len(result.frames) == math.ceil(length) - 1 >= 2
    for k, frame in enumerate(result.frames, start=1):
        # the front camera sits ahead of the base: each frame is within a body length of
        # the path point k metres along it, and the frames come in walking order
        cam = frame.odom_T_camera[:2, 3]
        along = min(
            math.dist(cam, (a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])))
            for a, b in zip(path, path[1:], strict=False)
            for t in np.linspace(0.0, 1.0, 50)
        )
        assert along < 0.6, (k, cam)
        assert frame.depth_m.shape == frame.rgb.shape[:2] and np.isfinite(frame.depth_m).any()
    assert robot.get_pose().distance_to(goal.x_m, goal.y_m) < 1e-6  # back at the goal
    assert (held.x, held.y) == pytest.approx((goal.x_m - 0.1, goal.y_m))  # still carried
    assert robot.goto(Pose2D(5.1, 7.6, 0.0)).frames == ()  # only when asked


def test_goal_inside_an_object_is_unreachable(env_factory):
    env = env_factory("hazard_barrels")
    robot = SimRobot(env)
    before = robot.get_pose()
    for oid in ("bin_1", "table_1", "shelf_1"):
        st = env.world.objects[oid]
        with pytest.raises(GoalUnreachable, match="not free"):
            robot.goto(Pose2D(st.x, st.y, 0.0))
    assert robot.get_pose() == before
    assert robot.counters.by_behavior == {"goto": 3}


PEN_WALLS = [  # a closed 3 x 3 m pen in the middle of a 10 x 8 m room
    {"from": [3.5, 2.5], "to": [6.5, 2.5]},
    {"from": [6.5, 2.5], "to": [6.5, 5.5]},
    {"from": [6.5, 5.5], "to": [3.5, 5.5]},
    {"from": [3.5, 5.5], "to": [3.5, 2.5]},
]


def test_enclosed_goal_is_unreachable(env_factory, arena):
    marker = {
        "id": "crate_1",
        "kind": "crate",
        "shape": "box",
        "size": [0.5, 0.5, 0.5],
        "pose": {"x": 8.5, "y": 1.2},
        "appearance": "crate",
    }
    env = env_factory(arena("pen", [marker], size=(10.0, 8.0), extra_walls=PEN_WALLS))
    robot = SimRobot(env)
    assert env.occupancy().is_free(5.0, 4.0)  # free floor inside the pen ...
    before = robot.get_pose()
    with pytest.raises(GoalUnreachable, match="no collision-free path"):
        robot.goto(Pose2D(5.0, 4.0, 0.0))  # ... that no path reaches
    assert robot.get_pose() == before
    robot.goto(Pose2D(8.0, 6.5, 0.0))  # outside the pen is fine


def test_accepted_goals_keep_every_camera_outside_obstacles(env_factory):
    """Whatever heading the robot turns to at a goal it accepted, no body camera sits
    inside (or within the near clip plane of) a wall or an object."""
    env = env_factory("hazard_barrels")
    robot = SimRobot(env)
    obstacles = env.world.blocking_footprints()
    rng = np.random.default_rng(3)
    accepted = 0
    for x, y in _free_points(env, rng, 40):
        try:
            robot.goto(Pose2D(x, y, 0.0))
        except GoalUnreachable:
            continue
        accepted += 1
        for yaw in np.linspace(-math.pi, math.pi, 12, endpoint=False):
            for cam in BODY_CAMERAS:
                eye = body_camera_pose(x, y, float(yaw), env.mount, cam)[:3, 3]
                gap = min(fp.distance_to(eye[0], eye[1]) for fp in obstacles)
                assert gap >= env.camera_spec.near_m, (x, y, yaw, cam, gap)
    assert accepted >= 20


@pytest.fixture
def holding_tarp(env_factory):
    """hazard_barrels with the robot west of barrel_2 holding tarp_2."""
    env = env_factory("hazard_barrels")
    robot = SimRobot(env)
    robot.goto(Pose2D(5.1, 7.6, 0.0))
    robot.grasp(Point3(6.4, 7.6, 0.92))
    assert robot.holding
    return env, robot


def test_place_on_an_occupied_spot_is_blocked(holding_tarp):
    env, robot = holding_tarp
    for where in ((6.4, 7.6), (5.4, 7.6)):  # on barrel_2; under the robot's own body
        with pytest.raises(PlacementBlocked):
            robot.place(Point3(*where, 0.0))
        assert robot.holding
    placed = robot.place(Point3(4.6, 6.4, 0.0))
    assert not robot.holding and placed.position.x_m == pytest.approx(4.6)


def test_out_of_reach_behaviours(holding_tarp, env_factory):
    env, robot = holding_tarp
    with pytest.raises(OutOfReach):
        robot.place(Point3(1.5, 1.5, 0.0))  # 6.9 m away
    assert robot.holding

    fresh = SimRobot(env_factory("hazard_barrels"))  # at the start, 8 m from barrel_2
    with pytest.raises(OutOfReach):
        fresh.grasp(Point3(6.4, 7.6, 0.92))
    with pytest.raises(OutOfReach):
        fresh.inspect(Point3(6.4, 7.6, 0.88), "What is it?")
    assert fresh.counters.vlm_calls == 0 and fresh.counters.actions == 2


@pytest.mark.parametrize("target_x", [6.68, 6.62])
def test_inspect_refuses_to_push_the_camera_through_a_wall(env_factory, target_x):
    """The gripper camera stops 0.7 m short of the target: for x = 6.68 that is inside
    the wall (5.925 < x < 6.075), for x = 6.62 it is 2.5 cm in front of it, where the
    near clip plane (5 cm) would cut the wall away and show the other room."""
    env = env_factory("jansport_bag")  # wall x = 6, 0 < y < 3, between the rooms
    robot = SimRobot(env)
    robot.goto(Pose2D(5.0, 2.2, 0.0))
    with pytest.raises(TargetOccluded, match="wall"):
        robot.inspect(Point3(target_x, 2.2, 0.2), "What is behind the wall?")
    robot.inspect(Point3(5.5, 2.2, 0.2), "What is on the floor?")  # this side is fine
