"""Adapters layer (Oracle): ``OracleSearchSession``, the search primitives over one connection.

The pipeline itself (fusion, the one score convention, the linked-record trees, hydration and
the final filter check) is the domain's :func:`~palimpsest.domain.search.run_search`; this
module only answers what SQL can answer (statements in :mod:`.search_sql`):

* ``dense_candidates``: ``VECTOR_DISTANCE(..., COSINE)`` with the query's scope, type, status and
  expiry as predicates and a sound metadata pre-filter; every row is loaded and re-checked with
  :meth:`SearchQuery.admits_record`, a larger page fetched when the re-check drops rows of a full
  page. Cosine similarity is ``1 - distance`` (Oracle's cosine distance is one minus the cosine).
* ``keyword_candidates``: Oracle Text (``CONTAINS`` / ``SCORE``), paged and re-checked alike; the
  raw relevance is ``SCORE`` and the ideal is 100, the top of its 1..100 scale (with ``ACCUM`` of
  ``n`` terms, a text matching all of them scores in the top ``1/n`` of that scale, one matching
  fewer terms always lower: Oracle Text Reference, "ACCUMulate").
* ``links_around``: one ``GRAPH_TABLE`` statement per depth (per 500 frontier ids), the other end
  filtered by scope, types and expiry in SQL and by the metadata filter here.
* ``load``: records and messages by id, 500 ids a statement.
* ``message_neighbours``: ``ROW_NUMBER`` over the wanted messages' threads, 500 ids a statement.

Every row a session reads is kept for the session, so the pipeline's ``load`` of the hits and of
their linked records sends no statement for a row a candidate page or a graph step already
returned.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from palimpsest.domain.errors import VectorDimensionError
from palimpsest.domain.model import MemoryRecord, Message, RecordLink
from palimpsest.domain.ports import SearchSession
from palimpsest.domain.search import CandidateKey, KeywordCandidates, SearchQuery

from .codec import CODEC, encode_vector
from .names import StoreNames
from .search_sql import (
    MAX_IDS_PER_STATEMENT,
    graph_row,
    graph_steps,
    keyword_candidates,
    keyword_query,
    memory_records_by_ids,
    message_neighbours,
    messages_by_ids,
    vector_candidates,
)
from .sql import Statement, fetch_all

__all__ = ["KEYWORD_IDEAL", "MAX_CANDIDATE_LIMIT", "OracleSearchSession"]

MAX_CANDIDATE_LIMIT: Final = 100_000
"""The largest candidate page fetched while the Python re-check keeps rejecting rows. Only a
metadata filter that SQL cannot pre-filter can make a page this large fall short of ``depth``."""

KEYWORD_IDEAL: Final = 100.0
"""The ideal raw keyword relevance: Oracle Text's ``SCORE`` tops out at 100."""

_GROWTH: Final = 4
_MESSAGE: Final = "message"

Entity = MemoryRecord | Message


