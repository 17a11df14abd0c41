"""CI regression gate: the paper suite's outcomes per policy are pinned.

Runs the 15 paper tasks with the Oracle, heuristic CLUE and NLMaps (TinyRenderer, the
deterministic CPU rasteriser) and compares each (policy, task) outcome with
``scenarios/paper/pinned_outcomes.json``. A change that flips an outcome fails with one
readable line per task. After an intended change, re-pin with::

    cluetwin run paper --policy oracle --policy clue --policy nlmaps --renderer tiny --out runs/pin
    cluetwin report runs/pin --pin scenarios/paper/pinned_outcomes.json
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scenarios.loader import PACKAGE_DIR, load_scenario, resolve_names
from scenarios.report import check_pins, read_episodes
from scenarios.runner import run_batch

PINS = PACKAGE_DIR / "paper" / "pinned_outcomes.json"
POLICIES = ("oracle", "clue", "nlmaps")


@pytest.mark.slow
def test_paper_suite_outcomes_hold(tmp_path: Path):
    scenarios = [load_scenario(f) for f in resolve_names(["paper"])]
    run_batch(scenarios, POLICIES, tmp_path, env_kwargs={"renderer": "tiny"}, progress=None)
    changes = check_pins(read_episodes(tmp_path), PINS)
    assert not changes, "pinned outcomes changed:\n" + "\n".join(changes)
