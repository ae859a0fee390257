"""Unit: search semantics — ScopeFilter, SearchQuery validation, shortest-path trees, fusion."""

from __future__ import annotations

import random
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

import pytest
from palimpsest.domain.errors import (
    InvalidMetadataFilterError,
    InvalidRecordTypeError,
    InvalidScopeError,
    InvalidSearchError,
    ValidationError,
    VectorDimensionError,
)
from palimpsest.domain.model import (
    SEARCHABLE_RECORD_TYPES,
    MemoryRecord,
    Message,
    RecordLink,
    RecordStatus,
    RecordType,
)
from palimpsest.domain.search import (
    ScopeFilter,
    SearchQuery,
    TreeEdge,
    build_tree,
    check_vector,
    reciprocal_rank_fusion,
    shortest_path_tree,
)
from palimpsest.domain.sentinel import ANY

T0 = datetime(2025, 3, 14, 12, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def rec(record_id: str, **kwargs) -> MemoryRecord:
    return MemoryRecord(
        id=record_id,
        record_type=kwargs.pop("record_type", RecordType.FACT),
        content=f"memory {record_id}",
        created_at=T0,
        updated_at=T0,
        **kwargs,
    )


def lnk(link_id: str, source: str, target: str, minutes: float = 0, relation: str = "supports") -> RecordLink:
    return RecordLink(
        id=link_id,
        source_id=source,
        source_type=RecordType.FACT,
        target_id=target,
        target_type=RecordType.FACT,
        relation_type=relation,
        opposite_relation_type="is_supported_by" if relation == "supports" else relation,
        created_at=at(minutes),
    )


# --- ScopeFilter ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scope", "row", "admitted"),
    [
        (ScopeFilter(), ("u", "a", "t"), True),
        (ScopeFilter(), (None, None, None), True),
        (ScopeFilter(user_id="u"), ("u", None, None), True),
        (ScopeFilter(user_id="u"), ("v", None, None), False),
        (ScopeFilter(user_id="u"), (None, None, None), False),
        (ScopeFilter(user_id=None), (None, "a", "t"), True),
        (ScopeFilter(user_id=None), ("u", "a", "t"), False),
        (ScopeFilter(user_id="u", agent_id=None), ("u", None, "t"), True),
        (ScopeFilter(user_id="u", agent_id=None), ("u", "a", "t"), False),
        (ScopeFilter(thread_id="t"), ("u", "a", "t"), True),
        (ScopeFilter(thread_id="t"), ("u", "a", "t2"), False),
        (ScopeFilter(None, None, None), (None, None, None), True),
        (ScopeFilter(None, None, None), (None, None, "t"), False),
        (ScopeFilter(user_id=ANY, agent_id="a", thread_id=ANY), ("anyone", "a", None), True),
    ],
)
def test_a_scope_filter_admits_exact_ids_unscoped_rows_for_none_and_anything_for_any(
    scope: ScopeFilter, row: tuple, admitted: bool
) -> None:
    assert scope.admits(*row) is admitted


@pytest.mark.parametrize("bad", ["", "  ", "x" * 129, "new\nline", 7])
def test_a_scope_filter_rejects_malformed_ids(bad: object) -> None:
    with pytest.raises(InvalidScopeError):
        ScopeFilter(user_id=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidScopeError):
        ScopeFilter(thread_id=bad)  # type: ignore[arg-type]


# --- SearchQuery ------------------------------------------------------------------------------


def q(**kwargs) -> SearchQuery:
    kwargs.setdefault("k", 10)
    kwargs.setdefault("now", T0)
    if "vector" not in kwargs and "text" not in kwargs:
        kwargs["vector"] = (1.0, 0.0)
    return SearchQuery(**kwargs)


