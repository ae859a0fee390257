"""Embedded adapter: the SQLite statements of the SQL kit's repositories (:mod:`palimpsest.adapters.sql`).

The kit's standard statements (:class:`~palimpsest.adapters.sql.standard.StandardStatements`)
with the SQLite dialect (``?``, id lists as one JSON text read by ``json_each``). What is the
embedded store's own: metadata filters run in SQL (``metadata_matches`` and, for checkpoint
listings, ``checkpoint_metadata_matches``, registered by :mod:`.schema`), and a new message's change-log row and the naming of a batch's taken id or seq
(:mod:`.repositories`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from palimpsest.adapters.sql import Sql
from palimpsest.adapters.sql.standard import StandardStatements

__all__ = ["SqliteStatements"]


class SqliteStatements(StandardStatements):
    """The standard statements, with metadata filters in SQL and the change log's statements."""

    filters_metadata: ClassVar[bool] = True
    filters_checkpoint_metadata: ClassVar[bool] = True

    __slots__ = ()

    def _checkpoint_metadata_condition(self, metadata: Mapping[str, Any]) -> tuple[str, Sequence[Any]]:
        # The domain's equality, registered by .schema (SQLite's JSON functions read true as 1).
        return "checkpoint_metadata_matches(metadata, ?) = 1", (json.dumps(metadata, separators=(",", ":")),)

    def _metadata_condition(self, metadata_filter: Mapping[str, Any]) -> tuple[str, Sequence[Any]]:
        return "metadata_matches(metadata, ?)", (json.dumps(metadata_filter, separators=(",", ":")),)

    def message_logged(self, message_ids: Sequence[str]) -> Sql:
        """The change-log rows of added messages (logged here rather than by a trigger: see
        migration 0003)."""
        sql = "INSERT INTO changes (kind, ref) SELECT 'message', value FROM json_each(?)"
        return Sql("messages.logged", sql, (json.dumps(list(message_ids)),))

    def messages_taken(self, message_ids: Sequence[str]) -> Sql:
        """The first of ``message_ids`` stored already, if any."""
        clause, params = self._in("id", message_ids)
        return Sql("messages.taken", f"SELECT id FROM messages WHERE {clause} LIMIT 1", params)

    def messages_placed(self, slots: Sequence[tuple[str, int]]) -> Sql:
        """The first (thread, seq) of ``slots`` taken by a stored message, if any."""
        sql = (
            "SELECT m.thread_id, m.seq FROM messages m JOIN json_each(?) j "
            "ON m.thread_id = json_extract(j.value, '$[0]') AND m.seq = json_extract(j.value, '$[1]') LIMIT 1"
        )
        return Sql("messages.placed", sql, (json.dumps(list(slots)),))
