"""What the MCP tests share: the console script, calling a tool through an SDK ``ClientSession``
and the whole tool matrix, driven as one user would (over stdio or streamable HTTP alike)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from mcp.types import CallToolResult, TextResourceContents


def console_script() -> str:
    """The installed ``palimpsest`` console script."""
    beside_python = Path(sys.executable).with_name("palimpsest")
    found = str(beside_python) if beside_python.exists() else shutil.which("palimpsest")
    if found is None:
        pytest.fail("the palimpsest console script is not installed; install the project with pip install -e .")
    return found


def environment() -> dict[str, str]:
    """This process's environment without any store, database or model settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("PALIMPSEST_", "ORACLE_", "OPENAI_"))}


async def call(session: ClientSession, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    """A tool's structured answer; a tool error fails the test with its message."""
    result = await session.call_tool(name, arguments or {})
    assert isinstance(result, CallToolResult)
    text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
    assert not result.is_error, f"{name} failed: {text}"
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def refused(session: ClientSession, name: str, arguments: dict[str, Any] | None = None) -> str:
    """A tool call that must fail: its error message (the tool error, not a protocol error)."""
    result = await session.call_tool(name, arguments or {})
    assert isinstance(result, CallToolResult)
    assert result.is_error, f"{name} should have failed: {result.structured_content}"
    text: str = result.content[0].text  # type: ignore[union-attr]
    assert "Traceback" not in text
    return text


async def read_text(session: ClientSession, uri: str) -> str:
    read = await session.read_resource(uri)
    [contents] = read.contents  # type: ignore[union-attr]
    assert isinstance(contents, TextResourceContents)
    return contents.text


async def drive_tool_matrix(session: ClientSession, user: str) -> dict[str, str]:
    """Every tool and both resources, as ``user``'s client: each answer is checked against the
    store's state as the next tool reads it. Returns the ids made (memories, thread, link)."""
    names = {tool.name for tool in (await session.list_tools()).tools}
    assert names == {
        "search_memory", "save_memory", "get_memory", "update_memory", "forget_memory", "list_memories",
        "memory_history", "create_thread", "list_threads", "add_messages", "context_card",
        "link_memories", "update_link", "unlink_memories",
    }  # fmt: skip
    templates = {t.uri_template for t in (await session.list_resource_templates()).resource_templates}
    assert templates == {"palimpsest://threads/{thread_id}/card", "palimpsest://threads/{thread_id}/summary"}

    thread = (await call(session, "create_thread", {"metadata": {"topic": "garden"}}))["thread"]
    assert thread["user_id"] == user and thread["metadata"] == {"topic": "garden"}
    listed_threads = (await call(session, "list_threads"))["threads"]
    assert [t["id"] for t in listed_threads] == [thread["id"]]

    added = await call(
        session,
        "add_messages",
        {
            "thread_id": thread["id"],
            "messages": [
                {"role": "user", "content": f"I am {user} and I grow tomatoes on the balcony."},
                {"role": "assistant", "content": "Noted: tomatoes on the balcony."},
            ],
        },
    )
    assert len(added["ids"]) == 2

    bees = (await call(session, "save_memory", {"content": f"{user} keeps bees on the roof.", "memory_type": "fact"}))["id"]
    # An object sent as JSON text (as some desktop clients do) is read as the object.
    honey = (
        await call(
            session,
            "save_memory",
            {"content": f"{user} sells honey on Saturdays.", "metadata": json.dumps({"source": "chat"})},
        )
    )["id"]
    got = (await call(session, "get_memory", {"memory_id": honey}))["memory"]
    assert got["user_id"] == user and got["metadata"] == {"source": "chat"} and got["memory_type"] == "memory"

    found = (await call(session, "search_memory", {"query": "who keeps bees", "max_results": 5}))["results"]
    assert bees in [r["id"] for r in found]
    assert {r["record"]["user_id"] for r in found} == {user}

    updated = await call(session, "update_memory", {"memory_id": bees, "content": f"{user} keeps two hives of bees."})
    assert updated == {"id": bees}
    assert (await call(session, "get_memory", {"memory_id": bees}))["memory"]["content"] == f"{user} keeps two hives of bees."

    memories = (await call(session, "list_memories"))["memories"]
    assert {m["id"] for m in memories} == {bees, honey}

    link = (
        await call(
            session,
            "link_memories",
            {
                "source_record_id": honey,
                "source_record_type": "memory",
                "target_record_id": bees,
                "target_record_type": "fact",
                "relation_type": "comes_from",
            },
        )
    )["id"]
    history = await call(session, "memory_history", {"memory_id": bees})
    assert history["memory"]["id"] == bees
    assert [lk["id"] for lk in history["links"]] == [link]
    assert list(history["related"]) == [honey]
    assert (await call(session, "update_link", {"relation_id": link, "relation_type": "produced_by"}))["updated"] == 1
    history = await call(session, "memory_history", {"memory_id": bees})
    assert history["links"][0]["relation_type"] == "produced_by"

    card = await call(session, "context_card", {"thread_id": thread["id"], "max_recent_messages": 2})
    assert card["thread_id"] == thread["id"] and card["card"].startswith("<context_card>")
    assert "tomatoes" in card["card"]
    assert "tomatoes" in await read_text(session, f"palimpsest://threads/{thread['id']}/card")
    summary = json.loads(await read_text(session, f"palimpsest://threads/{thread['id']}/summary"))
    assert set(summary) == {"summary", "topics"} and "tomatoes" in summary["summary"]

    assert (await call(session, "unlink_memories", {"relation_id": link}))["deleted"] == 1
    assert (await call(session, "memory_history", {"memory_id": bees}))["links"] == []
    assert (await call(session, "forget_memory", {"memory_id": honey})) == {"deleted": honey}
    gone = await refused(session, "get_memory", {"memory_id": honey})
    assert "No memory record" in gone, gone
    assert {m["id"] for m in (await call(session, "list_memories"))["memories"]} == {bees}

    # JSON text is parsed only where the schema takes no string: a memory's content stays text.
    listed = (await call(session, "save_memory", {"content": '["a list", "as text"]'}))["id"]
    assert (await call(session, "get_memory", {"memory_id": listed}))["memory"]["content"] == '["a list", "as text"]'
    await call(session, "forget_memory", {"memory_id": listed})

    # Errors are tool errors with the library's message, never a crash of the session.
    assert "memory content must be a non-empty string" in await refused(session, "save_memory", {"content": "  "})
    assert "does not take: colour" in await refused(session, "save_memory", {"content": "x", "colour": "red"})
    assert "No thread found" in await refused(session, "add_messages", {"thread_id": "no-such", "messages": []})
    # Identity is never an argument: naming a user, even one's own, is refused.
    for forged in ({"user_id": user}, {"agent_id": "a"}):
        message = await refused(session, "save_memory", {"content": "planted", **forged})
        assert "not a tool argument" in message
    assert "not a tool argument" in await refused(session, "search_memory", {"query": "bees", "user_id": "someone"})
    assert {m["id"] for m in (await call(session, "list_memories"))["memories"]} == {bees}
    return {"memory": bees, "thread": thread["id"], "message": added["ids"][0]}
