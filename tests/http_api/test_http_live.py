"""The HTTP API against a live uvicorn on 127.0.0.1 over an embedded file: bearer keys name the
caller, each user sees only its own memories, no or a bad key is 401, a read key cannot write."""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.request

import pytest

pytest.importorskip("fastapi")
uvicorn = pytest.importorskip("uvicorn")

from palimpsest.adapters.http import MAX_BODY_BYTES, status_for  # noqa: E402
from palimpsest.application import AgentMemory  # noqa: E402
from palimpsest.application.requests import ListRecords  # noqa: E402
from palimpsest.domain.errors import (  # noqa: E402
    AuthenticationError,
    DuplicateIdError,
    InvalidScopeError,
    PermissionDeniedError,
    RecordNotFoundError,
    StorageError,
    StoreBusyError,
)

from .live import Answer, call  # noqa: E402


def test_health_needs_no_key(base_url: str) -> None:
    answer = call(base_url, "GET", "/health")
    assert answer.status == 200 and answer.body == {"status": "ok"}


def test_each_key_sees_only_its_users_memories(memory: AgentMemory, base_url: str) -> None:
    alice = memory.admin.api_keys.create(user_id="alice", scope="write").key
    bob = memory.admin.api_keys.create(user_id="bob", scope="write").key

    added = call(base_url, "POST", "/v1/memories", alice, {"content": "Alice keeps bees on the roof."})
    assert added.status == 201
    alice_id = added.body["id"]
    bob_id = call(base_url, "POST", "/v1/memories", bob, {"content": "Bob keeps bees in the garden."}).body[
        "id"
    ]

    mine = call(base_url, "GET", f"/v1/memories/{alice_id}", alice)
    assert mine.status == 200 and mine.body["user_id"] == "alice" and mine.body["content"].startswith("Alice")
    theirs = call(base_url, "GET", f"/v1/memories/{bob_id}", alice)
    assert theirs.status == 404 and theirs.body["error"]["type"] == "RecordNotFoundError"

    found = call(base_url, "POST", "/v1/search", alice, {"query": "who keeps bees", "max_results": 10})
    assert found.status == 200
    ids = {r["id"] for r in found.body["results"]}
    assert alice_id in ids and bob_id not in ids
    assert {r["record"]["user_id"] for r in found.body["results"]} == {"alice"}

    # Naming another user in the body is refused, not obeyed.
    forged = call(base_url, "POST", "/v1/memories", alice, {"content": "planted", "user_id": "bob"})
    assert forged.status == 422
    forged_search = call(base_url, "POST", "/v1/search", alice, {"query": "bees", "user_id": "bob"})
    assert forged_search.status == 422

    # Bob cannot delete Alice's memory; Alice can, once.
    assert call(base_url, "DELETE", f"/v1/memories/{alice_id}", bob).status == 404
    assert call(base_url, "GET", f"/v1/memories/{alice_id}", alice).status == 200
    assert call(base_url, "DELETE", f"/v1/memories/{alice_id}", alice).status == 204
    assert call(base_url, "GET", f"/v1/memories/{alice_id}", alice).status == 404
    assert call(base_url, "DELETE", f"/v1/memories/{alice_id}", alice).status == 404
    assert call(base_url, "GET", f"/v1/memories/{bob_id}", bob).status == 200


@pytest.mark.parametrize("key", [None, "not-a-key", "pal_0123456789abcdef_" + "A" * 43])
def test_missing_or_bad_key_is_401(base_url: str, key: str | None) -> None:
    for method, path, body in (
        ("POST", "/v1/memories", {"content": "x"}),
        ("POST", "/v1/search", {"query": "x"}),
        ("GET", "/v1/memories/m1", None),
        ("DELETE", "/v1/memories/m1", None),
    ):
        answer = call(base_url, method, path, key, body)
        assert answer.status == 401, (method, path)
        assert answer.headers.get("www-authenticate", answer.headers.get("WWW-Authenticate")) == "Bearer"
        assert answer.body["error"]["type"] == "AuthenticationError"


def test_revoked_key_is_401(memory: AgentMemory, base_url: str) -> None:
    created = memory.admin.api_keys.create(user_id="alice", scope="write")
    assert call(base_url, "POST", "/v1/search", created.key, {"query": "x"}).status == 200
    memory.admin.api_keys.revoke(created.info.key_id)
    assert call(base_url, "POST", "/v1/search", created.key, {"query": "x"}).status == 401


def test_read_key_cannot_write(memory: AgentMemory, base_url: str) -> None:
    writer = memory.admin.api_keys.create(user_id="alice", scope="write").key
    reader = memory.admin.api_keys.create(user_id="alice", scope="read").key
    memory_id = call(base_url, "POST", "/v1/memories", writer, {"content": "The bees swarmed in May."}).body[
        "id"
    ]

    refused = call(base_url, "POST", "/v1/memories", reader, {"content": "nope"})
    assert refused.status == 403 and refused.body["error"]["type"] == "PermissionDeniedError"
    assert call(base_url, "DELETE", f"/v1/memories/{memory_id}", reader).status == 403
    assert call(base_url, "GET", f"/v1/memories/{memory_id}", reader).status == 200
    scoped = memory.acting_for(memory.admin.api_keys.verify(reader))
    assert [m.content for m in scoped.list_memories(ListRecords())] == ["The bees swarmed in May."]


