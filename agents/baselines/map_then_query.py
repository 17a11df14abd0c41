"""Map-then-query baseline (DAAAM-like): caption everything, then one retrieval.

During a survey the robot captions every object instance its map holds with a generic
VLM question (walking within inspection range when needed), then a single LLM call
picks the entity that satisfies the task from all captions. It never moves anything,
so what lies under a tarp stays unseen.
"""

from __future__ import annotations

from agents.base import Answer
from agents.baselines.common import MapAgent
from agents.baselines.prompts import (
    CAPTION_QUESTION,
    RETRIEVAL_PROMPT,
    RetrievalReply,
    retrieval_message,
)
from agents.clue.world_model import WorldModel
from agents.episode_log import EpisodeLog
from agents.robot import Robot, RobotError


class MapThenQueryAgent(MapAgent):
    name = "map-then-query"

    def act(self, task: str, robot: Robot, budget: int, log: EpisodeLog, wm: WorldModel):
        names, ops = wm.add_instances()
        log.write("action", behavior="survey", ok=True, graph_ops=ops)
        captions: list[tuple[str, str]] = []
        used = 0
        for name in wm.tour_over(names):
            if used + 3 > budget:  # keep one action for the answer
                break
            if wm.distance(name) > wm.config.inspect_range_m and not wm.has(f"near_{name}"):
                log.write("skip", entity=name, reason="out of range and no reachable viewpoint")
                continue
            try:
                if wm.distance(name) > wm.config.inspect_range_m:
                    robot.goto(wm.viewpoint_pose(f"near_{name}"))
                    used += 1
                    wm.observe()
                seen = robot.inspect(wm.point(name), CAPTION_QUESTION)
                used += 1
                captions.append((name, seen.answer))
                log.write(
                    "action",
                    behavior="inspect",
                    args=[name, CAPTION_QUESTION],
                    ok=True,
                    observation=seen.answer,
                )
            except RobotError as exc:
                used += 1
                log.write("action", behavior="inspect", args=[name], ok=False, observation=str(exc))
        pick = self.ask(
            RETRIEVAL_PROMPT,
            retrieval_message(task, captions),
            RetrievalReply,
            "map-then-query.retrieve",
            log,
        )
        if pick is None or not wm.has(pick.entity, "object"):
            return Answer(pick.text if pick else "nothing found", None, None)
        return Answer(pick.text, wm.point(pick.entity), pick.entity)
