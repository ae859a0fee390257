"""Adapters layer (SQL kit): what one SQL database does its own way, behind one interface.

A :class:`Dialect` answers the questions the kit's repositories and unit of work would otherwise
answer per store: how a statement runs on a DB-API connection, how a placeholder, an upsert, a
time, a JSON value and a vector are written and read, where a savepoint starts, and what a driver
error means in the domain's error tree (:mod:`palimpsest.domain.errors`). A store's dialect is a
small class; the SQL text of its statements stays with the store (its statement builders).

Unique and foreign keys are named by the logical :class:`Key` they guard (``message_seq``,
``link_relation``...), so that the kit names a violated key once for every store, whatever the
database calls its constraints.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence, Sized
from datetime import UTC, datetime
from typing import Any, ClassVar, Final, Protocol

from palimpsest.domain.errors import (
    AgentMemoryError,
    ConflictError,
    DuplicateIdError,
    LinkExistsError,
    StorageError,
    VectorDimensionError,
)
from palimpsest.domain.search import check_vector

__all__ = ["Dialect", "Key", "Statement", "unique_violation"]


class Key:
    """Logical names of the keys a store's constraints guard (a dialect maps its own names)."""

    THREAD_ID: Final = "thread_id"
    MESSAGE_ID: Final = "message_id"
    MESSAGE_SEQ: Final = "message_seq"
    RECORD_ID: Final = "record_id"
    LINK_ID: Final = "link_id"
    LINK_RELATION: Final = "link_relation"
    SUMMARY_ID: Final = "summary_id"
    SUMMARY_REVISION: Final = "summary_revision"
    JOB_ID: Final = "job_id"


def unique_violation(key: str | None, detail: str) -> AgentMemoryError:
    """The domain error for a violated unique key (``key``: its logical name, if known): the
    map every dialect's translation shares."""
    if key == Key.LINK_RELATION:
        return LinkExistsError("A link with this source, target and relation type already exists.")
    if key == Key.SUMMARY_REVISION:
        return ConflictError(
            "The thread already has this summary revision; it was refreshed or invalidated concurrently."
        )
    if key == Key.MESSAGE_SEQ:
        return DuplicateIdError("The thread already has a message with this seq.")
    return DuplicateIdError(f"The id is already taken ({detail}).")


class Statement(Protocol):
    """A statement as the kit runs it: SQL text and its parameters (a sequence for positional
    placeholders, a mapping for named ones)."""

    @property
    def sql(self) -> str: ...

    @property
    def params(self) -> Any: ...


