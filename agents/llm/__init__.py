"""LLM backends behind one interface: OpenAI-compatible HTTP, cassette record/replay,
an sqlite cache, scripted replies for tests, and the parse/validate/repair loop.

Importing this package never imports ``openai``; :class:`OpenAIBackend` does, when built.
"""

from agents.llm.base import (
    ChatReply,
    ChatRequest,
    JsonSchema,
    LLMAuthError,
    LLMBackend,
    LLMBadRequest,
    LLMBadResponse,
    LLMConfigError,
    LLMConnectionError,
    LLMError,
    LLMPersistentError,
    LLMRateLimited,
    LLMRetryableError,
    LLMServerError,
    LLMTimeout,
    LLMUnavailable,
    Message,
    UsageCounter,
    estimate_prompt_tokens,
    estimate_tokens,
    image_part,
    text_part,
)
from agents.llm.cache import CachedBackend
from agents.llm.cassette import (
    CassetteError,
    CassetteExhausted,
    CassetteMismatch,
    RecordingBackend,
    ReplayBackend,
)
from agents.llm.factory import build_backend
from agents.llm.openai_backend import OpenAIBackend
from agents.llm.scripted import ScriptedBackend, ScriptExhausted
from agents.llm.structured import (
    MalformedReply,
    StructuredResult,
    complete_structured,
    extract_json_object,
    parse_reply,
)

__all__ = [
    "CachedBackend",
    "CassetteError",
    "CassetteExhausted",
    "CassetteMismatch",
    "ChatReply",
    "ChatRequest",
    "JsonSchema",
    "LLMAuthError",
    "LLMBackend",
    "LLMBadRequest",
    "LLMBadResponse",
    "LLMConfigError",
    "LLMConnectionError",
    "LLMError",
    "LLMPersistentError",
    "LLMRateLimited",
    "LLMRetryableError",
    "LLMServerError",
    "LLMTimeout",
    "LLMUnavailable",
    "MalformedReply",
    "Message",
    "OpenAIBackend",
    "RecordingBackend",
    "ReplayBackend",
    "ScriptExhausted",
    "ScriptedBackend",
    "StructuredResult",
    "UsageCounter",
    "build_backend",
    "complete_structured",
    "estimate_prompt_tokens",
    "estimate_tokens",
    "extract_json_object",
    "image_part",
    "parse_reply",
    "text_part",
]
