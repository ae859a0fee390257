"""Application layer: ``AgentMemory``, the client users import (constructor-injected, ports only).

Its constructor takes the ports and builds the application services once
(:func:`~palimpsest.application.wiring.build_services`); thread handles share them. Every
public method validates its arguments, then delegates to one service, so bad input writes nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self

from palimpsest.domain.errors import ConfigurationError, ValidationError
from palimpsest.domain.model import (
    ExtractionJob,
    MemoryRecord,
    Message,
    RecordType,
    Thread,
    check_id,
    check_optional_id,
)
from palimpsest.domain.ports import Clock, MemoryStore
from palimpsest.domain.sentinel import NOTSET, NotSetType

from .access import ScopedMemory
from .arguments import list_limit, named_arguments, reject_unknown_kwargs
from .asyncio_twins import with_async_twins
from .caller_warnings import warn_caller
from .clock import SystemClock
from .config import (
    ExtractionRetryPolicy,
    ExtractionRunsIn,
    ImageInputLimitConfig,
    MemoryExtractionConfig,
    MemoryRetentionConfig,
    MemorySearchConfig,
    RetrievalConfig,
    check_search_config,
)
from .facade import MemoryFacade
from .images import ImageRecord
from .observability import observed_operations
from .ports import Embedder, Extractor, ImageCaptioner, LinkResolver, Summariser
from .principal import Principal
from .requests import (
    AddProfile,
    CreateThread,
    DeleteProfile,
    GetThread,
    ListImages,
    ListMessages,
    ListProfiles,
    ListRecords,
    ListThreads,
    SearchStrategy,
    UpdateThread,
)
from .store_settings import sync_store_settings
from .thread import MemoryThread
from .usage import TokenUsage, merged_usage
from .wiring import build_services, build_worker

if TYPE_CHECKING:
    from .admin import StoreAdmin
    from .checkpoints import CheckpointService
    from .jobs import ExtractionWorker, JobOutcome

__all__ = ["AgentMemory"]

@with_async_twins(
    "create_thread",
    "get_thread",
    "update_thread",
    "delete_thread",
    "list_threads",
    "add_user",
    "add_agent",
    "delete_user",
    "delete_agent",
    "list_users",
    "list_agents",
    "list_memories",
    "list_messages",
    "list_images",
    "purge_expired",
    "reembed",
    "embed_waiting",
    "wait_for_memory_extraction",
    "pending_extractions",
    "failed_extractions",
    "retry_failed_extractions",
    "close",
)
@observed_operations("agent_memory")
class AgentMemory(MemoryFacade):
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
        search_strategy: SearchStrategy | str | None = None,
        retrieval: RetrievalConfig | None = None,
        id_factory: Callable[[], str] | None = None,
        close_store: bool = False,
        allow_embedding_model_change: bool = False,
        extraction_retry_policy: ExtractionRetryPolicy | None = None,
        extraction_runs_in: ExtractionRunsIn | str = ExtractionRunsIn.CLIENT,
        on_close: Callable[[], object] | None = None,
        search_config: MemorySearchConfig | None = None,
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
        self._search_config = check_search_config(search_config)
        if on_close is not None and not callable(on_close):
            raise ConfigurationError("on_close must be a callable taking no arguments.")
        # Hybrid is the default with an embedder: on both quality sets it retrieves better than
        # either list alone, and the in-memory BM25 index keeps it within the latency targets
        # (BENCHMARKS.md, "Retrieval quality"; ARCHITECTURE.md D20).
        default = SearchStrategy.HYBRID if embedder is not None else SearchStrategy.KEYWORD
        strategy = SearchStrategy.parse(search_strategy or default, ConfigurationError)
        if strategy is not SearchStrategy.KEYWORD and embedder is None:
            raise ConfigurationError(f"search_strategy={strategy.value!r} needs an embedder.")
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

    # -- the store's administration (D36) and this client's configuration ----------------------

    @property
    def store(self) -> MemoryStore:
        """Deprecated: the store port itself. Listings, lookups, diagnostics, export/import and
        TTL refresh are :attr:`admin`'s, on this client's clock (ARCHITECTURE.md D36)."""
        warn_caller(
            "AgentMemory.store is deprecated: use AgentMemory.admin (listings, lookups, diagnostics, "
            "export/import, TTL refresh, the store's dimension) or the client's own methods.",
            DeprecationWarning,
        )
        return self._services.store

    @property
    def admin(self) -> StoreAdmin:
        """The store's listings, lookups, diagnostics, export/import and TTL refresh, on this
        client's clock: what tools (the command line, the LangGraph store) use instead of the
        store itself (:class:`~palimpsest.application.admin.StoreAdmin`)."""
        return self._services.admin

    def acting_for(self, principal: Principal) -> ScopedMemory:
        """This client's memory bound to ``principal``: every request forced into its user
        (and agent), anyone else's records, threads and links not found, its scope checked
        (ARCHITECTURE.md D44). What a server calls with the caller its credential names."""
        return ScopedMemory(self._services, principal, search_config=self._search_config)

    @property
    def checkpoints(self) -> CheckpointService:
        """The graph checkpoints kept in this client's store, on this client's clock (what
        LangGraph's ``PalimpsestSaver`` uses; ARCHITECTURE.md D41). Its calls raise
        ``ConfigurationError`` on a store without ``CheckpointStorage``."""
        return self._services.checkpoints

    @property
    def search_config(self) -> MemorySearchConfig | None:
        """The defaults of this client's searches (and of the threads it creates), if given."""
        return self._search_config

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
        llm: None | NotSetType = NOTSET,
        max_message_token_length: int | NotSetType = NOTSET,
        message_shortening_input_token_limit: int | NotSetType = NOTSET,
        memory_extraction_config: MemoryExtractionConfig | NotSetType = NOTSET,
        search_config: MemorySearchConfig | None | NotSetType = NOTSET,
        context_card_token_limit: int | NotSetType = NOTSET,
        context_card_type_search_concurrency: int | NotSetType = NOTSET,
        extract_memories: bool | NotSetType = NOTSET,
        memory_extraction_window: int | NotSetType = NOTSET,
        context_summary_update_frequency: int | NotSetType = NOTSET,
        memory_extraction_frequency: int | NotSetType = NOTSET,
        memory_extraction_token_limit: int | NotSetType = NOTSET,
        memory_extraction_custom_instructions: str | None | NotSetType = NOTSET,
        memory_extraction_inherit_message_metadata: bool | Sequence[str] | NotSetType = NOTSET,
        enable_context_summary: bool | NotSetType = NOTSET,
        image_input_limit_config: ImageInputLimitConfig | NotSetType = NOTSET,
        **kwargs: Any,
    ) -> MemoryThread:
        """Create and persist a thread (ids generated when omitted) with its resolved settings.

        ``search_config`` (default: the client's) gives the thread's searches and cards their
        defaults; ``message_shortening_input_token_limit`` is stored (see ``ThreadSettings``).
        ``llm`` is accepted only as ``None``: models are the client's. The inline extraction
        keywords (``extract_memories``, ...) are deprecated: pass ``memory_extraction_config``."""
        reject_unknown_kwargs("create_thread", kwargs)
        request = CreateThread(**named_arguments(locals()))
        thread, settings = self._services.threads.create(request, search_config=self._search_config)
        return MemoryThread(self._services, thread, settings)

    def get_thread(
        self,
        thread_id: str,
        *,
        llm: None | NotSetType = NOTSET,
        max_message_token_length: int | NotSetType = NOTSET,
        message_shortening_input_token_limit: int | NotSetType = NOTSET,
        memory_extraction_config: MemoryExtractionConfig | NotSetType = NOTSET,
        search_config: MemorySearchConfig | None | NotSetType = NOTSET,
        context_card_token_limit: int | NotSetType = NOTSET,
        context_card_type_search_concurrency: int | NotSetType = NOTSET,
        extract_memories: bool | NotSetType = NOTSET,
        memory_extraction_window: int | NotSetType = NOTSET,
        context_summary_update_frequency: int | NotSetType = NOTSET,
        memory_extraction_frequency: int | NotSetType = NOTSET,
        memory_extraction_token_limit: int | NotSetType = NOTSET,
        memory_extraction_custom_instructions: str | None | NotSetType = NOTSET,
        memory_extraction_inherit_message_metadata: bool | Sequence[str] | NotSetType = NOTSET,
        enable_context_summary: bool | NotSetType = NOTSET,
        image_input_limit_config: ImageInputLimitConfig | NotSetType = NOTSET,
        **kwargs: Any,
    ) -> MemoryThread:
        """Reopen a thread; overrides apply to the returned handle only and are not persisted."""
        reject_unknown_kwargs("get_thread", kwargs)
        request = GetThread(**named_arguments(locals()))
        thread, settings = self._services.threads.open(request)
        return MemoryThread(self._services, thread, settings)

    def update_thread(
        self,
        thread_id: str,
        metadata: Mapping[str, Any] | None | NotSetType = NOTSET,
        *,
        llm: None | NotSetType = NOTSET,
        max_message_token_length: int | NotSetType = NOTSET,
        message_shortening_input_token_limit: int | NotSetType = NOTSET,
        context_card_token_limit: int | NotSetType = NOTSET,
        memory_extraction_config: MemoryExtractionConfig | NotSetType = NOTSET,
        search_config: MemorySearchConfig | None | NotSetType = NOTSET,
        extract_memories: bool | NotSetType = NOTSET,
        memory_extraction_window: int | NotSetType = NOTSET,
        context_summary_update_frequency: int | NotSetType = NOTSET,
        memory_extraction_frequency: int | NotSetType = NOTSET,
        memory_extraction_token_limit: int | NotSetType = NOTSET,
        memory_extraction_custom_instructions: str | None | NotSetType = NOTSET,
        memory_extraction_inherit_message_metadata: bool | Sequence[str] | NotSetType = NOTSET,
        enable_context_summary: bool | NotSetType = NOTSET,
        image_input_limit_config: ImageInputLimitConfig | NotSetType = NOTSET,
        **kwargs: Any,
    ) -> MemoryThread:
        """Persist new metadata (whole replace; ``None`` clears) and durable setting overrides.

        ``user_id`` and ``agent_id`` cannot change; unknown arguments are rejected."""
        reject_unknown_kwargs("update_thread", kwargs)
        request = UpdateThread(**named_arguments(locals()))
        thread, settings = self._services.threads.update(request)
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
        return self._services.threads.list(ListThreads(user_id, agent_id, metadata_filter, limit))

    # -- users and agents (their profiles, ARCHITECTURE.md D37) ---------------------------------

    def add_user(self, user_id: str, information: str, metadata: Mapping[str, Any] | None | NotSetType = NOTSET) -> str:
        """Store the profile of user ``user_id`` (a searchable ``user_profile`` record whose id
        is the user id), or replace its text (re-embedded) and, unless omitted, its metadata;
        returns ``user_id``. The id is trusted as every ``user_id`` is: the caller names the user."""
        return self._services.profiles.add(AddProfile(RecordType.USER_PROFILE, user_id, information, metadata))  # type: ignore[arg-type]

    def add_agent(
        self, agent_id: str, information: str, metadata: Mapping[str, Any] | None | NotSetType = NOTSET
    ) -> str:
        """Store (or replace) the profile of agent ``agent_id``, an ``agent_profile`` record."""
        return self._services.profiles.add(AddProfile(RecordType.AGENT_PROFILE, agent_id, information, metadata))  # type: ignore[arg-type]

    def delete_user(self, user_id: str, cascade: bool = True) -> int:
        """Delete user ``user_id``'s profile (returns 1, or 0 without one); with ``cascade``
        (the default) also the user's threads (their messages, memories, summaries and jobs,
        after their running extraction) and every other message and record of that user,
        whether or not a profile exists. Another user's data is never touched."""
        return self._services.profiles.delete(DeleteProfile(RecordType.USER_PROFILE, user_id, cascade))

    def delete_agent(self, agent_id: str, cascade: bool = True) -> int:
        """Delete agent ``agent_id``'s profile; with ``cascade``, also its threads (whichever
        user's) and every other message and record scoped to that agent."""
        return self._services.profiles.delete(DeleteProfile(RecordType.AGENT_PROFILE, agent_id, cascade))

    def list_users(
        self,
        metadata_filter: Mapping[str, Any] | None | NotSetType = NOTSET,
        limit: int | None | NotSetType = NOTSET,
    ) -> list[MemoryRecord]:
        """User profiles, oldest first (``metadata_filter=None``: those without metadata;
        ``limit`` keeps the newest ``limit``; omitted or ``None``: all of them)."""
        return self._services.profiles.list(ListProfiles(RecordType.USER_PROFILE, metadata_filter, limit))

    def list_agents(
        self,
        metadata_filter: Mapping[str, Any] | None | NotSetType = NOTSET,
        limit: int | None | NotSetType = NOTSET,
    ) -> list[MemoryRecord]:
        """Agent profiles, oldest first (as :meth:`list_users`)."""
        return self._services.profiles.list(ListProfiles(RecordType.AGENT_PROFILE, metadata_filter, limit))

    # -- memories (add, update, delete, link and search: shared with MemoryThread, facade.py) -----

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
        request = ListRecords(user_id, agent_id, thread_id, metadata_filter, limit)
        return self._services.memory.list_records(
            user_id=request.user_id,
            agent_id=request.agent_id,
            thread_id=request.thread_id,
            metadata_filter=request.metadata_filter,
            limit=request.limit,  # type: ignore[arg-type]
        )

    # -- messages of every thread (a thread's own: MemoryThread) --------------------------------

    def list_messages(
        self,
        user_id: str | None | NotSetType = NOTSET,
        agent_id: str | None | NotSetType = NOTSET,
        thread_id: str | None | NotSetType = NOTSET,
        metadata_filter: Mapping[str, Any] | None | NotSetType = NOTSET,
        limit: int | None | NotSetType = NOTSET,
        include_image_bytes: bool | NotSetType = NOTSET,
    ) -> list[Message]:
        """Messages of every thread, oldest first. Omitted = no filter; ``None`` = only messages
        unscoped on that dimension; ``limit`` keeps the newest ``limit`` (omitted or ``None``: all).
        A message with images has its content ``parts`` in order (image bytes only with
        ``include_image_bytes=True``)."""
        request = ListMessages(user_id, agent_id, thread_id, metadata_filter, limit, include_image_bytes)
        return self._services.messages.list(request)

    # -- images (add, update and delete: shared with MemoryThread, facade.py) -------------------

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
        return self._list_images(
            ListImages(image_id, user_id, agent_id, thread_id, metadata_filter, include_bytes, limit)
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

    def embed_waiting(self) -> int:
        """Embed now the messages and memories stored without vectors while the embedder was
        unavailable (ARCHITECTURE.md D43); returns how many got their vector. Stops early, with
        what it did, when the embedder is still unavailable (the rest wait: the next write whose
        embedding succeeds, or the next call, goes on). 0 without an embedder. Clients do this on
        their own after a successful write, a bounded batch at a time."""
        return self._services.backfill.run_all()

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
        backfill_seconds: float = 60.0,
    ) -> ExtractionWorker:
        """A worker that serves the store's extraction backlog with this client's extractor,
        models and retry policy (lease included): what ``palimpsest worker`` runs. Call its
        ``run(stop, drain=...)`` (see :class:`~palimpsest.application.jobs.ExtractionWorker`);
        ``threads`` attempts run at once; ``on_outcome`` hears of each job that ends; every
        ``backfill_seconds`` it also embeds a batch of the rows stored without vectors while
        the embedder was down (as :meth:`embed_waiting`, a batch at a time). Build
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
        if (
            isinstance(backfill_seconds, bool)
            or not isinstance(backfill_seconds, (int, float))
            or not 0 < backfill_seconds <= 86_400
        ):
            raise ConfigurationError("backfill_seconds must be a positive number of seconds (at most a day).")
        return build_worker(
            self._services,
            threads=threads,
            poll_seconds=poll_seconds,
            on_outcome=on_outcome,
            backfill_seconds=backfill_seconds,
        )

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

    def _search_defaults(self) -> MemorySearchConfig | None:
        return self._search_config

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
