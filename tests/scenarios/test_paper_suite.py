"""The paper suite (``scenarios/paper``): the CLUE paper's 15 tasks in three environments.

Composition as in the paper's Experiments section (9 lab, 3 office, 3 outdoor; 6
disambiguation, 6 functional, 3 occlusion), environments of the stated sizes shared by
their tasks, look-alike distractors for every target, and an Oracle that solves every
task with each instruction executed and the decisive fact visible at its inspection.
"""

from __future__ import annotations

import contextlib
import csv
import io
import math
import os
from collections import Counter
from pathlib import Path

import pytest

from scenarios.cli import main
from scenarios.generator import oracle_problems
from scenarios.loader import SUITES, load_scenario, resolve_names

PAPER = sorted(SUITES["paper"].glob("*.yaml"))
SCENARIOS = {p.stem: load_scenario(p) for p in PAPER}
ENV_AREA_M2 = {"lab": 100.0, "office": 250.0, "outdoor_park": 1000.0}
DOORWAY_MIN_M = 1.6  # clear width the robot's base (about 1 m with clearance) needs


def test_every_file_validates_and_is_named_by_its_id():
    assert len(PAPER) == 15
    for path, scn in zip(PAPER, SCENARIOS.values(), strict=True):
        assert scn.id == path.stem
        assert scn.id.startswith(scn.environment.name.split("_")[0] + "_"), scn.id


def test_composition_matches_the_paper():
    envs = Counter(s.environment.name for s in SCENARIOS.values())
    types = Counter(s.task.type.value for s in SCENARIOS.values())
    assert envs == {"lab": 9, "office": 3, "outdoor_park": 3}
    assert types == {"disambiguation": 6, "functional": 6, "occlusion": 3}
    lab = Counter(s.task.type.value for s in SCENARIOS.values() if s.environment.name == "lab")
    assert lab == {"disambiguation": 3, "functional": 3, "occlusion": 3}  # as in Table 2


def test_the_papers_examples_are_included():
    texts = {s.id: s.task.text for s in SCENARIOS.values()}
    assert texts["lab_01_hazard_barrel"] == "Locate the barrel with the hazardous content."
    assert texts["lab_02_field_cart"].startswith(
        "I need something to transport equipment for field experiments"
    )
    assert texts["office_01_robot_cart"] == "I need something to carry my robot outside."
    assert "JanSport" in texts["office_02_jansport_bag"]
    hazard = SCENARIOS["lab_01_hazard_barrel"]
    barrels = [o for o in hazard.objects if "barrel" in o.appearance]
    tarps = [o for o in hazard.objects if o.kind.value == "tarp"]
    assert len(barrels) == 3 and len(tarps) == 2  # one open false positive, two under tarps
    signs = " ".join(f.text for o in hazard.objects if o.kind.value == "sign" for f in o.facts)
    assert "water" in signs and "corrosive" in signs


@pytest.mark.parametrize("env_name", sorted(ENV_AREA_M2))
def test_environments_have_the_papers_sizes_and_are_shared(env_name):
    tasks = [s for s in SCENARIOS.values() if s.environment.name == env_name]
    env = tasks[0].environment
    x0, y0, x1, y1 = env.extent
    assert (x1 - x0) * (y1 - y0) == pytest.approx(ENV_AREA_M2[env_name], rel=0.1)
    for s in tasks[1:]:
        assert s.environment == env, f"{s.id} changes the {env_name} layout"
    # fixtures (present in every task of the environment) are identical everywhere
    common = set.intersection(*({o.id for o in s.objects} for s in tasks))
    assert len(common) >= 10
    for oid in common:
        first = tasks[0].object(oid)
        assert all(s.object(oid) == first for s in tasks), oid
    if env_name == "outdoor_park":
        assert env.outdoor and len(env.walls) <= 3
    if env_name == "office":
        assert len(env.rooms) >= 5


def test_office_doorways_fit_the_robot():
    env = SCENARIOS["office_01_robot_cart"].environment
    lines: dict[tuple[str, float], list[tuple[float, float, float]]] = {}
    for w in env.walls:
        (ax, ay), (bx, by) = w.start, w.end
        if ay == by:
            lines.setdefault(("y", ay), []).append((min(ax, bx), max(ax, bx), w.thickness))
        elif ax == bx:
            lines.setdefault(("x", ax), []).append((min(ay, by), max(ay, by), w.thickness))
    gaps = []
    for segments in lines.values():
        segments.sort()
        for (_, end, t0), (start, _, t1) in zip(segments, segments[1:], strict=False):
            if start > end:  # a doorway; walls reach half their thickness past the ends
                gaps.append(start - end - (t0 + t1) / 2)
    assert len(gaps) >= 6
    assert min(gaps) >= DOORWAY_MIN_M


def test_budgets_and_object_counts_keep_episodes_fast():
    for s in SCENARIOS.values():
        assert 20 <= s.task.budget <= 30, s.id
        assert 10 <= len(s.objects) <= 25, s.id
        assert s.staging_notes and s.oracle


def test_wording_varies():
    texts = [s.task.text for s in SCENARIOS.values()]
    assert len(set(texts)) == 15
    openings = Counter(" ".join(t.lower().split()[:2]) for t in texts)
    assert max(openings.values()) <= 2, openings


def _words(phrase: str) -> set[str]:
    stop = {"a", "an", "the", "with", "on", "of", "and", "as", "used", "over", "in", "for"}
    return {w for w in phrase.lower().replace("-", " ").split() if w not in stop}


def test_every_target_has_look_alikes():
    """Distractors a map would confuse with the target: an appearance phrase that shares
    words with the target's (the simulated feature model embeds exactly these phrases)."""
    for s in SCENARIOS.values():
        targets = set(s.success.entities)
        target = s.object(s.success.entities[0])
        alike = [
            o.id
            for o in s.objects
            if o.id not in targets
            and o.kind.value not in ("tarp", "lid", "sign")
            and _words(o.appearance) & _words(target.appearance)
        ]
        assert alike, f"{s.id}: nothing looks like {target.appearance!r}"


def test_facts_describe_what_a_camera_sees_not_the_answer():
    banned = ("target", "answer", "correct", "the one you", "success")
    for s in SCENARIOS.values():
        for o in s.objects:
            for f in o.facts:
                assert not any(b in f.text.lower() for b in banned), (s.id, o.id, f.text)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_oracle_solves_it_with_the_decisive_fact_in_view(name, small_env_kwargs):
    assert oracle_problems(SCENARIOS[name], small_env_kwargs) == []


def test_cluetwin_run_paper_oracle(tmp_path):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(
            ["run", "paper", "--policy", "oracle", "--out", str(tmp_path), "--renderer", "tiny"]
        )
    assert rc == 0, err.getvalue()
    assert [p.stem for p in resolve_names(["paper"])] == [p.stem for p in PAPER]
    with open(tmp_path / "results.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 15
    assert all(r["success"] == "True" for r in rows), [r["scenario"] for r in rows]
    sim_time = [float(r["sim_time_s"]) for r in rows]
    assert all(0 < t < 120 for t in sim_time) and math.fsum(sim_time) > 0
    assert os.path.getsize(Path(tmp_path) / "results.jsonl") > 0
