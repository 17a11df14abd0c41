"""Gymnasium environments on pybullet and the simulator side of the robot interface."""

from gymnasium.envs.registration import register, registry

from envs.rendering import CameraSpec
from envs.sim_robot import SimRobot
from envs.spot_world_env import SpotWorldEnv

ENV_IDS = ("SpotWorld-v0",)

if "SpotWorld-v0" not in registry:
    register(id="SpotWorld-v0", entry_point="envs.spot_world_env:SpotWorldEnv")

__all__ = ["ENV_IDS", "CameraSpec", "SimRobot", "SpotWorldEnv"]
