"""Adapters layer (Oracle): a SQL statement as a value (name, text, binds).

Every statement the adapter sends is built as a :class:`Statement`, so that offline tests can
render each one against a golden file and check that its bind names equal its placeholders.

Bind types: python-oracledb infers a bind's type from its Python value, and a ``datetime`` is
inferred as ``DATE`` (whole seconds: the driver's ``OracleMetadata.from_value``), which would drop
the microseconds of every stored time and every ``now`` compared with one. Every ``datetime``
bind is therefore declared ``DB_TYPE_TIMESTAMP`` with ``cursor.setinputsizes`` before the
statement runs (:func:`input_sizes`). A statement may also name binds to declare as LOBs
(``lobs``: ``{name: "BLOB" | "CLOB"}``): the driver sends a ``bytes`` or ``str`` value over 32 KB
as ``LONG RAW`` or ``LONG``, which only a plain ``INSERT ... VALUES`` or ``UPDATE ... SET``
accepts (ORA-01461 elsewhere, as in a ``MERGE``'s ``USING`` subquery); declared
``DB_TYPE_BLOB``/``DB_TYPE_CLOB``, it travels as a temporary LOB, accepted wherever the column's
type is (python-oracledb user guide, "Using CLOB, BLOB, NCLOB and BFILE Data": binding LOB data
with ``setinputsizes``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

import oracledb

__all__ = [
    "Statement",
    "execute",
    "fetch_all",
    "fetch_one",
    "input_sizes",
    "placeholders",
    "render_value",
    "run",
    "run_many",
]

# A placeholder is ":name" that is not part of "::" and not inside a string literal, a quoted
# identifier or a comment. Literals and identifiers are blanked before matching.
_LITERALS: Final = re.compile(r"'(?:[^']|'')*'|\"[^\"]*\"|--[^\n]*|/\*.*?\*/", re.DOTALL)
_PLACEHOLDER: Final = re.compile(r"(?<![:\w]):([A-Za-z][A-Za-z0-9_]*)")
_LOB_TYPES: Final = {"BLOB": oracledb.DB_TYPE_BLOB, "CLOB": oracledb.DB_TYPE_CLOB}


def placeholders(sql: str) -> set[str]:
    """The bind placeholder names used in ``sql`` (case-sensitive, as written)."""
    return set(_PLACEHOLDER.findall(_LITERALS.sub(" ", sql)))


@dataclass(frozen=True, slots=True)
class Statement:
    """One SQL statement with its binds. ``name`` is stable and names the golden file entry."""

    name: str
    sql: str
    binds: Mapping[str, Any] = field(default_factory=dict)
    lobs: Mapping[str, str] = field(default_factory=dict)
    """Binds declared as LOBs: ``{name: "BLOB" | "CLOB"}`` (see the module docstring)."""

    @property
    def params(self) -> Mapping[str, Any]:
        """The binds, as the SQL kit's statements call their parameters."""
        return self.binds

    def __post_init__(self) -> None:
        used = placeholders(self.sql)
        given = set(self.binds)
        if used != given:
            raise ValueError(
                f"statement {self.name!r}: placeholders {sorted(used)} do not match binds {sorted(given)}"
            )
        if not set(self.lobs) <= given or not set(self.lobs.values()) <= set(_LOB_TYPES):
            raise ValueError(f"statement {self.name!r}: LOB binds {dict(self.lobs)} are not BLOB/CLOB binds of it")

    def render(self) -> str:
        """The statement and its binds as stable text (for golden files and logs)."""
        lines = [f"-- {self.name}", self.sql.strip()]
        for key in sorted(self.binds):
            lob = f" as {self.lobs[key]}" if key in self.lobs else ""
            lines.append(f"--   :{key} = {render_value(self.binds[key])}{lob}")
        return "\n".join(lines) + "\n"


def render_value(value: Any) -> str:
    if isinstance(value, datetime):
        return f"datetime({value.isoformat()})"
    if isinstance(value, (bytes, bytearray)):
        return f"bytes({len(value)})"
    if hasattr(value, "typecode") and hasattr(value, "tolist"):  # array.array for VECTOR binds
        return f"array({value.typecode!r}, {json.dumps([round(v, 6) for v in value.tolist()])})"
    if isinstance(value, (dict, list, tuple)):
        return f"json({json.dumps(value, sort_keys=True, default=str)})"
    return repr(value)


def input_sizes(bind_sets: Sequence[Mapping[str, Any]], lobs: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``{bind name: DB_TYPE_TIMESTAMP}`` for every bind holding a ``datetime`` in any of
    ``bind_sets`` (``None`` in the other sets is fine: a NULL of that type), and the LOB type of
    every bind ``lobs`` names."""
    names = {name for binds in bind_sets for name, value in binds.items() if isinstance(value, datetime)}
    sizes: dict[str, Any] = dict.fromkeys(sorted(names), oracledb.DB_TYPE_TIMESTAMP)
    for name, kind in (lobs or {}).items():
        sizes[name] = _LOB_TYPES[kind]
    return sizes


def execute(connection: Any, statement: Statement) -> Any:
    """Run ``statement`` on a python-oracledb connection; returns the open cursor."""
    cursor = connection.cursor()
    try:
        sizes = input_sizes([statement.binds], statement.lobs)
        if sizes:
            cursor.setinputsizes(**sizes)
        cursor.execute(statement.sql, dict(statement.binds))
    except BaseException:
        cursor.close()
        raise
    return cursor


def fetch_all(connection: Any, statement: Statement) -> list[tuple[Any, ...]]:
    """Run a query and return every row (the cursor is closed)."""
    cursor = execute(connection, statement)
    try:
        return list(cursor.fetchall())
    finally:
        cursor.close()


def fetch_one(connection: Any, statement: Statement) -> tuple[Any, ...] | None:
    cursor = execute(connection, statement)
    try:
        row = cursor.fetchone()
        return None if row is None else tuple(row)
    finally:
        cursor.close()


def run(connection: Any, statement: Statement) -> int:
    """Run a DML or DDL statement; returns the row count (0 for DDL)."""
    cursor = execute(connection, statement)
    try:
        return int(cursor.rowcount or 0)
    finally:
        cursor.close()


def run_many(connection: Any, statements: Sequence[Statement]) -> int:
    """Run one DML statement once per bind set in a single ``executemany`` round trip.

    Every statement must have the same SQL text (the same builder); returns the total row count.
    """
    if not statements:
        return 0
    sql = statements[0].sql
    if any(statement.sql != sql for statement in statements):
        raise ValueError(f"run_many needs one SQL text; {statements[0].name!r} was mixed with others")
    bind_sets = [dict(statement.binds) for statement in statements]
    cursor = connection.cursor()
    try:
        sizes = input_sizes(bind_sets, statements[0].lobs)
        if sizes:
            cursor.setinputsizes(**sizes)
        cursor.executemany(sql, bind_sets)
        return int(cursor.rowcount or 0)
    finally:
        cursor.close()
