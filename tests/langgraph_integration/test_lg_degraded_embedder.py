"""An unreachable embedder never fails a turn (issue 30 item 4; ARCHITECTURE.md D43).

The embedding server is real and local: the project's loopback OpenAI-compatible server on
127.0.0.1, switched to answer 503 (down) and back, or a closed port (connection refused). The
adapter's retries are kept but never sleep. A turn through ``ShortTermMemoryMiddleware`` with the
embedder down is answered and stored (without vectors), searches fall back to keyword search,
one WARNING line says so, and the vectors are filled in when the server answers again — after a
killed process too, since what waits is the store's own state (rows without a vector).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "langchain.agents", reason="the LangGraph integration needs the optional extra 'langgraph'"
)
pytest.importorskip("openai", reason="the OpenAI-compatible embedder needs the optional 'openai' SDK")

import openai
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from lg_doubles import scripted
from palimpsest.adapters import open_memory
from palimpsest.adapters.langgraph import ShortTermMemoryMiddleware
from palimpsest.adapters.openai import OpenAIEmbedder
from palimpsest.adapters.openai.testing import LoopbackExtractionServer
from palimpsest.application import AgentMemory, MemoryExtractionConfig
from palimpsest.domain.errors import ConfigurationError

DIMENSION = 32
WARNING_TEXT = "the embedder is unavailable"
RECOVERED_TEXT = "the embedder answers again"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackExtractionServer]:
    import palimpsest.adapters.openai as adapters

    monkeypatch.setattr(adapters, "ALLOW_MODEL_REQUESTS", True)
    with LoopbackExtractionServer(dimension=DIMENSION) as loopback:
        yield loopback


def _closed_port() -> str:
    """A loopback URL nothing listens on (the port was bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _embedder(base_url: str) -> OpenAIEmbedder:
    """An embedder with its retries (one) but no real waits."""
    sdk = openai.OpenAI(base_url=base_url, api_key="test-key")
    return OpenAIEmbedder(sdk, "loopback-embedder", dimension=DIMENSION, max_retries=1, timeout=5.0, sleep=lambda _s: None)


def _client(path: Path, base_url: str) -> AgentMemory:
    return open_memory(
        path,
        embedder=_embedder(base_url),
        memory_extraction_config=MemoryExtractionConfig(extract_memories=False),
    )


def _middleware(memory: AgentMemory, **options: Any) -> ShortTermMemoryMiddleware:
    return ShortTermMemoryMiddleware(memory, thread_id="t1", user_id="u1", agent_id="a1", **options)


def _stored(memory: AgentMemory) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in memory.get_thread("t1").get_messages(start=0, end=None)]


def _vector_hits(memory: AgentMemory, query: str) -> list[str]:
    return [r.content for r in memory.search(query, user_id="u1", search_strategy="vector", max_results=5)]


def _lines(caplog: pytest.LogCaptureFixture, text: str, level: int) -> list[logging.LogRecord]:
    return [r for r in caplog.records if text in r.getMessage() and r.levelno == level]


def test_a_turn_with_the_embedder_down_is_answered_stored_and_embedded_when_it_is_back(
    tmp_path: Path, server: LoopbackExtractionServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="palimpsest")
    server.embedding_status = 503
    memory = _client(tmp_path / "m.db", server.base_url)
    try:
        agent = create_agent(
            model=scripted(["Noted, your boat is the Marlin.", "Twelve metres, noted.", "It is the Marlin."]),
            tools=[],
            middleware=[_middleware(memory, compaction_message_trigger=4, except_last_messages=2)],
        )
        messages = [HumanMessage(content="My sailing boat is called Marlin.")]
        messages = list(agent.invoke({"messages": messages})["messages"])
        messages.append(HumanMessage(content="She is twelve metres long."))
        messages = list(agent.invoke({"messages": messages})["messages"])  # compacts: a card, searched by keyword

        assert messages[-1].content == "Twelve metres, noted."
        assert _stored(memory) == [
            ("user", "My sailing boat is called Marlin."),
            ("assistant", "Noted, your boat is the Marlin."),
            ("user", "She is twelve metres long."),
            ("assistant", "Twelve metres, noted."),
        ]
        assert memory.admin.waiting_vectors().messages == 4
        # Meanwhile a search is a keyword search, not an error.
        assert "My sailing boat is called Marlin." in [
            r.content for r in memory.search("sailing boat", user_id="u1")
        ]
        assert len(_lines(caplog, WARNING_TEXT, logging.WARNING)) == 1  # one line, not one per call

        server.embedding_status = 200
        assert "My sailing boat is called Marlin." not in _vector_hits(memory, "sailing boat Marlin")
        messages.append(HumanMessage(content="What is my boat called?"))
        messages = list(agent.invoke({"messages": messages})["messages"])

        assert messages[-1].content == "It is the Marlin."
        assert memory.admin.waiting_vectors().messages == 0
        assert "My sailing boat is called Marlin." in _vector_hits(memory, "sailing boat Marlin")
        assert len(_lines(caplog, RECOVERED_TEXT, logging.INFO)) == 1
        assert len(_lines(caplog, WARNING_TEXT, logging.WARNING)) == 1
        assert len(_stored(memory)) == 6  # every turn stored once
    finally:
        memory.close()


