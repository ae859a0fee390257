"""Offline tests of the Oracle search: every statement rendered against golden files, bind hygiene,
keyword escaping, soundness of the metadata pre-filter, and ``OracleSearchSession`` (each
primitive, and the domain's pipeline over it) run on the recording fake connection with a
responder that plays a tiny database.

Nothing here runs Oracle. The tiny database interprets exactly the predicate shapes the builders
emit (and fails on any other), and the metadata pre-filter is evaluated with a model of the
documented SQL/JSON semantics it relies on (lax ``[*]`` and the ``*Only()`` item methods); what
these tests prove is that the adapter's logic agrees with the domain under those semantics.
"""

from __future__ import annotations

import array
import math
import random
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from palimpsest.adapters.oracle import search_sql
from palimpsest.adapters.oracle.codec import encode_vector
from palimpsest.adapters.oracle.names import StoreNames
from palimpsest.adapters.oracle.search import MAX_CANDIDATE_LIMIT, OracleSearchSession
from palimpsest.adapters.oracle.sql import Statement, placeholders
from palimpsest.domain import metadata_matches
from palimpsest.domain.errors import VectorDimensionError
from palimpsest.domain.links import opposite_label
from palimpsest.domain.model import MemoryRecord, Message, RecordLink, RecordStatus, RecordType
from palimpsest.domain.search import (
    LinkedRecord,
    ScopeFilter,
    SearchQuery,
    build_tree,
    reciprocal_rank_fusion,
    run_search,
    shortest_path_tree,
)
from palimpsest.domain.sentinel import ANY

from .fakes import FakeConnection
from .golden import assert_golden

NOW = datetime(2025, 3, 14, 12, 0, 0, tzinfo=UTC)
E1 = (1.0, 0.0, 0.0, 0.0)
E2 = (0.0, 1.0, 0.0, 0.0)
E3 = (0.0, 0.0, 1.0, 0.0)
NEAR_E1 = (0.9, 0.1, 0.0, 0.0)
DIAG_12 = (1.0, 1.0, 0.0, 0.0)
MINUS_E1 = (-1.0, 0.0, 0.0, 0.0)
DEFAULT = StoreNames()
ACME = StoreNames("acme")
SENTINEL = "'; DROP TABLE x --"


