"""OpenAI-compatible chat completions through the real ``openai`` client.

Works with any server that speaks ``POST {base_url}/chat/completions``: api.openai.com,
vLLM, Ollama (``http://localhost:11434/v1``), llama.cpp server, LM Studio.

Configuration (argument first, then environment):

=============  ==========================================================
``model``      ``CLUETWIN_LLM_MODEL``
``base_url``   ``CLUETWIN_LLM_BASE_URL`` (else the client's own default:
               ``OPENAI_BASE_URL`` or api.openai.com)
``api_key``    ``CLUETWIN_LLM_API_KEY``, then ``OPENAI_API_KEY``; local servers
               that need none get the placeholder ``"EMPTY"``
=============  ==========================================================

Time-outs and retries are explicit: ``timeout_s`` bounds each HTTP attempt (the client's
default is 600 s), ``max_retries`` is handed to the client, which retries time-outs,
refused connections, 408/409/429 and 5xx with exponential back-off (honouring
``retry-after``). When the retries are spent the backend raises
:class:`~agents.llm.base.LLMUnavailable`; 401/403 raise
:class:`~agents.llm.base.LLMAuthError` and 400/404/422 :class:`~agents.llm.base.LLMBadRequest`
at once.

Structured output: a request with a ``json_schema`` is sent with
``response_format={"type": "json_schema", ...}``. If the server rejects that request
(HTTP 400/422) and the same request without ``response_format`` succeeds, the backend
remembers that this server has no structured output and sends plain requests from
then on; the prompt must then describe the format itself, and
:mod:`agents.llm.structured` parses and repairs the text.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from agents.llm.base import (
    ChatReply,
    ChatRequest,
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
    estimate_prompt_tokens,
    estimate_tokens,
    redact,
    redact_url,
)

log = logging.getLogger(__name__)

ENV_BASE_URL = "CLUETWIN_LLM_BASE_URL"
ENV_MODEL = "CLUETWIN_LLM_MODEL"
ENV_API_KEYS = ("CLUETWIN_LLM_API_KEY", "OPENAI_API_KEY")
NO_KEY_PLACEHOLDER = "EMPTY"  # what vLLM / Ollama accept when they need no key

# HTTP status -> error class; anything else: >= 500 retryable, other 4xx persistent.
STATUS_ERRORS: dict[int, type[LLMError]] = {
    400: LLMBadRequest,
    401: LLMAuthError,
    403: LLMAuthError,
    404: LLMBadRequest,
    408: LLMServerError,
    409: LLMServerError,
    413: LLMBadRequest,
    422: LLMBadRequest,
    429: LLMRateLimited,
}

_HINTS = {
    401: "check the API key (CLUETWIN_LLM_API_KEY / OPENAI_API_KEY)",
    403: "the key lacks access to this model or endpoint",
    404: "check the base URL (OpenAI-compatible servers usually end in /v1) and the model name",
}


def _import_openai() -> Any:
    try:
        import openai
    except ImportError:
        raise LLMConfigError(
            "the OpenAI-compatible backend needs the 'openai' package: pip install 'openai>=1.40'"
        ) from None
    return openai


class OpenAIBackend(LLMBackend):
    """Chat completions from an OpenAI-compatible endpoint.

    ``timeout_s`` bounds each attempt (seconds), ``max_retries`` is the number of
    retries after the first attempt. ``structured_output=False`` never sends
    ``response_format``.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        structured_output: bool = True,
    ) -> None:
        openai = _import_openai()
        model = model or os.environ.get(ENV_MODEL, "")
        if not model:
            raise LLMConfigError(f"no model name: pass model=... or set {ENV_MODEL}")
        if timeout_s <= 0:
            raise LLMConfigError(f"timeout_s must be positive, got {timeout_s}")
        if max_retries < 0:
            raise LLMConfigError(f"max_retries must be >= 0, got {max_retries}")
        base_url = base_url or os.environ.get(ENV_BASE_URL) or None
        key = api_key or next((os.environ[k] for k in ENV_API_KEYS if os.environ.get(k)), None)
        self.model = model
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.structured_output = structured_output
        self._api_key = key or NO_KEY_PLACEHOLDER
        self._openai = openai
        try:
            self._client = openai.OpenAI(
                api_key=self._api_key,
                base_url=base_url,
                timeout=self.timeout_s,
                max_retries=self.max_retries,
            )
        except openai.OpenAIError as e:
            raise LLMConfigError(f"cannot build the OpenAI client: {self._scrub(str(e))}") from None
        self.base_url = redact_url(str(self._client.base_url))

    def __repr__(self) -> str:
        return (
            f"OpenAIBackend(model={self.model!r}, base_url={self.base_url!r}, api_key=***, "
            f"timeout_s={self.timeout_s}, max_retries={self.max_retries})"
        )

    def close(self) -> None:
        self._client.close()

    # ------------------------------------------------------------------ calls
    def _complete(self, request: ChatRequest) -> ChatReply:
        use_schema = request.json_schema is not None and self.structured_output
        started = time.perf_counter()
        try:
            completion = self._create(request, use_schema)
            mode = "json_schema" if use_schema else "none"
        except LLMBadRequest as first:
            if not use_schema:
                raise
            log.info("server rejected response_format (%s); retrying without it", first)
            completion = self._create(request, False)
            self.structured_output = False
            mode = "dropped"
            log.warning(
                "%s at %s has no JSON-schema output; sending plain requests from now on",
                self.model,
                self.base_url,
            )
        latency_s = time.perf_counter() - started
        return self._reply(completion, request, latency_s, mode)

    def _create(self, request: ChatRequest, use_schema: bool) -> Any:
        kwargs: dict[str, Any] = {
            "model": request.model,
            "messages": _wire_safe(request.openai_messages()),
            "temperature": request.temperature,
        }
        if request.max_tokens is not None:
            kwargs["max_tokens"] = request.max_tokens
        if request.seed is not None:
            kwargs["seed"] = request.seed
        if use_schema and request.json_schema is not None:
            kwargs["response_format"] = request.json_schema.response_format()
        try:
            return self._client.chat.completions.create(**kwargs)
        except self._openai.OpenAIError as e:
            error = self._translate(e)
        if isinstance(error, LLMRetryableError):
            attempts = self.max_retries + 1
            raise LLMUnavailable(
                f"LLM endpoint {self.base_url} (model {self.model}) unavailable after "
                f"{attempts} attempt(s), {self.timeout_s:g} s time-out each: {error}",
                base_url=self.base_url,
                attempts=attempts,
                last_error=error,
            ) from None
        raise error from None

    def _scrub(self, text: str) -> str:
        return redact(text, [self._api_key])

    def _translate(self, e: Exception) -> LLMError:
        """Map an ``openai`` exception to an :class:`LLMError` without credentials."""
        o = self._openai
        where = f"{self.base_url} (model {self.model})"
        if isinstance(e, o.APITimeoutError):
            return LLMTimeout(f"no answer from {where} within {self.timeout_s:g} s")
        if isinstance(e, o.APIConnectionError):
            return LLMConnectionError(f"cannot connect to {where}: {self._scrub(str(e))}")
        if isinstance(e, o.APIStatusError):
            status = e.status_code
            cls = STATUS_ERRORS.get(status) or (
                LLMServerError if status >= 500 else LLMPersistentError
            )
            detail = self._scrub(_server_message(e))[:500]
            hint = f" ({_HINTS[status]})" if status in _HINTS else ""
            return cls(f"HTTP {status} from {where}: {detail}{hint}")
        if isinstance(e, o.APIResponseValidationError):
            return LLMBadResponse(f"unreadable response from {where}")
        return LLMPersistentError(f"{type(e).__name__} from {where}: {self._scrub(str(e))[:500]}")

    def _reply(
        self, completion: Any, request: ChatRequest, latency_s: float, mode: str
    ) -> ChatReply:
        choices = getattr(completion, "choices", None) or []
        if not choices:
            raise LLMBadResponse(f"{self.base_url} answered without choices (model {self.model})")
        choice = choices[0]
        message = getattr(choice, "message", None)
        content = getattr(message, "content", None)
        text = content if isinstance(content, str) else ""
        raw: dict[str, Any] = {
            "id": getattr(completion, "id", None),
            "model": getattr(completion, "model", None),
            "finish_reason": getattr(choice, "finish_reason", None),
            "system_fingerprint": getattr(completion, "system_fingerprint", None),
            "response_format": mode,
        }
        if content is None:
            raw["content_null"] = True
        refusal = getattr(message, "refusal", None)
        if refusal:
            raw["refusal"] = str(refusal)
        usage = getattr(completion, "usage", None)
        if usage is not None and getattr(usage, "prompt_tokens", None) is not None:
            prompt_tokens = int(usage.prompt_tokens)
            completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
            source = "server"
            details = getattr(usage, "prompt_tokens_details", None)
            cached = getattr(details, "cached_tokens", None) if details is not None else None
            if cached is not None:
                raw["server_cached_prompt_tokens"] = int(cached)
        else:
            prompt_tokens = estimate_prompt_tokens(request.messages)
            completion_tokens = estimate_tokens(text)
            source = "estimate"
        return ChatReply(
            text=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            tokens_source=source,
            latency_s=latency_s,
            raw=raw,
        )


def _wire_safe(value: Any) -> Any:
    """``value`` with lone surrogates (unencodable in UTF-8) replaced by ``?``."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "replace").decode("utf-8")
        return value
    if isinstance(value, list):
        return [_wire_safe(v) for v in value]
    if isinstance(value, dict):
        return {k: _wire_safe(v) for k, v in value.items()}
    return value


def _server_message(e: Any) -> str:
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if isinstance(err, str):
            return err
    return str(getattr(e, "message", "") or e)
