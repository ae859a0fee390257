"""The MCP server over stdio: ``palimpsest --store FILE serve mcp --user U`` in a subprocess (the
console script, an embedded store file), driven by the SDK's stdio client through every tool;
the user is the server's configuration, never the model's; the command's options are checked."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.cli import app
from palimpsest.application import MemoryExtractionConfig
from typer.testing import CliRunner

from .matrix import call, console_script, drive_tool_matrix, environment, refused


@pytest.fixture
def store(tmp_path: Path) -> tuple[str, str]:
    """A store file with one of Bob's memories; returns its path and that memory's id."""
    path = tmp_path / "memory.db"
    with open_memory(
        path, embedder=HashingEmbedder(), memory_extraction_config=MemoryExtractionConfig(extract_memories=False)
    ) as memory:
        bobs = memory.add_memory("Bob keeps bees on the roof.", user_id="bob")
    return str(path), bobs


def _server(store: str, *options: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=console_script(), args=["--store", store, "serve", "mcp", *options], env=environment()
    )


def test_the_whole_tool_matrix_over_stdio_for_the_configured_user(store: tuple[str, str], tmp_path: Path) -> None:
    path, bobs = store

    async def scenario() -> None:
        with (tmp_path / "server.err").open("w") as errors, anyio.fail_after(60):
            async with (
                stdio_client(_server(path, "--user", "alice"), errlog=errors) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                await drive_tool_matrix(session, "alice")
                # Bob's memory is not Alice's, whatever the model passes.
                assert "No memory record" in await refused(session, "get_memory", {"memory_id": bobs})
                assert "No memory record" in await refused(session, "forget_memory", {"memory_id": bobs})
                found = (await call(session, "search_memory", {"query": "bees on the roof"}))["results"]
                assert bobs not in {r["id"] for r in found}

    anyio.run(scenario)
    with open_memory(path, embedder=HashingEmbedder()) as memory:
        assert [m.id for m in memory.list_memories(user_id="bob")] == [bobs]
        assert {m.user_id for m in memory.list_memories(user_id="alice")} == {"alice"}


def test_a_read_only_stdio_server_cannot_write(store: tuple[str, str], tmp_path: Path) -> None:
    path, bobs = store

    async def scenario() -> None:
        with (tmp_path / "server.err").open("w") as errors, anyio.fail_after(60):
            async with (
                stdio_client(_server(path, "--user", "bob", "--scope", "read"), errlog=errors) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                assert (await call(session, "get_memory", {"memory_id": bobs}))["memory"]["user_id"] == "bob"
                assert "needs the 'write' scope" in await refused(session, "forget_memory", {"memory_id": bobs})

    anyio.run(scenario)
    with open_memory(path, embedder=HashingEmbedder()) as memory:
        assert [m.id for m in memory.list_memories(user_id="bob")] == [bobs]


@pytest.mark.parametrize(
    "options",
    [
        ["--transport", "http", "--user", "alice"],
        ["--transport", "http", "--agent", "a1"],
        ["--transport", "http", "--scope", "read"],
        [],  # stdio needs its user
    ],
)
def test_serve_mcp_refuses_a_user_over_http_and_needs_one_over_stdio(
    store: tuple[str, str], options: list[str]
) -> None:
    result = CliRunner().invoke(app, ["--store", store[0], "serve", "mcp", *options])
    assert result.exit_code == 2, result.output
    assert ("--user" in result.output) or ("--transport" in result.output)


def test_serve_mcp_without_the_server_extra_is_a_one_line_error(
    store: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [m for m in sys.modules if m.startswith("palimpsest.adapters.mcp")]:
        monkeypatch.delitem(sys.modules, name)
    for name in ["mcp", *(m for m in sys.modules if m.startswith("mcp."))]:
        monkeypatch.setitem(sys.modules, name, None)  # importing it fails, as when it is not installed
    result = CliRunner().invoke(app, ["--store", store[0], "serve", "mcp", "--user", "alice"])
    assert result.exit_code == 1
    assert result.output == (
        "error: the MCP server needs the 'server' extra: pip install 'palimpsest-memory[server]'.\n"
    )


def test_messages_added_over_stdio_are_extracted_by_a_worker_for_the_configured_user(
    store: tuple[str, str], tmp_path: Path
) -> None:
    """The server records each append's extraction job (its client is a server's, not the
    command line's passive one, which recorded none), and ``palimpsest worker`` beside it
    extracts the memories, as the configured user's."""
    import subprocess

    path, bobs = store

    async def scenario() -> None:
        with (tmp_path / "server.err").open("w") as errors, anyio.fail_after(60):
            async with (
                stdio_client(_server(path, "--user", "alice"), errlog=errors) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                thread = (await call(session, "create_thread", {}))["thread"]["id"]
                message = {"role": "user", "content": "I need vegetarian dinner recommendations for Friday."}
                await call(session, "add_messages", {"thread_id": thread, "messages": [message]})

    anyio.run(scenario)
    worker = subprocess.run(
        [console_script(), "--store", path, "worker", "--drain", "--poll", "0.05"],
        capture_output=True, text=True, timeout=60, env=environment(),
    )
    assert worker.returncode == 0, worker.stderr
    assert "1 job(s) done, 0 failed" in worker.stderr
    with open_memory(path, embedder=HashingEmbedder()) as memory:
        extracted = memory.list_memories(user_id="alice")
        assert any("vegetarian" in m.content for m in extracted)
        assert [m.id for m in memory.list_memories(user_id="bob")] == [bobs]
