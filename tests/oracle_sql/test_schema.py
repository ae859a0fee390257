"""The Oracle schema manager, offline: DDL files rendered against golden files, identifiers quoted
and prefixed, and every schema policy run on a recording fake connection whose responder plays
a small data dictionary (tables, indexes, property graphs and the registry)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from palimpsest.adapters.oracle import SchemaPolicy, codec
from palimpsest.adapters.oracle import schema as schema_module
from palimpsest.adapters.oracle import statements as st
from palimpsest.adapters.oracle.names import BASE_NAMES, REGISTRY_TABLE, StoreNames
from palimpsest.adapters.oracle.schema import (
    SCHEMA_VERSION,
    SchemaManager,
    StoreConfig,
    parse_config,
    statements_from_ddl,
)
from palimpsest.adapters.oracle.sql import Statement, placeholders
from palimpsest.domain.errors import ConfigurationError, SchemaVersionError

from .fakes import FakeConnection
from .golden import assert_golden

CHECKING_POLICIES = [p for p in SchemaPolicy if p is not SchemaPolicy.NO_CHECK]
"""Every policy but NO_CHECK, which reads nothing (its own tests below)."""

_QUOTED = re.compile(r'"([^"]*)"')
_LITERAL = re.compile(r"'(?:[^']|'')*'")
_FIRST_QUOTED = re.compile(r'"([A-Z0-9_$#]+)"')
_CHECK = re.compile(r'CONSTRAINT "([A-Z0-9_$#]+)" CHECK \((.*?)\)(?=,|\s*\)?\s*$)')
"""A named check constraint and its condition (one line of the normalised DDL text)."""
_COLUMN_GROUP = re.compile(r"table_name = :(\w+) AND column_name IN \(([^)]*)\)", re.IGNORECASE)


def _top_level_items(body: str) -> list[str]:
    items, depth, current = [], 0, ""
    for char in body:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += char
    return [*items, current]


def _table_columns(text: str) -> set[str]:
    """The column names of a ``CREATE TABLE`` text (constraint lines left out)."""
    body = text.split("(", 1)[1].rsplit(")", 1)[0]
    return {
        item.split()[0].upper()
        for item in _top_level_items(body)
        if item.strip() and not item.strip().upper().startswith("CONSTRAINT")
    }


# --- a small data dictionary behind the fake connection ------------------------------------------


class FakeOracle:
    """Plays the data dictionary and the registry for the statements the schema manager sends.

    DDL changes the catalog (a dropped table takes its indexes with it), dictionary queries read
    it, and registry DML reads and writes ``registry`` rows keyed by store name. Statements it
    does not recognise fail the test.
    """

    def __init__(self) -> None:
        self.tables: set[str] = set()
        self.columns: dict[str, set[str]] = {}  # table -> column names (upper case)
        self.constraint_changes: list[tuple[str, str]] = []  # (DROP or ADD, constraint name)
        self.indexes: dict[str, tuple[str, str]] = {}  # name -> (table, index_type)
        self.graphs: set[str] = set()
        self.checks: dict[str, str] = {}  # constraint name -> its condition, as the DDL wrote it
        self.registry: dict[str, dict[str, Any]] = {}
        self.fail_on: set[str] = set()
        self.dml: list[str] = []  # DML on store tables (data fixes of a DDL file)

    # helpers for tests
    def connection(self) -> FakeConnection:
        return FakeConnection(self.respond)

    def install(
        self,
        manager: SchemaManager,
        *,
        skip: set[str] = frozenset(),
        vector_index: bool = False,
        version: int = SCHEMA_VERSION,
    ) -> None:
        """Put the manager's objects of versions 1..``version`` (less ``skip``, by key) into the
        catalog, as a store of that version has them; the registry table too."""
        self.tables.add(REGISTRY_TABLE)
        for obj in manager.objects:
            if obj.key in skip or obj.version > version:
                continue
            self.respond(obj.statement.sql, {})
        named = {obj.statement.name for obj in manager.objects}
        for number in range(1, version + 1):  # and the statements that create nothing nameable
            for statement in manager.load_ddl(number):
                if statement.name not in named:
                    self.respond(statement.sql, {})
        if vector_index:
            self.respond(manager.vector_index_ddl().sql, {})

    def register(
        self,
        names: StoreNames,
        *,
        dimension: int | None = None,
        kind: str = "hnsw",
        version: int = SCHEMA_VERSION,
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
            self.columns[name] = _table_columns(text)
            self.checks.update(_CHECK.findall(text))
            return 0
        if head.startswith("ALTER TABLE"):
            name = _FIRST_QUOTED.search(text).group(1)
            if name not in self.tables:
                return RuntimeError("ORA-00942: table or view does not exist")
            dropped = re.fullmatch(r'.*? DROP CONSTRAINT "([^"]+)"', text, re.IGNORECASE)
            if dropped:
                if self.checks.pop(dropped.group(1), None) is None:
                    return RuntimeError("ORA-02443: Cannot drop constraint - nonexistent constraint")
                self.constraint_changes.append(("DROP", dropped.group(1)))
                return 0
            checks = _CHECK.findall(text)
            if checks and " ADD CONSTRAINT " in head:
                if checks[0][0] in self.checks:
                    return RuntimeError("ORA-02264: name already used by an existing constraint")
                self.checks.update(checks)
                self.constraint_changes.append(("ADD", checks[0][0]))
                return 0
            added = re.fullmatch(r".*? ADD \((.*)\)", text, re.IGNORECASE)
            assert added, f"unexpected ALTER TABLE: {text}"
            new = [item.split()[0].upper() for item in _top_level_items(added.group(1))]
            if set(new) & self.columns[name]:
                return RuntimeError("ORA-01430: column being added already exists in table")
            self.columns[name] |= set(new)  # one statement: all its columns or none
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
            self.columns.pop(name, None)
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
            for part in sql.split("UNION ALL"):
                used = [binds[key] for key in re.findall(r":(\w+)", part)]
                if "user_tables" in part:
                    rows += [("TABLE", name) for name in used if name in self.tables]
                elif "user_indexes" in part:
                    rows += [("INDEX", name) for name in used if name in self.indexes]
                elif "user_property_graphs" in part:
                    rows += [("PROPERTY GRAPH", name) for name in used if name in self.graphs]
                elif "user_tab_columns" in part:
                    for table_key, column_keys in _COLUMN_GROUP.findall(part):
                        table = binds[table_key]
                        for key in re.findall(r":(\w+)", column_keys):
                            if binds[key] in self.columns.get(table, set()):
                                rows.append(("COLUMN", f"{table}.{binds[key]}"))
                else:
                    raise AssertionError(f"unexpected inventory part: {part}")
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
        if head.startswith("UPDATE"):
            self.dml.append(text)
            return 0
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


def _in_run_order(manager: SchemaManager, first: int, last: int = SCHEMA_VERSION) -> list[Statement]:
    """The statements of versions ``first..last`` in the order the manager runs them: the named
    objects in file order, then the statements that create nothing nameable, in file order."""
    named = [o.statement for o in manager.objects if first <= o.version <= last]
    named_sql = {s.sql for s in named}
    rest = [s for v in range(first, last + 1) for s in manager.load_ddl(v) if s.sql not in named_sql]
    return [*named, *rest]


def _all_ddl(manager: SchemaManager) -> list[Statement]:
    return _in_run_order(manager, 1)


def _every_statement(manager: SchemaManager) -> list[Statement]:
    statements = [manager.registry_ddl(), *_all_ddl(manager)]
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
    statements = [*_all_ddl(manager), manager.vector_index_ddl(), *manager.drop_statements()]
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
    added: dict[str, set[str]] = {}
    for obj in manager.objects:
        if obj.kind == "COLUMNS":
            added.setdefault(obj.base, set()).update(c.lower() for c in obj.columns)

    def columns_of(table: str) -> set[str]:
        """The table's columns once every version is applied: created, then added."""
        body = ddl[table].split("(", 1)[1]
        return {
            line.split()[0].lower()
            for line in body.splitlines()
            if line.strip() and not line.strip().startswith(("CONSTRAINT", ")"))
        } | added.get(table, set())

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
    ddl = "\n".join(obj.statement.sql for obj in manager.objects if obj.kind in ("TABLE", "COLUMNS"))
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
    kinds = {obj.key: obj.kind for obj in manager.objects}
    assert {b for b, k in kinds.items() if k == "TABLE"} == {
        "THREAD",
        "MESSAGE",
        "MEMORY",
        "MEMORY_LINK",
        "THREAD_SUMMARY",
        "EXTRACTION_JOB",
        "STORE_SETTING",
        "RECORD_CHUNKS",
        "IMAGE",
        "CHECKPOINT",
        "CHECKPOINT_BLOB",
        "CHECKPOINT_WRITE",
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
    # version 2: the failure columns of EXTRACTION_JOB and the index of failed()
    assert kinds["EXTRACTION_JOB(FAILED_AT,FAILURE_REASON)"] == "COLUMNS"
    assert kinds["EXTRACTION_JOB_FAILED_I"] == "INDEX"
    assert [(o.key, o.version) for o in manager.objects if o.version == 2] == [
        ("EXTRACTION_JOB(FAILED_AT,FAILURE_REASON)", 2),
        ("EXTRACTION_JOB_FAILED_I", 2),
    ]
    # version 3: the image table and its index (MEMORY's type check is replaced by unnamed statements)
    assert [(o.key, o.version) for o in manager.objects if o.version == 4] == [("IMAGE", 4), ("IMAGE_MESSAGE_I", 4)]
    # version 5: the checkpoint tables (D41) and the index of deletes by run
    assert [(o.key, o.version) for o in manager.objects if o.version == 5] == [
        ("CHECKPOINT", 5), ("CHECKPOINT_RUN_I", 5), ("CHECKPOINT_BLOB", 5), ("CHECKPOINT_WRITE", 5),
    ]
    assert {o.version for o in manager.objects} == {1, 2, 4, 5}  # version 3 creates nothing nameable


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
        ({"embedding_dimension": 384, "vector_index": "ivf"}, StoreConfig(384, "ivf", SCHEMA_VERSION)),
        ('{"embedding_dimension": null, "vector_index": "hnsw"}', StoreConfig(None, "hnsw", SCHEMA_VERSION)),
        (b'{"embedding_dimension": 3}', StoreConfig(3, "none", SCHEMA_VERSION)),
        (
            {"embedding_dimension": 384.0, "vector_index": "none", "other": 1},
            StoreConfig(384, "none", SCHEMA_VERSION),
        ),
        (None, StoreConfig(None, "none", SCHEMA_VERSION)),
    ],
)
def test_parse_config(value: Any, expected: StoreConfig) -> None:
    assert parse_config(value) == expected
    assert SchemaManager.parse_config(value, schema_version=SCHEMA_VERSION) == expected
    assert parse_config(value, schema_version=1).schema_version == 1


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
    assert config == StoreConfig(dimension=384, vector_index="hnsw", schema_version=SCHEMA_VERSION)
    ddl = _ddl_calls(connection)
    assert ddl[0].startswith('CREATE TABLE "PALIMPSEST_STORES"')
    assert ddl[1:-1] == [s.sql for s in _all_ddl(manager)]
    assert oracle.registry["ACME"]["version"] == SCHEMA_VERSION
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
    assert config == StoreConfig(dimension=32, vector_index="ivf", schema_version=SCHEMA_VERSION)
    assert oracle.config_of(manager.names)["embedding_dimension"] == 32
    assert _ddl_calls(connection) == []  # not even the vector index
    assert connection.log[-1].kind == "commit"


