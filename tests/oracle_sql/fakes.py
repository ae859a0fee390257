"""A recording stand-in for python-oracledb connections, cursors and pools (offline tests).

It executes nothing: every call is appended to ``log`` (shared by the pool, its connections and
their cursors), and a ``responder(sql, binds)`` decides what a statement returns: a list of row
tuples (with optional column names through ``Rows``), a row count for DML, or an exception to
raise (e.g. a fake ``oracledb.IntegrityError``). Tests assert on the log: which statements ran,
with which binds, and where commits and rollbacks happened. ``ALTER SESSION`` statements are
session state, not work: they go to each connection's ``session_statements`` instead.

Binds reach the log and the responder as the real driver would send them: python-oracledb binds
a ``datetime`` as ``DATE`` (whole seconds) unless ``setinputsizes`` declared it a ``TIMESTAMP``,
so an undeclared ``datetime`` arrives here without its microseconds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Self

import oracledb


@dataclass
class Rows:
    """A responder's answer: rows with column names (``cursor.description``) and a rowcount."""

    rows: list[tuple[Any, ...]] = field(default_factory=list)
    columns: Sequence[str] = ()
    rowcount: int | None = None


Responder = Callable[[str, dict[str, Any]], "Rows | list[tuple[Any, ...]] | int | BaseException | None"]


def empty_responder(sql: str, binds: dict[str, Any]) -> None:
    return None


@dataclass
class Call:
    kind: str  # "execute", "executemany", "commit", "rollback", "close", "acquire", "release"
    connection: int
    sql: str | None = None
    binds: Any = None
    sizes: dict[str, Any] = field(default_factory=dict)


class FakeCursor:
    def __init__(self, connection: FakeConnection) -> None:
        self._connection = connection
        self._rows: list[tuple[Any, ...]] = []
        self.description: list[tuple[Any, ...]] | None = None
        self.rowcount = 0
        self.arraysize = 100
        self.closed = False
        self._sizes: dict[str, Any] = {}

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _answer(self, sql: str, binds: dict[str, Any]) -> None:
        answer = self._connection.responder(sql, binds)
        if isinstance(answer, BaseException):
            raise answer
        if isinstance(answer, int) and not isinstance(answer, bool):
            self._rows, self.description, self.rowcount = [], None, answer
            return
        if isinstance(answer, list):
            answer = Rows(answer)
        if answer is None:
            answer = Rows()
        self._rows = list(answer.rows)
        self.description = [
            (name.upper(), None, None, None, None, None, None) for name in answer.columns
        ] or None
        self.rowcount = answer.rowcount if answer.rowcount is not None else len(self._rows)

    def _as_bound(self, binds: dict[str, Any]) -> dict[str, Any]:
        """The binds as the driver sends them: an undeclared ``datetime`` is a DATE."""
        bound = {}
        for name, value in binds.items():
            if isinstance(value, datetime) and self._sizes.get(name) is not oracledb.DB_TYPE_TIMESTAMP:
                value = value.replace(microsecond=0)
            bound[name] = value
        return bound

    def _take_sizes(self) -> dict[str, Any]:
        sizes, self._sizes = self._sizes, {}
        return sizes

    def execute(self, sql: str, parameters: Any = None, **kwargs: Any) -> FakeCursor:
        self._connection.check_open()
        binds = self._as_bound(dict(parameters or {}) | kwargs)
        if sql.lstrip().upper().startswith("ALTER SESSION"):
            # Session settings are connection state, kept apart from the statement log.
            self._connection.session_statements.append(sql)
            self._rows, self.description, self.rowcount = [], None, 0
            return self
        self._connection.log.append(Call("execute", self._connection.number, sql, binds, self._take_sizes()))
        self._answer(sql, binds)
        return self

    def executemany(self, sql: str, parameters: Sequence[Any], **kwargs: Any) -> None:
        self._connection.check_open()
        rows = [self._as_bound(dict(p)) for p in parameters]
        self._connection.log.append(
            Call("executemany", self._connection.number, sql, rows, self._take_sizes())
        )
        total = 0
        for binds in rows:
            self._answer(sql, binds)
            total += self.rowcount
        self.rowcount = total

    def setinputsizes(self, *args: Any, **kwargs: Any) -> None:
        self._sizes = dict(kwargs)

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._rows.pop(0) if self._rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows, self._rows = self._rows, []
        return rows

    def fetchmany(self, size: int | None = None) -> list[tuple[Any, ...]]:
        size = size or self.arraysize
        rows, self._rows = self._rows[:size], self._rows[size:]
        return rows

    def __iter__(self):  # type: ignore[no-untyped-def]
        while self._rows:
            yield self._rows.pop(0)

    def close(self) -> None:
        self.closed = True


class FakeConnection:
    _count = 0

    def __init__(self, responder: Responder = empty_responder, log: list[Call] | None = None) -> None:
        FakeConnection._count += 1
        self.number = FakeConnection._count
        self.responder = responder
        self.log: list[Call] = log if log is not None else []
        self.closed = False
        self.autocommit = False
        self.session_statements: list[str] = []

    def check_open(self) -> None:
        if self.closed:
            raise RuntimeError("the fake connection is closed")

    def cursor(self) -> FakeCursor:
        self.check_open()
        return FakeCursor(self)

    def commit(self) -> None:
        self.check_open()
        self.log.append(Call("commit", self.number))

    def rollback(self) -> None:
        self.check_open()
        self.log.append(Call("rollback", self.number))

    def close(self) -> None:
        if not self.closed:
            self.log.append(Call("close", self.number))
        self.closed = True

    def ping(self) -> None:
        self.check_open()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # what the log says
    def statements(self) -> list[str]:
        return [c.sql for c in self.log if c.sql is not None]


class FakePool:
    def __init__(self, responder: Responder = empty_responder) -> None:
        self.responder = responder
        self.log: list[Call] = []
        self.connections: list[FakeConnection] = []
        self.closed = False

    def acquire(self) -> FakeConnection:
        connection = FakeConnection(self.responder, self.log)
        self.connections.append(connection)
        self.log.append(Call("acquire", connection.number))
        return connection

    def release(self, connection: FakeConnection) -> None:
        self.log.append(Call("release", connection.number))

    def close(self, force: bool = False) -> None:
        self.closed = True

    def kinds(self) -> list[str]:
        return [c.kind for c in self.log]
