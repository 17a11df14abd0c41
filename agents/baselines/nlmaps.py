"""NLMaps-style baseline: the same map and actions, open loop, no recovery.

It assumes map queries are noiseless: one LLM call turns the task into a concept, one
query grounds it, and the robot walks to the most confident candidate, looks once and
answers with it, whatever it sees. A false positive at the top of the ranking ends the
episode wrongly, which is the failure the CLUE paper reports for it.
"""

from __future__ import annotations

from agents.base import Agent, Answer
from agents.baselines.prompts import CONCEPT_PROMPT, ConceptReply, concept_message
from agents.clue.world_model import WorldModel, WorldModelConfig
from agents.episode_log import EpisodeLog
from agents.llm.base import ChatRequest, LLMBackend, Message
from agents.llm.structured import complete_structured
from agents.robot import Robot, RobotError


def ask(
    agent: Agent, llm: LLMBackend, system: str, user: str, model, purpose: str, log: EpisodeLog
):
    """One structured LLM call with repair retries; usage goes to ``agent.usage``."""
    req = ChatRequest(messages=(Message.system(system), Message.user(user)), purpose=purpose)
    try:
        result = complete_structured(llm, req, model)
        attempts = result.attempts
        value = result.value
    except Exception as exc:  # a malformed reply after retries ends the plan
        attempts = getattr(exc, "attempts", ())
        value = None
        log.write("llm", purpose=purpose, ok=False, error=str(exc))
    for a in attempts:
        agent.usage.llm_calls += 1
        agent.usage.llm_prompt_tokens += a.reply.prompt_tokens
        agent.usage.llm_completion_tokens += a.reply.completion_tokens
    if value is not None:
        log.write("llm", purpose=purpose, ok=True, prompt=user, reply=value.model_dump())
    return value


class NLMapsAgent(Agent):
    name = "nlmaps"

    def __init__(
        self, llm: LLMBackend, encoder_factory, world: WorldModelConfig = WorldModelConfig()
    ):
        super().__init__()
        self.llm = llm
        self.encoder_factory = encoder_factory
        self.world_config = world

    def run(self, task: str, robot: Robot, budget: int, log: EpisodeLog) -> Answer | None:
        wm = WorldModel(robot, self.encoder_factory(), config=self.world_config)
        try:
            wm.observe()
            plan = ask(
                self,
                self.llm,
                CONCEPT_PROMPT,
                concept_message(task),
                ConceptReply,
                "nlmaps.concept",
                log,
            )
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
                    robot.goto(wm.viewpoint_pose(f"near_{top}"))
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
                log.write(
                    "action", behavior="goto/inspect", args=[top], ok=False, observation=str(exc)
                )
                text = f"The {plan.concept} is {top}."
            return Answer(text, wm.point(top), top)
        finally:
            wm.close()
