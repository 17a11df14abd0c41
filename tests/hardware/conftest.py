"""Spot-API twin fixtures: a twin on 127.0.0.1 per test module, SpotRobots through the SDK.

Everything under ``tests/hardware`` talks to the twin through the unmodified Spot SDK
(TLS, tokens, leases, E-Stop): nothing is patched. Walks play back 200x faster than
real time and cameras are 160 x 120 (``small_env_kwargs``) to keep the suite fast.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytest.importorskip("bosdyn.client", reason="needs the spot extra: pip install '.[spot]'")

from hardware.spot_robot import SpotRobot, SpotRobotConfig  # noqa: E402
from hardware.twin import SpotTwin, TwinConfig  # noqa: E402
from tests.contract.robot_contract import contract_scenario  # noqa: E402

FAST_TWIN = TwinConfig(time_scale=200.0)  # simulated seconds per wall second while walking
CLIENT = SpotRobotConfig(rpc_timeout_s=5.0, setup_timeout_s=10.0, poll_interval_s=0.01)


@pytest.fixture(scope="module")
def spot_twin(small_env_kwargs):
    """A serving twin of the robot-contract arena, shared by a module's tests."""
    with SpotTwin(contract_scenario(), env_kwargs=small_env_kwargs, config=FAST_TWIN) as twin:
        yield twin


@pytest.fixture
def connect() -> Callable[..., SpotRobot]:
    """``connect(twin, **overrides) -> SpotRobot`` with the twin's VLM; closed after the test."""
    robots: list[SpotRobot] = []

    def make(twin: SpotTwin, **overrides) -> SpotRobot:
        kwargs = {**twin.connect_args(), "vlm": twin.vlm(), "config": CLIENT, **overrides}
        robot = SpotRobot.connect(**kwargs)
        robots.append(robot)
        return robot

    yield make
    for robot in robots:
        robot.close()
