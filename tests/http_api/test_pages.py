"""Cursor pages of the listings over HTTP: each item once, in order, while items are added
between two pages; a bad limit or a cursor the listing did not give is 422."""

from __future__ import annotations

import base64
import threading
from typing import Any

import pytest
from palimpsest.application import AgentMemory
from palimpsest.application.paging import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from palimpsest.application.requests import AddMemory

from .live import call


def _pages(
    base: str, key: str, path: str, limit: int, between: Any = None, **query: Any
) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    first = True
    while True:
        answer = call(base, "GET", path, key, query={**query, "limit": limit, "cursor": cursor})
        assert answer.status == 200, answer.body
        assert set(answer.body) == {"items", "next_cursor"}
        assert len(answer.body["items"]) <= limit
        items.extend(answer.body["items"])
        if first and between is not None:
            between()
        first = False
        cursor = answer.body["next_cursor"]
        if cursor is None:
            return items


def test_memory_pages_hold_each_memory_once_while_more_are_added(memory: AgentMemory, base_url: str) -> None:
    alice = memory.admin.api_keys.create(user_id="alice", scope="write").key
    bob = memory.admin.api_keys.create(user_id="bob", scope="write").key
    ids = [
        call(base_url, "POST", "/v1/memories", alice, {"content": f"note {i}"}).body["id"] for i in range(7)
    ]
    call(base_url, "POST", "/v1/memories", bob, {"content": "bob's"})

    def add_more() -> None:
        for i in range(3):
            ids.append(call(base_url, "POST", "/v1/memories", alice, {"content": f"late {i}"}).body["id"])
        call(base_url, "POST", "/v1/memories", bob, {"content": "bob's late"})

    seen = _pages(base_url, alice, "/v1/memories", 3, add_more)
    assert [m["id"] for m in seen] == ids
    assert {m["user_id"] for m in seen} == {"alice"} and all(m["kind"] == "memory" for m in seen)


def test_memory_pages_keep_to_the_filters(memory: AgentMemory, base_url: str) -> None:
    key = memory.admin.api_keys.create(user_id="alice", scope="write").key
    call(base_url, "POST", "/v1/threads", key, {"thread_id": "t-1"})
    inside = [
        call(
            base_url,
            "POST",
            "/v1/memories",
            key,
            {"content": f"in {i}", "thread_id": "t-1", "metadata": {"n": i}},
        ).body["id"]
        for i in range(3)
    ]
    call(base_url, "POST", "/v1/memories", key, {"content": "outside"})
    assert [m["id"] for m in _pages(base_url, key, "/v1/memories", 2, thread_id="t-1")] == inside
    only = _pages(base_url, key, "/v1/memories", 2, metadata_filter='{"n": 1}')
    assert [m["id"] for m in only] == [inside[1]]
    assert call(base_url, "GET", "/v1/memories", key, query={"user_id": "bob"}).status == 422
    assert call(base_url, "GET", "/v1/memories", key, query={"metadata_filter": "{nope"}).status == 422


def test_thread_and_message_pages_hold_each_item_once_while_more_are_added(
    memory: AgentMemory, base_url: str
) -> None:
    key = memory.admin.api_keys.create(user_id="alice", scope="write").key
    threads = [call(base_url, "POST", "/v1/threads", key, {}).body["id"] for _ in range(5)]
    seen = _pages(
        base_url,
        key,
        "/v1/threads",
        2,
        lambda: threads.append(call(base_url, "POST", "/v1/threads", key, {}).body["id"]),
    )
    assert [t["id"] for t in seen] == threads

    path = f"/v1/threads/{threads[0]}/messages"
    ids = call(
        base_url, "POST", path, key, {"messages": [{"role": "user", "content": f"m{i}"} for i in range(5)]}
    ).body["ids"]

    def append() -> None:
        ids.extend(
            call(base_url, "POST", path, key, {"messages": [{"role": "user", "content": "late"}]}).body["ids"]
        )

    seen = _pages(base_url, key, path, 2, append)
    assert [m["id"] for m in seen] == ids and len(ids) == 6
    assert [m["seq"] for m in seen] == sorted(m["seq"] for m in seen)


def test_the_default_page_size(memory: AgentMemory, base_url: str) -> None:
    key = memory.admin.api_keys.create(user_id="alice", scope="write").key
    scoped = memory.acting_for(memory.admin.api_keys.verify(key))
    for i in range(DEFAULT_PAGE_SIZE + 1):
        scoped.add_memory(AddMemory(content=f"n{i}"))
    first = call(base_url, "GET", "/v1/memories", key)
    assert len(first.body["items"]) == DEFAULT_PAGE_SIZE and first.body["next_cursor"] is not None
    rest = call(base_url, "GET", "/v1/memories", key, query={"cursor": first.body["next_cursor"]})
    assert len(rest.body["items"]) == 1 and rest.body["next_cursor"] is None


@pytest.mark.parametrize("path", ["/v1/memories", "/v1/threads", "/v1/threads/t-1/messages"])
def test_a_bad_limit_or_cursor_is_422(memory: AgentMemory, base_url: str, path: str) -> None:
    key = memory.admin.api_keys.create(user_id="alice", scope="write").key
    call(base_url, "POST", "/v1/threads", key, {"thread_id": "t-1"})
    forged = base64.urlsafe_b64encode(b'["memories", 1]').decode().rstrip("=")
    for query in (
        {"limit": 0},
        {"limit": MAX_PAGE_SIZE + 1},
        {"limit": "ten"},
        {"cursor": "not-a-cursor"},
        {"cursor": forged},
        {"cursor": ""},
    ):
        answer = call(base_url, "GET", path, key, query=query)
        assert answer.status == 422, (path, query, answer.body)
        assert set(answer.body["error"]) == {"type", "message"}


def test_a_walk_under_a_concurrent_writer_sees_each_memory_once_and_every_earlier_one(
    memory: AgentMemory, base_url: str
) -> None:
    key = memory.admin.api_keys.create(user_id="alice", scope="write").key
    before = [
        call(base_url, "POST", "/v1/memories", key, {"content": f"before {i}"}).body["id"] for i in range(20)
    ]
    written: list[str] = []
    stop = threading.Event()

    def writer() -> None:
        while not stop.is_set() and len(written) < 200:
            written.append(call(base_url, "POST", "/v1/memories", key, {"content": "during"}).body["id"])

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        seen = [m["id"] for m in _pages(base_url, key, "/v1/memories", 3)]
    finally:
        stop.set()
        thread.join(timeout=60)
    assert len(seen) == len(set(seen))  # nothing repeated
    assert seen[: len(before)] == before  # nothing there at the start skipped, in order
    assert set(seen[len(before) :]) <= set(written)
    assert seen[len(before) :] == [i for i in written if i in set(seen)]  # the new ones in their order
