"""Property tests of the link lifecycle rules, through the service on the in-memory store.

After any sequence of link / retype / unlink / record-delete operations (valid or not):
the invalid set is exactly the set of lifecycle-link targets, no self-link exists, every
pair of records is linked in one orientation only, and (source, target, type) is unique.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from palimpsest.adapters.inmemory import InMemoryStore, ManualClock
from palimpsest.application.record_service import RecordService
from palimpsest.domain import (
    BUILTIN_OPPOSITES,
    AgentMemoryError,
    ConflictError,
    MemoryRecord,
    NotFoundError,
    RecordStatus,
    SelfLinkError,
    derive_status,
    new_link,
)
from strategies import LIFECYCLE, add_record, link_ops, relation_types

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _service() -> RecordService:
    return RecordService(InMemoryStore(), ManualClock(NOW))


def _links_of(service: RecordService, record_id: str) -> list:
    with service.store.reading() as uow:
        return uow.links.touching(record_id)


def _assert_invariants(service: RecordService) -> None:
    records = {r.id: r for r in service.list_records(limit=None)}
    with service.store.unit_of_work() as uow:
        links = uow.links.list(limit=None)
    targets = {l.target_id for l in links if l.relation_type in LIFECYCLE}
    invalid = {rid for rid, r in records.items() if r.status is RecordStatus.INVALID}
    assert invalid == targets
    for record in records.values():
        assert (record.invalidation_reason is None) == record.is_valid
        assert (record.invalidated_at is None) == record.is_valid
    pairs: dict[frozenset[str], tuple[str, str]] = {}
    triples = set()
    for link in links:
        assert link.source_id != link.target_id
        assert link.source_id in records and link.target_id in records
        orientation = (link.source_id, link.target_id)
        assert pairs.setdefault(frozenset(orientation), orientation) == orientation
        triple = (link.source_id, link.target_id, link.relation_type)
        assert triple not in triples
        triples.add(triple)
        if link.relation_type in BUILTIN_OPPOSITES:
            assert link.opposite_relation_type == BUILTIN_OPPOSITES[link.relation_type]


@given(link_ops)
def test_the_invalid_set_is_exactly_the_targets_of_lifecycle_links_after_any_operations(ops: list) -> None:
    service = _service()
    ids = [f"m{i}" for i in range(6)]
    for rid in ids:
        add_record(service, f"memory {rid}", record_id=rid, user_id="u")
    created: list[str] = []
    for op in ops:
        try:
            if op[0] == "link":
                _, s, t, rel = op
                created.append(service.link(ids[s], ids[t], rel).id)
            elif op[0] == "retype" and created:
                service.update_link(created[op[1] % len(created)], relation_type=op[2])
            elif op[0] == "unlink" and created:
                service.delete_link(created[op[1] % len(created)])
            elif op[0] == "delete_record":
                service.delete_record(ids[op[1]])
            elif op[0] == "readd_record":
                add_record(service, f"memory again {op[1]}", record_id=ids[op[1]], user_id="u")
        except (ConflictError, NotFoundError, SelfLinkError):
            pass  # rejected operations are part of the sequence: they must change nothing
        _assert_invariants(service)


@given(st.integers(0, 5), relation_types)
def test_no_self_link_is_ever_accepted(index: int, relation_type: str) -> None:
    service = _service()
    rid = f"m{index}"
    add_record(service, "a memory", record_id=rid)
    with pytest.raises(SelfLinkError):
        service.link(rid, rid, relation_type)
    assert _links_of(service, rid) == []
    assert service.get_record(rid).is_valid


@given(relation_types, relation_types)
def test_a_rejected_link_writes_nothing(first: str, second: str) -> None:
    service = _service()
    a = add_record(service, "a", record_id="a")
    b = add_record(service, "b", record_id="b")
    service.link(a.id, b.id, first)
    before = (service.get_record("a"), service.get_record("b"), _links_of(service, "a"))
    with pytest.raises(AgentMemoryError):
        service.link(b.id, a.id, second)  # reverse orientation is always refused
    assert (service.get_record("a"), service.get_record("b"), _links_of(service, "a")) == before


def _record(rid: str) -> MemoryRecord:
    return MemoryRecord(id=rid, record_type="memory", content=rid, created_at=NOW, updated_at=NOW)


@given(st.lists(st.tuples(st.sampled_from(["s1", "s2", "s3"]), relation_types), max_size=6, unique_by=lambda x: x[0]))
def test_derive_status_is_invalid_iff_some_incoming_link_is_a_lifecycle_link(incoming: list) -> None:
    target = _record("t")
    links = [
        new_link(
            link_id=f"l{i}",
            source=_record(src),
            target=target,
            relation_type=rel,
            existing_between=(),
            now=NOW,
        )
        for i, (src, rel) in enumerate(incoming)
    ]
    derived, _ = derive_status(target, links, NOW)
    assert (derived.status is RecordStatus.INVALID) == any(rel in LIFECYCLE for _, rel in incoming)
    again, events = derive_status(derived, links, NOW)
    assert again == derived and events == ()  # idempotent
