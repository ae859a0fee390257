"""Tests of the OpenAI-compatible adapters: fixtures for the scripted local server and the no-internet guard.

This folder deliberately has no ``__init__.py``: as a package it would be importable as
``openai`` (``tests`` is not a package) and shadow the SDK. Its modules therefore carry
unique names and import the server helper as a top-level module.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from fake_openai_server import FakeOpenAIServer

try:  # without the SDK, every test module here skips itself, with the reason
    import openai
except ImportError:
    openai = None

_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


@pytest.fixture(autouse=True)
def no_internet_and_no_model_requests(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test starts with model requests disallowed, no OPENAI_* settings, and connections
    limited to the loopback interface; only the local-server fixture allows requests again."""
    if openai is None:
        yield
        return
    import palimpsest.adapters.openai as adapters

    monkeypatch.setattr(adapters, "ALLOW_MODEL_REQUESTS", False)
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)
    real_create_connection = socket.create_connection

    def loopback_only(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        if address[0] not in _LOOPBACK:
            raise AssertionError(f"a test tried to reach {address[0]!r}; tests never leave the machine")
        return real_create_connection(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", loopback_only)
    yield


@pytest.fixture
def server(no_internet_and_no_model_requests: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    """A scripted OpenAI-compatible server on 127.0.0.1; model requests are allowed (they stay local)."""
    import palimpsest.adapters.openai as adapters

    monkeypatch.setattr(adapters, "ALLOW_MODEL_REQUESTS", True)
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
def client(server: FakeOpenAIServer) -> Iterator[Any]:
    """An SDK client pointed at the local server (the adapters disable its retries themselves)."""
    sdk_client = openai.OpenAI(base_url=server.base_url, api_key="test-key", timeout=5.0)
    yield sdk_client
    sdk_client.close()


class SleepRecorder:
    """Stands in for ``time.sleep`` so backoff tests run instantly and can inspect the delays."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()
