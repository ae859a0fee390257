"""Adapters layer (Oracle): the schema manager (versioned DDL files, the store registry, schema policies).

One :class:`SchemaManager` serves one store (one :class:`StoreNames`). It reads the DDL of
schema version ``N`` from ``ddl/NNNN_*.sql`` (``{BASE}`` placeholders filled with the store's
quoted, prefixed names), finds which of the store's objects exist in the data dictionary
(``USER_TABLES``, ``USER_INDEXES``, ``USER_PROPERTY_GRAPHS``, and ``USER_TAB_COLUMNS`` for the
columns a later version adds; names always bound, never formatted into SQL), and applies a
:class:`~.policy.SchemaPolicy`:

* ``REQUIRE_EXISTING`` validates only (no DDL) and raises ``SchemaVersionError`` naming what is
  missing;
* ``CREATE_IF_EMPTY`` creates everything when none of the store's objects exists, accepts a
  complete store, and refuses a partial one;
* ``CREATE_IF_NECESSARY`` creates the registry and every missing object, one by one, and so
  upgrades a store of an older version (a newer stored version is refused);
* ``RECREATE`` drops every object of this store (never another store's, never the registry
  table), forgets its registry row, and creates everything again.

Versions. The objects of a store are those the files of versions 1..``SCHEMA_VERSION`` create,
in file order: ``CREATE TABLE|INDEX|PROPERTY GRAPH {NAME}`` (present when the dictionary lists
``NAME``) and ``ALTER TABLE {TABLE} ADD (column type, ...)`` (present when ``USER_TAB_COLUMNS``
lists every column it adds). A store of version ``v`` lacks the objects of the files after ``v``,
so upgrading it to ``SCHEMA_VERSION`` is creating what is missing, in file order, then running
the other statements of those files once (those that create or add nothing nameable, such as a
data fix; none so far), then recording the new version in the registry row. A fresh store is
created the same way, from version 1. Version 2 (``0002_extraction_job_failures.sql``) adds the
failure columns of ``EXTRACTION_JOB`` and their index. Version 3
(``0003_profile_record_types.sql``) replaces the check on ``MEMORY.memory_type`` by one that
admits the profile types: two statements that create nothing nameable, the first of that kind. Version 4 (``0004_images.sql``) adds the
``IMAGE`` table and lets ``MEMORY`` hold image rows (its type check is replaced again: the one
statement pair run once, after the table). Version 5 (``0005_checkpoints.sql``) adds the graph
checkpoint tables (D41) and their run index.

The registry table ``PALIMPSEST_STORES`` (``ddl/registry.sql``) holds one row per store; its
``store_config`` JSON carries the embedding dimension (``null`` until known) and the vector
index kind. The vector index is created by code, not by the DDL file, once the dimension is
known: Oracle accepts a vector index on the flexible ``VECTOR(*, FLOAT32)`` column as long as
every stored vector has the same dimension, which the adapter enforces before any write.

Oracle DDL commits implicitly, so :meth:`SchemaManager.ensure` and the other DDL methods must be
given a connection with no work of its own in progress; the registry writes they make are
committed by them. The DML builders (:meth:`SchemaManager.select_config`,
:meth:`SchemaManager.set_dimension`) never commit: repositories run them inside their own
transactions.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any, Final

from palimpsest.domain.errors import ConfigurationError, SchemaVersionError

from .codec import DIALECT
from .names import REGISTRY_TABLE, StoreNames, quote
from .policy import SchemaPolicy
from .sql import Statement, fetch_all, fetch_one, run

log = logging.getLogger("palimpsest.adapters.oracle")

__all__ = [
    "LIFECYCLE_STATES",
    "MAX_DIMENSION",
    "SCHEMA_VERSION",
    "VECTOR_INDEX_KINDS",
    "SchemaManager",
    "SchemaObject",
    "StoreConfig",
    "parse_config",
    "statements_from_ddl",
]

SCHEMA_VERSION: Final = 5
VECTOR_INDEX_KINDS: Final = ("hnsw", "ivf", "none")
LIFECYCLE_STATES: Final = ("CREATING", "CREATED", "DROPPING")
MAX_DIMENSION: Final = 65535
"""Oracle's largest dimension count for a non-BINARY vector."""

