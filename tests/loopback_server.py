"""A real HTTP server on 127.0.0.1 speaking the subset of the Anthropic Messages API the SDK uses.

The LLM layer is tested through the real `anthropic` SDK talking HTTP to this server:
no patching of the SDK or of our client. Each request to `POST /v1/messages` is answered by the
next scripted `Reply` in the queue (or by `default`, a function of the request body when the queue
is empty): forced-tool answers, tool-use turns (`tool_use_reply`) or text answers, injected
latency, 429 with `retry-after`, 500, 529, hangs past
the client timeout, truncated bodies, malformed JSON. Every request is recorded with its arrival and
completion times so tests can assert on retries and concurrency.

One server serves the whole pytest run (per xdist worker): the `loopback` fixture resets it for
each test (empty script, no recorded requests, any handler still hanging from the last test woken
up), points `ANTHROPIC_BASE_URL` / `ANTHROPIC_API_KEY` at it and sets small retry waits.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

_ids = itertools.count(1)


@dataclass(frozen=True)
class Reply:
    """One scripted answer. `body` is JSON-encoded unless it is already `bytes`."""

    status: int = 200
    body: Any = None
    headers: tuple[tuple[str, str], ...] = ()
    delay: float = 0.0  # seconds to wait before answering (latency)
    hang: float = 0.0  # seconds to sleep and then drop the connection without any answer
    truncate: bool = False  # announce the full length, send half the body, close


Script = Reply | Callable[[dict[str, Any]], Reply]


@dataclass
class Received:
    """A request the server got: path, headers, parsed JSON body, and when it arrived/ended."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    started: float
    finished: float = 0.0


