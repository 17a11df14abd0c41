"""Parse, validate, repair, retry: fuzzed replies are rejected with feedback, never a crash."""

from __future__ import annotations

import json
import random
import string
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict

from agents.llm import (
    ChatRequest,
    LLMUnavailable,
    MalformedReply,
    Message,
    OpenAIBackend,
    ScriptedBackend,
    complete_structured,
    extract_json_object,
    parse_reply,
)
from agents.llm.base import LLMRetryableError
from agents.llm.structured import FEEDBACK_CHARS, ReplyError, extract_json_objects
from tests.support.fake_openai_server import FakeOpenAIServer

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("clean_llm_env")]

# --------------------------------------------------------------------------- the schema

KNOWN = ("barrel_1", "cart_2", "north_region")


class Action(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["goto", "inspect", "grasp", "place", "query", "answer"]
    entity: str
    question: str = ""


class Step(BaseModel):
    model_config = ConfigDict(extra="forbid")
    goal: str
    hypotheses: list[str]
    action: Action


def known_entity(step: Step) -> str | None:
    if step.action.entity in KNOWN:
        return None
    return f"unknown entity {step.action.entity[:40]!r}; known entities: {', '.join(KNOWN)}"


VALID: dict[str, Any] = {
    "goal": "find the blue barrel",
    "hypotheses": ["the barrel is near the cart"],
    "action": {"kind": "goto", "entity": "cart_2"},
}
VALID_TEXT = json.dumps(VALID)
REQUEST = ChatRequest(
    messages=(Message.system("Reply with one JSON object."), Message.user("Observation: ...")),
    purpose="step",
)
MAX_ATTEMPTS = 3


def with_value(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """VALID with the field at ``path`` set to ``value`` (``...`` deletes it)."""
    data = json.loads(VALID_TEXT)
    node = data
    for key in path[:-1]:
        node = node[key]
    if value is ...:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return data


# --------------------------------------------------------------------------- junk corpus


def junk_corpus() -> list[tuple[str, str | None]]:
    """(label, reply) pairs, every one invalid by construction (see each comment)."""
    cases: list[tuple[str, str | None]] = []
    add = cases.append

    # Nothing at all.
    for text in ("", " ", "\n\t  \n", None, "\x00"):
        add(("empty", text))
    # Prose and pseudo-code without a JSON object.
    for text in (
        "I will go to the barrel.",
        "Sure! Here is my plan: first goto(cart_2), then inspect it.",
        "{not json at all}",
        "goto(barrel_1)",
        "ACTION: goto cart_2",
        "{'goal': 'single quotes are not JSON', 'hypotheses': [], 'action': {}}",
        '{"goal": "trailing comma", "hypotheses": [], "action": {"kind": "goto", "entity": "cart_2"},}',
        '{"goal": "comment", // why not\n "hypotheses": []}',
        "}{",
        "{{{{}}}}",
        "```json\n{broken\n```",
        "```\nstill { not json\n```",
        "```json\n" + VALID_TEXT[:40] + "\n```",
        "<json>" + VALID_TEXT[:-1] + "</json>",
    ):
        add(("prose", text))
    # JSON, but not an object at the top (and no object inside).
    for text in ("[]", "[1, 2, 3]", '"a string"', "42", "null", "true", "[[[]]]", "-1e999"):
        add(("not-object", text))
    # Truncated JSON: every prefix lacks the outer closing brace.
    for cut in range(1, len(VALID_TEXT) - 1, 4):
        add((f"truncated-{cut}", VALID_TEXT[:cut]))
    # Missing fields.
    for path in (("goal",), ("hypotheses",), ("action",), ("action", "kind"), ("action", "entity")):
        add(("missing-" + ".".join(path), json.dumps(with_value(path, ...))))
    # Wrong types.
    wrong: dict[tuple[str, ...], list[Any]] = {
        ("goal",): [5, 1.5, None, [], {}, True, ["find"]],
        ("hypotheses",): ["one string", 5, None, {"a": 1}, [1, 2], [None], [["nested"]]],
        ("action",): ["goto cart_2", 5, [], None, ["goto", "cart_2"]],
        ("action", "kind"): ["fly", "GOTO", 5, None, "", ["goto"]],
        ("action", "entity"): [5, None, [], {"name": "cart_2"}, True],
        ("action", "question"): [5, None, ["what?"]],
    }
    for path, values in wrong.items():
        for v in values:
            add(("wrong-type-" + ".".join(path), json.dumps(with_value(path, v))))
    # Extra fields (the schema forbids them).
    add(("extra-top", json.dumps({**VALID, "confidence": 0.9})))
    add(("extra-action", json.dumps(with_value(("action", "speed"), 2.0))))
    # Unknown entities: valid JSON and schema, rejected by the validator callback.
    for entity in (
        "barrel_9",
        "",
        "Barrel_1",
        "barrel_1 ",
        "\U0001f6e2\ufe0f",
        "north region",
        "cart_2; DROP TABLE",
        "x" * 10_000,
    ):
        add(("unknown-entity", json.dumps(with_value(("action", "entity"), entity))))
    # Huge replies (1 MB and more) and large ones under the size limit.
    add(("huge-prose", "x" * 1_000_000))
    add(("huge-braces", "{" * 1_000_000))
    add(("huge-string", '{"goal": "' + "a" * 1_000_000))
    add(("huge-brackets", "[" * 500_000 + "]" * 500_000))
    add(("huge-valid-but-too-long", VALID_TEXT + " " * 1_000_000))
    add(("large-many-empty-objects", "{}" * 40_000))
    add(("large-one-brace", "{" + "y" * 90_000))
    # Deeply nested junk.
    for depth in (50, 500, 5_000, 15_000):
        add((f"nested-goal-{depth}", '{"goal": ' * depth + '"x"' + "}" * depth))
    add(("nested-hypotheses", json.dumps(with_value(("hypotheses",), [[[[["deep"]]]]]))))
    add(("nested-open-keys", '{"a":' * 18_000))
    # Unicode junk.
    rng = random.Random(20240601)
    alphabet = [chr(c) for c in (*range(0x20, 0x7F), 0x202E, 0x200B, 0xFEFF, 0x1F600, 0x4E2D)]
    alphabet += ["\ud800", "\udfff", "\x00", "\x1b", "{", "}", '"', "\\"]
    for i in range(20):
        add((f"unicode-{i}", "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 300)))))
    # Random byte noise.
    for i in range(15):
        noise = bytes(rng.randrange(256) for _ in range(rng.randint(1, 500)))
        add((f"bytes-{i}", noise.decode("latin-1")))
    # Random objects that never carry a "goal" key (so they cannot validate).
    keys = ["hypotheses", "action", "kind", "entity", "plan", "Goal", "GOAL", "", "🎯"]
    for i in range(25):
        add((f"random-object-{i}", json.dumps(random_object(rng, keys, 4))))
    # Random single-field corruptions of a valid reply, wrapped in fences and prose.
    fields = [("goal",), ("hypotheses",), ("action",), ("action", "kind"), ("action", "entity")]
    for i in range(40):
        path = rng.choice(fields)
        bad = invalid_value_for(path, rng)
        body = json.dumps(with_value(path, bad), indent=rng.choice([None, 2]))
        add((f"random-corruption-{i}", wrap(body, rng)))
    return cases


def random_object(rng: random.Random, keys: list[str], depth: int) -> Any:
    if depth == 0 or rng.random() < 0.3:
        return rng.choice([None, True, 3, -2.5, "text", "", "cart_2"])
    if rng.random() < 0.5:
        return [random_object(rng, keys, depth - 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(keys): random_object(rng, keys, depth - 1) for _ in range(rng.randint(1, 4))}


def invalid_value_for(path: tuple[str, ...], rng: random.Random) -> Any:
    if path == ("action", "kind"):
        return "x-" + "".join(rng.choice(string.ascii_lowercase) for _ in range(5))
    if path == ("hypotheses",):
        return rng.choice([5, None, "one", {"h": "x"}, [1], [None, "a"]])
    if path == ("action",):
        return rng.choice([5, None, "goto", [], {"kind": "goto"}])
    return rng.choice([5, None, 1.5, True, [], {"v": 1}])


def wrap(body: str, rng: random.Random) -> str:
    fence = rng.choice(["", "```json\n", "```\n"])
    close = "\n```" if fence else ""
    before = rng.choice(["", "Here is my step:\n", "Thinking... done. "])
    after = rng.choice(["", "\nLet me know!", " {trailing remark}"])
    return f"{before}{fence}{body}{close}{after}"


JUNK = junk_corpus()
JUNK_IDS = [f"{i:03d}-{label}" for i, (label, _) in enumerate(JUNK)]


def test_the_corpus_is_large_and_varied() -> None:
    assert len(JUNK) >= 200
    families = {label.split("-")[0] for label, _ in JUNK}
    assert {"empty", "prose", "truncated", "wrong", "unknown", "huge", "nested"} <= families
    assert max(len(text or "") for _, text in JUNK) >= 1_000_000


# --------------------------------------------------------------------------- fuzzing


@pytest.mark.parametrize("junk", [text for _, text in JUNK], ids=JUNK_IDS)
def test_junk_is_rejected_with_feedback_then_a_good_reply_is_taken(junk: str | None) -> None:
    backend = ScriptedBackend([junk, VALID_TEXT])
    result = complete_structured(backend, REQUEST, Step, validator=known_entity)
    assert result.value == Step.model_validate(VALID)
    assert len(backend.requests) == 2
    first, second = result.attempts
    assert first.error and second.error is None
    retry = backend.requests[1]
    assert retry.messages[: len(REQUEST.messages)] == REQUEST.messages
    echoed, feedback = retry.messages[-2:]
    assert echoed.role == "assistant" and feedback.role == "user"
    assert len(echoed.text()) <= FEEDBACK_CHARS + 80  # huge replies are not fed back whole
    assert feedback.text().startswith("Your previous reply could not be used.")
    assert first.error.splitlines()[0][:60] in feedback.text()
    assert retry.purpose == "step/repair"
    json.dumps(retry.canonical(), ensure_ascii=False).encode("utf-8")  # sendable as is


@pytest.mark.parametrize("junk", [text for _, text in JUNK], ids=JUNK_IDS)
def test_junk_forever_stops_at_the_bound_with_every_attempt(junk: str | None) -> None:
    backend = ScriptedBackend(default=junk if junk is not None else "")
    with pytest.raises(MalformedReply) as info:
        complete_structured(
            backend, REQUEST, Step, validator=known_entity, max_attempts=MAX_ATTEMPTS
        )
    err = info.value
    assert len(backend.requests) == MAX_ATTEMPTS
    assert [a.number for a in err.attempts] == [1, 2, 3]
    assert all(a.error for a in err.attempts)
    assert f"after {MAX_ATTEMPTS} attempts" in str(err)
    assert len(backend.requests[-1].messages) == len(REQUEST.messages) + 2 * (MAX_ATTEMPTS - 1)
    assert backend.usage.by_purpose["step/repair"].calls == MAX_ATTEMPTS - 1


# --------------------------------------------------------------------------- good replies

NOISY_VALID = {
    "plain": VALID_TEXT,
    "fenced-json": f"```json\n{VALID_TEXT}\n```",
    "fenced-bare": f"```\n{VALID_TEXT}\n```",
    "prose-before": f"Here is my next step:\n{VALID_TEXT}",
    "prose-after": f"{VALID_TEXT}\nI hope this helps! {{smile}}",
    "prose-around-fence": f"Plan below.\n```json\n{json.dumps(VALID, indent=2)}\n```\nDone.",
    "brace-in-prose-first": f"Thinking {{about it}} carefully... {VALID_TEXT}",
    "draft-object-first": f'Draft: {{"note": "draft"}} Final: {VALID_TEXT}',
    "bom-and-crlf": "\ufeff" + json.dumps(VALID, indent=1).replace("\n", "\r\n"),
    "braces-in-strings": json.dumps({**VALID, "goal": "find {the} barrel }{"}),
    "unicode-goal": json.dumps({**VALID, "goal": "找到桶 🛢️"}, ensure_ascii=False),
    "inside-array": f"[{VALID_TEXT}]",
}


@pytest.mark.parametrize("text", list(NOISY_VALID.values()), ids=list(NOISY_VALID))
def test_valid_replies_with_noise_are_accepted_at_once(text: str) -> None:
    backend = ScriptedBackend([text])
    result = complete_structured(backend, REQUEST, Step, validator=known_entity)
    assert result.value.action.entity == "cart_2"
    assert len(result.attempts) == 1 and len(backend.requests) == 1


# --------------------------------------------------------------------------- pieces


def test_extraction_skips_nested_objects_and_respects_the_limit() -> None:
    text = 'a {"x": {"y": 1}} b {"z": 2} ' + "{} " * 20
    objects = extract_json_objects(text, limit=5)
    assert objects[:2] == [{"x": {"y": 1}}, {"z": 2}] and len(objects) == 5
    assert extract_json_object('```json\n{"k": "v"}\n```') == {"k": "v"}
    with pytest.raises(ReplyError, match="not a JSON object"):
        extract_json_object("[1, 2]")


def test_parse_of_huge_input_is_bounded_even_without_the_size_limit() -> None:
    for text in ("{" * 1_000_000, '{"a":' * 200_000, "[" * 1_000_000):
        with pytest.raises(ReplyError):
            parse_reply(text, Step, max_reply_chars=10**8)


def test_problems_name_the_field_and_what_was_given() -> None:
    with pytest.raises(ReplyError) as info:
        parse_reply(json.dumps(with_value(("action", "kind"), "fly")), Step)
    assert "action.kind" in str(info.value) and "'fly'" in str(info.value)
    with pytest.raises(ReplyError, match="goal: Field required"):
        parse_reply(json.dumps(with_value(("goal",), ...)), Step)
    with pytest.raises(ReplyError, match="unknown entity 'barrel_9'"):
        parse_reply(json.dumps(with_value(("action", "entity"), "barrel_9")), Step, known_entity)


def test_validator_may_raise_value_error() -> None:
    def strict(step: Step) -> None:
        if step.action.kind == "goto":
            raise ValueError("goto is not allowed now; inspect first")

    backend = ScriptedBackend([VALID_TEXT, json.dumps(with_value(("action", "kind"), "inspect"))])
    result = complete_structured(backend, REQUEST, Step, validator=strict)
    assert result.value.action.kind == "inspect"
    assert "goto is not allowed now" in backend.requests[1].messages[-1].text()


def test_schema_is_attached_unless_disabled() -> None:
    backend = ScriptedBackend([VALID_TEXT, VALID_TEXT])
    complete_structured(backend, REQUEST, Step)
    schema = backend.requests[0].json_schema
    assert schema is not None and schema.name == "Step"
    assert set(schema.schema["properties"]) == {"goal", "hypotheses", "action"}
    complete_structured(backend, REQUEST, Step, use_schema=False)
    assert backend.requests[1].json_schema is None


def test_backend_errors_pass_through_unchanged() -> None:
    down = LLMUnavailable("down", base_url="u", attempts=3, last_error=LLMRetryableError("x"))
    backend = ScriptedBackend(["junk", down])
    with pytest.raises(LLMUnavailable):
        complete_structured(backend, REQUEST, Step)
    assert len(backend.requests) == 2


def test_attempt_bound_is_checked() -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        complete_structured(ScriptedBackend(), REQUEST, Step, max_attempts=0)
    backend = ScriptedBackend(default="junk")
    with pytest.raises(MalformedReply):
        complete_structured(backend, REQUEST, Step, max_attempts=1)
    assert len(backend.requests) == 1


# --------------------------------------------------------------------------- over HTTP


def scripted_responder(replies: list[str | None]):
    queue = list(replies)

    def respond(messages: list[dict], body: dict) -> str | None:
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return respond


def http_backend(server: FakeOpenAIServer) -> OpenAIBackend:
    return OpenAIBackend("m", base_url=server.base_url, timeout_s=5, max_retries=0)


def test_repair_loop_over_http_sends_feedback_and_schema() -> None:
    with FakeOpenAIServer(
        scripted_responder(
            ["no json here", json.dumps(with_value(("action", "entity"), "x")), VALID_TEXT]
        )
    ) as server:
        result = complete_structured(http_backend(server), REQUEST, Step, validator=known_entity)
        bodies = [r.body for r in server.chat_requests]
    assert result.value.action.entity == "cart_2" and len(bodies) == 3
    assert all(b["response_format"]["json_schema"]["name"] == "Step" for b in bodies)
    assert bodies[1]["messages"][-2] == {"role": "assistant", "content": "no json here"}
    assert "contains no JSON object" in bodies[1]["messages"][-1]["content"]
    assert "unknown entity 'x'" in bodies[2]["messages"][-1]["content"]
    assert len(bodies[2]["messages"]) == len(REQUEST.messages) + 4


@pytest.mark.parametrize(
    "junk",
    ["x" * 1_000_000, "\ud800 lone surrogate {\udfff", None, '{"goal": ' * 3000],
    ids=["1MB", "surrogates", "null-content", "nested"],
)
def test_junk_over_http_is_bounded_and_fed_back_small(junk: str | None) -> None:
    with FakeOpenAIServer(scripted_responder([junk])) as server:
        with pytest.raises(MalformedReply) as info:
            complete_structured(http_backend(server), REQUEST, Step, validator=known_entity)
        bodies = [r.body for r in server.chat_requests]
    assert len(bodies) == MAX_ATTEMPTS and len(info.value.attempts) == MAX_ATTEMPTS
    for body in bodies[1:]:
        echoed = body["messages"][-2]
        assert echoed["role"] == "assistant"
        assert 0 < len(echoed["content"]) <= FEEDBACK_CHARS + 80
