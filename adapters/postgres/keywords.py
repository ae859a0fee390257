"""Adapters layer (PostgreSQL): BM25 keyword relevance from term statistics kept in tables.

Texts are tokenised in Python with the library's one tokeniser
(:func:`~palimpsest.domain.text.document_terms` for documents,
:func:`~palimpsest.domain.text.query_terms` for queries: Unicode word tokens, lower-cased,
diacritics folded), so a text scores exactly as the embedded store's posting index scores it:
Okapi BM25 with the domain's ``k1`` and ``b``, the domain's idf, and statistics over every stored
message and memory record (every scope, status and expiry). PostgreSQL's own full-text search
(``to_tsvector`` / ``ts_rank_cd``) was measured against it and not shipped (BENCHMARKS.md,
"PostgreSQL keyword scoring"): ``ts_rank_cd`` has no idf and no ideal score, so its scores are
on no scale the score convention can read, and its parser splits words differently.

What the writer calls (:func:`index_documents`, :func:`remove_documents`) replaces a
document's postings; the statement triggers of schema version 2 keep document frequencies and
totals in step (:mod:`.schema`). A message's document is its
:func:`~palimpsest.domain.model.keyword_text` (its turn context included), a record's its content.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import psycopg
from palimpsest.domain.model import keyword_text, speaker_of
from palimpsest.domain.text import BM25_B, BM25_K1, bm25_idf, document_terms, query_terms

__all__ = [
    "KeywordStatistics",
    "QueryWeights",
    "index_documents",
    "index_messages",
    "query_weights",
    "remove_documents",
    "statistics",
]

DocumentKey = tuple[bool, str]
"""(is a message, id): the candidate key of the search pipeline."""

BM25_SCORE_SQL: Final = (
    f"sum(q.idf * p.frequency * {BM25_K1 + 1!r}::float8 / (p.frequency + {BM25_K1!r}::float8 * "
    f"(1::float8 - {BM25_B!r}::float8 + {BM25_B!r}::float8 * p.length / %s::float8)))"
)
"""One document's BM25 relevance over the query terms ``q`` (term, idf) it holds (postings
``p``); the one bind is the average document length."""


@dataclass(frozen=True, slots=True)
class KeywordStatistics:
    documents: int
    total_length: int

    @property
    def average_length(self) -> float:
        """Mean document length in terms (1.0 for an empty collection), as the embedded index."""
        return (self.total_length / self.documents if self.documents else 0.0) or 1.0


@dataclass(frozen=True, slots=True)
class QueryWeights:
    """A query's terms that occur in the collection with their idf, the collection's average
    length, and the query's ideal relevance (Σ idf over every query term, absent ones too)."""

    terms: tuple[str, ...]
    idfs: tuple[float, ...]
    average_length: float
    ideal: float


def statistics(conn: psycopg.Connection[Any]) -> KeywordStatistics:
    row = conn.execute("SELECT documents, total_length FROM keyword_totals").fetchone()
    return KeywordStatistics(0, 0) if row is None else KeywordStatistics(int(row[0]), int(row[1]))


def query_weights(conn: psycopg.Connection[Any], text: str) -> QueryWeights | None:
    """The BM25 weights of ``text`` over the store's collection (``None`` for an empty one)."""
    totals = statistics(conn)
    if totals.documents <= 0:
        return None
    terms = query_terms(text)
    frequencies: dict[str, int] = dict.fromkeys(terms, 0)
    if terms:
        for term, documents in conn.execute(
            "SELECT term, documents FROM keyword_terms WHERE term = ANY(%s)", (terms,)
        ):
            frequencies[str(term)] = int(documents)
    idf = {term: bm25_idf(totals.documents, frequencies[term]) for term in terms}
    present = tuple(term for term in terms if frequencies[term] > 0)
    return QueryWeights(
        terms=present,
        idfs=tuple(idf[term] for term in present),
        average_length=totals.average_length,
        ideal=sum(idf[term] for term in terms),
    )


