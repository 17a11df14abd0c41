"""Record every LLM call to a JSONL cassette, and replay it bit-identically.

Cassette format (one JSON object per line, ASCII, flushed after every call so a killed
process leaves a readable file)::

    {"type": "header", "format": "cluetwin-llm-cassette", "version": 1, "model": ...}
    {"type": "call", "step": 0, "key": <sha256>, "purpose": ..., "request": {...},
     "reply": {"text": ..., "prompt_tokens": ..., "completion_tokens": ..., ...}}
    {"type": "error", "step": 1, "key": ..., "request": {...}, "error": "LLMUnavailable",
     "message": ...}

``request`` is :meth:`ChatRequest.canonical` (model, messages, parameters; inline images
as digests) and ``key`` its sha256 (:meth:`ChatRequest.key`). Nothing about the
endpoint or its credentials is stored.

:class:`ReplayBackend` serves the calls in order. Each incoming request must hash to
the recorded key; if not, :class:`CassetteMismatch` names the first step that differs
and what changed. Asking for more calls than were recorded raises
:class:`CassetteExhausted`. Errors recorded during the run are raised again at the
same step, so a replayed episode fails where the original did.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import IO, Any

from agents.llm.base import (
    ChatReply,
    ChatRequest,
    LLMBackend,
    LLMError,
    LLMPersistentError,
    LLMRetryableError,
    LLMUnavailable,
    redact,
)

log = logging.getLogger(__name__)

CASSETTE_FORMAT = "cluetwin-llm-cassette"
CASSETTE_VERSION = 1


class CassetteError(LLMPersistentError):
    """A cassette cannot be written, read, or does not fit the run."""


class CassetteMismatch(CassetteError):
    """A request differs from the one recorded at the same step.

    ``step`` is the 0-based call index, ``differences`` short descriptions of the first
    differing fields (``"messages[3].content: ..."``).
    """

    def __init__(self, message: str, *, step: int, differences: list[str]) -> None:
        super().__init__(message)
        self.step = step
        self.differences = differences


class CassetteExhausted(CassetteError):
    """More calls were made than the cassette holds."""

    def __init__(self, message: str, *, step: int) -> None:
        super().__init__(message)
        self.step = step


def _dumps(entry: dict[str, Any]) -> str:
    return json.dumps(entry, sort_keys=True, ensure_ascii=True)


class RecordingBackend(LLMBackend):
    """Wraps ``inner`` and appends every request and reply to the cassette at ``path``.

    Refuses to overwrite an existing file unless ``overwrite=True``. Closing the
    recorder closes ``inner`` too.
    """

    def __init__(self, inner: LLMBackend, path: str | Path, *, overwrite: bool = False) -> None:
        self.inner = inner
        self.model = inner.model
        self.path = Path(path)
        self.steps = 0
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file: IO[str] | None = open(
                self.path, "w" if overwrite else "x", encoding="ascii"
            )
        except FileExistsError:
            raise CassetteError(
                f"cassette {self.path} exists; choose another path or pass overwrite=True"
            ) from None
        except OSError as e:
            raise CassetteError(f"cannot write cassette {self.path}: {e.strerror}") from None
        self._write(
            {
                "type": "header",
                "format": CASSETTE_FORMAT,
                "version": CASSETTE_VERSION,
                "model": self.model,
            }
        )

    def __repr__(self) -> str:
        return f"RecordingBackend({self.inner!r}, path={str(self.path)!r}, steps={self.steps})"

    def _write(self, entry: dict[str, Any]) -> None:
        if self._file is None:
            raise CassetteError(f"cassette {self.path} is closed")
        self._file.write(_dumps(entry) + "\n")
        self._file.flush()

    def _complete(self, request: ChatRequest) -> ChatReply:
        step = self.steps
        head = {"step": step, "key": request.key(), "purpose": request.purpose}
        head["request"] = request.canonical()
        try:
            reply = self.inner.complete(request)
        except LLMError as e:
            entry = {**head, "type": "error", "error": type(e).__name__, "message": redact(str(e))}
            if isinstance(e, LLMUnavailable):
                entry.update(base_url=e.base_url, attempts=e.attempts)
            self._write(entry)
            self.steps += 1
            raise
        self._write({**head, "type": "call", "reply": reply.to_dict()})
        self.steps += 1
        return reply

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self.inner.close()


class ReplayBackend(LLMBackend):
    """Serves the replies of a cassette in order, checking each request against it.

    The default model is the recorded one, so requests that leave ``model`` empty hash
    as they did when recorded. Replies are returned exactly as recorded (text, token
    counts, token source, latency, metadata) and counted in :attr:`usage` as they were.
    """

    def __init__(self, path: str | Path, *, model: str | None = None) -> None:
        self.path = Path(path)
        header, self.entries = load_cassette(self.path)
        self.model = model or str(header.get("model") or "")
        self.position = 0

    def __repr__(self) -> str:
        return f"ReplayBackend(path={str(self.path)!r}, step={self.position}/{len(self.entries)})"

    @property
    def remaining(self) -> int:
        return len(self.entries) - self.position

    def check_finished(self) -> None:
        """Raise :class:`CassetteError` if recorded calls were never asked for."""
        if self.remaining:
            raise CassetteError(
                f"cassette {self.path}: the run stopped after {self.position} of "
                f"{len(self.entries)} recorded calls"
            )

    def _complete(self, request: ChatRequest) -> ChatReply:
        step = self.position
        if step >= len(self.entries):
            raise CassetteExhausted(
                f"cassette {self.path} holds {len(self.entries)} calls; step {step} asked for "
                f"one more (purpose {request.purpose or '-'}, last message: "
                f"{_short(request.messages[-1].text(), 120)})",
                step=step,
            )
        entry = self.entries[step]
        if request.key() != entry.get("key"):
            diffs = diff_requests(entry.get("request", {}), request.canonical())
            raise CassetteMismatch(
                f"cassette {self.path}: the request at step {step} differs from the recorded "
                f"one: " + "; ".join(diffs),
                step=step,
                differences=diffs,
            )
        self.position += 1
        if entry["type"] == "error":
            raise _rebuild_error(entry)
        return ChatReply.from_dict(entry["reply"])


def load_cassette(path: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(header, entries)`` of a cassette; a cut-off last line (killed writer) is skipped."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="ascii").splitlines()
    except FileNotFoundError:
        raise CassetteError(f"no cassette at {path}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise CassetteError(f"cannot read cassette {path}: {e}") from None
    records: list[dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            if number == len(lines):
                log.warning("cassette %s: skipping cut-off last line %d", path, number)
                break
            raise CassetteError(f"cassette {path}, line {number}: not valid JSON") from None
        if not isinstance(record, dict):
            raise CassetteError(f"cassette {path}, line {number}: not a JSON object")
        records.append(record)
    if not records or records[0].get("format") != CASSETTE_FORMAT:
        raise CassetteError(f"{path} is not a {CASSETTE_FORMAT} file (no header line)")
    header = records[0]
    if header.get("version") != CASSETTE_VERSION:
        raise CassetteError(
            f"cassette {path} has version {header.get('version')}; this code reads "
            f"version {CASSETTE_VERSION}"
        )
    entries = records[1:]
    for i, entry in enumerate(entries):
        if entry.get("type") not in ("call", "error") or entry.get("step") != i:
            raise CassetteError(f"cassette {path}: entry {i} is not step {i} of a call")
        if entry["type"] == "call" and not isinstance(entry.get("reply"), dict):
            raise CassetteError(f"cassette {path}: step {i} has no reply")
    return header, entries


def _error_classes() -> dict[str, type[LLMError]]:
    found: dict[str, type[LLMError]] = {}
    stack: list[type[LLMError]] = [LLMError]
    while stack:
        cls = stack.pop()
        found.setdefault(cls.__name__, cls)
        stack.extend(cls.__subclasses__())
    return found


def _rebuild_error(entry: dict[str, Any]) -> LLMError:
    name, message = str(entry.get("error")), str(entry.get("message", ""))
    if name == LLMUnavailable.__name__:
        return LLMUnavailable(
            message,
            base_url=str(entry.get("base_url", "")),
            attempts=int(entry.get("attempts", 0)),
            last_error=LLMRetryableError(message),
        )
    cls = _error_classes().get(name, LLMPersistentError)
    try:
        return cls(message)
    except TypeError:  # a subclass with a richer constructor: keep the class's family
        family = LLMRetryableError if issubclass(cls, LLMRetryableError) else LLMPersistentError
        return family(f"{name}: {message}")


# --------------------------------------------------------------------------- diffs


def _short(value: Any, limit: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    text = repr(text) if isinstance(value, str) else text
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _string_diff(a: str, b: str) -> str:
    if len(a) <= 60 and len(b) <= 60:
        return f"recorded {a!r}, now {b!r}"
    i = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    lo = max(0, i - 20)
    return (
        f"differs at char {i}: recorded {_short(a[lo : i + 40])} "
        f"(len {len(a)}), now {_short(b[lo : i + 40])} (len {len(b)})"
    )


def diff_requests(recorded: Any, now: Any, limit: int = 3) -> list[str]:
    """Up to ``limit`` descriptions of where two canonical requests differ."""
    out: list[str] = []

    def walk(a: Any, b: Any, path: str) -> None:
        if len(out) >= limit or a == b:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for k in sorted(set(a) | set(b), key=str):
                sub = f"{path}.{k}" if path else str(k)
                if k not in a:
                    out.append(f"{sub}: not recorded, now {_short(b[k])}")
                elif k not in b:
                    out.append(f"{sub}: recorded {_short(a[k])}, now absent")
                else:
                    walk(a[k], b[k], sub)
                if len(out) >= limit:
                    return
        elif isinstance(a, list) and isinstance(b, list):
            for i, (x, y) in enumerate(zip(a, b, strict=False)):
                walk(x, y, f"{path}[{i}]")
                if len(out) >= limit:
                    return
            if len(a) != len(b):
                out.append(f"{path}: recorded {len(a)} items, now {len(b)}")
        elif isinstance(a, str) and isinstance(b, str):
            out.append(f"{path}: {_string_diff(a, b)}")
        else:
            out.append(f"{path}: recorded {_short(a)}, now {_short(b)}")

    walk(recorded, now, "")
    return out or ["same canonical request but different key (cassette edited by hand?)"]
