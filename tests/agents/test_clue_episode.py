"""Whole CLUE episodes in the simulator: offline, through the real openai client against a
local server, recorded and replayed, with the server failing, and against the baselines."""

from __future__ import annotations

import json

import pytest

from agents.clue.heuristic import HeuristicResponder
from agents.episode_log import read_log
from agents.llm.base import ChatRequest, Message
from scenarios.loader import find_scenario, load_scenario
from scenarios.runner import run_episode
from tests.support.fake_openai_server import FakeOpenAIServer

EXAMPLES = ("hazard_barrels", "field_cart", "jansport_bag")
SECRET = "sk-test-CLUEtwin-0123456789abcdef"


def scenario(name):
    return load_scenario(find_scenario(name))


def heuristic_http_responder(messages, body):
    """The offline responder behind HTTP: answers what the real client sent."""
    request = ChatRequest(messages=tuple(Message.coerce(m) for m in messages))
    return HeuristicResponder().complete(request).text


def trace(log_path) -> list[tuple]:
    """The episode as the world saw it: every action with its arguments and outcome."""
    out = []
    for r in read_log(log_path):
        if r["type"] == "action":
            out.append(
                (
                    r["behavior"],
                    json.dumps(r.get("args"), sort_keys=True),
                    r.get("status"),
                    r.get("observation"),
                )
            )
        elif r["type"] == "answer":
            out.append(("answer", r["text"], r["hit"], r["success"]))
    return out


@pytest.mark.parametrize("name", EXAMPLES)
def test_heuristic_clue_solves_the_examples(name, tmp_path):
    result = run_episode(scenario(name), "clue", tmp_path)
    assert result.error is None
    assert result.success, f"{name}: answered {result.answer!r}, hit {result.hit}"
    assert result.llm_calls == result.actions  # one LLM call per step, no repairs needed
    assert result.llm_prompt_tokens > 0 and result.vlm_calls >= 1
    records = read_log(result.log)
    steps = [r for r in records if r["type"] == "step"]
    assert steps and all("## Task" in r["prompt"] and r["reply"] for r in steps)


def test_occlusion_is_resolved_by_moving_the_tarp(tmp_path):
    result = run_episode(scenario("hazard_barrels"), "clue", tmp_path)
    actions = [r for r in read_log(result.log) if r["type"] == "action"]
    behaviours = [r["behavior"] for r in actions]
    assert "grasp" in behaviours and "place" in behaviours
    first_grasp = behaviours.index("grasp")
    before = [r["observation"] for r in actions[:first_grasp] if r["behavior"] == "inspect"]
    after = [r["observation"] for r in actions[first_grasp:] if r["behavior"] == "inspect"]
    assert not any("corrosive" in o for o in before), "nothing can read the label under a tarp"
    assert any("corrosive" in o for o in after), "the label must be read once a tarp is moved"


def test_nlmaps_trusts_its_top_candidate_and_never_recovers(tmp_path):
    result = run_episode(scenario("hazard_barrels"), "nlmaps", tmp_path)
    assert not result.success
    answer = next(r for r in read_log(result.log) if r["type"] == "answer")
    assert answer["hit"] != "barrel_2", "it answers with what its single look saw"
    actions = [r["behavior"] for r in read_log(result.log) if r["type"] == "action"]
    assert "grasp" not in actions  # open loop: no recovery


