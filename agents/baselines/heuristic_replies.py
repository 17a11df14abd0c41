"""What the offline heuristic responder answers to the baselines' prompts.

Like the CLUE responder it reads only the prompt text (the task and, for retrieval, the
captions), with the same lexicon and the same judgement of inspection answers.
"""

from __future__ import annotations

import json

from agents.baselines.prompts import CONCEPT_PROMPT, RETRIEVAL_PROMPT
from agents.clue.lexicon import parse_task

# how well a caption fits the task, by judgement status (higher is better)
FIT = {"confirmed": 4, "partial": 3, "inconclusive": 2, "occluded": 1, "nothing": 0, "ruled_out": 0}


def _task(text: str) -> str:
    body = text.split("## Task", 1)[-1]
    return body.split("\n## ", 1)[0].strip()


def concept_reply(user: str) -> str:
    intent = parse_task(_task(user))
    concept = intent.queries[0] if intent.queries else intent.head
    return json.dumps({"concept": concept, "question": intent.question()})


def retrieval_reply(user: str) -> str:
    from agents.clue.heuristic import judge

    intent = parse_task(_task(user))
    # a caption that rules the object out is never the answer, however few remain
    best, best_fit, best_reason = None, 0, ""
    for line in user.split("## Observed objects", 1)[-1].splitlines():
        if not line.startswith("- ") or ": " not in line:
            continue
        name, caption = line[2:].split(": ", 1)
        j = judge(caption, intent)
        fit = FIT.get(j.status, 0)
        fit += 1 if fit and j.identity == "match" else 0
        if fit > best_fit:
            best, best_fit, best_reason = name.strip(), fit, j.reason
    if best is None:
        return json.dumps({"entity": "none", "text": f"I found no {intent.head}."})
    return json.dumps({"entity": best, "text": f"{best} fits the task best: {best_reason}."})


def baseline_reply(system: str, user: str) -> str | None:
    """The reply to a baseline prompt, or None when ``system`` is not one of theirs."""
    if system == CONCEPT_PROMPT:
        return concept_reply(user)
    if system == RETRIEVAL_PROMPT:
        return retrieval_reply(user)
    return None
