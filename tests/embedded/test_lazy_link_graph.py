"""Embedded store: the link graph is a per-record cache, loaded at a record's first graph
expansion and kept current by the change log; opening a store does not read the links table."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace

from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.adapters.embedded.codec import DIALECT
from palimpsest.adapters.embedded.link_graph import NetworkxLinkGraph
from palimpsest.domain.model import RecordLink, RecordStatus
from palimpsest.domain.search import LinkedRecord, SearchHit

from .helpers import E1, E2, NOW, ids, link, linked_ids, query, record, seed

Opener = Callable[..., EmbeddedStore]


def _chain(store: EmbeddedStore) -> None:
    """a - b - c - d, plus e - f far from every query (a is the only record near E1)."""
    seed(
        store,
        records=[(record(rid), E1 if rid == "a" else E2) for rid in "abcdef"],
        links=[
            link("l-ab", "a", "b"),
            link("l-bc", "b", "c", minutes=1),
            link("l-cd", "c", "d", minutes=2),
            link("l-ef", "e", "f", minutes=3),
        ],
    )


def _expand(store: EmbeddedStore, hops: int = 2) -> list[SearchHit]:
    return store.search(query(vector=E1, k=1, num_hops=hops))


def _tree(hits: list[SearchHit]) -> list[tuple[str, str, str, int, str | None]]:
    """(parent, record, link, depth, relation) of every linked node, depth first."""
    found: list[tuple[str, str, str, int, str | None]] = []

    def walk(nodes: tuple[LinkedRecord, ...]) -> None:
        for node in nodes:
            found.append((node.parent_id, node.record.id, node.link.id, node.depth, node.link.relation_type))
            walk(node.children)

    for hit in hits:
        walk(hit.linked)
    return found


def _links(around: dict[str, list[RecordLink]]) -> dict[str, set[str]]:
    return {record_id: {lk.id for lk in links} for record_id, links in around.items()}


def test_opening_reads_no_link_and_a_search_loads_only_the_records_it_expands(
    open_store: Opener,
) -> None:
    _chain(open_store())
    store = open_store()
    assert len(store._graph) == 0 and store._graph.loaded == set()
    assert ids(store.search(query(vector=E1, k=1))) == ["a"]  # no expansion: still nothing loaded
    assert len(store._graph) == 0 and store._graph.loaded == set()

    first = _expand(store)
    assert _tree(first) == [("a", "b", "l-ab", 1, "supports"), ("b", "c", "l-bc", 2, "supports")]
    # a and b were expanded (a's neighbours, then b's); c is only a leaf at two hops.
    assert store._graph.loaded == {"a", "b"}
    assert set(store._graph.graph.edges(keys=True)) == {("a", "b", "l-ab"), ("b", "c", "l-bc")}
    # From the cache now, the same answer as the cold read, and as another freshly opened store.
    assert _expand(store) == first
    assert _expand(open_store()) == first
    deeper = _expand(store, hops=3)
    assert _tree(deeper)[-1] == ("c", "d", "l-cd", 3, "supports")
    assert store._graph.loaded == {"a", "b", "c"}
    assert _expand(open_store(), hops=3) == deeper


def test_the_links_of_a_loaded_record_follow_another_instances_commits(open_store: Opener) -> None:
    _chain(open_store())
    store, other = open_store(), open_store()
    _expand(store, hops=1)
    assert store._graph.loaded == {"a"}

    seed(other, records=[(record("g"), E2)], links=[link("l-ag", "a", "g", "contradicts", minutes=4)])
    with other.unit_of_work() as uow:
        uow.links.delete("l-ab")
        uow.commit()
    hits = _expand(store, hops=1)
    assert _tree(hits) == [("a", "g", "l-ag", 1, "contradicts")]
    assert _expand(open_store(), hops=1) == hits

    # The link becomes a lifecycle link (a supersedes g) and g's status changes with it, as the
    # record service would write them.
    with other.unit_of_work() as uow:
        uow.links.update(link("l-ag", "a", "g", "supersedes", minutes=4))
        uow.records.update(replace(record("g"), status=RecordStatus.INVALID, invalidated_at=NOW))
        uow.commit()
    hits = _expand(store, hops=1)
    assert _tree(hits) == [("a", "g", "l-ag", 1, "supersedes")]
    assert hits[0].linked[0].record.status is RecordStatus.INVALID
    assert _expand(open_store(), hops=1) == hits

    with other.unit_of_work() as uow:
        uow.records.delete("g")  # the link goes with it (a cascade the change log records)
        uow.commit()
    assert _tree(_expand(store, hops=1)) == []
    assert store._graph.links_of("a") == [] and "a" in store._graph.loaded


def test_a_replayed_link_between_records_not_loaded_is_not_kept(open_store: Opener) -> None:
    _chain(open_store())
    store, other = open_store(), open_store()
    _expand(store, hops=1)  # loads a: a's link to b is in the graph, b is not loaded
    seed(other, links=[link("l-ce", "c", "e", minutes=5), link("l-bd", "b", "d", minutes=6)])
    store.search(query(vector=E1, k=1))  # replays the log
    assert "l-ce" not in store._graph and "l-bd" not in store._graph
    assert set(store._graph.graph.edges(keys=True)) == {("a", "b", "l-ab")}
    # b, reached at the next depth, is read afresh with every link it has now.
    hits = _expand(store, hops=2)
    assert {(parent, rid) for parent, rid, *_ in _tree(hits)} == {("a", "b"), ("b", "c"), ("b", "d")}
    assert _expand(open_store(), hops=2) == hits


def test_a_session_reading_past_the_caches_position_answers_from_its_read_without_loading(
    open_store: Opener,
) -> None:
    _chain(open_store())
    store, other = open_store(), open_store()
    q = query(vector=E1, k=1, num_hops=1)
    with store.searching() as session:
        # Committed after the caches were synced, before the session's first read.
        seed(other, links=[link("l-ac", "a", "c", minutes=4)])
        assert _links(session.links_around(["a", "b"], q)) == {"a": {"l-ab", "l-ac"}, "b": {"l-ab", "l-bc"}}
        assert store._graph.loaded == set() and len(store._graph) == 0
    # The next session starts at the new position and loads.
    assert linked_ids(store.search(q)) == {"b", "c"}
    assert store._graph.loaded == {"a"}


def test_a_session_reading_behind_the_caches_position_answers_its_own_state_without_loading(
    open_store: Opener,
) -> None:
    _chain(open_store())
    store, other = open_store(), open_store()
    q = query(vector=E1, k=1, num_hops=1)
    with store.searching() as session:
        assert (False, "a") in session.load([(False, "a")])  # fixes the session's snapshot
        with other.unit_of_work() as uow:
            uow.links.delete("l-ab")
            uow.commit()
        # Another thread of this process searches: the caches move past the session's read.
        searcher = threading.Thread(target=store.search, args=(query(vector=E1, k=1),))
        searcher.start()
        searcher.join()
        assert _links(session.links_around(["a"], q)) == {"a": {"l-ab"}}  # the session's state
        assert store._graph.loaded == set() and len(store._graph) == 0
    assert linked_ids(store.search(q)) == set()
    assert store._graph.loaded == {"a"}


def test_a_session_at_the_caches_position_loads_and_then_answers_from_the_graph(open_store: Opener) -> None:
    _chain(open_store())
    store = open_store()
    q = query(vector=E1, k=1, num_hops=1)
    with store.searching() as session:
        assert _links(session.links_around(["b", "e"], q)) == {"b": {"l-ab", "l-bc"}, "e": {"l-ef"}}
        assert store._graph.loaded == {"b", "e"}
        assert {lk.id for lk in store._graph.links_of("b")} == {"l-ab", "l-bc"}
        assert _links(session.links_around(["a", "b"], q)) == {"a": {"l-ab"}, "b": {"l-ab", "l-bc"}}
        assert store._graph.loaded == {"a", "b", "e"}
    # One link object per link, whichever end it was loaded from.
    [from_a] = store._graph.links_of("a")
    assert any(lk is from_a for lk in store._graph.links_of("b"))


def _row(link_id: str, source: str, target: str) -> tuple[object, ...]:
    """A ``links`` row in ``LINK_COLUMNS`` order."""
    return (link_id, source, "fact", target, "fact", "supports", "supports", None, None, DIALECT.encode_time(NOW))


def test_a_replay_keeps_links_with_a_loaded_end_and_drops_every_other_copy() -> None:
    graph = NetworkxLinkGraph()
    graph.load(["a"], [_row("l1", "a", "b"), _row("l2", "c", "a")])
    assert graph.loaded == {"a"} and {lk.id for lk in graph.links_of("a")} == {"l1", "l2"}
    # l1 now joins records nobody loaded (deleted and written again under its id), l2 is gone,
    # l3 touches a, l4 does not.
    graph.replay([_row("l1", "d", "e"), _row("l3", "b", "a"), _row("l4", "b", "c")], {"l1", "l2", "l3", "l4"})
    assert {lk.id for lk in graph.links_of("a")} == {"l3"}
    assert len(graph) == 1 and "l1" not in graph and "l4" not in graph
    assert set(graph.graph.nodes) == {"a", "b"}
    graph.clear()
    assert len(graph) == 0 and graph.loaded == set()
