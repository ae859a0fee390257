"""Contract: RecordSearch.search — ranking, filters, scope isolation, robustness of keyword input."""

from __future__ import annotations

import pytest
from palimpsest.domain.errors import VectorDimensionError
from palimpsest.domain.model import RecordType
from palimpsest.domain.ports import MemoryStore
from palimpsest.domain.search import SearchHit
from palimpsest.domain.sentinel import ANY

from .builders import (
    DIAG_12,
    E1,
    E2,
    E3,
    MINUS_E1,
    NEAR_E1,
    at,
    flatten,
    ids,
    invalid_record,
    link,
    message,
    query,
    record,
    seed,
    thread,
)

# Every filter must hold whichever way candidates are found: records below carry the vector E1
# (or close to it) and the word "note", so each mode alone would return all of them.
MODES = {
    "vector": {"vector": E1},
    "keyword": {"text": "note"},
    "hybrid": {"vector": E1, "text": "note"},
}


@pytest.fixture(params=list(MODES))
def mode(request: pytest.FixtureRequest) -> dict:
    return MODES[request.param]


def _hit_ids(store: MemoryStore, mode: dict, **kwargs) -> set[str]:
    return set(ids(store.search(query(k=100, **mode, **kwargs))))


def _assert_best_first(hits: list[SearchHit]) -> None:
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)


# --- vector ranking ---------------------------------------------------------------------------


def test_vector_search_ranks_by_cosine_similarity(store: MemoryStore) -> None:
    seed(
        store,
        records=[
            (record("d-orthogonal"), E2),
            (record("a-same"), (3.0, 0.0, 0.0, 0.0)),  # cosine ignores the length
            (record("e-opposite"), MINUS_E1),
            (record("c-diagonal"), DIAG_12),
            (record("b-near"), NEAR_E1),
            record("f-no-vector"),
        ],
    )
    hits = store.search(query(vector=E1))
    assert ids(hits) == ["a-same", "b-near", "c-diagonal", "d-orthogonal", "e-opposite"]
    _assert_best_first(hits)
    distances = [h.distance for h in hits]
    assert distances == sorted(distances)


def test_k_caps_the_number_of_hits_keeping_the_best(store: MemoryStore) -> None:
    seed(
        store, records=[(record("a"), E1), (record("b"), NEAR_E1), (record("c"), DIAG_12), (record("d"), E2)]
    )
    assert ids(store.search(query(vector=E1, k=2))) == ["a", "b"]
    assert ids(store.search(query(vector=E1, k=1))) == ["a"]
    assert len(store.search(query(vector=E1, k=1000))) == 4


def test_equal_scores_are_ordered_by_record_type_then_id(store: MemoryStore) -> None:
    seed(
        store,
        threads=[thread("t1")],
        messages=[(message("a-message", "t1", 1), E3)],
        records=[(record("z-fact"), E3), (record("f2"), E3), (record("f1"), E3)],
    )
    assert ids(store.search(query(vector=E3))) == ["f1", "f2", "z-fact", "a-message"]


def test_a_hit_carries_the_stored_entity(store: MemoryStore) -> None:
    r = record("r1", "Ann likes tea", user_id="ann", metadata={"x": [1]})
    m = message("m1", "t1", 1, "I like tea", user_id="ann")
    seed(store, threads=[thread("t1", user_id="ann")], messages=[(m, E2)], records=[(r, E1)])
    (hit,) = store.search(query(vector=E1, k=1))
    assert hit.record == r and hit.id == "r1" and hit.record_type is RecordType.FACT
    (hit,) = store.search(query(vector=E2, k=1))
    assert hit.record == m and hit.id == "m1" and hit.record_type is RecordType.MESSAGE


# --- keyword and hybrid -----------------------------------------------------------------------


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
            record("water", "sparkling mineral water"),
        ],
    )
    return store


def test_keyword_search_finds_records_sharing_a_term_and_nothing_else(drinks: MemoryStore) -> None:
    hits = drinks.search(query(text="tea"))
    assert set(ids(hits)) == {"green", "kyoto", "m-tea"}  # found without any vector
    _assert_best_first(hits)
    assert ids(drinks.search(query(text="coffee"))) == ["coffee"]
    assert drinks.search(query(text="chocolate")) == []


