"""Map-then-query baseline (DAAAM-like): caption while mapping, then one retrieval.

While the map is built (the survey that every map-based baseline runs first), the robot
captions each object instance its map holds with a generic VLM question: those within
inspection range of a survey stop as it passes, then, once exploration is done, every
instance still uncaptioned from its viewpoint (DAAAM captions everything in its scene
graph). All of that is mapping, before the task is known: it never asks a
task-specific question. Then a single LLM call picks, from all captions, the entity
that satisfies the task. It never moves anything, so what lies under a tarp or a lid
stays unseen.
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
from agents.robot import GoalUnreachable, PersistentRobotError, Robot


class MapThenQueryAgent(MapAgent):
    name = "map-then-query"

    def run(self, task, robot, budget, log):
        self.captions: dict[str, str] = {}
        return super().run(task, robot, budget, log)

    def at_survey_stop(self, robot: Robot, log: EpisodeLog, wm: WorldModel) -> None:
        """Caption every instance in inspection range not captioned yet."""
        names = self.instances(log, wm)
        near = [
            n
            for n in names
            if n not in self.captions and wm.distance(n) <= wm.config.inspect_range_m
        ]
        for name in wm.tour_over(near):
            self.caption(robot, log, wm, name)

    def after_survey(self, robot: Robot, log: EpisodeLog, wm: WorldModel) -> None:
        """Caption every instance no survey stop came near, from its viewpoint."""
        for name in wm.tour_over([n for n in self.instances(log, wm) if n not in self.captions]):
            if not wm.has(f"near_{name}"):
                continue  # nowhere to stand to see it
            try:
                wm.walk(wm.viewpoint_pose(f"near_{name}"))
            except GoalUnreachable as exc:  # as the survey's walks; anything else stops it
                log.write("action", behavior="goto", args=[f"near_{name}"], ok=False,
                          observation=str(exc))  # fmt: skip
                continue
            log.write("action", behavior="goto", args=[f"near_{name}"], ok=True)
            self.caption(robot, log, wm, name)

    @staticmethod
    def instances(log: EpisodeLog, wm: WorldModel) -> list[str]:
        """The scene graph's object instances as the map now holds them (logged)."""
        names, ops = wm.add_instances()
        log.write("action", behavior="instances", ok=True, graph_ops=ops)
        return names

    def caption(self, robot: Robot, log: EpisodeLog, wm: WorldModel, name: str) -> None:
        """One generic caption of instance ``name`` (logged; a refusal is logged too)."""
        try:
            seen = robot.inspect(wm.point(name), CAPTION_QUESTION)
        except PersistentRobotError as exc:
            log.write("action", behavior="inspect", args=[name], ok=False, observation=str(exc))
            return
        self.captions[name] = seen.answer
        log.write(
            "action",
            behavior="inspect",
            args=[name, CAPTION_QUESTION],
            ok=True,
            observation=seen.answer,
        )

    def act(self, task: str, robot: Robot, budget: int, log: EpisodeLog, wm: WorldModel):
        pick = self.ask(
            RETRIEVAL_PROMPT,
            retrieval_message(task, sorted(self.captions.items())),
            RetrievalReply,
            "map-then-query.retrieve",
            log,
        )
        if pick is None or not wm.has(pick.entity, "object"):
            return Answer(pick.text if pick else "nothing found", None, None)
        return Answer(pick.text, wm.point(pick.entity), pick.entity)
