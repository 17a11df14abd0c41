"""Reports over run folders: the CLUE paper's Table 1, its figure, and run-to-run changes.

``cluetwin report RUN`` reads ``RUN/results.jsonl`` (one line per episode, written by
:mod:`scenarios.runner`) and writes ``table1.md``, ``table1.csv`` and ``table1.png`` to
``RUN/report/``: per method, success by task type and overall, and mean +- std over its
episodes of actions, robot time (simulated seconds), LLM calls, LLM tokens (k), VLM calls
and VLM tokens (k), as in the paper's Table 1.

``cluetwin report RUN_A RUN_B`` pairs the episodes of both runs by (scenario, method) and
writes ``compare.md``, ``compare.csv`` (per method and metric: the mean in A and in B, the
difference B - A and its 95 % paired-bootstrap confidence interval, seeded) and
``changes.csv`` (every task whose outcome flipped) to ``RUN_B/report/vs_<A>/``.

Standard deviations are sample standard deviations (``ddof=1``; 0 for one episode). An
episode that crashed counts as a failure and is listed in the ``errors`` column.
"""

from __future__ import annotations

import csv
import json
import math
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

TASK_TYPES = (
    ("disambiguation", "Dis."),
    ("functional", "Func."),
    ("occlusion", "Occl."),
    ("retrieval", "Retr."),
)
METHOD_ORDER = ("oracle", "clue", "clue-no-tsp", "map-then-query", "nlmaps")
# (column, CSV name, unit scale, results fields summed): the paper's cost columns
COST_COLUMNS = (
    ("Actions", "actions", 1.0, ("actions",)),
    ("Time (s)", "time_s", 1.0, ("sim_time_s",)),
    ("LLM calls", "llm_calls", 1.0, ("llm_calls",)),
    ("LLM tok (k)", "llm_tokens_k", 1e-3, ("llm_prompt_tokens", "llm_completion_tokens")),
    ("VLM calls", "vlm_calls", 1.0, ("vlm_calls",)),
    ("VLM tok (k)", "vlm_tokens_k", 1e-3, ("vlm_prompt_tokens", "vlm_completion_tokens")),
)
COMPARED = (  # (metric, scale, fields) compared between two runs
    ("success", 1.0, ("success",)),
    *((name, scale, keys) for name, key, scale, keys in COST_COLUMNS if key != "vlm_calls"),
)
_NUMERIC = {k for *_, keys in COST_COLUMNS for k in keys}


class ReportError(ValueError):
    """A run folder that cannot be reported (missing or empty results)."""


# ---------------------------------------------------------------------------- reading
@dataclass(frozen=True)
class Episode:
    """The fields of one ``results.jsonl`` line a report needs (missing numbers read 0)."""

    scenario: str
    method: str
    task_type: str
    success: bool
    error: str | None
    values: dict[str, float]  # the numeric fields in COST_COLUMNS
    answer: str = ""
    hit: str | None = None  # the object the answer pointed at
    log: str = ""  # the episode log, for a reader chasing a change

    def metric(self, keys: Sequence[str], scale: float) -> float:
        if keys == ("success",):
            return float(self.success)
        return scale * sum(self.values.get(k, 0.0) for k in keys)


def read_episodes(run_dir: str | Path) -> list[Episode]:
    """Episodes of a run; a (scenario, method) pair recorded twice keeps its last line."""
    path = Path(run_dir) / "results.jsonl"
    if not path.is_file():
        raise ReportError(f"{run_dir}: no results.jsonl (run `cluetwin run ... --out {run_dir}`)")
    latest: dict[tuple[str, str], Episode] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            ep = Episode(
                scenario=str(row["scenario"]),
                method=str(row["policy"]),
                task_type=str(row.get("task_type", "")),
                success=bool(row.get("success", False)),
                error=row.get("error"),
                values={k: float(row.get(k) or 0.0) for k in _NUMERIC},
                answer=str(row.get("answer") or ""),
                hit=row.get("hit"),
                log=str(row.get("log") or ""),
            )
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            print(f"{path}:{n}: skipped an unreadable line", file=sys.stderr)
            continue
        latest[(ep.scenario, ep.method)] = ep
    if not latest:
        raise ReportError(f"{path}: no episodes recorded")
    return list(latest.values())


