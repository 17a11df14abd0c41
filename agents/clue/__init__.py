"""CLUE: the LLM policy with a hypothesis state over a language-embedded map."""

from __future__ import annotations

from agents.clue.policy import CLUEAgent

__all__ = ["CLUEAgent", "build_llm", "build_vlm", "default_encoder"]


def build_llm(spec: str = "heuristic", **kwargs):
    """An LLM backend from a CLI spec: ``heuristic`` (offline default), ``openai:MODEL``,
    ``replay:PATH``; ``record=PATH`` / ``cache=PATH`` / ``base_url=...`` as in
    :func:`agents.llm.factory.build_backend`."""
    from agents.clue.heuristic import HeuristicResponder
    from agents.llm.factory import build_backend

    return build_backend(spec, factories={"heuristic": lambda arg: HeuristicResponder()}, **kwargs)


def build_vlm(spec: str = "sim", *, base_url: str | None = None):
    """The VLM behind ``inspect``: ``sim`` (None: the robot's own; the simulator's VLM
    answers from the rendered pixels) or ``openai:MODEL`` (frames sent as images to an
    OpenAI-compatible vision endpoint, its own backend so its tokens count apart)."""
    if spec == "sim":
        return None
    from agents.llm.factory import build_backend
    from agents.vlm import OpenAIVisionBackend

    if not spec.startswith("openai"):
        raise ValueError(f"unknown VLM {spec!r}; use sim or openai:MODEL")
    return OpenAIVisionBackend(build_backend(spec, base_url=base_url))


_EMBEDDER = None


def default_encoder():
    """The simulated camera-feature model: appearance phrases through all-MiniLM-L6-v2.

    A fresh encoder per episode (its noise stream restarts from its seed), sharing one
    text embedder per process so phrases are embedded once, not once per episode.
    """
    from mapping.encoders import MiniLMTextEmbedder, SimFeatureEncoder

    global _EMBEDDER
    if _EMBEDDER is None:
        _EMBEDDER = MiniLMTextEmbedder()
    return SimFeatureEncoder(embedder=_EMBEDDER)
