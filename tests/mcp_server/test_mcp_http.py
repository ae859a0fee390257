"""The MCP server over streamable HTTP, live on 127.0.0.1 (uvicorn in a thread, a free port),
driven by the SDK's client with two users' API keys as bearer tokens: each sees only its own
records whatever the model passes; no, a bad or a revoked key is 401; a read key cannot write."""

from __future__ import annotations

import signal
import socket
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import pytest

pytest.importorskip("mcp")
uvicorn = pytest.importorskip("uvicorn")

from mcp import ClientSession, MCPError  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402
from palimpsest.adapters import HashingEmbedder, open_memory  # noqa: E402
from palimpsest.adapters.mcp import MCP_PATH, create_http_app  # noqa: E402
from palimpsest.application import AgentMemory, ScopedMemory  # noqa: E402
from palimpsest.application.api_keys import ApiKeys  # noqa: E402
from palimpsest.domain.errors import StorageError, StoreBusyError  # noqa: E402

from .matrix import call, console_script, drive_tool_matrix, environment, read_text, refused  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def memory(root_client: Callable[..., AgentMemory], tmp_path: Path) -> AgentMemory:
    return root_client(path=str(tmp_path / "memory.db"))


@pytest.fixture
def url(memory: AgentMemory) -> Iterator[str]:
    port = _free_port()
    app = create_http_app(memory, host="127.0.0.1", port=port)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", ws="none"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}{MCP_PATH}"
    server.should_exit = True
    thread.join(timeout=30)


@asynccontextmanager
async def connect(url: str, key: str, statuses: list[int] | None = None) -> AsyncIterator[ClientSession]:
    """An initialised client session with ``key`` as its bearer token; ``statuses`` collects the
    HTTP statuses of its requests."""

    async def record(response: httpx2.Response) -> None:
        if statuses is not None:
            statuses.append(response.status_code)

    client = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
    client.event_hooks["response"].append(record)
    async with (
        client as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def _status(url: str, key: str | None) -> int:
    """The HTTP status of an MCP initialize request with ``key`` (or none)."""
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }
    with httpx2.Client(timeout=30) as client:
        response = client.post(url, json=body, headers=headers)
        if response.status_code == 401:
            assert response.headers["www-authenticate"].startswith("Bearer")
        return response.status_code


def test_the_whole_tool_matrix_over_http_with_two_users_kept_apart(memory: AgentMemory, url: str) -> None:
    alice = memory.admin.api_keys.create("alice", scope="write").key
    bob = memory.admin.api_keys.create("bob", scope="write").key

    async def scenario() -> None:
        async with connect(url, alice) as session:
            mine = await drive_tool_matrix(session, "alice")
            other = (await call(session, "save_memory", {"content": "alice sells the honey."}))["id"]
            link = {
                "source_record_id": other,
                "source_record_type": "memory",
                "target_record_id": mine["memory"],
                "target_record_type": "fact",
                "relation_type": "about",
            }
            mine["link"] = (await call(session, "link_memories", link))["id"]
        async with connect(url, bob) as session:
            theirs = await drive_tool_matrix(session, "bob")
            # Bob's client passes Alice's ids: not found, exactly as absent ones.
            assert "No memory record" in await refused(session, "get_memory", {"memory_id": mine["memory"]})
            assert "No memory record" in await refused(session, "memory_history", {"memory_id": mine["memory"]})
            assert "No memory record" in await refused(session, "forget_memory", {"memory_id": mine["memory"]})
            hijack = await refused(session, "update_memory", {"memory_id": mine["memory"], "content": "hijacked"})
            assert "No memory record" in hijack
            for tool, arguments in (
                ("update_link", {"relation_id": mine["link"], "relation_type": "hijacked"}),
                ("unlink_memories", {"relation_id": mine["link"]}),
                ("unlink_memories", link),
            ):
                result = await session.call_tool(tool, arguments)
                # Anyone else's link is as an absent one: nothing changed, nothing said about it.
                assert not result.is_error and result.structured_content in ({"updated": 0}, {"deleted": 0}), tool
            await refused(
                session,
                "link_memories",
                {
                    "source_record_id": theirs["memory"],
                    "source_record_type": "fact",
                    "target_record_id": mine["memory"],
                    "target_record_type": "fact",
                    "relation_type": "steals",
                },
            )
            for tool, arguments in (
                ("add_messages", {"thread_id": mine["thread"], "messages": [{"role": "user", "content": "hi"}]}),
                ("context_card", {"thread_id": mine["thread"]}),
            ):
                assert "No thread found" in await refused(session, tool, arguments)
            assert (await call(session, "list_memories", {"thread_id": mine["thread"]}))["memories"] == []
            found = (await call(session, "search_memory", {"query": "alice bees hives", "max_results": 20}))["results"]
            assert {r["record"]["user_id"] for r in found} == {"bob"}
            assert [t["id"] for t in (await call(session, "list_threads"))["threads"]] == [theirs["thread"]]
            with pytest.raises(MCPError, match="No thread found"):
                await read_text(session, f"palimpsest://threads/{mine['thread']}/card")
        async with connect(url, alice) as session:
            # Alice's memory is as she left it.
            kept = (await call(session, "get_memory", {"memory_id": mine["memory"]}))["memory"]
            assert kept["content"] == "alice keeps two hives of bees."
            history = await call(session, "memory_history", {"memory_id": mine["memory"]})
            assert [(lk["id"], lk["relation_type"]) for lk in history["links"]] == [(mine["link"], "about")]

    anyio.run(scenario)


