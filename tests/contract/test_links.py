"""Contract: LinkRepository — add/get/find/between/touching/update/delete/list."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from palimpsest.adapters.inmemory import ManualClock
from palimpsest.application.record_service import NewLinkRequest, RecordService
from palimpsest.domain.errors import (
    CrossScopeLinkError,
    DuplicateIdError,
    LinkExistsError,
    LinkNotFoundError,
    RecordNotFoundError,
    SelfLinkError,
)
from palimpsest.domain.model import MemoryRecord, RecordLink, RecordStatus, RecordType
from palimpsest.domain.ports import MemoryStore

from .builders import NOW, at, committing, link, reading, record, seed


@pytest.fixture
def abcd(store: MemoryStore) -> MemoryStore:
    seed(
        store,
        records=[record("a"), record("b"), record("c"), record("d")],
    )
    return store


def test_an_added_link_can_be_read_back_unchanged(store: MemoryStore) -> None:
    guideline = record("g", record_type=RecordType.GUIDELINE)
    preference = record("p", record_type=RecordType.PREFERENCE)
    lk = replace(
        link("l1", guideline, preference, "relates_to", opposite="related_from"),
        metadata={"why": "same topic", "score": 0.5},
        timestamp=at(-3),
    )
    seed(store, records=[guideline, preference])
    with committing(store) as uow:
        uow.links.add(lk)
    with reading(store) as uow:
        assert uow.links.get("l1") == lk
        assert uow.links.get("nope") is None


@pytest.mark.parametrize(("source", "target"), [("a", "ghost"), ("ghost", "a"), ("ghost", "phantom")])
def test_a_link_to_a_missing_record_raises_record_not_found(
    abcd: MemoryStore, source: str, target: str
) -> None:
    with abcd.unit_of_work() as uow:
        with pytest.raises(RecordNotFoundError):
            uow.links.add(link("l1", source, target))
        assert uow.links.get("l1") is None


def test_a_link_with_a_taken_id_raises_duplicate_id(abcd: MemoryStore) -> None:
    seed(abcd, links=[link("l1", "a", "b")])
    with abcd.unit_of_work() as uow:
        with pytest.raises(DuplicateIdError):
            uow.links.add(link("l1", "c", "d"))
        assert uow.links.get("l1") == link("l1", "a", "b")
        assert uow.links.touching("c") == []


def test_repeating_source_target_and_type_raises_link_exists(abcd: MemoryStore) -> None:
    seed(abcd, links=[link("l1", "a", "b", "supports")])
    with committing(abcd) as uow:
        with pytest.raises(LinkExistsError):
            uow.links.add(link("l2", "a", "b", "supports", created_at=at(1)))
        uow.links.add(link("l3", "a", "b", "contradicts", created_at=at(2)))  # another type is fine
    with reading(abcd) as uow:
        assert uow.links.get("l2") is None
        assert [lk.id for lk in uow.links.between("a", "b")] == ["l1", "l3"]


def test_a_self_link_raises_self_link_error(abcd: MemoryStore) -> None:
    with abcd.unit_of_work() as uow:
        with pytest.raises(SelfLinkError):
            uow.links.add(link("l1", "a", "a"))
        assert uow.links.get("l1") is None


def test_find_matches_the_exact_stored_orientation_and_type(abcd: MemoryStore) -> None:
    seed(abcd, links=[link("l1", "a", "b", "supersedes")])
    with reading(abcd) as uow:
        assert uow.links.find("a", "b", "supersedes") == link("l1", "a", "b", "supersedes")
        assert uow.links.find("b", "a", "supersedes") is None
        assert uow.links.find("a", "b", "refines") is None
        assert uow.links.find("b", "a", "is_superseded_by") is None  # opposite labels are not stored types


@pytest.fixture
def linked(abcd: MemoryStore) -> MemoryStore:
    seed(
        abcd,
        links=[
            link("l5", "a", "b", "supports", created_at=at(5)),
            link("l2", "b", "c", "supports", created_at=at(2)),
            link("l9", "a", "b", "contradicts", created_at=at(1)),
            link("l1", "a", "b", "refines", created_at=at(1)),
            link("l3", "c", "a", "duplicates", created_at=at(3)),
            link("l4", "d", "c", "supports", created_at=at(4)),
        ],
    )
    return abcd


def test_between_returns_links_in_either_direction_oldest_first(linked: MemoryStore) -> None:
    with reading(linked) as uow:
        assert [lk.id for lk in uow.links.between("a", "b")] == ["l1", "l9", "l5"]
        assert [lk.id for lk in uow.links.between("b", "a")] == ["l1", "l9", "l5"]
        assert [lk.id for lk in uow.links.between("a", "c")] == ["l3"]
        assert uow.links.between("a", "d") == []


def test_touching_returns_links_as_source_or_target_by_creation_then_id(linked: MemoryStore) -> None:
    with reading(linked) as uow:
        assert [lk.id for lk in uow.links.touching("a")] == ["l1", "l9", "l3", "l5"]
        assert [lk.id for lk in uow.links.touching("c")] == ["l2", "l3", "l4"]
        assert [lk.id for lk in uow.links.touching("d")] == ["l4"]
        assert uow.links.touching("ghost") == []


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({}, ["l1", "l9", "l2", "l3", "l4", "l5"]),
        ({"source_id": "a"}, ["l1", "l9", "l5"]),
        ({"target_id": "c"}, ["l2", "l4"]),
        ({"relation_type": "supports"}, ["l2", "l4", "l5"]),
        ({"source_id": "a", "target_id": "b", "relation_type": "contradicts"}, ["l9"]),
        ({"source_id": "b", "target_id": "a"}, []),
    ],
)
def test_listing_links_filters_and_orders_by_creation_then_id(
    linked: MemoryStore, filters: dict, expected: list[str]
) -> None:
    with reading(linked) as uow:
        assert [lk.id for lk in uow.links.list(**filters)] == expected


def test_updating_a_link_replaces_its_labels_and_metadata(linked: MemoryStore) -> None:
    with reading(linked) as uow:
        before = uow.links.get("l5")
    assert before is not None
    after = replace(
        before, relation_type="supersedes", opposite_relation_type="is_superseded_by", metadata={"v": 2}
    )
    with committing(linked) as uow:
        uow.links.update(after)
    with reading(linked) as uow:
        assert uow.links.get("l5") == after
        assert uow.links.find("a", "b", "supersedes") == after
        assert uow.links.find("a", "b", "supports") is None


def test_updating_a_link_to_a_taken_type_raises_link_exists(linked: MemoryStore) -> None:
    with committing(linked) as uow, pytest.raises(LinkExistsError):
        uow.links.update(link("l5", "a", "b", "contradicts", created_at=at(5)))
    with reading(linked) as uow:
        assert uow.links.get("l5") == link("l5", "a", "b", "supports", created_at=at(5))


def test_updating_an_unknown_link_raises_link_not_found(linked: MemoryStore) -> None:
    with linked.unit_of_work() as uow:
        with pytest.raises(LinkNotFoundError):
            uow.links.update(link("ghost", "a", "d"))
        assert uow.links.get("ghost") is None


def test_deleting_a_link_reports_whether_it_existed_and_keeps_the_records(linked: MemoryStore) -> None:
    with committing(linked) as uow:
        assert uow.links.delete("l5") is True
        assert uow.links.delete("l5") is False
        assert uow.links.delete("never") is False
    with reading(linked) as uow:
        assert uow.links.get("l5") is None
        assert [lk.id for lk in uow.links.between("a", "b")] == ["l1", "l9"]
        assert uow.records.get("a") is not None and uow.records.get("b") is not None


# -- links stay inside one tenant (the domain rule, through the service, on every store) ----------


def _fixed_clock() -> ManualClock:
    return ManualClock(at(10), tick=timedelta(0))


@pytest.fixture
def tenants(store: MemoryStore) -> MemoryStore:
    seed(
        store,
        records=[
            record("u1", user_id="u"),
            record("u2", user_id="u", agent_id="a"),
            record("v1", user_id="v"),
            record("v2", user_id="v", agent_id="b"),
            record("g1"),
        ],
        links=[link("legacy", "u1", "v1", "supports")],  # as stored before the rule existed
    )
    return store


def _state(store: MemoryStore) -> tuple[list[MemoryRecord], list[RecordLink]]:
    with reading(store) as uow:
        return uow.records.list(now=NOW, limit=None), uow.links.list(limit=None)


@pytest.mark.parametrize("relation", ["supersedes", "supports"])
@pytest.mark.parametrize(("source", "target"), [("u1", "v1"), ("v2", "u2"), ("u2", "v2"), ("g1", "u1")])
def test_a_link_across_users_is_refused_and_changes_nothing_in_any_store(
    tenants: MemoryStore, source: str, target: str, relation: str
) -> None:
    service = RecordService(tenants, _fixed_clock())
    before = _state(tenants)
    with pytest.raises(CrossScopeLinkError):
        service.link(source, target, relation)
    with pytest.raises(CrossScopeLinkError):
        service.add_record_with_link(
            content="new", record_type=RecordType.FACT, record_id="new", scope={"user_id": "v" if target.startswith("u") else "u"},
            metadata=None, timestamp=None, expires_at=None, embedding=None,
            link=NewLinkRequest(target_id=target, relation_type=relation),
        )
    with pytest.raises(CrossScopeLinkError):
        service.update_link("legacy", relation_type="supersedes")
    assert _state(tenants) == before
    assert {r.id: r.status for r in before[0]} == dict.fromkeys(["g1", "u1", "u2", "v1", "v2"], RecordStatus.VALID)


def test_inside_one_user_and_to_a_global_record_links_are_made_in_any_store(tenants: MemoryStore) -> None:
    service = RecordService(tenants, _fixed_clock())
    service.link("u2", "u1", "supersedes")
    service.link("u1", "g1", "supports")
    with reading(tenants) as uow:
        assert uow.records.get("u1").status is RecordStatus.INVALID  # type: ignore[union-attr]
        assert {(lk.source_id, lk.target_id) for lk in uow.links.list(limit=None)} == {
            ("u1", "v1"), ("u2", "u1"), ("u1", "g1")
        }
    assert service.delete_link("legacy") is True  # a legacy crossing link can still be removed
