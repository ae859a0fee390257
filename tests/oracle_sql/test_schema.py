"""The Oracle schema manager, offline: DDL files rendered against golden files, identifiers quoted
and prefixed, and every schema policy run on a recording fake connection whose responder plays
a small data dictionary (tables, indexes, property graphs and the registry)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from palimpsest.adapters.oracle import codec
from palimpsest.adapters.oracle.names import BASE_NAMES, REGISTRY_TABLE, StoreNames
from palimpsest.adapters.oracle.schema import (
    SCHEMA_VERSION,
    SchemaManager,
    StoreConfig,
    parse_config,
    statements_from_ddl,
)
from palimpsest.adapters.oracle.sql import Statement, placeholders
from palimpsest.application.config import SchemaPolicy
from palimpsest.domain.errors import ConfigurationError, SchemaVersionError

from .fakes import FakeConnection
from .golden import assert_golden

_QUOTED = re.compile(r'"([^"]*)"')
_LITERAL = re.compile(r"'(?:[^']|'')*'")
_FIRST_QUOTED = re.compile(r'"([A-Z0-9_$#]+)"')


# --- a small data dictionary behind the fake connection ------------------------------------------


class FakeOracle:
    """Plays the data dictionary and the registry for the statements the schema manager sends.

    DDL changes the catalog (a dropped table takes its indexes with it), dictionary queries read
    it, and registry DML reads and writes ``registry`` rows keyed by store name. Statements it
    does not recognise fail the test.
    """

    def __init__(self) -> None:
        self.tables: set[str] = set()
        self.indexes: dict[str, tuple[str, str]] = {}  # name -> (table, index_type)
        self.graphs: set[str] = set()
        self.registry: dict[str, dict[str, Any]] = {}
        self.fail_on: set[str] = set()

    # helpers for tests
    def connection(self) -> FakeConnection:
        return FakeConnection(self.respond)

    def install(
        self, manager: SchemaManager, *, skip: set[str] = frozenset(), vector_index: bool = False
    ) -> None:
        """Put the manager's objects (less ``skip``) into the catalog and register the store."""
        self.tables.add(REGISTRY_TABLE)
        for obj in manager.objects:
            if obj.base in skip:
                continue
            self.respond(obj.statement.sql, {})
        if vector_index:
            self.respond(manager.vector_index_ddl().sql, {})

    def register(
        self,
        names: StoreNames,
        *,
        dimension: int | None = None,
        kind: str = "hnsw",
        version: int = 1,
        state: str = "CREATED",
        as_dict: bool = False,
    ) -> None:
        config: Any = {"embedding_dimension": dimension, "vector_index": kind}
        self.registry[names.registry_name] = {
            "state": state,
            "version": version,
            "config": config if as_dict else json.dumps(config),
        }

    def config_of(self, names: StoreNames) -> dict[str, Any]:
        value = self.registry[names.registry_name]["config"]
        return value if isinstance(value, dict) else json.loads(value)

    def names_with_prefix(self, prefix: str) -> set[str]:
        everything = self.tables | set(self.indexes) | self.graphs
        return {n for n in everything if n.startswith(prefix)}

    # the responder
    def respond(self, sql: str, binds: dict[str, Any]) -> Any:
        text = " ".join(sql.split())
        head = text.upper()
        for marker in self.fail_on:
            if marker in text:
                return RuntimeError(f"ORA-99999: scripted failure on {marker}")
        if head.startswith("CREATE TABLE"):
            name = _FIRST_QUOTED.search(text).group(1)
            if name in self.tables:
                return RuntimeError("ORA-00955: name is already used by an existing object")
            self.tables.add(name)
            return 0
        if head.startswith(("CREATE INDEX", "CREATE VECTOR INDEX")):
            name, table = _FIRST_QUOTED.findall(text)[:2]
            assert table in self.tables, f"index {name} on a missing table {table}"
            if name in self.indexes:
                return RuntimeError("ORA-00955: name is already used by an existing object")
            kind = "VECTOR" if "VECTOR INDEX" in head else "DOMAIN" if "CTXSYS.CONTEXT" in head else "NORMAL"
            self.indexes[name] = (table, kind)
            return 0
        if head.startswith("CREATE PROPERTY GRAPH"):
            name = _FIRST_QUOTED.search(text).group(1)
            if name in self.graphs:
                return RuntimeError("ORA-00955: name is already used by an existing object")
            self.graphs.add(name)
            return 0
        if head.startswith("DROP TABLE"):
            name = _FIRST_QUOTED.search(text).group(1)
            assert name in self.tables, f"dropping a missing table {name}"
            self.tables.discard(name)
            self.indexes = {k: v for k, v in self.indexes.items() if v[0] != name}
            return 0
        if head.startswith("DROP INDEX"):
            name = _FIRST_QUOTED.search(text).group(1)
            assert name in self.indexes
            del self.indexes[name]
            return 0
        if head.startswith("DROP PROPERTY GRAPH"):
            name = _FIRST_QUOTED.search(text).group(1)
            assert name in self.graphs
            self.graphs.discard(name)
            return 0
        if "UNION ALL" in head and "USER_PROPERTY_GRAPHS" in head:
            rows = []
            for name in binds.values():
                if name in self.tables:
                    rows.append(("TABLE", name))
                if name in self.indexes:
                    rows.append(("INDEX", name))
                if name in self.graphs:
                    rows.append(("PROPERTY GRAPH", name))
            return rows
        if head.startswith("SELECT TABLE_NAME FROM USER_TABLES"):
            return [(binds["name"],)] if binds["name"] in self.tables else []
        if head.startswith("SELECT INDEX_TYPE FROM USER_INDEXES"):
            found = self.indexes.get(binds["name"])
            return [(found[1],)] if found else []
        if f'"{REGISTRY_TABLE}"' in text:
            if REGISTRY_TABLE not in self.tables:
                return RuntimeError("ORA-00942: table or view does not exist")
            return self._registry(head, binds)
        raise AssertionError(f"unexpected statement: {text}")

    def _registry(self, head: str, binds: dict[str, Any]) -> Any:
        key = binds["store_name"]
        row = self.registry.get(key)
        if head.startswith("SELECT"):
            return [] if row is None else [(row["config"], row["version"], row["state"])]
        if head.startswith("MERGE"):
            if row is None:
                self.registry[key] = {
                    "state": binds["lifecycle_state"],
                    "version": binds["schema_version"],
                    "config": binds["store_config"],
                }
                return 1
            return 0
        if head.startswith("DELETE"):
            return 1 if self.registry.pop(key, None) is not None else 0
        if head.startswith("UPDATE") and row is not None:
            if "JSON_TRANSFORM" in head:
                config = json.loads(row["config"]) if isinstance(row["config"], str) else dict(row["config"])
                config["embedding_dimension"] = binds["dimension"]
                row["config"] = json.dumps(config)
            if "lifecycle_state" in binds:
                row["state"] = binds["lifecycle_state"]
            if "schema_version" in binds:
                row["version"] = binds["schema_version"]
            if "store_config" in binds:
                row["config"] = binds["store_config"]
            return 1
        if head.startswith("UPDATE"):
            return 0
        raise AssertionError(f"unexpected registry statement: {head}")