def as_utc(value: datetime) -> datetime:
    """A bound timestamp as the database reads it: naive binds are UTC (the session zone)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def at(minutes: float) -> datetime:
    return NOW + timedelta(minutes=minutes)


def q(**kwargs: Any) -> SearchQuery:
    """A SearchQuery with the test defaults (vector E1 unless text or vector is given)."""
    scope = ScopeFilter(
        user_id=kwargs.pop("user_id", ANY),
        agent_id=kwargs.pop("agent_id", ANY),
        thread_id=kwargs.pop("thread_id", ANY),
    )
    if "vector" not in kwargs and "text" not in kwargs:
        kwargs["vector"] = E1
    kwargs.setdefault("k", 10)
    kwargs.setdefault("now", NOW)
    return SearchQuery(scope=scope, **kwargs)


def rec(
    record_id: str,
    content: str | None = None,
    *,
    record_type: RecordType = RecordType.FACT,
    status: RecordStatus = RecordStatus.VALID,
    **kwargs: Any,
) -> MemoryRecord:
    invalid = status is RecordStatus.INVALID
    return MemoryRecord(
        id=record_id,
        record_type=record_type,
        content=content if content is not None else f"memory {record_id}",
        created_at=NOW,
        updated_at=NOW,
        status=status,
        invalidation_reason="Superseded by another memory." if invalid else None,
        invalidated_at=NOW if invalid else None,
        **kwargs,
    )


def msg(
    message_id: str, content: str = "hello", *, thread_id: str = "t1", seq: int = 1, **kwargs: Any
) -> Message:
    return Message(
        id=message_id, thread_id=thread_id, role="user", content=content, seq=seq, created_at=NOW, **kwargs
    )


def lnk(
    link_id: str, source: str, target: str, relation: str = "supports", *, minute: float = 0
) -> RecordLink:
    return RecordLink(
        id=link_id,
        source_id=source,
        source_type=RecordType.FACT,
        target_id=target,
        target_type=RecordType.FACT,
        relation_type=relation,
        opposite_relation_type=opposite_label(relation, None),
        created_at=at(minute),
    )


def render(cases: Iterable[tuple[str, Statement]]) -> str:
    return "\n".join(f"-- case: {label}\n{statement.render()}" for label, statement in cases)


def check_binds(statement: Statement) -> None:
    assert placeholders(statement.sql) == set(statement.binds), statement.name


# --- golden files -----------------------------------------------------------------------------

FILTER_CASES: list[tuple[str, dict[str, Any]]] = [
    ("everything", {}),
    ("one user", {"user_id": "A"}),
    ("user, no agent, a thread", {"user_id": "A", "agent_id": None, "thread_id": "t1"}),
    ("unscoped only", {"user_id": None, "agent_id": None, "thread_id": None}),
    ("facts and messages", {"record_types": frozenset({RecordType.FACT, RecordType.MESSAGE})}),
    ("messages only", {"record_types": frozenset({RecordType.MESSAGE})}),
    ("memory types only", {"record_types": frozenset(t for t in RecordType if t.is_memory_like)}),
    ("valid only", {"include_invalid": False}),
    ("metadata", {"metadata_filter": {"topic": "tea", "tags": {"$array_contains": ["green", 3]}}}),
    ("metadata not translated", {"metadata_filter": {"owner": {"name": "ann"}, "x": {"$not": 1}}}),
    ("metadata on messages", {"record_types": frozenset({RecordType.MESSAGE}), "metadata_filter": {"n": 1}}),
    (
        "all filters",
        {
            "user_id": "A",
            "agent_id": "bot",
            "record_types": frozenset({RecordType.PREFERENCE, RecordType.GUIDELINE}),
            "include_invalid": False,
            "metadata_filter": {"flag": True},
        },
    ),
]


def test_vector_candidate_statements_match_the_golden_file() -> None:
    vector = encode_vector(E1, 4)
    cases = []
    for label, kwargs in FILTER_CASES:
        cases.append((f"exact, {label}", search_sql.vector_candidates(DEFAULT, q(**kwargs), vector, 10)))
    cases.append(("approximate", search_sql.vector_candidates(DEFAULT, q(), vector, 10, approximate=True)))
    cases.append(
        (
            "approximate, acme, one user",
            search_sql.vector_candidates(ACME, q(user_id="A"), vector, 7, approximate=True),
        )
    )
    cases.append(
        ("exact, acme, all filters", search_sql.vector_candidates(ACME, q(**FILTER_CASES[-1][1]), vector, 3))
    )
    for _, statement in cases:
        check_binds(statement)
    assert_golden("search_vector", render(cases))


def test_keyword_candidate_statements_match_the_golden_file() -> None:
    cases = []
    for label, kwargs in FILTER_CASES:
        query = q(text="Green tea & lemon", **kwargs)
        text = search_sql.keyword_query(query.text or "")
        assert text is not None
        cases.append((label, search_sql.keyword_candidates(DEFAULT, query, text, 20)))
    query = q(text="NEAR(tea, 2)", user_id="A")
    cases.append(
        (
            "acme",
            search_sql.keyword_candidates(ACME, query, search_sql.keyword_query("NEAR(tea, 2)") or "", 5),
        )
    )
    for _, statement in cases:
        check_binds(statement)
    assert_golden("search_keyword", render(cases))


def test_graph_step_statements_match_the_golden_file() -> None:
    cases = []
    for label, kwargs in FILTER_CASES:
        for statement in search_sql.graph_steps(DEFAULT, q(**kwargs), ["r1", "r2"]):
            cases.append((label, statement))
    for statement in search_sql.graph_steps(ACME, q(user_id="A"), ["r1"]):
        cases.append(("acme", statement))
    for _, statement in cases:
        check_binds(statement)
    # "messages only" admits no memory type: no graph step at all.
    assert not search_sql.graph_steps(DEFAULT, q(record_types=frozenset({RecordType.MESSAGE})), ["r1"])
    assert_golden("search_graph", render(cases))


def test_hydration_statements_match_the_golden_file() -> None:
    cases = [
        ("memory records", *search_sql.memory_records_by_ids(DEFAULT, ["r1", "r2", "r1"])),
        ("messages", *search_sql.messages_by_ids(DEFAULT, ["m1"])),
        ("acme memory records", *search_sql.memory_records_by_ids(ACME, ["r1"])),
        ("acme messages", *search_sql.messages_by_ids(ACME, ["m1", "m2"])),
    ]
    for _, statement in cases:
        check_binds(statement)
    assert_golden("search_hydrate", render(cases))


def test_message_neighbour_statements_match_the_golden_file() -> None:
    cases = [
        ("two ids, radius 1", *search_sql.message_neighbours(DEFAULT, ["m1", "m2", "m1"], 1)),
        ("acme, one id, radius 3", *search_sql.message_neighbours(ACME, ["m1"], 3)),
    ]
    for _, statement in cases:
        check_binds(statement)
    assert_golden("search_neighbours", render(cases))
    assert search_sql.message_neighbours(DEFAULT, ["m1"], 0) == []
    assert search_sql.message_neighbours(DEFAULT, ["m1"], -2) == []
    assert search_sql.message_neighbours(DEFAULT, [], 2) == []


def test_id_lists_are_chunked_at_500_binds() -> None:
    ids = [f"id{i}" for i in range(1201)]
    for statements in (
        search_sql.memory_records_by_ids(DEFAULT, ids),
        search_sql.messages_by_ids(DEFAULT, ids),
        search_sql.graph_steps(DEFAULT, q(), ids),
        search_sql.message_neighbours(DEFAULT, ids, 2),
    ):
        id_binds = [[v for k, v in s.binds.items() if k.startswith(("id_", "frontier_"))] for s in statements]
        assert [len(b) for b in id_binds] == [500, 500, 201]
        assert [v for b in id_binds for v in b] == ids
        for statement in statements:
            check_binds(statement)
    assert search_sql.memory_records_by_ids(DEFAULT, []) == []
    assert search_sql.graph_steps(DEFAULT, q(), []) == []


def test_named_records_narrow_the_candidates_to_memory_chunks_of_those_ids() -> None:
    vector = encode_vector(E1, 4)
    query = q(text="tea", record_ids=frozenset({"r2", "r1"}))
    keyword = search_sql.keyword_query("tea") or ""
    for statement in (
        search_sql.vector_candidates(DEFAULT, query, vector, 2),
        search_sql.keyword_candidates(DEFAULT, query, keyword, 2),
    ):
        check_binds(statement)
        assert "\n   AND c.source_record_type <> 'message'\n   AND c.source_id IN (:record_id_0_0, :record_id_0_1)" in statement.sql
        assert (statement.binds["record_id_0_0"], statement.binds["record_id_0_1"]) == ("r1", "r2")
    # More than 500 ids: one IN list per 500, joined by OR (Oracle allows 1000 expressions a list).
    many = [f"r{i:04}" for i in range(1000)]
    statement = search_sql.vector_candidates(DEFAULT, q(record_ids=frozenset(many)), vector, 1000)
    check_binds(statement)
    assert "(c.source_id IN (:record_id_0_0, " in statement.sql and " OR c.source_id IN (:record_id_1_0, " in statement.sql
    assert sorted(v for k, v in statement.binds.items() if k.startswith("record_id_")) == many
    # Without named records nothing changes (the golden files hold every other statement).
    assert "source_id IN" not in search_sql.vector_candidates(DEFAULT, q(), vector, 2).sql


# --- values only in binds ---------------------------------------------------------------------


def _sentinel_statements() -> list[Statement]:
    flt = {
        SENTINEL: SENTINEL,
        "k": {"$array_contains": [SENTINEL]},
        "j": {"$array_contains_any": [SENTINEL, 1]},
    }
    query = q(
        text=f"{SENTINEL} zzsentinelword",
        vector=E1,
        user_id=SENTINEL,
        agent_id=SENTINEL,
        thread_id=SENTINEL,
        metadata_filter=flt,
    )
    keyword = search_sql.keyword_query(query.text or "")
    assert keyword is not None
    return [
        search_sql.vector_candidates(ACME, query, encode_vector(E1, 4), 5),
        search_sql.vector_candidates(DEFAULT, query, encode_vector(E1, 4), 5, approximate=True),
        search_sql.keyword_candidates(DEFAULT, query, keyword, 5),
        *search_sql.graph_steps(DEFAULT, query, [SENTINEL, "zzsentinelword"]),
        *search_sql.memory_records_by_ids(DEFAULT, [SENTINEL]),
        *search_sql.messages_by_ids(DEFAULT, [SENTINEL]),
        *search_sql.message_neighbours(DEFAULT, [SENTINEL], 2),
    ]


def test_no_user_value_appears_in_sql_text_only_in_binds() -> None:
    for statement in _sentinel_statements():
        check_binds(statement)
        assert SENTINEL not in statement.sql, statement.name
        assert "DROP" not in statement.sql and "zzsentinelword" not in statement.sql, statement.name
        bound = " ".join(str(v) for v in statement.binds.values())
        assert SENTINEL in bound or "zzsentinelword" in bound, statement.name
    condition, binds = search_sql.metadata_prefilter({SENTINEL: SENTINEL}, "t.metadata", "mf")
    assert SENTINEL not in condition and list(binds.values()) == [SENTINEL]


# --- keyword query text -----------------------------------------------------------------------

KEYWORD_CASES = [
    ("tea", "{tea}"),
    ("Green TEA, green tea!", "{green} ACCUM {tea}"),
    ("AT&T", "{at} ACCUM {t}"),
    ("tea|coffee", "{tea} ACCUM {coffee}"),
    ("high-voltage -tea", "{high} ACCUM {voltage} ACCUM {tea}"),
    ("NEAR(tea, 2)", "{near} ACCUM {tea} ACCUM {2}"),
    ("ABOUT tea", "{tea}"),  # stop words ("about", "and", "not", "or") are dropped
    ("tea AND NOT coffee OR milk", "{tea} ACCUM {coffee} ACCUM {milk}"),
    ("AND OR NOT", "{and} ACCUM {or} ACCUM {not}"),  # unless nothing else is left
    ("{tea} }coffee{", "{tea} ACCUM {coffee}"),
    ("tea* $tea ?tea !tea >5 =x ~y ;z [w] (v) %u \\s", None),  # checked below: one token each, escaped
    ("Straße CAFÉ", "{straße} ACCUM {café}"),
    ("snake_case", "{snake_case}"),
    ("_ __ ___", None),
    ("!!! --- ;", None),
    ("", None),
]


@pytest.mark.parametrize(("text", "expected"), KEYWORD_CASES[:10] + KEYWORD_CASES[11:])
def test_keyword_query_escapes_every_token_and_accumulates(text: str, expected: str | None) -> None:
    assert search_sql.keyword_query(text) == expected


def test_operator_characters_never_reach_the_text_query() -> None:
    text = KEYWORD_CASES[10][0]
    built = search_sql.keyword_query(text)
    assert built is not None
    parts = built.split(" ACCUM ")
    assert parts == ["{tea}", "{5}", "{x}", "{y}", "{z}", "{w}", "{v}", "{u}"]  # "s" is a stop word
    for part in parts:
        assert part.startswith("{") and part.endswith("}")
        assert not re.search(r"[&|,;~=?!$>*%\\()\[\]-]", part)


def test_a_closing_brace_inside_a_literal_is_doubled() -> None:
    assert search_sql.text_literal("a}b") == "{a}}b}"
    assert search_sql.text_literal("near") == "{near}"


def test_a_very_long_text_is_cut_to_whole_tokens_within_the_limit() -> None:
    text = " ".join(f"word{i}" for i in range(2000))
    built = search_sql.keyword_query(text)
    assert built is not None
    assert len(built.encode()) <= search_sql.MAX_KEYWORD_QUERY_BYTES
    parts = built.split(" ACCUM ")
    assert parts[:3] == ["{word0}", "{word1}", "{word2}"]
    assert all(re.fullmatch(r"\{word\d+\}", p) for p in parts)


# --- metadata pre-filter ----------------------------------------------------------------------

_JSON_EXISTS = re.compile(
    r"JSON_EXISTS\((?P<column>[a-z]+\.metadata), "
    r"'\$\.\*\[\*\]\?\(@\.(?P<method>stringOnly|numberOnly|booleanOnly)\(\) == (?P<rhs>\$v|true|false)\)'"
    r"(?: PASSING :(?P<bind>\w+) AS \"v\")?\)"
)


def prefilter_model(condition: str, binds: Mapping[str, Any], metadata: Any) -> bool:
    """What Oracle answers for a pre-filter condition, per the documented semantics it uses:
    ``$.*`` selects every member value, lax ``[*]`` unwraps an array one level (a non-array is
    itself), ``stringOnly()``/``numberOnly()``/``booleanOnly()`` keep only values of that JSON
    type, and ``JSON_EXISTS`` holds when one value compares equal. NULL metadata matches nothing."""
    values: list[Any] = []
    if isinstance(metadata, Mapping):
        for value in metadata.values():
            values.extend(value if isinstance(value, list) else [value])

    def evaluate(match: re.Match[str]) -> str:
        method, rhs, bind = match["method"], match["rhs"], match["bind"]
        if method == "booleanOnly":
            assert bind is None
            kept, target = [v for v in values if isinstance(v, bool)], rhs == "true"
        elif method == "numberOnly":
            kept = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
            target = binds[bind]
            assert isinstance(target, int) and not isinstance(target, bool)
        else:
            kept, target = [v for v in values if isinstance(v, str)], binds[bind]
            assert isinstance(target, str) and target
        return "True" if any(v == target for v in kept) else "False"

    expression = _JSON_EXISTS.sub(evaluate, condition).replace("1=1", "True")
    assert re.fullmatch(r"(?:True|False|AND|OR|[() ])*", expression), f"unknown SQL in {condition!r}"
    # Only True/False, and/or and parentheses are left (checked above).
    return bool(eval(expression.replace("AND", "and").replace("OR", "or")))


M1 = {"topic": "tea", "tags": ["green", "hot"], "owner": {"name": "ann", "team": "x"}, "flag": True, "n": 1}
M2 = {"topic": "coffee", "tags": ["black"], "owner": {"name": "bob"}, "flag": False, "n": 2}
M3 = {"topic": "tea", "tags": ["green", "iced"]}
DOCUMENTS: list[Any] = [
    None,
    {},
    M1,
    M2,
    M3,
    {"topic": "tea", "tags": ["hot"]},
    {"n": 1.0},
    {"n": True},
    {"n": "1"},
    {"flag": 1},
    {"flag": "true"},
    {"s": ""},
    {"big": 2**60},
    {"big": 2**53},
    {"k": "tea", "topic": ["tea"]},
    {"tags": "green"},
    {"tags": [["green"]]},
    {"x": {"topic": "tea"}},
    {"n": 0.5},
    {"tags": ["a", ["b"]], "u": "é"},
    {"$x": 1, "z": None},
    {"k": "x\x00y"},
]
FILTERS: list[dict[str, Any]] = [
    {},
    {"topic": "tea"},
    {"topic": "tea", "tags": {"$array_contains": "iced"}},
    {"owner": {"name": "ann"}},
    {"owner": {}},
    {"tags": ["green", "hot"]},
    {"tags": ["hot", "green"]},
    {"tags": {"$array_contains": "green"}},
    {"tags": {"$array_contains": ["green", "hot"]}},
    {"tags": {"$array_contains_any": ["hot", "black"]}},
    {"tags": {"$array_contains_any": ["hot", None]}},
    {"tags": {"$array_contains_any": ["nope"]}},
    {"topic": {"$not": "tea"}},
    {"tags": {"$array_contains": "green", "$not": {"$array_contains": "iced"}}},
    {"flag": True},
    {"flag": False},
    {"flag": 1},
    {"n": 1},
    {"n": 1.0},
    {"n": True},
    {"n": 0.5},
    {"s": ""},
    {"absent": None},
    {"big": 2**60},
    {"big": 2**53},
    {"tags": ["a", ["b"]], "u": "é"},
    {"$x": 1},
    {"k": "x\x00y"},
    {"k": "tea", "topic": "tea"},
]


def test_the_metadata_prefilter_never_rejects_a_row_the_filter_admits() -> None:
    missed = []
    for flt in FILTERS:
        condition, binds = search_sql.metadata_prefilter(flt, "t.metadata", "mf")
        assert placeholders(condition) == set(binds), flt
        for document in DOCUMENTS:
            if metadata_matches(document, flt) and not prefilter_model(condition, binds, document):
                missed.append((flt, document))
    assert missed == []


def test_the_metadata_prefilter_narrows_where_it_translates() -> None:
    def admitted(flt: dict[str, Any]) -> list[int]:
        condition, binds = search_sql.metadata_prefilter(flt, "t.metadata", "mf")
        return [i for i, d in enumerate(DOCUMENTS) if prefilter_model(condition, binds, d)]

    assert admitted({"topic": "tea"}) == [2, 4, 5, 14]  # any member (or element) equal to "tea"
    assert 3 not in admitted({"tags": {"$array_contains": "green"}})  # M2 has only "black"
    # JSON true only (not 1, not "true"), under any member name: {"n": true} passes too
    assert admitted({"flag": True}) == [2, 7]
    assert 9 not in admitted({"flag": True}) and 10 not in admitted({"flag": True})
    assert 7 not in admitted({"n": 1}) and 8 not in admitted({"n": 1})  # not true, not "1"
    assert 6 in admitted({"n": 1}) and 6 in admitted({"n": 1.0})  # 1.0 == 1


@pytest.mark.parametrize(
    "flt",
    [
        None,
        {},
        {"owner": {"name": "ann"}},
        {"topic": {"$not": "tea"}},
        {"absent": None},
        {"n": 0.5},
        {"n": 2**60},
        {"s": ""},
        {"k": "x\x00y"},
        {"k": "\ud800"},
        {"k": "x" * 4001},
        {"tags": {"$array_contains_any": ["hot", None]}},
        {"tags": [[1]]},
    ],
)
def test_filters_the_prefilter_does_not_translate_contribute_nothing(flt: dict[str, Any] | None) -> None:
    assert search_sql.metadata_prefilter(flt, "t.metadata", "mf") == ("1=1", {})


def test_the_metadata_prefilter_matches_the_golden_file() -> None:
    lines = []
    for flt in FILTERS:
        condition, binds = search_sql.metadata_prefilter(flt, "t.metadata", "mf")
        lines.append(f"-- filter: {flt!r}\n{condition}")
        lines.extend(f"--   :{k} = {v!r}" for k, v in sorted(binds.items()))
    assert_golden("search_metadata", "\n".join(lines) + "\n")


def test_a_bind_prefix_must_be_a_short_identifier() -> None:
    with pytest.raises(ValueError):
        search_sql.metadata_prefilter({"a": 1}, "t.metadata", "x; --")


# --- a tiny database behind the fake connection -------------------------------------------------

Entity = MemoryRecord | Message


class TinyDatabase:
    """Messages, memory records (each with an optional vector) and links, answering the search
    statements by interpreting exactly the predicate shapes the builders emit.

    ``prefilter=False`` ignores the metadata pre-filter (the weakest sound pre-filter: it admits
    every row), which makes the Python re-check do all the work. Approximate vector queries return
    equal distances in reverse id order, to prove the adapter breaks ties itself.
    """

    def __init__(self, *, prefilter: bool = True) -> None:
        self.prefilter = prefilter
        self.messages: dict[str, Message] = {}
        self.records: dict[str, MemoryRecord] = {}
        self.vectors: dict[tuple[str, str], array.array[float]] = {}
        self.links: dict[str, RecordLink] = {}
        self.connection = FakeConnection(self.respond)

    def add(self, *entities: Entity | RecordLink | tuple[Entity, Sequence[float]]) -> TinyDatabase:
        for item in entities:
            vector = None
            if isinstance(item, tuple):
                item, vector = item
            if isinstance(item, RecordLink):
                self.links[item.id] = item
                continue
            if isinstance(item, Message):
                self.messages[item.id] = item
            else:
                self.records[item.id] = item
            if vector is not None:
                self.vectors[(item.record_type.value, item.id)] = encode_vector(vector, None)
        return self

    # what was sent
    def executed(self) -> list[tuple[str, dict[str, Any]]]:
        return [(c.sql or "", c.binds) for c in self.connection.log if c.kind == "execute"]

    def limits(self, word: str) -> list[int]:
        return [binds["limit"] for sql, binds in self.executed() if word in sql]

    # answering
    def respond(self, sql: str, binds: dict[str, Any]) -> list[tuple[Any, ...]]:
        if "GRAPH_TABLE" in sql:
            return self._graph(sql, binds)
        if "ROW_NUMBER()" in sql:
            return self._neighbours(sql, binds)
        if "RECORD_CHUNKS" in sql:
            return self._chunks(sql, binds)
        match = re.search(r'FROM "(MEMORY|MESSAGE)" t\n WHERE t\.record_id IN', sql)
        assert match, f"the tiny database does not know {sql!r}"
        ids = [v for k, v in binds.items() if k.startswith("id_")]
        if match[1] == "MEMORY":
            return [memory_row(self.records[i]) for i in ids if i in self.records]
        return [message_row(self.messages[i]) for i in ids if i in self.messages]

    def _entities(self) -> list[Entity]:
        return [*self.messages.values(), *self.records.values()]

    def _chunks(self, sql: str, binds: dict[str, Any]) -> list[tuple[Any, ...]]:
        where = sql.split("\n WHERE ", 1)[1].split("\nORDER BY", 1)[0]
        tests = [self._chunk_clause(clause, binds) for clause in where.split("\n   AND ")]
        rows = []
        for entity in self._entities():
            key = (entity.record_type.value, entity.id)
            if all(test(entity, key) for test in tests):
                if "VECTOR_DISTANCE" in sql:
                    query_vector = binds["query_vector"]
                    dot = math.fsum(a * b for a, b in zip(self.vectors[key], query_vector))
                    rows.append((key[0], key[1], 1.0 - dot))
                else:
                    rows.append((key[0], key[1], keyword_score(binds["keyword_query"], entity.content)))
        if "FETCH APPROX" in sql:
            rows.sort(key=lambda r: r[1], reverse=True)
            rows.sort(key=lambda r: r[2])
        elif "VECTOR_DISTANCE" in sql:
            rows.sort(key=lambda r: (r[2], r[0], r[1]))
        else:
            rows.sort(key=lambda r: (-r[2], r[0], r[1]))
        return rows[: binds["limit"]]

    def _chunk_clause(self, clause: str, binds: dict[str, Any]) -> Callable[[Entity, tuple[str, str]], bool]:
        if clause == "c.embedding IS NOT NULL":
            return lambda e, key: key in self.vectors
        if clause == "CONTAINS(c.chunk_text, :keyword_query, 1) > 0":
            return lambda e, key: keyword_score(binds["keyword_query"], e.content) > 0
        if clause == "(c.status IS NULL OR c.status <> 'invalid')":
            return lambda e, key: not (isinstance(e, MemoryRecord) and e.status is RecordStatus.INVALID)
        if clause == "(c.expires_at IS NULL OR c.expires_at > :now)":
            return lambda e, key: e.expires_at is None or e.expires_at > as_utc(binds["now"])
        if clause == "c.source_record_type <> 'message'":
            return lambda e, key: not isinstance(e, Message)
        if clause.startswith(("c.source_id IN (", "(c.source_id IN (")):
            named = {binds[name] for name in re.findall(r":(record_id_\d+_\d+)", clause)}
            return lambda e, key: key[1] in named
        if "EXISTS" in clause:
            return self._metadata_clause(clause, binds)
        return scope_or_type_clause("c", clause, binds)

    def _metadata_clause(
        self, clause: str, binds: dict[str, Any]
    ) -> Callable[[Entity, tuple[str, str]], bool]:
        assert clause.startswith("(") and clause.endswith(")")
        branches = []
        for branch in clause[1:-1].split("\n       OR "):
            if branch in ("c.source_record_type = 'message'", "c.source_record_type <> 'message'"):
                branches.append((branch.split()[1] == "=", None))
                continue
            match = re.fullmatch(
                r"\(c\.source_record_type (=|<>) 'message' AND EXISTS \(SELECT 1 FROM \"(MESSAGE|MEMORY)\" (mm|mr) "
                r"WHERE \3\.record_id = c\.source_id AND (.*)\)\)",
                branch,
            )
            assert match, f"unknown metadata branch {branch!r}"
            assert (match[1] == "=") == (match[2] == "MESSAGE")
            branches.append((match[1] == "=", match[4]))

        def test(entity: Entity, key: tuple[str, str]) -> bool:
            for for_messages, condition in branches:
                if isinstance(entity, Message) != for_messages:
                    continue
                if condition is None or not self.prefilter:
                    return True
                if prefilter_model(condition, binds, entity.metadata):
                    return True
            return False

        return test

    def _graph(self, sql: str, binds: dict[str, Any]) -> list[tuple[Any, ...]]:
        where = sql.split("\n  WHERE ", 1)[1].split("\n  COLUMNS", 1)[0]
        clauses = where.split("\n    AND ")
        frontier_clause = clauses.pop(0)
        assert frontier_clause.startswith("a.record_id IN (")
        frontier = {v for k, v in binds.items() if k.startswith("frontier_")}
        tests = []
        for clause in clauses:
            if clause == "(b.expires_at IS NULL OR b.expires_at > :now)":
                tests.append(lambda r: r.expires_at is None or r.expires_at > as_utc(binds["now"]))
            else:
                test = scope_or_type_clause("b", clause, binds)
                tests.append(lambda r, test=test: test(r, (r.record_type.value, r.id)))
        rows = []
        for link in self.links.values():
            for a, b in ((link.source_id, link.target_id), (link.target_id, link.source_id)):
                neighbour = self.records.get(b)
                if (
                    a in frontier
                    and a in self.records
                    and neighbour is not None
                    and all(test(neighbour) for test in tests)
                ):
                    rows.append((a, *link_row(link), *memory_row(neighbour)))
        return rows


    def _neighbours(self, sql: str, binds: dict[str, Any]) -> list[tuple[Any, ...]]:
        """The neighbour statement read as Oracle reads it: ``ROW_NUMBER`` numbers each wanted
        thread's rows by ``order_seq`` from 1, then the outer join keeps places 1..radius away."""
        for shape in (
            'WITH wanted AS (\n  SELECT t.record_id, t.thread_id\n    FROM "MESSAGE" t\n   WHERE t.record_id IN (',
            "ROW_NUMBER() OVER (PARTITION BY m.thread_id ORDER BY m.order_seq) AS place",
            "WHERE m.thread_id IN (SELECT w.thread_id FROM wanted w)",
            "LEFT OUTER JOIN placed n\n    ON n.thread_id = p.thread_id AND ABS(n.place - p.place) BETWEEN 1 AND :radius",
            "ORDER BY p.record_id, n.place",
        ):
            assert shape in sql, f"the tiny database does not know {sql!r}"
        wanted = {self.messages[v] for k, v in binds.items() if k.startswith("id_") and v in self.messages}
        place: dict[str, int] = {}
        by_thread: dict[str, list[Message]] = {}
        for thread_id in {m.thread_id for m in wanted}:
            ordered = sorted((m for m in self.messages.values() if m.thread_id == thread_id), key=lambda m: m.seq)
            by_thread[thread_id] = ordered
            place.update((m.id, n) for n, m in enumerate(ordered, start=1))
        rows: list[tuple[Any, ...]] = []
        for p in sorted(wanted, key=lambda m: m.id):
            near = [n for n in by_thread[p.thread_id] if 1 <= abs(place[n.id] - place[p.id]) <= binds["radius"]]
            rows.extend([(p.id, n.id) for n in near] or [(p.id, None)])
        return rows