class OracleSearchSession(SearchSession):
    """The :class:`~palimpsest.domain.ports.SearchSession` of one search on an open
    python-oracledb connection (the caller lends it and rolls it back afterwards).

    ``dimension`` reads the store's embedding dimension (``None``: no vector stored, so vector
    search finds nothing); it is called once, by the first vector search of the session.
    ``approximate=True`` lets vector candidates come from the vector index
    (``FETCH APPROX FIRST``); by default the search is exact.
    """

    def __init__(
        self,
        connection: Any,
        names: StoreNames,
        *,
        dimension: Callable[[], int | None],
        approximate: bool = False,
        max_candidates: int = MAX_CANDIDATE_LIMIT,
    ) -> None:
        self._connection = connection
        self._names = names
        self._read_dimension = dimension
        self._dimension: tuple[int | None] | None = None
        self.approximate = approximate
        self.max_candidates = max_candidates
        self._loaded: dict[CandidateKey, Entity | None] = {}

    # --- the primitives -----------------------------------------------------------------------

    def dense_candidates(self, query: SearchQuery, depth: int) -> list[tuple[CandidateKey, float]]:
        if query.vector is None:
            return []
        if self._dimension is None:
            # The registry row is the truth, not a process's cache: another process may have
            # fixed the dimension, or cleared the vectors and fixed another one since.
            self._dimension = (self._read_dimension(),)
        (dimension,) = self._dimension
        if dimension is None:
            return []  # no vector stored yet: nothing is near anything
        if len(query.vector) != dimension:
            raise VectorDimensionError(
                f"query vector has {len(query.vector)} dimensions but this store holds "
                f"{dimension}-dimensional vectors."
            )
        vector = encode_vector(query.vector, dimension)
        return self._candidates(
            query,
            depth,
            lambda limit: vector_candidates(self._names, query, vector, limit, approximate=self.approximate),
            score=lambda distance: 1.0 - distance,
        )

    def keyword_candidates(self, query: SearchQuery, depth: int) -> KeywordCandidates:
        """Oracle Text candidates: raw relevance ``SCORE`` (1..100), ideal 100.

        ``query.record_ids`` narrows the rows returned (a predicate beside ``CONTAINS``) and
        leaves the scores alone, as the port asks. Unlike the port's other stores, Oracle Text
        cannot score against the admitted candidates only: ``SCORE`` weighs a term by its
        frequency in the whole text index (every row of the chunk table: other scopes, expired
        and invalid rows, and deleted rows until the index is optimised), and none of the
        query's other filters changes that either.
        """
        text = keyword_query(query.text) if query.text is not None else None
        if text is None:
            return KeywordCandidates((), KEYWORD_IDEAL)  # no word token: no SQL
        ranked = self._candidates(
            query,
            depth,
            lambda limit: keyword_candidates(self._names, query, text, limit),
            score=float,
        )
        return KeywordCandidates(ranked, KEYWORD_IDEAL)

    def links_around(self, frontier: Sequence[str], query: SearchQuery) -> dict[str, list[RecordLink]]:
        """One graph step: every link of every ``frontier`` record whose other end passes scope,
        types and expiry (SQL) and the metadata filter (here). Status is not filtered."""
        found: dict[str, dict[str, RecordLink]] = {}
        for statement in graph_steps(self._names, query, list(frontier)):
            for row in fetch_all(self._connection, statement):
                from_id, link, neighbour = graph_row(row)
                self._loaded.setdefault((False, neighbour.id), neighbour)
                if query.admits_record(neighbour, direct=False):
                    found.setdefault(from_id, {})[link.id] = link
        return {record_id: list(links.values()) for record_id, links in found.items()}

    def load(self, keys: Sequence[CandidateKey]) -> dict[CandidateKey, Entity]:
        self._fetch([key for key in dict.fromkeys(keys) if key not in self._loaded])
        return {key: entity for key in keys if (entity := self._loaded.get(key)) is not None}

    def message_neighbours(self, message_ids: Sequence[str], radius: int) -> dict[str, list[str]]:
        """One statement per 500 ids (:func:`.search_sql.message_neighbours`); a wanted message
        alone in its thread comes back as one row without a neighbour."""
        found: dict[str, list[str]] = {}
        for statement in message_neighbours(self._names, list(message_ids), radius):
            for wanted_id, neighbour_id in fetch_all(self._connection, statement):
                neighbours = found.setdefault(str(wanted_id), [])
                if neighbour_id is not None:
                    neighbours.append(str(neighbour_id))
        return found

    # --- internals ----------------------------------------------------------------------------

    def _candidates(
        self,
        query: SearchQuery,
        depth: int,
        statement: Callable[[int], Statement],
        *,
        score: Callable[[float], float],
    ) -> list[tuple[CandidateKey, float]]:
        """The best ``depth`` candidates that pass the domain's filter, as (key, score), best
        first (ties: record type name, then id).

        A page of ``limit`` rows is fetched, loaded and re-checked; if fewer than ``depth`` pass
        and the page was full, a page ``_GROWTH`` times larger is fetched, up to
        ``max_candidates``. ``score`` turns the value the SQL returned (distance or ``SCORE``)
        into a higher-is-better score.
        """
        limit = min(depth if query.metadata_filter is None else max(2 * depth, 50), self.max_candidates)
        while True:
            rows = fetch_all(self._connection, statement(limit))
            order: dict[CandidateKey, float] = {}
            for record_type, record_id, value in rows:
                order.setdefault(
                    (str(record_type) == _MESSAGE, str(record_id)), float(value)
                )  # best chunk first
            passing: dict[CandidateKey, tuple[Entity, float]] = {}
            keys = list(order)
            for part in _parts(keys):
                self._fetch([key for key in part if key not in self._loaded])
                for key in part:
                    entity = self._loaded.get(key)
                    if entity is not None and query.admits_record(entity, direct=True):
                        passing[key] = (entity, score(order[key]))
                if len(passing) >= depth:
                    break
            if len(passing) >= depth or len(rows) < limit or limit >= self.max_candidates:
                break
            limit = min(limit * _GROWTH, self.max_candidates)
        ranked = sorted(passing.items(), key=lambda kv: (-kv[1][1], kv[1][0].record_type.value, kv[0][1]))
        return [(key, value) for key, (_entity, value) in ranked[:depth]]

    def _fetch(self, keys: Sequence[CandidateKey]) -> None:
        """Load the rows behind ``keys`` into the session's rows (``None``: no such row)."""
        for statement in messages_by_ids(self._names, [key[1] for key in keys if key[0]]):
            for row in fetch_all(self._connection, statement):
                message = CODEC.message(row)
                self._loaded[(True, message.id)] = message
        for statement in memory_records_by_ids(self._names, [key[1] for key in keys if not key[0]]):
            for row in fetch_all(self._connection, statement):
                record = CODEC.record(row)
                self._loaded[(False, record.id)] = record
        for key in keys:
            self._loaded.setdefault(key, None)


def _parts(keys: list[CandidateKey]) -> list[list[CandidateKey]]:
    """``keys`` in slices of as many ids as one statement binds."""
    return [keys[i : i + MAX_IDS_PER_STATEMENT] for i in range(0, len(keys), MAX_IDS_PER_STATEMENT)]
