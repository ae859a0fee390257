"""Test helper: a scripted OpenAI-compatible HTTP server (chat completions and embeddings) on 127.0.0.1.

Each test queues the responses it wants per endpoint; the server records every request it
received. It never forwards anything anywhere, and answers 404 to anything unscripted.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

CHAT = "/v1/chat/completions"
EMBEDDINGS = "/v1/embeddings"


@dataclass
class Scripted:
    """One canned HTTP answer: a JSON body (or raw text), a status, and an optional delay."""

    body: Any
    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Received:
    path: str
    body: dict[str, Any]


def chat_answer(content: str, *, prompt_tokens: int = 11, completion_tokens: int = 7) -> Scripted:
    return Scripted(
        {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 0,
            "model": "test-model",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
    )


def json_answer(payload: Any, **usage: int) -> Scripted:
    return chat_answer(json.dumps(payload), **usage)


def error(status: int, message: str = "scripted failure", *, param: str | None = None) -> Scripted:
    return Scripted({"error": {"message": message, "type": "invalid_request_error", "param": param,
                               "code": None}}, status=status)


def embedding_answer(vectors: list[list[float]], *, order: list[int] | None = None, tokens: int = 3) -> Scripted:
    indexes = order if order is not None else list(range(len(vectors)))
    return Scripted(
        {
            "object": "list",
            "data": [{"object": "embedding", "index": i, "embedding": vectors[i]} for i in indexes],
            "model": "test-embedder",
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
    )


class FakeOpenAIServer:
    """A real HTTP server in a daemon thread, on an ephemeral port of the loopback interface."""

    def __init__(self) -> None:
        self._scripts: dict[str, deque[Scripted]] = {CHAT: deque(), EMBEDDINGS: deque()}
        self._lock = threading.Lock()
        self.received: list[Received] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-openai", daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def script(self, path: str, *answers: Scripted) -> None:
        with self._lock:
            self._scripts[path].extend(answers)

    def chat(self, *answers: Scripted) -> None:
        self.script(CHAT, *answers)

    def embeddings(self, *answers: Scripted) -> None:
        self.script(EMBEDDINGS, *answers)

    def requests_to(self, path: str) -> list[dict[str, Any]]:
        with self._lock:
            return [r.body for r in self.received if r.path == path]

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _next(self, path: str, body: dict[str, Any]) -> Scripted:
        with self._lock:
            self.received.append(Received(path, body))
            queue = self._scripts.get(path)
            if not queue:
                return error(404, f"nothing scripted for {path}")
            return queue.popleft()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"unparseable": raw.decode("utf-8", "replace")}
                answer = server._next(self.path, body)
                if answer.delay:
                    time.sleep(answer.delay)
                payload = answer.body if isinstance(answer.body, (bytes, str)) else json.dumps(answer.body)
                data = payload.encode("utf-8") if isinstance(payload, str) else payload
                try:
                    self.send_response(answer.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in answer.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (timeout tests)
                    pass

            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                pass

        return Handler
