"""Adapters layer (Oracle): the repositories behind a unit of work that are Oracle's own (threads,
messages, records); links, summaries, settings and extraction jobs are the kit's as they are.

They are the SQL kit's (:mod:`palimpsest.adapters.sql.repositories`: validation, existence checks,
error naming, decoding, the metadata-filter paging of D7) over the statements of
:mod:`.statements`. What is Oracle's own is the chunk row (``RECORD_CHUNKS``) beside every message
and memory record: it carries the vector and the text Oracle Text and the vector index search,
and the hooks below keep it in step inside the same write (:meth:`OracleUnitOfWork.atomic`).
"""

from __future__ import annotations

import array
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from palimpsest.adapters.sql.repositories import (
    SqlMessageRepository,
    SqlRecordRepository,
    SqlThreadRepository,
)
from palimpsest.domain.model import (
    MemoryRecord,
    Message,
    RecordStatus,
    RecordType,
    keyword_text,
    searched_text,
    speaker_of,
)
from palimpsest.domain.sentinel import NOTSET, NotSetType

from . import statements as st
from .codec import DIALECT
from .names import StoreNames
from .sql import Statement

if TYPE_CHECKING:
    from .unit_of_work import OracleUnitOfWork

__all__ = ["OracleMessageRepository", "OracleRecordRepository", "OracleThreadRepository"]


def _names(repository: Any) -> StoreNames:
    uow: OracleUnitOfWork = repository._uow
    return uow.names


# --- threads ---------------------------------------------------------------------------------------


class OracleThreadRepository(SqlThreadRepository):
    __slots__ = ()

    def _deleting(self, thread_id: str) -> None:
        # The chunks of its messages and thread-scoped records first (they carry the thread id).
        self._uow.run(st.chunks_delete_for_thread(_names(self), thread_id))


# --- messages --------------------------------------------------------------------------------------


Turn = tuple[str, str | None]
"""A message as the message after it reads it: (content, speaker)."""


def _turn(content: Any, metadata: Any) -> Turn:
    """The turn of a fetched (content, metadata) pair."""
    return DIALECT.decode_text(content) or "", speaker_of(DIALECT.decode_json(metadata))


def _lead(turn: Turn) -> str | None:
    """What the message after ``turn`` reads of it: its searched text when it has a speaker."""
    return searched_text(*turn) if turn[1] else None


def _keyword_text(turn: Turn, before: Turn | None) -> str:
    """The chunk text of a message: the :func:`keyword_text` of its turn after ``before``."""
    return keyword_text(*turn) if before is None else keyword_text(*turn, *before)


def _own_turn(message: Message) -> Turn:
    return message.content, message.speaker


def _message_chunk(names: StoreNames, message: Message, vector: array.array[float] | None, text: str) -> Statement:
    return st.chunk_insert(
        names,
        source_id=message.id,
        record_type=RecordType.MESSAGE,
        content=text,
        thread_id=message.thread_id,
        user_id=message.user_id,
        agent_id=message.agent_id,
        status=RecordStatus.VALID,
        expires_at=message.expires_at,
        created_at=message.created_at,
        vector=vector,
    )


