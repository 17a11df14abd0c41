"""Spot hardware: ``SpotRobot`` (the robot interface on bosdyn-client) and a Spot-API twin.

Needs the ``spot`` extra (``pip install '.[spot]'``); importing ``hardware`` itself does
not, so the rest of the project never depends on bosdyn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hardware.spot_robot import SpotRobot, SpotRobotConfig
    from hardware.twin import SpotTwin, TwinConfig

__all__ = ["SpotRobot", "SpotRobotConfig", "SpotTwin", "TwinConfig"]

_HOMES = {
    "SpotRobot": "hardware.spot_robot",
    "SpotRobotConfig": "hardware.spot_robot",
    "SpotTwin": "hardware.twin",
    "TwinConfig": "hardware.twin",
}


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'hardware' has no attribute {name!r}")
    import importlib

    try:
        module = importlib.import_module(_HOMES[name])
    except ImportError as exc:
        raise ImportError(
            f"hardware.{name} needs the Spot SDK: pip install '.[spot]' ({exc})"
        ) from exc
    return getattr(module, name)