def test_keyword_search_admits_records_sharing_any_one_of_the_terms(drinks: MemoryStore) -> None:
    # "records sharing no term are not candidates": a record sharing one term is a candidate.
    assert set(ids(drinks.search(query(text="coffee kyoto")))) == {"coffee", "kyoto"}


def test_hybrid_search_returns_the_union_with_the_top_of_both_lists_first(store: MemoryStore) -> None:
    seed(
        store,
        records=[
            (record("b-vector-only", "black coffee"), NEAR_E1),
            record("d-keyword-only", "tea kettle on the stove"),
            (record("a-both", "tea"), E1),
            (record("c-neither", "sparkling water"), E2),
        ],
    )
    hits = store.search(query(vector=E1, text="tea"))
    assert ids(hits)[0] == "a-both"
    assert {"a-both", "b-vector-only", "d-keyword-only"} <= set(ids(hits))
    _assert_best_first(hits)
    # c-neither shares no term but has a vector, so it is a (last) vector candidate
    assert ids(store.search(query(vector=E1, text="tea", k=2)))[0] == "a-both"


@pytest.fixture
def fusion_case(store: MemoryStore) -> MemoryStore:
    """x is the best vector match but the weaker keyword match; y the reverse, by a hair in
    vector terms; z matches the vector poorly and no keyword."""
    seed(
        store,
        records=[
            (record("x", "tea pot"), E1),
            (record("y", "tea tea"), NEAR_E1),
            (record("z", "water"), E2),
        ],
    )
    return store


def test_rank_fusion_ties_keep_the_dense_order_and_score_fusion_keeps_score_gaps(
    fusion_case: MemoryStore,
) -> None:
    # RRF: x is 1st + 2nd, y 2nd + 1st: a tie, broken by the dense list's order.
    rrf = fusion_case.search(query(vector=E1, text="tea", fusion="rrf"))
    assert ids(rrf)[:2] == ["x", "y"]
    # Score fusion: y is a hair below x in dense similarity but far above it in keyword score.
    fused = fusion_case.search(query(vector=E1, text="tea", fusion="score"))
    assert ids(fused) == ["y", "x", "z"]
    _assert_best_first(fused)
    assert all(0.0 <= h.score <= 1.0 for h in fused)
    near = 0.9 / (0.9**2 + 0.1**2) ** 0.5  # cos(NEAR_E1, E1); min-max over (1, near, 0) keeps it
    assert [h.score for h in fused] == pytest.approx([0.5 * near + 0.5, 0.5, 0.0], abs=1e-6)


def test_absolute_fusion_adds_cosine_to_the_share_of_the_ideal_keyword_score(fusion_case: MemoryStore) -> None:
    # y holds "tea" twice (its keyword score reaches the query's ideal), x once in a text of
    # two words (a share below 1): y's lead in keyword outweighs x's hair in cosine.
    fused = fusion_case.search(query(vector=E1, text="tea", fusion="absolute"))
    assert ids(fused) == ["y", "x", "z"]
    _assert_best_first(fused)
    near = 0.9 / (0.9**2 + 0.1**2) ** 0.5
    y, x, z = (h.score for h in fused)
    assert y == pytest.approx(0.5 * near + 0.5, abs=1e-6)  # keyword share clipped at 1
    assert 0.5 < x < 1.0 and z == pytest.approx(0.0, abs=1e-6)  # z: cos(E2, E1) = 0, no keyword
    # No stretching to the list's best: a query whose one term is rare everywhere but matched
    # only weakly keeps the keyword share below 1 for every hit.
    weak = fusion_case.search(query(vector=E1, text="tea unheardof", fusion="absolute"))
    assert all(h.score < 0.5 + 0.5 * 0.5 for h in weak)