@pytest.mark.parametrize(
    "bad",
    [
        {"k": 0},
        {"k": -1},
        {"k": 1001},
        {"k": True},
        {"k": 2.0},
        {"k": "5"},
        {"num_hops": 6},
        {"num_hops": -1},
        {"num_hops": True},
        {"num_hops": 1.0},
        {"max_linked_results": -1},
        {"max_linked_results": True},
        {"max_linked_results": 1.5},
        {"text": ""},
        {"text": "   "},
        {"text": 42},
        {"vector": None, "text": None},
        {"record_types": "fact"},
        {"record_types": frozenset()},
        {"scope": {"user_id": "u"}},
        {"rrf_k": 0},
        {"record_ids": "r1"},
        {"record_ids": frozenset()},
        {"record_ids": frozenset({""})},
        {"record_ids": [7]},
        {"record_ids": 7},
        {"record_ids": frozenset(f"r{i}" for i in range(1001))},
    ],
    ids=repr,
)
def test_an_out_of_range_search_request_raises_invalid_search_error(bad: dict) -> None:
    with pytest.raises(InvalidSearchError):
        q(**bad)


@pytest.mark.parametrize(
    "vector",
    [(), (float("nan"), 1.0), (float("inf"), 0.0), (0.0, 0.0, 0.0), ("a", "b"), 3],
    ids=["empty", "nan", "inf", "zero", "strings", "not-a-sequence"],
)
def test_a_malformed_query_vector_raises_vector_dimension_error(vector: object) -> None:
    with pytest.raises(VectorDimensionError):
        q(vector=vector)


def test_a_malformed_metadata_filter_raises_invalid_metadata_filter_error() -> None:
    with pytest.raises(InvalidMetadataFilterError):
        q(metadata_filter={"a": {"$gt": 1}})
    with pytest.raises(InvalidMetadataFilterError):
        q(metadata_filter=["a"])


def test_an_unknown_record_type_raises_invalid_record_type_error() -> None:
    with pytest.raises(InvalidRecordTypeError):
        q(record_types=frozenset({"episode"}))


def test_a_naive_now_is_rejected() -> None:
    with pytest.raises(ValidationError):
        q(now=datetime(2025, 1, 1))


@pytest.mark.parametrize(
    "extreme", [{"k": 1}, {"k": 1000}, {"num_hops": 0}, {"num_hops": 5}, {"max_linked_results": 0}]
)
def test_the_documented_limits_themselves_are_accepted(extreme: dict) -> None:
    query = q(**extreme)
    for name, value in extreme.items():
        assert getattr(query, name) == value


def test_a_query_normalises_its_inputs() -> None:
    query = q(
        vector=[1, 2], text="tea", record_types={"fact", RecordType.MESSAGE}, metadata_filter={"t": ("a",)}
    )
    assert query.vector == (1.0, 2.0)
    assert query.record_types == frozenset({RecordType.FACT, RecordType.MESSAGE})
    assert query.metadata_filter == {"t": ["a"]}
    assert q().types == SEARCHABLE_RECORD_TYPES
    assert q().include_invalid is True
    assert q().num_hops == 0
    assert q(record_ids=["r1", "r2", "r1"]).record_ids == frozenset({"r1", "r2"})


def test_named_records_narrow_direct_hits_only_and_never_admit_a_message() -> None:
    query = q(record_ids=frozenset({"r1"}))
    named, other = rec("r1"), rec("r2")
    said = Message(id="r1", thread_id="t", role="user", content="x", seq=1, created_at=T0)
    assert query.admits_record(named, direct=True) and not query.admits_record(other, direct=True)
    assert query.admits_record(other, direct=False)  # linked context is not narrowed
    assert not query.admits_record(said, direct=True)


