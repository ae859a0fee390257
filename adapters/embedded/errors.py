"""Embedded adapter: translation of ``sqlite3`` errors into the domain error tree, and busy retries.

The driver-error map is the SQL kit's SQLite dialect's (:mod:`palimpsest.adapters.sql.dialects.sqlite`),
with the embedded schema's keys (:data:`.codec.DIALECT`)."""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from palimpsest.adapters.sql.dialects.sqlite import is_busy, keep_function_failure
from palimpsest.domain.errors import AgentMemoryError, NotFoundError, StoreBusyError

from .codec import DIALECT

__all__ = ["is_busy", "keep_function_failure", "retry_busy", "translate", "translated"]

T = TypeVar("T")


def translated(exc: sqlite3.Error, missing: type[NotFoundError] | None = None) -> AgentMemoryError:
    """The domain error for a driver error (callers chain the driver error as the cause)."""
    return DIALECT.translate(exc, missing)


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
