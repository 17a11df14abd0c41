"""Scenario validation: every broken file is rejected with FILE: PATH: message, no traceback.

Each case loads a shipped example as data, breaks one thing, writes it to a temporary
file and checks the exact file name, the path inside the file and the gist of the
message in ``ScenarioError.render()``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from scenarios.cli import main
from scenarios.loader import (
    Issue,
    ScenarioError,
    load_scenario,
    parse_scenario,
    read_yaml,
    scenario_files,
)

REPO = Path(__file__).resolve().parents[2]

# hazard_barrels objects: 0 barrel_1, 1 sign_1, 2 tarp_1, 3 barrel_2, 4 sign_2, 5 tarp_2,
# 6 bin_1, 7 table_1, 8 toolbox_1, 9 shelf_1


def _set(path: str, value) -> Callable[[dict], None]:
    """A mutation that sets ``a.b[2].c`` (dots and indices) to ``value``."""

    def mutate(data: dict) -> None:
        keys = [int(k) if k.isdigit() else k for k in re.findall(r"[^.\[\]]+", path)]
        node = data
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value

    return mutate


def _drop(path: str) -> Callable[[dict], None]:
    def mutate(data: dict) -> None:
        keys = [int(k) if k.isdigit() else k for k in re.findall(r"[^.\[\]]+", path)]
        node = data
        for k in keys[:-1]:
            node = node[k]
        del node[keys[-1]]

    return mutate


def _add_fact(index: int, fact: dict) -> Callable[[dict], None]:
    def mutate(data: dict) -> None:
        data["objects"][index].setdefault("facts", []).append(fact)

    return mutate


# (case id, mutation, path inside the file, regex for the message)
CASES = [
    ("unknown_root_key", _set("colour_scheme", "dark"), "colour_scheme", r"unknown key"),
    (
        "unknown_nested_key",
        _set("objects[3].weight_kg", 30),
        "objects[3].weight_kg",
        r"unknown key",
    ),
    (
        "unknown_deep_key",
        _set("environment.regions[0].radius", 1.0),
        "environment.regions[0].radius",
        r"unknown key",
    ),
    (
        "dangling_on",
        _set("objects[1].on", "barrel_9"),
        "objects[1].on",
        r"unknown object 'barrel_9'",
    ),
    (
        "dangling_covers",
        _set("objects[5].covers", ["barrel_9"]),
        "objects[5].covers[0]",
        r"unknown object 'barrel_9'",
    ),
    (
        "dangling_success_entity",
        _set("success.entities", ["barrel_7"]),
        "success.entities[0]",
        r"unknown object 'barrel_7'",
    ),
    (
        "dangling_oracle_object",
        _set("oracle[1].object", "tarp_9"),
        "oracle[1].object",
        r"unknown object 'tarp_9'",
    ),
    (
        "dangling_oracle_region",
        _set("oracle[2].region", "nowhere"),
        "oracle[2].region",
        r"unknown region 'nowhere'; known regions: drop_zone",
    ),
    (
        "dangling_fact_condition",
        _set("objects[4].facts[0].visible_when", {"not_covered_by": "tarp_9"}),
        "objects[4].facts[0].visible_when",
        r"unknown object 'tarp_9'",
    ),
    ("duplicate_id", _set("objects[7].id", "bin_1"), "objects[7].id", r"duplicate id 'bin_1'"),
    (
        "overlapping_objects",
        _set("objects[6].pose", {"x": 7.4, "y": 3.4}),
        "objects[6].pose",
        r"'bin_1' overlaps 'barrel_1' \(objects\[0\]\)",
    ),
    (
        "object_in_a_wall",
        _set("objects[6].pose", {"x": 0.3, "y": 4.6}),
        "objects[6].pose",
        r"'bin_1' overlaps environment\.walls\[3\]",
    ),
    (
        "out_of_bounds_pose",
        _set("objects[6].pose", {"x": -3.0, "y": 4.6}),
        "objects[6].pose",
        r"leaves the environment extent",
    ),
    (
        "robot_inside_object",
        _set("robot.pose", {"x": 3.0, "y": 4.6}),
        "robot.pose",
        r"the robot starts inside 'bin_1'",
    ),
    (
        "robot_inside_wall",
        _set("robot.pose", {"x": 0.2, "y": 5.0, "yaw_deg": 90}),
        "robot.pose",
        r"the robot starts inside environment\.walls\[3\]",
    ),
    (
        "region_outside_extent",
        _set("environment.regions[0].x", 20.0),
        "environment.regions[0]",
        r"'drop_zone' lies outside the extent",
    ),
    ("wrong_type_size", _set("objects[0].size", "big"), "objects[0].size", r"valid tuple"),
    ("wrong_type_budget", _set("task.budget", "many"), "task.budget", r"valid integer"),
    ("budget_too_large", _set("task.budget", 100000), "task.budget", r"less than or equal to 500"),
    ("missing_task_text", _drop("task.text"), "task.text", r"required field is missing"),
    (
        "missing_object_kind",
        _drop("objects[2].kind"),
        "objects[2].kind",
        r"required field is missing",
    ),
    (
        "unknown_task_type",
        _set("task.type", "search"),
        "task.type",
        r"'disambiguation', 'functional', 'occlusion' or 'retrieval'",
    ),
    (
        "opened_without_lid",
        _add_fact(6, {"text": "full of paper", "visible_when": {"opened": "bin_1"}}),
        "objects[6].facts[1].visible_when.opened",
        r"'bin_1' has no lid",
    ),
    (
        "two_conditions",
        _set("objects[4].facts[0].visible_when", {"not_covered_by": "tarp_2", "opened": "x"}),
        "objects[4].facts[0].visible_when",
        r"exactly one of 'not_covered_by' or 'opened'",
    ),
    (
        "bad_colour_name",
        _set("objects[0].colour", "chartreuse"),
        "objects[0].colour",
        r"unknown colour 'chartreuse'; use an RGB triple",
    ),
    (
        "colour_out_of_range",
        _set("objects[0].colour", [1.2, 0.0, 0.0]),
        "objects[0].colour[0]",
        r"less than or equal to 1",
    ),
    (
        "negative_size",
        _set("objects[0].size", [0.58, -0.58, 0.88]),
        "objects[0].size",
        r"every size component must be > 0",
    ),
    ("bad_identifier", _set("objects[0].id", "1barrel"), "objects[0].id", r"should match pattern"),
    (
        "drape_covers_nothing",
        _drop("objects[5].covers"),
        "objects[5]",
        r"must list what it 'covers'",
    ),
    ("rests_on_itself", _set("objects[1].on", "sign_1"), "objects[1]", r"rest on or in itself"),
    (
        "oracle_step_without_argument",
        _drop("oracle[1].object"),
        "oracle[1]",
        r"'grasp' needs object",
    ),
    ("empty_success", _set("success", {}), "success", r"give at least one of"),
    (
        "reversed_extent",
        _set("environment.extent", [10, 0, 0, 10]),
        "environment.extent",
        r"x_min < x_max",
    ),
]


def _write(tmp_path: Path, name: str, data) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _assert_issue(err: ScenarioError, file: Path, where: str, gist: str) -> None:
    rendered = err.render()
    assert "Traceback" not in rendered
    lines = [ln for ln in rendered.splitlines() if ln.startswith(f"{file}: {where}: ")]
    assert lines, f"no line for {file}: {where}: in\n{rendered}"
    assert any(re.search(gist, ln) for ln in lines), rendered
    assert Issue(where, lines[0].split(": ", 2)[2]) in err.issues
    assert err.file == str(file)


@pytest.mark.parametrize(
    ("mutate", "where", "gist"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_malformed_scenario_names_file_and_field(tmp_path, example_data, mutate, where, gist):
    data = example_data("hazard_barrels")
    mutate(data)
    path = _write(tmp_path, "broken", data)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    _assert_issue(info.value, path, where, gist)


@pytest.mark.parametrize(
    ("text", "where", "gist"),
    [
        ("id: x\ntitle: [unclosed\n", "line 3, column 1", r"invalid YAML: expected ',' or ']'"),
        ("id: x\n  title: bad indent\n", "line 2, column 8", r"invalid YAML: mapping values"),
        ("id: x\nobjects:\n\t- a\n", "line 3, column 1", r"invalid YAML: found character '\\t'"),
        ("- a\n- b\n", "<root>", r"must hold a mapping"),
        ("", "<root>", r"must hold a mapping"),
    ],
    ids=["unclosed_bracket", "bad_indent", "tab", "a_list", "empty_file"],
)
def test_unreadable_yaml_names_the_line(tmp_path, text, where, gist):
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    rendered = info.value.render()
    assert rendered.startswith(f"{path}: {where}: ")
    assert re.search(gist, rendered), rendered


def test_missing_file(tmp_path):
    with pytest.raises(ScenarioError, match="cannot read file"):
        load_scenario(tmp_path / "absent.yaml")


def test_every_problem_is_reported_at_once(tmp_path, example_data):
    data = example_data("hazard_barrels")
    for case in ("bad_colour_name", "negative_size", "missing_task_text"):
        next(c for c in CASES if c[0] == case)[1](data)
    path = _write(tmp_path, "many", data)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    paths = {i.path for i in info.value.issues}
    assert {"objects[0].colour", "objects[0].size", "task.text"} <= paths


@pytest.mark.parametrize("path", scenario_files(), ids=lambda p: p.stem)
def test_shipped_scenarios_validate(path):
    scenario = load_scenario(path)
    assert scenario.id == path.stem
    assert scenario.oracle and scenario.task.budget >= len(scenario.oracle)


def test_the_three_examples_are_shipped():
    stems = {p.stem for p in scenario_files()}
    assert {"hazard_barrels", "field_cart", "jansport_bag"} <= stems


def test_yaml_12_booleans_keep_on_a_key():
    data = read_yaml("on: barrel_1\noff: 3\nyes: no\ny: n\nflag: true\nother: False\n")
    assert data == {"on": "barrel_1", "off": 3, "yes": "no", "y": "n", "flag": True, "other": False}
    scenario = load_scenario(next(p for p in scenario_files() if p.stem == "hazard_barrels"))
    assert scenario.object("sign_1").on == "barrel_1"
    assert scenario.object("tarp_1").graspable is True


def test_on_written_unquoted_in_a_file(tmp_path, example_data):
    data = example_data("hazard_barrels")
    text = yaml.safe_dump(data, sort_keys=False).replace("'on':", "on:")
    assert "\n  on: barrel_1" in text
    path = tmp_path / "unquoted.yaml"
    path.write_text(text, encoding="utf-8")
    assert load_scenario(path).object("sign_2").on == "barrel_2"


def test_parse_scenario_rejects_a_non_mapping():
    with pytest.raises(ScenarioError, match="must hold a mapping"):
        parse_scenario(["not", "a", "mapping"], "list.yaml")


# ---------------------------------------------------------------- cluetwin validate


def test_cli_validate_accepts_the_examples(capsys):
    assert main(["validate", *map(str, scenario_files())]) == 0
    out = capsys.readouterr().out
    assert out.count("ok ") >= 3 and re.search(r"\b\d+ valid, 0 invalid", out)


def test_cli_validate_rejects_a_broken_file(tmp_path, example_data, capsys):
    good = _write(tmp_path, "good", example_data("field_cart"))
    data = example_data("hazard_barrels")
    _set("objects[6].pose", {"x": 7.4, "y": 3.4})(data)
    bad = _write(tmp_path, "bad", data)
    assert main(["validate", str(good), str(bad)]) == 1
    captured = capsys.readouterr()
    assert f"ok       {good}" in captured.out and "1 valid, 1 invalid" in captured.out
    assert f"{bad}: objects[6].pose: 'bin_1' overlaps 'barrel_1'" in captured.err
    assert "Traceback" not in captured.err + captured.out

    assert main(["validate", str(tmp_path)]) == 1  # a folder: every *.yaml in it
    assert "1 valid, 1 invalid" in capsys.readouterr().out
    assert main(["validate", str(tmp_path / "absent.yaml")]) == 1
    assert "cannot read file" in capsys.readouterr().err


def test_cli_validate_with_nothing_to_check_fails(tmp_path, capsys):
    assert main(["validate", str(tmp_path)]) == 1  # an empty folder is not a pass
    assert "0 valid, 0 invalid" in capsys.readouterr().out
    with pytest.raises(SystemExit) as info:
        main(["validate"])
    assert info.value.code == 2


def test_cli_validate_as_a_process(tmp_path, example_data):
    good = _write(tmp_path, "good", example_data("jansport_bag"))
    data = example_data("jansport_bag")
    _set("objects[2].colour", "chartreuse")(data)
    bad = _write(tmp_path, "bad", data)
    script = Path(sys.executable).with_name("cluetwin")
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "scenarios.cli"]
    proc = subprocess.run(
        [*cmd, "validate", str(good), str(bad)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert f"{bad}: objects[2].colour: unknown colour 'chartreuse'" in proc.stderr
    assert f"ok       {good}" in proc.stdout
    assert "Traceback" not in proc.stderr + proc.stdout
