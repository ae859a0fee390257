"""Embedded adapter: keyword search over the FTS5 indexes of records and messages (bm25 ranking).

Unlike the vector index this reads SQLite directly: FTS5 is maintained by triggers inside the
writing transaction, so it is always exactly as current as the committed tables.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from palimpsest.domain.model import RecordType
from palimpsest.domain.text import keyword_terms

from .codec import TYPE_CODES

__all__ = ["Fts5KeywordIndex", "KeywordCandidate", "fts_query", "relevance_score"]

KeywordCandidate = tuple[float, int, str]
"""(bm25, type code, id): bm25 is lower-is-better, so these sort best-first as they are."""


def fts_query(text: str) -> str | None:
    """The user's text as a safe FTS5 query: each of its :func:`keyword_terms` (stop words
    dropped unless nothing else is left) a quoted string, OR-ed together.

    Quoting makes operators (AND, NEAR, ``*``, ``^``, column filters, parentheses) plain words,
    so no input can be an FTS5 syntax error; ``None`` when the text has no word at all.
    """
    tokens = keyword_terms(text)
    if not tokens:
        return None
    return " OR ".join('"' + token.replace('"', '""') + '"' for token in tokens)


def relevance_score(bm25: float) -> float:
    """Keyword-only hits' score: ``r / (1 + r)`` with ``r = -bm25`` (SQLite's bm25 is negative).

    Monotonic in relevance and bounded to [0, 1) without depending on the other hits of the
    query, so scores are comparable across queries; ``distance`` is ``1 - score``.
    """
    relevance = max(0.0, -bm25)
    return relevance / (1.0 + relevance)


class Fts5KeywordIndex:
    """bm25-ranked candidates from ``records_fts`` and ``messages_fts`` under SQL filters.

    ``records_where``/``messages_where`` are SQL conditions on the content table (aliased
    ``r``/``m``) with their parameters, built by the store from the search filters, so that
    filtering happens before the LIMIT and never starves the candidate pool.
    """

    def search(
        self,
        conn: sqlite3.Connection,
        text: str,
        *,
        limit: int,
        records_where: tuple[str, Sequence[Any]] | None,
        messages_where: tuple[str, Sequence[Any]] | None,
    ) -> list[KeywordCandidate]:
        match = fts_query(text)
        if match is None:
            return []
        found: list[KeywordCandidate] = []
        if records_where is not None:
            where, params = records_where
            rows = conn.execute(
                "SELECT bm25(records_fts) AS score, r.record_type, r.id FROM records_fts "
                "JOIN records AS r ON r.pk = records_fts.rowid "
                f"WHERE records_fts MATCH ? AND {where} "
                "ORDER BY score, r.record_type, r.id LIMIT ?",
                (match, *params, limit),
            ).fetchall()
            found.extend((rank, TYPE_CODES[RecordType(kind)], rid) for rank, kind, rid in rows)
        if messages_where is not None:
            where, params = messages_where
            rows = conn.execute(
                "SELECT bm25(messages_fts) AS score, m.id FROM messages_fts "
                "JOIN messages AS m ON m.pk = messages_fts.rowid "
                f"WHERE messages_fts MATCH ? AND {where} "
                "ORDER BY score, m.id LIMIT ?",
                (match, *params, limit),
            ).fetchall()
            code = TYPE_CODES[RecordType.MESSAGE]
            found.extend((rank, code, mid) for rank, mid in rows)
        # The two tables have separate bm25 statistics; merging on the raw value is the
        # documented approximation (both are "how well these terms match this text").
        found.sort()
        return found[:limit]
