"""Application layer: ``AgentMemory``, the client users import (constructor-injected, ports only).

Its constructor takes the ports and builds the application services once
(:func:`~palimpsest.application.wiring.build_services`); thread handles share them. Every
public method validates its arguments, then delegates to one service, so bad input writes nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Self

from palimpsest.domain.errors import ConfigurationError, ValidationError
from palimpsest.domain.images import ImageMimeType
from palimpsest.domain.model import (
    ExtractionJob,
    MemoryRecord,
    Thread,
    check_id,
    check_metadata,
    check_optional_id,
)
from palimpsest.domain.ports import Clock, MemoryStore
from palimpsest.domain.sentinel import NOTSET, NotSetType

from .arguments import TimeToLiveAnchor, list_limit, reject_unknown_kwargs
from .asyncio_twins import with_async_twins
from .clock import SystemClock
from .config import (
    ExtractionRetryPolicy,
    ExtractionRunsIn,
    ImageInputLimitConfig,
    MemoryExtractionConfig,
    MemoryRetentionConfig,
    RetrievalConfig,
    ThreadSettings,
)
from .images import ImageRecord
from .ports import Embedder, Extractor, ImageCaptioner, LinkResolver, Summariser
from .results import SearchResult
from .searching import SearchScope, SearchStrategy, resolve_scope
from .store_settings import sync_store_settings
from .thread import MemoryThread
from .usage import TokenUsage, merged_usage
from .wiring import build_services, build_worker

if TYPE_CHECKING:
    from .jobs import ExtractionWorker, JobOutcome

__all__ = ["AgentMemory"]

@with_async_twins(
    "create_thread",
    "get_thread",
    "update_thread",
    "delete_thread",
    "list_threads",
    "add_memory",
    "update_memory",
    "delete_memory",
    "list_memories",
    "link_records",
    "update_record_link",
    "delete_record_link",
    "search",
    "purge_expired",
    "reembed",
    "wait_for_memory_extraction",
    "pending_extractions",
    "failed_extractions",
    "retry_failed_extractions",
    "close",
    # images part (re-home with the facade's other methods)
    "add_image",
    "update_image",
    "delete_image",
    "list_images",
)
class AgentMemory:
    """Durable memory for agents: threads, memories, links, search and context cards.

    Every dependency is a port passed in: ``store`` (required), and optionally an
    ``embedder`` (``search_strategy`` "hybrid" by default with an embedder: dense and keyword
    lists fused as ``retrieval`` says; "keyword" without one; "vector" on request), a ``summariser`` (summaries and context cards; without one
    they fall back to a transcript of recent messages), an ``extractor`` and a
    ``link_resolver`` (automatic extraction). ``memory_extraction_config`` holds client-wide
    defaults that threads inherit; ``memory_retention_config`` is stored with the store so
    every client of it applies the same TTL policy.

    ``extraction_runs_in="workers"`` leaves extraction to worker processes (``palimpsest worker
    --store ...``; ARCHITECTURE.md D34): an append still records its extraction job with its
    messages (no extractor is needed here), but this client runs no job, inline or in the
    background, and resumes none; :meth:`wait_for_memory_extraction` waits for the workers.
    """

    def __init__(
        self,
        *,
        store: MemoryStore,
        embedder: Embedder | None = None,
        summariser: Summariser | None = None,
        extractor: Extractor | None = None,
        link_resolver: LinkResolver | None = None,
        clock: Clock | None = None,
        memory_extraction_config: MemoryExtractionConfig | None = None,
        memory_retention_config: MemoryRetentionConfig | None = None,
        search_strategy: SearchStrategy | None = None,
        retrieval: RetrievalConfig | None = None,
        id_factory: Callable[[], str] | None = None,
        close_store: bool = False,
        allow_embedding_model_change: bool = False,
        extraction_retry_policy: ExtractionRetryPolicy | None = None,
        extraction_runs_in: ExtractionRunsIn | str = ExtractionRunsIn.CLIENT,
        on_close: Callable[[], object] | None = None,
        image_captioner: ImageCaptioner | None = None,
        image_input_limit_config: ImageInputLimitConfig | None = None,
    ) -> None:
        runs_in = ExtractionRunsIn.parse(extraction_runs_in)
        if image_input_limit_config is not None and not isinstance(image_input_limit_config, ImageInputLimitConfig):
            raise ConfigurationError("image_input_limit_config must be an ImageInputLimitConfig.")
        if image_captioner is not None and not isinstance(image_captioner, ImageCaptioner):
            raise ConfigurationError("image_captioner must be an ImageCaptioner (a describe(image, mime_type) method).")
        if extraction_retry_policy is not None and not isinstance(extraction_retry_policy, ExtractionRetryPolicy):
            raise ConfigurationError("extraction_retry_policy must be an ExtractionRetryPolicy.")
        if memory_extraction_config is not None and not isinstance(memory_extraction_config, MemoryExtractionConfig):
            raise ConfigurationError("memory_extraction_config must be a MemoryExtractionConfig.")
        if memory_retention_config is not None and not isinstance(memory_retention_config, MemoryRetentionConfig):
            raise ConfigurationError("memory_retention_config must be a MemoryRetentionConfig.")
        if retrieval is not None and not isinstance(retrieval, RetrievalConfig):
            raise ConfigurationError("retrieval must be a RetrievalConfig.")
        if on_close is not None and not callable(on_close):
            raise ConfigurationError("on_close must be a callable taking no arguments.")
        # Hybrid is the default with an embedder: on both quality sets it retrieves better than
        # either list alone, and the in-memory BM25 index keeps it within the latency targets
        # (BENCHMARKS.md, "Retrieval quality"; ARCHITECTURE.md D20).
        strategy: SearchStrategy = search_strategy or ("hybrid" if embedder is not None else "keyword")
        if strategy not in ("vector", "keyword", "hybrid"):
            raise ConfigurationError("search_strategy must be 'vector', 'keyword' or 'hybrid'.")
        if strategy != "keyword" and embedder is None:
            raise ConfigurationError(f"search_strategy={strategy!r} needs an embedder.")
        clock = clock or SystemClock()
        retention = sync_store_settings(
            store,
            embedder,
            memory_retention_config,
            check_model=not allow_embedding_model_change,
            index_context=(retrieval or RetrievalConfig()).index_context,
        )
        self._services = build_services(
            store=store,
            clock=clock,
            embedder=embedder,
            summariser=summariser,
            extractor=extractor,
            link_resolver=link_resolver,
            extraction_config=memory_extraction_config,
            retention=retention,
            strategy=strategy,
            retrieval=retrieval,
            new_id=id_factory or (lambda: str(uuid.uuid4())),
            retry_policy=extraction_retry_policy,
            runs_in=runs_in,
            image_captioner=image_captioner,
            image_limits=image_input_limit_config,
        )
        self._closed = False
        self._close_store = close_store
        self._on_close = on_close
        self._extractor = extractor
        if extractor is not None:
            self._services.runner.resume()  # jobs left by a crash or an earlier process (not for workers)

    @property
    def store(self) -> MemoryStore:
        return self._services.store

    @property
    def search_strategy(self) -> SearchStrategy:
        """The strategy searches use unless a call says otherwise: "hybrid" by default with an
        embedder, "keyword" without one, or what the constructor was given."""
        return self._services.searcher.strategy

    @property
    def retrieval(self) -> RetrievalConfig:
        """How this client's searches rank and refine what they find (the library's defaults
        unless the constructor was given a ``RetrievalConfig``)."""
        return self._services.searcher.retrieval

    @property
    def token_usage(self) -> TokenUsage:
        """What this client's model adapters have consumed so far, per operation and in total.

        A snapshot merged from every configured adapter that keeps a token ledger (the
        OpenAI-compatible ones do; offline adapters cost nothing and report nothing). Reset the
        counts on the adapters' own ``usage`` ledgers.
        """
        return merged_usage(self._services.models)

    # -- threads ---------------------------------------------------------------------------

    def create_thread(
        self,
        *,
        thread_id: str | NotSetType = NOTSET,
        user_id: str | None | NotSetType = NOTSET,
        agent_id: str | None | NotSetType = NOTSET,
        metadata: Mapping[str, Any] | None | NotSetType = NOTSET,
        memory_extraction_config: MemoryExtractionConfig | NotSetType = NOTSET,
        context_card_type_search_concurrency: int | NotSetType = NOTSET,
        max_message_token_length: int | NotSetType = NOTSET,
        context_card_token_limit: int | NotSetType = NOTSET,
        image_input_limit_config: ImageInputLimitConfig | NotSetType = NOTSET,
        **kwargs: Any,
    ) -> MemoryThread:
        """Create and persist a thread (ids generated when omitted) with its resolved settings."""
        reject_unknown_kwargs("create_thread", kwargs)
        services = self._services
        tid = services.new_id() if isinstance(thread_id, NotSetType) else check_id(thread_id, "thread_id")
        uid = None if isinstance(user_id, NotSetType) else check_optional_id(user_id, "user_id")
        aid = None if isinstance(agent_id, NotSetType) else check_optional_id(agent_id, "agent_id")
        settings = ThreadSettings.create(
            client_config=services.extraction_config,
            thread_config=None if isinstance(memory_extraction_config, NotSetType) else memory_extraction_config,
            max_message_token_length=max_message_token_length,
            context_card_token_limit=context_card_token_limit,
            context_card_type_search_concurrency=context_card_type_search_concurrency,
        ).with_image_limits(image_input_limit_config, services.images.limits)
        services.threads.check(settings)
        meta = None if isinstance(metadata, NotSetType) else check_metadata(metadata)
        thread = services.threads.create(tid, uid, aid, meta, settings)
        return MemoryThread(services, thread, settings)

    def get_thread(
        self,
        thread_id: str,
        *,
        memory_extraction_config: MemoryExtractionConfig | NotSetType = NOTSET,
        context_card_type_search_concurrency: int | NotSetType = NOTSET,
        max_message_token_length: int | NotSetType = NOTSET,
        context_card_token_limit: int | NotSetType = NOTSET,
        image_input_limit_config: ImageInputLimitConfig | NotSetType = NOTSET,
        **kwargs: Any,
    ) -> MemoryThread:
        """Reopen a thread; overrides apply to the returned handle only and are not persisted."""
        reject_unknown_kwargs("get_thread", kwargs)
        check_id(thread_id, "thread_id")
        thread = self._services.threads.get(thread_id)
        settings = ThreadSettings.from_json(thread.config).overridden(
            memory_extraction_config=memory_extraction_config,
            max_message_token_length=max_message_token_length,
            context_card_token_limit=context_card_token_limit,
            context_card_type_search_concurrency=context_card_type_search_concurrency,
        ).with_image_limits(image_input_limit_config)
        return MemoryThread(self._services, thread, self._services.threads.check(settings))

    def update_thread(
        self,
        thread_id: str,
        metadata: Mapping[str, Any] | None | NotSetType = NOTSET,
        *,
        memory_extraction_config: MemoryExtractionConfig | NotSetType = NOTSET,
        max_message_token_length: int | NotSetType = NOTSET,
        context_card_token_limit: int | NotSetType = NOTSET,
        image_input_limit_config: ImageInputLimitConfig | NotSetType = NOTSET,
        **kwargs: Any,
    ) -> MemoryThread:
        """Persist new metadata (whole replace; ``None`` clears) and durable setting overrides.

        ``user_id`` and ``agent_id`` cannot change; unknown arguments are rejected."""
        reject_unknown_kwargs("update_thread", kwargs)
        check_id(thread_id, "thread_id")
        new_meta = NOTSET if isinstance(metadata, NotSetType) else check_metadata(metadata)

        def override(settings: ThreadSettings) -> ThreadSettings:
            return settings.overridden(
                memory_extraction_config=memory_extraction_config,
                max_message_token_length=max_message_token_length,
                context_card_token_limit=context_card_token_limit,
            ).with_image_limits(image_input_limit_config)

        thread, settings = self._services.threads.update(thread_id, new_meta, override)
        return MemoryThread(self._services, thread, settings)

    def delete_thread(self, thread_id: str) -> int:
        """Delete a thread with its messages, summaries and the memories scoped to it."""
        check_id(thread_id, "thread_id")
        return self._services.maintenance.delete_thread(thread_id)

    def list_threads(
        self,
        user_id: str | None,
        agent_id: str | None | NotSetType = NOTSET,
        metadata_filter: Mapping[str, Any] | None | NotSetType = NOTSET,
        limit: int | None | NotSetType = NOTSET,
    ) -> list[Thread]:
        """Threads of a user (``None``: threads without a user), oldest first; ``limit`` keeps
        the newest ``limit`` (omitted or ``None``: all of them)."""
        check_optional_id(user_id, "user_id")
        return self._services.threads.list(
            user_id=user_id, agent_id=agent_id, metadata_filter=metadata_filter, limit=list_limit(limit)
        )

    # -- memories --------------------------------------------------------------------------

    def add_memory(
        self,
        content: str,
        *,
        memory_type: str | NotSetType = NOTSET,
        user_id: str | None | NotSetType = NOTSET,
        agent_id: str | None | NotSetType = NOTSET,
        thread_id: str | None | NotSetType = NOTSET,
        memory_id: str | NotSetType = NOTSET,
        metadata: Mapping[str, Any] | None | NotSetType = NOTSET,
        timestamp: str | datetime | None | NotSetType = NOTSET,
        ttl_days: float | None | NotSetType = NOTSET,
        ttl_anchor: TimeToLiveAnchor | NotSetType = NOTSET,
        memory_id_to_link: str | NotSetType = NOTSET,
        link_type: str | NotSetType = NOTSET,
        link_id: str | NotSetType = NOTSET,
        link_timestamp: str | datetime | None | NotSetType = NOTSET,
        link_metadata: Mapping[str, Any] | None | NotSetType = NOTSET,
        autonomous_linking: bool | NotSetType = NOTSET,
    ) -> str:
        """Store a memory-like record (default type ``memory``) and return its id.

        With ``memory_id_to_link`` + ``link_type`` the new memory is linked to an existing one
        in the same transaction; an omitted agent or thread is inherited from a target of the
        same user, but an omitted user means unscoped, as without a link (so the link may not
        reach into a user's records: ``CrossScopeLinkError``). Otherwise, with
        ``autonomous_linking`` the link resolver links it to its closest existing memories
        after it is stored; it defaults to on only when the resolver is model-backed
        (``uses_model``), so the offline rules link extracted memories but not these."""
        return self._services.records.add_memory(
            content,
            memory_type=memory_type,
            user_id=user_id,
            agent_id=agent_id,
            thread_id=thread_id,
            memory_id=memory_id,
            metadata=metadata,
            timestamp=timestamp,
            ttl_days=ttl_days,
            ttl_anchor=ttl_anchor,
            memory_id_to_link=memory_id_to_link,
            link_type=link_type,
            link_id=link_id,
            link_timestamp=link_timestamp,
            link_metadata=link_metadata,
            autonomous_linking=autonomous_linking,
        )

    def update_memory(
        self,
        memory_id: str,
        content: str | NotSetType = NOTSET,
        metadata: Mapping[str, Any] | None | NotSetType = NOTSET,
        timestamp: str | datetime | None | NotSetType = NOTSET,
        ttl_days: float | None | NotSetType = NOTSET,
        ttl_anchor: TimeToLiveAnchor | NotSetType = NOTSET,
        **kwargs: Any,
    ) -> str:
        """Partial update (metadata replaced whole); scope and type are immutable."""
        reject_unknown_kwargs("update_memory", kwargs)
        return self._services.records.update_memory(memory_id, content, metadata, timestamp, ttl_days, ttl_anchor)

    def delete_memory(self, memory_id: str) -> int:
        check_id(memory_id, "memory_id")
        return int(self._services.memory.delete_record(memory_id))

    def list_memories(
        self,
        user_id: str | None | NotSetType = NOTSET,
        agent_id: str | None | NotSetType = NOTSET,
        thread_id: str | None | NotSetType = NOTSET,
        metadata_filter: Mapping[str, Any] | None | NotSetType = NOTSET,
        limit: int | None | NotSetType = NOTSET,
    ) -> list[MemoryRecord]:
        """Memory-like records, oldest first. Omitted = no filter; ``None`` = unscoped only.
        ``limit`` keeps the newest ``limit`` (omitted or ``None``: all of them)."""
        return self._services.memory.list_records(
            user_id=user_id,
            agent_id=agent_id,
            thread_id=thread_id,
            metadata_filter=metadata_filter,
            limit=list_limit(limit),
        )

    # -- links -----------------------------------------------------------------------------

    def link_records(
        self,
        source_record_id: str,
        source_record_type: str,
        target_record_id: str,
        target_record_type: str,
        relation_type: str,
        opposite_relation_type: str | NotSetType = NOTSET,
        relation_id: str | NotSetType = NOTSET,
        timestamp: str | datetime | None | NotSetType = NOTSET,
        metadata: Mapping[str, Any] | None | NotSetType = NOTSET,
    ) -> str:
        """Link two memory-like records (source → target); returns the relation id."""
        return self._services.records.link_records(
            source_record_id,
            source_record_type,
            target_record_id,
            target_record_type,
            relation_type,
            opposite_relation_type,
            relation_id,
            timestamp,
            metadata,
        )

    def update_record_link(
        self,
        relation_id: str,
        relation_type: str | NotSetType = NOTSET,
        opposite_relation_type: str | NotSetType = NOTSET,
        timestamp: str | datetime | None | NotSetType = NOTSET,
        metadata: Mapping[str, Any] | None | NotSetType = NOTSET,
    ) -> int:
        """Change a link (omitted fields unchanged; ``None`` clears timestamp/metadata); 0 if absent."""
        return self._services.records.update_record_link(relation_id, relation_type, opposite_relation_type, timestamp, metadata)

    def delete_record_link(
        self,
        source_record_id: str | NotSetType = NOTSET,
        source_record_type: str | NotSetType = NOTSET,
        target_record_id: str | NotSetType = NOTSET,
        target_record_type: str | NotSetType = NOTSET,
        relation_type: str | NotSetType = NOTSET,
        relation_id: str | NotSetType = NOTSET,
    ) -> int:
        """Delete by ``relation_id`` alone, or by the complete directed tuple."""
        return self._services.records.delete_record_link(
            source_record_id, source_record_type, target_record_id, target_record_type, relation_type, relation_id
        )

    # -- search ----------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        user_id: str | None | NotSetType = NOTSET,
        agent_id: str | None | NotSetType = NOTSET,
        thread_id: str | None | NotSetType = NOTSET,
        exact_user_match: bool | NotSetType = NOTSET,
        exact_agent_match: bool | NotSetType = NOTSET,
        exact_thread_match: bool | NotSetType = NOTSET,
        max_results: int | NotSetType = NOTSET,
        token_budget: int | None | NotSetType = NOTSET,
        soft_token_budget: int | None | NotSetType = NOTSET,
        record_types: Iterable[str] | None | NotSetType = NOTSET,
        metadata_filter: Mapping[str, Any] | None | NotSetType = NOTSET,
        num_hops: int | NotSetType = NOTSET,
        max_linked_results: int | NotSetType = NOTSET,
        include_invalid_results: bool | NotSetType = NOTSET,
        scope: SearchScope | NotSetType = NOTSET,
        search_strategy: SearchStrategy | NotSetType = NOTSET,
    ) -> list[SearchResult]:
        """Scoped retrieval over messages and memories, with optional graph hops.

        ``search_strategy`` overrides the client's for this call ("vector", "keyword" or
        "hybrid"; the first and last need an embedder)."""
        resolved = resolve_scope(
            user_id=user_id,
            agent_id=agent_id,
            thread_id=thread_id,
            exact_user_match=exact_user_match,
            exact_agent_match=exact_agent_match,
            exact_thread_match=exact_thread_match,
            scope=scope,
            require_user=True,
        )
        return self._services.searcher.run(
            query,
            now=self._services.clock.now(),
            scope=resolved,
            max_results=max_results,
            record_types=record_types,
            metadata_filter=metadata_filter,
            num_hops=num_hops,
            max_linked_results=max_linked_results,
            include_invalid_results=include_invalid_results,
            token_budget=token_budget,
            soft_token_budget=soft_token_budget,
            search_strategy=search_strategy,
        )

    # -- retention and lifecycle -----------------------------------------------------------

    def purge_expired(self) -> int:
        """Physically remove expired messages and memories; returns how many rows went.

        Summaries that covered a purged message are retired (a fence revision), so purged
        text does not live on in them; memories a purged memory had retired become valid."""
        return self._services.maintenance.purge_expired()

    def reembed(self, *, batch_size: int = 256, progress: Callable[[int, int], None] | None = None) -> int:
        """Recompute every vector with this client's embedder from the stored text (nothing is
        re-extracted), then record the new model as the store's. Returns how many records and
        messages were embedded; ``progress(done, total)`` is called after each batch.

        A model of another dimension first clears the old vectors; until this finishes, vector
        search returns only what has been re-embedded (keyword search is unaffected)."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValidationError("batch_size must be a positive integer.")
        if progress is not None and not callable(progress):
            raise ValidationError("progress must be a callable progress(done, total) or None.")
        return self._services.maintenance.reembed(batch_size=batch_size, progress=progress)

    def wait_for_memory_extraction(self, timeout: float | None = 300.0) -> None:
        """Wait for the background extraction this client started, retries of failed attempts
        included, until each job is done or failed for good (``WaitTimeoutError`` when it
        takes longer than ``timeout`` seconds; the jobs stay durable either way).

        A client whose extraction runs in workers waits until every job that was to be run
        when the call began (in the whole store) was run by the workers, done or failed for
        good; ``WaitTimeoutError`` after ``timeout`` (when no worker runs, say)."""
        self._services.runner.wait(timeout)

    def extraction_worker(
        self,
        *,
        threads: int = 4,
        poll_seconds: float = 0.5,
        on_outcome: Callable[[JobOutcome], None] | None = None,
    ) -> ExtractionWorker:
        """A worker that serves the store's extraction backlog with this client's extractor,
        models and retry policy (lease included): what ``palimpsest worker`` runs. Call its
        ``run(stop, drain=...)`` (see :class:`~palimpsest.application.jobs.ExtractionWorker`);
        ``threads`` attempts run at once; ``on_outcome`` hears of each job that ends. Build
        the client with ``extraction_runs_in="workers"`` so it resumes nothing itself.
        ``ConfigurationError`` without an extractor."""
        if self._extractor is None:
            raise ConfigurationError("an extraction worker needs a client with an extractor.")
        if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= 64:
            raise ConfigurationError("threads must be an integer between 1 and 64.")
        if isinstance(poll_seconds, bool) or not isinstance(poll_seconds, (int, float)) or not 0 < poll_seconds < 3600:
            raise ConfigurationError("poll_seconds must be a positive number of seconds (below an hour).")
        if on_outcome is not None and not callable(on_outcome):
            raise ConfigurationError("on_outcome must be a callable taking a JobOutcome, or None.")
        return build_worker(self._services, threads=threads, poll_seconds=poll_seconds, on_outcome=on_outcome)

    def pending_extractions(
        self, thread_id: str | None = None, *, limit: int | None | NotSetType = NOTSET
    ) -> list[ExtractionJob]:
        """Extraction jobs still to run (of one thread, or all), oldest first, whichever
        client queued them: waiting for a first attempt, running, or retrying after a failed
        attempt (``job.state(now)`` says which; ``job.last_error`` is the failed attempt's
        reason, ``job.claimed_until`` the time of the next attempt). Jobs failed for good are
        listed by :meth:`failed_extractions`."""
        check_optional_id(thread_id, "thread_id")
        return self._services.maintenance.pending_extractions(thread_id, limit=list_limit(limit))

    def failed_extractions(
        self, thread_id: str | None = None, *, limit: int | None | NotSetType = NOTSET
    ) -> list[ExtractionJob]:
        """Extraction jobs that failed their last allowed attempt (of one thread, or all),
        oldest failure first, each with ``failed_at`` and ``failure_reason`` (``limit`` keeps
        the first ``limit``; omitted or ``None``: all). Their messages are stored and
        searchable; only the memories were not extracted."""
        check_optional_id(thread_id, "thread_id")
        return self._services.maintenance.failed_extractions(thread_id, limit=list_limit(limit))

    def retry_failed_extractions(self, thread_id: str | None = None) -> int:
        """Queue the failed extraction jobs (of one thread, or all) again with a fresh budget
        of attempts; returns how many. They run like any job (inline mode: before this
        returns). ``ConfigurationError`` when this client has no extractor."""
        check_optional_id(thread_id, "thread_id")
        return self._services.maintenance.retry_failed_extractions(thread_id)

    def close(self, timeout: float | None = 300.0) -> None:
        """Stop using the store; idempotent. The store is closed too when this client was
        told it owns it (``close_store=True``); then ``on_close`` runs, once: the composition
        root (``open_memory``) passes the shutdown of the store and pool it opened."""
        if self._closed:
            return
        self._closed = True
        if self._services.runner.inherited:
            # A forked child's copy of its parent's client: the store, the pool and the jobs
            # are the parent's; closing them here would act on the parent's connections.
            return
        try:
            self._services.close(timeout)
            if self._close_store:
                self._services.store.close()
        finally:
            if self._on_close is not None:
                self._on_close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- images (images part: thin facades over ImageService; re-home with the others) -------

    def add_image(
        self,
        image: bytes,
        description: str | None | NotSetType = NOTSET,
        mime_type: ImageMimeType | str | NotSetType = NOTSET,
        image_id: str | NotSetType = NOTSET,
        *,
        user_id: str | None | NotSetType = NOTSET,
        agent_id: str | None | NotSetType = NOTSET,
        thread_id: str | NotSetType = NOTSET,
        metadata: Mapping[str, Any] | None | NotSetType = NOTSET,
        timestamp: str | datetime | None | NotSetType = NOTSET,
        ttl_days: float | None | NotSetType = NOTSET,
        ttl_anchor: TimeToLiveAnchor | NotSetType = NOTSET,
        image_input_limit_config: ImageInputLimitConfig | NotSetType = NOTSET,
        **kwargs: Any,
    ) -> str:
        """Store a standalone image (PNG, JPEG or WebP; the type is detected when omitted) and
        return its id. Without a ``description`` (or with ``None``) the client's image
        captioner writes one. At least one of ``user_id``, ``agent_id``, ``thread_id``."""
        reject_unknown_kwargs("add_image", kwargs)
        return self._services.images.add_image(
            image, description=description, mime_type=mime_type, image_id=image_id, user_id=user_id,
            agent_id=agent_id, thread_id=thread_id, metadata=metadata, timestamp=timestamp, ttl_days=ttl_days,
            ttl_anchor=ttl_anchor, limits=_limits(image_input_limit_config),
        )

    def update_image(
        self,
        image_id: str,
        image: bytes | NotSetType = NOTSET,
        description: str | None | NotSetType = NOTSET,
        mime_type: ImageMimeType | str | NotSetType = NOTSET,
        metadata: Mapping[str, Any] | None | NotSetType = NOTSET,
        timestamp: str | datetime | None | NotSetType = NOTSET,
        ttl_days: float | None | NotSetType = NOTSET,
        ttl_anchor: TimeToLiveAnchor | NotSetType = NOTSET,
        **kwargs: Any,
    ) -> str:
        """Change an image: its bytes (``image`` and ``mime_type`` together), description
        (``None`` writes a new caption), metadata, timestamp or time to live."""
        reject_unknown_kwargs("update_image", kwargs)
        return self._services.images.update_image(
            image_id, image=image, description=description, mime_type=mime_type, metadata=metadata,
            timestamp=timestamp, ttl_days=ttl_days, ttl_anchor=ttl_anchor,
        )

    def delete_image(self, image_id: str) -> int:
        """Delete a standalone image: 1, or 0 when there is none (an attached image is refused)."""
        return self._services.images.delete_image(image_id)

    def list_images(
        self,
        image_id: str | NotSetType = NOTSET,
        user_id: str | None | NotSetType = NOTSET,
        agent_id: str | None | NotSetType = NOTSET,
        thread_id: str | None | NotSetType = NOTSET,
        metadata_filter: Mapping[str, Any] | None | NotSetType = NOTSET,
        include_bytes: bool | NotSetType = NOTSET,
        limit: int | None | NotSetType = NOTSET,
    ) -> list[ImageRecord]:
        """Images of a scope (at least one of ``user_id``, ``agent_id``, ``thread_id`` given as
        an id), oldest first; ``include_bytes=True`` only for one ``image_id``."""
        return self._services.images.list_images(
            image_id=image_id, user_id=user_id, agent_id=agent_id, thread_id=thread_id,
            metadata_filter=metadata_filter, include_bytes=include_bytes, limit=list_limit(limit),
        )


def _limits(value: object) -> ImageInputLimitConfig | None:
    if isinstance(value, NotSetType):
        return None
    if not isinstance(value, ImageInputLimitConfig):
        raise ConfigurationError("image_input_limit_config must be an ImageInputLimitConfig.")
    return value
