"""A backend that answers from a queue: for tests of policies and of the repair loop."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import TypeAlias

from agents.llm.base import ChatReply, ChatRequest, LLMBackend, LLMPersistentError, timed_reply

Scripted: TypeAlias = str | None | ChatReply | BaseException | Callable[[ChatRequest], "Scripted"]
"""One queued answer: text (``None`` = a null content), a full reply, an exception to
raise, or a callable that receives the request and returns one of those."""


class ScriptExhausted(LLMPersistentError):
    """A :class:`ScriptedBackend` was asked for more replies than were queued."""


class ScriptedBackend(LLMBackend):
    """Serves queued replies in order and keeps every request it received.

    Text replies get estimated tokens (see :func:`agents.llm.base.estimate_tokens`);
    queue a :class:`ChatReply` to control tokens exactly. With ``default`` set, an empty
    queue answers with it instead of raising :class:`ScriptExhausted`.
    """

    def __init__(
        self,
        replies: Iterable[Scripted] = (),
        *,
        model: str = "scripted",
        default: Scripted | None = None,
    ) -> None:
        self.model = model
        self._queue: deque[Scripted] = deque(replies)
        self._default = default
        self.requests: list[ChatRequest] = []

    def push(self, *replies: Scripted) -> None:
        self._queue.extend(replies)

    @property
    def remaining(self) -> int:
        return len(self._queue)

    def _complete(self, request: ChatRequest) -> ChatReply:
        started = time.perf_counter()
        self.requests.append(request)
        if self._queue:
            item = self._queue.popleft()
        elif self._default is not None:
            item = self._default
        else:
            raise ScriptExhausted(
                f"scripted backend has no reply left for call {len(self.requests)} "
                f"(purpose {request.purpose or '-'})"
            )
        while callable(item) and not isinstance(item, type):
            item = item(request)
        if isinstance(item, BaseException) or (
            isinstance(item, type) and issubclass(item, BaseException)
        ):
            raise item
        if isinstance(item, ChatReply):
            return item
        return timed_reply(
            item, request, started, raw={"content_null": True} if item is None else {}
        )

    def __repr__(self) -> str:
        return f"ScriptedBackend(model={self.model!r}, remaining={self.remaining})"
