"""Adapters layer (Oracle): the search statements (candidates, pre-filter, graph step, hydration, neighbours).

Pure builders: each takes the store's :class:`~.names.StoreNames` and plain arguments and returns
:class:`~.sql.Statement` values (or SQL fragments with their binds); nothing here touches a
connection. Every value travels as a bind; the SQL text holds only quoted identifiers from
``StoreNames``, column names, and constants chosen by this module (``'message'``, ``'invalid'``,
the JSON literals ``true``/``false``). Semantics are the domain's (decision D17): the SQL
predicates are the same rules as :meth:`SearchQuery.admits_record` for scope, record type,
status and expiry, and the metadata pre-filter is only *sound* (it may admit rows the filter
rejects, never the reverse); the search re-checks every row in Python.

Oracle forms used here, checked against Oracle's documentation (not against a running database):

* ``VECTOR_DISTANCE(expr, :bind, COSINE)`` and ``FETCH FIRST n ROWS ONLY`` (exact, the default:
  without ``APPROX`` no vector index is used) versus ``FETCH APPROX FIRST n ROWS ONLY``
  (approximate, may use the vector index): AI Vector Search User's Guide (exact and approximate
  similarity search, HNSW approximate search example). The row count is a bind in both forms:
  ``rowcount`` of the SQL Language Reference ``row_limiting_clause`` is an expression, and
  published python-oracledb code binds it with ``APPROX`` too. The approximate form orders by the
  distance alone, the shape the vector index serves; its ties are broken in Python.
* ``CONTAINS(col, :query, 1) > 0`` with ``SCORE(1)``, ``{...}`` escaping (everything between the
  braces is literal, so reserved words such as ``NEAR``/``ABOUT`` and characters such as
  ``& | - , ; ( ) % _`` lose their operator meaning; a ``}`` inside is written ``}}``, as the
  guide's "Querying Escape Characters" says, though word tokens never hold one) and ``ACCUM``
  (a document matching more terms always scores higher): Oracle Text Reference, "Special
  Characters in Oracle Text Queries" (escape characters, reserved words and characters) and
  "Oracle Text CONTAINS Query Operators" (ACCUMulate).
* ``JSON_EXISTS(col, '<path>' PASSING :bind AS "v")`` with a filter ``?(@... == $v)``, lax mode
  (default): an array step ``[*]`` on a non-array selects the value itself; the item methods
  ``stringOnly()``, ``numberOnly()`` and ``booleanOnly()`` keep only values of that JSON type, so
  no implicit type conversion happens in the comparison; default ``FALSE ON ERROR``: JSON
  Developer's Guide, "SQL/JSON Condition JSON_EXISTS", "SQL/JSON Path Expression Item Methods",
  "Types in Filter-Condition Comparisons", "TYPE Clause for SQL Functions and Conditions".
* ``GRAPH_TABLE (graph MATCH (a IS memory) -[e IS memory_link]- (b IS memory) WHERE ...
  COLUMNS (a.prop AS x, ...))``: any-directed edge pattern, out-of-line ``WHERE`` over every
  pattern variable, binds inside that ``WHERE``, property access ``var.property``: Property
  Graph Developer's Guide, "SQL Graph Queries", "About Graph Pattern" and "Supported Features and
  Limitations When Querying a SQL Property Graph" (inline subqueries are not supported inside
  ``GRAPH_TABLE``, which is one more reason the metadata filter stays out of the graph step).
* ``ROW_NUMBER() OVER (PARTITION BY ... ORDER BY ...)`` in a ``WITH`` query (see
  :func:`message_neighbours`): SQL Language Reference, "ROW_NUMBER", "Analytic Functions" and
  "SELECT" (``subquery_factoring_clause``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from palimpsest.domain.model import MEMORY_RECORD_TYPES, SPEAKER_KEY, MemoryRecord, RecordLink, RecordType
from palimpsest.domain.search import ScopeFilter, SearchQuery
from palimpsest.domain.sentinel import ANY
from palimpsest.domain.text import keyword_terms

from .codec import (
    CODEC,
    DIALECT,
    LINK_COLUMNS,
    MEMORY_COLUMNS,
    MESSAGE_COLUMNS,
    columns,
)
from .names import StoreNames
from .sql import Statement

__all__ = [
    "CANDIDATE_COLUMNS",
    "GRAPH_STEP_WIDTH",
    "MAX_IDS_PER_STATEMENT",
    "MAX_KEYWORD_QUERY_BYTES",
    "graph_row",
    "graph_steps",
    "keyword_candidates",
    "keyword_query",
    "keyword_tokens",
    "memory_records_by_ids",
    "message_neighbours",
    "messages_by_ids",
    "metadata_prefilter",
    "text_literal",
    "vector_candidates",
]

MAX_IDS_PER_STATEMENT: Final = 500
"""Ids bound per ``IN (...)`` list (Oracle allows 1000 expressions in a list)."""

MAX_KEYWORD_QUERY_BYTES: Final = 4000
"""Longest Oracle Text query text built (UTF-8 bytes); later tokens of a longer text are dropped."""

CANDIDATE_COLUMNS: Final = "source_record_type, source_id"
"""Candidate rows are ``(source_record_type, source_id, distance | score)``."""

_MESSAGE: Final = RecordType.MESSAGE.value
_BIND_PREFIX: Final = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,20}")
_MAX_EXACT_INT: Final = 2**53  # exact as NUMBER and as BINARY_DOUBLE alike
_MAX_STRING_BYTES: Final = 4000  # a VARCHAR2 bind in SQL


# --- shared predicates ------------------------------------------------------------------------


def _in_list(expression: str, values: Sequence[Any], prefix: str, binds: dict[str, Any]) -> str:
    """``expression IN (:prefix_0, ...)``, one bind per value (added to ``binds``)."""
    names = []
    for i, value in enumerate(values):
        name = f"{prefix}_{i}"
        binds[name] = value
        names.append(f":{name}")
    return f"{expression} IN ({', '.join(names)})"


def _scope_predicates(alias: str, scope: ScopeFilter, binds: dict[str, Any]) -> list[str]:
    """Per dimension: ``ANY`` adds nothing, ``None`` is ``IS NULL``, a string is equality."""
    clauses = []
    for column in ("user_id", "agent_id", "thread_id"):
        value = getattr(scope, column)
        if value is ANY:
            continue
        if value is None:
            clauses.append(f"{alias}.{column} IS NULL")
        else:
            binds[f"scope_{column}"] = value
            clauses.append(f"{alias}.{column} = :scope_{column}")
    return clauses


def _expiry_predicate(alias: str, now: datetime, binds: dict[str, Any]) -> str:
    """Not expired at the query's ``now`` (a record expiring exactly at ``now`` has expired)."""
    binds["now"] = DIALECT.encode_time(now)
    return f"({alias}.expires_at IS NULL OR {alias}.expires_at > :now)"


