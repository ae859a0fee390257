"""Adapters layer (PostgreSQL): a store on PostgreSQL with pgvector, through psycopg 3.

``from palimpsest.adapters.postgres import PostgresStoreCore``. Importing the package loads no
driver: each public name is imported on first use (``pip install 'palimpsest-memory[postgres]'``
brings psycopg and psycopg_pool). Design: decision D32 in ARCHITECTURE.md.

* ``PostgresStoreCore``: a store's schema (one per ``memory_store_id``, versioned migrations)
  on a connection pool, its search reads (the five primitives in SQL) and its diagnostics;
* ``PostgresDatabase``: the pool, with typed errors for a server that is down, a lost
  connection and refused credentials.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .connection import PostgresDatabase
    from .core import PostgresStoreCore

__all__ = ["PostgresDatabase", "PostgresStoreCore"]


def __getattr__(name: str) -> Any:
    if name == "PostgresStoreCore":
        from .core import PostgresStoreCore

        return PostgresStoreCore
    if name == "PostgresDatabase":
        from .connection import PostgresDatabase

        return PostgresDatabase
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
