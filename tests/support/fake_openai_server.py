"""A real OpenAI-compatible chat server on 127.0.0.1, for tests.

It speaks plain HTTP/JSON like vLLM, Ollama or api.openai.com, so the unmodified
``openai`` client talks to it. What it answers comes from a pluggable ``responder``;
faults are switched on per test::

    with FakeOpenAIServer(responder=lambda messages, body: '{"ok": true}') as server:
        server.fail_next(2, status=500)       # the next two chat calls get HTTP 500
        client = OpenAI(base_url=server.base_url, api_key=server.api_key or "x")

Endpoints: ``POST /v1/chat/completions`` (also ``/chat/completions``) and
``GET /v1/models``. Every request is kept in :attr:`FakeOpenAIServer.requests` (the
``Authorization`` header is never stored).

Server-side token counts are *not* the client-side estimate on purpose, so tests can
tell them apart: prompt tokens = per message 3 + number of whitespace-separated words
(+ 85 per image part); completion tokens = words in the reply + 1.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[list[dict[str, Any]], dict[str, Any]], "str | None"]
"""``responder(messages, request_json) -> reply text`` (``None`` sends a null content)."""

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")


def default_responder(messages: list[dict[str, Any]], body: dict[str, Any]) -> str:
    """Echo the last user message's text, prefixed with ``echo:``."""
    for m in reversed(messages):
        if m.get("role") == "user":
            return "echo: " + message_text(m)
    return "echo:"


def message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if p.get("type") == "text")
    return ""


def server_prompt_tokens(messages: list[dict[str, Any]]) -> int:
    total = 0
    for m in messages:
        total += 3 + len(message_text(m).split())
        content = m.get("content")
        if isinstance(content, list):
            total += 85 * sum(1 for p in content if p.get("type") == "image_url")
    return total


def server_completion_tokens(text: str | None) -> int:
    return len((text or "").split()) + 1


@dataclass
class RecordedRequest:
    """One request as the server saw it (never the Authorization header)."""

    method: str
    path: str
    body: dict[str, Any]
    retry_count: int  # the client's x-stainless-retry-count header (0 on first try)
    status: int = 0  # what the server answered
    auth_ok: bool = True
    started_s: float = field(default_factory=time.monotonic)


class FakeOpenAIServer:
    """OpenAI-compatible HTTP server in a background thread on an ephemeral port.

    ``api_key``: when set, requests without ``Authorization: Bearer <api_key>`` get 401;
    the error body then echoes the key the client sent (a careless server), so tests
    can check that the client side scrubs it. ``include_usage=False`` leaves out the
    ``usage`` block. ``retry_after_ms`` adds a ``retry-after-ms`` header to 429/5xx
    answers so the client's back-off stays short in tests.
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        api_key: str | None = None,
        include_usage: bool = True,
        model: str = "fake-model",
        retry_after_ms: int | None = 5,
    ) -> None:
        self.responder: Responder = responder or default_responder
        self.api_key = api_key
        self.include_usage = include_usage
        self.model = model
        self.retry_after_ms = retry_after_ms
        self.reject_response_format = False
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._fail: list[int] = []  # statuses for the next chat calls, in order
        self._slow: list[float] = []  # delays for the next chat calls, seconds
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._counter = 0

    # ------------------------------------------------------------------ faults
    def fail_next(self, n: int, status: int = 500) -> None:
        """Answer the next ``n`` chat requests with HTTP ``status``."""
        with self._lock:
            self._fail.extend([status] * n)

    def slow_next(self, n: int, delay_s: float) -> None:
        """Delay the next ``n`` chat requests by ``delay_s`` before answering."""
        with self._lock:
            self._slow.extend([delay_s] * n)

    # ------------------------------------------------------------------ lifecycle
    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeOpenAIServer:
        self._stopping.clear()
        handler = _make_handler(self)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ views
    @property
    def chat_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path in CHAT_PATHS]

    # ------------------------------------------------------------------ handling
    def _next_fault(self) -> tuple[int | None, float]:
        with self._lock:
            status = self._fail.pop(0) if self._fail else None
            delay = self._slow.pop(0) if self._slow else 0.0
            return status, delay

    def _chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        messages = body.get("messages")
        if not isinstance(messages, list) or not body.get("model"):
            return 400, _error("'model' and a list of 'messages' are required", "messages")
        if body.get("stream"):
            return 400, _error("streaming is not supported by this test server", "stream")
        if "response_format" in body and self.reject_response_format:
            return 400, _error("response_format is not supported by this server", "response_format")
        text = self.responder(messages, body)
        with self._lock:
            self._counter += 1
            n = self._counter
        out: dict[str, Any] = {
            "id": f"chatcmpl-fake-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "system_fingerprint": "fp_fake",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
        }
        if self.include_usage:
            p, c = server_prompt_tokens(messages), server_completion_tokens(text)
            out["usage"] = {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}
        return 200, out


def _error(message: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    return {
        "error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    }


def _make_handler(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

        def _send(self, status: int, payload: dict[str, Any], retry_hint: bool = False) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.send_header("x-request-id", f"req-{time.monotonic_ns()}")
                if retry_hint and server.retry_after_ms is not None:
                    self.send_header("retry-after-ms", str(server.retry_after_ms))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (time-out); nothing to answer

        def _record(self, body: dict[str, Any]) -> RecordedRequest:
            auth = self.headers.get("authorization", "")
            sent_key = auth[len("Bearer ") :] if auth.startswith("Bearer ") else auth
            rec = RecordedRequest(
                method=self.command,
                path=self.path.split("?")[0],
                body=body,
                retry_count=int(self.headers.get("x-stainless-retry-count", "0") or 0),
                auth_ok=server.api_key is None or sent_key == server.api_key,
            )
            with server._lock:
                server.requests.append(rec)
            self._sent_key = sent_key
            return rec

        def _deny(self, rec: RecordedRequest) -> None:
            rec.status = 401
            self._send(
                401,
                _error(f"Incorrect API key provided: {self._sent_key}", code="invalid_api_key"),
            )

        def do_GET(self) -> None:
            rec = self._record({})
            if not rec.auth_ok:
                return self._deny(rec)
            if rec.path in ("/v1/models", "/models"):
                rec.status = 200
                return self._send(
                    200, {"object": "list", "data": [{"id": server.model, "object": "model"}]}
                )
            rec.status = 404
            self._send(404, _error(f"no route {rec.path}"))

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"_unparseable": raw[:200].decode("utf-8", "replace")}
            rec = self._record(body if isinstance(body, dict) else {"_not_object": body})
            if not rec.auth_ok:
                return self._deny(rec)
            if rec.path not in CHAT_PATHS:
                rec.status = 404
                return self._send(404, _error(f"no route {rec.path}"))
            status, delay = server._next_fault()
            if delay and server._stopping.wait(delay):
                return
            if status is not None:
                rec.status = status
                return self._send(
                    status, _error(f"injected fault {status}"), retry_hint=status >= 429
                )
            try:
                status, payload = server._chat(rec.body)
            except Exception as e:  # a responder bug becomes a 500, as on a real server
                status, payload = 500, _error(f"responder failed: {type(e).__name__}: {e}")
            rec.status = status
            self._send(status, payload, retry_hint=status >= 500)

    return Handler
