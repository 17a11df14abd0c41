"""Env fixtures: small-camera envs built once per module, and inline test arenas."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from scenarios.loader import parse_scenario
from scenarios.schema import Scenario


def arena_walls(x1: float, y1: float) -> list[dict]:
    return [
        {"from": [0.0, 0.0], "to": [x1, 0.0]},
        {"from": [x1, 0.0], "to": [x1, y1]},
        {"from": [x1, y1], "to": [0.0, y1]},
        {"from": [0.0, y1], "to": [0.0, 0.0]},
    ]


def make_arena(
    scenario_id: str,
    objects: list[dict],
    *,
    robot: tuple[float, float, float] = (1.5, 3.0, 0.0),
    size: tuple[float, float] = (8.0, 6.0),
    extra_walls: list[dict] | None = None,
    success: dict | None = None,
) -> Scenario:
    """A walled rectangular room holding ``objects`` (validated like a scenario file)."""
    x1, y1 = size
    data = {
        "id": scenario_id,
        "title": scenario_id.replace("_", " "),
        "environment": {
            "name": "lab",
            "extent": [0.0, 0.0, x1, y1],
            "walls": arena_walls(x1, y1) + (extra_walls or []),
        },
        "objects": objects,
        "robot": {"pose": {"x": robot[0], "y": robot[1], "yaw_deg": robot[2]}},
        "task": {"text": "Find the thing.", "type": "retrieval", "budget": 30},
        "success": success or {"entities": [objects[0]["id"]]},
        "oracle": [{"action": "answer", "text": "here"}],
    }
    return parse_scenario(data, f"<{scenario_id}>")


@pytest.fixture(scope="session")
def arena() -> Callable[..., Scenario]:
    return make_arena


@pytest.fixture(scope="module")
def env_factory(small_env_kwargs):
    """``env_factory(scenario, **overrides)``: a reset SpotWorldEnv, closed after the module."""
    from envs import SpotWorldEnv

    made = []

    def make(scenario="hazard_barrels", seed: int = 0, **overrides):
        env = SpotWorldEnv(scenario, **{**small_env_kwargs, **overrides})
        env.reset(seed=seed)
        made.append(env)
        return env

    yield make
    for env in made:
        env.close()
