"""Adapters layer (Oracle): the unit of work, one database transaction on one lent connection.

A unit of work takes a connection from the store's :class:`ConnectionSource` when entered and
gives it back when it finishes: ``commit()`` commits, ``rollback()`` or leaving the block any
other way rolls back (decision D4). Every statement runs through :meth:`OracleUnitOfWork.fetch_one`
and its siblings, which translate driver errors into the domain's (D10); writes made of several
statements run inside :meth:`OracleUnitOfWork.atomic`, a savepoint, so a failed write leaves the
transaction as it was and the caller may go on (as the contract requires of a failed batch).

Vectors: the store's dimension lives in its registry row (D17). It is read once per unit of work,
a vector of another length raises :class:`VectorDimensionError` before anything is written, and
the first vector of a store without a dimension fixes it inside the same transaction (the
registry row is locked ``FOR UPDATE`` and updated), so two writers cannot fix two dimensions.
The store learns the new dimension after the commit.

A read-only unit of work (``OracleStore.reading()``) opens its transaction with ``SET TRANSACTION
READ ONLY``: all its queries see one snapshot (the data committed before it began), Oracle refuses
DML in it, and its repositories refuse writes before sending anything. ``commit()`` ends it.
"""

from __future__ import annotations

import array
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol, Self

import oracledb
from palimpsest.domain.errors import NotFoundError, StorageError, VectorDimensionError
from palimpsest.domain.ports import UnitOfWork, restrict_to_reads
from palimpsest.domain.sentinel import NOTSET, NotSetType

from . import sql
from .codec import encode_vector
from .connection import ConnectionSource
from .errors import is_connection_lost, translated
from .names import StoreNames
from .repositories import (
    OracleJobRepository,
    OracleLinkRepository,
    OracleMessageRepository,
    OracleRecordRepository,
    OracleSettingsRepository,
    OracleSummaryRepository,
    OracleThreadRepository,
)
from .sql import Statement
from .statements import read_only_transaction, rollback_to_savepoint, savepoint

__all__ = ["OracleUnitOfWork", "RegistrySchema", "StoreContext"]

_NEW, _ACTIVE, _DONE = "new", "active", "done"


class RegistrySchema(Protocol):
    """What a unit of work needs of the schema manager: the registry row's statements."""

    def select_config(self, *, for_update: bool = False) -> Statement: ...

    def set_dimension(self, dimension: int | None) -> Statement: ...

    def parse_config(self, value: Any) -> Any: ...


def _ignore(_dimension: int | None) -> None:
    return None


@dataclass
class StoreContext:
    """Everything a unit of work borrows from its store.

    ``observed(dimension)`` reports the committed dimension read from the registry;
    ``committed(dimension)`` runs after a successful commit, with the dimension this unit of
    work fixed (or ``None``).
    """

    names: StoreNames
    source: ConnectionSource
    schema: RegistrySchema
    observed: Callable[[int | None], None] = field(default=_ignore)
    committed: Callable[[int | None], None] = field(default=_ignore)


