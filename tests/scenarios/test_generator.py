"""The seeded scenario generator: validity at scale, determinism, knobs, Oracle-solvability."""

from __future__ import annotations

import contextlib
import io
from collections import Counter

import pytest

from scenarios.cli import main
from scenarios.generator import (
    FAMILIES,
    GeneratorError,
    Knobs,
    dump_yaml,
    generate,
    generate_scenario,
    generate_yaml,
    oracle_problems,
    write_scenarios,
)
from scenarios.loader import SUITES, load_scenario, parse_scenario, read_yaml

ORACLE_SAMPLE = (0, 1, 2, 3, 4)  # seeds per family that run the Oracle in the test suite


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    return rc, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("family", FAMILIES)
def test_200_scenarios_per_family_validate(family):
    """``generate`` validates every scenario; every tenth also goes through its YAML."""
    outdoor = Counter()
    for seed in range(200):
        data, header = generate(family, seed)  # raises on an invalid scenario
        assert data["task"]["type"] == family
        assert data["success"]["entities"][0] in {o["id"] for o in data["objects"]}
        outdoor[bool(data["environment"].get("outdoor"))] += 1
        if seed % 10 == 0:
            text = dump_yaml(data, header)
            assert parse_scenario(read_yaml(text), f"{family}:{seed}").id == data["id"]
    assert outdoor[True] > 20 and outdoor[False] > 100  # both settings drawn


@pytest.mark.parametrize("family", FAMILIES)
def test_a_seeded_sample_is_oracle_solvable(family, small_env_kwargs):
    for seed in ORACLE_SAMPLE:
        scn = generate_scenario(family, seed)
        assert oracle_problems(scn, small_env_kwargs) == [], (family, seed)


def test_deep_occlusion_is_oracle_solvable(small_env_kwargs):
    """Tarp over a lidded box: two covers to remove before the contents show."""
    for seed in (11, 12):
        scn = generate_scenario("occlusion", seed, Knobs(occlusion_depth=2))
        assert {"tarp", "lid"} <= {o.kind.value for o in scn.objects}
        assert oracle_problems(scn, small_env_kwargs) == []


@pytest.mark.parametrize("family", FAMILIES)
def test_same_seed_same_bytes_other_seed_other_scenario(family):
    a = generate_yaml(family, 7)
    assert a == generate_yaml(family, 7)
    assert a != generate_yaml(family, 8)
    knobs = Knobs(distractors=3, clutter=2, confusability=0.5)
    assert generate_yaml(family, 7, knobs) == generate_yaml(family, 7, knobs)


def test_write_scenarios_is_byte_identical_across_runs(tmp_path):
    first = write_scenarios("retrieval", 40, 3, tmp_path / "a")
    second = write_scenarios("retrieval", 40, 3, tmp_path / "b")
    assert [p.name for p in first] == [f"gen_retrieval_{s:06d}.yaml" for s in (40, 41, 42)]
    for p, q in zip(first, second, strict=True):
        assert p.read_bytes() == q.read_bytes()


def test_setting_one_knob_leaves_the_drawn_others():
    base, _ = generate("functional", 5)
    pinned, _ = generate("functional", 5, Knobs(confusability=0.0))
    assert base["environment"]["extent"] == pinned["environment"]["extent"]
    assert len(base["objects"]) == len(pinned["objects"])


@pytest.mark.parametrize("family", FAMILIES)
def test_knobs_shape_the_scene(family):
    small = generate_scenario(family, 3, Knobs(area_m2=150, distractors=1, clutter=0))
    big = generate_scenario(family, 3, Knobs(area_m2=600, distractors=5, clutter=6))
    area = lambda s: s.environment.extent[2] * s.environment.extent[3]  # noqa: E731
    assert area(small) == pytest.approx(150, rel=0.05)
    assert area(big) == pytest.approx(600, rel=0.05)
    assert len(big.objects) > len(small.objects)
    outdoor = generate_scenario(family, 3, Knobs(outdoor=True))
    indoor = generate_scenario(family, 3, Knobs(outdoor=False))
    assert outdoor.environment.outdoor and not outdoor.environment.walls
    assert not indoor.environment.outdoor and len(indoor.environment.walls) == 4


def test_confusability_sets_how_alike_the_distractors_look():
    for seed in range(5):
        same = generate_scenario("disambiguation", seed, Knobs(distractors=4, confusability=1.0))
        target = same.object(same.success.entities[0])
        twins = [o for o in same.objects if o.appearance == target.appearance]
        assert len(twins) == 5  # all four distractors look exactly like the target
        mixed = generate_scenario("disambiguation", seed, Knobs(distractors=4, confusability=0.0))
        target = mixed.object(mixed.success.entities[0])
        assert [o.id for o in mixed.objects if o.appearance == target.appearance] == [target.id]