@pytest.mark.parametrize("fusion", ["rrf", "score", "absolute"])
def test_a_dense_weight_of_one_or_zero_is_the_dense_or_the_keyword_ranking(
    fusion_case: MemoryStore, fusion: str
) -> None:
    dense_only = ids(fusion_case.search(query(vector=E1)))
    keyword_only = ids(fusion_case.search(query(text="tea")))
    assert ids(fusion_case.search(query(vector=E1, text="tea", fusion=fusion, dense_weight=1.0))) == dense_only
    assert ids(fusion_case.search(query(vector=E1, text="tea", fusion=fusion, dense_weight=0.0))) == keyword_only
    assert keyword_only == ["y", "x"]


def test_record_types_restricts_the_hits(drinks: MemoryStore) -> None:
    assert set(ids(drinks.search(query(text="tea", record_types=frozenset({RecordType.MESSAGE}))))) == {
        "m-tea"
    }
    assert set(ids(drinks.search(query(text="tea", record_types=frozenset({"fact"}))))) == {"green", "kyoto"}
    assert drinks.search(query(text="tea", record_types=frozenset({RecordType.GUIDELINE}))) == []


def test_messages_are_searchable_as_record_type_message(store: MemoryStore) -> None:
    m = message("m1", "t1", 1, "my cat is called Miso", metadata={"lang": "en"})
    seed(store, threads=[thread("t1")], messages=[(m, E1)], records=[(record("r1", "cats"), NEAR_E1)])
    (hit,) = store.search(query(vector=E1, record_types=frozenset({RecordType.MESSAGE})))
    assert hit.record == m and hit.record_type is RecordType.MESSAGE
    assert ids(store.search(query(text="Miso"))) == ["m1"]
    assert ids(store.search(query(vector=E1))) == ["m1", "r1"]


# --- status, expiry, metadata -----------------------------------------------------------------


def test_include_invalid_false_drops_invalid_records_from_direct_hits(store: MemoryStore, mode: dict) -> None:
    seed(
        store,
        records=[(record("current", "note: tea"), E1), (invalid_record("stale", "note: coffee"), NEAR_E1)],
    )
    assert _hit_ids(store, mode) == {"current", "stale"}
    assert _hit_ids(store, mode, include_invalid=False) == {"current"}


def test_expired_rows_are_hidden_from_search(store: MemoryStore, mode: dict) -> None:
    seed(
        store,
        threads=[thread("t1")],
        messages=[(message("m-soon", "t1", 1, "note one", expires_at=at(10)), E1)],
        records=[
            (record("r-soon", "note two", expires_at=at(10)), E1),
            (record("r-gone", "note three", expires_at=at(-1)), E1),
            (record("r-never", "note four"), E1),
        ],
    )
    assert _hit_ids(store, mode) == {"m-soon", "r-soon", "r-never"}
    assert _hit_ids(store, mode, now=at(10)) == {"r-never"}  # expiry is inclusive
    assert _hit_ids(store, mode, now=at(-5)) == {"m-soon", "r-soon", "r-gone", "r-never"}


M1 = {"topic": "tea", "tags": ["green", "hot"], "owner": {"name": "ann", "team": "x"}, "flag": True, "n": 1}
M2 = {"topic": "coffee", "tags": ["black"], "owner": {"name": "bob"}, "flag": False, "n": 2}
M3 = {"topic": "tea", "tags": ["green", "iced"]}


@pytest.fixture
def tagged(store: MemoryStore) -> MemoryStore:
    seed(
        store,
        threads=[thread("t1")],
        messages=[
            (message("msg", "t1", 1, "note in chat", metadata={"topic": "tea", "tags": ["hot"]}), NEAR_E1)
        ],
        records=[
            (record("m1", "note one", metadata=M1), E1),
            (record("m2", "note two", metadata=M2), E1),
            (record("m3", "note three", metadata=M3), E1),
            (record("m4", "note four"), E1),
        ],
    )
    return store