_DDL_PACKAGE: Final = "palimpsest.adapters.oracle"
_DDL_FOLDER: Final = "ddl"
_REGISTRY_FILE: Final = "registry.sql"
_VERSION_FILE: Final = re.compile(r"(\d{4})_[A-Za-z0-9_]+\.sql")
_PLACEHOLDER: Final = re.compile(r"\{([^{}]*)\}")
_CREATE: Final = re.compile(
    r"CREATE\s+(?:UNIQUE\s+|VECTOR\s+)?(TABLE|INDEX|PROPERTY\s+GRAPH)\s+\{([A-Z][A-Z0-9_]*)\}",
    re.IGNORECASE,
)
_VECTOR_INDEX: Final = "RECORD_CHUNKS_EMBEDDING_VEC_I"
_CHUNKS: Final = "RECORD_CHUNKS"
_GRAPH: Final = "MEMORY_GRAPH"
_GRAPH_TABLES: Final = frozenset({"MEMORY", "MEMORY_LINK"})
_DIMENSION_KEY: Final = "embedding_dimension"
_INDEX_KEY: Final = "vector_index"
_ADD_COLUMNS: Final = re.compile(
    r"ALTER\s+TABLE\s+\{([A-Z][A-Z0-9_]*)\}\s+ADD\s*\((.*)\)\s*",
    re.IGNORECASE | re.DOTALL,
)
_COLUMN_NAME: Final = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_NOT_COLUMNS: Final = frozenset({"CONSTRAINT", "PRIMARY", "UNIQUE", "FOREIGN", "CHECK", "PERIOD"})
_COLUMNS: Final = "COLUMNS"
_KIND_LABELS: Final = {
    "TABLE": "table",
    "INDEX": "index",
    "PROPERTY GRAPH": "property graph",
    _COLUMNS: "columns",
}


# --- values ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StoreConfig:
    """What the registry says about a store: its embedding dimension (``None`` until the first
    vector fixes it), the kind of vector index it uses once the dimension is known (``"hnsw"``,
    ``"ivf"`` or ``"none"``) and its schema version."""

    dimension: int | None
    vector_index: str
    schema_version: int


@dataclass(frozen=True, slots=True)
class SchemaObject:
    """One object a DDL statement creates: its base name, its kind and the statement.

    ``kind`` is a dictionary kind (``"TABLE"``, ``"INDEX"`` or ``"PROPERTY GRAPH"``), or
    ``"COLUMNS"`` for ``ALTER TABLE {base} ADD (...)``, whose added column names (upper case, as
    the dictionary lists them) are ``columns``; ``""`` (with ``base`` ``""``) is a statement that
    creates nothing nameable. ``version`` is the schema version of the file it comes from."""

    base: str
    kind: str
    statement: Statement
    columns: tuple[str, ...] = ()
    version: int = 0

    @property
    def key(self) -> str:
        """How :meth:`SchemaManager.present_objects` names it: the base name, or
        ``"TABLE(COLUMN,...)"`` for added columns."""
        if self.kind == _COLUMNS:
            return f"{self.base}({','.join(self.columns)})"
        return self.base


@dataclass(frozen=True, slots=True)
class _RegistryRow:
    config: dict[str, Any]
    schema_version: int
    lifecycle_state: str


# --- helpers -----------------------------------------------------------------------------------


def _check_dimension(dimension: object, *, required: bool = False) -> int | None:
    if dimension is None and not required:
        return None
    if isinstance(dimension, bool) or not isinstance(dimension, int) or not 1 <= dimension <= MAX_DIMENSION:
        raise ConfigurationError(
            f"the embedding dimension must be an integer from 1 to {MAX_DIMENSION}, got {dimension!r}."
        )
    return dimension


def _parse_policy(policy: object) -> SchemaPolicy:
    if isinstance(policy, SchemaPolicy):
        return policy
    try:
        return SchemaPolicy(policy)
    except ValueError:
        try:
            return SchemaPolicy[str(policy).upper()]
        except KeyError:
            allowed = ", ".join(p.name for p in SchemaPolicy)
            raise ConfigurationError(
                f"Invalid schema policy: {policy!r} (expected one of {allowed})."
            ) from None


def _as_int(value: Any, what: str) -> int:
    """An integer from a fetched NUMBER or JSON number (``int``, an integral ``float`` or
    ``Decimal``, or digits); anything else is a ``SchemaVersionError`` (a corrupt registry)."""
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    if (not isinstance(value, bool) and isinstance(value, (int, float))) or type(value).__name__ == "Decimal":
        try:
            number = int(value)
        except (OverflowError, ValueError):
            number = None
        if number is not None and number == value:
            return number
    raise SchemaVersionError(f"the registry's {what} is not an integer: {value!r}.")


def parse_config(value: Any, *, schema_version: int = SCHEMA_VERSION) -> StoreConfig:
    """A :class:`StoreConfig` from a fetched ``store_config`` value (``dict``, JSON text, bytes or
    a LOB; ``None`` means an empty config) and the row's ``schema_version``."""
    decoded = DIALECT.decode_json(value)
    if decoded is None:
        decoded = {}
    if not isinstance(decoded, Mapping):
        raise SchemaVersionError(f"the registry's store_config is not a JSON object: {decoded!r}.")
    raw_dimension = decoded.get(_DIMENSION_KEY)
    dimension = None if raw_dimension is None else _as_int(raw_dimension, _DIMENSION_KEY)
    if dimension is not None and not 1 <= dimension <= MAX_DIMENSION:
        raise SchemaVersionError(f"the registry's embedding dimension is out of range: {dimension}.")
    kind = decoded.get(_INDEX_KEY, "none")
    if kind not in VECTOR_INDEX_KINDS:
        raise SchemaVersionError(f"the registry names an unknown vector index kind: {kind!r}.")
    return StoreConfig(
        dimension=dimension, vector_index=kind, schema_version=_as_int(schema_version, "schema_version")
    )


