"""Run policies on scenarios: one episode, or a batch that resumes where it stopped.

Each episode writes ``OUT/logs/<scenario>__<policy>.jsonl`` (append-only, flushed per
record) and appends one line to ``OUT/results.jsonl``; ``OUT/results.csv`` is rewritten
from it after every episode. A batch skips the (scenario, policy) pairs already in
``results.jsonl``, so an interrupted run resumes.
"""

from __future__ import annotations

import contextlib
import csv
import json
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from agents.base import Agent
from agents.episode_log import EpisodeLog
from agents.oracle import OracleAgent
from agents.robot import Point3, Robot
from scenarios.schema import Scenario

AgentFactory = Callable[[Scenario, dict], Agent]


def _episode_file(folder: str | None, scenario: Scenario, policy: str) -> str | None:
    """Cassettes live one per episode: FOLDER/<scenario>__<policy>.jsonl."""
    if not folder:
        return None
    path = Path(folder)
    return str(path / f"{scenario.id}__{policy}.jsonl") if path.suffix != ".jsonl" else str(path)


def _llm_for(opts: dict, scenario: Scenario, policy: str):
    """The LLM backend an LLM policy gets for one episode (cassettes are per episode)."""
    if opts.get("llm_backend") is not None:
        return opts["llm_backend"]
    from agents.clue import build_llm

    spec = opts.get("llm", "heuristic")
    if spec.startswith("replay:"):
        spec = "replay:" + _episode_file(spec.removeprefix("replay:"), scenario, policy)
    return build_llm(
        spec,
        base_url=opts.get("base_url"),
        record=_episode_file(opts.get("record"), scenario, policy),
        cache=opts.get("cache"),
    )


def _llm_policy(policy: str) -> AgentFactory:
    def make(scenario: Scenario, opts: dict) -> Agent:
        from agents.baselines.map_then_query import MapThenQueryAgent
        from agents.baselines.nlmaps import NLMapsAgent
        from agents.clue import CLUEAgent, default_encoder
        from agents.clue.world_model import WorldModelConfig

        llm = _llm_for(opts, scenario, policy)
        encoder = opts.get("encoder_factory", default_encoder)
        world = opts.get("world_config") or WorldModelConfig()
        if policy in ("clue", "clue-no-tsp"):
            return CLUEAgent(llm, encoder, world=world, use_tour=policy == "clue")
        return (NLMapsAgent if policy == "nlmaps" else MapThenQueryAgent)(llm, encoder, world)

    return make


POLICIES: dict[str, AgentFactory] = {
    "oracle": lambda scenario, opts: OracleAgent(scenario),
    **{name: _llm_policy(name) for name in ("clue", "clue-no-tsp", "nlmaps", "map-then-query")},
}
DEFAULT_POLICY = "clue"


def register_policy(name: str, factory: AgentFactory) -> None:
    POLICIES[name] = factory


@dataclass
class EpisodeResult:
    """One row of the paper's Table 1 (per episode)."""

    scenario: str
    policy: str
    task_type: str
    success: bool
    reward: float
    answered: bool
    actions: int
    sim_time_s: float
    wall_time_s: float
    llm_calls: int
    llm_prompt_tokens: int
    llm_completion_tokens: int
    vlm_calls: int
    vlm_prompt_tokens: int
    vlm_completion_tokens: int
    answer: str = ""
    hit: str | None = None
    error: str | None = None
    log: str = ""


@dataclass
class RobotSession:
    """The robot an episode runs on, and how its answer is judged."""

    robot: Robot
    renderer: str  # what renders its frames ("spot" for a real robot's cameras)
    judge: Callable[[str, Point3 | None], dict | None]  # verdict; None without ground truth


RobotOpener = Callable[[Scenario], contextlib.AbstractContextManager[RobotSession]]
ROBOTS = ("sim", "twin", "spot")