def scope_or_type_clause(
    alias: str, clause: str, binds: dict[str, Any]
) -> Callable[[Entity, tuple[str, str]], bool]:
    a = re.escape(alias)
    if match := re.fullmatch(rf"{a}\.(user_id|agent_id|thread_id) IS NULL", clause):
        column = match[1]
        return lambda e, key: getattr(e, column) is None
    if match := re.fullmatch(rf"{a}\.(user_id|agent_id|thread_id) = :(\w+)", clause):
        column, value = match[1], binds[match[2]]
        return lambda e, key: getattr(e, column) == value
    if match := re.fullmatch(rf"{a}\.(source_record_type|memory_type) IN \((.*)\)", clause):
        allowed = {binds[name.strip()[1:]] for name in match[2].split(",")}
        return lambda e, key: e.record_type.value in allowed
    raise AssertionError(f"the tiny database does not know the clause {clause!r}")


def keyword_score(text_query: str, content: str) -> int:
    """ACCUM-like: the share of query terms in the text, 1..100 (0 = no match)."""
    terms = [t.replace("}}", "}") for t in re.findall(r"\{((?:[^}]|\}\})*)\}", text_query)]
    words = {w.lower() for w in re.findall(r"\w+", content)}
    matched = sum(1 for t in terms if t in words)
    return 0 if not matched else max(1, round(100 * matched / len(terms)))


