"""Gymnasium contract of every registered env: checker, spaces, determinism, reward, ends."""

from __future__ import annotations

import re
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import envs
from envs.spot_world_env import ANSWER, GOTO, GRASP, INSPECT, PLACE
from scenarios.loader import PACKAGE_DIR, find_scenario, load_scenario, parse_scenario

EXAMPLES = sorted(f.stem for f in (PACKAGE_DIR / "examples").glob("*.yaml"))

# Advice gymnasium prints for every Box space that is not normalised, and for the
# unbounded episode clock; everything else the checker says is a finding.
BENIGN_CHECKER_WARNINGS = (
    r"recommend using a symmetric and normalized space",
    r"Box observation space maximum value is infinity",
)


def act(behavior: int, target=(0.0, 0.0, 0.0), yaw: float = 0.0, text: str = "", has_target=0):
    return {
        "behavior": behavior,
        "target": np.asarray(target, dtype=np.float32),
        "yaw": np.array([yaw], dtype=np.float32),
        "has_target": has_target,
        "text": text,
    }


# A scripted episode on hazard_barrels touching every behaviour, failures included.
HAZARD_SCRIPT = [
    act(GOTO, (5.2, 7.6, 0.0), 0.0),  # next to tarp_2
    act(INSPECT, (6.4, 7.6, 0.92), text="What is this?"),
    act(GRASP, (6.4, 7.6, 0.92)),  # the tarp
    act(GRASP, (6.4, 7.6, 0.92)),  # HandOccupied
    act(PLACE, (4.6, 6.4, 0.0)),
    act(PLACE, (4.6, 6.4, 0.0)),  # HandEmpty
    act(GOTO, (7.2, 3.4, 0.0)),  # into barrel_1: GoalUnreachable
    act(INSPECT, (6.4, 7.6, 0.89), text="What does the label say?"),
]


@pytest.mark.parametrize("scenario", EXAMPLES)
@pytest.mark.parametrize("env_id", envs.ENV_IDS)
def test_gymnasium_check_env(env_id, scenario, small_env_kwargs):
    env = gym.make(env_id, scenario=scenario, **small_env_kwargs)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(env.unwrapped)  # also makes the env in every declared render mode
    finally:
        env.close()
    findings = [
        str(w.message)
        for w in caught
        if not any(re.search(p, str(w.message)) for p in BENIGN_CHECKER_WARNINGS)
    ]
    assert not findings


@pytest.mark.parametrize("env_id", envs.ENV_IDS)
def test_registered_with_a_version_and_render_modes(env_id):
    assert re.fullmatch(r"\w+-v\d+", env_id)
    spec = gym.spec(env_id)
    env = spec.make(renderer="tiny")
    try:
        assert set(env.metadata["render_modes"]) == {"rgb_array", "top_down"}
        assert env.unwrapped.__doc__ and "Reward" in env.unwrapped.__doc__
    finally:
        env.close()


@pytest.fixture(scope="module")
def hazard_env(env_factory):
    return env_factory("hazard_barrels")


def _check_observation(env, obs):
    space = env.observation_space
    assert set(obs) == set(space.spaces)
    for key, sub in space.spaces.items():
        value = obs[key]
        assert isinstance(value, np.ndarray), key
        assert value.dtype == sub.dtype, key
        assert value.shape == sub.shape, key
        if np.issubdtype(value.dtype, np.floating):
            assert np.all(np.isfinite(value)), key
        assert sub.contains(value), key
    assert space.contains(obs)


def test_observations_stay_in_their_spaces(hazard_env):
    env = hazard_env
    obs, info = env.reset(seed=0)
    _check_observation(env, obs)
    assert info["actions"] == 0 and info["holding"] is False
    env.action_space.seed(3)
    actions = HAZARD_SCRIPT + [env.action_space.sample() for _ in range(6)]
    for a in actions:
        obs, reward, terminated, truncated, info = env.step(a)
        _check_observation(env, obs)
        assert isinstance(reward, float) and np.isfinite(reward)
        assert isinstance(terminated, bool) and isinstance(truncated, bool)
        assert {"result", "actions", "budget", "sim_time_s", "holding"} <= set(info)
        assert "frame" not in info["result"]  # infos stay small and serialisable
        if terminated or truncated:
            obs, info = env.reset(seed=0)


def test_observation_follows_the_robot(hazard_env):
    env = hazard_env
    obs0, _ = env.reset(seed=0)
    obs, *_ = env.step(act(GOTO, (3.0, 2.0, 0.0), 0.5))
    np.testing.assert_allclose(obs["pose"], [3.0, 2.0, 0.5], atol=1e-5)
    assert obs["time"][0] > obs0["time"][0] == 0.0
    assert not np.array_equal(obs["rgb"], obs0["rgb"])
    np.testing.assert_allclose(obs["odom_T_camera"], env.capture("body").odom_T_camera, atol=1e-6)