def _ddl_calls(connection: FakeConnection) -> list[str]:
    return [s for s in connection.statements() if s.lstrip().upper().startswith(("CREATE", "DROP", "ALTER"))]


def _manager(store_id: str | None = None, **kwargs: Any) -> SchemaManager:
    return SchemaManager(StoreNames(store_id), **kwargs)


# --- DDL files ------------------------------------------------------------------------------------


def _every_statement(manager: SchemaManager) -> list[Statement]:
    statements = [manager.registry_ddl(), *manager.load_ddl(1)]
    for kind in ("hnsw", "ivf"):
        statements.append(
            SchemaManager(manager.names, vector_index=kind, target_accuracy=90).vector_index_ddl()
        )
    statements.append(manager.drop_vector_index_ddl())
    statements.extend(manager.drop_statements())
    return statements


def _dml_statements(manager: SchemaManager) -> list[Statement]:
    config = {"embedding_dimension": 384, "vector_index": "hnsw"}
    return [
        manager.inventory_statement(),
        manager.registry_exists_statement(),
        manager.vector_index_exists_statement(),
        manager.select_config(),
        manager.select_config(for_update=True),
        manager.set_dimension(384),
        manager.set_dimension(None),
        manager.register_statement(config),
        manager.update_registry_statement("CREATED", 1, config),
        manager.set_state_statement("DROPPING"),
        manager.unregister_statement(),
    ]


@pytest.mark.parametrize("store_id", [None, "acme"])
def test_ddl_renders_as_the_golden_files(store_id: str | None) -> None:
    manager = _manager(store_id)
    suffix = "default" if store_id is None else store_id
    assert_golden(f"schema_ddl_{suffix}", "\n".join(s.render() for s in _every_statement(manager)))
    assert_golden(f"schema_statements_{suffix}", "\n".join(s.render() for s in _dml_statements(manager)))


@pytest.mark.parametrize("store_id", [None, "acme"])
def test_every_placeholder_of_the_ddl_files_is_resolved(store_id: str | None) -> None:
    manager = _manager(store_id)
    for statement in _every_statement(manager):
        assert "{" not in statement.sql and "}" not in statement.sql, statement.name
        assert not statement.sql.rstrip().endswith(";"), statement.name
        assert "--" not in statement.sql, statement.name
        assert placeholders(statement.sql) == set() == set(statement.binds), statement.name


@pytest.mark.parametrize("store_id", [None, "acme"])
def test_placeholders_equal_binds_in_every_statement(store_id: str | None) -> None:
    for statement in _dml_statements(_manager(store_id)):
        assert placeholders(statement.sql) == set(statement.binds), statement.name