def test_require_existing_uses_the_registry_dimension_when_none_is_given() -> None:
    oracle = FakeOracle()
    manager = _manager()
    oracle.install(manager, vector_index=True)
    oracle.register(manager.names, dimension=384)
    config = manager.ensure(oracle.connection(), SchemaPolicy.REQUIRE_EXISTING, dimension=None)
    assert config == StoreConfig(dimension=384, vector_index="hnsw", schema_version=SCHEMA_VERSION)


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
    assert config == StoreConfig(dimension=None, vector_index="hnsw", schema_version=SCHEMA_VERSION)
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
    assert config == StoreConfig(dimension=None, vector_index="ivf", schema_version=SCHEMA_VERSION)
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
    assert manager.ensure(connection, SchemaPolicy.CREATE_IF_NECESSARY, dimension=None).schema_version == SCHEMA_VERSION


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


@pytest.mark.parametrize("policy", CHECKING_POLICIES)
def test_a_newer_schema_version_is_refused(policy: SchemaPolicy) -> None:
    oracle = FakeOracle()
    manager = _manager("acme")
    oracle.install(manager)
    oracle.register(manager.names, version=SCHEMA_VERSION + 1)
    connection = oracle.connection()
    with pytest.raises(SchemaVersionError, match="newer"):
        manager.ensure(connection, policy, dimension=None)
    assert _ddl_calls(connection) == []