def _chunk_predicates(names: StoreNames, query: SearchQuery, binds: dict[str, Any]) -> list[str]:
    """The direct-hit filters on ``RECORD_CHUNKS c``: scope, type, status, expiry, the named
    records (``record_ids``), metadata."""
    clauses = _scope_predicates("c", query.scope, binds)
    types = sorted(t.value for t in query.types)
    if query.record_types is not None and len(types) < len(RecordType):
        clauses.append(_in_list("c.source_record_type", types, "record_type", binds))
    if not query.include_invalid:
        # Only memory records have a status; a message chunk's status (NULL or 'valid') passes.
        clauses.append("(c.status IS NULL OR c.status <> 'invalid')")
    clauses.append(_expiry_predicate("c", query.now, binds))
    if query.record_ids is not None:
        # Named memory records only (a message id may equal a record id: separate id spaces).
        ids = sorted(query.record_ids)
        lists = [
            _in_list("c.source_id", ids[start : start + MAX_IDS_PER_STATEMENT], f"record_id_{n}", binds)
            for n, start in enumerate(range(0, len(ids), MAX_IDS_PER_STATEMENT))
        ]
        clauses.append(f"c.source_record_type <> '{_MESSAGE}'")
        clauses.append(lists[0] if len(lists) == 1 else "(" + " OR ".join(lists) + ")")
    metadata = _chunk_metadata_predicate(names, query, binds)
    if metadata is not None:
        clauses.append(metadata)
    return clauses