def memory_row(r: MemoryRecord) -> tuple[Any, ...]:
    return (
        r.id,
        r.record_type.value,
        r.content,
        r.user_id,
        r.agent_id,
        r.thread_id,
        r.metadata,
        r.status.value,
        r.invalidation_reason,
        r.invalidated_at,
        r.timestamp,
        r.expires_at,
        r.created_at,
        r.updated_at,
    )


def message_row(m: Message) -> tuple[Any, ...]:
    return (
        m.id,
        m.thread_id,
        m.seq,
        m.role,
        m.content,
        m.timestamp,
        m.metadata,
        m.user_id,
        m.agent_id,
        m.created_at,
        m.expires_at,
    )


def link_row(k: RecordLink) -> tuple[Any, ...]:
    return (
        k.id,
        k.source_id,
        k.source_type.value,
        k.target_id,
        k.target_type.value,
        k.relation_type,
        k.opposite_relation_type,
        k.metadata,
        k.timestamp,
        k.created_at,
    )


def ids(hits: Sequence[Any]) -> list[str]:
    return [h.id for h in hits]


def session(
    db: TinyDatabase,
    *,
    approximate: bool = False,
    dimension: int | None = 4,
    max_candidates: int = MAX_CANDIDATE_LIMIT,
) -> OracleSearchSession:
    """A search session on the tiny database's connection, for a store of ``dimension``."""
    return OracleSearchSession(
        db.connection,
        DEFAULT,
        dimension=lambda: dimension,
        approximate=approximate,
        max_candidates=max_candidates,
    )


