"""Adapters layer (SQL kit): what every SQL store object shares around its unit of work.

:class:`SqlStore` is the part of a store's lifecycle that is the same in each: the dimension it
caches (learnt from units of work under its lock), ``with store:`` closing it, the ``repr`` that
says where it is and whether it is open, the check that raises ``StoreClosedError`` once it is
closed, and the checkpoint repository of its units of work (D41). A store says where it is
(:meth:`SqlStore._location`), whether it is closed (:meth:`SqlStore._is_closed`) and how it
closes; connections, caches and search stay its own.
"""

from __future__ import annotations

import threading
from typing import Self

from palimpsest.domain.errors import StorageError, StoreClosedError
from palimpsest.domain.ports import CheckpointStorage, MemoryStore, UnitOfWork

from .checkpoints import SqlCheckpointRepository
from .unit_of_work import SqlUnitOfWork

__all__ = ["SqlStore"]


class SqlStore(MemoryStore, CheckpointStorage):
    """See the module docstring. A subclass sets ``_dimension`` and ``_lock`` when it opens."""

    _dimension: int | None
    _lock: threading.Lock | threading.RLock
    """Guards ``_dimension`` (and whatever else the store caches)."""

    @property
    def dimension(self) -> int | None:
        return self._dimension

    def checkpoints(self, uow: UnitOfWork) -> SqlCheckpointRepository:
        """See :class:`~palimpsest.domain.ports.CheckpointStorage`: the checkpoint repository of
        a unit of work this store made (``StorageError`` for any other)."""
        if not isinstance(uow, SqlUnitOfWork) or not self._made(uow):
            raise StorageError("checkpoints(uow) takes a unit of work of this store.")
        return SqlCheckpointRepository(uow)

    def _made(self, uow: SqlUnitOfWork) -> bool:
        """Did this store make ``uow``? (A unit of work keeps its store as ``_store``.)"""
        return getattr(uow, "_store", None) is self

    def _location(self) -> str | None:
        """Where the store is, for its ``repr`` (a path, a schema, a store id...)."""
        raise NotImplementedError

    def _is_closed(self) -> bool:
        raise NotImplementedError

    def _closed_message(self) -> str:
        return "This store has been closed."

    def _check_open(self) -> None:
        if self._is_closed():
            raise StoreClosedError(self._closed_message())

    def _learn_dimension(self, dimension: int | None) -> None:
        """The committed dimension, as a unit of work read or fixed it."""
        with self._lock:
            self._dimension = dimension

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._is_closed() else f"dimension={self._dimension}"
        return f"{type(self).__name__}({self._location()!r}, {state})"