@pytest.mark.parametrize("installed", ["nothing", "complete", "newer", "older", "partial"])
def test_no_check_sends_no_statement_whatever_the_database_holds(installed: str) -> None:
    oracle = FakeOracle()
    manager = _manager("acme")
    if installed != "nothing":
        version = {"newer": SCHEMA_VERSION + 1, "older": 1}.get(installed, SCHEMA_VERSION)
        oracle.install(manager, skip={"MEMORY_GRAPH"} if installed == "partial" else set())
        oracle.register(manager.names, version=version, dimension=16)
    before = (set(oracle.tables), dict(oracle.indexes), set(oracle.graphs), json.dumps(oracle.registry))
    connection = oracle.connection()
    config = manager.ensure(connection, SchemaPolicy.NO_CHECK, dimension=8)
    assert connection.log == []  # no dictionary query, no registry read, no DDL, no commit
    assert config == StoreConfig(dimension=8, vector_index="hnsw", schema_version=SCHEMA_VERSION)
    assert (set(oracle.tables), dict(oracle.indexes), set(oracle.graphs), json.dumps(oracle.registry)) == before
    assert manager.ensure(None, "no_check", dimension=None).dimension is None  # no connection needed at all
    assert manager.ensure(None, "NO_CHECK", dimension=None).vector_index == "hnsw"


