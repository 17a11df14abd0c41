"""``cluetwin``: list, validate, show and run scenarios."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scenarios.loader import (
    ScenarioError,
    find_scenario,
    load_scenario,
    resolve_names,
    scenario_files,
)


def _cmd_list(args) -> int:
    rows = []
    for f in scenario_files():
        try:
            s = load_scenario(f)
            rows.append((s.id, s.task.type.value, s.environment.name, len(s.objects), s.task.text))
        except ScenarioError as exc:
            rows.append((f.stem, "INVALID", "-", 0, exc.issues[0].message))
    print(f"{'id':<26}{'type':<16}{'environment':<14}{'objects':<9}task")
    for r in rows:
        text = r[4] if len(r[4]) <= 70 else r[4][:67] + "..."
        print(f"{r[0]:<26}{r[1]:<16}{r[2]:<14}{r[3]:<9}{text}")
    return 0


def _cmd_validate(args) -> int:
    bad = 0
    paths: list[Path] = []
    for p in args.paths:
        p = Path(p)
        paths.extend(sorted(p.rglob("*.yaml")) if p.is_dir() else [p])
    for p in paths:
        try:
            s = load_scenario(p)
            print(f"ok       {p} ({s.id})")
        except ScenarioError as exc:
            bad += 1
            print(exc.render(), file=sys.stderr)
    print(f"{len(paths) - bad} valid, {bad} invalid")
    return 1 if bad or not paths else 0


def _load(name: str):
    return load_scenario(find_scenario(name))


def _cmd_show(args) -> int:
    from scenarios.show import show_scenario

    scn = _load(args.scenario)
    for path in show_scenario(scn, args.out, renderer=args.renderer):
        print(f"wrote {path}")
    for concept in args.query or []:
        from scenarios.show import show_query

        print(f"wrote {show_query(scn, args.out, concept, renderer=args.renderer)}")
    return 0


def _cmd_run(args) -> int:
    from scenarios.runner import POLICIES, format_table, run_batch

    scenarios = [load_scenario(f) for f in resolve_names(args.scenarios)]
    for pol in args.policy:
        if pol not in POLICIES:
            print(
                f"unknown policy {pol!r}; choose from {', '.join(sorted(POLICIES))}",
                file=sys.stderr,
            )
            return 2
    if args.robot == "spot" and not args.hostname:
        print("--robot spot needs --hostname (the robot's address)", file=sys.stderr)
        return 2
    out = Path(args.out)
    agent_opts = {
        "llm": args.llm,
        "base_url": args.base_url,
        "record": args.record,
        "cache": args.cache,
        "vlm": args.vlm,
        "vlm_base_url": args.vlm_base_url,
    }
    results = run_batch(
        scenarios,
        args.policy,
        out,
        seed=args.seed,
        agent_opts=agent_opts,
        env_kwargs={"renderer": args.renderer},
        robot=args.robot,
        hostname=args.hostname,
    )
    from scenarios.runner import load_results

    shown = [
        r
        for r in load_results(out)
        if r.policy in args.policy and r.scenario in {s.id for s in scenarios}
    ]
    print()
    print(format_table(shown or results))
    print(f"\nlogs and results in {out}/ (results.csv, results.jsonl, logs/)")
    return 0


def _cmd_twin(args) -> int:
    from hardware.twin.cli import serve

    return serve(
        _load(args.scenario), port=args.port, time_scale=args.time_scale, renderer=args.renderer
    )


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="cluetwin", description=__doc__)
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("list", help="shipped scenarios: id, task type, environment")
    p.set_defaults(func=_cmd_list)

    p = sub.add_parser("validate", help="check scenario files (exit 0 when all are valid)")
    p.add_argument("paths", nargs="+", help="YAML files or folders")
    p.set_defaults(func=_cmd_validate)

    p = sub.add_parser("show", help="write a top-down map and camera views of a scenario")
    p.add_argument("scenario", help="scenario id or path")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--renderer", default="auto", choices=["auto", "egl", "tiny"])
    p.add_argument(
        "--query",
        action="append",
        help="also survey with the robot's cameras and draw the relevancy map, candidates, "
        "viewpoints and tour for this concept (repeatable)",
    )
    p.set_defaults(func=_cmd_show)

    p = sub.add_parser("run", help="run policies on scenarios; writes logs and a results table")
    p.add_argument("scenarios", nargs="+", help="scenario ids, paths, or a suite: examples, paper")
    p.add_argument(
        "--policy",
        action="append",
        help="oracle, clue, clue-no-tsp, nlmaps, map-then-query (repeatable); default clue",
    )
    p.add_argument(
        "--llm",
        default="heuristic",
        help="heuristic (offline default), openai:MODEL, replay:DIR (cassettes per episode)",
    )
    p.add_argument(
        "--base-url", default=None, help="OpenAI-compatible endpoint (or CLUETWIN_LLM_BASE_URL)"
    )
    p.add_argument(
        "--vlm",
        default="sim",
        help="sim (answers from the rendered pixels; default) or openai:MODEL (frames as images)",
    )
    p.add_argument("--vlm-base-url", default=None, help="vision endpoint, if not --base-url")
    p.add_argument(
        "--record", default=None, help="record every LLM call to cassettes in this folder"
    )
    p.add_argument("--cache", default=None, help="sqlite response cache file (pay once per prompt)")
    p.add_argument("--out", default="runs/latest", help="output folder (resumes if it exists)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--renderer", default="auto", choices=["auto", "egl", "tiny"])
    p.add_argument(
        "--robot",
        default="sim",
        choices=["sim", "twin", "spot"],
        help="sim (SimRobot), twin (in-process Spot-API twin through the Spot SDK), spot",
    )
    p.add_argument("--hostname", default=None, help="the Spot's address (--robot spot)")
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("twin", help="serve a Spot-API twin of a scenario on 127.0.0.1")
    p.add_argument("scenario", help="scenario id or path")
    p.add_argument("--port", type=int, default=0, help="TCP port (0: any free port)")
    p.add_argument("--time-scale", type=float, default=1.0, help="walk speed-up over real time")
    p.add_argument("--renderer", default="auto", choices=["auto", "egl", "tiny"])
    p.set_defaults(func=_cmd_twin)

    from scenarios import generator, report
    from scenarios.finder import capture

    generator.add_cli(sub)  # generate
    report.add_cli(sub)  # report
    capture.add_cli(sub)  # capture-finder
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "policy", "absent") is None:
        from scenarios.runner import DEFAULT_POLICY

        args.policy = [DEFAULT_POLICY]
    try:
        return int(args.func(args) or 0)
    except ScenarioError as exc:
        print(exc.render(), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; rerun the same command to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
