"""Adapters layer (Oracle): the server-grade store on Oracle AI Database through python-oracledb.

``from palimpsest.adapters.oracle import OracleStore``. Importing the package connects to nothing
and loads none of its modules: ``OracleStore`` is imported on first use, so that the schema,
search and SQL modules can also be imported (and tested) on their own.

See ``adapters/oracle/README.md`` for what has been verified against a real database and how to
run the Oracle suite. Design: decision D17 in ARCHITECTURE.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .store import OracleStore

__all__ = ["OracleStore"]


def __getattr__(name: str) -> Any:
    if name == "OracleStore":
        from .store import OracleStore

        return OracleStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), "OracleStore"])
