"""The one LLM backend interface: request and reply types, usage accounting, errors.

Every LLM call in the project goes through :meth:`LLMBackend.complete`, which takes a
:class:`ChatRequest` and returns a :class:`ChatReply`. Backends (OpenAI-compatible HTTP,
the offline heuristic responder, cassette replay, scripted replies for tests) implement
:meth:`LLMBackend._complete`; wrappers (cassette recording, the sqlite cache) wrap any
backend and are backends themselves.

Accounting
----------
Every backend counts what passes through it in :attr:`LLMBackend.usage`
(:class:`UsageCounter`). Tokens come from the server's ``usage`` block when it sends one
(``ChatReply.tokens_source == "server"``); otherwise they are estimated
(``"estimate"``) by :func:`estimate_prompt_tokens` / :func:`estimate_tokens`:

* text: ``ceil(len(text) / 4)`` tokens (about four characters per token for English
  with BPE tokenizers; code and JSON run somewhat denser);
* each message adds 4 tokens of chat-format overhead;
* each image part counts 85 tokens (OpenAI's price of a low-detail image).

Errors
------
Every failure is an :class:`LLMError`. :class:`LLMRetryableError` means the same call may
succeed later (time-out, refused connection, HTTP 5xx, 429); :class:`LLMPersistentError`
means it will not without a change (bad key, bad request, or retries already spent:
:class:`LLMUnavailable`). Error messages, reprs, logs, cassettes and caches never contain
an API key; use :func:`redact` and :func:`redact_url` when building messages.
"""

from __future__ import annotations

import abc
import copy
import dataclasses
import hashlib
import json
import math
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

# --------------------------------------------------------------------------- errors


class LLMError(Exception):
    """Root of every error raised by an LLM or VLM backend."""


class LLMRetryableError(LLMError):
    """The same call may succeed if repeated later (transport hiccup, overload)."""


class LLMPersistentError(LLMError):
    """The call will keep failing until something changes (key, request, endpoint)."""


class LLMTimeout(LLMRetryableError):
    """The server did not answer within the client's time-out."""


class LLMConnectionError(LLMRetryableError):
    """No connection to the endpoint (refused, reset, DNS failure)."""


class LLMServerError(LLMRetryableError):
    """The server answered HTTP 5xx (or 408 / 409, which servers use for overload)."""


class LLMRateLimited(LLMRetryableError):
    """The server answered HTTP 429."""


class LLMConfigError(LLMPersistentError):
    """The backend is misconfigured (no model name, bad argument, missing package)."""


class LLMAuthError(LLMPersistentError):
    """The server rejected the credentials (HTTP 401 / 403)."""


class LLMBadRequest(LLMPersistentError):
    """The server rejected the request itself (HTTP 400 / 404 / 413 / 422 ...)."""


class LLMBadResponse(LLMPersistentError):
    """The server answered, but not with a usable chat completion."""


class LLMUnavailable(LLMPersistentError):
    """Retryable failures continued until the retry budget was spent.

    ``base_url`` is the endpoint (credentials stripped), ``attempts`` the number of
    requests made, ``last_error`` the retryable error of the final attempt.
    """

    def __init__(
        self, message: str, *, base_url: str, attempts: int, last_error: LLMRetryableError
    ) -> None:
        super().__init__(message)
        self.base_url = base_url
        self.attempts = attempts
        self.last_error = last_error


# --------------------------------------------------------------------------- secrets

_TOKEN_SHAPES = (
    (re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{6,}"), "Bearer ***"),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"), "sk-***"),
)


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every given secret, bearer token and ``sk-...`` key replaced."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    for pattern, replacement in _TOKEN_SHAPES:
        text = pattern.sub(replacement, text)
    return text


def redact_url(url: str | None) -> str:
    """``url`` without user-info or query string (either may carry a credential)."""
    if not url:
        return "<default endpoint>"
    try:
        parts = urlsplit(str(url))
    except ValueError:
        return "<unparseable URL>"
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    query = "<redacted>" if parts.query else ""
    return urlunsplit((parts.scheme, host, parts.path, query, ""))


# --------------------------------------------------------------------------- requests

Role = Literal["system", "user", "assistant"]
_ROLES = ("system", "user", "assistant")


def text_part(text: str) -> dict[str, Any]:
    """An OpenAI-style text content part."""
    return {"type": "text", "text": text}


def image_part(url: str, detail: str | None = None) -> dict[str, Any]:
    """An OpenAI-style image content part; ``url`` is http(s) or a ``data:`` URL."""
    image: dict[str, Any] = {"url": url}
    if detail:
        image["detail"] = detail
    return {"type": "image_url", "image_url": image}