def run(
    db: TinyDatabase,
    query: SearchQuery,
    *,
    approximate: bool = False,
    dimension: int | None = 4,
    max_candidates: int = MAX_CANDIDATE_LIMIT,
) -> list[Any]:
    """The domain's pipeline over the Oracle session, as ``OracleStore.search`` runs it."""
    search = session(db, approximate=approximate, dimension=dimension, max_candidates=max_candidates)
    return run_search(search, query)


# --- the pipeline over OracleSearchSession: ranking --------------------------------------------------------------------


def test_vector_hits_rank_by_cosine_with_score_and_distance() -> None:
    db = TinyDatabase().add(
        (rec("d-orthogonal"), E2),
        (rec("a-same"), (3.0, 0.0, 0.0, 0.0)),
        (rec("e-opposite"), MINUS_E1),
        (rec("c-diagonal"), DIAG_12),
        (rec("b-near"), NEAR_E1),
        rec("f-no-vector"),
    )
    hits = run(db, q())
    assert ids(hits) == ["a-same", "b-near", "c-diagonal", "d-orthogonal", "e-opposite"]
    assert [round(h.score, 6) for h in hits] == [1.0, 0.993884, 0.707107, 0.0, -1.0]
    assert all(math.isclose(h.score, 1.0 - h.distance) for h in hits)
    assert db.limits("VECTOR_DISTANCE") == [10]


@pytest.mark.parametrize("approximate", [False, True])
def test_equal_scores_are_ordered_by_record_type_then_id(approximate: bool) -> None:
    db = TinyDatabase().add(
        (msg("a-message"), E3),
        (rec("z-fact"), E3),
        (rec("f2"), E3),
        (rec("f1"), E3),
        (rec("p", record_type=RecordType.PREFERENCE), E3),
    )
    assert ids(run(db, q(vector=E3), approximate=approximate)) == ["f1", "f2", "z-fact", "a-message", "p"]
    assert ("FETCH APPROX" in db.executed()[0][0]) is approximate


def test_keyword_hits_carry_score_over_100_and_its_complement() -> None:
    db = TinyDatabase().add(
        rec("both", "green tea"), rec("one", "tea time"), rec("none", "coffee"), msg("m", "Tea?")
    )
    hits = run(db, q(text="green tea"))
    assert ids(hits) == ["both", "one", "m"]  # 100, then 50 and 50 (fact before message)
    assert [(h.score, h.distance) for h in hits] == [(1.0, 0.0), (0.5, 0.5), (0.5, 0.5)]


def test_a_hit_is_the_stored_entity_and_messages_are_a_separate_id_space() -> None:
    m = msg("same", "a message", user_id="ann")
    r = rec("same", "a memory", user_id="ann", metadata={"x": [1]})
    db = TinyDatabase().add((m, E1), (r, E2))
    assert run(db, q(k=1))[0].record == m
    assert run(db, q(vector=E2, k=1))[0].record == r


def test_the_query_filters_reach_sql_and_hold_in_the_result() -> None:
    db = TinyDatabase().add(
        (rec("ok", user_id="A", agent_id="bot"), E1),
        (rec("other-user", user_id="B", agent_id="bot"), E1),
        (rec("no-agent", user_id="A"), E1),
        (rec("stale", user_id="A", agent_id="bot", status=RecordStatus.INVALID), E1),
        (rec("gone", user_id="A", agent_id="bot", expires_at=NOW), E1),
        (rec("guideline", user_id="A", agent_id="bot", record_type=RecordType.GUIDELINE), E1),
        (msg("chat", user_id="A", agent_id="bot"), E1),
    )
    query = q(user_id="A", agent_id="bot", include_invalid=False, record_types=frozenset({"fact", "message"}))
    assert set(ids(run(db, query))) == {"ok", "chat"}
    assert set(ids(run(db, q(user_id="A", agent_id=None)))) == {"no-agent"}