def remove_documents(conn: psycopg.Connection[Any], keys: Iterable[DocumentKey]) -> None:
    """Forget the keyword documents of ``keys`` (the triggers update the statistics)."""
    wanted = list(dict.fromkeys(keys))
    if not wanted:
        return
    conn.execute(
        "DELETE FROM keyword_documents WHERE (is_message, id) IN "
        "(SELECT * FROM unnest(%s::boolean[], %s::text[]))",
        ([key[0] for key in wanted], [key[1] for key in wanted]),
    )


def index_documents(conn: psycopg.Connection[Any], documents: Sequence[tuple[bool, str, str]]) -> None:
    """Index (or re-index) ``documents``, each (is a message, id, keyword text), in the
    caller's transaction: three statements for the whole batch. The last text of a key
    repeated in the batch wins."""
    latest: dict[DocumentKey, str] = {}
    for is_message, doc_id, text in documents:
        latest[(is_message, doc_id)] = text
    if not latest:
        return
    remove_documents(conn, latest)
    flags: list[bool] = []
    ids: list[str] = []
    lengths: list[int] = []
    p_terms: list[str] = []
    p_flags: list[bool] = []
    p_ids: list[str] = []
    p_frequencies: list[int] = []
    p_lengths: list[int] = []
    for (is_message, doc_id), text in latest.items():
        tokens = document_terms(text)
        flags.append(is_message)
        ids.append(doc_id)
        lengths.append(len(tokens))
        for term, frequency in Counter(tokens).items():
            p_terms.append(term)
            p_flags.append(is_message)
            p_ids.append(doc_id)
            p_frequencies.append(frequency)
            p_lengths.append(len(tokens))
    conn.execute(
        "INSERT INTO keyword_documents (is_message, id, length) "
        "SELECT * FROM unnest(%s::boolean[], %s::text[], %s::integer[])",
        (flags, ids, lengths),
    )
    if p_terms:
        conn.execute(
            "INSERT INTO keyword_postings (term, is_message, id, frequency, length) "
            "SELECT * FROM unnest(%s::text[], %s::boolean[], %s::text[], %s::integer[], %s::integer[])",
            (p_terms, p_flags, p_ids, p_frequencies, p_lengths),
        )


def index_messages(conn: psycopg.Connection[Any], message_ids: Iterable[str], *, with_next: bool = True) -> None:
    """(Re-)index the keyword documents of stored messages from their rows: each message's
    :func:`~palimpsest.domain.model.keyword_text` with the turn before it in its thread, and
    (``with_next``) the message after each, whose turn context it is. What a writer calls after
    adding, editing or deleting messages (for a deleted one: with the ids of the messages that
    followed it). Ids of messages that no longer exist are skipped."""
    ids = list(dict.fromkeys(message_ids))
    if not ids:
        return
    rows = conn.execute(
        "WITH w AS (SELECT thread_id, seq FROM messages WHERE id = ANY(%s)), "
        "targets AS (SELECT m.id, m.thread_id, m.seq FROM messages m JOIN w USING (thread_id, seq) "
        "UNION SELECT n.id, n.thread_id, n.seq FROM w CROSS JOIN LATERAL (SELECT id, thread_id, seq "
        "FROM messages x WHERE x.thread_id = w.thread_id AND x.seq > w.seq AND %s ORDER BY x.seq LIMIT 1) n) "
        "SELECT t.id, m.content, m.metadata, b.content, b.metadata FROM targets t "
        "JOIN messages m ON m.id = t.id LEFT JOIN LATERAL (SELECT content, metadata FROM messages y "
        "WHERE y.thread_id = t.thread_id AND y.seq < t.seq ORDER BY y.seq DESC LIMIT 1) b ON true",
        (ids, with_next),
    ).fetchall()
    index_documents(
        conn,
        [
            (True, str(row_id), keyword_text(content, speaker_of(metadata), before, speaker_of(before_metadata)))
            for row_id, content, metadata, before, before_metadata in rows
        ],
    )
