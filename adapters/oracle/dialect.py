"""Adapters layer (Oracle): the SQL kit's dialect for python-oracledb (decision D17's conventions).

Timestamps are ``TIMESTAMP(6) WITH TIME ZONE`` bound as naive UTC datetimes (every lease sets the
session time zone to UTC, ``connection.SESSION_SETUP``) and fetched as aware UTC ones; JSON values
are bound as compact JSON text and fetched as whatever the driver returns (``dict``/``list`` with
``Decimal`` numbers for native JSON, ``str`` or a LOB for JSON stored as text); CLOBs are read as
``str``; vectors are bound and fetched as ``array.array("f")`` (FLOAT32), L2-normalised so that
cosine distance equals ``1 - dot``. Statements run through :mod:`.sql` (``datetime`` binds declared
``TIMESTAMP``); the driver-error map is :mod:`.errors`, with the store's constraint names.
"""

from __future__ import annotations

import array
import decimal
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, ClassVar

import oracledb
from palimpsest.adapters.sql.dialect import Dialect, Statement, unit_vector
from palimpsest.domain.errors import AgentMemoryError, NotFoundError

from . import sql
from .errors import UNIQUE_KEYS, constraint_base, error_info, is_connection_lost, translated
from .names import StoreNames

__all__ = ["OracleDialect", "encode_vector"]



def encode_vector(vector: Sequence[float], dimension: int | None) -> array.array[float]:
    """A validated, L2-normalised FLOAT32 array for a ``VECTOR`` bind.

    Raises ``VectorDimensionError`` (wrong dimension, non-finite values, all zeros).
    """
    return array.array("f", unit_vector(vector, dimension))


def _plain_json(value: Any) -> Any:
    """Native JSON arrives with NUMBER attributes as ``decimal.Decimal``: integral ones become
    ``int``, others ``float``, as ``json.loads`` would have made them (containers are copied)."""
    if isinstance(value, decimal.Decimal):
        if value == value.to_integral_value():
            return int(value)
        return float(value)
    if isinstance(value, dict):
        return {key: _plain_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain_json(item) for item in value]
    return value


class OracleDialect(Dialect):
    """See the module docstring. ``names`` (the store's) lets errors name its constraints."""

    name: ClassVar[str] = "oracle"
    paramstyle: ClassVar[str] = "named"
    id_batch_bytes: ClassVar[int | None] = 4_000
    """An id list travels as one JSON text bind, the argument of ``JSON_TABLE``. A VARCHAR2 value
    in a SQL expression holds at most 4000 bytes unless the database runs with ``MAX_STRING_SIZE
    = EXTENDED`` (a longer bind fails, ORA-01460/ORA-01461)."""
    driver_error: ClassVar[type[BaseException] | tuple[type[BaseException], ...]] = oracledb.Error

    def __init__(self, names: StoreNames | None = None) -> None:
        self.names = names

    # --- statements (see .sql) ----------------------------------------------------------------

    def execute(self, connection: Any, statement: Statement) -> Any:
        return sql.execute(connection, statement)  # type: ignore[arg-type]

    def fetch_one(self, connection: Any, statement: Statement) -> tuple[Any, ...] | None:
        return sql.fetch_one(connection, statement)  # type: ignore[arg-type]

    def fetch_all(self, connection: Any, statement: Statement) -> list[Any]:
        return sql.fetch_all(connection, statement)  # type: ignore[arg-type]

    def run(self, connection: Any, statement: Statement) -> int:
        return sql.run(connection, statement)  # type: ignore[arg-type]

    def run_many(self, connection: Any, statements: Sequence[Statement]) -> int:
        return sql.run_many(connection, statements)  # type: ignore[arg-type]

    def savepoint(self, depth: int) -> Statement | None:
        from .statements import savepoint

        return savepoint(depth)

    def rollback_to(self, depth: int) -> Statement | None:
        from .statements import rollback_to_savepoint

        return rollback_to_savepoint(depth)

    def release(self, depth: int) -> Statement | None:
        return None  # an Oracle savepoint ends with its transaction

    def upsert(self, table: str, keys: Sequence[str], columns: Sequence[str]) -> str:
        """A ``MERGE`` of one row of named binds."""
        source = ", ".join(f":{column} AS {column}" for column in columns)
        on = " AND ".join(f"t.{key} = v.{key}" for key in keys)
        updates = ", ".join(f"t.{column} = v.{column}" for column in columns if column not in keys)
        return (
            f"MERGE INTO {table} t\nUSING (SELECT {source} FROM DUAL) v\nON ({on})\n"
            f"WHEN MATCHED THEN UPDATE SET {updates}\n"
            f"WHEN NOT MATCHED THEN INSERT ({', '.join(columns)}) VALUES ({', '.join(f'v.{c}' for c in columns)})"
        )

    # --- values -------------------------------------------------------------------------------

    def encode_time(self, value: datetime | None) -> datetime | None:
        """A naive UTC datetime for a ``TIMESTAMP WITH TIME ZONE`` column.

        python-oracledb binds a ``datetime`` as a ``TIMESTAMP`` without its zone; Oracle converts
        it in the session time zone, which every lease sets to UTC. So the value sent is the UTC
        wall time, never a local one.
        """
        if value is None:
            return None
        return value.astimezone(UTC).replace(tzinfo=None)

    def decode_json(self, value: Any) -> Any:
        if value is None:
            return None
        if hasattr(value, "read"):
            value = value.read()
        return _plain_json(super().decode_json(value))

    def decode_text(self, value: Any) -> str | None:
        """A fetched CLOB/VARCHAR2 as ``str`` (LOB locators are read)."""
        if value is None:
            return None
        if hasattr(value, "read"):
            return str(value.read())
        return str(value)

    def unit_vectors(self, embeddings: Sequence[Sequence[float]], dimension: int | None) -> list[Any]:
        """FLOAT32 arrays; in a store without a dimension, every vector must have the first
        one's length."""
        encoded: list[array.array[float]] = []
        for embedding in embeddings:
            vector = encode_vector(embedding, dimension)
            if dimension is None:
                dimension = len(vector)
            encoded.append(vector)
        return encoded

    def decode_vector(self, value: Any) -> Sequence[float]:
        return value if isinstance(value, array.array) else tuple(map(float, value))

    # --- errors -------------------------------------------------------------------------------

    def translate(self, exc: BaseException, missing: type[AgentMemoryError] | None = None) -> AgentMemoryError:
        not_found = missing if missing is not None and issubclass(missing, NotFoundError) else None
        return translated(exc, names=self.names, missing=not_found)

    def violated(self, exc: BaseException | None) -> str | None:
        if exc is None:
            return None
        base = constraint_base(error_info(exc).message, self.names)
        return None if base is None else UNIQUE_KEYS.get(base)

    def is_connection_lost(self, exc: BaseException) -> bool:
        return is_connection_lost(exc)