def test_a_search_narrowed_to_named_records_scores_them_as_the_whole_search_does() -> None:
    db = TinyDatabase().add(
        (rec("a", "tea and tea"), E1),
        (rec("b", "green tea"), NEAR_E1),
        (rec("c", "coffee"), DIAG_12),
        (msg("b", "tea for two"), E1),  # a message with a named record's id
        lnk("l1", "a", "b"),
        lnk("l2", "b", "c"),
    )
    for mode in ({"vector": E1}, {"text": "tea"}, {"vector": E1, "text": "tea"}):
        whole = {h.id: h for h in run(db, q(num_hops=2, **mode)) if isinstance(h.record, MemoryRecord)}
        narrowed = run(db, q(num_hops=2, record_ids=frozenset({"b", "c"}), **mode))
        assert [h.id for h in narrowed] == [i for i in whole if i in {"b", "c"}]
        assert all(isinstance(h.record, MemoryRecord) for h in narrowed)
        for hit in narrowed:
            assert (hit.score, hit.distance, hit.linked) == (
                pytest.approx(whole[hit.id].score),
                pytest.approx(whole[hit.id].distance),
                whole[hit.id].linked,
            )


# --- the pipeline over OracleSearchSession: re-check and refetch -------------------------------------------------------


def _crowd(prefilter: bool) -> TinyDatabase:
    db = TinyDatabase(prefilter=prefilter)
    for i in range(120):  # better ranked, rejected by the metadata filter
        db.add((rec(f"x{i:03}", user_id="A", metadata={"k": "x"}), E1))
    db.add(
        (rec("wanted", user_id="A", metadata={"k": "y"}), NEAR_E1),
        (rec("also", user_id="A", metadata={"k": "y"}), E2),
    )
    return db


def test_rows_the_python_recheck_drops_are_replaced_by_a_larger_page() -> None:
    db = _crowd(prefilter=False)  # SQL admits every row: only Python rejects the crowd
    hits = run(db, q(k=2, user_id="A", metadata_filter={"k": "y"}))
    assert ids(hits) == ["wanted", "also"]
    assert db.limits("VECTOR_DISTANCE") == [50, 200]  # 50 full and short of k, then 200 (not full)
    hydrated = [v for sql, binds in db.executed() if '"MEMORY" t' in sql for k, v in binds.items()]
    assert len(hydrated) == len(set(hydrated)) == 122  # nothing loaded twice


def test_a_sound_prefilter_spares_the_refetch() -> None:
    db = _crowd(prefilter=True)
    assert ids(run(db, q(k=2, user_id="A", metadata_filter={"k": "y"}))) == ["wanted", "also"]
    assert db.limits("VECTOR_DISTANCE") == [50]


def test_the_refetch_stops_when_candidates_run_out_or_at_the_cap() -> None:
    db = _crowd(prefilter=False)
    assert run(db, q(k=2, user_id="A", metadata_filter={"k": "nope"})) == []
    assert db.limits("VECTOR_DISTANCE") == [50, 200]  # 122 rows < 200: exhausted
    db = _crowd(prefilter=False)
    hits = run(db, q(k=2, user_id="A", metadata_filter={"k": "y"}), max_candidates=60)
    assert db.limits("VECTOR_DISTANCE") == [50, 60]
    assert hits == []  # the cap is a documented limit: a page of 60 holds no passing row


def test_keyword_search_refetches_as_well() -> None:
    db = TinyDatabase(prefilter=False)
    for i in range(60):
        db.add(rec(f"a{i:02}", "tea tea", metadata={"k": "x"}))  # tied, and before "wanted"
    db.add(rec("wanted", "tea", metadata={"k": "y"}))
    assert ids(run(db, q(text="tea", k=1, metadata_filter={"k": "y"}))) == ["wanted"]
    assert db.limits("CONTAINS") == [50, 200]


# --- the pipeline over OracleSearchSession: hybrid ---------------------------------------------------------------------


def test_hybrid_fuses_both_lists_with_rrf_and_keeps_the_domains_tie_order() -> None:
    db = TinyDatabase().add(
        (rec("b-vector-only", "black coffee"), E1),
        rec("a-keyword-only", "tea kettle"),
        (rec("c-both", "green tea"), NEAR_E1),
        (rec("d-neither", "water"), E2),
        (msg("m-both", "tea"), DIAG_12),
    )
    hits = run(db, q(vector=E1, text="tea", k=10, rrf_k=60, fusion="rrf"))
    by_vector = [("fact", "b-vector-only"), ("fact", "c-both"), ("message", "m-both"), ("fact", "d-neither")]
    by_keyword = [("fact", "a-keyword-only"), ("fact", "c-both"), ("message", "m-both")]
    fused = reciprocal_rank_fusion([by_vector, by_keyword], k=60)
    expected = fused  # the domain's order: equal scores keep first appearance (vector list first)
    assert [(h.record_type.value, h.id) for h in hits] == [key for key, _ in expected]
    assert [h.score for h in hits] == [score for _, score in expected]
    assert all(h.distance == 1.0 - h.score for h in hits)
    # b-vector-only and a-keyword-only are both rank 1 of one list: tied, first appearance wins
    assert ids(hits)[2:4] == ["b-vector-only", "a-keyword-only"]
    assert db.limits("VECTOR_DISTANCE") == [50] and db.limits("CONTAINS") == [50]


def test_hybrid_pools_are_four_k_and_the_result_is_cut_at_k() -> None:
    db = TinyDatabase()
    for i in range(30):
        db.add((rec(f"r{i:02}", "tea"), (1.0, i / 100, 0.0, 0.0)))
    hits = run(db, q(vector=E1, text="tea", k=20))
    assert len(hits) == 20
    assert db.limits("VECTOR_DISTANCE") == [80] and db.limits("CONTAINS") == [80]


def test_no_sql_is_sent_for_a_query_without_word_tokens() -> None:
    db = TinyDatabase().add((rec("r", "tea"), E1))
    assert run(db, q(text="_ !!! --")) == []
    assert db.executed() == []
    hits = run(db, q(vector=E1, text="___"))  # hybrid: the vector half alone
    assert ids(hits) == ["r"]
    assert not any("CONTAINS" in sql for sql, _ in db.executed())


def test_vector_dimension_is_checked_before_any_sql() -> None:
    db = TinyDatabase().add((rec("r", "tea"), E1))
    with pytest.raises(VectorDimensionError):
        run(db, q(vector=(1.0, 0.0, 0.0)))
    with pytest.raises(VectorDimensionError):
        run(db, q(vector=(1.0, 0.0, 0.0), text="tea"))
    assert db.executed() == []
    # No stored vector (dimension None): vector search finds nothing, without SQL.
    assert run(db, q(vector=(1.0, 0.0, 0.0)), dimension=None) == []
    assert db.executed() == []
    assert ids(run(db, q(vector=(1.0, 0.0, 0.0), text="tea"), dimension=None)) == ["r"]


# --- the pipeline over OracleSearchSession: graph expansion ------------------------------------------------------------


def domain_trees(
    db: TinyDatabase, query: SearchQuery, roots: Sequence[str]
) -> dict[str, tuple[LinkedRecord, ...]]:
    """The trees the domain builds from the whole graph (what any store must return)."""
    adjacency: dict[str, list[RecordLink]] = {}
    for link in db.links.values():
        adjacency.setdefault(link.source_id, []).append(link)
        adjacency.setdefault(link.target_id, []).append(link)

    def admits(record_id: str) -> bool:
        record = db.records.get(record_id)
        return record is not None and query.admits_record(record, direct=False)

    trees = {}
    for root in roots:
        edges = shortest_path_tree(
            root,
            num_hops=query.num_hops,
            max_linked_results=query.max_linked_results,
            links_of=lambda rid: adjacency.get(rid, ()),
            admits=admits,
        )
        trees[root] = build_tree(root, edges, {e.record_id: db.records[e.record_id] for e in edges})
    return trees