class OracleMessageRepository(SqlMessageRepository):
    """A message's chunk text is its keyword text (:func:`keyword_text`), which reads the stored
    message just before it in its thread (by seq, expired or not). Every write keeps it current
    in the same transaction: an added message reads the one before it, an edited one rewrites
    the text of the message after it when what that one reads of it changed, and a delete or
    a purge rewrites the text of the message that followed (``chunks.update_text``). Messages
    are appended in seq order: one added below a stored message leaves that message's text.

    A batch sends one ``executemany`` per statement; a message reads the batch's message before
    it in its thread, the first of a thread the stored one (one query per thread, when that
    first message has a speaker)."""

    __slots__ = ()

    def _before(self, thread_id: str, seq: int) -> Turn | None:
        """The thread's stored message just before ``seq``, or ``None``."""
        row = self._uow.fetch_one(st.message_before(_names(self), thread_id, seq))
        return None if row is None else _turn(row[0], row[1])

    def _refresh_after(
        self, thread_id: str, seq: int, before: Turn | None | NotSetType = NOTSET
    ) -> int | None:
        """Rewrite the chunk text of the thread's message just after ``seq``, read after
        ``before`` (NOTSET: the stored message now just before it); returns that message's seq,
        ``None`` when none follows. One without a speaker reads nothing before it: left as is."""
        row = self._uow.fetch_one(st.message_after(_names(self), thread_id, seq))
        if row is None:
            return None
        following, turn = int(row[1]), _turn(row[2], row[3])
        if turn[1] is None:
            return following
        if isinstance(before, NotSetType):
            before = self._before(thread_id, following)
        self._uow.run(st.chunk_text_update(_names(self), row[0], _keyword_text(turn, before)))
        return following

    def _messages_added(self, messages: Sequence[Message], vectors: Sequence[Any], *, batch: bool) -> None:
        uow, names = self._uow, _names(self)
        if not batch:
            message = messages[0]
            before = self._before(message.thread_id, message.seq) if message.speaker else None
            uow.run(_message_chunk(names, message, vectors[0], _keyword_text(_own_turn(message), before)))
            return
        texts: dict[str, str] = {}
        previous: Message | None = None
        for m in sorted(messages, key=lambda m: (m.thread_id, m.seq)):
            if previous is not None and previous.thread_id == m.thread_id:
                turn_before: Turn | None = _own_turn(previous)
            else:
                turn_before = self._before(m.thread_id, m.seq) if m.speaker else None
            texts[m.id] = _keyword_text(_own_turn(m), turn_before)
            previous = m
        pairs = list(zip(messages, vectors, strict=True))
        uow.run_many([_message_chunk(names, m, v, texts[m.id]) for m, v in pairs if v is not None])
        uow.run_many([_message_chunk(names, m, None, texts[m.id]) for m, v in pairs if v is None])

    def _message_updated(self, message: Message, vector: Any, place: tuple[Any, ...]) -> None:
        names = _names(self)
        turn = _own_turn(message)
        before = self._before(message.thread_id, message.seq) if message.speaker else None
        text = _keyword_text(turn, before)
        chunk = st.chunk_update(
            names,
            source_id=message.id,
            record_type=RecordType.MESSAGE,
            content=text,
            user_id=message.user_id,
            agent_id=message.agent_id,
            status=RecordStatus.VALID,
            expires_at=message.expires_at,
            created_at=message.created_at,
            vector=vector,
        )
        if self._uow.run(chunk) == 0:  # no chunk (never expected): write it now
            self._uow.run(
                _message_chunk(names, message, vector if isinstance(vector, array.array) else None, text)
            )
        if _lead(turn) != _lead(_turn(place[2], place[3])):
            self._refresh_after(message.thread_id, message.seq, turn)

    def _message_deleted(self, message_id: str, place: tuple[Any, ...]) -> None:
        self._uow.run(st.chunk_delete(_names(self), message_id, message=True))
        self._refresh_after(place[0], int(place[1]))

    def _messages_purging(self, rows: Sequence[tuple[Any, ...]]) -> None:
        names = _names(self)
        self._uow.run_many([st.chunk_delete(names, row[0], message=True) for row in rows])

    def _messages_purged(self, purged: Sequence[tuple[str, int]]) -> None:
        """The survivor following each run of purged seqs of a thread gets its chunk text anew
        (one pass per thread, in seq order)."""
        thread: str | None = None
        follower: int | None = None  # the seq of the thread's last follower rewritten
        for thread_id, seq in purged:
            if thread_id == thread and (follower is None or seq < follower):
                continue  # nothing follows, or the same follower as the purged seq before
            thread, follower = thread_id, self._refresh_after(thread_id, seq)


# --- memory records --------------------------------------------------------------------------------


def _record_chunk(names: StoreNames, record: MemoryRecord, vector: array.array[float] | None) -> Statement:
    return st.chunk_insert(
        names,
        source_id=record.id,
        record_type=record.record_type,
        content=record.content,
        thread_id=record.thread_id,
        user_id=record.user_id,
        agent_id=record.agent_id,
        status=record.status,
        expires_at=record.expires_at,
        created_at=record.created_at,
        vector=vector,
    )


class OracleRecordRepository(SqlRecordRepository):
    __slots__ = ()

    def _record_added(self, record: MemoryRecord, vector: Any) -> None:
        self._uow.run(_record_chunk(_names(self), record, vector))

    def _record_updated(self, record: MemoryRecord, vector: Any) -> None:
        names = _names(self)
        chunk = st.chunk_update(
            names,
            source_id=record.id,
            record_type=record.record_type,
            content=record.content,
            user_id=record.user_id,
            agent_id=record.agent_id,
            status=record.status,
            expires_at=record.expires_at,
            created_at=record.created_at,
            vector=vector,
        )
        if self._uow.run(chunk) == 0:  # no chunk (never expected): write it now
            self._uow.run(_record_chunk(names, record, vector if isinstance(vector, array.array) else None))

    def _record_deleted(self, record_id: str) -> None:
        self._uow.run(st.chunk_delete(_names(self), record_id, message=False))
