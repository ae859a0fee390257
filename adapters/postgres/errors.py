"""Adapters layer (PostgreSQL): translation of psycopg errors into the domain error tree.

A statement's failure carries its SQLSTATE (``exc.sqlstate``) and, for constraint violations,
the constraint's name (``exc.diag.constraint_name``); a failed *connection attempt* carries
neither (libpq reports it as text only), so its message decides:

* the server cannot be reached (refused, no socket, timeout, unknown host) →
  :class:`StoreUnavailableError`; a connection lost during a call (class 08, ``57P01``–``57P03``,
  or a connection psycopg marks broken) → :class:`StoreUnavailableError` too;
* a wrong password, an unknown role or database → :class:`ConfigurationError` (retrying
  cannot help: the settings are wrong, as for a model's refused API key);
* ``23505`` unique violation: ``links_unique_edge`` → :class:`LinkExistsError`,
  ``summaries_unique_revision`` → :class:`ConflictError`, any other key → :class:`DuplicateIdError`;
  ``23503`` foreign key → :class:`ThreadNotFoundError` / :class:`RecordNotFoundError` by
  constraint; ``23514`` check → :class:`SelfLinkError` for ``links_no_self_link``, else
  :class:`ValidationError`; class 22 (bad data) → :class:`ValidationError`;
* contention (``40001`` serialisation, ``40P01`` deadlock, ``55P03`` lock not available,
  ``57014`` statement timeout) → :class:`StoreBusyError`;
* everything else → :class:`StorageError` naming the SQLSTATE.

The missing ``vector`` extension and a newer schema are decided by the schema manager
(:mod:`.schema`), which knows what it asked for.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

import psycopg
from palimpsest.domain.errors import (
    AgentMemoryError,
    ConfigurationError,
    ConflictError,
    DuplicateIdError,
    LinkExistsError,
    NotFoundError,
    ReadOnlyError,
    RecordNotFoundError,
    SelfLinkError,
    StorageError,
    StoreBusyError,
    StoreUnavailableError,
    ThreadNotFoundError,
    ValidationError,
)

__all__ = ["is_connection_lost", "translate", "translated", "translated_connect_error"]

_BUSY: Final = frozenset({"40001", "40P01", "55P03", "57014"})
_LOST: Final = frozenset({"57P01", "57P02", "57P03"})
_THREAD_KEYS: Final = frozenset(
    {"messages_thread_id_fkey", "records_thread_id_fkey", "summaries_thread_id_fkey", "extraction_jobs_thread_id_fkey"}
)
_RECORD_KEYS: Final = frozenset({"links_source_id_fkey", "links_target_id_fkey"})
_REFUSED_CREDENTIALS: Final = (
    "password authentication failed",
    "authentication failed",
    "no password supplied",
    "password is required",
)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def translated_connect_error(exc: BaseException, where: str) -> AgentMemoryError:
    """The domain error for a failed connection attempt to ``where`` (host and database, no
    password): libpq says why in text only."""
    text = str(exc)
    lowered = text.lower()
    detail = " ".join(part.strip() for part in text.splitlines() if part.strip())
    if any(marker in lowered for marker in _REFUSED_CREDENTIALS):
        return ConfigurationError(
            f"PostgreSQL at {where} refused the credentials (wrong user or password): {detail}"
        )
    if "role" in lowered and "does not exist" in lowered:
        return ConfigurationError(f"PostgreSQL at {where} has no such role: {detail}")
    if "database" in lowered and "does not exist" in lowered:
        return ConfigurationError(f"PostgreSQL at {where} has no such database: {detail}")
    if "no pg_hba.conf entry" in lowered or "permission denied" in lowered:
        return ConfigurationError(f"PostgreSQL at {where} does not let this user connect: {detail}")
    return StoreUnavailableError(f"PostgreSQL at {where} cannot be reached: {detail}")


def is_connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` means the connection is gone (it must not be reused)."""
    if not isinstance(exc, psycopg.Error):
        return False
    state = exc.sqlstate or ""
    if state.startswith("08") or state in _LOST:
        return True
    return isinstance(exc, psycopg.OperationalError) and not state


def translated(exc: BaseException, *, missing: type[NotFoundError] | None = None) -> AgentMemoryError:
    """The domain error for a psycopg error raised by a statement (callers chain the cause).

    ``missing`` names the :class:`NotFoundError` a foreign-key failure on an unknown
    constraint means in the caller's context."""
    state = getattr(exc, "sqlstate", None) or ""
    diag = getattr(exc, "diag", None)
    constraint = getattr(diag, "constraint_name", None) or ""
    where = f"{state}: {_first_line(exc)}" if state else _first_line(exc)
    if state == "23505":
        if constraint == "links_unique_edge":
            return LinkExistsError("A link with this source, target and relation type already exists.")
        if constraint == "summaries_unique_revision":
            return ConflictError(
                "The thread already has this summary revision; it was refreshed or invalidated concurrently."
            )
        if constraint == "messages_thread_id_seq_key":
            return DuplicateIdError("The thread already has a message with this seq.")
        return DuplicateIdError(f"The id is already taken ({where}).")
    if state == "23503":
        if constraint in _THREAD_KEYS:
            return ThreadNotFoundError("The referenced thread does not exist.")
        if constraint in _RECORD_KEYS:
            return RecordNotFoundError("A linked memory record does not exist.")
        if missing is not None:
            return missing(f"A referenced entity does not exist ({where}).")
        return StorageError(f"PostgreSQL rejected the write: {where}")
    if state == "23514":
        if constraint == "links_no_self_link":
            return SelfLinkError("A memory cannot be linked to itself.")
        return ValidationError(f"A value was rejected by the store's constraints ({where}).")
    if state.startswith("22"):
        return ValidationError(f"PostgreSQL rejected a value ({where}).")
    if state == "25006":  # read_only_sql_transaction: a hot standby
        return ReadOnlyError(
            f"This PostgreSQL server is read-only (a standby: write on the primary); nothing was written ({where})."
        )
    if state in _BUSY:
        return StoreBusyError(f"The store stayed busy ({where}).")
    if is_connection_lost(exc):
        return StoreUnavailableError(f"The connection to PostgreSQL was lost ({where}).")
    return StorageError(f"PostgreSQL failed ({where}).")


@contextmanager
def translate(*, missing: type[NotFoundError] | None = None) -> Iterator[None]:
    """Re-raise psycopg errors as domain errors (the driver error stays the cause)."""
    try:
        yield
    except psycopg.Error as exc:
        raise translated(exc, missing=missing) from exc