@dataclass(frozen=True)
class Message:
    """One chat message. ``content`` is text, or a tuple of OpenAI-style content parts
    (``{"type": "text", "text": ...}``, ``{"type": "image_url", "image_url": {"url": ...}}``).
    """

    role: Role
    content: str | tuple[Mapping[str, Any], ...]

    def __post_init__(self) -> None:
        if self.role not in _ROLES:
            raise ValueError(f"message role must be one of {_ROLES}, got {self.role!r}")
        if isinstance(self.content, str):
            return
        if not isinstance(self.content, Sequence):
            raise TypeError(
                f"message content must be str or a list of parts, got {type(self.content)}"
            )
        parts = tuple(copy.deepcopy(dict(p)) for p in self.content)
        for i, part in enumerate(parts):
            if part.get("type") not in ("text", "image_url"):
                raise ValueError(f"content part {i} has unsupported type {part.get('type')!r}")
        object.__setattr__(self, "content", parts)

    @classmethod
    def system(cls, content: str) -> Message:
        return cls("system", content)

    @classmethod
    def user(cls, content: str | Sequence[Mapping[str, Any]]) -> Message:
        return cls("user", content if isinstance(content, str) else tuple(content))

    @classmethod
    def assistant(cls, content: str) -> Message:
        return cls("assistant", content)

    def text(self) -> str:
        """The text of the message (text parts joined by newlines)."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(str(p.get("text", "")) for p in self.content if p["type"] == "text")

    def images(self) -> int:
        """Number of image parts."""
        if isinstance(self.content, str):
            return 0
        return sum(1 for p in self.content if p["type"] == "image_url")

    def to_openai(self) -> dict[str, Any]:
        content = self.content if isinstance(self.content, str) else [dict(p) for p in self.content]
        return {"role": self.role, "content": copy.deepcopy(content)}

    @classmethod
    def coerce(cls, m: Message | Mapping[str, Any]) -> Message:
        if isinstance(m, Message):
            return m
        content = m.get("content")
        if content is None:
            content = ""
        return cls(m["role"], content if isinstance(content, str) else tuple(content))


@dataclass(frozen=True)
class JsonSchema:
    """A JSON schema for structured output (OpenAI ``response_format`` json_schema).

    ``name`` must match ``[A-Za-z0-9_-]{1,64}``; ``strict`` asks the server to enforce
    the schema exactly (OpenAI then requires ``additionalProperties: false`` everywhere).
    """

    name: str
    schema: Mapping[str, Any]
    strict: bool = False

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", self.name):
            raise ValueError(f"JSON schema name must match [A-Za-z0-9_-]{{1,64}}: {self.name!r}")
        object.__setattr__(self, "schema", copy.deepcopy(dict(self.schema)))

    def response_format(self) -> dict[str, Any]:
        return {
            "type": "json_schema",
            "json_schema": {"name": self.name, "schema": dict(self.schema), "strict": self.strict},
        }


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion request, independent of any endpoint or credential.

    ``model`` may be left empty: the backend that serves the request fills in its own
    default (:attr:`LLMBackend.model`) before anything is hashed or sent. ``purpose`` is
    an accounting label (e.g. ``"clue.step"``, ``"vlm"``); it is not sent and not part of
    :meth:`key`.
    """

    messages: tuple[Message, ...]
    model: str = ""
    temperature: float = 0.0
    max_tokens: int | None = None  # completion tokens
    json_schema: JsonSchema | None = None
    seed: int | None = None
    purpose: str = ""

    def __post_init__(self) -> None:
        msgs = tuple(Message.coerce(m) for m in self.messages)
        if not msgs:
            raise ValueError("a chat request needs at least one message")
        object.__setattr__(self, "messages", msgs)
        if not (0.0 <= float(self.temperature) <= 2.0):
            raise ValueError(f"temperature must be in [0, 2], got {self.temperature}")
        if self.max_tokens is not None and self.max_tokens <= 0:
            raise ValueError(f"max_tokens must be positive, got {self.max_tokens}")

    def resolve(self, default_model: str) -> ChatRequest:
        """This request with ``model`` set to ``default_model`` if it was empty."""
        if self.model or not default_model:
            return self
        return dataclasses.replace(self, model=default_model)

    def appended(self, *messages: Message) -> ChatRequest:
        """A copy with ``messages`` added at the end."""
        return dataclasses.replace(self, messages=self.messages + tuple(messages))

    def openai_messages(self) -> list[dict[str, Any]]:
        return [m.to_openai() for m in self.messages]

    def canonical(self) -> dict[str, Any]:
        """Everything that determines the reply, as plain JSON data.

        Inline images (``data:`` URLs) are replaced by ``data:<mime>;sha256=<hex>`` so
        that keys stay short and cassettes do not carry megabytes of base64.
        """
        return {
            "model": self.model,
            "messages": [_canonical_message(m) for m in self.messages],
            "temperature": float(self.temperature),
            "max_tokens": self.max_tokens,
            "json_schema": None
            if self.json_schema is None
            else {
                "name": self.json_schema.name,
                "schema": self.json_schema.schema,
                "strict": self.json_schema.strict,
            },
            "seed": self.seed,
        }

    def key(self) -> str:
        """sha256 (hex) of the canonical JSON of :meth:`canonical`."""
        return hashlib.sha256(canonical_json(self.canonical()).encode("ascii")).hexdigest()


