"""Cassette record / replay: bit-identical replies, clear errors on divergence."""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

import pytest

from agents.llm import (
    CassetteError,
    CassetteExhausted,
    CassetteMismatch,
    ChatReply,
    ChatRequest,
    LLMBackend,
    LLMUnavailable,
    Message,
    OpenAIBackend,
    RecordingBackend,
    ReplayBackend,
    ScriptedBackend,
    image_part,
    text_part,
)
from agents.llm.base import LLMRetryableError
from agents.llm.cassette import load_cassette
from tests.support.fake_openai_server import FakeOpenAIServer

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("clean_llm_env")]


def conversation() -> list[ChatRequest]:
    """Three requests of a little episode; each depends on nothing but its index."""
    system = Message.system("You are a robot looking for a barrel.")
    return [
        ChatRequest(messages=(system, Message.user("step 0: nothing seen")), purpose="step"),
        ChatRequest(
            messages=(
                system,
                Message.user(
                    "step 1: a blue barrel, 3 m north of the robot, next to a cart and a tarp"
                ),
            ),
            temperature=0.3,
            seed=11,
            purpose="step",
        ),
        ChatRequest(
            messages=(system, Message.user("step 2: answer now")), max_tokens=64, purpose="step"
        ),
    ]


def run(backend: LLMBackend, requests: list[ChatRequest]) -> list[ChatReply]:
    return [backend.complete(r) for r in requests]


def test_record_then_replay_over_http_is_identical(tmp_path: Path) -> None:
    cassette = tmp_path / "episode.jsonl"
    with FakeOpenAIServer() as server:
        recorder = RecordingBackend(OpenAIBackend("m", base_url=server.base_url), cassette)
        recorded = run(recorder, conversation())
        recorder.close()
        assert len(server.chat_requests) == 3
    # The server is gone: replay needs no network.
    replay = ReplayBackend(cassette)
    replayed = run(replay, conversation())
    assert replayed == recorded  # text, tokens, token source, latency and metadata
    assert [r.tokens_source for r in replayed] == ["server"] * 3
    for field in ("calls", "prompt_tokens", "completion_tokens", "estimated_calls"):
        assert getattr(replay.usage, field) == getattr(recorder.usage, field)
    assert replay.usage.by_purpose == recorder.usage.by_purpose
    replay.check_finished()
    assert replay.model == "m"