def _split_columns(body: str, number: int) -> tuple[str, ...]:
    """The column names of an ``ADD (...)`` list: the first word of each top-level item (commas
    inside a type's brackets, as in ``NUMBER(10, 2)``, do not split)."""
    items: list[str] = []
    depth = 0
    current: list[str] = []
    for char in body:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    items.append("".join(current))
    names: list[str] = []
    for item in items:
        words = item.split()
        if (
            len(words) < 2
            or not _COLUMN_NAME.fullmatch(words[0])
            or words[0].upper() in _NOT_COLUMNS
        ):
            raise ConfigurationError(
                f"DDL statement {number} adds a column this adapter cannot name: {item.strip()!r} "
                "(write 'name type' with an unquoted name)."
            )
        names.append(words[0].upper())
    if len(names) != len(set(names)):
        raise ConfigurationError(f"DDL statement {number} adds the same column twice: {names}.")
    return tuple(names)


def statements_from_ddl(text: str, placeholders: Mapping[str, str], *, prefix: str) -> list[SchemaObject]:
    """Split a DDL file into statements (separated by lines holding only ``/``; full-line ``--``
    comments dropped) and fill its ``{BASE}`` placeholders.

    Each result names the object its statement creates: ``CREATE ... {BASE}`` gives ``base``
    and a dictionary kind, ``ALTER TABLE {BASE} ADD (c1 type, ...)`` gives ``base`` (the table),
    kind ``"COLUMNS"`` and the column names; any other statement has ``base`` ``""``. Statement
    names are ``<prefix>_create_<base>``, ``<prefix>_add_<base>_columns`` or ``<prefix>_<n>``. An
    unknown or malformed placeholder raises ``ConfigurationError``.
    """
    chunks: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.strip() == "/":
            chunks.append([])
        elif not line.lstrip().startswith("--"):
            chunks[-1].append(line.rstrip())
    objects: list[SchemaObject] = []
    for number, lines in enumerate(chunks, start=1):
        raw = "\n".join(lines).strip()
        if not raw:
            continue
        match = _CREATE.match(raw)
        added = None if match else _ADD_COLUMNS.fullmatch(raw)
        base = match.group(2) if match else added.group(1) if added else ""
        kind = re.sub(r"\s+", " ", match.group(1).upper()) if match else _COLUMNS if added else ""
        added_columns = _split_columns(added.group(2), number) if added else ()

        unknown = sorted({key for key in _PLACEHOLDER.findall(raw) if key not in placeholders})
        if unknown:
            raise ConfigurationError(f"DDL statement {number} names unknown objects: {unknown}.")
        sql = _PLACEHOLDER.sub(lambda found: placeholders[found.group(1)], raw)
        if "{" in sql or "}" in sql:
            raise ConfigurationError(f"DDL statement {number} holds an unbalanced placeholder brace.")
        if added:
            name = f"{prefix}_add_{base.lower()}_columns"
        else:
            name = f"{prefix}_create_{base.lower()}" if base else f"{prefix}_{number}"
        objects.append(
            SchemaObject(base=base, kind=kind, statement=Statement(name, sql), columns=added_columns)
        )
    names = [o.statement.name for o in objects]
    if len(names) != len(set(names)):
        raise ConfigurationError(f"a DDL file creates the same object twice: {sorted(names)}.")
    return objects


def _read_ddl_file(file_name: str) -> str:
    return resources.files(_DDL_PACKAGE).joinpath(_DDL_FOLDER, file_name).read_text(encoding="utf-8")


def _version_files() -> dict[int, str]:
    folder = resources.files(_DDL_PACKAGE).joinpath(_DDL_FOLDER)
    found: dict[int, str] = {}
    for entry in folder.iterdir():
        match = _VERSION_FILE.fullmatch(entry.name)
        if match:
            version = int(match.group(1))
            if version in found:
                raise ConfigurationError(f"two DDL files for schema version {version}.")
            found[version] = entry.name
    return found


# --- the manager -------------------------------------------------------------------------------


