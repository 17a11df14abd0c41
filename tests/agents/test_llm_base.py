"""The backend interface: request keys, token estimates, usage accounting, errors."""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys

import pytest

from agents.llm import (
    ChatReply,
    ChatRequest,
    JsonSchema,
    LLMBackend,
    LLMConfigError,
    LLMPersistentError,
    LLMRetryableError,
    LLMServerError,
    LLMUnavailable,
    Message,
    ScriptedBackend,
    ScriptExhausted,
    UsageCounter,
    build_backend,
    estimate_prompt_tokens,
    estimate_tokens,
    image_part,
    text_part,
)
from agents.llm.base import redact, redact_url

BASE = ChatRequest(
    messages=(Message.system("You are a robot."), Message.user("Where is the barrel?")),
    model="m1",
    temperature=0.0,
    max_tokens=100,
    json_schema=JsonSchema("step", {"type": "object"}),
    seed=7,
)


def test_key_is_stable_and_ignores_purpose() -> None:
    same = ChatRequest(
        messages=[
            {"role": "system", "content": "You are a robot."},
            Message.user("Where is the barrel?"),
        ],
        model="m1",
        max_tokens=100,
        json_schema=JsonSchema("step", {"type": "object"}),
        seed=7,
        purpose="clue.step",
    )
    assert same.key() == BASE.key()
    assert len(BASE.key()) == 64


@pytest.mark.parametrize(
    "change",
    [
        {"model": "m2"},
        {"temperature": 0.5},
        {"max_tokens": 101},
        {"seed": 8},
        {"json_schema": None},
        {"json_schema": JsonSchema("step", {"type": "object"}, strict=True)},
        {"messages": (Message.system("You are a robot."), Message.user("Where is the cart?"))},
        {"messages": (Message.user("You are a robot."), Message.user("Where is the barrel?"))},
    ],
)
def test_key_changes_with_every_parameter(change: dict) -> None:
    assert dataclasses.replace(BASE, **change).key() != BASE.key()


def test_inline_images_are_digested_in_the_canonical_form() -> None:
    url = "data:image/png;base64," + "A" * 10_000
    req = ChatRequest(messages=(Message.user([text_part("what?"), image_part(url)]),), model="v")
    canon = str(req.canonical())
    assert "A" * 100 not in canon
    assert "data:image/png;sha256=" in canon
    other = ChatRequest(
        messages=(Message.user([text_part("what?"), image_part(url[:-1] + "B")]),), model="v"
    )
    assert other.key() != req.key()


def test_resolve_fills_only_an_empty_model() -> None:
    req = ChatRequest(messages=(Message.user("hi"),))
    assert req.resolve("default").model == "default"
    assert BASE.resolve("default").model == "m1"


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"messages": ()}, ValueError),
        ({"messages": (Message.user("x"),), "temperature": 3.0}, ValueError),
        ({"messages": (Message.user("x"),), "max_tokens": 0}, ValueError),
        ({"messages": ({"role": "robot", "content": "x"},)}, ValueError),
        ({"messages": ({"role": "user", "content": [{"type": "audio"}]},)}, ValueError),
    ],
)
def test_invalid_requests_are_refused(kwargs: dict, error: type[Exception]) -> None:
    with pytest.raises(error):
        ChatRequest(**kwargs)


def test_schema_name_is_checked() -> None:
    with pytest.raises(ValueError, match="schema name"):
        JsonSchema("has spaces", {})


def test_token_estimate_is_ceil_chars_over_four() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens(None) == 0
    msgs = [
        Message.system("x" * 10),
        Message.user([text_part("y" * 7), image_part("data:image/png;base64,AAAA")]),
    ]
    assert estimate_prompt_tokens(msgs) == (4 + math.ceil(10 / 4)) + (4 + math.ceil(7 / 4) + 85)