def _chunk_metadata_predicate(names: StoreNames, query: SearchQuery, binds: dict[str, Any]) -> str | None:
    """The metadata pre-filter on a chunk's source row, or ``None`` when nothing translates."""
    if query.metadata_filter is None:
        return None
    branches = []
    if RecordType.MESSAGE in query.types:
        condition, extra = metadata_prefilter(query.metadata_filter, "mm.metadata", "msg_meta")
        if condition == "1=1":
            branches.append(f"c.source_record_type = '{_MESSAGE}'")
        else:
            binds.update(extra)
            branches.append(
                f"(c.source_record_type = '{_MESSAGE}' AND EXISTS (SELECT 1 FROM {names('MESSAGE')} mm "
                f"WHERE mm.record_id = c.source_id AND {condition}))"
            )
    if any(t.is_record_row for t in query.types):
        condition, extra = metadata_prefilter(query.metadata_filter, "mr.metadata", "mem_meta")
        if condition == "1=1":
            branches.append(f"c.source_record_type <> '{_MESSAGE}'")
        else:
            binds.update(extra)
            branches.append(
                f"(c.source_record_type <> '{_MESSAGE}' AND EXISTS (SELECT 1 FROM {names('MEMORY')} mr "
                f"WHERE mr.record_id = c.source_id AND {condition}))"
            )
    if all(" EXISTS " not in branch for branch in branches):
        return None  # no branch narrows anything: the type predicate already says the rest
    return "(" + "\n       OR ".join(branches) + ")"


def _where(clauses: Iterable[str], indent: str = "   ") -> str:
    return f"\n{indent}AND ".join(clauses)


# --- candidates -------------------------------------------------------------------------------


def vector_candidates(
    names: StoreNames,
    query: SearchQuery,
    query_vector: Any,
    limit: int,
    *,
    approximate: bool = False,
) -> Statement:
    """The ``limit`` chunks nearest to ``query_vector`` (cosine) that pass the query's filters.

    ``query_vector`` is the ``array.array("f")`` from ``codec.encode_vector``. Rows are
    ``(source_record_type, source_id, distance)``, nearest first; exact search orders ties by
    type then id (binary order, like Python's), approximate search by distance only.
    """
    binds: dict[str, Any] = {"query_vector": query_vector, "limit": int(limit)}
    clauses = ["c.embedding IS NOT NULL", *_chunk_predicates(names, query, binds)]
    if approximate:
        order = "ORDER BY distance\nFETCH APPROX FIRST :limit ROWS ONLY"
    else:
        order = (
            "ORDER BY distance, c.source_record_type, NLSSORT(c.source_id, 'NLS_SORT=BINARY')\n"
            "FETCH FIRST :limit ROWS ONLY"
        )
    sql = (
        f"SELECT {columns('c', CANDIDATE_COLUMNS)}, "
        "VECTOR_DISTANCE(c.embedding, :query_vector, COSINE) AS distance\n"
        f"  FROM {names('RECORD_CHUNKS')} c\n"
        f" WHERE {_where(clauses)}\n"
        f"{order}"
    )
    return Statement("search.vector_candidates", sql, binds)


def keyword_tokens(text: str) -> list[str]:
    """The query's :func:`~palimpsest.domain.text.keyword_terms` (distinct lower-cased
    ``\\w+`` tokens without stop words unless nothing else is left), as in the other stores.
    A run without any letter or digit (only underscores) is dropped: Oracle Text's lexer
    indexes no such token.
    """
    return [t for t in keyword_terms(text) if any(ch.isalnum() for ch in t)]


def text_literal(token: str) -> str:
    """``token`` as an Oracle Text literal: wrapped in braces, a ``}`` inside written ``}}``."""
    return "{" + token.replace("}", "}}") + "}"


def keyword_query(text: str) -> str | None:
    """An Oracle Text query for ``text``: every token escaped as ``{token}``, joined by ``ACCUM``.

    Braces make every character and reserved word inside a literal (``}`` is written ``}}``),
    so no input is a query-syntax error; ``ACCUM`` matches documents sharing any token and ranks
    those sharing more tokens higher. ``None`` when the text has no token (no SQL is sent then).
    Tokens that would take the query past :data:`MAX_KEYWORD_QUERY_BYTES` are left out.
    """
    parts: list[str] = []
    size = 0
    for token in keyword_tokens(text):
        part = text_literal(token)
        added = len(part.encode("utf-8")) + (len(" ACCUM ") if parts else 0)
        if size + added > MAX_KEYWORD_QUERY_BYTES:
            break
        parts.append(part)
        size += added
    return " ACCUM ".join(parts) if parts else None


