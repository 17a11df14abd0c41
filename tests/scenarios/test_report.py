"""Reports on synthetic runs: Table 1 (Markdown, CSV, figure) and run-to-run comparison."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from scenarios.cli import main
from scenarios.report import (
    ReportError,
    bootstrap_ci,
    compare,
    read_episodes,
    report_compare,
    report_run,
    table1,
)

TYPES = ["disambiguation"] * 2 + ["functional"] * 2 + ["occlusion"] * 2


def episode(
    scenario,
    policy,
    task_type,
    success,
    actions=4,
    sim=100.0,
    llm=(0, 0, 0),
    vlm=(1, 500, 100),
    error=None,
) -> dict:
    return {
        "scenario": scenario,
        "policy": policy,
        "task_type": task_type,
        "success": success,
        "reward": 1.0 if success else -1.0,
        "answered": True,
        "actions": actions,
        "sim_time_s": sim,
        "wall_time_s": 0.5,
        "llm_calls": llm[0],
        "llm_prompt_tokens": llm[1],
        "llm_completion_tokens": llm[2],
        "vlm_calls": vlm[0],
        "vlm_prompt_tokens": vlm[1],
        "vlm_completion_tokens": vlm[2],
        "answer": "",
        "hit": None,
        "error": error,
        "log": "",
    }


def write_run(folder: Path, rows: list[dict], extra_lines: tuple[str, ...] = ()) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(r) for r in rows] + list(extra_lines)
    (folder / "results.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def paper_like_run(folder: Path, clue_success=(1, 1, 1, 1, 1, 0)) -> Path:
    rows = []
    for i, t in enumerate(TYPES):
        s = f"task_{i}"
        rows.append(
            episode(s, "oracle", t, True, actions=3 + i % 2, sim=60.0 + 10 * i, vlm=(1, 400, 100))
        )
        rows.append(
            episode(
                s,
                "clue",
                t,
                bool(clue_success[i]),
                actions=2 * (i + 1),
                sim=100.0 + 20 * i,
                llm=(i + 1, 1000 * (i + 1), 200 * (i + 1)),
                vlm=(2, 800, 200),
            )
        )
        rows.append(
            episode(s, "nlmaps", t, i == 0, actions=4, sim=50.0, llm=(1, 900, 100), vlm=(0, 0, 0))
        )
    return write_run(folder, rows)


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    return rc, out.getvalue(), err.getvalue()


def test_table1_has_the_papers_layout_and_numbers(tmp_path):
    md, files = report_run(paper_like_run(tmp_path / "run"))
    lines = md.strip().splitlines()
    assert lines[0] == (
        "| Method | Dis. | Func. | Occl. | Overall | Actions | Time (s) | LLM calls | "
        "LLM tok (k) | VLM calls | VLM tok (k) | n | errors |"
    )
    rows = {
        line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]] for line in lines[2:]
    }
    assert list(rows) == ["oracle", "clue", "nlmaps"]  # the paper's order
    clue = rows["clue"]
    assert clue[:4] == ["100.0%", "100.0%", "50.0%", "83.3%"]
    # actions 2, 4, ..., 12: mean 7, sample std 3.74; LLM tokens 1.2k .. 7.2k
    assert clue[4] == "7.0±3.7"
    assert clue[5] == "150.0±37.4"
    assert clue[6] == "3.5±1.9"
    assert clue[7] == "4.2±2.2"
    assert clue[8] == "2.0±0.0" and clue[9] == "1.0±0.0"
    assert clue[10:] == ["6", "0"]
    assert rows["nlmaps"][:4] == ["50.0%", "0.0%", "0.0%", "16.7%"]
    assert [f.name for f in files] == ["table1.md", "table1.csv", "table1.png"]
    assert (tmp_path / "run" / "report" / "table1.md").read_text(encoding="utf-8") == md


def test_table1_csv_holds_rates_counts_means_and_stds(tmp_path):
    report_run(paper_like_run(tmp_path / "run"), figure=False)
    with open(tmp_path / "run" / "report" / "table1.csv", newline="", encoding="utf-8") as fh:
        rows = {r["method"]: r for r in csv.DictReader(fh)}
    clue = rows["clue"]
    assert float(clue["success_rate"]) == pytest.approx(5 / 6, abs=1e-4)
    assert clue["occlusion_successes"] == "1" and clue["occlusion_episodes"] == "2"
    assert float(clue["actions_mean"]) == 7.0
    assert float(clue["actions_std"]) == pytest.approx(np.std([2, 4, 6, 8, 10, 12], ddof=1), 1e-3)
    assert float(clue["llm_tokens_k_mean"]) == pytest.approx(4.2)
    assert float(clue["time_s_mean"]) == 150.0
    assert "retrieval_success_rate" not in clue  # no retrieval tasks in this run


def test_the_figure_renders(tmp_path):
    _, files = report_run(paper_like_run(tmp_path / "run"))
    img = np.asarray(Image.open(files[-1]).convert("RGB"))
    assert img.shape[0] > 300 and img.shape[1] > 800
    assert float(img.std()) > 10.0 and len(np.unique(img.reshape(-1, 3), axis=0)) > 20


def test_retrieval_column_and_errors_are_reported(tmp_path):
    rows = [
        episode("r1", "clue", "retrieval", True),
        episode("r2", "clue", "retrieval", False, error="RuntimeError: boom"),
    ]
    md, _ = report_run(write_run(tmp_path / "run", rows), figure=False)
    head, _, row = md.strip().splitlines()
    assert "Retr." in head and "Dis." not in head
    assert row.split("|")[2].strip() == "50.0%" and row.split("|")[-2].strip() == "1"


def test_reading_keeps_the_last_record_of_a_pair_and_skips_garbage(tmp_path, capsys):
    rows = [episode("t", "clue", "functional", False), episode("t", "clue", "functional", True)]
    run = write_run(tmp_path / "run", rows, extra_lines=("{not json", '{"policy": "x"}'))
    eps = read_episodes(run)
    assert len(eps) == 1 and eps[0].success
    assert capsys.readouterr().err.count("skipped an unreadable line") == 2
    assert table1(eps)[0].episodes == 1


def test_missing_or_empty_runs_are_named(tmp_path):
    with pytest.raises(ReportError, match="no results.jsonl"):
        read_episodes(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "results.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(ReportError, match="no episodes"):
        read_episodes(tmp_path / "empty")
    rc, _, err = run_cli("report", str(tmp_path / "nowhere"))
    assert rc == 2 and "no results.jsonl" in err
    rc, _, err = run_cli("report", str(tmp_path), str(tmp_path), str(tmp_path))
    assert rc == 2 and "two to compare" in err


def test_compare_lists_flips_and_brackets_the_difference(tmp_path):
    a = paper_like_run(tmp_path / "a", clue_success=(1, 1, 1, 1, 1, 0))
    b = paper_like_run(tmp_path / "b", clue_success=(0, 1, 1, 1, 1, 1))
    diffs, changes, unpaired = compare(read_episodes(a), read_episodes(b), seed=3)
    assert [(c.scenario, c.method, c.before, c.after) for c in changes] == [
        ("task_0", "clue", True, False),
        ("task_5", "clue", False, True),
    ]
    by = {(d.method, d.metric): d for d in diffs}
    s = by[("clue", "success")]
    assert s.n == 6 and s.diff == 0.0 and s.ci_low < 0.0 < s.ci_high
    same = by[("oracle", "Actions")]
    assert (same.diff, same.ci_low, same.ci_high) == (0.0, 0.0, 0.0)
    assert unpaired == {"only_a": [], "only_b": []}
    again, _, _ = compare(read_episodes(a), read_episodes(b), seed=3)
    assert again == diffs  # seeded bootstrap: the same intervals


def test_compare_a_clear_improvement_excludes_zero(tmp_path):
    n = 30
    a = write_run(
        tmp_path / "a",
        [episode(f"t{i}", "clue", "functional", i < 10, actions=12) for i in range(n)],
    )
    b = write_run(
        tmp_path / "b",
        [episode(f"t{i}", "clue", "functional", i < 25, actions=8) for i in range(n)]
        + [episode("extra", "clue", "functional", True)],
    )
    md, files = report_compare(a, b)
    diffs, _, unpaired = compare(read_episodes(a), read_episodes(b))
    by = {d.metric: d for d in diffs}
    assert by["success"].diff == pytest.approx(0.5) and by["success"].ci_low > 0.2
    assert by["Actions"].diff == -4.0 and by["Actions"].ci_high == -4.0
    assert unpaired["only_b"] == ["extra / clue"]
    assert "| clue | success | 30 | 33.3% | 83.3% | +50.0 pp |" in md
    assert "Only in b, not compared (1): extra / clue" in md
    out = tmp_path / "b" / "report" / "vs_a"
    assert [f.parent for f in files] == [out] * 3
    with open(out / "changes.csv", newline="", encoding="utf-8") as fh:
        flips = list(csv.DictReader(fh))
    assert len(flips) == 15 and all(r["success_b"] == "True" for r in flips)


def test_bootstrap_ci_covers_the_mean_and_narrows_with_more_tasks():
    rng = np.random.default_rng(0)
    small = rng.normal(1.0, 1.0, 10)
    big = rng.normal(1.0, 1.0, 400)
    lo_s, hi_s = bootstrap_ci(small, np.random.default_rng(1))
    lo_b, hi_b = bootstrap_ci(big, np.random.default_rng(1))
    assert lo_s < small.mean() < hi_s and lo_b < big.mean() < hi_b
    assert hi_b - lo_b < (hi_s - lo_s) / 3
    assert np.isnan(bootstrap_ci([], np.random.default_rng(0))[0])


def test_cluetwin_report_one_and_two_runs(tmp_path):
    a = paper_like_run(tmp_path / "a")
    b = paper_like_run(tmp_path / "b", clue_success=(1, 1, 1, 1, 1, 1))
    rc, out, _ = run_cli("report", str(a))
    assert rc == 0 and out.startswith("| Method | Dis. |")
    assert f"wrote {a / 'report' / 'table1.png'}" in out
    rc, out, _ = run_cli(
        "report", str(a), str(b), "--out", str(tmp_path / "cmp"), "--resamples", "500"
    )
    assert rc == 0 and "## b vs a" in out
    assert "| task_5 | clue | occlusion | failure | success |" in out
    assert (tmp_path / "cmp" / "compare.csv").is_file()


def test_pinned_outcomes_flag_each_change_readably(tmp_path):
    a = paper_like_run(tmp_path / "a")
    pins = tmp_path / "pins.json"
    rc, out, _ = run_cli("report", str(a), "--no-figure", "--pin", str(pins))
    assert rc == 0 and "pinned 18 outcomes" in out
    assert json.loads(pins.read_text(encoding="utf-8"))["clue"]["task_5"] == "failure"
    rc, out, _ = run_cli("report", str(a), "--no-figure", "--check-pins", str(pins))
    assert rc == 0 and "hold" in out
    rows = [json.loads(line) for line in (a / "results.jsonl").read_text().splitlines()]
    for r in rows:
        if (r["scenario"], r["policy"]) == ("task_2", "clue"):
            r.update(success=False, answer="the blue drum", hit="drum_bin", log="logs/t2.jsonl")
    rows = [r for r in rows if (r["scenario"], r["policy"]) != ("task_4", "oracle")]
    b = write_run(tmp_path / "b", rows)
    rc, out, _ = run_cli("report", str(b), "--no-figure", "--check-pins", str(pins))
    assert rc == 1
    changed = [line for line in out.splitlines() if line.startswith("CHANGED")]
    assert changed == [
        "CHANGED task_4 / oracle: pinned success, not run",
        "CHANGED task_2 / clue: pinned success, now failure: answer 'the blue drum' -> drum_bin "
        "(log logs/t2.jsonl)",
    ]
