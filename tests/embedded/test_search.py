"""Embedded store: search specifics — keyword input safety, partitions, scores, hybrid fusion."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.adapters.embedded.keyword_index import query_terms
from palimpsest.domain.model import RecordStatus, RecordType
from palimpsest.domain.search import keyword_score, reciprocal_rank_fusion

from .helpers import E1, E2, NEAR_E1, ids, link, linked_ids, message, query, raw, record, seed, thread

HOSTILE = '"); DROP TABLE x; -- NEAR(a b) OR *'


@pytest.fixture
def drinks(store: EmbeddedStore) -> EmbeddedStore:
    seed(
        store,
        threads=[thread("t1")],
        messages=[(message("m-tea", "t1", 1, "shall we have tea"), None)],
        records=[
            (record("green", "green tea with lemon"), None),
            (record("coffee", "black coffee; DROP the milk"), E1),
            (record("cafe", "Café crème at the corner"), None),
        ],
    )
    return store


@pytest.mark.parametrize(
    ("text", "found"),
    [
        (HOSTILE, {"coffee"}),  # shares the word "DROP"
        ("(", set()),
        (")", set()),
        ('"', set()),
        ("*", set()),
        ("NEAR(", set()),
        ("a OR", set()),
        ("NOT", set()),
        ("AND AND", set()),
        ("col:tea", {"green", "m-tea"}),
        ("^tea", {"green", "m-tea"}),
        ("tea -coffee", {"green", "m-tea", "coffee"}),
        ("'", set()),
        ("x\x00y", set()),
        ("tea' OR 1=1 --", {"green", "m-tea"}),
        ("tea%", {"green", "m-tea"}),
        ("coffee_", set()),  # "_" is a word character: "coffee_" is its own term
    ],
)
def test_keyword_text_with_query_and_sql_syntax_never_errors(
    drinks: EmbeddedStore, path: Path, text: str, found: set[str]
) -> None:
    """Operators of FTS5 or SQL in the text are plain words (or nothing): they never raise,
    and keyword search finds exactly the rows sharing a word with the text."""
    assert set(ids(drinks.search(query(text=text)))) == found
    assert "coffee" in ids(drinks.search(query(text=text, vector=E1)))
    with raw(path) as conn:  # nothing was executed as SQL
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"records", "messages", "threads", "links"} <= tables


def test_the_hostile_query_matches_its_words_as_plain_terms(drinks: EmbeddedStore) -> None:
    assert ids(drinks.search(query(text=HOSTILE))) == ["coffee"]  # shares the word "DROP"
    assert query_terms(HOSTILE) == ["drop", "table", "x", "near", "b"]  # stop words "a", "or" dropped


def test_text_without_any_word_finds_no_keyword_candidates(drinks: EmbeddedStore) -> None:
    assert query_terms('"*()- ;') == []
    assert drinks.search(query(text='"*()- ;')) == []
    assert ids(drinks.search(query(text='"*()- ;', vector=E1))) == ["coffee"]


def test_keyword_search_ignores_case_and_diacritics(drinks: EmbeddedStore) -> None:
    assert ids(drinks.search(query(text="cafe CREME"))) == ["cafe"]
    assert set(ids(drinks.search(query(text="TEA")))) == {"green", "m-tea"}


def test_keyword_terms_are_word_tokens_with_underscores_as_in_python(store: EmbeddedStore) -> None:
    seed(
        store,
        records=[(record("snake", "uses snake_case names"), None), (record("apart", "a snake case"), None)],
    )
    assert ids(store.search(query(text="snake_case"))) == ["snake"]
    assert set(ids(store.search(query(text="snake")))) == {"apart"}


def test_keyword_scores_are_bounded_and_best_first(drinks: EmbeddedStore) -> None:
    hits = drinks.search(query(text="tea lemon"))
    assert ids(hits)[0] == "green"  # shares both terms
    assert all(0.0 < hit.score <= 1.0 for hit in hits)
    # The one convention: raw relevance (-bm25) over the query's ideal relevance, clipped.
    with drinks.searching() as session:
        candidates = session.keyword_candidates(query(text="tea lemon"), 10)
    assert candidates.ideal == pytest.approx(drinks._keywords.idf_sum("tea lemon"))
    raw = {key[1]: relevance for key, relevance in candidates.ranked}
    assert [hit.score for hit in hits] == [
        pytest.approx(keyword_score(raw[hit.id], candidates.ideal)) for hit in hits
    ]
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    assert all(hit.distance == pytest.approx(1.0 - hit.score) for hit in hits)


def test_vector_scores_are_cosine_similarities(store: EmbeddedStore) -> None:
    seed(store, records=[(record("same"), (2.0, 0.0, 0.0, 0.0)), (record("diag"), (1.0, 1.0, 0.0, 0.0))])
    hits = store.search(query(vector=E1))
    assert ids(hits) == ["same", "diag"]
    assert hits[0].score == pytest.approx(1.0) and hits[0].distance == pytest.approx(0.0)
    assert hits[1].score == pytest.approx(2**-0.5, abs=1e-6)


def test_hybrid_search_fuses_both_ranked_lists_with_reciprocal_rank_fusion(store: EmbeddedStore) -> None:
    seed(
        store,
        records=[
            (record("both", "tea"), E1),
            (record("vector-only", "coffee"), NEAR_E1),
            (record("keyword-only", "tea and biscuits"), None),
        ],
    )
    hits = store.search(query(vector=E1, text="tea", rrf_k=60, fusion="rrf"))
    vector_ranked = ["both", "vector-only"]
    keyword_ranked = ["both", "keyword-only"]
    expected = reciprocal_rank_fusion(
        [[(False, i) for i in vector_ranked], [(False, i) for i in keyword_ranked]], k=60
    )
    assert [(hit.id, hit.score) for hit in hits] == [
        (key[1], pytest.approx(score)) for key, score in expected
    ]


def test_a_scoped_search_over_several_partitions_returns_only_in_scope_rows(store: EmbeddedStore) -> None:
    users = ["u1", "u2", "u3", None]
    seed(
        store,
        threads=[thread("t-u2", user_id="u2")],
        messages=[(message("m-u2", "t-u2", 1, "note", user_id="u2"), E1)],
        records=[
            (
                record(f"{user or 'none'}-{i}", "note", user_id=user, agent_id="bot" if i else None),
                E1 if i else NEAR_E1,
            )
            for user in users
            for i in range(3)
        ],
    )
    assert store._vectors.partition_sizes() == {"u1": 3, "u2": 4, "u3": 3, None: 3}
    for mode in ({"vector": E1}, {"text": "note"}, {"vector": E1, "text": "note"}):
        assert set(ids(store.search(query(user_id="u2", **mode)))) == {"u2-0", "u2-1", "u2-2", "m-u2"}
        assert set(ids(store.search(query(user_id=None, **mode)))) == {"none-0", "none-1", "none-2"}
        assert set(ids(store.search(query(user_id="u3", agent_id=None, **mode)))) == {"u3-0"}
        assert set(ids(store.search(query(user_id="nobody", **mode)))) == set()
        assert set(ids(store.search(query(agent_id="bot", user_id="u1", **mode)))) == {"u1-1", "u1-2"}
        assert len(store.search(query(**mode))) == 13
    # Across partitions, equal scores are ordered by type then id.
    assert ids(store.search(query(vector=E1, k=5))) == ["none-1", "none-2", "u1-1", "u1-2", "u2-1"]


def test_ties_are_ordered_by_record_type_then_id_across_partitions(store: EmbeddedStore) -> None:
    seed(
        store,
        threads=[thread("t1", user_id="u9")],
        messages=[(message("a-message", "t1", 1, user_id="u9"), E2)],
        records=[
            (record("z", user_id="u1", record_type=RecordType.GUIDELINE), E2),
            (record("y", user_id="u2"), E2),
            (record("x", record_type=RecordType.PREFERENCE), E2),
            (record("w", user_id="u3", record_type=RecordType.MEMORY), E2),
        ],
    )
    assert ids(store.search(query(vector=E2))) == ["y", "z", "w", "a-message", "x"]


def test_graph_expansion_applies_the_metadata_filter_to_linked_records(store: EmbeddedStore) -> None:
    seed(
        store,
        records=[
            (record("root", metadata={"topic": "tea"}), E1),
            (record("same-topic", metadata={"topic": "tea"}), None),
            (record("other-topic", metadata={"topic": "coffee"}), None),
            (record("behind-other", metadata={"topic": "tea"}), None),
        ],
        links=[
            link("l1", "root", "same-topic"),
            link("l2", "root", "other-topic", minutes=1),
            link("l3", "other-topic", "behind-other", minutes=2),
        ],
    )
    hits = store.search(query(vector=E1, num_hops=2, metadata_filter={"topic": "tea"}))
    assert ids(hits) == ["root"]
    assert linked_ids(hits) == {"same-topic"}
    assert linked_ids(store.search(query(vector=E1, num_hops=2))) == {
        "same-topic",
        "other-topic",
        "behind-other",
    }


def test_linked_records_ignore_status_but_direct_hits_respect_include_invalid(store: EmbeddedStore) -> None:
    stale = replace(
        record("stale"),
        status=RecordStatus.INVALID,
        invalidation_reason="Superseded by another memory.",
        invalidated_at=record("stale").created_at,
    )
    seed(
        store,
        records=[(record("fresh"), E1), (stale, NEAR_E1)],
        links=[link("l1", "fresh", "stale", "supersedes")],
    )
    hits = store.search(query(vector=E1, num_hops=1, include_invalid=False))
    assert ids(hits) == ["fresh"]
    assert linked_ids(hits) == {"stale"}
