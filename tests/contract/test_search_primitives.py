"""Contract: the search primitives of ``RecordSearch.searching()`` (the ``SearchSession`` port).

Each test reads the primitives directly, as :func:`~palimpsest.domain.search.run_search` does:
``dense_candidates`` and ``keyword_candidates`` (depth cut, order and ties, every direct
filter, ``record_ids`` narrowing), ``links_around`` (both directions, the other end filtered
without status), ``load`` (two id spaces, missing keys left out), ``message_neighbours`` (places
in one thread, not ``seq`` gaps) and what one session reads (committed state only, one state
from its first read on, never waiting for a writer).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence

import pytest
from palimpsest.domain.errors import VectorDimensionError
from palimpsest.domain.model import RecordLink, RecordType
from palimpsest.domain.ports import MemoryStore, SearchSession
from palimpsest.domain.search import CandidateKey

from .builders import (
    DIAG_12,
    E1,
    E2,
    E3,
    MINUS_E1,
    NEAR_E1,
    at,
    committing,
    invalid_record,
    link,
    message,
    query,
    record,
    seed,
    thread,
)

COS_NEAR = 0.9 / (0.9**2 + 0.1**2) ** 0.5
"""cos(NEAR_E1, E1)."""
COS_DIAG = 2**-0.5
"""cos(DIAG_12, E1)."""


def _keys(ranked: Iterable[tuple[CandidateKey, float]]) -> list[CandidateKey]:
    return [key for key, _score in ranked]


def _rec(record_id: str) -> CandidateKey:
    return (False, record_id)


def _msg(message_id: str) -> CandidateKey:
    return (True, message_id)


def _link_ids(around: Mapping[str, Sequence[RecordLink]]) -> dict[str, set[str]]:
    """``links_around``'s answer as link ids per frontier id, ids without links left out (the
    port allows either) and order ignored (the port promises none)."""
    return {record_id: {lk.id for lk in links} for record_id, links in around.items() if links}


def _dense(store: MemoryStore, depth: int = 100, **kwargs) -> list[tuple[CandidateKey, float]]:
    with store.searching() as session:
        return list(session.dense_candidates(query(**kwargs), depth))


def _keyword(
    store: MemoryStore, depth: int = 100, **kwargs
) -> tuple[list[tuple[CandidateKey, float]], float]:
    with store.searching() as session:
        found = session.keyword_candidates(query(**kwargs), depth)
        return list(found.ranked), found.ideal


# --- dense candidates -------------------------------------------------------------------------


@pytest.fixture
def vectors(store: MemoryStore) -> MemoryStore:
    seed(
        store,
        threads=[thread("t1")],
        messages=[(message("m-near", "t1", 1, "a message"), NEAR_E1), message("m-none", "t1", 2)],
        records=[
            (record("d-orthogonal"), E2),
            (record("a-same"), (3.0, 0.0, 0.0, 0.0)),  # cosine ignores the length
            (record("e-opposite"), MINUS_E1),
            (record("c-diagonal"), DIAG_12),
            (record("b-near"), NEAR_E1),
            record("f-no-vector"),
        ],
    )
    return store


def test_dense_candidates_are_every_vector_by_cosine_best_first(vectors: MemoryStore) -> None:
    ranked = _dense(vectors, vector=E1)
    assert _keys(ranked) == [
        _rec("a-same"),
        _rec("b-near"),
        _msg("m-near"),  # a tie with b-near: record type "fact" before "message"
        _rec("c-diagonal"),
        _rec("d-orthogonal"),
        _rec("e-opposite"),
    ]
    assert [score for _key, score in ranked] == pytest.approx([1.0, COS_NEAR, COS_NEAR, COS_DIAG, 0.0, -1.0])


def test_dense_candidates_stop_at_depth_keeping_the_best(vectors: MemoryStore) -> None:
    assert _keys(_dense(vectors, 2, vector=E1)) == [_rec("a-same"), _rec("b-near")]
    assert _keys(_dense(vectors, 3, vector=E1)) == [_rec("a-same"), _rec("b-near"), _msg("m-near")]
    assert _keys(_dense(vectors, 1, vector=MINUS_E1)) == [_rec("e-opposite")]
    assert len(_dense(vectors, 1000, vector=E1)) == 6


def test_dense_ties_are_ordered_by_record_type_name_then_id(store: MemoryStore) -> None:
    seed(
        store,
        threads=[thread("t1")],
        messages=[(message("a-message", "t1", 1), E3)],
        records=[
            (record("z-fact"), E3),
            (record("f2"), E3),
            (record("b-guideline", record_type=RecordType.GUIDELINE), E3),
            (record("f1"), E3),
            (record("a-preference", record_type=RecordType.PREFERENCE), E3),
        ],
    )
    expected = [
        _rec("f1"),
        _rec("f2"),
        _rec("z-fact"),
        _rec("b-guideline"),
        _msg("a-message"),
        _rec("a-preference"),
    ]
    assert _keys(_dense(store, vector=E3)) == expected
    assert _keys(_dense(store, 4, vector=E3)) == expected[:4]


@pytest.fixture
def filtered(store: MemoryStore) -> MemoryStore:
    """Every record holds the vector E1 and the word "note"; each fails at most one filter."""
    seed(
        store,
        threads=[thread("tA", user_id="A")],
        messages=[(message("msg", "tA", 1, "note in chat", user_id="A", metadata={"topic": "tea"}), E1)],
        records=[
            (record("ok", "note kept", user_id="A", metadata={"topic": "tea"}), E1),
            (record("other-user", "note of B", user_id="B", metadata={"topic": "tea"}), E1),
            (
                record(
                    "guideline",
                    "note rule",
                    user_id="A",
                    record_type=RecordType.GUIDELINE,
                    metadata={"topic": "tea"},
                ),
                E1,
            ),
            (record("expired", "note old", user_id="A", metadata={"topic": "tea"}, expires_at=at(-1)), E1),
            (record("coffee", "note coffee", user_id="A", metadata={"topic": "coffee"}), E1),
            (invalid_record("invalid", "note stale", user_id="A", metadata={"topic": "tea"}), E1),
        ],
    )
    return store


FILTERS = {
    "scope": ({"user_id": "A"}, {"msg", "ok", "guideline", "coffee", "invalid"}),
    "types": ({"record_types": frozenset({RecordType.FACT})}, {"ok", "other-user", "coffee", "invalid"}),
    "messages": ({"record_types": frozenset({RecordType.MESSAGE})}, {"msg"}),
    "expiry": ({"now": at(-5)}, {"msg", "ok", "other-user", "guideline", "expired", "coffee", "invalid"}),
    "metadata": ({"metadata_filter": {"topic": "tea"}}, {"msg", "ok", "other-user", "guideline", "invalid"}),
    "status": ({"include_invalid": False}, {"msg", "ok", "other-user", "guideline", "coffee"}),
    "record_ids": ({"record_ids": frozenset({"ok", "invalid", "expired", "msg"})}, {"ok", "invalid"}),
    "all": (
        {
            "user_id": "A",
            "record_types": frozenset({RecordType.FACT}),
            "metadata_filter": {"topic": "tea"},
            "include_invalid": False,
        },
        {"ok"},
    ),
}
"""filter -> the ids a direct candidate list holds (expired is hidden at NOW: expiry is a filter)."""


def test_dense_candidates_are_exactly_the_direct_candidates_the_query_admits(filtered: MemoryStore) -> None:
    got = {
        name: {key[1] for key in _keys(_dense(filtered, vector=E1, **flt))}
        for name, (flt, _) in FILTERS.items()
    }
    assert got == {name: expected for name, (_flt, expected) in FILTERS.items()}


def test_record_ids_narrow_dense_candidates_to_named_memory_records_with_their_own_cosine(
    vectors: MemoryStore,
) -> None:
    whole = dict(_dense(vectors, vector=E1))
    narrowed = _dense(
        vectors, vector=E1, record_ids=frozenset({"c-diagonal", "e-opposite", "m-near", "nowhere"})
    )
    assert _keys(narrowed) == [_rec("c-diagonal"), _rec("e-opposite")]  # a message is never named
    assert dict(narrowed) == {key: whole[key] for key in _keys(narrowed)}
    # depth cuts the narrowed list, not the whole one
    assert _keys(_dense(vectors, 1, vector=E1, record_ids=frozenset({"e-opposite", "d-orthogonal"}))) == [
        _rec("d-orthogonal")
    ]


def test_a_query_vector_of_another_dimension_raises_vector_dimension_error(vectors: MemoryStore) -> None:
    with vectors.searching() as session:
        with pytest.raises(VectorDimensionError):
            session.dense_candidates(query(vector=(1.0, 0.0, 0.0)), 10)
        with pytest.raises(VectorDimensionError):
            session.dense_candidates(query(vector=(1.0, 0.0, 0.0, 0.0, 0.0)), 10)
        # the session stays usable after the refusal
        assert _keys(session.dense_candidates(query(vector=E1), 1)) == [_rec("a-same")]


# --- keyword candidates -----------------------------------------------------------------------


@pytest.fixture
def drinks(store: MemoryStore) -> MemoryStore:
    seed(
        store,
        threads=[thread("t1")],
        messages=[message("m-tea", "t1", 1, "shall we have tea")],
        records=[
            record("green", "green tea with lemon"),
            (record("coffee", "black coffee in the morning"), E1),
            record("kyoto", "tea ceremony in kyoto"),
            record("pot", "a tea pot, a tea cup and more tea"),
            record("water", "sparkling mineral water"),
        ],
    )
    return store


def test_keyword_candidates_share_a_term_with_positive_raw_relevance_and_a_positive_ideal(
    drinks: MemoryStore,
) -> None:
    ranked, ideal = _keyword(drinks, text="tea")
    assert {key for key, _ in ranked} == {_rec("green"), _rec("kyoto"), _rec("pot"), _msg("m-tea")}
    assert all(raw > 0 for _key, raw in ranked)
    assert ideal > 0
    raws = [raw for _key, raw in ranked]
    assert raws == sorted(raws, reverse=True)
    assert ranked[0][0] == _rec("pot")  # three times "tea"
    ranked, ideal = _keyword(drinks, text="kyoto coffee")
    assert {key for key, _ in ranked} == {_rec("kyoto"), _rec("coffee")}  # any one term suffices
    assert ideal > 0
    ranked, ideal = _keyword(drinks, text="chocolate")
    assert ranked == [] and ideal > 0  # a term found nowhere still has an ideal


def test_keyword_matching_ignores_case(drinks: MemoryStore) -> None:
    assert _keyword(drinks, text="TEA Kyoto") == _keyword(drinks, text="tea kyoto")


def test_keyword_candidates_stop_at_depth_keeping_the_best(drinks: MemoryStore) -> None:
    whole, ideal = _keyword(drinks, text="tea")
    for depth in (1, 2, 3):
        ranked, cut_ideal = _keyword(drinks, depth, text="tea")
        assert ranked == whole[:depth]
        assert cut_ideal == ideal


def test_keyword_ties_are_ordered_by_record_type_name_then_id(store: MemoryStore) -> None:
    seed(
        store,
        threads=[thread("t1")],
        messages=[message("a-message", "t1", 1, "tea time")],
        records=[
            record("z-fact", "tea time"),
            record("f1", "tea time"),
            record("b-guideline", "tea time", record_type=RecordType.GUIDELINE),
            record("a-preference", "tea time", record_type=RecordType.PREFERENCE),
            record("other", "sparkling water"),
        ],
    )
    ranked, _ideal = _keyword(store, text="tea")
    assert _keys(ranked) == [
        _rec("f1"),
        _rec("z-fact"),
        _rec("b-guideline"),
        _msg("a-message"),
        _rec("a-preference"),
    ]
    assert len({raw for _key, raw in ranked}) == 1


def test_keyword_candidates_are_exactly_the_direct_candidates_the_query_admits(filtered: MemoryStore) -> None:
    got = {
        name: {key[1] for key in _keys(_keyword(filtered, text="note", **flt)[0])}
        for name, (flt, _) in FILTERS.items()
    }
    assert got == {name: expected for name, (_flt, expected) in FILTERS.items()}


def test_record_ids_narrow_keyword_candidates_but_not_the_statistics_they_are_scored_against(
    drinks: MemoryStore,
) -> None:
    for text in ("tea", "tea kyoto", "green tea lemon chocolate"):
        whole, ideal = _keyword(drinks, text=text)
        raw_of = dict(whole)
        for named in ({"kyoto"}, {"green", "water"}, {"pot", "kyoto", "m-tea"}):
            narrowed, narrowed_ideal = _keyword(drinks, text=text, record_ids=frozenset(named))
            expected = [(key, raw) for key, raw in whole if not key[0] and key[1] in named]
            assert _keys(narrowed) == _keys(expected), (text, named)
            # the same raw relevance as in the whole search: a narrowed search is not a search
            # of a smaller collection
            assert [raw for _key, raw in narrowed] == pytest.approx(
                [raw_of[key] for key in _keys(narrowed)], rel=1e-9
            )
            assert narrowed_ideal == pytest.approx(ideal, rel=1e-9)


# --- links around a frontier ------------------------------------------------------------------


@pytest.fixture
def graph(store: MemoryStore) -> MemoryStore:
    """``a`` and ``b`` of user A, their neighbours each failing at most one filter."""
    seed(
        store,
        records=[
            record("a", user_id="A", metadata={"topic": "tea"}),
            record("b", user_id="A", metadata={"topic": "tea"}),
            record("c", user_id="A", metadata={"topic": "tea"}),
            record("d", user_id="A", metadata={"topic": "tea"}),
            record("lonely", user_id="A", metadata={"topic": "tea"}),
            invalid_record("stale", user_id="A", metadata={"topic": "tea"}),
            record("other-user", user_id="B", metadata={"topic": "tea"}),
            record("expired", user_id="A", metadata={"topic": "tea"}, expires_at=at(-1)),
            record("coffee", user_id="A", metadata={"topic": "coffee"}),
            record("rule", user_id="A", metadata={"topic": "tea"}, record_type=RecordType.GUIDELINE),
        ],
        links=[
            link("l-ab", "a", "b", created_at=at(1)),
            link("l-ca", "c", "a", "refines", created_at=at(2)),  # incoming to a
            link("l-bd", "b", "d", created_at=at(3)),
            link("l-a-stale", "stale", "a", "supersedes", created_at=at(4)),
            link("l-a-other", "a", "other-user", created_at=at(5)),
            link("l-a-expired", "a", "expired", created_at=at(6)),
            link("l-a-coffee", "coffee", "a", created_at=at(7)),
            link(
                "l-a-rule",
                "a",
                "rule",
                source_type=RecordType.FACT,
                target_type=RecordType.GUIDELINE,
                created_at=at(8),
            ),
            link("l-cd", "c", "d", created_at=at(9)),  # touches no frontier id
        ],
    )
    return store


def _around(store: MemoryStore, frontier: Sequence[str], **kwargs) -> dict[str, set[str]]:
    with store.searching() as session:
        return _link_ids(session.links_around(frontier, query(vector=E1, **kwargs)))


def test_links_around_follow_links_both_ways(graph: MemoryStore) -> None:
    assert _around(
        graph, ["a"], user_id="A", metadata_filter={"topic": "tea"}, record_types=frozenset({RecordType.FACT})
    ) == {"a": {"l-ab", "l-ca", "l-a-stale"}}
    assert _around(graph, ["d"]) == {"d": {"l-bd", "l-cd"}}  # both incoming
    assert _around(graph, ["lonely"]) == {}


def test_links_around_filter_the_other_end_by_scope_type_expiry_and_metadata(graph: MemoryStore) -> None:
    everything = {
        "l-ab",
        "l-ca",
        "l-a-stale",
        "l-a-other",
        "l-a-coffee",
        "l-a-rule",
    }  # expired: hidden at NOW
    cases = {
        "none": ({}, everything),
        "scope": ({"user_id": "A"}, everything - {"l-a-other"}),
        "types": ({"record_types": frozenset({RecordType.FACT})}, everything - {"l-a-rule"}),
        "expiry": ({"now": at(-5)}, everything | {"l-a-expired"}),
        "metadata": ({"metadata_filter": {"topic": "tea"}}, everything - {"l-a-coffee"}),
    }
    got = {name: _around(graph, ["a"], **flt).get("a", set()) for name, (flt, _) in cases.items()}
    assert got == {name: expected for name, (_flt, expected) in cases.items()}


def test_links_around_do_not_filter_status_nor_record_ids(graph: MemoryStore) -> None:
    # include_invalid and record_ids are direct filters only: linked context may show history
    # and any record the search does not name.
    got = _around(
        graph,
        ["a"],
        user_id="A",
        metadata_filter={"topic": "tea"},
        record_types=frozenset({RecordType.FACT}),
        include_invalid=False,
        record_ids=frozenset({"lonely"}),
    )
    assert got == {"a": {"l-ab", "l-ca", "l-a-stale"}}


def test_links_around_answer_for_every_id_of_a_frontier_at_once(graph: MemoryStore) -> None:
    flt = {"user_id": "A", "metadata_filter": {"topic": "tea"}, "record_types": frozenset({RecordType.FACT})}
    assert _around(graph, ["a", "b", "c", "lonely", "nowhere"], **flt) == {
        "a": {"l-ab", "l-ca", "l-a-stale"},
        "b": {"l-ab", "l-bd"},  # a link between two frontier ids is listed under both
        "c": {"l-ca", "l-cd"},
    }
    # the same as asking for each id alone
    one_by_one: dict[str, set[str]] = {}
    for record_id in ["a", "b", "c", "lonely", "nowhere"]:
        one_by_one.update(_around(graph, [record_id], **flt))
    assert one_by_one == _around(graph, ["a", "b", "c", "lonely", "nowhere"], **flt)


def test_links_around_return_the_stored_links(graph: MemoryStore) -> None:
    stored = link("l-ca", "c", "a", "refines", created_at=at(2))
    with graph.searching() as session:
        around = session.links_around(["c"], query(vector=E1, user_id="A", metadata_filter={"topic": "tea"}))
    (found,) = [lk for lk in around["c"] if lk.id == "l-ca"]
    assert found == stored


# --- load -------------------------------------------------------------------------------------


def test_load_keeps_messages_and_memory_records_in_separate_id_spaces(store: MemoryStore) -> None:
    m = message("same", "t1", 1, "a message called same")
    r = record("same", "a record called same", metadata={"x": 1})
    other = record("other")
    seed(store, threads=[thread("t1")], messages=[(m, E1)], records=[(r, E2), other])
    with store.searching() as session:
        loaded = session.load([_msg("same"), _rec("same"), _rec("other")])
        assert dict(loaded) == {_msg("same"): m, _rec("same"): r, _rec("other"): other}
        assert session.load([_msg("other")]) == {}  # no message is called "other"


def test_load_leaves_out_keys_with_no_row(store: MemoryStore) -> None:
    seed(store, records=[record("a")])
    with store.searching() as session:
        assert dict(session.load([_rec("a"), _rec("missing"), _msg("missing"), _msg("a")])) == {
            _rec("a"): record("a")
        }
        assert dict(session.load([])) == {}


def test_load_returns_invalid_rows_and_filters_nothing(store: MemoryStore) -> None:
    stale = invalid_record("stale", user_id="B", metadata={"topic": "coffee"})
    seed(store, records=[stale])
    with store.searching() as session:
        assert dict(session.load([_rec("stale")])) == {_rec("stale"): stale}


# --- message neighbours ----------------------------------------------------------------------


NAMED = {"speaker": "Ann"}


@pytest.fixture
def threads(store: MemoryStore) -> MemoryStore:
    """Thread t1: a1..a6 at seq 10, 20, ..., 60; thread t2: b1..b3 at seq 15, 25, 35 (between
    t1's); thread t3: c1 alone; a memory record named a1. Stored out of order, threads mixed."""
    seed(
        store,
        threads=[thread("t1"), thread("t2"), thread("t3")],
        messages=[
            message(f"{name}{i}", thread_id, 10 * i + offset, metadata=NAMED)
            for name, i, thread_id, offset in [
                *(("a", i, "t1", 0) for i in (4, 1, 6)),
                *(("b", i, "t2", 5) for i in (3, 1, 2)),
                *(("a", i, "t1", 0) for i in (2, 5, 3)),
                ("c", 1, "t3", -9),
            ]
        ],
        records=[record("a1")],
    )
    return store


def _neighbours(store: MemoryStore, message_ids: Sequence[str], radius: int) -> dict[str, list[str]]:
    with store.searching() as session:
        return {mid: list(found) for mid, found in session.message_neighbours(message_ids, radius).items()}


def test_message_neighbours_are_the_nearest_places_on_both_sides_in_thread_order(threads: MemoryStore) -> None:
    assert _neighbours(threads, ["a3"], 1) == {"a3": ["a2", "a4"]}
    assert _neighbours(threads, ["a3"], 2) == {"a3": ["a1", "a2", "a4", "a5"]}
    assert _neighbours(threads, ["a4", "a2"], 2) == {"a4": ["a2", "a3", "a5", "a6"], "a2": ["a1", "a3", "a4"]}


def test_message_neighbours_stop_at_the_ends_of_the_thread(threads: MemoryStore) -> None:
    assert _neighbours(threads, ["a1", "a6"], 2) == {"a1": ["a2", "a3"], "a6": ["a4", "a5"]}
    assert _neighbours(threads, ["a2"], 100) == {"a2": ["a1", "a3", "a4", "a5", "a6"]}
    assert _neighbours(threads, ["c1"], 3) == {"c1": []}  # alone in its thread


def test_message_neighbours_count_places_not_seq_so_a_deleted_message_is_skipped(threads: MemoryStore) -> None:
    with committing(threads) as uow:
        assert uow.messages.delete("a3")
    assert _neighbours(threads, ["a4"], 1) == {"a4": ["a2", "a5"]}
    assert _neighbours(threads, ["a2"], 2) == {"a2": ["a1", "a4", "a5"]}
    assert _neighbours(threads, ["a3"], 1) == {}  # deleted: no longer a message of this read


def test_message_neighbours_never_cross_into_another_thread(threads: MemoryStore) -> None:
    found = _neighbours(threads, ["a2", "b2", "c1"], 5)
    assert found == {"a2": ["a1", "a3", "a4", "a5", "a6"], "b2": ["b1", "b3"], "c1": []}


def test_message_neighbours_leave_out_ids_naming_no_message(threads: MemoryStore) -> None:
    assert _neighbours(threads, ["missing", "a2", "t1"], 1) == {"a2": ["a1", "a3"]}
    assert _neighbours(threads, ["missing"], 1) == {}
    with committing(threads) as uow:
        uow.messages.delete("a1")
    assert _neighbours(threads, ["a1"], 1) == {}  # the memory record a1 is not a message


def test_message_neighbours_of_no_radius_or_no_ids_are_empty(threads: MemoryStore) -> None:
    assert _neighbours(threads, ["a3"], 0) == {}
    assert _neighbours(threads, ["a3"], -1) == {}
    assert _neighbours(threads, [], 2) == {}


def test_message_neighbours_filter_nothing_expired_messages_count(store: MemoryStore) -> None:
    seed(
        store,
        threads=[thread("t1", user_id="A")],
        messages=[
            message("m1", "t1", 1, user_id="A", metadata=NAMED),
            message("m2", "t1", 2, user_id="A", expires_at=at(-60), metadata={"x": 1, **NAMED}),
            message("m3", "t1", 3, user_id="A", metadata=NAMED),
        ],
    )
    assert _neighbours(store, ["m1", "m2"], 1) == {"m1": ["m2"], "m2": ["m1", "m3"]}


def test_message_neighbours_are_named_turns_only(store: MemoryStore) -> None:
    """Unnamed messages (no speaker, a blank one, one that is not a string) are neither asked
    about nor counted as places: conversation context is read between people's turns."""
    seed(
        store,
        threads=[thread("t1")],
        messages=[
            message("n1", "t1", 1, metadata={"speaker": "Ann"}),
            message("u1", "t1", 2),
            message("n2", "t1", 3, metadata={"speaker": "Bo", "x": 1}),
            message("u2", "t1", 4, metadata={"speaker": "   "}),
            message("u3", "t1", 5, metadata={"speaker": 7}),
            message("n3", "t1", 6, metadata={"speaker": " Ann "}),
        ],
    )
    assert _neighbours(store, ["n1", "n2", "n3", "u1", "u2", "u3"], 1) == {
        "n1": ["n2"],
        "n2": ["n1", "n3"],
        "n3": ["n2"],
    }


def test_message_neighbours_read_the_sessions_state(threads: MemoryStore) -> None:
    with threads.unit_of_work() as writer:
        writer.messages.add(message("a7", "t1", 70, metadata=NAMED))
        with threads.searching() as session:
            assert {k: list(v) for k, v in session.message_neighbours(["a6", "a7"], 1).items()} == {"a6": ["a5"]}
        writer.rollback()


# --- what one session reads -------------------------------------------------------------------


def _everything(session: SearchSession) -> tuple:
    """What every primitive answers about the seeded rows below."""
    q = query(vector=E1, text="note")
    return (
        _keys(session.dense_candidates(q, 100)),
        _keys(session.keyword_candidates(q, 100).ranked),
        _link_ids(session.links_around(["a", "b"], q)),
        dict(session.load([_rec("a"), _rec("b"), _rec("new")])),
    )


def _seed_two(store: MemoryStore) -> None:
    seed(
        store,
        records=[(record("a", "note a"), E1), (record("b", "note b"), NEAR_E1)],
        links=[link("l1", "a", "b")],
    )


def test_a_session_never_sees_uncommitted_writes(store: MemoryStore) -> None:
    _seed_two(store)
    with store.searching() as session:
        before = _everything(session)
    with store.unit_of_work() as writer:
        writer.records.add(record("new", "note new"), embedding=E1)
        writer.links.add(link("l2", "new", "a"))
        writer.records.update(record("b", "changed b"))
        with store.searching() as session:
            assert _everything(session) == before
        writer.rollback()
    with store.searching() as session:
        assert _everything(session) == before


def test_a_session_sees_what_was_committed_before_it_opened(store: MemoryStore) -> None:
    _seed_two(store)
    with committing(store) as uow:
        uow.records.add(record("new", "note new"), embedding=E1)
        uow.links.add(link("l2", "new", "a"))
    with store.searching() as session:
        dense, keyword, around, loaded = _everything(session)
    assert _rec("new") in dense and _rec("new") in keyword
    assert around["a"] == {"l1", "l2"}
    assert set(loaded) == {_rec("a"), _rec("b"), _rec("new")}


def test_a_session_reads_one_state_from_its_first_read_on(store: MemoryStore) -> None:
    """A commit made while a session is open, after its first read, is seen by none of its
    later reads (a store takes its snapshot when the session opens or at its first read)."""
    _seed_two(store)
    with store.searching() as session:
        first = _everything(session)
        with committing(store) as writer:
            writer.records.add(record("new", "note new"), embedding=E1)
            writer.links.add(link("l2", "new", "a"))
            writer.records.update(record("b", "changed b"))
        assert dict(session.load([_rec("a"), _rec("b"), _rec("new")])) == first[3]
        assert first[3][_rec("b")].content == "note b"
    with store.searching() as session:
        assert dict(session.load([_rec("b"), _rec("new")])) == {
            _rec("b"): record("b", "changed b"),
            _rec("new"): record("new", "note new"),
        }


def test_a_session_does_not_wait_for_a_writer_of_another_thread(store: MemoryStore) -> None:
    _seed_two(store)
    holding, release = threading.Event(), threading.Event()
    released: list[bool] = []

    def writer() -> None:
        with store.unit_of_work() as uow:
            uow.records.add(record("new", "note new"), embedding=E1)
            holding.set()
            release.wait(timeout=60)
            released.append(True)
            uow.commit()

    worker = threading.Thread(target=writer)
    worker.start()
    try:
        assert holding.wait(timeout=60)
        with store.searching() as session:
            dense, keyword, _around, loaded = _everything(session)
        assert released == []  # the session finished while the writer still held its unit of work
        assert _rec("new") not in dense and _rec("new") not in keyword and _rec("new") not in loaded
    finally:
        release.set()
        worker.join(timeout=60)
