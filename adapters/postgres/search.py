"""Adapters layer (PostgreSQL): the five search primitives in SQL over one read.

The pipeline (fusion, the one score convention, the linked-record trees, hydration and the
final filter check) is the domain's :func:`~palimpsest.domain.search.run_search`; a
:class:`PostgresSearchSession` answers what only the store can, in one ``REPEATABLE READ, READ
ONLY`` transaction (every primitive of a search reads one snapshot and never waits for a
writer):

* ``dense_candidates``: pgvector's cosine distance ``<=>``, the score its complement
  (``1 - distance``: cosine similarity, as every store reports). The query's scope, types,
  expiry, status and ``record_ids`` are SQL predicates. A scope of at most
  :data:`EXACT_SEARCH_MAX` rows with a vector is searched exactly, a larger one through the
  HNSW index with iterative scans on (``hnsw.iterative_scan = relaxed_order``, then re-sorted by
  distance), ``hnsw.ef_search`` = max(:data:`HNSW_EF_SEARCH`, the candidates asked for), at most
  1000, and ``hnsw.max_scan_tuples`` = :data:`HNSW_MAX_SCAN_TUPLES`. One statement serves both
  tables: per table it reads at most :data:`EXACT_SEARCH_MAX` + 1 rows of the scope with their
  distances (in no order, so no index) and answers the best of them with the count, so a small
  scope costs one scan and no second statement; only a table whose scope proved larger is then
  read through its index. Candidate rows come with their columns: ``load`` sends nothing for them.
* ``keyword_candidates``: BM25 from the term statistics tables (:mod:`.keywords`), with the
  same predicates; raw relevance the BM25 sum, ideal the query terms' idf sum; both tables in
  one statement.
* ``links_around``: one statement per depth for the whole frontier (both directions), the
  other end's scope, types and expiry in SQL.
* ``load``: records and messages by id, one statement per table.
* ``message_neighbours``: one statement with a lateral join on ``(thread_id, seq)``.

The metadata filter narrows the rows in SQL by ``jsonb`` containment (:func:`containment`, a
necessary condition served by a GIN index) and is decided in Python
(:meth:`SearchQuery.admits_record`) on the candidate rows, a larger page being fetched when it
drops rows from a full one; every row read is kept
for the session, so ``load`` sends no statement for a row a candidate page already returned.
:func:`begin_search` opens the transaction (``BEGIN``, the connection being in autocommit for
the search: :meth:`.core.PostgresStoreCore.searching`), sets the snapshot's isolation and the
schema and reads the store's dimension in one round trip, and the pool checks the connection it
hands out without one while its socket is quiet (:func:`.connection.check_idle_connection`), so a
vector search over small scopes sends three: that start, the candidates of both tables (with
their rows), the rollback. Counted with ``strace`` as the client's reads of server answers, 100
scoped searches on one user's 1,000 records: 5.0 per search before these two changes, 3.0 after
(BENCHMARKS.md, "Embedded and PostgreSQL side by side").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import psycopg
from palimpsest.adapters.sql.standard import Where
from palimpsest.domain.errors import VectorDimensionError
from palimpsest.domain.model import (
    RECORD_ROW_TYPES,
    SPEAKER_KEY,
    MemoryRecord,
    Message,
    RecordLink,
    RecordType,
)
from palimpsest.domain.ports import SearchSession
from palimpsest.domain.search import NO_KEYWORD_CANDIDATES, CandidateKey, KeywordCandidates, SearchQuery
from palimpsest.domain.sentinel import ANY
from psycopg import sql
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
from .schema import read_dimension

__all__ = [
    "EXACT_SEARCH_MAX",
    "HNSW_EF_SEARCH",
    "HNSW_MAX_SCAN_TUPLES",
    "KEYWORD_SCOPE_MAX",
    "PostgresSearchSession",
    "begin_search",
    "containment",
    "vector_literal",
]

EXACT_SEARCH_MAX: Final = 5_000
"""A scope with at most this many rows with a vector (per table) is searched exactly: a
sequential distance over a few thousand rows costs a few milliseconds, and an approximate index
walk filtered down to a small scope may return fewer rows than asked for."""
KEYWORD_SCOPE_MAX: Final = 5_000
"""A scope with at most this many rows (per table) is keyword-scored row by row from its own
postings; a larger one from the query terms' whole postings lists."""
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


