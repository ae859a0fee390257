"""Application layer: the application services of one client, built in one place.

``build_services`` takes the ports (store, clock, models) and the resolved configuration and
returns :class:`ApplicationServices`, the named services the facades delegate to. Each service
receives only the collaborators it uses, so a test can build any of them on its own; this
module is the only one that knows how they fit together. (The adapters' composition root,
``open_memory``, chooses the ports; ``AgentMemory.__init__`` calls this.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from palimpsest.domain.ports import Clock, MemoryStore

from .config import ExtractionRetryPolicy, MemoryExtractionConfig, MemoryRetentionConfig, RetrievalConfig
from .context_cards import ContextCardService
from .embedding import EmbeddingHelper
from .extraction import ExtractionRunner, ExtractionService
from .linking import Linker
from .maintenance import MaintenanceService
from .messages import MessageService
from .ports import Embedder, Extractor, LinkResolver, Summariser
from .record_service import RecordService
from .records import RecordCommands
from .searching import Searcher, SearchStrategy
from .summaries import SummaryService
from .thread_service import ThreadService

__all__ = ["ApplicationServices", "build_services"]


@dataclass(frozen=True, slots=True)
class ApplicationServices:
    """What one client and its thread handles share: the ports they read directly, the
    client-wide configuration, and the application services."""

    store: MemoryStore
    clock: Clock
    new_id: Callable[[], str]
    extraction_config: MemoryExtractionConfig | None
    models: tuple[object | None, ...]
    """The model ports (embedder, extractor, summariser, link resolver, reranker), for usage."""
    searcher: Searcher
    memory: RecordService
    linker: Linker
    records: RecordCommands
    threads: ThreadService
    messages: MessageService
    summaries: SummaryService
    cards: ContextCardService
    extraction: ExtractionService
    runner: ExtractionRunner
    maintenance: MaintenanceService

    def close(self, timeout: float | None) -> None:
        """Finish the queued extraction jobs (within ``timeout``), then stop the runner and the
        card search workers."""
        try:
            self.runner.close(timeout)
        finally:
            self.cards.close()


def build_services(
    *,
    store: MemoryStore,
    clock: Clock,
    embedder: Embedder | None,
    summariser: Summariser | None,
    extractor: Extractor | None,
    link_resolver: LinkResolver | None,
    extraction_config: MemoryExtractionConfig | None,
    retention: MemoryRetentionConfig,
    strategy: SearchStrategy,
    retrieval: RetrievalConfig | None,
    new_id: Callable[[], str],
    retry_policy: ExtractionRetryPolicy | None,
) -> ApplicationServices:
    """The services of one client, each built from the collaborators it needs."""
    searcher = Searcher(store, embedder, strategy, retrieval)
    embeddings = EmbeddingHelper(embedder, searcher.retrieval.index_context)
    memory = RecordService(store, clock, id_factory=new_id)
    summaries = SummaryService(store, clock, summariser)
    linker = Linker(searcher=searcher, clock=clock, memory=memory, embeddings=embeddings, resolver=link_resolver)
    extraction = ExtractionService(
        store=store,
        clock=clock,
        extractor=extractor,
        searcher=searcher,
        memory=memory,
        linker=linker,
        embeddings=embeddings,
        retention=retention,
        new_id=new_id,
    )
    runner = ExtractionRunner(store, clock, extraction.run_job, policy=retry_policy)
    return ApplicationServices(
        store=store,
        clock=clock,
        new_id=new_id,
        extraction_config=extraction_config,
        models=(embedder, extractor, summariser, link_resolver, searcher.retrieval.reranker),
        searcher=searcher,
        memory=memory,
        linker=linker,
        records=RecordCommands(
            store=store,
            clock=clock,
            memory=memory,
            embeddings=embeddings,
            linker=linker,
            retention=retention,
            extraction_config=extraction_config,
            new_id=new_id,
        ),
        threads=ThreadService(store=store, clock=clock, has_extractor=extractor is not None),
        messages=MessageService(
            store=store,
            clock=clock,
            embeddings=embeddings,
            retention=retention,
            extraction=extraction,
            runner=runner,
            summaries=summaries,
        ),
        summaries=summaries,
        cards=ContextCardService(store=store, clock=clock, searcher=searcher, summaries=summaries),
        extraction=extraction,
        runner=runner,
        maintenance=MaintenanceService(
            store=store,
            clock=clock,
            memory=memory,
            summaries=summaries,
            embeddings=embeddings,
            runner=runner,
            has_extractor=extractor is not None,
        ),
    )