def test_every_identifier_of_a_prefixed_store_is_quoted_and_prefixed() -> None:
    manager = _manager("acme")
    statements = [*manager.load_ddl(1), manager.vector_index_ddl(), *manager.drop_statements()]
    bases = {b.upper() for b in BASE_NAMES} | {REGISTRY_TABLE}
    for statement in statements:
        quoted = _QUOTED.findall(statement.sql)
        assert quoted, statement.name
        assert all(q.startswith("ACME_") and q == q.upper() for q in quoted), (statement.name, quoted)
        assert all(q[len("ACME_") :] in BASE_NAMES for q in quoted), (statement.name, quoted)
        # Outside quoted identifiers and string literals, no managed name appears unprefixed
        # (graph labels, which are not schema objects, are the one exception).
        bare = _LITERAL.sub(" ", _QUOTED.sub(" ", statement.sql))
        bare = re.sub(r"\bLABEL\s+\w+", " ", bare, flags=re.IGNORECASE)
        words = {w.upper() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_$#]*", bare)}
        assert not (words & bases), (statement.name, sorted(words & bases))


def test_the_default_store_uses_the_bare_base_names() -> None:
    manager = _manager(None)
    (thread, *_) = manager.load_ddl(1)
    assert thread.sql.startswith('CREATE TABLE "THREAD" (')
    assert '"MEMORY_GRAPH"' in manager.load_ddl(1)[-1].sql


def test_no_base_name_ends_with_another_base_name() -> None:
    # Otherwise store "P" could own an object named like another store's ("P_" + S == Q_L or L).
    for long in BASE_NAMES | {REGISTRY_TABLE}:
        for short in BASE_NAMES:
            assert not long.endswith(f"_{short}"), (long, short)


def test_no_two_stores_share_an_object_name() -> None:
    ids = [None, "acme", "memory", "thread", "record", "message", "memory_link", "store", "a", "a_thread"]
    seen: dict[str, str | None] = {}
    for store_id in ids:
        names = StoreNames(store_id)
        for base in BASE_NAMES:
            raw = names.raw(base)
            assert raw not in seen or seen[raw] == store_id, (raw, seen.get(raw), store_id)
            seen[raw] = store_id


def test_the_ddl_columns_match_the_codec_column_lists() -> None:
    manager = _manager(None)
    ddl = {obj.base: obj.statement.sql for obj in manager.objects if obj.kind == "TABLE"}

    def columns_of(table: str) -> set[str]:
        body = ddl[table].split("(", 1)[1]
        return {
            line.split()[0].lower()
            for line in body.splitlines()
            if line.strip() and not line.strip().startswith(("CONSTRAINT", ")"))
        }

    def listed(names: str) -> set[str]:
        return {n.strip() for n in names.split(",")}

    assert columns_of("THREAD") == listed(codec.THREAD_COLUMNS)
    assert columns_of("MESSAGE") == listed(codec.MESSAGE_COLUMNS)
    assert columns_of("MEMORY") == listed(codec.MEMORY_COLUMNS)
    assert columns_of("MEMORY_LINK") == listed(codec.LINK_COLUMNS) | {
        "source_memory_user_id",
        "target_memory_user_id",
    }
    assert columns_of("THREAD_SUMMARY") == listed(codec.SUMMARY_COLUMNS)
    assert columns_of("EXTRACTION_JOB") == listed(codec.JOB_COLUMNS)
    assert columns_of("STORE_SETTING") == {"setting_key", "setting_value"}
    assert columns_of("RECORD_CHUNKS") == {
        "chunk_id",
        "source_id",
        "source_record_type",
        "source_emb_column",
        "chunk_seq",
        "chunk_text",
        "thread_id",
        "user_id",
        "agent_id",
        "status",
        "expires_at",
        "created_at",
        "embedding",
    }
    assert "embedding           VECTOR(*, FLOAT32)" in ddl["RECORD_CHUNKS"]
    assert "chunk_id            NUMBER GENERATED ALWAYS AS IDENTITY" in ddl["RECORD_CHUNKS"]


def test_id_columns_hold_as_many_characters_as_the_domain_allows() -> None:
    # The domain counts an id's length in characters (MAX_ID_LENGTH); with Oracle's default byte
    # semantics a VARCHAR2(128) would refuse a 128-character id of multi-byte characters.
    from palimpsest.domain.model import MAX_ID_LENGTH

    manager = _manager(None)
    ddl = "\n".join(obj.statement.sql for obj in manager.objects if obj.kind == "TABLE")
    id_columns = [
        line.split()
        for line in ddl.splitlines()
        if line.strip().split(" ", 1)[0].endswith(("_id", "relation_type", "setting_key", "message_role"))
        and "VARCHAR2" in line
    ]
    assert id_columns
    for name, *definition in id_columns:
        text = " ".join(definition)
        assert "CHAR)" in text, f"{name} uses byte length semantics: {text}"
    assert f"VARCHAR2({MAX_ID_LENGTH} CHAR)" in ddl


def test_the_ddl_creates_the_decided_objects() -> None:
    manager = _manager(None)
    kinds = {obj.base: obj.kind for obj in manager.objects}
    assert {b for b, k in kinds.items() if k == "TABLE"} == {
        "THREAD",
        "MESSAGE",
        "MEMORY",
        "MEMORY_LINK",
        "THREAD_SUMMARY",
        "EXTRACTION_JOB",
        "STORE_SETTING",
        "RECORD_CHUNKS",
    }
    assert kinds["MEMORY_GRAPH"] == "PROPERTY GRAPH"
    assert "RECORD_CHUNKS_EMBEDDING_VEC_I" not in kinds  # built by code once the dimension is known
    text = next(o.statement.sql for o in manager.objects if o.base == "RECORD_CHUNKS_CHUNK_TEXT_TXT_I")
    assert "INDEXTYPE IS CTXSYS.CONTEXT" in text
    assert "PARAMETERS ('SYNC (ON COMMIT) STOPLIST CTXSYS.EMPTY_STOPLIST')" in text
    graph = next(o.statement.sql for o in manager.objects if o.base == "MEMORY_GRAPH")
    assert 'SOURCE KEY (source_memory_id) REFERENCES "MEMORY" (record_id)' in graph
    assert 'DESTINATION KEY (target_memory_id) REFERENCES "MEMORY" (record_id)' in graph
    assert "LABEL memory\n" in graph and "LABEL memory_link\n" in graph
    assert graph.count("PROPERTIES ARE ALL COLUMNS") == 2


def test_statements_from_ddl_rejects_unknown_and_malformed_placeholders() -> None:
    with pytest.raises(ConfigurationError, match="unknown object"):
        statements_from_ddl("CREATE TABLE {NOPE} (x NUMBER)", {"THREAD": '"THREAD"'}, prefix="v9")
    with pytest.raises(ConfigurationError, match="unknown object"):
        statements_from_ddl("CREATE TABLE {thread} (x NUMBER)", {"THREAD": '"THREAD"'}, prefix="v9")
    with pytest.raises(ConfigurationError, match="brace"):
        statements_from_ddl("CREATE TABLE {THREAD (x NUMBER)", {"THREAD": '"THREAD"'}, prefix="v9")


def test_statements_from_ddl_splits_on_slash_lines_and_drops_comments() -> None:
    text = (
        "-- header\nCREATE TABLE {T} (\n  -- a column\n  x NUMBER\n)\n/\n\n/\nCREATE INDEX {I} ON {T} (x)\n"
    )
    objects = statements_from_ddl(text, {"T": '"T"', "I": '"I"'}, prefix="v7")
    assert [(o.base, o.kind, o.statement.name) for o in objects] == [
        ("T", "TABLE", "v7_create_t"),
        ("I", "INDEX", "v7_create_i"),
    ]
    assert objects[0].statement.sql == 'CREATE TABLE "T" (\n  x NUMBER\n)'


def test_load_ddl_refuses_an_unknown_version() -> None:
    with pytest.raises(SchemaVersionError):
        _manager().load_ddl(SCHEMA_VERSION + 1)


# --- constructor and values -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["HNSW", "flat", "", None])
def test_a_bad_vector_index_kind_is_a_configuration_error(kind: Any) -> None:
    with pytest.raises(ConfigurationError):
        _manager(vector_index=kind)


@pytest.mark.parametrize("accuracy", [0, 101, 95.0, True, "95"])
def test_a_bad_target_accuracy_is_a_configuration_error(accuracy: Any) -> None:
    with pytest.raises(ConfigurationError):
        _manager(target_accuracy=accuracy)


def test_no_vector_index_ddl_without_a_kind() -> None:
    with pytest.raises(ConfigurationError):
        _manager(vector_index="none").vector_index_ddl()


def test_vector_index_ddl_forms() -> None:
    hnsw = _manager(target_accuracy=90).vector_index_ddl().sql
    assert "ORGANIZATION INMEMORY NEIGHBOR GRAPH" in hnsw and "WITH TARGET ACCURACY 90" in hnsw
    ivf = _manager(vector_index="ivf").vector_index_ddl().sql
    assert "ORGANIZATION NEIGHBOR PARTITIONS" in ivf and "DISTANCE COSINE" in ivf


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"embedding_dimension": 384, "vector_index": "ivf"}, StoreConfig(384, "ivf", 1)),
        ('{"embedding_dimension": null, "vector_index": "hnsw"}', StoreConfig(None, "hnsw", 1)),
        (b'{"embedding_dimension": 3}', StoreConfig(3, "none", 1)),
        ({"embedding_dimension": 384.0, "vector_index": "none", "other": 1}, StoreConfig(384, "none", 1)),
        (None, StoreConfig(None, "none", 1)),
    ],
)
def test_parse_config(value: Any, expected: StoreConfig) -> None:
    assert parse_config(value) == expected
    assert SchemaManager.parse_config(value, schema_version=1) == expected