class Dialect:
    """The defaults are those of a plain DB-API driver with ISO text times and JSON text;
    a store overrides what its database does otherwise.

    ``paramstyle`` is the DB-API one (``qmark``: ``?``, ``named``: ``:name``, ``pyformat``:
    ``%(name)s`` or ``%s``, ``format``: ``%s``). ``id_batch_bytes`` bounds the JSON text of an id list
    sent as one bind (``None``: no bound). ``driver_error`` is the driver's base exception
    class; only those are translated.
    """

    name: ClassVar[str] = "sql"
    paramstyle: ClassVar[str] = "qmark"
    id_batch_bytes: ClassVar[int | None] = None
    driver_error: ClassVar[type[BaseException] | tuple[type[BaseException], ...]] = ()
    """The driver's base exception class: what the unit of work translates (none by default)."""

    # --- placeholders and statements ---------------------------------------------------------

    def positional(self, sql: str) -> str:
        """``sql`` written with ``?`` placeholders (the kit's standard statements), in this
        dialect's positional style: ``?`` (``qmark``) as it is, ``%s`` for the ``format`` and
        ``pyformat`` styles (a literal ``%`` doubled). A named-style driver has no positional
        placeholder: its store writes its own statements."""
        style = self.paramstyle
        if style == "qmark":
            return sql
        if style in ("format", "pyformat"):
            return sql.replace("%", "%%").replace("?", "%s")
        raise NotImplementedError(f"the {style!r} parameter style has no positional placeholder")

    def in_list(self, column: str, values: Sequence[Any]) -> tuple[str, tuple[Any, ...]]:
        """``column`` is one of ``values`` (ids of a batch): the condition, written with ``?``,
        and its parameters. By default one placeholder a value; a dialect that binds a whole
        list as one value (a JSON text, an array) overrides it."""
        if not values:
            return "1 = 0", ()
        return f"{column} IN ({', '.join('?' * len(values))})", tuple(values)

    def upsert(self, table: str, keys: Sequence[str], columns: Sequence[str]) -> str:
        """Insert a row or, when its ``keys`` are taken, replace its other ``columns``
        (``INSERT ... ON CONFLICT``: SQLite and PostgreSQL; Oracle writes a ``MERGE``). The
        values bind positionally, in ``columns`` order."""
        updates = ", ".join(f"{column} = excluded.{column}" for column in columns if column not in keys)
        return self.positional(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))}) "
            f"ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {updates}"
        )

    def savepoint(self, depth: int) -> Statement | None:
        return _Sql(f"SAVEPOINT palimpsest_w{depth}")

    def rollback_to(self, depth: int) -> Statement | None:
        return _Sql(f"ROLLBACK TO SAVEPOINT palimpsest_w{depth}")

    def release(self, depth: int) -> Statement | None:
        """``None`` where a savepoint needs no release (it ends with its transaction)."""
        return _Sql(f"RELEASE SAVEPOINT palimpsest_w{depth}")

    # --- execution (DB-API) -------------------------------------------------------------------

    def execute(self, connection: Any, statement: Statement) -> Any:
        """Run ``statement``; returns the open cursor."""
        cursor = connection.cursor()
        try:
            cursor.execute(statement.sql, statement.params)
        except BaseException:
            cursor.close()
            raise
        return cursor

    def fetch_one(self, connection: Any, statement: Statement) -> tuple[Any, ...] | None:
        cursor = self.execute(connection, statement)
        try:
            row = cursor.fetchone()
            return None if row is None else tuple(row)
        finally:
            cursor.close()

    def fetch_all(self, connection: Any, statement: Statement) -> list[Any]:
        """Every row (reversed when the statement asks for it: see :class:`~.statements.Sql`)."""
        cursor = self.execute(connection, statement)
        try:
            rows = list(cursor.fetchall())
        finally:
            cursor.close()
        if getattr(statement, "reverse", False):
            rows.reverse()
        return rows

    def run(self, connection: Any, statement: Statement) -> int:
        """Run DML; the row count."""
        cursor = self.execute(connection, statement)
        try:
            return max(int(cursor.rowcount or 0), 0)
        finally:
            cursor.close()

    def run_many(self, connection: Any, statements: Sequence[Statement]) -> int:
        """One ``executemany`` for statements of one SQL text; the total row count."""
        if not statements:
            return 0
        sql = statements[0].sql
        if any(statement.sql != sql for statement in statements):
            raise ValueError("run_many needs statements of one SQL text")
        cursor = connection.cursor()
        try:
            cursor.executemany(sql, [statement.params for statement in statements])
            return max(int(cursor.rowcount or 0), 0)
        finally:
            cursor.close()

    # --- times --------------------------------------------------------------------------------

    def encode_time(self, value: datetime | None) -> Any:
        """An aware UTC datetime (drivers with a time zone type bind it as it is)."""
        return None if value is None else value.astimezone(UTC)

    def decode_time(self, value: Any) -> datetime | None:
        """A fetched time as an aware UTC datetime (ISO text too; naive values are UTC)."""
        if value is None:
            return None
        moment: datetime = datetime.fromisoformat(value) if isinstance(value, str) else value
        if moment.tzinfo is None:
            return moment.replace(tzinfo=UTC)
        return moment.astimezone(UTC)

    # --- JSON and text ------------------------------------------------------------------------

    def encode_json(self, value: Mapping[str, Any] | Sequence[Any] | None) -> Any:
        """Compact JSON text (a JSON column parses it on the way in)."""
        if value is None:
            return None
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)

    def decode_json(self, value: Any) -> Any:
        """JSON text, or the value a driver already parsed (``dict``/``list``)."""
        if value is None:
            return None
        if isinstance(value, (bytes, bytearray)):
            value = value.decode("utf-8")
        if isinstance(value, str):
            return json.loads(value)
        return value

    def decode_text(self, value: Any) -> str | None:
        return None if value is None else str(value)

    def decode_bytes(self, value: Any) -> bytes | None:
        """A binary column's value as ``bytes`` (a driver may give a memoryview, or a LOB to read)."""
        if value is None:
            return None
        read = getattr(value, "read", None)
        return bytes(read() if callable(read) else value)

    def json_text(self, column: str) -> str:
        """The select expression of a JSON column read back as its JSON text (where the driver
        parses a JSON type, a string value would come back indistinguishable from JSON text)."""
        return column

    # --- vectors ------------------------------------------------------------------------------

    def unit_vectors(self, embeddings: Sequence[Sequence[float]], dimension: int | None) -> list[Any]:
        """Validated, L2-normalised copies (``VectorDimensionError`` names what is wrong).

        With no ``dimension`` yet, every vector must have the first one's length."""
        units = [unit_vector(embedding, dimension) for embedding in embeddings]
        same_length(units, dimension)
        return units

    def encode_vector(self, unit: Any) -> Any:
        """The bind value of a unit vector from :meth:`unit_vectors`."""
        return unit

    def decode_vector(self, value: Any) -> Sequence[float]:
        """A fetched vector as a sequence of floats."""
        return tuple(float(v) for v in value)

    # --- errors -------------------------------------------------------------------------------

    def translate(self, exc: BaseException, missing: type[AgentMemoryError] | None = None) -> AgentMemoryError:
        """The domain error for a driver error (the caller chains ``exc`` as its cause).
        ``missing`` is the not-found error a broken foreign key means to the caller."""
        return StorageError(f"The database failed: {exc}")

    def violated(self, exc: BaseException | None) -> str | None:
        """The :class:`Key` a driver error says was violated, when it names one."""
        return None

    def is_connection_lost(self, exc: BaseException) -> bool:
        return False


class _Sql:
    """A statement without parameters."""

    __slots__ = ("sql",)
    params: Final = ()

    def __init__(self, sql: str) -> None:
        self.sql = sql


def unit_vector(vector: Sequence[float], dimension: int | None) -> tuple[float, ...]:
    """A validated, L2-normalised copy of ``vector`` in plain floats (no numpy needed)."""
    values = check_vector(vector, dimension)
    norm = math.sqrt(math.fsum(v * v for v in values))
    if not math.isfinite(norm) or norm == 0.0:  # overflowing or underflowing magnitudes
        scale = max(abs(v) for v in values)
        values = tuple(v / scale for v in values)
        norm = math.sqrt(math.fsum(v * v for v in values))
    if norm == 0.0:
        raise VectorDimensionError("a vector must not be all zeros (it has no direction).")
    return tuple(v / norm for v in values)


def same_length(vectors: Sequence[Sized], dimension: int | None) -> None:
    """In a store without a dimension, a batch's vectors must agree with its first one."""
    if dimension is not None or not vectors:
        return
    first = len(vectors[0])
    for vector in vectors:
        if len(vector) != first:
            raise VectorDimensionError(
                f"vector has {len(vector)} dimensions but this batch holds {first}-dimensional vectors."
            )
