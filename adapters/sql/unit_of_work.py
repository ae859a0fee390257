"""Adapters layer (SQL kit): the unit-of-work lifecycle every SQL store shares.

A unit of work is one database transaction (decision D4). It is entered once (``new`` →
``active``); ``commit()`` commits and finishes, ``rollback()`` or leaving the block any other way
rolls back and finishes (``done``). A read-only unit of work (``store.reading()``) reads one
snapshot: its repositories refuse writes before sending anything (:func:`restrict_to_reads`) and
``commit()`` only ends it. After a successful commit the store's hook runs (caches, a dimension
learnt). Every statement runs through :meth:`SqlUnitOfWork.fetch_one` and its siblings, which
translate driver errors into the domain's (D10) through the store's dialect; a write of several
statements runs inside :meth:`SqlUnitOfWork.atomic`, a savepoint, so a failed write leaves the
transaction as it was and the caller may go on.

Vectors: a store's dimension is read once per unit of work; a vector of another length raises
:class:`VectorDimensionError` before anything is written, and the first vector of a store without
a dimension fixes it inside the same transaction, under the store's write lock
(:meth:`SqlUnitOfWork.fix_dimension`), so two writers cannot fix two dimensions.

A store subclasses :class:`SqlUnitOfWork` and supplies how a connection is taken and given back,
how the dimension is read and written, and its repositories.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import Any, ClassVar, Self

from palimpsest.domain.errors import AgentMemoryError, StorageError, VectorDimensionError
from palimpsest.domain.ports import UnitOfWork, restrict_to_reads
from palimpsest.domain.sentinel import NOTSET, NotSetType

from .codec import RowCodec
from .dialect import Dialect, Statement
from .repositories import (
    SqlImageRepository,
    SqlJobRepository,
    SqlLinkRepository,
    SqlMessageRepository,
    SqlRecordRepository,
    SqlSettingsRepository,
    SqlSummaryRepository,
    SqlThreadRepository,
)
from .statements import Statements

__all__ = ["SqlUnitOfWork"]

_NEW, _ACTIVE, _DONE = "new", "active", "done"


class SqlUnitOfWork(UnitOfWork):
    """One transaction of a SQL store; see the module docstring.

    Subclasses set the repository classes that differ from the kit's (``message_repository``...:
    a store with hooks of its own) and implement
    :meth:`_begin`, :meth:`_release`, :meth:`_read_dimension` and :meth:`_write_dimension`;
    :meth:`_begun`, :meth:`_commit_connection`, :meth:`_rollback_connection`, :meth:`_committed`,
    :meth:`_check_open` and :meth:`_observed` have defaults.
    """

    thread_repository: ClassVar[type[Any]] = SqlThreadRepository
    message_repository: ClassVar[type[Any]] = SqlMessageRepository
    record_repository: ClassVar[type[Any]] = SqlRecordRepository
    link_repository: ClassVar[type[Any]] = SqlLinkRepository
    summary_repository: ClassVar[type[Any]] = SqlSummaryRepository
    settings_repository: ClassVar[type[Any]] = SqlSettingsRepository
    job_repository: ClassVar[type[Any]] = SqlJobRepository
    image_repository: ClassVar[type[Any]] = SqlImageRepository

    def __init__(
        self, dialect: Dialect, statements: Statements, codec: RowCodec, *, read_only: bool = False
    ) -> None:
        self.dialect = dialect
        self.sql = statements
        self.codec = codec
        self._read_only = read_only
        self._conn: Any = None
        self._state = _NEW
        self._lost = False
        self._depth = 0
        self._dimension: int | None | NotSetType = NOTSET
        self._fixed: int | None = None
        self.threads = self.thread_repository(self)
        self.messages = self.message_repository(self)
        self.records = self.record_repository(self)
        self.links = self.link_repository(self)
        self.summaries = self.summary_repository(self)
        self.settings = self.settings_repository(self)
        self.jobs = self.job_repository(self)
        self.images = self.image_repository(self)
        if read_only:
            restrict_to_reads(self)

    @property
    def read_only(self) -> bool:
        return self._read_only

    # --- store hooks -----------------------------------------------------------------------------

    def _begin(self) -> Any:
        """Take a connection and start the transaction (read-only or not); returns it."""
        raise NotImplementedError

    def _begun(self) -> None:
        """Runs once active (statements may run); a failure rolls back and releases."""

    def _release(self, connection: Any) -> None:
        """Give the connection back (``self._lost``: it is unusable)."""
        raise NotImplementedError

    def _commit_connection(self, connection: Any) -> None:
        connection.commit()

    def _rollback_connection(self, connection: Any) -> None:
        connection.rollback()

    def _committed(self) -> None:
        """After a successful commit (``self._fixed``: a dimension this transaction fixed)."""

    def _check_open(self) -> None:
        """Raise :class:`StoreClosedError` once the store is closed."""

    def _read_dimension(self, *, for_update: bool) -> int | None:
        """The committed dimension (``for_update``: under the store's write lock)."""
        raise NotImplementedError

    def _write_dimension(self, dimension: int) -> None:
        raise NotImplementedError

    def _observed(self, dimension: int | None) -> None:
        """The dimension this transaction read (a store may cache it)."""

    # --- lifecycle -------------------------------------------------------------------------------

    def __enter__(self) -> Self:
        if self._state is not _NEW:
            raise StorageError("A unit of work can be entered only once.")
        self._conn = self._begin()
        self._state = _ACTIVE
        try:
            self._begun()
        except BaseException:
            self._finish(rollback=True)
            raise
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
        """Commit and finish; then the store's after-commit hook runs."""
        connection = self.connection()
        if self._read_only:
            self._finish(rollback=True)  # nothing to commit: just end the snapshot
            return
        try:
            with self.translating():
                self._commit_connection(connection)
        except BaseException:
            self._finish(rollback=True)
            raise
        self._finish(rollback=False)
        self._committed()

    def rollback(self) -> None:
        """Discard every write and finish (harmless when already finished)."""
        if self._state is _ACTIVE:
            self._finish(rollback=True)
        else:
            self._state = _DONE

    def _finish(self, *, rollback: bool) -> None:
        connection, self._conn, self._state = self._conn, None, _DONE
        if connection is None:
            return
        try:
            if rollback and not self._lost:
                self._rollback_connection(connection)
        except self.dialect.driver_error as exc:  # the session may be gone; releasing matters now
            if self.dialect.is_connection_lost(exc):
                self._lost = True
        finally:
            self._release(connection)

    def connection(self) -> Any:
        """The transaction's connection; ``StorageError`` once the unit of work is finished."""
        if self._state is not _ACTIVE or self._conn is None:
            raise StorageError(
                "This unit of work is not active (use it inside `with`, before commit/rollback)."
            )
        self._check_open()
        return self._conn

    # --- statements ------------------------------------------------------------------------------

    @contextmanager
    def translating(self, missing: type[AgentMemoryError] | None = None) -> Iterator[None]:
        """Translate driver errors raised inside the block (and remember a lost session)."""
        try:
            yield
        except self.dialect.driver_error as exc:
            if self.dialect.is_connection_lost(exc):
                self._lost = True
            raise self.dialect.translate(exc, missing) from exc

    def fetch_one(
        self, statement: Statement, *, missing: type[AgentMemoryError] | None = None
    ) -> tuple[Any, ...] | None:
        connection = self.connection()
        with self.translating(missing):
            return self.dialect.fetch_one(connection, statement)

    def fetch_all(self, statement: Statement, *, missing: type[AgentMemoryError] | None = None) -> list[Any]:
        connection = self.connection()
        with self.translating(missing):
            return self.dialect.fetch_all(connection, statement)

    def run(self, statement: Statement, *, missing: type[AgentMemoryError] | None = None) -> int:
        connection = self.connection()
        with self.translating(missing):
            return self.dialect.run(connection, statement)

    def run_many(
        self, statements: Sequence[Statement], *, missing: type[AgentMemoryError] | None = None
    ) -> int:
        if not statements:
            return 0
        connection = self.connection()
        with self.translating(missing):
            return self.dialect.run_many(connection, statements)

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """One all-or-nothing write: a savepoint, rolled back to if the block raises.

        The transaction stays usable after the failure, with the write's effects (including a
        dimension it fixed) undone.
        """
        connection = self.connection()
        dialect = self.dialect
        self._depth += 1
        depth = self._depth
        remembered = (self._dimension, self._fixed)
        try:
            begin = dialect.savepoint(depth)
            if begin is not None:
                self.run(begin)
            yield
            end = dialect.release(depth)
            if end is not None:
                self.run(end)
        except BaseException:
            if self._fixed != remembered[1]:  # this write fixed the dimension: that is undone too
                self._dimension, self._fixed = remembered
            undo = dialect.rollback_to(depth)
            if not self._lost and undo is not None:
                try:
                    dialect.run(connection, undo)
                    end = dialect.release(depth)
                    if end is not None:
                        dialect.run(connection, end)
                except dialect.driver_error as exc:  # pragma: no cover - the original error tells
                    if dialect.is_connection_lost(exc):
                        self._lost = True
            raise
        finally:
            self._depth -= 1

    # --- vectors ---------------------------------------------------------------------------------

    def dimension(self) -> int | None:
        """The store's dimension as this transaction sees it (read once)."""
        if isinstance(self._dimension, NotSetType):
            self._dimension = self._read_dimension(for_update=False)
            self._observed(self._dimension)
        return self._dimension

    def unit_vectors(self, embeddings: Sequence[Sequence[float]]) -> list[Any]:
        """Check and normalise vectors before anything is written (the dialect's unit vectors)."""
        return self.dialect.unit_vectors(embeddings, self.dimension())

    def unit_vector(self, embedding: Sequence[float]) -> Any:
        return self.unit_vectors([embedding])[0]

    def fix_dimension(self, dimension: int) -> None:
        """Before storing a vector of ``dimension`` entries (inside the write's :meth:`atomic`):
        a store without a dimension takes this one, under the store's write lock."""
        if self.dimension() is not None:
            return  # already fixed; the vector was checked against it
        current = self._read_dimension(for_update=True)
        if current is None:
            self._write_dimension(dimension)
            self._fixed = dimension
            self._dimension = dimension
            return
        self._dimension = current  # another transaction fixed it meanwhile
        if current != dimension:
            raise VectorDimensionError(
                f"vector has {dimension} dimensions but this store holds {current}-dimensional vectors."
            )
