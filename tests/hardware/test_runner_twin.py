"""``cluetwin run --robot twin|spot`` and the runner's robot sessions."""

from __future__ import annotations

import json

import pytest

from hardware.sessions import spot_session
from hardware.spot_robot import SpotConfigError
from scenarios import cli
from scenarios.loader import find_scenario, load_scenario

pytestmark = pytest.mark.spot


def test_cluetwin_run_robot_twin_runs_an_episode_through_the_sdk(tmp_path, capsys):
    argv = ["run", "jansport_bag", "--policy", "oracle", "--robot", "twin", "--renderer", "tiny"]
    assert cli.main([*argv, "--out", str(tmp_path)]) == 0
    (row,) = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert row["success"] and row["error"] is None and row["vlm_calls"] == 1
    header = json.loads((tmp_path / "logs" / "jansport_bag__oracle.jsonl").open().readline())
    assert header["robot"] == "twin"


def test_robot_spot_needs_a_hostname(tmp_path, capsys):
    argv = ["run", "jansport_bag", "--policy", "oracle", "--robot", "spot"]
    assert cli.main([*argv, "--out", str(tmp_path)]) == 2
    assert "--hostname" in capsys.readouterr().err


def test_a_real_spot_needs_a_vision_model_not_the_simulators():
    scenario = load_scenario(find_scenario("jansport_bag"))
    with pytest.raises(SpotConfigError, match="--vlm openai"):
        with spot_session(scenario, "192.168.80.3", {"llm": "heuristic", "vlm": "sim"}):
            pass