def keyword_candidates(names: StoreNames, query: SearchQuery, keyword_query: str, limit: int) -> Statement:
    """The ``limit`` best chunks for an Oracle Text query (see :func:`keyword_query`).

    Rows are ``(source_record_type, source_id, score)`` with Oracle Text's ``SCORE`` (1..100),
    best first, ties by type then id (binary order).
    """
    binds: dict[str, Any] = {"keyword_query": keyword_query, "limit": int(limit)}
    clauses = ["CONTAINS(c.chunk_text, :keyword_query, 1) > 0", *_chunk_predicates(names, query, binds)]
    sql = (
        f"SELECT {columns('c', CANDIDATE_COLUMNS)}, SCORE(1) AS score\n"
        f"  FROM {names('RECORD_CHUNKS')} c\n"
        f" WHERE {_where(clauses)}\n"
        "ORDER BY score DESC, c.source_record_type, NLSSORT(c.source_id, 'NLS_SORT=BINARY')\n"
        "FETCH FIRST :limit ROWS ONLY"
    )
    return Statement("search.keyword_candidates", sql, binds)


# --- metadata pre-filter ----------------------------------------------------------------------


def _scalar_condition(value: Any, column_sql: str, bind: str, binds: dict[str, Any]) -> str | None:
    """``JSON_EXISTS`` true when some top-level member of the document is ``value`` or is an
    array holding ``value`` (JSON-typed comparison), or ``None`` if ``value`` is not translated.

    The member name is not in the path: names are user data and a path must be a literal, so
    any member matches (a superset of the member the filter names, hence sound). Translated:
    non-empty strings that fit a VARCHAR2 bind (Oracle reads ``''`` as NULL), integers (and
    integral floats) within 2**53, booleans. Not translated: ``None``, other floats, containers.
    """
    if isinstance(value, bool):
        literal = "true" if value else "false"
        return f"JSON_EXISTS({column_sql}, '$.*[*]?(@.booleanOnly() == {literal})')"
    if isinstance(value, float):
        if not (math.isfinite(value) and value.is_integer()):
            return None
        value = int(value)
    if isinstance(value, int):
        if abs(value) > _MAX_EXACT_INT:
            return None
        binds[bind] = value
        return f"JSON_EXISTS({column_sql}, '$.*[*]?(@.numberOnly() == $v)' PASSING :{bind} AS \"v\")"
    if isinstance(value, str):
        try:
            size = len(value.encode("utf-8"))
        except UnicodeEncodeError:
            return None
        if not value or "\x00" in value or size > _MAX_STRING_BYTES:
            return None
        binds[bind] = value
        return f"JSON_EXISTS({column_sql}, '$.*[*]?(@.stringOnly() == $v)' PASSING :{bind} AS \"v\")"
    return None


def metadata_prefilter(
    flt: Mapping[str, Any] | None, column_sql: str, bind_prefix: str
) -> tuple[str, dict[str, Any]]:
    """A sound SQL condition for a (validated) metadata filter on the JSON column ``column_sql``.

    Sound means it holds for every row :func:`~palimpsest.domain.metadata_matches` admits; it may
    hold for more (the exact filter always runs afterwards in Python, decision D17). Translated,
    per top-level entry: an exact scalar value, an exact list of scalars (each element must be
    present), ``$array_contains`` (each value present) and ``$array_contains_any`` (an ``OR`` of
    the values, only if every value translates). Nested objects, ``$not``, ``None`` and
    non-integral numbers contribute nothing; ``1=1`` when nothing translates. ``column_sql`` is
    SQL written by the caller (never user text); binds are named ``<bind_prefix>_<n>``.
    """
    if not _BIND_PREFIX.fullmatch(bind_prefix):
        raise ValueError(f"bind prefix {bind_prefix!r} is not a short identifier")
    if not flt:
        return "1=1", {}
    binds: dict[str, Any] = {}
    conditions: list[str] = []

    def scalar(value: Any) -> str | None:
        return _scalar_condition(value, column_sql, f"{bind_prefix}_{len(binds)}", binds)

    for expected in flt.values():
        if isinstance(expected, Mapping):
            if not expected or not all(isinstance(k, str) and k.startswith("$") for k in expected):
                continue  # a nested object filter: not translated
            for op, operand in expected.items():
                if op == "$array_contains":
                    wanted = operand if isinstance(operand, (list, tuple)) else [operand]
                    conditions.extend(c for c in map(scalar, wanted) if c is not None)
                elif op == "$array_contains_any":
                    before = dict(binds)
                    alternatives = [scalar(v) for v in operand]
                    if alternatives and all(a is not None for a in alternatives):
                        conditions.append("(" + " OR ".join(alternatives) + ")")  # type: ignore[arg-type]
                    else:
                        binds.clear()
                        binds.update(before)
                # "$not" is never translated.
        elif isinstance(expected, (list, tuple)):
            conditions.extend(c for c in map(scalar, expected) if c is not None)
        else:
            condition = scalar(expected)
            if condition is not None:
                conditions.append(condition)
    if not conditions:
        return "1=1", {}
    return " AND ".join(conditions), binds