def _metadata(where: Where, query: SearchQuery, alias: str) -> None:
    if query.metadata_filter is None:
        return
    needed = containment(query.metadata_filter)
    if needed:
        where.add(f"{alias}.metadata @> %s", Jsonb(needed))


def _scope(where: Where, query: SearchQuery, alias: str) -> None:
    for dimension in ("user_id", "agent_id", "thread_id"):
        value = getattr(query.scope, dimension)
        if value is ANY:
            continue
        if value is None:
            where.add(f"{alias}.{dimension} IS NULL")
        else:
            where.add(f"{alias}.{dimension} = %s", value)
    where.add(f"({alias}.expires_at IS NULL OR {alias}.expires_at > %s)", query.now)


def _record_where(query: SearchQuery, alias: str, *, direct: bool) -> Where | None:
    """The SQL part of ``query.admits_record`` for memory records (``None``: no record can
    pass); the metadata filter stays in Python."""
    types = sorted(t.value for t in query.types if t in RECORD_ROW_TYPES)
    if not types:
        return None
    where = Where()
    if len(types) < len(RECORD_ROW_TYPES):
        where.add(f"{alias}.record_type = ANY(%s)", types)
    _scope(where, query, alias)
    if direct and not query.include_invalid:
        where.add(f"{alias}.status = 'valid'")
    if direct and query.record_ids is not None:
        where.add(f"{alias}.id = ANY(%s)", sorted(query.record_ids))
    _metadata(where, query, alias)
    return where


def _message_where(query: SearchQuery, alias: str) -> Where | None:
    """The SQL part of ``query.admits_record(direct=True)`` for messages (``None``: none can)."""
    if RecordType.MESSAGE not in query.types or query.record_ids is not None:
        return None
    where = Where()
    _scope(where, query, alias)
    _metadata(where, query, alias)
    return where


class _Table:
    """A table a search reads (records or messages) and its predicates."""

    __slots__ = ("is_message", "where")

    def __init__(self, is_message: bool, where: Where | None) -> None:
        self.is_message = is_message
        self.where = where

    @property
    def name(self) -> str:
        return "messages" if self.is_message else "records"


_RECORD_WIDTH: Final = len(RECORD_COLUMNS.split(","))
_MESSAGE_WIDTH: Final = len(MESSAGE_COLUMNS.split(","))


def _small_scope_statement(tables: Sequence[_Table], vector: str, limit: int) -> tuple[str, list[Any]]:
    """One statement for every table of a dense search: per table, at most
    :data:`EXACT_SEARCH_MAX` + 1 rows of the scope, in no order (so no index), their distances
    computed once and materialised; their count; and the best ``limit`` of them (the exact
    answer when the count shows the scan was not cut). Rows: ``(is a message, count, id, type,
    cosine, *record columns, *message columns)``; a row with a NULL id carries a table's count
    alone (an empty scope still answers one)."""
    ctes = ["q AS MATERIALIZED (SELECT %s::vector AS v)"]
    params: list[Any] = [vector]
    parts: list[str] = []
    for table in tables:
        assert table.where is not None
        name, flag = ("m", "true") if table.is_message else ("r", "false")
        type_sql = "'message'" if table.is_message else "r.record_type"
        ctes.append(
            f"{name}s AS MATERIALIZED (SELECT r.id, {type_sql} AS record_type, "
            f"r.embedding <=> (SELECT v FROM q) AS distance FROM {table.name} r "
            f"WHERE r.embedding IS NOT NULL AND {table.where.predicate()} LIMIT %s)"
        )
        ctes.append(f"{name}n AS (SELECT count(*) AS n FROM {name}s)")
        ctes.append(f"{name}c AS (SELECT id, record_type, distance FROM {name}s ORDER BY distance, record_type, id LIMIT %s)")
        params.extend([*table.where.params, EXACT_SEARCH_MAX + 1, limit])
        parts.append(f"SELECT {flag}, {name}n.n, {name}c.id, {name}c.record_type, {name}c.distance FROM {name}n, {name}c")
        parts.append(f"SELECT {flag}, {name}n.n, NULL, NULL, NULL FROM {name}n")
    ctes.append("u(is_message, n, id, record_type, distance) AS (" + " UNION ALL ".join(parts) + ")")
    statement = (
        "WITH " + ", ".join(ctes) + " "
        f"SELECT u.is_message, u.n, u.id, u.record_type, 1 - u.distance, {_columns(RECORD_COLUMNS, 'e')}, "
        f"{_columns(MESSAGE_COLUMNS, 'f')} FROM u "
        "LEFT JOIN records e ON NOT u.is_message AND e.id = u.id "
        "LEFT JOIN messages f ON u.is_message AND f.id = u.id"
    )
    return statement, params


