"""CI regression gate: the paper suite's outcomes per policy are pinned.

Runs the 15 paper tasks with the Oracle, heuristic CLUE, map-then-query and NLMaps
(TinyRenderer, the deterministic CPU rasteriser) and compares each (policy, task)
outcome with ``scenarios/paper/pinned_outcomes.json``. A change that flips an outcome fails with one
readable line per task. After an intended change, re-pin with::

    cluetwin run paper --policy oracle --policy clue --policy map-then-query --policy nlmaps \\
        --renderer tiny --out runs/pin
    cluetwin report runs/pin --pin scenarios/paper/pinned_outcomes.json
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.episode_log import read_log
from scenarios.loader import PACKAGE_DIR, load_scenario, resolve_names
from scenarios.report import check_pins, read_episodes
from scenarios.runner import run_batch

PINS = PACKAGE_DIR / "paper" / "pinned_outcomes.json"
POLICIES = ("oracle", "clue", "map-then-query", "nlmaps")


@pytest.mark.slow
def test_paper_suite_outcomes_hold(tmp_path: Path):
    scenarios = [load_scenario(f) for f in resolve_names(["paper"])]
    run_batch(scenarios, POLICIES, tmp_path, env_kwargs={"renderer": "tiny"}, progress=None)
    episodes = read_episodes(tmp_path)
    changes = check_pins(episodes, PINS)
    assert not changes, "pinned outcomes changed:\n" + "\n".join(changes)

    wins = {p: sum(e.success for e in episodes if e.method == p) for p in POLICIES}
    # the paper's ordering (Table 1, and DAAAM in Table 2)
    assert wins["oracle"] >= wins["clue"] > wins["map-then-query"] >= wins["nlmaps"], wins
    for e in episodes:  # NLMaps fails only by trusting a false positive of its one query
        if e.method != "nlmaps" or e.success:
            continue
        records = read_log(tmp_path / "logs" / f"{e.scenario}__nlmaps.jsonl")
        query = next(r for r in records if r["type"] == "action" and r["behavior"] == "query")
        answer = next(r for r in records if r["type"] == "answer")
        assert answer["entity"] and f"name={answer['entity']}" in " ".join(query["graph_ops"]), (
            f"{e.scenario}: NLMaps did not answer with a candidate of its query"
        )
        assert answer["hit"], f"{e.scenario}: NLMaps' answer points at no object"
