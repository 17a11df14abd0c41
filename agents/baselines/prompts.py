"""Prompts of the baselines (one JSON object per reply), shared with the offline responder."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

CONCEPT_PROMPT = """\
You turn a robot task into the one object concept to look up in a language-embedded map.
Reply with one JSON object and nothing else: {"concept": str, "question": str}
- concept: a short noun phrase naming the object to find ("barrel", "cart", "backpack").
- question: what to ask a vision-language model when looking at a candidate.
"""

RETRIEVAL_PROMPT = """\
You pick, from captions of every object a robot has observed, the one that satisfies a task.
Reply with one JSON object and nothing else: {"entity": str, "text": str}
- entity: the name of the chosen object, exactly as listed.
- text: a one-sentence answer to the task naming the object and why.
"""

CAPTION_QUESTION = "Describe this object briefly: what is it, and what is visible on it?"


class ConceptReply(BaseModel):
    model_config = ConfigDict(extra="ignore")
    concept: str = Field(min_length=1, max_length=80)
    question: str = Field(min_length=1, max_length=400)


class RetrievalReply(BaseModel):
    model_config = ConfigDict(extra="ignore")
    entity: str = Field(min_length=1, max_length=80)
    text: str = Field(min_length=1, max_length=400)


def concept_message(task: str) -> str:
    return f"## Task\n{task}"


def retrieval_message(task: str, captions: list[tuple[str, str]]) -> str:
    lines = [f"## Task\n{task}", "", "## Observed objects"]
    lines += [f"- {name}: {caption}" for name, caption in captions] or ["(none)"]
    return "\n".join(lines)
