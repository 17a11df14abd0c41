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
    """A policy with an LLM and a language-embedded map built from its own frames.

    The baselines assume a map built before the task (the CLUE paper gives NLMaps the
    same map and builds DAAAM's from recorded data): :meth:`run` first explores with the
    robot's own cameras (:meth:`WorldModel.explore`). That survey is logged as one
    ``survey`` record. Mapping comes before the task: the behaviours it runs (walks, and
    map-then-query's captions) and their time are reported in ``usage.extra`` as
    ``mapping_actions`` and ``mapping_sim_s`` and are not charged to the task; VLM calls
    and tokens spent on the map are (the paper charges DAAAM's captions).
    """

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
            self.survey(robot, log, wm)
            return self.act(task, robot, budget, log, wm)
        finally:
            wm.close()

    def survey(self, robot: Robot, log: EpisodeLog, wm: WorldModel) -> None:
        """Explore before the task (see the class docstring), calling
        :meth:`at_survey_stop` where the robot starts and at every stop."""
        c = robot.counters
        actions0, walks0, sim0 = c.actions, c.by_behavior.get("goto", 0), c.sim_time_s
        stops, refused = wm.explore(on_stop=lambda: self.at_survey_stop(robot, log, wm))
        self.after_survey(robot, log, wm)
        sim_s = c.sim_time_s - sim0
        walks = c.by_behavior.get("goto", 0) - walks0
        self.usage.extra["mapping_actions"] = c.actions - actions0
        self.usage.extra["mapping_sim_s"] = sim_s
        log.write(
            "survey",
            stops=stops,
            refused=refused,
            frames=wm.frames,
            voxels=wm.map.stats().voxels,
            walks=walks,
            sim_time_s=round(sim_s, 2),
        )

    def at_survey_stop(self, robot: Robot, log: EpisodeLog, wm: WorldModel) -> None:
        """What a baseline does with each survey stop's fresh frames (nothing here)."""

    def after_survey(self, robot: Robot, log: EpisodeLog, wm: WorldModel) -> None:
        """What a baseline adds to the map once exploration is done, still before the
        task and not charged to it (nothing here)."""

    @abc.abstractmethod
    def act(
        self, task: str, robot: Robot, budget: int, log: EpisodeLog, wm: WorldModel
    ) -> Answer | None:
        """The policy proper, once the survey has built the map."""

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
