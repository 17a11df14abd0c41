"""`cluetwin run` hands its model options to the policies (a regression guard)."""

from __future__ import annotations

import json
import socket

import numpy as np

from scenarios.cli import main


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_llm_and_base_url_reach_the_policy(tmp_path, monkeypatch):
    monkeypatch.setenv("CLUETWIN_LLM_API_KEY", "unused")
    url = f"http://127.0.0.1:{closed_port()}/v1"
    rc = main(
        [
            "run",
            "jansport_bag",
            "--policy",
            "clue",
            "--llm",
            "openai:some-model",
            "--base-url",
            url,
            "--out",
            str(tmp_path),
            "--renderer",
            "tiny",
        ]
    )
    assert rc == 0
    row = json.loads((tmp_path / "results.jsonl").read_text().splitlines()[0])
    assert not row["answered"] and "LLMUnavailable" in row["error"] and url in row["error"]


def test_vlm_option_reaches_the_robot(tmp_path, monkeypatch):
    monkeypatch.setenv("CLUETWIN_LLM_API_KEY", "unused")
    url = f"http://127.0.0.1:{closed_port()}/v1"
    rc = main(
        [
            "run",
            "field_cart",
            "--policy",
            "oracle",
            "--vlm",
            "openai:some-vlm",
            "--vlm-base-url",
            url,
            "--out",
            str(tmp_path),
            "--renderer",
            "tiny",
        ]
    )
    assert rc == 0
    row = json.loads((tmp_path / "results.jsonl").read_text().splitlines()[0])
    # the oracle's inspect goes to the (unreachable) vision endpoint, not the sim VLM
    log = (tmp_path / "logs" / "field_cart__oracle.jsonl").read_text()
    assert "LLMUnavailable" in log and not row["success"]


def test_show_query_draws_the_relevancy_map(tmp_path):
    from PIL import Image

    rc = main(
        [
            "show",
            "hazard_barrels",
            "--out",
            str(tmp_path),
            "--query",
            "barrel",
            "--renderer",
            "tiny",
        ]
    )
    assert rc == 0
    img = Image.open(tmp_path / "query_barrel.png")
    assert img.size[0] > 300 and len(np.unique(np.asarray(img.convert("L")))) > 20