def test_admits_record_applies_type_scope_expiry_metadata_and_direct_status() -> None:
    query = q(
        scope=ScopeFilter(user_id="u"),
        record_types=frozenset({RecordType.FACT}),
        include_invalid=False,
        metadata_filter={"topic": "tea"},
    )
    good = rec("r", user_id="u", metadata={"topic": "tea"})
    assert query.admits_record(good, direct=True)
    assert not query.admits_record(rec("r", user_id="v", metadata={"topic": "tea"}), direct=True)
    assert not query.admits_record(
        rec("r", user_id="u", metadata={"topic": "tea"}, record_type=RecordType.MEMORY), direct=True
    )
    assert not query.admits_record(
        rec("r", user_id="u", metadata={"topic": "tea"}, expires_at=T0), direct=True
    )
    assert query.admits_record(
        rec("r", user_id="u", metadata={"topic": "tea"}, expires_at=at(1)), direct=True
    )
    assert not query.admits_record(rec("r", user_id="u", metadata={"topic": "coffee"}), direct=True)
    invalid = rec(
        "r",
        user_id="u",
        metadata={"topic": "tea"},
        status=RecordStatus.INVALID,
        invalidation_reason="Superseded by another memory.",
        invalidated_at=T0,
    )
    assert not query.admits_record(invalid, direct=True)
    assert query.admits_record(invalid, direct=False)
    message = Message(
        id="m",
        thread_id="t",
        role="user",
        content="tea",
        seq=1,
        created_at=T0,
        user_id="u",
        metadata={"topic": "tea"},
    )
    assert not query.admits_record(message, direct=True)  # type filter: facts only
    assert q(record_types=frozenset({RecordType.MESSAGE})).admits_record(message, direct=True)


# --- check_vector -----------------------------------------------------------------------------


def test_check_vector_enforces_the_dimension_and_returns_floats() -> None:
    assert check_vector([1, 0, 0], 3) == (1.0, 0.0, 0.0)
    assert check_vector((0.5, -0.5)) == (0.5, -0.5)
    with pytest.raises(VectorDimensionError):
        check_vector([1, 0, 0], 4)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_check_vector_refuses_a_value_that_is_not_finite(bad: float) -> None:
    with pytest.raises(VectorDimensionError, match="finite"):
        check_vector([0.5, bad, 0.5])
    with pytest.raises(VectorDimensionError, match="finite"):
        check_vector([1e308, 1e308, bad])  # a sum that overflows as well


def test_check_vector_accepts_finite_values_whose_sum_overflows() -> None:
    assert check_vector([1e308, 1e308, -1.0]) == (1e308, 1e308, -1.0)
    with pytest.raises(VectorDimensionError, match="numbers"):
        check_vector(["x", 1.0])
    with pytest.raises(VectorDimensionError, match="zeros"):
        check_vector([0.0, -0.0])


# --- shortest_path_tree -----------------------------------------------------------------------


def graph(links: Iterable[RecordLink], *, shuffle_seed: int | None = None):
    adjacency: dict[str, list[RecordLink]] = {}
    for link in links:
        adjacency.setdefault(link.source_id, []).append(link)
        adjacency.setdefault(link.target_id, []).append(link)
    if shuffle_seed is not None:
        rng = random.Random(shuffle_seed)
        for items in adjacency.values():
            rng.shuffle(items)
    return lambda record_id: list(adjacency.get(record_id, ()))


def tree(
    root: str,
    links: Iterable[RecordLink],
    *,
    num_hops: int = 5,
    cap: int = 100,
    admits=lambda _: True,
    shuffle_seed=None,
):
    edges = shortest_path_tree(
        root,
        num_hops=num_hops,
        max_linked_results=cap,
        links_of=graph(links, shuffle_seed=shuffle_seed),
        admits=admits,
    )
    return [(e.record_id, e.parent_id, e.link.id, e.depth) for e in edges]


CHAIN = [lnk("l1", "r", "a", 1), lnk("l2", "b", "a", 2), lnk("l3", "b", "c", 3)]


def test_no_hops_or_no_room_gives_an_empty_tree() -> None:
    assert tree("r", CHAIN, num_hops=0) == []
    assert tree("r", CHAIN, cap=0) == []
    assert tree("lonely", CHAIN) == []