def test_a_closed_port_fails_no_write_and_no_search(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="palimpsest")
    memory = _client(tmp_path / "m.db", _closed_port())
    try:
        thread = memory.create_thread(thread_id="t1", user_id="u1")
        thread.add_messages([{"role": "user", "content": "The spare key is under the blue flowerpot."}])
        memory.add_memory("The user keeps a spare key under the blue flowerpot.", user_id="u1")
        results = memory.search("spare key flowerpot", user_id="u1")
        card = thread.get_context_card()

        assert {r.content for r in results} >= {
            "The spare key is under the blue flowerpot.",
            "The user keeps a spare key under the blue flowerpot.",
        }
        assert "The user keeps a spare key under the blue flowerpot." in [r.content for r in card.relevant_results]
        assert memory.admin.waiting_vectors().total == 2
        assert len(_lines(caplog, WARNING_TEXT, logging.WARNING)) == 1
    finally:
        memory.close()


def test_the_vectors_are_filled_after_a_killed_process_left_them_waiting(
    tmp_path: Path, server: LoopbackExtractionServer
) -> None:
    path = tmp_path / "m.db"
    script = textwrap.dedent(
        f"""
        import os, signal, sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_lg_degraded_embedder import _client
        memory = _client(sys.argv[1], sys.argv[2])
        thread = memory.create_thread(thread_id="t1", user_id="u1")
        thread.add_messages([
            {{"role": "user", "content": "Our anniversary dinner is at Lucia's."}},
            {{"role": "assistant", "content": "Lucia's it is."}},
        ])
        memory.add_memory("The user's anniversary dinner is at Lucia's.", user_id="u1")
        print("stored", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(path), _closed_port()],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == -signal.SIGKILL and "stored" in done.stdout, done.stderr

    memory = _client(path, server.base_url)
    try:
        assert memory.admin.waiting_vectors().messages == 2
        assert memory.admin.waiting_vectors().records == 1
        assert "Our anniversary dinner is at Lucia's." not in _vector_hits(memory, "anniversary dinner Lucia")
        memory.get_thread("t1").add_messages([{"role": "user", "content": "Book a table."}])

        assert memory.admin.waiting_vectors().total == 0
        hits = _vector_hits(memory, "anniversary dinner Lucia")
        assert "Our anniversary dinner is at Lucia's." in hits
        assert "The user's anniversary dinner is at Lucia's." in hits
    finally:
        memory.close()


def test_embed_waiting_fills_the_vectors_on_demand_and_stops_while_the_server_is_down(
    tmp_path: Path, server: LoopbackExtractionServer
) -> None:
    server.embedding_status = 503
    memory = _client(tmp_path / "m.db", server.base_url)
    try:
        thread = memory.create_thread(thread_id="t1", user_id="u1")
        thread.add_messages([{"role": "user", "content": f"note number {i}"} for i in range(3)])
        assert memory.embed_waiting() == 0  # still down: nothing done, nothing raised
        assert memory.admin.waiting_vectors().messages == 3

        server.embedding_status = 200
        assert memory.embed_waiting() == 3
        assert memory.admin.waiting_vectors().total == 0
    finally:
        memory.close()


def test_a_model_that_answers_wrongly_still_fails_the_write(tmp_path: Path, server: LoopbackExtractionServer) -> None:
    memory = _client(tmp_path / "m.db", server.base_url)
    try:
        thread = memory.create_thread(thread_id="t1", user_id="u1")
        server.dimension = DIMENSION + 1  # the server's vectors no longer fit the model's size
        with pytest.raises(ConfigurationError):
            thread.add_messages([{"role": "user", "content": "hello"}])
        assert thread.get_messages(start=0, end=None) == []  # bad input writes nothing
    finally:
        memory.close()