class SchemaManager:
    """Creates, validates, upgrades and drops the objects of one store, and keeps its registry row.

    ``vector_index`` is the kind of vector index built once the dimension is known: ``"hnsw"``
    (in-memory neighbour graph, the default), ``"ivf"`` (neighbour partitions) or ``"none"``
    (exact search only). ``target_accuracy`` (1 to 100) goes into the index DDL.
    """

    SCHEMA_VERSION: Final = SCHEMA_VERSION
    parse_config = staticmethod(parse_config)

    def __init__(self, names: StoreNames, *, vector_index: str = "hnsw", target_accuracy: int = 95) -> None:
        if not isinstance(names, StoreNames):
            raise ConfigurationError("SchemaManager needs the store's StoreNames.")
        if vector_index not in VECTOR_INDEX_KINDS:
            raise ConfigurationError(
                f"Invalid vector index kind: {vector_index!r} (expected one of {', '.join(VECTOR_INDEX_KINDS)})."
            )
        if (
            isinstance(target_accuracy, bool)
            or not isinstance(target_accuracy, int)
            or not 1 <= target_accuracy <= 100
        ):
            raise ConfigurationError(
                f"target_accuracy must be an integer from 1 to 100, got {target_accuracy!r}."
            )
        self.names = names
        self.vector_index = vector_index
        self.target_accuracy = target_accuracy
        loaded = [obj for version in range(1, SCHEMA_VERSION + 1) for obj in self._load(version)]
        self._objects = tuple(obj for obj in loaded if obj.kind)
        self._unnamed = tuple(obj for obj in loaded if not obj.kind)

    def __repr__(self) -> str:
        return f"SchemaManager({self.names!r}, vector_index={self.vector_index!r})"

    # --- DDL text -------------------------------------------------------------------------------

    def _load(self, version: int) -> list[SchemaObject]:
        files = _version_files()
        if version not in files:
            raise SchemaVersionError(f"there is no DDL file for schema version {version}.")
        objects = statements_from_ddl(
            _read_ddl_file(files[version]), self.names.placeholders(), prefix=f"v{version}"
        )
        return [replace(obj, version=version) for obj in objects]

    def load_ddl(self, version: int) -> list[Statement]:
        """The statements of schema version ``version``'s DDL file, for this store."""
        return [obj.statement for obj in self._load(version)]

    @property
    def objects(self) -> tuple[SchemaObject, ...]:
        """Every object the DDL files of versions 1..SCHEMA_VERSION create (tables, indexes, the
        property graph, added columns), in creation order; statements that create nothing
        nameable are not objects (see :meth:`_upgrade`)."""
        return self._objects

    def registry_ddl(self) -> Statement:
        """``CREATE TABLE PALIMPSEST_STORES`` (shared by every store of the schema)."""
        placeholders = {
            "REGISTRY": self.names.registry,
            "REGISTRY_PK": quote(f"{REGISTRY_TABLE}_PK"),
            "REGISTRY_STATE_CK": quote(f"{REGISTRY_TABLE}_STATE_CK"),
        }
        (obj,) = statements_from_ddl(_read_ddl_file(_REGISTRY_FILE), placeholders, prefix="registry")
        return Statement("create_registry", obj.statement.sql)

    def vector_index_ddl(self) -> Statement:
        """``CREATE VECTOR INDEX`` on ``RECORD_CHUNKS.embedding`` for the configured kind (cosine
        distance, the configured target accuracy). DDL takes no binds: the accuracy is an integer
        validated by the constructor."""
        index, table = self.names.table(_VECTOR_INDEX), self.names.table(_CHUNKS)
        if self.vector_index == "hnsw":
            organization = "ORGANIZATION INMEMORY NEIGHBOR GRAPH"
        elif self.vector_index == "ivf":
            organization = "ORGANIZATION NEIGHBOR PARTITIONS"
        else:
            raise ConfigurationError("this store is configured without a vector index (vector_index='none').")
        sql = (
            f"CREATE VECTOR INDEX {index} ON {table} (embedding)\n"
            f"    {organization}\n"
            f"    DISTANCE COSINE\n"
            f"    WITH TARGET ACCURACY {int(self.target_accuracy)}"
        )
        return Statement(f"create_vector_index_{self.vector_index}", sql)

    def drop_statements(self, present: Iterable[str] | None = None) -> list[Statement]:
        """The statements that drop this store's objects (only those named in ``present``, every
        one when ``None``): the property graph first, then the tables, children first, with
        ``CASCADE CONSTRAINTS PURGE`` (their indexes, the Text and vector indexes included, go
        with them). Never the registry table, never another store's objects."""
        wanted = None if present is None else set(present)
        statements: list[Statement] = []
        for obj in reversed(self._objects):
            if wanted is not None and obj.base not in wanted:
                continue
            name = self.names.table(obj.base)
            if obj.kind == "PROPERTY GRAPH":
                statements.insert(0, Statement(f"drop_{obj.base.lower()}", f"DROP PROPERTY GRAPH {name}"))
            elif obj.kind == "TABLE":
                statements.append(
                    Statement(f"drop_{obj.base.lower()}", f"DROP TABLE {name} CASCADE CONSTRAINTS PURGE")
                )
        return statements

    def drop_vector_index_ddl(self) -> Statement:
        return Statement("drop_vector_index", f"DROP INDEX {self.names.table(_VECTOR_INDEX)}")

    # --- data dictionary and registry statements ---------------------------------------------

    def inventory_statement(self) -> Statement:
        """Which of the store's objects exist: rows ``(kind, name)`` from ``USER_TABLES``,
        ``USER_INDEXES`` and ``USER_PROPERTY_GRAPHS``, and ``('COLUMN', 'TABLE.COLUMN')`` from
        ``USER_TAB_COLUMNS`` for the columns later versions add; every name is a bind."""
        by_kind: dict[str, list[str]] = {"TABLE": [], "INDEX": [], "PROPERTY GRAPH": []}
        added: list[SchemaObject] = []
        for obj in self._objects:
            if obj.kind == _COLUMNS:
                added.append(obj)
            else:
                by_kind[obj.kind].append(obj.base)
        by_kind["INDEX"].append(_VECTOR_INDEX)
        sources = (
            ("TABLE", "table_name", "user_tables"),
            ("INDEX", "index_name", "user_indexes"),
            ("PROPERTY GRAPH", "graph_name", "user_property_graphs"),
        )
        binds: dict[str, str] = {}
        parts: list[str] = []
        for kind, column, view in sources:
            keys = []
            for base in by_kind[kind]:
                key = f"n{len(binds)}"
                binds[key] = self.names.raw(base)
                keys.append(f":{key}")
            parts.append(
                f"SELECT '{kind}' AS object_kind, {column} AS object_name FROM {view}\n"
                f"WHERE {column} IN ({', '.join(keys)})"
            )
        if added:
            groups = []
            for obj in added:
                table_key = f"n{len(binds)}"
                binds[table_key] = self.names.raw(obj.base)
                keys = []
                for column_name in obj.columns:
                    key = f"n{len(binds)}"
                    binds[key] = column_name
                    keys.append(f":{key}")
                groups.append(f"(table_name = :{table_key} AND column_name IN ({', '.join(keys)}))")
            parts.append(
                "SELECT 'COLUMN' AS object_kind, table_name || '.' || column_name AS object_name "
                "FROM user_tab_columns\n"
                f"WHERE {' OR '.join(groups)}"
            )
        return Statement("schema_inventory", "\nUNION ALL\n".join(parts), binds)

    def registry_exists_statement(self) -> Statement:
        return Statement(
            "registry_exists",
            "SELECT table_name FROM user_tables WHERE table_name = :name",
            {"name": REGISTRY_TABLE},
        )

    def vector_index_exists_statement(self) -> Statement:
        return Statement(
            "vector_index_exists",
            "SELECT index_type FROM user_indexes WHERE index_name = :name",
            {"name": self.names.raw(_VECTOR_INDEX)},
        )

    def select_config(self, *, for_update: bool = False) -> Statement:
        """This store's registry row: ``(store_config, schema_version, lifecycle_state)``; read it
        with ``parse_config(row[0], schema_version=row[1])``. ``for_update`` locks the row."""
        sql = (
            f"SELECT store_config, schema_version, lifecycle_state\n"
            f"FROM {self.names.registry}\n"
            f"WHERE memory_store_name = :store_name"
        )
        if for_update:
            sql += "\nFOR UPDATE"
        return Statement(
            "registry_select_for_update" if for_update else "registry_select",
            sql,
            {"store_name": self.names.registry_name},
        )

    def set_dimension(self, dimension: int | None) -> Statement:
        """Set (or, with ``None``, clear) the store's embedding dimension in the registry. DML for
        the caller's transaction (never committed here); ``JSON_TRANSFORM ... SET`` creates the
        field when missing and writes JSON ``null`` for a SQL ``NULL``."""
        value = _check_dimension(dimension)
        sql = (
            f"UPDATE {self.names.registry}\n"
            f"SET store_config = JSON_TRANSFORM(store_config, SET '$.{_DIMENSION_KEY}' = :dimension),\n"
            f"    updated_at = SYSTIMESTAMP\n"
            f"WHERE memory_store_name = :store_name"
        )
        return Statement(
            "registry_set_dimension", sql, {"dimension": value, "store_name": self.names.registry_name}
        )

    def register_statement(self, config: Mapping[str, Any]) -> Statement:
        """Insert this store's registry row (state ``CREATING``) unless it exists."""
        sql = (
            f"MERGE INTO {self.names.registry} r\n"
            f"USING (SELECT :store_name AS memory_store_name FROM dual) s\n"
            f"ON (r.memory_store_name = s.memory_store_name)\n"
            f"WHEN NOT MATCHED THEN INSERT\n"
            f"    (memory_store_name, lifecycle_state, schema_version, store_config, created_at, updated_at)\n"
            f"    VALUES (s.memory_store_name, :lifecycle_state, :schema_version, :store_config, SYSTIMESTAMP, SYSTIMESTAMP)"
        )
        binds = {
            "store_name": self.names.registry_name,
            "lifecycle_state": "CREATING",
            "schema_version": SCHEMA_VERSION,
            "store_config": DIALECT.encode_json(dict(config)),
        }
        return Statement("registry_register", sql, binds)

    def update_registry_statement(
        self, lifecycle_state: str, schema_version: int, config: Mapping[str, Any]
    ) -> Statement:
        if lifecycle_state not in LIFECYCLE_STATES:
            raise ConfigurationError(f"unknown lifecycle state {lifecycle_state!r}.")
        sql = (
            f"UPDATE {self.names.registry}\n"
            f"SET lifecycle_state = :lifecycle_state, schema_version = :schema_version,\n"
            f"    store_config = :store_config, updated_at = SYSTIMESTAMP\n"
            f"WHERE memory_store_name = :store_name"
        )
        binds = {
            "lifecycle_state": lifecycle_state,
            "schema_version": schema_version,
            "store_config": DIALECT.encode_json(dict(config)),
            "store_name": self.names.registry_name,
        }
        return Statement("registry_update", sql, binds)

    def set_state_statement(self, lifecycle_state: str) -> Statement:
        if lifecycle_state not in LIFECYCLE_STATES:
            raise ConfigurationError(f"unknown lifecycle state {lifecycle_state!r}.")
        sql = (
            f"UPDATE {self.names.registry}\n"
            f"SET lifecycle_state = :lifecycle_state, updated_at = SYSTIMESTAMP\n"
            f"WHERE memory_store_name = :store_name"
        )
        return Statement(
            "registry_set_state",
            sql,
            {"lifecycle_state": lifecycle_state, "store_name": self.names.registry_name},
        )

    def unregister_statement(self) -> Statement:
        return Statement(
            "registry_delete",
            f"DELETE FROM {self.names.registry} WHERE memory_store_name = :store_name",
            {"store_name": self.names.registry_name},
        )

    # --- reading the database -----------------------------------------------------------------

    def present_objects(self, connection: Any) -> set[str]:
        """The keys (:attr:`SchemaObject.key`: base names, ``"TABLE(COLUMN,...)"`` for added
        columns) of this store's objects that exist, the vector index included. Added columns
        are present when every one of them exists."""
        return self._inventory(connection)[0]

    def _inventory(self, connection: Any) -> tuple[set[str], set[str]]:
        """``(present keys, "TABLE.COLUMN" of every added column that exists)``."""
        wanted: dict[tuple[str, str], str] = {}
        for obj in self._objects:
            if obj.kind == _COLUMNS:
                for column_name in obj.columns:
                    found = f"{self.names.raw(obj.base)}.{column_name}"
                    wanted[("COLUMN", found)] = f"{obj.base}.{column_name}"
            else:
                wanted[(obj.kind, self.names.raw(obj.base))] = obj.base
        wanted[("INDEX", self.names.raw(_VECTOR_INDEX))] = _VECTOR_INDEX
        found_names: set[str] = set()
        for kind, name in fetch_all(connection, self.inventory_statement()):
            key = wanted.get((str(kind), str(name)))
            if key is not None:
                found_names.add(key)
        columns = {name for name in found_names if "." in name}
        present = found_names - columns
        for obj in self._objects:
            if obj.kind == _COLUMNS and all(f"{obj.base}.{c}" in columns for c in obj.columns):
                present.add(obj.key)
        return present, columns

    def has_vector_index(self, connection: Any) -> bool:
        return fetch_one(connection, self.vector_index_exists_statement()) is not None

    def _registry_exists(self, connection: Any) -> bool:
        return fetch_one(connection, self.registry_exists_statement()) is not None

    def _read_registry(self, connection: Any, *, for_update: bool = False) -> _RegistryRow | None:
        row = fetch_one(connection, self.select_config(for_update=for_update))
        if row is None:
            return None
        config = DIALECT.decode_json(row[0])
        if config is None:
            config = {}
        if not isinstance(config, dict):
            raise SchemaVersionError(f"the registry's store_config is not a JSON object: {config!r}.")
        return _RegistryRow(
            config=config, schema_version=_as_int(row[1], "schema_version"), lifecycle_state=str(row[2])
        )

    # --- policies -------------------------------------------------------------------------------

    def ensure(self, connection: Any, policy: SchemaPolicy, *, dimension: int | None) -> StoreConfig:
        """Apply ``policy`` to this store and return its configuration.

        ``dimension`` is the embedder's dimension when known: stored in the registry when the
        registry has none, a ``ConfigurationError`` when it differs from the registry's; with
        ``None`` the registry's is used. Once the dimension is known (and the kind is not
        ``"none"``) the vector index is created, except under ``REQUIRE_EXISTING`` (no DDL).
        ``NO_CHECK`` sends nothing (``connection`` is not used): the configuration is the given
        dimension, this manager's index kind and this library's schema version, unchecked.
        """
        policy = _parse_policy(policy)
        wanted = _check_dimension(dimension)
        if policy is SchemaPolicy.NO_CHECK:
            return StoreConfig(dimension=wanted, vector_index=self.vector_index, schema_version=SCHEMA_VERSION)
        if not self._registry_exists(connection):
            if policy is SchemaPolicy.REQUIRE_EXISTING:
                raise SchemaVersionError(
                    f"{self._store_label()} does not exist: the registry table {REGISTRY_TABLE} is missing "
                    f"(schema policy REQUIRE_EXISTING creates nothing; use CREATE_IF_EMPTY or CREATE_IF_NECESSARY)."
                )
            self._create_registry(connection)
        row = self._read_registry(connection)
        if row is not None:
            self._check_version(row, policy)
            if policy is not SchemaPolicy.RECREATE:
                _check_conflict(parse_config(row.config, schema_version=row.schema_version).dimension, wanted)
        present = self.present_objects(connection)
        missing = [obj for obj in self._objects if obj.key not in present]

        if policy is SchemaPolicy.REQUIRE_EXISTING:
            self._require_complete(row, missing, policy)
        elif policy is SchemaPolicy.CREATE_IF_EMPTY:
            if row is None and not present:
                self._register(connection, wanted)
                self._create_objects(connection, self._objects, present)
                self._upgrade(connection, 0)
            elif row is None or missing:
                found = sorted(self._label(o) for o in self._objects if o.key in present)
                if _VECTOR_INDEX in present:
                    found.append(self.names.raw(_VECTOR_INDEX))
                raise SchemaVersionError(
                    f"partial schema detected for {self._store_label()}, cannot perform CREATE_IF_EMPTY: "
                    f"{self._describe_missing(row, missing)}; present: {', '.join(found) or 'no objects'}. "
                    f"Use CREATE_IF_NECESSARY to repair it or RECREATE to start over."
                )
        elif policy is SchemaPolicy.CREATE_IF_NECESSARY:
            if row is None:
                self._register(connection, wanted)
            self._create_objects(connection, missing, present)
            self._upgrade(connection, 0 if row is None else row.schema_version)
        else:  # RECREATE
            self._drop(connection, present, registered=row is not None)
            self._register(connection, wanted)
            self._create_objects(connection, self._objects, set())
            self._upgrade(connection, 0)

        config = self._finish(connection, policy, wanted)
        if policy is not SchemaPolicy.REQUIRE_EXISTING and config.dimension is not None:
            self.try_ensure_vector_index(connection, config.dimension)
        return config

    def try_ensure_vector_index(self, connection: Any, dimension: int) -> bool:
        """:meth:`ensure_vector_index`, but a database that cannot build the index (an HNSW index
        needs a vector memory pool: ``VECTOR_MEMORY_SIZE``; ORA-51962 otherwise) is logged, not
        raised: searches stay exact and correct without it, only slower on large stores."""
        try:
            return self.ensure_vector_index(connection, dimension)
        except Exception as exc:  # noqa: BLE001 - the driver's error classes vary; nothing is lost
            log.warning(
                "%s: the %s vector index could not be created (%s); searches run exact until it exists. "
                "For HNSW, give the database a vector pool (ALTER SYSTEM SET vector_memory_size = ...) "
                "or open the store with vector_index='ivf'.",
                self._store_label(), self.vector_index, exc,
            )
            return False

    def _store_label(self) -> str:
        if self.names.store_id is None:
            return "the default Oracle memory store"
        return f"the Oracle memory store {self.names.store_id!r}"

    def _describe_missing(self, row: _RegistryRow | None, missing: Sequence[SchemaObject]) -> str:
        parts = [f"{self._label(o)} ({_KIND_LABELS[o.kind]})" for o in missing]
        if row is None:
            parts.append(f"its row in {REGISTRY_TABLE} ({self.names.registry_name})")
        return "missing " + ", ".join(parts) if parts else "nothing missing"

    def _label(self, obj: SchemaObject) -> str:
        table = self.names.raw(obj.base)
        if obj.kind == _COLUMNS:
            return ", ".join(f"{table}.{column_name}" for column_name in obj.columns)
        return table

    def _check_version(self, row: _RegistryRow, policy: SchemaPolicy) -> None:
        if row.schema_version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{self._store_label()} has schema version {row.schema_version}, newer than this library's "
                f"{SCHEMA_VERSION}; upgrade the library."
            )
        if row.schema_version < 1:
            raise SchemaVersionError(
                f"{self._store_label()} has an unknown schema version {row.schema_version}."
            )
        if row.schema_version < SCHEMA_VERSION and policy in (
            SchemaPolicy.REQUIRE_EXISTING,
            SchemaPolicy.CREATE_IF_EMPTY,
        ):
            raise SchemaVersionError(
                f"{self._store_label()} has schema version {row.schema_version} and needs an upgrade to "
                f"{SCHEMA_VERSION}; open it once with CREATE_IF_NECESSARY."
            )

    def _require_complete(
        self, row: _RegistryRow | None, missing: Sequence[SchemaObject], policy: SchemaPolicy
    ) -> None:
        if row is None or missing:
            raise SchemaVersionError(
                f"{self._store_label()} is not ready for schema policy {policy.name}: "
                f"{self._describe_missing(row, missing)}. Open it once with CREATE_IF_NECESSARY to create them."
            )
        if policy is SchemaPolicy.REQUIRE_EXISTING and row.lifecycle_state != "CREATED":
            raise SchemaVersionError(
                f"{self._store_label()} is in lifecycle state {row.lifecycle_state}, not CREATED (an interrupted "
                f"creation or drop); open it once with CREATE_IF_NECESSARY, or RECREATE it."
            )

    # --- DDL ------------------------------------------------------------------------------------

    def _create_registry(self, connection: Any) -> None:
        try:
            run(connection, self.registry_ddl())
        except Exception:
            if not self._registry_exists(connection):  # else another process created it first
                raise

    def _register(self, connection: Any, dimension: int | None) -> None:
        config = {_DIMENSION_KEY: dimension, _INDEX_KEY: self.vector_index}
        try:
            run(connection, self.register_statement(config))
            connection.commit()
        except Exception:
            connection.rollback()
            if self._read_registry(connection) is None:  # else another process registered it first
                raise

    def _create_objects(self, connection: Any, objects: Sequence[SchemaObject], present: set[str]) -> None:
        """Create ``objects`` in order; an object another process created meanwhile is accepted.
        A property graph that outlived one of its tables is dropped and created again. Columns
        to add of which some, not all, exist (added by hand?) are a ``SchemaVersionError``: the
        adapter will not guess whether their types are right."""
        created: set[str] = set()
        for obj in objects:
            try:
                run(connection, obj.statement)
            except Exception as exc:
                present_now, columns = self._inventory(connection)
                if obj.key in present_now:
                    continue
                existing = [c for c in obj.columns if f"{obj.base}.{c}" in columns]
                if existing:
                    raise SchemaVersionError(
                        f"{self._store_label()}: {self.names.raw(obj.base)} already has some of the columns "
                        f"schema version {obj.version} adds ({', '.join(existing)}) but not all of "
                        f"{', '.join(obj.columns)}; add the others by hand as in "
                        f"{_version_files().get(obj.version, 'its DDL file')}, or RECREATE the store."
                    ) from exc
                raise
            created.add(obj.key)
        if _GRAPH in present and _GRAPH not in created and created & _GRAPH_TABLES:
            graph = next(o for o in self._objects if o.base == _GRAPH)
            run(connection, self.drop_statements([_GRAPH])[0])
            run(connection, graph.statement)

    def _upgrade(self, connection: Any, stored_version: int) -> None:
        """Run, in file order, the statements of the files newer than ``stored_version`` that
        create nothing nameable (``0`` for a store created now: every file). The objects of those
        files (tables, indexes, added columns) were created already with the missing objects;
        ``_finish`` then records ``SCHEMA_VERSION`` in the registry row. Version 3's two
        statements (the profile types' check) are the first such."""
        for obj in self._unnamed:
            if obj.version > stored_version:
                run(connection, obj.statement)

    def _drop(self, connection: Any, present: set[str], *, registered: bool) -> None:
        if registered:
            run(connection, self.set_state_statement("DROPPING"))
            connection.commit()
        for statement in self.drop_statements(present):
            run(connection, statement)
        if registered:
            run(connection, self.unregister_statement())
            connection.commit()

    def _finish(self, connection: Any, policy: SchemaPolicy, wanted: int | None) -> StoreConfig:
        """Under a row lock: settle the dimension, the index kind, the version and the state."""
        try:
            row = self._read_registry(connection, for_update=True)
            if row is None:
                raise SchemaVersionError(f"{self._store_label()} lost its registry row while being opened.")
            current = parse_config(row.config, schema_version=row.schema_version)
            _check_conflict(current.dimension, wanted)
            dimension = current.dimension if current.dimension is not None else wanted
            config = dict(row.config)
            config[_DIMENSION_KEY] = dimension
            if policy is SchemaPolicy.REQUIRE_EXISTING:
                kind, state, version = current.vector_index, row.lifecycle_state, row.schema_version
            else:
                kind, state, version = self.vector_index, "CREATED", SCHEMA_VERSION
            config[_INDEX_KEY] = kind
            if (config, state, version) != (row.config, row.lifecycle_state, row.schema_version):
                run(connection, self.update_registry_statement(state, version, config))
            connection.commit()
        except BaseException:
            connection.rollback()
            raise
        if policy is not SchemaPolicy.REQUIRE_EXISTING and current.vector_index != kind:
            self.drop_vector_index(connection)  # the kind changed: the next ensure_vector_index rebuilds
        return StoreConfig(dimension=dimension, vector_index=kind, schema_version=version)

    def ensure_vector_index(self, connection: Any, dimension: int) -> bool:
        """Create the vector index unless it exists or the kind is ``"none"``; ``True`` when this
        call created it. Call it once the store's dimension is known (it is validated here)."""
        _check_dimension(dimension, required=True)
        if self.vector_index == "none" or self.has_vector_index(connection):
            return False
        try:
            run(connection, self.vector_index_ddl())
        except Exception:
            if self.has_vector_index(connection):  # another process built it meanwhile
                return False
            raise
        return True

    def drop_vector_index(self, connection: Any) -> None:
        """Drop the vector index if it exists (e.g. before vectors of another dimension are
        written: an index is built for one dimension)."""
        if self.has_vector_index(connection):
            run(connection, self.drop_vector_index_ddl())

    def drop(self, connection: Any) -> None:
        """Drop every object of this store and delete its registry row (the registry table, shared
        by every store, stays)."""
        registered = self._registry_exists(connection) and self._read_registry(connection) is not None
        self._drop(connection, self.present_objects(connection), registered=registered)


def _check_conflict(stored: int | None, wanted: int | None) -> None:
    if stored is not None and wanted is not None and stored != wanted:
        raise ConfigurationError(
            f"the store's embedding dimension is {stored} but the embedder produces {wanted}-dimensional "
            f"vectors; use an embedder of dimension {stored}, or clear the store's vectors first."
        )