def message(
    content: list[dict[str, Any]],
    *,
    model: str = "claude-test",
    stop_reason: str = "end_turn",
    input_tokens: int = 100,
    output_tokens: int = 20,
) -> dict[str, Any]:
    """A Messages API response body with the real shape."""
    return {
        "id": f"msg_loopback_{next(_ids)}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }


def forced_tool_name(request: dict[str, Any]) -> str:
    """The tool the request forces with `tool_choice`, else its first tool."""
    choice = request.get("tool_choice") or {}
    if choice.get("type") == "tool":
        return str(choice["name"])
    tools = request.get("tools") or [{"name": "tool"}]
    return str(tools[0]["name"])


def tool_reply(
    tool_input: dict[str, Any],
    *,
    delay: float = 0.0,
    input_tokens: int = 100,
    output_tokens: int = 20,
    stop_reason: str = "tool_use",
) -> Script:
    """An answer that calls the request's forced tool with `tool_input` (`stop_reason`
    "max_tokens": the answer the API returns when the call was cut off mid-input)."""

    def build(request: dict[str, Any]) -> Reply:
        block = {
            "type": "tool_use",
            "id": f"toolu_{next(_ids)}",
            "name": forced_tool_name(request),
            "input": tool_input,
        }
        body = message(
            [block],
            model=request.get("model", "claude-test"),
            stop_reason=stop_reason,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
        )
        return Reply(body=body, delay=delay)

    return build


def verdict_reply(
    verdict: str,
    *,
    confidence: Any = 0.9,
    reason: str = "because",
    evidence: str = "",
    delay: float = 0.0,
    input_tokens: int = 100,
    output_tokens: int = 20,
) -> Script:
    """A judge answer `{verdict, confidence, reason, evidence}` through the forced tool."""
    answer = {"verdict": verdict, "confidence": confidence, "reason": reason, "evidence": evidence}
    return tool_reply(answer, delay=delay, input_tokens=input_tokens, output_tokens=output_tokens)


def tool_use_reply(
    *calls: tuple[str, dict[str, Any]],
    text: str = "",
    delay: float = 0.0,
    input_tokens: int = 100,
    output_tokens: int = 20,
) -> Script:
    """An answer that chooses to call tools (a tool-use turn, not a forced tool): one
    `tool_use` block per `(name, input)`, after an optional text block; `stop_reason: tool_use`.
    The client answers with `tool_result` blocks in its next request (see `tool_results`)."""

    def build(request: dict[str, Any]) -> Reply:
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        for name, given in calls:
            content.append(
                {"type": "tool_use", "id": f"toolu_{next(_ids)}", "name": name, "input": given}
            )
        body = message(
            content,
            model=request.get("model", "claude-test"),
            stop_reason="tool_use",
            input_tokens=input_tokens,
            output_tokens=output_tokens,
        )
        return Reply(body=body, delay=delay)

    return build


def tool_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The `tool_result` blocks of a request's last user message (what the client answered to
    the previous tool-use turn), in order."""
    messages = request.get("messages") or []
    if not messages or messages[-1].get("role") != "user":
        return []
    content = messages[-1].get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def text_reply(
    text: str, *, delay: float = 0.0, input_tokens: int = 100, output_tokens: int = 20
) -> Script:
    """A plain text answer (what a prompt action gets, or a judge that ignored its tool)."""

    def build(request: dict[str, Any]) -> Reply:
        body = message(
            [{"type": "text", "text": text}],
            model=request.get("model", "claude-test"),
            input_tokens=input_tokens,
            output_tokens=output_tokens,
        )
        return Reply(body=body, delay=delay)

    return build


def error_reply(status: int, *, retry_after: float | None = None) -> Reply:
    """An API error with the real error body; `retry_after` sets the header."""
    kind = {
        429: "rate_limit_error",
        529: "overloaded_error",
        400: "invalid_request_error",
        401: "authentication_error",
    }.get(status, "api_error")
    headers = (("retry-after", f"{retry_after:g}"),) if retry_after is not None else ()
    return Reply(
        status=status,
        body={"type": "error", "error": {"type": kind, "message": f"scripted {status}"}},
        headers=headers,
    )


MALFORMED = Reply(body=b'{"id": "msg_broken", "type": "message", "content": [')
TRUNCATED = Reply(truncate=True, body=message([{"type": "text", "text": "cut short" * 20}]))


class LoopbackServer:
    """A scripted Messages API on a random loopback port, served from a background thread."""

    def __init__(self) -> None:
        self.queue: deque[Script] = deque()
        self.default: Script = error_reply(500)
        self.requests: list[Received] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def push(self, *replies: Script) -> None:
        """Queue answers, consumed one per request in arrival order."""
        with self._lock:
            self.queue.extend(replies)

    def start(self) -> LoopbackServer:
        self._thread.start()
        return self

    def reset(self) -> None:
        """A fresh script for the next test; a handler still hanging from the last one wakes."""
        with self._lock:
            self._stopping.set()
            self._stopping = threading.Event()
            self.queue.clear()
            self.default = error_reply(500)
            self.requests = []

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            script = self.queue.popleft() if self.queue else self.default
        return script(body) if callable(script) else script

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {"_unparsed": raw.decode("utf-8", "replace")}
                received = Received(self.path, dict(self.headers.items()), body, time.monotonic())
                with server._lock:
                    server.requests.append(received)
                try:
                    self._answer(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its timeout, a stopped run): as a real API sees
                finally:
                    received.finished = time.monotonic()

            def _answer(self, body: dict[str, Any]) -> None:
                if self.path.split("?")[0] != "/v1/messages":
                    self._send(
                        Reply(
                            status=404,
                            body={
                                "type": "error",
                                "error": {"type": "not_found_error", "message": self.path},
                            },
                        )
                    )
                    return
                reply = server._next(body)
                stopping = server._stopping  # the test's own: a reset wakes it
                if reply.delay:
                    stopping.wait(reply.delay)
                if reply.hang:
                    stopping.wait(reply.hang)
                    self.close_connection = True
                    return
                self._send(reply)

            def _send(self, reply: Reply) -> None:
                data = (
                    reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                )
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("request-id", f"req_loopback_{next(_ids)}")
                for name, value in reply.headers:
                    self.send_header(name, value)
                if reply.truncate:
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


@pytest.fixture(scope="session")
def loopback_server() -> Iterator[LoopbackServer]:
    """The one server of this pytest process."""
    server = LoopbackServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def loopback(
    loopback_server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> Iterator[LoopbackServer]:
    """The server, reset for this test, with the SDK's environment pointed at it and small
    retry waits."""
    server = loopback_server
    server.reset()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-loopback-test")
    for name in (
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_PROFILE",
        "LL_JUDGE_MODEL",
        "LL_MODEL",
        "LL_PROMPT_RUNNER",
        "LL_PRICES",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LL_LLM_RETRY_BASE", "0.01")
    monkeypatch.setenv("LL_LLM_MAX_WAIT", "3")
    monkeypatch.setenv("LL_LLM_TIMEOUT", "5")
    try:
        yield server
    finally:
        server.reset()  # wake anything still hanging before the next test starts


@dataclass
class MemoryRecorder:
    """A `Recorder` that keeps events in memory, for assertions."""

    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def emit(self, event: str, **fields: Any) -> None:
        self.events.append((event, fields))

    def flush(self) -> None:
        return None

    def of(self, event: str) -> list[dict[str, Any]]:
        return [f for e, f in self.events if e == event]


@pytest.fixture
def recorder() -> MemoryRecorder:
    return MemoryRecorder()
