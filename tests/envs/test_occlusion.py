"""Occlusion is physical: what the cameras cannot see, the sim VLM never reports.

Ground truth for "seen" is the env's segmentation image (pybullet body id per pixel);
the sim VLM's threshold is ``SimVLMConfig.min_pixel_fraction`` of the image.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from agents.robot import GoalUnreachable, NothingThere, Point3, Pose2D, RobotError, TargetOccluded
from envs import SimRobot
from envs.sim_vlm import SimVLMConfig

LABEL_WORDS = ("corrosive", "sodium hydroxide")
BARREL_2 = (6.4, 7.6)
BARREL_2_TOP = np.array([6.4, 7.6, 0.88])
# stand poses 1.3 m from barrel_2 (west, south, south-east, north), facing it
STANDS = [
    Pose2D(BARREL_2[0] + 1.3 * math.cos(a), BARREL_2[1] + 1.3 * math.sin(a), a + math.pi)
    for a in (math.pi, -math.pi / 2, -math.pi / 4, math.pi / 2)
]


def threshold_px(frame) -> float:
    h, w = frame.segmentation.shape
    return SimVLMConfig().min_pixel_fraction * h * w


def pixels(frame, body: int) -> int:
    return int(np.count_nonzero(frame.segmentation == body))


@pytest.fixture(scope="module")
def tarp_episode(env_factory):
    """Look at barrel_2 from every stand pose before and after moving tarp_2."""
    env = env_factory("hazard_barrels")
    robot = SimRobot(env)
    sign = env.world.objects["sign_2"].body
    out: dict = {"errors": {}}

    def survey(tag: str) -> None:
        out[tag] = []
        for pose in STANDS:
            robot.goto(pose)
            hand = env.capture("hand", BARREL_2_TOP)
            body = env.capture("body")
            answer = robot.inspect(Point3.of(BARREL_2_TOP), "What does the label say?").answer
            out[tag].append(
                {
                    "hand_px": pixels(hand, sign),
                    "body_px": pixels(body, sign),
                    "threshold": threshold_px(hand),
                    "answer": answer,
                    "seen": list(env.last_result["seen"]),
                }
            )

    survey("before")
    robot.goto(STANDS[0])
    robot.grasp(Point3(6.4, 7.6, 0.45))  # aimed at the covered barrel's middle
    out["held"] = env.holding
    robot.place(Point3(4.6, 6.4, 0.0))
    survey("after")
    robot.goto(STANDS[0])
    try:
        robot.grasp(Point3(6.4, 7.6, 0.45))
    except RobotError as exc:
        out["errors"]["barrel_2 uncovered"] = exc
    return out


def test_sign_has_no_pixels_while_the_tarp_covers_it(tarp_episode):
    for view in tarp_episode["before"]:
        assert view["hand_px"] == 0 and view["body_px"] == 0, view


def test_sign_is_seen_after_the_tarp_is_moved(tarp_episode):
    for view in tarp_episode["after"]:
        assert view["hand_px"] > view["threshold"], view


def test_inspect_answer_changes_with_the_tarp(tarp_episode):
    for view in tarp_episode["before"]:
        low = view["answer"].lower()
        assert not any(word in low for word in LABEL_WORDS), view["answer"]
        assert "tarp" in low and "sign_2" not in view["seen"]
    for view in tarp_episode["after"]:
        low = view["answer"].lower()
        assert all(word in low for word in LABEL_WORDS), view["answer"]
        assert "sign_2" in view["seen"]


def test_a_grasp_at_a_covered_barrel_meets_the_tarp(tarp_episode, env_factory):
    """The gripper meets the outermost object at a point: aimed at the covered barrel (or
    at the sign on it) it takes the tarp, never what lies underneath."""
    assert tarp_episode["held"] == "tarp_2"
    env = env_factory("hazard_barrels")
    robot = SimRobot(env)
    robot.goto(STANDS[0])
    robot.grasp(Point3(6.4, 7.6, 0.885))  # the sign's height
    assert env.holding == "tarp_2"
    # once uncovered the barrel is in plain view, and simply too heavy to pick up
    assert isinstance(tarp_episode["errors"]["barrel_2 uncovered"], NothingThere)


LIDDED_BOX = [
    {
        "id": "box_1",
        "kind": "box",
        "shape": "box",
        "size": [0.5, 0.5, 0.4],
        "pose": {"x": 2.0, "y": 1.2},
        "colour": "brown",
        "appearance": "cardboard box",
        "facts": [
            {"text": "a cardboard box"},
            {"text": "inside: spare lithium batteries", "visible_when": {"opened": "box_1"}},
        ],
    },
    {
        "id": "lid_1",
        "kind": "lid",
        "shape": "box",
        "size": [0.52, 0.52, 0.03],
        "pose": {"x": 2.0, "y": 1.2},
        "on": "box_1",
        "colour": "tan",
        "appearance": "cardboard lid",
        "graspable": True,
        "movable": True,
    },
]


def test_lidded_box_reveals_its_content_only_when_opened(env_factory, arena):
    env = env_factory(arena("lidded_box", LIDDED_BOX))
    robot = SimRobot(env)
    robot.goto(Pose2D(2.0, 2.4, -math.pi / 2))
    top = Point3(2.0, 1.2, 0.43)
    closed = robot.inspect(top, "What is in the box?").answer
    assert "batteries" not in closed and "cardboard box" in closed
    assert not env.world.is_opened("box_1")
    with pytest.raises(TargetOccluded):
        robot.grasp(Point3(2.0, 1.2, 0.2))  # the box itself (its side), under its lid

    robot.grasp(top)  # the lid
    assert env.holding == "lid_1"
    assert env.world.is_opened("box_1")  # a held lid no longer closes the box
    robot.place(Point3(3.2, 2.0, 0.0))
    opened = robot.inspect(Point3(2.0, 1.2, 0.4), "What is in the box?").answer
    assert "spare lithium batteries" in opened


BAG_BEHIND_CABINET = [
    {
        "id": "cabinet_1",
        "kind": "cabinet",
        "shape": "box",
        "size": [0.6, 1.2, 2.0],
        "pose": {"x": 4.0, "y": 3.0},
        "colour": "grey",
        "appearance": "tall grey cabinet",
    },
    {
        "id": "bag_1",
        "kind": "bag",
        "shape": "box",
        "size": [0.32, 0.22, 0.45],
        "pose": {"x": 4.8, "y": 3.0},
        "colour": "red",
        "appearance": "red backpack",
        "graspable": True,
        "movable": True,
        "facts": [{"text": "a red backpack with a JanSport patch"}],
    },
]


@pytest.fixture(scope="module")
def cabinet_env(env_factory, arena):
    return env_factory(arena("bag_behind_cabinet", BAG_BEHIND_CABINET, robot=(1.5, 3.0, 0.0)))


def _assert_bag_unseen(env, frame, answer_text: str, seen) -> None:
    bag = env.world.objects["bag_1"].body
    assert pixels(frame, bag) == 0
    assert "bag_1" not in seen
    assert "backpack" not in answer_text and "JanSport" not in answer_text


def test_bag_behind_a_cabinet_is_not_seen(cabinet_env):
    env = cabinet_env
    env.reset(seed=0)
    frame = env.capture("body")
    assert pixels(frame, env.world.objects["cabinet_1"].body) > threshold_px(frame)
    answer = env.vlm.answer(frame, "What do you see?")
    _assert_bag_unseen(env, frame, answer.text, answer.seen)

    robot = SimRobot(env)
    robot.goto(Pose2D(2.4, 3.0, 0.0))
    result = robot.inspect(Point3(4.0, 3.0, 2.0), "What is on top of the cabinet?")
    _assert_bag_unseen(env, result.frame, result.answer, env.last_result["seen"])


def test_walking_up_to_the_cabinet_does_not_see_through_it(cabinet_env):
    """The closest pose the robot may take in front of the cabinet, facing it: the body
    camera (on the front of the body) must still be outside the cabinet."""
    env = cabinet_env
    env.reset(seed=0)
    robot = SimRobot(env)
    grid = env.occupancy()  # the planner's closest spot, then back off until the body fits
    start = max(x for x in np.arange(1.5, 3.7, 0.01) if grid.is_free(float(x), 3.0))
    for x in np.arange(start, 1.5, -0.01):  # approach the cabinet face (x = 3.7) head-on
        try:
            robot.goto(Pose2D(float(x), 3.0, 0.0))
            break
        except GoalUnreachable:
            continue
    assert robot.get_pose().x_m > 2.9  # it did walk up close
    frame = robot.capture("body")
    answer = env.vlm.answer(frame, "What do you see?")
    _assert_bag_unseen(env, frame, answer.text, answer.seen)


def test_inspecting_behind_the_cabinet_does_not_see_through_it(cabinet_env):
    """The gripper camera cannot pass through the cabinet to look at the bag: either the
    arm is blocked (TargetOccluded) or the view does not show the bag."""
    env = cabinet_env
    env.reset(seed=0)
    robot = SimRobot(env)
    robot.goto(Pose2D(2.4, 3.0, 0.0))
    try:
        result = robot.inspect(Point3(4.8, 3.0, 0.45), "Is there a bag?")
    except TargetOccluded:
        return
    _assert_bag_unseen(env, result.frame, result.answer, env.last_result["seen"])


def _free_pose(env, rng) -> Pose2D:
    grid = env.occupancy()
    x0, y0, x1, y1 = env.scenario.environment.extent
    while True:
        x, y = rng.uniform(x0, x1), rng.uniform(y0, y1)
        if grid.is_free(x, y):
            return Pose2D(float(x), float(y), float(rng.uniform(-math.pi, math.pi)))


@pytest.mark.parametrize("scenario", ["hazard_barrels", "field_cart", "jansport_bag"])
def test_sim_vlm_mentions_only_what_has_pixels(env_factory, scenario):
    """Property: over random robot poses and camera aims, every object the VLM reports
    has at least the threshold of pixels in that very frame, and an object with no
    pixels contributes neither its appearance nor its facts to the answer."""
    env = env_factory(scenario)
    rng = np.random.default_rng(2024)
    objects = env.world.objects
    checked = 0
    for _ in range(12):
        pose = _free_pose(env, rng)
        env.teleport(pose.x_m, pose.y_m, pose.yaw_rad)
        aim = objects[sorted(objects)[rng.integers(len(objects))]]
        frames = [env.capture("body"), env.capture("hand", np.array([aim.x, aim.y, aim.top_z]))]
        for frame in frames:
            h, w = frame.segmentation.shape
            target_px = (int(rng.integers(w)), int(rng.integers(h))) if rng.random() < 0.5 else None
            answer = env.vlm.answer(frame, "Describe what you see.", target_px)
            counts = {oid: pixels(frame, st.body) for oid, st in objects.items()}
            for oid in answer.seen:
                assert counts[oid] >= threshold_px(frame), (oid, counts[oid])
            # what is left of the answer once the seen objects' own words are taken out
            rest = answer.text
            for o in answer.seen:
                spec = objects[o].spec
                for phrase in sorted([spec.appearance, *(f.text for f in spec.facts)], key=len)[
                    ::-1
                ]:
                    rest = rest.replace(phrase, "")
            for oid, n in counts.items():
                if n == 0:
                    spec = objects[oid].spec
                    for phrase in (spec.appearance, *(f.text for f in spec.facts)):
                        assert phrase not in rest, (oid, answer.text)
            checked += len(answer.seen)
    assert checked > 0, "the random poses should see something"
