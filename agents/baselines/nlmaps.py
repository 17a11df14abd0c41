"""NLMaps-style baseline: the same map and actions, open loop, no recovery.

It assumes map queries are noiseless: one LLM call turns the task into a concept, one
query grounds it, and the robot walks to the most confident candidate, looks once and
answers with it, whatever it sees. A false positive at the top of the ranking ends the
episode wrongly, which is the failure the CLUE paper reports for it.
"""

from __future__ import annotations

from agents.base import Answer
from agents.baselines.common import MapAgent
from agents.baselines.prompts import CONCEPT_PROMPT, ConceptReply, concept_message
from agents.clue.world_model import WorldModel
from agents.episode_log import EpisodeLog
from agents.robot import Robot, RobotError


class NLMapsAgent(MapAgent):
    name = "nlmaps"

    def act(self, task: str, robot: Robot, budget: int, log: EpisodeLog, wm: WorldModel):
        plan = self.ask(CONCEPT_PROMPT, concept_message(task), ConceptReply, "nlmaps.concept", log)
        if plan is None:
            return None
        ops, result = wm.query(plan.concept)
        self.usage.extra["queries"] = 1
        log.write("action", behavior="query", args=[plan.concept], ok=True, graph_ops=ops)
        if not result.candidates or budget < 4:
            return Answer(f"No {plan.concept} found.", None, None)
        top = wm.node_for(plan.concept, result.candidates[0])
        try:
            if wm.has(f"near_{top}"):
                wm.walk(wm.viewpoint_pose(f"near_{top}"))
                log.write("action", behavior="goto", args=[f"near_{top}"], ok=True)
            seen = robot.inspect(wm.point(top), plan.question)
            log.write(
                "action",
                behavior="inspect",
                args=[top, plan.question],
                ok=True,
                observation=seen.answer,
            )
            text = f"The {plan.concept} is {top}: {seen.answer}"
        except RobotError as exc:  # open loop: no recovery, answer anyway
            log.write("action", behavior="goto/inspect", args=[top], ok=False, observation=str(exc))
            text = f"The {plan.concept} is {top}."
        return Answer(text, wm.point(top), top)