def test_usage_counts_paid_and_cached_separately() -> None:
    u = UsageCounter()
    u.add_reply(ChatReply("a", 10, 2, "server", 0.5), "clue.step")
    u.add_reply(ChatReply("b", 20, 3, "estimate", 0.25), "clue.step/repair")
    before = u.copy()
    u.add_reply(ChatReply("a", 10, 2, "server", 0.01, cached=True), "clue.step")
    assert (u.calls, u.prompt_tokens, u.completion_tokens) == (2, 30, 5)
    assert u.estimated_calls == 1
    assert (u.cache_hits, u.cached_prompt_tokens, u.cached_completion_tokens) == (1, 10, 2)
    assert (u.requests, u.total_prompt_tokens, u.total_completion_tokens) == (3, 40, 7)
    assert u.by_purpose["clue.step"].calls == 1 and u.by_purpose["clue.step"].cache_hits == 1
    delta = u.since(before)
    assert (delta.calls, delta.cache_hits, delta.cached_prompt_tokens) == (0, 1, 10)
    assert list(delta.by_purpose) == ["clue.step"]
    assert u.as_dict()["by_purpose"]["clue.step/repair"]["prompt_tokens"] == 20


def test_reply_round_trips_through_dict() -> None:
    reply = ChatReply("t", 1, 2, "server", 0.1234567890123, raw={"id": "x", "n": None})
    assert ChatReply.from_dict(reply.to_dict()) == reply


def test_backend_counts_calls_and_errors() -> None:
    backend = ScriptedBackend(["one", LLMServerError("boom"), "three"])
    req = ChatRequest(messages=(Message.user("hello"),), purpose="p")
    assert backend.complete(req).text == "one"
    with pytest.raises(LLMServerError):
        backend.complete(req)
    backend.complete(req)
    with pytest.raises(ScriptExhausted):
        backend.complete(req)
    assert backend.usage.calls == 2
    assert backend.usage.errors == 2
    assert backend.usage.prompt_tokens == 2 * estimate_prompt_tokens(req.messages)
    assert [r.model for r in backend.requests] == ["scripted"] * 4


def test_backend_without_model_is_a_config_error() -> None:
    class NoModel(LLMBackend):
        def _complete(self, request: ChatRequest) -> ChatReply:
            raise AssertionError("must not be reached")

    with pytest.raises(LLMConfigError, match="no model name"):
        NoModel().complete(ChatRequest(messages=(Message.user("x"),)))


def test_error_families() -> None:
    assert issubclass(LLMServerError, LLMRetryableError)
    assert issubclass(LLMUnavailable, LLMPersistentError)
    assert issubclass(ScriptExhausted, LLMPersistentError)


def test_redaction() -> None:
    text = "key sk-abcdefgh12345 and Bearer abc.def-123456 and mysecret-value"
    out = redact(text, ["mysecret-value"])
    assert "abcdefgh12345" not in out and "abc.def-123456" not in out
    assert "mysecret-value" not in out
    assert redact_url("https://user:pw@host.example:8443/v1?key=s3cret") == (
        "https://host.example:8443/v1?<redacted>"
    )
    assert redact_url(None) == "<default endpoint>"


def test_factory_builds_wraps_and_refuses(tmp_path, clean_llm_env) -> None:
    made = build_backend(
        "scripted:abc", factories={"scripted": lambda arg: ScriptedBackend(model=arg)}
    )
    assert made.model == "abc"
    openai = build_backend(
        "openai:gpt-x", base_url="http://127.0.0.1:9/v1", cache=tmp_path / "c.db"
    )
    assert type(openai).__name__ == "CachedBackend" and openai.model == "gpt-x"
    openai.close()
    with pytest.raises(LLMConfigError, match="known: heuristic, openai, replay"):
        build_backend("gemini:x", factories={"heuristic": lambda arg: ScriptedBackend()})
    with pytest.raises(LLMConfigError, match="cannot be combined"):
        build_backend("replay:x.jsonl", record=tmp_path / "r.jsonl")
    with pytest.raises(LLMConfigError, match="no model name"):
        build_backend("openai")


def test_importing_agents_pulls_no_simulator_sdk_or_openai() -> None:
    code = (
        "import sys, agents.llm, agents.vlm, agents.llm.structured\n"
        "bad = [m for m in ('openai', 'pybullet', 'bosdyn', 'envs', 'hardware', 'torch')"
        " if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