def method_order(methods: Iterable[str]) -> list[str]:
    """The paper's order (Oracle, CLUE, ..., NLMaps), then any others alphabetically."""
    present = set(methods)
    known = [m for m in METHOD_ORDER if m in present]
    return known + sorted(present - set(known))


# ---------------------------------------------------------------------------- Table 1
@dataclass(frozen=True)
class MeanStd:
    mean: float
    std: float

    @classmethod
    def of(cls, values: Sequence[float]) -> MeanStd:
        a = np.asarray(values, dtype=float)
        if a.size == 0:
            return cls(math.nan, math.nan)
        return cls(float(a.mean()), float(a.std(ddof=1)) if a.size > 1 else 0.0)

    def text(self, digits: int = 1) -> str:
        if math.isnan(self.mean):
            return "-"
        return f"{self.mean:.{digits}f}±{self.std:.{digits}f}"


@dataclass(frozen=True)
class MethodRow:
    """One row of Table 1."""

    method: str
    episodes: int
    by_type: dict[str, tuple[int, int]]  # task type -> (successes, episodes)
    successes: int
    errors: int
    costs: dict[str, MeanStd]  # COST_COLUMNS name -> mean +- std

    @property
    def success_rate(self) -> float:
        return self.successes / self.episodes if self.episodes else math.nan


def table1(episodes: Sequence[Episode]) -> list[MethodRow]:
    rows = []
    for method in method_order(e.method for e in episodes):
        eps = [e for e in episodes if e.method == method]
        by_type = {}
        for t, _ in TASK_TYPES:
            of_type = [e for e in eps if e.task_type == t]
            if of_type:
                by_type[t] = (sum(e.success for e in of_type), len(of_type))
        costs = {
            name: MeanStd.of([e.metric(keys, scale) for e in eps])
            for name, _, scale, keys in COST_COLUMNS
        }
        rows.append(
            MethodRow(
                method=method,
                episodes=len(eps),
                by_type=by_type,
                successes=sum(e.success for e in eps),
                errors=sum(e.error is not None for e in eps),
                costs=costs,
            )
        )
    return rows


def _types_present(rows: Sequence[MethodRow]) -> list[tuple[str, str]]:
    return [(t, label) for t, label in TASK_TYPES if any(t in r.by_type for r in rows)]


def _pct(k: int, n: int) -> str:
    return f"{100.0 * k / n:.1f}%" if n else "-"


