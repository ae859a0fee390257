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

from .admin import StoreAdmin
from .checkpoints import CheckpointService
from .config import (
    ExtractionRetryPolicy,
    ExtractionRunsIn,
    ImageInputLimitConfig,
    MemoryExtractionConfig,
    MemoryRetentionConfig,
    RetrievalConfig,
)
from .context_cards import ContextCardService
from .embedding import EmbedderHealth, EmbeddingHelper
from .extraction import ExtractionService
from .images import ImageService
from .jobs import (
    WORKER_BACKFILL_SECONDS,
    WORKER_POLL_SECONDS,
    WORKERS,
    ExtractionRunner,
    ExtractionWorker,
    JobOutcome,
)
from .linking import Linker
from .maintenance import MaintenanceService
from .messages import MessageService
from .ports import Embedder, Extractor, ImageCaptioner, LinkResolver, Summariser
from .profiles import ProfileService
from .record_service import RecordService
from .records import RecordCommands
from .searching import Searcher, SearchStrategy
from .summaries import SummaryService
from .thread_service import ThreadService
from .vector_backfill import VectorBackfill

__all__ = ["ApplicationServices", "build_services", "build_worker"]


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
    backfill: VectorBackfill
    maintenance: MaintenanceService
    profiles: ProfileService
    admin: StoreAdmin
    images: ImageService
    checkpoints: CheckpointService

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
    runs_in: ExtractionRunsIn = ExtractionRunsIn.CLIENT,
    image_captioner: ImageCaptioner | None = None,
    image_limits: ImageInputLimitConfig | None = None,
) -> ApplicationServices:
    """The services of one client, each built from the collaborators it needs. A client whose
    extraction runs in workers records jobs without an extractor of its own and runs none."""
    to_workers = runs_in is ExtractionRunsIn.WORKERS
    records_jobs = extractor is not None or to_workers
    health = EmbedderHealth()
    searcher = Searcher(store, embedder, strategy, retrieval, health=health)
    embeddings = EmbeddingHelper(embedder, searcher.retrieval.index_context, health)
    backfill = VectorBackfill(store=store, clock=clock, embeddings=embeddings)
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
        records_jobs=records_jobs,
    )
    runner = ExtractionRunner(store, clock, extraction.run_job, policy=retry_policy, runs_jobs=not to_workers)
    images = ImageService(
        store=store,
        clock=clock,
        embeddings=embeddings,
        retention=retention,
        captioner=image_captioner,
        limits=image_limits,
        new_id=new_id,
    )
    maintenance = MaintenanceService(
        store=store,
        clock=clock,
        memory=memory,
        summaries=summaries,
        embeddings=embeddings,
        runner=runner,
        has_extractor=records_jobs,
    )
    return ApplicationServices(
        images=images,
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
            backfill=backfill,
        ),
        threads=ThreadService(
            store=store,
            clock=clock,
            has_extractor=records_jobs,
            new_id=new_id,
            extraction_config=extraction_config,
            image_limits=image_limits,
        ),
        messages=MessageService(
            store=store,
            clock=clock,
            embeddings=embeddings,
            retention=retention,
            extraction=extraction,
            runner=runner,
            summaries=summaries,
            new_id=new_id,
            images=images,
            backfill=backfill,
        ),
        summaries=summaries,
        cards=ContextCardService(store=store, clock=clock, searcher=searcher, summaries=summaries),
        extraction=extraction,
        runner=runner,
        backfill=backfill,
        maintenance=maintenance,
        profiles=ProfileService(
            store=store, clock=clock, memory=memory, embeddings=embeddings, runner=runner, maintenance=maintenance
        ),
        admin=StoreAdmin(store, clock, embedder=embedder, records=memory),
        checkpoints=CheckpointService(store, clock),
    )


def build_worker(
    services: ApplicationServices,
    *,
    threads: int = WORKERS,
    poll_seconds: float = WORKER_POLL_SECONDS,
    on_outcome: Callable[[JobOutcome], None] | None = None,
    backfill_seconds: float = WORKER_BACKFILL_SECONDS,
) -> ExtractionWorker:
    """A worker serving the store's extraction backlog with these services' extraction pass
    and retry policy: a runner of its own (``threads`` attempts at once) under the loop of
    :class:`~palimpsest.application.jobs.ExtractionWorker`; each job that ends is reported to
    ``on_outcome``, and makes the worker look for more at once when its queue runs low. Every
    ``backfill_seconds`` the worker also embeds a batch of the rows stored without vectors
    (these services' :class:`~.vector_backfill.VectorBackfill`, ARCHITECTURE.md D43)."""
    worker: ExtractionWorker | None = None

    def ended(outcome: JobOutcome) -> None:
        if worker is not None and runner.backlog <= threads:  # about to run dry: look now
            worker.wake()
        if on_outcome is not None:
            on_outcome(outcome)

    runner = ExtractionRunner(
        services.store,
        services.clock,
        services.extraction.run_job,
        policy=services.runner.policy,
        workers=threads,
        on_outcome=ended,
        owner_prefix="worker",
    )
    worker = ExtractionWorker(
        services.store,
        services.clock,
        runner,
        poll_seconds=poll_seconds,
        backfill=services.backfill.run_pass,
        backfill_seconds=backfill_seconds,
    )
    return worker