@pytest.mark.parametrize("num_hops", [1, 2, 3, 4])
def test_the_tree_follows_links_both_ways_up_to_num_hops(num_hops: int) -> None:
    full = [("a", "r", "l1", 1), ("b", "a", "l2", 2), ("c", "b", "l3", 3)]
    assert tree("r", CHAIN, num_hops=num_hops) == full[:num_hops]


def test_the_shorter_path_wins_over_older_links() -> None:
    links = [lnk("l1", "r", "x", 1), lnk("l2", "x", "y", 2), lnk("l3", "y", "t", 3), lnk("l9", "r", "t", 9)]
    assert tree("r", links) == [("x", "r", "l1", 1), ("t", "r", "l9", 1), ("y", "x", "l2", 2)]


def test_equal_depth_parents_are_chosen_by_link_time_then_link_id() -> None:
    base = [lnk("l-ra", "r", "a", 1), lnk("l-rb", "r", "b", 1)]
    by_time = [*base, lnk("l-ac", "a", "c", 5), lnk("l-bc", "b", "c", 3)]
    assert ("c", "b", "l-bc", 2) in tree("r", by_time)
    by_id = [*base, lnk("l-2", "a", "c", 4), lnk("l-1", "b", "c", 4)]
    assert ("c", "b", "l-1", 2) in tree("r", by_id)


def test_equal_depth_parents_reached_through_identical_link_keys_are_chosen_by_parent_id() -> None:
    # Two edges with the same link id and time (as a store might report one link per side):
    # only the parent id can decide, and it must decide the same whatever the order.
    base = [lnk("l-rp", "r", "p", 1), lnk("l-rq", "r", "q", 1)]
    twins = [lnk("same", "q", "c", 4), lnk("same", "p", "c", 4)]
    for seed in range(6):
        assert ("c", "p", "same", 2) in tree("r", base + twins, shuffle_seed=seed)


def test_the_result_does_not_depend_on_the_order_links_are_listed() -> None:
    links = [
        lnk("l1", "r", "a", 1),
        lnk("l2", "r", "b", 1),
        lnk("l3", "c", "a", 2),
        lnk("l4", "b", "c", 2),
        lnk("l5", "c", "d", 0),
        lnk("l6", "d", "b", 7),
        lnk("l7", "e", "r", 3),
    ]
    expected = tree("r", links)
    assert {rid for rid, *_ in expected} == {"a", "b", "c", "d", "e"}
    for seed in range(10):
        assert tree("r", links, shuffle_seed=seed) == expected


def test_a_record_never_repeats_and_the_root_is_never_reached() -> None:
    cycle = [lnk("l1", "a", "b", 1), lnk("l2", "b", "c", 2), lnk("l3", "c", "a", 3)]
    assert tree("a", cycle) == [("b", "a", "l1", 1), ("c", "a", "l3", 1)]


def test_a_filtered_out_record_is_neither_shown_nor_traversed() -> None:
    links = [lnk("l1", "r", "bad", 1), lnk("l2", "bad", "behind", 2), lnk("l3", "r", "ok", 3)]
    assert tree("r", links, admits=lambda rid: rid != "bad") == [("ok", "r", "l3", 1)]


def test_the_cap_ranks_by_depth_then_link_time_and_keeps_every_parent() -> None:
    links = [
        lnk("l-a", "r", "a", 1),
        lnk("l-b", "r", "b", 2),
        lnk("l-c", "r", "c", 3),
        lnk("l-a1", "a", "a1", 4),
        lnk("l-b1", "b", "b1", 5),
        lnk("l-c1", "c", "c1", 0),
    ]
    full = tree("r", links)
    assert [rid for rid, *_ in full] == ["a", "b", "c", "c1", "a1", "b1"]
    for cap in range(7):
        kept = tree("r", links, cap=cap)
        assert kept == full[:cap]
        kept_ids = {"r"} | {rid for rid, *_ in kept}
        assert all(parent in kept_ids for _, parent, _, _ in kept)