def test_no_check_still_validates_its_own_arguments() -> None:
    with pytest.raises(ConfigurationError):
        _manager().ensure(None, SchemaPolicy.NO_CHECK, dimension=0)
    assert SchemaPolicy("no_check") is SchemaPolicy.NO_CHECK


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
    assert config == StoreConfig(dimension=768, vector_index="hnsw", schema_version=SCHEMA_VERSION)
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


@pytest.mark.parametrize("policy", CHECKING_POLICIES)
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


# --- versions and upgrades ------------------------------------------------------------------------


def _v2_sql(manager: SchemaManager) -> list[str]:
    """What upgrading a version 1 store runs: the files after version 1, in order (the unnamed
    statements of version 3 come last in its file, and run after the named objects)."""
    return [s.sql for s in _in_run_order(manager, 2)]


def _v3_sql(manager: SchemaManager) -> list[str]:
    """What upgrading a version 2 store runs: the files of versions 3.. in order."""
    return [s.sql for s in _in_run_order(manager, 3)]


_PROFILE_TYPES = ("'user_profile'", "'agent_profile'")


def test_version_3_lets_the_record_table_hold_profiles() -> None:
    """Schema version 3 replaces version 1's check on MEMORY.memory_type by one that admits the
    two profile types, keeping its name; a fresh store gets it from the start."""
    manager = _manager("acme")
    drop, add = manager.load_ddl(3)
    assert " ".join(drop.sql.split()) == 'ALTER TABLE "ACME_MEMORY" DROP CONSTRAINT "ACME_MEMORY_TYPE_CK"'
    assert " ".join(add.sql.split()) == (
        'ALTER TABLE "ACME_MEMORY" ADD CONSTRAINT "ACME_MEMORY_TYPE_CK" CHECK (memory_type IN '
        "('memory', 'fact', 'guideline', 'preference', 'user_profile', 'agent_profile'))"
    )
    assert [o for o in manager.objects if o.version == 3] == []  # nothing nameable: run once per upgrade
    fresh = FakeOracle()
    assert manager.ensure(fresh.connection(), SchemaPolicy.CREATE_IF_NECESSARY, dimension=None).schema_version == SCHEMA_VERSION
    assert all(t in fresh.checks["ACME_MEMORY_TYPE_CK"] for t in _PROFILE_TYPES)


