"""A live uvicorn serving the HTTP API in a thread on 127.0.0.1 (a free port), and a small client."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from palimpsest.adapters.http import create_app
from palimpsest.application import AgentMemory


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def serving(memory: AgentMemory) -> Iterator[str]:
    """The API over ``memory`` served by uvicorn in a thread; yields its base URL."""
    import uvicorn

    port = free_port()
    config = uvicorn.Config(
        create_app(memory), host="127.0.0.1", port=port, log_level="warning", ws="none", lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def call(
    base: str,
    method: str,
    path: str,
    key: str | None = None,
    body: object = None,
    query: dict[str, Any] | None = None,
) -> Answer:
    """One request (``body`` sent as JSON when given); the answer with its JSON decoded."""
    data = None if body is None else json.dumps(body).encode()
    if query:
        path += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
    request = urllib.request.Request(base + path, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if key is not None:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            raw = response.read()
            return Answer(response.status, dict(response.headers), json.loads(raw) if raw else None)
    except urllib.error.HTTPError as exc:
        with exc:
            raw = exc.read()
        return Answer(exc.code, dict(exc.headers), json.loads(raw) if raw else None)