def test_entries_are_flushed_per_call(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    recorder = RecordingBackend(ScriptedBackend(["a", "b"]), cassette)
    recorder.complete(conversation()[0])
    lines = cassette.read_text().splitlines()  # read while the recorder is still open
    assert len(lines) == 2 and json.loads(lines[1])["reply"]["text"] == "a"
    recorder.complete(conversation()[1])
    assert len(cassette.read_text().splitlines()) == 3
    recorder.close()


def test_changed_request_names_the_first_differing_step(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    recorder = RecordingBackend(ScriptedBackend(["a", "b", "c"]), cassette)
    run(recorder, conversation())
    recorder.close()
    changed = conversation()
    changed[1] = dataclasses.replace(
        changed[1],
        messages=(
            changed[1].messages[0],
            Message.user("step 1: a RED barrel, 3 m north of the robot, next to a cart and a tarp"),
        ),
    )
    replay = ReplayBackend(cassette)
    assert replay.complete(changed[0]).text == "a"
    with pytest.raises(CassetteMismatch) as info:
        replay.complete(changed[1])
    err = info.value
    assert err.step == 1
    assert "step 1" in str(err)
    assert err.differences[0].startswith("messages[1].content: differs at char 10")
    assert "blue" in err.differences[0] and "RED" in err.differences[0]
    assert replay.position == 1  # the mismatch consumed nothing


@pytest.mark.parametrize(
    "change, expected",
    [
        ({"temperature": 0.9}, "temperature: recorded 0.3, now 0.9"),
        ({"seed": None}, "seed: recorded 11, now null"),
        ({"model": "other"}, "model: recorded 'scripted', now 'other'"),
    ],
)
def test_changed_parameters_are_named(tmp_path: Path, change: dict, expected: str) -> None:
    cassette = tmp_path / "c.jsonl"
    with RecordingBackend(ScriptedBackend(["a", "b"]), cassette) as recorder:
        run(recorder, conversation()[:2])
    replay = ReplayBackend(cassette)
    replay.complete(conversation()[0])
    with pytest.raises(CassetteMismatch, match="step 1") as info:
        replay.complete(dataclasses.replace(conversation()[1], **change))
    assert expected in str(info.value)


def test_extra_message_is_reported_as_a_length_change(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    with RecordingBackend(ScriptedBackend(["a"]), cassette) as recorder:
        recorder.complete(conversation()[0])
    longer = conversation()[0].appended(Message.user("one more thing"))
    with pytest.raises(CassetteMismatch) as info:
        ReplayBackend(cassette).complete(longer)
    assert info.value.differences == ["messages: recorded 2 items, now 3"]


def test_running_past_the_end_is_a_clear_error(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    with RecordingBackend(ScriptedBackend(["a"]), cassette) as recorder:
        recorder.complete(conversation()[0])
    replay = ReplayBackend(cassette)
    replay.complete(conversation()[0])
    with pytest.raises(CassetteExhausted, match="holds 1 calls; step 1") as info:
        replay.complete(conversation()[1])
    assert info.value.step == 1


def test_unconsumed_entries_are_reported(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    with RecordingBackend(ScriptedBackend(["a", "b"]), cassette) as recorder:
        run(recorder, conversation()[:2])
    replay = ReplayBackend(cassette)
    replay.complete(conversation()[0])
    with pytest.raises(CassetteError, match="after 1 of 2"):
        replay.check_finished()


def test_errors_are_recorded_and_raised_again_at_the_same_step(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    down = LLMUnavailable(
        "LLM endpoint http://x/v1 unavailable after 3 attempt(s)",
        base_url="http://x/v1",
        attempts=3,
        last_error=LLMRetryableError("refused"),
    )
    recorder = RecordingBackend(ScriptedBackend(["a", down]), cassette)
    recorder.complete(conversation()[0])
    with pytest.raises(LLMUnavailable):
        recorder.complete(conversation()[1])
    recorder.close()
    replay = ReplayBackend(cassette)
    replay.complete(conversation()[0])
    with pytest.raises(LLMUnavailable, match="after 3 attempt") as info:
        replay.complete(conversation()[1])
    assert info.value.attempts == 3 and info.value.base_url == "http://x/v1"
    replay.check_finished()


def test_a_cut_off_last_line_is_skipped(tmp_path: Path, caplog) -> None:
    cassette = tmp_path / "c.jsonl"
    with RecordingBackend(ScriptedBackend(["a", "b"]), cassette) as recorder:
        run(recorder, conversation()[:2])
    text = cassette.read_text()
    cassette.write_text(text[: len(text) - 25])  # as if killed mid-write
    with caplog.at_level(logging.WARNING):
        _, entries = load_cassette(cassette)
    assert len(entries) == 1
    assert "cut-off last line" in caplog.text


@pytest.mark.parametrize(
    "content, match",
    [
        ("", "not a cluetwin-llm-cassette"),
        ('{"hello": 1}\n', "not a cluetwin-llm-cassette"),
        ('{"format": "cluetwin-llm-cassette", "version": 99}\n', "version 99"),
        ('{"format": "cluetwin-llm-cassette", "version": 1}\nnot json\n{}\n', "line 2"),
        (
            '{"format": "cluetwin-llm-cassette", "version": 1}\n{"type": "call", "step": 5}\n',
            "step 0",
        ),
    ],
)
def test_broken_cassettes_are_refused_with_the_reason(
    tmp_path: Path, content: str, match: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(CassetteError, match=match):
        ReplayBackend(path)


def test_missing_cassette_and_existing_target(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match="no cassette at"):
        ReplayBackend(tmp_path / "nope.jsonl")
    existing = tmp_path / "exists.jsonl"
    existing.write_text("keep me")
    with pytest.raises(CassetteError, match="exists"):
        RecordingBackend(ScriptedBackend(), existing)
    assert existing.read_text() == "keep me"
    RecordingBackend(ScriptedBackend(), existing, overwrite=True).close()
    assert existing.read_text().startswith('{"format"')


def test_images_are_stored_as_digests(tmp_path: Path) -> None:
    payload = "iVBORw0KGgo" + "Q" * 5000
    request = ChatRequest(
        messages=(
            Message.user(
                [text_part("what is it?"), image_part("data:image/png;base64," + payload)]
            ),
        )
    )
    cassette = tmp_path / "c.jsonl"
    with RecordingBackend(ScriptedBackend(["a barrel"]), cassette) as recorder:
        recorder.complete(request)
    assert payload not in cassette.read_text()
    assert ReplayBackend(cassette).complete(request).text == "a barrel"