def canonical_json(data: Any) -> str:
    """Sorted keys, no whitespace, ASCII only: one spelling per value."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _canonical_message(m: Message) -> dict[str, Any]:
    if isinstance(m.content, str):
        return {"role": m.role, "content": m.content}
    parts = []
    for part in m.content:
        part = copy.deepcopy(dict(part))
        if part["type"] == "image_url":
            url = str(part.get("image_url", {}).get("url", ""))
            part["image_url"]["url"] = _digest_data_url(url)
        parts.append(part)
    return {"role": m.role, "content": parts}


def _digest_data_url(url: str) -> str:
    if not url.startswith("data:"):
        return url
    head, _, payload = url.partition(",")
    mime = head[len("data:") :].split(";")[0]
    return f"data:{mime};sha256={hashlib.sha256(payload.encode('ascii', 'replace')).hexdigest()}"


# --------------------------------------------------------------------------- replies

TokensSource = Literal["server", "estimate"]


@dataclass(frozen=True)
class ChatReply:
    """A model's answer and what it cost.

    ``raw`` holds JSON-safe metadata from the server (id, finish reason, server-side
    model name, usage block); never credentials. ``cached`` is true when a cache served
    the reply; its tokens were paid for once, earlier.
    """

    text: str
    prompt_tokens: int
    completion_tokens: int
    tokens_source: TokensSource
    latency_s: float
    raw: Mapping[str, Any] = field(default_factory=dict)
    cached: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "tokens_source": self.tokens_source,
            "latency_s": self.latency_s,
            "raw": dict(self.raw),
            "cached": self.cached,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ChatReply:
        return cls(
            text=str(d["text"]),
            prompt_tokens=int(d["prompt_tokens"]),
            completion_tokens=int(d["completion_tokens"]),
            tokens_source=d["tokens_source"],
            latency_s=float(d["latency_s"]),
            raw=dict(d.get("raw") or {}),
            cached=bool(d.get("cached", False)),
        )


CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD_TOKENS = 4
IMAGE_TOKENS = 85


def estimate_tokens(text: str | None) -> int:
    """Estimated tokens of ``text``: ``ceil(len(text) / 4)``."""
    return math.ceil(len(text or "") / CHARS_PER_TOKEN)


def estimate_prompt_tokens(messages: Iterable[Message]) -> int:
    """Estimated prompt tokens: per message 4 + ``ceil(chars / 4)`` + 85 per image."""
    return sum(
        MESSAGE_OVERHEAD_TOKENS + estimate_tokens(m.text()) + IMAGE_TOKENS * m.images()
        for m in messages
    )


# --------------------------------------------------------------------------- usage


@dataclass
class PurposeUsage:
    """Usage of one accounting purpose (``ChatRequest.purpose``)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0


