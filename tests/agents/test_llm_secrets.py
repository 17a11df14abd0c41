"""API keys never appear in exceptions, tracebacks, reprs, logs, cassettes or caches."""

from __future__ import annotations

import logging
import traceback
from pathlib import Path

import pytest
from pydantic import BaseModel

from agents.llm import (
    CachedBackend,
    ChatRequest,
    LLMAuthError,
    LLMError,
    LLMUnavailable,
    Message,
    OpenAIBackend,
    RecordingBackend,
    complete_structured,
)
from tests.support.fake_openai_server import FakeOpenAIServer

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("clean_llm_env")]

KEY = "sk-cluetwin-RIGHT-5f2d9a7c41e8b3"
WRONG = "sk-cluetwin-WRONG-0b6e1d8a93f27c"
# Keys that do not look like "sk-..." must be scrubbed too (the backend knows its key).
PLAIN = "plainkey4a8d1c9e7b2f"


class Nothing(BaseModel):
    pass


def leaks(text: str | bytes) -> list[str]:
    data = text if isinstance(text, bytes) else text.encode("utf-8", "replace")
    return [k for k in (KEY, WRONG, PLAIN) if k.encode() in data]


def everything_about(err: BaseException) -> str:
    return str(err) + repr(err) + "".join(traceback.format_exception(err))


def ask(text: str) -> ChatRequest:
    return ChatRequest(messages=(Message.user(text),))


def test_no_key_anywhere_after_a_busy_session(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    cassette, cache_db = tmp_path / "run.jsonl", tmp_path / "cache.sqlite"
    seen: list[str] = []
    with FakeOpenAIServer(api_key=KEY) as server:
        good = OpenAIBackend("m", base_url=server.base_url, api_key=KEY, timeout_s=2)
        stack = RecordingBackend(CachedBackend(good, cache_db), cassette)
        stack.complete(ask("first"))
        stack.complete(ask("first"))  # cache hit, recorded too
        server.fail_next(5, status=500)
        with pytest.raises(LLMUnavailable) as down:
            stack.complete(ask("during an outage"))
        seen.append(everything_about(down.value))
        seen += [repr(stack), repr(good), repr(stack.inner)]
        stack.close()

        for bad_key in (WRONG, PLAIN):
            wrong = RecordingBackend(
                OpenAIBackend("m", base_url=server.base_url, api_key=bad_key),
                tmp_path / f"denied-{bad_key[:5]}.jsonl",
            )
            with pytest.raises(LLMAuthError) as denied:
                wrong.complete(ask("let me in"))
            seen.append(everything_about(denied.value))
            seen.append(repr(wrong))
            wrong.close()
        # The server really did see (and echo) the keys, so the checks below can fail.
        assert sum(not r.auth_ok for r in server.chat_requests) == 2

    for text in seen:
        assert leaks(text) == [], text
    assert leaks(caplog.text) == []
    files = sorted(tmp_path.iterdir())
    assert {p.name for p in files} >= {"run.jsonl", "cache.sqlite"}
    for path in files:
        assert leaks(path.read_bytes()) == [], path.name
    assert '"error": "LLMAuthError"' in (tmp_path / "denied-sk-cl.jsonl").read_text()


def test_key_from_the_environment_is_not_leaked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", WRONG)
    with FakeOpenAIServer(api_key=KEY) as server:
        backend = OpenAIBackend("m", base_url=server.base_url)
        with pytest.raises(LLMError) as info:
            complete_structured(backend, ask("hi"), Nothing)
        assert isinstance(info.value, LLMAuthError)
        assert leaks(everything_about(info.value) + repr(backend)) == []


def test_base_url_credentials_are_not_echoed(closed_port: int) -> None:
    url = f"http://user:{PLAIN}@127.0.0.1:{closed_port}/v1?api-key={WRONG}"
    backend = OpenAIBackend("m", base_url=url, timeout_s=1, max_retries=0)
    with pytest.raises(LLMUnavailable) as info:
        backend.complete(ask("hi"))
    assert leaks(everything_about(info.value) + repr(backend)) == []
    assert f"127.0.0.1:{closed_port}" in str(info.value)