def test_upgrading_a_version_2_store_replaces_the_type_check_once() -> None:
    oracle = FakeOracle()
    manager = _manager("acme")
    oracle.install(manager, version=2)
    oracle.register(manager.names, version=2)
    assert not any(t in oracle.checks["ACME_MEMORY_TYPE_CK"] for t in _PROFILE_TYPES)
    connection = oracle.connection()
    with pytest.raises(SchemaVersionError, match=f"needs an upgrade to {SCHEMA_VERSION}"):
        manager.ensure(connection, SchemaPolicy.REQUIRE_EXISTING, dimension=None)
    assert _ddl_calls(connection) == []
    connection = oracle.connection()
    assert manager.ensure(connection, SchemaPolicy.CREATE_IF_NECESSARY, dimension=None).schema_version == SCHEMA_VERSION
    assert _ddl_calls(connection) == _v3_sql(manager)
    assert all(t in oracle.checks["ACME_MEMORY_TYPE_CK"] for t in _PROFILE_TYPES)
    assert oracle.registry["ACME"]["version"] == SCHEMA_VERSION
    again = oracle.connection()
    assert manager.ensure(again, SchemaPolicy.CREATE_IF_NECESSARY, dimension=None).schema_version == SCHEMA_VERSION
    assert _ddl_calls(again) == []


def test_statements_from_ddl_reads_the_columns_an_alter_table_adds() -> None:
    text = "ALTER TABLE {T} ADD (\n  a_b  NUMBER(10, 2) DEFAULT 0,\n  c    TIMESTAMP(6) WITH TIME ZONE\n)"
    (obj,) = statements_from_ddl(text, {"T": '"T"'}, prefix="v5")
    assert (obj.base, obj.kind, obj.columns, obj.key) == ("T", "COLUMNS", ("A_B", "C"), "T(A_B,C)")
    assert obj.statement.name == "v5_add_t_columns"
    assert obj.statement.sql.startswith('ALTER TABLE "T" ADD (')
    # any other statement creates nothing nameable
    (other,) = statements_from_ddl("UPDATE {T} SET x = 0", {"T": '"T"'}, prefix="v5")
    assert (other.base, other.kind, other.statement.name) == ("", "", "v5_1")


@pytest.mark.parametrize(
    "text",
    [
        'ALTER TABLE {T} ADD ("quoted" NUMBER)',
        "ALTER TABLE {T} ADD (lonely)",
        "ALTER TABLE {T} ADD (x NUMBER, x NUMBER)",
        "ALTER TABLE {T} ADD (CONSTRAINT t_ck CHECK (x > 0))",
    ],
)
def test_statements_from_ddl_refuses_columns_it_cannot_name(text: str) -> None:
    with pytest.raises(ConfigurationError):
        statements_from_ddl(text, {"T": '"T"'}, prefix="v5")


def test_version_2_adds_the_failure_columns_and_their_index() -> None:
    manager = _manager("acme")
    alter, index = manager.load_ddl(2)
    assert alter.name == "v2_add_extraction_job_columns"
    assert " ".join(alter.sql.split()) == (
        'ALTER TABLE "ACME_EXTRACTION_JOB" ADD ( failed_at TIMESTAMP(6) WITH TIME ZONE, failure_reason CLOB )'
    )
    assert index.sql == 'CREATE INDEX "ACME_EXTRACTION_JOB_FAILED_I" ON "ACME_EXTRACTION_JOB" (failed_at)'
    # failed_at has the type of the table's other times
    job_table = next(s.sql for s in manager.load_ddl(1) if s.name == "v1_create_extraction_job")
    assert "claimed_until  TIMESTAMP(6) WITH TIME ZONE," in job_table


def test_a_fresh_store_gets_the_failure_columns() -> None:
    oracle = FakeOracle()
    manager = _manager("acme")
    config = manager.ensure(oracle.connection(), SchemaPolicy.CREATE_IF_NECESSARY, dimension=None)
    assert config.schema_version == SCHEMA_VERSION == 5
    assert {"FAILED_AT", "FAILURE_REASON", "CLAIMED_UNTIL"} <= oracle.columns["ACME_EXTRACTION_JOB"]
    assert oracle.indexes["ACME_EXTRACTION_JOB_FAILED_I"] == ("ACME_EXTRACTION_JOB", "NORMAL")
    assert oracle.registry["ACME"]["version"] == SCHEMA_VERSION
    assert "EXTRACTION_JOB(FAILED_AT,FAILURE_REASON)" in manager.present_objects(oracle.connection())