@contextlib.contextmanager
def open_robot(
    kind: str,
    scenario: Scenario,
    *,
    seed: int = 0,
    env_kwargs: dict | None = None,
    hostname: str | None = None,
    agent_opts: dict | None = None,
) -> Iterator[RobotSession]:
    """``sim``: SimRobot on a SpotWorldEnv. ``twin``: an in-process Spot-API twin of the
    scenario driven by SpotRobot through the real Spot SDK (judged by the twin's env).
    ``spot``: a real Spot at ``hostname`` (no ground truth, so no verdict)."""
    if kind == "sim":
        from agents.clue import build_vlm
        from envs import SimRobot, SpotWorldEnv

        opts = agent_opts or {}
        vlm = build_vlm(
            opts.get("vlm") or "sim", base_url=opts.get("vlm_base_url") or opts.get("base_url")
        )
        env = SpotWorldEnv(scenario, **(env_kwargs or {}))
        try:
            env.reset(seed=seed)
            robot = SimRobot(env, vlm=vlm)
            yield RobotSession(robot, env.renderer, robot.submit_answer)
        finally:
            env.close()
    elif kind == "twin":
        from hardware.sessions import twin_session

        with twin_session(
            scenario, seed=seed, env_kwargs=env_kwargs, agent_opts=agent_opts
        ) as session:
            yield session
    elif kind == "spot":
        from hardware.sessions import spot_session

        with spot_session(scenario, hostname, agent_opts or {}) as session:
            yield session
    else:
        raise ValueError(f"unknown robot {kind!r}; choose from {', '.join(ROBOTS)}")


def make_agent(policy: str, scenario: Scenario, opts: dict | None = None) -> Agent:
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; choose from {', '.join(sorted(POLICIES))}")
    return POLICIES[policy](scenario, opts or {})


def run_episode(
    scenario: Scenario,
    policy: str,
    out_dir: str | Path | None = None,
    *,
    seed: int = 0,
    agent_opts: dict | None = None,
    env_kwargs: dict | None = None,
    robot: str | RobotOpener = "sim",
    hostname: str | None = None,
) -> EpisodeResult:
    """Run one episode and judge it. ``robot``: "sim", "twin", "spot" (see
    :func:`open_robot`) or an opener ``scenario -> context manager of RobotSession``."""
    log_path = Path(out_dir) / "logs" / f"{scenario.id}__{policy}.jsonl" if out_dir else None
    if log_path is not None and log_path.exists():
        log_path.unlink()  # a re-run replaces an unfinished episode's log
    opener = (
        robot(scenario)
        if callable(robot)
        else open_robot(
            robot,
            scenario,
            seed=seed,
            env_kwargs=env_kwargs,
            hostname=hostname,
            agent_opts=agent_opts,
        )
    )
    t0 = time.monotonic()
    error = None
    with opener as session:
        robot_ = session.robot
        agent = make_agent(policy, scenario, agent_opts)
        with EpisodeLog(log_path) as log:
            log.write(
                "episode",
                scenario=scenario.id,
                policy=policy,
                task=scenario.task.text,
                task_type=scenario.task.type.value,
                budget=scenario.task.budget,
                seed=seed,
                renderer=session.renderer,
                robot=robot if isinstance(robot, str) else "custom",
            )
            try:
                answer = agent.run(scenario.task.text, robot_, scenario.task.budget, log)
            except Exception as exc:  # a policy crash ends the episode, the log stays
                error = f"{type(exc).__name__}: {exc}"
                log.write("error", error=error, traceback=traceback.format_exc(limit=8))
                answer = None
            verdict = None
            if answer is not None:
                verdict = session.judge(answer.text, answer.point)
                log.write(
                    "answer",
                    text=answer.text,
                    entity=answer.entity,
                    point=None if answer.point is None else answer.point.as_array().tolist(),
                    success=verdict["success"] if verdict else None,
                    reward=verdict["reward"] if verdict else None,
                    hit=verdict["hit"] if verdict else None,
                    reasons=verdict["reasons"] if verdict else [],
                )
            usage = agent.usage
            c = robot_.counters
            result = EpisodeResult(
                scenario=scenario.id,
                policy=policy,
                task_type=scenario.task.type.value,
                success=bool(verdict and verdict["success"]),
                reward=float(verdict["reward"]) if verdict else 0.0,
                answered=answer is not None,
                # a baseline's pre-task mapping survey is not charged to the task
                actions=c.actions
                + int(usage.extra.get("queries", 0))
                - int(usage.extra.get("mapping_actions", 0)),
                sim_time_s=round(c.sim_time_s - float(usage.extra.get("mapping_sim_s", 0.0)), 2),
                wall_time_s=round(time.monotonic() - t0, 3),
                llm_calls=usage.llm_calls,
                llm_prompt_tokens=usage.llm_prompt_tokens,
                llm_completion_tokens=usage.llm_completion_tokens,
                vlm_calls=c.vlm_calls,
                vlm_prompt_tokens=c.vlm_prompt_tokens,
                vlm_completion_tokens=c.vlm_completion_tokens,
                answer=answer.text if answer else "",
                hit=verdict["hit"] if verdict else None,
                error=error,
                log=str(log_path) if log_path else "",
            )
            log.write("result", **asdict(result))
    return result


