"""Fixtures for agent tests: a local OpenAI-compatible server and a clean environment.

``fake_openai`` is a running :class:`~tests.support.fake_openai_server.FakeOpenAIServer`
(echo responder; plug your own with ``fake_openai.responder = fn``).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from tests.support.fake_openai_server import FakeOpenAIServer

LLM_ENV_VARS = (
    "CLUETWIN_LLM_BASE_URL",
    "CLUETWIN_LLM_MODEL",
    "CLUETWIN_LLM_API_KEY",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
)


@pytest.fixture
def clean_llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No LLM endpoint, model or key leaks in from the developer's shell."""
    for name in LLM_ENV_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def fake_openai(clean_llm_env: None) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def closed_port() -> int:
    """A local TCP port with nothing listening (connections are refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
