"""``envs.SimRobot`` against the robot-interface contract, plus what only the sim adds."""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

from agents.robot import Point3, RobotError
from envs import SimRobot, SpotWorldEnv, sim_robot, spot_world_env
from envs.sim_vlm import SimVLMAnswer
from tests.contract.robot_contract import RobotContract, contract_scenario


@pytest.fixture(scope="module")
def contract_env(small_env_kwargs):
    env = SpotWorldEnv(contract_scenario(), **small_env_kwargs)
    yield env
    env.close()


class TestSimRobotContract(RobotContract):
    @pytest.fixture
    def robot_factory(self, contract_env):
        def make(scenario):
            contract_env.reset(seed=0, options={"scenario": scenario})
            return SimRobot(contract_env)

        return make


def test_every_env_failure_maps_to_its_typed_error():
    """Each error name the env reports has a class of that name in the interface, so
    SimRobot never falls back to a generic error."""
    names = set(re.findall(r'_fail\(\s*"\w+",\s*"(\w+)"', inspect.getsource(spot_world_env)))
    assert {"GoalUnreachable", "OutOfReach", "HandEmpty", "HandOccupied"} <= names
    for name in names:
        assert name in sim_robot.ERRORS, name
        assert issubclass(sim_robot.ERRORS[name], RobotError)


def test_a_custom_vlm_backend_answers_inspect(contract_env):
    scenario = contract_scenario()
    contract_env.reset(seed=0, options={"scenario": scenario})
    calls = []

    class EchoVLM:
        def answer(self, frame, question, target_px):
            calls.append((frame.rgb.shape, question, target_px))
            return SimVLMAnswer(f"echo: {question}", 7, 3, ())

    robot = SimRobot(contract_env, vlm=EchoVLM())
    bag = scenario.object("bag_1").pose
    contract_env.teleport(4.4, 1.5, 0.0)
    result = robot.inspect(Point3(bag.x, bag.y, 0.45), "What is it?")
    assert result.answer == "echo: What is it?"
    assert (result.prompt_tokens, result.completion_tokens) == (7, 3)
    assert robot.counters.vlm_prompt_tokens == 7 and robot.counters.vlm_completion_tokens == 3
    (shape, question, px) = calls[0]
    assert shape == (120, 160, 3) and question == "What is it?"
    assert px is not None and 0 <= px[0] < 160 and 0 <= px[1] < 120


def test_submit_answer_reports_the_reward(contract_env):
    scenario = contract_scenario()
    contract_env.reset(seed=0, options={"scenario": scenario})
    robot = SimRobot(contract_env)
    bag = scenario.object("bag_1").pose
    verdict = robot.submit_answer("the red backpack", Point3(bag.x, bag.y, 0.2))
    assert verdict["reward"] == 1.0 and verdict["terminated"] and verdict["hit"] == "bag_1"
    assert robot.counters.by_behavior == {"answer": 1}
    np.testing.assert_allclose(robot.get_pose().xy(), [1.5, 3.0], atol=1e-6)
