"""Adapters layer (SQL kit): the SQLite dialect (``sqlite3``), and its driver-error map.

Placeholders are ``?``; an id list is one JSON text bind read by ``json_each``. Times are
fixed-width UTC ISO text (``2024-01-01T00:00:00.000000Z``): equal widths make
SQLite's text comparison a time comparison. JSON is compact text; vectors are little-endian
float32 blobs of unit vectors (numpy). Integrity errors name the violated columns
(``UNIQUE constraint failed: messages.thread_id, messages.seq``); ``keys`` maps that column text
to the logical :class:`~palimpsest.adapters.sql.dialect.Key`.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import threading
from array import array
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, ClassVar, Final

from palimpsest.adapters.sql.dialect import Dialect, Statement, same_length, unique_violation
from palimpsest.adapters.sql.vectors import normalise_many
from palimpsest.domain.errors import (
    AgentMemoryError,
    SelfLinkError,
    StorageError,
    StoreBusyError,
    StoreClosedError,
)

__all__ = ["SqliteDialect", "is_busy", "keep_function_failure"]

_FUNCTION_FAILED: Final = "user-defined function raised exception"
_UNIQUE: Final = "UNIQUE constraint failed: "
_function_failure = threading.local()


def keep_function_failure(exc: BaseException) -> None:
    """Remember (per thread) why an SQL function of ours raised: SQLite reports only
    :data:`_FUNCTION_FAILED`, and the translation raises this reason instead."""
    _function_failure.exc = exc


def _take_function_failure() -> BaseException | None:
    exc = getattr(_function_failure, "exc", None)
    _function_failure.exc = None
    return exc


def is_busy(exc: BaseException) -> bool:
    """SQLITE_BUSY / SQLITE_LOCKED, as the sqlite3 module reports them (OperationalError text)."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class SqliteDialect(Dialect):
    """See the module docstring."""

    name: ClassVar[str] = "sqlite"
    paramstyle: ClassVar[str] = "qmark"
    driver_error: ClassVar[type[BaseException] | tuple[type[BaseException], ...]] = sqlite3.Error

    def __init__(self, keys: Mapping[str, str] | None = None) -> None:
        self._keys = dict(keys or {})

    # --- statements ---------------------------------------------------------------------------

    def execute(self, connection: Any, statement: Statement) -> Any:
        return connection.execute(statement.sql, statement.params)

    def fetch_one(self, connection: Any, statement: Statement) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = connection.execute(statement.sql, statement.params).fetchone()
        return row

    def fetch_all(self, connection: Any, statement: Statement) -> list[Any]:
        rows: list[Any] = connection.execute(statement.sql, statement.params).fetchall()
        if getattr(statement, "reverse", False):
            rows.reverse()
        return rows

    def run(self, connection: Any, statement: Statement) -> int:
        return max(int(connection.execute(statement.sql, statement.params).rowcount), 0)

    def run_many(self, connection: Any, statements: Sequence[Statement]) -> int:
        if not statements:
            return 0
        sql = statements[0].sql
        if any(statement.sql != sql for statement in statements):
            raise ValueError("run_many needs statements of one SQL text")
        cursor = connection.executemany(sql, [statement.params for statement in statements])
        return max(int(cursor.rowcount), 0)

    def in_list(self, column: str, values: Sequence[Any]) -> tuple[str, tuple[Any, ...]]:
        """One JSON text bind read by ``json_each`` (no limit on the number of ids)."""
        return f"{column} IN (SELECT value FROM json_each(?))", (json.dumps(list(values)),)

    # --- values -------------------------------------------------------------------------------

    def encode_time(self, value: datetime | None) -> str | None:
        """Fixed-width UTC text: equal widths make SQLite's text comparison a time comparison."""
        if value is None:
            return None
        return value.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"

    def decode_time(self, value: Any) -> datetime | None:
        return None if value is None else datetime.fromisoformat(value)

    def decode_json(self, value: Any) -> Any:
        return None if value is None else json.loads(value)

    def decode_text(self, value: Any) -> str | None:
        return value  # type: ignore[no-any-return]  # TEXT arrives as str

    def unit_vectors(self, embeddings: Sequence[Sequence[float]], dimension: int | None) -> list[Any]:
        units = normalise_many(embeddings, dimension)
        same_length(units, dimension)
        return units

    def encode_vector(self, unit: Any) -> bytes:
        return unit.astype("<f4", copy=False).tobytes()  # type: ignore[no-any-return]

    def decode_vector(self, value: Any) -> Sequence[float]:
        vector = array("f")
        vector.frombytes(value)  # little-endian float32, as encode_vector writes it
        if sys.byteorder == "big":
            vector.byteswap()
        return vector

    # --- errors -------------------------------------------------------------------------------

    def violated(self, exc: BaseException | None) -> str | None:
        if not isinstance(exc, sqlite3.IntegrityError):
            return None
        text = str(exc)
        if not text.startswith(_UNIQUE):
            return None
        return self._keys.get(text[len(_UNIQUE) :].strip())

    def translate(self, exc: BaseException, missing: type[AgentMemoryError] | None = None) -> AgentMemoryError:
        if isinstance(exc, sqlite3.IntegrityError):
            return self._integrity_error(exc, missing)
        if isinstance(exc, sqlite3.ProgrammingError) and "closed" in str(exc).lower():
            return StoreClosedError("This store has been closed.")  # closed under a running call
        if is_busy(exc):
            return StoreBusyError(f"The store stayed busy: {exc}")
        if isinstance(exc, sqlite3.OperationalError) and _FUNCTION_FAILED in str(exc):
            failure = _take_function_failure()
            if isinstance(failure, AgentMemoryError):
                return failure  # e.g. InvalidMetadataError: a stored metadata value is not an object
            if failure is not None:
                exc.__cause__ = failure  # the chain reads: StorageError <- sqlite3 error <- the reason
                return StorageError(
                    f"A metadata filter could not be evaluated on a stored row: {type(failure).__name__}: {failure}"
                )
        return StorageError(f"SQLite failed: {exc}")

    def _integrity_error(
        self, exc: sqlite3.IntegrityError, missing: type[AgentMemoryError] | None
    ) -> AgentMemoryError:
        text = str(exc)
        if text.startswith(_UNIQUE):
            return unique_violation(self.violated(exc), text)
        if "CHECK constraint failed" in text:
            return SelfLinkError("A memory cannot be linked to itself.")
        if "FOREIGN KEY constraint failed" in text and missing is not None:
            return missing("A referenced entity does not exist.")
        return StorageError(f"SQLite rejected the write: {text}")
