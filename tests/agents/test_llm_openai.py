"""The real ``openai`` client against a local OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import time

import pytest

from agents.llm import (
    ChatRequest,
    JsonSchema,
    LLMAuthError,
    LLMBadRequest,
    LLMConfigError,
    LLMConnectionError,
    LLMRateLimited,
    LLMServerError,
    LLMTimeout,
    LLMUnavailable,
    Message,
    OpenAIBackend,
    estimate_prompt_tokens,
    estimate_tokens,
)
from tests.support.fake_openai_server import (
    FakeOpenAIServer,
    server_completion_tokens,
    server_prompt_tokens,
)

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("clean_llm_env")]

SCHEMA = JsonSchema("step", {"type": "object", "properties": {"ok": {"type": "boolean"}}})


def ask(text: str = "Where is the barrel?", **kw) -> ChatRequest:
    return ChatRequest(messages=(Message.system("You are a robot."), Message.user(text)), **kw)


def backend_for(server: FakeOpenAIServer, **kw) -> OpenAIBackend:
    kw.setdefault("timeout_s", 5.0)
    kw.setdefault("max_retries", 2)
    return OpenAIBackend("test-model", base_url=server.base_url, **kw)


def test_reply_and_server_usage_are_counted(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.responder = lambda messages, body: "the barrel is by the north wall"
    backend = backend_for(fake_openai)
    reply = backend.complete(ask(max_tokens=50, seed=3, temperature=0.2, purpose="clue.step"))
    sent = fake_openai.chat_requests[-1].body
    assert reply.text == "the barrel is by the north wall"
    assert reply.tokens_source == "server"
    assert reply.prompt_tokens == server_prompt_tokens(sent["messages"])
    assert reply.completion_tokens == server_completion_tokens(reply.text)
    # The server's count differs from the estimate, so this proves which one was used.
    assert reply.prompt_tokens != estimate_prompt_tokens(ask().messages)
    assert reply.raw["id"].startswith("chatcmpl-fake") and reply.raw["finish_reason"] == "stop"
    assert (sent["model"], sent["max_tokens"], sent["seed"], sent["temperature"]) == (
        "test-model",
        50,
        3,
        0.2,
    )
    assert "response_format" not in sent
    backend.complete(ask())
    u = backend.usage
    assert u.calls == 2 and u.estimated_calls == 0
    assert u.prompt_tokens == 2 * reply.prompt_tokens
    assert u.by_purpose["clue.step"].calls == 1


def test_tokens_are_estimated_when_the_server_sends_no_usage(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.include_usage = False
    reply = backend_for(fake_openai).complete(ask("hello"))
    assert reply.tokens_source == "estimate"
    assert reply.prompt_tokens == estimate_prompt_tokens(ask("hello").messages)
    assert reply.completion_tokens == estimate_tokens("echo: hello")


def test_json_schema_is_sent_as_response_format(fake_openai: FakeOpenAIServer) -> None:
    reply = backend_for(fake_openai).complete(ask(json_schema=SCHEMA))
    assert fake_openai.chat_requests[-1].body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "step", "schema": dict(SCHEMA.schema), "strict": False},
    }
    assert reply.raw["response_format"] == "json_schema"


def test_rejected_response_format_falls_back_to_text_and_is_remembered(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.reject_response_format = True
    backend = backend_for(fake_openai)
    first = backend.complete(ask(json_schema=SCHEMA))
    second = backend.complete(ask(json_schema=SCHEMA))
    sent = [("response_format" in r.body, r.status) for r in fake_openai.chat_requests]
    assert sent == [(True, 400), (False, 200), (False, 200)]
    assert first.text == "echo: Where is the barrel?"
    assert (first.raw["response_format"], second.raw["response_format"]) == ("dropped", "none")
    assert backend.structured_output is False
    assert backend.usage.calls == 2


def test_bad_request_not_caused_by_response_format_is_not_remembered(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.fail_next(2, status=400)
    backend = backend_for(fake_openai)
    with pytest.raises(LLMBadRequest, match="HTTP 400"):
        backend.complete(ask(json_schema=SCHEMA))
    assert backend.structured_output is True
    assert len(fake_openai.chat_requests) == 2  # with and without response_format, no retries
    fake_openai.fail_next(1, status=400)
    with pytest.raises(LLMBadRequest):
        backend.complete(ask())
    assert len(fake_openai.chat_requests) == 3


def test_server_down_gives_bounded_retries_then_unavailable(closed_port: int) -> None:
    url = f"http://127.0.0.1:{closed_port}/v1"
    backend = OpenAIBackend("m", base_url=url, timeout_s=1.0, max_retries=1)
    with pytest.raises(LLMUnavailable) as info:
        backend.complete(ask())
    err = info.value
    assert err.attempts == 2 and isinstance(err.last_error, LLMConnectionError)
    assert f"127.0.0.1:{closed_port}" in str(err) and "2 attempt(s)" in str(err)
    assert err.__cause__ is None and err.__suppress_context__
    assert backend.usage.errors == 1 and backend.usage.calls == 0


def test_slow_server_times_out_with_retries(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.slow_next(5, delay_s=5.0)
    backend = backend_for(fake_openai, timeout_s=0.3, max_retries=1)
    started = time.monotonic()
    with pytest.raises(LLMUnavailable) as info:
        backend.complete(ask())
    elapsed = time.monotonic() - started
    assert isinstance(info.value.last_error, LLMTimeout)
    assert "0.3 s" in str(info.value)
    assert [r.retry_count for r in fake_openai.chat_requests] == [0, 1]
    assert elapsed < 4.0  # two 0.3 s attempts and one back-off, not the 5 s delay


def test_http_500_is_retried_a_bounded_number_of_times(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.fail_next(10, status=500)
    backend = backend_for(fake_openai, max_retries=2)
    with pytest.raises(LLMUnavailable) as info:
        backend.complete(ask())
    assert [r.retry_count for r in fake_openai.chat_requests] == [0, 1, 2]
    assert [r.status for r in fake_openai.chat_requests] == [500, 500, 500]
    assert isinstance(info.value.last_error, LLMServerError)
    assert info.value.attempts == 3
    assert fake_openai.base_url in str(info.value)


def test_transient_500_and_429_recover_within_the_retry_budget(
    fake_openai: FakeOpenAIServer,
) -> None:
    backend = backend_for(fake_openai, max_retries=2)
    fake_openai.fail_next(2, status=500)
    assert backend.complete(ask("a")).text == "echo: a"
    fake_openai.fail_next(1, status=429)
    assert backend.complete(ask("b")).text == "echo: b"
    assert [r.status for r in fake_openai.chat_requests] == [500, 500, 200, 429, 200]
    assert backend.usage.calls == 2 and backend.usage.errors == 0


def test_rate_limit_past_the_budget_names_the_rate_limit(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.fail_next(5, status=429)
    with pytest.raises(LLMUnavailable) as info:
        backend_for(fake_openai, max_retries=1).complete(ask())
    assert isinstance(info.value.last_error, LLMRateLimited)
    assert "HTTP 429" in str(info.value)


def test_wrong_key_is_persistent_without_retries(clean_llm_env) -> None:
    with FakeOpenAIServer(api_key="sk-right-key-0123456789") as server:
        backend = backend_for(server, api_key="sk-wrong-key-9876543210")
        with pytest.raises(LLMAuthError) as info:
            backend.complete(ask())
        assert len(server.chat_requests) == 1
        assert "HTTP 401" in str(info.value) and "check the API key" in str(info.value)
        assert "sk-wrong-key-9876543210" not in str(info.value)  # the server echoed it
        ok = backend_for(server, api_key="sk-right-key-0123456789").complete(ask("x"))
        assert ok.text == "echo: x"


def test_configuration_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAIServer(api_key="sk-env-key-0123456789") as server:
        monkeypatch.setenv("CLUETWIN_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("CLUETWIN_LLM_MODEL", "env-model")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-loses-precedence-000")
        monkeypatch.setenv("CLUETWIN_LLM_API_KEY", "sk-env-key-0123456789")
        backend = OpenAIBackend(timeout_s=5)
        assert backend.complete(ask("hi")).text == "echo: hi"
        assert server.chat_requests[-1].body["model"] == "env-model"
        assert server.chat_requests[-1].auth_ok


def test_missing_model_and_bad_limits_are_config_errors() -> None:
    with pytest.raises(LLMConfigError, match="CLUETWIN_LLM_MODEL"):
        OpenAIBackend(base_url="http://127.0.0.1:9/v1")
    with pytest.raises(LLMConfigError, match="timeout_s"):
        OpenAIBackend("m", base_url="http://127.0.0.1:9/v1", timeout_s=0)
    with pytest.raises(LLMConfigError, match="max_retries"):
        OpenAIBackend("m", base_url="http://127.0.0.1:9/v1", max_retries=-1)


def test_null_content_becomes_empty_text(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.responder = lambda messages, body: None
    reply = backend_for(fake_openai).complete(ask())
    assert reply.text == "" and reply.raw["content_null"] is True


def test_unknown_route_is_a_bad_request_with_a_hint(fake_openai: FakeOpenAIServer) -> None:
    backend = OpenAIBackend("m", base_url=fake_openai.base_url + "/nowhere", timeout_s=5)
    with pytest.raises(LLMBadRequest, match="HTTP 404.*base URL"):
        backend.complete(ask())


def test_client_time_out_and_retries_are_set_explicitly(fake_openai: FakeOpenAIServer) -> None:
    backend = backend_for(fake_openai, timeout_s=7.5, max_retries=4)
    assert backend._client.max_retries == 4
    assert backend._client.timeout == 7.5
    assert "api_key=***" in repr(backend)


def test_text_that_is_not_valid_unicode_is_sent_with_replacements(
    fake_openai: FakeOpenAIServer,
) -> None:
    reply = backend_for(fake_openai).complete(ask("a lone \ud800 surrogate"))
    assert reply.text == "echo: a lone ? surrogate"