@pytest.mark.parametrize(
    "value",
    [
        "[1]",
        {"embedding_dimension": "x"},
        {"embedding_dimension": 1.5},
        {"embedding_dimension": 0},
        {"vector_index": "flat"},
    ],
)
def test_parse_config_refuses_a_corrupt_config(value: Any) -> None:
    with pytest.raises(SchemaVersionError):
        parse_config(value)


@pytest.mark.parametrize("dimension", [0, -1, 65536, 3.0, True, "384"])
def test_set_dimension_validates(dimension: Any) -> None:
    with pytest.raises(ConfigurationError):
        _manager().set_dimension(dimension)


def test_the_dml_builders_never_commit() -> None:
    oracle = FakeOracle()
    manager = _manager("acme")
    oracle.install(manager)
    oracle.register(manager.names, dimension=None)
    connection = oracle.connection()
    cursor = connection.cursor()
    cursor.execute(
        manager.select_config(for_update=True).sql, dict(manager.select_config(for_update=True).binds)
    )
    statement = manager.set_dimension(768)
    cursor.execute(statement.sql, dict(statement.binds))
    assert [c.kind for c in connection.log] == ["execute", "execute"]
    assert oracle.config_of(manager.names)["embedding_dimension"] == 768


# --- policies -------------------------------------------------------------------------------------