# (filter, expected hits); checked as one table per adapter and mode so that a failure shows
# every disagreeing row at once (and the suite stays fast).
METADATA_TABLE = [
    ({}, {"m1", "m2", "m3", "m4", "msg"}),
    ({"topic": "tea"}, {"m1", "m3", "msg"}),
    ({"topic": "tea", "tags": {"$array_contains": "iced"}}, {"m3"}),
    ({"owner": {"name": "ann"}}, {"m1"}),
    ({"owner": {"name": "ann", "team": "y"}}, set()),
    ({"owner": {}}, {"m1", "m2"}),
    ({"tags": ["green", "hot"]}, {"m1"}),
    ({"tags": ["hot", "green"]}, set()),
    ({"tags": {"$array_contains": "green"}}, {"m1", "m3"}),
    ({"tags": {"$array_contains": ["green", "hot"]}}, {"m1"}),
    ({"tags": {"$array_contains": ["hot", "iced"]}}, set()),
    ({"tags": {"$array_contains_any": ["hot", "black"]}}, {"m1", "m2", "msg"}),
    ({"tags": {"$array_contains_any": ["nope"]}}, set()),
    ({"topic": {"$not": "tea"}}, {"m2", "m4"}),
    ({"tags": {"$not": {"$array_contains": "green"}}}, {"m2", "m4", "msg"}),
    ({"owner": {"$not": {"name": "ann"}}}, {"m2", "m3", "m4", "msg"}),
    ({"absent": {"$not": {"$array_contains": "x"}}}, {"m1", "m2", "m3", "m4", "msg"}),
    ({"absent": {"$not": "x"}}, {"m1", "m2", "m3", "m4", "msg"}),
    ({"tags": {"$array_contains": "green", "$not": {"$array_contains": "iced"}}}, {"m1"}),
    ({"flag": True}, {"m1"}),
    ({"flag": 1}, set()),
    ({"n": 1}, {"m1"}),
    ({"n": 1.0}, {"m1"}),
    ({"n": True}, set()),
    ({"flag": 0}, set()),
    ({"absent": None}, set()),
    # A value of another JSON type is no match, never an error (and $not of it matches):
    ({"topic": {"$array_contains": "tea"}}, set()),
    ({"topic": {"$array_contains_any": ["te", "tea"]}}, set()),
    ({"topic": {"name": "tea"}}, set()),
    ({"tags": "green"}, set()),
    ({"n": "1"}, set()),
    ({"topic": {"$not": {"$array_contains": "tea"}}}, {"m1", "m2", "m3", "m4", "msg"}),
]


def test_the_metadata_filter_language_selects_hits(tagged: MemoryStore, mode: dict) -> None:
    got = {repr(flt): _hit_ids(tagged, mode, metadata_filter=flt) for flt, _ in METADATA_TABLE}
    assert got == {repr(flt): expected for flt, expected in METADATA_TABLE}


# --- scope ------------------------------------------------------------------------------------


@pytest.fixture
def scoped(store: MemoryStore) -> MemoryStore:
    seed(
        store,
        threads=[thread("tA", user_id="A", agent_id="bot"), thread("tB", user_id="B", agent_id="bot")],
        messages=[
            (message("ma", "tA", 1, "note from A", user_id="A", agent_id="bot"), E1),
            (message("mb", "tB", 1, "note from B", user_id="B", agent_id="bot"), E1),
        ],
        records=[
            (record("ra", "note a", user_id="A", agent_id="bot"), E1),
            (record("ra-t", "note a in thread", user_id="A", agent_id="bot", thread_id="tA"), E1),
            (record("ra-x", "note a without agent", user_id="A"), E1),
            (record("rb", "note b", user_id="B", agent_id="bot"), E1),
            (record("rn", "note unscoped"), E1),
        ],
    )
    return store


EVERYTHING = {"ma", "mb", "ra", "ra-t", "ra-x", "rb", "rn"}


SCOPE_TABLE = [
    ({}, EVERYTHING),
    ({"user_id": ANY, "agent_id": ANY, "thread_id": ANY}, EVERYTHING),
    ({"user_id": "A"}, {"ma", "ra", "ra-t", "ra-x"}),
    ({"user_id": "B"}, {"mb", "rb"}),
    ({"user_id": "C"}, set()),
    ({"user_id": None}, {"rn"}),
    ({"user_id": None, "agent_id": None, "thread_id": None}, {"rn"}),
    ({"user_id": "A", "agent_id": "bot"}, {"ma", "ra", "ra-t"}),
    ({"user_id": "A", "agent_id": None}, {"ra-x"}),
    ({"user_id": "A", "thread_id": "tA"}, {"ma", "ra-t"}),
    ({"user_id": "A", "thread_id": None}, {"ra", "ra-x"}),
    ({"thread_id": None}, {"ra", "ra-x", "rb", "rn"}),
    ({"agent_id": "bot"}, {"ma", "mb", "ra", "ra-t", "rb"}),
    ({"thread_id": "tB"}, {"mb"}),
]