def flat(nodes: Sequence[LinkedRecord]) -> dict[str, tuple[str, int, str]]:
    out = {}
    for node in nodes:
        out[node.record.id] = (node.parent_id, node.depth, node.relation_label)
        out.update(flat(node.children))
    return out


def test_links_are_followed_both_ways_one_statement_per_depth() -> None:
    db = TinyDatabase().add(
        (rec("r"), E1),
        rec("old", status=RecordStatus.INVALID),
        rec("fan"),
        rec("peer"),
        rec("older"),
        rec("draft"),
        lnk("l1", "r", "old", "supersedes", minute=1),
        lnk("l2", "fan", "r", "supports", minute=2),
        lnk("l3", "peer", "r", "contradicts", minute=3),
        lnk("l5", "old", "older", "supersedes", minute=5),
        lnk("l6", "old", "draft", "refines", minute=6),
    )
    (hit,) = run(db, q(num_hops=2, k=1))
    assert flat(hit.linked) == {
        "old": ("r", 1, "supersedes"),
        "fan": ("r", 1, "is_supported_by"),
        "peer": ("r", 1, "contradicts"),
        "older": ("old", 2, "supersedes"),
        "draft": ("old", 2, "refines"),
    }
    assert hit.linked == domain_trees(db, q(num_hops=2), ["r"])["r"]
    graph = [binds for sql, binds in db.executed() if "GRAPH_TABLE" in sql]
    assert [sorted(v for k, v in b.items() if k.startswith("frontier_")) for b in graph] == [
        ["r"],
        ["fan", "old", "peer"],
    ]


def test_filters_block_traversal_but_status_does_not() -> None:
    db = TinyDatabase().add(
        (rec("r", user_id="A", metadata={"topic": "tea"}), E1),
        rec("ok", user_id="A", metadata={"topic": "tea"}, status=RecordStatus.INVALID),
        rec("ok-child", user_id="A", metadata={"topic": "tea"}),
        rec("bad-meta", user_id="A", metadata={"topic": "coffee"}),
        rec("behind-bad-meta", user_id="A", metadata={"topic": "tea"}),
        rec("bad-user", user_id="B", metadata={"topic": "tea"}),
        rec("behind-bad-user", user_id="A", metadata={"topic": "tea"}),
        lnk("l1", "r", "ok", minute=1),
        lnk("l2", "ok", "ok-child", minute=2),
        lnk("l3", "r", "bad-meta", minute=3),
        lnk("l4", "bad-meta", "behind-bad-meta", minute=4),
        lnk("l5", "r", "bad-user", minute=5),
        lnk("l6", "bad-user", "behind-bad-user", minute=6),
    )
    query = q(num_hops=3, user_id="A", metadata_filter={"topic": "tea"}, include_invalid=False)
    (hit,) = run(db, query)
    assert flat(hit.linked) == {"ok": ("r", 1, "supports"), "ok-child": ("ok", 2, "supports")}
    # bad-user never left SQL; bad-meta came back from SQL but was not walked on
    graph = [binds for sql, binds in db.executed() if "GRAPH_TABLE" in sql]
    assert [sorted(v for k, v in b.items() if k.startswith("frontier_")) for b in graph] == [
        ["r"],
        ["ok"],
        ["ok-child"],
    ]


def test_message_hits_are_not_expanded() -> None:
    db = TinyDatabase().add((msg("shared"), E1), rec("shared"), rec("x"), lnk("l1", "shared", "x"))
    (hit,) = run(db, q(num_hops=3))
    assert hit.record_type is RecordType.MESSAGE and hit.linked == ()
    assert not any("GRAPH_TABLE" in sql for sql, _ in db.executed())


def test_every_memory_hit_gets_its_own_tree_from_shared_statements() -> None:
    db = TinyDatabase().add(
        (rec("h1"), E1),
        (rec("h2"), E1),
        rec("x"),
        rec("y"),
        lnk("l1", "h1", "x"),
        lnk("l2", "y", "h2"),
        lnk("l3", "x", "y"),
    )
    hits = run(db, q(num_hops=1))
    assert ids(hits) == ["h1", "h2"]
    assert flat(hits[0].linked) == {"x": ("h1", 1, "supports")}
    assert flat(hits[1].linked) == {"y": ("h2", 1, "is_supported_by")}
    assert sum("GRAPH_TABLE" in sql for sql, _ in db.executed()) == 1


@pytest.mark.parametrize("seed", range(100))
def test_graph_expansion_builds_the_trees_the_domain_builds(seed: int) -> None:
    rng = random.Random(seed)
    db = TinyDatabase()
    names = [f"n{i:02}" for i in range(rng.randint(5, 30))]
    roots = rng.sample(names, rng.randint(1, min(5, len(names))))
    for name in names:
        record = rec(
            name,
            record_type=rng.choice(
                [RecordType.FACT, RecordType.FACT, RecordType.MEMORY, RecordType.GUIDELINE]
            ),
            user_id=rng.choice(["A", "A", "A", "B", None]),
            metadata=rng.choice([{"topic": "tea"}, {"topic": "tea"}, {"topic": "coffee"}, None]),
            expires_at=rng.choice([None, None, None, at(-1), at(5)]),
            status=rng.choice([RecordStatus.VALID, RecordStatus.VALID, RecordStatus.INVALID]),
        )
        db.add((record, E1) if name in roots else record)
    pairs = set()
    for i in range(rng.randint(0, 3 * len(names))):
        a, b = rng.sample(names, 2)
        if (a, b) in pairs or (b, a) in pairs:
            continue
        pairs.add((a, b))
        db.add(
            lnk(
                f"l{i:03}",
                a,
                b,
                rng.choice(["supports", "refines", "contradicts"]),
                minute=rng.choice([0, 1, 2, 3]),
            )
        )
    filters = rng.choice(
        [
            {},
            {"user_id": "A"},
            {"metadata_filter": {"topic": "tea"}},
            {"record_types": frozenset({RecordType.FACT, RecordType.MEMORY})},
            {"user_id": "A", "metadata_filter": {"topic": "tea"}, "include_invalid": False},
        ]
    )
    query = q(k=50, num_hops=rng.randint(1, 5), max_linked_results=rng.choice([1, 3, 10, 100]), **filters)
    hits = run(db, query)
    memory_hits = [h.id for h in hits if h.record_type.is_memory_like]
    expected = domain_trees(db, query, memory_hits)
    assert {h.id: h.linked for h in hits} == expected
    depths = sum("GRAPH_TABLE" in sql for sql, _ in db.executed())
    assert depths <= query.num_hops


# --- OracleSearchSession: each primitive on its own ----------------------------------------------


def test_dense_candidates_are_admitted_keys_with_cosine_best_first() -> None:
    db = TinyDatabase().add(
        (rec("b-near"), NEAR_E1),
        (rec("a-same"), (3.0, 0.0, 0.0, 0.0)),
        (msg("a-same"), E1),  # the same id as a record: a separate key
        (rec("stale", status=RecordStatus.INVALID), E1),
        (rec("opposite"), MINUS_E1),
        rec("no-vector"),
    )
    found = session(db).dense_candidates(q(include_invalid=False), 3)
    assert [key for key, _ in found] == [(False, "a-same"), (True, "a-same"), (False, "b-near")]
    assert [round(cosine, 6) for _, cosine in found] == [1.0, 1.0, 0.993884]  # 1 - cosine distance
    assert db.limits("VECTOR_DISTANCE") == [3]
    assert session(db).dense_candidates(q(text="tea", vector=None), 3) == []  # no vector: nothing


