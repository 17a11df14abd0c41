"""What the map-based baselines share: an LLM, a map of their own, and one-shot asks."""

from __future__ import annotations

import abc

from agents.base import Agent, Answer
from agents.clue.world_model import WorldModel, WorldModelConfig
from agents.episode_log import EpisodeLog
from agents.llm.base import ChatRequest, LLMBackend, Message
from agents.llm.structured import MalformedReply, complete_structured
from agents.robot import Robot


class MapAgent(Agent):
    """A policy with an LLM and a language-embedded map built from its own frames."""

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
            return self.act(task, robot, budget, log, wm)
        finally:
            wm.close()

    @abc.abstractmethod
    def act(
        self, task: str, robot: Robot, budget: int, log: EpisodeLog, wm: WorldModel
    ) -> Answer | None:
        """The policy proper, once the map holds the start pose's views."""

    def ask(self, system: str, user: str, model, purpose: str, log: EpisodeLog):
        """One structured LLM call with repair retries (None if no usable reply);
        its usage is counted in :attr:`usage`."""
        req = ChatRequest(messages=(Message.system(system), Message.user(user)), purpose=purpose)
        try:
            result = complete_structured(self.llm, req, model)
            attempts, value = result.attempts, result.value
        except MalformedReply as exc:
            attempts, value = exc.attempts, None
            log.write("llm", purpose=purpose, ok=False, error=str(exc))
        for a in attempts:
            self.usage.llm_calls += 1
            self.usage.llm_prompt_tokens += a.reply.prompt_tokens
            self.usage.llm_completion_tokens += a.reply.completion_tokens
        if value is not None:
            log.write("llm", purpose=purpose, ok=True, prompt=user, reply=value.model_dump())
        return value
