"""Robot sessions for the episode runner (``scenarios.runner.open_robot``).

``twin_session``: an in-process Spot-API twin of the scenario and a ``SpotRobot``
connected to it through the real SDK; the twin's simulator judges the answer.
``spot_session``: a real Spot; nothing knows the ground truth, so there is no verdict.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from agents.robot import Point3, Pose2D
from hardware.spot_robot import SpotConfigError, SpotRobot, SpotRobotConfig
from hardware.twin import SpotTwin, TwinConfig
from scenarios.runner import RobotSession
from scenarios.schema import Scenario

TWIN_EPISODE = TwinConfig(time_scale=50.0)  # walks play back 50x faster than real time
TWIN_CLIENT = SpotRobotConfig()


def _vlm(agent_opts: dict | None):
    """The VLM ``--vlm`` names: None for ``sim`` (the robot's own), else a vision backend."""
    from agents.clue import build_vlm

    opts = agent_opts or {}
    return build_vlm(
        opts.get("vlm") or "sim", base_url=opts.get("vlm_base_url") or opts.get("base_url")
    )


@contextlib.contextmanager
def twin_session(
    scenario: Scenario,
    *,
    seed: int = 0,
    env_kwargs: dict | None = None,
    agent_opts: dict | None = None,
    twin: SpotTwin | None = None,
    config: TwinConfig = TWIN_EPISODE,
    client: SpotRobotConfig = TWIN_CLIENT,
) -> Iterator[RobotSession]:
    """A ``SpotRobot`` on a twin of ``scenario``: a new twin, or ``twin`` (already serving
    it, e.g. with faults armed). ``--vlm sim`` (default) answers inspections with the
    twin's simulator VLM, ``--vlm openai:MODEL`` with a vision model. The robot closes
    before a twin made here stops."""
    with contextlib.ExitStack() as stack:
        if twin is None:
            twin = stack.enter_context(
                SpotTwin(scenario, seed=seed, env_kwargs=env_kwargs, config=config)
            )
        vlm = _vlm(agent_opts) or twin.vlm()
        robot = stack.enter_context(
            SpotRobot.connect(**twin.connect_args(), vlm=vlm, config=client)
        )

        def judge(text: str, point: Point3 | None) -> dict:
            robot.counters.count("answer", 0.0)  # as SimRobot counts its answer step
            return twin.judge(text, point)

        yield RobotSession(robot, twin.robot.env.renderer, judge)


@contextlib.contextmanager
def spot_session(
    scenario: Scenario, hostname: str | None, agent_opts: dict
) -> Iterator[RobotSession]:
    """A real Spot at ``hostname``, standing at the scenario's start pose (which anchors
    the episode frame), guarded by the operator's own E-Stop; credentials from the
    environment. Its VLM is ``agent_opts["vlm_backend"]``, else ``--vlm openai:MODEL``.
    See docs/real_robot_runbook.md."""
    if not hostname:
        raise SpotConfigError("--robot spot needs --hostname (the robot's address)")
    vlm = agent_opts.get("vlm_backend") or _vlm(agent_opts)
    if vlm is None:
        raise SpotConfigError(
            "--robot spot needs a vision model for inspect: --vlm openai:MODEL "
            "(the simulator's VLM cannot see a real robot's camera images)"
        )
    start = scenario.robot.pose
    config = SpotRobotConfig(
        estop="external", episode_start=Pose2D(start.x, start.y, start.yaw_rad)
    )
    with SpotRobot.connect(hostname, vlm=vlm, config=config) as robot:

        def judge(text: str, point: Point3 | None) -> None:
            robot.counters.count("answer", 0.0)
            return None

        yield RobotSession(robot, "spot", judge)
