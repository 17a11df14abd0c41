"""A response cache in sqlite, for iterating on prompts without paying twice.

:class:`CachedBackend` wraps any backend. A request whose key (:meth:`ChatRequest.key`:
sha256 of model + messages + parameters) is in the cache is answered from it; otherwise
the inner backend answers and the reply is stored. Errors are never cached.

Accounting: a reply served from the cache comes back with ``cached=True``; the
backend's :class:`~agents.llm.base.UsageCounter` counts it in ``cache_hits`` and
``cached_*_tokens``, not in ``calls`` / ``prompt_tokens`` (those tokens were paid once,
when the reply was first produced). ``latency_s`` of a hit is the lookup time.
:attr:`CachedBackend.hits` / :attr:`CachedBackend.misses` count lookups.

Note that caching also freezes sampling: with ``temperature > 0`` the same request
always gets the first reply it ever got.

The database uses WAL journaling and a busy time-out, so several processes (a batch
run's workers) can share one file. Nothing about the endpoint or its credentials is
stored. A broken cache never breaks a run: read and write failures are logged and the
call goes to the inner backend.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import sqlite3
import threading
import time
from pathlib import Path

from agents.llm.base import ChatReply, ChatRequest, LLMBackend, LLMConfigError, canonical_json

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY,      -- ChatRequest.key()
    model TEXT NOT NULL,
    request TEXT NOT NULL,     -- ChatRequest.canonical() as JSON, for inspection
    reply TEXT NOT NULL,       -- ChatReply.to_dict() as JSON
    created_s REAL NOT NULL    -- unix time
)
"""


class CachedBackend(LLMBackend):
    """Answers repeated requests from an sqlite file at ``path``; see the module doc.

    ``busy_timeout_s`` is how long a writer waits for another process's lock.
    Closing the cache closes ``inner`` too.
    """

    def __init__(
        self, inner: LLMBackend, path: str | Path, *, busy_timeout_s: float = 10.0
    ) -> None:
        self.inner = inner
        self.model = inner.model
        self.path = Path(path)
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db: sqlite3.Connection | None = sqlite3.connect(
                self.path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
            self._db.execute(_SCHEMA)
        except (sqlite3.Error, OSError) as e:
            raise LLMConfigError(f"cannot open the LLM cache {self.path}: {e}") from None

    def __repr__(self) -> str:
        return (
            f"CachedBackend({self.inner!r}, path={str(self.path)!r}, "
            f"hits={self.hits}, misses={self.misses})"
        )

    def __len__(self) -> int:
        with self._lock:
            return self._conn().execute("SELECT COUNT(*) FROM replies").fetchone()[0]

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            raise LLMConfigError(f"the LLM cache {self.path} is closed")
        return self._db

    def _complete(self, request: ChatRequest) -> ChatReply:
        started = time.perf_counter()
        key = request.key()
        stored = self._lookup(key)
        if stored is not None:
            self.hits += 1
            return dataclasses.replace(stored, cached=True, latency_s=time.perf_counter() - started)
        self.misses += 1
        reply = self.inner.complete(request)
        self._store(key, request, reply)
        return reply

    def _lookup(self, key: str) -> ChatReply | None:
        try:
            with self._lock:
                row = (
                    self._conn()
                    .execute("SELECT reply FROM replies WHERE key = ?", (key,))
                    .fetchone()
                )
            return None if row is None else ChatReply.from_dict(json.loads(row[0]))
        except (sqlite3.Error, ValueError, KeyError, TypeError) as e:
            log.warning("LLM cache %s: lookup failed (%s); asking the backend", self.path, e)
            return None

    def _store(self, key: str, request: ChatRequest, reply: ChatReply) -> None:
        row = (
            key,
            request.model,
            canonical_json(request.canonical()),
            canonical_json(dataclasses.replace(reply, cached=False).to_dict()),
            time.time(),
        )
        try:
            with self._lock:
                self._conn().execute(
                    "INSERT OR REPLACE INTO replies (key, model, request, reply, created_s) "
                    "VALUES (?, ?, ?, ?, ?)",
                    row,
                )
        except sqlite3.Error as e:
            log.warning("LLM cache %s: could not store a reply (%s)", self.path, e)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
        self.inner.close()