def test_create_if_empty_creates_everything_then_registers_the_store() -> None:
    oracle = FakeOracle()
    manager = _manager("acme")
    connection = oracle.connection()
    config = manager.ensure(connection, SchemaPolicy.CREATE_IF_EMPTY, dimension=384)
    assert config == StoreConfig(dimension=384, vector_index="hnsw", schema_version=1)
    ddl = _ddl_calls(connection)
    assert ddl[0].startswith('CREATE TABLE "PALIMPSEST_STORES"')
    assert ddl[1:-1] == [s.sql for s in manager.load_ddl(1)]
    assert ddl[-1] == manager.vector_index_ddl().sql
    assert oracle.registry["ACME"]["state"] == "CREATED"
    assert oracle.config_of(manager.names) == {"embedding_dimension": 384, "vector_index": "hnsw"}
    assert "commit" in [c.kind for c in connection.log]
    # opening again finds a complete store and runs no DDL
    again = oracle.connection()
    assert manager.ensure(again, SchemaPolicy.CREATE_IF_EMPTY, dimension=None) == config
    assert _ddl_calls(again) == []


def test_create_if_empty_refuses_a_partial_schema_without_any_ddl() -> None:
    oracle = FakeOracle()
    manager = _manager("acme")
    oracle.install(manager, skip={"MEMORY_GRAPH", "MEMORY_LINK_TARGET_I"})
    oracle.register(manager.names)
    connection = oracle.connection()
    with pytest.raises(SchemaVersionError, match="partial schema") as caught:
        manager.ensure(connection, SchemaPolicy.CREATE_IF_EMPTY, dimension=8)
    assert "ACME_MEMORY_GRAPH (property graph)" in str(caught.value)
    assert "ACME_MEMORY_LINK_TARGET_I (index)" in str(caught.value)
    assert _ddl_calls(connection) == []


def test_create_if_empty_treats_objects_without_a_registry_row_as_partial() -> None:
    oracle = FakeOracle()
    manager = _manager()
    oracle.install(manager)
    connection = oracle.connection()
    with pytest.raises(SchemaVersionError, match="partial schema") as caught:
        manager.ensure(connection, "create_if_empty", dimension=None)
    assert "PALIMPSEST_STORES" in str(caught.value)
    assert _ddl_calls(connection) == []


def test_require_existing_runs_no_ddl_and_names_what_is_missing() -> None:
    oracle = FakeOracle()
    manager = _manager("acme")
    oracle.install(manager, skip={"RECORD_CHUNKS_CHUNK_TEXT_TXT_I", "STORE_SETTING"})
    oracle.register(manager.names, dimension=16)
    connection = oracle.connection()
    with pytest.raises(SchemaVersionError) as caught:
        manager.ensure(connection, SchemaPolicy.REQUIRE_EXISTING, dimension=16)
    message = str(caught.value)
    assert "ACME_STORE_SETTING (table)" in message
    assert "ACME_RECORD_CHUNKS_CHUNK_TEXT_TXT_I (index)" in message
    assert "ACME_THREAD " not in message
    assert _ddl_calls(connection) == []


def test_require_existing_without_a_registry_raises() -> None:
    oracle = FakeOracle()
    connection = oracle.connection()
    with pytest.raises(SchemaVersionError, match="PALIMPSEST_STORES"):
        _manager().ensure(connection, SchemaPolicy.REQUIRE_EXISTING, dimension=None)
    assert _ddl_calls(connection) == []