def test_occlusion_depth_sets_the_covers():
    for seed in range(6):
        deep = generate_scenario("occlusion", seed, Knobs(occlusion_depth=2))
        target = deep.object(deep.success.entities[0])
        tarps = [o for o in deep.objects if target.id in o.covers]
        lids = [o for o in deep.objects if o.on == target.id and o.kind.value == "lid"]
        assert len(tarps) == 1 and len(lids) == 1
        assert [s.action for s in deep.oracle].count("grasp") == 2
        shallow = generate_scenario("occlusion", seed, Knobs(occlusion_depth=1))
        target = shallow.object(shallow.success.entities[0])
        covers = [o for o in shallow.objects if target.id in o.covers or o.on == target.id]
        assert [s.action for s in shallow.oracle].count("grasp") == 1
        assert any(o.kind.value in ("tarp", "lid") for o in covers)
        # the decisive fact is hidden until a cover is gone
        hidden = [f for o in shallow.objects for f in o.facts if f.visible_when is not None]
        assert len(hidden) >= 2


def test_retrieval_has_exactly_one_item_satisfying_both_relations():
    for seed in range(30):
        scn = generate_scenario("retrieval", seed, Knobs(confusability=1.0))
        target = scn.object(scn.success.entities[0])
        surface = scn.object(target.on)

        landmarks = {}
        for o in scn.objects:
            if o.on is not None and o.kind.value == "misc":
                landmarks.setdefault(o.on, []).append(o.appearance)

        matching = [
            o.id
            for o in scn.objects
            if o.appearance == target.appearance
            and o.on is not None
            and scn.object(o.on).appearance == surface.appearance
            and landmarks.get(o.on) == landmarks.get(surface.id)
        ]
        assert matching == [target.id], seed
        assert len([o for o in scn.objects if o.appearance == target.appearance]) >= 2


@pytest.mark.parametrize(
    ("knobs", "message"),
    [
        (Knobs(area_m2=20), "an area of 20 m2 holds"),
        (Knobs(distractors=0), "at least 1"),
        (Knobs(confusability=1.5), "confusability"),
        (Knobs(occlusion_depth=3), "occlusion depth"),
        (Knobs(clutter=-1), "clutter"),
    ],
)
def test_bad_knobs_are_named(knobs, message):
    with pytest.raises(GeneratorError, match=message):
        generate("occlusion", 0, knobs)


def test_unknown_family_and_negative_seed():
    with pytest.raises(GeneratorError, match="unknown family"):
        generate("juggling", 0)
    with pytest.raises(GeneratorError, match="seed"):
        generate("functional", -1)


def test_cli_generate_writes_checks_and_names_bad_knobs(tmp_path):
    rc, out, _ = run_cli(
        "generate",
        "occlusion",
        "--seed",
        "4",
        "--count",
        "2",
        "--out",
        str(tmp_path),
        "--occlusion-depth",
        "2",
        "--check",
    )
    assert rc == 0, out
    assert out.count("oracle: ok") == 2 and "0 not solvable" in out
    files = sorted(tmp_path.glob("*.yaml"))
    assert [f.name for f in files] == ["gen_occlusion_000004.yaml", "gen_occlusion_000005.yaml"]
    text = files[0].read_text(encoding="utf-8")
    header = text.split("\nid:")[0]
    assert (
        "Regenerate: cluetwin generate occlusion --seed 4 --count 1 --occlusion-depth 2" in header
    )
    assert load_scenario(files[0]).id == "gen_occlusion_000004"
    rc, _, err = run_cli("generate", "retrieval", "--area", "20", "--out", str(tmp_path / "x"))
    assert rc == 2 and "raise --area" in err


def test_the_yaml_writer_round_trips_the_shipped_scenarios():
    for path in sorted(SUITES["examples"].glob("*.yaml")) + sorted(SUITES["paper"].glob("*.yaml")):
        data = read_yaml(path.read_text(encoding="utf-8"))
        data["staging_notes"] = data.get("staging_notes", "").strip()
        assert read_yaml(dump_yaml(data, "a header\nof two lines")) == data, path.name


def test_the_yaml_writer_quotes_what_yaml_would_misread():
    data = {
        "a": "yes",
        "b": "on",
        "c": "x: y",
        "d": "# not a comment",
        "e": "10",
        "f": ["a, b", "c?"],
        "g": "trailing ",
        "h": -0.0,
        "i": [{"k": "v, w"}],
        "j": "word " * 40,
        "k": ("folded " * 30).strip(),
        "l": ["a list item long enough to need folding, " * 4],
    }
    text = dump_yaml(data)
    assert ">-" in text
    assert read_yaml(text) == data


def test_a_generated_folder_is_a_scenario_list(tmp_path):
    from scenarios.loader import ScenarioError, resolve_names

    code, _, err = run_cli(
        "generate", "functional", "--seed", "3", "--count", "2", "--out", str(tmp_path)
    )
    assert code == 0, err
    files = resolve_names([tmp_path])
    assert [f.name for f in files] == sorted(p.name for p in tmp_path.glob("*.yaml"))
    assert len(files) == 2
    (tmp_path / "empty").mkdir()
    with pytest.raises(ScenarioError, match="no scenario files"):
        resolve_names([tmp_path / "empty"])
