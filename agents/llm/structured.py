"""Parse, validate, repair, retry with feedback: how every policy gets typed replies.

:func:`complete_structured` asks a backend, pulls a JSON object out of the reply text,
validates it with a pydantic model and an optional extra validator ("the entity must be
one the robot has seen"), and on any problem appends the bad reply (as the assistant)
and a concrete description of the problem (as the user) and asks again, at most
``max_attempts`` calls in all. After that it raises :class:`MalformedReply`, which
carries every attempt for the caller to log.

What counts as a JSON object in a reply (:func:`extract_json_objects`): every
top-level ``{...}`` that decodes as JSON, in order of appearance, so Markdown fences,
prose before or after, and trailing remarks are tolerated. Each is validated in turn
and the first that passes wins. Replies longer than ``max_reply_chars`` are rejected
without parsing. No reply, however malformed (empty, ``None``, huge, deeply nested,
invalid unicode), raises anything other than :class:`MalformedReply` here; errors of
the backend itself (:class:`~agents.llm.base.LLMError`) pass through unchanged.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from agents.llm.base import (
    ChatReply,
    ChatRequest,
    JsonSchema,
    LLMBackend,
    LLMPersistentError,
    Message,
)

T = TypeVar("T", bound=BaseModel)

Validator = Callable[[Any], "str | None"]
"""Extra check on a validated object: return an error message, or ``None`` if fine.
Raising ``ValueError`` counts as returning its message."""

DEFAULT_MAX_ATTEMPTS = 3
FEEDBACK_CHARS = 2000  # cap on the echoed bad reply and on the problem description
MAX_REPLY_CHARS = 100_000  # longer replies are rejected unparsed
MAX_DECODE_TRIES = 64  # '{' positions tried per reply
MAX_VALIDATION_LINES = 6


class ReplyError(ValueError):
    """A reply's text is not a usable object; the message is feedback for the model."""


@dataclass(frozen=True)
class Attempt:
    """One call of the loop: 1-based ``number``, the reply text, and the problem found
    (``None`` for the accepted attempt)."""

    number: int
    text: str
    error: str | None
    reply: ChatReply | None = None


class MalformedReply(LLMPersistentError):
    """No attempt produced a valid object; ``attempts`` holds them all."""

    def __init__(self, message: str, attempts: Sequence[Attempt]) -> None:
        super().__init__(message)
        self.attempts = tuple(attempts)


@dataclass(frozen=True)
class StructuredResult(Generic[T]):
    """The accepted object, the reply it came from, and every attempt made."""

    value: T
    reply: ChatReply
    attempts: tuple[Attempt, ...]


# --------------------------------------------------------------------------- extraction


def extract_json_objects(text: str, *, limit: int = 8) -> list[dict[str, Any]]:
    """Top-level JSON objects in ``text``, in order, at most ``limit``.

    Tries :data:`MAX_DECODE_TRIES` ``{`` positions at most; after an object is found the
    scan resumes behind it, so objects nested in one already found are not repeated.
    """
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    pos, tries = 0, 0
    while len(found) < limit and tries < MAX_DECODE_TRIES:
        start = text.find("{", pos)
        if start < 0:
            break
        tries += 1
        try:
            obj, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            pos = start + 1
            continue
        if isinstance(obj, dict):
            found.append(obj)
            pos = end
        else:
            pos = start + 1
    return found