@dataclass
class UsageCounter:
    """Calls and tokens that went through one backend.

    ``calls`` / ``prompt_tokens`` / ``completion_tokens`` count replies a model produced
    (paid for). Replies served by a cache count in ``cache_hits`` and
    ``cached_prompt_tokens`` / ``cached_completion_tokens`` instead, never as paid
    tokens. :attr:`requests` and :attr:`total_prompt_tokens` add both, which is what a
    policy consumed (the paper's Table 1 columns). ``estimated_calls`` counts replies
    whose tokens were estimated rather than reported by the server. Not thread-safe:
    give each concurrent episode its own backend.
    """

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated_calls: int = 0
    cache_hits: int = 0
    cached_prompt_tokens: int = 0
    cached_completion_tokens: int = 0
    errors: int = 0
    latency_s: float = 0.0  # summed wall time of answered calls
    by_purpose: dict[str, PurposeUsage] = field(default_factory=dict)

    def record(
        self,
        prompt_tokens: int,
        completion_tokens: int,
        *,
        purpose: str = "",
        estimated: bool = False,
        cached: bool = False,
        latency_s: float = 0.0,
    ) -> None:
        """Count one answered call."""
        slot = self.by_purpose.setdefault(purpose or "", PurposeUsage())
        self.latency_s += latency_s
        if cached:
            self.cache_hits += 1
            self.cached_prompt_tokens += prompt_tokens
            self.cached_completion_tokens += completion_tokens
            slot.cache_hits += 1
            return
        self.calls += 1
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        self.estimated_calls += int(estimated)
        slot.calls += 1
        slot.prompt_tokens += prompt_tokens
        slot.completion_tokens += completion_tokens

    def add_reply(self, reply: ChatReply, purpose: str = "") -> None:
        self.record(
            reply.prompt_tokens,
            reply.completion_tokens,
            purpose=purpose,
            estimated=reply.tokens_source == "estimate",
            cached=reply.cached,
            latency_s=reply.latency_s,
        )

    @property
    def requests(self) -> int:
        """Answered calls, paid or served from cache."""
        return self.calls + self.cache_hits

    @property
    def total_prompt_tokens(self) -> int:
        return self.prompt_tokens + self.cached_prompt_tokens

    @property
    def total_completion_tokens(self) -> int:
        return self.completion_tokens + self.cached_completion_tokens

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def copy(self) -> UsageCounter:
        return copy.deepcopy(self)

    def since(self, earlier: UsageCounter) -> UsageCounter:
        """What was counted after ``earlier`` (a :meth:`copy` taken before)."""
        out = UsageCounter()
        for f in dataclasses.fields(self):
            if f.name != "by_purpose":
                setattr(out, f.name, getattr(self, f.name) - getattr(earlier, f.name))
        for name, now in self.by_purpose.items():
            before = earlier.by_purpose.get(name, PurposeUsage())
            delta = PurposeUsage(
                *(getattr(now, f.name) - getattr(before, f.name) for f in dataclasses.fields(now))
            )
            if any(dataclasses.astuple(delta)):
                out.by_purpose[name] = delta
        return out


# --------------------------------------------------------------------------- backend


class CountsUsage:
    """A :class:`UsageCounter` in :attr:`usage`, made on first use; assign one to share
    it between backends."""

    @property
    def usage(self) -> UsageCounter:
        counter = self.__dict__.get("_usage")
        if counter is None:
            counter = self.__dict__["_usage"] = UsageCounter()
        return counter

    @usage.setter
    def usage(self, counter: UsageCounter) -> None:
        self.__dict__["_usage"] = counter


class LLMBackend(CountsUsage, abc.ABC):
    """Chat completion behind one method.

    Subclasses implement :meth:`_complete`; :meth:`complete` resolves the model name,
    times and counts the call, and must not be overridden. Implementations raise only
    :class:`LLMError` subclasses and never put credentials into messages or reprs.
    """

    model: str = ""  # default model for requests that leave ChatRequest.model empty

    def complete(self, request: ChatRequest) -> ChatReply:
        """Answer ``request``; count the call and its tokens in :attr:`usage`."""
        request = request.resolve(self.model)
        if not request.model:
            raise LLMConfigError(
                f"{type(self).__name__}: no model name (set ChatRequest.model or the backend's "
                "model, e.g. CLUETWIN_LLM_MODEL)"
            )
        try:
            reply = self._complete(request)
        except LLMError:
            self.usage.errors += 1
            raise
        self.usage.add_reply(reply, request.purpose)
        return reply

    @abc.abstractmethod
    def _complete(self, request: ChatRequest) -> ChatReply:
        """Answer a request whose ``model`` is already resolved."""

    def close(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release resources (connections, files). Safe to call twice."""

    def __enter__(self) -> LLMBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def timed_reply(
    text: str | None,
    request: ChatRequest,
    started_s: float,
    *,
    raw: Mapping[str, Any] | None = None,
) -> ChatReply:
    """A reply with estimated tokens and latency since ``started_s`` (``time.perf_counter``)."""
    return ChatReply(
        text=text or "",
        prompt_tokens=estimate_prompt_tokens(request.messages),
        completion_tokens=estimate_tokens(text),
        tokens_source="estimate",
        latency_s=time.perf_counter() - started_s,
        raw=dict(raw or {}),
    )
