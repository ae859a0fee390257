"""Application layer: ``RecordCommands``, the record and link commands, one implementation that
both facades call (``AgentMemory`` for any scope, ``MemoryThread`` with ``owner_thread`` for its
own records).

Each takes the public arguments (``NOTSET`` for omitted ones), validates them, and makes one call
to :class:`~palimpsest.application.record_service.RecordService`, which decides and persists in
one unit of work; bad input writes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from palimpsest.domain.errors import LinkNotFoundError, ValidationError
from palimpsest.domain.model import (
    MEMORY_RECORD_TYPES,
    RecordType,
    check_id,
    check_metadata,
    check_optional_id,
    parse_record_type,
)
from palimpsest.domain.ports import Clock, MemoryStore
from palimpsest.domain.sentinel import NOTSET, NotSetType

from .arguments import parse_timestamp, resolve_expiry
from .config import MemoryExtractionConfig, MemoryRetentionConfig
from .embedding import EmbeddingHelper
from .event_log import log_failure
from .linking import Linker
from .record_service import RecordService

__all__ = ["RecordCommands"]

log = logging.getLogger("palimpsest")

MEMORY_TYPE_NAMES = ", ".join(sorted(t.value for t in MEMORY_RECORD_TYPES))


def _check_endpoint_type(record_type: Any, what: str) -> RecordType:
    if not isinstance(record_type, str):
        raise ValidationError(f"{what} must be a string.")
    try:
        return parse_record_type(record_type, memory_only=True)
    except ValidationError:
        raise ValidationError("A memory link endpoint must be a memory-like record.") from None


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
    ) -> None:
        self._store = store
        self._clock = clock
        self._memory = memory
        self._embeddings = embeddings
        self._linker = linker
        self._retention = retention
        self._extraction_config = extraction_config
        self._new_id = new_id

    def _expiry(self, *, now: datetime, ttl_days: Any, ttl_anchor: Any, timestamp: datetime | None) -> datetime | None:
        return resolve_expiry(
            now=now, ttl_days=ttl_days, ttl_anchor=ttl_anchor, timestamp=timestamp, retention=self._retention
        )

    def add_memory(
        self,
        content: str,
        *,
        memory_type: Any,
        user_id: Any,
        agent_id: Any,
        thread_id: Any,
        memory_id: Any,
        metadata: Any,
        timestamp: Any,
        ttl_days: Any,
        ttl_anchor: Any,
        memory_id_to_link: Any,
        link_type: Any,
        link_id: Any,
        link_timestamp: Any,
        link_metadata: Any,
        require_thread: str | None = None,
        autonomous_linking: bool | NotSetType = False,
    ) -> str:
        """Validate everything, then add the record (and its link) in one unit of work;
        with ``autonomous_linking``, the link resolver then links it to its closest memories."""
        if not isinstance(content, str) or not content.strip():
            raise ValidationError("memory content must be a non-empty string.")
        try:
            record_type = RecordType.MEMORY if isinstance(memory_type, NotSetType) else parse_record_type(
                memory_type, memory_only=True
            )
        except ValidationError:
            raise ValidationError(f"memory_type must be one of: {MEMORY_TYPE_NAMES}.") from None
        if isinstance(memory_id_to_link, NotSetType) != isinstance(link_type, NotSetType):
            raise ValidationError("memory_id_to_link and link_type must be provided together.")
        if isinstance(autonomous_linking, NotSetType):  # on by default only with a model, as in the reference
            autonomous_linking = getattr(self._linker.resolver, "uses_model", False) is True
        if autonomous_linking is not True and autonomous_linking is not False:
            raise ValidationError("autonomous_linking must be True or False.")
        now = self._clock.now()
        event_time = None if isinstance(timestamp, NotSetType) else parse_timestamp(timestamp)
        expires = self._expiry(now=now, ttl_days=ttl_days, ttl_anchor=ttl_anchor, timestamp=event_time)
        meta = None if isinstance(metadata, NotSetType) else check_metadata(metadata)
        scope = {"user_id": user_id, "agent_id": agent_id, "thread_id": thread_id}
        for name, value in scope.items():
            if not isinstance(value, NotSetType):
                check_optional_id(value, name)
        link_request = None
        if not isinstance(memory_id_to_link, NotSetType):
            check_id(memory_id_to_link, "memory_id_to_link")
            link_request = {
                "target_id": memory_id_to_link,
                "relation_type": link_type,
                "link_id": None if isinstance(link_id, NotSetType) else link_id,
                "timestamp": None if isinstance(link_timestamp, NotSetType) else parse_timestamp(link_timestamp),
                "metadata": None if isinstance(link_metadata, NotSetType) else check_metadata(link_metadata),
            }
        record_id = self._new_id() if isinstance(memory_id, NotSetType) or memory_id is None else check_id(memory_id, "memory_id")
        vector = self._embeddings.documents([content])[0]
        self._memory.add_record_with_link(
            content=content,
            record_type=record_type,
            record_id=record_id,
            scope=scope,
            metadata=meta,
            timestamp=event_time,
            expires_at=expires,
            embedding=vector,
            link=link_request,
            require_thread=require_thread,
        )
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

    def update_memory(
        self,
        memory_id: str,
        content: Any,
        metadata: Any,
        timestamp: Any,
        ttl_days: Any,
        ttl_anchor: Any,
        *,
        owner_thread: str | None = None,
    ) -> str:
        check_id(memory_id, "memory_id")
        if content is None:
            raise ValidationError("content cannot be None; omit it to keep the current text.")
        if not isinstance(content, (str, NotSetType)):
            raise ValidationError("memory content must be a string.")
        if all(isinstance(v, NotSetType) for v in (content, metadata, timestamp, ttl_days, ttl_anchor)):
            raise ValidationError("Provide at least one of content, metadata, timestamp, ttl_days or ttl_anchor.")
        now = self._clock.now()
        record = self._memory.get_record(memory_id, owner_thread=owner_thread)
        event_time = record.timestamp if isinstance(timestamp, NotSetType) else parse_timestamp(timestamp)
        expires: Any = NOTSET
        if not (isinstance(ttl_days, NotSetType) and isinstance(ttl_anchor, NotSetType)):
            expires = self._expiry(now=now, ttl_days=ttl_days, ttl_anchor=ttl_anchor, timestamp=event_time)
        embedding: Any = NOTSET
        if isinstance(content, str) and content != record.content:
            embedding = self._embeddings.documents([content])[0]
        self._memory.update_record(
            memory_id,
            content=content,
            metadata=metadata,
            timestamp=NOTSET if isinstance(timestamp, NotSetType) else event_time,
            expires_at=expires,
            embedding=embedding,
        )
        return memory_id

    def link_records(
        self,
        source_record_id: Any,
        source_record_type: Any,
        target_record_id: Any,
        target_record_type: Any,
        relation_type: Any,
        opposite_relation_type: Any,
        relation_id: Any,
        timestamp: Any,
        metadata: Any,
        *,
        owner_thread: str | None = None,
    ) -> str:
        source_type = _check_endpoint_type(source_record_type, "source_record_type")
        target_type = _check_endpoint_type(target_record_type, "target_record_type")
        check_id(source_record_id, "source_record_id")
        check_id(target_record_id, "target_record_id")
        if opposite_relation_type is None:
            raise ValidationError("opposite_relation_type cannot be None; omit it for the default label.")
        link = self._memory.link(
            source_record_id,
            target_record_id,
            relation_type,
            opposite_relation_type=None if isinstance(opposite_relation_type, NotSetType) else opposite_relation_type,
            link_id=None if isinstance(relation_id, NotSetType) else relation_id,
            metadata=None if isinstance(metadata, NotSetType) else check_metadata(metadata),
            timestamp=None if isinstance(timestamp, NotSetType) else parse_timestamp(timestamp),
            expected_types=(source_type, target_type),
            owner_thread=owner_thread,
        )
        return link.id

    def update_record_link(
        self,
        relation_id: Any,
        relation_type: Any,
        opposite_relation_type: Any,
        timestamp: Any,
        metadata: Any,
        *,
        owner_thread: str | None = None,
    ) -> int:
        check_id(relation_id, "relation_id")
        if all(isinstance(v, NotSetType) for v in (relation_type, opposite_relation_type, timestamp, metadata)):
            raise ValidationError("Provide at least one relation field to update.")
        try:
            self._memory.update_link(
                relation_id,
                relation_type=relation_type,
                opposite_relation_type=opposite_relation_type,
                metadata=metadata if isinstance(metadata, NotSetType) else check_metadata(metadata),
                timestamp=timestamp if isinstance(timestamp, NotSetType) else parse_timestamp(timestamp),
                owner_thread=owner_thread,
            )
        except LinkNotFoundError:
            return 0
        return 1

    def delete_record_link(
        self,
        source_record_id: Any,
        source_record_type: Any,
        target_record_id: Any,
        target_record_type: Any,
        relation_type: Any,
        relation_id: Any,
        *,
        owner_thread: str | None = None,
    ) -> int:
        tuple_args = (source_record_id, source_record_type, target_record_id, target_record_type, relation_type)
        given = [not isinstance(v, NotSetType) for v in tuple_args]
        if not isinstance(relation_id, NotSetType):
            if any(given):
                raise ValidationError("Provide relation_id alone or a complete relation endpoint tuple.")
            check_id(relation_id, "relation_id")
            return int(self._memory.delete_link(relation_id, owner_thread=owner_thread))
        if not all(given):
            raise ValidationError("Provide relation_id alone or a complete relation endpoint tuple.")
        source_type = _check_endpoint_type(source_record_type, "source_record_type")
        target_type = _check_endpoint_type(target_record_type, "target_record_type")
        return int(
            self._memory.delete_link_between(
                source_record_id,
                target_record_id,
                relation_type,
                expected_types=(source_type, target_type),
                owner_thread=owner_thread,
            )
        )
