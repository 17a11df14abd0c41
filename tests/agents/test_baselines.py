"""The map-based baselines: the pre-task survey that builds their map, NLMaps' open loop
and map-then-query's captioning while mapping."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agents.baselines.prompts import CAPTION_QUESTION
from agents.clue import default_encoder
from agents.clue.world_model import WorldModel
from agents.episode_log import read_log
from envs import SimRobot, SpotWorldEnv
from mapping.grid import cell_centres, cell_of
from scenarios.loader import find_scenario, load_scenario
from scenarios.runner import run_episode


def scenario(name):
    return load_scenario(find_scenario(name))


@pytest.fixture
def field_cart_robot():
    env = SpotWorldEnv(scenario("field_cart"), renderer="tiny")
    env.reset(seed=0)
    try:
        yield env, SimRobot(env)
    finally:
        env.close()


def mapped_share(env, wm) -> float:
    """Share of the floor the robot could stand on (ground truth, read by the test only)
    that the world model has mapped as floor."""
    truth = env.occupancy()
    centres = cell_centres(truth, np.argwhere(truth.free))
    grid = wm.grid()
    ij = cell_of(grid, centres)
    h, w = grid.floor.shape
    inside = (ij[:, 0] >= 0) & (ij[:, 0] < h) & (ij[:, 1] >= 0) & (ij[:, 1] < w)
    mapped = np.zeros(len(centres), bool)
    mapped[inside] = grid.floor[ij[inside, 0], ij[inside, 1]]
    return float(mapped.mean())


def test_explore_maps_the_reachable_floor_from_the_robots_own_frames(field_cart_robot):
    env, robot = field_cart_robot
    wm = WorldModel(robot, default_encoder())
    try:
        wm.observe()
        before = mapped_share(env, wm)
        stops, refused = wm.explore()
        after = mapped_share(env, wm)
        assert stops >= 2 and refused <= stops
        assert before < 0.7 and after >= 0.9, f"mapped floor {before:.0%} -> {after:.0%}"
        for x, y in wm.frontier_points():  # what is left was tried already
            assert min(np.hypot(x - sx, y - sy) for sx, sy in wm.stood) < 2.5
    finally:
        wm.close()


@pytest.mark.parametrize("policy", ["nlmaps", "map-then-query"])
def test_the_survey_is_logged_and_not_charged_to_the_task(policy, tmp_path):
    result = run_episode(scenario("field_cart"), policy, tmp_path)
    records = read_log(result.log)
    survey = [r for r in records if r["type"] == "survey"]
    assert len(survey) == 1 and survey[0]["stops"] >= 2 and survey[0]["walks"] >= 2
    assert result.error is None and result.answered
    # the task's own actions only: NLMaps query/goto/inspect/answer, map-then-query's answer
    assert result.actions <= (4 if policy == "nlmaps" else 1)
    assert result.llm_calls == 1


def test_nlmaps_answers_the_top_candidate_whatever_it_sees(tmp_path):
    result = run_episode(scenario("hazard_barrels"), "nlmaps", tmp_path)
    records = read_log(result.log)
    query = next(r for r in records if r["type"] == "action" and r["behavior"] == "query")
    inspect = [r for r in records if r["type"] == "action" and r["behavior"] == "inspect"]
    answer = next(r for r in records if r["type"] == "answer")
    assert len(inspect) <= 1, "one look, no second candidate"
    top = answer["entity"]
    assert top and top.endswith("_1") and any(f"name={top}" in op for op in query["graph_ops"])
    assert not result.success, "the corrosive label lies under a tarp NLMaps never moves"


def test_map_then_query_captions_only_while_mapping_with_a_generic_question(tmp_path):
    result = run_episode(scenario("hazard_barrels"), "map-then-query", tmp_path)
    records = read_log(result.log)
    kinds = [r["type"] for r in records]
    survey_at = kinds.index("survey")
    inspects = [
        (k, r)
        for k, r in enumerate(records)
        if r["type"] == "action" and r["behavior"] == "inspect"
    ]
    assert inspects, "instances near survey stops are captioned"
    assert all(k < survey_at for k, _ in inspects), "no caption after the map is built"
    assert all(r["args"][1] == CAPTION_QUESTION for _, r in inspects if r["ok"])
    assert result.vlm_calls == sum(1 for _, r in inspects if r["ok"])
    retrieval = [r for r in records if r["type"] == "llm"]
    assert len(retrieval) == 1 and "## Observed objects" in retrieval[0]["prompt"]
    assert not any("corrosive" in r["observation"] for _, r in inspects if r["ok"]), (
        "generic captions cannot see under a tarp"
    )  # so its pick among the covered barrels is a guess


def test_retrieval_never_picks_an_object_its_caption_rules_out():
    from agents.baselines.heuristic_replies import retrieval_reply
    from agents.baselines.prompts import retrieval_message

    task = "Could you find my JanSport backpack?"
    wrong = [
        ("object_1", "At the target I see a dark blue backpack: a navy backpack with a Herschel brand label."),
        ("object_2", "At the target I see a white office desk: a white desk with a desk lamp."),
    ]  # fmt: skip
    reply = json.loads(retrieval_reply(retrieval_message(task, wrong)))
    assert reply["entity"] == "none"
    right = [*wrong, ("object_3", "At the target I see a black backpack: a black backpack with a red JanSport logo patch.")]  # fmt: skip
    assert json.loads(retrieval_reply(retrieval_message(task, right)))["entity"] == "object_3"


def test_walking_maps_the_way_as_well_as_the_goal(field_cart_robot):
    """The world model fuses the front camera about every metre of a walk, then every
    body camera at the goal; with map_every_m=None only the goal's frames."""
    from agents.clue.world_model import WorldModelConfig
    from agents.robot import Pose2D

    env, robot = field_cart_robot
    start = robot.get_pose()
    goal = Pose2D(start.x_m + 4.0, start.y_m, 0.0)
    shares = {}
    for every in (1.0, None):
        env.teleport(start.x_m, start.y_m, start.yaw_rad)
        wm = WorldModel(robot, default_encoder(), config=WorldModelConfig(map_every_m=every))
        try:
            result = wm.walk(goal)
            cameras = len(wm.config.cameras)
            assert wm.frames == len(result.frames) + cameras
            assert (len(result.frames) >= 3) if every else (result.frames == ())
            shares[every] = mapped_share(env, wm)
        finally:
            wm.close()
    assert shares[1.0] > shares[None], shares


def test_map_then_query_captions_every_instance_it_can_stand_by(field_cart_robot):
    """Once exploration is done, instances no survey stop came near are captioned from
    their viewpoints: every object node with somewhere to stand has a caption."""
    from agents.baselines.map_then_query import MapThenQueryAgent
    from agents.clue.heuristic import HeuristicResponder
    from agents.episode_log import EpisodeLog

    env, robot = field_cart_robot
    agent = MapThenQueryAgent(HeuristicResponder(), default_encoder)
    agent.captions = {}
    wm = WorldModel(robot, default_encoder())
    try:
        with EpisodeLog(None) as log:
            wm.observe()
            agent.survey(robot, log, wm)
        standable = {
            n for n, a in wm.nodes().items() if a["kind"] == "object" and wm.has(f"near_{n}")
        }
        assert len(standable) >= 5
        assert standable <= set(agent.captions), standable - set(agent.captions)
        assert agent.usage.extra["mapping_actions"] >= len(agent.captions)
    finally:
        wm.close()
