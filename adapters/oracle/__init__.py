"""Adapters layer (Oracle): the server-grade store on Oracle AI Database through python-oracledb.

``from palimpsest.adapters.oracle import OracleStore``. Importing the package connects to nothing
and loads none of its modules: each public name is imported on first use, so that the schema,
search and SQL modules can also be imported (and tested) on their own. The public names are the
package's whole interface for the rest of palimpsest (the command line included):

* ``OracleStore`` and ``SchemaPolicy`` (what it does with its schema when opened);
* ``administer_schema``, ``SchemaReport``, ``SchemaAction``, ``registered_version`` and
  ``store_label``: installing,
  checking and upgrading a store's schema by hand (``palimpsest oracle ...``).

See ``adapters/oracle/README.md`` for what has been verified against a real database and how to
run the Oracle suite. Design: decision D17 in ARCHITECTURE.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .admin import SchemaAction, SchemaReport, administer_schema, registered_version, store_label
    from .policy import SchemaPolicy
    from .store import OracleStore

__all__ = [
    "OracleStore",
    "SchemaAction",
    "SchemaPolicy",
    "SchemaReport",
    "administer_schema",
    "registered_version",
    "store_label",
]

_ADMIN = frozenset({"SchemaAction", "SchemaReport", "administer_schema", "registered_version", "store_label"})


def __getattr__(name: str) -> Any:
    if name == "OracleStore":
        from .store import OracleStore

        return OracleStore
    if name == "SchemaPolicy":
        from .policy import SchemaPolicy

        return SchemaPolicy
    if name in _ADMIN:
        from . import admin

        return getattr(admin, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
