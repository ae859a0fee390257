"""Application layer: ``AgentMemory``, the client users import (constructor-injected, ports only).

It owns the shared machinery (store, clock, embedder, summariser, the record/link service,
the searcher) in one ``MemoryCore`` that thread handles share; every public method validates
its arguments before touching the store, so bad input writes nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from palimpsest.domain.errors import (
    ConfigurationError,
    ThreadNotFoundError,
    ValidationError,
)
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

from .asyncio_twins import with_async_twins
from .clock import SystemClock
from .config import (
    ExtractionRetryPolicy,
    MemoryExtractionConfig,
    MemoryExtractionMode,
    MemoryRetentionConfig,
    RetrievalConfig,
)
from .extraction import ExtractionRunner, ExtractionService
from .indexing import INDEX_CONTEXT_SETTING
from .memory_service import MemoryService
from .ports import Embedder, Extractor, LinkResolver, Summariser
from .results import SearchResult
from .searching import Searcher, SearchScope, SearchStrategy, resolve_scope
from .records import add_memory, delete_record_link, link_records, update_memory, update_record_link
from .store_settings import EMBEDDING_MODEL_SETTING, sync_store_settings
from .summaries import SummaryService
from .wiring import MemoryCore
from .config import ThreadSettings
from .thread import MemoryThread
from .usage import TokenUsage, merged_usage
from .validation import TimeToLiveAnchor, list_limit, reject_unknown_kwargs

__all__ = ["AgentMemory", "MemoryCore"]

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
        on_close: Callable[[], object] | None = None,
    ) -> None:
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
        new_id = id_factory or (lambda: str(uuid.uuid4()))
        self._core = MemoryCore(
            store=store,
            clock=clock,
            embedder=embedder,
            summariser=summariser,
            extractor=extractor,
            link_resolver=link_resolver,
            extraction_config=memory_extraction_config,
            retention=retention,
            service=MemoryService(store, clock, id_factory=new_id),
            searcher=Searcher(store, embedder, strategy, retrieval),
            summaries=SummaryService(store, clock, summariser),
            new_id=new_id,
        )
        self._closed = False
        self._close_store = close_store
        self._on_close = on_close
        self._core.runner = ExtractionRunner(
            store, clock, ExtractionService(self._core).run_job, policy=extraction_retry_policy
        )
        if extractor is not None:
            self._core.runner.resume()  # jobs left by a crash or an earlier process

    @property
    def store(self) -> MemoryStore:
        return self._core.store

    @property
    def search_strategy(self) -> SearchStrategy:
        """The strategy searches use unless a call says otherwise: "hybrid" by default with an
        embedder, "keyword" without one, or what the constructor was given."""
        return self._core.searcher.strategy

    @property
    def retrieval(self) -> RetrievalConfig:
        """How this client's searches rank and refine what they find (the library's defaults
        unless the constructor was given a ``RetrievalConfig``)."""
        return self._core.searcher.retrieval

    @property
    def token_usage(self) -> TokenUsage:
        """What this client's model adapters have consumed so far, per operation and in total.

        A snapshot merged from every configured adapter that keeps a token ledger (the
        OpenAI-compatible ones do; offline adapters cost nothing and report nothing). Reset the
        counts on the adapters' own ``usage`` ledgers.
        """
        core = self._core
        return merged_usage(
            (core.embedder, core.extractor, core.summariser, core.link_resolver, core.searcher.retrieval.reranker)
        )

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
        **kwargs: Any,
    ) -> MemoryThread:
        """Create and persist a thread (ids generated when omitted) with its resolved settings."""
        reject_unknown_kwargs("create_thread", kwargs)
        core = self._core
        tid = core.new_id() if isinstance(thread_id, NotSetType) else check_id(thread_id, "thread_id")
        uid = None if isinstance(user_id, NotSetType) else check_optional_id(user_id, "user_id")
        aid = None if isinstance(agent_id, NotSetType) else check_optional_id(agent_id, "agent_id")
        settings = ThreadSettings.create(
            client_config=core.extraction_config,
            thread_config=None if isinstance(memory_extraction_config, NotSetType) else memory_extraction_config,
            max_message_token_length=max_message_token_length,
            context_card_token_limit=context_card_token_limit,
            context_card_type_search_concurrency=context_card_type_search_concurrency,
        )
        settings.check_capabilities(has_extractor=core.extractor is not None)
        now = core.clock.now()
        thread = Thread(
            id=tid,
            user_id=uid,
            agent_id=aid,
            metadata=None if isinstance(metadata, NotSetType) else check_metadata(metadata),
            config=settings.to_json(),
            state={"memory_extraction_state": {"last_memory_extraction_counter": 0}},
            created_at=now,
            updated_at=now,
        )
        with core.store.unit_of_work() as uow:
            uow.threads.add(thread)
            uow.commit()
        return MemoryThread(core, thread, settings)

    def get_thread(
        self,
        thread_id: str,
        *,
        memory_extraction_config: MemoryExtractionConfig | NotSetType = NOTSET,
        context_card_type_search_concurrency: int | NotSetType = NOTSET,
        max_message_token_length: int | NotSetType = NOTSET,
        context_card_token_limit: int | NotSetType = NOTSET,
        **kwargs: Any,
    ) -> MemoryThread:
        """Reopen a thread; overrides apply to the returned handle only and are not persisted."""
        reject_unknown_kwargs("get_thread", kwargs)
        thread = self._core.get_thread_entity(thread_id)
        settings = ThreadSettings.from_json(thread.config).overridden(
            memory_extraction_config=memory_extraction_config,
            max_message_token_length=max_message_token_length,
            context_card_token_limit=context_card_token_limit,
            context_card_type_search_concurrency=context_card_type_search_concurrency,
        )
        settings.check_capabilities(has_extractor=self._core.extractor is not None)
        return MemoryThread(self._core, thread, settings)

    def update_thread(
        self,
        thread_id: str,
        metadata: Mapping[str, Any] | None | NotSetType = NOTSET,
        *,
        memory_extraction_config: MemoryExtractionConfig | NotSetType = NOTSET,
        max_message_token_length: int | NotSetType = NOTSET,
        context_card_token_limit: int | NotSetType = NOTSET,
        **kwargs: Any,
    ) -> MemoryThread:
        """Persist new metadata (whole replace; ``None`` clears) and durable setting overrides.

        ``user_id`` and ``agent_id`` cannot change; unknown arguments are rejected."""
        reject_unknown_kwargs("update_thread", kwargs)
        core = self._core
        check_id(thread_id, "thread_id")
        new_meta = NOTSET if isinstance(metadata, NotSetType) else check_metadata(metadata)
        with core.store.unit_of_work() as uow:
            thread = uow.threads.get(thread_id)
            if thread is None:
                raise ThreadNotFoundError(f"No thread found with id {thread_id!r}.")
            settings = ThreadSettings.from_json(thread.config).overridden(
                memory_extraction_config=memory_extraction_config,
                max_message_token_length=max_message_token_length,
                context_card_token_limit=context_card_token_limit,
            )
            settings.check_capabilities(has_extractor=core.extractor is not None)
            changes: dict[str, Any] = {"config": settings.to_json(), "updated_at": core.clock.now()}
            if not isinstance(new_meta, NotSetType):
                changes["metadata"] = new_meta
            thread = replace(thread, **changes)
            uow.threads.update(thread)
            uow.commit()
        return MemoryThread(core, thread, settings)

    def delete_thread(self, thread_id: str) -> int:
        """Delete a thread with its messages, summaries and the memories scoped to it."""
        check_id(thread_id, "thread_id")
        core = self._core
        if core.runner is not None:
            core.runner.wait(300.0, thread_id=thread_id)  # let its extraction finish first
        now = core.clock.now()
        with core.store.unit_of_work() as uow:
            owned = uow.records.list(now=now, thread_id=thread_id, limit=None)
            partners: set[str] = set()
            owned_ids = {r.id for r in owned}
            for record in owned:
                partners.update(l.other_end(record.id) for l in uow.links.touching(record.id))
            if not uow.threads.delete(thread_id):
                return 0
            core.service.rederive_in(uow, partners - owned_ids, now)
            uow.commit()
        return 1

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
        with self._core.store.reading() as uow:
            return uow.threads.list(
                user_id=user_id,
                agent_id=agent_id,
                metadata_filter=metadata_filter,
                limit=list_limit(limit),
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
        return add_memory(
            self._core,
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
        return update_memory(self._core, memory_id, content, metadata, timestamp, ttl_days, ttl_anchor)

    def delete_memory(self, memory_id: str) -> int:
        check_id(memory_id, "memory_id")
        return int(self._core.service.delete_record(memory_id))

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
        return self._core.service.list_records(
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
        return link_records(
            self._core,
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
        return update_record_link(self._core, relation_id, relation_type, opposite_relation_type, timestamp, metadata)

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
        return delete_record_link(
            self._core, source_record_id, source_record_type, target_record_id, target_record_type, relation_type, relation_id
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
        return self._core.searcher.run(
            query,
            now=self._core.clock.now(),
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
        core = self._core
        now = core.clock.now()
        with core.store.unit_of_work() as uow:
            purged = uow.messages.purge_expired(now)
            lowest: dict[str, int] = {}
            for thread_id, seq in purged:
                lowest[thread_id] = min(seq, lowest.get(thread_id, seq))
            threads = {tid: uow.threads.get(tid) for tid in lowest}
            expired = uow.records.expired_ids(now)
            core.service.delete_records_in(uow, expired, now)
            uow.commit()
        for thread_id, seq in lowest.items():
            thread = threads[thread_id]
            if thread is not None:
                core.summaries.invalidate_from(thread, seq)
        return len(purged) + len(expired)

    def reembed(self, *, batch_size: int = 256, progress: Callable[[int, int], None] | None = None) -> int:
        """Recompute every vector with this client's embedder from the stored text (nothing is
        re-extracted), then record the new model as the store's. Returns how many records and
        messages were embedded; ``progress(done, total)`` is called after each batch.

        A model of another dimension first clears the old vectors; until this finishes, vector
        search returns only what has been re-embedded (keyword search is unaffected)."""
        core = self._core
        embedder = core.embedder
        if embedder is None:
            raise ConfigurationError("reembed() needs a client with an embedder.")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValidationError("batch_size must be a positive integer.")
        if progress is not None and not callable(progress):
            raise ValidationError("progress must be a callable progress(done, total) or None.")
        if core.store.dimension is not None and core.store.dimension != embedder.dimension:
            core.store.clear_vectors()
        now = core.clock.now()
        with core.store.reading() as uow:
            record_ids = [r.id for r in uow.records.list(now=now, limit=None)]
            message_keys = [
                (t.id, m.id)
                for t in uow.threads.list(limit=None)
                for m in uow.messages.list_for_thread(t.id, now=now)
            ]
        total = len(record_ids) + len(message_keys)
        done = 0
        for start in range(0, len(record_ids), batch_size):
            with core.store.reading() as uow:
                batch = [r for r in (uow.records.get(i) for i in record_ids[start : start + batch_size]) if r]
            vectors = core.embed_documents([r.content for r in batch])
            with core.store.unit_of_work() as uow:
                for record, vector in zip(batch, vectors):
                    current = uow.records.get(record.id)
                    if current is not None:  # deleted meanwhile: nothing to do
                        uow.records.update(current, embedding=vector)
                uow.commit()
            done += len(batch)
            if progress is not None:
                progress(done, total)
        for start in range(0, len(message_keys), batch_size):
            with core.store.reading() as uow:
                found = (uow.messages.get(mid, now=now) for _, mid in message_keys[start : start + batch_size])
                batch_m = [m for m in found if m is not None]
            vectors = core.embed_messages([(m.content, m.role, m.timestamp) for m in batch_m])
            with core.store.unit_of_work() as uow:
                for message, vector in zip(batch_m, vectors):
                    current = uow.messages.get(message.id, now=now)
                    if current is not None:
                        uow.messages.update(current, embedding=vector)
                uow.commit()
            done += len(batch_m)
            if progress is not None:
                progress(done, total)
        with core.store.unit_of_work() as uow:
            uow.settings.set(EMBEDDING_MODEL_SETTING, embedder.model_id)
            uow.settings.set(INDEX_CONTEXT_SETTING, list(core.searcher.retrieval.index_context))
            uow.commit()
        return done

    def wait_for_memory_extraction(self, timeout: float | None = 300.0) -> None:
        """Wait for the background extraction this client started, retries of failed attempts
        included, until each job is done or failed for good (``WaitTimeoutError`` when it
        takes longer than ``timeout`` seconds; the jobs stay durable either way)."""
        assert self._core.runner is not None
        self._core.runner.wait(timeout)

    def pending_extractions(
        self, thread_id: str | None = None, *, limit: int | None | NotSetType = NOTSET
    ) -> list[ExtractionJob]:
        """Extraction jobs still to run (of one thread, or all), oldest first, whichever
        client queued them: waiting for a first attempt, running, or retrying after a failed
        attempt (``job.state(now)`` says which; ``job.last_error`` is the failed attempt's
        reason, ``job.claimed_until`` the time of the next attempt). Jobs failed for good are
        listed by :meth:`failed_extractions`."""
        check_optional_id(thread_id, "thread_id")
        with self._core.store.reading() as uow:
            return uow.jobs.list(thread_id=thread_id, limit=list_limit(limit))

    def failed_extractions(
        self, thread_id: str | None = None, *, limit: int | None | NotSetType = NOTSET
    ) -> list[ExtractionJob]:
        """Extraction jobs that failed their last allowed attempt (of one thread, or all),
        oldest failure first, each with ``failed_at`` and ``failure_reason`` (``limit`` keeps
        the first ``limit``; omitted or ``None``: all). Their messages are stored and
        searchable; only the memories were not extracted."""
        check_optional_id(thread_id, "thread_id")
        with self._core.store.reading() as uow:
            return uow.jobs.failed(thread_id=thread_id, limit=list_limit(limit))

    def retry_failed_extractions(self, thread_id: str | None = None) -> int:
        """Queue the failed extraction jobs (of one thread, or all) again with a fresh budget
        of attempts; returns how many. They run like any job (inline mode: before this
        returns). ``ConfigurationError`` when this client has no extractor."""
        check_optional_id(thread_id, "thread_id")
        core = self._core
        if core.extractor is None or core.runner is None:
            raise ConfigurationError("retry_failed_extractions() needs a client with an extractor.")
        queued: list[tuple[ExtractionJob, bool]] = []  # (job, run inline)
        with core.store.unit_of_work() as uow:
            for failed in uow.jobs.failed(thread_id=thread_id, limit=None):
                again = uow.jobs.retry(failed.id)
                thread = uow.threads.get(failed.thread_id)
                if again is not None and thread is not None:
                    mode = ThreadSettings.from_json(thread.config).extraction.extraction_mode
                    queued.append((again, mode is MemoryExtractionMode.INLINE))
            uow.commit()
        for job, inline in queued:
            core.runner.start(job, inline=inline)
        return len(queued)

    def close(self, timeout: float | None = 300.0) -> None:
        """Stop using the store; idempotent. The store is closed too when this client was
        told it owns it (``close_store=True``); then ``on_close`` runs, once: the composition
        root (``open_memory``) passes the shutdown of the store and pool it opened."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._core.runner is not None:
                self._core.runner.close(timeout)
        finally:
            self._core.shutdown()
        try:
            if self._close_store:
                self._core.store.close()
        finally:
            if self._on_close is not None:
                self._on_close()

    def __enter__(self) -> AgentMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
