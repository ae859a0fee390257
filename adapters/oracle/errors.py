"""Adapters layer (Oracle): translation of python-oracledb errors into the domain error tree.

python-oracledb raises ``oracledb.Error`` subclasses whose first argument is an ``_Error`` object
with ``code`` (the ORA number, 0 for driver errors), ``full_code`` (``"ORA-00001"``,
``"DPY-4011"``...), ``message`` and ``is_session_dead``. Oracle names the violated constraint in
the message, ``ORA-00001: unique constraint (OWNER.NAME) violated``; the constraint's base name
(without the store prefix) decides the domain error:

* ``ORA-00001`` unique violation: the constraint's logical key (:data:`UNIQUE_KEYS`) decides, as
  for every SQL store (:func:`palimpsest.adapters.sql.dialect.unique_violation`):
  ``MEMORY_LINK_UQ`` → :class:`LinkExistsError`, ``THREAD_SUMMARY_REVISION_UQ`` →
  :class:`ConflictError` (the summary revision compare-and-set), any other key (primary keys,
  ``MESSAGE_THREAD_ORDER_UQ``...) → :class:`DuplicateIdError`;
* ``ORA-02291`` parent key not found: the thread foreign keys → :class:`ThreadNotFoundError`, the
  link endpoints → :class:`RecordNotFoundError` (else the caller's ``missing`` error);
* ``ORA-02290`` check constraint: ``MEMORY_LINK_NOT_SELF_CK`` → :class:`SelfLinkError`, any other
  → :class:`ValidationError`; ``ORA-12899`` (a value too large for its column) →
  :class:`ValidationError`;
* lost connections (``DPY-4011``, ``DPY-1001``, ``ORA-03113``, ``ORA-03135``...) →
  :class:`StorageError`; contention and timeouts (``ORA-00054``, ``ORA-30006``, ``ORA-00060``,
  ``DPY-4024``, ``DPY-4005``...) → :class:`StoreBusyError`;
* everything else → :class:`StorageError` naming the error code.

The repositories check what the contract names (a missing thread, a taken id) before writing, so
these translations are the last line of defence, for races and batch writes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

import oracledb
from palimpsest.adapters.sql.dialect import Key, unique_violation
from palimpsest.domain.errors import (
    AgentMemoryError,
    NotFoundError,
    RecordNotFoundError,
    SelfLinkError,
    StorageError,
    StoreBusyError,
    ThreadNotFoundError,
    ValidationError,
)

from .names import BASE_NAMES, StoreNames

__all__ = [
    "ErrorInfo",
    "constraint_base",
    "error_info",
    "is_connection_lost",
    "translate",
    "translated",
]

UNIQUE_VIOLATED: Final = 1
CHECK_VIOLATED: Final = 2290
PARENT_KEY_NOT_FOUND: Final = 2291
VALUE_TOO_LARGE: Final = 12899

# ORA codes of a lost or unusable session (python-oracledb maps many of them to DPY-4011).
_CONNECTION_LOST_CODES: Final = frozenset(
    {
        22,
        28,
        31,
        45,
        1012,
        1033,
        1034,
        1089,
        1090,
        1092,
        2396,
        3111,
        3113,
        3114,
        3122,
        3135,
        12153,
        12170,
        12514,
        12537,
        12541,
        12547,
        12570,
        12571,
        12583,
        27146,
        28511,
        56600,
    }
)
_CONNECTION_LOST_DRIVER_CODES: Final = frozenset(
    {
        "DPY-1001",  # not connected to database
        "DPY-1002",  # connection pool is not open
        "DPY-4011",  # the database or network closed the connection
        "DPY-6005",  # cannot connect to database
    }
)
# Contention: a lock that could not be taken in time, a deadlock victim, a serialisation
# failure, a cancelled (timed out) call, or a pool that had no free connection in time.
_BUSY_CODES: Final = frozenset({54, 60, 1013, 8177, 30006})
_BUSY_DRIVER_CODES: Final = frozenset({"DPY-4005", "DPY-4024", "DPI-1067", "DPI-1080"})

UNIQUE_KEYS: Final = {
    "THREAD_PK": Key.THREAD_ID,
    "MESSAGE_PK": Key.MESSAGE_ID,
    "MESSAGE_THREAD_ORDER_UQ": Key.MESSAGE_SEQ,
    "MEMORY_PK": Key.RECORD_ID,
    "MEMORY_LINK_PK": Key.LINK_ID,
    "MEMORY_LINK_UQ": Key.LINK_RELATION,
    "THREAD_SUMMARY_PK": Key.SUMMARY_ID,
    "THREAD_SUMMARY_REVISION_UQ": Key.SUMMARY_REVISION,
    "EXTRACTION_JOB_PK": Key.JOB_ID,
}
"""The SQL kit's logical name of each unique key of a store (by its base name)."""
_THREAD_KEYS: Final = frozenset(
    {
        "MESSAGE_THREAD_FK",
        "MEMORY_THREAD_FK",
        "THREAD_SUMMARY_THREAD_FK",
        "EXTRACTION_JOB_THREAD_FK",
    }
)
_RECORD_KEYS: Final = frozenset({"MEMORY_LINK_SOURCE_FK", "MEMORY_LINK_TARGET_FK"})
_CONSTRAINT: Final = re.compile(r"\(\s*\"?(?:[^\"().]+\"?\.\"?)?([^\"().]+)\"?\s*\)")
# Longest first, so that "THREAD_SUMMARY_THREAD_FK" is never read as a shorter base name.
_BASES_BY_LENGTH: Final = tuple(sorted(BASE_NAMES, key=len, reverse=True))


