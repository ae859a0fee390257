"""Adapters layer (PostgreSQL): the five search primitives in SQL over one read.

The pipeline (fusion, the one score convention, the linked-record trees, hydration and the
final filter check) is the domain's :func:`~palimpsest.domain.search.run_search`; a
:class:`PostgresSearchSession` answers what only the store can, in one ``REPEATABLE READ, READ
ONLY`` transaction (every primitive of a search reads one snapshot and never waits for a
writer):

* ``dense_candidates``: pgvector's cosine distance ``<=>``, the score its complement
  (``1 - distance``: cosine similarity, as every store reports). The query's scope, types,
  expiry, status and ``record_ids`` are SQL predicates. A scope of at most
  :data:`EXACT_SEARCH_MAX` rows with a vector is searched exactly (ordered by the distance
  itself, which no index serves); a larger one through the HNSW index with iterative scans on
  (``hnsw.iterative_scan = relaxed_order``, then re-sorted by distance), ``hnsw.ef_search`` =
  max(:data:`HNSW_EF_SEARCH`, the candidates asked for), at most 1000, and
  ``hnsw.max_scan_tuples`` = :data:`HNSW_MAX_SCAN_TUPLES`.
* ``keyword_candidates``: BM25 from the term statistics tables (:mod:`.keywords`), with the
  same predicates; raw relevance the BM25 sum, ideal the query terms' idf sum.
* ``links_around``: one statement per depth for the whole frontier (both directions), the
  other end's scope, types and expiry in SQL.
* ``load``: records and messages by id, one statement per table.
* ``message_neighbours``: one statement with a lateral join on ``(thread_id, seq)``.

The metadata filter narrows the rows in SQL by ``jsonb`` containment (:func:`containment`, a
necessary condition served by a GIN index) and is decided in Python
(:meth:`SearchQuery.admits_record`) on the candidate rows, a larger page being fetched when it
drops rows from a full one; every row read is kept
for the session, so ``load`` sends no statement for a row a candidate page already returned.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import psycopg
from palimpsest.domain.errors import VectorDimensionError
from palimpsest.domain.model import (
    MEMORY_RECORD_TYPES,
    SPEAKER_KEY,
    MemoryRecord,
    Message,
    RecordLink,
    RecordType,
)
from palimpsest.domain.ports import SearchSession
from palimpsest.domain.search import NO_KEYWORD_CANDIDATES, CandidateKey, KeywordCandidates, SearchQuery
from palimpsest.domain.sentinel import ANY
from psycopg.types.json import Jsonb

from .errors import translate
from .keywords import BM25_SCORE_SQL, query_weights
from .rows import (
    LINK_COLUMNS,
    MESSAGE_COLUMNS,
    RECORD_COLUMNS,
    link_from_row,
    message_from_row,
    record_from_row,
)
from .schema import read_dimension, use_schema

__all__ = [
    "EXACT_SEARCH_MAX",
    "HNSW_EF_SEARCH",
    "HNSW_MAX_SCAN_TUPLES",
    "PostgresSearchSession",
    "begin_search",
    "containment",
    "vector_literal",
]

EXACT_SEARCH_MAX: Final = 5_000
"""A scope with at most this many rows with a vector (per table) is searched exactly: a
sequential distance over a few thousand rows costs a few milliseconds, and an approximate index
walk filtered down to a small scope may return fewer rows than asked for."""
HNSW_EF_SEARCH: Final = 100
"""The HNSW candidate list of a search (pgvector's default is 40); raised to the number of
candidates asked for, at most pgvector's limit of 1000."""
HNSW_MAX_SCAN_TUPLES: Final = 20_000
"""How many index tuples an iterative HNSW scan may visit (pgvector's default)."""
MAX_CANDIDATE_LIMIT: Final = 100_000
_GROWTH: Final = 4
_NAMED: Final = (
    f"jsonb_typeof({{0}}metadata -> '{SPEAKER_KEY}') = 'string' AND btrim({{0}}metadata ->> '{SPEAKER_KEY}', ' ') <> ''"
)
"""A message has a speaker (:func:`~palimpsest.domain.model.speaker_of`): a string, not empty once
its spaces are trimmed."""

Entity = MemoryRecord | Message
Row = tuple[str, str, float]
"""(id, record type name, score) of a candidate row."""


def vector_literal(vector: Sequence[float]) -> str:
    """pgvector's text form ``[x,y,...]`` (bound as ``%s::vector``: no pgvector package)."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def _columns(columns: str, alias: str) -> str:
    return ", ".join(f"{alias}.{column.strip()}" for column in columns.split(","))


class _Where:
    """SQL predicates and their binds, in order."""

    def __init__(self) -> None:
        self.clauses: list[str] = []
        self.params: list[Any] = []

    def add(self, clause: str, *params: Any) -> None:
        self.clauses.append(clause)
        self.params.extend(params)

    def sql(self) -> str:
        return " AND ".join(self.clauses) if self.clauses else "true"


def containment(flt: Mapping[str, Any]) -> dict[str, Any]:
    """A ``jsonb`` value every metadata the filter admits contains (``metadata @> value``): the
    filter's exact values and nested filters, and the elements ``$array_contains`` asks for.
    ``$not`` and ``$array_contains_any`` add nothing. A necessary condition only (an exact
    list or object is contained in more than itself), so the Python check stays the judge;
    what it buys is the GIN index on ``metadata`` narrowing the rows read."""
    found: dict[str, Any] = {}
    for key, expected in flt.items():
        if isinstance(expected, Mapping) and expected and all(k.startswith("$") for k in expected):
            wanted = expected.get("$array_contains")
            if wanted is not None or "$array_contains" in expected:
                found[key] = list(wanted) if isinstance(wanted, (list, tuple)) else [wanted]
        elif isinstance(expected, Mapping):
            found[key] = containment(expected)
        else:
            found[key] = expected
    return found


def _metadata(where: _Where, query: SearchQuery, alias: str) -> None:
    if query.metadata_filter is None:
        return
    needed = containment(query.metadata_filter)
    if needed:
        where.add(f"{alias}.metadata @> %s", Jsonb(needed))


def _scope(where: _Where, query: SearchQuery, alias: str) -> None:
    for dimension in ("user_id", "agent_id", "thread_id"):
        value = getattr(query.scope, dimension)
        if value is ANY:
            continue
        if value is None:
            where.add(f"{alias}.{dimension} IS NULL")
        else:
            where.add(f"{alias}.{dimension} = %s", value)
    where.add(f"({alias}.expires_at IS NULL OR {alias}.expires_at > %s)", query.now)


def _record_where(query: SearchQuery, alias: str, *, direct: bool) -> _Where | None:
    """The SQL part of ``query.admits_record`` for memory records (``None``: no record can
    pass); the metadata filter stays in Python."""
    types = sorted(t.value for t in query.types if t in MEMORY_RECORD_TYPES)
    if not types:
        return None
    where = _Where()
    if len(types) < len(MEMORY_RECORD_TYPES):
        where.add(f"{alias}.record_type = ANY(%s)", types)
    _scope(where, query, alias)
    if direct and not query.include_invalid:
        where.add(f"{alias}.status = 'valid'")
    if direct and query.record_ids is not None:
        where.add(f"{alias}.id = ANY(%s)", sorted(query.record_ids))
    _metadata(where, query, alias)
    return where


def _message_where(query: SearchQuery, alias: str) -> _Where | None:
    """The SQL part of ``query.admits_record(direct=True)`` for messages (``None``: none can)."""
    if RecordType.MESSAGE not in query.types or query.record_ids is not None:
        return None
    where = _Where()
    _scope(where, query, alias)
    _metadata(where, query, alias)
    return where


class PostgresSearchSession(SearchSession):
    """The :class:`~palimpsest.domain.ports.SearchSession` of one search on a connection in a
    read-only transaction whose ``search_path`` is the store's schema (see :func:`begin_search`).

    ``exact`` forces the dense search exact (``True``) or through the index (``False``); by
    default (``None``) the scope's size decides (:data:`EXACT_SEARCH_MAX`). ``ef_search`` is the
    HNSW candidate list (raised to the candidates asked for, at most 1000)."""

    def __init__(
        self,
        conn: psycopg.Connection[Any],
        *,
        exact: bool | None = None,
        ef_search: int = HNSW_EF_SEARCH,
        max_candidates: int = MAX_CANDIDATE_LIMIT,
    ) -> None:
        self._conn = conn
        self.exact = exact
        self.ef_search = ef_search
        self.max_candidates = max_candidates
        self._dimension: tuple[int | None] | None = None
        self._loaded: dict[CandidateKey, Entity | None] = {}
        self.last_dense_plan: dict[str, str] = {}
        """How the last dense search read each table: ``"exact"`` or ``"hnsw"`` (diagnostics)."""

    # --- the primitives -----------------------------------------------------------------------

    def dense_candidates(self, query: SearchQuery, depth: int) -> list[tuple[CandidateKey, float]]:
        if query.vector is None or depth <= 0:
            return []
        with translate():
            if self._dimension is None:
                self._dimension = (read_dimension(self._conn),)
            (dimension,) = self._dimension
            if dimension is None:
                return []  # no vector stored yet: nothing is near anything
            if len(query.vector) != dimension:
                raise VectorDimensionError(
                    f"query vector has {len(query.vector)} dimensions but this store holds "
                    f"{dimension}-dimensional vectors."
                )
            vector = vector_literal(query.vector)
            self.last_dense_plan = {}
            return self._merged(
                query,
                depth,
                lambda where, limit: self._dense_rows("records", "r.record_type", where, vector, limit),
                lambda where, limit: self._dense_rows("messages", "'message'", where, vector, limit),
            )

    def keyword_candidates(self, query: SearchQuery, depth: int) -> KeywordCandidates:
        if query.text is None:
            return NO_KEYWORD_CANDIDATES
        with translate():
            weights = query_weights(self._conn, query.text)
            if weights is None:
                return NO_KEYWORD_CANDIDATES
            if not weights.terms or depth <= 0:
                return KeywordCandidates((), weights.ideal)
            terms, idfs, avgdl = list(weights.terms), list(weights.idfs), weights.average_length
            ranked = self._merged(
                query,
                depth,
                lambda where, limit: self._keyword_rows("records", "r.record_type", where, terms, idfs, avgdl, limit),
                lambda where, limit: self._keyword_rows("messages", "'message'", where, terms, idfs, avgdl, limit),
            )
        return KeywordCandidates(ranked, weights.ideal)

    def links_around(self, frontier: Sequence[str], query: SearchQuery) -> dict[str, list[RecordLink]]:
        """One statement for the frontier: the links of each record, both directions, whose
        other end passes scope, types and expiry (SQL) and the metadata filter (here)."""
        ids = list(dict.fromkeys(frontier))
        where = _record_where(query, "o", direct=False)
        if not ids or where is None:
            return {}
        link_columns = _columns(LINK_COLUMNS, "l")
        record_columns = _columns(RECORD_COLUMNS, "o")
        parts = [
            f"SELECT f.id, {link_columns}, {record_columns} FROM unnest(%s::text[]) AS f(id) "
            f"JOIN links l ON l.{near} = f.id JOIN records o ON o.id = l.{far} WHERE {where.sql()}"
            for near, far in (("source_id", "target_id"), ("target_id", "source_id"))
        ]
        found: dict[str, dict[str, RecordLink]] = {}
        width = len(LINK_COLUMNS.split(","))
        with translate():
            rows = self._conn.execute(
                " UNION ALL ".join(parts), [ids, *where.params, ids, *where.params]
            ).fetchall()
        for row in rows:
            link = link_from_row(row[1 : 1 + width])
            neighbour = record_from_row(row[1 + width :])
            self._loaded.setdefault((False, neighbour.id), neighbour)
            if query.admits_record(neighbour, direct=False):
                found.setdefault(str(row[0]), {})[link.id] = link
        return {record_id: list(links.values()) for record_id, links in found.items()}

    def load(self, keys: Sequence[CandidateKey]) -> dict[CandidateKey, Entity]:
        self._fetch([key for key in dict.fromkeys(keys) if key not in self._loaded])
        return {key: entity for key in keys if (entity := self._loaded.get(key)) is not None}

    def message_neighbours(self, message_ids: Sequence[str], radius: int) -> dict[str, list[str]]:
        ids = list(dict.fromkeys(message_ids))
        if radius <= 0 or not ids:
            return {}
        limit = min(radius, 2**31 - 1)
        statement = (
            f"WITH w AS (SELECT id, thread_id, seq FROM messages WHERE id = ANY(%s) AND {_NAMED.format('')}) "
            "SELECT w.id, n.id FROM w LEFT JOIN LATERAL ("
            f"(SELECT m.id, m.seq FROM messages m WHERE m.thread_id = w.thread_id AND m.seq < w.seq "
            f"AND {_NAMED.format('m.')} ORDER BY m.seq DESC LIMIT %s) UNION ALL "
            f"(SELECT m.id, m.seq FROM messages m WHERE m.thread_id = w.thread_id AND m.seq > w.seq "
            f"AND {_NAMED.format('m.')} ORDER BY m.seq LIMIT %s)"
            ") n ON true ORDER BY w.id, n.seq"
        )
        found: dict[str, list[str]] = {}
        with translate():
            for wanted_id, neighbour_id in self._conn.execute(statement, (ids, limit, limit)):
                neighbours = found.setdefault(str(wanted_id), [])
                if neighbour_id is not None:
                    neighbours.append(str(neighbour_id))
        return found

    # --- internals ----------------------------------------------------------------------------

    def _dense_rows(self, table: str, type_sql: str, where: _Where, vector: str, limit: int) -> list[Row]:
        """The ``limit`` rows of ``table`` nearest to ``vector`` that ``where`` admits, as (id,
        type, cosine), best first: exactly for a small scope, else through the HNSW index."""
        exact = self.exact
        if exact is None:
            counted = self._conn.execute(
                f"SELECT count(*) FROM (SELECT 1 FROM {table} r WHERE r.embedding IS NOT NULL "
                f"AND {where.sql()} LIMIT %s) s",
                [*where.params, EXACT_SEARCH_MAX + 1],
            ).fetchone()
            exact = counted is not None and int(counted[0]) <= EXACT_SEARCH_MAX
        self.last_dense_plan[table] = "exact" if exact else "hnsw"
        if exact:
            # Ordered by the distance plus zero: an expression no HNSW index serves.
            # Ties by record type name, then id, as the port orders them (a constant is no tie).
            tie = f"{type_sql}, " if type_sql.startswith("r.") else ""
            order = f"(r.embedding <=> %s::vector) + 0, {tie}r.id"
        else:
            ef_search = min(1000, max(self.ef_search, limit))
            self._conn.execute(f"SET LOCAL hnsw.ef_search = {int(ef_search)}")
            self._conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            self._conn.execute(f"SET LOCAL hnsw.max_scan_tuples = {int(HNSW_MAX_SCAN_TUPLES)}")
            order = "r.embedding <=> %s::vector"
        statement = (
            f"WITH c AS MATERIALIZED (SELECT r.id, {type_sql} AS record_type, "
            f"r.embedding <=> %s::vector AS distance FROM {table} r "
            f"WHERE r.embedding IS NOT NULL AND {where.sql()} ORDER BY {order} LIMIT %s) "
            "SELECT id, record_type, 1 - distance FROM c ORDER BY distance, record_type, id"
        )
        rows = self._conn.execute(statement, [vector, *where.params, vector, limit]).fetchall()
        return [(str(i), str(t), float(s)) for i, t, s in rows]

    def _keyword_rows(
        self,
        table: str,
        type_sql: str,
        where: _Where,
        terms: list[str],
        idfs: list[float],
        avgdl: float,
        limit: int,
    ) -> list[Row]:
        is_message = table == "messages"
        statement = (
            "WITH q(term, idf) AS (SELECT * FROM unnest(%s::text[], %s::float8[])), "
            f"s AS (SELECT p.id, {BM25_SCORE_SQL} AS score FROM q JOIN keyword_postings p "
            "ON p.term = q.term AND p.is_message = %s GROUP BY p.id) "
            f"SELECT r.id, {type_sql} AS record_type, s.score FROM s JOIN {table} r ON r.id = s.id "
            f"WHERE {where.sql()} ORDER BY s.score DESC, record_type, r.id LIMIT %s"
        )
        rows = self._conn.execute(statement, [terms, idfs, avgdl, is_message, *where.params, limit]).fetchall()
        return [(str(i), str(t), float(s)) for i, t, s in rows]

    def _merged(
        self,
        query: SearchQuery,
        depth: int,
        records: Callable[[_Where, int], list[Row]],
        messages: Callable[[_Where, int], list[Row]],
    ) -> list[tuple[CandidateKey, float]]:
        """The best ``depth`` candidates of both tables, best first (ties: record type name,
        then id). Without a metadata filter the SQL predicates are the whole filter; with one,
        each table's page is loaded and re-checked, and a larger page fetched while the check
        drops rows from a full one."""
        ranked: list[tuple[CandidateKey, str, float]] = []
        for is_message, fetch, where in (
            (False, records, _record_where(query, "r", direct=True)),
            (True, messages, _message_where(query, "r")),
        ):
            if where is None:
                continue
            if query.metadata_filter is None:
                ranked.extend(((is_message, i), t, s) for i, t, s in fetch(where, depth))
                continue
            limit = min(max(2 * depth, 50), self.max_candidates)
            while True:
                rows = fetch(where, limit)
                keys = [(is_message, row_id) for row_id, _t, _s in rows]
                self._fetch([key for key in keys if key not in self._loaded])
                passing = [
                    ((is_message, row_id), t, s)
                    for row_id, t, s in rows
                    if (entity := self._loaded.get((is_message, row_id))) is not None
                    and query.admits_record(entity, direct=True)
                ]
                if len(passing) >= depth or len(rows) < limit or limit >= self.max_candidates:
                    break
                limit = min(limit * _GROWTH, self.max_candidates)
            ranked.extend(passing[:depth])
        ranked.sort(key=lambda item: (-item[2], item[1], item[0][1]))
        return [(key, score) for key, _type, score in ranked[:depth]]

    def _fetch(self, keys: Sequence[CandidateKey]) -> None:
        """Read the rows behind ``keys`` into the session's rows (``None``: no such row)."""
        message_ids = [key[1] for key in keys if key[0]]
        record_ids = [key[1] for key in keys if not key[0]]
        with translate():
            if message_ids:
                for row in self._conn.execute(
                    f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE id = ANY(%s)", (message_ids,)
                ):
                    message = message_from_row(row)
                    self._loaded[(True, message.id)] = message
            if record_ids:
                for row in self._conn.execute(
                    f"SELECT {RECORD_COLUMNS} FROM records WHERE id = ANY(%s)", (record_ids,)
                ):
                    record = record_from_row(row)
                    self._loaded[(False, record.id)] = record
        for key in keys:
            self._loaded.setdefault(key, None)


def begin_search(conn: psycopg.Connection[Any], schema: str, vector_schema: str) -> None:
    """Start the read of one search on ``conn`` (idle): ``REPEATABLE READ, READ ONLY``, so
    every primitive reads one snapshot and none waits for a writer, at the store's schema."""
    with translate():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        use_schema(conn, schema, vector_schema)
