"""Adapters layer (Oracle): administering a store's schema by hand (install, check, upgrade).

:func:`administer_schema` takes one python-oracledb connection with no work of its own in
progress, sets its session up as the store's own leases do, and hands it to the
:class:`~.schema.SchemaManager` of the store ``memory_store_id`` names:

* ``install`` applies ``CREATE_IF_NECESSARY``: the registry table, then every missing object of
  the store, then the vector index once the dimension is known;
* ``check`` applies ``REQUIRE_EXISTING``: validates, creates nothing, and raises
  ``SchemaVersionError`` with the list of what is missing or a version that needs an upgrade;
* ``upgrade`` reads the registered schema version and applies ``CREATE_IF_NECESSARY``, which runs
  the upgrades from that version to this library's (and repairs missing objects); a store that is
  not installed is a ``SchemaVersionError``.

Driver errors become the domain's errors. The result is a plain :class:`SchemaReport`: how to
word it is the caller's business.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from palimpsest.domain.errors import SchemaVersionError

from .connection import ConnectionSource
from .errors import translate
from .names import StoreNames
from .policy import SchemaPolicy
from .schema import SchemaManager
from .sql import fetch_one

__all__ = ["SchemaAction", "SchemaReport", "administer_schema", "registered_version", "store_label"]

SchemaAction = Literal["install", "check", "upgrade"]


@dataclass(frozen=True, slots=True)
class SchemaReport:
    """What an action found or did to one store's schema.

    ``created`` counts the objects ``install`` created (``None`` for the other actions);
    ``previous_version`` is the version ``upgrade`` found registered (``None`` otherwise)."""

    action: SchemaAction
    store_id: str | None
    schema_version: int
    dimension: int | None
    vector_index: str
    has_vector_index: bool
    created: int | None = None
    previous_version: int | None = None

    @property
    def upgraded(self) -> bool:
        """True when ``upgrade`` moved the store to a newer schema version."""
        return self.previous_version is not None and self.previous_version != self.schema_version


def store_label(memory_store_id: str | None) -> str:
    """How messages name the store ``memory_store_id`` selects."""
    names = StoreNames(memory_store_id)
    if names.store_id is None:
        return "the default Oracle memory store"
    return f"the Oracle memory store {names.store_id!r}"


def administer_schema(
    connection: Any,
    action: SchemaAction,
    *,
    memory_store_id: str | None = None,
    dimension: int | None = None,
    vector_index: str = "hnsw",
) -> SchemaReport:
    """Run ``action`` on the schema of the store ``memory_store_id`` selects (see the module's
    docstring). ``dimension`` and ``vector_index`` apply to ``install`` and ``upgrade``."""
    if action not in ("install", "check", "upgrade"):
        raise ValueError(f"unknown schema action {action!r}")
    names = StoreNames(memory_store_id)
    manager = SchemaManager(names, vector_index=vector_index)
    source = ConnectionSource(connection=connection)
    with source.lease() as leased, translate(names):
        if action == "check":
            config = manager.ensure(leased, SchemaPolicy.REQUIRE_EXISTING, dimension=None)
            return _report(action, names, manager, leased, config)
        if action == "install":
            before = manager.present_objects(leased)
            config = manager.ensure(leased, SchemaPolicy.CREATE_IF_NECESSARY, dimension=dimension)
            created = len(manager.present_objects(leased) - before)
            return _report(action, names, manager, leased, config, created=created)
        stored = _registered_version(leased, manager)
        if stored is None:
            raise SchemaVersionError(f"{store_label(memory_store_id)} is not installed.")
        config = manager.ensure(leased, SchemaPolicy.CREATE_IF_NECESSARY, dimension=dimension)
        return _report(action, names, manager, leased, config, previous_version=stored)


def registered_version(connection: Any, *, memory_store_id: str | None = None) -> int | None:
    """The schema version the registry records for the store, or ``None`` when it is not installed."""
    names = StoreNames(memory_store_id)
    manager = SchemaManager(names)
    with ConnectionSource(connection=connection).lease() as leased, translate(names):
        return _registered_version(leased, manager)


def _registered_version(connection: Any, manager: SchemaManager) -> int | None:
    if fetch_one(connection, manager.registry_exists_statement()) is None:
        return None
    row = fetch_one(connection, manager.select_config())
    return None if row is None else int(row[1])


def _report(
    action: SchemaAction,
    names: StoreNames,
    manager: SchemaManager,
    connection: Any,
    config: Any,
    *,
    created: int | None = None,
    previous_version: int | None = None,
) -> SchemaReport:
    return SchemaReport(
        action=action,
        store_id=names.store_id,
        schema_version=config.schema_version,
        dimension=config.dimension,
        vector_index=config.vector_index,
        has_vector_index=manager.has_vector_index(connection),
        created=created,
        previous_version=previous_version,
    )
