"""The five search primitives of the Postgres store, compared with the embedded store's on the
same rows: same candidates in the same order, the same scores (cosine; BM25 raw relevance and
ideal: the score convention), the same links, rows and conversation neighbours, and so the same
answers from the one search pipeline."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.adapters.postgres import PostgresStoreCore
from palimpsest.adapters.postgres.keywords import index_documents, index_messages
from palimpsest.adapters.postgres.search import containment
from palimpsest.domain.errors import VectorDimensionError
from palimpsest.domain.model import MemoryRecord, RecordStatus, RecordType
from palimpsest.domain.search import SearchQuery, run_search
from postgres_server import PostgresTarget

from .conftest import StoreFactory
from .helpers import at, link, message, query, record, thread, write, write_embedded

DIMENSION = 8


def _vector(rng: random.Random) -> list[float]:
    return [rng.uniform(-1.0, 1.0) for _ in range(DIMENSION)]


def _invalid(base: MemoryRecord) -> MemoryRecord:
    return MemoryRecord(
        id=base.id, record_type=base.record_type, content=base.content, created_at=base.created_at,
        updated_at=base.updated_at, user_id=base.user_id, thread_id=base.thread_id, metadata=base.metadata,
        status=RecordStatus.INVALID, invalidation_reason="superseded", invalidated_at=base.created_at,
    )


def _rows() -> dict[str, Any]:
    rng = random.Random(7)
    threads = [thread("t1", user_id="u1"), thread("t2", user_id="u2")]
    messages = [
        message("m1", "t1", 1, "Melanie: what are you researching these days?", user_id="u1", speaker="Melanie"),
        message("m2", "t1", 2, "Adoption agencies, and the café near the station", user_id="u1", speaker="Caroline"),
        message("m3", "t1", 3, "Coffee in the morning keeps me going", user_id="u1", speaker="Melanie"),
        message("m4", "t1", 5, "system note without a speaker about coffee", user_id="u1"),
        message("m5", "t1", 7, "I went hiking in the mountains with my dog", user_id="u1", speaker="Caroline"),
        message("m6", "t2", 1, "The cafe on Main street serves great coffee coffee", user_id="u2", speaker="Ann"),
        message("m7", "t2", 2, "Expired chatter about coffee", user_id="u2", speaker="Bo", expires_at=at(30)),
    ]
    fact = record("r1", "Caroline researches adoption agencies", user_id="u1",
                  metadata={"topic": "family", "tags": ["kids", "work"], "place": {"city": "Paris"}})
    pref = record("r2", "Melanie drinks coffee every morning", record_type=RecordType.PREFERENCE, user_id="u1",
                  metadata={"topic": "food"})
    old = _invalid(record("r3", "Melanie drank tea in the morning", user_id="u1", metadata={"topic": "food"}))
    memo = record("r4", "Ann likes the café on Main street", record_type=RecordType.MEMORY, user_id="u2",
                  metadata={"topic": "food", "tags": ["cafe"], "place": {"city": "Lyon"}})
    hike = record("r5", "Caroline hikes with her dog in the mountains", user_id="u1", thread_id="t1",
                  metadata={"tags": ["outdoor", "kids"], "rating": 4})
    gone = record("r6", "A coffee voucher valid until noon", user_id="u1", expires_at=at(30))
    guide = record("r7", "Always answer questions about coffee briefly", record_type=RecordType.GUIDELINE,
                   metadata={"rating": 4.0, "tags": "kids"})
    records = [fact, pref, old, memo, hike, gone, guide]
    links = [link("l1", pref, old, "supersedes", created=1), link("l2", fact, hike, created=2),
             link("l3", hike, gone, created=3), link("l4", pref, guide, created=4)]
    vectors = {row.id: _vector(rng) for row in [*messages, *records]}
    return {"threads": threads, "messages": messages, "records": records, "links": links, "vectors": vectors}


def _pair(stores: StoreFactory, folder: Path) -> Iterator[tuple[PostgresStoreCore, EmbeddedStore, dict[str, Any]]]:
    rows = _rows()
    core = stores.open(dimension=DIMENSION)
    with core.transaction() as conn:
        write(conn, **rows)
    embedded = EmbeddedStore(str(folder / "e.db"), dimension=DIMENSION)
    write_embedded(embedded, **rows)
    try:
        yield core, embedded, rows
    finally:
        embedded.close()


@pytest.fixture
def pair(stores: StoreFactory, tmp_path: Path) -> Iterator[tuple[PostgresStoreCore, EmbeddedStore, dict[str, Any]]]:
    """The same rows in a fresh PostgreSQL store and a fresh embedded store, for a test that writes."""
    yield from _pair(stores, tmp_path)


@pytest.fixture(scope="module")
def searched_pair(
    postgres_target: PostgresTarget, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[PostgresStoreCore, EmbeddedStore, dict[str, Any]]]:
    """The same pair, made once for the tests that only search it (each test's queries read it)."""
    factory = StoreFactory(postgres_target)
    try:
        yield from _pair(factory, tmp_path_factory.mktemp("searched-pair"))
    finally:
        factory.close_all()


QUERIES = {
    "dense": {"vector_of": "m3"},
    "dense, one user": {"vector_of": "r2", "user_id": "u1"},
    "dense, facts of one thread": {"vector_of": "r5", "thread_id": "t1", "record_types": frozenset({"fact"})},
    "dense, valid only, later": {"vector_of": "r3", "include_invalid": False, "now": at(60)},
    "dense, metadata": {"vector_of": "r4", "metadata_filter": {"topic": "food"}},
    "dense, named records": {"vector_of": "r1", "record_ids": frozenset({"r1", "r3", "r5", "r9"})},
    "keyword": {"text": "coffee morning"},
    "keyword, one user, memories": {"text": "coffee cafe adoption", "user_id": "u1", "record_types": frozenset({"fact", "preference", "memory"})},
    "keyword, diacritics": {"text": "Café"},
    "keyword, speaker": {"text": "What did Caroline research?"},
    "keyword, stop words only": {"text": "what is it"},
    "keyword, unknown word": {"text": "coffee zeppelin"},
    "keyword, metadata, valid only": {"text": "morning coffee tea", "metadata_filter": {"topic": "food"}, "include_invalid": False},
    "keyword, named records": {"text": "coffee", "record_ids": frozenset({"r2", "r6", "r7"})},
    "keyword, unscoped agent": {"text": "coffee", "agent_id": None, "user_id": None},
    "dense, array contains": {"vector_of": "r1", "metadata_filter": {"tags": {"$array_contains": "kids"}}},
    "dense, array contains all": {"vector_of": "r1", "metadata_filter": {"tags": {"$array_contains": ["kids", "work"]}}},
    "dense, array contains any": {"vector_of": "r1", "metadata_filter": {"tags": {"$array_contains_any": ["cafe", "outdoor"]}}},
    "dense, exact list": {"vector_of": "r5", "metadata_filter": {"tags": ["kids", "work"]}},
    "dense, number": {"vector_of": "r5", "metadata_filter": {"rating": 4}},
    "dense, nested": {"vector_of": "m2", "metadata_filter": {"place": {"city": "Paris"}}},
    "dense, nested object": {"vector_of": "m2", "metadata_filter": {"place": {}}},
    "keyword, not": {"text": "coffee morning", "metadata_filter": {"topic": {"$not": "food"}}},
    "keyword, speaker metadata": {"text": "coffee", "metadata_filter": {"speaker": "Melanie"}},
    "hybrid, hops, not": {"vector_of": "r2", "text": "coffee", "num_hops": 2,
                          "metadata_filter": {"tags": {"$not": {"$array_contains": "cafe"}}}},
    "hybrid with hops": {"vector_of": "r2", "text": "coffee morning", "num_hops": 2},
    "hybrid, neighbours": {"vector_of": "m3", "text": "coffee", "neighbour_weight": 0.5, "neighbour_radius": 1},
}


def _query(spec: dict[str, Any], rows: dict[str, Any]) -> SearchQuery:
    options = dict(spec)
    source = options.pop("vector_of", None)
    return query(vector=None if source is None else rows["vectors"][source], **options)


@pytest.mark.parametrize("keyword_scoring", ["scope rows", "term postings"])
@pytest.mark.parametrize("name", list(QUERIES))
def test_candidates_and_scores_match_the_embedded_store(
    searched_pair: Any, name: str, keyword_scoring: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if keyword_scoring == "term postings":  # the branch of scopes too large to score row by row
        from palimpsest.adapters.postgres import search

        monkeypatch.setattr(search, "KEYWORD_SCOPE_MAX", 0)
    core, embedded, rows = searched_pair
    q = _query(QUERIES[name], rows)
    with core.searching() as pg, embedded.searching() as em:
        if q.vector is not None:
            expected = em.dense_candidates(q, 20)
            found = pg.dense_candidates(q, 20)
            assert [key for key, _ in found] == [key for key, _ in expected]
            assert [score for _, score in found] == pytest.approx([score for _, score in expected], abs=1e-5)
        if q.text is not None:
            expected_kw = em.keyword_candidates(q, 20)
            found_kw = pg.keyword_candidates(q, 20)
            assert [key for key, _ in found_kw.ranked] == [key for key, _ in expected_kw.ranked]
            assert [raw for _, raw in found_kw.ranked] == pytest.approx([raw for _, raw in expected_kw.ranked], rel=1e-12)
            assert found_kw.ideal == pytest.approx(expected_kw.ideal, rel=1e-12)
        expected_hits = run_search(em, q)
        found_hits = run_search(pg, q)
    assert [(hit.id, hit.record_type) for hit in found_hits] == [(hit.id, hit.record_type) for hit in expected_hits]
    assert [hit.score for hit in found_hits] == pytest.approx([hit.score for hit in expected_hits], abs=1e-5)
    assert [hit.linked for hit in found_hits] == [hit.linked for hit in expected_hits]


def test_links_rows_and_neighbours_match_the_embedded_store(searched_pair: Any) -> None:
    core, embedded, _rows = searched_pair
    later = query(text="x", now=at(60))
    with core.searching() as pg, embedded.searching() as em:
        for q in (query(text="x"), later, query(text="x", user_id="u1", record_types=frozenset({"fact"}))):
            found = {node: sorted(l.id for l in links) for node, links in pg.links_around(["r1", "r2", "r5"], q).items()}
            expected = {node: sorted(l.id for l in links) for node, links in em.links_around(["r1", "r2", "r5"], q).items()}
            assert {n: ids for n, ids in found.items() if ids} == {n: ids for n, ids in expected.items() if ids}
        keys = [(True, "m2"), (False, "r3"), (False, "r6"), (True, "nope"), (False, "m1")]
        assert pg.load(keys) == em.load(keys)
        for radius in (0, 1, 2, 5):
            ids = ["m1", "m3", "m4", "m6", "missing"]
            assert pg.message_neighbours(ids, radius) == em.message_neighbours(ids, radius)


def test_keyword_statistics_follow_deletes_of_records_messages_and_threads(pair: Any) -> None:
    core = pair[0]
    q = query(text="coffee")
    with core.searching() as pg:
        before = pg.keyword_candidates(q, 20)
    with core.transaction() as conn:
        conn.execute("DELETE FROM records WHERE id = 'r2'")
        conn.execute("DELETE FROM threads WHERE id = 't2'")
        totals = conn.execute("SELECT documents, total_length FROM keyword_totals").fetchone()
        counted = conn.execute("SELECT count(*), sum(length) FROM keyword_documents").fetchone()
        frequencies = conn.execute(
            "SELECT t.term, t.documents, count(p.id) FROM keyword_terms t LEFT JOIN keyword_postings p USING (term) "
            "GROUP BY t.term, t.documents HAVING t.documents <> count(p.id)"
        ).fetchall()
    assert totals == (counted[0], counted[1])
    assert frequencies == []
    with core.searching() as pg:
        after = pg.keyword_candidates(q, 20)
    assert {key[1] for key, _ in before.ranked} - {key[1] for key, _ in after.ranked} == {"r2", "m6", "m7"}
    assert after.ideal > before.ideal  # "coffee" is rarer now: its idf grew


def test_hnsw_and_exact_dense_search_agree_on_a_small_set(stores: StoreFactory) -> None:
    rng = random.Random(11)
    core = stores.open(dimension=DIMENSION)
    records = [record(f"r{i:03d}", f"note {i}", user_id=f"u{i % 3}") for i in range(300)]
    vectors = {r.id: _vector(rng) for r in records}
    with core.transaction() as conn:
        write(conn, records=records, vectors=vectors)
        conn.execute("ANALYZE records")
    recalls = []
    for i in range(10):
        q = query(vector=_vector(rng), k=10, **({"user_id": "u1"} if i % 2 else {}))
        with core.searching(exact=True) as exact, core.searching(exact=False) as approximate:
            truth = exact.dense_candidates(q, 10)
            found = approximate.dense_candidates(q, 10)
            assert exact.last_dense_plan["records"] == "exact"
            assert approximate.last_dense_plan["records"] == "hnsw"
        truth_scores = dict(truth)
        assert all(score == pytest.approx(truth_scores[key], abs=1e-6) for key, score in found if key in truth_scores)
        assert [score for _, score in found] == sorted((score for _, score in found), reverse=True)
        recalls.append(len({key for key, _ in found} & set(truth_scores)) / 10)
    assert sum(recalls) / len(recalls) >= 0.9


def test_by_default_each_table_is_searched_exactly_or_through_its_index_by_its_scope_size(
    stores: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from palimpsest.adapters.postgres import search

    monkeypatch.setattr(search, "EXACT_SEARCH_MAX", 40)
    rng = random.Random(5)
    core = stores.open(dimension=DIMENSION)
    records = [record(f"r{i:03d}", f"note {i}", user_id="big" if i < 120 else "small") for i in range(150)]
    messages = [message(f"m{i:02d}", "t1", i + 1, f"turn {i}", user_id="big") for i in range(10)]
    vectors = {row.id: _vector(rng) for row in [*records, *messages]}
    with core.transaction() as conn:
        write(conn, threads=[thread("t1", user_id="big")], messages=messages, records=records, vectors=vectors)
        conn.execute("ANALYZE records")
    for user, plan in (("big", {"records": "hnsw", "messages": "exact"}), ("small", {"records": "exact", "messages": "exact"})):
        q = query(vector=_vector(rng), k=5, user_id=user)
        with core.searching() as auto, core.searching(exact=True) as exact:
            found = auto.dense_candidates(q, 5)
            truth = exact.dense_candidates(q, 5)
            assert auto.last_dense_plan == plan
            loaded = auto.load([key for key, _ in found])
        assert [key for key, _ in found] == [key for key, _ in truth]  # a tiny index walk is exact
        assert [score for _, score in found] == pytest.approx([score for _, score in truth], abs=1e-6)
        assert set(loaded) == {key for key, _ in found}
        assert all(entity.user_id == user for entity in loaded.values())


def test_the_hnsw_path_is_served_by_the_index_and_the_exact_path_is_not(stores: StoreFactory) -> None:
    core = stores.open(dimension=DIMENSION)
    rng = random.Random(3)
    records = [record(f"r{i:03d}", f"note {i}") for i in range(50)]
    with core.transaction() as conn:
        write(conn, records=records, vectors={r.id: _vector(rng) for r in records})
    literal = "[" + ",".join("0.5" for _ in range(DIMENSION)) + "]"
    with core.transaction() as conn:
        conn.execute("SET LOCAL enable_seqscan = off")  # a 50-row table would be scanned otherwise
        approximate = "\n".join(r[0] for r in conn.execute(
            "EXPLAIN SELECT id FROM records r WHERE r.embedding IS NOT NULL "
            "ORDER BY r.embedding <=> %s::vector LIMIT 5", (literal,)))
        exact = "\n".join(r[0] for r in conn.execute(
            "EXPLAIN SELECT id FROM records r WHERE r.embedding IS NOT NULL "
            "ORDER BY (r.embedding <=> %s::vector) + 0, r.id LIMIT 5", (literal,)))
    assert "records_embedding_hnsw" in approximate
    assert "records_embedding_hnsw" not in exact


def test_a_store_without_vectors_has_no_dense_candidates_and_a_wrong_dimension_is_refused(
    stores: StoreFactory,
) -> None:
    empty = stores.open()
    with empty.searching() as session:
        assert session.dense_candidates(query(vector=[1.0, 0.0]), 5) == []
        assert session.keyword_candidates(query(text="anything"), 5).ranked == ()
    sized = stores.open(dimension=DIMENSION)
    with sized.searching() as session, pytest.raises(VectorDimensionError):
        session.dense_candidates(query(vector=[1.0, 0.0]), 5)


def test_the_sql_metadata_condition_keeps_what_the_filter_requires_and_drops_what_it_cannot_express() -> None:
    flt = {
        "a": 1, "b": {"c": [1, 2]}, "t": {"$array_contains": "x"}, "u": {"$array_contains": ["x", "y"]},
        "z": {"$array_contains": None}, "n": {"$not": 1}, "any": {"$array_contains_any": [1]}, "e": {},
    }
    assert containment(flt) == {"a": 1, "b": {"c": [1, 2]}, "t": ["x"], "u": ["x", "y"], "z": [None], "e": {}}


def test_reindexed_messages_score_as_the_embedded_store_after_an_edit_and_a_delete(pair: Any) -> None:
    core, embedded, rows = pair
    original = {m.id: m for m in rows["messages"]}
    edited = replace(original["m2"], content="Marathon training and the bakery near the station")
    with embedded.unit_of_work() as uow:
        uow.messages.update(edited)
        uow.messages.delete("m1")
        uow.commit()
    with core.transaction() as conn:
        conn.execute("UPDATE messages SET content = %s WHERE id = 'm2'", (edited.content,))
        index_messages(conn, ["m2"])  # m2, and m3 after it (m2 is its turn context)
        conn.execute("DELETE FROM messages WHERE id = 'm1'")
        index_messages(conn, ["m2"], with_next=False)  # the turn that followed the deleted one
    with core.searching() as pg:
        found = pg.keyword_candidates(query(text="marathon bakery"), 20)
    assert {key for key, _ in found.ranked} == {(True, "m2"), (True, "m3")}
    for text in ("marathon bakery", "adoption agencies", "coffee morning", "researching days", "Caroline"):
        q = query(text=text)
        with core.searching() as pg, embedded.searching() as em:
            found, expected = pg.keyword_candidates(q, 20), em.keyword_candidates(q, 20)
        assert [key for key, _ in found.ranked] == [key for key, _ in expected.ranked], text
        assert [raw for _, raw in found.ranked] == pytest.approx([raw for _, raw in expected.ranked], rel=1e-12)
        assert found.ideal == pytest.approx(expected.ideal, rel=1e-12)


def test_concurrent_keyword_writers_sharing_terms_neither_deadlock_nor_skew_the_statistics(stores: StoreFactory) -> None:
    core = stores.open()
    errors: list[Exception] = []

    def writer(prefix: str) -> None:
        try:
            for batch in range(15):
                with core.transaction() as conn:
                    # Terms in opposite orders in the two writers: a lock-order deadlock would show.
                    words = ["alpha", "beta", "gamma", "delta"] if prefix == "a" else ["delta", "gamma", "beta", "alpha"]
                    index_documents(conn, [(False, f"{prefix}{batch}-{i}", " ".join(words[i:] + words[:i])) for i in range(4)])
                    if batch % 3 == 2:
                        conn.execute("DELETE FROM keyword_documents WHERE id LIKE %s", (f"{prefix}{batch - 1}-%",))
        except Exception as exc:  # noqa: BLE001 - collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(p,)) for p in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with core.transaction() as conn:
        totals = conn.execute("SELECT documents, total_length FROM keyword_totals").fetchone()
        counted = conn.execute("SELECT count(*), sum(length) FROM keyword_documents").fetchone()
        terms = dict(conn.execute("SELECT term, documents FROM keyword_terms").fetchall())
        postings = dict(conn.execute("SELECT term, count(*) FROM keyword_postings GROUP BY term").fetchall())
    assert totals == counted == (2 * 15 * 4 - 2 * 5 * 4, (2 * 15 * 4 - 2 * 5 * 4) * 4)
    assert terms == postings