def test_upgrading_a_version_1_store_adds_the_columns_and_records_the_current_version() -> None:
    oracle = FakeOracle()
    manager = _manager("acme")
    oracle.install(manager, version=1, vector_index=True)
    oracle.register(manager.names, version=1, dimension=4)
    assert "FAILED_AT" not in oracle.columns["ACME_EXTRACTION_JOB"]
    # check (REQUIRE_EXISTING) and CREATE_IF_EMPTY refuse the old version without any DDL
    for policy in (SchemaPolicy.REQUIRE_EXISTING, SchemaPolicy.CREATE_IF_EMPTY):
        connection = oracle.connection()
        with pytest.raises(SchemaVersionError, match=f"needs an upgrade to {SCHEMA_VERSION}"):
            manager.ensure(connection, policy, dimension=None)
        assert _ddl_calls(connection) == []
    # upgrade (CREATE_IF_NECESSARY): version 2's file, then version 3's, then the registry row
    connection = oracle.connection()
    config = manager.ensure(connection, SchemaPolicy.CREATE_IF_NECESSARY, dimension=None)
    assert config == StoreConfig(dimension=4, vector_index="hnsw", schema_version=SCHEMA_VERSION)
    assert _ddl_calls(connection) == _v2_sql(manager)
    assert {"FAILED_AT", "FAILURE_REASON"} <= oracle.columns["ACME_EXTRACTION_JOB"]
    assert "ACME_EXTRACTION_JOB_FAILED_I" in oracle.indexes
    assert oracle.registry["ACME"]["version"] == SCHEMA_VERSION
    kinds = [c.kind for c in connection.log]
    update = next(i for i, c in enumerate(connection.log) if c.binds and c.binds.get("schema_version") == SCHEMA_VERSION)
    assert "commit" in kinds[update:]  # the new version is committed
    # done once: opening again runs no DDL, and the check passes
    for policy in (SchemaPolicy.CREATE_IF_NECESSARY, SchemaPolicy.REQUIRE_EXISTING):
        again = oracle.connection()
        assert manager.ensure(again, policy, dimension=None).schema_version == SCHEMA_VERSION
        assert _ddl_calls(again) == []


def test_upgrading_accepts_columns_another_process_added_meanwhile() -> None:
    oracle = FakeOracle()
    manager = _manager()
    oracle.install(manager, version=1)
    oracle.register(manager.names, version=1)
    connection = oracle.connection()
    real = oracle.respond

    def racing(sql: str, binds: dict[str, Any]) -> Any:
        if sql.startswith("ALTER TABLE") and " ADD (" in " ".join(sql.split()):
            real(sql, binds)  # the other process wins
            return RuntimeError("ORA-01430: column being added already exists in table")
        return real(sql, binds)

    connection.responder = racing
    assert manager.ensure(connection, SchemaPolicy.CREATE_IF_NECESSARY, dimension=None).schema_version == SCHEMA_VERSION
    assert "EXTRACTION_JOB_FAILED_I" in oracle.indexes
    assert oracle.registry["__DEFAULT__"]["version"] == SCHEMA_VERSION


def test_a_store_with_only_some_of_the_added_columns_is_refused_clearly() -> None:
    oracle = FakeOracle()
    manager = _manager("acme")
    oracle.install(manager, version=1)
    oracle.register(manager.names, version=1)
    oracle.columns["ACME_EXTRACTION_JOB"].add("FAILED_AT")  # added by hand, half way
    with pytest.raises(SchemaVersionError) as caught:
        manager.ensure(oracle.connection(), SchemaPolicy.CREATE_IF_NECESSARY, dimension=None)
    message = str(caught.value)
    assert "FAILED_AT" in message and "FAILURE_REASON" in message
    assert "0002_extraction_job_failures.sql" in message
    assert oracle.registry["ACME"]["version"] == 1  # not recorded as upgraded


def test_the_check_reports_missing_columns_and_create_if_necessary_repairs_them() -> None:
    oracle = FakeOracle()
    manager = _manager("acme")
    oracle.install(manager, skip={"EXTRACTION_JOB(FAILED_AT,FAILURE_REASON)"})
    oracle.register(manager.names)  # registered at version 2, yet the columns are not there
    connection = oracle.connection()
    with pytest.raises(SchemaVersionError) as caught:
        manager.ensure(connection, SchemaPolicy.REQUIRE_EXISTING, dimension=None)
    assert "ACME_EXTRACTION_JOB.FAILED_AT, ACME_EXTRACTION_JOB.FAILURE_REASON (columns)" in str(caught.value)
    assert _ddl_calls(connection) == []
    with pytest.raises(SchemaVersionError, match="partial schema"):
        manager.ensure(oracle.connection(), SchemaPolicy.CREATE_IF_EMPTY, dimension=None)
    repair = oracle.connection()
    manager.ensure(repair, SchemaPolicy.CREATE_IF_NECESSARY, dimension=None)
    assert _ddl_calls(repair) == [_v2_sql(manager)[0]]
    assert (
        manager.ensure(oracle.connection(), SchemaPolicy.REQUIRE_EXISTING, dimension=None).schema_version
        == SCHEMA_VERSION
    )