# --- graph step -------------------------------------------------------------------------------

GRAPH_STEP_WIDTH: Final = 1 + len(LINK_COLUMNS.split(",")) + len(MEMORY_COLUMNS.split(","))
"""Columns of a graph-step row: ``from_id``, the link (``LINK_COLUMNS``), the neighbour (``MEMORY_COLUMNS``)."""

_LINK_NAMES: Final = [c.strip() for c in LINK_COLUMNS.split(",")]
_NODE_NAMES: Final = [c.strip() for c in MEMORY_COLUMNS.split(",")]


def graph_steps(names: StoreNames, query: SearchQuery, frontier: Sequence[str]) -> list[Statement]:
    """One depth of graph expansion: every link of every ``frontier`` record, in either
    direction, to a neighbour passing the query's scope, memory types and expiry.

    Status and metadata are not filtered here (the domain's ``admits`` for linked records has no
    status, and metadata is checked in Python), so the edges of each frontier record are complete
    for every neighbour ``admits`` could accept. One statement per :data:`MAX_IDS_PER_STATEMENT`
    frontier ids; no statement when the query admits no memory type or the frontier is empty.
    Rows: see :func:`graph_row`.
    """
    types = sorted(t.value for t in query.types if t.is_memory_like)
    if not types or not frontier:
        return []
    statements = []
    for part in _chunks(frontier):
        binds: dict[str, Any] = {}
        clauses = [_in_list("a.record_id", part, "frontier", binds)]
        if len(types) < len(MEMORY_RECORD_TYPES):
            clauses.append(_in_list("b.memory_type", types, "record_type", binds))
        clauses.extend(_scope_predicates("b", query.scope, binds))
        clauses.append(_expiry_predicate("b", query.now, binds))
        projected = ",\n    ".join(
            ["a.record_id AS from_id"]
            + [f"e.{name} AS link_{name}" for name in _LINK_NAMES]
            + [f"b.{name} AS node_{name}" for name in _NODE_NAMES]
        )
        selected = ", ".join(
            ["g.from_id"] + [f"g.link_{n}" for n in _LINK_NAMES] + [f"g.node_{n}" for n in _NODE_NAMES]
        )
        sql = (
            f"SELECT {selected}\n"
            f"  FROM GRAPH_TABLE ({names('MEMORY_GRAPH')}\n"
            "  MATCH (a IS memory) -[e IS memory_link]- (b IS memory)\n"
            f"  WHERE {_where(clauses, '    ')}\n"
            f"  COLUMNS (\n    {projected}\n  )\n"
            ") g"
        )
        statements.append(Statement("search.graph_step", sql, binds))
    return statements


def graph_row(row: Sequence[Any]) -> tuple[str, RecordLink, MemoryRecord]:
    """A graph-step row as ``(frontier record id, link, neighbour record)``."""
    links_end = 1 + len(_LINK_NAMES)
    return row[0], CODEC.link(row[1:links_end]), CODEC.record(row[links_end:])


# --- hydration --------------------------------------------------------------------------------


def _chunks(ids: Sequence[str]) -> list[Sequence[str]]:
    return [ids[i : i + MAX_IDS_PER_STATEMENT] for i in range(0, len(ids), MAX_IDS_PER_STATEMENT)]