def _rollout(env, seed, actions):
    obs, info = env.reset(seed=seed)
    trace = [(obs, info["result"])]
    for a in actions:
        obs, reward, terminated, truncated, info = env.step(a)
        trace.append((obs, reward, terminated, truncated, info["result"]))
    return trace


def _assert_same_trace(a, b):
    assert len(a) == len(b)
    for step_a, step_b in zip(a, b, strict=True):
        obs_a, obs_b = step_a[0], step_b[0]
        for key in obs_a:
            np.testing.assert_array_equal(obs_a[key], obs_b[key], err_msg=key)
        assert step_a[1:] == step_b[1:]


def test_seeded_resets_are_deterministic(env_factory, hazard_env):
    sampler = gym.spaces.Dict(hazard_env.action_space.spaces)
    sampler.seed(11)
    actions = HAZARD_SCRIPT + [sampler.sample() for _ in range(4)]
    other = env_factory("hazard_barrels")
    first = _rollout(hazard_env, 5, actions)
    _assert_same_trace(first, _rollout(other, 5, actions))  # another instance
    _assert_same_trace(first, _rollout(hazard_env, 5, actions))  # the same one, again


def test_depth_noise_comes_from_the_seed(env_factory):
    env = env_factory("hazard_barrels", depth_noise_std_m=0.02)
    a, _ = env.reset(seed=1)
    b, _ = env.reset(seed=1)
    c, _ = env.reset(seed=2)
    np.testing.assert_array_equal(a["depth"], b["depth"])
    assert not np.array_equal(a["depth"], c["depth"])
    clean, _ = env_factory("hazard_barrels").reset(seed=1)
    assert 0.005 < float(np.std(a["depth"] - clean["depth"])) < 0.05


def _success_point(scenario):
    o = scenario.object(scenario.success.entities[0])
    return (o.pose.x, o.pose.y, o.size[2] / 2)


def _oracle_text(scenario) -> str:
    return next(s.text for s in scenario.oracle if s.action == "answer")


@pytest.mark.parametrize("name", EXAMPLES)
def test_reward_is_eq1(hazard_env, name):
    """+1 for the right answer (pointing at the success entity), -1 for a wrong one, 0 for
    every other step; the answer terminates the episode."""
    env = hazard_env
    scenario = load_scenario(find_scenario(name))
    env.reset(seed=0, options={"scenario": scenario})
    start = scenario.robot.pose
    _, reward, terminated, truncated, info = env.step(act(GOTO, (start.x + 0.3, start.y, 0.0)))
    assert (reward, terminated, truncated) == (0.0, False, False) and info["result"]["ok"]
    _, reward, terminated, truncated, info = env.step(act(PLACE, (start.x, start.y, 0.0)))
    assert (reward, terminated, truncated) == (0.0, False, False) and not info["result"]["ok"]

    _, reward, terminated, truncated, info = env.step(
        act(ANSWER, _success_point(scenario), text=_oracle_text(scenario), has_target=1)
    )
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["result"]["success"] and info["result"]["hit"] in scenario.success.entities

    radius = scenario.success.radius_m
    env.reset(seed=0)
    wrong = next(
        o
        for o in scenario.objects
        if o.pose.z is None
        and o.on is None
        and all(
            np.hypot(o.pose.x - scenario.object(e).pose.x, o.pose.y - scenario.object(e).pose.y)
            > 2 * radius + 1.0
            for e in scenario.success.entities
        )
    )
    _, reward, terminated, _, info = env.step(
        act(ANSWER, (wrong.pose.x, wrong.pose.y, 0.3), text=_oracle_text(scenario), has_target=1)
    )
    assert (reward, terminated) == (-1.0, True)
    assert info["result"]["hit"] not in (None, *scenario.success.entities)
    assert not info["result"]["success"]

    env.reset(seed=0)  # an answer that points nowhere misses an entity task
    _, reward, terminated, _, _ = env.step(act(ANSWER, text=_oracle_text(scenario)))
    assert (reward, terminated) == (-1.0, True)


def test_reward_checks_answer_text_and_final_state(hazard_env, example_data):
    data = example_data("hazard_barrels")
    data["success"] = {
        "entities": ["barrel_2"],
        "answer_contains": ["corrosive"],
        "final_state": {"object": "tarp_2", "near": "drop_zone", "within_m": 1.0},
    }
    scenario = parse_scenario(data)
    env = hazard_env
    env.reset(seed=0, options={"scenario": scenario})
    at_barrel = (6.4, 7.6, 0.4)
    # right entity and text, but the tarp still lies on the barrel: not a goal state
    _, reward, *_ = env.step(act(ANSWER, at_barrel, text="it is corrosive", has_target=1))
    assert reward == -1.0
    env.reset(seed=0)
    for a in (
        act(GOTO, (5.2, 7.6, 0.0)),
        act(GRASP, (6.4, 7.6, 0.92)),
        act(GOTO, (7.4, 1.4, 0.0)),
        act(PLACE, (8.6, 1.4, 0.0)),
    ):
        _, reward, *_, info = env.step(a)
        assert reward == 0.0 and info["result"]["ok"], info["result"]
    _, reward, *_ = env.step(act(ANSWER, at_barrel, text="the water one", has_target=1))
    assert reward == -1.0  # wrong text
    env.reset(seed=0)  # the goal state is undone by a reset
    _, reward, *_ = env.step(act(ANSWER, at_barrel, text="Corrosive!", has_target=1))
    assert reward == -1.0


