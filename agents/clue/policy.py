"""CLUE: closed-loop contextual uncertainty resolution (the paper's Algorithm 1).

Each step makes one LLM call that returns the hypothesis state and the next action;
query actions ground a concept in the map, the others act through the robot. Actions
the current representation shows to be infeasible (unknown entity, too far to inspect
or grasp, nothing held) are rejected with textual feedback as the next observation, at
the cost of a step. Every step, prompt and reply is written to the episode log.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from agents.base import Agent, Answer
from agents.clue.prompt import (
    StepContext,
    history_line,
    node_line,
    reground_text,
    render_user_message,
    system_prompt,
)
from agents.clue.schema import Action, StepReply
from agents.clue.world_model import WorldModel, WorldModelConfig
from agents.episode_log import EpisodeLog
from agents.llm.base import ChatRequest, LLMBackend, Message
from agents.llm.structured import MalformedReply, complete_structured
from agents.robot import Point3, Robot, RobotError
from mapping.encoders import FeatureEncoder

EncoderFactory = Callable[[], FeatureEncoder]


class CLUEAgent(Agent):
    """``use_tour=False`` is the paper's ablation without the TSP visiting-order hint."""

    name = "clue"

    def __init__(
        self,
        llm: LLMBackend,
        encoder_factory: EncoderFactory,
        *,
        use_tour: bool = True,
        max_attempts: int = 3,
        world: WorldModelConfig = WorldModelConfig(),
    ):
        super().__init__()
        self.llm = llm
        self.encoder_factory = encoder_factory
        self.use_tour = use_tour
        self.max_attempts = max_attempts
        self.world_config = world
        if not use_tour:
            self.name = "clue-no-tsp"

    # ------------------------------------------------------------------ loop
    def run(self, task: str, robot: Robot, budget: int, log: EpisodeLog) -> Answer | None:
        wm = WorldModel(robot, self.encoder_factory(), config=self.world_config)
        try:
            return self._loop(task, robot, budget, log, wm)
        finally:
            wm.close()

    def _loop(
        self, task: str, robot: Robot, budget: int, log: EpisodeLog, wm: WorldModel
    ) -> Answer | None:
        wm.observe()
        system = system_prompt(self.world_config, tour=self.use_tour)
        hypothesis: dict | None = None
        history: list[str] = []
        new_obs = ["episode start: the map holds what the robot's cameras see from its start pose"]
        holding: str | None = None
        queries = 0
        for step in range(1, budget + 1):
            ctx = StepContext(
                task=task,
                step=step,
                budget=budget,
                robot_xy=tuple(robot.get_pose().xy()),
                holding=holding,
                nodes=self._node_lines(wm),
                tour=(wm.last_tour if self.use_tour else None),
                new_observations=new_obs,
                history=history,
                hypothesis=hypothesis,
            )
            user = render_user_message(ctx)
            request = ChatRequest(
                messages=(Message.system(system), Message.user(user)),
                temperature=0.0,
                purpose="clue.step",
            )
            t0 = time.monotonic()
            try:
                result = complete_structured(
                    self.llm,
                    request,
                    StepReply,
                    validator=lambda r: self._validate(r, wm),
                    max_attempts=self.max_attempts,
                )
            except MalformedReply as exc:
                self._count(exc.attempts)
                log.write(
                    "step",
                    step=step,
                    prompt=user,
                    ok=False,
                    error=str(exc),
                    replies=[a.text[:2000] for a in exc.attempts],
                    llm_s=time.monotonic() - t0,
                )
                history.append(
                    history_line(step, "none", [], "rejected", "no valid action in the reply")
                )
                new_obs = [f"your reply could not be used: {exc}"]
                continue
            self._count(result.attempts)
            reply: StepReply = result.value
            hypothesis = reply.hypothesis.model_dump()
            action = reply.action
            log.write(
                "step",
                step=step,
                prompt=user,
                reply=result.reply.text,
                action=action.model_dump(),
                attempts=len(result.attempts),
                llm_s=round(time.monotonic() - t0, 4),
            )
            if action.name == "answer":
                entity = action.args.entity
                point = wm.point(entity) if entity and wm.has(entity) else None
                self.usage.steps = step
                self.usage.extra["queries"] = queries
                log.write(
                    "action", step=step, behavior="answer", args=[action.args.text, entity], ok=True
                )
                return Answer(action.args.text or "", point, entity)
            t1 = time.monotonic()
            status, text, ops, holding = self._execute(action, wm, robot, holding)
            queries += action.name == "query"
            log.write(
                "action",
                step=step,
                behavior=action.name,
                args=action.model_dump()["args"],
                ok=status == "ok",
                status=status,
                observation=text,
                graph_ops=ops,
                act_s=round(time.monotonic() - t1, 4),
            )
            history.append(history_line(step, action.name, _arg_list(action), status, text))
            new_obs = ops + [f"result of {action.signature()}: {status}: {text}"]
        self.usage.steps = budget
        self.usage.extra["queries"] = queries
        return None

    def _count(self, attempts) -> None:
        for a in attempts:
            self.usage.llm_calls += 1
            self.usage.llm_prompt_tokens += a.reply.prompt_tokens
            self.usage.llm_completion_tokens += a.reply.completion_tokens

    @staticmethod
    def _node_lines(wm: WorldModel) -> list[str]:
        """One line per node; viewpoint regions say only whose viewpoint they are."""
        lines = []
        for n, a in sorted(wm.nodes().items()):
            desc = a["description"]
            if n.startswith("near_") and wm.has(n.removeprefix("near_")):
                desc = f"viewpoint for {n.removeprefix('near_')}"
            lines.append(node_line(n, a["kind"], a["xy"], desc))
        return lines

    # ------------------------------------------------------------------ grounding of actions
    @staticmethod
    def _validate(reply: StepReply, wm: WorldModel) -> str | None:
        """Entities must exist in the graph with the right kind (checked before acting)."""
        a = reply.action
        for field, name, kind in a.node_args():
            if not wm.has(name):
                known = (
                    ", ".join(sorted(n for n, x in wm.nodes().items() if x["kind"] == kind))
                    or "none yet"
                )
                return f"unknown {kind} {name!r} in {a.name}; known {kind} nodes: {known}"
            if not wm.has(name, kind):
                return f"{a.name} takes a {kind} for '{field}', but {name!r} is not a {kind} node"
        return None

    def _execute(self, action: Action, wm: WorldModel, robot: Robot, holding: str | None):
        """Run one non-answer action; returns (status, text, graph ops, holding)."""
        args = action.args
        cfg = wm.config

        def reject(why: str):  # infeasible here and now: feedback, nothing changes
            return "rejected", why, [], holding

        try:
            if action.name == "query":
                ops, result = wm.query(args.concept)
                if not result.candidates:
                    ops += wm.frontiers()
                    return "ok", "no candidates", ops, holding
                names = [
                    n for n, a in sorted(wm.nodes().items()) if a.get("concept") == args.concept
                ]
                return "ok", f"{len(names)} candidates: {', '.join(names)}", ops, holding
            if action.name == "goto":
                wm.walk(wm.viewpoint_pose(args.region))
                ops, counts = wm.requery()
                text = f"arrived at {args.region}"
                return "ok", f"{text}; {reground_text(counts)}" if counts else text, ops, holding
            if action.name == "inspect":
                d = wm.distance(args.object)
                if d > cfg.inspect_range_m:
                    return reject(f"{args.object} is {d:.1f} m away; go near it first")
                res = robot.inspect(wm.point(args.object), args.question)
                base = wm.nodes()[args.object]["description"].split("; inspection:")[0]
                op = wm.set_description(args.object, f"{base}; inspection: {res.answer[:240]}")
                return "ok", res.answer, [op] if op else [], holding
            if action.name == "grasp":
                if holding:
                    return reject(f"the gripper already holds {holding}; place it first")
                d = wm.distance(args.object)
                if d > cfg.grasp_range_m:
                    return reject(f"{args.object} is {d:.1f} m away; go near it first")
                robot.grasp(wm.point(args.object))
                wm.forget(args.object)
                ops = [op for op in [wm.set_description(args.object, "held by the robot")] if op]
                _, spot_op = wm.free_spot()
                ops += [spot_op] if spot_op else []
                return "ok", f"holding {args.object}", ops, args.object
            # place
            if holding != args.object:
                return reject(
                    f"the robot is not holding {args.object} (holding {holding or 'nothing'})"
                )
            d = wm.distance(args.region)
            if d > cfg.place_range_m:
                return reject(
                    f"{args.region} is {d:.1f} m away; places must be within {cfg.place_range_m} m"
                )
            x, y = wm.xy(args.region)
            robot.place(Point3(x, y, 0.0))
            op = wm.move_node(args.object, (x, y), f"moved by the robot to {args.region}")
            wm.observe()
            return "ok", f"placed {args.object} at {args.region}", [op] if op else [], None
        except RobotError as exc:
            return "failed", f"{type(exc).__name__}: {exc}", [], holding


def _arg_list(action: Action) -> list[str]:
    a = action.args
    vals = []
    for f in ("object", "region", "concept", "entity"):
        v = getattr(a, f)
        if v:
            vals.append(v if f != "concept" else repr(v))
    if a.question:  # shortened: the full question is in the step's log record
        vals.append(repr(a.question if len(a.question) <= 60 else a.question[:57] + "..."))
    if a.text:
        vals.append(repr(a.text))
    return vals
