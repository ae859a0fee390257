"""Embedded adapter: SQLite connections (pragmas, SQL functions) and versioned schema migrations."""

from __future__ import annotations

import functools
import json
import os
import re
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any, Final

from palimpsest.domain.checkpoints import checkpoint_metadata_matches
from palimpsest.domain.errors import ConfigurationError, SchemaVersionError, StorageError
from palimpsest.domain.metadata_filter import matches
from palimpsest.domain.ports import SchemaState

from .codec import DIALECT
from .errors import keep_function_failure, retry_busy

__all__ = [
    "Migration",
    "connect",
    "enable_wal",
    "load_migrations",
    "migrate",
    "read_meta",
    "read_schema_state",
    "write_meta",
]

_MIGRATION_NAME: Final = re.compile(r"^(\d{4})_[A-Za-z0-9_]+\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str

    def statements(self) -> list[str]:
        """Split the script into statements (trigger bodies contain semicolons).

        ``executescript`` would be simpler but commits any open transaction first, and
        migrations must run inside the transaction that also bumps ``schema_version``.
        """
        statements, buffer = [], ""
        for line in self.sql.splitlines(keepends=True):
            buffer += line
            if sqlite3.complete_statement(buffer):
                if _strip_comments(buffer):
                    statements.append(buffer)
                buffer = ""
        if _strip_comments(buffer):
            raise StorageError(f"migration {self.name} ends with an incomplete statement.")
        return statements


def _strip_comments(sql: str) -> str:
    return "\n".join(line for line in sql.splitlines() if not line.strip().startswith("--")).strip(" \n;")


@functools.cache
def load_migrations() -> tuple[Migration, ...]:
    """The packaged ``migrations/NNNN_name.sql`` files, in version order."""
    folder = resources.files("palimpsest.adapters.embedded").joinpath("migrations")
    found = []
    for entry in folder.iterdir():
        match = _MIGRATION_NAME.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise StorageError(f"migrations must be numbered 1..n without gaps, found {versions}.")
    return tuple(found)


# --- SQL functions -----------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _parse_filter(filter_json: str) -> Any:
    return json.loads(filter_json)


def _metadata_matches(metadata_json: str | None, filter_json: str | None) -> int:
    """``metadata_matches(metadata, filter)``: the domain's filter semantics, callable from SQL.

    Filters reaching SQL were validated by the domain already. A row the filter cannot be
    evaluated on (metadata that is not a JSON object) fails the statement rather than count as
    a non-match; SQLite reports that only as "user-defined function raised exception", so the
    exception is kept for the error translation to raise instead (:func:`.errors.translated`).
    """
    try:
        flt = None if filter_json is None else _parse_filter(filter_json)
        metadata = None if metadata_json is None else json.loads(metadata_json)
        return 1 if matches(metadata, flt) else 0
    except Exception as exc:
        keep_function_failure(exc)
        raise


def _checkpoint_metadata_matches(metadata_json: str | None, filter_json: str) -> int:
    """``checkpoint_metadata_matches(metadata, filter)``: a checkpoint listing's metadata filter
    (:func:`palimpsest.domain.checkpoints.checkpoint_metadata_matches`), callable from SQL."""
    try:
        metadata = {} if metadata_json is None else json.loads(metadata_json)
        return 1 if checkpoint_metadata_matches(metadata, _parse_filter(filter_json)) else 0
    except Exception as exc:
        keep_function_failure(exc)
        raise


def connect(path: str, busy_timeout: float) -> sqlite3.Connection:
    """A configured connection: autocommit mode (we issue BEGIN/COMMIT), FKs, durable commits."""
    conn = sqlite3.connect(
        path,
        timeout=busy_timeout,
        isolation_level=None,
        # One connection per thread, but close() must be able to close every thread's one.
        check_same_thread=False,
        cached_statements=256,
    )
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        conn.execute("PRAGMA foreign_keys = ON")
        # FULL: a commit is on disk when commit() returns ("nothing acknowledged is lost");
        # NORMAL in WAL mode may lose the last transactions on power failure.
        conn.execute("PRAGMA synchronous = FULL")
        conn.create_function("metadata_matches", 2, _metadata_matches, deterministic=True)
        conn.create_function("checkpoint_metadata_matches", 2, _checkpoint_metadata_matches, deterministic=True)
    except BaseException:
        conn.close()
        raise
    return conn


def enable_wal(conn: sqlite3.Connection, budget: float) -> None:
    """Switch the file to WAL (persistent; readers and the writer then stop blocking each other)."""

    def attempt(_remaining: float) -> str:
        return str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])

    mode = retry_busy(attempt, budget=budget, what="enable WAL journaling")
    if mode.lower() != "wal":
        raise ConfigurationError(f"SQLite refused WAL journaling for this file (journal_mode={mode}).")


