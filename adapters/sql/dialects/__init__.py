"""Adapters layer (SQL kit): dialects of the databases the kit runs on without a store of their own
here (a store whose dialect needs its own names, as Oracle's does, keeps it in its package)."""

from .postgres import PostgresDialect
from .sqlite import SqliteDialect

__all__ = ["PostgresDialect", "SqliteDialect"]
