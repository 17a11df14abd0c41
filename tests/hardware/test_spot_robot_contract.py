"""``hardware.SpotRobot`` -> Spot SDK -> gRPC -> twin, against the robot-interface contract."""

from __future__ import annotations

import pytest

from tests.contract.robot_contract import RobotContract
from tests.hardware.conftest import CLIENT

pytestmark = pytest.mark.spot


class TestSpotRobotContract(RobotContract):
    @pytest.fixture
    def robot_factory(self, spot_twin):
        from hardware.spot_robot import SpotRobot

        def make(scenario):
            spot_twin.load(scenario)
            return SpotRobot.connect(**spot_twin.connect_args(), vlm=spot_twin.vlm(), config=CLIENT)

        return make
