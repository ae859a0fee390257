"""Application layer: ``RecordCommands``, the record and link commands, one implementation that
both facades call (``AgentMemory`` for any scope, ``MemoryThread`` with the request bound to its
thread, ``owner_thread``).

Each takes a typed request (:mod:`~palimpsest.application.requests`, validated when it was
built) and makes one call to :class:`~palimpsest.application.record_service.RecordService`,
which decides and persists in one unit of work; bad input writes nothing. A memory whose
embedder is unavailable is stored without its vector and embedded later (D43).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from palimpsest.domain.errors import LinkNotFoundError
from palimpsest.domain.model import RecordType
from palimpsest.domain.ports import Clock, MemoryStore
from palimpsest.domain.sentinel import NOTSET, NotSetType

from .arguments import TimeToLiveAnchor, resolve_expiry
from .config import MemoryExtractionConfig, MemoryRetentionConfig
from .embedding import EmbeddingHelper
from .event_log import log_failure
from .linking import Linker
from .record_service import NewLinkRequest, RecordService
from .requests import AddMemory, DeleteRecordLink, LinkRecords, UpdateMemory, UpdateRecordLink
from .vector_backfill import VectorBackfill

__all__ = ["RecordCommands"]

log = logging.getLogger("palimpsest")

class RecordCommands:
    """The record and link commands of the public API, from their public arguments."""

    def __init__(
        self,
        *,
        store: MemoryStore,
        clock: Clock,
        memory: RecordService,
        embeddings: EmbeddingHelper,
        linker: Linker,
        retention: MemoryRetentionConfig,
        extraction_config: MemoryExtractionConfig | None,
        new_id: Callable[[], str],
        backfill: VectorBackfill | None = None,
    ) -> None:
        self._backfill = backfill if backfill is not None else VectorBackfill(
            store=store, clock=clock, embeddings=embeddings
        )
        self._store = store
        self._clock = clock
        self._memory = memory
        self._embeddings = embeddings
        self._linker = linker
        self._retention = retention
        self._extraction_config = extraction_config
        self._new_id = new_id

    def _expiry(
        self,
        *,
        now: datetime,
        ttl_days: float | None | NotSetType,
        ttl_anchor: TimeToLiveAnchor | str | NotSetType,
        timestamp: datetime | None,
    ) -> datetime | None:
        return resolve_expiry(
            now=now, ttl_days=ttl_days, ttl_anchor=ttl_anchor, timestamp=timestamp, retention=self._retention
        )

    def add_memory(self, request: AddMemory) -> str:
        """Add the record (and its link) in one unit of work; with ``autonomous_linking``, the
        link resolver then links it to its closest memories."""
        autonomous_linking = request.autonomous_linking
        if isinstance(autonomous_linking, NotSetType):  # on by default only with a model, as in the reference
            autonomous_linking = getattr(self._linker.resolver, "uses_model", False) is True
        now = self._clock.now()
        event_time = None if isinstance(request.timestamp, NotSetType) else _time(request.timestamp)
        expires = self._expiry(now=now, ttl_days=request.ttl_days, ttl_anchor=request.ttl_anchor, timestamp=event_time)
        link_request = None
        if not isinstance(request.memory_id_to_link, NotSetType) and not isinstance(request.link_type, NotSetType):
            link_request = NewLinkRequest(
                target_id=request.memory_id_to_link,
                relation_type=request.link_type,
                link_id=None if isinstance(request.link_id, NotSetType) else request.link_id,
                timestamp=None if isinstance(request.link_timestamp, NotSetType) else _time(request.link_timestamp),
                metadata=None if isinstance(request.link_metadata, NotSetType) else request.link_metadata,
            )
        memory_id = request.memory_id
        record_id = self._new_id() if isinstance(memory_id, NotSetType) or memory_id is None else memory_id
        vector = self._embeddings.documents_when_up([request.content])[0]
        record_type = request.memory_type
        assert isinstance(record_type, RecordType)  # parsed by the request
        self._memory.add_record_with_link(
            content=request.content,
            record_type=record_type,
            record_id=record_id,
            scope=request.scope,
            metadata=None if isinstance(request.metadata, NotSetType) else request.metadata,
            timestamp=event_time,
            expires_at=expires,
            embedding=vector,
            link=link_request,
            require_thread=request.owner_thread,
            status=request.status,  # type: ignore[arg-type]
        )
        self._backfill.after_write([vector])
        if autonomous_linking and link_request is None and self._linker.resolver is not None:
            with self._store.reading() as uow:
                stored = uow.records.get(record_id)
            if stored is not None:
                try:
                    budget = MemoryExtractionConfig.resolve(self._extraction_config).memory_link_extraction_token_limit
                    self._linker.resolve_after_extraction(
                        [stored],
                        vectors=[vector],
                        custom_instructions=None,
                        token_limit=budget if isinstance(budget, int) else None,
                    )
                except Exception as exc:  # noqa: BLE001 - the memory is stored; a failed resolution only costs its links
                    log_failure(log, exc, "autonomous linking failed for memory %s", record_id)
        return record_id

    def update_memory(self, request: UpdateMemory) -> str:
        now = self._clock.now()
        record = self._memory.get_record(request.memory_id, owner_thread=request.owner_thread)
        timestamp = request.timestamp
        event_time = record.timestamp if isinstance(timestamp, NotSetType) else _time(timestamp)
        expires: datetime | None | NotSetType = NOTSET
        if not (isinstance(request.ttl_days, NotSetType) and isinstance(request.ttl_anchor, NotSetType)):
            expires = self._expiry(now=now, ttl_days=request.ttl_days, ttl_anchor=request.ttl_anchor, timestamp=event_time)
        embedding: tuple[float, ...] | None | NotSetType = NOTSET
        if isinstance(request.content, str) and request.content != record.content:
            embedding = self._embeddings.documents_when_up([request.content])[0]
        self._memory.update_record(
            request.memory_id,
            content=request.content,
            metadata=request.metadata,
            timestamp=NOTSET if isinstance(timestamp, NotSetType) else event_time,
            expires_at=expires,
            embedding=embedding,
            status=request.status,  # type: ignore[arg-type]
        )
        if not isinstance(embedding, NotSetType):
            self._embeddings.wrote([embedding])
        return request.memory_id

    def link_records(self, request: LinkRecords) -> str:
        opposite = request.opposite_relation_type
        link = self._memory.link(
            request.source_record_id,
            request.target_record_id,
            request.relation_type,
            opposite_relation_type=None if isinstance(opposite, NotSetType) else opposite,
            link_id=None if isinstance(request.relation_id, NotSetType) else request.relation_id,
            metadata=None if isinstance(request.metadata, NotSetType) else request.metadata,
            timestamp=None if isinstance(request.timestamp, NotSetType) else _time(request.timestamp),
            expected_types=(_type(request.source_record_type), _type(request.target_record_type)),
            owner_thread=request.owner_thread,
        )
        return link.id

    def update_record_link(self, request: UpdateRecordLink) -> int:
        timestamp = request.timestamp
        try:
            self._memory.update_link(
                request.relation_id,
                relation_type=request.relation_type,
                opposite_relation_type=request.opposite_relation_type,
                metadata=request.metadata,
                timestamp=timestamp if isinstance(timestamp, NotSetType) else _time(timestamp),
                owner_thread=request.owner_thread,
            )
        except LinkNotFoundError:
            return 0
        return 1

    def delete_record_link(self, request: DeleteRecordLink) -> int:
        if not isinstance(request.relation_id, NotSetType):
            return int(self._memory.delete_link(request.relation_id, owner_thread=request.owner_thread))
        source, target, relation = request.source_record_id, request.target_record_id, request.relation_type
        assert not isinstance(source, NotSetType) and not isinstance(target, NotSetType)  # checked by the request
        assert not isinstance(relation, NotSetType)
        return int(
            self._memory.delete_link_between(
                source,
                target,
                relation,
                expected_types=(_type(request.source_record_type), _type(request.target_record_type)),
                owner_thread=request.owner_thread,
            )
        )


def _time(value: datetime | str | None) -> datetime | None:
    """A request's time (parsed to a ``datetime`` when the request was built)."""
    assert value is None or isinstance(value, datetime)
    return value


def _type(value: RecordType | str | NotSetType) -> RecordType:
    """A request's endpoint type (parsed to a ``RecordType`` when the request was built)."""
    assert isinstance(value, RecordType)
    return value