def test_a_recreated_job_table_gets_its_version_2_columns_again() -> None:
    oracle = FakeOracle()
    manager = _manager()
    oracle.install(manager)
    oracle.register(manager.names)
    oracle.respond('DROP TABLE "EXTRACTION_JOB" CASCADE CONSTRAINTS PURGE', {})
    connection = oracle.connection()
    manager.ensure(connection, SchemaPolicy.CREATE_IF_NECESSARY, dimension=None)
    v1 = [s.sql for s in manager.load_ddl(1) if s.name.startswith("v1_create_extraction_job")]
    assert _ddl_calls(connection) == [*v1, *(s.sql for s in manager.load_ddl(2))]
    assert {"FAILED_AT", "FAILURE_REASON"} <= oracle.columns["EXTRACTION_JOB"]


def test_recreate_builds_every_version_and_drop_needs_no_column_statement() -> None:
    oracle = FakeOracle()
    manager = _manager("acme")
    oracle.install(manager, version=1)
    oracle.register(manager.names, version=1)
    connection = oracle.connection()
    assert manager.ensure(connection, SchemaPolicy.RECREATE, dimension=None).schema_version == SCHEMA_VERSION
    created = [s for s in _ddl_calls(connection) if not s.startswith("DROP")]
    assert created == [s.sql for s in _all_ddl(manager)]
    assert not any(s.startswith("DROP") and "FAILED" in s for s in _ddl_calls(connection))
    assert all(not s.sql.startswith("ALTER") for s in manager.drop_statements())


def test_an_upgrade_over_several_versions_applies_each_file_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """Upgrading from 1 to N: the objects of files 2..N in file order, then their other
    statements (the replaced check of version 3, data fixes), then version N in the registry row."""
    later = SCHEMA_VERSION + 1
    made_up = (
        "-- a later version, for this test only\n"
        "CREATE INDEX {THREAD_SUMMARY_THREAD_I} ON {THREAD_SUMMARY} (created_at)\n"
        "/\n"
        "UPDATE {EXTRACTION_JOB} SET attempts = 0 WHERE attempts < 0\n"
    )
    real_files, real_read = schema_module._version_files, schema_module._read_ddl_file
    monkeypatch.setattr(schema_module, "SCHEMA_VERSION", later)
    monkeypatch.setattr(schema_module, "_version_files", lambda: {**real_files(), later: "9999_test.sql"})
    monkeypatch.setattr(
        schema_module,
        "_read_ddl_file",
        lambda name: made_up if name == "9999_test.sql" else real_read(name),
    )
    oracle = FakeOracle()
    manager = _manager("acme")
    assert [o.version for o in manager.objects][-9:] == [2, 2, 4, 4, 5, 5, 5, 5, later]
    named = {o.statement.sql for o in manager.objects}
    v3_checks = [s.sql for v in (3, 4) for s in manager.load_ddl(v) if s.sql not in named]
    assert [c.split()[3] for c in v3_checks] == ["DROP", "ADD", "DROP", "ADD"]
    oracle.install(manager, version=1)
    oracle.register(manager.names, version=1)
    connection = oracle.connection()
    assert manager.ensure(connection, SchemaPolicy.CREATE_IF_NECESSARY, dimension=None).schema_version == later
    named_after_1 = [o.statement.sql for o in manager.objects if o.version > 1]
    assert _ddl_calls(connection) == [*named_after_1, *v3_checks]
    assert oracle.dml == ['UPDATE "ACME_EXTRACTION_JOB" SET attempts = 0 WHERE attempts < 0']
    assert oracle.registry["ACME"]["version"] == later
    # a store already at 5 runs only the made-up file; at the made-up version, nothing
    oracle_3 = FakeOracle()
    oracle_3.install(manager, version=5)
    oracle_3.register(manager.names, version=5)
    connection = oracle_3.connection()
    manager.ensure(connection, SchemaPolicy.CREATE_IF_NECESSARY, dimension=None)
    assert _ddl_calls(connection) == [manager.load_ddl(later)[0].sql]
    assert len(oracle_3.dml) == 1 and oracle_3.registry["ACME"]["version"] == later
    again = oracle_3.connection()
    manager.ensure(again, SchemaPolicy.CREATE_IF_NECESSARY, dimension=None)
    assert _ddl_calls(again) == [] and len(oracle_3.dml) == 1
    # a fresh store runs every file, its data fixes included
    fresh = FakeOracle()
    manager.ensure(fresh.connection(), SchemaPolicy.CREATE_IF_EMPTY, dimension=None)
    assert len(fresh.dml) == 1 and fresh.registry["ACME"]["version"] == later