def test_bad_bodies_are_422_with_the_error_shape(memory: AgentMemory, base_url: str) -> None:
    key = memory.admin.api_keys.create(user_id="alice", scope="write").key
    for body in (
        {},
        {"content": ""},
        {"content": "x", "unknown": 1},
        {"content": "x", "memory_type": "nope"},
    ):
        answer = call(base_url, "POST", "/v1/memories", key, body)
        assert answer.status == 422, body
        assert set(answer.body["error"]) == {"type", "message"}
    raw = urllib.request.Request(base_url + "/v1/memories", data=b"[1, 2", method="POST")
    raw.add_header("Authorization", f"Bearer {key}")
    raw.add_header("Content-Type", "application/json")
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(raw, timeout=30)
    with caught.value:
        assert caught.value.code == 422


def test_a_conflict_is_409(memory: AgentMemory, base_url: str) -> None:
    key = memory.admin.api_keys.create(user_id="alice", scope="write").key
    assert call(base_url, "POST", "/v1/memories", key, {"content": "one", "memory_id": "m-1"}).status == 201
    again = call(base_url, "POST", "/v1/memories", key, {"content": "two", "memory_id": "m-1"})
    assert again.status == 409 and again.body["error"]["type"] == "DuplicateIdError"
    assert call(base_url, "GET", "/v1/memories/m-1", key).body["content"] == "one"