def test_truncated_at_the_action_budget(hazard_env, example_data):
    data = example_data("hazard_barrels")
    data["task"]["budget"] = 3
    env = hazard_env
    env.reset(seed=0, options={"scenario": parse_scenario(data)})
    flags = [env.step(act(PLACE, (2.0, 2.0, 0.0)))[2:4] for _ in range(3)]
    assert flags == [(False, False), (False, False), (False, True)]

    env.reset(seed=0)
    env.step(act(PLACE, (2.0, 2.0, 0.0)))
    env.step(act(PLACE, (2.0, 2.0, 0.0)))
    _, reward, terminated, truncated, info = env.step(act(ANSWER, (6.4, 7.6, 0.4), has_target=1))
    assert (reward, terminated, truncated) == (1.0, True, False)  # an answer is not cut off
    assert info["actions"] == info["budget"] == 3


def test_reset_options_switch_scenarios(hazard_env):
    env = hazard_env
    env.reset(seed=0, options={"scenario": "hazard_barrels"})
    hazard_ids = set(env.world.objects)

    obs, info = env.reset(seed=0, options={"scenario": "field_cart"})
    field = load_scenario(find_scenario("field_cart"))
    assert info["scenario"] == "field_cart" == env.scenario.id
    assert set(env.world.objects) == {o.id for o in field.objects}
    start = field.robot.pose
    np.testing.assert_allclose(obs["pose"], [start.x, start.y, start.yaw_rad], atol=1e-5)

    bag_scenario = load_scenario(find_scenario("jansport_bag"))
    _, info = env.reset(options={"scenario": bag_scenario})  # a Scenario object
    assert info["scenario"] == "jansport_bag" and "bag_1" in env.world.objects

    _, info = env.reset(options={"scenario": find_scenario("hazard_barrels")})  # a path
    assert info["scenario"] == "hazard_barrels" and set(env.world.objects) == hazard_ids
    _, info = env.reset(seed=0)  # no options: the current scenario again
    assert info["scenario"] == "hazard_barrels"


def test_reset_restores_moved_objects(hazard_env):
    env = hazard_env
    env.reset(seed=0, options={"scenario": "hazard_barrels"})
    before = {oid: (st.x, st.y, st.z) for oid, st in env.world.objects.items()}
    for a in HAZARD_SCRIPT[:5]:
        env.step(a)
    assert (env.world.objects["tarp_2"].x, env.world.objects["tarp_2"].y) == pytest.approx(
        (4.6, 6.4)
    )
    env.step(act(GRASP, (4.6, 6.4, 0.92)))
    assert env.holding == "tarp_2"
    _, info = env.reset(seed=0)
    assert env.holding is None and not info["holding"]
    assert {oid: (st.x, st.y, st.z) for oid, st in env.world.objects.items()} == before
    assert env.world.covering("barrel_2") == ["tarp_2"]


@pytest.mark.parametrize("mode", ["rgb_array", "top_down"])
def test_render_modes_return_images(env_factory, mode, small_env_kwargs):
    env = env_factory("hazard_barrels", render_mode=mode)
    img = env.render()
    assert isinstance(img, np.ndarray) and img.dtype == np.uint8
    assert img.ndim == 3 and img.shape[2] == 3
    if mode == "rgb_array":
        cam = small_env_kwargs["camera"]
        assert img.shape == (cam.height_px, cam.width_px, 3)
    else:  # 10 x 10 m at 20 px/m
        assert img.shape == (200, 200, 3)
    assert len(np.unique(img.reshape(-1, 3), axis=0)) > 5  # a picture, not a blank


def test_render_without_mode_and_bad_mode(env_factory):
    assert env_factory("hazard_barrels").render() is None
    with pytest.raises(ValueError, match="render_mode"):
        envs.SpotWorldEnv("hazard_barrels", render_mode="human", renderer="tiny")


@pytest.mark.parametrize("behavior", [-1, 5, 99])
def test_bad_behavior_index_raises(hazard_env, behavior):
    hazard_env.reset(seed=0)
    with pytest.raises(ValueError, match="behavior"):
        hazard_env.step(act(behavior))
    assert hazard_env.actions == 0  # a rejected action is not counted


def test_step_before_reset_and_unknown_camera_raise(small_env_kwargs):
    env = envs.SpotWorldEnv("hazard_barrels", **small_env_kwargs)
    try:
        with pytest.raises(RuntimeError, match="reset"):
            env.step(act(GOTO, (2.0, 2.0, 0.0)))
        env.reset(seed=0)
        with pytest.raises(ValueError, match="camera"):
            env.capture("thermal")
    finally:
        env.close()
        env.close()  # closing twice is allowed
