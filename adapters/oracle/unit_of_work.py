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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from palimpsest.adapters.sql import SqlUnitOfWork
from palimpsest.domain.errors import StorageError

from .codec import CODEC
from .connection import ConnectionSource
from .dialect import OracleDialect
from .names import StoreNames
from .repositories import (
    OracleMessageRepository,
    OracleRecordRepository,
    OracleThreadRepository,
)
from .sql import Statement
from .statements import OracleStatements, read_only_transaction

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


class OracleUnitOfWork(SqlUnitOfWork):
    """One Oracle transaction; see the module docstring. The lifecycle, the statement runners
    (``fetch_one``, ``run``, ``atomic``...) and the dimension rule are the SQL kit's
    (:class:`palimpsest.adapters.sql.SqlUnitOfWork`)."""

    thread_repository = OracleThreadRepository
    message_repository = OracleMessageRepository
    record_repository = OracleRecordRepository  # links, summaries, settings, jobs: the kit's

    def __init__(self, context: StoreContext, *, read_only: bool = False) -> None:
        self._context = context
        self._names = context.names
        super().__init__(
            OracleDialect(context.names), OracleStatements(context.names), CODEC, read_only=read_only
        )

    @property
    def names(self) -> StoreNames:
        return self._names

    # --- the kit's hooks -------------------------------------------------------------------------

    def _begin(self) -> Any:
        return self._context.source.acquire()

    def _begun(self) -> None:
        if self.read_only:
            self.run(read_only_transaction())

    def _release(self, connection: Any) -> None:
        self._context.source.release(connection, discard=self._lost)

    def _committed(self) -> None:
        self._context.committed(self._fixed)

    def _check_open(self) -> None:
        self._context.source.check_open()

    def _observed(self, dimension: int | None) -> None:
        self._context.observed(dimension)

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

    def _write_dimension(self, dimension: int) -> None:
        self.run(self._context.schema.set_dimension(dimension))

    # --- vectors ---------------------------------------------------------------------------------

    def encode_vectors(self, embeddings: Sequence[Sequence[float]]) -> list[array.array[float]]:
        """Check and normalise vectors before anything is written.

        In a store without a dimension, every vector must have the first one's length.
        """
        return self.unit_vectors(embeddings)

    def encode_vector(self, embedding: Sequence[float]) -> array.array[float]:
        return self.encode_vectors([embedding])[0]
