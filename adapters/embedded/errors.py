"""Embedded adapter: translation of ``sqlite3`` errors into the domain error tree, and busy retries."""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final, TypeVar

from palimpsest.domain.errors import (
    AgentMemoryError,
    DuplicateIdError,
    LinkExistsError,
    NotFoundError,
    SelfLinkError,
    StorageError,
    StoreBusyError,
    StoreClosedError,
)

__all__ = ["is_busy", "keep_function_failure", "retry_busy", "translate", "translated"]

T = TypeVar("T")

_FUNCTION_FAILED: Final = "user-defined function raised exception"
_function_failure = threading.local()


def keep_function_failure(exc: BaseException) -> None:
    """Remember (per thread) why an SQL function of ours raised: SQLite reports only
    :data:`_FUNCTION_FAILED`, and :func:`translated` raises this reason instead."""
    _function_failure.exc = exc


def _take_function_failure() -> BaseException | None:
    exc = getattr(_function_failure, "exc", None)
    _function_failure.exc = None
    return exc


def is_busy(exc: BaseException) -> bool:
    """SQLITE_BUSY / SQLITE_LOCKED, as the sqlite3 module reports them (OperationalError text)."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def translated(exc: sqlite3.Error, missing: type[NotFoundError] | None = None) -> AgentMemoryError:
    """The domain error for a driver error (callers chain the driver error as the cause)."""
    if isinstance(exc, sqlite3.IntegrityError):
        return _integrity_error(exc, missing)
    if isinstance(exc, sqlite3.ProgrammingError) and "closed" in str(exc).lower():
        return StoreClosedError("This store has been closed.")  # closed under a running call
    if is_busy(exc):
        return StoreBusyError(f"The store stayed busy: {exc}")
    if isinstance(exc, sqlite3.OperationalError) and _FUNCTION_FAILED in str(exc):
        failure = _take_function_failure()
        if isinstance(failure, AgentMemoryError):
            return failure  # e.g. InvalidMetadataError: a stored metadata value is not an object
        if failure is not None:
            exc.__cause__ = failure  # the chain reads: StorageError <- sqlite3 error <- the reason
            return StorageError(
                f"A metadata filter could not be evaluated on a stored row: {type(failure).__name__}: {failure}"
            )
    return StorageError(f"SQLite failed: {exc}")


def _integrity_error(exc: sqlite3.IntegrityError, missing: type[NotFoundError] | None) -> AgentMemoryError:
    text = str(exc)
    if "links.source_id, links.target_id, links.relation_type" in text:
        return LinkExistsError("A link with this source, target and relation type already exists.")
    if "UNIQUE constraint failed" in text:
        return DuplicateIdError(f"The id is already taken ({text}).")
    if "links_no_self_link" in text or "CHECK constraint failed" in text:
        return SelfLinkError("A memory cannot be linked to itself.")
    if "FOREIGN KEY constraint failed" in text and missing is not None:
        return missing("A referenced entity does not exist.")
    return StorageError(f"SQLite rejected the write: {text}")


@contextmanager
def translate(missing: type[NotFoundError] | None = None) -> Iterator[None]:
    """Re-raise driver errors as domain errors (the driver error stays chained as the cause).

    ``missing`` names the NotFoundError a foreign-key failure means in the caller's context.
    """
    try:
        yield
    except sqlite3.Error as exc:
        raise translated(exc, missing) from exc


def retry_busy(attempt: Callable[[float], T], *, budget: float, what: str) -> T:
    """Run ``attempt(remaining_seconds)`` until it stops failing with SQLITE_BUSY.

    SQLite's own busy handler already waits inside each attempt; this loop covers the cases
    where SQLite reports BUSY without waiting (e.g. a WAL snapshot or recovery race) and adds
    jittered backoff so that competing writers do not retry in lockstep. The whole loop is
    bounded by ``budget`` seconds, after which :class:`StoreBusyError` is raised.
    """
    deadline = time.monotonic() + budget
    delay = 0.001
    while True:
        try:
            return attempt(max(0.0, deadline - time.monotonic()))
        except sqlite3.OperationalError as exc:
            if not is_busy(exc):
                raise translated(exc) from exc
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise StoreBusyError(f"Could not {what}: the store stayed locked for {budget:g} s.") from exc
            time.sleep(min(remaining, random.uniform(0.5, 1.5) * delay))
            delay = min(delay * 2, 0.05)
        except sqlite3.Error as exc:
            raise translated(exc) from exc
