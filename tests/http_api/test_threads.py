"""The thread routes against a live server: create, append, read in pages, card, summary,
delete; another user's thread is not found on every route."""

from __future__ import annotations

from palimpsest.application import AgentMemory

from .live import call


def test_a_thread_end_to_end(memory: AgentMemory, base_url: str) -> None:
    key = memory.admin.api_keys.create(user_id="alice", scope="write").key
    created = call(base_url, "POST", "/v1/threads", key, {"thread_id": "t-1", "metadata": {"topic": "bees"}})
    assert created.status == 201
    assert (
        created.body["kind"] == "thread"
        and created.body["id"] == "t-1"
        and created.body["user_id"] == "alice"
    )

    appended = call(
        base_url,
        "POST",
        "/v1/threads/t-1/messages",
        key,
        {
            "messages": [
                {"role": "user", "content": "The hive swarmed on Monday."},
                {"role": "assistant", "content": "Noted."},
            ]
        },
    )
    assert appended.status == 201 and len(appended.body["ids"]) == 2

    messages = call(base_url, "GET", "/v1/threads/t-1/messages", key)
    assert messages.status == 200
    assert [m["content"] for m in messages.body["items"]] == ["The hive swarmed on Monday.", "Noted."]
    assert [m["id"] for m in messages.body["items"]] == appended.body["ids"]
    assert messages.body["next_cursor"] is None

    card = call(base_url, "POST", "/v1/threads/t-1/card", key, {"max_recent_messages": 2})
    assert card.status == 200
    assert [m["content"] for m in card.body["recent_messages"]] == ["The hive swarmed on Monday.", "Noted."]
    assert "The hive swarmed on Monday." in card.body["content"]
    assert call(base_url, "POST", "/v1/threads/t-1/card", key).status == 200  # no body: the defaults

    summary = call(base_url, "GET", "/v1/threads/t-1/summary", key)
    assert summary.status == 200 and set(summary.body) == {"content", "topics"}

    got = call(base_url, "GET", "/v1/threads/t-1", key)
    assert got.status == 200 and got.body["metadata"] == {"topic": "bees"}
    listed = call(base_url, "GET", "/v1/threads", key)
    assert [t["id"] for t in listed.body["items"]] == ["t-1"]

    assert call(base_url, "DELETE", "/v1/threads/t-1", key).status == 204
    assert call(base_url, "GET", "/v1/threads/t-1", key).status == 404
    assert call(base_url, "GET", "/v1/threads/t-1/messages", key).status == 404


def test_another_users_thread_is_not_found_on_every_route(memory: AgentMemory, base_url: str) -> None:
    alice = memory.admin.api_keys.create(user_id="alice", scope="write").key
    bob = memory.admin.api_keys.create(user_id="bob", scope="write").key
    assert call(base_url, "POST", "/v1/threads", alice, {"thread_id": "t-a"}).status == 201
    call(
        base_url,
        "POST",
        "/v1/threads/t-a/messages",
        alice,
        {"messages": [{"role": "user", "content": "secret"}]},
    )

    for method, path, body in (
        ("GET", "/v1/threads/t-a", None),
        ("GET", "/v1/threads/t-a/messages", None),
        ("POST", "/v1/threads/t-a/messages", {"messages": [{"role": "user", "content": "planted"}]}),
        ("POST", "/v1/threads/t-a/card", {}),
        ("GET", "/v1/threads/t-a/summary", None),
        ("DELETE", "/v1/threads/t-a", None),
    ):
        answer = call(base_url, method, path, bob, body)
        assert answer.status == 404, (method, path)
        assert answer.body["error"]["type"] == "ThreadNotFoundError"
    assert call(base_url, "GET", "/v1/threads", bob).body["items"] == []
    # Bob's taking the same id is a conflict that names no owner; Alice's thread is unchanged.
    taken = call(base_url, "POST", "/v1/threads", bob, {"thread_id": "t-a"})
    assert taken.status == 409 and "alice" not in taken.body["error"]["message"]
    mine = call(base_url, "GET", "/v1/threads/t-a/messages", alice)
    assert [m["content"] for m in mine.body["items"]] == ["secret"]
    # Naming another user in the body is refused.
    assert call(base_url, "POST", "/v1/threads", alice, {"user_id": "bob"}).status == 422


def test_thread_settings_the_server_cannot_take_are_422_not_500(memory: AgentMemory, base_url: str) -> None:
    """What the schema fuzzing found: settings in the body were a ConfigurationError (500), and
    the deprecated extraction keywords warned in the request handler."""
    key = memory.admin.api_keys.create(user_id="alice", scope="write").key
    for body in (
        {"memory_extraction_frequency": -1.1754943508222875e-38},
        {"enable_context_summary": False},
        {"search_config": {"type": "nope"}},
        {"memory_extraction_config": {"extract_memories": True}},  # this server has no extractor
        {"llm": "gpt"},
    ):
        answer = call(base_url, "POST", "/v1/threads", key, body)
        assert answer.status == 422, (body, answer.body)
    assert call(base_url, "GET", "/v1/threads", key).body["items"] == []
