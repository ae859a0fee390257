"""Isolation over every route: two users' keys and an agent's key each see and change only
their own records; another's id is 404 exactly as an absent one; a read key gets 403 on every
write route; an admin key adds nothing on the data routes."""

from __future__ import annotations

import io
from typing import Any

from palimpsest.application import AgentMemory

from .live import call

# (method, path, body, writes): every data route, naming the ids the fixture data gives.
ROUTES: list[tuple[str, str, Any, bool]] = [
    ("GET", "/v1/memories/{memory}", None, False),
    ("GET", "/v1/memories/{memory}/history", None, False),
    ("PATCH", "/v1/memories/{memory}", {"content": "changed"}, True),
    ("DELETE", "/v1/memories/{memory}", None, True),
    ("GET", "/v1/threads/{thread}", None, False),
    ("GET", "/v1/threads/{thread}/messages", None, False),
    ("POST", "/v1/threads/{thread}/messages", {"messages": [{"role": "user", "content": "planted"}]}, True),
    ("POST", "/v1/threads/{thread}/card", {}, False),
    ("GET", "/v1/threads/{thread}/summary", None, False),
    ("DELETE", "/v1/threads/{thread}", None, True),
    ("PATCH", "/v1/links/{link}", {"relation_type": "changed"}, True),
    ("DELETE", "/v1/links/{link}", None, True),
    (
        "POST",
        "/v1/links",
        {
            "source_record_id": "{memory}",
            "source_record_type": "memory",
            "target_record_id": "{other}",
            "target_record_type": "memory",
            "relation_type": "planted",
        },
        True,
    ),
    ("POST", "/v1/memories", {"content": "planted", "thread_id": "{thread}"}, True),
]
WRITES_WITHOUT_IDS: list[tuple[str, str, Any]] = [
    ("POST", "/v1/memories", {"content": "new"}),
    ("POST", "/v1/threads", {}),
]