def test_require_existing_without_the_registry_row_raises() -> None:
    oracle = FakeOracle()
    manager = _manager("acme")
    oracle.install(manager)
    connection = oracle.connection()
    with pytest.raises(SchemaVersionError, match="row in PALIMPSEST_STORES"):
        manager.ensure(connection, SchemaPolicy.REQUIRE_EXISTING, dimension=None)
    assert _ddl_calls(connection) == []


def test_require_existing_refuses_an_interrupted_creation() -> None:
    oracle = FakeOracle()
    manager = _manager()
    oracle.install(manager)
    oracle.register(manager.names, state="CREATING")
    with pytest.raises(SchemaVersionError, match="CREATING"):
        manager.ensure(oracle.connection(), SchemaPolicy.REQUIRE_EXISTING, dimension=None)


def test_require_existing_validates_a_complete_store_and_stores_a_first_dimension() -> None:
    oracle = FakeOracle()
    manager = _manager("acme")
    oracle.install(manager)
    oracle.register(manager.names, dimension=None, kind="ivf", as_dict=True)
    connection = oracle.connection()
    config = manager.ensure(connection, SchemaPolicy.REQUIRE_EXISTING, dimension=32)
    assert config == StoreConfig(dimension=32, vector_index="ivf", schema_version=1)
    assert oracle.config_of(manager.names)["embedding_dimension"] == 32
    assert _ddl_calls(connection) == []  # not even the vector index
    assert connection.log[-1].kind == "commit"


def test_require_existing_uses_the_registry_dimension_when_none_is_given() -> None:
    oracle = FakeOracle()
    manager = _manager()
    oracle.install(manager, vector_index=True)
    oracle.register(manager.names, dimension=384)
    config = manager.ensure(oracle.connection(), SchemaPolicy.REQUIRE_EXISTING, dimension=None)
    assert config == StoreConfig(dimension=384, vector_index="hnsw", schema_version=1)


@pytest.mark.parametrize(
    "policy", [SchemaPolicy.REQUIRE_EXISTING, SchemaPolicy.CREATE_IF_EMPTY, SchemaPolicy.CREATE_IF_NECESSARY]
)
def test_a_dimension_conflict_is_a_configuration_error_before_any_ddl(policy: SchemaPolicy) -> None:
    oracle = FakeOracle()
    manager = _manager("acme")
    oracle.install(manager, skip={"MEMORY_GRAPH"} if policy is SchemaPolicy.CREATE_IF_NECESSARY else set())
    oracle.register(manager.names, dimension=384)
    connection = oracle.connection()
    with pytest.raises(ConfigurationError, match="384"):
        manager.ensure(connection, policy, dimension=768)
    assert _ddl_calls(connection) == []
    assert oracle.config_of(manager.names)["embedding_dimension"] == 384


def test_create_if_necessary_creates_only_the_missing_objects() -> None:
    oracle = FakeOracle()
    manager = _manager("acme")
    oracle.install(manager, skip={"RECORD_CHUNKS_SCOPE_I", "STORE_SETTING"})
    oracle.register(manager.names, dimension=None)
    connection = oracle.connection()
    config = manager.ensure(connection, SchemaPolicy.CREATE_IF_NECESSARY, dimension=None)
    assert config == StoreConfig(dimension=None, vector_index="hnsw", schema_version=1)
    by_name = {s.name: s.sql for s in manager.load_ddl(1)}
    assert _ddl_calls(connection) == [
        by_name["v1_create_store_setting"],
        by_name["v1_create_record_chunks_scope_i"],
    ]


def test_create_if_necessary_creates_the_registry_and_a_fresh_store() -> None:
    oracle = FakeOracle()
    manager = _manager(None, vector_index="ivf")
    connection = oracle.connection()
    config = manager.ensure(connection, SchemaPolicy.CREATE_IF_NECESSARY, dimension=None)
    assert config == StoreConfig(dimension=None, vector_index="ivf", schema_version=1)
    assert REGISTRY_TABLE in oracle.tables
    assert oracle.names_with_prefix("") >= {"THREAD", "MEMORY_GRAPH", "RECORD_CHUNKS_CHUNK_TEXT_TXT_I"}
    assert "RECORD_CHUNKS_EMBEDDING_VEC_I" not in oracle.indexes  # no dimension yet
    assert oracle.registry["__DEFAULT__"]["state"] == "CREATED"
    # the first dimension arrives: stored, and the IVF index is built
    later = oracle.connection()
    assert manager.ensure(later, SchemaPolicy.CREATE_IF_NECESSARY, dimension=64).dimension == 64
    assert _ddl_calls(later) == [manager.vector_index_ddl().sql]
    assert oracle.indexes["RECORD_CHUNKS_EMBEDDING_VEC_I"] == ("RECORD_CHUNKS", "VECTOR")


