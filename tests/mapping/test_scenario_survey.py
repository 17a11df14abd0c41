"""The example scenario surveyed through the robot interface (``envs.SimRobot``)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from envs import CameraSpec, SimRobot, SpotWorldEnv
from mapping.grid import cell_of
from mapping.grounding import Grounder
from mapping.observation_graph import ObservationGraph, query_to_text
from mapping.plot import plot_relevancy
from mapping.survey import survey
from mapping.voxel_map import VoxelMap
from scenarios.loader import load_scenario

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "examples" / "hazard_barrels.yaml"
STOPS = [(1.2, 1.2), (5.0, 5.0), (8.6, 1.4), (8.0, 6.2), (4.4, 8.6), (1.4, 5.5)]


@pytest.fixture(scope="module")
def surveyed(minilm_encoder):
    scenario = load_scenario(SCENARIO)
    env = SpotWorldEnv(scenario, camera=CameraSpec(width_px=160, height_px=120), renderer="tiny")
    env.reset(seed=0)
    robot = SimRobot(env)
    start = robot.get_pose()
    vmap = VoxelMap()
    frames = survey(robot, vmap, minilm_encoder, STOPS, views_per_stop=6)
    truth = {o.id: (o.pose.x, o.pose.y) for o in scenario.objects}  # assertions only
    yield vmap, env, start, frames, truth
    vmap.close()
    env.close()


def test_survey_visits_every_stop(surveyed):
    _, _, _, frames, _ = surveyed
    assert frames == 6 * len(STOPS)


def test_barrels_under_tarps_are_found_and_the_barrel_bin_is_a_false_positive(
    surveyed, minilm_encoder
):
    vmap, env, start, _, truth = surveyed
    result = Grounder(vmap, minilm_encoder).query("barrel", start.xy(), grid=env.occupancy())

    def best(name):
        x, y = truth[name]
        return min(result.candidates, key=lambda c: math.hypot(c.xy[0] - x, c.xy[1] - y))

    for name in ("barrel_1", "barrel_2"):  # covered by tarps "draped over a drum"
        assert math.hypot(*(best(name).xy - truth[name])) < 0.5, name
    assert (
        math.hypot(*(best("bin_1").xy - truth["bin_1"])) < 0.5
    )  # "... barrel used as a trash bin"
    for name in ("table_1", "shelf_1"):
        assert math.hypot(*(best(name).xy - truth[name])) > 1.0, name

    grid = env.occupancy()  # the env's own grid, injected
    for vp in result.viewpoints:
        assert vp is not None
        i, j = cell_of(grid, np.array(vp.xy_m))
        assert grid.free[i, j]


def test_ops_text_and_picture_for_the_scenario(surveyed, minilm_encoder, tmp_path):
    vmap, env, start, _, _ = surveyed
    grounder = Grounder(vmap, minilm_encoder)
    graph = ObservationGraph()
    text = query_to_text(grounder, graph, "barrel", start.xy())
    assert text.splitlines()[-1].startswith("tour(concept=barrel")
    result = grounder.query("barrel", start.xy())
    assert graph.apply(result)[-1] == text.splitlines()[-1]  # unchanged: only the tour again
    names = graph.last_names
    assert len(names) == len(result.candidates) and all(
        graph.graph.nodes[n]["kind"] == "object" for n in names
    )
    path = plot_relevancy(vmap, result, tmp_path / "hazard_barrels_barrel.png", names=names, dpi=40)
    assert path.stat().st_size > 1000