def test_dense_candidates_page_until_depth_admitted_candidates_pass_the_recheck() -> None:
    db = _crowd(prefilter=False)
    found = session(db).dense_candidates(q(k=2, user_id="A", metadata_filter={"k": "y"}), 2)
    assert [(key, round(cosine, 6)) for key, cosine in found] == [((False, "wanted"), 0.993884), ((False, "also"), 0.0)]
    assert db.limits("VECTOR_DISTANCE") == [50, 200]
    db = _crowd(prefilter=False)
    capped = session(db, max_candidates=60).dense_candidates(q(user_id="A", metadata_filter={"k": "y"}), 2)
    assert capped == [] and db.limits("VECTOR_DISTANCE") == [50, 60]


def test_dense_candidates_read_the_dimension_once_and_check_it_before_any_sql() -> None:
    db = TinyDatabase().add((rec("r"), E1))
    reads: list[int] = []

    def dimension() -> int:
        reads.append(1)
        return 4

    search = OracleSearchSession(db.connection, DEFAULT, dimension=dimension)
    search.dense_candidates(q(), 1)
    search.dense_candidates(q(vector=E2), 1)
    assert len(reads) == 1
    with pytest.raises(VectorDimensionError):
        session(db).dense_candidates(q(vector=(1.0, 0.0, 0.0)), 1)
    assert session(db, dimension=None).dense_candidates(q(vector=(1.0, 0.0, 0.0)), 1) == []
    assert db.limits("VECTOR_DISTANCE") == [1, 1]  # the two searches of the first session only


def test_keyword_candidates_carry_the_raw_score_and_the_ideal_of_100() -> None:
    db = TinyDatabase().add(
        rec("both", "green tea"), rec("one", "tea time"), rec("none", "coffee"), msg("m", "Tea?")
    )
    found = session(db).keyword_candidates(q(text="green tea"), 10)
    assert found.ideal == 100.0
    assert list(found.ranked) == [((False, "both"), 100.0), ((False, "one"), 50.0), ((True, "m"), 50.0)]
    assert list(session(db).keyword_candidates(q(text="green tea"), 1).ranked) == [((False, "both"), 100.0)]
    assert db.limits("CONTAINS") == [10, 1]
    empty = session(db).keyword_candidates(q(text="_ !!!"), 10)
    assert (list(empty.ranked), empty.ideal) == ([], 100.0)
    assert db.limits("CONTAINS") == [10, 1]  # no word token: no SQL


def test_named_records_narrow_keyword_candidates_but_not_their_scores() -> None:
    db = TinyDatabase().add(rec("a", "tea and tea"), rec("b", "green tea"), msg("b", "tea for two"))
    whole = dict(session(db).keyword_candidates(q(text="green tea"), 10).ranked)
    narrowed = session(db).keyword_candidates(q(text="green tea", record_ids=frozenset({"b"})), 10)
    assert list(narrowed.ranked) == [((False, "b"), whole[(False, "b")])]
    assert narrowed.ideal == 100.0


def test_links_around_filters_the_other_end_but_not_its_status() -> None:
    db = TinyDatabase().add(
        rec("r", user_id="A", metadata={"topic": "tea"}),
        rec("s", user_id="A", metadata={"topic": "tea"}),
        rec("ok", user_id="A", metadata={"topic": "tea"}, status=RecordStatus.INVALID),
        rec("bad-meta", user_id="A", metadata={"topic": "coffee"}),
        rec("bad-user", user_id="B", metadata={"topic": "tea"}),
        lnk("l1", "r", "ok"),
        lnk("l2", "bad-meta", "r"),
        lnk("l3", "r", "bad-user"),
        lnk("l4", "s", "r"),
    )
    query = q(user_id="A", metadata_filter={"topic": "tea"}, include_invalid=False)
    around = session(db).links_around(["r", "s"], query)
    assert {record_id: sorted(link.id for link in links) for record_id, links in around.items()} == {
        "r": ["l1", "l4"],  # both directions; bad-meta dropped here, bad-user in SQL
        "s": ["l4"],
    }
    (graph,) = [binds for sql, binds in db.executed() if "GRAPH_TABLE" in sql]
    assert sorted(v for k, v in graph.items() if k.startswith("frontier_")) == ["r", "s"]
    assert session(db).links_around(["r"], q(record_types=frozenset({RecordType.MESSAGE}))) == {}
    assert session(db).links_around([], query) == {}
    assert sum("GRAPH_TABLE" in sql for sql, _ in db.executed()) == 1  # neither sent SQL


def test_load_batches_ids_and_keeps_messages_and_records_apart() -> None:
    db = TinyDatabase().add(msg("same", "a message"), rec("same", "a memory"), rec("other"))
    for i in range(1200):
        db.add(rec(f"r{i:04}"))
    keys = [(True, "same"), (False, "same"), (False, "gone"), *((False, f"r{i:04}") for i in range(1200))]
    loaded = session(db).load(keys)
    assert isinstance(loaded[(True, "same")], Message) and loaded[(True, "same")].content == "a message"
    assert isinstance(loaded[(False, "same")], MemoryRecord) and loaded[(False, "same")].content == "a memory"
    assert (False, "gone") not in loaded and len(loaded) == 1202
    memory = [binds for sql, binds in db.executed() if '"MEMORY" t' in sql]
    assert [len(binds) for binds in memory] == [500, 500, 202]
    assert [binds for sql, binds in db.executed() if '"MESSAGE" t' in sql] == [{"id_0": "same"}]


def test_a_session_never_fetches_a_row_twice() -> None:
    db = TinyDatabase().add((rec("r"), E1), rec("x"), lnk("l1", "r", "x"))
    search = session(db)
    search.dense_candidates(q(), 1)  # loads r to re-check it
    search.links_around(["r"], q())  # the graph step returns x with the link
    sent = len(db.executed())
    loaded = search.load([(False, "r"), (False, "x")])
    assert set(loaded) == {(False, "r"), (False, "x")}
    assert len(db.executed()) == sent  # both rows came from earlier statements of this read
    assert search.load([(False, "missing")]) == {} and search.load([(False, "missing")]) == {}
    assert len(db.executed()) == sent + 1  # a missing row is remembered as missing


def test_message_neighbours_are_grouped_per_wanted_id_in_thread_order() -> None:
    db = TinyDatabase().add(
        *(msg(f"a{i}", thread_id="t1", seq=10 * i) for i in (4, 1, 6, 2, 5)),  # no a3: a gap at seq 30
        *(msg(f"b{i}", thread_id="t2", seq=10 * i + 5) for i in (1, 2, 3)),
        msg("c1", thread_id="t3", seq=1),
        rec("r1"),
    )
    found = session(db).message_neighbours(["a4", "b2", "c1", "missing", "r1", "a4"], 2)
    assert found == {"a4": ["a1", "a2", "a5", "a6"], "b2": ["b1", "b3"], "c1": []}
    (sent,) = [binds for sql, binds in db.executed() if "ROW_NUMBER()" in sql]
    assert sent == {"id_0": "a4", "id_1": "b2", "id_2": "c1", "id_3": "missing", "id_4": "r1", "radius": 2}


def test_message_neighbours_send_no_sql_for_no_radius_or_no_ids_and_batch_ids_by_500() -> None:
    db = TinyDatabase().add(*(msg(f"m{i:04}", seq=i + 1) for i in range(1200)))
    assert session(db).message_neighbours(["m0001"], 0) == {}
    assert session(db).message_neighbours([], 3) == {}
    assert db.executed() == []
    found = session(db).message_neighbours([f"m{i:04}" for i in range(1200)], 1)
    assert found["m0000"] == ["m0001"] and found["m0500"] == ["m0499", "m0501"] and len(found) == 1200
    assert [len(binds) - 1 for sql, binds in db.executed()] == [500, 500, 200]
