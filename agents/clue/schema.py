"""What the CLUE policy emits each step: the hypothesis state and the next action.

One LLM call per step returns a :class:`StepReply`; pydantic validates its shape and the
policy checks that every named entity exists in the observation graph.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ACTION_NAMES = ("goto", "inspect", "grasp", "place", "query", "answer")
MAX_TEXT = 400


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Confirmed(_Model):
    objects: list[str] = Field(default_factory=list)
    regions: list[str] = Field(default_factory=list)


class Hypothesized(_Model):
    entities: list[str] = Field(default_factory=list)
    ruled_out: list[str] = Field(default_factory=list)


class HypothesisState(_Model):
    """The policy's belief, in words (CLUE paper: goal, confirmed, hypothesized,
    ruled out, uncertainties)."""

    goal: str = Field("", max_length=MAX_TEXT)
    confirmed: Confirmed = Field(default_factory=Confirmed)
    hypothesized: Hypothesized = Field(default_factory=Hypothesized)
    uncertainties: list[str] = Field(default_factory=list)


class ActionArgs(_Model):
    region: str | None = None
    object: str | None = None
    question: str | None = Field(None, max_length=MAX_TEXT)
    concept: str | None = Field(None, max_length=80)
    text: str | None = Field(None, max_length=MAX_TEXT)
    entity: str | None = None


REQUIRED: dict[str, tuple[str, ...]] = {
    "goto": ("region",),
    "inspect": ("object", "question"),
    "grasp": ("object",),
    "place": ("object", "region"),
    "query": ("concept",),
    "answer": ("text",),
}

NODE_KINDS: dict[str, str] = {"region": "region", "object": "object", "entity": "object"}
"""Arguments that name a graph node, and the kind of node they must name."""


class Action(_Model):
    name: Literal["goto", "inspect", "grasp", "place", "query", "answer"]
    args: ActionArgs = Field(default_factory=ActionArgs)

    @model_validator(mode="after")
    def _required_args(self) -> Action:
        missing = [a for a in REQUIRED[self.name] if not getattr(self.args, a)]
        if missing:
            raise ValueError(f"action '{self.name}' needs args: {', '.join(missing)}")
        return self

    def node_args(self) -> list[tuple[str, str, str]]:
        """(field, node name, node kind) for each argument naming a graph node (an
        answer's entity only when given)."""
        fields = [*REQUIRED[self.name], *(("entity",) if self.args.entity else ())]
        return [(f, getattr(self.args, f), NODE_KINDS[f]) for f in fields if f in NODE_KINDS]

    def signature(self) -> str:
        vals = [
            getattr(self.args, a)
            for a in ("region", "object", "concept", "question", "text", "entity")
        ]
        shown = ", ".join(repr(v) if " " in str(v) else str(v) for v in vals if v)
        return f"{self.name}({shown})"


class StepReply(_Model):
    hypothesis: HypothesisState
    reasoning: str = Field("", max_length=2000)
    action: Action