def test_version_5_adds_the_checkpoint_tables_keyed_without_empty_strings() -> None:
    manager = _manager("acme")
    checkpoint, run_index, blob, write = manager.load_ddl(5)
    assert [s.name for s in (checkpoint, run_index, blob, write)] == [
        "v5_create_checkpoint", "v5_create_checkpoint_run_i", "v5_create_checkpoint_blob", "v5_create_checkpoint_write",
    ]
    assert 'CONSTRAINT "ACME_CHECKPOINT_PK" PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)' in checkpoint.sql
    assert "metadata              JSON NOT NULL" in checkpoint.sql and "checkpoint_data       BLOB," in checkpoint.sql
    assert 'ON "ACME_CHECKPOINT" (run_id)' in run_index.sql
    assert "PRIMARY KEY (thread_id, checkpoint_ns, channel, channel_version)" in blob.sql
    assert "PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)" in write.sql
    # a stored namespace is never '' (Oracle's NULL): the statements store "/" + namespace
    assert st.checkpoint_get(manager.names, "t", "", None).binds["checkpoint_ns"] == "/"


def test_upgrading_a_version_4_store_creates_only_the_checkpoint_objects() -> None:
    oracle = FakeOracle()
    manager = _manager("acme")
    oracle.install(manager, version=4)
    oracle.register(manager.names, version=4)
    connection = oracle.connection()
    assert manager.ensure(connection, SchemaPolicy.CREATE_IF_NECESSARY, dimension=None).schema_version == 5
    assert _ddl_calls(connection) == [s.sql for s in manager.load_ddl(5)]
    assert oracle.registry["ACME"]["version"] == 5


def test_version_4_adds_the_image_table_and_lets_memory_hold_images() -> None:
    manager = _manager("acme")
    table, index, drop, add = manager.load_ddl(4)
    assert table.name == "v4_create_image" and "image_bytes  BLOB NOT NULL" in table.sql
    assert 'REFERENCES "ACME_MEMORY" (record_id) ON DELETE CASCADE' in table.sql
    assert index.sql == 'CREATE INDEX "ACME_IMAGE_MESSAGE_I" ON "ACME_IMAGE" (message_id, part_seq)'
    assert drop.sql == 'ALTER TABLE "ACME_MEMORY" DROP CONSTRAINT "ACME_MEMORY_TYPE_CK"'
    assert "'image'" in add.sql and "'user_profile'" in add.sql and 'ADD CONSTRAINT "ACME_MEMORY_TYPE_CK"' in add.sql
    # a fresh store and an upgraded one both get the replaced check, once, after the table
    for version in (None, 2):
        oracle = FakeOracle()
        if version is not None:
            oracle.install(manager, version=version)
            oracle.register(manager.names, version=version)
        manager.ensure(oracle.connection(), SchemaPolicy.CREATE_IF_NECESSARY, dimension=None)
        assert oracle.constraint_changes == [("DROP", "ACME_MEMORY_TYPE_CK"), ("ADD", "ACME_MEMORY_TYPE_CK")] * 2  # v3, v4
        assert "ACME_IMAGE" in oracle.tables and oracle.registry["ACME"]["version"] == SCHEMA_VERSION
        manager.ensure(oracle.connection(), SchemaPolicy.CREATE_IF_NECESSARY, dimension=None)
        assert len(oracle.constraint_changes) == 4  # not run again
