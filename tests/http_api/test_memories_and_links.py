"""The memory and link routes end to end: update, history, link, retype, unlink."""

from __future__ import annotations

from palimpsest.application import AgentMemory

from .live import call


def test_update_history_link_retype_and_unlink(memory: AgentMemory, base_url: str) -> None:
    key = memory.admin.api_keys.create(user_id="alice", scope="write").key
    old = call(base_url, "POST", "/v1/memories", key, {"content": "Alice lives in Leeds."}).body["id"]
    new = call(base_url, "POST", "/v1/memories", key, {"content": "Alice lives in York."}).body["id"]

    updated = call(
        base_url,
        "PATCH",
        f"/v1/memories/{new}",
        key,
        {"content": "Alice lives in York now.", "metadata": {"n": 1}},
    )
    assert updated.status == 200
    assert updated.body["content"] == "Alice lives in York now." and updated.body["metadata"] == {"n": 1}
    assert call(base_url, "GET", f"/v1/memories/{new}", key).body["content"] == "Alice lives in York now."
    # The path names the memory: naming one in the body too is refused, and nothing changes.
    assert (
        call(base_url, "PATCH", f"/v1/memories/{new}", key, {"memory_id": old, "content": "x"}).status == 422
    )
    assert call(base_url, "PATCH", f"/v1/memories/{new}", key, {}).status == 422
    assert call(base_url, "GET", f"/v1/memories/{old}", key).body["content"] == "Alice lives in Leeds."

    link = call(
        base_url,
        "POST",
        "/v1/links",
        key,
        {
            "source_record_id": new,
            "source_record_type": "memory",
            "target_record_id": old,
            "target_record_type": "memory",
            "relation_type": "supersedes",
        },
    )
    assert link.status == 201
    link_id = link.body["id"]
    history = call(base_url, "GET", f"/v1/memories/{old}/history", key)
    assert history.status == 200
    assert history.body["memory"]["id"] == old and history.body["memory"]["status"] == "invalid"
    assert [lk["id"] for lk in history.body["links"]] == [link_id]
    assert set(history.body["related"]) == {new}

    retyped = call(base_url, "PATCH", f"/v1/links/{link_id}", key, {"relation_type": "supports"})
    assert retyped.status == 200 and retyped.body == {"id": link_id}
    assert call(base_url, "GET", f"/v1/memories/{old}", key).body["status"] == "valid"  # no longer superseded
    assert (
        call(
            base_url, "PATCH", f"/v1/links/{link_id}", key, {"relation_id": "x", "relation_type": "y"}
        ).status
        == 422
    )

    assert call(base_url, "DELETE", f"/v1/links/{link_id}", key).status == 204
    assert call(base_url, "DELETE", f"/v1/links/{link_id}", key).status == 404
    assert call(base_url, "PATCH", f"/v1/links/{link_id}", key, {"relation_type": "supports"}).status == 404
    assert call(base_url, "GET", f"/v1/memories/{old}/history", key).body["links"] == []
