"""Adapters layer (PostgreSQL): a store on PostgreSQL with pgvector, through psycopg 3.

``from palimpsest.adapters.postgres import PostgresStoreCore``. Importing the package loads no
driver: each public name is imported on first use (``pip install 'palimpsest-memory[postgres]'``
brings psycopg and psycopg_pool). Design: decision D32 in ARCHITECTURE.md.

* ``PostgresStoreCore``: a store's schema (one per ``memory_store_id``, versioned migrations)
  on a connection pool, its search reads (the five primitives in SQL) and its diagnostics;
* ``read_schema_state``: a store's schema version, read without migrating (``doctor``);
* ``PostgresDatabase``: the pool, with typed errors for a server that is down, a lost
  connection and refused credentials.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .connection import PostgresDatabase
    from .core import PostgresStoreCore, read_schema_state

__all__ = ["PostgresDatabase", "PostgresStoreCore", "read_schema_state"]


def __getattr__(name: str) -> Any:
    if name in ("PostgresStoreCore", "read_schema_state"):
        from . import core

        return getattr(core, name)
    if name == "PostgresDatabase":
        from .connection import PostgresDatabase

        return PostgresDatabase
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