def test_a_search_returns_only_rows_its_scope_admits(scoped: MemoryStore, mode: dict) -> None:
    got = {repr(scope): _hit_ids(scoped, mode, **scope) for scope, _ in SCOPE_TABLE}
    assert got == {repr(scope): expected for scope, expected in SCOPE_TABLE}


def test_a_search_scoped_to_one_user_never_reaches_another_users_records_through_links(
    store: MemoryStore, mode: dict
) -> None:
    seed(
        store,
        records=[
            (record("a1", "note of A", user_id="A"), E1),
            (record("b1", "note of B", user_id="B"), E1),
            (record("b2", "note of B again", user_id="B"), NEAR_E1),
            record("a2", "another memory of A", user_id="A"),
            record("a3", "a third memory of A", user_id="A"),
        ],
        links=[
            link("l1", "a1", "b1"),
            link("l2", "b2", "a1", "supersedes", created_at=at(1)),
            link("l3", "b1", "a2", created_at=at(2)),
            link("l4", "a1", "a3", created_at=at(3)),
        ],
    )
    hits = store.search(query(k=100, user_id="A", num_hops=2, **mode))
    assert ids(hits) == ["a1"]
    reached = {node.record.id for hit in hits for node in flatten(hit.linked)}
    assert reached == {"a3"}  # b1/b2 are B's; a2 is only reachable through b1
    for node in (node for hit in hits for node in flatten(hit.linked)):
        assert node.record.user_id == "A"


def test_filters_apply_before_k_so_a_narrow_search_is_never_starved(store: MemoryStore, mode: dict) -> None:
    # 60 better-ranked rows that the filters exclude, then the one row they admit.
    crowd = [(record(f"b{i:02}", "note note note", user_id="B"), E1) for i in range(20)]
    crowd += [(invalid_record(f"i{i:02}", "note note note", user_id="A"), E1) for i in range(20)]
    crowd += [(record(f"x{i:02}", "note note note", user_id="A", metadata={"k": "x"}), E1) for i in range(20)]
    seed(store, records=[*crowd, (record("wanted", "a note at last", user_id="A", metadata={"k": "y"}), E2)])
    hits = store.search(query(k=1, user_id="A", include_invalid=False, metadata_filter={"k": "y"}, **mode))
    assert ids(hits) == ["wanted"]


# --- malformed input --------------------------------------------------------------------------

FTS_SYNTAX = [
    '"',
    '"unbalanced',
    'tea"',
    "tea*",
    "*",
    "NEAR(tea",
    "NEAR(tea coffee, 2)",
    "tea OR",
    "OR",
    "AND",
    "NOT",
    "tea AND NOT",
    ")",
    "(",
    "tea)",
    ";",
    "tea; DROP TABLE records; --",
    "'",
    "col:tea",
    "^tea",
    "-tea",
    "+tea",
    "{tea}",
    "%",
    "_",
    "\\",
    "tea\x00",
    "NULL",
]


def test_keyword_text_with_query_syntax_does_not_raise(drinks: MemoryStore) -> None:
    for text in FTS_SYNTAX:
        hits = drinks.search(query(text=text))
        assert all(isinstance(h, SearchHit) for h in hits), text
        hybrid = drinks.search(query(text=text, vector=E1))
        assert "coffee" in ids(hybrid), text  # the vector half still answers
    assert set(ids(drinks.search(query(text="tea")))) == {"green", "kyoto", "m-tea"}  # store unharmed