class OracleUnitOfWork(UnitOfWork):
    """One Oracle transaction; see the module docstring."""

    def __init__(self, context: StoreContext, *, read_only: bool = False) -> None:
        self._context = context
        self._read_only = read_only
        self._names = context.names
        self._connection: Any = None
        self._state = _NEW
        self._lost = False
        self._depth = 0
        self._dimension: int | None | NotSetType = NOTSET
        self._fixed: int | None = None
        self.threads = OracleThreadRepository(self)
        self.messages = OracleMessageRepository(self)
        self.records = OracleRecordRepository(self)
        self.links = OracleLinkRepository(self)
        self.summaries = OracleSummaryRepository(self)
        self.settings = OracleSettingsRepository(self)
        self.jobs = OracleJobRepository(self)
        if read_only:
            restrict_to_reads(self)

    @property
    def names(self) -> StoreNames:
        return self._names

    # --- lifecycle -------------------------------------------------------------------------------

    def __enter__(self) -> Self:
        if self._state is not _NEW:
            raise StorageError("A unit of work can be entered only once.")
        self._connection = self._context.source.acquire()
        self._state = _ACTIVE
        if self._read_only:
            try:
                self.run(read_only_transaction())
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
        """Commit and finish; the store then learns a dimension this transaction fixed."""
        connection = self.connection()
        if self._read_only:
            self._finish(rollback=True)  # nothing to commit: just end the read-only transaction
            return
        try:
            with self.translating():
                connection.commit()
        except BaseException:
            self._finish(rollback=True)
            raise
        fixed = self._fixed
        self._finish(rollback=False)
        self._context.committed(fixed)

    def rollback(self) -> None:
        """Discard every write and finish (harmless when already finished)."""
        if self._state is _ACTIVE:
            self._finish(rollback=True)
        else:
            self._state = _DONE

    def _finish(self, *, rollback: bool) -> None:
        connection, self._connection, self._state = self._connection, None, _DONE
        if connection is None:
            return
        try:
            if rollback and not self._lost:
                connection.rollback()
        except oracledb.Error as exc:  # the session may be gone; releasing is what matters now
            if is_connection_lost(exc):
                self._lost = True
        finally:
            self._context.source.release(connection, discard=self._lost)

    def connection(self) -> Any:
        """The transaction's connection; ``StorageError`` once the unit of work is finished."""
        if self._state is not _ACTIVE or self._connection is None:
            raise StorageError(
                "This unit of work is not active (use it inside `with`, before commit/rollback)."
            )
        self._context.source.check_open()
        return self._connection

    # --- statements --------------------------------------------------------------------------------

    @contextmanager
    def translating(self, missing: type[NotFoundError] | None = None) -> Iterator[None]:
        """Translate driver errors raised inside the block (and remember a lost session)."""
        try:
            yield
        except oracledb.Error as exc:
            if is_connection_lost(exc):
                self._lost = True
            raise translated(exc, names=self._names, missing=missing) from exc

    def fetch_one(
        self, statement: Statement, *, missing: type[NotFoundError] | None = None
    ) -> tuple[Any, ...] | None:
        connection = self.connection()
        with self.translating(missing):
            return sql.fetch_one(connection, statement)

    def fetch_all(
        self, statement: Statement, *, missing: type[NotFoundError] | None = None
    ) -> list[tuple[Any, ...]]:
        connection = self.connection()
        with self.translating(missing):
            return sql.fetch_all(connection, statement)

    def run(self, statement: Statement, *, missing: type[NotFoundError] | None = None) -> int:
        connection = self.connection()
        with self.translating(missing):
            return sql.run(connection, statement)

    def run_many(self, statements: Sequence[Statement], *, missing: type[NotFoundError] | None = None) -> int:
        if not statements:
            return 0
        connection = self.connection()
        with self.translating(missing):
            return sql.run_many(connection, statements)

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """One all-or-nothing write: a savepoint, rolled back to if the block raises.

        The transaction stays usable after the failure, with the write's effects (including a
        dimension it fixed) undone.
        """
        connection = self.connection()
        self._depth += 1
        depth = self._depth
        remembered = (self._dimension, self._fixed)
        try:
            self.run(savepoint(depth))
            yield
        except BaseException:
            if self._fixed != remembered[1]:  # this write fixed the dimension: that is undone too
                self._dimension, self._fixed = remembered
            if not self._lost:
                try:
                    sql.run(connection, rollback_to_savepoint(depth))
                except oracledb.Error as exc:  # pragma: no cover - reported by the original error
                    if is_connection_lost(exc):
                        self._lost = True
            raise
        finally:
            self._depth -= 1

    # --- vectors -------------------------------------------------------------------------------------

    def dimension(self) -> int | None:
        """The store's dimension as this transaction sees it (read once from the registry)."""
        if isinstance(self._dimension, NotSetType):
            self._dimension = self._read_dimension(for_update=False)
            self._context.observed(self._dimension)
        return self._dimension

    def _read_dimension(self, *, for_update: bool) -> int | None:
        schema = self._context.schema
        row = self.fetch_one(schema.select_config(for_update=for_update))
        if row is None:
            raise StorageError(
                f"The memory store {self._names.registry_name!r} is not registered in this schema "
                "(it was dropped, or never created)."
            )
        dimension = schema.parse_config(row[0]).dimension
        return None if dimension is None else int(dimension)

    def encode_vectors(self, embeddings: Sequence[Sequence[float]]) -> list[array.array[float]]:
        """Check and normalise vectors before anything is written.

        In a store without a dimension, every vector must have the first one's length.
        """
        dimension = self.dimension()
        encoded: list[array.array[float]] = []
        for embedding in embeddings:
            vector = encode_vector(embedding, dimension)
            if dimension is None:
                dimension = len(vector)
            encoded.append(vector)
        return encoded

    def encode_vector(self, embedding: Sequence[float]) -> array.array[float]:
        return self.encode_vectors([embedding])[0]

    def fix_dimension(self, dimension: int) -> None:
        """Before storing a vector of ``dimension`` entries (inside the write's :meth:`atomic`):
        a store without a dimension takes this one, under a lock on its registry row."""
        if self.dimension() is not None:
            return  # already fixed; the vector was checked against it
        current = self._read_dimension(for_update=True)
        if current is None:
            self.run(self._context.schema.set_dimension(dimension))
            self._fixed = dimension
            self._dimension = dimension
            return
        self._dimension = current  # another transaction fixed it meanwhile
        if current != dimension:
            raise VectorDimensionError(
                f"vector has {dimension} dimensions but this store holds {current}-dimensional vectors."
            )
