"""Application layer: memory bound to one caller (ARCHITECTURE.md D44).

:class:`ScopedMemory` (``memory.acting_for(principal)``) is what the servers call with the
principal a key (:mod:`.api_keys`) or their configuration names: every request is forced into
that principal's user (and agent), another user's ids are refused or not found, and the scope
is checked. It is the one place isolation is enforced for every server.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from palimpsest.domain.errors import (
    ConfigurationError,
    EmbeddingMismatchError,
    InvalidScopeError,
    InvalidSettingsError,
    PermissionDeniedError,
    ThreadNotFoundError,
    ValidationError,
)
from palimpsest.domain.model import MemoryRecord, Message, RecordLink, Thread, check_id
from palimpsest.domain.sentinel import ANY, NOTSET, NotSetType

from .config import MemorySearchConfig
from .paging import Page, after_cursor, page_of, page_size, time_key
from .principal import AccessScope, Principal
from .requests import (
    AddMemory,
    AppendMessages,
    CardRequest,
    CreateThread,
    DeleteRecordLink,
    GetThread,
    LinkRecords,
    ListRecords,
    ListThreads,
    SearchRequest,
    UpdateMemory,
    UpdateRecordLink,
    bind_owner,
)
from .results import ContextCard, SearchResult, Summary
from .thread import MemoryThread, ThreadSettings
from .wiring import ApplicationServices

__all__ = ["AccessScope", "MemoryHistory", "Principal", "ScopedMemory"]


@dataclass(frozen=True, slots=True)
class MemoryHistory:
    """A memory and its links to the caller's other memories (its lifecycle: what it
    superseded, refined or duplicated, and what did that to it), earliest link first."""

    record: MemoryRecord
    links: tuple[RecordLink, ...]
    related: dict[str, MemoryRecord]


class ScopedMemory:
    """Memory bound to one principal: the operations the servers expose, each taking the
    application's typed request (``from_json`` builds them) with the principal forced onto it.

    A request naming another user (or, for a principal with an agent, another agent) is an
    ``InvalidScopeError``; a record, thread or link of anyone else is not found, exactly as an
    absent one; a read-only principal that writes gets a ``PermissionDeniedError``."""

    def __init__(
        self,
        services: ApplicationServices,
        principal: Principal,
        *,
        search_config: MemorySearchConfig | None = None,
    ) -> None:
        if not isinstance(principal, Principal):
            raise ValidationError("acting_for needs a Principal.")
        self._services = services
        self._principal = principal
        self._search_config = search_config

    @property
    def principal(self) -> Principal:
        return self._principal

    def _need(self, scope: AccessScope) -> None:
        if not self._principal.may(scope):
            raise PermissionDeniedError(
                f"this call needs the {scope.value!r} scope; the caller has {self._principal.scope.value!r}."
            )

    def _thread(self, thread_id: str) -> tuple[Thread, ThreadSettings]:
        """The principal's thread with its settings, or ``ThreadNotFoundError`` (as absent)."""
        check_id(thread_id, "thread_id")
        try:
            thread, settings = self._services.threads.open(GetThread(thread_id=thread_id))
        except ThreadNotFoundError:
            raise ThreadNotFoundError(f"No thread found with id {thread_id!r}.") from None
        if not self._principal.owns(thread.user_id, thread.agent_id):
            raise ThreadNotFoundError(f"No thread found with id {thread_id!r}.")
        return thread, settings

    # -- reads ---------------------------------------------------------------------------------

    def search_request(self, mapping: object) -> SearchRequest:
        """A search's JSON object as a request, the principal's user (and agent) filled in
        when it names none (a server's body need not carry them)."""
        if isinstance(mapping, Mapping) and "scope" not in mapping:
            filled = dict(mapping)
            filled.setdefault("user_id", self._principal.user_id)
            if self._principal.agent_id is not None:
                filled.setdefault("agent_id", self._principal.agent_id)
            mapping = filled
        return SearchRequest.from_json(mapping)

    def search(self, request: SearchRequest) -> list[SearchResult]:
        """A search that must keep to the principal's user exactly (and agent, when it has one)."""
        self._need(AccessScope.READ)
        scope = request.scoped
        if scope.user_id is ANY or scope.user_id != self._principal.user_id:
            raise InvalidScopeError(f"a search keeps to the caller's user ({self._principal.user_id!r}).")
        if self._principal.agent_id is not None and scope.agent_id != self._principal.agent_id:
            raise InvalidScopeError(f"a search keeps to the caller's agent ({self._principal.agent_id!r}).")
        return self._services.searcher.search(request, now=self._services.clock.now())

    def list_memories(self, request: ListRecords) -> list[MemoryRecord]:
        """The principal's memory-like records, oldest first (``limit`` keeps the newest)."""
        self._need(AccessScope.READ)
        user, agent = bind_owner(self._principal, request.user_id, request.agent_id)
        return self._services.memory.list_records(
            user_id=user,
            agent_id=agent,
            thread_id=request.thread_id,
            metadata_filter=request.metadata_filter,
            limit=request.limit,  # type: ignore[arg-type]
        )

    def memories_page(
        self, request: ListRecords, *, limit: int | None | NotSetType = NOTSET, cursor: str | None = None
    ) -> Page[MemoryRecord]:
        """A page of :meth:`list_memories` (its ``limit`` ignored) by creation time, then id,
        after ``cursor`` (D45). Paged here, over the caller's whole listing: a page costs a
        read of every memory the filters match (keyset reads in the stores would bound it)."""
        size = page_size(limit)
        after = after_cursor(cursor, "memories", (str, str))
        records = self.list_memories(replace(request, limit=None))
        return page_of(records, lambda r: time_key(r.created_at, r.id), listing="memories", limit=size, after=after)

    def get_memory(self, memory_id: str) -> MemoryRecord:
        """One of the principal's memories (``RecordNotFoundError`` for any other)."""
        self._need(AccessScope.READ)
        return self._services.memory.get_record(memory_id, owner_thread=self._principal)

    def memory_history(self, memory_id: str) -> MemoryHistory:
        """A memory with its links to the principal's other memories and those memories."""
        record = self.get_memory(memory_id)
        now = self._services.clock.now()
        with self._services.store.reading() as uow:
            links = uow.links.touching(record.id)
            others = uow.records.get_many(
                sorted({lk.source_id for lk in links} | {lk.target_id for lk in links})
            )
        related = {
            rid: r
            for rid, r in others.items()
            if rid != record.id and self._principal.owns(r.user_id, r.agent_id) and not r.is_expired(now)
        }
        kept = tuple(
            sorted(
                (lk for lk in links if (lk.source_id in related or lk.target_id in related)),
                key=lambda lk: (lk.created_at, lk.id),
            )
        )
        return MemoryHistory(record, kept, related)

    def list_threads(self, request: ListThreads) -> list[Thread]:
        """The principal's threads (its agent's, when it has one), oldest first."""
        self._need(AccessScope.READ)
        user, agent = bind_owner(self._principal, request.user_id, request.agent_id)
        owned = replace(request, user_id=user, agent_id=agent)
        return self._services.threads.list(owned)

    def threads_page(
        self, request: ListThreads, *, limit: int | None | NotSetType = NOTSET, cursor: str | None = None
    ) -> Page[Thread]:
        """A page of :meth:`list_threads` (its ``limit`` ignored) by creation time, then id,
        after ``cursor``; paged here as :meth:`memories_page` is."""
        size = page_size(limit)
        after = after_cursor(cursor, "threads", (str, str))
        threads = self.list_threads(replace(request, limit=None))
        return page_of(threads, lambda t: time_key(t.created_at, t.id), listing="threads", limit=size, after=after)

    def messages_page(
        self, thread_id: str, *, limit: int | None | NotSetType = NOTSET, cursor: str | None = None
    ) -> Page[Message]:
        """A page of the visible messages of one of the principal's threads by ``seq``, after
        ``cursor``: the store reads from the cursor's ``seq`` on, not the thread's start."""
        self._need(AccessScope.READ)
        size = page_size(limit)
        after = after_cursor(cursor, "messages", (int,))
        self._thread(thread_id)
        start = None if after is None else int(after[0]) + 1
        with self._services.store.reading() as uow:
            messages = uow.messages.list_for_thread(thread_id, now=self._services.clock.now(), start_seq=start)
        return page_of(messages, lambda m: (m.seq,), listing="messages", limit=size, after=after)

    def get_thread(self, thread_id: str) -> Thread:
        """One of the principal's threads (``ThreadNotFoundError`` for anyone else's, as absent)."""
        self._need(AccessScope.READ)
        return self._thread(thread_id)[0]

    def get_messages(
        self,
        thread_id: str,
        *,
        start: int | NotSetType = NOTSET,
        end: int | None | NotSetType = NOTSET,
    ) -> list[Message]:
        """Messages of one of the principal's threads, as ``MemoryThread.get_messages`` windows them."""
        self._need(AccessScope.READ)
        thread, settings = self._thread(thread_id)
        return MemoryThread(self._services, thread, settings).get_messages(start=start, end=end)

    def thread_summary(self, thread_id: str) -> Summary:
        """The summary of one of the principal's threads (as ``MemoryThread.get_summary()``)."""
        self._need(AccessScope.READ)
        thread, settings = self._thread(thread_id)
        return MemoryThread(self._services, thread, settings).get_summary()

    def context_card(self, thread_id: str, request: CardRequest) -> ContextCard:
        """The context card of one of the principal's threads."""
        self._need(AccessScope.READ)
        thread, settings = self._thread(thread_id)
        return self._services.cards.card(thread, settings, request)

    # -- writes --------------------------------------------------------------------------------

    def add_memory(self, request: AddMemory) -> str:
        """Store a memory as the principal's (its user and agent); a thread named must be its own."""
        self._need(AccessScope.WRITE)
        bound = request.for_principal(self._principal)
        if isinstance(bound.thread_id, str):
            self._thread(bound.thread_id)
        return self._services.records.add_memory(bound)

    def create_thread(self, request: CreateThread) -> Thread:
        """A new thread of the principal's user (and agent). A thread id the caller chooses is a
        global id: one already taken, by anyone, is a ``DuplicateIdError`` that names no owner."""
        self._need(AccessScope.WRITE)
        user, agent = bind_owner(self._principal, request.user_id, request.agent_id)
        owned = replace(request, user_id=user, agent_id=agent)
        try:
            return self._services.threads.create(owned, search_config=self._search_config)[0]
        except ConfigurationError as exc:  # settings the request asks for that this client cannot honour
            if isinstance(exc, (ValidationError, EmbeddingMismatchError)):
                raise
            raise InvalidSettingsError(str(exc)) from exc

    def delete_thread(self, thread_id: str) -> int:
        """Delete one of the principal's threads with its messages, summaries and the memories
        scoped to it (``ThreadNotFoundError`` for anyone else's)."""
        self._need(AccessScope.WRITE)
        self._thread(thread_id)
        return self._services.maintenance.delete_thread(thread_id)

    def update_memory(self, request: UpdateMemory) -> str:
        self._need(AccessScope.WRITE)
        return self._services.records.update_memory(request.for_principal(self._principal))

    def delete_memory(self, memory_id: str) -> int:
        """Forget one of the principal's memories: 1, or 0 when it has none with that id."""
        self._need(AccessScope.WRITE)
        check_id(memory_id, "memory_id")
        return int(self._services.memory.delete_record(memory_id, owner_thread=self._principal))

    def link_records(self, request: LinkRecords) -> str:
        self._need(AccessScope.WRITE)
        return self._services.records.link_records(request.for_principal(self._principal))

    def update_record_link(self, request: UpdateRecordLink) -> int:
        self._need(AccessScope.WRITE)
        return self._services.records.update_record_link(request.for_principal(self._principal))

    def delete_record_link(self, request: DeleteRecordLink) -> int:
        self._need(AccessScope.WRITE)
        return self._services.records.delete_record_link(request.for_principal(self._principal))

    def add_messages(self, thread_id: str, request: AppendMessages) -> list[str]:
        """Append messages to one of the principal's threads; returns their ids."""
        self._need(AccessScope.WRITE)
        thread, settings = self._thread(thread_id)
        if not request.messages:
            return []
        return self._services.messages.add(thread, settings, request)
