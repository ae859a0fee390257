"""Adapters layer (SQL kit): the checkpoint repository (ARCHITECTURE.md D41), written once.

:class:`SqlCheckpointRepository` is :class:`~palimpsest.domain.ports.CheckpointRepository` over a
SQL unit of work, on three tables (``checkpoints``, ``checkpoint_blobs``, ``checkpoint_writes``)
whose statements are each store's (``checkpoint_*`` builders: the standard ones for SQLite and
PostgreSQL, Oracle's own). Writes of more than one statement run inside the unit of work's
:meth:`~.unit_of_work.SqlUnitOfWork.atomic`, so a failure leaves nothing; a read-only unit of work
refuses every write before anything is sent.

Metadata filters are equality of each key's JSON value
(:func:`palimpsest.domain.checkpoints.checkpoint_metadata_matches`). A store whose statements
compare JSON values exactly in SQL (``filters_checkpoint_metadata``: SQLite through the
registered domain function, PostgreSQL through ``jsonb`` equality) filters and limits there;
otherwise the listing reads every row the other filters keep, newest first, and filters and
limits in Python: correct first.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from palimpsest.domain.checkpoints import (
    ChannelBlob,
    CheckpointWrite,
    StoredCheckpoint,
    TypedBytes,
    check_checkpoint_filter,
    checkpoint_metadata_matches,
)
from palimpsest.domain.errors import ReadOnlyError, ValidationError
from palimpsest.domain.ports import CheckpointRepository

from .repositories import check_limit, id_batches

if TYPE_CHECKING:
    from .unit_of_work import SqlUnitOfWork

__all__ = ["SqlCheckpointRepository"]

_TABLES: Final = ("checkpoint_writes", "checkpoint_blobs", "checkpoints")
_BLOB_BATCH: Final = 100
"""Channel versions read in one statement (two binds each)."""


def _strings(values: Sequence[str], name: str) -> builtins.list[str]:
    if isinstance(values, str) or not all(isinstance(v, str) for v in values):
        raise ValidationError(f"{name} must be a sequence of strings, not a string.")
    return list(dict.fromkeys(values))


class SqlCheckpointRepository(CheckpointRepository):
    """See the module docstring."""

    __slots__ = ("_uow",)

    def __init__(self, uow: SqlUnitOfWork) -> None:
        self._uow = uow

    def _writing(self) -> SqlUnitOfWork:
        uow = self._uow
        if uow.read_only:
            raise ReadOnlyError(
                "checkpoints: this unit of work is read-only (store.reading()); use store.unit_of_work() to write."
            )
        uow.connection()  # a finished unit of work says so before anything else
        return uow

    def _json(self, value: Mapping[str, Any], what: str) -> str:
        try:
            text = self._uow.dialect.encode_json(value)
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"checkpoint {what} must be JSON: {exc}") from exc
        return str(text)

    def _decode(self, row: Sequence[Any]) -> StoredCheckpoint:
        d = self._uow.dialect
        created_at = d.decode_time(row[9])
        assert created_at is not None
        return StoredCheckpoint(
            thread_id=d.decode_text(row[0]) or "",
            checkpoint_ns=d.decode_text(row[1]) or "",
            checkpoint_id=d.decode_text(row[2]) or "",
            parent_checkpoint_id=d.decode_text(row[3]),
            run_id=d.decode_text(row[4]),
            checkpoint=TypedBytes(d.decode_text(row[5]) or "", d.decode_bytes(row[6]) or b""),
            metadata=d.decode_json(row[7]) or {},
            channel_versions=d.decode_json(row[8]) or {},
            created_at=created_at,
        )

    # --- writes ----------------------------------------------------------------------------------

    def put(self, checkpoint: StoredCheckpoint, blobs: Sequence[ChannelBlob]) -> None:
        uow = self._writing()
        sql = uow.sql
        statement = sql.checkpoint_put(
            checkpoint,
            self._json(checkpoint.metadata, "metadata"),
            self._json(checkpoint.channel_versions, "channel versions"),
        )
        inserts = [sql.checkpoint_blob_insert(checkpoint.thread_id, checkpoint.checkpoint_ns, b) for b in blobs]
        with uow.atomic():
            uow.run(statement)
            uow.run_many(inserts)

    def put_writes(
        self,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        writes: Sequence[CheckpointWrite],
    ) -> None:
        uow = self._writing()
        replacing = [
            uow.sql.checkpoint_write_put(thread_id, checkpoint_ns, checkpoint_id, w, replace=True)
            for w in writes
            if w.idx < 0
        ]
        keeping = [
            uow.sql.checkpoint_write_put(thread_id, checkpoint_ns, checkpoint_id, w, replace=False)
            for w in writes
            if w.idx >= 0
        ]
        with uow.atomic():
            uow.run_many(replacing)
            uow.run_many(keeping)

    def delete_threads(self, thread_ids: Sequence[str]) -> int:
        uow = self._writing()
        ids = _strings(thread_ids, "thread_ids")
        count = 0
        with uow.atomic():
            for batch in id_batches(ids, uow.dialect.id_batch_bytes):
                for table in _TABLES:
                    deleted = uow.run(uow.sql.checkpoint_delete_threads(table, batch))
                count += deleted  # the last table's: the checkpoints
        return count

    def delete_runs(self, run_ids: Sequence[str]) -> int:
        uow = self._writing()
        ids = _strings(run_ids, "run_ids")
        count = 0
        with uow.atomic():
            for batch in id_batches(ids, uow.dialect.id_batch_bytes):
                uow.run(uow.sql.checkpoint_delete_runs(batch, writes=True))
                count += uow.run(uow.sql.checkpoint_delete_runs(batch, writes=False))
        return count

    def delete_checkpoints(self, thread_id: str, checkpoint_ns: str, checkpoint_ids: Sequence[str]) -> int:
        uow = self._writing()
        ids = _strings(checkpoint_ids, "checkpoint_ids")
        count = 0
        with uow.atomic():
            for batch in id_batches(ids, uow.dialect.id_batch_bytes):
                uow.run(uow.sql.checkpoint_delete("checkpoint_writes", thread_id, checkpoint_ns, batch))
                count += uow.run(uow.sql.checkpoint_delete("checkpoints", thread_id, checkpoint_ns, batch))
        return count

    def delete_blobs(self, thread_id: str, checkpoint_ns: str, versions: Sequence[tuple[str, str]]) -> int:
        uow = self._writing()
        pairs = list(dict.fromkeys((str(channel), str(version)) for channel, version in versions))
        count = 0
        with uow.atomic():
            for channel, version in pairs:
                count += uow.run(uow.sql.checkpoint_blob_delete(thread_id, checkpoint_ns, channel, version))
        return count

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> int:
        uow = self._writing()
        with uow.atomic():
            copied = uow.run(uow.sql.checkpoint_copy("checkpoints", source_thread_id, target_thread_id))
            uow.run(uow.sql.checkpoint_copy("checkpoint_blobs", source_thread_id, target_thread_id))
            uow.run(uow.sql.checkpoint_copy("checkpoint_writes", source_thread_id, target_thread_id))
        return copied

    # --- reads -----------------------------------------------------------------------------------

    def get(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str | None = None) -> StoredCheckpoint | None:
        row = self._uow.fetch_one(self._uow.sql.checkpoint_get(thread_id, checkpoint_ns, checkpoint_id))
        return None if row is None else self._decode(row)

    def list(
        self,
        *,
        thread_id: str | None = None,
        checkpoint_ns: str | None = None,
        checkpoint_id: str | None = None,
        before: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        limit: int | None = None,
    ) -> builtins.list[StoredCheckpoint]:
        limit = check_limit(limit, minimum=0)  # UNBOUNDED_LIMIT and above: every row (None)
        flt = check_checkpoint_filter(metadata)
        if limit == 0:
            return []
        uow = self._uow
        in_sql = flt is None or uow.sql.filters_checkpoint_metadata
        statement = uow.sql.checkpoint_list(
            thread_id=thread_id,
            checkpoint_ns=checkpoint_ns,
            checkpoint_id=checkpoint_id,
            before=before,
            metadata=flt if in_sql else None,
            limit=limit if in_sql else None,
        )
        rows = [self._decode(row) for row in uow.fetch_all(statement)]
        if in_sql:
            return rows
        kept = [row for row in rows if checkpoint_metadata_matches(row.metadata, flt)]
        return kept if limit is None else kept[:limit]

    def blobs(self, thread_id: str, checkpoint_ns: str, versions: Mapping[str, str]) -> dict[str, ChannelBlob]:
        uow = self._uow
        d = uow.dialect
        wanted = [(str(channel), str(version)) for channel, version in versions.items()]
        found: dict[str, ChannelBlob] = {}
        for start in range(0, len(wanted), _BLOB_BATCH):
            batch = wanted[start : start + _BLOB_BATCH]
            for row in uow.fetch_all(uow.sql.checkpoint_blobs(thread_id, checkpoint_ns, batch)):
                channel, version = d.decode_text(row[0]) or "", d.decode_text(row[1]) or ""
                found[channel] = ChannelBlob(
                    channel, version, TypedBytes(d.decode_text(row[2]) or "", d.decode_bytes(row[3]) or b"")
                )
        return {channel: found[channel] for channel, _ in wanted if channel in found}

    def writes(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> builtins.list[CheckpointWrite]:
        uow = self._uow
        d = uow.dialect
        return [
            CheckpointWrite(
                task_id=d.decode_text(row[0]) or "",
                task_path=d.decode_text(row[1]) or "",
                idx=int(row[2]),
                channel=d.decode_text(row[3]) or "",
                value=TypedBytes(d.decode_text(row[4]) or "", d.decode_bytes(row[5]) or b""),
            )
            for row in uow.fetch_all(uow.sql.checkpoint_writes(thread_id, checkpoint_ns, checkpoint_id))
        ]