def table1_markdown(rows: Sequence[MethodRow]) -> str:
    types = _types_present(rows)
    head = ["Method", *(label for _, label in types), "Overall", *(c[0] for c in COST_COLUMNS)]
    head += ["n", "errors"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r.method]
        cells += [_pct(*r.by_type[t]) if t in r.by_type else "-" for t, _ in types]
        cells.append(_pct(r.successes, r.episodes))
        cells += [r.costs[c[0]].text() for c in COST_COLUMNS]
        cells += [str(r.episodes), str(r.errors)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def table1_csv(rows: Sequence[MethodRow], path: Path) -> None:
    types = _types_present(rows)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        head = ["method", "episodes", "errors", "success_rate"]
        for t, _ in types:
            head += [f"{t}_success_rate", f"{t}_successes", f"{t}_episodes"]
        for _, key, _, _ in COST_COLUMNS:
            head += [f"{key}_mean", f"{key}_std"]
        w.writerow(head)
        for r in rows:
            line: list = [r.method, r.episodes, r.errors, round(r.success_rate, 4)]
            for t, _ in types:
                k, n = r.by_type.get(t, (0, 0))
                line += [round(k / n, 4) if n else "", k, n]
            for c, *_ in COST_COLUMNS:
                line += [round(r.costs[c].mean, 4), round(r.costs[c].std, 4)]
            w.writerow(line)


def table1_figure(rows: Sequence[MethodRow], path: Path) -> None:
    """Success by task type per method (left) and mean token use per method (right)."""
    from matplotlib.figure import Figure  # the object API: no pyplot, no global backend

    types = _types_present(rows)
    fig = Figure(figsize=(11, 4.2))
    ax1, ax2 = fig.subplots(1, 2)
    width = 0.8 / max(len(rows), 1)
    x = np.arange(len(types) + 1)
    for i, r in enumerate(rows):
        rates = [r.by_type[t][0] / r.by_type[t][1] if t in r.by_type else 0.0 for t, _ in types]
        rates.append(r.success_rate)
        ax1.bar(
            x + (i - (len(rows) - 1) / 2) * width, [100 * v for v in rates], width, label=r.method
        )
    ax1.set_xticks(x, [label for _, label in types] + ["Overall"])
    ax1.set_ylabel("success (%)")
    ax1.set_ylim(0, 130)  # headroom for the legend
    ax1.set_yticks(range(0, 101, 20))
    ax1.set_title("Success by task type")
    ax1.legend(fontsize=8, loc="upper left", ncol=min(len(rows), 3))
    names = [r.method for r in rows]
    llm = [r.costs["LLM tok (k)"].mean for r in rows]
    vlm = [r.costs["VLM tok (k)"].mean for r in rows]
    ax2.bar(names, llm, label="LLM", yerr=[r.costs["LLM tok (k)"].std for r in rows], capsize=3)
    ax2.bar(names, vlm, bottom=llm, label="VLM")
    ax2.set_ylabel("tokens per episode (k)")
    ax2.set_title("Token use (mean; LLM error bar: std)")
    ax2.legend(fontsize=8)
    ax2.tick_params(axis="x", labelrotation=20)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def report_run(
    run_dir: str | Path, out_dir: str | Path | None = None, figure: bool = True
) -> tuple[str, list[Path]]:
    """Write Table 1 for a run; returns (the Markdown table, the files written)."""
    rows = table1(read_episodes(run_dir))
    out = Path(out_dir) if out_dir else Path(run_dir) / "report"
    out.mkdir(parents=True, exist_ok=True)
    md = table1_markdown(rows)
    (out / "table1.md").write_text(md, encoding="utf-8")
    table1_csv(rows, out / "table1.csv")
    files = [out / "table1.md", out / "table1.csv"]
    if figure:
        table1_figure(rows, out / "table1.png")
        files.append(out / "table1.png")
    return md, files


# ---------------------------------------------------------------------------- comparison
@dataclass(frozen=True)
class Difference:
    """B - A for one method and metric over the tasks both runs hold."""

    method: str
    metric: str
    n: int
    mean_a: float
    mean_b: float
    ci_low: float  # 95 % paired-bootstrap interval of the mean difference
    ci_high: float

    @property
    def diff(self) -> float:
        return self.mean_b - self.mean_a


@dataclass(frozen=True)
class Change:
    scenario: str
    method: str
    task_type: str
    before: bool
    after: bool


def bootstrap_ci(
    diffs: Sequence[float], rng: np.random.Generator, resamples: int = 10000, level: float = 0.95
) -> tuple[float, float]:
    """Percentile interval of the mean of paired differences (tasks resampled)."""
    d = np.asarray(diffs, dtype=float)
    if d.size == 0:
        return (math.nan, math.nan)
    idx = rng.integers(0, d.size, size=(resamples, d.size))
    means = d[idx].mean(axis=1)
    tail = (1.0 - level) / 2.0
    return float(np.quantile(means, tail)), float(np.quantile(means, 1.0 - tail))


def compare(
    a: Sequence[Episode], b: Sequence[Episode], *, resamples: int = 10000, seed: int = 0
) -> tuple[list[Difference], list[Change], dict[str, list[str]]]:
    """Differences per method and metric, the flipped outcomes, and unpaired episodes."""
    rng = np.random.default_rng(seed)
    ia = {(e.scenario, e.method): e for e in a}
    ib = {(e.scenario, e.method): e for e in b}
    both = sorted(set(ia) & set(ib))
    unpaired = {
        "only_a": [f"{s} / {m}" for s, m in sorted(set(ia) - set(ib))],
        "only_b": [f"{s} / {m}" for s, m in sorted(set(ib) - set(ia))],
    }
    diffs, changes = [], []
    for method in method_order(m for _, m in both):
        keys = [k for k in both if k[1] == method]
        for name, scale, fields_ in COMPARED:
            va = np.array([ia[k].metric(fields_, scale) for k in keys])
            vb = np.array([ib[k].metric(fields_, scale) for k in keys])
            lo, hi = bootstrap_ci(vb - va, rng, resamples)
            diffs.append(
                Difference(method, name, len(keys), float(va.mean()), float(vb.mean()), lo, hi)
            )
        for k in keys:
            if ia[k].success != ib[k].success:
                changes.append(Change(k[0], method, ib[k].task_type, ia[k].success, ib[k].success))
    return diffs, changes, unpaired


def _num(v: float, metric: str) -> str:
    if metric == "success":
        return f"{100 * v:+.1f} pp" if v != 0 else "0.0 pp"
    return f"{v:+.2f}"


def compare_markdown(
    name_a: str,
    name_b: str,
    diffs: Sequence[Difference],
    changes: Sequence[Change],
    unpaired: dict[str, list[str]],
) -> str:
    lines = [f"## {name_b} vs {name_a}", "", "Outcome changes (per task):", ""]
    if changes:
        lines += ["| Scenario | Method | Type | Before | After |", "|---|---|---|---|---|"]
        for c in changes:
            before = "success" if c.before else "failure"
            after = "success" if c.after else "failure"
            lines.append(f"| {c.scenario} | {c.method} | {c.task_type} | {before} | {after} |")
    else:
        lines.append("none: every paired task has the same outcome")
    lines += ["", "Differences B - A (mean over paired tasks, 95 % bootstrap CI):", ""]
    lines += ["| Method | Metric | n | A | B | B - A | 95 % CI |", "|---|---|---|---|---|---|---|"]
    for d in diffs:
        if d.metric == "success":
            a, b = f"{100 * d.mean_a:.1f}%", f"{100 * d.mean_b:.1f}%"
            ci = f"[{100 * d.ci_low:+.1f}, {100 * d.ci_high:+.1f}] pp"
        else:
            a, b = f"{d.mean_a:.2f}", f"{d.mean_b:.2f}"
            ci = f"[{d.ci_low:+.2f}, {d.ci_high:+.2f}]"
        lines.append(
            f"| {d.method} | {d.metric} | {d.n} | {a} | {b} | {_num(d.diff, d.metric)} | {ci} |"
        )
    for key, label in (("only_a", name_a), ("only_b", name_b)):
        only = unpaired[key]
        if only:
            more = f", and {len(only) - 8} more" if len(only) > 8 else ""
            lines += [
                "",
                f"Only in {label}, not compared ({len(only)}): " + ", ".join(only[:8]) + more,
            ]
    return "\n".join(lines) + "\n"


def report_compare(
    run_a: str | Path,
    run_b: str | Path,
    out_dir: str | Path | None = None,
    *,
    resamples: int = 10000,
    seed: int = 0,
) -> tuple[str, list[Path]]:
    a, b = read_episodes(run_a), read_episodes(run_b)
    diffs, changes, unpaired = compare(a, b, resamples=resamples, seed=seed)
    name_a, name_b = Path(run_a).resolve().name, Path(run_b).resolve().name
    out = Path(out_dir) if out_dir else Path(run_b) / "report" / f"vs_{name_a}"
    out.mkdir(parents=True, exist_ok=True)
    md = compare_markdown(name_a, name_b, diffs, changes, unpaired)
    (out / "compare.md").write_text(md, encoding="utf-8")
    with open(out / "compare.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["method", "metric", "n", "mean_a", "mean_b", "diff", "ci_low", "ci_high"])
        for d in diffs:
            w.writerow(
                [
                    d.method,
                    d.metric,
                    d.n,
                    *(round(v, 6) for v in (d.mean_a, d.mean_b, d.diff, d.ci_low, d.ci_high)),
                ]
            )
    with open(out / "changes.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["scenario", "method", "task_type", "success_a", "success_b"])
        for c in changes:
            w.writerow([c.scenario, c.method, c.task_type, c.before, c.after])
    return md, [out / "compare.md", out / "compare.csv", out / "changes.csv"]


# ---------------------------------------------------------------------------- pinned outcomes
def write_pins(episodes: Sequence[Episode], path: str | Path) -> Path:
    """Pin each (method, scenario) outcome to a JSON file a regression gate checks against."""
    pins: dict[str, dict[str, str]] = {}
    for e in sorted(episodes, key=lambda e: (e.method, e.scenario)):
        pins.setdefault(e.method, {})[e.scenario] = "success" if e.success else "failure"
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    ordered = {m: pins[m] for m in method_order(pins)}
    path.write_text(json.dumps(ordered, indent=2) + "\n", encoding="utf-8")
    return path


def check_pins(episodes: Sequence[Episode], path: str | Path) -> list[str]:
    """Readable lines, one per pinned outcome that changed or is missing (empty: all hold)."""
    pins = json.loads(Path(path).read_text(encoding="utf-8"))
    got = {(e.method, e.scenario): e for e in episodes}
    lines = []
    for method in method_order(pins):
        for scenario, want in sorted(pins[method].items()):
            e = got.get((method, scenario))
            if e is None:
                lines.append(f"{scenario} / {method}: pinned {want}, not run")
                continue
            now = "success" if e.success else "failure"
            if now != want:
                why = (
                    f"error {e.error}"
                    if e.error
                    else f"answer {e.answer!r} -> {e.hit or 'nothing'}"
                )
                where = f" (log {e.log})" if e.log else ""
                lines.append(f"{scenario} / {method}: pinned {want}, now {now}: {why}{where}")
    return lines


# ---------------------------------------------------------------------------- CLI
def add_cli(sub) -> None:
    """Register ``cluetwin report`` on an argparse subparsers object."""
    p = sub.add_parser(
        "report", help="Table 1 (Markdown, CSV, figure) of a run; with two runs, what changed"
    )
    p.add_argument("runs", nargs="+", metavar="RUN", help="one run folder, or two to compare")
    p.add_argument("--out", default=None, help="output folder (default: inside the (last) run)")
    p.add_argument("--no-figure", action="store_true", help="skip the PNG figure")
    p.add_argument("--resamples", type=int, default=10000, help="bootstrap resamples")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--pin", metavar="FILE", help="write the run's outcomes to FILE (JSON)")
    p.add_argument(
        "--check-pins", metavar="FILE", help="exit 1, listing each change, if outcomes differ"
    )
    p.set_defaults(func=_cmd_report)


def _cmd_report(args) -> int:
    try:
        if len(args.runs) == 1:
            md, files = report_run(args.runs[0], args.out, figure=not args.no_figure)
        elif len(args.runs) == 2:
            md, files = report_compare(
                args.runs[0], args.runs[1], args.out, resamples=args.resamples, seed=args.seed
            )
        else:
            print("give one run folder, or two to compare", file=sys.stderr)
            return 2
    except ReportError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    print(md)
    for f in files:
        print(f"wrote {f}")
    last = read_episodes(args.runs[-1])
    if args.pin:
        print(f"pinned {len(last)} outcomes to {write_pins(last, args.pin)}")
    if args.check_pins:
        drift = check_pins(last, args.check_pins)
        for line in drift:
            print(f"CHANGED {line}")
        if drift:
            return 1
        print(f"all outcomes pinned in {args.check_pins} hold")
    return 0