def test_a_word_wrapped_in_query_syntax_still_matches(drinks: MemoryStore) -> None:
    wrapped = ["tea*", 'tea"', '"tea', "tea)", "(tea", "tea;", "tea OR", "-tea"]
    found = {text: {"green", "kyoto"} <= set(ids(drinks.search(query(text=text)))) for text in wrapped}
    assert found == dict.fromkeys(wrapped, True)


def test_a_query_vector_of_the_wrong_dimension_raises(store: MemoryStore) -> None:
    with pytest.raises(VectorDimensionError):
        store.search(query(vector=(1.0, 0.0, 0.0)))
    seed(store, records=[(record("r1", "tea"), E1)])
    with pytest.raises(VectorDimensionError):
        store.search(query(vector=(1.0, 0.0, 0.0)))
    with pytest.raises(VectorDimensionError):
        store.search(query(vector=(1.0, 0.0, 0.0), text="tea"))
    with pytest.raises(VectorDimensionError):
        store.search(query(vector=(1.0, 0.0, 0.0, 0.0, 0.0), text="tea"))


def test_searching_an_empty_store_returns_nothing(store: MemoryStore) -> None:
    assert store.search(query(vector=E1)) == []
    assert store.search(query(text="anything")) == []
    assert store.search(query(vector=E1, text="anything", num_hops=3)) == []


def test_a_larger_pool_with_the_same_fusion_k_keeps_the_fused_order(store: MemoryStore) -> None:
    import math

    records = []
    for i in range(120):
        angle = i * 0.013
        vector = (math.cos(angle), math.sin(angle), 0.01 * (i % 7), 0.0)
        words = " ".join(["tea"] * (1 + (119 - i) % 5) + [f"w{i}"])
        records.append((record(f"r{i:03d}", words), vector))
    seed(store, records=records)
    small = ids(store.search(query(vector=E1, text="tea", k=10)))
    pooled = ids(store.search(query(vector=E1, text="tea", k=50, fusion_k=10)))
    assert pooled[:10] == small
    # Without fusion_k the lists are deeper (200 instead of 50) and the order may differ.
    assert query(vector=E1, text="tea", k=50).fusion_depth == 200
    assert query(vector=E1, text="tea", k=50, fusion_k=10).fusion_depth == 50


# --- named records ----------------------------------------------------------------------------


@pytest.fixture
def named(store: MemoryStore) -> MemoryStore:
    """Records that each mode finds (vector near E1, the word "note"), one that no mode finds,
    a retired one, links between them, and a message with a record's id."""
    seed(
        store,
        threads=[thread("t1")],
        messages=[(message("n2", "t1", 1, "a note in the chat"), E1)],
        records=[
            (record("n1", "first note"), E1),
            (record("n2", "second note, a longer note"), NEAR_E1),
            (record("n3", "third note with many other words in it"), DIAG_12),
            (record("n4", "nothing shared"), None),
            (invalid_record("n5", "retired note"), NEAR_E1),
        ],
        links=[link("l1", "n2", "n1"), link("l2", "n3", "n2"), link("l3", "n4", "n3")],
    )
    return store


def test_a_search_narrowed_to_named_records_scores_them_as_the_whole_search_does(
    named: MemoryStore, mode: dict
) -> None:
    whole = {h.id: h for h in named.search(query(k=100, num_hops=2, **mode)) if h.record_type is not RecordType.MESSAGE}
    narrowed = named.search(query(k=10, num_hops=2, record_ids=frozenset({"n2", "n3", "n4"}), **mode))
    # Only named memory records (not the message "n2"), only those the search matches.
    assert [h.id for h in narrowed] == [i for i in whole if i in {"n2", "n3", "n4"}]
    assert all(h.record_type is RecordType.FACT for h in narrowed)
    for hit in narrowed:
        assert hit.score == pytest.approx(whole[hit.id].score)
        assert hit.distance == pytest.approx(whole[hit.id].distance)
        assert hit.linked == whole[hit.id].linked  # the same tree, named records or not
    assert named.search(query(record_ids=frozenset({"n5"}), include_invalid=False, **mode)) == []
    assert ids(named.search(query(record_ids=frozenset({"n5"}), **mode))) == ["n5"]
    assert named.search(query(record_ids=frozenset({"n4"}), **mode)) == []  # it matches nothing
