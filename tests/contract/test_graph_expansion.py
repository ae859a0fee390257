"""Contract: the linked-record tree of search hits (num_hops, shortest paths, caps, filters).

The root of every tree here is the only record with a vector, so a vector search with ``E1``
has exactly one hit and its ``linked`` tree is what is checked.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from palimpsest.domain.model import MemoryRecord, RecordLink, RecordType
from palimpsest.domain.ports import MemoryStore
from palimpsest.domain.search import SearchHit

from .builders import (
    E1,
    at,
    chain,
    edges,
    flatten,
    ids,
    invalid_record,
    link,
    message,
    query,
    record,
    seed,
    thread,
    tree_ids,
)


def _seed_around(
    store: MemoryStore, root: MemoryRecord, others: Sequence[MemoryRecord], links: Sequence[RecordLink]
) -> None:
    seed(store, records=[(root, E1), *others], links=links)


def _expand(store: MemoryStore, root_id: str = "r", **kwargs) -> SearchHit:
    hits = store.search(query(vector=E1, **kwargs))
    assert ids(hits) == [root_id]
    return hits[0]


def test_zero_hops_gives_no_linked_records(store: MemoryStore) -> None:
    _seed_around(store, record("r"), [record("x")], [link("l1", "r", "x")])
    assert _expand(store, num_hops=0).linked == ()


@pytest.mark.parametrize("num_hops", [1, 2, 3, 4, 5])
def test_num_hops_limits_the_depth_of_the_tree(store: MemoryStore, num_hops: int) -> None:
    recs, lks = chain("n", 6)
    seed(store, records=[(recs[0], E1), *recs[1:]], links=lks)
    hit = _expand(store, "n0", num_hops=num_hops)
    assert edges(hit) == {f"n{i}": (f"n{i - 1}", i, "supports") for i in range(1, num_hops + 1)}
    node = hit.linked
    for i in range(1, num_hops + 1):  # a path: each level nests under the previous one
        assert [n.record.id for n in node] == [f"n{i}"]
        node = node[0].children
    assert node == ()


def test_linked_records_are_the_stored_records_and_links(store: MemoryStore) -> None:
    x = record("x", "Ann lives in Lyon", user_id=None, metadata={"src": "chat"})
    lk = link("l1", "r", "x", "refines", created_at=at(2))
    _seed_around(store, record("r"), [x], [lk])
    (node,) = _expand(store, num_hops=1).linked
    assert node.record == x
    assert node.link == lk
    assert node.parent_id == "r"
    assert node.depth == 1
    assert node.children == ()


def test_links_are_followed_both_ways_with_the_label_read_from_the_parent(store: MemoryStore) -> None:
    _seed_around(
        store,
        record("r"),
        [
            invalid_record("old"),
            record("fan"),
            record("peer"),
            record("critic"),
            record("older"),
            invalid_record("draft", reason="Refined by another memory."),
        ],
        [
            link("l1", "r", "old", "supersedes", created_at=at(1)),
            link("l2", "fan", "r", "supports", created_at=at(2)),
            link("l3", "peer", "r", "mentions", opposite="is_mentioned_by", created_at=at(3)),
            link("l4", "r", "critic", "contradicts", created_at=at(4)),
            link("l5", "old", "older", "supersedes", created_at=at(5)),
            link("l6", "old", "draft", "refines", created_at=at(6)),
        ],
    )
    assert edges(_expand(store, num_hops=2)) == {
        "old": ("r", 1, "supersedes"),
        "fan": ("r", 1, "is_supported_by"),
        "peer": ("r", 1, "is_mentioned_by"),
        "critic": ("r", 1, "contradicts"),
        "older": ("old", 2, "supersedes"),
        "draft": ("old", 2, "refines"),
    }


def test_a_superseded_hit_reaches_its_successor_as_is_superseded_by(store: MemoryStore) -> None:
    _seed_around(store, invalid_record("r"), [record("new")], [link("l1", "new", "r", "supersedes")])
    assert edges(_expand(store, num_hops=1)) == {"new": ("r", 1, "is_superseded_by")}


def test_a_record_reachable_by_two_paths_keeps_the_shorter(store: MemoryStore) -> None:
    _seed_around(
        store,
        record("r"),
        [record("x1"), record("x2"), record("y"), record("t")],
        [
            link("l1", "r", "x1", created_at=at(1)),
            link("l2", "x1", "x2", created_at=at(2)),
            link("l3", "x2", "t", created_at=at(3)),
            link("l9", "r", "y", created_at=at(9)),
            link("l8", "t", "y", created_at=at(9)),
        ],
    )
    assert edges(_expand(store, num_hops=3)) == {
        "x1": ("r", 1, "supports"),
        "y": ("r", 1, "supports"),
        "x2": ("x1", 2, "supports"),
        "t": ("y", 2, "is_supported_by"),
    }


def test_equal_depth_parents_are_chosen_by_earliest_link(store: MemoryStore) -> None:
    _seed_around(
        store,
        record("r"),
        [record("a"), record("b"), record("c")],
        [
            link("l-ra", "r", "a", created_at=at(1)),
            link("l-rb", "r", "b", created_at=at(1)),
            link("l-ac", "a", "c", created_at=at(5)),
            link("l-bc", "b", "c", created_at=at(3)),
        ],
    )
    hit = _expand(store, num_hops=2)
    assert edges(hit)["c"] == ("b", 2, "supports")
    (c_node,) = [n for n in flatten(hit.linked) if n.record.id == "c"]
    assert c_node.link.id == "l-bc"


def test_equal_depth_parents_with_simultaneous_links_are_chosen_by_link_id(store: MemoryStore) -> None:
    _seed_around(
        store,
        record("r"),
        [record("a"), record("b"), record("c")],
        [
            link("l-ra", "r", "a", created_at=at(1)),
            link("l-rb", "r", "b", created_at=at(1)),
            link("l-2", "a", "c", created_at=at(4)),
            link("l-1", "c", "b", created_at=at(4)),
        ],
    )
    hit = _expand(store, num_hops=2)
    assert edges(hit)["c"] == ("b", 2, "is_supported_by")
    assert [n.record.id for n in hit.linked] == ["a", "b"]
    assert [n.record.id for n in hit.linked[1].children] == ["c"]
    assert hit.linked[0].children == ()


def test_a_triangle_does_not_repeat_records(store: MemoryStore) -> None:
    _seed_around(
        store,
        record("a", user_id=None),
        [record("b"), record("c")],
        [
            link("l1", "a", "b", created_at=at(1)),
            link("l2", "b", "c", created_at=at(2)),
            link("l3", "c", "a", created_at=at(3)),
        ],
    )
    hit = _expand(store, "a", num_hops=5)
    assert edges(hit) == {"b": ("a", 1, "supports"), "c": ("a", 1, "is_supported_by")}
    assert len(flatten(hit.linked)) == 2


def test_a_square_cycle_reaches_the_far_corner_once_through_the_earliest_link(store: MemoryStore) -> None:
    _seed_around(
        store,
        record("a"),
        [record("b"), record("c"), record("d")],
        [
            link("l1", "a", "b", created_at=at(1)),
            link("l2", "b", "c", created_at=at(2)),
            link("l3", "c", "d", created_at=at(3)),
            link("l4", "d", "a", created_at=at(4)),
        ],
    )
    hit = _expand(store, "a", num_hops=5)
    assert edges(hit) == {
        "b": ("a", 1, "supports"),
        "d": ("a", 1, "is_supported_by"),
        "c": ("b", 2, "supports"),
    }
    assert len(flatten(hit.linked)) == 3


@pytest.fixture
def bushy(store: MemoryStore) -> MemoryStore:
    """r -> a, b, c (depth 1); a -> a1, b -> b1, c -> c1 (depth 2, c1's link is the oldest)."""
    _seed_around(
        store,
        record("r"),
        [record(x) for x in ("a", "b", "c", "a1", "b1", "c1")],
        [
            link("l-a", "r", "a", created_at=at(1)),
            link("l-b", "r", "b", created_at=at(2)),
            link("l-c", "r", "c", created_at=at(3)),
            link("l-a1", "a", "a1", created_at=at(4)),
            link("l-b1", "b", "b1", created_at=at(5)),
            link("l-c1", "c", "c1", created_at=at(0)),
        ],
    )
    return store


@pytest.mark.parametrize(
    ("cap", "expected"),
    [
        (0, set()),
        (1, {"a"}),
        (3, {"a", "b", "c"}),
        (4, {"a", "b", "c", "c1"}),
        (5, {"a", "b", "c", "c1", "a1"}),
        (100, {"a", "b", "c", "a1", "b1", "c1"}),
    ],
)
def test_max_linked_results_caps_the_tree_across_hops(bushy: MemoryStore, cap: int, expected: set) -> None:
    hit = _expand(bushy, num_hops=2, max_linked_results=cap)
    assert tree_ids(hit) == expected
    assert len(flatten(hit.linked)) == len(expected)


def test_siblings_are_ordered_by_link_creation(bushy: MemoryStore) -> None:
    hit = _expand(bushy, num_hops=2)
    assert [n.record.id for n in hit.linked] == ["a", "b", "c"]
    assert [[c.record.id for c in n.children] for n in hit.linked] == [["a1"], ["b1"], ["c1"]]


FILTERS = {
    "scope": (
        {"user_id": "A"},
        {"user_id": "A"},
        {"user_id": "B"},
    ),
    "record_type": (
        {"record_types": frozenset({RecordType.FACT})},
        {"record_type": RecordType.FACT},
        {"record_type": RecordType.GUIDELINE},
    ),
    "expiry": (
        {"now": at(0)},
        {"expires_at": at(60)},
        {"expires_at": at(0)},
    ),
    "metadata": (
        {"metadata_filter": {"topic": "tea"}},
        {"metadata": {"topic": "tea"}},
        {"metadata": {"topic": "coffee"}},
    ),
}


@pytest.mark.parametrize("kind", list(FILTERS))
def test_search_filters_apply_to_linked_records_and_block_traversal_through_them(
    store: MemoryStore, kind: str
) -> None:
    search_args, passes, fails = FILTERS[kind]
    _seed_around(
        store,
        record("r", **passes),
        [
            record("ok", **passes),
            record("ok-child", **passes),
            record("bad", **fails),
            record("behind-bad", **passes),
        ],
        [
            link("l1", "r", "ok", created_at=at(1)),
            link("l2", "ok", "ok-child", created_at=at(2)),
            link("l3", "r", "bad", created_at=at(3)),
            link("l4", "bad", "behind-bad", created_at=at(4)),
        ],
    )
    hit = _expand(store, num_hops=3, **search_args)
    assert edges(hit) == {"ok": ("r", 1, "supports"), "ok-child": ("ok", 2, "supports")}


def test_invalid_records_appear_as_linked_context_even_when_excluded_from_hits(store: MemoryStore) -> None:
    old = invalid_record("old", "Ann drinks coffee")
    seed(
        store,
        records=[(record("r", "Ann drinks tea"), E1), (old, E1)],
        links=[link("l1", "r", "old", "supersedes")],
    )
    (hit,) = store.search(query(vector=E1, include_invalid=False, num_hops=1))
    assert hit.id == "r"
    (node,) = hit.linked
    assert node.record == old and node.relation_label == "supersedes"

    hits = store.search(query(vector=E1, include_invalid=True, num_hops=1))
    assert ids(hits) == ["old", "r"]  # equal scores: by id
    assert edges(hits[0]) == {"r": ("old", 1, "is_superseded_by")}


def test_every_memory_hit_gets_its_own_tree(store: MemoryStore) -> None:
    seed(
        store,
        records=[(record("h1"), E1), (record("h2"), E1), record("x"), record("y")],
        links=[link("l1", "h1", "x"), link("l2", "y", "h2"), link("l3", "x", "y")],
    )
    hits = store.search(query(vector=E1, num_hops=1))
    assert ids(hits) == ["h1", "h2"]
    assert edges(hits[0]) == {"x": ("h1", 1, "supports")}
    assert edges(hits[1]) == {"y": ("h2", 1, "is_supported_by")}


def test_message_hits_are_not_expanded(store: MemoryStore) -> None:
    # The message shares its id with a linked memory: the memory's links are not the message's.
    seed(
        store,
        threads=[thread("t1")],
        messages=[(message("shared", "t1", 1, "a message"), E1)],
        records=[record("shared", "a memory"), record("x")],
        links=[link("l1", "shared", "x")],
    )
    (hit,) = store.search(query(vector=E1, num_hops=3))
    assert hit.record_type is RecordType.MESSAGE
    assert hit.linked == ()
