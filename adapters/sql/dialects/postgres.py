"""Adapters layer (SQL kit): the PostgreSQL dialect's values (psycopg 3, pgvector).

Placeholders are psycopg's (``%s``, ``%(name)s``; the kit's standard statements are written with
``?`` and bind positionally, :meth:`~palimpsest.adapters.sql.dialect.Dialect.positional`); an id
list is one array bind (``= ANY(%s)``); times are ``timestamptz`` bound as aware UTC
datetimes; JSON is ``jsonb`` bound as compact text (psycopg sends a ``str`` untyped, so the server casts it
to the column's type) and fetched as the driver's parsed value; a vector is ``vector(n)`` bound and fetched as its text
literal ``'[x,y,...]'``, so no pgvector Python package is needed. Upserts are ``INSERT ... ON
CONFLICT`` and savepoints are standard (the base class's). The driver-error map belongs to the
PostgreSQL store (its connection errors, SQLSTATEs and constraint names); this class imports no
driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from palimpsest.adapters.sql.dialect import Dialect, same_length
from palimpsest.adapters.sql.vectors import normalise_many

__all__ = ["PostgresDialect"]


class PostgresDialect(Dialect):
    """See the module docstring."""

    name: ClassVar[str] = "postgresql"
    paramstyle: ClassVar[str] = "pyformat"

    def in_list(self, column: str, values: Sequence[Any]) -> tuple[str, tuple[Any, ...]]:
        """One array bind (psycopg adapts a list to an array)."""
        return f"{column} = ANY(?)", (list(values),)

    def json_text(self, column: str) -> str:
        return f"{column}::text"

    def unit_vectors(self, embeddings: Sequence[Sequence[float]], dimension: int | None) -> list[Any]:
        units = normalise_many(embeddings, dimension)
        same_length(units, dimension)
        return units

    def encode_vector(self, unit: Any) -> str:
        """pgvector's text literal; ``repr`` of a float32 widened to float64 round-trips it."""
        return "[" + ",".join(repr(float(v)) for v in np.asarray(unit, dtype=np.float32)) + "]"

    def decode_vector(self, value: Any) -> Sequence[float]:
        if isinstance(value, str):
            text = value.strip()
            if not (text.startswith("[") and text.endswith("]")):
                raise ValueError(f"not a pgvector literal: {value[:40]!r}")
            inner = text[1:-1].strip()
            return tuple(float(part) for part in inner.split(",")) if inner else ()
        return super().decode_vector(value)