def _dense_statement(table: _Table, vector: str, limit: int, plan: str) -> tuple[str, list[Any]]:
    """The statement of one table's dense candidates, forced ``"exact"`` (ordered by the
    distance plus zero: an expression no HNSW index serves) or through the ``"hnsw"`` index
    (ordered by the distance itself, with the iterative scan settings of the transaction), and
    its binds. Rows: ``(id, type, cosine, *entity columns)``, best first (ties: type name, id)."""
    assert table.where is not None
    type_sql = "'message'" if table.is_message else "r.record_type"
    columns = _columns(MESSAGE_COLUMNS if table.is_message else RECORD_COLUMNS, "e")
    if plan == "exact":
        tie = "r.record_type, " if not table.is_message else ""
        order = f"(r.embedding <=> %s::vector) + 0, {tie}r.id"
    else:
        order = "r.embedding <=> %s::vector"
    statement = (
        f"WITH c AS MATERIALIZED (SELECT r.id, {type_sql} AS record_type, r.embedding <=> %s::vector AS distance "
        f"FROM {table.name} r WHERE r.embedding IS NOT NULL AND {table.where.predicate()} ORDER BY {order} LIMIT %s) "
        f"SELECT c.id, c.record_type, 1 - c.distance, {columns} "
        f"FROM c JOIN {table.name} e ON e.id = c.id ORDER BY c.distance, c.record_type, c.id"
    )
    return statement, [vector, *table.where.params, vector, limit]


def _keyword_statement(
    tables: Sequence[_Table], terms: list[str], idfs: list[float], avgdl: float, limit: int
) -> tuple[str, list[Any]]:
    """One statement of the tables' keyword candidates (rows: is a message, id, type, BM25;
    the best ``limit`` of each table) and its binds.

    Per table, the scope's rows are read first, at most :data:`KEYWORD_SCOPE_MAX` + 1 of them:
    a scope no larger (one user's) is scored row by row from its postings of the query's terms
    (index lookups, so a common term's long postings list is never read whole); a larger one
    by aggregating the terms' postings, then joined to the scope. Only one of the two branches
    runs (each is gated by the scope's count)."""
    parts: list[str] = []
    params: list[Any] = []
    for table in tables:
        assert table.where is not None
        flag = str(table.is_message).lower()
        type_sql = "'message'" if table.is_message else "r.record_type"
        where = table.where.predicate()
        parts.append(
            "(WITH q(term, idf) AS (SELECT * FROM unnest(%s::text[], %s::float8[])), "
            f"sc AS MATERIALIZED (SELECT r.id, {type_sql} AS record_type FROM {table.name} r WHERE {where} LIMIT %s), "
            "n AS (SELECT count(*) AS n FROM sc), "
            f"small AS (SELECT sc.id, sc.record_type, k.score FROM sc CROSS JOIN LATERAL (SELECT {BM25_SCORE_SQL} "
            f"AS score FROM q JOIN keyword_postings p ON p.term = q.term AND p.is_message = {flag} AND p.id = sc.id) k "
            f"WHERE k.score IS NOT NULL AND (SELECT n FROM n) <= {int(KEYWORD_SCOPE_MAX)}), "
            f"large AS (SELECT r.id, {type_sql} AS record_type, s.score FROM (SELECT p.id, {BM25_SCORE_SQL} AS score "
            f"FROM q JOIN keyword_postings p ON p.term = q.term AND p.is_message = {flag} GROUP BY p.id) s "
            f"JOIN {table.name} r ON r.id = s.id WHERE {where} AND (SELECT n FROM n) > {int(KEYWORD_SCOPE_MAX)}) "
            f"SELECT {flag}, id, record_type, score FROM (SELECT * FROM small UNION ALL SELECT * FROM large) u "
            "ORDER BY score DESC, record_type, id LIMIT %s)"
        )
        params.extend(
            [terms, idfs, *table.where.params, KEYWORD_SCOPE_MAX + 1, avgdl, avgdl, *table.where.params, limit]
        )
    return " UNION ALL ".join(parts), params


