"""The sqlite response cache: hits are free, misses go through, processes can share it."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from agents.llm import (
    CachedBackend,
    ChatReply,
    ChatRequest,
    LLMConfigError,
    LLMServerError,
    Message,
    OpenAIBackend,
    ScriptedBackend,
)
from tests.support.fake_openai_server import FakeOpenAIServer

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("clean_llm_env")]


def ask(text: str, purpose: str = "step") -> ChatRequest:
    return ChatRequest(messages=(Message.user(text),), purpose=purpose)


def test_second_identical_request_is_a_free_hit(tmp_path: Path) -> None:
    inner = ScriptedBackend([ChatReply("first", 100, 7, "server", 0.5, raw={"id": "x"})])
    cache = CachedBackend(inner, tmp_path / "cache.sqlite")
    miss = cache.complete(ask("where?"))
    hit = cache.complete(ask("where?", purpose="other-purpose"))  # purpose is not in the key
    assert len(inner.requests) == 1
    assert (cache.hits, cache.misses) == (1, 1)
    assert not miss.cached and hit.cached
    assert (hit.text, hit.prompt_tokens, hit.completion_tokens, hit.raw) == (
        "first",
        100,
        7,
        {"id": "x"},
    )
    u = cache.usage
    assert (u.calls, u.prompt_tokens, u.completion_tokens) == (1, 100, 7)  # paid once
    assert (u.cache_hits, u.cached_prompt_tokens, u.cached_completion_tokens) == (1, 100, 7)
    assert u.by_purpose["other-purpose"].cache_hits == 1
    assert len(cache) == 1


def test_different_requests_miss(tmp_path: Path) -> None:
    cache = CachedBackend(ScriptedBackend(default="same"), tmp_path / "c.sqlite")
    cache.complete(ask("a"))
    cache.complete(ask("b"))
    cache.complete(ChatRequest(messages=(Message.user("a"),), temperature=0.7))
    assert (cache.hits, cache.misses) == (0, 3)


def test_cache_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with CachedBackend(ScriptedBackend(["stored"]), path) as cache:
        cache.complete(ask("q"))
    fresh = ScriptedBackend()  # would raise ScriptExhausted if asked
    with CachedBackend(fresh, path) as again:
        assert again.complete(ask("q")).text == "stored"
    assert fresh.requests == []


def test_errors_are_not_cached(tmp_path: Path) -> None:
    inner = ScriptedBackend([LLMServerError("HTTP 500"), "ok"])
    cache = CachedBackend(inner, tmp_path / "c.sqlite")
    with pytest.raises(LLMServerError):
        cache.complete(ask("q"))
    assert cache.complete(ask("q")).text == "ok"
    assert len(inner.requests) == 2 and cache.usage.errors == 1


def test_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    CachedBackend(ScriptedBackend(), path).close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_file_that_is_not_a_database_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(LLMConfigError, match="cannot open the LLM cache"):
        CachedBackend(ScriptedBackend(), path)


def test_cache_over_http_saves_the_second_request(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        cache = CachedBackend(OpenAIBackend("m", base_url=server.base_url), tmp_path / "c.db")
        first = cache.complete(ask("hello"))
        second = cache.complete(ask("hello"))
        assert len(server.chat_requests) == 1
        assert second.text == first.text and second.prompt_tokens == first.prompt_tokens
        cache.close()


def _worker(path: str, worker: int, n: int) -> int:
    backend = CachedBackend(ScriptedBackend(default=f"w{worker}"), path)
    for i in range(n):
        backend.complete(ask(f"shared {i}"))
        backend.complete(ask(f"worker {worker} item {i}"))
    backend.close()
    return backend.misses


def test_processes_share_one_cache(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite")
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(3) as pool:
        misses = pool.starmap(_worker, [(path, w, 25) for w in range(3)])
    with CachedBackend(ScriptedBackend(), path) as cache:
        assert len(cache) == 25 + 3 * 25
        for w in range(3):
            assert cache.complete(ask(f"worker {w} item 24")).text == f"w{w}"
        assert cache.complete(ask("shared 0")).text in {"w0", "w1", "w2"}
    # Every private item missed; a shared item missed in at least one worker.
    assert sum(misses) >= 3 * 25 + 25