def extract_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in ``text``; :class:`ReplyError` if there is none."""
    objects = extract_json_objects(text, limit=1)
    if not objects:
        raise ReplyError(_no_object_message(text))
    return objects[0]


def _no_object_message(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith(("[", '"')) or stripped in ("null", "true", "false"):
        return "the reply is JSON but not a JSON object ({...}); the top level must be an object"
    if "{" in text:
        return "the reply contains no valid JSON object (unbalanced braces, or invalid JSON)"
    return "the reply contains no JSON object"


# --------------------------------------------------------------------------- validation


def _describe(value: Any) -> str:
    if isinstance(value, str):
        return repr(value if len(value) <= 40 else value[:37] + "...")
    if isinstance(value, bool | int | float) or value is None:
        return repr(value)[:40]
    if isinstance(value, dict):
        keys = ", ".join(str(k)[:20] for k in list(value)[:6])
        more = ", ..." if len(value) > 6 else ""
        return f"an object with keys [{keys}{more}]"
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    return type(value).__name__


def format_validation_error(error: ValidationError) -> str:
    """A short, model-readable list of what is wrong, one line per field."""
    problems = error.errors(include_url=False)
    lines = []
    for p in problems[:MAX_VALIDATION_LINES]:
        where = ".".join(str(part) for part in p.get("loc", ())) or "(top level)"
        got = "" if p.get("type") == "missing" else f" (got {_describe(p.get('input'))})"
        lines.append(f"- {where}: {p.get('msg', 'invalid')}{got}")
    if len(problems) > MAX_VALIDATION_LINES:
        lines.append(f"- ... and {len(problems) - MAX_VALIDATION_LINES} more problems")
    return "the JSON object does not match the required format:\n" + "\n".join(lines)


def parse_reply(
    text: str | None,
    model: type[T],
    validator: Validator | None = None,
    *,
    max_reply_chars: int = MAX_REPLY_CHARS,
) -> T:
    """The first JSON object in ``text`` that ``model`` and ``validator`` accept.

    Raises :class:`ReplyError` whose message explains the problem of the first object
    found (or why none was found), meant to be shown to the model.
    """
    if not isinstance(text, str) or not text.strip():
        raise ReplyError("the reply was empty")
    if len(text) > max_reply_chars:
        raise ReplyError(
            f"the reply is {len(text)} characters long; at most {max_reply_chars} are read"
        )
    candidates = extract_json_objects(text)
    if not candidates:
        raise ReplyError(_no_object_message(text))
    first_error: str | None = None
    for obj in candidates:
        try:
            value = model.model_validate(obj)
            problem = validator(value) if validator is not None else None
        except ValidationError as e:
            problem = format_validation_error(e)
        except RecursionError:
            problem = "the JSON object is nested too deeply"
        except ValueError as e:  # raised by the extra validator
            problem = str(e) or type(e).__name__
        if problem is None:
            return value
        first_error = first_error or problem
    raise ReplyError(first_error or "no usable JSON object")


# --------------------------------------------------------------------------- the loop


def _clip(text: str, cap: int) -> str:
    safe = text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates -> '?'
    if len(safe) <= cap:
        return safe
    return safe[:cap] + f"\n...[truncated; {len(text)} characters in all]"


def feedback_message(problem: str, model: type[BaseModel], cap: int = FEEDBACK_CHARS) -> str:
    """The user message that follows a rejected reply."""
    fields = ", ".join(model.model_fields)
    return (
        "Your previous reply could not be used.\n"
        f"Problem: {_clip(problem, cap)}\n"
        "Reply again with exactly one JSON object in the required format "
        f"(top-level fields: {fields}) and nothing else."
    )


def schema_for(model: type[BaseModel]) -> JsonSchema:
    """The JSON schema of ``model`` for structured output (``response_format``)."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", model.__name__)[:64] or "reply"
    return JsonSchema(name=name, schema=model.model_json_schema())


def complete_structured(
    backend: LLMBackend,
    request: ChatRequest,
    model: type[T],
    *,
    validator: Validator | None = None,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    feedback_chars: int = FEEDBACK_CHARS,
    max_reply_chars: int = MAX_REPLY_CHARS,
    use_schema: bool = True,
) -> StructuredResult[T]:
    """Call ``backend`` until a reply parses into ``model``; at most ``max_attempts`` calls.

    With ``use_schema`` and no ``request.json_schema``, the model's JSON schema is
    attached so servers with structured output can enforce it. Repair calls carry the
    purpose ``"<purpose>/repair"``. Raises :class:`MalformedReply` when every attempt
    failed; backend errors propagate unchanged.
    """
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
    if use_schema and request.json_schema is None:
        request = dataclasses.replace(request, json_schema=schema_for(model))
    repair_purpose = f"{request.purpose}/repair" if request.purpose else "repair"
    attempts: list[Attempt] = []
    current = request
    for number in range(1, max_attempts + 1):
        reply = backend.complete(current)
        text = reply.text if isinstance(reply.text, str) else ""
        try:
            value = parse_reply(text, model, validator, max_reply_chars=max_reply_chars)
        except ReplyError as e:
            attempts.append(Attempt(number, text, str(e), reply))
            echoed = _clip(text, feedback_chars) if text.strip() else "(empty reply)"
            problem = feedback_message(str(e), model, feedback_chars)
            current = dataclasses.replace(
                current.appended(Message.assistant(echoed), Message.user(problem)),
                purpose=repair_purpose,
            )
            continue
        attempts.append(Attempt(number, text, None, reply))
        return StructuredResult(value=value, reply=reply, attempts=tuple(attempts))
    last = attempts[-1].error or ""
    raise MalformedReply(
        f"no usable {model.__name__} after {len(attempts)} attempts; last problem: "
        f"{_clip(last, 300)}",
        attempts,
    )