def done_pairs(out_dir: Path) -> set[tuple[str, str]]:
    path = out_dir / "results.jsonl"
    if not path.exists():
        return set()
    pairs = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        pairs.add((row["scenario"], row["policy"]))
    return pairs


def load_results(out_dir: str | Path) -> list[EpisodeResult]:
    path = Path(out_dir) / "results.jsonl"
    names = {f.name for f in fields(EpisodeResult)}
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        rows.append(EpisodeResult(**{k: v for k, v in row.items() if k in names}))
    return rows


def _append(out_dir: Path, result: EpisodeResult) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / "results.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps(asdict(result)) + "\n")
    rows = load_results(out_dir)
    with open(out_dir / "results.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=[f.name for f in fields(EpisodeResult)])
        writer.writeheader()
        for r in rows:
            writer.writerow(asdict(r))


def run_batch(
    scenarios: Iterable[Scenario],
    policies: Iterable[str],
    out_dir: str | Path,
    *,
    seed: int = 0,
    agent_opts: dict | None = None,
    env_kwargs: dict | None = None,
    progress: Callable[[str], None] | None = print,
    robot: str = "sim",
    hostname: str | None = None,
) -> list[EpisodeResult]:
    """Every scenario x policy, skipping pairs already recorded in ``out_dir``."""
    out = Path(out_dir)
    done = done_pairs(out)
    jobs = [(s, p) for s in scenarios for p in policies]
    results = []
    for k, (scn, pol) in enumerate(jobs, 1):
        if (scn.id, pol) in done:
            if progress:
                progress(f"[{k}/{len(jobs)}] {scn.id} / {pol}: already done, skipped")
            continue
        r = run_episode(
            scn,
            pol,
            out,
            seed=seed,
            agent_opts=agent_opts,
            env_kwargs=env_kwargs,
            robot=robot,
            hostname=hostname,
        )
        _append(out, r)
        results.append(r)
        if progress:
            status = "success" if r.success else ("error: " + r.error if r.error else "failure")
            progress(
                f"[{k}/{len(jobs)}] {scn.id} / {pol}: {status} ({r.actions} actions, "
                f"{r.sim_time_s:.0f} s sim, {r.wall_time_s:.1f} s wall)"
            )
    return results


def format_table(results: list[EpisodeResult]) -> str:
    cols = [
        ("scenario", 22),
        ("policy", 14),
        ("type", 14),
        ("ok", 4),
        ("actions", 7),
        ("sim s", 7),
        ("wall s", 7),
        ("LLM", 4),
        ("LLM tok", 8),
        ("VLM", 4),
        ("VLM tok", 8),
    ]
    lines = ["  ".join(f"{n:<{w}}" for n, w in cols)]
    lines.append("  ".join("-" * w for _, w in cols))
    for r in results:
        vals = [
            r.scenario,
            r.policy,
            r.task_type,
            "yes" if r.success else "no",
            r.actions,
            f"{r.sim_time_s:.0f}",
            f"{r.wall_time_s:.1f}",
            r.llm_calls,
            r.llm_prompt_tokens + r.llm_completion_tokens,
            r.vlm_calls,
            r.vlm_prompt_tokens + r.vlm_completion_tokens,
        ]
        lines.append("  ".join(f"{str(v):<{w}}" for v, (_, w) in zip(vals, cols, strict=True)))
    return "\n".join(lines)
