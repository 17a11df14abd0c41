"""Build a backend from a command-line spec: ``openai:MODEL``, ``replay:PATH``, ...

The CLI's ``--llm`` value is ``NAME[:ARG]``. Built in: ``openai[:MODEL]`` (model from
``CLUETWIN_LLM_MODEL`` when omitted) and ``replay:PATH``. Other names (the offline
``heuristic`` responder, for one) come from ``factories``: ``{name: make(arg)}``.
``cache`` wraps the backend in an sqlite cache, ``record`` then records everything the
policy sees to a cassette (recording a replay is refused: it would copy the cassette).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from agents.llm.base import LLMBackend, LLMConfigError

BackendFactory = Callable[[str], LLMBackend]


def build_backend(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout_s: float = 60.0,
    max_retries: int = 2,
    record: str | Path | None = None,
    cache: str | Path | None = None,
    factories: Mapping[str, BackendFactory] | None = None,
) -> LLMBackend:
    """The backend ``spec`` names, optionally cached and recorded."""
    name, _, arg = spec.partition(":")
    factories = dict(factories or {})
    backend: LLMBackend
    if name in factories:
        backend = factories[name](arg)
    elif name == "openai":
        from agents.llm.openai_backend import OpenAIBackend

        backend = OpenAIBackend(
            arg or None,
            base_url=base_url,
            api_key=api_key,
            timeout_s=timeout_s,
            max_retries=max_retries,
        )
    elif name == "replay":
        if not arg:
            raise LLMConfigError("--llm replay:PATH needs the cassette path")
        if record is not None:
            raise LLMConfigError("--record cannot be combined with --llm replay:PATH")
        from agents.llm.cassette import ReplayBackend

        backend = ReplayBackend(arg)
    else:
        known = ", ".join(sorted({"openai", "replay", *factories}))
        raise LLMConfigError(f"unknown LLM backend {name!r} in {spec!r}; known: {known}")
    if cache is not None:
        from agents.llm.cache import CachedBackend

        backend = CachedBackend(backend, cache)
    if record is not None:
        from agents.llm.cassette import RecordingBackend

        backend = RecordingBackend(backend, record)
    return backend
