"""World model: what the robot does to the world shows in its map."""

from __future__ import annotations

import numpy as np
import pytest

from agents.clue import default_encoder
from agents.clue.world_model import WorldModel
from agents.robot import Point3, Pose2D
from envs import SimRobot, SpotWorldEnv
from scenarios.loader import find_scenario, load_scenario


@pytest.fixture
def barrels():
    env = SpotWorldEnv(load_scenario(find_scenario("hazard_barrels")), renderer="tiny")
    env.reset(seed=0)
    robot = SimRobot(env)
    wm = WorldModel(robot, default_encoder())
    try:
        yield env, robot, wm
    finally:
        wm.close()
        env.close()


def tarps_near(wm: WorldModel, xy, radius=0.5) -> list[str]:
    """The map's tarp candidates within ``radius`` of ``xy`` (their graph nodes)."""
    _, result = wm.query("tarp")
    return [
        wm.node_for("tarp", c) for c in result.candidates if np.hypot(*(c.xy - xy)) <= radius
    ]


@pytest.mark.parametrize("forget", [True, False])
def test_a_lifted_cover_is_forgotten_where_it_lay(barrels, forget):
    """Lifting a tarp off a barrel leaves its voxels a hand's width in front of the
    barrel, closer than carving reaches; ``forget`` frees them, so the tarp is no longer
    found where it lay (without it, the map keeps a ghost tarp there)."""
    env, robot, wm = barrels
    wm.walk(Pose2D(5.1, 7.6, 0.0))  # west of barrel_2 under tarp_2
    lay = np.array([6.4, 7.6])
    (tarp,) = tarps_near(wm, lay)
    robot.grasp(wm.point(tarp))
    assert env.holding == "tarp_2"
    freed = wm.forget(tarp) if forget else 0
    robot.place(Point3(4.0, 6.6, 0.0))
    wm.walk(Pose2D(5.0, 7.6, 0.0))  # look again from where it was lifted
    if forget:
        assert freed > 20 and tarps_near(wm, lay) == []
    else:
        assert tarps_near(wm, lay), "carving alone removes the ghost: forget is not needed"