def test_a_busy_store_is_503_with_retry_after(
    memory: AgentMemory, base_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = memory.admin.api_keys.create(user_id="alice", scope="write").key

    def busy(_self: object, _key: object) -> None:
        raise StoreBusyError("the store stayed locked")

    monkeypatch.setattr(type(memory.admin.api_keys), "verify", busy)  # reading the keys found the store busy
    answer = call(base_url, "POST", "/v1/search", key, {"query": "x"})
    assert answer.status == 503 and answer.body["error"] == {
        "type": "StoreBusyError",
        "message": "the store stayed locked",
    }
    assert {k.lower(): v for k, v in answer.headers.items()}["retry-after"] == "1"


def test_status_for_each_error_family() -> None:
    assert status_for(RecordNotFoundError("x")) == 404
    assert status_for(DuplicateIdError("x")) == 409
    assert status_for(InvalidScopeError("x")) == 422
    assert status_for(StoreBusyError("x")) == 503
    assert status_for(AuthenticationError("x")) == 401
    assert status_for(PermissionDeniedError("x")) == 403
    assert status_for(StorageError("x")) == 500


def test_a_body_over_the_limit_is_413_and_writes_nothing(memory: AgentMemory, base_url: str) -> None:
    key = memory.admin.api_keys.create(user_id="alice", scope="write").key
    answer = call(base_url, "POST", "/v1/memories", key, {"content": "x" * (MAX_BODY_BYTES + 1)})
    assert answer.status == 413 and answer.body["error"]["type"] == "RequestTooLarge"
    scoped = memory.acting_for(memory.admin.api_keys.verify(key))
    assert scoped.list_memories(ListRecords()) == []


def test_the_openapi_schema_documents_each_routes_error_statuses(base_url: str) -> None:
    schema = call(base_url, "GET", "/openapi.json").body
    paths = schema["paths"]
    documented = {
        (path, method): set(operation["responses"])
        for path, operations in paths.items()
        for method, operation in operations.items()
    }
    assert documented[("/v1/memories", "post")] >= {"201", "401", "403", "409", "413", "422", "503"}
    assert documented[("/v1/memories/{memory_id}", "get")] >= {"200", "401", "404", "422", "503"}
    assert documented[("/v1/memories/{memory_id}", "delete")] >= {"204", "401", "403", "404", "503"}
    assert documented[("/v1/search", "post")] >= {"200", "401", "403", "422", "503"}
    assert "HTTPBearer" in schema["components"]["securitySchemes"]
    assert schema["components"]["schemas"]["ErrorBody"]["required"] == ["error"]


def test_a_chunked_body_over_the_limit_is_413_and_writes_nothing(memory: AgentMemory, base_url: str) -> None:
    key = memory.admin.api_keys.create(user_id="alice", scope="write").key
    port = int(base_url.rsplit(":", 1)[1])
    payload = json.dumps({"content": "x" * (MAX_BODY_BYTES + 1)}).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        head = (
            "POST /v1/memories HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {key}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        )
        conn.sendall(head.encode())
        try:
            for start in range(0, len(payload), 65536):
                part = payload[start : start + 65536]
                conn.sendall(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            conn.sendall(b"0\r\n\r\n")
        except OSError:  # the server may answer and close before the whole body is sent
            pass
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    scoped = memory.acting_for(memory.admin.api_keys.verify(key))
    assert scoped.list_memories(ListRecords()) == []


def test_a_chunked_body_within_the_limit_is_read_whole(memory: AgentMemory, base_url: str) -> None:
    key = memory.admin.api_keys.create(user_id="alice", scope="write").key
    port = int(base_url.rsplit(":", 1)[1])
    payload = json.dumps({"content": "chunked " * 20000}).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        head = (
            "POST /v1/memories HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {key}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        )
        conn.sendall(head.encode())
        for start in range(0, len(payload), 4096):
            part = payload[start : start + 4096]
            conn.sendall(f"{len(part):x}\r\n".encode() + part + b"\r\n")
        conn.sendall(b"0\r\n\r\n")
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 201"), answer[:200]
    scoped = memory.acting_for(memory.admin.api_keys.verify(key))
    assert [m.content for m in scoped.list_memories(ListRecords())] == ["chunked " * 20000]


def test_concurrent_requests_of_two_users_each_keep_their_own(memory: AgentMemory, base_url: str) -> None:
    keys = {user: memory.admin.api_keys.create(user_id=user, scope="write").key for user in ("alice", "bob")}
    answers: list[tuple[str, Answer]] = []
    lock = threading.Lock()

    def work(user: str, n: int) -> None:
        for i in range(n):
            added = call(base_url, "POST", "/v1/memories", keys[user], {"content": f"{user} note {i}"})
            found = call(base_url, "POST", "/v1/search", keys[user], {"query": "note"})
            with lock:
                answers.extend([(user, added), (user, found)])

    threads = [threading.Thread(target=work, args=(user, 10)) for user in ("alice", "bob") for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(answers) == 2 * 8 * 10
    assert all(a.status in (200, 201) for _, a in answers), [a.body for _, a in answers if a.status >= 300][
        :3
    ]
    for user, answer in answers:
        if "results" in answer.body:
            assert {r["record"]["user_id"] for r in answer.body["results"]} <= {user}
    for user, key in keys.items():
        scoped = memory.acting_for(memory.admin.api_keys.verify(key))
        assert sorted(m.content for m in scoped.list_memories(ListRecords())) == sorted(
            f"{user} note {i}" for i in range(10) for _ in range(4)
        )


def test_an_unexpected_failure_is_500_in_the_error_shape_without_its_details(
    memory: AgentMemory, base_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = memory.admin.api_keys.create(user_id="alice", scope="write").key

    def broken(_self: object, _key: object) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(type(memory.admin.api_keys), "verify", broken)
    answer = call(base_url, "POST", "/v1/search", key, {"query": "x"})
    assert answer.status == 500
    assert answer.body == {"error": {"type": "InternalError", "message": "internal error"}}


def test_a_search_through_links_answers_the_linked_results_with_a_null_distance(
    memory: AgentMemory, base_url: str
) -> None:
    key = memory.admin.api_keys.create(user_id="alice", scope="write").key
    bees = call(base_url, "POST", "/v1/memories", key, {"content": "Alice keeps bees on the roof."}).body[
        "id"
    ]
    honey = call(base_url, "POST", "/v1/memories", key, {"content": "Unrelated words entirely here."}).body[
        "id"
    ]
    linked = call(
        base_url,
        "POST",
        "/v1/links",
        key,
        {
            "source_record_id": bees,
            "source_record_type": "memory",
            "target_record_id": honey,
            "target_record_type": "memory",
            "relation_type": "supports",
        },
    )
    assert linked.status == 201
    found = call(
        base_url, "POST", "/v1/search", key, {"query": "bees on the roof", "max_results": 1, "num_hops": 1}
    )
    assert found.status == 200, found.body
    [top] = found.body["results"]
    assert top["id"] == bees and isinstance(top["distance"], float)
    [hop] = top["linked"]
    assert hop["link"]["id"] == linked.body["id"] and hop["result"]["id"] == honey
    assert hop["result"]["distance"] is None  # reached through the link, not scored


@pytest.mark.parametrize("raw", [b"dl|\xff(", b"\xc3\x28", b"{\"content\": \"x\"", b"\"just a string\""])
def test_a_body_that_is_not_a_json_object_is_422_in_the_error_shape(
    memory: AgentMemory, base_url: str, raw: bytes
) -> None:
    """What the schema fuzzing found: bytes that are not UTF-8 JSON answered 400 ``{"detail"}``,
    a status no route documented, in a shape no other error has."""
    key = memory.admin.api_keys.create(user_id="alice", scope="write").key
    for path in ("/v1/memories", "/v1/search"):
        request = urllib.request.Request(base_url + path, data=raw, method="POST")
        request.add_header("Authorization", f"Bearer {key}")
        request.add_header("Content-Type", "application/json")
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=30)
        with caught.value as answer:
            assert answer.code == 422, (path, raw)
            assert set(json.loads(answer.read())["error"]) == {"type", "message"}