def memory_records_by_ids(names: StoreNames, ids: Sequence[str]) -> list[Statement]:
    """Memory records by id (rows in ``MEMORY_COLUMNS`` order), one statement per 500 ids."""
    return _by_ids("search.memory_records_by_ids", names("MEMORY"), MEMORY_COLUMNS, ids)


def messages_by_ids(names: StoreNames, ids: Sequence[str]) -> list[Statement]:
    """Messages by id (rows in ``MESSAGE_COLUMNS`` order), one statement per 500 ids."""
    return _by_ids("search.messages_by_ids", names("MESSAGE"), MESSAGE_COLUMNS, ids)


def _by_ids(name: str, table: str, column_list: str, ids: Sequence[str]) -> list[Statement]:
    statements = []
    for part in _chunks(list(dict.fromkeys(ids))):
        binds: dict[str, Any] = {}
        sql = f"SELECT {columns('t', column_list)}\n  FROM {table} t\n WHERE {_in_list('t.record_id', part, 'id', binds)}"
        statements.append(Statement(name, sql, binds))
    return statements


# --- neighbours -------------------------------------------------------------------------------


def _named(alias: str) -> str:
    """A message with a speaker (:func:`~palimpsest.domain.model.speaker_of`): ``$.speaker`` a
    JSON string (the ``type()`` item method in a filter of ``JSON_EXISTS``) that ``TRIM`` does
    not leave empty (an empty string is NULL in Oracle). Checked against the JSON Developer's
    Guide (23): "SQL/JSON Path Expression Item Methods" and "SQL/JSON Condition JSON_EXISTS"."""
    return (
        f"JSON_EXISTS({alias}.metadata, '$.{SPEAKER_KEY}?(@.type() == \"string\")') "
        f"AND TRIM(JSON_VALUE({alias}.metadata, '$.{SPEAKER_KEY}')) IS NOT NULL"
    )


def message_neighbours(names: StoreNames, message_ids: Sequence[str], radius: int) -> list[Statement]:
    """The named messages within ``radius`` places of each wanted named message in its thread
    (places among the thread's named messages, :func:`_named`), one statement
    per 500 ids. Rows are ``(wanted id, neighbour id)``, each wanted id's neighbours in thread
    order, ``(wanted id, NULL)`` for a message alone in its thread, none for an id naming no
    message; no statement when ``radius <= 0`` or no id is given.

    A place is a message's ``ROW_NUMBER`` in its thread by ``order_seq`` (unique in a thread), over
    every row of the thread this read sees: the ``WHERE`` keeping the wanted threads runs before
    the analytic function. Checked against the SQL Language Reference (not a running database):
    "Analytic Functions" (23: computed after the joins and ``WHERE`` of their query block),
    "ROW_NUMBER" (numbered from 1 in ``order_by_clause`` order within each partition), and the
    ``with_clause`` / ``subquery_factoring_clause`` and ``outer_join_clause`` syntax of "SELECT".
    """
    if radius <= 0 or not message_ids:
        return []
    table = names("MESSAGE")
    statements = []
    for part in _chunks(list(dict.fromkeys(message_ids))):
        binds: dict[str, Any] = {"radius": int(radius)}
        sql = (
            "WITH wanted AS (\n"
            f"  SELECT t.record_id, t.thread_id\n    FROM {table} t\n"
            f"   WHERE {_in_list('t.record_id', part, 'id', binds)}\n"
            f"     AND {_named('t')}\n"
            "), placed AS (\n"
            "  SELECT m.record_id, m.thread_id,\n"
            "         ROW_NUMBER() OVER (PARTITION BY m.thread_id ORDER BY m.order_seq) AS place\n"
            f"    FROM {table} m\n"
            "   WHERE m.thread_id IN (SELECT w.thread_id FROM wanted w)\n"
            f"     AND {_named('m')}\n"
            ")\n"
            "SELECT p.record_id AS wanted_id, n.record_id AS neighbour_id\n"
            "  FROM placed p\n"
            "  JOIN wanted w ON w.record_id = p.record_id\n"
            "  LEFT OUTER JOIN placed n\n"
            "    ON n.thread_id = p.thread_id AND ABS(n.place - p.place) BETWEEN 1 AND :radius\n"
            "ORDER BY p.record_id, n.place"
        )
        statements.append(Statement("search.message_neighbours", sql, binds))
    return statements