def test_create_if_necessary_rebuilds_a_graph_whose_table_was_recreated() -> None:
    oracle = FakeOracle()
    manager = _manager()
    oracle.install(manager, skip={"MEMORY_LINK", "MEMORY_LINK_SOURCE_I", "MEMORY_LINK_TARGET_I"})
    oracle.register(manager.names)
    connection = oracle.connection()
    manager.ensure(connection, SchemaPolicy.CREATE_IF_NECESSARY, dimension=None)
    ddl = _ddl_calls(connection)
    assert ddl[:3] == [s.sql for s in manager.load_ddl(1) if s.name.startswith("v1_create_memory_link")]
    assert ddl[3:] == ['DROP PROPERTY GRAPH "MEMORY_GRAPH"', manager.load_ddl(1)[-1].sql]


def test_create_if_necessary_accepts_an_object_another_process_created() -> None:
    oracle = FakeOracle()
    manager = _manager()
    oracle.install(manager, skip={"THREAD_USER_I"})
    oracle.register(manager.names)
    connection = oracle.connection()
    real = oracle.respond

    def racing(sql: str, binds: dict[str, Any]) -> Any:
        if sql.startswith('CREATE INDEX "THREAD_USER_I"'):
            real(sql, binds)  # the other process wins
            return RuntimeError("ORA-00955: name is already used by an existing object")
        return real(sql, binds)

    connection.responder = racing
    assert manager.ensure(connection, SchemaPolicy.CREATE_IF_NECESSARY, dimension=None).schema_version == 1


def test_create_if_necessary_reports_a_failing_statement() -> None:
    oracle = FakeOracle()
    manager = _manager()
    oracle.fail_on.add("CTXSYS.CONTEXT")
    with pytest.raises(RuntimeError, match="ORA-99999"):
        manager.ensure(oracle.connection(), SchemaPolicy.CREATE_IF_NECESSARY, dimension=None)
    assert oracle.registry["__DEFAULT__"]["state"] == "CREATING"  # a later run finishes the job
    oracle.fail_on.clear()
    manager.ensure(oracle.connection(), SchemaPolicy.CREATE_IF_NECESSARY, dimension=None)
    assert oracle.registry["__DEFAULT__"]["state"] == "CREATED"
    assert "RECORD_CHUNKS_CHUNK_TEXT_TXT_I" in oracle.indexes


@pytest.mark.parametrize("policy", list(SchemaPolicy))
def test_a_newer_schema_version_is_refused(policy: SchemaPolicy) -> None:
    oracle = FakeOracle()
    manager = _manager("acme")
    oracle.install(manager)
    oracle.register(manager.names, version=SCHEMA_VERSION + 1)
    connection = oracle.connection()
    with pytest.raises(SchemaVersionError, match="newer"):
        manager.ensure(connection, policy, dimension=None)
    assert _ddl_calls(connection) == []


def test_recreate_drops_only_this_stores_objects() -> None:
    oracle = FakeOracle()
    default, acme = _manager(), _manager("acme")
    oracle.install(default, vector_index=True)
    oracle.register(default.names, dimension=384)
    oracle.install(acme, vector_index=True)
    oracle.register(acme.names, dimension=384)
    before_default = oracle.names_with_prefix("") - oracle.names_with_prefix("ACME_")
    connection = oracle.connection()
    config = acme.ensure(connection, SchemaPolicy.RECREATE, dimension=768)
    assert config == StoreConfig(dimension=768, vector_index="hnsw", schema_version=1)
    drops = [s for s in _ddl_calls(connection) if s.startswith("DROP")]
    assert drops and all('"ACME_' in s for s in drops)
    assert not any("PALIMPSEST_STORES" in s for s in drops)
    assert oracle.names_with_prefix("") - oracle.names_with_prefix("ACME_") == before_default
    assert oracle.config_of(default.names)["embedding_dimension"] == 384
    assert oracle.config_of(acme.names)["embedding_dimension"] == 768
    assert oracle.indexes["ACME_RECORD_CHUNKS_EMBEDDING_VEC_I"] == ("ACME_RECORD_CHUNKS", "VECTOR")


def test_recreate_of_the_default_store_leaves_prefixed_stores_alone() -> None:
    oracle = FakeOracle()
    default, acme = _manager(), _manager("acme")
    oracle.install(acme)
    oracle.register(acme.names)
    oracle.install(default, skip={"MEMORY_GRAPH"})
    acme_objects = oracle.names_with_prefix("ACME_")
    connection = oracle.connection()
    default.ensure(connection, "RECREATE", dimension=None)
    assert oracle.names_with_prefix("ACME_") == acme_objects
    assert all('"ACME_' not in s for s in _ddl_calls(connection))
    assert "MEMORY_GRAPH" in oracle.graphs
    assert set(oracle.registry) == {"ACME", "__DEFAULT__"}