def read_meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def write_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def begin_immediate(conn: sqlite3.Connection, budget: float) -> None:
    """Take the write lock now (a deferred transaction could fail to upgrade later)."""

    def attempt(remaining: float) -> None:
        conn.execute(f"PRAGMA busy_timeout = {int(remaining * 1000)}")
        conn.execute("BEGIN IMMEDIATE")

    try:
        retry_busy(attempt, budget=budget, what="begin a write transaction")
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(budget * 1000)}")


def commit(conn: sqlite3.Connection, budget: float) -> None:
    def attempt(_remaining: float) -> None:
        conn.execute("COMMIT")

    retry_busy(attempt, budget=budget, what="commit")


def _read_versions(conn: sqlite3.Connection) -> tuple[int, str | None] | None:
    """(schema version, persisted dimension) from one read transaction; ``None`` for a new file."""
    conn.execute("BEGIN DEFERRED")
    try:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone() is None:
            return None
        return int(read_meta(conn, "schema_version") or 0), read_meta(conn, "dimension")
    finally:
        conn.execute("ROLLBACK")


def latest_version() -> int:
    """The newest schema version this library's migrations reach."""
    migrations = load_migrations()
    return migrations[-1].version if migrations else 0


def schema_state(conn: sqlite3.Connection) -> SchemaState:
    """The file's schema version (``None`` without the meta table, or without a version in
    it) and this library's newest, read in one read transaction."""
    found = _read_versions(conn)
    return SchemaState(version=None if found is None or found[0] == 0 else found[0], latest=latest_version())


def read_schema_state(path: str | os.PathLike[str]) -> SchemaState:
    """The schema state of the store file at ``path``, read without writing to it: opened
    read-only, so an older file is reported, not migrated (opening an ``EmbeddedStore`` would
    migrate it). A file that is not an SQLite database is a :class:`StorageError`."""
    location = Path(path)
    try:
        conn = sqlite3.connect(f"{location.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise StorageError(str(exc)) from exc
    try:
        return schema_state(conn)
    except sqlite3.Error as exc:
        raise StorageError(str(exc)) from exc
    except ValueError as exc:  # a schema version that is not a number
        raise StorageError(f"the schema version is not a number ({exc})") from exc
    finally:
        conn.close()


def _check_dimension(stored: str | None, dimension: int | None) -> None:
    if stored is not None and dimension is not None and int(stored) != dimension:
        raise ConfigurationError(
            f"This store holds {stored}-dimensional vectors; it cannot be opened with dimension={dimension}."
        )


def migrate(conn: sqlite3.Connection, *, dimension: int | None, budget: float) -> int | None:
    """Bring the file to the newest schema and reconcile the vector dimension; one transaction.

    Returns the store's dimension (configured, persisted, or ``None`` until the first vector).
    Raises :class:`SchemaVersionError` for a file written by a newer schema and
    :class:`ConfigurationError` for a dimension that contradicts the persisted one. A file that
    is current, with nothing to persist, is only read: opening it never waits for a writer.
    """
    migrations = load_migrations()
    latest = latest_version()
    found = retry_busy(lambda _remaining: _read_versions(conn), budget=budget, what="read the schema version")
    if found is not None and found[0] == latest and (found[1] is not None or dimension is None):
        stored = found[1]
        _check_dimension(stored, dimension)
        return dimension if dimension is not None else (None if stored is None else int(stored))
    begin_immediate(conn, budget)
    try:
        conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations "
            "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        current = int(read_meta(conn, "schema_version") or 0)
        if current > latest:
            raise SchemaVersionError(
                f"This store has schema version {current}, but this palimpsest only knows "
                f"versions up to {latest}; upgrade palimpsest to open it."
            )
        for migration in migrations:
            if migration.version <= current:
                continue
            for statement in migration.statements():
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.name, DIALECT.encode_time(datetime.now(UTC))),
            )
            write_meta(conn, "schema_version", str(migration.version))
        stored = read_meta(conn, "dimension")
        _check_dimension(stored, dimension)
        if stored is None and dimension is not None:
            write_meta(conn, "dimension", str(dimension))
        result = dimension if dimension is not None else (None if stored is None else int(stored))
        commit(conn, budget)
        return result
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