def test_episode_through_the_real_openai_client_matches_offline_and_replays(tmp_path, monkeypatch):
    for var in ("OPENAI_API_KEY", "CLUETWIN_LLM_BASE_URL", "CLUETWIN_LLM_MODEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CLUETWIN_LLM_API_KEY", SECRET)
    scn = scenario("jansport_bag")
    offline = run_episode(scn, "clue", tmp_path / "offline")
    with FakeOpenAIServer(responder=heuristic_http_responder, api_key=SECRET) as server:
        online = run_episode(
            scn,
            "clue",
            tmp_path / "online",
            agent_opts={
                "llm": "openai:heuristic",
                "base_url": server.base_url,
                "record": str(tmp_path / "tapes"),
            },
        )
        assert len(server.chat_requests) == online.llm_calls
        assert all(
            r.body.get("response_format", {}).get("type") == "json_schema"
            for r in server.chat_requests
        )
    assert online.success and online.error is None
    assert trace(online.log) == trace(offline.log)
    # the server's usage block is counted, not the client-side estimate
    assert online.llm_prompt_tokens != offline.llm_prompt_tokens

    replayed = run_episode(
        scn, "clue", tmp_path / "replay", agent_opts={"llm": f"replay:{tmp_path / 'tapes'}"}
    )
    assert trace(replayed.log) == trace(online.log)
    assert (replayed.llm_calls, replayed.llm_prompt_tokens, replayed.llm_completion_tokens) == (
        online.llm_calls,
        online.llm_prompt_tokens,
        online.llm_completion_tokens,
    )
    for path in [*tmp_path.rglob("*.jsonl"), *tmp_path.rglob("*.csv")]:
        assert SECRET not in path.read_text(encoding="utf-8"), f"API key leaked into {path}"


def test_replaying_a_changed_episode_names_the_first_differing_step(tmp_path):
    scn = scenario("jansport_bag")
    run_episode(scn, "clue", tmp_path / "rec", agent_opts={"record": str(tmp_path / "tapes")})
    changed = scn.model_copy(
        update={"task": scn.task.model_copy(update={"text": "Find my Herschel backpack."})}
    )
    result = run_episode(
        changed, "clue", tmp_path / "rep", agent_opts={"llm": f"replay:{tmp_path / 'tapes'}"}
    )
    assert not result.success
    assert result.error and "CassetteMismatch" in result.error and "step" in result.error


def test_server_going_down_mid_episode_fails_clearly_and_keeps_the_log(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("CLUETWIN_LLM_API_KEY", SECRET)
    calls = {"n": 0}
    server = FakeOpenAIServer(api_key=SECRET)

    def respond_then_die(messages, body):
        calls["n"] += 1
        if calls["n"] == 3:
            server.fail_next(100, status=500)  # the model server breaks for good
        return heuristic_http_responder(messages, body)

    server.responder = respond_then_die
    with server:
        result = run_episode(
            scenario("hazard_barrels"),
            "clue",
            tmp_path,
            agent_opts={"llm": "openai:heuristic", "base_url": server.base_url},
        )
        retries = [r.retry_count for r in server.chat_requests]
    assert not result.answered and not result.success
    assert result.error and "LLMUnavailable" in result.error
    assert max(retries) >= 1, "retryable HTTP 500s are retried before giving up"
    records = read_log(result.log)
    assert [r["type"] for r in records][:1] == ["episode"]
    assert sum(r["type"] == "action" for r in records) >= 2, (
        "the actions before the failure stay logged"
    )
    assert records[-1]["type"] == "result"
    assert SECRET not in result.log and SECRET not in open(result.log, encoding="utf-8").read()


def test_garbage_replies_cost_a_step_and_never_crash(tmp_path):
    from agents.llm.scripted import ScriptedBackend

    junk = [
        "",
        "not json",
        '{"action": 42}',
        "[]",
        "{" * 500,
        json.dumps({"hypothesis": {}, "action": {"name": "fly"}}),
    ]
    llm = ScriptedBackend(junk * 3 + ["{}"] * 200)
    result = run_episode(scenario("field_cart"), "clue", tmp_path, agent_opts={"llm_backend": llm})
    assert result.error is None and not result.answered
    steps = [r for r in read_log(result.log) if r["type"] == "step"]
    assert len(steps) == scenario("field_cart").task.budget
    assert all(not r["ok"] for r in steps) and all(len(r["replies"]) == 3 for r in steps)
    assert result.llm_calls == 3 * len(steps)  # bounded retries per step
