"""Application layer: ``MemoryCore``, the services and settings one client and its thread
handles share (the client builds it; use-case modules receive it)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from palimpsest.domain.errors import ThreadNotFoundError
from palimpsest.domain.model import ExtractionJob, Thread, check_id
from palimpsest.domain.ports import Clock, MemoryStore

from .config import MemoryExtractionConfig, MemoryRetentionConfig
from .indexing import message_index_text
from .memory_service import MemoryService
from .ports import Embedder, Extractor, LinkResolver, Summariser
from .searching import Searcher
from .summaries import SummaryService
from .validation import resolve_expiry

__all__ = ["JobRunner", "MAX_SEARCH_WORKERS", "MemoryCore"]

MAX_SEARCH_WORKERS = 8


class JobRunner(Protocol):
    """What the facades need of the extraction runner (``ExtractionRunner``)."""

    def start(self, job: ExtractionJob, *, inline: bool, **queueing: Any) -> None: ...

    def wait(self, timeout: float | None, *, thread_id: str | None = None) -> None: ...

    def close(self, timeout: float | None) -> None: ...


@dataclass
class MemoryCore:
    """What the client and its thread handles share."""

    store: MemoryStore
    clock: Clock
    embedder: Embedder | None
    summariser: Summariser | None
    extractor: Extractor | None
    link_resolver: LinkResolver | None
    extraction_config: MemoryExtractionConfig | None
    retention: MemoryRetentionConfig
    service: MemoryService
    searcher: Searcher
    summaries: SummaryService
    new_id: Callable[[], str]
    _pool: ThreadPoolExecutor | None = None
    _pool_lock: threading.Lock = field(default_factory=threading.Lock)
    runner: JobRunner | None = None

    def search_pool(self) -> ThreadPoolExecutor:
        """Worker threads for concurrent per-type card searches, created on first use."""
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=MAX_SEARCH_WORKERS, thread_name_prefix="palimpsest-search")
            return self._pool

    def shutdown(self) -> None:
        with self._pool_lock:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None

    def embed_documents(self, texts: Sequence[str]) -> list[tuple[float, ...] | None]:
        if self.embedder is None or not texts:
            return [None] * len(texts)
        return [tuple(map(float, v)) for v in self.embedder.embed(list(texts), is_query=False)]

    def embed_messages(self, messages: Sequence[tuple[str, str, datetime | None]]) -> list[tuple[float, ...] | None]:
        """Vectors of messages given as (content, role, timestamp): their index text under the
        configured ``index_context`` (the content alone by default)."""
        context = self.searcher.retrieval.index_context
        return self.embed_documents([message_index_text(c, r, t, context) for c, r, t in messages])

    def expiry(
        self, *, now: datetime, ttl_days: Any, ttl_anchor: Any, timestamp: datetime | None
    ) -> datetime | None:
        return resolve_expiry(
            now=now, ttl_days=ttl_days, ttl_anchor=ttl_anchor, timestamp=timestamp, retention=self.retention
        )

    def get_thread_entity(self, thread_id: str) -> Thread:
        check_id(thread_id, "thread_id")
        with self.store.reading() as uow:
            thread = uow.threads.get(thread_id)
        if thread is None:
            raise ThreadNotFoundError(f"No thread found with id {thread_id!r}.")
        return thread