def test_equal_depth_and_link_time_rank_by_link_id_then_record_id() -> None:
    links = [lnk("l-2", "r", "a", 1), lnk("l-1", "r", "b", 1)]
    assert [rid for rid, *_ in tree("r", links)] == ["b", "a"]


# --- build_tree -------------------------------------------------------------------------------


def test_build_tree_nests_edges_under_their_parents_in_rank_order() -> None:
    l_a, l_b, l_a1, l_a2 = (
        lnk("la", "r", "a"),
        lnk("lb", "b", "r"),
        lnk("la1", "a", "a1"),
        lnk("la2", "a2", "a"),
    )
    edges = [
        TreeEdge("a", "r", l_a, 1),
        TreeEdge("b", "r", l_b, 1),
        TreeEdge("a2", "a", l_a2, 2),
        TreeEdge("a1", "a", l_a1, 2),
    ]
    records = {rid: rec(rid) for rid in ("a", "b", "a1", "a2")}
    nodes = build_tree("r", edges, records)
    assert [(n.record.id, n.depth, n.parent_id, n.relation_label) for n in nodes] == [
        ("a", 1, "r", "supports"),
        ("b", 1, "r", "is_supported_by"),
    ]
    assert [(n.record.id, n.relation_label) for n in nodes[0].children] == [
        ("a2", "is_supported_by"),
        ("a1", "supports"),
    ]
    assert nodes[1].children == ()
    assert nodes[0].record is records["a"] and nodes[0].link is l_a


def test_build_tree_drops_nodes_whose_record_is_missing_with_their_subtree() -> None:
    edges = [
        TreeEdge("a", "r", lnk("la", "r", "a"), 1),
        TreeEdge("a1", "a", lnk("la1", "a", "a1"), 2),
        TreeEdge("b", "r", lnk("lb", "r", "b"), 1),
    ]
    nodes = build_tree("r", edges, {"a1": rec("a1"), "b": rec("b")})
    assert [n.record.id for n in nodes] == ["b"]


def test_build_tree_of_no_edges_is_empty() -> None:
    assert build_tree("r", [], {}) == ()


# --- reciprocal_rank_fusion -------------------------------------------------------------------


def test_rank_fusion_matches_the_worked_example() -> None:
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["c", "a"]], k=20)
    assert [key for key, _ in fused] == ["a", "c", "b"]
    scores = dict(fused)
    assert scores["a"] == pytest.approx(0.4053, abs=1e-4)
    assert scores["c"] == pytest.approx(0.3967, abs=1e-4)
    assert scores["b"] == pytest.approx(0.1980, abs=1e-4)
    assert sum(scores.values()) == pytest.approx(1.0)


def test_rank_fusion_breaks_ties_by_first_appearance() -> None:
    assert [key for key, _ in reciprocal_rank_fusion([["x", "y"], ["y", "x"]])] == ["x", "y"]
    assert [key for key, _ in reciprocal_rank_fusion([["q"], ["p"]])] == ["q", "p"]


def test_rank_fusion_uses_the_weights() -> None:
    fused = reciprocal_rank_fusion([["a", "b"], ["b", "a"]], k=60, weights=[1.0, 3.0])
    assert [key for key, _ in fused] == ["b", "a"]
    unweighted_single = reciprocal_rank_fusion([["a", "b", "c"]], k=1)
    assert [s for _, s in unweighted_single] == pytest.approx(
        [1 / 2 / (1 / 2 + 1 / 3 + 1 / 4), 1 / 3 / (13 / 12), 1 / 4 / (13 / 12)]
    )


def test_rank_fusion_of_nothing_is_nothing() -> None:
    assert reciprocal_rank_fusion([]) == []
    assert reciprocal_rank_fusion([[], []]) == []