def test_a_changed_vector_index_kind_rebuilds_the_index() -> None:
    oracle = FakeOracle()
    hnsw = _manager()
    oracle.install(hnsw, vector_index=True)
    oracle.register(hnsw.names, dimension=8, kind="hnsw")
    ivf = _manager(vector_index="ivf")
    connection = oracle.connection()
    assert ivf.ensure(connection, SchemaPolicy.CREATE_IF_NECESSARY, dimension=8).vector_index == "ivf"
    assert _ddl_calls(connection) == [ivf.drop_vector_index_ddl().sql, ivf.vector_index_ddl().sql]
    # and "none" drops it for good
    none = _manager(vector_index="none")
    assert (
        none.ensure(oracle.connection(), SchemaPolicy.CREATE_IF_NECESSARY, dimension=8).vector_index == "none"
    )
    assert "RECORD_CHUNKS_EMBEDDING_VEC_I" not in oracle.indexes


def test_an_unknown_policy_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError):
        _manager().ensure(FakeOracle().connection(), "sometimes", dimension=None)  # type: ignore[arg-type]


@pytest.mark.parametrize("dimension", [0, 3.5, True, 70000])
def test_ensure_validates_the_dimension(dimension: Any) -> None:
    with pytest.raises(ConfigurationError):
        _manager().ensure(FakeOracle().connection(), SchemaPolicy.CREATE_IF_NECESSARY, dimension=dimension)


# --- vector index and drop ------------------------------------------------------------------------


def test_ensure_vector_index_creates_once() -> None:
    oracle = FakeOracle()
    manager = _manager("acme")
    oracle.install(manager)
    connection = oracle.connection()
    assert not manager.has_vector_index(connection)
    assert manager.ensure_vector_index(connection, 384) is True
    assert manager.has_vector_index(connection)
    assert manager.ensure_vector_index(connection, 384) is False
    assert _ddl_calls(connection) == [manager.vector_index_ddl().sql]
    manager.drop_vector_index(connection)
    manager.drop_vector_index(connection)  # already gone: nothing to do
    assert not manager.has_vector_index(connection)
    assert _ddl_calls(connection)[1:] == [manager.drop_vector_index_ddl().sql]


def test_ensure_vector_index_does_nothing_without_a_kind_and_checks_the_dimension() -> None:
    oracle = FakeOracle()
    manager = _manager(vector_index="none")
    oracle.install(manager)
    connection = oracle.connection()
    assert manager.ensure_vector_index(connection, 384) is False
    assert _ddl_calls(connection) == []
    with pytest.raises(ConfigurationError):
        _manager().ensure_vector_index(connection, None)  # type: ignore[arg-type]


def test_drop_removes_the_store_and_its_registry_row_only() -> None:
    oracle = FakeOracle()
    default, acme = _manager(), _manager("acme")
    for manager in (default, acme):
        oracle.install(manager, vector_index=True)
        oracle.register(manager.names, dimension=4)
    connection = oracle.connection()
    acme.drop(connection)
    assert oracle.names_with_prefix("ACME_") == set()
    assert "ACME" not in oracle.registry and "__DEFAULT__" in oracle.registry
    assert REGISTRY_TABLE in oracle.tables and "THREAD" in oracle.tables and "MEMORY_GRAPH" in oracle.graphs
    drops = _ddl_calls(connection)
    assert drops[0] == 'DROP PROPERTY GRAPH "ACME_MEMORY_GRAPH"'
    assert connection.log[-1].kind == "commit"
    # dropping a store that does not exist is a no-op
    again = oracle.connection()
    acme.drop(again)
    assert _ddl_calls(again) == []


@pytest.mark.parametrize("policy", list(SchemaPolicy))
def test_an_unknown_older_schema_version_is_refused(policy: SchemaPolicy) -> None:
    oracle = FakeOracle()
    manager = _manager()
    oracle.install(manager)
    oracle.register(manager.names, version=0)
    connection = oracle.connection()
    with pytest.raises(SchemaVersionError, match="unknown schema version"):
        manager.ensure(connection, policy, dimension=None)
    assert _ddl_calls(connection) == []


def test_a_database_that_cannot_build_the_vector_index_still_opens_the_store(caplog) -> None:
    """HNSW needs a vector memory pool (ORA-51962 without one): the store opens and searches exact."""
    from palimpsest.adapters.oracle.names import StoreNames
    from palimpsest.adapters.oracle.schema import SchemaManager

    from .fakes import FakeConnection

    def responder(sql: str, binds: dict) -> object:
        if "CREATE VECTOR INDEX" in sql:
            return RuntimeError(
                "ORA-51962: The vector memory area is out of space for the current container."
            )
        return []

    manager = SchemaManager(StoreNames("acme"))
    connection = FakeConnection(responder)
    with caplog.at_level("WARNING", logger="palimpsest.adapters.oracle"):
        assert manager.try_ensure_vector_index(connection, 4) is False
    assert "vector_memory_size" in caplog.text
    assert any("CREATE VECTOR INDEX" in sql for sql in connection.statements())
