"""Embedded adapter: one-file store — SQLite (source of truth), numpy vectors, BM25 postings, link graph.

``EmbeddedStore(path, dimension=..., busy_timeout=...)`` implements
:class:`palimpsest.domain.ports.MemoryStore`; several threads and processes may share one file.
``read_schema_state(path)`` reads a file's schema version without opening (and so migrating) it.

The vector index (``vector_index.NumpyVectorIndex``), the keyword postings
(``keyword_index.PostingsKeywordIndex``) and the link graph (``link_graph.NetworkxLinkGraph``)
are private caches of ``EmbeddedStore``, not adapters of ports (the domain has no vector-index
or link-graph port), so they are not exported here; tests and benchmarks import them from
their modules.
"""

from .repositories import SqliteMessageRepository
from .schema import read_schema_state
from .store import EmbeddedStore
from .unit_of_work import SqliteUnitOfWork

__all__ = [
    "EmbeddedStore",
    "SqliteMessageRepository",
    "SqliteUnitOfWork",
    "read_schema_state",
]
