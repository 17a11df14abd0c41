"""``cluetwin`` end to end: list, show, run (oracle), resume, and logs that survive crashes."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from agents.base import Agent
from agents.episode_log import read_log
from agents.robot import Pose2D
from scenarios import runner
from scenarios.cli import main
from scenarios.loader import find_scenario, load_scenario

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = ("field_cart", "hazard_barrels", "jansport_bag")


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    return rc, out.getvalue(), err.getvalue()


def test_list_shows_the_examples():
    rc, out, _ = run_cli("list")
    assert rc == 0
    rows = {line.split()[0]: line.split()[1:3] for line in out.splitlines()[1:] if line.strip()}
    assert rows["hazard_barrels"] == ["occlusion", "lab"]
    assert rows["field_cart"] == ["functional", "lab"]
    assert rows["jansport_bag"] == ["disambiguation", "office"]


def test_show_writes_pictures(tmp_path):
    rc, out, _ = run_cli("show", "hazard_barrels", "--out", str(tmp_path), "--renderer", "tiny")
    assert rc == 0
    for name in ("topdown.png", "camera_views.png"):
        path = tmp_path / name
        assert f"wrote {path}" in out
        img = np.asarray(Image.open(path).convert("RGB"))
        assert img.shape[0] > 200 and img.shape[1] > 200
        assert float(img.std()) > 10.0  # not a blank canvas
        assert len(np.unique(img.reshape(-1, 3), axis=0)) > 50


@pytest.fixture(scope="module")
def oracle_run(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("oracle_run")
    rc, out, err = run_cli(
        "run", *EXAMPLES, "--policy", "oracle", "--out", str(out_dir), "--renderer", "tiny"
    )
    return rc, out, err, out_dir


def test_oracle_solves_every_example(oracle_run):
    rc, out, err, out_dir = oracle_run
    assert rc == 0, err
    table = [line.split() for line in out.splitlines()]
    rows = {r[0]: r for r in table if r and r[0] in EXAMPLES}
    assert set(rows) == set(EXAMPLES)
    for r in rows.values():
        assert r[1] == "oracle" and r[3] == "yes", r
    with open(out_dir / "results.csv", newline="", encoding="utf-8") as fh:
        results = list(csv.DictReader(fh))
    assert sorted(r["scenario"] for r in results) == sorted(EXAMPLES)
    for r in results:
        assert r["success"] == "True" and r["reward"] == "1.0" and r["error"] == ""
        assert int(r["actions"]) >= 3 and int(r["vlm_calls"]) >= 1


def test_episode_logs_are_complete_jsonl(oracle_run):
    *_, out_dir = oracle_run
    for name in EXAMPLES:
        path = out_dir / "logs" / f"{name}__oracle.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines()
        records = [json.loads(line) for line in lines]  # every line parses
        assert records == read_log(path)
        types = [r["type"] for r in records]
        assert types[0] == "episode" and types[-2:] == ["answer", "result"]
        assert "action" in types
        assert records[0]["scenario"] == name and records[0]["policy"] == "oracle"
        answer = records[-2]
        assert answer["success"] is True and answer["reward"] == 1.0
        stamps = [r["t_wall_s"] for r in records]
        assert stamps == sorted(stamps)


def test_rerun_skips_what_is_done(oracle_run):
    *_, out_dir = oracle_run
    logs = {p.name: p.read_bytes() for p in (out_dir / "logs").iterdir()}
    rc, out, _ = run_cli(
        "run", *EXAMPLES, "--policy", "oracle", "--out", str(out_dir), "--renderer", "tiny"
    )
    assert rc == 0
    assert out.count("already done, skipped") == 3
    assert len((out_dir / "results.jsonl").read_text().splitlines()) == 3
    assert {p.name: p.read_bytes() for p in (out_dir / "logs").iterdir()} == logs
    assert sum(line.split()[:1] in ([n] for n in EXAMPLES) for line in out.splitlines()) == 3


def test_resume_runs_only_the_missing_episode(tmp_path, oracle_run):
    *_, done_dir = oracle_run
    lines = (done_dir / "results.jsonl").read_text().splitlines()
    kept = [line for line in lines if json.loads(line)["scenario"] != "jansport_bag"]
    (tmp_path / "results.jsonl").write_text("\n".join(kept) + "\n")
    rc, out, _ = run_cli(
        "run", *EXAMPLES, "--policy", "oracle", "--out", str(tmp_path), "--renderer", "tiny"
    )
    assert rc == 0
    assert out.count("already done, skipped") == 2
    assert "jansport_bag / oracle: success" in out
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == 3
    with open(tmp_path / "results.csv", newline="", encoding="utf-8") as fh:
        assert len(list(csv.DictReader(fh))) == 3


def test_run_rejects_unknown_policy_and_scenario(tmp_path):
    rc, _, err = run_cli("run", "hazard_barrels", "--policy", "no_such", "--out", str(tmp_path))
    assert rc == 2 and "unknown policy 'no_such'" in err
    rc, _, err = run_cli("run", "no_such_scenario", "--policy", "oracle", "--out", str(tmp_path))
    assert rc == 2 and "no_such_scenario" in err and "Traceback" not in err


class CrashingAgent(Agent):
    """Walks, looks, logs, then fails like a buggy policy."""

    name = "crashing"

    def run(self, task, robot, budget, log):
        here = robot.get_pose()
        robot.goto(Pose2D(here.x_m + 0.5, here.y_m, here.yaw_rad))
        log.write("action", behavior="goto", ok=True, observation="moved 0.5 m")
        frame = robot.capture("body")
        log.write("action", behavior="capture", ok=True, observation=str(frame.rgb.shape))
        raise RuntimeError("policy bug after two actions")


@pytest.fixture
def crashing_policy():
    runner.register_policy("crashing", lambda scenario, opts: CrashingAgent())
    yield "crashing"
    runner.POLICIES.pop("crashing", None)


def test_policy_crash_keeps_the_log(tmp_path, crashing_policy, small_env_kwargs):
    scenario = load_scenario(find_scenario("hazard_barrels"))
    result = runner.run_episode(scenario, crashing_policy, tmp_path, env_kwargs=small_env_kwargs)
    assert result.error == "RuntimeError: policy bug after two actions"
    assert not result.success and not result.answered and result.actions == 1
    records = read_log(tmp_path / "logs" / "hazard_barrels__crashing.jsonl")
    assert [r["type"] for r in records] == ["episode", "action", "action", "error", "result"]
    assert [r["observation"] for r in records[1:3]] == ["moved 0.5 m", "(120, 160, 3)"]
    assert "policy bug" in records[3]["traceback"] and records[4]["error"] == result.error


def test_batch_goes_on_after_a_crash(tmp_path, crashing_policy):
    scenario = load_scenario(find_scenario("field_cart"))
    results = runner.run_batch(
        [scenario],
        [crashing_policy, "oracle"],
        tmp_path,
        env_kwargs={"renderer": "tiny"},
        progress=None,
    )
    assert [(r.policy, r.success, bool(r.error)) for r in results] == [
        ("crashing", False, True),
        ("oracle", True, False),
    ]
    with open(tmp_path / "results.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["policy"] for r in rows] == ["crashing", "oracle"]
    assert rows[0]["error"].startswith("RuntimeError")


SLOW_EPISODE = textwrap.dedent(
    """
    import sys, time
    from agents.base import Agent
    from agents.robot import Pose2D
    from scenarios.loader import find_scenario, load_scenario
    from scenarios.runner import register_policy, run_batch

    class Pacing(Agent):
        name = "pacing"

        def run(self, task, robot, budget, log):
            for k in range(10_000):
                here = robot.get_pose()
                step = 0.3 if k % 2 == 0 else -0.3
                robot.goto(Pose2D(here.x_m + step, here.y_m, here.yaw_rad))
                log.write("action", behavior="goto", step=k, ok=True, observation="x" * 3000)
                print("step", k, flush=True)
                time.sleep(0.01)

    register_policy("pacing", lambda scenario, opts: Pacing())
    scenario = load_scenario(find_scenario("hazard_barrels"))
    run_batch([scenario], ["pacing"], sys.argv[1], env_kwargs={"renderer": "tiny"})
    """
)


def test_log_survives_kill_9(tmp_path):
    script = tmp_path / "slow_episode.py"
    script.write_text(SLOW_EPISODE, encoding="utf-8")
    out_dir = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, str(script), str(out_dir)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    watchdog = threading.Timer(120.0, proc.kill)  # a silent, hung child cannot block us
    watchdog.start()
    try:
        steps = 0
        for line in proc.stdout:
            steps += line.startswith("step")
            if steps >= 8:
                break
        assert steps >= 8, "the episode did not get going"
        os.kill(proc.pid, signal.SIGKILL)  # mid-episode, possibly mid-write
    finally:
        watchdog.cancel()
        proc.kill()
        proc.wait(timeout=30)
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL

    log = out_dir / "logs" / "hazard_barrels__pacing.jsonl"
    lines = log.read_text(encoding="utf-8").split("\n")
    complete, last = lines[:-1], lines[-1]  # last is "" unless the kill tore a line
    for line in complete:
        json.loads(line)
    if last:
        with pytest.raises(json.JSONDecodeError):
            json.loads(last)
    records = read_log(log)
    assert len(records) == len(complete)
    assert records[0]["type"] == "episode"
    actions = [r for r in records if r["type"] == "action"]
    assert len(actions) >= 8
    assert [r["step"] for r in actions] == list(range(len(actions)))  # nothing lost between
    assert not runner.done_pairs(out_dir)  # unfinished: a rerun will redo it
