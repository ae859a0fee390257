"""Embedded adapter: one-file store — SQLite (source of truth), numpy vectors, BM25 postings, link graph.

``EmbeddedStore(path, dimension=..., busy_timeout=...)`` implements
:class:`palimpsest.domain.ports.MemoryStore`; several threads and processes may share one file.
``read_schema_state(path)`` reads a file's schema version without opening (and so migrating) it.
"""

from .link_graph import NetworkxLinkGraph
from .repositories import (
    SqliteLinkRepository,
    SqliteMessageRepository,
    SqliteRecordRepository,
    SqliteJobRepository,
    SqliteSettingsRepository,
    SqliteSummaryRepository,
    SqliteThreadRepository,
)
from .schema import read_schema_state
from .store import EmbeddedStore
from .unit_of_work import SqliteUnitOfWork
from .vector_index import NumpyVectorIndex

__all__ = [
    "EmbeddedStore",
    "NetworkxLinkGraph",
    "NumpyVectorIndex",
    "SqliteLinkRepository",
    "SqliteMessageRepository",
    "SqliteRecordRepository",
    "SqliteJobRepository",
    "SqliteSettingsRepository",
    "SqliteSummaryRepository",
    "SqliteThreadRepository",
    "SqliteUnitOfWork",
    "read_schema_state",
]