def _fill(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        return value.format(**ids)
    if isinstance(value, dict):
        return {k: _fill(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, ids) for v in value]
    return value


def _seed(base: str, key: str, tag: str) -> dict[str, str]:
    """A thread with a message, two memories and a link between them, for ``key``'s caller."""
    thread = call(base, "POST", "/v1/threads", key, {"thread_id": f"t-{tag}"}).body["id"]
    call(
        base,
        "POST",
        f"/v1/threads/{thread}/messages",
        key,
        {"messages": [{"role": "user", "content": f"{tag} says hi"}]},
    )
    first = call(
        base, "POST", "/v1/memories", key, {"content": f"{tag} keeps bees", "memory_id": f"m-{tag}"}
    ).body["id"]
    other = call(
        base, "POST", "/v1/memories", key, {"content": f"{tag} sells honey", "memory_id": f"o-{tag}"}
    ).body["id"]
    link = call(
        base,
        "POST",
        "/v1/links",
        key,
        {
            "source_record_id": first,
            "source_record_type": "memory",
            "target_record_id": other,
            "target_record_type": "memory",
            "relation_type": "relates_to",
            "relation_id": f"l-{tag}",
        },
    )
    assert link.status == 201, link.body
    return {"thread": thread, "memory": first, "other": other, "link": link.body["id"]}


def _state(memory: AgentMemory) -> list[str]:
    """Everything stored (threads, messages, memories, links), as the export writes it."""
    out = io.StringIO()
    memory.admin.export(out)
    return sorted(out.getvalue().splitlines())


def test_another_users_ids_are_not_found_on_every_route_and_nothing_changes(
    memory: AgentMemory, base_url: str
) -> None:
    alice = memory.admin.api_keys.create(user_id="alice", scope="write").key
    bob = memory.admin.api_keys.create(user_id="bob", scope="write").key
    ids = _seed(base_url, alice, "one")
    _seed(base_url, bob, "two")
    before = _state(memory)
    for method, path, body, _ in ROUTES:
        answer = call(base_url, method, _fill(path, ids), bob, _fill(body, ids))
        assert answer.status == 404, (method, path, answer.status, answer.body)
        assert "alice" not in answer.body["error"]["message"]
    assert _state(memory) == before

    for key, user in ((alice, "alice"), (bob, "bob")):
        listed = {
            "memories": call(base_url, "GET", "/v1/memories", key).body["items"],
            "threads": call(base_url, "GET", "/v1/threads", key).body["items"],
            "found": [
                r["record"]
                for r in call(base_url, "POST", "/v1/search", key, {"query": "bees honey"}).body["results"]
            ],
        }
        for what, items in listed.items():
            assert items and {i["user_id"] for i in items} == {user}, what


def test_an_agents_key_sees_and_changes_that_agents_records_only(memory: AgentMemory, base_url: str) -> None:
    alice = memory.admin.api_keys.create(user_id="alice", scope="write").key
    agent = memory.admin.api_keys.create(user_id="alice", agent_id="helper", scope="write").key
    users = _seed(base_url, alice, "one")  # the user's own records, of no agent
    mine = _seed(base_url, agent, "helper")
    assert call(base_url, "GET", f"/v1/memories/{mine['memory']}", agent).body["agent_id"] == "helper"
    assert call(base_url, "GET", f"/v1/threads/{mine['thread']}", agent).body["agent_id"] == "helper"

    before = _state(memory)
    for method, path, body, _ in ROUTES:
        answer = call(base_url, method, _fill(path, users), agent, _fill(body, users))
        assert answer.status == 404, (method, path, answer.status, answer.body)
    assert _state(memory) == before
    assert {m["id"] for m in call(base_url, "GET", "/v1/memories", agent).body["items"]} == {
        "m-helper",
        "o-helper",
    }
    assert [t["id"] for t in call(base_url, "GET", "/v1/threads", agent).body["items"]] == ["t-helper"]
    assert call(base_url, "GET", "/v1/memories", agent, query={"agent_id": "other"}).status == 422
    assert call(base_url, "POST", "/v1/memories", agent, {"content": "x", "agent_id": "other"}).status == 422
    # The user's key (no agent) sees every agent's records of the user.
    assert call(base_url, "GET", f"/v1/memories/{mine['memory']}", alice).status == 200


def test_a_read_key_gets_403_on_every_write_route_and_reads_its_own(
    memory: AgentMemory, base_url: str
) -> None:
    writer = memory.admin.api_keys.create(user_id="alice", scope="write").key
    reader = memory.admin.api_keys.create(user_id="alice", scope="read").key
    ids = _seed(base_url, writer, "one")
    before = _state(memory)
    for method, path, body, writes in ROUTES:
        answer = call(base_url, method, _fill(path, ids), reader, _fill(body, ids))
        if writes:
            assert answer.status == 403, (method, path, answer.status, answer.body)
            assert answer.body["error"]["type"] == "PermissionDeniedError"
        else:
            assert answer.status == 200, (method, path, answer.status, answer.body)
    for method, path, body in WRITES_WITHOUT_IDS:
        assert call(base_url, method, path, reader, body).status == 403
    assert _state(memory) == before


def test_an_admin_key_adds_nothing_on_the_data_routes(memory: AgentMemory, base_url: str) -> None:
    admin = memory.admin.api_keys.create(user_id="root", scope="admin").key
    alice = memory.admin.api_keys.create(user_id="alice", scope="write").key
    ids = _seed(base_url, alice, "one")
    for method, path, body, _ in ROUTES:
        assert call(base_url, method, _fill(path, ids), admin, _fill(body, ids)).status == 404, (method, path)
    assert call(base_url, "GET", "/v1/memories", admin).body["items"] == []
    assert call(base_url, "POST", "/v1/memories", admin, {"content": "root's own"}).status == 201