def test_no_bad_or_revoked_key_is_401_and_a_read_key_cannot_write(memory: AgentMemory, url: str) -> None:
    writer = memory.admin.api_keys.create("carol", scope="write")
    reader = memory.admin.api_keys.create("carol", scope="read").key
    assert _status(url, None) == 401
    assert _status(url, "pal_0000000000000000_" + "x" * 43) == 401
    assert _status(url, "not-a-key") == 401
    assert _status(url, writer.key) == 200

    async def scenario() -> str:
        async with connect(url, writer.key) as session:
            saved = (await call(session, "save_memory", {"content": "Carol reads on the train."}))["id"]
        async with connect(url, reader) as session:
            assert (await call(session, "get_memory", {"memory_id": saved}))["memory"]["user_id"] == "carol"
            message = await refused(session, "save_memory", {"content": "a reader writes"})
            assert "needs the 'write' scope" in message
            assert "needs the 'write' scope" in await refused(session, "forget_memory", {"memory_id": saved})
            assert "needs the 'write' scope" in await refused(session, "create_thread")
        return saved

    saved = anyio.run(scenario)
    assert [m.content for m in memory.list_memories(user_id="carol")] == ["Carol reads on the train."]
    assert saved
    memory.admin.api_keys.revoke(writer.info.key_id)
    assert _status(url, writer.key) == 401
    assert _status(url, reader) == 200


def test_a_revoked_key_is_refused_at_once_in_an_open_session(memory: AgentMemory, url: str) -> None:
    made = memory.admin.api_keys.create("dave", scope="write")

    statuses: list[int] = []

    async def scenario() -> None:
        async with connect(url, made.key, statuses) as session:
            await call(session, "save_memory", {"content": "Dave likes rain."})
            assert 401 not in statuses
            memory.admin.api_keys.revoke(made.info.key_id)
            with pytest.raises(MCPError), anyio.fail_after(20):
                await session.call_tool("list_memories", {})
            assert statuses[-1] == 401

    anyio.run(scenario)


def test_the_console_script_serves_mcp_over_http(tmp_path: Path) -> None:
    """``palimpsest --store FILE serve mcp --transport http --port N`` in a process of its own:
    a key from the store is the caller; no key is 401."""
    path = tmp_path / "memory.db"
    with open_memory(path, embedder=HashingEmbedder()) as memory:
        erin = memory.admin.api_keys.create("erin", scope="write").key
    port = _free_port()
    url = f"http://127.0.0.1:{port}{MCP_PATH}"
    process = subprocess.Popen(
        [console_script(), "--store", str(path), "serve", "mcp", "--transport", "http", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=environment(),
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            try:
                if _status(url, None) == 401:
                    break
            except httpx2.TransportError:
                pass
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)

        async def scenario() -> None:
            async with connect(url, erin) as session:
                saved = (await call(session, "save_memory", {"content": "Erin swims at dawn."}))["id"]
                listed = (await call(session, "list_memories"))["memories"]
                assert [(m["id"], m["user_id"]) for m in listed] == [(saved, "erin")]

        anyio.run(scenario)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            if process.stderr is not None:
                process.stderr.close()


def test_a_failure_the_caller_cannot_fix_is_a_generic_tool_error(
    memory: AgentMemory, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A storage failure's message (it may name the store's internals) and an unexpected
    exception's stay on the server: the tool error is generic, and the session goes on."""
    key = memory.admin.api_keys.create("frank", scope="write").key

    def storage_failure(self: ScopedMemory, request: object) -> object:
        raise StorageError("disk I/O error at /srv/secret/memory.db")

    def crash(self: ScopedMemory, request: object) -> object:
        raise RuntimeError("a bug with a secret in it")

    async def scenario() -> None:
        async with connect(url, key) as session:
            monkeypatch.setattr(ScopedMemory, "search", storage_failure)
            message = await refused(session, "search_memory", {"query": "anything"})
            assert "internal error" in message and "secret" not in message
            monkeypatch.setattr(ScopedMemory, "list_memories", crash)
            message = await refused(session, "list_memories")
            assert "secret" not in message and "RuntimeError" not in message
            # The session still serves.
            assert (await call(session, "save_memory", {"content": "Frank fixes bikes."}))["id"]

    anyio.run(scenario)


def test_a_key_bound_to_an_agent_keeps_to_that_agents_records(memory: AgentMemory, url: str) -> None:
    helper = memory.admin.api_keys.create("gina", agent_id="helper", scope="write").key
    other = memory.admin.api_keys.create("gina", agent_id="other", scope="write").key
    whole_user = memory.admin.api_keys.create("gina", scope="read").key

    async def scenario() -> None:
        async with connect(url, helper) as session:
            saved = (await call(session, "save_memory", {"content": "Gina's helper books the trains."}))["id"]
            assert (await call(session, "get_memory", {"memory_id": saved}))["memory"]["agent_id"] == "helper"
        async with connect(url, other) as session:
            assert "No memory record" in await refused(session, "get_memory", {"memory_id": saved})
            assert (await call(session, "list_memories"))["memories"] == []
        async with connect(url, whole_user) as session:
            assert [m["id"] for m in (await call(session, "list_memories"))["memories"]] == [saved]

    anyio.run(scenario)


def test_a_store_too_busy_to_verify_a_key_is_503_with_retry_after(
    memory: AgentMemory, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = memory.admin.api_keys.create("hana", scope="write").key

    def busy(self: object, key: object) -> object:
        raise StoreBusyError("the store stayed busy.")

    monkeypatch.setattr(ApiKeys, "verify", busy)
    headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {key}"}
    with httpx2.Client(timeout=30) as client:
        response = client.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=headers)
    assert response.status_code == 503
    assert response.headers["retry-after"] == "1"
    assert response.json() == {"error": {"type": "StoreBusyError", "message": "the store stayed busy."}}
    monkeypatch.undo()
    assert _status(url, key) == 200
