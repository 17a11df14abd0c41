"""What every policy implements, and what it returns."""

from __future__ import annotations

import abc
from dataclasses import dataclass, field

from agents.episode_log import EpisodeLog
from agents.robot import Point3, Robot


@dataclass(frozen=True)
class Answer:
    """The episode's answer: text, and the world point of the entity it names (if any)."""

    text: str
    point: Point3 | None = None
    entity: str | None = None  # the agent's own name for it (e.g. a map node), for logs


@dataclass
class AgentUsage:
    """LLM accounting an agent reports (VLM usage is counted by the robot)."""

    llm_calls: int = 0
    llm_prompt_tokens: int = 0
    llm_completion_tokens: int = 0
    steps: int = 0  # actions the policy took, map queries included
    extra: dict = field(default_factory=dict)


class Agent(abc.ABC):
    """A policy acting through :class:`~agents.robot.Robot` only."""

    name: str = "agent"

    def __init__(self) -> None:
        self.usage = AgentUsage()

    @abc.abstractmethod
    def run(self, task: str, robot: Robot, budget: int, log: EpisodeLog) -> Answer | None:
        """Act until answering (return the answer) or the budget is spent (return None).

        ``budget`` counts every action the policy takes, map queries included (the
        CLUE paper's N). Implementations write one log record per action.
        """