def _ranked(rows: list[tuple[CandidateKey, str, float]], depth: int) -> list[tuple[CandidateKey, float]]:
    """The best ``depth`` of both tables' candidates (ties: record type name, then id)."""
    rows.sort(key=lambda item: (-item[2], item[1], item[0][1]))
    return [(key, score) for key, _type, score in rows[:depth]]


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
        known_dimension: tuple[int | None] | None = None,
    ) -> None:
        self._conn = conn
        self.exact = exact
        self.ef_search = ef_search
        self.max_candidates = max_candidates
        self._dimension: tuple[int | None] | None = known_dimension
        """The store's dimension once read (:func:`begin_search` reads it with the snapshot)."""
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
            if query.metadata_filter is None:  # the SQL predicates are the whole filter
                tables = [
                    table
                    for table in (
                        _Table(False, _record_where(query, "r", direct=True)),
                        _Table(True, _message_where(query, "r")),
                    )
                    if table.where is not None
                ]
                pages = self._dense_pages(tables, vector, depth)
                return _ranked([((t.is_message, i), k, sc) for t in tables for i, k, sc in pages[t.is_message]], depth)
            return self._merged(
                query,
                depth,
                lambda where, limit: self._dense_pages([_Table(False, where)], vector, limit)[False],
                lambda where, limit: self._dense_pages([_Table(True, where)], vector, limit)[True],
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

            def page(table: _Table, limit: int) -> list[Row]:
                rows = self._conn.execute(*_keyword_statement([table], terms, idfs, avgdl, limit)).fetchall()
                return [(str(i), str(t), float(sc)) for _m, i, t, sc in rows]

            if query.metadata_filter is None:  # both tables in one statement
                tables = [
                    table
                    for table in (
                        _Table(False, _record_where(query, "r", direct=True)),
                        _Table(True, _message_where(query, "r")),
                    )
                    if table.where is not None
                ]
                rows = (
                    self._conn.execute(*_keyword_statement(tables, terms, idfs, avgdl, depth)).fetchall()
                    if tables
                    else []
                )
                ranked = _ranked([((bool(m), str(i)), str(t), float(sc)) for m, i, t, sc in rows], depth)
            else:
                ranked = self._merged(
                    query,
                    depth,
                    lambda where, limit: page(_Table(False, where), limit),
                    lambda where, limit: page(_Table(True, where), limit),
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
            f"JOIN links l ON l.{near} = f.id JOIN records o ON o.id = l.{far} WHERE {where.predicate()}"
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

    def _dense_pages(self, tables: Sequence[_Table], vector: str, limit: int) -> dict[bool, list[Row]]:
        """The ``limit`` rows of each table nearest to ``vector`` that its predicates admit, as
        (id, type, cosine), best first (ties: type name, then id); the rows themselves are kept
        for :meth:`load`.

        By default (``exact`` unset) one statement reads, for every table, at most
        :data:`EXACT_SEARCH_MAX` + 1 rows of the scope with their distances and answers the best
        of them with the count (:func:`_small_scope_statement`): a small scope is searched
        exactly in one scan and one round trip; a table whose scope is larger is then searched
        through its HNSW index. ``exact`` set forces either way."""
        out: dict[bool, list[Row]] = {}
        larger = list(tables)
        if self.exact is None and tables:
            rows = self._conn.execute(*_small_scope_statement(tables, vector, limit)).fetchall()
            counts: dict[bool, int] = {}
            found: dict[bool, list[Sequence[Any]]] = {table.is_message: [] for table in tables}
            for row in rows:
                is_message = bool(row[0])
                counts[is_message] = int(row[1])
                if row[2] is not None:
                    offset = 5 + _RECORD_WIDTH if is_message else 5
                    width = _MESSAGE_WIDTH if is_message else _RECORD_WIDTH
                    found[is_message].append((row[2], row[3], row[4], *row[offset : offset + width]))
            larger = [table for table in tables if counts.get(table.is_message, 0) > EXACT_SEARCH_MAX]
            for table in tables:
                if table not in larger:
                    self.last_dense_plan[table.name] = "exact"
                    page = sorted(found[table.is_message], key=lambda r: (-float(r[2]), str(r[1]), str(r[0])))
                    out[table.is_message] = self._kept(table.is_message, page)
        plan = "exact" if self.exact else "hnsw"
        if larger and plan == "hnsw":
            ef_search = min(1000, max(self.ef_search, limit))
            self._conn.execute(  # three settings, one round trip (no binds: one simple query)
                f"SET LOCAL hnsw.ef_search = {int(ef_search)}; SET LOCAL hnsw.iterative_scan = relaxed_order; "
                f"SET LOCAL hnsw.max_scan_tuples = {int(HNSW_MAX_SCAN_TUPLES)}"
            )
        for table in larger:
            self.last_dense_plan[table.name] = plan
            rows = self._conn.execute(*_dense_statement(table, vector, limit, plan)).fetchall()
            out[table.is_message] = self._kept(table.is_message, rows)
        return out

    def _kept(self, is_message: bool, rows: Sequence[Sequence[Any]]) -> list[Row]:
        """Candidate rows ``(id, type, cosine, *entity columns)`` as (id, type, cosine), in
        order; their entities kept for :meth:`load`."""
        out: list[Row] = []
        for row in rows:
            entity: Entity = message_from_row(row[3:]) if is_message else record_from_row(row[3:])
            self._loaded[(is_message, entity.id)] = entity
            out.append((str(row[0]), str(row[1]), float(row[2])))
        return out

    def _merged(
        self,
        query: SearchQuery,
        depth: int,
        records: Callable[[Where, int], list[Row]],
        messages: Callable[[Where, int], list[Row]],
    ) -> list[tuple[CandidateKey, float]]:
        """The best ``depth`` candidates of both tables under a metadata filter, best first
        (ties: record type name, then id): each table's page is loaded and re-checked, and a
        larger page fetched while the check drops rows from a full one. (Without a metadata
        filter the SQL predicates are the whole filter: both tables are read in one round trip.)"""
        ranked: list[tuple[CandidateKey, str, float]] = []
        for is_message, fetch, where in (
            (False, records, _record_where(query, "r", direct=True)),
            (True, messages, _message_where(query, "r")),
        ):
            if where is None:
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
        return _ranked(ranked, depth)

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


def begin_search(conn: psycopg.Connection[Any], schema: str, vector_schema: str) -> int | None:
    """Start the read of one search on ``conn`` (idle): ``REPEATABLE READ, READ ONLY``, so
    every primitive reads one snapshot and none waits for a writer, at the store's schema.
    Returns the store's vector dimension (``None``: none yet), read in the same round trip.

    On a connection in autocommit the query opens the transaction itself (``BEGIN`` its first
    statement; the caller ends it with a rollback); on one that is not, psycopg has sent its
    own ``BEGIN`` first and the isolation is set by ``SET TRANSACTION``."""
    # One simple query (no binds): the transaction, the schema (as ``use_schema`` sets it) and
    # the dimension (as ``read_dimension`` reads it); the cursor's last result is the dimension.
    start = (
        "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"
        if conn.autocommit
        else "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"
    )
    statement = sql.SQL(
        start + "; SET LOCAL search_path TO {}, {}; SELECT value FROM meta WHERE key = 'dimension'"
    ).format(sql.Identifier(schema), sql.Identifier(vector_schema))
    with translate():
        cursor = conn.execute(statement)
        while cursor.nextset():
            pass
        row = cursor.fetchone()
    return None if row is None else int(row[0])
