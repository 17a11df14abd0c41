"""Parity: the same policy on the same scenario gives the same action trace and outcome
through ``SimRobot`` and through ``SpotRobot`` -> Spot SDK -> gRPC -> twin."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from dataclasses import asdict

import numpy as np
import pytest

from agents.clue.world_model import WorldModelConfig
from agents.episode_log import read_log
from envs import SimRobot, SpotWorldEnv
from hardware.cameras import DEPTH_SCALE
from hardware.sessions import twin_session
from scenarios.loader import PACKAGE_DIR, find_scenario, load_scenario
from scenarios.runner import RobotSession, run_episode
from tests.hardware.conftest import CLIENT, FAST_TWIN

pytestmark = pytest.mark.spot

EXAMPLES = sorted(f.stem for f in (PACKAGE_DIR / "examples").glob("*.yaml"))
TIMING = {"t_wall_s", "wall_s", "act_s", "llm_s", "wall_time_s", "sim_time_s", "log", "robot"}
ACTION_KEYS = ("step", "behavior", "args", "ok", "status", "observation")
ANSWER_KEYS = ("text", "entity", "success", "reward", "hit", "reasons")


def records(result) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMING} for r in read_log(result.log)]


def action_trace(result) -> list[dict]:
    """What the robot was asked to do and what it answered, in order."""
    return [
        {k: r.get(k) for k in ACTION_KEYS} for r in read_log(result.log) if r["type"] == "action"
    ]


def outcome(result) -> dict:
    answer = next((r for r in read_log(result.log) if r["type"] == "answer"), {})
    return {
        **{k: v for k, v in asdict(result).items() if k not in TIMING},
        **{f"answer_{k}": answer.get(k) for k in ANSWER_KEYS},
    }


# Frames taken while walking are taken wherever the robot is when a capture is due: on
# the twin (as on a real Spot) that depends on wall-clock timing, in the simulator it is
# exactly every metre of the path. Parity is checked with maps fused at stops only.
STOPS_ONLY = {"world_config": WorldModelConfig(map_every_m=None)}


def run_pair(scenario, policy, tmp_path, small_env_kwargs, sim=None):
    twin = functools.partial(
        twin_session, env_kwargs=small_env_kwargs, config=FAST_TWIN, client=CLIENT
    )
    on_sim = run_episode(
        scenario,
        policy,
        tmp_path / "sim",
        env_kwargs=small_env_kwargs,
        robot=sim or "sim",
        agent_opts=STOPS_ONLY,
    )
    on_twin = run_episode(scenario, policy, tmp_path / "twin", robot=twin, agent_opts=STOPS_ONLY)
    return on_sim, on_twin


@pytest.mark.parametrize("name", EXAMPLES)
def test_oracle_episode_is_identical_through_the_twin(name, tmp_path, small_env_kwargs):
    scenario = load_scenario(find_scenario(name))
    on_sim, on_twin = run_pair(scenario, "oracle", tmp_path, small_env_kwargs)
    assert on_sim.success and on_sim.error is None
    assert outcome(on_twin) == outcome(on_sim)
    assert records(on_twin)[1:] == records(on_sim)[1:]  # every record after the header
    assert [r for r in records(on_twin) if r["type"] == "action"]  # it did act


class MillimetreDepthSimRobot(SimRobot):
    """SimRobot whose frames carry the depth quantisation of Spot's images
    (``PIXEL_FORMAT_DEPTH_U16`` in millimetres), the one thing the twin's wire changes."""

    def capture(self, camera: str = "body", timeout_s: float = 10.0):
        frame = super().capture(camera, timeout_s)
        mm = np.clip(np.rint(frame.depth_m * DEPTH_SCALE), 0, np.iinfo(np.uint16).max)
        depth = (mm.astype(np.uint16).astype(np.float32) / np.float32(DEPTH_SCALE)).astype(
            np.float32
        )
        return dataclasses.replace(frame, depth_m=depth)


def millimetre_sim(small_env_kwargs):
    @contextlib.contextmanager
    def opener(scenario):
        env = SpotWorldEnv(scenario, **small_env_kwargs)
        try:
            env.reset(seed=0)
            robot = MillimetreDepthSimRobot(env)
            yield RobotSession(robot, env.renderer, robot.submit_answer)
        finally:
            env.close()

    return opener


@pytest.mark.slow
@pytest.mark.parametrize("name", EXAMPLES)
def test_clue_episode_is_identical_through_the_twin(name, tmp_path, small_env_kwargs):
    """Heuristic CLUE (offline, MiniLM features): same actions, observations and outcome.

    Its map is built from depth, which Spot sends in millimetres; a closed-loop policy may
    decide differently on a map that differs by a hair (voxel counts, centroids). So the
    reference is a SimRobot with the same depth quantisation: against it every log
    record matches, prompts included."""
    scenario = load_scenario(find_scenario(name))
    on_mm, on_twin = run_pair(
        scenario, "clue", tmp_path, small_env_kwargs, sim=millimetre_sim(small_env_kwargs)
    )
    assert on_mm.error is None and on_twin.error is None
    assert action_trace(on_twin) == action_trace(on_mm)
    assert outcome(on_twin) == outcome(on_mm)
    assert records(on_twin)[1:] == records(on_mm)[1:]
