"""A local fake of the Anthropic Messages API for tests: a threading http.server on 127.0.0.1 that
replays scripted responses and records every request the real SDK sends.

    with FakeAnthropic([reply(text("hi"))]) as fake:
        client = fake.client()           # a real anthropic.Anthropic aimed at the fake
        ...
        fake.requests[0].body["messages"]

A script entry is a ScriptedResponse (status, JSON body, headers) or a callable taking the recorded
request and returning one. When the script runs out the fake answers 500 with x-should-retry: false,
so a test that sends one request too many fails loudly instead of hanging.
"""
from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_USAGE = {"input_tokens": 11, "output_tokens": 7}
FAST_RETRY_HEADERS = {"retry-after-ms": "1"}
SHUTDOWN_POLL_S = 0.02   # the SDK honours it, so retry tests take milliseconds
_ids = itertools.count(1)


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass(frozen=True)
class ScriptedResponse:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


ScriptEntry = ScriptedResponse | Callable[[RecordedRequest], ScriptedResponse]


# ---- builders --------------------------------------------------------------------------------

def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(name: str, tool_input: Any, tool_id: str | None = None) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id or f"toolu_{next(_ids):04d}", "name": name, "input": tool_input}


def reply(*content: dict[str, Any], stop_reason: str = "end_turn", usage: dict[str, int] | None = None,
          stop_details: dict[str, Any] | None = None, stop_sequence: str | None = None,
          delay_s: float = 0.0) -> ScriptedResponse:
    body = {
        "id": f"msg_{next(_ids):04d}", "type": "message", "role": "assistant", "model": "fake-model",
        "content": list(content), "stop_reason": stop_reason, "stop_sequence": stop_sequence,
        "usage": usage or dict(DEFAULT_USAGE),
    }
    if stop_details is not None:
        body["stop_details"] = stop_details
    return ScriptedResponse(200, body, delay_s=delay_s)


def api_error(status: int, error_type: str, message: str, headers: dict[str, str] | None = None) -> ScriptedResponse:
    return ScriptedResponse(status, {"type": "error", "error": {"type": error_type, "message": message}},
                            headers={**FAST_RETRY_HEADERS, **(headers or {})})


# ---- the server ------------------------------------------------------------------------------

class FakeAnthropic:
    def __init__(self, script: list[ScriptEntry]):
        self.script = list(script)
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                request = RecordedRequest("POST", self.path, {k.lower(): v for k, v in self.headers.items()},
                                          json.loads(raw) if raw else None)
                scripted = fake._next(request)
                if scripted.delay_s:
                    time.sleep(scripted.delay_s)
                payload = json.dumps(scripted.body).encode()
                try:
                    self.send_response(scripted.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    self.send_header("request-id", f"req_{len(fake.requests)}")
                    for key, value in scripted.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass   # the client gave up (a timeout test); nothing left to tell it

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output quiet
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # A short poll interval: shutdown() waits up to one interval, once per test.
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL_S},
                                        daemon=True)

    def _next(self, request: RecordedRequest) -> ScriptedResponse:
        with self._lock:
            self.requests.append(request)
            if not self.script:
                return ScriptedResponse(500, {"type": "error", "error": {
                    "type": "api_error", "message": "fake script exhausted: the test sent one request too many"}},
                    headers={"x-should-retry": "false"})
            entry = self.script.pop(0)
        return entry(request) if callable(entry) else entry

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @staticmethod
    def sent_key(request: RecordedRequest) -> str | None:
        """The credential the SDK sent: anthropic 2.x sends an API key as a Bearer token."""
        bearer = request.headers.get("authorization", "")
        return bearer.removeprefix("Bearer ") if bearer else request.headers.get("x-api-key")

    @property
    def message_bodies(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if r.path.startswith("/v1/messages")]

    def client(self, *, max_retries: int = 0, timeout: float = 5.0):
        import anthropic
        import httpx2

        # trust_env=False: a proxy set in the environment must not intercept loopback traffic.
        return anthropic.Anthropic(api_key="sk-ant-test-key", base_url=self.base_url, max_retries=max_retries,
                                   timeout=timeout, http_client=httpx2.Client(trust_env=False))

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
