"""Embedded adapter: the SQLite message repository behind a unit of work (the others are the kit's).

It is the SQL kit's (:mod:`palimpsest.adapters.sql.repositories`: validation, existence
checks, error naming, decoding) over the SQLite statements of :mod:`.statements`. What is the
embedded store's own: a new message's change-log row, written with its insert (migration 0003:
updates and deletes are logged by triggers), and the naming of a batch's taken id or seq.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from palimpsest.adapters.sql.repositories import SqlMessageRepository
from palimpsest.domain.errors import DuplicateIdError
from palimpsest.domain.model import Message

if TYPE_CHECKING:
    from .statements import SqliteStatements

__all__ = ["SqliteMessageRepository"]


class SqliteMessageRepository(SqlMessageRepository):
    __slots__ = ()

    @property
    def _statements(self) -> SqliteStatements:
        return self._uow.sql  # type: ignore[return-value]

    def _messages_added(self, messages: Sequence[Message], vectors: Sequence[Any], *, batch: bool) -> None:
        self._uow.run(self._statements.message_logged([m.id for m in messages]))

    def _explain_duplicate(self, messages: Sequence[Message]) -> None:
        # The unique keys caught it (no pre-checks on the hot path); name it.
        uow, sql = self._uow, self._statements
        taken = uow.fetch_one(sql.messages_taken([m.id for m in messages]))
        if taken:
            raise DuplicateIdError(f"A message with id {taken[0]!r} already exists.")
        clash = uow.fetch_one(sql.messages_placed([(m.thread_id, m.seq) for m in messages]))
        if clash:
            raise DuplicateIdError(f"Thread {clash[0]!r} already has a message with seq {clash[1]}.")
