"""Embedded adapter: the unit of work, one SQLite write transaction (BEGIN IMMEDIATE … COMMIT), or
one read transaction (BEGIN DEFERRED) for a read-only unit of work."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Self

import numpy as np
from palimpsest.domain.errors import StorageError
from palimpsest.domain.ports import UnitOfWork, restrict_to_reads
from palimpsest.domain.sentinel import NOTSET, NotSetType

from . import schema
from .codec import encode_embedding, normalise, normalise_many
from .errors import translate
from .repositories import (
    SqliteJobRepository,
    SqliteLinkRepository,
    SqliteMessageRepository,
    SqliteRecordRepository,
    SqliteSettingsRepository,
    SqliteSummaryRepository,
    SqliteThreadRepository,
)

if TYPE_CHECKING:
    from .store import EmbeddedStore, _Connections

__all__ = ["SqliteUnitOfWork"]

_NEW, _ACTIVE, _DONE = "new", "active", "done"


class SqliteUnitOfWork(UnitOfWork):
    """One write transaction on the calling thread's writer connection.

    ``BEGIN IMMEDIATE`` takes SQLite's single write lock on enter, so two units of work never
    interleave and a transaction never fails half-way for want of a lock. Caches are not
    touched while the transaction is open: after ``commit`` the store replays the change log,
    so a rollback has nothing to undo outside SQLite.

    ``read_only=True`` (``EmbeddedStore.reading()``): a read transaction on the thread's
    snapshot connection instead, which never takes the write lock; its repositories refuse
    writes and ``commit`` only ends it.
    """

    def __init__(self, store: EmbeddedStore, *, read_only: bool = False) -> None:
        self._store = store
        self._read_only = read_only
        self._conn: sqlite3.Connection | None = None
        self._holder: _Connections | None = None  # the entering thread's, released at the end
        self._state = _NEW
        self._dimension: int | None | NotSetType = NOTSET
        self.threads = SqliteThreadRepository(self)
        self.messages = SqliteMessageRepository(self)
        self.records = SqliteRecordRepository(self)
        self.links = SqliteLinkRepository(self)
        self.summaries = SqliteSummaryRepository(self)
        self.settings = SqliteSettingsRepository(self)
        self.jobs = SqliteJobRepository(self)
        if read_only:
            restrict_to_reads(self)

    # --- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> Self:
        if self._state is not _NEW:
            raise StorageError("A unit of work can be entered only once.")
        if self._read_only:
            self._holder, self._conn = self._store._acquire_snapshot()
            self._state = _ACTIVE
            return self
        holder, conn = self._store._acquire_writer()
        try:
            schema.begin_immediate(conn, self._store._busy_timeout)
        except BaseException:
            self._store._release_writer(holder)
            raise
        self._holder = holder
        self._conn = conn
        self._state = _ACTIVE
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._state is _ACTIVE:
            self.rollback()

    def commit(self) -> None:
        conn = self.connection()
        if self._read_only:
            self._finish(rollback=True)  # nothing to commit: just end the snapshot
            return
        try:
            with translate():
                self._store._before_commit(conn)
            schema.commit(conn, self._store._busy_timeout)
        except BaseException:
            self._finish(rollback=True)
            raise
        dimension = self._dimension
        self._finish(rollback=False)
        self._store._after_commit(None if isinstance(dimension, NotSetType) else dimension)

    def rollback(self) -> None:
        if self._state is _ACTIVE:
            self._finish(rollback=True)
        else:
            self._state = _DONE

    def _finish(self, *, rollback: bool) -> None:
        conn, self._conn, self._state = self._conn, None, _DONE
        if self._read_only:
            holder, self._holder = self._holder, None
            if holder is not None:
                self._store._release_snapshot(holder)
            return
        try:
            if rollback and conn is not None and conn.in_transaction:
                conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass  # a closed store or a failed COMMIT may have ended the transaction already
        finally:
            if self._holder is not None:
                self._store._release_writer(self._holder)
                self._holder = None

    def connection(self) -> sqlite3.Connection:
        """The transaction's connection; ``StorageError`` once the unit of work is finished."""
        if self._state is not _ACTIVE or self._conn is None:
            raise StorageError(
                "This unit of work is not active (use it inside `with`, before commit/rollback)."
            )
        self._store._check_open()
        return self._conn

    # --- vectors -----------------------------------------------------------------------------

    def dimension(self) -> int | None:
        """The store's dimension as of this transaction (the write lock, or the read snapshot,
        makes ``meta`` final)."""
        if isinstance(self._dimension, NotSetType):
            dimension = self._store._dimension
            if dimension is None:
                with translate():
                    raw = schema.read_meta(self.connection(), "dimension")
                dimension = None if raw is None else int(raw)
            self._dimension = dimension
        return self._dimension

    def validate_vector(self, embedding: Sequence[float]) -> np.ndarray:
        """Check and normalise an embedding before anything is written."""
        return normalise(embedding, self.dimension())

    def validate_vectors(self, embeddings: Sequence[Sequence[float]]) -> list[np.ndarray]:
        """:meth:`validate_vector` for a batch, in one vectorised pass."""
        return normalise_many(embeddings, self.dimension())

    def store_vector(self, vector: np.ndarray) -> bytes:
        """The blob to store; the first vector of a store without dimension fixes it."""
        if self.dimension() is None:
            schema.write_meta(self.connection(), "dimension", str(vector.shape[0]))
            self._dimension = int(vector.shape[0])
        return encode_embedding(vector)