class ErrorInfo:
    """What a driver error says: the ORA number, the full code, the first message line."""

    __slots__ = ("code", "full_code", "message", "session_dead")

    def __init__(self, code: int, full_code: str, message: str, session_dead: bool) -> None:
        self.code = code
        self.full_code = full_code
        self.message = message
        self.session_dead = session_dead

    @property
    def label(self) -> str:
        """``ORA-00001``, ``DPY-4011``..., or the exception class name when there is no code."""
        if self.full_code:
            return self.full_code
        return f"ORA-{self.code:05d}" if self.code else "unknown error"


def error_info(exc: BaseException) -> ErrorInfo:
    """Read the ``_Error`` object python-oracledb puts in ``exc.args[0]`` (tolerating its absence)."""
    detail: Any = exc.args[0] if exc.args else None
    code = getattr(detail, "code", 0)
    full_code = getattr(detail, "full_code", "")
    message = getattr(detail, "message", None)
    if message is None:
        message = str(detail) if detail is not None else str(exc)
    if not isinstance(code, int) or isinstance(code, bool):
        code = 0
    if not isinstance(full_code, str):
        full_code = ""
    if not full_code and not code:
        found = re.match(r"\s*((?:ORA|DPY|DPI)-(\d+))", str(message))
        if found:
            full_code = found.group(1)
            code = int(found.group(2)) if full_code.startswith("ORA") else 0
    first_line = str(message).strip().splitlines()[0] if str(message).strip() else ""
    return ErrorInfo(code, full_code, first_line, bool(getattr(detail, "is_session_dead", False)))


def constraint_base(message: str, names: StoreNames | None = None) -> str | None:
    """The base name (``"MEMORY_LINK_UQ"``) of the constraint an Oracle message names.

    With ``names`` the constraint must be one of this store's (prefix included); without, the
    longest base name the constraint ends with is taken. ``None`` for system-named constraints.
    """
    found = _CONSTRAINT.search(message)
    if found is None:
        return None
    constraint = found.group(1).strip().upper()
    if names is not None:
        for base in BASE_NAMES:
            if names.raw(base) == constraint:
                return base
        return None
    for base in _BASES_BY_LENGTH:
        if constraint == base or constraint.endswith(f"_{base}"):
            return base
    return None


def is_connection_lost(exc: BaseException) -> bool:
    """Whether the error means the session is gone (the connection must not be reused)."""
    if not isinstance(exc, oracledb.Error):
        return False
    info = error_info(exc)
    return (
        info.session_dead
        or info.code in _CONNECTION_LOST_CODES
        or info.full_code in _CONNECTION_LOST_DRIVER_CODES
    )


def _describe(info: ErrorInfo) -> str:
    """The error's code and first message line, once each."""
    if not info.message:
        return info.label
    if info.message.startswith(info.label):
        return info.message
    return f"{info.label}: {info.message}"


def _is_busy(info: ErrorInfo) -> bool:
    return info.code in _BUSY_CODES or info.full_code in _BUSY_DRIVER_CODES


def translated(
    exc: BaseException,
    *,
    names: StoreNames | None = None,
    missing: type[NotFoundError] | None = None,
) -> AgentMemoryError:
    """The domain error for a driver error (callers chain the driver error as the cause).

    ``missing`` names the :class:`NotFoundError` a foreign-key failure on an unknown constraint
    means in the caller's context.
    """
    info = error_info(exc)
    where = _describe(info)
    if info.code == UNIQUE_VIOLATED:
        return unique_violation(UNIQUE_KEYS.get(constraint_base(info.message, names) or ""), where)
    if info.code == PARENT_KEY_NOT_FOUND:
        base = constraint_base(info.message, names)
        if base in _THREAD_KEYS:
            return ThreadNotFoundError("The referenced thread does not exist.")
        if base in _RECORD_KEYS:
            return RecordNotFoundError("A linked memory record does not exist.")
        if missing is not None:
            return missing(f"A referenced entity does not exist ({where}).")
        return StorageError(f"Oracle rejected the write: {where}")
    if info.code == CHECK_VIOLATED:
        base = constraint_base(info.message, names)
        if base == "MEMORY_LINK_NOT_SELF_CK":
            return SelfLinkError("A memory cannot be linked to itself.")
        return ValidationError(f"A value was rejected by the store's constraints ({where}).")
    if info.code == VALUE_TOO_LARGE:  # e.g. a multi-byte id longer than its column's bytes
        return ValidationError(f"A value is too large for the store's column ({where}).")
    if _is_busy(info):
        return StoreBusyError(f"The store stayed busy ({where}).")
    if is_connection_lost(exc):
        return StorageError(f"The connection to Oracle was lost ({where}).")
    return StorageError(f"Oracle failed ({where}).")


@contextmanager
def translate(
    names: StoreNames | None = None, *, missing: type[NotFoundError] | None = None
) -> Iterator[None]:
    """Re-raise python-oracledb errors as domain errors (the driver error stays the cause)."""
    try:
        yield
    except oracledb.Error as exc:
        raise translated(exc, names=names, missing=missing) from exc
