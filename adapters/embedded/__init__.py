"""Embedded adapter: one-file store — SQLite (source of truth), numpy vectors, BM25 postings, link graph.

``EmbeddedStore(path, dimension=..., busy_timeout=...)`` implements
:class:`palimpsest.domain.ports.MemoryStore`; several threads and processes may share one file.
"""

from .link_graph import NetworkxLinkGraph
from .repositories import (
    SqliteJobRepository,
    SqliteLinkRepository,
    SqliteMessageRepository,
    SqliteRecordRepository,
    SqliteSettingsRepository,
    SqliteSummaryRepository,
    SqliteThreadRepository,
)
from .store import EmbeddedStore
from .unit_of_work import SqliteUnitOfWork
from .vector_index import NumpyVectorIndex

__all__ = [
    "EmbeddedStore",
    "NetworkxLinkGraph",
    "NumpyVectorIndex",
    "SqliteJobRepository",
    "SqliteLinkRepository",
    "SqliteMessageRepository",
    "SqliteRecordRepository",
    "SqliteSettingsRepository",
    "SqliteSummaryRepository",
    "SqliteThreadRepository",
    "SqliteUnitOfWork",
]
